// SPDX-License-Identifier: GPL-2.0
/*
 * guardpages.c - guard pages for the runner's buffers (in the runner and in
 * its libraries; the host tests fault them on purpose through libpltest.so).
 */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "runner.h"

/*
 * Every buffer the engine is handed (the target, target.c; the ceiling,
 * samples and histogram, plu_guarded_alloc) lies between two inaccessible
 * pages, so that an access past either end faults at once instead of
 * landing in a neighbouring mapping.  The engine's accesses are inline asm,
 * which AddressSanitizer does not see; a guard page faults for any
 * instruction (docs/userspace.md).
 */

/*
 * Address space for len bytes at an align-aligned address (align a power
 * of two >= 4096), with a PROT_NONE page on each side and nothing else
 * reserved: the caller maps [p, p + len) with MAP_FIXED.  NULL on failure.
 */
char *plu_reserve(u64 len, u64 align)
{
	u64 res_len = len + align + 2 * PLU_GUARD;
	char *res, *p, *end;

	res = mmap(NULL, res_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return NULL;
	p = (char *)(((unsigned long)res + PLU_GUARD + align - 1) & ~(unsigned long)(align - 1));
	if (p - PLU_GUARD > res)
		munmap(res, p - PLU_GUARD - res);
	end = p + len + PLU_GUARD;
	if (end < res + res_len)
		munmap(end, res + res_len - end);
	return p;
}

void *plu_guarded_alloc(u64 len)
{
	u64 rlen = (len + PLU_GUARD - 1) & ~(PLU_GUARD - 1);
	char *p;

	if (!len)
		return NULL;
	p = plu_reserve(rlen, PLU_GUARD);
	if (!p || mmap(p, rlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		       -1, 0) == MAP_FAILED)
		return NULL;
	/* the buffer starts 64-byte aligned and ends at the upper guard page (len % 64 == 0) */
	return p + ((rlen - len) & ~63ULL);
}

void plu_guarded_free(void *buf, u64 len)
{
	u64 rlen = (len + PLU_GUARD - 1) & ~(PLU_GUARD - 1);
	char *p = (char *)((unsigned long)buf & ~(unsigned long)(PLU_GUARD - 1));

	if (buf)
		munmap(p - PLU_GUARD, rlen + 2 * PLU_GUARD);
}
