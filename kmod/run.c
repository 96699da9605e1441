// SPDX-License-Identifier: GPL-2.0
/*
 * run.c - validating a run, starting it, and the threads that execute it.
 *
 * One controller kthread per run creates one worker kthread per thread
 * (kthread_create_on_node + kthread_bind), turns prefetchers off if asked,
 * wakes the workers, waits, stops them, restores the prefetchers and
 * publishes the results.  Workers meet at a barrier, start at one common
 * TSC value and measure in IRQ-off segments of segment_ms milliseconds:
 *	dax_read_lock + dax_alive -> local_irq_save -> kernel_fpu_begin ->
 *	timed loop -> kernel_fpu_end -> local_irq_restore -> dax_read_unlock
 *	-> cond_resched
 * Nothing inside a segment sleeps.  Time between segments is excluded from
 * the figures and reported (segments, gap_ticks).
 */
#define pr_fmt(fmt) "pmemlab: " fmt

#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/topology.h>
#include <linux/irqflags.h>
#include <linux/overflow.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/percpu.h>
#include <asm/fpu/api.h>
#include <asm/tsc.h>
#include "pmemlab.h"

static const unsigned int pl_widths[PL_NWIDTH] = { 8, 16, 32, 64 };

const char *pl_state_name(int state)
{
	switch (state) {
	case PL_RUNNING:
		return "running";
	case PL_DONE:
		return "done";
	case PL_ERROR:
		return "error";
	default:
		return "idle";
	}
}

/* ---- validation ---- */
static const char *pl_missing_name(u32 miss)
{
	int f;

	for (f = 0; f < PL_F_NR; f++)
		if (miss & (1u << f))
			return pl_feature_names[f];
	return "?";
}

static int pl_check_op_width(int op, unsigned int width)
{
	u32 miss = pl_op_missing(op, width, pl.features);

	if (miss & PL_F_NONE)
		return pl_fail(-EOPNOTSUPP, "op %s has no %u-byte instruction",
			       pl_ops[op].name, width);
	if (miss)
		return pl_fail(-EOPNOTSUPP,
			       "op %s at width %u (%s) needs %s, which this CPU lacks",
			       pl_ops[op].name, width, pl_ops[op].insn[pl_width_idx(width)],
			       pl_missing_name(miss));
	return 0;
}

static bool pl_worker_writes(const struct pl_config *c, int op)
{
	return pl_ops[op].writes && c->read_pct < 100;
}

/* which ops the run uses (the load kernel too when read_pct mixes) */
static void pl_used_ops(const struct pl_config *c, unsigned int n, bool *used)
{
	unsigned int i;
	int op;

	memset(used, 0, PL_OP_NR * sizeof(*used));
	for (i = 0; i < n; i++) {
		op = c->ops[i % c->nops];
		used[op] = true;
		if (pl_ops[op].writes && c->read_pct)
			used[PL_OP_LOAD] = true;
	}
}

static int pl_resolve_width(const struct pl_config *c, unsigned int n, unsigned int *width)
{
	bool used[PL_OP_NR];
	int op, i, err;

	pl_used_ops(c, n, used);
	if (c->width) {
		if (c->access_size % c->width)
			return pl_fail(-EINVAL, "access_size %llu is not a multiple of width %llu",
				       c->access_size, c->width);
		for (op = 0; op < PL_OP_NR; op++) {
			if (!used[op])
				continue;
			err = pl_check_op_width(op, c->width);
			if (err)
				return err;
		}
		*width = c->width;
		return 0;
	}
	for (i = PL_NWIDTH - 1; i >= 0; i--) {
		if (pl_widths[i] > c->access_size)
			continue;
		for (op = 0; op < PL_OP_NR; op++)
			if (used[op] && pl_op_missing(op, pl_widths[i], pl.features))
				break;
		if (op == PL_OP_NR) {
			*width = pl_widths[i];
			return 0;
		}
	}
	return pl_fail(-EOPNOTSUPP,
		       "no instruction width <= access_size %llu runs every op of this run on this CPU",
		       c->access_size);
}

/*
 * default CPUs: distinct cores of the target's node, then other cores, then
 * siblings; returns how many were found, or -ENOMEM
 */
static int pl_default_cpus(int node, unsigned int n, unsigned int *out)
{
	cpumask_var_t chosen;
	unsigned int cpu, k = 0;
	int pass;

	if (!zalloc_cpumask_var(&chosen, GFP_KERNEL))
		return -ENOMEM;
	for (pass = 0; pass < 3 && k < n; pass++) {
		for_each_online_cpu(cpu) {
			if (k == n)
				break;
			if (cpumask_test_cpu(cpu, chosen))
				continue;
			if (pass == 0 && (node < 0 || cpu_to_node(cpu) != node))
				continue;
			if (pass < 2 &&
			    cpumask_intersects(topology_sibling_cpumask(cpu), chosen))
				continue;
			cpumask_set_cpu(cpu, chosen);
			out[k++] = cpu;
		}
	}
	free_cpumask_var(chosen);
	return k;
}

static int pl_pick_cpus(const struct pl_config *c, unsigned int n, unsigned int *out)
{
	unsigned int cpu, k = 0;
	int got;

	if (cpumask_empty(&c->cpus)) {
		got = pl_default_cpus(pl.t.node, n, out);
		if (got < 0)
			return pl_fail(got, "run: out of memory choosing CPUs");
		if (got < n)
			return pl_fail(-EINVAL, "threads %u: only %u CPUs online", n,
				       num_online_cpus());
		return 0;
	}
	for_each_cpu(cpu, &c->cpus) {
		if (k == n)
			break;
		if (!cpu_online(cpu))
			return pl_fail(-EINVAL, "cpus: CPU %u is offline", cpu);
		out[k++] = cpu;
	}
	if (k < n)
		return pl_fail(-EINVAL, "cpus lists %u CPUs, threads wants %u", k, n);
	return 0;
}

static int pl_check_run(const struct pl_config *c, unsigned int n, unsigned int width)
{
	bool writes = false;
	unsigned int i;
	u64 ws, lat_threads;
	int err;

	for (i = 0; i < n; i++)
		writes |= pl_worker_writes(c, c->ops[i % c->nops]);
	if (READ_ONCE(pl.t.dead))
		return pl_fail(-ENXIO, "the target is gone");
	if (c->window_offset % 4096 || c->window_offset >= pl.t.size)
		return pl_fail(-ERANGE, "window_offset %llu: not 4 KiB aligned or past the target (%llu bytes)",
			       c->window_offset, pl.t.size);
	ws = c->working_set ? c->working_set : pl.t.size - c->window_offset;
	if (ws > pl.t.size - c->window_offset)
		return pl_fail(-ERANGE, "window_offset + working_set = %llu exceeds the target (%llu bytes)",
			       c->window_offset + ws, pl.t.size);
	if (ws < c->access_size)
		return pl_fail(-ERANGE, "working_set %llu is smaller than access_size %llu",
			       ws, c->access_size);
	/* the overwrite guard and known bad ranges (guard.c) */
	err = pl_guard_run(writes, c->window_offset, ws);
	if (err)
		return err;
	if (c->fence != PL_FENCE_NONE && c->fence_interval &&
	    c->fence_interval < c->access_size && c->access_size % c->fence_interval)
		return pl_fail(-EINVAL, "fence_interval %llu must divide access_size %llu",
			       c->fence_interval, c->access_size);
	if (c->probe && (n < 2 || c->mode != PL_MODE_BW))
		return pl_fail(-EINVAL, "probe needs mode=bandwidth and threads >= 2");
	if (c->cold && c->warm)
		return pl_fail(-EINVAL, "cold and warm exclude each other");
	if (c->placement == PL_PLACE_DIMM && c->pattern == PL_PAT_HOTSPOT)
		return pl_fail(-EINVAL, "pattern hotspot does not combine with placement per-dimm");
	if (c->placement == PL_PLACE_DIMM &&
	    c->window_offset % (c->interleave_ways * c->interleave_gran))
		return pl_fail(-EINVAL, "per-dimm: window_offset must be a multiple of interleave_ways * interleave_gran");
	if (c->dimms_per_thread > c->interleave_ways)
		return pl_fail(-EINVAL, "dimms_per_thread %llu exceeds interleave_ways %llu",
			       c->dimms_per_thread, c->interleave_ways);
	/*
	 * pl_delay() busy-waits with IRQs off after every access: keep it
	 * well inside one segment so that a segment never runs far over
	 * segment_ms (a large delay would hold IRQs off for seconds).
	 */
	if (c->delay_ticks && c->delay_ticks >= c->segment_ms * tsc_khz / 2)
		return pl_fail(-EINVAL,
			       "delay_ticks %llu: must be below half a segment (segment_ms %llu = %llu ticks)",
			       c->delay_ticks, c->segment_ms, c->segment_ms * tsc_khz);
	lat_threads = c->mode == PL_MODE_LAT ? n : c->probe ? 1 : 0;
	if (lat_threads * c->samples > PL_MAX_SAMPLE_BYTES / sizeof(u64))
		return pl_fail(-EINVAL, "samples: %llu x %llu threads exceeds %llu MiB",
			       c->samples, lat_threads, PL_MAX_SAMPLE_BYTES >> 20);
	return 0;
}

/* ---- one worker's region and generator (place.c, shared with the runner) ---- */
static int pl_setup_gen(struct pl_run *r, struct pl_worker *w)
{
	const struct pl_config *c = &r->c;
	struct pl_place in = {
		.target_size = pl.t.size,
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
		.idx = w->idx,
		.n = r->n,
	};
	struct pl_region reg;
	char why[PL_ERR_LEN];
	int err = pl_place_worker(&in, &reg, why, sizeof(why));

	if (err)
		return pl_fail(err, "%s", why);
	pl_gen_init(&w->e.gen, &reg.g);
	w->e.base = pl.t.kaddr + reg.base;
	return 0;
}

static int pl_setup_worker(struct pl_run *r, struct pl_worker *w, unsigned int cpu)
{
	const struct pl_config *c = &r->c;
	struct pl_eng *e = &w->e;
	unsigned int wi = pl_width_idx(r->width);
	int err;

	w->run = r;
	w->cpu = cpu;
	w->node = cpu_to_node(cpu);
	w->op = c->ops[w->idx % c->nops];
	w->probe = c->probe && w->idx == 0;
	err = pl_setup_gen(r, w);
	if (err)
		return err;
	e->access = c->access_size;
	e->mode = w->probe ? PL_MODE_LAT : c->mode;
	e->fence = c->fence;
	e->fence_interval = c->fence_interval;
	e->flush = c->flush;
	e->read_pct = pl_ops[w->op].writes ? c->read_pct : 0;
	e->op_reads = !pl_ops[w->op].writes;
	e->delay_ticks = c->delay_ticks;
	e->prep = c->cold ? PL_PREP_COLD : c->warm ? PL_PREP_WARM : PL_PREP_NONE;
	e->rdtscp = pl.features & PL_F_RDTSCP;
	e->wfn = pl_ops[w->op].fn[wi];
	e->rfn = pl_ops[PL_OP_LOAD].fn[wi];
	e->left = (c->count && !w->probe) ? c->count : ~0ULL;
	e->stop = w->probe ? &r->probe_stop : &r->stop;
	e->data = c->seed * 0x2545f4914f6cdd1dULL + w->idx;
	if (e->mode == PL_MODE_LAT) {
		e->hist.b = kvcalloc(PL_HIST_NB, sizeof(u64), GFP_KERNEL);
		if (!e->hist.b)
			return pl_fail(-ENOMEM, "run: out of memory for thread %u's histogram",
				       w->idx);
		if (c->samples) {
			e->samples = kvcalloc(c->samples, sizeof(u64), GFP_KERNEL);
			if (!e->samples)
				return pl_fail(-ENOMEM,
					       "run: out of memory for thread %u's %llu samples",
					       w->idx, c->samples);
			e->nsamples_max = c->samples;
		}
	}
	pl_hist_reset(&e->hist);
	return 0;
}

static void pl_run_free(struct pl_run *r)
{
	unsigned int i;

	if (!r)
		return;
	for (i = 0; i < r->n; i++) {
		kvfree(r->w[i].e.hist.b);
		kvfree(r->w[i].e.samples);
	}
	kvfree(r);
}

static int pl_run_build(struct pl_run **out)
{
	const struct pl_config *c = &pl.cfg;
	unsigned int n = c->threads, i, width, *cpus;
	struct pl_run *r;
	int err;

	err = pl_resolve_width(c, n, &width);
	if (err)
		return err;
	err = pl_check_run(c, n, width);
	if (err)
		return err;
	cpus = kcalloc(n, sizeof(*cpus), GFP_KERNEL);
	if (!cpus)
		return pl_fail(-ENOMEM, "run: out of memory");
	err = pl_pick_cpus(c, n, cpus);
	if (err)
		goto out_cpus;
	r = kvzalloc(struct_size(r, w, n), GFP_KERNEL);
	if (!r) {
		err = pl_fail(-ENOMEM, "run: out of memory for %u threads", n);
		goto out_cpus;
	}
	r->c = *c;
	r->n = n;
	r->width = width;
	r->seg_ticks = c->segment_ms * tsc_khz;
	atomic_set(&r->loaders, n - (c->probe ? 1 : 0));
	init_waitqueue_head(&r->wq);
	for (i = 0; i < n; i++) {
		r->w[i].idx = i;
		err = pl_setup_worker(r, &r->w[i], cpus[i]);
		if (err)
			break;
	}
	/* ensure the free path sees every worker that got buffers */
	if (err) {
		pl_run_free(r);
		goto out_cpus;
	}
	*out = r;
out_cpus:
	kfree(cpus);
	return err;
}

/* ---- workers ---- */
static void pl_stop_all(struct pl_run *r)
{
	WRITE_ONCE(r->stop, 1);
	WRITE_ONCE(r->probe_stop, 1);
}

/* all workers arrive, the last one sets a start time 1 ms ahead */
static u64 pl_barrier(struct pl_run *r)
{
	u64 go;

	if (atomic_inc_return(&r->arrived) == r->n)
		smp_store_release(&r->go_tsc, pl_rdtsc() + tsc_khz);
	while (!(go = smp_load_acquire(&r->go_tsc))) {
		if (READ_ONCE(r->stop))
			return 0;
		cond_resched();
		cpu_relax();
	}
	while (pl_rdtsc() < go)
		cpu_relax();
	return go;
}

/* one timed segment; false if the worker is not on its CPU (CPU hotplug) */
static bool pl_segment(struct pl_run *r, struct pl_worker *w, u64 end)
{
	struct pl_eng *e = &w->e;
	unsigned long flags;
	u64 t0, t1;

	local_irq_save(flags);
	/*
	 * A bound kthread whose CPU goes offline is moved to another CPU
	 * and would go on measuring there: stop instead.
	 */
	if (raw_smp_processor_id() != w->cpu) {
		local_irq_restore(flags);
		return false;
	}
	kernel_fpu_begin();
	t0 = pl_rdtsc();
	if (e->mode == PL_MODE_LAT)
		pl_eng_lat(e, min(t0 + r->seg_ticks, end));
	else
		pl_eng_bw(e, min(t0 + r->seg_ticks, end));
	t1 = pl_rdtsc();
	kernel_fpu_end();
	local_irq_restore(flags);

	e->st.ticks += t1 - t0;
	if (w->segments++)
		w->gap_ticks += t0 - w->last_tsc;
	else
		w->first_tsc = t0;
	w->last_tsc = t1;
	return true;
}

static void pl_worker_loop(struct pl_run *r, struct pl_worker *w, u64 go)
{
	struct pl_eng *e = &w->e;
	u64 end = r->c.count ? ~0ULL : go + r->c.duration_ms * tsc_khz;
	int id;

	while (!READ_ONCE(*e->stop) && e->left && pl_rdtsc() < end) {
		id = pl_target_enter(&pl.t);
		if (id < 0) {
			WRITE_ONCE(r->dead, 1);
			pl_stop_all(r);
			break;
		}
		if (!pl_segment(r, w, end)) {
			pl_target_leave(&pl.t, id);
			WRITE_ONCE(r->cpu_lost, w->cpu + 1);
			pl_stop_all(r);
			break;
		}
		pl_target_leave(&pl.t, id);
		cond_resched();
	}
	/* ran to its end (count or duration), not stopped early */
	w->complete = !e->left || pl_rdtsc() >= end;
}

static void pl_park(void)
{
	while (!kthread_should_stop()) {
		set_current_state(TASK_IDLE);
		if (!kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
	}
}

static int pl_worker_fn(void *arg)
{
	struct pl_worker *w = arg;
	struct pl_run *r = w->run;
	unsigned long flags;
	u64 go;

	if (w->e.mode == PL_MODE_LAT) {
		local_irq_save(flags);
		w->e.overhead = pl_eng_calibrate(w->e.rdtscp);
		local_irq_restore(flags);
	}
	go = pl_barrier(r);
	if (go)
		pl_worker_loop(r, w, go);
	if (!w->probe && atomic_dec_and_test(&r->loaders))
		WRITE_ONCE(r->probe_stop, 1);
	atomic_inc(&r->finished);
	wake_up(&r->wq);
	pl_park();
	return 0;
}

/*
 * ---- prefetchers (Intel MSR 0x1A4), from the controller with IRQs on ----
 * The value to restore is kept per CPU.  SMT siblings share the register,
 * so a CPU whose sibling already turned the prefetchers off takes the
 * sibling's saved value instead of reading back "off".  Changes and
 * restores run under cpus_read_lock(); a CPU that goes offline in between
 * gets its value back from the hotplug callback, on that CPU, before it
 * goes (pl_cpu_offline), so no CPU comes back with its prefetchers off.
 */
struct pl_msr {
	u64 saved;
	bool changed;
};

static DEFINE_PER_CPU(struct pl_msr, pl_msr);
static int pl_cpuhp_state = -1;

static bool pl_sibling_saved(unsigned int cpu, u64 *v)
{
	unsigned int s;

	for_each_cpu(s, topology_sibling_cpumask(cpu)) {
		if (s != cpu && per_cpu_ptr(&pl_msr, s)->changed) {
			*v = per_cpu_ptr(&pl_msr, s)->saved;
			return true;
		}
	}
	return false;
}

static int pl_prefetch_off(struct pl_run *r)
{
	struct pl_msr *m;
	unsigned int i, cpu;
	int err = 0;
	u64 v;

	cpus_read_lock();
	for (i = 0; i < r->n && !err; i++) {
		cpu = r->w[i].cpu;
		m = per_cpu_ptr(&pl_msr, cpu);
		if (m->changed)
			continue;
		if (!cpu_online(cpu)) {
			pr_err("cannot turn prefetchers off on CPU %u: offline\n", cpu);
			err = -ENXIO;
			break;
		}
		if (!pl_sibling_saved(cpu, &v))
			err = rdmsrq_safe_on_cpu(cpu, PL_MSR_PREFETCH, &v);
		if (!err)
			err = wrmsrq_safe_on_cpu(cpu, PL_MSR_PREFETCH, v | PL_MSR_PREFETCH_OFF);
		if (err) {
			pr_err("cannot turn prefetchers off on CPU %u: %d\n", cpu, err);
			break;
		}
		m->saved = v;
		m->changed = true;
	}
	cpus_read_unlock();
	return err;
}

static void pl_prefetch_restore(struct pl_run *r)
{
	struct pl_msr *m;
	unsigned int i, cpu;

	cpus_read_lock();
	for (i = 0; i < r->n; i++) {
		cpu = r->w[i].cpu;
		m = per_cpu_ptr(&pl_msr, cpu);
		if (!m->changed)
			continue;
		if (wrmsrq_safe_on_cpu(cpu, PL_MSR_PREFETCH, m->saved))
			pr_err("cannot restore MSR 0x1a4 on CPU %u\n", cpu);
		m->changed = false;
	}
	cpus_read_unlock();
}

/* CPU hotplug teardown: runs on @cpu, still online, hotplug lock held */
static int pl_cpu_offline(unsigned int cpu)
{
	struct pl_msr *m = per_cpu_ptr(&pl_msr, cpu);

	if (m->changed) {
		if (wrmsrq_safe_on_cpu(cpu, PL_MSR_PREFETCH, m->saved))
			pr_err("cannot restore MSR 0x1a4 on CPU %u going offline\n", cpu);
		else
			pr_info("CPU %u going offline: prefetchers restored\n", cpu);
		m->changed = false;
	}
	return 0;
}

int pl_prefetch_init(void)
{
	int st;

	if (!pl.prefetch_ok)
		return 0;
	st = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "pmemlab:prefetch",
				       NULL, pl_cpu_offline);
	if (st < 0)
		return st;
	pl_cpuhp_state = st;
	return 0;
}

void pl_prefetch_exit(void)
{
	if (pl_cpuhp_state >= 0)
		cpuhp_remove_state_nocalls(pl_cpuhp_state);
	pl_cpuhp_state = -1;
}

/* ---- controller ---- */
static int pl_create_workers(struct pl_run *r)
{
	struct pl_worker *w;
	unsigned int i;

	for (i = 0; i < r->n; i++) {
		w = &r->w[i];
		w->task = kthread_create_on_node(pl_worker_fn, w, cpu_to_node(w->cpu),
						 "pmemlab/%u", w->cpu);
		if (IS_ERR(w->task)) {
			int err = PTR_ERR(w->task);

			w->task = NULL;
			return err;
		}
		kthread_bind(w->task, w->cpu);
	}
	return 0;
}

/* every loading thread ran to its end: an abort that came later changed nothing */
static bool pl_run_complete(const struct pl_run *r)
{
	unsigned int i;

	for (i = 0; i < r->n; i++)
		if (!r->w[i].probe && !r->w[i].complete)
			return false;
	return true;
}

static void pl_publish(struct pl_run *r, bool unloading)
{
	int err;

	mutex_lock(&pl.lock);
	err = pl_results_build(r);
	pl.state = PL_ERROR;
	if (r->err)
		scnprintf(pl.reason, sizeof(pl.reason), "setup failed (%d)", r->err);
	else if (r->dead)
		strscpy(pl.reason, "target-gone", sizeof(pl.reason));
	else if (r->cpu_lost)
		strscpy(pl.reason, "cpu-offline", sizeof(pl.reason));
	else if (r->aborted && !pl_run_complete(r))
		strscpy(pl.reason, "aborted", sizeof(pl.reason));
	else if (unloading)
		strscpy(pl.reason, "unloaded", sizeof(pl.reason));
	else if (err)
		scnprintf(pl.reason, sizeof(pl.reason), "results (%d)", err);
	else
		pl.state = PL_DONE;
	if (pl.state == PL_ERROR && r->cpu_lost)
		pl_fail(0, "run %llu: cpu-offline (CPU %d went offline under its thread)",
			pl.run_id, r->cpu_lost - 1);
	else if (pl.state == PL_ERROR)
		pl_fail(0, "run %llu: %s", pl.run_id, pl.reason);
	mutex_unlock(&pl.lock);
}

static int pl_ctl_fn(void *arg)
{
	struct pl_run *r = arg;
	bool unloading;
	unsigned int i;

	r->err = pl_create_workers(r);
	if (!r->err && r->c.prefetch)
		r->err = pl_prefetch_off(r);
	if (r->err) {
		/* never woken: kthread_stop() below runs nothing of them */
		pl_stop_all(r);
	} else {
		for (i = 0; i < r->n; i++)
			wake_up_process(r->w[i].task);
		wait_event_idle(r->wq, atomic_read(&r->finished) == r->n ||
				       kthread_should_stop());
	}
	unloading = kthread_should_stop();
	if (unloading)
		pl_stop_all(r);
	for (i = 0; i < r->n; i++)
		if (r->w[i].task)
			kthread_stop(r->w[i].task);
	pl_prefetch_restore(r);
	pl_publish(r, unloading);
	pl_park();
	return 0;
}

/* stop the previous run's controller (parked, or running on rmmod) and free it */
static void pl_reap_locked(void)
{
	if (pl.ctl) {
		kthread_stop(pl.ctl);
		pl.ctl = NULL;
	}
	pl_run_free(pl.run);
	pl.run = NULL;
}

int pl_run_start(void)
{
	struct task_struct *ctl;
	struct pl_run *r;
	int err;

	if (pl.state == PL_RUNNING)
		return pl_fail(-EBUSY, "run: a run is active");
	err = pl_run_build(&r);
	if (err)
		return err;
	pl_reap_locked();
	pl_results_free();
	ctl = kthread_create(pl_ctl_fn, r, "pmemlab-ctl");
	if (IS_ERR(ctl)) {
		pl_run_free(r);
		return pl_fail(PTR_ERR(ctl), "run: cannot create the controller thread");
	}
	pl.run = r;
	pl.ctl = ctl;
	pl.run_id++;
	pl.state = PL_RUNNING;
	pl.reason[0] = '\0';
	wake_up_process(ctl);
	return 0;
}

void pl_run_abort(void)
{
	if (pl.state != PL_RUNNING || !pl.run)
		return;
	WRITE_ONCE(pl.run->aborted, 1);
	pl_stop_all(pl.run);
}

/* module exit: stop a run in flight, then free everything */
void pl_run_reap(void)
{
	struct task_struct *ctl;

	mutex_lock(&pl.lock);
	if (pl.run && pl.state == PL_RUNNING)
		pl_stop_all(pl.run);
	ctl = pl.ctl;
	pl.ctl = NULL;
	mutex_unlock(&pl.lock);
	if (ctl)
		kthread_stop(ctl);	/* the controller takes pl.lock to publish */
	mutex_lock(&pl.lock);
	pl_run_free(pl.run);
	pl.run = NULL;
	pl_results_free();
	mutex_unlock(&pl.lock);
}
