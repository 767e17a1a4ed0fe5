// SPDX-License-Identifier: MIT
/*
 * tests/programs/setuid_probe.c - a program linked with liballoy (statically,
 * so that a setuid copy needs no library path) for tests/cli/test_setuid.sh:
 * it initialises alloy from the environment it is given, allocates through
 * the CPU default, and prints what it saw.  Made setuid root by the test
 * and run as an unprivileged user, it is the setuid program an attacker
 * would aim alloy's environment variables at.
 */
#include <stdio.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <alloy/alloy.h>

int main(void)
{
	int errors = alloy_init();
	struct alloy_data_ptr dp;
	int rc = alloy_context_new(ALLOY_CPU, 100, &dp);
	/* A setuid program never opens a control socket (-EPERM). */
	int control = alloy_control_start();

	printf("at_secure=%lu euid=%d uid=%d errors=%d cpu=%s alloc=%d control=%d\n",
	       getauxval(AT_SECURE), (int)geteuid(), (int)getuid(), errors,
	       alloy_allocator_name(alloy_get_default(ALLOY_DEVICE_CPU)), rc,
	       control);
	alloy_data_ptr_free(&dp);
	return rc ? 1 : 0;
}
