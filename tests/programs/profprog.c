// SPDX-License-Identifier: MIT
/*
 * tests/programs/profprog.c - a program whose memory at its peak is known
 * exactly, for the profiler's tests (tests/cli/test_cli_profile.sh,
 * test_flamegraph.sh): sites are functions of this file, owners are labels and
 * a workspace blob's name.
 *
 * At the peak (right after scratch_buffer), live are:
 *
 *   site               owner          blocks  bytes
 *   make_weights       model/layer1   3       3 x 4096 = 12288
 *   make_activations   model/layer2   2       2 x 10000 = 20000
 *   scratch_buffer     (no owner)     1       777
 *   (the tensor)       model/fc1_w    1       256 floats = 1024
 *
 * 34089 bytes in 7 blocks.  make_weights and make_activations are called
 * through build_model, scratch_buffer straight from main.  Everything is
 * freed before exit; a last block of 100 bytes comes and goes after the
 * peak.  Run with ALLOY_CONF=trace:...,backtrace:1.
 *
 * Options, for the reporter's exit behaviour:
 *   --leak          keep two of the weights (8192 bytes) to the end
 *   --close-stderr  close stderr before exit, as ls and sort do
 *   --fork          fork once the weights are made; the child makes a
 *                   block of 300 bytes, frees one inherited weight and
 *                   exits (with %p in the paths it writes files of its own)
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <alloy/alloy.h>

#define KEEP __attribute__((noinline, noclone))

static void *weights[3], *acts[2], *scratch;

/* Calls are not the last thing a function does: no frame is skipped. */
#define NO_TAIL() __asm__ volatile("" ::: "memory")

static KEEP void make_weights(void)
{
	for (int i = 0; i < 3; i++)
		weights[i] = alloy_malloc(4096);
	NO_TAIL();
}

static KEEP void make_activations(void)
{
	for (int i = 0; i < 2; i++)
		acts[i] = alloy_malloc(10000);
	NO_TAIL();
}

static KEEP void build_model(void)
{
	alloy_owner_push("model");
	alloy_owner_push("layer1");
	make_weights();
	alloy_owner_pop();
	alloy_owner_push("layer2");
	make_activations();
	alloy_owner_pop();
	alloy_owner_pop();
	NO_TAIL();
}

static KEEP void scratch_buffer(void)
{
	scratch = alloy_malloc(777);
	NO_TAIL();
}

static KEEP struct alloy_workspace *make_tensor(void)
{
	struct alloy_workspace *ws = alloy_workspace_new();
	struct alloy_tensor *t;
	int64_t dims[] = { 256 };

	alloy_owner_push("model");
	t = alloy_blob_get_mutable_tensor(
		alloy_workspace_create_blob(ws, "fc1_w"), ALLOY_CPU);
	if (!t || alloy_tensor_resize(t, dims, 1) ||
	    !alloy_tensor_raw_mutable_data(t, alloy_type(ALLOY_TYPE_FLOAT))) {
		fprintf(stderr, "profprog: %s\n", alloy_last_error());
		exit(1);
	}
	alloy_owner_pop();
	NO_TAIL();
	return ws;
}

/* The child of --fork: its own block, and a free of an inherited one. */
static KEEP void child_work(void)
{
	void *mine = alloy_malloc(300);

	alloy_free(weights[0]);
	alloy_free(mine);
	exit(0);
}

int main(int argc, char **argv)
{
	bool leak = false, close_err = false, do_fork = false;
	struct alloy_workspace *ws;
	void *after;

	for (int i = 1; i < argc; i++) {
		leak |= !strcmp(argv[i], "--leak");
		close_err |= !strcmp(argv[i], "--close-stderr");
		do_fork |= !strcmp(argv[i], "--fork");
	}
	ws = make_tensor();
	build_model();
	if (do_fork) {
		int st;
		pid_t pid = fork();

		if (pid == 0)
			child_work();
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st)) {
			fprintf(stderr, "profprog: the child failed\n");
			return 1;
		}
	}
	scratch_buffer();
	/* The peak. */
	alloy_free(scratch);
	for (int i = 0; i < 2; i++)
		alloy_free(acts[i]);
	after = alloy_malloc(100);
	alloy_free(after);
	for (int i = leak ? 2 : 0; i < 3; i++)
		alloy_free(weights[i]);
	alloy_workspace_free(ws);
	puts("profprog: done");
	if (close_err)
		fclose(stderr);
	return 0;
}
