// SPDX-License-Identifier: GPL-2.0
/*
 * pmemlab-run - the userspace backend of pmemlab.
 *
 * Runs the module's own access kernels (kmod/core/ops.c), address generators
 * (kmod/core/gen.c), histogram (kmod/core/hist.c) and timed loops (kmod/core/engine.c) on
 * memory a user can map: a file on a DAX file system (MAP_SYNC where the
 * kernel allows it), a devdax device, or anonymous memory bound to a NUMA
 * node (libnuma), with 4 KiB pages, THP (2m) or hugetlbfs (hugetlb).
 *
 *	pmemlab-run target=dram[:NODE] [dram_size=256M] [dram_pages=4k|2m|hugetlb] KEY=VALUE...
 *	pmemlab-run target=/mnt/pmem/file|/dev/daxX.Y [allow_overwrite=1] KEY=VALUE...
 *	pmemlab-run --facts target=...        target facts only
 *
 * KEY=VALUE are the module's run parameters (docs/interface.md) with the
 * same names, defaults and validation.  The output is the module's
 * `result` text, then `# histogram` and the `histogram` text; lines that
 * start with `#` carry the target facts (`#fact NAME VALUE`) and the final
 * state (`#state done|error:aborted`).  A refused parameter or run prints
 * `pmemlab-run: EINVAL: reason` (or ERANGE, EOPNOTSUPP, EPERM, ENOMEM, ...)
 * on stderr and exits with status 2.
 *
 * Every thread is pinned (sched_setaffinity) to the CPU its result line
 * names; if pinning fails, or sched_getcpu() then says otherwise, the run
 * is refused (EINVAL) rather than reported for the wrong CPU.
 *
 * Differences from the module, by necessity: interrupts stay on (segments
 * are timed back to back, so irqoff_pct is the share of wall time inside
 * timed segments), prefetchers are never touched (prefetch=off is refused),
 * and the runner has three ops of its own: copy and ntcopy (load from the
 * upper half of the thread's region, store to the lower half; bytes count
 * the bytes stored) and chase (mode latency: dependent loads around one
 * random cycle over the slots; every sample is the mean of 256 loads).
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <linux/mman.h>

#include "pl_core.h"
#include "pl_safe.h"
#include "runner.h"

#define PL_VERSION		"0.1.0"
#define PL_MAX_THREADS		256
#define PL_MAX_ACCESS		(64ULL << 20)
#define PL_MAX_SAMPLES		(1ULL << 20)
#define PL_MAX_SAMPLE_BYTES	(256ULL << 20)
#define PL_OP_CHASE		(PLU_OP_ALL)	/* runner only, latency mode */
#define PL_NOPS_ALL		(PLU_OP_ALL + 1)
#define T40			(1ULL << 40)
#define CHASE_UNROLL		256

#ifndef MAP_SYNC
#define MAP_SYNC		0x80000
#endif
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE	0x03
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB		(21 << 26)
#endif

enum pl_placement { PL_PLACE_GLOBAL, PL_PLACE_THREAD, PL_PLACE_DIMM };

/* ---- errors: the module's errno and last_error, on stderr ---- */
static __attribute__((noreturn, format(printf, 2, 3))) void refuse(int err, const char *fmt, ...)
{
	va_list ap;
	const char *name = err == EINVAL ? "EINVAL" : err == ERANGE ? "ERANGE" :
			   err == EOPNOTSUPP ? "EOPNOTSUPP" : err == EPERM ? "EPERM" :
			   err == ENOMEM ? "ENOMEM" : err == ENOENT ? "ENOENT" :
			   err == EBUSY ? "EBUSY" : err == EACCES ? "EACCES" : "EIO";

	fprintf(stderr, "pmemlab-run: %s: ", name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* ---- configuration: the module's struct pl_config, plus the target ---- */
struct cfg {
	u64 mode, read_pct, width, access_size, stride, window_offset, working_set;
	u64 pattern, hotspot_size, passes, pass_offset;
	u64 fence, fence_interval, flush;
	u64 threads, placement, interleave_ways, interleave_gran, dimms_per_thread;
	u64 duration_ms, count, delay_ticks, probe, seed, prefetch, cold, warm;
	u64 samples, segment_ms;
	u64 nops;
	u8 ops[PL_MAX_THREADS];
	int ncpus;
	int cpus[CPU_SETSIZE];
	/* target (load-time parameters of the module, and the runner's own) */
	const char *target;
	u64 dram_size, dram_pages, allow_overwrite, size, tsc_khz;
	long dram_node;
	const char *raw_samples;
};

enum ptype { PT_NUM, PT_SIZE, PT_ENUM, PT_OPS, PT_CPUS };

struct param {
	const char *name;
	int type;
	size_t off;
	u64 min, max, def;
	const char *const *names;
	int mult;			/* 0, or the value must be a multiple of it */
};

static const char *const mode_names[] = { "bandwidth", "latency", NULL };
static const char *const pattern_names[] = { "seq", "rand", "stride", "hotspot", NULL };
static const char *const fence_names[] = { "none", "sfence", "mfence", NULL };
static const char *const flush_names[] = { "line", "access", NULL };
static const char *const place_names[] = { "global", "per-thread", "per-dimm", NULL };
static const char *const onoff_names[] = { "on", "off", NULL };
static const char *const pages_names[] = { "4k", "2m", "hugetlb", NULL };

#define P(_n, _t, _min, _max, _def, _names, _mult) \
	{ #_n, _t, offsetof(struct cfg, _n), _min, _max, _def, _names, _mult }

/* access_size and width have their own rules (below); mult 8/64 as in the module */
static const struct param params[] = {
	P(mode, PT_ENUM, 0, 1, PL_MODE_BW, mode_names, 0),
	{ "op", PT_OPS, 0, 0, 0, 0, NULL, 0 },
	P(read_pct, PT_NUM, 0, 100, 0, NULL, 0),
	P(width, PT_NUM, 0, 64, 0, NULL, 0),
	P(access_size, PT_SIZE, 8, PL_MAX_ACCESS, 64, NULL, 0),
	P(stride, PT_SIZE, 0, T40, 0, NULL, 8),
	P(window_offset, PT_SIZE, 0, T40 << 8, 0, NULL, 0),
	P(working_set, PT_SIZE, 0, T40 << 8, 0, NULL, 8),
	P(pattern, PT_ENUM, 0, 3, PL_PAT_SEQ, pattern_names, 0),
	P(hotspot_size, PT_SIZE, 8, T40, 4096, NULL, 8),
	P(passes, PT_NUM, 1, 4096, 1, NULL, 0),
	P(pass_offset, PT_SIZE, 0, T40, 0, NULL, 8),
	P(fence, PT_ENUM, 0, 2, PL_FENCE_NONE, fence_names, 0),
	P(fence_interval, PT_SIZE, 0, T40, 0, NULL, 64),
	P(flush, PT_ENUM, 0, 1, PL_FLUSH_LINE, flush_names, 0),
	P(threads, PT_NUM, 1, PL_MAX_THREADS, 1, NULL, 0),
	{ "cpus", PT_CPUS, 0, 0, 0, 0, NULL, 0 },
	P(placement, PT_ENUM, 0, 2, PL_PLACE_THREAD, place_names, 0),
	P(interleave_ways, PT_NUM, 1, 64, 1, NULL, 0),
	P(interleave_gran, PT_SIZE, 64, 1ULL << 30, 4096, NULL, 64),
	P(dimms_per_thread, PT_NUM, 1, 64, 1, NULL, 0),
	P(duration_ms, PT_NUM, 1, 3600000, 1000, NULL, 0),
	P(count, PT_NUM, 0, T40, 0, NULL, 0),
	P(delay_ticks, PT_NUM, 0, 1ULL << 36, 0, NULL, 0),
	P(probe, PT_NUM, 0, 1, 0, NULL, 0),
	P(seed, PT_NUM, 0, ~0ULL, 1, NULL, 0),
	P(prefetch, PT_ENUM, 0, 1, 0, onoff_names, 0),
	P(cold, PT_NUM, 0, 1, 0, NULL, 0),
	P(warm, PT_NUM, 0, 1, 0, NULL, 0),
	P(samples, PT_NUM, 0, PL_MAX_SAMPLES, 0, NULL, 0),
	P(segment_ms, PT_NUM, 1, 200, 5, NULL, 0),
	/* target parameters (the module's load-time ones, and the runner's) */
	P(dram_size, PT_SIZE, 4096, T40 << 8, 256ULL << 20, NULL, 4096),
	P(dram_pages, PT_ENUM, 0, 2, 1, pages_names, 0),
	P(allow_overwrite, PT_NUM, 0, 1, 0, NULL, 0),
	P(size, PT_SIZE, 0, T40 << 8, 0, NULL, 4096),
	P(tsc_khz, PT_NUM, 0, 100000000, 0, NULL, 0),
};

#define NPARAMS (sizeof(params) / sizeof(params[0]))

static const struct pl_op_desc pl_chase_desc = {
	.name = "chase",
	.insn = { "mov", NULL, NULL, NULL },
	.needs = { 0, PL_F_NONE, PL_F_NONE, PL_F_NONE },
};

static const struct pl_op_desc *op_desc(int op)
{
	if (op < PL_OP_NR)
		return &pl_ops[op];
	if (op < PLU_OP_ALL)
		return &pl_user_ops[op - PL_OP_NR];
	return &pl_chase_desc;
}

static int op_lookup(const char *s, size_t len)
{
	int i;

	for (i = 0; i < PL_NOPS_ALL; i++)
		if (strlen(op_desc(i)->name) == len && !memcmp(op_desc(i)->name, s, len))
			return i;
	return -1;
}

static u64 *field(struct cfg *c, const struct param *p)
{
	return (u64 *)((char *)c + p->off);
}

static void parse_num(const struct param *p, const char *s, u64 *v)
{
	char num[32], *end;
	size_t len = strlen(s);
	unsigned int shift = 0;
	int base;

	if (len >= sizeof(num))
		refuse(EINVAL, "%s: value too long", p->name);
	memcpy(num, s, len + 1);
	if (p->type == PT_SIZE && len > 1) {
		switch (num[len - 1]) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		}
		if (shift)
			num[len - 1] = '\0';
	}
	base = (num[0] == '0' && (num[1] == 'x' || num[1] == 'X')) ? 16 : 10;
	errno = 0;
	*v = strtoull(num, &end, base);
	if (!num[0] || num[0] == '-' || num[0] == '+' || num[0] == ' ' || *end || errno ||
	    (base == 16 && !num[2]))
		refuse(EINVAL, "%s: '%s' is not a non-negative integer%s", p->name, s,
		       p->type == PT_SIZE ? " (K/M/G/T suffixes allowed)" : "");
	if (*v > (~0ULL >> shift))
		refuse(EINVAL, "%s: '%s' is too large", p->name, s);
	*v <<= shift;
	if (*v < p->min || *v > p->max)
		refuse(EINVAL, "%s: %" PRIu64 " is outside %" PRIu64 "..%" PRIu64, p->name, *v,
		       p->min, p->max);
	if (p->mult && *v % p->mult)
		refuse(EINVAL, "%s: %" PRIu64 " is not a multiple of %d", p->name, *v, p->mult);
	if (!strcmp(p->name, "width") && *v && *v != 8 && *v != 16 && *v != 32 && *v != 64)
		refuse(EINVAL, "width: %" PRIu64 " is not 0, 8, 16, 32 or 64", *v);
	if (!strcmp(p->name, "access_size") &&
	    (*v < 64 ? (*v & (*v - 1)) != 0 : *v % 64 != 0))
		refuse(EINVAL, "access_size: %" PRIu64 " must be 8, 16, 32 or a multiple of 64", *v);
	if (!strcmp(p->name, "prefetch") && *v)
		refuse(EOPNOTSUPP, "prefetch: userspace cannot control hardware prefetchers (prefetch_control none)");
}

static void parse_ops(struct cfg *c, const char *s)
{
	const char *tok = s, *end;
	unsigned int n = 0;
	size_t len;
	int op;

	for (;;) {
		end = strchrnul(tok, ',');
		len = end - tok;
		op = len ? op_lookup(tok, len) : -1;
		if (op < 0)
			refuse(EINVAL, "op: '%.*s' is not an op (load ntload store ntstore store+clwb store+clflushopt store+clflush copy ntcopy chase)",
			       (int)(len > 32 ? 32 : len), tok);
		if (n == PL_MAX_THREADS)
			refuse(EINVAL, "op: more than %d entries", PL_MAX_THREADS);
		c->ops[n++] = op;
		if (!*end)
			break;
		tok = end + 1;
	}
	c->nops = n;
}

static void parse_cpus(struct cfg *c, const char *s)
{
	cpu_set_t set;
	const char *q = s;
	char *end;
	long a, b, i;

	CPU_ZERO(&set);
	c->ncpus = 0;
	if (!*s)
		return;
	for (;;) {
		errno = 0;
		a = strtol(q, &end, 10);
		if (end == q || a < 0 || errno)
			goto bad;
		b = a;
		if (*end == '-') {
			q = end + 1;
			b = strtol(q, &end, 10);
			if (end == q || b < a)
				goto bad;
		}
		if (b >= CPU_SETSIZE)
			refuse(EINVAL, "cpus: '%.32s' names CPUs that do not exist", s);
		for (i = a; i <= b; i++)
			CPU_SET(i, &set);
		if (!*end)
			break;
		if (*end != ',')
			goto bad;
		q = end + 1;
	}
	/* ascending, as cpumask iteration in the module */
	for (i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			c->cpus[c->ncpus++] = i;
	return;
bad:
	refuse(EINVAL, "cpus: '%.32s' is not a CPU list like 0-3,6", s);
}

static void defaults(struct cfg *c)
{
	size_t i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < NPARAMS; i++)
		if (params[i].type != PT_OPS && params[i].type != PT_CPUS)
			*field(c, &params[i]) = params[i].def;
	c->ops[0] = PL_OP_LOAD;
	c->nops = 1;
	c->dram_node = -1;
}

static void set_param(struct cfg *c, const char *key, const char *val)
{
	size_t i;
	u64 v;

	if (!strcmp(key, "target")) {
		c->target = val;
		return;
	}
	if (!strcmp(key, "raw_samples")) {
		c->raw_samples = val;
		return;
	}
	if (!strcmp(key, "dram_node")) {
		char *end;

		errno = 0;
		c->dram_node = strtol(val, &end, 10);
		if (!*val || *end || errno || c->dram_node < -1 || c->dram_node > 1023)
			refuse(EINVAL, "dram_node: '%s' is not -1 or a node number", val);
		return;
	}
	for (i = 0; i < NPARAMS; i++) {
		const struct param *p = &params[i];

		if (strcmp(p->name, key))
			continue;
		if (!*val && p->type != PT_CPUS)
			refuse(EINVAL, "%s: empty value", key);
		switch (p->type) {
		case PT_OPS:
			parse_ops(c, val);
			return;
		case PT_CPUS:
			parse_cpus(c, val);
			return;
		case PT_ENUM:
			for (v = 0; p->names[v]; v++)
				if (!strcmp(val, p->names[v]))
					break;
			if (!p->names[v])
				refuse(EINVAL, "%s: '%s' is not one of the allowed names (see docs/interface.md)",
				       key, val);
			if (!strcmp(key, "prefetch") && v)
				refuse(EOPNOTSUPP, "prefetch: userspace cannot control hardware prefetchers (prefetch_control none)");
			*field(c, p) = v;
			return;
		default:
			parse_num(p, val, &v);
			*field(c, p) = v;
			return;
		}
	}
	refuse(EINVAL, "%s: unknown parameter", key);
}

/* ---- CPU ---- */
static u32 features;

static u64 xgetbv0(void)
{
	u32 lo, hi;

	asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((u64)hi << 32) | lo;
}

static u32 detect_features(void)
{
	unsigned int a, b, c, d;
	u32 f = 0;
	u64 xcr0 = 0;

	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	if (d & (1u << 26))
		f |= PL_F_SSE2;
	if (d & (1u << 19))
		f |= PL_F_CLFLUSH;
	if (c & (1u << 19))
		f |= PL_F_SSE41;
	if (c & (1u << 27))
		xcr0 = xgetbv0();
	if ((c & (1u << 28)) && (xcr0 & 6) == 6)
		f |= PL_F_AVX;
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
		if ((b & (1u << 5)) && (f & PL_F_AVX))
			f |= PL_F_AVX2;
		if ((b & (1u << 16)) && (xcr0 & 0xe6) == 0xe6)
			f |= PL_F_AVX512F;
		if (b & (1u << 23))
			f |= PL_F_CLFLUSHOPT;
		if (b & (1u << 24))
			f |= PL_F_CLWB;
	}
	if (__get_cpuid(0x80000001, &a, &b, &c, &d) && (d & (1u << 27)))
		f |= PL_F_RDTSCP;
	return f;
}

static u32 op_missing(int op, unsigned int width)
{
	u32 need = op_desc(op)->needs[pl_width_idx(width)];

	if (need & PL_F_NONE)
		return PL_F_NONE;
	return need & ~features;
}

static u64 read_tsc_khz(void)
{
	struct timespec a, b;
	u64 t0, t1, best = 0, v[5];
	int i, j;
	FILE *f = fopen("/sys/devices/system/cpu/cpu0/tsc_freq_khz", "r");

	if (f) {
		if (fscanf(f, "%" SCNu64, &best) != 1)
			best = 0;
		fclose(f);
		if (best)
			return best;
	}
	/* calibrate against CLOCK_MONOTONIC_RAW: median of five 20 ms windows */
	for (i = 0; i < 5; i++) {
		clock_gettime(CLOCK_MONOTONIC_RAW, &a);
		t0 = pl_rdtsc();
		do {
			clock_gettime(CLOCK_MONOTONIC_RAW, &b);
		} while ((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec) < 20000000);
		t1 = pl_rdtsc();
		v[i] = (t1 - t0) * 1000000ULL /
		       (u64)((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			u64 t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	}
	return v[2];
}

/* ---- target ---- */
struct target {
	char kind[16];			/* dram, file, devdax */
	char *addr;
	u64 size;
	long node;
	u64 page_size;			/* smallest page size of the mapping, as obtained */
	u64 huge_pct;			/* % of the mapped bytes in pages > 4 KiB */
	const char *pages;		/* how it was mapped: 4k, thp, hugetlbfs, file, devdax */
	int map_sync;			/* the mapping has MAP_SYNC */
	const char *fs_sig;
	u64 map_len;
};

/* the signature probe's reader (kmod/core/sig.c) over a mapped target */
static int map_read(void *ctx, u64 off, void *buf, unsigned int len)
{
	memcpy(buf, (const char *)ctx + off, len);
	return 0;
}

static const char *fs_signature(const unsigned char *p, u64 size)
{
	return pl_sig_probe(map_read, (void *)p, size);
}

static int sysfs_u64(const char *path, u64 *v)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return -1;
	ok = fscanf(f, "%" SCNi64, (int64_t *)v) == 1;
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
		if (sscanf(line, "KernelPageSize: %" SCNu64, &v) == 1)
			kps = v * 1024;
		else if (sscanf(line, "Rss: %" SCNu64, &v) == 1)
			rss = v;
		else if (sscanf(line, "AnonHugePages: %" SCNu64, &v) == 1 ||
			 sscanf(line, "FilePmdMapped: %" SCNu64, &v) == 1 ||
			 sscanf(line, "ShmemPmdMapped: %" SCNu64, &v) == 1)
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

static void open_dram(struct target *t, const struct cfg *c, long node, u64 prefault)
{
	u64 len = c->dram_size, align = 2ULL << 20, mlen;
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	char *p;

	snprintf(t->kind, sizeof(t->kind), "dram");
	t->pages = c->dram_pages == 2 ? "hugetlbfs" : c->dram_pages == 1 ? "thp" : "4k";
	if (node >= 0) {
		if (numa_available() < 0 || node > numa_max_node() ||
		    !numa_bitmask_isbitset(numa_all_nodes_ptr, node))
			refuse(EINVAL, "dram_node %ld: no such NUMA node with memory", node);
	}
	if (c->dram_pages == 2) {	/* hugetlbfs */
		if (len % align)
			refuse(EINVAL, "dram_pages=hugetlb: dram_size must be a multiple of 2M");
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0);
		if (p == MAP_FAILED)
			refuse(ENOMEM, "dram_pages=hugetlb: no %" PRIu64 " bytes of 2 MiB huge pages (vm.nr_hugepages)", len);
		mlen = len;
	} else {
		/* over-allocate to place the buffer on a 2 MiB boundary */
		mlen = len + align;
		p = mmap(NULL, mlen, PROT_READ | PROT_WRITE, flags, -1, 0);
		if (p == MAP_FAILED)
			refuse(ENOMEM, "cannot map %" PRIu64 " bytes", len);
		p = (char *)(((unsigned long)p + align - 1) & ~(align - 1));
		/*
		 * EINVAL: a kernel built without THP (Debian's PREEMPT_RT ones):
		 * 4 KiB pages, reported as such, as the module's dram_pages=2m does
		 */
		if (madvise(p, len, c->dram_pages == 1 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE)) {
			if (errno != EINVAL)
				refuse(EOPNOTSUPP, "madvise(%s): %s", pages_names[c->dram_pages],
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
	fill(p, prefault < len ? prefault : len);
	t->addr = p;
	t->size = len;
	t->map_len = mlen;
	t->fs_sig = "none";
	t->page_size = mapping_page_size(p, 4096, prefault < len ? prefault : len, &t->huge_pct);
	t->node = mapping_node(p, prefault < len ? prefault : len);
}

static void open_path(struct target *t, const struct cfg *c, bool writes, u64 prefault)
{
	struct stat st;
	int fd, prot = PROT_READ | (writes ? PROT_WRITE : 0);
	u64 len = 0, align = 0;
	char sys[256];
	char *p;

	fd = open(c->target, writes ? O_RDWR : O_RDONLY);
	if (fd < 0)
		refuse(errno == ENOENT ? ENOENT : errno == EACCES ? EACCES : EINVAL,
		       "target %s: %s", c->target, strerror(errno));
	if (fstat(fd, &st))
		refuse(EINVAL, "target %s: %s", c->target, strerror(errno));
	t->node = -1;
	if (S_ISCHR(st.st_mode)) {
		snprintf(t->kind, sizeof(t->kind), "devdax");
		snprintf(sys, sizeof(sys), "/sys/dev/char/%u:%u/size", major(st.st_rdev),
			 minor(st.st_rdev));
		if (sysfs_u64(sys, &len))
			refuse(EOPNOTSUPP, "target %s: a character device that is not devdax", c->target);
		snprintf(sys, sizeof(sys), "/sys/dev/char/%u:%u/align", major(st.st_rdev),
			 minor(st.st_rdev));
		if (sysfs_u64(sys, &align))
			align = 2ULL << 20;
		snprintf(sys, sizeof(sys), "/sys/dev/char/%u:%u/target_node", major(st.st_rdev),
			 minor(st.st_rdev));
		{
			u64 n;

			if (!sysfs_u64(sys, &n))
				t->node = (long)(int64_t)n;
		}
		t->pages = "devdax";
	} else if (S_ISREG(st.st_mode)) {
		snprintf(t->kind, sizeof(t->kind), "file");
		len = st.st_size;
		if (c->size && c->size > len) {
			if (!writes)
				refuse(ERANGE, "size %" PRIu64 " exceeds the file (%" PRIu64 " bytes)",
				       c->size, len);
			if ((errno = posix_fallocate(fd, 0, c->size)))
				refuse(ENOMEM, "cannot extend %s to %" PRIu64 " bytes: %s", c->target,
				       c->size, strerror(errno));
			len = c->size;
		}
		t->pages = "file";
	} else if (S_ISBLK(st.st_mode)) {
		refuse(EOPNOTSUPP, "target %s is a block device: use the module (backend=kernel), or a file on a DAX file system", c->target);
	} else {
		refuse(EINVAL, "target %s: not a file or devdax device", c->target);
	}
	if (c->size && c->size < len)
		len = c->size;
	len &= ~4095ULL;
	if (!len)
		refuse(EINVAL, "target %s is empty (give size= to create it)", c->target);
	/* MAP_SYNC where the file system (DAX) or device allows it, for reads too */
	p = mmap(NULL, len, prot, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
	t->map_sync = p != MAP_FAILED;
	if (p == MAP_FAILED)
		p = mmap(NULL, len, prot, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		refuse(EINVAL, "mmap %s: %s", c->target, strerror(errno));
	close(fd);
	t->addr = p;
	t->size = len;
	t->map_len = len;
	t->fs_sig = S_ISCHR(st.st_mode) ? fs_signature((const unsigned char *)p, len) : "none";
	if (writes && !c->allow_overwrite && strcmp(t->fs_sig, "none"))
		refuse(EPERM, "refusing a write run: the target carries a %s signature (give allow_overwrite=1)",
		       t->fs_sig);
	/* pre-fault: write runs write non-zero data, read runs read */
	if (writes)
		fill(p, prefault < len ? prefault : len);
	else
		touch_read(p, prefault < len ? prefault : len);
	t->page_size = mapping_page_size(p, align ? align : 4096, prefault < len ? prefault : len,
					 &t->huge_pct);
	if (t->node < 0)
		t->node = mapping_node(p, prefault < len ? prefault : len);
}

/* ---- one run ---- */
struct worker {
	unsigned int idx;
	int cpu, node, op;
	bool probe, chase;
	struct pl_eng e;
	u64 segments, gap_ticks, last_tsc;
	u64 copy_delta;
	int pin_err;			/* errno of a failed pinning, or -1: ran elsewhere */
	int ran_on;			/* sched_getcpu() after pinning */
	pthread_t th;
};

static struct run {
	struct cfg c;
	struct target t;
	unsigned int n, width;
	u64 seg_ticks, tsc_khz;
	int stop, probe_stop;
	atomic_uint arrived, loaders;
	_Atomic u64 go_tsc;
	int aborted;
	struct worker w[PL_MAX_THREADS];
} R;

static void on_signal(int sig)
{
	(void)sig;
	R.aborted = 1;
	__atomic_store_n(&R.stop, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&R.probe_stop, 1, __ATOMIC_RELAXED);
}

static bool worker_writes(const struct cfg *c, int op)
{
	return op_desc(op)->writes && c->read_pct < 100;
}

static unsigned int resolve_width(const struct cfg *c, unsigned int n)
{
	static const unsigned int widths[PL_NWIDTH] = { 8, 16, 32, 64 };
	bool used[PL_NOPS_ALL] = { 0 };
	unsigned int i;
	int op, w;
	u32 miss;

	for (i = 0; i < n; i++) {
		op = c->ops[i % c->nops];
		used[op] = true;
		if (op_desc(op)->writes && c->read_pct)
			used[PL_OP_LOAD] = true;
	}
	if (used[PL_OP_CHASE]) {
		if (c->nops > 1 || c->mode != PL_MODE_LAT || c->read_pct || c->probe)
			refuse(EINVAL, "op chase: one op for every thread, mode latency, no read_pct or probe");
		if (c->width && c->width != 8)
			refuse(EOPNOTSUPP, "op chase has only an 8-byte form");
		if (c->access_size != 64 && c->access_size % 64)
			refuse(EINVAL, "op chase: access_size (the slot) must be a multiple of 64");
		return 8;
	}
	if (c->width) {
		if (c->access_size % c->width)
			refuse(EINVAL, "access_size %" PRIu64 " is not a multiple of width %" PRIu64,
			       c->access_size, c->width);
		for (op = 0; op < PL_NOPS_ALL; op++) {
			if (!used[op])
				continue;
			miss = op_missing(op, c->width);
			if (miss & PL_F_NONE)
				refuse(EOPNOTSUPP, "op %s has no %" PRIu64 "-byte instruction",
				       op_desc(op)->name, c->width);
			if (miss)
				refuse(EOPNOTSUPP, "op %s at width %" PRIu64 " (%s) needs %s, which this CPU lacks",
				       op_desc(op)->name, c->width,
				       op_desc(op)->insn[pl_width_idx(c->width)],
				       pl_feature_names[__builtin_ctz(miss)]);
		}
		return c->width;
	}
	for (w = PL_NWIDTH - 1; w >= 0; w--) {
		if (widths[w] > c->access_size)
			continue;
		for (op = 0; op < PL_NOPS_ALL; op++)
			if (used[op] && op_missing(op, widths[w]))
				break;
		if (op == PL_NOPS_ALL)
			return widths[w];
	}
	refuse(EOPNOTSUPP, "no instruction width <= access_size %" PRIu64 " runs every op of this run on this CPU",
	       c->access_size);
}

static void check_run(const struct cfg *c, const struct target *t, unsigned int n)
{
	u64 ws, lat_threads;
	unsigned int i;

	if (c->window_offset % 4096)
		refuse(EINVAL, "window_offset: %" PRIu64 " is not a multiple of 4096", c->window_offset);
	if (c->window_offset >= t->size)
		refuse(ERANGE, "window_offset %" PRIu64 ": not 4 KiB aligned or past the target (%" PRIu64 " bytes)",
		       c->window_offset, t->size);
	if (c->working_set > t->size)
		refuse(ERANGE, "working_set: %" PRIu64 " exceeds the target (%" PRIu64 " bytes)",
		       c->working_set, t->size);
	ws = c->working_set ? c->working_set : t->size - c->window_offset;
	if (ws > t->size - c->window_offset)
		refuse(ERANGE, "window_offset + working_set = %" PRIu64 " exceeds the target (%" PRIu64 " bytes)",
		       c->window_offset + ws, t->size);
	if (ws < c->access_size)
		refuse(ERANGE, "working_set %" PRIu64 " is smaller than access_size %" PRIu64,
		       ws, c->access_size);
	if (c->fence != PL_FENCE_NONE && c->fence_interval &&
	    c->fence_interval < c->access_size && c->access_size % c->fence_interval)
		refuse(EINVAL, "fence_interval %" PRIu64 " must divide access_size %" PRIu64,
		       c->fence_interval, c->access_size);
	if (c->probe && (n < 2 || c->mode != PL_MODE_BW))
		refuse(EINVAL, "probe needs mode=bandwidth and threads >= 2");
	if (c->cold && c->warm)
		refuse(EINVAL, "cold and warm exclude each other");
	if (c->placement == PL_PLACE_DIMM && c->pattern == PL_PAT_HOTSPOT)
		refuse(EINVAL, "pattern hotspot does not combine with placement per-dimm");
	if (c->placement == PL_PLACE_DIMM &&
	    c->window_offset % (c->interleave_ways * c->interleave_gran))
		refuse(EINVAL, "per-dimm: window_offset must be a multiple of interleave_ways * interleave_gran");
	if (c->dimms_per_thread > c->interleave_ways)
		refuse(EINVAL, "dimms_per_thread %" PRIu64 " exceeds interleave_ways %" PRIu64,
		       c->dimms_per_thread, c->interleave_ways);
	for (i = 0; i < c->nops; i++)
		if ((c->ops[i] == PLU_OP_COPY || c->ops[i] == PLU_OP_NTCOPY) &&
		    c->placement == PL_PLACE_DIMM)
			refuse(EINVAL, "op %s does not combine with placement per-dimm",
			       op_desc(c->ops[i])->name);
	lat_threads = c->mode == PL_MODE_LAT ? n : c->probe ? 1 : 0;
	if (lat_threads * c->samples > PL_MAX_SAMPLE_BYTES / sizeof(u64))
		refuse(EINVAL, "samples: %" PRIu64 " x %" PRIu64 " threads exceeds %llu MiB",
		       c->samples, lat_threads, PL_MAX_SAMPLE_BYTES >> 20);
}

static void setup_gen(struct worker *w)
{
	const struct cfg *c = &R.c;
	struct pl_place in = {
		.target_size = R.t.size,
		.window_offset = c->window_offset,
		.working_set = c->working_set,
		.pattern = c->pattern,
		.access = c->access_size,
		.stride = c->stride,
		.hotspot_size = c->hotspot_size,
		.passes = c->passes,
		.pass_offset = c->pass_offset,
		.seed = c->seed,
		.per_thread = c->placement == PL_PLACE_THREAD,
		.ways = c->placement == PL_PLACE_DIMM ? c->interleave_ways : 0,
		.gran = c->interleave_gran,
		.dimms = c->dimms_per_thread,
		.split = w->op == PLU_OP_COPY || w->op == PLU_OP_NTCOPY,
		.idx = w->idx,
		.n = R.n,
	};
	struct pl_region reg;
	char why[256];
	int err = pl_place_worker(&in, &reg, why, sizeof(why));

	if (err)
		refuse(-err, "%s", why);
	pl_gen_init(&w->e.gen, &reg.g);
	w->e.base = R.t.addr + reg.base;
	w->copy_delta = reg.copy_delta;
}

/*
 * chase: one random cycle (Sattolo) over the generator's slots of this
 * thread; each slot's first 8 bytes point to the next slot.
 */
static void build_chase(struct worker *w)
{
	struct pl_gen *g = &w->e.gen;
	u64 n = g->nslots, i, j, *perm;
	struct pl_rng r;

	perm = malloc(n * sizeof(u64));
	if (!perm)
		refuse(ENOMEM, "chase: no memory for %" PRIu64 " slots", n);
	for (i = 0; i < n; i++)
		perm[i] = i;
	pl_rng_seed(&r, R.c.seed, w->idx);
	for (i = n - 1; i > 0; i--) {
		u64 t;

		j = pl_rng_below(&r, i);
		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	/* perm is a single cycle: slot perm[i] -> perm[i+1] */
	for (i = 0; i < n; i++) {
		char *from = w->e.base + perm[i] * g->c.step;
		char *to = w->e.base + perm[(i + 1) % n] * g->c.step;

		*(char **)from = to;
	}
	free(perm);
}

static void *chase_loop(struct worker *w, char *p, u64 until, u64 *left)
{
	struct pl_eng *e = &w->e;
	u64 t0, t1, d, i;

	while (*left && !__atomic_load_n(e->stop, __ATOMIC_RELAXED) && pl_rdtsc() < until) {
		t0 = pl_rdtsc_serial(e->rdtscp);
		for (i = 0; i < CHASE_UNROLL; i += 16) {
			asm volatile(
				"mov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\t"
				"mov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\t"
				"mov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\t"
				"mov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0"
				: "+r"(p) :: "memory");
		}
		t1 = pl_rdtsc_serial(e->rdtscp);
		d = t1 - t0;
		d = d > e->overhead ? d - e->overhead : 0;
		d = (d + CHASE_UNROLL / 2) / CHASE_UNROLL;
		pl_hist_add(&e->hist, d);
		if (e->nsamples < e->nsamples_max)
			e->samples[e->nsamples++] = d;
		e->st.ops += CHASE_UNROLL;
		e->st.reads += CHASE_UNROLL;
		e->st.bytes += CHASE_UNROLL * R.c.access_size;
		*left = *left > CHASE_UNROLL ? *left - CHASE_UNROLL : 0;
	}
	return p;
}

static void setup_worker(struct worker *w, int cpu)
{
	const struct cfg *c = &R.c;
	struct pl_eng *e = &w->e;
	unsigned int wi = pl_width_idx(R.width);

	w->cpu = cpu;
	w->node = numa_available() < 0 ? 0 : numa_node_of_cpu(cpu);
	w->op = c->ops[w->idx % c->nops];
	w->probe = c->probe && w->idx == 0;
	w->chase = w->op == PL_OP_CHASE;
	setup_gen(w);
	e->access = c->access_size;
	e->mode = w->probe ? PL_MODE_LAT : (int)c->mode;
	e->fence = c->fence;
	e->fence_interval = c->fence_interval;
	e->flush = c->flush;
	e->read_pct = op_desc(w->op)->writes ? c->read_pct : 0;
	e->op_reads = !op_desc(w->op)->writes;
	e->delay_ticks = c->delay_ticks;
	e->prep = c->cold ? PL_PREP_COLD : c->warm ? PL_PREP_WARM : PL_PREP_NONE;
	e->rdtscp = features & PL_F_RDTSCP;
	e->wfn = op_desc(w->op)->fn[wi];
	e->rfn = pl_ops[PL_OP_LOAD].fn[wi];
	e->left = (c->count && !w->probe) ? c->count : ~0ULL;
	e->stop = w->probe ? &R.probe_stop : &R.stop;
	e->data = c->seed * 0x2545f4914f6cdd1dULL + w->idx;
	if (e->mode == PL_MODE_LAT) {
		e->hist.b = calloc(PL_HIST_NB, sizeof(u64));
		if (!e->hist.b)
			refuse(ENOMEM, "no memory for the histogram");
		if (c->samples) {
			e->samples = calloc(c->samples, sizeof(u64));
			if (!e->samples)
				refuse(ENOMEM, "no memory for %" PRIu64 " samples", c->samples);
			e->nsamples_max = c->samples;
		}
	}
	pl_hist_reset(&e->hist);
	if (w->chase)
		build_chase(w);
}

static u64 barrier(void)
{
	u64 go;

	if (atomic_fetch_add(&R.arrived, 1) + 1 == R.n)
		atomic_store(&R.go_tsc, pl_rdtsc() + R.tsc_khz);
	while (!(go = atomic_load(&R.go_tsc))) {
		if (__atomic_load_n(&R.stop, __ATOMIC_RELAXED))
			return 0;
		asm volatile("pause");
	}
	while (pl_rdtsc() < go)
		asm volatile("pause");
	return go;
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	struct pl_eng *e = &w->e;
	cpu_set_t set;
	u64 go, end, t0, t1, seg_end, left = e->left;
	char *chase_p = NULL;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	/* a thread that cannot run where the result will say it ran stops the run */
	if (sched_setaffinity(0, sizeof(set), &set))
		w->pin_err = errno ? errno : EINVAL;
	else if ((w->ran_on = sched_getcpu()) != w->cpu)
		w->pin_err = -1;
	if (w->pin_err) {
		__atomic_store_n(&R.stop, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&R.probe_stop, 1, __ATOMIC_RELAXED);
		goto out;
	}
	pl_copy_delta = w->copy_delta;
	if (e->mode == PL_MODE_LAT)
		e->overhead = pl_eng_calibrate(e->rdtscp);
	if (w->chase)
		chase_p = e->base + pl_gen_next(&e->gen);
	go = barrier();
	if (!go)
		goto out;
	end = R.c.count ? ~0ULL : go + R.c.duration_ms * R.tsc_khz;
	while (!__atomic_load_n(e->stop, __ATOMIC_RELAXED) && (w->chase ? left : e->left) &&
	       pl_rdtsc() < end) {
		t0 = pl_rdtsc();
		seg_end = t0 + R.seg_ticks < end ? t0 + R.seg_ticks : end;
		if (w->chase)
			chase_p = chase_loop(w, chase_p, seg_end, &left);
		else if (e->mode == PL_MODE_LAT)
			pl_eng_lat(e, seg_end);
		else
			pl_eng_bw(e, seg_end);
		t1 = pl_rdtsc();
		e->st.ticks += t1 - t0;
		if (w->segments++)
			w->gap_ticks += t0 - w->last_tsc;
		w->last_tsc = t1;
	}
	if (features & PL_F_AVX)
		asm volatile("vzeroupper" ::: "memory");
out:
	if (!w->probe && atomic_fetch_sub(&R.loaders, 1) == 1)
		__atomic_store_n(&R.probe_stop, 1, __ATOMIC_RELAXED);
	return NULL;
}

static bool cpu_allowed(const cpu_set_t *allowed, int cpu)
{
	return cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, allowed);
}

static void siblings(int cpu, cpu_set_t *out)
{
	char path[128], buf[256];
	FILE *f;
	struct cfg tmp;
	int i;

	CPU_ZERO(out);
	CPU_SET(cpu, out);
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = '\0';
		memset(&tmp, 0, sizeof(tmp));
		parse_cpus(&tmp, buf);
		for (i = 0; i < tmp.ncpus; i++)
			CPU_SET(tmp.cpus[i], out);
	}
	fclose(f);
}

/* default CPUs: distinct cores of the target's node, then other cores, then siblings */
static void pick_cpus(unsigned int n, int *out)
{
	cpu_set_t allowed, chosen, sib, and;
	unsigned int k = 0, ncpu;
	int pass, cpu;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		refuse(EINVAL, "sched_getaffinity: %s", strerror(errno));
	ncpu = CPU_COUNT(&allowed);
	if (R.c.ncpus) {
		for (k = 0; k < (unsigned int)R.c.ncpus && k < n; k++) {
			if (!cpu_allowed(&allowed, R.c.cpus[k]))
				refuse(EINVAL, "cpus: CPU %d is offline or not allowed for this process",
				       R.c.cpus[k]);
			out[k] = R.c.cpus[k];
		}
		if (k < n)
			refuse(EINVAL, "cpus lists %d CPUs, threads wants %u", R.c.ncpus, n);
		return;
	}
	if (n > ncpu)
		refuse(EINVAL, "threads %u: only %u CPUs online", n, ncpu);
	CPU_ZERO(&chosen);
	for (pass = 0; pass < 3 && k < n; pass++) {
		for (cpu = 0; cpu < CPU_SETSIZE && k < n; cpu++) {
			if (!CPU_ISSET(cpu, &allowed) || CPU_ISSET(cpu, &chosen))
				continue;
			if (pass == 0 && (R.t.node < 0 || numa_available() < 0 ||
					  numa_node_of_cpu(cpu) != R.t.node))
				continue;
			if (pass < 2) {
				siblings(cpu, &sib);
				CPU_AND(&and, &sib, &chosen);
				if (CPU_COUNT(&and))
					continue;
			}
			CPU_SET(cpu, &chosen);
			out[k++] = cpu;
		}
	}
}

/* ---- results: the module's results.c, printed ---- */
struct sum {
	u64 ops, reads, writes, bytes, ticks, max_ticks, gap, segments, bw_milli;
};

static void out_milli(const char *key, u64 milli)
{
	printf(" %s=%" PRIu64 ".%03" PRIu64, key, milli / 1000, milli % 1000);
}

static u64 bw_milli(u64 bytes, u64 ticks)
{
	return ticks ? pl_muldiv(bytes, R.tsc_khz, ticks) : 0;
}

static void out_common(const struct sum *s)
{
	u64 all = s->ticks + s->gap;

	printf(" ops=%" PRIu64 " reads=%" PRIu64 " writes=%" PRIu64 " bytes=%" PRIu64
	       " ticks=%" PRIu64 " ns=%" PRIu64, s->ops, s->reads, s->writes, s->bytes,
	       s->max_ticks, pl_muldiv(s->max_ticks, 1000000, R.tsc_khz));
	out_milli("bw_mbps", s->bw_milli);
	printf(" segments=%" PRIu64 " gap_ticks=%" PRIu64, s->segments, s->gap);
	out_milli("irqoff_pct", all ? pl_muldiv(s->ticks, 100000, all) : 0);
}

static void out_lat(const struct pl_hist *h, u64 overhead)
{
	static const u32 q[] = { 500000, 900000, 990000, 999000, 999900 };
	static const char *const qn[] = { "p50", "p90", "p99", "p999", "p9999" };
	u64 mean, sd;
	unsigned int i;

	pl_hist_moments(h, &mean, &sd);
	printf(" lat_overhead_ticks=%" PRIu64 " lat_n=%" PRIu64 " lat_min=%" PRIu64, overhead,
	       h->n, h->n ? h->min : 0);
	out_milli("lat_mean", mean);
	out_milli("lat_stddev", sd);
	for (i = 0; i < 5; i++)
		printf(" lat_%s=%" PRIu64, qn[i], pl_hist_pct(h, q[i]));
	printf(" lat_max=%" PRIu64 "\n", h->max);
}

static void add_sum(struct sum *s, const struct worker *w)
{
	const struct pl_stats *st = &w->e.st;

	s->ops += st->ops;
	s->reads += st->reads;
	s->writes += st->writes;
	s->bytes += st->bytes;
	s->ticks += st->ticks;
	if (st->ticks > s->max_ticks)
		s->max_ticks = st->ticks;
	s->gap += w->gap_ticks;
	s->segments += w->segments;
	s->bw_milli += bw_milli(st->bytes, st->ticks);
}

static const char *mode_name(int mode)
{
	return mode == PL_MODE_LAT ? "latency" : "bandwidth";
}

static void out_hist(const char *who, const struct pl_hist *h)
{
	unsigned int i;
	u64 lo, hi;

	for (i = 0; i < PL_HIST_NB; i++) {
		if (!h->b[i])
			continue;
		pl_hist_bounds(i, &lo, &hi);
		printf("%s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", who, lo, hi, h->b[i]);
	}
}

static void print_results(void)
{
	struct pl_hist all = { 0 };
	struct sum s = { 0 };
	u64 overhead = 0;
	bool lat = false, same_op = true;
	unsigned int i;
	char who[16];

	all.b = calloc(PL_HIST_NB, sizeof(u64));
	if (!all.b)
		refuse(ENOMEM, "no memory for the histogram");
	pl_hist_reset(&all);
	for (i = 0; i < R.n; i++) {
		const struct worker *w = &R.w[i];
		struct sum one = { 0 };

		add_sum(&one, w);
		printf("thread=%u cpu=%d node=%d role=%s op=%s width=%u mode=%s", w->idx, w->cpu,
		       w->node, w->probe ? "probe" : "load", op_desc(w->op)->name, R.width,
		       mode_name(w->e.mode));
		out_common(&one);
		if (w->e.mode == PL_MODE_LAT)
			out_lat(&w->e.hist, w->e.overhead);
		else
			printf("\n");
		add_sum(&s, w);
		same_op &= w->op == R.w[0].op;
		if (w->e.mode == PL_MODE_LAT) {
			pl_hist_merge(&all, &w->e.hist);
			if (w->e.overhead > overhead)
				overhead = w->e.overhead;
			lat = true;
		}
	}
	printf("thread=all cpu=-1 node=-1 role=all op=%s width=%u mode=%s",
	       same_op ? op_desc(R.w[0].op)->name : "mixed", R.width, mode_name(R.c.mode));
	out_common(&s);
	if (lat)
		out_lat(&all, overhead);
	else
		printf("\n");
	printf("# histogram\n");
	for (i = 0; i < R.n; i++) {
		if (!R.w[i].e.hist.b)
			continue;
		snprintf(who, sizeof(who), "%u", i);
		out_hist(who, &R.w[i].e.hist);
	}
	out_hist("all", &all);
	free(all.b);
}

static void write_samples(const char *path)
{
	FILE *f = fopen(path, "wb");
	unsigned int i;

	if (!f) {
		fprintf(stderr, "pmemlab-run: cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	for (i = 0; i < R.n; i++)
		if (R.w[i].e.samples)
			fwrite(R.w[i].e.samples, sizeof(u64), R.c.samples, f);
	fclose(f);
}

static void print_facts(void)
{
	static const unsigned int wd[PL_NWIDTH] = { 8, 16, 32, 64 };
	int i, n = 0;

	printf("#fact version %s-user\n", PL_VERSION);
	printf("#fact target %s\n", R.c.target);
	printf("#fact target_kind %s\n", R.t.kind);
	printf("#fact target_size %" PRIu64 "\n", R.t.size);
	printf("#fact target_node %ld\n", R.t.node);
	printf("#fact target_page_size %" PRIu64 "\n", R.t.page_size);
	printf("#fact target_pages %s\n", R.t.pages);
	printf("#fact target_huge_pct %" PRIu64 "\n", R.t.huge_pct);
	printf("#fact map_sync %d\n", R.t.map_sync);
	printf("#fact tsc_khz %" PRIu64 "\n", R.tsc_khz);
	printf("#fact cpu_features");
	for (i = 0; i < PL_F_NR; i++)
		if (features & (1u << i))
			printf("%s%s", n++ ? " " : " ", pl_feature_names[i]);
	printf("\n#fact widths");
	for (i = 0; i < PL_NWIDTH; i++)
		if (!op_missing(PL_OP_LOAD, wd[i]) && !op_missing(PL_OP_STORE, wd[i]))
			printf(" %u", wd[i]);
	printf("\n#fact prefetch_control none\n");
	printf("#fact prefetch untouched\n");
	printf("#fact fs_signature %s\n", R.t.fs_sig);
}

int main(int argc, char **argv)
{
	struct cfg *c = &R.c;
	bool facts_only = false, writes = false;
	int cpus[PL_MAX_THREADS], i, err;
	long node = -1;
	u64 prefault;
	struct sigaction sa;

	defaults(c);
	for (i = 1; i < argc; i++) {
		char *eq;

		if (!strcmp(argv[i], "--facts")) {
			facts_only = true;
			continue;
		}
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: pmemlab-run [--facts] target=dram[:NODE]|PATH KEY=VALUE...\n"
			       "(the module's run parameters, docs/interface.md; see runner.c)\n");
			return 0;
		}
		eq = strchr(argv[i], '=');
		if (!eq)
			refuse(EINVAL, "argument '%s' is not KEY=VALUE", argv[i]);
		*eq = '\0';
		set_param(c, argv[i], eq + 1);
	}
	if (!c->target)
		refuse(EINVAL, "target: give target=dram[:NODE], a file on a DAX file system, or /dev/daxX.Y");
	features = detect_features();
	R.tsc_khz = c->tsc_khz ? c->tsc_khz : read_tsc_khz();
	R.n = c->threads;
	{
		cpu_set_t allowed;

		if (!sched_getaffinity(0, sizeof(allowed), &allowed) &&
		    c->threads > (u64)CPU_COUNT(&allowed))
			refuse(ERANGE, "threads: %" PRIu64 " exceeds the %d online CPUs", c->threads,
			       CPU_COUNT(&allowed));
	}
	if (!facts_only)
		R.width = resolve_width(c, R.n);
	for (i = 0; i < (int)R.n; i++)
		writes |= worker_writes(c, c->ops[i % c->nops]);
	/* pre-fault what the run touches: the window (all of it for --facts: 4 MiB) */
	prefault = facts_only ? 4ULL << 20 : ~0ULL;
	if (!strncmp(c->target, "dram", 4) && (!c->target[4] || c->target[4] == ':')) {
		node = c->dram_node;
		if (c->target[4] == ':') {
			char *end;

			node = strtol(c->target + 5, &end, 10);
			if (!c->target[5] || *end || node < 0)
				refuse(EINVAL, "target '%s': not dram or dram:NODE", c->target);
		}
		open_dram(&R.t, c, node, prefault);
		if (node >= 0 && R.t.node >= 0 && R.t.node != node)
			fprintf(stderr, "pmemlab-run: asked for node %ld, got node %ld\n", node, R.t.node);
	} else {
		open_path(&R.t, c, writes && !facts_only, prefault);
	}
	print_facts();
	if (facts_only)
		return 0;
	check_run(c, &R.t, R.n);
	R.seg_ticks = c->segment_ms * R.tsc_khz;
	pick_cpus(R.n, cpus);
	atomic_store(&R.loaders, R.n - (c->probe ? 1 : 0));
	for (i = 0; i < (int)R.n; i++) {
		R.w[i].idx = i;
		setup_worker(&R.w[i], cpus[i]);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fflush(stdout);
	for (i = 0; i < (int)R.n; i++) {
		err = pthread_create(&R.w[i].th, NULL, worker_fn, &R.w[i]);
		if (err) {
			on_signal(0);
			R.aborted = 0;
			while (--i >= 0)
				pthread_join(R.w[i].th, NULL);
			refuse(ENOMEM, "cannot create thread: %s", strerror(err));
		}
	}
	for (i = 0; i < (int)R.n; i++)
		pthread_join(R.w[i].th, NULL);
	for (i = 0; i < (int)R.n; i++) {
		const struct worker *w = &R.w[i];

		if (w->pin_err > 0)
			refuse(EINVAL, "cannot pin thread %u to CPU %d: %s", w->idx, w->cpu,
			       strerror(w->pin_err));
		if (w->pin_err)
			refuse(EINVAL, "thread %u: pinned to CPU %d but runs on CPU %d", w->idx, w->cpu,
			       w->ran_on);
	}
	print_results();
	if (c->raw_samples)
		write_samples(c->raw_samples);
	printf("#state %s\n", R.aborted ? "error:aborted" : "done");
	return R.aborted ? 1 : 0;
}
