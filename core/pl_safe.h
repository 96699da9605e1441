/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pl_safe.h - pure checks that keep runs off what a user would miss: the
 * on-disk signatures a target carries (sig.c) and the known bad ranges of a
 * namespace (badrange.c).  Portable (shim.h only): the module, the runner
 * and the host tests (libplcore.so) share them.
 */
#ifndef PMEMLAB_SAFE_H
#define PMEMLAB_SAFE_H

#include "shim.h"

/*
 * Reads len bytes at byte off of the target into buf; 0, or non-zero when
 * those bytes cannot be read (a media error, a known bad range).
 */
typedef int (*pl_sig_read_fn)(void *ctx, u64 off, void *buf, unsigned int len);

/*
 * The first signature found on a target of size bytes, named as blkid
 * names it ("ext4", "gpt", "dos", "LVM2_member", "swap", "crypto_LUKS",
 * ...); "none" when there is none; "unreadable" when none was found but
 * some of the bytes looked at could not be read.  Reads only inside
 * [0, size), about 5 KiB in all (most of it the ZFS uberblock rings).
 */
const char *pl_sig_probe(pl_sig_read_fn rd, void *ctx, u64 size);

/* one entry of a block device's bad-block list: 512-byte sectors of the disk */
struct pl_bad_range {
	u64 sector, count;
};

/*
 * The lowest of the n bad ranges r[] that overlaps bytes [start, start +
 * len) of a target whose byte 0 is byte origin of the disk (the partition
 * or namespace data offset): returns 1 and sets *off, *bytes to that range
 * in bytes of the target (clipped where it begins before the target), or 0
 * when no range overlaps (always for len 0).  A sector is bad as a whole:
 * a window that touches one byte of it overlaps it.
 */
int pl_bad_first(const struct pl_bad_range *r, unsigned int n, u64 origin, u64 start, u64 len,
		 u64 *off, u64 *bytes);

#endif /* PMEMLAB_SAFE_H */
