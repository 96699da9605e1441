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
	int stop;			/* rmmod: an open in progress gives up (as on a fatal signal) */
	char why[PL_WHY_LEN];		/* why it could not be opened */
	const char *who;		/* the log's prefix for it: "" or "targets/add: cxl: " */
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
	} dram;
};

struct pl_run;

struct pl_worker {
	struct pl_thread t;		/* op, region, loop state, counts (core) */
	struct pl_run *run;
	struct pl_target *tgt;		/* the memory it runs on: its run's target or load target */
	struct task_struct *task;
	char *ceil_alloc;		/* the vmalloc area t.ec.ceil_buf lies at the end of */
	u64 *chase_save;		/* op chase: the words its chain overwrote (core/chase.c) */
	u64 chase_laid;			/* how far pl_chase_build got */
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
	u64 run_tsc, done_tsc;		/* `run` written, results built: setup and teardown (resultfmt.c) */
	u64 others;			/* CPUs other targets' runs held at the start (the ceiling's key) */
	struct pl_dev *dev;		/* whose run it is */
	struct pl_target *lt;		/* the load threads' target (load_target), or &dev->t */
	struct pl_worker w[];
};

/*
 * A target's load keys: the module parameters of insmod (modparams.c) or
 * the key=value fields of a targets/add line, as text, then parsed.
 */
struct pl_load {
	const char *spec;		/* /dev/pmemN[pM] or dram */
	u64 dram_size;
	struct pl_tier tier;		/* dram_node or dram_nodes/dram_weights */
	bool huge;			/* dram_pages=2m */
	bool strict;			/* dram_node_strict */
	bool allow_overwrite;
};

#define PL_NAME_LEN		(PL_TARGET_NAME_MAX + 1)	/* a named target's name, NUL included */
#define PL_MAX_NAMED		16

/*
 * One target and everything of it: the top level (insmod's target=, the
 * kobject /sys/kernel/pmemlab) or a named target (targets/<name>).  Its
 * attributes find it from their kobject (pl_dev_of).
 */
struct pl_dev {
	struct kobject kobj;
	struct mutex lock;		/* cfg, state, run, results, last_error */
	char name[PL_NAME_LEN];		/* "" for the top level */
	char *spec;			/* the `target` file */
	bool has_target;		/* false: a top level loaded without target= */
	struct pl_target t;
	bool allow_overwrite;
	struct pl_params cfg;
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
	/* under pl_mod.lock: what runs hold */
	struct list_head entry;		/* in pl_mod.named */
	bool active;			/* its run goes (set at start, cleared at publish) */
	bool gone;			/* being removed, or unloading: no new run (listed until destroyed) */
	bool opening;			/* targets/add opens it: the name taken, no directory yet */
	char who[PL_NAME_LEN + 16];	/* log prefix of its target: "" or "targets/add: cxl: " */
	cpumask_t busy;			/* the CPUs of its active run */
	u64 busy_prefetch;		/* and its prefetch setting (0 on, 1 off) */
	struct pl_dev *load;		/* the target its active run loads (load_target) */
	struct pl_dev *loaded_by;	/* the dev whose active run loads this one */
	/* the ceilings of its runs (core/ceil.c; under d->lock), valid while ceil_gen is pl_mod's */
	struct pl_ceil_cache *ceil;
	u64 ceil_gen;
	u64 params_gen;			/* changes with every parameter write taken (params_gen) */
	struct kernfs_node *state_kn;	/* its `state` file, held to notify pollers (sysfs.c) */
};

/* the module: its targets and what is common to them */
struct pl_module {
	struct mutex lock;		/* the list, and each dev's fields under it; before a dev's lock */
	struct pl_dev *top;		/* always there (without target=: no target in it) */
	struct list_head named;
	unsigned int nnamed;
	struct kobject *targets;	/* /sys/kernel/pmemlab/targets */
	bool closing;			/* rmmod: no new target */
	u32 features;
	bool prefetch_ok;
	u64 ceil_gen;			/* a change no ceiling key holds (prefetchers lost): caches clear */
};

/*
 * mod.c: the module's state, and a named target found by name (under
 * pl_mod.lock): one that is there, neither being added nor being removed
 */
extern struct pl_module pl_mod;
struct pl_dev *pl_dev_find(const char *name);
/* its `state` file held (at the directory's making) and notified at every change */
int pl_state_watch(struct pl_dev *d);
void pl_state_notify(struct pl_dev *d);

static inline struct pl_dev *pl_dev_of(struct kobject *k)
{
	return container_of(k, struct pl_dev, kobj);
}

/* the run's target named in reasons: "target cxl" or "the top-level target" */
const char *pl_dev_label(const struct pl_dev *d, char *buf, size_t len);

/* modparams.c: the module's parameters, all of them */
int pl_load_top(struct pl_load *l, char *why, size_t len);
const char *pl_load_targets(void);
bool pl_name_ok(const char *s);
int pl_load_line(struct pl_load *l, const char **name, char *line, char *why, size_t len);

/* target.c (the reason of a refused target: t->why, and the kernel log) */
int pl_target_open(struct pl_target *t, const struct pl_load *l);
void pl_target_close(struct pl_target *t);
int pl_target_enter(struct pl_target *t);	/* -ENXIO when gone */
void pl_target_leave(struct pl_target *t, int id);

/* error.c: last_error and the kernel log line of a refusal (they assert d->lock) */
int pl_fail(struct pl_dev *d, int err, const char *fmt, ...) __printf(3, 4);
int pl_fail_verdict(struct pl_dev *d, const struct pl_verdict *v);

/* safety.c: signatures and partitions probed, bad ranges (the overwrite rule: core/check.c) */
void pl_safety_probe(struct pl_target *t);	/* sets fs_sig and nparts */
int pl_safety_run(struct pl_dev *d, const struct pl_target *t, u64 start, u64 len);

/* tsc.c: the TSC's facts (flags of every result row), and the load's note when one is false */
bool pl_tsc_invariant(void);
bool pl_tsc_reliable(void);
void pl_tsc_load_note(void);

/* sysfs.c: the attribute groups of a dev and its kobject type */
extern const struct attribute_group *pl_dev_groups[];
extern const struct attribute_group *pl_bare_groups[];
extern struct kobj_type pl_dev_ktype;
void pl_sysfs_init(void);

/* dev.c: the top level, named targets made and removed (targets/add, targets/remove), teardown */
int pl_devs_init(void);
void pl_devs_exit(void);

/* run.c (pl_run_reap takes the locks; the others want d->lock held) */
void pl_facts(const struct pl_dev *d, struct pl_facts *f);
int pl_run_check(struct pl_dev *d, struct pl_plan *plan);
int pl_run_start(struct pl_dev *d, u64 run_tsc);
void pl_run_abort(struct pl_dev *d);
void pl_run_stop(struct pl_dev *d);
void pl_run_reap(struct pl_dev *d);
const char *pl_state_name(int state);

/* prefetch.c: MSR 0x1A4, saved per CPU, restored on hotplug */
bool pl_prefetch_probe(void);
int pl_prefetch_init(void);
void pl_prefetch_exit(void);
int pl_prefetch_off(struct pl_run *r);		/* on the run's CPUs */
void pl_prefetch_restore(struct pl_run *r);

/* results.c */
int pl_results_build(struct pl_dev *d, struct pl_run *r);
void pl_results_free(struct pl_dev *d);

#endif /* PMEMLAB_H */
