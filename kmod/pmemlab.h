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
#include "pl_run.h"
#include "pl_tier.h"

#define PL_VERSION		"0.1.0"
#define PL_ERR_LEN		PL_WHY_LEN

enum pl_target_kind { PL_TARGET_FSDAX, PL_TARGET_DRAM };
enum pl_state { PL_IDLE, PL_RUNNING, PL_DONE, PL_ERROR };

struct pl_target {
	int kind;			/* enum pl_target_kind */
	char *kaddr;			/* kernel virtual address of byte 0 */
	u64 size;			/* bytes mapped and usable */
	int node;
	phys_addr_t phys;
	u64 page_size;			/* smallest page size of the mapping */
	const char *fs_sig;		/* signature found (core/sig.c), "none" */
	unsigned int nparts;		/* partitions of the disk (whole-disk target) */
	int dead;			/* set by the holder's mark_dead */
	/* fsdax */
	pl_bdev_t bdev;
	struct dax_device *dax;
	u64 origin;			/* byte of the disk at target byte 0 */
	/* dram */
	bool allocated;			/* kaddr is ours to kvfree() */
	struct pl_dram_place {
		struct pl_tier tier;	/* the nodes and weights asked for */
		u64 unit;		/* bytes of the pages placed: 4 KiB or 2 MiB */
		struct pl_tier_tally found;	/* where the pages are (bytes per node) */
		const char *how;	/* "node": one node, as the allocator gave; "module": placed here */
		struct page **moved;	/* pages put in place of the allocator's (freed after it) */
		unsigned long nmoved;
	} dram;
};

struct pl_run;

struct pl_worker {
	struct pl_thread t;		/* op, region, loop state, counts (core) */
	struct pl_run *run;
	struct task_struct *task;
	char *ceil_alloc;		/* the vmalloc area t.ec.ceil_buf lies at the end of */
	bool complete;			/* ran to its count or duration */
};

struct pl_run {
	struct pl_params c;
	unsigned int n;
	unsigned int width;
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
	char why[PL_ERR_LEN];		/* and why, where known */
	bool prefetch_lost;		/* a prefetcher write did not read back */
	struct pl_worker w[];
};

struct pl_global {
	struct mutex lock;		/* everything below */
	struct pl_params cfg;
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
		   const struct pl_tier *dram_nodes, bool dram_huge);
void pl_target_close(struct pl_target *t);
int pl_target_enter(struct pl_target *t);	/* -ENXIO when gone */
void pl_target_leave(struct pl_target *t, int id);

/* error.c: last_error and the kernel log line of a refusal (they assert pl.lock) */
int pl_fail(int err, const char *fmt, ...) __printf(2, 3);
int pl_fail_verdict(const struct pl_verdict *v);

/* guard.c: signatures and partitions probed, bad ranges, TSC (the overwrite rule: core/check.c) */
void pl_guard_probe(struct pl_target *t);	/* sets fs_sig and nparts */
int pl_guard_run(u64 start, u64 len);	/* known bad ranges; with pl.lock held */
void pl_guard_load_note(void);
extern const struct attribute_group pl_guard_group;

/* sysfs.c */
int pl_sysfs_init(void);
void pl_sysfs_exit(void);

/* run.c (pl_run_reap takes pl.lock; the others want it held) */
void pl_facts(struct pl_facts *f);
int pl_run_check(struct pl_plan *plan);
int pl_run_start(void);
void pl_run_abort(void);
void pl_run_reap(void);
const char *pl_state_name(int state);

/* prefetch.c: MSR 0x1A4, saved per CPU, restored on hotplug */
bool pl_prefetch_probe(void);
int pl_prefetch_init(void);
void pl_prefetch_exit(void);
int pl_prefetch_off(struct pl_run *r);		/* on the run's CPUs */
void pl_prefetch_restore(struct pl_run *r);

/* results.c */
int pl_results_build(struct pl_run *r);
void pl_results_free(void);

#endif /* PMEMLAB_H */
