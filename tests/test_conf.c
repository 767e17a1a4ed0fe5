// SPDX-License-Identifier: MIT
/*
 * tests/test_conf.c - the ALLOY_CONF parser: good strings, a table of bad
 * ones, and the library's behaviour when started with them.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "core/conf.h"
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

START_TEST(option_for_unknown_allocator_is_reported)
{
	test_set_conf("nosuch.size:1");
	ck_assert_int_eq(alloy_init(), 1);
	ck_assert_msg(strstr(alloy_conf_error(0), "nosuch.size:1"), "%s",
		      alloy_conf_error(0));
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
	tcase_add_test(tc, sizes_and_bools);
	tcase_add_loop_test(tc, parse_bad, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, bad_parts_do_not_spoil_good_ones);
	tcase_add_test(tc, too_long_is_refused_whole);
	suite_add_tcase(s, tc);

	tc = tcase_create("init");
	tcase_add_test(tc, unknown_allocator_falls_back);
	tcase_add_test(tc, option_for_unknown_allocator_is_reported);
	tcase_add_test(tc, option_for_allocator_without_options_is_reported);
	tcase_add_test(tc, conf_get_reports_effective_values);
	suite_add_tcase(s, tc);
	return s;
}
