// SPDX-License-Identifier: MIT
/*
 * cli/cmd_list.c - `alloy list`: the registered allocators.
 */
#include <string.h>

#include <alloy/alloy.h>

#include "analysis/json.h"
#include "cli.h"

struct list_state {
	bool json;
	int n;
};

static bool is_default(struct alloy_allocator *a)
{
	return alloy_get_default(alloy_allocator_device_type(a)) == a;
}

static int print_one(struct alloy_allocator *a, void *arg)
{
	struct list_state *st = arg;
	const char *dev =
		alloy_device_type_name(alloy_allocator_device_type(a));

	if (st->json) {
		printf("%s\n    {\"name\": ", st->n ? "," : "");
		json_string(stdout, alloy_allocator_name(a));
		printf(", \"device\": ");
		json_string(stdout, dev);
		printf(", \"origin\": ");
		json_string(stdout, alloy_allocator_origin(a));
		printf(", \"live_blocks\": %lld, \"live_bytes\": %lld, \"default\": %s}",
		       alloy_allocator_live_blocks(a),
		       alloy_allocator_live_bytes(a),
		       is_default(a) ? "true" : "false");
	} else {
		printf("%-16s %-10s %8lld %12lld  %-7s %s\n",
		       alloy_allocator_name(a), dev,
		       alloy_allocator_live_blocks(a),
		       alloy_allocator_live_bytes(a),
		       is_default(a) ? "yes" : "", alloy_allocator_origin(a));
	}
	st->n++;
	return 0;
}

static int run_list(int argc, char **argv)
{
	struct list_state st = { 0 };

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			st.json = true;
		else
			return cli_usage_error(
				&cmd_list, "unknown option \"%s\"", argv[i]);
	}
	alloy_init();
	if (st.json)
		printf("{\"allocators\": [");
	else
		printf("%-16s %-10s %8s %12s  %-7s %s\n", "NAME", "DEVICE",
		       "BLOCKS", "BYTES", "DEFAULT", "ORIGIN");
	alloy_foreach_allocator(print_one, &st);
	if (st.json)
		printf("\n]}\n");
	return 0;
}

const struct cli_command cmd_list = {
	.name = "list",
	.summary = "list the registered allocators",
	.usage =
		"usage: alloy list [--json]\n"
		"\n"
		"Lists every registered allocator: name, device, live blocks and\n"
		"bytes, whether it is its device's default, and its origin\n"
		"(builtin, or the path of the module that provided it).\n"
		"Modules named in ALLOY_CONF or ALLOY_PLUGINS are loaded first.\n"
		"\n"
		"  --json   print the same as a JSON object\n",
	.run = run_list,
};
