// SPDX-License-Identifier: MIT
/*
 * root/init.c - liballoy's composition root: what the library registers
 * when it starts, in order.
 *
 * This is the one file that knows every part.  Core runs compose() on
 * first use (kernel/init.c) without naming it: the constructor below
 * attaches it, which is a single pointer store at load time, so loading
 * liballoy reads no environment and touches nothing until it is used.  A
 * program linked statically pulls this file in through alloy_init().
 */
#include <stdio.h>

#include "kernel/base.h"
#include "kernel/compose.h"
#include "kernel/plugins.h"
#include "kernel/conf.h"
#include "kernel/secure.h"
#include "allocators/builtin.h"
#include "contexts/cpu.h"
#include "reporter/start.h"

static void compose(void)
{
	alloy__conf_print_errors();
	if (alloy__register_builtin_allocators())
		fprintf(stderr, "alloy: initialisation: %s\n",
			alloy_last_error());
	alloy__register_cpu_context();
	/*
	 * Before the defaults, so that cpu:<a plugin's allocator> works.
	 * Never in a setuid program: its caller would choose the code.
	 */
	alloy__plugins_load_list(alloy__secure_getenv("ALLOY_PLUGINS"));
	/*
	 * The wrappers' inners once every allocator of the start is in:
	 * fail.inner:<a plugin's allocator> works like cpu:<it>, and an
	 * inner may be another wrapper.
	 */
	if (alloy__wrap_resolve_inners())
		fprintf(stderr, "alloy: initialisation: %s\n",
			alloy_last_error());
	alloy__conf_apply_defaults("default");
	alloy__conf_check_options();
	alloy__reporter_start();
}

__attribute__((constructor)) static void attach(void)
{
	alloy__set_composer(compose);
}

int alloy_init(void)
{
	attach();
	alloy__ensure_init();
	return alloy__conf.nerrors;
}
