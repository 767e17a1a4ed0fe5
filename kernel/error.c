// SPDX-License-Identifier: MIT
/*
 * kernel/error.c - the thread-local "last error" message.
 */
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "count.h"

#define ERRMSG_MAX 512

static __thread char last_error[ERRMSG_MAX];
static __thread int last_code;
__thread unsigned alloy__error_mark __attribute__((tls_model("initial-exec")));

const char *alloy_last_error(void)
{
	return last_error;
}

int alloy_last_error_code(void)
{
	return last_code;
}

void alloy_clear_error(void)
{
	last_error[0] = '\0';
	last_code = 0;
}

int alloy__verror(int err, const char *func, const char *fmt, va_list ap)
{
	char msg[ERRMSG_MAX - 64];

	/*
	 * Format aside first: an argument may be the previous message.  A
	 * long message is cut, never overflowed.
	 */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	snprintf(last_error, sizeof(last_error), "%.60s: %s", func, msg);
	last_code = err;
	++*alloy__error_mark_of();
	return err;
}

unsigned *alloy__error_mark_of(void)
{
	struct alloy__tls *t = alloy__tls_self;

	return t ? &t->error_mark : &alloy__error_mark;
}

int alloy__error(int err, const char *func, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	alloy__verror(err, func, fmt, ap);
	va_end(ap);
	return err;
}

const char *alloy_strerror(int err)
{
	static const struct {
		int code;
		const char *name;
	} names[] = {
		{ 0, "OK" },
		{ -EINVAL, "EINVAL" },
		{ -ENOMEM, "ENOMEM" },
		{ -EEXIST, "EEXIST" },
		{ -ENOENT, "ENOENT" },
		{ -EBUSY, "EBUSY" },
		{ -ENOSPC, "ENOSPC" },
		{ -EOVERFLOW, "EOVERFLOW" },
		{ -ERANGE, "ERANGE" },
		{ -ENODEV, "ENODEV" },
		{ -ENOEXEC, "ENOEXEC" },
		{ -ENOSYS, "ENOSYS" },
		{ -EPROTO, "EPROTO" },
		{ -EIO, "EIO" },
		{ -EPERM, "EPERM" },
		{ -ENOTSUP, "ENOTSUP" },
		{ -EFAULT, "EFAULT" },
		{ -EAGAIN, "EAGAIN" },
		{ -E2BIG, "E2BIG" },
		{ -ENAMETOOLONG, "ENAMETOOLONG" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (names[i].code == err)
			return names[i].name;
	return "EUNKNOWN";
}
