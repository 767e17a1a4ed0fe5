// SPDX-License-Identifier: MIT
/*
 * preload/init.c - the front's start and exit: alloy initialised from the
 * constructor, the bootstrap allocator across fork(), pointers alloy did
 * not make, and the exit report of a program that closed stderr.
 *
 * alloy is initialised here, before main() and in no caller's critical
 * section: the first malloc of a program may come from inside a lock of
 * glibc's (setlocale holds the locale lock while it allocates), and
 * loading a module from there (dlopen takes the loader's lock, jemalloc
 * initialises) can deadlock or fail.  One block is allocated and freed
 * through the default before the front opens, so that the backend's own
 * first-use work happens here too.
 */
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <alloy/alloy.h>

#include "kernel/fd.h"
#include "preload/front.h"

atomic_bool alloy__front_ready;
bool alloy__front_strict;

/* Bad pointers named one by one in strict mode, then only counted. */
#define BAD_SHOWN  16
#define BAD_FRAMES 12
/*
 * Where the saved copy of stdout or stderr goes: just below 1024, or below
 * a lower soft RLIMIT_NOFILE, as the reporter's own descriptors
 * (docs/PRELOAD.md, "What alloy keeps open in your program").
 */

static _Atomic unsigned long long bad_pointers;
static int saved_fd = -1; /* a copy of the report's stream's fd */
static dev_t saved_dev;	  /* the file saved_fd was made on */
static ino_t saved_ino;
static FILE **report_stream; /* &stderr or &stdout, when reporting there */

ptrdiff_t alloy__front_errno_offset;
struct alloy__front_state alloy__front_state;

bool alloy__front_serves_fresh(void)
{
	if (alloy__front_depth != ALLOY__FRONT_FRESH ||
	    !atomic_load_explicit(&alloy__front_ready, memory_order_acquire))
		return false;
	alloy__front_depth = 1;
	alloy__front_leave(); /* to 0, and the fast word with it */
	return true;
}

void alloy__front_bad_pointer(const char *func, const void *p)
{
	unsigned long long n = atomic_fetch_add(&bad_pointers, 1);
	void *frames[BAD_FRAMES];
	int nframes;

	if (n >= BAD_SHOWN)
		return;
	alloy__front_enter(); /* backtrace() may load libgcc_s */
	fprintf(stderr,
		"alloy: %s(%p): not a block from malloc: the program did not get this pointer from malloc, calloc, realloc or memalign, or freed it already; ignored%s\n",
		func, p, n + 1 == BAD_SHOWN ? " (later ones are counted)" : "");
	nframes = backtrace(frames, BAD_FRAMES);
	fprintf(stderr, "  called from:\n");
	fflush(stderr);
	/* Skip this function; _fd: the symbols without malloc. */
	if (nframes > 1)
		backtrace_symbols_fd(frames + 1, nframes - 1, fileno(stderr));
	alloy__front_leave();
}

/* Whether the stream is closed (fclose'd, or its descriptor closed). */
static bool stream_closed(FILE *f)
{
	int fd = fileno(f);

	return fd < 0 || fcntl(fd, F_GETFD) < 0;
}

/*
 * Whether saved_fd still holds the file it was made on: a program may
 * have closed it (closefrom) and opened a file of its own at its number.
 */
static bool saved_still_ours(void)
{
	struct stat st;

	return saved_fd >= 0 && !fstat(saved_fd, &st) &&
	       st.st_dev == saved_dev && st.st_ino == saved_ino;
}

static void at_exit(void)
{
	unsigned long long bad =
		atomic_load(&bad_pointers) + alloy_plain_bad_frees();

	if (report_stream && stream_closed(*report_stream) &&
	    saved_still_ours()) {
		/* The reporter writes after this handler (atexit: LIFO). */
		FILE *f = fdopen(saved_fd, "w");

		if (f) {
			*report_stream = f;
			saved_fd = -1;
		}
	}
	if (bad)
		fprintf(report_stream ? *report_stream : stderr,
			"alloy: %llu free or realloc calls were given pointers alloy did not make, or freed already; they were ignored%s\n",
			bad,
			alloy__front_strict
				? ""
				: " (ALLOY_CONF=cpu:debug names each)");
}

/*
 * A program may close stderr before exit handlers run (ls does); keep a
 * copy of the stream the report goes to, out of the program's way and
 * closed on exec.
 */
static void keep_report_stream(void)
{
	const char *where = alloy_conf_get("report");
	struct stat st;
	int fd;

	if (!where)
		return;
	if (!strcmp(where, "stderr"))
		report_stream = &stderr;
	else if (!strcmp(where, "stdout"))
		report_stream = &stdout;
	else
		return;
	fd = fileno(*report_stream);
	saved_fd = fd < 0 ? -1 : alloy__fd_copy_high(fd);
	if (saved_fd >= 0 && fstat(saved_fd, &st)) {
		close(saved_fd);
		saved_fd = -1;
	}
	if (saved_fd >= 0) {
		saved_dev = st.st_dev;
		saved_ino = st.st_ino;
	}
}

/* The CPU default is the debug wrapper: name every bad pointer. */
static bool debugging(void)
{
	struct alloy_allocator *a = alloy_get_default(ALLOY_DEVICE_CPU);

	return a && !strcmp(alloy_allocator_name(a), "debug");
}

__attribute__((constructor)) static void front_start(void)
{
	void *warm;

	/*
	 * First on the front's list, so that the bootstrap lock is taken
	 * last before fork: alloy's code may allocate from it while holding
	 * one of its locks.
	 */
	alloy__front_atfork(alloy__boot_fork_prepare, alloy__boot_fork_parent,
			    alloy__boot_fork_child);
#if defined(__x86_64__) || defined(__aarch64__)
	alloy__front_errno_offset =
		(char *)&errno - (char *)__builtin_thread_pointer();
#endif
	alloy__front_enter();
	alloy_init();
	warm = alloy_malloc(1);
	alloy_free(warm);
	alloy__front_strict = debugging();
	alloy__front_start(alloy__front_bad_pointer, &alloy__front_state);
	keep_report_stream();
	/* After the reporter's handler, so that this one runs before it. */
	atexit(at_exit);
	alloy__front_leave();
	atomic_store_explicit(&alloy__front_ready, true, memory_order_release);
	alloy__front_control_start();
}
