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

/* the signature probe's reader (kmod/core/sig.c) over a mapped target */
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

void plu_open_dram(struct plu_target *t, u64 len, unsigned int pages, long node)
{
	u64 align = 2ULL << 20;
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
	char *p;

	snprintf(t->kind, sizeof(t->kind), "dram");
	t->pages = pages == 2 ? "hugetlbfs" : pages == 1 ? "thp" : "4k";
	if (node >= 0) {
		if (numa_available() < 0 || node > numa_max_node() ||
		    !numa_bitmask_isbitset(numa_all_nodes_ptr, node))
			refuse(EINVAL, "dram_node %ld: no such NUMA node with memory", node);
	}
	if (pages == 2 && len % align)
		refuse(EINVAL, "dram_pages=hugetlb: dram_size must be a multiple of 2M");
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
		}
	}
	if (node >= 0) {
		struct bitmask *bm = numa_allocate_nodemask();

		numa_bitmask_setbit(bm, node);
		if (mbind(p, len, MPOL_BIND, bm->maskp, bm->size + 1, MPOL_MF_STRICT))
			refuse(EINVAL, "mbind to node %ld: %s", node, strerror(errno));
		numa_free_nodemask(bm);
	}
	t->addr = p;
	t->size = t->run_size = len;
	t->map_len = len;
	t->fs_sig = "none";
	t->node = -1;
	t->fd = -1;
	t->dax = 0;
	t->fallback_page = 4096;
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
	if (fd < 0)
		refuse(errno == ENOENT ? ENOENT : errno == EACCES ? EACCES : EINVAL,
		       "target %s: %s%s", path, strerror(errno),
		       errno == ENOENT && o->may_write && !o->size ? " (give size= to create it)" : "");
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
	/* the signature probe (kmod/core/sig.c) decides whether a write run may overwrite it */
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

	if (writes || !strcmp(t->kind, "dram"))
		fill(t->addr, n);
	else
		touch_read(t->addr, n);
	t->page_size = mapping_page_size(t->addr, t->fallback_page, n, &t->huge_pct);
	if (t->node < 0)
		t->node = mapping_node(t->addr, n);
}

