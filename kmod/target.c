// SPDX-License-Identifier: GPL-2.0
/*
 * target.c - the memory pmemlab measures: a whole fsdax namespace mapped
 * through the kernel's DAX API, or a DRAM buffer on a chosen node.
 */
#define pr_fmt(fmt) "pmemlab: " fmt

#include <linux/kernel.h>
#include <linux/blkdev.h>
#include <linux/dax.h>
#include <linux/vmalloc.h>
#include <linux/slab.h>
#include <linux/moduleparam.h>
#include <linux/kthread.h>
#include <linux/sched/signal.h>
#include <linux/completion.h>
#include <linux/uaccess.h>
#include <linux/string.h>
#include <linux/mm.h>
#include <asm/pgtable_types.h>
#include <asm/pgtable.h>
#include <asm/io.h>
#include "pmemlab.h"

/* why a target is refused: kept in t->why (for targets/add's last_error) and logged */
static __printf(2, 3) void pl_terr(struct pl_target *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vscnprintf(t->why, sizeof(t->why), fmt, ap);
	va_end(ap);
	pl_printable(t->why);
	pr_err("%s%s\n", t->who, t->why);
}

#if PL_HAVE_HOLDER_OPS
/* 6.5+: the disk is going away (e.g. ndctl disable-namespace): stop using it */
static void pl_mark_dead(struct block_device *bdev, bool surprise)
	__releases(&bdev->bd_holder_lock)
{
	struct pl_target *t = bdev->bd_holder;

	WRITE_ONCE(t->dead, 1);
	pl_holder_unlock(bdev);
	pr_warn("%starget %pg is going away; runs stop\n", t->who, bdev);
}

static const struct blk_holder_ops pl_hops = {
	.mark_dead = pl_mark_dead,
};
#define PL_HOPS (&pl_hops)
#else
#define PL_HOPS NULL
#endif

/* smallest page size used by the kernel mapping of [addr, addr + size) */
static u64 pl_page_size(char *addr, u64 size)
{
	unsigned long a = (unsigned long)addr, end = a + size;
	u64 min = 0, ps;
	unsigned int level;

	while (a < end) {
		if (!lookup_address(a, &level))
			return 0;
		ps = level == PG_LEVEL_1G ? PUD_SIZE :
		     level == PG_LEVEL_2M ? PMD_SIZE : PAGE_SIZE;
		if (!min || ps < min)
			min = ps;
		if (min == PAGE_SIZE)
			break;
		a = (a & ~(unsigned long)(ps - 1)) + ps;
		cond_resched();
	}
	return min;
}

/*
 * Map the whole namespace.  Without bad blocks one call maps it all.  The
 * pmem driver refuses a range that holds a known bad block (-EHWPOISON;
 * -EIO before 5.19) and, while the disk has any, maps only the pages asked
 * for: then the good stretches are mapped piece by piece, each checked to
 * lie where the first one puts it, so that the load succeeds and runs are
 * kept off the bad ranges instead (pl_safety_run).  Returns the pages mapped
 * from the start, or a negative errno when none could be.
 */
static long pl_dax_map_all(struct dax_device *dax, pgoff_t first, long pages, char **kaddr)
{
	long done = 0, chunk = pages, got;
	char *base = NULL;
	void *ka;
	int id;

	id = dax_read_lock();
	while (done < pages) {
		chunk = min(chunk, pages - done);
		got = pl_dax_map(dax, first + done, chunk, &ka);
		if (got > 0) {
			if (!base)
				base = (char *)ka - ((u64)done << PAGE_SHIFT);
			else if ((char *)ka != base + ((u64)done << PAGE_SHIFT))
				break;		/* not one linear mapping: keep what is */
			done += min(got, chunk);
			chunk = pages;
		} else if ((got == -EHWPOISON || got == -EIO) && chunk > 1) {
			chunk /= 2;		/* narrow down to the bad page */
		} else if (got == -EHWPOISON || got == -EIO) {
			done++;			/* step over one bad page */
			chunk = pages;
		} else {
			if (!base)
				done = got;
			break;
		}
		if (need_resched()) {
			dax_read_unlock(id);
			cond_resched();
			id = dax_read_lock();
		}
	}
	dax_read_unlock(id);
	if (!base && done >= 0)
		return -EHWPOISON;	/* every page is bad */
	*kaddr = base;
	return done;
}

static int pl_fsdax_open(struct pl_target *t, const char *path)
{
	struct block_device *bdev;
	u64 start = 0, bytes;
	long pages, got;
	char *kaddr;
	int err;

	t->bdev = pl_bdev_open(path, t, PL_HOPS);
	if (IS_ERR(t->bdev)) {
		err = PTR_ERR(t->bdev);
		t->bdev = NULL;
		if (err == -EBUSY)
			pl_terr(t, "%s is held (mounted, or claimed by dm/md or another exclusive opener)",
			       path);
		else
			pl_terr(t, "cannot open %s exclusively: error %d", path, err);
		return err;
	}
	bdev = pl_bdev(t->bdev);
	if (!blk_queue_dax(bdev_get_queue(bdev))) {
		pl_terr(t, "%s is not DAX-capable (need an fsdax namespace)", path);
		err = -EOPNOTSUPP;
		goto err_close;
	}
	t->dax = pl_dax_get(bdev, &start, t);
	if (!t->dax) {
		pl_terr(t, "%s: no DAX device (not fsdax, misaligned, or claimed by a DAX file system)",
		       path);
		err = -EOPNOTSUPP;
		goto err_close;
	}
	bytes = pl_bdev_nr_bytes(bdev);
	pages = PHYS_PFN(bytes);
	if (!pages) {
		pl_terr(t, "%s is empty", path);
		err = -ENOSPC;
		goto err_put;
	}
	got = pl_dax_map_all(t->dax, PHYS_PFN(start), pages, &kaddr);
	if (got < 0) {
		pl_terr(t, "%s: dax_direct_access failed: %ld", path, got);
		err = got;
		goto err_put;
	}
	if (got < pages)
		pr_warn("%s: only %ld of %ld pages are contiguous; using those\n",
			path, got, pages);
	t->kind = PL_TARGET_FSDAX;
	t->kaddr = kaddr;
	t->size = (u64)got << PAGE_SHIFT;
	t->node = dev_to_node(disk_to_dev(bdev->bd_disk));
	t->phys = slow_virt_to_phys(kaddr);
	t->origin = start;
	t->page_size = pl_page_size(t->kaddr, t->size);
	pl_safety_probe(t);
	return 0;

err_put:
	pl_dax_put(t->dax, t);
	t->dax = NULL;
err_close:
	pl_bdev_close(t->bdev, t);
	t->bdev = NULL;
	return err;
}

/*
 * filling and node checks go in chunks of this, with a cond_resched() between: 2 MiB, so that
 * even memory filled at a few MB/s (a CXL node of the emulated bed, whose window QEMU emulates as
 * MMIO) yields well inside the soft-lockup threshold; 64 MiB chunks held a CPU for 22 s there
 */
#define PL_DRAM_CHUNK	(2UL << 20)

struct pl_dram_alloc {
	u64 size;
	void *p;
	struct completion done;
};

/*
 * The allocations of a DRAM target fail rather than call the OOM killer on
 * other processes (__GFP_RETRY_MAYFAIL; pl_dram_open first refuses a size
 * above the memory available), and say nothing of it (the module does).
 */
#define PL_DRAM_GFP	(GFP_KERNEL | __GFP_NOWARN | __GFP_RETRY_MAYFAIL)

/*
 * Runs on a CPU of the wanted node: huge vmalloc follows the local policy.
 * A kill of the loading process is passed on as SIGKILL, at which vmalloc
 * stops allocating.
 */
static int pl_dram_alloc_fn(void *arg)
{
	struct pl_dram_alloc *a = arg;

	allow_signal(SIGKILL);
	a->p = vmalloc_huge(a->size, PL_DRAM_GFP);
	complete(&a->done);
	/* wait for kthread_stop(), so that no module code runs after rmmod */
	while (!kthread_should_stop()) {
		set_current_state(TASK_IDLE);
		if (!kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
	}
	return 0;
}

static void *pl_dram_alloc_on_cpu(struct pl_target *t, u64 size, int node)
{
	struct pl_dram_alloc a = { .size = size };
	struct task_struct *k;
	unsigned int cpu;

	cpu = cpumask_any_and(cpumask_of_node(node), cpu_online_mask);
	if (cpu >= nr_cpu_ids) {
		pl_terr(t, "dram_pages=2m above %d bytes needs an online CPU on node %d (node %d has none: use dram_pages=4k or a smaller dram_size)",
		       INT_MAX, node, node);
		return NULL;
	}
	init_completion(&a.done);
	k = kthread_create_on_node(pl_dram_alloc_fn, &a, node, "pmemlab-alloc");
	if (IS_ERR(k))
		return NULL;
	kthread_bind(k, cpu);
	wake_up_process(k);
	if (wait_for_completion_killable(&a.done)) {
		send_sig(SIGKILL, k, 1);
		wait_for_completion(&a.done);
		vfree(a.p);
		a.p = NULL;
	}
	kthread_stop(k);
	return a.p;
}

/*
 * 2 MiB pages on the node itself, whether it has CPUs or not (a CPU-less
 * node is how CXL memory expanders appear).  kvmalloc_node() maps a
 * vmalloc area with huge pages where it can (VM_ALLOW_HUGE_VMAP; before
 * 5.18 small pages, reported as such) and __GFP_THISNODE keeps every page
 * on the node.  Asking for more than KMALLOC_MAX_SIZE keeps kvmalloc from
 * handing out a kmalloc block (direct-map pages) for a small target; the
 * target is the first size bytes.  Above INT_MAX bytes kvmalloc refuses:
 * then vmalloc_huge() runs on a CPU of the node, which needs one.
 */
static void *pl_dram_alloc_huge(struct pl_target *t, u64 size, int node)
{
	u64 len = max_t(u64, size, KMALLOC_MAX_SIZE + PAGE_SIZE);

	if (len <= INT_MAX)
		return kvmalloc_node(len, PL_DRAM_GFP | __GFP_THISNODE, node);
	return pl_dram_alloc_on_cpu(t, size, node);
}

/*
 * The leaf of the kernel page tables that maps addr: its entry, the page it
 * maps, and its size (4 KiB or 2 MiB: what vmalloc maps with).  NULL for
 * anything else, which no DRAM target has.
 */
static pte_t *pl_leaf(unsigned long addr, struct page **pg, u64 *bytes)
{
	unsigned int level;
	pte_t *pte = lookup_address(addr, &level);

	if (!pte || !pte_present(*pte) || (level != PG_LEVEL_4K && level != PG_LEVEL_2M))
		return NULL;
	*bytes = level == PG_LEVEL_2M ? PMD_SIZE : PAGE_SIZE;
	*pg = vmalloc_to_page((void *)(addr & ~(*bytes - 1)));
	return *pg ? pte : NULL;
}

/* an open in progress gives up: its writer was killed, or rmmod came (t->stop) */
static bool pl_open_stopped(struct pl_target *t)
{
	return fatal_signal_pending(current) || READ_ONCE(t->stop);
}

/*
 * Where the pages of the target are, taken from the pages themselves (every
 * leaf of the mapping, in order), into t->dram.found.  The first page's
 * node in *first.  -EINTR when the open gives up.
 */
static int pl_dram_tally(struct pl_target *t, int *first)
{
	struct pl_dram_place *d = &t->dram;
	unsigned long a = (unsigned long)t->kaddr, end = a + t->size, next;
	struct page *pg;
	u64 bytes;

	pl_tally_init(&d->found, &d->tier, d->unit);
	*first = NUMA_NO_NODE;
	while (a < end) {
		if (!pl_leaf(a, &pg, &bytes)) {
			pl_tally_add(&d->found, PAGE_SIZE, -1);
			a += PAGE_SIZE;
			continue;
		}
		next = min((a & ~(unsigned long)(bytes - 1)) + (unsigned long)bytes, end);
		if (*first == NUMA_NO_NODE)
			*first = page_to_nid(pg);
		pl_tally_add(&d->found, next - a, page_to_nid(pg));
		a = next;
		cond_resched();
		if (pl_open_stopped(t))
			return -EINTR;
	}
	return 0;
}

/*
 * One unit of a target over several nodes (a 4 KiB page, or a 2 MiB one split into 4 KiB pages
 * for vmap(), as vmalloc splits its own): from its node (__GFP_THISNODE), else, once that node
 * could not give one, from wherever the allocator has it, for the check after to count.  A
 * node that failed once is not asked again, so a full node costs one reclaim, not one per page.
 */
static struct page *pl_dram_unit(int node, unsigned int order, bool *full)
{
	struct page *pg = NULL;

	if (!*full) {
		pg = alloc_pages_node(node, PL_DRAM_GFP | __GFP_THISNODE, order);
		*full = !pg;
	}
	if (!pg)
		pg = alloc_pages_node(node, PL_DRAM_GFP, order);
	if (pg && order)
		split_page(pg, order);
	return pg;
}

/*
 * Weighted round robin, with the kernel's exported calls only: every unit of the target is
 * allocated on its node first, in order from byte 0, and then the whole array is mapped at once
 * by vmap().  VM_MAP_PUT_PAGES hands the pages and the array to the area: vfree() (kvfree() in
 * pl_target_close) unmaps it and frees both, and /proc/vmallocinfo lists the area's pages per
 * node.  Nothing else maps these pages, so no other CPU's TLB has to be told.  The loop yields
 * every unit and stops at a kill of the loading process.  vmap() maps 4 KiB pages only: a
 * target of 2 MiB units is 2 MiB pages of each node mapped at 4 KiB, and target_page_size says
 * so (docs/method.md).
 */
static int pl_dram_place(struct pl_target *t, u64 size)
{
	struct pl_dram_place *d = &t->dram;
	unsigned long n = size >> PAGE_SHIFT, per = d->unit >> PAGE_SHIFT, i = 0, j, m, cnt, got;
	unsigned int order = get_order(d->unit), k;
	bool full[PL_TIER_MAX] = { };
	struct page **pages, *pg;
	int err;

	if (n > UINT_MAX) {
		pl_terr(t, "dram_size %llu over several nodes: at most %llu bytes (what one vmap() maps)",
			size, (u64)UINT_MAX << PAGE_SHIFT);
		return -EINVAL;
	}
	pages = kvmalloc_array(n, sizeof(*pages), GFP_KERNEL | __GFP_NOWARN);
	if (!pages) {
		pl_terr(t, "dram target: no memory for the list of its %lu pages", n);
		return -ENOMEM;
	}
	/* i counts the pages allocated: pages[0 .. i) are the module's until vmap() takes them */
	for (i = 0; i < n; i += cnt) {
		if (pl_open_stopped(t)) {
			pl_terr(t, "dram target: interrupted while allocating its pages");
			err = -EINTR;
			goto fail;
		}
		k = pl_tier_index(&d->tier, i / per);
		cnt = min(per, n - i);
		/* a last unit shorter than 2 MiB is 4 KiB pages of its node */
		got = cnt == per ? per : 1;
		for (j = 0; j < cnt; j += got) {
			pg = pl_dram_unit(d->tier.node[k], got > 1 ? order : 0, &full[k]);
			if (!pg) {
				i += j;
				pl_terr(t, "cannot allocate %llu bytes of DRAM: no free page left after %lu bytes",
					size, i << PAGE_SHIFT);
				err = -ENOMEM;
				goto fail;
			}
			for (m = 0; m < got; m++)
				pages[i + j + m] = pg + m;
		}
		cond_resched();
	}
	t->kaddr = vmap(pages, n, VM_MAP | VM_MAP_PUT_PAGES, PAGE_KERNEL);
	if (t->kaddr)
		return 0;
	pl_terr(t, "dram target: cannot map its %lu pages (vmap)", n);
	err = -ENOMEM;
fail:
	/* vmap() took nothing when it failed: the pages and the array are still ours */
	while (i--) {
		__free_page(pages[i]);
		if (!(i % 512))
			cond_resched();
	}
	kvfree(pages);
	return err;
}

/*
 * non-zero contents, so loads never meet a special zero pattern; yields
 * between chunks, and gives up (-EINTR) when the open does
 */
static int pl_dram_fill(struct pl_target *t, char *p, u64 size)
{
	u64 off, n;

	for (off = 0; off < size; off += n) {
		n = min_t(u64, size - off, PL_DRAM_CHUNK);
		memset(p + off, 0xa5, n);
		cond_resched();
		if (pl_open_stopped(t))
			return -EINTR;
	}
	return 0;
}

/* every node of the target online and with memory; -1 (one node, unset): this CPU's */
static int pl_dram_nodes(struct pl_target *t, struct pl_tier *tier)
{
	unsigned int i;
	int node;

	for (i = 0; i < tier->n; i++) {
		node = tier->node[i];
		if (node == -1 && !tier->listed)
			node = tier->node[i] = numa_node_id();
		if (node < 0 || node >= MAX_NUMNODES || !node_online(node)) {
			pl_terr(t, "%s %d is not an online node", tier->listed ? "dram_nodes: node" : "dram_node", node);
			return -EINVAL;
		}
		if (tier->weight[i] && !node_state(node, N_MEMORY)) {
			pl_terr(t, "%s %d has no memory", tier->listed ? "dram_nodes: node" : "dram_node", node);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * The DRAM target: one node's pages as the allocator gives them (checked
 * to be there), or several nodes' in weighted round robin, allocated on
 * their nodes and mapped by the module (pl_dram_place) and checked the
 * same way, from the pages the mapping holds.
 */
static int pl_dram_open(struct pl_target *t, u64 size, const struct pl_tier *tier, bool huge,
			bool strict)
{
	struct pl_dram_place *d = &t->dram;
	char why[PL_WHY_LEN];
	int node, first, err;
	bool one;

	d->tier = *tier;
	err = pl_dram_nodes(t, &d->tier);
	if (err)
		return err;
	if (size < PAGE_SIZE || size > (1ULL << 46) || size % PAGE_SIZE) {
		pl_terr(t, "dram_size %llu: need a multiple of 4096 between 4K and 64T", size);
		return -EINVAL;
	}
	/* vmalloc_node() takes no flags: above what is available it would call the OOM killer */
	if (size > ((u64)si_mem_available() << PAGE_SHIFT)) {
		pl_terr(t, "dram_size %llu exceeds the %llu bytes of memory available (MemAvailable): refused rather than taken from other processes",
		       size, (u64)si_mem_available() << PAGE_SHIFT);
		return -ENOMEM;
	}
	one = pl_tier_used(&d->tier) == 1;
	node = d->tier.node[pl_tier_first(&d->tier)];
	d->how = one ? "node" : "module";
	if (!one) {
		/* 2 MiB units on every kernel: the pages are the module's, not huge vmalloc's */
		d->unit = huge ? PMD_SIZE : PAGE_SIZE;
		err = pl_dram_place(t, size);
		if (err)
			return err;
	} else {
		/* before 5.18 a vmalloc area has 4 KiB leaves whatever was asked (compat.h) */
		d->unit = huge && PL_HUGE_VMALLOC ? PMD_SIZE : PAGE_SIZE;
		t->kaddr = huge ? pl_dram_alloc_huge(t, size, node) : vmalloc_node(size, node);
	}
	if (!t->kaddr && pl_open_stopped(t))
		goto stopped;	/* vmalloc gives up on a fatal signal */
	if (!t->kaddr) {
		pl_terr(t, "cannot allocate %llu bytes of DRAM on node %d", size, node);
		return -ENOMEM;
	}
	t->allocated = true;
	t->kind = PL_TARGET_DRAM;
	t->size = size;
	if (pl_dram_tally(t, &first))
		goto stopped;
	t->node = d->tier.node[pl_tier_first(&d->tier)];
	if (pl_tally_judge(&d->found, why, sizeof(why))) {
		if (strict) {
			pl_terr(t, "dram target: %s (load with dram_node_strict=0 to accept that)", why);
			pl_target_close(t);
			return -ENOMEM;
		}
		pr_warn("%sdram target: %s (the first page on node %d)\n", t->who, why, first);
		if (one)
			t->node = first;
	}
	if (pl_dram_fill(t, t->kaddr, size))
		goto stopped;
	t->phys = slow_virt_to_phys(t->kaddr);
	t->page_size = pl_page_size(t->kaddr, t->size);
	if (huge && t->page_size < PMD_SIZE)
		pr_notice("%sdram_pages=2m: %s: the target has %llu-byte pages\n", t->who,
			  !one ? "over several nodes, 2 MiB pages of each node mapped with 4 KiB entries (vmap)" :
			  PL_HUGE_VMALLOC ? "no 2 MiB mapping could be had" :
			  "this kernel has no huge vmalloc (5.18+)", t->page_size);
	pl_safety_probe(t);
	return 0;

stopped:
	pl_terr(t, "dram target: the open was interrupted (its writer killed, or rmmod)");
	pl_target_close(t);
	return -EINTR;
}

int pl_target_open(struct pl_target *t, const struct pl_load *l)
{
	const char *spec = l->spec;

	if (!spec || !*spec) {
		pl_terr(t, "no target: load with target=/dev/pmemN or target=dram");
		return -EINVAL;
	}
	if (!strcmp(spec, "dram"))
		return pl_dram_open(t, l->dram_size, &l->tier, l->huge, l->strict);
	if (strncmp(spec, "/dev/", 5)) {
		pl_terr(t, "target '%s': want /dev/pmemN or dram", spec);
		return -EINVAL;
	}
	if (l->tier.listed) {
		pl_terr(t, "dram_nodes: only for target=dram, not %s", spec);
		return -EINVAL;
	}
	return pl_fsdax_open(t, spec);
}

void pl_target_close(struct pl_target *t)
{
	if (t->dax) {
		pl_dax_put(t->dax, t);
		t->dax = NULL;
	}
	if (t->bdev) {
		pl_bdev_close(t->bdev, t);
		t->bdev = NULL;
	}
	if (t->allocated) {
		/*
		 * unmaps the area and frees its pages: vmalloc's, or (several
		 * nodes) the module's, which vmap() took with VM_MAP_PUT_PAGES
		 */
		kvfree(t->kaddr);
		t->allocated = false;
	}
	t->kaddr = NULL;
}

/* enter a measurement segment: the mapping stays valid until leave */
int pl_target_enter(struct pl_target *t)
{
	int id;

	if (READ_ONCE(t->dead))
		return -ENXIO;
	if (t->kind != PL_TARGET_FSDAX)
		return 0;
	id = dax_read_lock();
	if (!dax_alive(t->dax)) {
		dax_read_unlock(id);
		WRITE_ONCE(t->dead, 1);
		return -ENXIO;
	}
	return id;
}

void pl_target_leave(struct pl_target *t, int id)
{
	if (t->kind == PL_TARGET_FSDAX)
		dax_read_unlock(id);
}
