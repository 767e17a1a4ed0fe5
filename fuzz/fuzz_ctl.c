// SPDX-License-Identifier: MIT
/*
 * fuzz/fuzz_ctl.c - libFuzzer target: the control protocol's request
 * parser (control/proto.c).
 *
 * Any bytes at all, as one request line, must parse or be refused
 * without crashing, stay inside their buffers (ASan), and keep the
 * parser's promises: a refusal leaves a message of printable ASCII, an
 * accepted request names a known command, a valid allocator name and
 * a device for a swap, and a path without control bytes for a trace.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <alloy/alloy.h>

#include "control/proto.h"

#define CHECK(cond)              \
	do {                     \
		if (!(cond))     \
			abort(); \
	} while (0)

static bool printable(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (n == cap)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ctl_request req;
	char err[CTL_ERROR_MAX];
	/* An exact-size copy, so that ASan sees any read past the line. */
	char *line = malloc(size ? size : 1);
	int rc;

	if (!line)
		return 0;
	memcpy(line, data, size);
	rc = alloy__ctl_parse(line, size, &req, err, sizeof(err));
	free(line);
	CHECK(rc == 0 || rc == -EINVAL);
	if (rc) {
		CHECK(err[0] != '\0' && printable(err, sizeof(err)));
		return 0;
	}
	CHECK(req.command >= CTL_SWAP && req.command <= CTL_PING);
	if (req.command == CTL_SWAP) {
		CHECK(alloy_allocator_name_valid(req.allocator));
		CHECK(alloy_device_type_name(req.device) != NULL);
	}
	if (req.command == CTL_TRACE_START) {
		size_t n = strnlen(req.path, sizeof(req.path));

		CHECK(n > 0 && n < sizeof(req.path));
		for (size_t i = 0; i < n; i++)
			CHECK((unsigned char)req.path[i] >= 0x20 &&
			      (unsigned char)req.path[i] != 0x7f);
	}
	return 0;
}
