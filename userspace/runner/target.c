// SPDX-License-Identifier: GPL-2.0
/*
 * target.c - the memory the user backend measures, mapped as a user can:
 * anonymous memory bound to a NUMA node (libnuma) with 4 KiB pages, THP or
 * hugetlbfs, a file on a DAX file system, or a devdax device (MAP_SYNC where
 * the kernel allows it), and the facts of the mapping the kernel gave
 * (page size from /proc/self/smaps, node from get_mempolicy).  The module's
 * counterpart is kmod/target.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/mman.h>

#include "pl_safe.h"
#include "runner.h"

#ifndef MAP_SYNC
#define MAP_SYNC		0x80000
#endif
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE	0x03
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB		(21 << 26)
#endif

const char *const plu_pages_names[3] = { "4k", "2m", "hugetlb" };

/* the signature probe's reader (core/sig.c) over a mapped target */
static int read_mapped(void *ctx, u64 off, void *dst, unsigned int n)
{
	memcpy(dst, (const char *)ctx + off, n);
	return 0;
}

static int sysfs_u64(const char *path, u64 *v)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return -1;
	ok = fscanf(f, "%lli", (long long *)v) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

/*
 * The page size the kernel actually gave the mapping at addr, whose first
 * `touched` bytes were faulted in (/proc/self/smaps): KernelPageSize for
 * hugetlbfs and devdax, else 2 MiB if every resident byte is in PMD mappings
 * (AnonHugePages for THP, FilePmdMapped/ShmemPmdMapped), else 4 KiB; 0 when
 * smaps does not show the touched pages (an fsdax file: DAX pages are not
 * counted in Rss, and each 2 MiB may be PTE- or PMD-mapped), so nothing is
 * claimed.  *huge_pct: the share of the resident bytes in pages > 4 KiB.
 */
static u64 mapping_page_size(const char *addr, u64 fallback, u64 touched, u64 *huge_pct)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[256];
	unsigned long lo, hi, want = (unsigned long)addr;
	u64 kps = 0, rss = 0, huge = 0, v;
	int in = 0;

	*huge_pct = 0;
	if (!f)
		return fallback;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			if (in)
				break;
			in = lo <= want && want < hi;
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, "KernelPageSize: %llu", &v) == 1)
			kps = v * 1024;
		else if (sscanf(line, "Rss: %llu", &v) == 1)
			rss = v;
		else if (sscanf(line, "AnonHugePages: %llu", &v) == 1 ||
			 sscanf(line, "FilePmdMapped: %llu", &v) == 1 ||
			 sscanf(line, "ShmemPmdMapped: %llu", &v) == 1)
			huge += v;
	}
	fclose(f);
	if (kps > 4096) {
		*huge_pct = 100;
		return kps;
	}
	if (rss * 1024 < touched / 2)
		return 0;
	if (rss)
		*huge_pct = huge >= rss ? 100 : huge * 100 / rss;
	if (rss && huge >= rss)
		return 2ULL << 20;
	if (rss)
		return 4096;
	return fallback;
}

static long mapping_node(const char *addr, u64 size)
{
	long node = -2;
	u64 off[3] = { 0, size / 2, size - 1 };
	int i, n;

	for (i = 0; i < 3; i++) {
		if (get_mempolicy(&n, NULL, 0, (void *)((unsigned long)(addr + off[i]) & ~4095UL),
				  MPOL_F_NODE | MPOL_F_ADDR))
			return -1;
		if (node != -2 && node != n)
			return -1;
		node = n;
	}
	return node;
}

/* write non-zero, varying data over every page (first touch is not timed) */
static void fill(char *p, u64 n)
{
	u64 *w = (u64 *)p, i;

	for (i = 0; i < n / 8; i++)
		w[i] = (i * 0x9e3779b97f4a7c15ULL) | 1;
}

static void touch_read(const char *p, u64 n)
{
	volatile const char *q = p;
	u64 i;
	char s = 0;

	for (i = 0; i < n; i += 4096)
		s += q[i];
	(void)s;
}

/* ---- DRAM over several nodes: the kernel's weighted interleave where it has one ---- */
#ifndef MPOL_WEIGHTED_INTERLEAVE
#define MPOL_WEIGHTED_INTERLEAVE	6	/* Linux 6.9 */
#endif
#define WI_DIR	"/sys/kernel/mm/mempolicy/weighted_interleave"

/*
 * The weights of MPOL_WEIGHTED_INTERLEAVE are the system's, one file per
 * node: those of the target's nodes are set while its pages are faulted
 * in, and put back at once after (and at exit, however the runner ends:
 * SIGINT, SIGTERM and SIGHUP wait until they are back).
 */
static struct {
	int n, node[PL_TIER_MAX];
	char old[PL_TIER_MAX][8];
	char old_auto[8];		/* 6.16+: "true" when the weights were the kernel's own */
	bool blocked;			/* the signals above, until wi_restore */
	sigset_t mask;			/* as it was before */
} wi_saved;

static int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int err = 0;

	if (!f)
		return errno;
	if (fputs(text, f) < 0)
		err = errno ? errno : EIO;
	if (fclose(f) && !err)
		err = errno ? errno : EIO;
	return err;
}

static int read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int ok;

	buf[0] = '\0';
	if (!f)
		return errno;
	ok = fgets(buf, len, f) != NULL;
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return ok ? 0 : EIO;
}

static void wi_restore(void)
{
	char path[128];
	int i;

	for (i = 0; i < wi_saved.n; i++) {
		snprintf(path, sizeof(path), WI_DIR "/node%d", wi_saved.node[i]);
		write_text(path, wi_saved.old[i]);
	}
	if (!strcmp(wi_saved.old_auto, "true"))
		write_text(WI_DIR "/auto", "true");
	wi_saved.n = 0;
	wi_saved.old_auto[0] = '\0';
	if (wi_saved.blocked) {
		wi_saved.blocked = false;
		sigprocmask(SIG_SETMASK, &wi_saved.mask, NULL);
	}
}

/*
 * The tier's weights in the kernel's table, for the time the pages are
 * faulted in (wi_restore puts them back): 0, or why not (the note says it,
 * and nothing stays changed).
 */
static int wi_set(struct plu_target *t)
{
	const struct pl_tier *tier = &t->tier;
	char path[128], cur[8], want[8];
	unsigned int i;
	int err;

	if (read_text(WI_DIR "/auto", wi_saved.old_auto, sizeof(wi_saved.old_auto)))
		wi_saved.old_auto[0] = '\0';
	if (!wi_saved.blocked) {
		sigset_t stop;

		sigemptyset(&stop);
		sigaddset(&stop, SIGINT);
		sigaddset(&stop, SIGTERM);
		sigaddset(&stop, SIGHUP);
		wi_saved.blocked = !sigprocmask(SIG_BLOCK, &stop, &wi_saved.mask);
	}
	for (i = 0; i < tier->n; i++) {
		if (!tier->weight[i])
			continue;
		snprintf(path, sizeof(path), WI_DIR "/node%d", tier->node[i]);
		snprintf(want, sizeof(want), "%u", tier->weight[i]);
		err = read_text(path, cur, sizeof(cur));
		if (!err && !strcmp(cur, want) && strcmp(wi_saved.old_auto, "true"))
			continue;
		if (!err) {
			/* saved before the write, so that a failed write is put back too */
			wi_saved.node[wi_saved.n] = tier->node[i];
			snprintf(wi_saved.old[wi_saved.n++], sizeof(wi_saved.old[0]), "%s", cur);
			err = write_text(path, want);
		}
		if (err) {
			wi_restore();
			snprintf(t->placement_note, sizeof(t->placement_note),
				 "cannot set %s to %s: %s (MPOL_WEIGHTED_INTERLEAVE weights are the system's; root sets them)",
				 path, want, strerror(err));
			return err;
		}
	}
	return 0;
}

/* the tier's nodes with a weight as a nodemask */
static struct bitmask *tier_mask(const struct pl_tier *tier)
{
	struct bitmask *bm = numa_allocate_nodemask();
	unsigned int i;

	for (i = 0; i < tier->n; i++)
		if (tier->weight[i])
			numa_bitmask_setbit(bm, tier->node[i]);
	return bm;
}

void plu_open_dram(struct plu_target *t, u64 len, unsigned int pages, const struct pl_tier *tier,
		   bool strict)
{
	u64 align = 2ULL << 20;
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
	long node = tier->node[pl_tier_first(tier)];
	bool one = pl_tier_used(tier) == 1;
	unsigned int i;
	char *p;

	snprintf(t->kind, sizeof(t->kind), "dram");
	t->pages = pages == 2 ? "hugetlbfs" : pages == 1 ? "thp" : "4k";
	t->tier = *tier;
	t->strict = strict;
	t->unit = pages ? align : 4096;
	for (i = 0; i < tier->n; i++) {
		if (tier->node[i] < 0)
			continue;
		if (numa_available() < 0 || tier->node[i] > numa_max_node() ||
		    !numa_bitmask_isbitset(numa_all_nodes_ptr, tier->node[i]))
			refuse(EINVAL, "%s %d: no such NUMA node with memory",
			       tier->listed ? "dram_nodes: node" : "dram_node", tier->node[i]);
	}
	if (pages == 2 && len % align)
		refuse(EINVAL, "dram_pages=hugetlb: dram_size must be a multiple of 2M");
	t->placed = node >= 0;
	t->placement = !t->placed ? "any" : one ? "node" : "weighted-interleave";
	/* on a 2 MiB boundary, between guard pages */
	p = plu_reserve(len, align);
	if (!p)
		refuse(ENOMEM, "cannot map %llu bytes", len);
	if (pages == 2) {	/* hugetlbfs */
		if (mmap(p, len, PROT_READ | PROT_WRITE, flags | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0) ==
		    MAP_FAILED)
			refuse(ENOMEM, "dram_pages=hugetlb: no %llu bytes of 2 MiB huge pages (vm.nr_hugepages)", len);
	} else {
		if (mmap(p, len, PROT_READ | PROT_WRITE, flags, -1, 0) == MAP_FAILED)
			refuse(ENOMEM, "cannot map %llu bytes", len);
		/*
		 * EINVAL: a kernel built without THP (Debian's PREEMPT_RT ones):
		 * 4 KiB pages, reported as such, as the module's dram_pages=2m does
		 */
		if (madvise(p, len, pages == 1 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE)) {
			if (errno != EINVAL)
				refuse(EOPNOTSUPP, "madvise(%s): %s", plu_pages_names[pages],
				       strerror(errno));
			t->pages = "4k";
			t->unit = 4096;
		}
	}
	if (t->placed && one) {
		struct bitmask *bm = numa_allocate_nodemask();

		numa_bitmask_setbit(bm, node);
		if (mbind(p, len, MPOL_BIND, bm->maskp, bm->size + 1, MPOL_MF_STRICT))
			refuse(EINVAL, "mbind to node %ld: %s", node, strerror(errno));
		numa_free_nodemask(bm);
	} else if (t->placed) {
		/* the policy now; the weights are set while plu_prefault faults the pages in */
		struct bitmask *bm = tier_mask(tier);

		if (access(WI_DIR, F_OK)) {
			snprintf(t->placement_note, sizeof(t->placement_note),
				 "this kernel has no MPOL_WEIGHTED_INTERLEAVE (Linux 6.9+)");
			t->placement = "first-touch";
		} else if (mbind(p, len, MPOL_WEIGHTED_INTERLEAVE, bm->maskp, bm->size + 1, 0)) {
			snprintf(t->placement_note, sizeof(t->placement_note),
				 "mbind(MPOL_WEIGHTED_INTERLEAVE): %s", strerror(errno));
			t->placement = "first-touch";
		}
		numa_free_nodemask(bm);
	}
	t->addr = p;
	t->size = t->run_size = len;
	t->map_len = len;
	t->fs_sig = "none";
	t->node = t->placed && !one ? node : -1;
	t->fd = -1;
	t->dax = 0;
	t->fallback_page = 4096;
}

/*
 * Where the first n bytes went, 4 KiB at a time (move_pages without a
 * target node only says where each page is), into t->found; refused when
 * that is not the tier's placement, unless not strict.
 */
static void check_placement(struct plu_target *t, u64 n)
{
	enum { BATCH = 4096 };
	void *addr[BATCH];
	int status[BATCH];
	char why[PL_WHY_LEN + 192];
	u64 off, k, cnt;

	pl_tally_init(&t->found, &t->tier, t->unit);
	for (off = 0; off < n; off += cnt * 4096) {
		cnt = (n - off) / 4096 < BATCH ? (n - off) / 4096 : BATCH;
		for (k = 0; k < cnt; k++)
			addr[k] = t->addr + off + k * 4096;
		if (move_pages(0, cnt, addr, NULL, status, 0))
			refuse(EIO, "move_pages (where the target's pages are): %s", strerror(errno));
		for (k = 0; k < cnt; k++)
			pl_tally_add(&t->found, 4096, status[k] >= 0 ? status[k] : -1);
	}
	if (!pl_tally_judge(&t->found, why, PL_WHY_LEN))
		return;
	if (t->page_size && t->page_size < t->unit)	/* the kernel's interleave goes page by page */
		snprintf(why + strlen(why), sizeof(why) - strlen(why),
			 "; the kernel mapped %llu-byte pages where %llu-byte ones were placed (THP off, or "
			 "no free huge page; dram_pages=4k places 4 KiB pages)", t->page_size, t->unit);
	if (t->strict)
		refuse(ENOMEM, "dram target (%s): %s (give dram_node_strict=0 to run anyway)",
		       t->placement, why);
	fprintf(stderr, "pmemlab-run: dram target (%s): %s\n", t->placement, why);
}

/*
 * First touch of each page under its node's policy: the units of node i
 * are faulted in (filled) while the thread prefers that node, then the
 * mapping is bound to the tier's nodes (mbind MPOL_BIND, nothing moved) so
 * that NUMA balancing leaves the pages where they are.  A node without room
 * lets the kernel put a page elsewhere: the check after counts it.
 */
static void first_touch(struct plu_target *t, u64 n)
{
	const struct pl_tier *tier = &t->tier;
	u64 units = (n + t->unit - 1) / t->unit, u, len;
	struct bitmask *bm;
	unsigned int i;

	for (i = 0; i < tier->n; i++) {
		if (!tier->weight[i])
			continue;
		bm = numa_allocate_nodemask();
		numa_bitmask_setbit(bm, tier->node[i]);
		if (set_mempolicy(MPOL_PREFERRED, bm->maskp, bm->size + 1))
			refuse(EINVAL, "set_mempolicy(MPOL_PREFERRED, node %d): %s", tier->node[i],
			       strerror(errno));
		numa_free_nodemask(bm);
		for (u = 0; u < units; u++) {
			if (pl_tier_index(tier, u) != i)
				continue;
			len = n - u * t->unit < t->unit ? n - u * t->unit : t->unit;
			fill(t->addr + u * t->unit, len);
		}
	}
	if (set_mempolicy(MPOL_DEFAULT, NULL, 0))
		refuse(EINVAL, "set_mempolicy(MPOL_DEFAULT): %s", strerror(errno));
	bm = tier_mask(tier);
	if (mbind(t->addr, t->size, MPOL_BIND, bm->maskp, bm->size + 1, 0))
		refuse(EINVAL, "mbind(MPOL_BIND) over the target's nodes: %s", strerror(errno));
	numa_free_nodemask(bm);
}

/* a file this run created: removed again unless the run goes ahead (plu_map) */
static char *plu_created;

static void plu_remove_created(void)
{
	if (plu_created)
		unlink(plu_created);
}

/*
 * Whether the file's pages are the medium's (DAX) or page cache: the
 * inode's DAX state (statx, Linux 5.8+), else whether MAP_SYNC, which only
 * DAX has, can be had; 0 or 1, -1 when neither can tell (an empty file on
 * an older kernel).
 */
static int file_dax(int fd, u64 len)
{
	struct statx stx;
	void *p;

	if (!statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) &&
	    (stx.stx_attributes_mask & STATX_ATTR_DAX))
		return !!(stx.stx_attributes & STATX_ATTR_DAX);
	if (len < 4096)
		return -1;
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
	if (p == MAP_FAILED)
		return 0;
	munmap(p, 4096);
	return 1;
}

/*
 * Map len bytes of fd between guard pages at an align-aligned address
 * (devdax needs its own alignment, a DAX file's 2 MiB pages want 2 MiB):
 * MAP_SYNC where the kernel allows it (*sync), else a plain shared mapping.
 */
static char *plu_map_guarded(int fd, u64 len, int prot, u64 align, int *sync)
{
	char *p = plu_reserve(len, align < PLU_GUARD ? PLU_GUARD : align);

	if (!p)
		return NULL;
	*sync = mmap(p, len, prot, MAP_SHARED_VALIDATE | MAP_SYNC | MAP_FIXED, fd, 0) != MAP_FAILED;
	if (!*sync && mmap(p, len, prot, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
		return NULL;
	return p;
}

/* a regular file: judged here, mapped by plu_map once the run is judged too */
static void open_file(struct plu_target *t, const char *path, int fd, u64 len,
		      const struct plu_path_opts *o)
{
	snprintf(t->kind, sizeof(t->kind), "file");
	t->pages = "file";
	t->dax = file_dax(fd, len);
	if (t->dax != 1 && !o->allow_file)
		refuse(EOPNOTSUPP, "target %s: %s: a run would measure the page cache, not the "
		       "medium (no MAP_SYNC); give allow_file=1 to measure it anyway",
		       path, t->dax ? "cannot tell whether it is on a DAX file system" :
		       "not on a DAX file system (mount it with -o dax)");
	t->run_size = len;
	if (o->size > len) {
		if (!o->may_write)
			refuse(ERANGE, "size %llu exceeds the file (%llu bytes): only write runs "
			       "extend it", o->size, len);
		t->run_size = o->size;
	} else if (o->size) {
		t->run_size = o->size;
	}
	t->run_size &= ~4095ULL;
	if (!t->run_size)
		refuse(EINVAL, "target %s is empty (give size= to create or extend it)", path);
	t->fd = fd;
	t->file_len = len;
	t->fs_sig = "none";
}

void plu_open_path(struct plu_target *t, const char *path, const struct plu_path_opts *o)
{
	bool rw = o->may_write && !o->probe;
	struct stat st;
	int fd, prot = PROT_READ | (rw ? PROT_WRITE : 0);
	u64 len = 0, align = 0;
	char sys[256];
	char *p;

	t->node = -1;
	t->fd = -1;
	t->dax = -1;
	t->placement = "";
	fd = open(path, rw ? O_RDWR : O_RDONLY);
	if (fd < 0 && errno == ENOENT && o->size && o->may_write) {
		/*
		 * size= creates it for a write run; a probe creates it too, to
		 * judge the file system as the run will, and removes it again
		 */
		fd = open(path, (rw ? O_RDWR : O_RDONLY) | O_CREAT | O_EXCL, 0644);
		if (fd >= 0) {
			plu_created = strdup(path);
			atexit(plu_remove_created);
		}
	}
	if (fd < 0) {
		int err = errno;

		/*
		 * a bare name (no /) is how the module names its named targets
		 * (cxl, pm): never advise making a file of that name
		 */
		refuse(err == ENOENT ? ENOENT : err == EACCES ? EACCES : EINVAL,
		       "target %s: %s%s", path, strerror(err),
		       err != ENOENT ? "" : !strchr(path, '/') ?
		       " (a bare name: named targets such as cxl are the module's; give dram, dram:NODE, "
		       "/dev/daxX.Y or a file's path)" :
		       o->may_write && !o->size ? " (give size= to create it)" : "");
	}
	if (fstat(fd, &st))
		refuse(EINVAL, "target %s: %s", path, strerror(errno));
	if (S_ISREG(st.st_mode)) {
		open_file(t, path, fd, st.st_size, o);
		return;
	}
	if (S_ISBLK(st.st_mode))
		refuse(EOPNOTSUPP, "target %s is a block device: use the module (backend=kernel), or a file on a DAX file system", path);
	if (!S_ISCHR(st.st_mode))
		refuse(EINVAL, "target %s: not a file or devdax device", path);
	snprintf(t->kind, sizeof(t->kind), "devdax");
	snprintf(sys, sizeof(sys), "/sys/dev/char/%u:%u/size", major(st.st_rdev), minor(st.st_rdev));
	if (sysfs_u64(sys, &len))
		refuse(EOPNOTSUPP, "target %s: a character device that is not devdax", path);
	snprintf(sys, sizeof(sys), "/sys/dev/char/%u:%u/align", major(st.st_rdev), minor(st.st_rdev));
	if (sysfs_u64(sys, &align))
		align = 2ULL << 20;
	snprintf(sys, sizeof(sys), "/sys/dev/char/%u:%u/target_node", major(st.st_rdev),
		 minor(st.st_rdev));
	{
		u64 n;

		if (!sysfs_u64(sys, &n))
			t->node = (long)(s64)n;
	}
	t->pages = "devdax";
	t->dax = 1;
	if (o->size > len)
		refuse(ERANGE, "size %llu exceeds the device (%llu bytes)", o->size, len);
	if (o->size)
		len = o->size;
	len &= ~4095ULL;
	if (!len)
		refuse(EINVAL, "target %s is empty", path);
	p = plu_map_guarded(fd, len, prot, align, &t->map_sync);
	if (!p)
		refuse(EINVAL, "mmap %s: %s", path, strerror(errno));
	close(fd);
	t->addr = p;
	t->size = t->run_size = t->map_len = len;
	/* the signature probe (core/sig.c) decides whether a write run may overwrite it */
	t->fs_sig = pl_sig_probe(read_mapped, p, len);
	t->fallback_page = align;
}

void plu_map(struct plu_target *t, const char *path, bool writes)
{
	int prot = PROT_READ | (writes ? PROT_WRITE : 0);
	u64 len = t->run_size;
	char *p;

	if (t->fd < 0)
		return;
	if (writes && len > t->file_len) {
		/* size= beyond the end: a write run extends the file (zeroed, then filled) */
		errno = posix_fallocate(t->fd, 0, len);
		if (errno)
			refuse(ENOMEM, "cannot extend %s to %llu bytes: %s", path, len, strerror(errno));
	}
	if (len > (t->file_len & ~4095ULL) && !writes)
		len = t->file_len & ~4095ULL;	/* a probe maps what is there */
	if (writes) {		/* the run goes ahead: a file it created stays */
		free(plu_created);
		plu_created = NULL;
	}
	t->size = t->map_len = len;
	t->fallback_page = 4096;
	if (!len)
		return;			/* a probe of a file a run would create or extend */
	/* MAP_SYNC where the file system (DAX) allows it, for reads too */
	p = plu_map_guarded(t->fd, len, prot, 2ULL << 20, &t->map_sync);
	if (!p)
		refuse(EINVAL, "mmap %s: %s", path, strerror(errno));
	t->addr = p;
}

void plu_prefault(struct plu_target *t, bool writes, u64 bytes)
{
	u64 n = bytes < t->size ? bytes : t->size;

	if (!n) {		/* nothing mapped: a probe of a file a run would create */
		t->page_size = 0;
		return;
	}

	if (!strcmp(t->placement, "weighted-interleave")) {
		atexit(wi_restore);
		if (wi_set(t)) {
			/* weights it may not set: the policy goes, each node's pages are touched in */
			if (mbind(t->addr, t->size, MPOL_DEFAULT, NULL, 0, 0))
				refuse(EINVAL, "mbind(MPOL_DEFAULT): %s", strerror(errno));
			t->placement = "first-touch";
		}
	}
	if (t->placed && !strcmp(t->placement, "first-touch"))
		first_touch(t, n);
	else if (writes || !strcmp(t->kind, "dram"))
		fill(t->addr, n);
	else
		touch_read(t->addr, n);
	wi_restore();	/* every page of the run is in: the weights go back (if set) */
	t->page_size = mapping_page_size(t->addr, t->fallback_page, n, &t->huge_pct);
	if (t->node < 0)
		t->node = mapping_node(t->addr, n);
	if (t->placed)
		check_placement(t, n);
}

