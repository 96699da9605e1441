/* SPDX-License-Identifier: GPL-2.0 */
/*
 * run.h - one run of pmemlab-run (run.c), as main.c sets it up and reads
 * its results: its parameters, facts, targets and workers.  Apart from
 * runner.h because its threads' types are the runner's alone (the library
 * builds runner.h's files without them).
 */
#ifndef PMEMLAB_RUNNER_RUN_H
#define PMEMLAB_RUNNER_RUN_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include "runner.h"

struct plu_run;
struct plu_chain;

struct plu_worker {
	struct pl_thread t;
	struct plu_run *run;
	bool chase;
	struct plu_chain *chain;	/* op chase: its chain and the words it overwrote (chains.c) */
	int pin_err;			/* errno of a failed pinning, or -1: ran elsewhere */
	int ran_on;			/* sched_getcpu() after pinning */
	pthread_t th;
};

struct plu_run {
	struct pl_params c;
	struct pl_facts f;
	struct plu_target t;
	struct plu_target lt;		/* load_target's: the load threads' memory (lt.addr NULL: none) */
	unsigned int n, width;
	u64 tsc_khz;
	int stop, probe_stop;
	atomic_uint arrived, loaders;
	_Atomic u64 go_tsc;
	int aborted;
	bool keep_chains;		/* --serve: a chase's chain stays for the next run (chains.c) */
	u64 run_tsc, done_tsc;		/* the run asked for, its threads joined (setup, teardown) */
	struct pl_ceil_cache *ceil;	/* --serve: the ceilings of earlier runs (core/ceil.c), else NULL */
	u64 ceil_slow;			/* PMEMLAB_RUN_CEILING_SLOWDOWN (main.c): 1, or a starved ceiling */
	struct plu_worker w[PL_MAX_THREADS];
};

/* the facts the validator judges a run against: the target t, the CPUs allowed, this CPU */
void plu_facts(struct pl_facts *f, const struct plu_target *t, const struct opts *o,
	       const cpu_set_t *allowed, u32 features, u64 tsc_khz);
/*
 * The run judged and planned (r->c, r->f, r->n, r->width, the targets
 * mapped): its CPUs, its workers, their threads started, pinned and
 * joined; SIGINT and SIGTERM stop it (r->aborted).  load: the load
 * threads (1..n-1) run on r->lt.  A refusal exits (error.c).
 */
void plu_run(struct plu_run *r, const cpu_set_t *allowed, bool load);

/*
 * chains.c: the chains of op chase.  plu_chains_settle, before the
 * workers start: each kept chain taken by the worker that would lay it
 * (its t.chain_kept), or restored when a worker of the run meets its
 * lines; a chain for every other chase worker.  plu_chain_lay, by the
 * worker: lay its chain (a kept one is there).  plu_chain_leave, by the
 * worker at its end: keep the chain (keep_chains, laid whole) or restore
 * it.  plu_chains_restore: every kept chain's words written back (at the
 * end of --serve, and at exit).
 */
void plu_chains_settle(struct plu_run *r);
void plu_chain_lay(struct plu_worker *w);
void plu_chain_leave(struct plu_worker *w);
void plu_chains_restore(void);

#endif
