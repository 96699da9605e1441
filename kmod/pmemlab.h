/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pmemlab.h - kernel side of pmemlab: target, configuration, runs, sysfs.
 */
#ifndef PMEMLAB_H
#define PMEMLAB_H

#include <linux/types.h>
#include <linux/mutex.h>
#include <linux/cpumask.h>
#include <linux/wait.h>
#include <linux/atomic.h>
#include <linux/kobject.h>
#include "compat.h"
#include "pl_core.h"

#define PL_VERSION		"0.1.0"
#define PL_MAX_THREADS		256
#define PL_MAX_ACCESS		(64ULL << 20)
#define PL_MAX_SAMPLES		(1ULL << 20)
#define PL_MAX_SAMPLE_BYTES	(256ULL << 20)	/* all threads together */
#define PL_ERR_LEN		256
#define PL_MSR_PREFETCH		0x1a4
#define PL_MSR_PREFETCH_OFF	0xfULL

enum pl_kind { PL_TARGET_FSDAX, PL_TARGET_DRAM };
enum pl_state { PL_IDLE, PL_RUNNING, PL_DONE, PL_ERROR };
enum pl_placement { PL_PLACE_GLOBAL, PL_PLACE_THREAD, PL_PLACE_DIMM };

struct pl_target {
	int kind;			/* enum pl_kind */
	char *kaddr;			/* kernel virtual address of byte 0 */
	u64 size;			/* bytes mapped and usable */
	int node;
	phys_addr_t phys;
	u64 page_size;			/* smallest page size of the mapping */
	const char *fs_sig;		/* signature found (kmod/core/sig.c), "none" */
	unsigned int nparts;		/* partitions of the disk (whole-disk target) */
	int dead;			/* set by the holder's mark_dead */
	/* fsdax */
	pl_bdev_t bdev;
	struct dax_device *dax;
	u64 origin;			/* byte of the disk at target byte 0 */
	/* dram */
	bool allocated;			/* kaddr is ours to kvfree() */
};

/* One run's parameters, every one a u64 so that a table can parse them. */
struct pl_config {
	u64 mode, read_pct, width, access_size, stride, window_offset, working_set;
	u64 pattern, hotspot_size, passes, pass_offset;
	u64 fence, fence_interval, flush;
	u64 threads, placement, interleave_ways, interleave_gran, dimms_per_thread;
	u64 duration_ms, count, delay_ticks, probe, seed, prefetch, cold, warm;
	u64 samples, segment_ms;
	u8 ops[PL_MAX_THREADS];
	u64 nops;
	struct cpumask cpus;		/* empty: default placement */
};

struct pl_run;

struct pl_worker {
	struct pl_run *run;
	unsigned int idx, cpu;
	int node, op;
	bool probe;
	struct task_struct *task;
	struct pl_eng e;
	u64 segments, gap_ticks, first_tsc, last_tsc;
	bool complete;			/* ran to its count or duration */
};

struct pl_run {
	struct pl_config c;
	unsigned int n;
	unsigned int width;
	u64 seg_ticks;
	int stop;			/* abort, rmmod, target gone */
	int probe_stop;			/* loaders are done */
	atomic_t arrived;
	u64 go_tsc;			/* common start, set by the last arrival */
	atomic_t finished;
	atomic_t loaders;
	wait_queue_head_t wq;
	int dead;			/* a worker saw the target die */
	int cpu_lost;			/* CPU + 1 a worker found itself off */
	int aborted;			/* abort was written */
	int err;			/* set up failed (errno) */
	struct pl_worker w[];
};

#define PL_NPCT			5	/* p50 p90 p99 p999 p9999 */

/* the scalars of one result row (the `all` row is kept for results/) */
struct pl_scalars {
	u64 ops, reads, writes, bytes, ticks, ns, bw_milli, segments, gap_ticks;
	u64 irqoff_milli;
	bool lat;			/* the lat_* fields below are set */
	u64 lat_overhead, lat_n, lat_min, lat_mean_milli, lat_sd_milli;
	u64 lat_p[PL_NPCT], lat_max;
};

struct pl_global {
	struct mutex lock;		/* everything below */
	struct pl_config cfg;
	struct pl_target t;
	int state;			/* enum pl_state */
	char reason[PL_ERR_LEN];	/* of state error */
	char last_error[PL_ERR_LEN];
	struct pl_run *run;
	struct task_struct *ctl;
	u64 run_id;
	char *result, *histo;
	size_t result_len, histo_len;
	u64 *samples;
	size_t samples_len;
	struct pl_scalars agg;		/* of the `all` row */
	bool agg_valid;
	u32 features;
	bool prefetch_ok;
	bool allow_overwrite;
	struct kobject *kobj;
};

extern struct pl_global pl;
extern char *target;		/* module parameter */

/* target.c */
int pl_target_open(struct pl_target *t, const char *spec, u64 dram_size,
		   int dram_node, bool dram_huge);
void pl_target_close(struct pl_target *t);
int pl_target_enter(struct pl_target *t);	/* -ENXIO when gone */
void pl_target_leave(struct pl_target *t, int id);

/* guard.c: signatures, partitions, bad ranges, TSC */
void pl_guard_probe(struct pl_target *t);	/* sets fs_sig and nparts */
int pl_guard_run(bool writes, u64 start, u64 len);	/* with pl.lock held */
void pl_guard_load_note(void);
extern const struct attribute_group pl_guard_group;

/* params.c */
int pl_sysfs_init(void);
void pl_sysfs_exit(void);
void pl_config_defaults(struct pl_config *c);
int pl_fail(int err, const char *fmt, ...) __printf(2, 3);

/* run.c */
int pl_run_start(void);		/* with pl.lock held */
void pl_run_abort(void);	/* with pl.lock held */
void pl_run_reap(void);		/* with pl.lock NOT held */
const char *pl_state_name(int state);
int pl_prefetch_init(void);	/* CPU hotplug callback restoring MSR 0x1A4 */
void pl_prefetch_exit(void);

/* results.c */
int pl_results_build(struct pl_run *r);
void pl_results_free(void);

#endif /* PMEMLAB_H */
