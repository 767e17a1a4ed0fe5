// SPDX-License-Identifier: MIT
/*
 * kernel/unwind.c - the calling thread's call stack, read from the
 * unwind tables (.eh_frame) that every object built for x86-64 Linux
 * carries, with a per-thread cache of each return address's frame.
 *
 * Why not libunwind alone: unw_backtrace() costs dearly per frame even
 * when its own cache hits (docs/BENCHMARKS.md, "Profiler"), and
 * a call stack for every allocation of a malloc-bound program is most of
 * what backtrace:1 costs.  But on x86-64 the code gcc and clang emit
 * needs very little to step over a frame: the CFA (the caller's stack
 * pointer) is rsp or rbp plus a constant, the return address is just
 * below the CFA, and rbp is either untouched or saved at a constant
 * offset from the CFA.  Those three numbers are read once per code
 * address - the object's .eh_frame_hdr search table finds its FDE, and
 * the CIE's and FDE's call-frame instructions are run up to the address
 * - and kept in a direct-mapped cache of the thread's: after the first
 * stack through a site, a frame is a probe and two loads.
 *
 * Everything else is libunwind's: a frame whose CFA is an expression (a
 * function that realigns its stack, a PLT entry), a signal frame (the
 * "S" augmentation), registers saved in other registers.  The walk then
 * returns -1 and the caller asks libunwind for the whole stack, so no
 * stack is less complete than libunwind's.  An address that no loaded
 * object covers, or that no FDE covers, ends the walk; so does a return
 * address whose rule says "undefined" (the outermost frame: _start, a
 * thread's start).
 *
 * Safety.  A walk reads the stack at CFA - 8 and at CFA + (rbp's offset),
 * below the CFA; every CFA must be above the last (the walk goes up the
 * stack) and 8-aligned.  The highest CFA of a walk that reached the
 * outermost frame is kept as the thread's stack top, and a later walk of
 * the thread that would go above it gives up (libunwind decides).  A rule
 * read from the tables is right for as long as its object stays loaded;
 * the cache is emptied when a walk finds the loader's count of unloaded
 * objects changed (dlpi_subs), before any rule of an object that may be
 * gone is used again by a thread that has looked since.  Rules are read
 * inside dl_iterate_phdr's callback, so the object cannot be unloaded
 * while they are read.  No malloc anywhere.
 */
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "kernel/unwind.h"

bool alloy__unwind_is_ours(const char *path)
{
	const char *base = path ? strrchr(path, '/') : NULL;

	base = base ? base + 1 : path;
	return base && !strncmp(base, "liballoy", 8);
}

#if defined(__x86_64__) && defined(__linux__)

enum {
	UNWIND_CFA_BP = 1,    /* the CFA is rbp + cfa_off, not rsp + cfa_off */
	UNWIND_BP_SAVED = 2,  /* the caller's rbp is at CFA + bp_off */
	UNWIND_END = 4,	      /* the outermost frame: no caller */
	UNWIND_UNKNOWN = 8,   /* no unwind table covers the address */
	UNWIND_FALLBACK = 16, /* only libunwind can step over this frame */
	UNWIND_OURS = 32      /* the address is in one of alloy's objects */
};

/* DWARF's numbers of the x86-64 registers a walk follows. */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA	16

/* Call-frame instructions (DWARF 5, section 6.4.2). */
enum {
	CFA_nop = 0x00,
	CFA_set_loc = 0x01,
	CFA_advance_loc1 = 0x02,
	CFA_advance_loc2 = 0x03,
	CFA_advance_loc4 = 0x04,
	CFA_offset_extended = 0x05,
	CFA_restore_extended = 0x06,
	CFA_undefined = 0x07,
	CFA_same_value = 0x08,
	CFA_register = 0x09,
	CFA_remember_state = 0x0a,
	CFA_restore_state = 0x0b,
	CFA_def_cfa = 0x0c,
	CFA_def_cfa_register = 0x0d,
	CFA_def_cfa_offset = 0x0e,
	CFA_def_cfa_expression = 0x0f,
	CFA_expression = 0x10,
	CFA_offset_extended_sf = 0x11,
	CFA_def_cfa_sf = 0x12,
	CFA_def_cfa_offset_sf = 0x13,
	CFA_val_offset = 0x14,
	CFA_val_offset_sf = 0x15,
	CFA_val_expression = 0x16,
	CFA_GNU_args_size = 0x2e,
	CFA_GNU_negative_offset_extended = 0x2f,
	/* In the top two bits, with an operand in the low six. */
	CFA_advance_loc = 0x40,
	CFA_offset = 0x80,
	CFA_restore = 0xc0,
};

/* Pointer encodings of .eh_frame (the LSB's DW_EH_PE_*). */
enum {
	PE_absptr = 0x00,
	PE_uleb128 = 0x01,
	PE_udata2 = 0x02,
	PE_udata4 = 0x03,
	PE_udata8 = 0x04,
	PE_sleb128 = 0x09,
	PE_sdata2 = 0x0a,
	PE_sdata4 = 0x0b,
	PE_sdata8 = 0x0c,
	PE_pcrel = 0x10,
	PE_datarel = 0x30,
	PE_omit = 0xff,
};

/* Remembered states a function may nest (gcc and clang use one). */
#define STATE_STACK 8

/* Bumped when an object was unloaded: every cache empties itself. */
static _Atomic unsigned long generation = 1;
static _Atomic unsigned long long unloads_seen;

/* ---- reading the tables ---------------------------------------------- */

struct reader {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t fixed(struct reader *r, size_t n)
{
	uint64_t v = 0;

	if ((size_t)(r->end - r->p) < n) {
		r->bad = true;
		return 0;
	}
	memcpy(&v, r->p, n); /* little-endian, as the tables are */
	r->p += n;
	return v;
}

static uint64_t uleb(struct reader *r)
{
	uint64_t v = 0;

	for (unsigned shift = 0; r->p < r->end; shift += 7) {
		uint8_t b = *r->p++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

static int64_t sleb(struct reader *r)
{
	uint64_t v = 0;

	for (unsigned shift = 0; r->p < r->end;) {
		uint8_t b = *r->p++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v |= ~(uint64_t)0 << shift;
			return (int64_t)v;
		}
	}
	r->bad = true;
	return 0;
}

/* A pointer in encoding enc; datarel is the base of PE_datarel. */
static uintptr_t encoded(struct reader *r, uint8_t enc, uintptr_t datarel)
{
	const uint8_t *at = r->p;
	uintptr_t v;

	switch (enc & 0x0f) {
	case PE_absptr:
	case PE_udata8:
	case PE_sdata8:
		v = fixed(r, 8);
		break;
	case PE_uleb128:
		v = uleb(r);
		break;
	case PE_udata2:
		v = fixed(r, 2);
		break;
	case PE_udata4:
		v = fixed(r, 4);
		break;
	case PE_sleb128:
		v = (uintptr_t)sleb(r);
		break;
	case PE_sdata2:
		v = (uintptr_t)(int64_t)(int16_t)fixed(r, 2);
		break;
	case PE_sdata4:
		v = (uintptr_t)(int64_t)(int32_t)fixed(r, 4);
		break;
	default:
		r->bad = true;
		return 0;
	}
	/* 0x80 (indirect) only marks personality pointers, never read. */
	switch (enc & 0x70) {
	case 0:
		return v;
	case PE_pcrel:
		return v + (uintptr_t)at;
	case PE_datarel:
		return v + datarel;
	default: /* textrel, funcrel, aligned: not used on x86-64 Linux */
		r->bad = true;
		return 0;
	}
}

/* An entry's length; r then spans its body.  false for the terminator. */
static bool entry_body(struct reader *r, const uint8_t *at)
{
	uint64_t len;

	r->p = at;
	r->end = at + 4;
	r->bad = false;
	len = fixed(r, 4);
	if (len == 0xffffffff) {
		r->end = r->p + 8;
		len = fixed(r, 8);
	}
	if (!len || len > ((uint64_t)1 << 32))
		return false;
	r->end = r->p + len;
	return !r->bad;
}

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
	bool has_z, signal;
	struct reader insns;
};

static bool parse_cie(const uint8_t *at, struct cie *cie)
{
	struct reader r;
	const char *aug;
	size_t aug_len;
	uint8_t version;

	if (!entry_body(&r, at) || fixed(&r, 4) != 0) /* id 0: a CIE */
		return false;
	version = (uint8_t)fixed(&r, 1);
	if (version != 1 && version != 3)
		return false;
	aug = (const char *)r.p;
	aug_len = strnlen(aug, (size_t)(r.end - r.p));
	if (aug_len == (size_t)(r.end - r.p))
		return false;
	r.p += aug_len + 1;
	cie->code_align = uleb(&r);
	cie->data_align = sleb(&r);
	if (version == 1)
		(void)fixed(&r, 1); /* the return address column: 16 */
	else
		(void)uleb(&r);
	cie->fde_enc = PE_absptr;
	cie->signal = false;
	cie->has_z = aug[0] == 'z';
	if (cie->has_z) {
		uint64_t len = uleb(&r);
		const uint8_t *after = r.p + len;

		if (r.bad || len > (uint64_t)(r.end - r.p))
			return false;
		for (const char *a = aug + 1; *a && !r.bad; a++) {
			uint8_t enc;

			if (*a == 'R') {
				cie->fde_enc = (uint8_t)fixed(&r, 1);
			} else if (*a == 'P') {
				enc = (uint8_t)fixed(&r, 1);
				(void)encoded(&r, enc, 0);
			} else if (*a == 'L') {
				(void)fixed(&r, 1);
			} else if (*a == 'S') {
				cie->signal = true;
			} else if (*a != 'B') {
				break; /* its data ends where len says */
			}
		}
		r.p = after;
	} else if (aug[0]) {
		return false; /* "eh" and other pre-"z" forms */
	}
	cie->insns = r;
	return !r.bad;
}

/* ---- running the call-frame instructions ----------------------------- */

enum how { SAME, SAVED, UNDEF, OTHER };

struct frame_state {
	uint64_t cfa_reg;
	int64_t cfa_off;
	int64_t bp_off, ra_off;
	uint8_t bp_how, ra_how;
	bool cfa_expr;
};

static void set_rule(struct frame_state *s, uint64_t reg, uint8_t how,
		     int64_t off)
{
	if (reg == REG_RBP) {
		s->bp_how = how;
		s->bp_off = off;
	} else if (reg == REG_RA) {
		s->ra_how = how;
		s->ra_off = off;
	}
	/* Other registers: a walk needs neither them nor their rules. */
}

/* DW_CFA_restore: reg's rule as the CIE left it. */
static void restore(struct frame_state *s, const struct frame_state *init,
		    uint64_t reg)
{
	if (!init)
		set_rule(s, reg, SAME, 0);
	else if (reg == REG_RBP)
		set_rule(s, reg, init->bp_how, init->bp_off);
	else if (reg == REG_RA)
		set_rule(s, reg, init->ra_how, init->ra_off);
}

static void skip_block(struct reader *r)
{
	uint64_t len = uleb(r);

	if (len > (uint64_t)(r->end - r->p))
		r->bad = true;
	else
		r->p += len;
}

/*
 * Run the instructions in r on s from code address loc until the address
 * passes target.  init is the CIE's state (for DW_CFA_restore), NULL
 * while running the CIE itself.  false: they cannot be followed.
 */
static bool run_cfa(struct reader *r, struct frame_state *s,
		    const struct frame_state *init, const struct cie *cie,
		    uintptr_t loc, uintptr_t target)
{
	struct frame_state saved[STATE_STACK];
	int depth = 0;

	while (r->p < r->end && !r->bad) {
		uint8_t op = (uint8_t)fixed(r, 1);
		uint64_t reg, delta;

		switch (op & 0xc0) {
		case CFA_advance_loc:
			delta = op & 0x3f;
			goto advance;
		case CFA_offset:
			set_rule(s, op & 0x3f, SAVED,
				 (int64_t)uleb(r) * cie->data_align);
			continue;
		case CFA_restore:
			restore(s, init, op & 0x3f);
			continue;
		}
		switch (op) {
		case CFA_nop:
		case CFA_GNU_args_size:
			if (op == CFA_GNU_args_size)
				(void)uleb(r);
			continue;
		case CFA_set_loc:
			loc = encoded(r, cie->fde_enc, 0);
			if (loc > target)
				return !r->bad;
			continue;
		case CFA_advance_loc1:
			delta = fixed(r, 1);
			goto advance;
		case CFA_advance_loc2:
			delta = fixed(r, 2);
			goto advance;
		case CFA_advance_loc4:
			delta = fixed(r, 4);
			goto advance;
		case CFA_offset_extended:
			reg = uleb(r);
			set_rule(s, reg, SAVED,
				 (int64_t)uleb(r) * cie->data_align);
			continue;
		case CFA_offset_extended_sf:
			reg = uleb(r);
			set_rule(s, reg, SAVED, sleb(r) * cie->data_align);
			continue;
		case CFA_GNU_negative_offset_extended:
			reg = uleb(r);
			set_rule(s, reg, SAVED,
				 -(int64_t)uleb(r) * cie->data_align);
			continue;
		case CFA_restore_extended:
			restore(s, init, uleb(r));
			continue;
		case CFA_undefined:
			set_rule(s, uleb(r), UNDEF, 0);
			continue;
		case CFA_same_value:
			set_rule(s, uleb(r), SAME, 0);
			continue;
		case CFA_register:
		case CFA_val_offset:
			reg = uleb(r);
			(void)uleb(r);
			set_rule(s, reg, OTHER, 0);
			continue;
		case CFA_val_offset_sf:
			reg = uleb(r);
			(void)sleb(r);
			set_rule(s, reg, OTHER, 0);
			continue;
		case CFA_expression:
		case CFA_val_expression:
			reg = uleb(r);
			skip_block(r);
			set_rule(s, reg, OTHER, 0);
			continue;
		case CFA_remember_state:
			/*
			 * The whole state, CFA rule included, as gcc expects.
			 */
			if (depth == STATE_STACK)
				return false;
			saved[depth++] = *s;
			continue;
		case CFA_restore_state:
			if (!depth)
				return false;
			*s = saved[--depth];
			continue;
		case CFA_def_cfa:
			s->cfa_reg = uleb(r);
			s->cfa_off = (int64_t)uleb(r);
			s->cfa_expr = false;
			continue;
		case CFA_def_cfa_sf:
			s->cfa_reg = uleb(r);
			s->cfa_off = sleb(r) * cie->data_align;
			s->cfa_expr = false;
			continue;
		case CFA_def_cfa_register:
			s->cfa_reg = uleb(r);
			s->cfa_expr = false;
			continue;
		case CFA_def_cfa_offset:
			s->cfa_off = (int64_t)uleb(r);
			continue;
		case CFA_def_cfa_offset_sf:
			s->cfa_off = sleb(r) * cie->data_align;
			continue;
		case CFA_def_cfa_expression:
			skip_block(r);
			s->cfa_expr = true;
			continue;
		default:
			return false;
		}
	advance:
		loc += delta * cie->code_align;
		if (loc > target)
			return !r->bad;
	}
	return !r->bad;
}

/* The rule a walk keeps for state s. */
static struct unwind_rule rule_of(const struct frame_state *s)
{
	struct unwind_rule rule = { .flags = UNWIND_FALLBACK };

	if (s->ra_how == UNDEF) {
		rule.flags = UNWIND_END;
		return rule;
	}
	if (s->cfa_expr || (s->cfa_reg != REG_RSP && s->cfa_reg != REG_RBP) ||
	    s->cfa_off <= 0 || s->cfa_off > INT32_MAX || s->ra_how != SAVED ||
	    s->ra_off != -8 || s->bp_how == OTHER || s->bp_how == UNDEF ||
	    (s->bp_how == SAVED && (s->bp_off >= 0 || s->bp_off < INT16_MIN)))
		return rule;
	rule.flags = 0;
	rule.cfa_off = (int32_t)s->cfa_off;
	if (s->cfa_reg == REG_RBP)
		rule.flags |= UNWIND_CFA_BP;
	if (s->bp_how == SAVED) {
		rule.flags |= UNWIND_BP_SAVED;
		rule.bp_off = (int16_t)s->bp_off;
	}
	return rule;
}

/* The rule for ip from the FDE at fde. */
static struct unwind_rule rule_from_fde(const uint8_t *fde, uintptr_t ip)
{
	struct unwind_rule fallback = { .flags = UNWIND_FALLBACK };
	struct unwind_rule unknown = { .flags = UNWIND_UNKNOWN };
	struct frame_state init = { .bp_how = SAME, .ra_how = SAME }, s;
	const uint8_t *cie_field;
	struct reader r, ci;
	uintptr_t start, range;
	struct cie cie;
	uint32_t cie_off;

	if (!entry_body(&r, fde))
		return unknown;
	cie_field = r.p;
	cie_off = (uint32_t)fixed(&r, 4);
	if (!cie_off || !parse_cie(cie_field - cie_off, &cie))
		return fallback;
	start = encoded(&r, cie.fde_enc, 0);
	range = encoded(&r, cie.fde_enc & 0x0f, 0);
	if (r.bad || ip < start || ip - start >= range)
		return unknown;
	if (cie.has_z)
		skip_block(&r);
	if (r.bad || cie.signal)
		return fallback;
	ci = cie.insns;
	if (!run_cfa(&ci, &init, NULL, &cie, 0, UINTPTR_MAX))
		return fallback;
	s = init;
	if (!run_cfa(&r, &s, &init, &cie, start, ip))
		return fallback;
	return rule_of(&s);
}

/*
 * The FDE that may cover ip, from .eh_frame_hdr's sorted table; NULL
 * where the table is missing or in a form the linker does not write.
 */
static const uint8_t *fde_for(const uint8_t *hdr, uintptr_t ip)
{
	struct reader r = { hdr + 4, hdr + 4 + 16, false };
	size_t lo = 0, hi, count;
	const uint8_t *table;

	if (hdr[0] != 1 || hdr[2] == PE_omit ||
	    hdr[3] != (PE_datarel | PE_sdata4))
		return NULL;
	(void)encoded(&r, hdr[1], (uintptr_t)hdr); /* .eh_frame itself */
	count = encoded(&r, hdr[2], (uintptr_t)hdr);
	if (r.bad || !count)
		return NULL;
	table = r.p;
	hi = count;
	/* The last entry whose start is at or below ip. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		int32_t loc;

		memcpy(&loc, table + mid * 8, 4);
		if ((uintptr_t)hdr + (intptr_t)loc <= ip)
			lo = mid;
		else
			hi = mid;
	}
	{
		int32_t loc, off;

		memcpy(&loc, table + lo * 8, 4);
		memcpy(&off, table + lo * 8 + 4, 4);
		if ((uintptr_t)hdr + (intptr_t)loc > ip)
			return NULL;
		return hdr + off;
	}
}

/* What find_object learns of the object holding ip. */
struct find {
	uintptr_t ip;
	bool first, ours;
	unsigned long long unloads;
	struct unwind_rule rule;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find *f = arg;
	const ElfW(Phdr) *eh = NULL;
	bool holds = false;

	if (f->first && size >= offsetof(struct dl_phdr_info, dlpi_subs) +
					sizeof(info->dlpi_subs)) {
		f->unloads = info->dlpi_subs;
		f->first = false;
	}
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD &&
		    f->ip - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz)
			holds = true;
		else if (ph->p_type == PT_GNU_EH_FRAME)
			eh = ph;
	}
	if (!holds)
		return 0;
	f->ours = alloy__unwind_is_ours(info->dlpi_name);
	if (eh) {
		const uint8_t *fde = fde_for(
			(const uint8_t *)(info->dlpi_addr + eh->p_vaddr),
			f->ip);

		/* Read here: the object stays loaded until this returns. */
		if (fde)
			f->rule = rule_from_fde(fde, f->ip);
	}
	return 1;
}

/* ---- the walk ---------------------------------------------------------- */

/*
 * The cache is two-way: a set of two slots per hash, the newer rule
 * first.  CPython's stacks pass some 2 700 distinct return addresses;
 * one way of 4 096 slots lost a rule to a collision on one frame in
 * 400 (52 900 reads of the tables a round of the JSON workload, ~2 000
 * instructions each); two ways, 3 200.
 *
 * Code addresses spread well in their low bits; folding in the next ones
 * keeps functions a multiple of the cache's span apart from colliding.
 * Two cheap operations: the walk waits on this between frames.
 */
#define UNWIND_SETS (UNWIND_CACHE_SLOTS / 2)

static inline struct unwind_rule *set_of(struct alloy__unwind_cache *c,
					 uintptr_t key)
{
	return &c->slot[2 * ((key ^ (key >> 11)) & (UNWIND_SETS - 1))];
}

_Static_assert((UNWIND_SETS & (UNWIND_SETS - 1)) == 0,
	       "the cache's sets are a power of two");

/* Read the rule for key from the tables into its set, first. */
static __attribute__((noinline)) const struct unwind_rule *
fill(struct alloy__unwind_cache *c, struct unwind_rule *set, uintptr_t key)
{
	struct find f = {
		.ip = key,
		.first = true,
		.rule = { .flags = UNWIND_UNKNOWN },
	};

	c->misses++;
	dl_iterate_phdr(find_object, &f);
	if (!f.first && f.unloads != atomic_load(&unloads_seen)) {
		/* An object went: every cache, this one next walk, empties. */
		atomic_store(&unloads_seen, f.unloads);
		atomic_fetch_add(&generation, 1);
	}
	f.rule.key = key;
	if (f.ours)
		f.rule.flags |= UNWIND_OURS;
	set[1] = set[0];
	set[0] = f.rule;
	return set;
}

static inline const struct unwind_rule *rule_for(struct alloy__unwind_cache *c,
						 uintptr_t key)
{
	struct unwind_rule *set = set_of(c, key);

	if (likely(set[0].key == key))
		return set;
	if (set[1].key == key)
		return set + 1;
	return fill(c, set, key);
}

/* Empty c if objects were unloaded since it was filled; learn the thread. */
static void cache_check(struct alloy__unwind_cache *c)
{
	unsigned long gen =
		atomic_load_explicit(&generation, memory_order_acquire);
	uintptr_t self = (uintptr_t)pthread_self();

	if (unlikely(c->generation != gen)) {
		memset(c->slot, 0, sizeof(c->slot));
		c->generation = gen;
	}
	/* A record's next thread has a stack of its own. */
	if (unlikely(c->thread != self)) {
		c->thread = self;
		c->stack_top = 0;
	}
}

/*
 * Reads other frames' stack slots, which the sanitizers' instrumentation
 * of this function must not check (libunwind is not instrumented either).
 */
__attribute__((noinline, no_sanitize_address, no_sanitize_thread)) int
alloy__unwind(struct alloy__unwind_cache *c, uintptr_t *out, int max,
	      int *leading_ours)
{
	uintptr_t ip, sp, bp, key, top;
	bool outermost = false;
	int n = 0, lead = 0; /* frames of alloy's own before any other */

	cache_check(c);
	top = c->stack_top ? c->stack_top : UINTPTR_MAX;
	/* rbp first: an output register may be rbp itself (early clobber). */
	__asm__ volatile("mov %%rbp, %0\n\t"
			 "mov %%rsp, %1\n\t"
			 "lea 0(%%rip), %2"
			 : "=&r"(bp), "=&r"(sp), "=&r"(ip));
	key = ip; /* inside this function: its rule is the one at ip */
	while (n < max) {
		const struct unwind_rule *r;
		uintptr_t cfa;

		out[n++] = ip;
		r = rule_for(c, key);
		/* One test for everything but a plain frame of another's. */
		if (unlikely(r->flags & (UNWIND_END | UNWIND_UNKNOWN |
					 UNWIND_FALLBACK | UNWIND_OURS))) {
			if (r->flags & UNWIND_FALLBACK)
				return -1;
			/* alloy's, and every frame before it too */
			if ((r->flags & UNWIND_OURS) && lead == n - 1)
				lead = n;
			if (r->flags & (UNWIND_END | UNWIND_UNKNOWN)) {
				outermost = r->flags & UNWIND_END;
				break;
			}
		}
		cfa = (r->flags & UNWIND_CFA_BP ? bp : sp) +
		      (uintptr_t)r->cfa_off;
		/* Up the stack, not past its top: cfa in (sp, top]. */
		if (unlikely(cfa - sp - 1 >= top - sp || (cfa & 7)))
			return -1;
		if (r->flags & UNWIND_BP_SAVED)
			bp = *(const uintptr_t *)(cfa + (intptr_t)r->bp_off);
		ip = *(const uintptr_t *)(cfa - 8);
		sp = cfa;
		if (!ip) {
			outermost = true;
			break;
		}
		/* Inside the call: a noreturn call may end its function. */
		key = ip - 1;
	}
	/* Every read was below sp, and no frame of the thread is above. */
	if (outermost && sp > c->stack_top)
		c->stack_top = sp;
	*leading_ours = lead;
	return n;
}

#else /* not x86-64 Linux: libunwind does every walk */

int alloy__unwind(struct alloy__unwind_cache *c, uintptr_t *out, int max,
		  int *leading_ours)
{
	(void)c;
	(void)out;
	(void)max;
	*leading_ours = 0;
	return -1;
}

#endif
