// SPDX-License-Identifier: GPL-2.0
/*
 * badrange.c - does a window of a target overlap a known bad range of its
 * disk?  The block layer keeps bad blocks in 512-byte sectors of the whole
 * disk; a target (a namespace, or a partition of one) starts at some byte
 * of that disk, and a window is bytes of the target.  The arithmetic is
 * done in 128 bits, so that no sector number or length can wrap it.
 */
#include "pl_safe.h"

#define PL_SECTOR	512

int pl_bad_first(const struct pl_bad_range *r, unsigned int n, u64 origin, u64 start, u64 len,
		 u64 *off, u64 *bytes)
{
	pl_u128 w0 = (pl_u128)origin + start, w1 = w0 + len;
	pl_u128 best0 = 0, best1 = 0, a0, a1;
	bool found = false;
	unsigned int i;

	if (!len)
		return 0;
	for (i = 0; i < n; i++) {
		if (!r[i].count)
			continue;
		a0 = (pl_u128)r[i].sector * PL_SECTOR;
		a1 = a0 + (pl_u128)r[i].count * PL_SECTOR;
		if (a0 >= w1 || a1 <= w0)
			continue;
		if (!found || a0 < best0) {
			best0 = a0;
			best1 = a1;
			found = true;
		}
	}
	if (!found)
		return 0;
	/* in target bytes, from where the target begins */
	if (best0 < origin)
		best0 = origin;
	*off = (u64)(best0 - origin);
	*bytes = best1 - best0 > (pl_u128)~0ULL ? ~0ULL : (u64)(best1 - best0);
	return 1;
}
