/* SPDX-License-Identifier: MIT */
/*
 * kernel/sanitizer.h - whether this build runs under a sanitizer that owns
 * the process's malloc.
 *
 * AddressSanitizer, ThreadSanitizer and MemorySanitizer each define
 * malloc and free themselves.  Code that would call glibc's allocator by
 * its own names (__libc_malloc, to stay clear of an LD_PRELOAD front)
 * must use the plain names there instead: the sanitizer sees memory only
 * through its own entry points, and memory glibc hands from one thread to
 * another behind its back reads as a data race to ThreadSanitizer and as
 * unchecked to AddressSanitizer.  GCC says so with __SANITIZE_*__, clang
 * with __has_feature.
 */
#ifndef ALLOY_KERNEL_SANITIZER_H
#define ALLOY_KERNEL_SANITIZER_H

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ALLOY_SANITIZER_OWNS_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define ALLOY_SANITIZER_OWNS_MALLOC 1
#endif
#endif

#endif /* ALLOY_KERNEL_SANITIZER_H */
