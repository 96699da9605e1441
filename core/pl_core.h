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

/* ---- CPU features an op x width may need (filled by the caller; features.def) ---- */
enum pl_feature_bit {
#define PL_FEAT(ID, name, X86, leaf, sub, reg, bit, xcr0)	PL_FB_##ID,
#include "features.def"
	PL_F_NR
};
enum {
#define PL_FEAT(ID, name, X86, leaf, sub, reg, bit, xcr0)	PL_F_##ID = 1u << PL_FB_##ID,
#include "features.def"
};
/* pseudo-feature: the op has no instruction of this width at all */
#define PL_F_NONE	(1u << 31)

extern const char *const pl_feature_names[PL_F_NR];

/* op flags (ops.def) */
#define PL_OPF_READS	(1u << 0)	/* the access reads memory */
#define PL_OPF_WRITES	(1u << 1)	/* the access writes memory (counted as a write) */
#define PL_OPF_DATA	(1u << 2)	/* stores the data register (non-zero, varying) */
#define PL_OPF_FLUSHES	(1u << 3)	/* flushes each line it stored */
#define PL_OPF_OWN	(1u << 5)	/* its loop is written out (pl_chase_loop), not generated */
#define PL_OPF_NT	(1u << 6)	/* non-temporal: its access bypasses the caches (movnt*) */

/* Ops, in the order of ops.def (both backends run all PL_OP_NR of them) */
enum pl_op {
#define PL_OP(ID, ident, name, flags, CEIL)	PL_OP_##ID,
#include "ops.def"
	PL_OP_NR
};

#define PL_NWIDTH	4		/* 8, 16, 32, 64 bytes */

/* each op's flags as a constant (the generated loops fold them; ops.c checks the rows) */
enum {
#define PL_OP(ID, ident, name, flags, CEIL)	PL_OPFL_##ID = (flags),
#include "ops.def"
};

/* instruction forms: the widths, with 16 bytes in two encodings */
enum pl_form {
	PL_FORM_8,
	PL_FORM_16sse,		/* legacy SSE encoding: CPUs without AVX */
	PL_FORM_16vex,		/* VEX encoding: wherever AVX exists */
	PL_FORM_32,
	PL_FORM_64,
	PL_NFORM
};

enum pl_fence { PL_FENCE_NONE, PL_FENCE_SFENCE, PL_FENCE_MFENCE };
enum pl_flush { PL_FLUSH_LINE, PL_FLUSH_ACCESS };
enum pl_pattern { PL_PAT_SEQ, PL_PAT_RAND, PL_PAT_STRIDE, PL_PAT_HOTSPOT };
enum pl_mode { PL_MODE_BW, PL_MODE_LAT };
enum pl_prep { PL_PREP_NONE, PL_PREP_COLD, PL_PREP_WARM };
/* op chase: what it writes in its lines (chase_write) */
enum pl_chase_write { PL_CW_NONE, PL_CW_RAW, PL_CW_STORE };

/*
 * Address families: how the generated loops walk a worker's region.
 * linear: seq, stride and hotspot (slot after slot, wrapping at the end of
 * a pass); rand: a uniform slot per access; dimm_*: the same over the
 * worker's own interleave chunks (placement per-dimm).
 */
enum pl_fam { PL_FAM_LINEAR, PL_FAM_RAND, PL_FAM_DIMM_LINEAR, PL_FAM_DIMM_RAND, PL_NFAM };

struct pl_op_desc {
	const char *name;
	u32 flags;		/* PL_OPF_* */
	int ceil_op;		/* the op whose loop measures the engine's ceiling */
	bool writes;		/* PL_OPF_WRITES (kept for the callers' checks) */
	bool flushes;
	/* the instruction each width runs on a CPU with every feature (docs) */
	const char *insn[PL_NWIDTH];
	/* features the least demanding form of each width needs (PL_F_NONE: no such width) */
	u32 needs[PL_NWIDTH];
};

extern const struct pl_op_desc pl_ops[PL_OP_NR];

static inline unsigned int pl_width_idx(unsigned int width)
{
	return width == 8 ? 0 : width == 16 ? 1 : width == 32 ? 2 : 3;
}

/* the form op x width runs with the feature mask, or -1 */
int pl_op_form(int op, unsigned int width, u32 features);
/* mnemonics of one unit of op x width on a CPU with these features ("mov+clwb"), or NULL */
const char *pl_op_insn(int op, unsigned int width, u32 features);
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

/*
 * ---- PRNG: a 128-bit multiplicative congruential generator (Lehmer),
 * its high 64 bits the output, seeded through splitmix64 ----
 * state = state * PL_MCG_MULT mod 2^128 (odd state: period 2^126)
 */
#define PL_MCG_MULT	0xda942042e4dd58b5ULL	/* method.md, Addresses */
struct pl_rng {
	u64 lo, hi;		/* the state, lo odd */
};

void pl_rng_seed(struct pl_rng *r, u64 seed, u64 stream);
/* the store data start of thread idx of a run seeded seed (its own stream: gen.c) */
u64 pl_data_seed(u64 seed, u64 idx);
u64 pl_rng_next(struct pl_rng *r);
/* uniform integer in [0, n), n > 0, without modulo bias (Lemire) */
u64 pl_rng_below(struct pl_rng *r, u64 n);

/*
 * Division by an invariant d without a divide instruction (Granlund and
 * Montgomery, "Division by invariant integers using multiplication", 1994,
 * figure 4.1): exact for every 64-bit n and 1 <= d < 2^63.
 */
struct pl_divc {
	u64 m;
	u8 sh1, sh2;
};

void pl_divc_init(struct pl_divc *c, u64 d);

static inline u64 pl_divc_div(const struct pl_divc *c, u64 n)
{
	u64 t = (u64)(((pl_u128)c->m * n) >> 64);

	return (t + ((n - t) >> c->sh1)) >> c->sh2;
}

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

/*
 * A generator's state: everything the inline families (walk.h) need per
 * access, derived once at set-up, so that no access divides.
 */
struct pl_gen {
	struct pl_gen_cfg c;
	int fam;		/* enum pl_fam */
	u64 nslots;		/* slots per pass */
	u64 pass;		/* current pass, 0..passes-1 */
	u64 pass_base;		/* pass * pass_offset */
	u64 left;		/* slots left in this pass */
	u64 off;		/* linear: offset of the next slot */
	struct pl_rng rng;	/* rand */
	u64 thresh;		/* rand: Lemire's rejection bound, -nslots % nslots */
	/* per-DIMM: the region offset is rbase + doff + within */
	u64 within;		/* dimm_linear: offset inside the current chunk */
	u64 doff;		/* DIMM of the current chunk x gran */
	u64 rbase;		/* interleave round of the current chunk x ways x gran */
	u64 chunk;		/* dimm_linear: chunk of the round, 0..dimms-1 */
	u64 chunk_left;		/* dimm_linear: slots left in the current chunk */
	u64 chunk_slots;	/* per-DIMM: slots a chunk holds, gran / step */
	u64 round_bytes;	/* ways x gran */
	u64 first_off;		/* first_dimm x gran */
	u64 pass_q, pass_rem;	/* dimm_rand: pass_base = pass_q * step + pass_rem */
	struct pl_divc spc_div;	/* dimm_rand: / slots per chunk (gran / step) */
	int spc_shift;		/* dimm_rand: log2 of the slots per chunk, or -1 */
	u64 spc_mask;		/* dimm_rand: slots per chunk - 1 (a power of two) */
	bool dimm_fast;		/* dimm_rand: spc a power of two and one DIMM a thread */
	u64 skip;		/* dimm_rand, fast: (ways - 1) x slots per chunk */
	u64 pass_add;		/* dimm_rand, fast: first_off + pass_rem */
	struct pl_divc dimm_div;/* per-DIMM: / dimms */
	struct pl_divc gran_div;/* per-DIMM, any family (pl_walk_any): / gran */
};

/*
 * Check a generator configuration: returns 0 and the largest byte offset
 * ever touched + 1 in *extent, or a negative value and a static reason.
 */
int pl_gen_check(const struct pl_gen_cfg *c, u64 *extent, const char **why);
void pl_gen_init(struct pl_gen *g, const struct pl_gen_cfg *c);
/* the next offset, out of line (tests, set-up); the loops inline walk.h */
u64 pl_gen_next(struct pl_gen *g);
/* slots per pass (pl_gen_init's nslots) */
u64 pl_gen_nslots(const struct pl_gen_cfg *c);
/* virtual (per-DIMM) offset -> region offset, by its definition (divisions) */
u64 pl_gen_map(const struct pl_gen_cfg *c, u64 v);
/* the family of a generator configuration */
int pl_gen_fam(const struct pl_gen_cfg *c);

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

/*
 * A sample is a bracket's ticks t less the thread's calibrated overhead
 * ov.  The buckets, min and max count max(0, t - ov) (a tick count); the
 * moments the signed difference t - ov, unclamped: a clamp at 0 would lift
 * the mean of near-zero samples (L1 hits) by the mean of the negative
 * differences it drops (docs/method.md).
 */
struct pl_hist {
	u64 n, min, max;
	pl_s128 sum;		/* of t - ov, signed */
	pl_u128 sumsq;		/* of (t - ov)^2 */
	u64 *b;			/* PL_HIST_NB counters, owned by the caller */
};

void pl_hist_reset(struct pl_hist *h);
void pl_hist_merge(struct pl_hist *dst, const struct pl_hist *src);
void pl_hist_bounds(unsigned int idx, u64 *lo, u64 *hi);
/* q in parts per million; value at the smallest bucket covering rank q */
u64 pl_hist_pct(const struct pl_hist *h, u32 q_ppm);
/* mean (signed: of the unclamped differences) and standard deviation, both times 1000 */
void pl_hist_moments(const struct pl_hist *h, s64 *mean_milli, u64 *sd_milli);

static inline unsigned int pl_hist_idx(u64 v)
{
	unsigned int k;

	if (v < PL_HIST_EXACT)
		return v;
	k = 63 - __builtin_clzll(v);	/* >= 8 */
	return PL_HIST_EXACT + (k - 8) * PL_HIST_SUB +
	       ((v >> (k - 7)) & (PL_HIST_SUB - 1));
}

/*
 * inline: the latency loops add every sample without a call.  t: the
 * bracket's ticks, ov: its overhead (0: t is the sample); returns the
 * sample clamped at 0, as the buckets count it (raw_samples keep it).
 */
static inline u64 pl_hist_add(struct pl_hist *h, u64 t, u64 ov)
{
	u64 v = t > ov ? t - ov : 0, m = t > ov ? v : ov - t;

	h->n++;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->sum += (pl_s128)t - (pl_s128)ov;
	h->sumsq += (pl_u128)m * m;
	h->b[pl_hist_idx(v)]++;
	return v;
}

/* ---- the timed loops (engine.c) ---- */

/* milliseconds each bandwidth thread measures the engine's ceiling (before the run) */
#define PL_CEILING_MS	2

/*
 * The most bytes a bandwidth loop issues between two reads of the clock: a
 * batch of short accesses (16384 / access_size of them), or one piece of a
 * longer access, which the loop splits (pl_bwl_*): a segment overruns its
 * end by at most this much memory traffic, whatever the access size.  A
 * latency sample is one access in one bracket and cannot be split: its
 * access is at most PL_LAT_MAX_ACCESS (check.c refuses more).
 */
#define PL_PIECE_BYTES		16384ULL
#define PL_LAT_MAX_ACCESS	(64ULL << 10)

struct pl_stats {
	u64 ops, bytes;
	u64 reads, writes;	/* accesses by kind */
	u64 ticks;		/* inside timed segments */
	u64 pieces;		/* steps of a split loop (pl_bwl_*): clock reads between pieces */
};

/* What a caller fills to set a worker's engine up (pl_eng_init). */
struct pl_eng_cfg {
	char *base;		/* first byte of the worker's region */
	u64 base_len;		/* bytes from base on that it may touch (pl_eng_init checks) */
	struct pl_gen_cfg gen;	/* its generator (pl_place_worker) */
	u64 copy_delta;		/* copy ops: source = destination + copy_delta */
	int op;			/* enum pl_op */
	unsigned int width;	/* 8, 16, 32, 64 */
	u32 features;		/* PL_F_* of the CPU */
	int mode;		/* enum pl_mode */
	u64 access;		/* bytes per access */
	int fence;		/* enum pl_fence (bandwidth mode) */
	u64 fence_interval;	/* 0: after each access */
	int flush;		/* enum pl_flush */
	u32 read_pct;		/* 0: only the op; writing ops: % of loads */
	u64 delay_ticks;	/* busy wait after each access */
	int prep;		/* enum pl_prep, latency mode */
	u64 count;		/* accesses to run, 0: unlimited */
	const int *stop;	/* polled once per batch: non-zero stops */
	u64 *hist_buckets;	/* PL_HIST_NB counters, latency mode (caller's) */
	u64 *samples;		/* the first nsamples_max raw samples (may be NULL) */
	u64 nsamples_max;
	u64 data_seed;		/* store data starts here (made odd, so never zero): pl_data_seed() */
	char *ceil_buf;		/* bandwidth mode: pl_eng_ceiling_len() bytes, 64-B aligned */
	u64 ceil_len;		/* its bytes (pl_eng_init checks the ceiling against them) */
	/* op chase (chase.c): hops per timed batch (a multiple of PL_CHASE_UNROLL), a random line per page */
	u64 chase_batch;
	bool chase_page;
	u64 chase_seed;		/* the chain's permutation: the run's seed, */
	u64 chase_stream;	/* and the worker's stream (its index) */
	int chase_write;	/* enum pl_chase_write */
};

struct pl_eng;
typedef void (*pl_loop_fn)(struct pl_eng *e, u64 until);

struct pl_eng {
	/* set up by pl_eng_init, constant during a run */
	char *base;
	u64 copy_delta;
	u64 access;
	int op, form, fam, mode;
	int loop_op;		/* whose loops run: op, or load for a writing op at read_pct 100 (bandwidth) */
	int fence;
	u64 fence_interval;
	int flush;
	u32 read_pct;
	u64 delay_ticks;
	u64 spins;		/* pl_spin's trips after each access: delay_ticks calibrated, 1 without */
	int prep;
	bool rdtscp, avx;
	bool plain;		/* no fence, mix or delay: a loop per family (else pl_bwf_*) */
	bool split;		/* access > PL_PIECE_BYTES: pl_bwl_*, in pieces across calls */
	u64 batch;		/* accesses between two reads of the clock (a delay: PL_DELAY_BATCH_TICKS) */
	pl_loop_fn loop;	/* selected once: the generated loop that runs */
	const char *loop_name;	/* its symbol */
	char insn[64];		/* the mnemonics it executes per unit (and the mix's load) */
	u64 overhead;		/* latency: timer overhead subtracted from each sample */
	u64 *samples;
	u64 nsamples_max;
	const int *stop;
	char *ceil_buf;
	/* state */
	struct pl_gen gen;
	struct pl_hist hist;
	struct pl_stats st;
	u64 left;		/* accesses left, ~0 = unlimited */
	u64 nsamples;
	u64 fence_acc;
	u32 rw_acc;
	u64 data;		/* the last store data (odd) */
	/* a split access in flight between two calls (pl_bwl_*): its cursor, bytes issued, address, kind */
	u64 part, part_bytes;
	char *part_p;
	bool part_rd;
	/* the engine's ceiling: bytes and ticks of the loop on a cache-resident buffer */
	u64 ceil_bytes, ceil_ticks;
	const char *ceil_loop;	/* the loop that measured it */
	u64 ceil_ops;		/* accesses the ceiling ran, its windows together */
	/* op chase: the chain (chase.c) and where the loop stands in it */
	u64 chase_batch;
	bool chase_page;
	u64 chase_seed, chase_stream;
	struct pl_rng chase_rng;	/* pl_chase_build's draws */
	char *chase_p;
	int chase_write;		/* enum pl_chase_write */
	u64 chase_wpos;			/* raw: lines of the round's write pass written */
	u64 chase_reads;		/* raw: hops left in the round's reads */
};

/* store data advances by this every access: even, so odd data stays odd (never zero) */
#define PL_DATA_INC	(2 * 0x9e3779b97f4a7c15ULL)

/*
 * Set e up from c: validates what the loops rely on (-EINVAL/-EOPNOTSUPP
 * and a reason in why): among it, that every access of the run stays in
 * [base, base + base_len) and every access of the ceiling in [ceil_buf,
 * ceil_buf + ceil_len); selects the loop.  Nothing is allocated.
 */
int pl_eng_init(struct pl_eng *e, const struct pl_eng_cfg *c, char *why, size_t len);
/* run until pl_rdtsc() >= until, e->left == 0 or *e->stop; IRQs may be off */
void pl_eng_run(struct pl_eng *e, u64 until);
/* latency threads: the median of an empty latency bracket into e->overhead */
void pl_eng_calibrate(struct pl_eng *e);
/* bytes of the cache-resident buffer the ceiling of a bandwidth thread runs on */
u64 pl_eng_ceiling_len(const struct pl_eng_cfg *c);
/* the ceiling's op, access and generator for e (what pl_eng_ceiling runs: core/ceil.c keys them) */
void pl_eng_ceiling_inputs(const struct pl_eng *e, int *cop, u64 *a, struct pl_gen_cfg *g);
/*
 * bandwidth threads: run the loop on e->ceil_buf for about ticks (SIMD allowed, IRQs may be
 * off; at most ticks + ticks / 8 + two batches, less at *e->stop)
 */
void pl_eng_ceiling(struct pl_eng *e, u64 ticks);
/*
 * ---- op chase (chase.c): one random cycle over the lines of a worker's
 * region, each line's first 8 bytes the address of the next ----
 * The line of slot k is at the slot's start (pl_gen_map of k * step), or,
 * with chase_page, at a line of the slot drawn from the seed.  A chase
 * leaves the target as it found it: pl_chase_build saves the first word of
 * each line in save[pl_chase_lines(e)] (the caller's buffer) before laying
 * the chain, pl_chase_restore writes back those of the lines below laid
 * (where the build stopped: a build cut short saved only those).  Both work in steps of at
 * most `budget` lines from *pos (0 at first), so that the module can
 * reschedule between them: each returns true when it is done.
 * pl_chase_loop (engine.c) runs hops in batches of chase_batch dependent
 * loads, one bracket per batch, and adds the batch's ticks / chase_batch
 * (rounded) to the histogram: a sample is a hop's mean latency in its batch.
 */
#define PL_CHASE_UNROLL		16	/* hops per unrolled step of the loop: chase_batch is a multiple */
u64 pl_chase_lines(const struct pl_eng *e);
char *pl_chase_line(const struct pl_eng *e, u64 k);
bool pl_chase_build(struct pl_eng *e, u64 *save, u64 *pos, u64 budget);
bool pl_chase_restore(struct pl_eng *e, const u64 *save, u64 laid, u64 *pos, u64 budget);

/* loop table lookups (tests, docs) */
const char *pl_eng_bw_name(int op, int form, int fam, bool plain);
const char *pl_eng_lat_name(int op, int form);
const char *pl_eng_bwl_name(int op, int form);

#endif /* PMEMLAB_CORE_H */
