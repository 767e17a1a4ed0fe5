// SPDX-License-Identifier: MIT
/*
 * reporter/owners.c - owner labels as small numbers.
 *
 * A block records the owner path in force on its thread when it was made
 * (kernel/owner.c) as an id into a table of distinct paths, which the trace
 * writes once each ("o ID LABEL").  The thread's state keeps the id it
 * was given with the generation of its path, so a thread allocating
 * under one label looks it up only once.
 */
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "kernel/arena.h"

static struct {
	pthread_mutex_t lock;
	struct rep_vec owners; /* of struct rep_owner * */
	struct rep_index index;
} O = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.owners.elem = sizeof(struct rep_owner *),
};

void alloy__rep_owners_lock(bool lock)
{
	if (lock)
		pthread_mutex_lock(&O.lock);
	else
		pthread_mutex_unlock(&O.lock);
}

struct rep_owner *alloy__rep_owner(uint32_t id)
{
	return *(struct rep_owner **)alloy__rep_vec_at(&O.owners, id);
}

struct label {
	const char *s;
	uint32_t len;
};

static bool same_label(uint32_t id, const void *key)
{
	const struct label *l = key;
	const struct rep_owner *o = alloy__rep_owner(id);

	return o->len == l->len && !memcmp(o->label, l->s, l->len);
}

static uint32_t label_hash(const struct label *l)
{
	uint64_t h = l->len;
	uint32_t i;

	for (i = 0; i + 8 <= l->len; i += 8) {
		uint64_t w;

		memcpy(&w, l->s + i, 8);
		h = alloy__rep_mix(h, w);
	}
	for (; i < l->len; i++)
		h = alloy__rep_mix(h, (unsigned char)l->s[i]);
	return (uint32_t)(h >> 32);
}

static uint32_t owner_add(const struct label *l, uint32_t h)
{
	struct rep_owner **slot, *o;
	uint32_t id;

	pthread_mutex_lock(&O.lock);
	id = alloy__rep_index_find(&O.index, h, same_label, l);
	if (id)
		goto out;
	slot = alloy__rep_vec_next(&O.owners);
	o = slot ? alloy__arena_alloc(sizeof(*o) + l->len + 1) : NULL;
	if (!o)
		goto out;
	o->hash = h;
	o->len = l->len;
	memcpy(o->label, l->s, l->len);
	*slot = o;
	id = alloy__rep_vec_publish(&O.owners);
	if (alloy__rep_index_add(&O.index, h, id))
		id = 0;
out:
	pthread_mutex_unlock(&O.lock);
	return id;
}

uint32_t alloy__rep_owner_id_of(struct alloy__owner *o)
{
	struct label l;
	uint32_t h, id;

	if (o->rep_gen == o->gen)
		return o->rep_id;
	l.s = o->path;
	l.len = o->len;
	h = label_hash(&l);
	id = alloy__rep_index_find(&O.index, h, same_label, &l);
	if (!id)
		id = owner_add(&l, h);
	if (id) {
		o->rep_id = id;
		o->rep_gen = o->gen;
	}
	return id;
}
