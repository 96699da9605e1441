// SPDX-License-Identifier: GPL-2.0
/*
 * safety.c - what keeps a run off data and memory a user would miss, and
 * the facts behind it:
 *  - the signatures and partitions the target carries (facts for the
 *    overwrite rule of core/check.c: write runs refused unless the
 *    module was loaded with allow_overwrite=1);
 *  - the namespace's known bad ranges (any run over one refused: a load
 *    from poisoned pmem machine-checks the host).
 * The decisions themselves are the portable core/sig.c and badrange.c.
 */
#define pr_fmt(fmt) "pmemlab: " fmt

#include <linux/kernel.h>
#include <linux/blkdev.h>
#include <linux/badblocks.h>
#include <linux/seqlock.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/sysfs.h>
#include "pmemlab.h"
#include "pl_safe.h"

/* ---- known bad ranges ---- */

/*
 * A copy of the disk's bad-block list, read under its seqlock as the block
 * layer's own readers do; *n 0 when the disk keeps none.  NULL only when
 * out of memory.
 */
static struct pl_bad_range *pl_bad_snapshot(const struct pl_target *t, unsigned int *n)
{
	struct badblocks *bb = t->bdev ? pl_bdev(t->bdev)->bd_disk->bb : NULL;
	struct pl_bad_range *r;
	unsigned int seq, i, cnt;
	int shift;
	u64 e;

	r = kmalloc_array(MAX_BADBLOCKS, sizeof(*r), GFP_KERNEL);
	if (!r)
		return NULL;
	*n = 0;
	if (!bb)
		return r;
	do {
		seq = read_seqbegin(&bb->lock);
		shift = bb->shift;
		cnt = shift < 0 ? 0 : clamp_t(int, READ_ONCE(bb->count), 0, MAX_BADBLOCKS);
		for (i = 0; i < cnt; i++) {
			e = READ_ONCE(bb->page[i]);
			r[i].sector = BB_OFFSET(e) << shift;
			r[i].count = BB_LEN(e) << shift;
		}
	} while (read_seqretry(&bb->lock, seq));
	*n = cnt;
	return r;
}

/* -EPERM with the range named when [start, start + len) of the target holds a known bad range */
static int pl_bad_check(struct pl_dev *d, const struct pl_target *t, u64 start, u64 len)
{
	struct pl_bad_range *r;
	unsigned int n;
	u64 off, bytes;
	int hit;

	if (t->kind != PL_TARGET_FSDAX)
		return 0;
	r = pl_bad_snapshot(t, &n);
	if (!r)
		return pl_fail(d, -ENOMEM, "run: out of memory reading the bad-block list");
	hit = pl_bad_first(r, n, t->origin, start, len, &off, &bytes);
	kfree(r);
	if (hit)
		return pl_fail(d, -EPERM,
			       "run: the window holds a known bad range of %s: target bytes %llu+%llu (sectors in /sys/block/%s/badblocks); loads there machine-check",
			       pl_bdev(t->bdev)->bd_disk->disk_name, off, bytes,
			       pl_bdev(t->bdev)->bd_disk->disk_name);
	return 0;
}

/* ---- signatures and partitions ---- */
struct pl_sig_ctx {
	const char *kaddr;
	const struct pl_bad_range *bad;
	unsigned int nbad;
	u64 origin;
};

/* machine-check safe, and never into a known bad range */
static int pl_sig_read(void *arg, u64 off, void *buf, unsigned int len)
{
	const struct pl_sig_ctx *c = arg;
	u64 o, b;

	if (pl_bad_first(c->bad, c->nbad, c->origin, off, len, &o, &b))
		return -EIO;
	return copy_mc_to_kernel(buf, c->kaddr + off, len) ? -EIO : 0;
}

void pl_safety_probe(struct pl_target *t)
{
	struct pl_sig_ctx c = { .kaddr = t->kaddr, .origin = t->origin };
	struct pl_bad_range *r;

	t->fs_sig = "none";
	t->nparts = 0;
	if (t->kind != PL_TARGET_FSDAX)
		return;
	t->nparts = pl_disk_partitions(pl_bdev(t->bdev));
	r = pl_bad_snapshot(t, &c.nbad);
	if (!r) {
		t->fs_sig = "unreadable";
		return;
	}
	c.bad = r;
	t->fs_sig = pl_sig_probe(pl_sig_read, &c, t->size);
	kfree(r);
}

/* ---- the run check ---- */
int pl_safety_run(struct pl_dev *d, const struct pl_target *t, u64 start, u64 len)
{
	return pl_bad_check(d, t, start, len);
}
