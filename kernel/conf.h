/* SPDX-License-Identifier: MIT */
/*
 * kernel/conf.h - the parsed form of ALLOY_CONF, shared inside liballoy.
 *
 * Not installed.  Functions marked ALLOY_PRIVATE are exported from the
 * shared library only so that alloy's own tests and fuzzers can reach
 * them; they are not part of the API and may change at any time.
 */
#ifndef ALLOY_KERNEL_CONF_H
#define ALLOY_KERNEL_CONF_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <alloy/allocator.h>

#define ALLOY_PRIVATE __attribute__((visibility("default")))

#define ALLOY_CONF_MAX_OPTIONS 64
#define ALLOY_CONF_MAX_ERRORS  32
#define ALLOY_CONF_PATH_MAX    1024

struct alloy__conf_option {
	char allocator[ALLOY_NAME_MAX + 1];
	char key[64];
	char value[256];
};

/* Every key's value lives here; see the key table in kernel/conf.c. */
struct alloy__conf {
	/* allocators: default per device type, by name */
	char alloc_name[ALLOY_DEVICE_TYPE_COUNT][ALLOY_NAME_MAX + 1];
	/* default CPU allocator */
	uint64_t align;
	bool zero_fill;
	bool junk_fill;
	/* reporter */
	char report[ALLOY_CONF_PATH_MAX];
	char report_format[8];
	char log[ALLOY_CONF_PATH_MAX];
	char trace[ALLOY_CONF_PATH_MAX];
	bool backtrace;
	bool python_frames; /* an interpreter's frames in stacks (reporter) */
	char unwinder[10];  /* tables or libunwind (kernel/unwind.c) */
	char leaks[8];	    /* full, summary or off */
	/*
	 * The process whose report, trace and log take their paths as
	 * given; any other that inherits the configuration writes PATH.PID
	 * (reporter/session.c).  Set by alloy run; 0: every process.
	 */
	uint64_t run_pid;
	/*
	 * The control socket: "0" never; "1" opened by alloy_control_start()
	 * and by the LD_PRELOAD front at start; "auto" opened by
	 * alloy_control_start() (python3 -m alloy, programs that opt in) and
	 * by the front when the program starts its first thread, so that a
	 * single-threaded program stays single-threaded (docs/PRELOAD.md).
	 */
	char control[5];
	/* tensor layer */
	bool keep_on_shrink;
	uint64_t max_keep_on_shrink_memory;

	/* which keys ALLOY_CONF set, by key index */
	bool from_env[32];
	/* allocator-specific "name.key:value" pairs, in order */
	struct alloy__conf_option options[ALLOY_CONF_MAX_OPTIONS];
	int noptions;
	/* one line per problem found */
	char errors[ALLOY_CONF_MAX_ERRORS][320];
	int nerrors;
};

/* The process's configuration, valid after init. */
extern struct alloy__conf alloy__conf __attribute__((visibility("hidden")));

/* Fill c with the defaults of every key. */
ALLOY_PRIVATE void alloy__conf_defaults(struct alloy__conf *c);

/*
 * Parse text (ALLOY_CONF syntax) over the defaults into c.  Returns the
 * number of problems; each is a line in c->errors saying what was wrong
 * and what is used instead.  Never fails otherwise.
 */
ALLOY_PRIVATE int alloy__conf_parse(const char *text, struct alloy__conf *c);

/* Append a problem line to c (printf-style), as the parser does. */
ALLOY_PRIVATE void alloy__conf_add_error(struct alloy__conf *c, const char *fmt,
					 ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Add a problem to the process's configuration and print it on stderr.
 * Safe from any thread (allocators registered after init report here).
 */
ALLOY_PRIVATE void alloy__conf_report(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/*
 * Whether a path value (report, log, trace) makes alloy open a file:
 * anything but "", "stderr" and "stdout".
 */
ALLOY_PRIVATE bool alloy__conf_names_file(const char *text);

/* Print a line on stderr about ALLOY_CONF that is not a problem. */
ALLOY_PRIVATE void alloy__conf_notice(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/*
 * Copy in to out (len bytes, always terminated, cut if needed) with every
 * byte outside printable ASCII written as \xNN and '\' as "\\", so that
 * text from the environment reaches a terminal as text.  Every problem
 * line above goes through it.
 */
ALLOY_PRIVATE void alloy__escape(const char *in, char *out, size_t len);

#endif /* ALLOY_KERNEL_CONF_H */
