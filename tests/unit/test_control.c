// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_control.c - the control socket's parts: the request
 * parser, the peer rule, the directory check, and alloy_control_start
 * serving a request and going away with alloy_control_stop.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "testutil.h"
#include "control/path.h"
#include "control/proto.h"

static int parse(const char *line, struct ctl_request *req, char *err)
{
	return alloy__ctl_parse(line, strlen(line), req, err, CTL_ERROR_MAX);
}

START_TEST(requests_parse)
{
	struct ctl_request r;
	char err[CTL_ERROR_MAX];

	ck_assert_int_eq(parse("alloy/1 swap cpu:jemalloc", &r, err), 0);
	ck_assert_int_eq(r.command, CTL_SWAP);
	ck_assert_int_eq(r.device, ALLOY_DEVICE_CPU);
	ck_assert_str_eq(r.allocator, "jemalloc");
	ck_assert_int_eq(parse("alloy/1 trace start /tmp/a b.t \r", &r, err),
			 0);
	ck_assert_int_eq(r.command, CTL_TRACE_START);
	ck_assert_str_eq(r.path, "/tmp/a b.t");
	ck_assert_int_eq(
		parse(" alloy/1  report --format json --at peak", &r, err), 0);
	ck_assert(r.command == CTL_REPORT && r.json && r.at_peak);
	ck_assert_int_eq(parse("alloy/1 backtrace off", &r, err), 0);
	ck_assert(r.command == CTL_BACKTRACE && !r.on);
	ck_assert_int_eq(parse("alloy/1 reset-peaks", &r, err), 0);
	ck_assert_int_eq(r.command, CTL_RESET_PEAKS);
}
END_TEST

START_TEST(bad_requests_say_why)
{
	static const struct {
		const char *line, *says;
	} bad[] = {
		{ "", "empty request" },
		{ "swap cpu:default", "unknown protocol swap" },
		{ "alloy/2 ping", "this program speaks alloy/1" },
		{ "alloy/1", "no command" },
		{ "alloy/1 launch", "unknown command launch" },
		{ "alloy/1 swap", "takes one argument" },
		{ "alloy/1 swap cpu", "expected DEVICE:ALLOCATOR" },
		{ "alloy/1 swap tpu:x", "unknown device \"tpu\"" },
		{ "alloy/1 swap cpu:bad-name", "an allocator name is" },
		{ "alloy/1 trace begin", "trace takes start FILE or stop" },
		{ "alloy/1 trace start", "needs a FILE" },
		{ "alloy/1 backtrace maybe", "backtrace takes on or off" },
		{ "alloy/1 report --at", "--at needs a value" },
		{ "alloy/1 report --format xml", "expected text or json" },
		{ "alloy/1 conf now", "conf takes no argument" },
		{ "alloy/1 ping \x1b[2J", "control byte (0x1b" },
		{ "alloy/1 \xff\xfe", "unknown command \\xff\\xfe" },
	};
	struct ctl_request r;
	char err[CTL_ERROR_MAX];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(parse(bad[i].line, &r, err), -EINVAL);
		ck_assert_msg(strstr(err, bad[i].says), "\"%s\": %s",
			      bad[i].line, err);
	}
}
END_TEST

/* The refusal path: only the same user or root may control a program. */
START_TEST(peer_rule)
{
	ck_assert(alloy__ctl_peer_allowed(1000, 1000));
	ck_assert(alloy__ctl_peer_allowed(0, 1000));
	ck_assert(alloy__ctl_peer_allowed(0, 0));
	ck_assert(!alloy__ctl_peer_allowed(1001, 1000));
	ck_assert(!alloy__ctl_peer_allowed(1000, 0));
	ck_assert(!alloy__ctl_peer_allowed(65534, 1000));
}
END_TEST

START_TEST(directory_must_be_private)
{
	char tmpl[] = "/tmp/alloy-ctl-test-XXXXXX", sub[PATH_MAX];
	char link[PATH_MAX], err[256];

	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	snprintf(sub, sizeof(sub), "%s/d", tmpl);
	snprintf(link, sizeof(link), "%s/l", tmpl);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	ck_assert(alloy__ctl_dir_safe(sub, err, sizeof(err)));
	ck_assert_int_eq(chmod(sub, 0755), 0);
	ck_assert(!alloy__ctl_dir_safe(sub, err, sizeof(err)));
	ck_assert_msg(strstr(err, "0700 needed"), "%s", err);
	ck_assert_int_eq(chmod(sub, 0700), 0);
	ck_assert_int_eq(symlink(sub, link), 0);
	ck_assert(!alloy__ctl_dir_safe(link, err, sizeof(err)));
	ck_assert_msg(strstr(err, "not a directory"), "%s", err);
	ck_assert_int_eq(alloy__ctl_name_pid("123.sock"), 123);
	ck_assert_int_eq(alloy__ctl_name_pid("0123.sock"), -1);
	ck_assert_int_eq(alloy__ctl_name_pid("123.sockx"), -1);
	ck_assert_int_eq(alloy__ctl_name_pid("x.sock"), -1);
	unlink(link);
	rmdir(sub);
	rmdir(tmpl);
}
END_TEST

START_TEST(start_serves_and_stop_removes)
{
	char tmpl[] = "/tmp/alloy-ctl-test-XXXXXX", want[PATH_MAX];
	char buf[512] = "", path[CTL_PATH_MAX];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *req = "alloy/1 ping\n";
	size_t got = 0;
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	setenv("XDG_RUNTIME_DIR", tmpl, 1);
	ck_assert_int_eq(alloy_control_start(), 0);
	ck_assert_int_eq(alloy_control_start(), 0); /* once is enough */
	snprintf(want, sizeof(want), "%s/alloy/%ld.sock", tmpl, (long)getpid());
	ck_assert_ptr_nonnull(alloy_control_path());
	ck_assert_str_eq(alloy_control_path(), want);
	snprintf(path, sizeof(path), "%s", want);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while (!strstr(buf, "ok pong") && got < sizeof(buf) - 1) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);

		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
	}
	close(fd);
	ck_assert_msg(strstr(buf, "alloy/1 pid "), "%s", buf);
	ck_assert_msg(strstr(buf, "ok pong"), "%s", buf);
	ck_assert_int_eq(alloy_control_stop(), 0);
	ck_assert_int_eq(access(want, F_OK), -1);
	ck_assert_ptr_null(alloy_control_path());
	ck_assert_int_eq(alloy_control_stop(), -ENOENT);
	snprintf(path, sizeof(path), "%s/alloy", tmpl);
	rmdir(path);
	rmdir(tmpl);
}
END_TEST

Suite *suite_control(void)
{
	Suite *s = suite_create("control");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, requests_parse);
	tcase_add_test(tc, bad_requests_say_why);
	tcase_add_test(tc, peer_rule);
	tcase_add_test(tc, directory_must_be_private);
	tcase_add_test(tc, start_serves_and_stop_removes);
	suite_add_tcase(s, tc);
	return s;
}
