// SPDX-License-Identifier: MIT
/*
 * tensor/workspace.c - named blobs behind one mutex.
 *
 * The names are kept in an array sorted by strcmp: lookups are a binary
 * search, listing is a copy in order, and inserts move the tail - a
 * workspace holds the tensors of one net, tens to thousands, and is read
 * far more than it is changed.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/blob_impl.h"
#include <alloy/workspace.h>
#include <alloy/blob.h>

struct entry {
	char *name;
	struct alloy_blob *blob;
};

struct alloy_workspace {
	pthread_mutex_t lock;
	struct entry *entries;
	size_t n, cap;
};

struct alloy_workspace *alloy_workspace_new(void)
{
	struct alloy_workspace *ws = calloc(1, sizeof(*ws));

	if (!ws) {
		alloy__error(-ENOMEM, __func__, "no memory for a workspace");
		return NULL;
	}
	pthread_mutex_init(&ws->lock, NULL);
	return ws;
}

void alloy_workspace_free(struct alloy_workspace *ws)
{
	if (!ws)
		return;
	for (size_t i = 0; i < ws->n; i++) {
		alloy_blob_free(ws->entries[i].blob);
		free(ws->entries[i].name);
	}
	free(ws->entries);
	pthread_mutex_destroy(&ws->lock);
	free(ws);
}

/* Index of name, or where it would go (*found false).  Under the lock. */
static size_t find(const struct alloy_workspace *ws, const char *name,
		   bool *found)
{
	size_t lo = 0, hi = ws->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(ws->entries[mid].name, name);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static int check_args(const char *func, const struct alloy_workspace *ws,
		      const char *name)
{
	if (!ws || !name)
		return alloy__error(-EINVAL, func, "%s is NULL",
				    ws ? "name" : "workspace");
	if (!name[0])
		return alloy__error(-EINVAL, func, "blob name is empty");
	return 0;
}

/* Insert a new empty blob at index i.  Under the lock. */
static struct alloy_blob *insert(struct alloy_workspace *ws, size_t i,
				 const char *name)
{
	struct entry e;

	if (ws->n == ws->cap) {
		size_t cap = ws->cap ? 2 * ws->cap : 16;
		struct entry *n = realloc(ws->entries, cap * sizeof(*n));

		if (!n)
			goto err_nomem;
		ws->entries = n;
		ws->cap = cap;
	}
	e.name = strdup(name);
	e.blob = alloy_blob_new();
	if (!e.name || !e.blob)
		goto err_free_entry;
	/* What its tensors allocate is owned by the blob's name. */
	alloy__blob_set_owner(e.blob, name);
	memmove(&ws->entries[i + 1], &ws->entries[i],
		(ws->n - i) * sizeof(ws->entries[0]));
	ws->entries[i] = e;
	ws->n++;
	return e.blob;

err_free_entry:
	free(e.name);
	alloy_blob_free(e.blob);
err_nomem:
	alloy__error(-ENOMEM, "alloy_workspace_create_blob",
		     "no memory for blob \"%s\"", name);
	return NULL;
}

/* The blob of that name, made when missing if create; else NULL. */
static struct alloy_blob *lookup(struct alloy_workspace *ws, const char *name,
				 bool create)
{
	struct alloy_blob *b = NULL;
	bool found;
	size_t i;

	pthread_mutex_lock(&ws->lock);
	i = find(ws, name, &found);
	if (found)
		b = ws->entries[i].blob;
	else if (create)
		b = insert(ws, i, name);
	pthread_mutex_unlock(&ws->lock);
	return b;
}

struct alloy_blob *alloy_workspace_create_blob(struct alloy_workspace *ws,
					       const char *name)
{
	if (check_args(__func__, ws, name))
		return NULL;
	return lookup(ws, name, true);
}

struct alloy_blob *alloy_workspace_get_blob(struct alloy_workspace *ws,
					    const char *name)
{
	struct alloy_blob *b;

	if (check_args(__func__, ws, name))
		return NULL;
	b = lookup(ws, name, false);
	if (!b)
		alloy__error(-ENOENT, __func__, "no blob named \"%s\"", name);
	return b;
}

bool alloy_workspace_has_blob(struct alloy_workspace *ws, const char *name)
{
	return ws && name && lookup(ws, name, false);
}

int alloy_workspace_remove_blob(struct alloy_workspace *ws, const char *name)
{
	struct entry e = { 0 };
	bool found;
	size_t i;
	int rc;

	rc = check_args(__func__, ws, name);
	if (rc)
		return rc;
	pthread_mutex_lock(&ws->lock);
	i = find(ws, name, &found);
	if (found) {
		e = ws->entries[i];
		memmove(&ws->entries[i], &ws->entries[i + 1],
			(ws->n - i - 1) * sizeof(ws->entries[0]));
		ws->n--;
	}
	pthread_mutex_unlock(&ws->lock);
	ALLOY_ENFORCE(found, -ENOENT, "no blob named \"%s\"", name);
	/* Outside the lock: destroying a tensor may take a while. */
	alloy_blob_free(e.blob);
	free(e.name);
	return 0;
}

size_t alloy_workspace_size(struct alloy_workspace *ws)
{
	size_t n;

	if (!ws)
		return 0;
	pthread_mutex_lock(&ws->lock);
	n = ws->n;
	pthread_mutex_unlock(&ws->lock);
	return n;
}

long alloy_workspace_list(struct alloy_workspace *ws, char ***names)
{
	size_t bytes, n;
	char **v, *p;

	ALLOY_ENFORCE(ws && names, -EINVAL, "%s is NULL",
		      ws ? "names" : "workspace");
	*names = NULL;
	pthread_mutex_lock(&ws->lock);
	n = ws->n;
	bytes = (n + 1) * sizeof(char *);
	for (size_t i = 0; i < n; i++)
		bytes += strlen(ws->entries[i].name) + 1;
	v = malloc(bytes);
	if (v) {
		/* One block: the pointers, then the strings they point to. */
		p = (char *)(v + n + 1);
		for (size_t i = 0; i < n; i++) {
			size_t len = strlen(ws->entries[i].name) + 1;

			memcpy(p, ws->entries[i].name, len);
			v[i] = p;
			p += len;
		}
		v[n] = NULL;
	}
	pthread_mutex_unlock(&ws->lock);
	ALLOY_ENFORCE(v, -ENOMEM, "no memory to list %zu blob names", n);
	*names = v;
	return (long)n;
}
