/* SPDX-License-Identifier: MIT */
/*
 * alloy/alloy.h - everything alloy installs, in one include.
 */
#ifndef ALLOY_ALLOY_H
#define ALLOY_ALLOY_H

#include <alloy/version.h>
#include <alloy/error.h>
#include <alloy/device.h>
#include <alloy/allocator.h>
#include <alloy/registry.h>
#include <alloy/plain.h>
#include <alloy/owner.h>
#include <alloy/conf.h>
#include <alloy/context.h>
#include <alloy/cuda.h>
#include <alloy/syncedmem.h>
#include <alloy/reporter.h>
#include <alloy/plugin.h>
#include <alloy/control.h>
#include <alloy/typemeta.h>
#include <alloy/storage.h>
#include <alloy/tensor.h>
#include <alloy/blob.h>
#include <alloy/workspace.h>
#include <alloy/reporter.h>
#include <alloy/fail.h>
#include <alloy/debug.h>

#endif /* ALLOY_ALLOY_H */
