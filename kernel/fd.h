/* SPDX-License-Identifier: MIT */
/*
 * kernel/fd.h - where alloy keeps the descriptors it holds open in a
 * program that does not know of them (the reporter's files, the front's
 * copy of stderr): high, and closed on exec.
 */
#ifndef ALLOY_KERNEL_FD_H
#define ALLOY_KERNEL_FD_H

/* The lowest number alloy's descriptors take when it can. */
int alloy__fd_high_base(void);

/*
 * A close-on-exec copy of fd at alloy__fd_high_base() or above, lower
 * and lower while those are all taken; -1 with errno when none can be
 * had.
 */
int alloy__fd_copy_high(int fd);

#endif /* ALLOY_KERNEL_FD_H */
