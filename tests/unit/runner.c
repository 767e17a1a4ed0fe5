// SPDX-License-Identifier: MIT
/*
 * tests/unit/runner.c - runs every suite of tests/unit/suites.h.
 *
 * Each test runs in a forked child (check's default), so a test may set
 * ALLOY_CONF before its first call into alloy and get a fresh library.
 * CK_RUN_SUITE=name / CK_RUN_CASE=name select a part, as check allows.
 */
#include <stdlib.h>
#include <check.h>

#include "suites.h"

#define DECLARE(name) Suite *suite_##name(void);
ALLOY_TEST_SUITES (DECLARE)

	int main(void)
	{
		SRunner *sr = srunner_create(NULL);
		int failed;

#define ADD(name) srunner_add_suite(sr, suite_##name());
		ALLOY_TEST_SUITES (ADD)
			srunner_run_all(sr, CK_ENV);
		failed = srunner_ntests_failed(sr);
		srunner_free(sr);
		return failed ? EXIT_FAILURE : EXIT_SUCCESS;
	}
