// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_conf.c - the ALLOY_CONF parser: good strings, a table of bad
 * ones, and the library's behaviour when started with them.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/conf.h"
#include "kernel/secure.h"
#include "testutil.h"

START_TEST(parse_good)
{
	struct alloy__conf c;

	ck_assert_int_eq(
		alloy__conf_parse(
			"cpu:jemalloc, align:4K,zero_fill:yes,"
			"report:stderr,report_format:json,"
			"cuda_caching.max_split_size:256M,"
			"max_keep_on_shrink_memory:1MiB,keep_on_shrink:off",
			&c),
		0);
	ck_assert_str_eq(c.alloc_name[ALLOY_DEVICE_CPU], "jemalloc");
	ck_assert_uint_eq(c.align, 4096);
	ck_assert(c.zero_fill);
	ck_assert(!c.junk_fill);
	ck_assert_str_eq(c.report, "stderr");
	ck_assert_str_eq(c.report_format, "json");
	ck_assert(!c.keep_on_shrink);
	ck_assert_uint_eq(c.max_keep_on_shrink_memory, 1 << 20);
	ck_assert_int_eq(c.noptions, 1);
	ck_assert_str_eq(c.options[0].allocator, "cuda_caching");
	ck_assert_str_eq(c.options[0].key, "max_split_size");
	ck_assert_str_eq(c.options[0].value, "256M");
}
END_TEST

START_TEST(parse_defaults)
{
	struct alloy__conf c;

	ck_assert_int_eq(alloy__conf_parse(NULL, &c), 0);
	ck_assert_str_eq(c.alloc_name[ALLOY_DEVICE_CPU], "default");
	ck_assert_uint_eq(c.align, 64);
	ck_assert(c.keep_on_shrink);
	ck_assert_uint_eq(c.max_keep_on_shrink_memory, UINT64_MAX);
	ck_assert_int_eq(alloy__conf_parse("", &c), 0);
	ck_assert_int_eq(alloy__conf_parse(" , ,", &c), 0);
}
END_TEST

/* alloy_init() for test_stderr_of; its result goes to *rc unless NULL. */
static void run_init(void *rc)
{
	int r = alloy_init();

	if (rc)
		*(int *)rc = r;
}

/*
 * Past the 32 problems kept, every one is still counted and one line
 * says how many more there were: none goes without a word.
 */
START_TEST(problems_past_the_kept_ones_are_counted)
{
	char text[1024] = "", item[32];
	const char *out;
	int rc;

	for (int i = 0; i < 33; i++) {
		snprintf(item, sizeof(item), "k%d:1,", i);
		strcat(text, item);
	}
	strcat(text, "align:3");
	test_set_conf(text);
	out = test_stderr_of(run_init, &rc);
	ck_assert_int_eq(rc, 34);
	ck_assert_int_eq(alloy_conf_error_count(), 34);
	ck_assert_msg(strstr(out, "\"k31\": unknown key"), "%s", out);
	ck_assert_msg(
		strstr(out,
		       "2 more problems, not shown (the first 32 are above)"),
		"%s", out);
	ck_assert(strstr(alloy_conf_error(31), "k31"));
	ck_assert(strstr(alloy_conf_error(33), "not kept"));
	ck_assert_ptr_null(alloy_conf_error(34));
	ck_assert_uint_eq(alloy_conf_align(), 64); /* align:3 refused */
}
END_TEST

START_TEST(sizes_and_bools)
{
	uint64_t n;
	bool b;

	ck_assert_int_eq(alloy_parse_size("0", &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(alloy_parse_size("3k", &n), 0);
	ck_assert_uint_eq(n, 3072);
	ck_assert_int_eq(alloy_parse_size("2GiB", &n), 0);
	ck_assert_uint_eq(n, 2ull << 30);
	ck_assert_int_eq(alloy_parse_size("16777215T", &n), 0);
	ck_assert_int_eq(alloy_parse_size("16777216T", &n), -ERANGE);
	ck_assert_int_eq(alloy_parse_size("18446744073709551616", &n), -ERANGE);
	ck_assert_int_eq(alloy_parse_size("-1", &n), -EINVAL);
	ck_assert_int_eq(alloy_parse_size("1.5M", &n), -EINVAL);
	ck_assert_int_eq(alloy_parse_size("12Q", &n), -EINVAL);
	ck_assert_int_eq(alloy_parse_bool("On", &b), 0);
	ck_assert(b);
	ck_assert_int_eq(alloy_parse_bool("no", &b), 0);
	ck_assert(!b);
	ck_assert_int_eq(alloy_parse_bool("2", &b), -EINVAL);
}
END_TEST

/* Issue 15: alloy_parse_size(s, NULL) crashed. */
START_TEST(parse_helpers_refuse_null)
{
	uint64_t n = 7;
	bool b = true;

	ck_assert_int_eq(alloy_parse_size("1K", NULL), -EINVAL);
	ck_assert_msg(strstr(alloy_last_error(), "out is NULL"), "%s",
		      alloy_last_error());
	ck_assert_int_eq(alloy_parse_size(NULL, &n), -EINVAL);
	ck_assert_uint_eq(n, 7);
	ck_assert_int_eq(alloy_parse_bool("yes", NULL), -EINVAL);
	ck_assert_int_eq(alloy_parse_bool(NULL, &b), -EINVAL);
	ck_assert(b);
	/* Refusals say why. */
	ck_assert_int_eq(alloy_parse_size("12Q", &n), -EINVAL);
	ck_assert_msg(strstr(alloy_last_error(), "\"12Q\" is not a size"), "%s",
		      alloy_last_error());
}
END_TEST

/*
 * Issue 15: "align: 64" was refused while "align:64 " was taken.  One
 * rule now: blanks around items, keys and values are cut.
 */
START_TEST(blanks_around_keys_and_values_are_cut)
{
	static const char *const same[] = {
		"align:128",   "align: 128",	"align:128 ",
		" align :128", "align\t:\t128", " align : 128 ,",
	};
	struct alloy__conf c;

	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		ck_assert_msg(alloy__conf_parse(same[i], &c) == 0, "\"%s\": %s",
			      same[i], c.errors[0]);
		ck_assert_uint_eq(c.align, 128);
	}
	ck_assert_int_eq(alloy__conf_parse("report: stderr , cpu : default ,"
					   "cuda_caching.max_split_size : 256M",
					   &c),
			 0);
	ck_assert_str_eq(c.report, "stderr");
	ck_assert_str_eq(c.alloc_name[ALLOY_DEVICE_CPU], "default");
	ck_assert_str_eq(c.options[0].key, "max_split_size");
	ck_assert_str_eq(c.options[0].value, "256M");
	/* Blanks inside a value stay. */
	ck_assert_int_eq(alloy__conf_parse("log: /tmp/a b ", &c), 0);
	ck_assert_str_eq(c.log, "/tmp/a b");
}
END_TEST

/* No byte under 0x20 (or 0x7f) of a message is the user's, raw. */
static void assert_no_control_bytes(const char *line)
{
	for (const char *p = line; *p; p++)
		ck_assert_msg((unsigned char)*p >= 0x20 && *p != 0x7f,
			      "control byte 0x%02x in \"%s\"",
			      (unsigned char)*p, line);
}

/* Issue 15: control bytes in ALLOY_CONF keys were echoed raw. */
START_TEST(control_bytes_are_refused_and_escaped)
{
	static const char *const evil[] = {
		"\x1b]0;pwned\x07:1",  "\x1b[2J\x1b[H:1",
		"cpu:def\x1b[31mault", "jemalloc.\x1b[31m:1",
		"report:/tmp/x\ny",
	};
	struct alloy__conf c, def;
	char out[64];

	alloy__conf_defaults(&def);
	for (size_t i = 0; i < sizeof(evil) / sizeof(evil[0]); i++) {
		ck_assert_int_eq(alloy__conf_parse(evil[i], &c), 1);
		assert_no_control_bytes(c.errors[0]);
		ck_assert_msg(strstr(c.errors[0], "\\x"), "not escaped: %s",
			      c.errors[0]);
		ck_assert_msg(strstr(c.errors[0], "control byte"), "%s",
			      c.errors[0]);
		ck_assert_str_eq(c.alloc_name[ALLOY_DEVICE_CPU],
				 def.alloc_name[ALLOY_DEVICE_CPU]);
		ck_assert_str_eq(c.report, "");
		ck_assert_int_eq(c.noptions, 0);
	}
	/* The escaping itself: unambiguous, cut without overflowing. */
	alloy__escape("a\x1b\\b\xff\x7f", out, sizeof(out));
	ck_assert_str_eq(out, "a\\x1b\\\\b\\xff\\x7f");
	alloy__escape("\x01\x02\x03", out, 6);
	ck_assert_str_eq(out, "\\x01");
}
END_TEST

/* Problems reported after init (alloy__conf_report) are escaped too. */
static void report_evil(void *arg)
{
	alloy__conf_report("%s", (const char *)arg);
}

START_TEST(reported_lines_are_escaped)
{
	const char *err;

	ck_assert_int_eq(alloy_init(), 0);
	err = test_stderr_of(report_evil, "x.k:\x1b[2Jv: refused");
	ck_assert_msg(strstr(err, "x.k:\\x1b[2Jv: refused\n"), "%s", err);
	ck_assert_ptr_null(strchr(err, '\x1b'));
	ck_assert_int_eq(alloy_conf_error_count(), 1);
	assert_no_control_bytes(alloy_conf_error(0));
}
END_TEST

/* The documented limit: ALLOY_CONF_MAX_LENGTH bytes, refused whole above. */
START_TEST(length_limit_is_exact)
{
	static char text[ALLOY_CONF_MAX_LENGTH + 2];
	struct alloy__conf c;

	memset(text, ',', sizeof(text) - 1);
	memcpy(text, "align:128", 9);
	text[ALLOY_CONF_MAX_LENGTH] = '\0';
	ck_assert_int_eq(strlen(text), 4095);
	ck_assert_int_eq(alloy__conf_parse(text, &c), 0);
	ck_assert_uint_eq(c.align, 128);
	text[ALLOY_CONF_MAX_LENGTH] = ',';
	ck_assert_int_eq(alloy__conf_parse(text, &c), 1);
	ck_assert_msg(strstr(c.errors[0], "longer than 4095 characters"), "%s",
		      c.errors[0]);
	ck_assert_uint_eq(c.align, 64);
}
END_TEST

/*
 * Each bad string gives exactly one problem line, containing `mentions`
 * (the bad part) and `instead` (what is used instead), and leaves the
 * setting at its default.
 */
static const struct {
	const char *conf;
	const char *mentions;
	const char *instead;
} bad[] = {
	{ "align:63", "63", "using 64" },
	{ "align:0", "align:0", "using 64" },
	{ "align:4", "align:4", "using 64" },
	{ "align:2G", "2147483648", "using 64" },
	{ "align:sixty", "sixty", "using 64" },
	{ "align:99999999999999999999", "too large", "using 64" },
	{ "align:", "empty value", "using 64" },
	{ "frobnicate:1", "frobnicate", "ignored" },
	{ "alignment:64", "alignment", "ignored" },
	{ "cpu", "\"cpu\"", "ignored" },
	{ ":default", ":default", "ignored" },
	{ "cpu:bad-name!", "bad-name!", "using default" },
	{ "cpu:", "empty value", "using default" },
	{ "zero_fill:maybe", "maybe", "using false" },
	{ "zero_fill:1,junk_fill:1", "exclude", "defaults" },
	{ "report_format:xml", "xml", "using text" },
	{ ".key:1", ".key:1", "ignored" },
	{ "jemalloc.:1", "jemalloc.:1", "ignored" },
	{ "je-malloc.narenas:1", "je-malloc", "ignored" },
	{ "jemalloc.a-b:1", "\"a-b\" is not a name", "ignored" },
	{ "keep_on_shrink:2", "keep_on_shrink:2", "using true" },
	{ "max_keep_on_shrink_memory:lots", "lots", "using unlimited" },
};

START_TEST(parse_bad)
{
	struct alloy__conf c, def;

	alloy__conf_defaults(&def);
	ck_assert_int_eq(alloy__conf_parse(bad[_i].conf, &c), 1);
	ck_assert_msg(strstr(c.errors[0], bad[_i].mentions),
		      "\"%s\": \"%s\" does not mention \"%s\"", bad[_i].conf,
		      c.errors[0], bad[_i].mentions);
	ck_assert_msg(strstr(c.errors[0], bad[_i].instead),
		      "\"%s\": \"%s\" does not say \"%s\"", bad[_i].conf,
		      c.errors[0], bad[_i].instead);
	ck_assert_msg(strchr(c.errors[0], '\n') == NULL, "one line");
	ck_assert_uint_eq(c.align, def.align);
	ck_assert_int_eq(c.zero_fill, def.zero_fill);
	ck_assert_int_eq(c.junk_fill, def.junk_fill);
	ck_assert_str_eq(c.alloc_name[ALLOY_DEVICE_CPU],
			 def.alloc_name[ALLOY_DEVICE_CPU]);
	ck_assert_str_eq(c.report_format, def.report_format);
	ck_assert_int_eq(c.keep_on_shrink, def.keep_on_shrink);
	ck_assert_uint_eq(c.max_keep_on_shrink_memory,
			  def.max_keep_on_shrink_memory);
	ck_assert_int_eq(c.noptions, 0);
}
END_TEST

START_TEST(bad_parts_do_not_spoil_good_ones)
{
	struct alloy__conf c;

	ck_assert_int_eq(alloy__conf_parse("align:3,zero_fill:1,nope:2", &c),
			 2);
	ck_assert_uint_eq(c.align, 64);
	ck_assert(c.zero_fill);
}
END_TEST

START_TEST(too_long_is_refused_whole)
{
	static char big[5000];
	struct alloy__conf c;

	memset(big, 'a', sizeof(big) - 1);
	ck_assert_int_eq(alloy__conf_parse(big, &c), 1);
	ck_assert(strstr(c.errors[0], "longer than"));
}
END_TEST

/* The library started with a bad name keeps going on "default". */
START_TEST(unknown_allocator_falls_back)
{
	struct alloy_data_ptr dp;

	test_set_conf("cpu:nosuch");
	ck_assert_int_eq(alloy_init(), 1);
	ck_assert_msg(strstr(alloy_conf_error(0), "nosuch"), "%s",
		      alloy_conf_error(0));
	ck_assert_msg(strstr(alloy_conf_error(0), "using \"default\""), "%s",
		      alloy_conf_error(0));
	ck_assert_str_eq(alloy_conf_get("cpu"), "default");
	ck_assert_str_eq(
		alloy_allocator_name(alloy_get_default(ALLOY_DEVICE_CPU)),
		"default");
	ck_assert_ok(alloy_context_new(ALLOY_CPU, 100, &dp));
	alloy_data_ptr_free(&dp);
}
END_TEST

/*
 * Issue 15: an option for an allocator that is not there at init was
 * called "ignored" and counted as an error, then applied when a plugin
 * registered it.  It is kept, said so on stderr, and counts as an error
 * only if it fails when its allocator comes.
 */
START_TEST(option_for_unknown_allocator_is_reported)
{
	const char *err;

	test_set_conf("nosuch.size:1");
	err = test_stderr_of(run_init, NULL);
	ck_assert_int_eq(alloy_conf_error_count(), 0);
	ck_assert_int_eq(test_count_lines_with(err, "nosuch.size:1"), 1);
	ck_assert_msg(strstr(err, "no allocator \"nosuch\" is registered yet"),
		      "%s", err);
	ck_assert_msg(strstr(err, "applied if one registers later"), "%s", err);
	ck_assert_msg(!strstr(err, "ignored"), "%s", err);
}
END_TEST

static char late_seen[64];

static int late_set_option(void *ctx, const char *key, const char *value)
{
	(void)ctx;
	if (strcmp(key, "knob") != 0)
		return alloy_plugin_error(-EINVAL,
					  "late: unknown option \"%s\"", key);
	snprintf(late_seen, sizeof(late_seen), "%s=%s", key, value);
	return 0;
}

START_TEST(option_applied_when_its_allocator_registers_later)
{
	struct alloy_allocator_ops ops = test_alloc_ops("late");
	struct test_alloc ta = { .device_type = ALLOY_DEVICE_CPU };

	test_set_conf("late.knob:7,late.bogus:1");
	test_stderr_of(run_init, NULL);
	ck_assert_int_eq(alloy_conf_error_count(), 0);
	ops.set_option = late_set_option;
	ck_assert_ok(alloy_register_allocator(&ops, &ta, "test", NULL));
	/* What the notice promised: applied now... */
	ck_assert_str_eq(late_seen, "knob=7");
	/* ...and only a real failure is an error, reported now. */
	ck_assert_int_eq(alloy_conf_error_count(), 1);
	ck_assert_msg(strstr(alloy_conf_error(0), "late.bogus:1"), "%s",
		      alloy_conf_error(0));
	ck_assert_msg(strstr(alloy_conf_error(0), "unknown option"), "%s",
		      alloy_conf_error(0));
}
END_TEST

/*
 * Issue 15, secure-execution mode: output paths from the environment are
 * refused (a setuid program would write where its caller says); the
 * standard streams stay.  One stderr line says so.  The real setuid run
 * is tests/cli/test_setuid.sh; here the mode is forced.
 */
START_TEST(secure_mode_refuses_output_paths)
{
	char dir[] = "/tmp/alloy-test-secure-XXXXXX", conf[600];
	char report[256], trace[256];
	const char *err;
	struct stat st;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(report, sizeof(report), "%s/report.txt", dir);
	snprintf(trace, sizeof(trace), "%s/t.trace", dir);
	snprintf(conf, sizeof(conf), "report:%s,trace:%s,log:stderr,align:128",
		 report, trace);
	test_set_conf(conf);
	alloy__secure_force_for_tests();
	err = test_stderr_of(run_init, NULL);
	ck_assert_int_eq(test_count_lines_with(err, "secure-execution"), 1);
	ck_assert_int_eq(alloy_conf_error_count(), 1);
	ck_assert_msg(strstr(alloy_conf_error(0), report), "%s",
		      alloy_conf_error(0));
	ck_assert_msg(strstr(alloy_conf_error(0), trace), "%s",
		      alloy_conf_error(0));
	ck_assert_str_eq(alloy_conf_get("report"), "");
	ck_assert_str_eq(alloy_conf_get("trace"), "");
	ck_assert_str_eq(alloy_conf_get("log"), "stderr");
	ck_assert_str_eq(alloy_conf_get("align"), "128");
	ck_assert_int_ne(stat(trace, &st), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(option_for_allocator_without_options_is_reported)
{
	/* cuda_host_sim has no set_option (default has: its cache). */
	test_set_conf("cuda_host_sim.foo:1");
	ck_assert_int_eq(alloy_init(), 1);
	ck_assert_msg(strstr(alloy_conf_error(0), "takes no options"), "%s",
		      alloy_conf_error(0));
}
END_TEST

START_TEST(conf_get_reports_effective_values)
{
	test_set_conf("align:128,junk_fill:on");
	ck_assert_int_eq(alloy_init(), 0);
	ck_assert_str_eq(alloy_conf_get("align"), "128");
	ck_assert_str_eq(alloy_conf_get("junk_fill"), "true");
	ck_assert_uint_eq(alloy_conf_align(), 128);
	ck_assert_ptr_null(alloy_conf_get("nope"));
}
END_TEST

Suite *suite_conf(void)
{
	Suite *s = suite_create("conf");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, parse_good);
	tcase_add_test(tc, parse_defaults);
	tcase_add_test(tc, problems_past_the_kept_ones_are_counted);
	tcase_add_test(tc, sizes_and_bools);
	tcase_add_test(tc, parse_helpers_refuse_null);
	tcase_add_test(tc, blanks_around_keys_and_values_are_cut);
	tcase_add_test(tc, control_bytes_are_refused_and_escaped);
	tcase_add_test(tc, length_limit_is_exact);
	tcase_add_loop_test(tc, parse_bad, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, bad_parts_do_not_spoil_good_ones);
	tcase_add_test(tc, too_long_is_refused_whole);
	suite_add_tcase(s, tc);

	tc = tcase_create("init");
	tcase_add_test(tc, unknown_allocator_falls_back);
	tcase_add_test(tc, option_for_unknown_allocator_is_reported);
	tcase_add_test(tc, option_applied_when_its_allocator_registers_later);
	tcase_add_test(tc, reported_lines_are_escaped);
	tcase_add_test(tc, secure_mode_refuses_output_paths);
	tcase_add_test(tc, option_for_allocator_without_options_is_reported);
	tcase_add_test(tc, conf_get_reports_effective_values);
	suite_add_tcase(s, tc);
	return s;
}
