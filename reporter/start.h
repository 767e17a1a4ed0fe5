/* SPDX-License-Identifier: MIT */
/*
 * reporter/start.h - how the composition root starts the reporter.
 */
#ifndef ALLOY_REPORTER_START_H
#define ALLOY_REPORTER_START_H

#include "kernel/base.h"

/*
 * Start the reporter if ALLOY_CONF asks for it (report, log or trace):
 * it attaches to core through the allocation hooks (alloy__set_hooks).
 */
ALLOY_HIDDEN void alloy__reporter_start(void);

#endif /* ALLOY_REPORTER_START_H */
