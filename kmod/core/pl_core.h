/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pl_core.h - portable part of pmemlab: access kernels (ops.c), address
 * generators (gen.c), latency histogram (hist.c), the timed loops
 * (engine.c) and each worker's region (place.c).  No kernel header is
 * included here, only shim.h.
 */
#ifndef PMEMLAB_CORE_H
#define PMEMLAB_CORE_H

#include "shim.h"

#define PL_LINE		64

/* ---- CPU features an op x width may need (filled by the caller) ---- */
#define PL_F_SSE2	(1u << 0)
#define PL_F_SSE41	(1u << 1)
#define PL_F_AVX	(1u << 2)
#define PL_F_AVX2	(1u << 3)
#define PL_F_AVX512F	(1u << 4)
#define PL_F_CLFLUSH	(1u << 5)
#define PL_F_CLFLUSHOPT	(1u << 6)
#define PL_F_CLWB	(1u << 7)
#define PL_F_RDTSCP	(1u << 8)
#define PL_F_NR		9
/* pseudo-feature: the op has no instruction of this width at all */
#define PL_F_NONE	(1u << 31)

extern const char *const pl_feature_names[PL_F_NR];

enum pl_op {
	PL_OP_LOAD,
	PL_OP_NTLOAD,
	PL_OP_STORE,
	PL_OP_NTSTORE,
	PL_OP_STORE_CLWB,
	PL_OP_STORE_CLFLUSHOPT,
	PL_OP_STORE_CLFLUSH,
	PL_OP_NR
};

#define PL_NWIDTH	4	/* 8, 16, 32, 64 bytes */

enum pl_fence { PL_FENCE_NONE, PL_FENCE_SFENCE, PL_FENCE_MFENCE };
enum pl_flush { PL_FLUSH_LINE, PL_FLUSH_ACCESS };
enum pl_pattern { PL_PAT_SEQ, PL_PAT_RAND, PL_PAT_STRIDE, PL_PAT_HOTSPOT };
enum pl_mode { PL_MODE_BW, PL_MODE_LAT };
enum pl_prep { PL_PREP_NONE, PL_PREP_COLD, PL_PREP_WARM };

/*
 * An access kernel touches n bytes at p with one instruction width.
 * n is a multiple of 64, or a power of two between the width and 32.
 * v is the store data (non-zero); flush is enum pl_flush (flushing ops only).
 */
typedef void (*pl_kernel_fn)(char *p, u64 n, u64 v, int flush);

struct pl_op_desc {
	const char *name;
	bool writes;
	bool flushes;
	/* instruction each width emits, for documentation and sysfs */
	const char *insn[PL_NWIDTH];
	/* features needed per width (PL_F_NONE: no such instruction) */
	u32 needs[PL_NWIDTH];
	pl_kernel_fn fn[PL_NWIDTH];
};

extern const struct pl_op_desc pl_ops[PL_OP_NR];

static inline unsigned int pl_width_idx(unsigned int width)
{
	return width == 8 ? 0 : width == 16 ? 1 : width == 32 ? 2 : 3;
}

int pl_op_lookup(const char *name, size_t len);
/* 0 if op x width can run with the feature mask, else the missing features */
u32 pl_op_missing(enum pl_op op, unsigned int width, u32 features);

/*
 * 128-by-64-bit division with divq (the kernel has no __udivti3): two
 * steps, so the second divq never overflows.
 */
static inline pl_u128 pl_udiv128(pl_u128 x, u64 d)
{
	u64 hi = (u64)(x >> 64), lo = (u64)x, qhi = hi / d, r = hi % d, qlo;

	asm("divq %[d]" : "=a"(qlo), "+d"(r) : "a"(lo), [d] "rm"(d));
	return ((pl_u128)qhi << 64) | qlo;
}

/* a * b / d, for results that fit in 64 bits */
static inline u64 pl_muldiv(u64 a, u64 b, u64 d)
{
	return (u64)pl_udiv128((pl_u128)a * b, d);
}

/* ---- timestamps and fences (same asm in kernel and userspace) ---- */
static inline u64 pl_rdtsc(void)
{
	u32 lo, hi;

	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((u64)hi << 32) | lo;
}

/* serialising read: waits for earlier instructions, blocks later ones */
static inline u64 pl_rdtsc_serial(bool rdtscp)
{
	u32 lo, hi, aux;

	if (rdtscp)
		asm volatile("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux)
			     :: "memory");
	else
		asm volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)
			     :: "memory");
	return ((u64)hi << 32) | lo;
}

static inline void pl_mfence(void)
{
	asm volatile("mfence" ::: "memory");
}

static inline void pl_sfence(void)
{
	asm volatile("sfence" ::: "memory");
}

static inline void pl_fence(int fence)
{
	if (fence == PL_FENCE_SFENCE)
		pl_sfence();
	else if (fence == PL_FENCE_MFENCE)
		pl_mfence();
}

/*
 * Fences every fi bytes for accesses of access <= fi bytes: add the access
 * to *acc and say whether a fence is due; the remainder carries over, so
 * the fence rate is exactly one per fi bytes even when access does not
 * divide fi.
 */
static inline bool pl_fence_due(u64 *acc, u64 access, u64 fi)
{
	*acc += access;
	if (*acc < fi)
		return false;
	*acc -= fi;
	return true;
}

static inline void pl_clflush(const void *p)
{
	asm volatile("clflush (%0)" :: "r"(p) : "memory");
}

/* ---- PRNG: xoshiro256** seeded through splitmix64 ---- */
struct pl_rng {
	u64 s[4];
};

void pl_rng_seed(struct pl_rng *r, u64 seed, u64 stream);
u64 pl_rng_next(struct pl_rng *r);
/* uniform integer in [0, n), n > 0, without modulo bias (Lemire) */
u64 pl_rng_below(struct pl_rng *r, u64 n);

/* ---- address generator ---- */
struct pl_gen_cfg {
	int pattern;		/* enum pl_pattern */
	u64 access;		/* bytes per access */
	u64 step;		/* distance between slot starts */
	u64 span;		/* bytes the slots of one pass are laid in */
	u64 passes;		/* >= 1 */
	u64 pass_offset;	/* start of pass k = (k mod passes) * pass_offset */
	/* per-DIMM mapping (ways == 0: identity) */
	u64 ways, gran, dimms, first_dimm;
	u64 seed, stream;
};

struct pl_gen {
	struct pl_gen_cfg c;
	u64 nslots;		/* slots per pass */
	u64 slot;		/* next sequential slot */
	u64 pass;		/* current pass */
	u64 in_pass;		/* accesses issued in this pass (rand) */
	struct pl_rng rng;
};

/*
 * Check a generator configuration: returns 0 and the largest byte offset
 * ever touched + 1 in *extent, or a negative value and a static reason.
 */
int pl_gen_check(const struct pl_gen_cfg *c, u64 *extent, const char **why);
void pl_gen_init(struct pl_gen *g, const struct pl_gen_cfg *c);
u64 pl_gen_next(struct pl_gen *g);
/* virtual (per-DIMM) offset -> region offset */
u64 pl_gen_map(const struct pl_gen_cfg *c, u64 v);

/* ---- one worker's region (place.c) ---- */
struct pl_place {
	u64 target_size;	/* bytes of the mapped target */
	u64 window_offset, working_set;	/* working_set 0: to the end */
	u64 pattern;		/* enum pl_pattern */
	u64 access, stride, hotspot_size, passes, pass_offset, seed;
	u64 per_thread;		/* placement per-thread: disjoint slices */
	u64 ways, gran, dimms;	/* placement per-dimm (ways 0: not per-dimm) */
	u64 split;		/* copy: lower half destination, upper half source */
	u64 idx, n;		/* this worker, of n */
};

struct pl_region {
	struct pl_gen_cfg g;	/* the worker's generator */
	u64 base;		/* target offset the generator's offsets add to */
	u64 copy_delta;		/* split: source = destination + copy_delta */
};

/* distance between slot starts of a pattern */
u64 pl_place_step(u64 pattern, u64 access, u64 stride);
/*
 * Fill *out for worker in->idx: 0, or -EINVAL/-ERANGE and a reason in
 * why[len].  Every offset base + pl_gen_next() (+ copy_delta) lies in
 * [window_offset, window_offset + working_set).
 */
int pl_place_worker(const struct pl_place *in, struct pl_region *out, char *why, size_t len);

/* ---- log-linear histogram of tick values ---- */
#define PL_HIST_EXACT	256	/* values below are counted exactly */
#define PL_HIST_SUB	128	/* buckets per power of two above: <= 0.79% wide */
#define PL_HIST_NB	(PL_HIST_EXACT + (64 - 8) * PL_HIST_SUB)

struct pl_hist {
	u64 n, min, max;
	pl_u128 sum, sumsq;
	u64 *b;			/* PL_HIST_NB counters, owned by the caller */
};

void pl_hist_reset(struct pl_hist *h);
void pl_hist_add(struct pl_hist *h, u64 v);
void pl_hist_merge(struct pl_hist *dst, const struct pl_hist *src);
unsigned int pl_hist_idx(u64 v);
void pl_hist_bounds(unsigned int idx, u64 *lo, u64 *hi);
/* q in parts per million; value at the smallest bucket covering rank q */
u64 pl_hist_pct(const struct pl_hist *h, u32 q_ppm);
/* mean and standard deviation, both times 1000 */
void pl_hist_moments(const struct pl_hist *h, u64 *mean_milli, u64 *sd_milli);

/* ---- the timed loops ---- */
struct pl_stats {
	u64 ops, bytes;
	u64 reads, writes;	/* accesses by kind */
	u64 ticks;		/* inside timed segments */
};

struct pl_eng {
	/* configuration */
	char *base;		/* first byte of this worker's region */
	u64 access;
	int mode;		/* enum pl_mode */
	int fence;		/* enum pl_fence */
	u64 fence_interval;	/* 0: after each access */
	int flush;		/* enum pl_flush */
	u32 read_pct;		/* 0: only the worker's op */
	u64 delay_ticks;
	int prep;		/* enum pl_prep, latency mode */
	bool rdtscp;
	pl_kernel_fn wfn;	/* the worker's op */
	pl_kernel_fn rfn;	/* load kernel of the same width, for read_pct */
	bool op_reads;		/* the worker's op is a load */
	u64 overhead;		/* timer overhead subtracted from each sample */
	u64 *samples;		/* raw samples (may be NULL) */
	u64 nsamples_max;
	/* state */
	struct pl_gen gen;
	struct pl_hist hist;
	struct pl_stats st;
	u64 left;		/* accesses left, ~0 = unlimited */
	u64 nsamples;
	u64 fence_acc;
	u32 rw_acc;
	u64 data;
	const int *stop;	/* polled: non-zero stops the loop */
};

/* run until pl_rdtsc() >= until, e->left == 0 or *e->stop; IRQs may be off */
void pl_eng_bw(struct pl_eng *e, u64 until);
void pl_eng_lat(struct pl_eng *e, u64 until);
/* median timer overhead of an empty latency bracket */
u64 pl_eng_calibrate(bool rdtscp);

#endif /* PMEMLAB_CORE_H */
