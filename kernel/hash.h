/* SPDX-License-Identifier: MIT */
/*
 * kernel/hash.h - the hash functions alloy's tables and seeded decisions
 * share: a full mix (the command's block maps, the fail allocator's
 * probability) and a one-multiply hash for callers that read only the top
 * bits (the reporter's table of live blocks, on every allocation and free
 * while it is on).
 *
 * splitmix64's finaliser: every bit of the result depends on every bit of
 * the input, so a caller may take the top bits (the reporter's shard), the
 * low bits (a table's home slot) or the whole word (a threshold test), and
 * keys with a common stride (page-aligned addresses) still spread.  Header
 * only, so it lives in no library and every layer may include it.
 *
 * The fail allocator's seeded decisions are this function's values: a
 * change here changes which allocations a given fail.seed fails.
 */
#ifndef ALLOY_KERNEL_HASH_H
#define ALLOY_KERNEL_HASH_H

#include <stdint.h>

static inline uint64_t alloy__mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/*
 * Fibonacci hashing: one multiply by 2^64 / phi.  Only the top bits are
 * well mixed, so a caller takes those (x >> (64 - bits)); the price of a
 * full mix on every allocation the reporter records is not worth it
 * there.
 */
static inline uint64_t alloy__hash_top(uint64_t x)
{
	return x * 0x9e3779b97f4a7c15ULL;
}

#endif /* ALLOY_KERNEL_HASH_H */
