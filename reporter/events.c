// SPDX-License-Identifier: MIT
/*
 * reporter/events.c - what each event writes: the trace's records
 * (docs/TRACE-FORMAT.md) and the event log's lines.
 *
 * The trace is compact text: an event names its thread, its (allocator,
 * device, alignment) series, its stack and its owner by small numbers
 * declared on lines of their own before their first use, carries the
 * time since the previous event, and a free carries only the block's
 * address (the reader knows the live block).  A steady loop thus costs
 * some 25 bytes per event.  Beside the events, the writer samples the
 * process's resident memory ("r" records) under the same lock, at an
 * event when a quarter second has passed or the heap has grown an eighth
 * since the last sample: a read of /proc a few times a second, not one
 * an allocation.  Each declarable thing remembers the trace
 * generation it was written in, so that a forked child's trace, which
 * starts a new generation, declares them again.
 *
 * All of a record and its declarations are written under the stream's
 * lock, in one piece: the file order is the order of events.  Numbers are
 * formatted by hand, not with printf, which costs more than the rest of
 * the event.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "kernel/arena.h"
#include "ptrtable.h"
#include "trace_format.h"

#define TRACE_BUF (64 * 1024)
#define LOG_BUF	  (16 * 1024)
/*
 * Resident memory is sampled at an event this long after the last
 * sample, and at an event that takes live bytes a step above the highest
 * they had at a sample: an eighth more, and at least PEAK_STEP.
 */
#define SAMPLE_NS (250 * 1000 * 1000)
#define PEAK_STEP (1024 * 1024)
/*
 * Room for every series there can be, so that no block goes untraced
 * while its free is written (a reader refuses the free of a block it
 * never saw made).  A record's alignment is a power of two that fits 32
 * bits, or 0 for a larger one (reporter.c): 33 values per entry.
 */
#define ALIGN_VALUES 33
#define MAX_SERIES   (ALLOY_REPORTER_MAX_ENTRIES * ALIGN_VALUES)
/* The hash index: a power of two, at most half full. */
#define SERIES_SLOTS 8192
_Static_assert(2 * MAX_SERIES <= SERIES_SLOTS && SERIES_SLOTS <= UINT16_MAX,
	       "series ids are 16 bits");

struct rep_stream alloy__rep_trace = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.out.fd = -1,
};
struct rep_stream alloy__rep_log = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.out.fd = -1,
};
atomic_bool alloy__rep_tracing, alloy__rep_logging;
_Atomic uint32_t alloy__rep_trace_gen;

/* The trace's state; all under alloy__rep_trace.lock. */
static struct {
	uint32_t gen;	  /* bumped by every (re)open */
	uint64_t t0_ns;	  /* time origin */
	uint64_t last_ns; /* time of the last event written, in units */
	bool us;	  /* units are microseconds (a compressed trace) */
	uint64_t events;
	uint64_t live;	      /* bytes live in this trace's records */
	uint64_t sampled_ns;  /* when memory was last sampled */
	uint64_t sampled_top; /* the highest live bytes at a sample */
	bool no_statm;	      /* /proc/self/statm cannot be read */
	uint32_t modules;     /* modules written in this generation */
	uint32_t nseries;
	struct {
		uint16_t entry;
		uint32_t align;
		uint32_t gen;
	} series[MAX_SERIES];
	uint16_t series_slot[SERIES_SLOTS]; /* hash -> id, 0: empty */
	_Atomic uint32_t next_thread;
} W;

static __thread struct {
	long tid;
	uint32_t id, gen;
} me __attribute__((tls_model("initial-exec")));

static long thread_tid(void)
{
	if (!me.tid)
		me.tid = (long)syscall(SYS_gettid);
	return me.tid;
}

/* ---- formatting --------------------------------------------------------- */

static char *put_dec(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *put_hex(char *p, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int n = 0;

	do {
		tmp[n++] = digits[v & 15];
		v >>= 4;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *put_str(char *p, const char *s)
{
	size_t n = strlen(s);

	memcpy(p, s, n);
	return p + n;
}

static void put_line(char *line, char *end)
{
	alloy__stream_put(&alloy__rep_trace, line, (size_t)(end - line));
}

/* ---- declarations ------------------------------------------------------- */

/* "M START END OFFSET BUILDID PATH" for objects loaded since the last look. */
static void declare_modules(void)
{
	uint32_t n = alloy__rep_modules_count();
	char line[ALLOY_CONF_PATH_MAX + 80], *p;

	while (W.modules < n) {
		const struct rep_module *m = alloy__rep_module(++W.modules);

		p = line;
		*p++ = TRACE_DECL_MODULE;
		*p++ = ' ';
		p = put_hex(p, m->start);
		*p++ = ' ';
		p = put_hex(p, m->end);
		*p++ = ' ';
		p = put_hex(p, m->offset);
		*p++ = ' ';
		for (int i = 0; i < m->build_id_len; i++) {
			*p++ = "0123456789abcdef"[m->build_id[i] >> 4];
			*p++ = "0123456789abcdef"[m->build_id[i] & 15];
		}
		if (!m->build_id_len)
			*p++ = '-';
		*p++ = ' ';
		snprintf(p, (size_t)(line + sizeof(line) - p), "%s", m->path);
		put_line(line, p + strlen(p));
	}
}

static uint32_t declare_thread(void)
{
	char line[64], *p = line;

	if (me.gen == W.gen)
		return me.id;
	if (!me.id)
		me.id = atomic_fetch_add(&W.next_thread, 1) + 1;
	me.gen = W.gen;
	*p++ = TRACE_DECL_THREAD;
	*p++ = ' ';
	p = put_dec(p, me.id);
	*p++ = ' ';
	p = put_dec(p, (uint64_t)thread_tid());
	put_line(line, p);
	return me.id;
}

/*
 * The series of (e, align), declared if new in this generation; 0: full,
 * which the size of the table rules out for the alignments records hold.
 */
static uint32_t declare_series(const struct rep_entry *e, uint32_t align)
{
	uint16_t entry = (uint16_t)(e - alloy__rep_entries);
	size_t mask = SERIES_SLOTS - 1;
	size_t i = (size_t)(alloy__rep_mix(entry, align) >> 40) & mask;
	char line[ALLOY_NAME_MAX + 96], dev[32], *p = line;
	uint32_t id;

	for (;; i = (i + 1) & mask) {
		id = W.series_slot[i];
		if (!id)
			break;
		if (W.series[id - 1].entry == entry &&
		    W.series[id - 1].align == align)
			break;
	}
	if (!id) {
		if (W.nseries == MAX_SERIES)
			return 0;
		id = ++W.nseries;
		W.series[id - 1].entry = entry;
		W.series[id - 1].align = align;
		W.series_slot[i] = (uint16_t)id;
	}
	if (W.series[id - 1].gen == W.gen)
		return id;
	W.series[id - 1].gen = W.gen;
	*p++ = TRACE_DECL_SERIES;
	*p++ = ' ';
	p = put_dec(p, id);
	*p++ = ' ';
	p = put_str(p, e->name);
	*p++ = ' ';
	p = put_str(p, alloy__rep_device_str(e->device, dev, sizeof(dev)));
	*p++ = ' ';
	p = put_dec(p, align);
	put_line(line, p);
	return id;
}

/*
 * Interpreted functions ("c" records) written in this generation: their
 * generation by code id, in chunks made on first use.  An id past the
 * chunks is declared again at each node that names it (readers take the
 * last declaration).
 */
#define CODE_CHUNK  1024
#define CODE_CHUNKS 1024
static uint32_t *code_gen[CODE_CHUNKS];

static bool code_declared(uint32_t code)
{
	uint32_t c = code / CODE_CHUNK;

	if (c >= CODE_CHUNKS)
		return false;
	if (!code_gen[c])
		code_gen[c] = alloy__arena_alloc(CODE_CHUNK * sizeof(uint32_t));
	if (!code_gen[c])
		return false;
	if (code_gen[c][code % CODE_CHUNK] == W.gen)
		return true;
	code_gen[c][code % CODE_CHUNK] = W.gen;
	return false;
}

/* s as one word of at most max bytes: blanks and controls become '_'. */
static char *put_word(char *p, const char *s, size_t max, bool spaces)
{
	for (size_t i = 0; s && s[i] && i < max; i++)
		*p++ = (unsigned char)s[i] < ' ' || (!spaces && s[i] == ' ')
			       ? '_'
			       : s[i];
	return p;
}

#define CODE_NAME_MAX 255
#define CODE_FILE_MAX 1024

/*
 * "c CODE FUNCTION FILE" if new in this trace, then "p ID PARENT CODE
 * LINE": node id is an interpreted frame.
 */
static void declare_interp(uint32_t id, const struct rep_node *nd)
{
	struct alloy_reporter_frame_info fi;
	char line[CODE_NAME_MAX + CODE_FILE_MAX + 48], *p = line;

	if (alloy__rep_frame_describe(nd->frame, &fi) || !fi.code ||
	    fi.code >= TRACE_MAX_ID)
		fi = (struct alloy_reporter_frame_info){ 0 };
	if (fi.code && !code_declared(fi.code)) {
		*p++ = TRACE_DECL_CODE;
		*p++ = ' ';
		p = put_dec(p, fi.code);
		*p++ = ' ';
		p = put_word(p, fi.function ? fi.function : "?", CODE_NAME_MAX,
			     false);
		*p++ = ' ';
		p = put_word(p, fi.file && fi.file[0] ? fi.file : "?",
			     CODE_FILE_MAX, true);
		put_line(line, p);
		p = line;
	}
	*p++ = TRACE_DECL_INTERP;
	*p++ = ' ';
	p = put_dec(p, id);
	*p++ = ' ';
	p = put_dec(p, nd->parent);
	*p++ = ' ';
	p = put_dec(p, fi.code);
	*p++ = ' ';
	p = put_dec(p, fi.line);
	put_line(line, p);
}

/* "s ID PARENT FRAME" for the nodes of stack id not yet in this trace. */
static void declare_stack(uint32_t id)
{
	uint32_t todo[REP_MAX_FRAMES];
	int n = 0;

	for (; id && n < REP_MAX_FRAMES; id = alloy__rep_node(id)->parent) {
		if (alloy__rep_node(id)->gen == W.gen)
			break;
		todo[n++] = id;
	}
	declare_modules();
	while (n--) {
		struct rep_node *nd = alloy__rep_node(todo[n]);
		char line[64], *p = line;

		nd->gen = W.gen;
		if (alloy__rep_frame_interp(nd->frame)) {
			declare_interp(todo[n], nd);
			continue;
		}
		*p++ = TRACE_DECL_NODE;
		*p++ = ' ';
		p = put_dec(p, todo[n]);
		*p++ = ' ';
		p = put_dec(p, nd->parent);
		*p++ = ' ';
		p = put_hex(p, nd->frame);
		put_line(line, p);
	}
}

static void declare_owner(uint32_t id)
{
	struct rep_owner *o = alloy__rep_owner(id);
	char line[ALLOY_OWNER_MAX + 32], *p = line;

	if (o->gen == W.gen)
		return;
	o->gen = W.gen;
	*p++ = TRACE_DECL_OWNER;
	*p++ = ' ';
	p = put_dec(p, id);
	*p++ = ' ';
	memcpy(p, o->label, o->len);
	put_line(line, p + o->len);
}

/* ---- events ------------------------------------------------------------- */

/* Time since the trace opened, in the trace's unit. */
static uint64_t trace_time(uint64_t now)
{
	uint64_t t = now > W.t0_ns ? now - W.t0_ns : 0;

	return W.us ? t / 1000 : t;
}

/* The time field: since the previous event, never negative. */
static char *put_time(char *p, uint64_t now)
{
	uint64_t t = trace_time(now);

	/* Threads stamp before they take the lock: keep the file monotone. */
	if (t < W.last_ns)
		t = W.last_ns;
	p = put_dec(p, t - W.last_ns);
	W.last_ns = t;
	W.events++;
	return p;
}

/*
 * Bytes resident and mapped, from /proc/self/statm (pages); false when
 * it cannot be read (no /proc).  Plain system calls: no allocation.
 */
static bool read_statm(uint64_t *resident, uint64_t *mapped)
{
	char buf[128];
	uint64_t v[2] = { 0, 0 }, page = (uint64_t)sysconf(_SC_PAGESIZE);
	const char *p = buf;
	ssize_t n;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "size resident shared text lib data dt" */
	for (int i = 0; i < 2; i++) {
		if (*p < '0' || *p > '9')
			return false;
		while (*p >= '0' && *p <= '9')
			v[i] = v[i] * 10 + (uint64_t)(*p++ - '0');
		while (*p == ' ')
			p++;
	}
	*mapped = v[0] * page;
	*resident = v[1] * page;
	return true;
}

/* "r DT RESIDENT MAPPED", under the lock; not an event. */
static void sample_memory(uint64_t now)
{
	char line[80], *p = line;
	uint64_t resident, mapped, t;

	W.sampled_ns = now;
	W.sampled_top = W.live > W.sampled_top ? W.live : W.sampled_top;
	if (W.no_statm || !read_statm(&resident, &mapped)) {
		W.no_statm = true;
		return;
	}
	t = trace_time(now);
	if (t < W.last_ns)
		t = W.last_ns;
	*p++ = TRACE_MEMORY;
	*p++ = ' ';
	p = put_dec(p, t - W.last_ns);
	W.last_ns = t;
	*p++ = ' ';
	p = put_dec(p, resident);
	*p++ = ' ';
	p = put_dec(p, mapped);
	put_line(line, p);
}

/* Whether this event calls for a sample: time, or a new height. */
static bool sample_due(uint64_t now)
{
	uint64_t step = W.sampled_top / 8;

	/* A thread that stamped before the last sample waits its turn. */
	if (now > W.sampled_ns && now - W.sampled_ns >= SAMPLE_NS)
		return true;
	step = step > PEAK_STEP ? step : PEAK_STEP;
	return W.live > W.sampled_top + step;
}

/* The whole of an 'a' record, under the lock. */
static void write_alloc(const struct rep_block *b, const struct rep_entry *e,
			uint64_t now)
{
	char line[128], *p = line;
	uint32_t th = declare_thread();
	uint32_t series = declare_series(e, alloy__rep_block_align(b));

	if (!series)
		return; /* more series than a trace can name: not traced */
	if (b->stack)
		declare_stack(b->stack);
	if (b->owner)
		declare_owner(b->owner);
	W.live += b->size;
	*p++ = TRACE_ALLOC;
	*p++ = ' ';
	p = put_time(p, now);
	*p++ = ' ';
	p = put_dec(p, th);
	*p++ = ' ';
	p = put_dec(p, series);
	*p++ = ' ';
	p = put_hex(p, b->ptr);
	*p++ = ' ';
	p = put_dec(p, b->size);
	if (b->stack || b->owner) {
		*p++ = ' ';
		p = put_dec(p, b->stack);
	}
	if (b->owner) {
		*p++ = ' ';
		p = put_dec(p, b->owner);
	}
	put_line(line, p);
}

static void trace_event(char op, uintptr_t ptr, const struct rep_block *b,
			const struct rep_entry *e, uint32_t gen)
{
	uint64_t now = alloy__rep_now_ns();
	char line[64], *p = line;

	if (!alloy__stream_begin(&alloy__rep_trace))
		return;
	/* Of a trace that has ended since: the next one has it already. */
	if (gen != W.gen) {
		alloy__stream_end(&alloy__rep_trace, now);
		return;
	}
	if (op == TRACE_ALLOC) {
		write_alloc(b, e, now);
	} else {
		uint32_t th = declare_thread();

		if (op == TRACE_FREE && b)
			W.live -= b->size < W.live ? b->size : W.live;
		*p++ = op;
		*p++ = ' ';
		p = put_time(p, now);
		*p++ = ' ';
		p = put_dec(p, th);
		*p++ = ' ';
		p = put_hex(p, ptr);
		put_line(line, p);
	}
	if (sample_due(now))
		sample_memory(now);
	alloy__stream_end(&alloy__rep_trace, now);
}

static void log_event(char op, uintptr_t ptr, const struct rep_block *b,
		      const struct rep_entry *e)
{
	char line[256], dev[32];
	int n;

	if (b)
		n = snprintf(
			line, sizeof(line),
			"alloy: %s %llu bytes %s %s (%s), total %lld bytes",
			op == 'a' ? "alloc" : "free",
			(unsigned long long)b->size, op == 'a' ? "from" : "to",
			e->name,
			alloy__rep_device_str(e->device, dev, sizeof(dev)),
			(long long)alloy__rep_total());
	else
		n = snprintf(line, sizeof(line), "alloy: %s free of %#llx",
			     op == 'd' ? "double" : "unknown",
			     (unsigned long long)ptr);
	alloy__stream_line(&alloy__rep_log, line, (size_t)n,
			   alloy__rep_now_ns());
}

void alloy__rep_emit(char op, uintptr_t ptr, const struct rep_block *b,
		     const struct rep_entry *e, uint32_t traced)
{
	if (traced)
		trace_event(op, ptr, b, e, traced);
	if (atomic_load_explicit(&alloy__rep_logging, memory_order_relaxed))
		log_event(op, ptr, b, e);
}

/* ---- opening and closing ------------------------------------------------ */

/*
 * The process's name (/proc/self/comm) as one header word: anything but
 * a printable non-blank byte becomes '_'.  "" when it cannot be read.
 */
static void process_name(char *name, size_t len)
{
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, name, len - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n < 0)
		n = 0;
	while (n > 0 && name[n - 1] == '\n')
		n--;
	name[n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		if (name[i] <= ' ' || name[i] > '~')
			name[i] = '_';
}

/* Header and module map; under the lock, the stream just opened. */
static void write_header(const char *note)
{
	char line[256], comm[32];
	int n;

	if (!++W.gen) /* 0 means no trace */
		W.gen = 1;
	W.t0_ns = alloy__rep_now_ns();
	W.last_ns = 0;
	W.events = 0;
	W.live = 0;
	W.sampled_top = 0;
	W.no_statm = false;
	W.modules = 0;
	me.tid = 0; /* a forked child's thread has a new id */
	/*
	 * Nanosecond deltas are most of what is left of an event after
	 * compression; a compressed trace keeps microseconds.
	 */
	W.us = alloy__rep_trace.z != NULL;
	process_name(comm, sizeof(comm));
	n = snprintf(line, sizeof(line),
		     TRACE_MAGIC
		     "%d pid=%ld clock=monotonic unit=%s start=%llu%s%s%s%s",
		     TRACE_VERSION, (long)getpid(), W.us ? "us" : "ns",
		     (unsigned long long)W.t0_ns, *comm ? " comm=" : "", comm,
		     note ? " " : "", note ? note : "");
	alloy__stream_put(&alloy__rep_trace, line, (size_t)n);
	n = snprintf(line, sizeof(line), "%s", TRACE_LEGEND);
	alloy__stream_put(&alloy__rep_trace, line, (size_t)n);
	declare_modules();
}

static int write_live(const struct rep_block *b, void *arg)
{
	write_alloc(b, &alloy__rep_entries[b->entry], *(uint64_t *)arg);
	return 0;
}

int alloy__rep_trace_open(const char *where, const char *note)
{
	uint64_t now;
	int rc;

	/*
	 * Under the stream's lock: a thread still emitting into a trace
	 * stopped a moment ago reads fd there (alloy__stream_begin).
	 */
	pthread_mutex_lock(&alloy__rep_trace.lock);
	alloy__stream_drop(&alloy__rep_trace);
	pthread_mutex_unlock(&alloy__rep_trace.lock);
	rc = alloy__stream_open(&alloy__rep_trace, "trace", where, TRACE_BUF);
	if (rc)
		return rc;
	alloy__rep_modules_scan();
	/*
	 * Every shard locked: no block comes or goes, so each is either
	 * in this list or, once the locks are let go, an event after it.
	 */
	alloy__ptrtable_lock_all();
	if (alloy__stream_begin(&alloy__rep_trace)) {
		write_header(note);
		now = W.t0_ns;
		alloy__ptrtable_foreach_locked(write_live, &now);
		sample_memory(now);
		atomic_store(&alloy__rep_trace_gen, W.gen);
		atomic_store(&alloy__rep_tracing, true);
		alloy__stream_end(&alloy__rep_trace, alloy__rep_now_ns());
	}
	alloy__ptrtable_unlock_all();
	return 0;
}

int alloy__rep_trace_close(void)
{
	char line[96];
	uint64_t t;
	int n;

	if (!atomic_exchange(&alloy__rep_tracing, false))
		return 0;
	atomic_store(&alloy__rep_trace_gen, 0);
	if (alloy__stream_begin(&alloy__rep_trace)) {
		/* Events still on their way belong to no trace now. */
		if (!++W.gen)
			W.gen = 1;
		/* The last sample, in the trace of a tidy exit. */
		if (!alloy__rep_trace.error)
			sample_memory(alloy__rep_now_ns());
		t = trace_time(alloy__rep_now_ns());
		if (t < W.last_ns)
			t = W.last_ns;
		if (alloy__rep_trace.error)
			n = snprintf(line, sizeof(line),
				     TRACE_INCOMPLETE "%llu %llu",
				     (unsigned long long)t,
				     (unsigned long long)alloy__rep_trace.lost);
		else
			n = snprintf(line, sizeof(line), TRACE_END "%llu %llu",
				     (unsigned long long)t,
				     (unsigned long long)W.events);
		alloy__stream_put_last(&alloy__rep_trace, line, (size_t)n);
		pthread_mutex_unlock(&alloy__rep_trace.lock);
	}
	alloy__stream_close(&alloy__rep_trace);
	return alloy__rep_trace.error;
}

int alloy__rep_log_open(const char *where)
{
	int rc = alloy__stream_open(&alloy__rep_log, "log", where, LOG_BUF);

	if (!rc)
		atomic_store(&alloy__rep_logging, true);
	return rc;
}

void alloy__rep_log_close(void)
{
	if (atomic_exchange(&alloy__rep_logging, false))
		alloy__stream_close(&alloy__rep_log);
}
