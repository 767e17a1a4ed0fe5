// SPDX-License-Identifier: MIT
/*
 * kernel/owner.c - owner labels per thread: alloy_owner_push/pop/current.
 *
 * A thread's labels live in a struct alloy__owner hung on its record
 * (kernel/owner.h), made from alloy's arena on its first push, so that
 * labelling never calls the process's malloc.  A thread that exits gives
 * its state back through a thread-specific key's destructor (holder
 * NULL), and the next thread that pushes takes it, so states are never
 * lost however many threads come and go.
 */
#include <pthread.h>
#include <string.h>

#include "base.h"
#include "count.h"
#include "owner.h"
#include "arena.h"

static pthread_mutex_t states_lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloy__owner *states;
static pthread_key_t owner_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_rc;

/* The thread exits: its state is free for the next thread that pushes. */
static void state_put(void *arg)
{
	struct alloy__owner *o = arg;

	pthread_mutex_lock(&states_lock);
	/* Still our record (its own destructor may have run first). */
	if (alloy__tls_self == o->holder)
		o->holder->owner = NULL;
	o->holder = NULL;
	pthread_mutex_unlock(&states_lock);
}

static void key_setup(void)
{
	key_rc = pthread_key_create(&owner_key, state_put);
}

/* A free state, or a new one, for t; NULL without memory. */
static struct alloy__owner *state_get(struct alloy__tls *t)
{
	struct alloy__owner *o;

	pthread_once(&key_once, key_setup);
	if (key_rc)
		return NULL;
	pthread_mutex_lock(&states_lock);
	for (o = states; o; o = o->next)
		if (!o->holder)
			break;
	if (!o) {
		o = alloy__arena_alloc(sizeof(*o));
		if (o) {
			o->next = states;
			states = o;
		}
	}
	if (o) {
		o->holder = t;
		o->len = o->depth = 0;
		o->path[0] = '\0';
		o->gen++;
	}
	pthread_mutex_unlock(&states_lock);
	/* Outside the lock: setspecific may allocate. */
	if (o && pthread_setspecific(owner_key, o)) {
		state_put(o);
		return NULL;
	}
	if (o)
		t->owner = o;
	return o;
}

int alloy_owner_push(const char *label)
{
	struct alloy__tls *t;
	struct alloy__owner *o;
	size_t n, need;

	ALLOY_ENFORCE(label && label[0], -EINVAL, "owner label is %s",
		      label ? "empty" : "NULL");
	n = strlen(label);
	for (size_t i = 0; i < n; i++)
		ALLOY_ENFORCE(
			(unsigned char)label[i] >= 0x20 && label[i] != 0x7f,
			-EINVAL,
			"owner label has a control character (0x%02x) at byte %zu",
			(unsigned char)label[i], i);
	t = alloy__tls_get();
	ALLOY_ENFORCE(t, -ENOMEM, "no per-thread record for this thread");
	o = t->owner;
	if (!o) {
		o = state_get(t);
		ALLOY_ENFORCE(o, -ENOMEM, "no memory for owner labels");
	}
	ALLOY_ENFORCE(o->depth < ALLOY_OWNER_DEPTH, -E2BIG,
		      "%u owner labels in force already (the most is %d)",
		      o->depth, ALLOY_OWNER_DEPTH);
	need = o->len + (o->depth ? 1 : 0) + n;
	ALLOY_ENFORCE(
		need <= ALLOY_OWNER_MAX, -ENAMETOOLONG,
		"owner path \"%s%s%s\" would be %zu bytes (the most is %d)",
		o->path, o->depth ? "/" : "", label, need, ALLOY_OWNER_MAX);
	o->lens[o->depth] = (uint16_t)o->len;
	if (o->depth)
		o->path[o->len++] = '/';
	memcpy(o->path + o->len, label, n + 1);
	o->len += (uint32_t)n;
	o->depth++;
	o->gen++;
	return 0;
}

int alloy_owner_pop(void)
{
	struct alloy__owner *o = alloy__owner_of(alloy__tls_self);

	ALLOY_ENFORCE(o, -ENOENT, "no owner label to pop on this thread");
	o->depth--;
	o->len = o->lens[o->depth];
	o->path[o->len] = '\0';
	o->gen++;
	return 0;
}

const char *alloy_owner_current(void)
{
	struct alloy__owner *o = alloy__owner_of(alloy__tls_self);

	return o ? o->path : NULL;
}

/* ---- labels that outlive their callers ---------------------------------- */

/*
 * Copies kept for good, so that a tensor can hold its blob's name past
 * the blob (tensor/blob.c).  Few and small: one per distinct blob name.
 */
struct interned {
	struct interned *next;
	char label[];
};

static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static struct interned *intern_table[256];

const char *alloy__owner_intern(const char *label)
{
	uint64_t h = 14695981039346656037ULL;
	struct interned **head, *i;
	size_t n;

	if (!label || !label[0])
		return NULL;
	n = strlen(label);
	if (n > ALLOY_OWNER_MAX)
		return NULL;
	for (size_t k = 0; k < n; k++)
		h = (h ^ (unsigned char)label[k]) * 1099511628211ULL;
	head = &intern_table[h % ARRAY_SIZE(intern_table)];
	pthread_mutex_lock(&intern_lock);
	for (i = *head; i; i = i->next)
		if (!strcmp(i->label, label))
			goto out;
	i = alloy__arena_alloc(sizeof(*i) + n + 1);
	if (i) {
		memcpy(i->label, label, n + 1);
		i->next = *head;
		*head = i;
	}
out:
	pthread_mutex_unlock(&intern_lock);
	return i ? i->label : NULL;
}
