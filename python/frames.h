/* SPDX-License-Identifier: MIT */
/*
 * python/frames.h - Python's frames in alloy's call stacks (frames.c).
 */
#ifndef ALLOY_PYTHON_FRAMES_H
#define ALLOY_PYTHON_FRAMES_H

/*
 * Install the frame source, once: 0, or -1 where this interpreter's
 * frames cannot be read (another CPython than 3.11, no symbol for its
 * evaluation loop); stacks are then native only.
 */
int alloy__py_frames_init(void);

#endif /* ALLOY_PYTHON_FRAMES_H */
