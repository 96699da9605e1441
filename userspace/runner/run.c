// SPDX-License-Identifier: GPL-2.0
/*
 * run.c - one run of pmemlab-run, as kmod/run.c is one of the module: the
 * facts a run is judged against, its CPUs, its workers set up by the core
 * (core/worker.c) with their buffers between guard pages, their threads
 * pinned, meeting at a barrier and timing segments until the count or the
 * duration is reached, then joined.  main.c parses, judges, maps and
 * prints around it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

/* the run SIGINT and SIGTERM stop (one run per process) */
static struct plu_run *signalled;

static void stop_all(struct plu_run *r)
{
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&r->probe_stop, 1, __ATOMIC_RELAXED);
}

static void on_signal(int sig)
{
	(void)sig;
	signalled->aborted = 1;
	stop_all(signalled);
}

/* one worker: the core's set-up (core/worker.c), its buffers, then its engine */
static void setup_worker(struct plu_run *r, struct plu_worker *w, const struct pl_setup *s,
			 unsigned int idx, int cpu)
{
	struct pl_eng_cfg *ec = &w->t.ec;
	char why[PL_WHY_LEN];
	int err = pl_thread_setup(&w->t, s, idx, cpu, why, sizeof(why));

	if (err)
		refuse(-err, "%s", why);
	w->t.node = numa_available() < 0 ? 0 : numa_node_of_cpu(cpu);
	w->chase = w->t.op == PL_OP_CHASE;
	/* every buffer the engine writes lies between guard pages (target.c) */
	if (ec->mode == PL_MODE_LAT) {
		ec->hist_buckets = plu_guarded_alloc(PL_HIST_NB * sizeof(u64));
		if (!ec->hist_buckets)
			refuse(ENOMEM, "no memory for the histogram");
		if (ec->nsamples_max) {
			ec->samples = plu_guarded_alloc(ec->nsamples_max * sizeof(u64));
			if (!ec->samples)
				refuse(ENOMEM, "no memory for %llu samples", ec->nsamples_max);
		}
	} else {
		/* the engine's ceiling buffer, first touched by the pinned thread (worker_fn) */
		ec->ceil_len = pl_eng_ceiling_len(ec);
		ec->ceil_buf = plu_guarded_alloc(ec->ceil_len);
		if (!ec->ceil_buf)
			refuse(ENOMEM, "no memory for the ceiling buffer");
	}
	err = pl_thread_engine(&w->t, why, sizeof(why));
	if (err)
		refuse(-err, "thread %u: %s", idx, why);
	/* a chase's chain and the words it overwrites: plu_chains_settle (chains.c) */
}

/* all workers arrive, the last one sets a start time 1 ms ahead; latency threads calibrate again */
static u64 barrier(struct plu_worker *w)
{
	struct plu_run *r = w->run;
	u64 go;

	if (atomic_fetch_add(&r->arrived, 1) + 1 == r->n)
		atomic_store(&r->go_tsc, pl_rdtsc() + r->tsc_khz);
	while (!(go = atomic_load(&r->go_tsc))) {
		if (__atomic_load_n(&r->stop, __ATOMIC_RELAXED))
			return 0;
		asm volatile("pause");
	}
	if (w->t.e.mode == PL_MODE_LAT) {
		while (pl_rdtsc() < pl_thread_recal_at(&w->t, go))
			asm volatile("pause");
		pl_thread_calibrate(&w->t);
	}
	while (pl_rdtsc() < go)
		asm volatile("pause");
	return go;
}

static void *worker_fn(void *arg)
{
	struct plu_worker *w = arg;
	struct plu_run *r = w->run;
	struct pl_eng *e = &w->t.e;
	cpu_set_t set;
	u64 go, t0, seg_end;

	CPU_ZERO(&set);
	CPU_SET(w->t.cpu, &set);
	/* a thread that cannot run where the result will say it ran stops the run */
	if (sched_setaffinity(0, sizeof(set), &set))
		w->pin_err = errno ? errno : EINVAL;
	else if ((w->ran_on = sched_getcpu()) != w->t.cpu)
		w->pin_err = -1;
	if (w->pin_err) {
		stop_all(r);
		goto out;
	}
	if (e->mode == PL_MODE_LAT) {
		pl_thread_calibrate(&w->t);
	} else {
		/* the loop on a cache-resident buffer: the engine's own ceiling (unless reused) */
		if (!w->t.ceil_reused) {
			memset(e->ceil_buf, 0x5a, w->t.ec.ceil_len);
			pl_eng_ceiling(e, PL_CEILING_MS * r->tsc_khz);
			e->ceil_ticks *= r->ceil_slow;
		}
		plu_guarded_free(e->ceil_buf, w->t.ec.ceil_len);
		e->ceil_buf = NULL;
		w->t.ec.ceil_buf = NULL;
	}
	/* the chain, laid by the pinned thread (its lines first touched on its node), or kept */
	if (w->chase)
		plu_chain_lay(w);
	go = barrier(w);
	if (!go)
		goto out;
	pl_thread_begin(&w->t, &r->c, go, r->tsc_khz);
	while (!__atomic_load_n(e->stop, __ATOMIC_RELAXED) && e->left && pl_thread_more(&w->t, pl_rdtsc())) {
		/* its end first: at the warm-up's end that resets the counts, outside [t0, t1) */
		seg_end = pl_thread_until(&w->t, pl_rdtsc());
		t0 = pl_rdtsc();
		pl_eng_run(e, seg_end);
		pl_thread_segment(&w->t, t0, pl_rdtsc());
	}
	pl_thread_end(&w->t, pl_rdtsc());
out:
	/* a chase leaves the target as it found it, or its chain is kept for the next run */
	if (w->chase)
		plu_chain_leave(w);
	if (!w->t.probe && atomic_fetch_sub(&r->loaders, 1) == 1)
		__atomic_store_n(&r->probe_stop, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* a CPU list file of sysfs into mask: the highest CPU + 1, 0 when unreadable */
static unsigned int read_cpulist(const char *path, u64 *mask)
{
	unsigned int top = 0;
	char buf[256];
	FILE *f = fopen(path, "r");

	if (f && fgets(buf, sizeof(buf), f) && !pl_cpus_parse(buf, strcspn(buf, "\n"), mask, &top))
		top = 0;
	if (f)
		fclose(f);
	return top;
}

static void siblings(int cpu, cpu_set_t *out)
{
	u64 mask[PL_CPU_WORDS] = { 0 };
	char path[128];
	unsigned int s;

	CPU_ZERO(out);
	CPU_SET(cpu, out);
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
	read_cpulist(path, mask);
	for (s = pl_cpu_next(mask, 0); s < CPU_SETSIZE; s = pl_cpu_next(mask, s + 1))
		CPU_SET(s, out);
}

/*
 * The listed CPUs (judged online, i.e. allowed, by the validator); else
 * distinct cores of the target's node, then other cores, then siblings.
 */
static void pick_cpus(const struct plu_run *r, unsigned int n, const cpu_set_t *allowed, int *out)
{
	cpu_set_t chosen, sib, and;
	unsigned int k = 0, cpu;
	int pass;

	for (cpu = pl_cpu_next(r->c.cpus, 0); cpu < PL_MAX_CPUS && k < n;
	     cpu = pl_cpu_next(r->c.cpus, cpu + 1))
		out[k++] = cpu;
	if (k)
		return;
	CPU_ZERO(&chosen);
	for (pass = 0; pass < 3 && k < n; pass++) {
		for (cpu = 0; cpu < CPU_SETSIZE && k < n; cpu++) {
			if (!CPU_ISSET(cpu, allowed) || CPU_ISSET(cpu, &chosen))
				continue;
			if (pass == 0 && (r->t.node < 0 || numa_available() < 0 ||
					  numa_node_of_cpu(cpu) != r->t.node))
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
	if (k < n)
		refuse(ERANGE, "threads: %u, but only %u CPUs are allowed", n, k);
}

/* ---- the facts the validator judges against ---- */
void plu_facts(struct pl_facts *f, const struct plu_target *t, const struct opts *o,
	       const cpu_set_t *allowed, u32 features, u64 tsc_khz)
{
	static u64 online[PL_CPU_WORDS], possible[PL_CPU_WORDS];
	unsigned int cpu;

	memset(f, 0, sizeof(*f));
	f->known = PL_FACT_TARGET | PL_FACT_CPU | PL_FACT_CPUS | PL_FACT_TSC | PL_FACT_PREFETCH |
		   PL_FACT_BACKEND | PL_FACT_FS;
	f->target_size = t->run_size;
	f->features = features;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, allowed))
			online[cpu / 64] |= 1ULL << (cpu % 64);
	f->online = online;
	f->online_bits = PL_MAX_CPUS;
	f->nr_online = CPU_COUNT(allowed);
	f->nr_possible = read_cpulist("/sys/devices/system/cpu/possible", possible) ?: CPU_SETSIZE;
	f->tsc_khz = tsc_khz;
	f->prefetch = false;
	f->user = true;
	f->fs_sig = t->fs_sig;
	f->allow_overwrite = o->allow_overwrite;
	f->known |= PL_FACT_LAYOUT;
	f->scattered = !strcmp(t->kind, "dram");
}

/* the run (run.h) */
void plu_run(struct plu_run *r, const cpu_set_t *allowed, bool load)
{
	struct pl_setup setup, lsetup;
	int cpus[PL_MAX_THREADS], i, err;
	struct sigaction sa;

	/*
	 * The stop is caught before the first buffer is mapped: a SIGTERM that
	 * comes while the workers are set up ends the run as aborted, not the
	 * process by the default action.
	 */
	signalled = r;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	pick_cpus(r, r->n, allowed, cpus);
	atomic_store(&r->loaders, r->n - (r->c.probe ? 1 : 0));
	setup = (struct pl_setup){ .p = &r->c, .f = &r->f, .target = r->t.addr,
				   .target_size = r->t.size, .n = r->n, .width = r->width,
				   .stop = &r->stop, .probe_stop = &r->probe_stop };
	/* with load_target, the load threads (1..n-1) run on its memory, on windows of its size */
	lsetup = setup;
	if (load) {
		lsetup.target = r->lt.addr;
		lsetup.target_size = r->lt.size;
	}
	for (i = 0; i < (int)r->n; i++) {
		r->w[i].run = r;
		setup_worker(r, &r->w[i], i ? &lsetup : &setup, i, cpus[i]);
	}
	/* the chains: kept ones taken or restored, the others' words saved (chains.c) */
	plu_chains_settle(r);
	if (r->ceil) {
		/* --serve: an earlier run's ceilings where the key is this run's (core/ceil.c) */
		struct pl_threads ts = { (char *)&r->w[0].t, sizeof(r->w[0]), r->n };

		pl_ceil_reuse(r->ceil, &ts, r->c.prefetch, 0);
	}
	fflush(stdout);
	for (i = 0; i < (int)r->n; i++) {
		err = pthread_create(&r->w[i].th, NULL, worker_fn, &r->w[i]);
		if (err) {
			stop_all(r);
			while (--i >= 0)
				pthread_join(r->w[i].th, NULL);
			refuse(ENOMEM, "cannot create thread: %s", strerror(err));
		}
	}
	for (i = 0; i < (int)r->n; i++)
		pthread_join(r->w[i].th, NULL);
	for (i = 0; i < (int)r->n; i++) {
		const struct plu_worker *w = &r->w[i];

		if (w->pin_err > 0)
			refuse(EINVAL, "cannot pin thread %u to CPU %d: %s", w->t.idx, w->t.cpu,
			       strerror(w->pin_err));
		if (w->pin_err)
			refuse(EINVAL, "thread %u: pinned to CPU %d but runs on CPU %d", w->t.idx,
			       w->t.cpu, w->ran_on);
	}
}
