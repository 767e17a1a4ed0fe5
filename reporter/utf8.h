/* SPDX-License-Identifier: MIT */
/*
 * reporter/utf8.h - where a valid UTF-8 sequence starts, for the writers
 * of JSON (the library's report, the alloy command's): each byte that is
 * not part of one is written as U+FFFD, so their output is valid UTF-8
 * whatever names and labels hold.
 */
#ifndef ALLOY_REPORTER_UTF8_H
#define ALLOY_REPORTER_UTF8_H

/*
 * The length of the UTF-8 sequence at p (1 to 4), or 0 where p starts no
 * valid one: a stray continuation byte, a sequence cut short (the NUL
 * ending the string stops it too), an overlong form, a surrogate
 * (U+D800-DFFF) or a code point past U+10FFFF.  RFC 3629's table.
 */
static inline int alloy__utf8_len(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xbf;
	int n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0; /* 0x80-0xc1 (continuation, overlong), 0xf5-0xff */
	/* The second byte's range rules out overlongs and the rest. */
	if (p[0] == 0xe0)
		lo = 0xa0;
	else if (p[0] == 0xed)
		hi = 0x9f;
	else if (p[0] == 0xf0)
		lo = 0x90;
	else if (p[0] == 0xf4)
		hi = 0x8f;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

#endif /* ALLOY_REPORTER_UTF8_H */
