// SPDX-License-Identifier: MIT
/*
 * allocators/ptrmap.c - address -> record map, pointer vector (ptrmap.h).
 */
#include <stdlib.h>

#include "allocators/ptrmap.h"

static size_t slot_of(uintptr_t key, size_t mask)
{
	/* Blocks are 512-aligned: drop the zero bits, then mix (Fibonacci). */
	return (size_t)(((key >> 9) * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}

static int grow(struct alloy__ptrmap *m)
{
	size_t cap = m->slots ? (m->mask + 1) * 2 : 64;
	struct alloy__ptrmap_slot *old = m->slots;
	size_t old_cap = old ? m->mask + 1 : 0;

	m->slots = calloc(cap, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	m->mask = cap - 1;
	for (size_t i = 0; i < old_cap; i++) {
		size_t s;

		if (!old[i].key)
			continue;
		for (s = slot_of(old[i].key, m->mask); m->slots[s].key;
		     s = (s + 1) & m->mask)
			;
		m->slots[s] = old[i];
	}
	free(old);
	return 0;
}

int alloy__ptrmap_put(struct alloy__ptrmap *m, const void *key, void *value)
{
	uintptr_t k = (uintptr_t)key;
	size_t s;

	/* Keep the load at most one half: probes stay short. */
	if (!m->slots || 2 * (m->count + 1) > m->mask + 1)
		if (grow(m))
			return -ENOMEM;
	for (s = slot_of(k, m->mask); m->slots[s].key; s = (s + 1) & m->mask)
		;
	m->slots[s].key = k;
	m->slots[s].value = value;
	m->count++;
	return 0;
}

static size_t find(const struct alloy__ptrmap *m, uintptr_t k)
{
	if (!m->slots)
		return SIZE_MAX;
	for (size_t s = slot_of(k, m->mask); m->slots[s].key;
	     s = (s + 1) & m->mask)
		if (m->slots[s].key == k)
			return s;
	return SIZE_MAX;
}

void *alloy__ptrmap_get(const struct alloy__ptrmap *m, const void *key)
{
	size_t s = find(m, (uintptr_t)key);

	return s == SIZE_MAX ? NULL : m->slots[s].value;
}

void *alloy__ptrmap_take(struct alloy__ptrmap *m, const void *key)
{
	size_t hole = find(m, (uintptr_t)key);
	void *value;

	if (hole == SIZE_MAX)
		return NULL;
	value = m->slots[hole].value;
	/*
	 * Backward shift: move later members of the run into the hole when
	 * their home slot is not between the hole and where they sit.
	 */
	for (size_t s = (hole + 1) & m->mask; m->slots[s].key;
	     s = (s + 1) & m->mask) {
		size_t home = slot_of(m->slots[s].key, m->mask);

		if (((s - home) & m->mask) >= ((s - hole) & m->mask)) {
			m->slots[hole] = m->slots[s];
			hole = s;
		}
	}
	m->slots[hole].key = 0;
	m->slots[hole].value = NULL;
	m->count--;
	return value;
}

void alloy__ptrmap_free(struct alloy__ptrmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->mask = 0;
	m->count = 0;
}

int alloy__ptrvec_push(struct alloy__ptrvec *pv, void *p)
{
	if (pv->n == pv->cap) {
		size_t cap = pv->cap ? 2 * pv->cap : 4;
		void **v = realloc(pv->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		pv->v = v;
		pv->cap = cap;
	}
	pv->v[pv->n++] = p;
	return 0;
}

int alloy__ptrvec_add_unique(struct alloy__ptrvec *pv, void *p)
{
	for (size_t i = 0; i < pv->n; i++)
		if (pv->v[i] == p)
			return 0;
	return alloy__ptrvec_push(pv, p);
}

void alloy__ptrvec_free(struct alloy__ptrvec *pv)
{
	free(pv->v);
	pv->v = NULL;
	pv->n = pv->cap = 0;
}
