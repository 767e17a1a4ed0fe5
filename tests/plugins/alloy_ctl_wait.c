// SPDX-License-Identifier: MIT
/*
 * tests/plugins/alloy_ctl_wait.c - a module whose init says it started
 * (it creates the file CTL_WAIT_MARK names) and then takes long, so that
 * `alloy ctl PID swap cpu:ctl_wait` is still running when the program
 * exits (tests/cli/test_ctl.sh).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "common.h"

#define WAIT_TENTHS 150

static int wait_init(void)
{
	const char *mark = getenv("CTL_WAIT_MARK");
	int fd = mark ? open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) : -1;

	if (fd >= 0)
		close(fd);
	for (int i = 0; i < WAIT_TENTHS; i++)
		usleep(100 * 1000);
	return 0;
}

static const struct alloy_allocator_ops one = TP_OPS("ctl_wait");
static const struct alloy_plugin_allocator list[] = { { &one, NULL } };
static struct alloy_plugin_descriptor desc = TP_DESCRIPTOR(list);

EXPORT const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	desc.init = wait_init;
	return &desc;
}
