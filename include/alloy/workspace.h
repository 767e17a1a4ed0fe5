/* SPDX-License-Identifier: MIT */
/*
 * alloy/workspace.h - named blobs (Caffe2's Workspace).
 *
 * A workspace owns its blobs and frees them, with their contents, when it
 * is freed.  Every function is thread-safe; a blob pointer stays valid
 * until its name is removed or the workspace freed, and using one blob
 * from several threads is the caller's to serialise.
 */
#ifndef ALLOY_WORKSPACE_H
#define ALLOY_WORKSPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <alloy/blob.h>

#ifdef __cplusplus
extern "C" {
#endif

struct alloy_workspace;

/* An empty workspace.  NULL + message when out of memory. */
struct alloy_workspace *alloy_workspace_new(void);

/* Free every blob and the workspace.  NULL-safe. */
void alloy_workspace_free(struct alloy_workspace *ws);

/*
 * The blob of that name, created empty if there is none (idempotent).
 * NULL + message for a NULL or empty name or no memory.
 */
struct alloy_blob *alloy_workspace_create_blob(struct alloy_workspace *ws,
					       const char *name);

/* The blob of that name, or NULL (-ENOENT message). */
struct alloy_blob *alloy_workspace_get_blob(struct alloy_workspace *ws,
					    const char *name);

bool alloy_workspace_has_blob(struct alloy_workspace *ws, const char *name);

/* Free the blob of that name and its content.  0 or -ENOENT. */
int alloy_workspace_remove_blob(struct alloy_workspace *ws, const char *name);

/* Number of blobs. */
size_t alloy_workspace_size(struct alloy_workspace *ws);

/*
 * The names, sorted (strcmp order), as a NULL-terminated array in one
 * malloc'd block: free(*names) releases it.  Returns the count, or a
 * negative errno.
 */
long alloy_workspace_list(struct alloy_workspace *ws, char ***names);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_WORKSPACE_H */
