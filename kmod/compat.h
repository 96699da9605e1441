/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compat.h - every kernel-version difference pmemlab meets, in one place.
 * Each shim names the release (and, where known, the mainline commit) it
 * follows.  Built W=1 and run in the test bed on Debian's 5.10, 6.1,
 * 6.1-rt, 6.12 and 7.2 (scripts/kernels.list); the branches for versions in
 * between follow the kernel's sources of those versions (docs/kernels.md).
 */
#ifndef PMEMLAB_COMPAT_H
#define PMEMLAB_COMPAT_H

#include <linux/version.h>
#include <linux/blkdev.h>
#include <linux/dax.h>
#include <linux/sysfs.h>
#include <asm/msr.h>

/* ---- opening the block device exclusively ---- */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)
/*
 * 6.9+: bdev_file_open_by_path() returns a struct file; close with
 * bdev_fput() ("bdev: open block device as files", v6.9)
 */
#define PL_HAVE_HOLDER_OPS 1
typedef struct file *pl_bdev_t;
#define pl_bdev_open(path, holder, hops) \
	bdev_file_open_by_path(path, BLK_OPEN_READ | BLK_OPEN_WRITE, holder, hops)
#define pl_bdev(b)			file_bdev(b)
#define pl_bdev_close(b, holder)	bdev_fput(b)
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 8, 0)
/*
 * 6.8 (and late 6.6.y): bdev_open_by_path() returns a bdev_handle
 * (e719b4d15674, "block: Provide bdev_open_* functions", v6.7)
 */
#define PL_HAVE_HOLDER_OPS 1
typedef struct bdev_handle *pl_bdev_t;
#define pl_bdev_open(path, holder, hops) \
	bdev_open_by_path(path, BLK_OPEN_READ | BLK_OPEN_WRITE, holder, hops)
#define pl_bdev(b)			((b)->bdev)
#define pl_bdev_close(b, holder)	bdev_release(b)
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
/*
 * 6.5 .. 6.7: blkdev_get_by_path() with blk_mode_t and holder ops
 * (0718afd47f70 "block: introduce holder ops", 05bdb9965305 "block: replace
 * fmode_t with a block-specific type for block open flags", v6.5)
 */
#define PL_HAVE_HOLDER_OPS 1
typedef struct block_device *pl_bdev_t;
#define pl_bdev_open(path, holder, hops) \
	blkdev_get_by_path(path, BLK_OPEN_READ | BLK_OPEN_WRITE, holder, hops)
#define pl_bdev(b)			(b)
#define pl_bdev_close(b, holder)	blkdev_put(b, holder)
#else
/* <= 6.4: fmode_t, FMODE_EXCL with a holder, no holder ops */
#define PL_HAVE_HOLDER_OPS 0
typedef struct block_device *pl_bdev_t;
#define PL_FMODE	(FMODE_READ | FMODE_WRITE | FMODE_EXCL)
#define pl_bdev_open(path, holder, hops)	blkdev_get_by_path(path, PL_FMODE, holder)
#define pl_bdev(b)			(b)
#define pl_bdev_close(b, holder)	blkdev_put(b, PL_FMODE)
#endif

/*
 * ->mark_dead() is called with bdev->bd_holder_lock held.  Up to 6.6 the
 * caller drops it afterwards; from 6.7 (fd1464105cb3, "fs: Avoid grabbing
 * sb->s_umount under bdev->bd_holder_lock") the callee must drop it: 7.2's
 * blkdev.h still declares it __releases(&bdev->bd_holder_lock).  Getting
 * this wrong leaves the lock held and hangs the next bdev_fput().  (A 6.6.y
 * backport of that change is not known; unverified.)
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
#define pl_holder_unlock(bdev)	mutex_unlock(&(bdev)->bd_holder_lock)
#else
#define pl_holder_unlock(bdev)	do { } while (0)
#endif

/* ---- DAX lookup and mapping ---- */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 0, 0)
/*
 * 6.0+: holder and holder ops; returns NULL if another holder claimed it
 * (8012b8660855, "dax: introduce holder for dax_device", v6.0)
 */
#define pl_dax_get(bd, off, h)	fs_dax_get_by_bdev(bd, off, h, NULL)
#define pl_dax_put(d, h)	fs_put_dax(d, h)
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(5, 17, 0)
/*
 * 5.17 .. 5.19: start offset, no holder (cd913c76f489, "dax: return the
 * partition offset from fs_dax_get_by_bdev", v5.17)
 */
#define pl_dax_get(bd, off, h)	fs_dax_get_by_bdev(bd, off)
#define pl_dax_put(d, h)	fs_put_dax(d)
#else
/* <= 5.16 (5.10 in the matrix): compute the partition offset ourselves */
#define pl_dax_get(bd, off, h) \
	(*(off) = (u64)get_start_sect(bd) << SECTOR_SHIFT, fs_dax_get_by_bdev(bd))
#define pl_dax_put(d, h)	fs_put_dax(d)
#endif

#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 19, 0)
/*
 * 5.19+: access mode argument (e511c4a3d2a1, "dax: introduce
 * DAX_RECOVERY_WRITE dax access mode", v5.19); pfn = NULL fits pfn_t * and
 * (6.17+, 7.2 in the matrix) unsigned long *
 */
#define pl_dax_map(d, pg, n, ka)	dax_direct_access(d, pg, n, DAX_ACCESS, ka, NULL)
#else
#define pl_dax_map(d, pg, n, ka)	dax_direct_access(d, pg, n, ka, NULL)
#endif

/* ---- bin_attribute read(): const attribute from 6.13 ---- */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 18, 0)
/*
 * 6.18+: only the const .read and the const .bin_attrs array (.read took
 * the const attribute in 97d06802d10a, "sysfs: constify bin_attribute
 * argument of bin_attribute::read/write()", and the transition fields went
 * in v6.18)
 */
#define PL_BIN_CONST	const
#define PL_BIN_READ	read
#define PL_BIN_ATTRS	bin_attrs
#define PL_BIN_ARRAY	const struct bin_attribute *const
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
/* 6.13 .. 6.17: the transition fields .read_new and .bin_attrs_new (v6.13) */
#define PL_BIN_CONST	const
#define PL_BIN_READ	read_new
#define PL_BIN_ATTRS	bin_attrs_new
#define PL_BIN_ARRAY	const struct bin_attribute *const
#else
/* <= 6.12: non-const */
#define PL_BIN_CONST
#define PL_BIN_READ	read
#define PL_BIN_ATTRS	bin_attrs
#define PL_BIN_ARRAY	struct bin_attribute *
#endif

/*
 * ---- MSR accessors renamed to the q names in 6.16 ----
 * (5e404cb7ac4c "x86/msr: Rename 'rdmsrl_safe_on_cpu()' to
 * 'rdmsrq_safe_on_cpu()'", 27a23a544a55 the same for wrmsrl_safe_on_cpu,
 * 6fe22abacd40 for rdmsrl_safe; 7.2 has no l names left)
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 16, 0)
/* <= 6.15: only the l names exist */
#define rdmsrq_safe_on_cpu	rdmsrl_safe_on_cpu
#define wrmsrq_safe_on_cpu	wrmsrl_safe_on_cpu
#define rdmsrq_safe		rdmsrl_safe
#endif

/* ---- the size of the block device ---- */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 16, 0)
/* 5.16+: bdev_nr_bytes() (6436bd90f76e, "block: add a bdev_nr_bytes helper") */
#define pl_bdev_nr_bytes(bdev)	bdev_nr_bytes(bdev)
#else
/* <= 5.15: the size of the bdev's inode, which bdev_nr_bytes() reads */
#define pl_bdev_nr_bytes(bdev)	i_size_read((bdev)->bd_inode)
#endif

/* ---- counting the partitions of a whole disk ---- */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 12, 0)
/*
 * 5.12+: the partitions are the entries of disk->part_tbl above index 0
 * (a33df75c6328, "block: use an xarray for disk->part_tbl", v5.12)
 */
static inline unsigned int pl_disk_partitions(struct block_device *bdev)
{
	struct block_device *part;
	unsigned long idx;
	unsigned int n = 0;

	if (bdev_is_partition(bdev))
		return 0;
	rcu_read_lock();
	xa_for_each_start(&bdev->bd_disk->part_tbl, idx, part, 1)
		n++;
	rcu_read_unlock();
	return n;
}
#else
/* <= 5.11: the partition iterator (5.10 in the matrix) */
static inline unsigned int pl_disk_partitions(struct block_device *bdev)
{
	struct disk_part_iter it;
	unsigned int n = 0;

	if (bdev != bdev->bd_contains)
		return 0;
	disk_part_iter_init(&it, bdev->bd_disk, 0);
	while (disk_part_iter_next(&it))
		n++;
	disk_part_iter_exit(&it);
	return n;
}
#endif

/* ---- huge-page vmalloc ---- */
#if LINUX_VERSION_CODE < KERNEL_VERSION(5, 18, 0)
/*
 * <= 5.17 (5.10 in the matrix): no huge vmalloc (VM_ALLOW_HUGE_VMAP and
 * vmalloc_huge(), v5.18): plain vmalloc and kvmalloc give 4 KiB pages,
 * reported as such, and dram_pages=2m says why at load
 */
#define vmalloc_huge(size, gfp)	__vmalloc(size, gfp)
#define PL_HUGE_VMALLOC		0
#else
#define PL_HUGE_VMALLOC		1
#endif

/*
 * ---- a DRAM target over several nodes ----
 * No shim: the module allocates each page on its node (alloc_pages_node
 * with __GFP_THISNODE; 2 MiB pages split with split_page(), as vmalloc
 * splits its own) and maps them with vmap(VM_MAP | VM_MAP_PUT_PAGES),
 * exported on every kernel of the matrix: the flag is from 5.10
 * (b944afc9d64d); vmap() sets the area's page count from 5.11 and 5.10.y
 * ("mm/vmalloc.c: fix potential memory leak", Cc stable), and vfree()
 * frees the pages and the array (a failed vmap() takes neither).  vfree()
 * stopped subtracting such pages from VmallocUsed in a2e740e216f5
 * ("vmalloc: fix accounting with i915", 6.13 and the stable trees): the
 * guest test reads VmallocUsed before and after on every kernel.  No kernel
 * TLB flush is needed (6.19 exports __flush_tlb_all to KVM's modules only),
 * so the same code runs on 5.10 and on 7.2.
 */

#endif /* PMEMLAB_COMPAT_H */
