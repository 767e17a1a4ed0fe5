// SPDX-License-Identifier: MIT
/*
 * cli/cmd_conf.c - `alloy conf`: the effective configuration.
 */
#include <string.h>

#include <alloy/alloy.h>

#include "analysis/json.h"
#include "cli.h"

struct conf_state {
	bool json;
	int n;
};

static void print_key(const char *key, const char *value, const char *help,
		      bool from_env, void *arg)
{
	struct conf_state *st = arg;

	if (st->json) {
		printf("%s\n    ", st->n ? "," : "");
		json_string(stdout, key);
		printf(": {\"value\": ");
		json_string(stdout, value);
		printf(", \"source\": \"%s\"}",
		       from_env ? "ALLOY_CONF" : "default");
	} else {
		printf("%-28s %-16s %-10s %s\n", key, value[0] ? value : "-",
		       from_env ? "ALLOY_CONF" : "default", help);
	}
	st->n++;
}

static void print_option(const char *allocator, const char *key,
			 const char *value, void *arg)
{
	struct conf_state *st = arg;

	if (st->json) {
		printf("%s\n    {\"allocator\": ", st->n ? "," : "");
		json_string(stdout, allocator);
		printf(", \"key\": ");
		json_string(stdout, key);
		printf(", \"value\": ");
		json_string(stdout, value);
		printf("}");
	} else {
		printf("%s.%s:%s\n", allocator, key, value);
	}
	st->n++;
}

static int run_conf(int argc, char **argv)
{
	struct conf_state st = { 0 };
	int nerr;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			st.json = true;
		else
			return cli_usage_error(
				&cmd_conf, "unknown option \"%s\"", argv[i]);
	}
	nerr = alloy_init();
	if (st.json)
		printf("{\"settings\": {");
	alloy_conf_foreach(print_key, &st);
	st.n = 0;
	if (st.json)
		printf("\n  },\n  \"allocator_options\": [");
	else
		printf("\nallocator options:%s\n", "");
	alloy_conf_foreach_option(print_option, &st);
	if (!st.json && st.n == 0)
		printf("(none)\n");
	if (st.json) {
		printf("\n  ],\n  \"errors\": [");
		for (int i = 0; i < nerr; i++) {
			printf("%s\n    ", i ? "," : "");
			json_string(stdout, alloy_conf_error(i));
		}
		printf("\n  ]\n}\n");
	} else if (nerr) {
		printf("\n%d error%s in ALLOY_CONF (see above on stderr)\n",
		       nerr, nerr == 1 ? "" : "s");
	}
	return nerr ? EXIT_PROBLEM : 0;
}

const struct cli_command cmd_conf = {
	.name = "conf",
	.summary =
		"print the effective configuration (exit 1 on ALLOY_CONF errors)",
	.usage =
		"usage: alloy conf [--json]\n"
		"\n"
		"Prints every ALLOY_CONF key with the value in effect and where it\n"
		"came from, then the allocator-specific options (name.key:value).\n"
		"Problems in ALLOY_CONF are printed on stderr, one line each, and\n"
		"make the exit status 1.\n"
		"\n"
		"  --json   print the same as a JSON object, errors included\n",
	.run = run_conf,
};
