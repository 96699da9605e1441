// SPDX-License-Identifier: GPL-2.0
/*
 * pmemlab-run - the userspace backend of pmemlab (docs/userspace.md): the
 * module's own core (kmod/core/: parameters and validator, worker set-up,
 * access kernels, timed loops, result text) on memory a user can map
 * (target.c), in threads pinned to the CPUs their result lines name.
 *
 *	pmemlab-run target=dram[:NODE] [dram_size=256M] [dram_pages=4k|2m|hugetlb] KEY=VALUE...
 *	pmemlab-run target=dram dram_nodes=0,1 dram_weights=3,1 [dram_node_strict=0] ...
 *						    pages over nodes in weighted round robin
 *	pmemlab-run target=/mnt/pmem/file|/dev/daxX.Y [allow_overwrite=1] [size=BYTES] KEY=VALUE...
 *	pmemlab-run target=/path/file allow_file=1 ...  a file not on DAX (page cache)
 *	pmemlab-run --facts target=...              target facts only
 *	pmemlab-run --check target=... KEY=VALUE... judge the run, run nothing
 *	pmemlab-run --check-batch target=...        judge each line of KEY=VALUEs on stdin
 *	pmemlab-run --schema                        the run parameters as JSON
 *
 * KEY=VALUE are the module's run parameters, judged by the module's code in
 * table order, then together, against the mapped target and the CPUs this
 * process may run on.  The output is the module's `result` text, `# histogram`
 * and the `histogram` text; `#fact NAME VALUE` lines carry the target facts,
 * `#state done|error:aborted` the end.  A refusal prints `pmemlab-run: ERRNO:
 * reason` on stderr and exits with status 2.  --check and --check-batch print
 * a verdict per run: `ok WIDTH`, or `ERRNO PARAM MACHINE REASON` (PARAM `-`
 * for none, MACHINE 1 when a fact of this machine or target decided it);
 * --check-batch maps the target as a read run does.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runner.h"

#define PL_VERSION		"0.1.0"

/* ---- errors: the module's errno and last_error, on stderr ---- */
static const char *errno_name(int err)
{
	return err == EINVAL ? "EINVAL" : err == ERANGE ? "ERANGE" :
	       err == EOPNOTSUPP ? "EOPNOTSUPP" : err == EPERM ? "EPERM" :
	       err == ENOMEM ? "ENOMEM" : err == ENOENT ? "ENOENT" :
	       err == EBUSY ? "EBUSY" : err == EACCES ? "EACCES" : err == ENXIO ? "ENXIO" : "EIO";
}

void refuse(int err, const char *fmt, ...)
{
	char why[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	pl_printable(why);	/* a value quoted from the command line stays on the line */
	fprintf(stderr, "pmemlab-run: %s: %s\n", errno_name(err), why);
	exit(2);
}

/* `ok WIDTH` or `ERRNO PARAM MACHINE REASON` */
static void print_verdict(const struct pl_verdict *v, unsigned int width)
{
	if (!v->err)
		printf("ok %u\n", width);
	else
		printf("%s %s %d %s\n", errno_name(-v->err),
		       v->param >= 0 ? pl_params[v->param].name : "-", v->machine, v->why);
}

/* ---- the runner's own options: the target (the module's load-time parameters) ---- */
struct opts {
	const char *target;
	u64 dram_size, dram_pages, allow_overwrite, allow_file, size, tsc_khz, dram_node_strict;
	long dram_node;
	const char *dram_nodes, *dram_weights;
	const char *raw_samples;
};

static u64 opt_num(const char *key, const char *val, bool size, u64 lo, u64 hi, u64 mult)
{
	u64 v;

	if (pl_text_u64(val, strlen(val), size, &v) || v < lo || v > hi || (mult && v % mult))
		refuse(EINVAL, "%s: '%.32s' is not a number in %llu..%llu%s", key, val, lo, hi,
		       mult ? ", a multiple of 4096" : "");
	return v;
}

static bool set_option(struct opts *o, const char *key, const char *val)
{
	char *end;
	u64 i;

	if (!strcmp(key, "target")) {
		o->target = val;
	} else if (!strcmp(key, "raw_samples")) {
		o->raw_samples = val;
	} else if (!strcmp(key, "dram_size")) {
		o->dram_size = opt_num(key, val, true, 4096, 1ULL << 48, 4096);
	} else if (!strcmp(key, "size")) {
		o->size = opt_num(key, val, true, 0, 1ULL << 48, 4096);
	} else if (!strcmp(key, "allow_overwrite")) {
		o->allow_overwrite = opt_num(key, val, false, 0, 1, 0);
	} else if (!strcmp(key, "allow_file")) {
		o->allow_file = opt_num(key, val, false, 0, 1, 0);
	} else if (!strcmp(key, "tsc_khz")) {
		o->tsc_khz = opt_num(key, val, false, 0, 100000000, 0);
	} else if (!strcmp(key, "dram_pages")) {
		for (i = 0; i < 3 && strcmp(val, plu_pages_names[i]); i++)
			;
		if (i == 3)
			refuse(EINVAL, "dram_pages: '%.32s' is not 4k, 2m or hugetlb", val);
		o->dram_pages = i;
	} else if (!strcmp(key, "dram_node")) {
		errno = 0;
		o->dram_node = strtol(val, &end, 10);
		if (!*val || *end || errno || o->dram_node < -1 || o->dram_node > PL_TIER_NODE_MAX)
			refuse(EINVAL, "dram_node: '%.32s' is not -1 or a node number", val);
	} else if (!strcmp(key, "dram_nodes")) {
		o->dram_nodes = val;	/* judged with dram_weights (kmod/core/tier.c) */
	} else if (!strcmp(key, "dram_weights")) {
		o->dram_weights = val;
	} else if (!strcmp(key, "dram_node_strict")) {
		o->dram_node_strict = opt_num(key, val, false, 0, 1, 0);
	} else {
		return false;
	}
	return true;
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

/*
 * PMEMLAB_RUN_HIDE_FEATURES=avx,rdtscp: run as on a CPU without them (the
 * legacy SSE forms, the lfence; rdtsc; lfence bracket on a newer CPU);
 * hiding avx hides avx2 and avx512f too.
 */
static u32 hide_features(u32 f)
{
	const char *env = getenv("PMEMLAB_RUN_HIDE_FEATURES");
	char buf[256], *tok, *save;
	int i;

	if (!env)
		return f;
	snprintf(buf, sizeof(buf), "%s", env);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < PL_F_NR; i++)
			if (!strcmp(tok, pl_feature_names[i]))
				break;
		if (i == PL_F_NR)
			refuse(EINVAL, "PMEMLAB_RUN_HIDE_FEATURES: '%s' is not a feature (%s ...)", tok,
			       pl_feature_names[0]);
		f &= ~(1u << i);
		if ((1u << i) == PL_F_AVX)
			f &= ~(PL_F_AVX2 | PL_F_AVX512F);
	}
	return f;
}

static u64 read_tsc_khz(void)
{
	struct timespec a, b;
	u64 t0, t1, best = 0, v[5];
	int i, j;
	FILE *f = fopen("/sys/devices/system/cpu/cpu0/tsc_freq_khz", "r");

	if (f) {
		if (fscanf(f, "%llu", &best) != 1)
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

/* ---- one run ---- */
struct worker {
	struct pl_thread t;
	bool chase;
	int pin_err;			/* errno of a failed pinning, or -1: ran elsewhere */
	int ran_on;			/* sched_getcpu() after pinning */
	pthread_t th;
};

static struct run {
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
	struct worker w[PL_MAX_THREADS];
} R;

static void on_signal(int sig)
{
	(void)sig;
	R.aborted = 1;
	__atomic_store_n(&R.stop, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&R.probe_stop, 1, __ATOMIC_RELAXED);
}

/* one worker: the core's set-up (kmod/core/worker.c), its buffers, then its engine */
static void setup_worker(struct worker *w, const struct pl_setup *s, unsigned int idx, int cpu)
{
	struct pl_eng_cfg *ec = &w->t.ec;
	struct pl_eng *e = &w->t.e;
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
	if (w->chase) {
		/* what runs is the runner's own loop (chase.c), not the engine's */
		snprintf(e->insn, sizeof(e->insn), "mov");
		e->loop_name = "chase_loop";
		if (plu_chase_build(e, R.c.seed, idx))
			refuse(ENOMEM, "chase: no memory for %llu slots", e->gen.nslots);
	}
}

/* all workers arrive, the last one sets a start time 1 ms ahead; latency threads calibrate again */
static u64 barrier(struct worker *w)
{
	u64 go;

	if (atomic_fetch_add(&R.arrived, 1) + 1 == R.n)
		atomic_store(&R.go_tsc, pl_rdtsc() + R.tsc_khz);
	while (!(go = atomic_load(&R.go_tsc))) {
		if (__atomic_load_n(&R.stop, __ATOMIC_RELAXED))
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
	struct worker *w = arg;
	struct pl_eng *e = &w->t.e;
	cpu_set_t set;
	u64 go, t0, seg_end;
	char *chase_p = NULL;

	CPU_ZERO(&set);
	CPU_SET(w->t.cpu, &set);
	/* a thread that cannot run where the result will say it ran stops the run */
	if (sched_setaffinity(0, sizeof(set), &set))
		w->pin_err = errno ? errno : EINVAL;
	else if ((w->ran_on = sched_getcpu()) != w->t.cpu)
		w->pin_err = -1;
	if (w->pin_err) {
		__atomic_store_n(&R.stop, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&R.probe_stop, 1, __ATOMIC_RELAXED);
		goto out;
	}
	if (e->mode == PL_MODE_LAT) {
		pl_thread_calibrate(&w->t);
	} else {
		/* the loop on a cache-resident buffer: the engine's own ceiling */
		memset(e->ceil_buf, 0x5a, w->t.ec.ceil_len);
		pl_eng_ceiling(e, PL_CEILING_MS * R.tsc_khz);
		plu_guarded_free(e->ceil_buf, w->t.ec.ceil_len);
		e->ceil_buf = NULL;
		w->t.ec.ceil_buf = NULL;
	}
	if (w->chase)
		chase_p = e->base + pl_gen_next(&e->gen);
	go = barrier(w);
	if (!go)
		goto out;
	pl_thread_begin(&w->t, &R.c, go, R.tsc_khz);
	while (!__atomic_load_n(e->stop, __ATOMIC_RELAXED) && e->left && pl_thread_more(&w->t, pl_rdtsc())) {
		/* its end first: at the warm-up's end that resets the counts, outside [t0, t1) */
		seg_end = pl_thread_until(&w->t, pl_rdtsc());
		t0 = pl_rdtsc();
		if (w->chase)
			chase_p = plu_chase_loop(e, chase_p, seg_end);
		else
			pl_eng_run(e, seg_end);
		pl_thread_segment(&w->t, t0, pl_rdtsc());
	}
out:
	if (!w->t.probe && atomic_fetch_sub(&R.loaders, 1) == 1)
		__atomic_store_n(&R.probe_stop, 1, __ATOMIC_RELAXED);
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
static void pick_cpus(unsigned int n, const cpu_set_t *allowed, int *out)
{
	cpu_set_t chosen, sib, and;
	unsigned int k = 0, cpu;
	int pass;

	for (cpu = pl_cpu_next(R.c.cpus, 0); cpu < PL_MAX_CPUS && k < n;
	     cpu = pl_cpu_next(R.c.cpus, cpu + 1))
		out[k++] = cpu;
	if (k)
		return;
	CPU_ZERO(&chosen);
	for (pass = 0; pass < 3 && k < n; pass++) {
		for (cpu = 0; cpu < CPU_SETSIZE && k < n; cpu++) {
			if (!CPU_ISSET(cpu, allowed) || CPU_ISSET(cpu, &chosen))
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
	if (k < n)
		refuse(ERANGE, "threads: %u, but only %u CPUs are allowed", n, k);
}

/* ---- the facts the validator judges against ---- */
static void fill_facts(struct pl_facts *f, const struct plu_target *t, const struct opts *o,
		       const cpu_set_t *allowed)
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
	f->tsc_khz = R.tsc_khz;
	f->prefetch = false;
	f->user = true;
	plu_user_ops(f);
	f->fs_sig = t->fs_sig;
	f->allow_overwrite = o->allow_overwrite;
}

/* ---- results: the module's text (kmod/core/report.c) ---- */
static void print_results(void)
{
	struct pl_buf b = { .cap = (R.n + 1) * PL_LINE_BYTES }, h = { .cap = 1 };
	struct pl_scalars all;
	struct pl_report rep;
	u64 *buckets = calloc(PL_HIST_NB, sizeof(u64));
	unsigned int i;

	for (i = 0; i < R.n; i++)
		h.cap += pl_report_hist_room(&R.w[i].t);
	b.p = malloc(b.cap);
	h.p = calloc(1, h.cap);
	if (!buckets || !b.p || !h.p)
		refuse(ENOMEM, "no memory for the results");
	pl_report_begin(&rep, buckets, R.tsc_khz, R.width);
	for (i = 0; i < R.n; i++)
		pl_report_thread(&b, &h, &rep, &R.w[i].t);
	pl_report_all(&b, &h, &rep, R.c.mode, &all);
	printf("%s# histogram\n%s", b.p, h.p);
	free(b.p);
	free(h.p);
	free(buckets);
}

/* the module's raw_samples (kmod/core/report.c: not filled is PL_SAMPLE_NONE) */
static void write_samples(const char *path)
{
	u64 *buf = calloc(R.c.samples, sizeof(u64));
	FILE *f = fopen(path, "wb");
	unsigned int i;

	if (!f || !buf) {
		fprintf(stderr, "pmemlab-run: cannot write %s: %s\n", path, strerror(errno));
		free(buf);
		if (f)
			fclose(f);
		return;
	}
	for (i = 0; i < R.n; i++) {
		if (!R.w[i].t.e.samples)
			continue;
		pl_report_samples(&R.w[i].t, buf, R.c.samples);
		fwrite(buf, sizeof(u64), R.c.samples, f);
	}
	fclose(f);
	free(buf);
}

static void print_facts(const char *target)
{
	char text[256] = { 0 };
	struct pl_buf feats = { .p = text, .cap = 128 }, widths = { .p = text + 128, .cap = 128 };

	pl_out_features(&feats, features);
	pl_out_widths(&widths, features);
	printf("#fact version %s-user\n", PL_VERSION);
	printf("#fact target %s\n", target);
	printf("#fact target_kind %s\n", R.t.kind);
	printf("#fact target_size %llu\n", R.t.run_size);
	printf("#fact target_node %ld\n", R.t.node);
	printf("#fact target_page_size %llu\n", R.t.page_size);
	printf("#fact target_pages %s\n", R.t.pages);
	printf("#fact target_huge_pct %llu\n", R.t.huge_pct);
	if (R.t.placed) {
		char nodes[PL_TIER_MAX * 8] = "", weights[PL_TIER_MAX * 8] = "", bytes[PL_TIER_MAX * 32];
		struct pl_buf nb = { .p = nodes, .cap = sizeof(nodes) };
		struct pl_buf wb = { .p = weights, .cap = sizeof(weights) };
		struct pl_buf bb = { .p = bytes, .cap = sizeof(bytes) };

		pl_tier_out_nodes(&nb, &R.t.tier);
		pl_tier_out_weights(&wb, &R.t.tier);
		pl_tally_out(&bb, &R.t.found);
		printf("#fact target_nodes %s\n#fact target_weights %s\n#fact target_node_bytes %s\n",
		       nodes, weights, bytes);
	}
	printf("#fact target_placement %s\n", R.t.placement);
	if (R.t.placement_note[0])
		printf("#fact target_placement_note %s\n", R.t.placement_note);
	printf("#fact map_sync %d\n", R.t.map_sync);
	printf("#fact dax %d\n", R.t.dax);
	printf("#fact tsc_khz %llu\n", R.tsc_khz);
	printf("#fact cpu_features %s\n", text);
	printf("#fact widths %s\n", text + 128);
	printf("#fact prefetch_control none\n");
	printf("#fact prefetch untouched\n");
	printf("#fact fs_signature %s\n", R.t.fs_sig);
}

/* ---- arguments ---- */
/* KEY=VALUE: an option of the runner, or a run parameter (its text in vals) */
static void set_arg(struct opts *o, const char **vals, char *arg)
{
	char *eq = strchr(arg, '=');
	int id;

	if (!eq)
		refuse(EINVAL, "argument '%s' is not KEY=VALUE", arg);
	*eq = '\0';
	if (set_option(o, arg, eq + 1))
		return;
	id = pl_param_find(arg, strlen(arg));
	if (id < 0)
		refuse(EINVAL, "%s: unknown parameter", arg);
	vals[id] = eq + 1;
}

/* does the run write?  (to map the target for it; the values are judged later) */
static bool run_writes(const char *const *vals, const struct pl_facts *f)
{
	static const int ids[] = { PL_P_threads, PL_P_op, PL_P_read_pct };
	struct pl_params p;
	struct pl_verdict v;
	unsigned int i;

	pl_params_defaults(&p);
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		if (vals[ids[i]])
			pl_param_set(&p, ids[i], vals[ids[i]], strlen(vals[ids[i]]), f, &v);
	return pl_run_writes(&p, f);
}

/*
 * Open a target: dram or dram:NODE (of dram_size and dram_pages; the main
 * target also takes dram_node, dram_nodes and dram_weights: tiered), or a
 * file or devdax device.  Returns the one node asked for, else -1.
 */
static long open_target(struct plu_target *t, const char *spec, const struct opts *o, bool tiered,
			const struct plu_path_opts *po)
{
	const char *what = tiered ? "target" : "load_target";
	long node = tiered ? o->dram_node : -1;

	if (!strncmp(spec, "dram", 4) && (!spec[4] || spec[4] == ':')) {
		struct pl_tier tier;
		char why[PL_WHY_LEN];

		if (spec[4] == ':') {
			char *end;

			node = strtol(spec + 5, &end, 10);
			if (!spec[5] || *end || node < 0 || node > PL_TIER_NODE_MAX)
				refuse(EINVAL, "%s '%s': not dram or dram:NODE", what, spec);
			if (tiered && o->dram_node != -1 && o->dram_node != node)
				refuse(EINVAL, "dram_node: %ld, but target %s", o->dram_node, spec);
		}
		if (pl_tier_parse(&tier, tiered ? o->dram_nodes : "", tiered ? o->dram_weights : "",
				  node, why, sizeof(why)))
			refuse(EINVAL, "%s", why);
		plu_open_dram(t, o->dram_size, o->dram_pages, &tier, o->dram_node_strict);
		if (t->tier.listed)
			node = -1;	/* the nodes are checked one by one (plu_prefault) */
		return node;
	}
	if (tiered && ((o->dram_nodes && *o->dram_nodes) || (o->dram_weights && *o->dram_weights)))
		refuse(EINVAL, "dram_nodes: only for target=dram, not %s", spec);
	plu_open_path(t, spec, po);
	return -1;
}

/* --check-batch: one verdict per line of KEY=VALUEs */
static int check_batch(const struct pl_facts *f)
{
	const char *vals[PL_NPARAMS];
	struct pl_params p;
	struct pl_verdict v;
	struct pl_plan plan = { 0 };
	char *line = NULL, *tok, *save, *eq;
	size_t cap = 0;
	int id;

	while (getline(&line, &cap, stdin) > 0) {
		memset(vals, 0, sizeof(vals));
		pl_verdict_clear(&v);
		for (tok = strtok_r(line, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
			eq = strchr(tok, '=');
			id = eq ? pl_param_find(tok, eq - tok) : -1;
			if (id < 0) {
				pl_refuse(&v, -ENOENT, -1, false, "%s: unknown parameter", tok);
				break;
			}
			vals[id] = eq + 1;
		}
		pl_params_defaults(&p);
		if (!v.err && !pl_params_apply(&p, vals, f, &v))
			pl_check_run(&p, f, &plan, &v);
		print_verdict(&v, plan.width);
		fflush(stdout);		/* a verdict per line, for a caller that waits for it */
	}
	free(line);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .dram_size = 256ULL << 20, .dram_pages = 1, .dram_node = -1,
			  .dram_node_strict = 1 };
	const char *vals[PL_NPARAMS] = { 0 };
	enum { RUN, FACTS, CHECK, BATCH } mode = RUN;
	struct pl_setup setup, lsetup;
	const char *load_spec;
	struct pl_verdict v;
	struct pl_plan plan;
	cpu_set_t allowed;
	int cpus[PL_MAX_THREADS], i, err;
	bool writes = false;
	struct sigaction sa;
	long node;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--facts")) {
			mode = FACTS;
		} else if (!strcmp(argv[i], "--check")) {
			mode = CHECK;
		} else if (!strcmp(argv[i], "--check-batch")) {
			mode = BATCH;
		} else if (!strcmp(argv[i], "--schema")) {
			const char *json = plu_schema_json();

			if (!json)
				refuse(ENOMEM, "no memory for the schema");
			fputs(json, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: pmemlab-run [--facts | --check | --check-batch | --schema] "
			       "target=dram[:NODE]|PATH KEY=VALUE...\n"
			       "(the module's run parameters, docs/interface.md; see runner.c)\n");
			return 0;
		} else {
			set_arg(&o, vals, argv[i]);
		}
	}
	if (!o.target)
		refuse(EINVAL, "target: give target=dram[:NODE], a file on a DAX file system, or /dev/daxX.Y");
	load_spec = vals[PL_P_load_target] && *vals[PL_P_load_target] ? vals[PL_P_load_target] : NULL;
	if (load_spec) {	/* its text judged before anything is opened with it */
		pl_params_defaults(&R.c);
		if (pl_param_set(&R.c, PL_P_load_target, load_spec, strlen(load_spec), &R.f, &v))
			refuse(-v.err, "%s", v.why);
	}
	features = hide_features(detect_features());
	R.tsc_khz = o.tsc_khz ? o.tsc_khz : read_tsc_khz();
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		refuse(EINVAL, "sched_getaffinity: %s", strerror(errno));
	plu_user_ops(&R.f);
	if (mode == RUN || mode == CHECK)
		writes = run_writes(vals, &R.f);
	{
		/* --facts and --check-batch do not know whether a run writes: judged as if it may */
		struct plu_path_opts po = { .size = o.size, .may_write = writes || mode == FACTS ||
					    mode == BATCH, .probe = mode != RUN,
					    .allow_file = o.allow_file };

		node = open_target(&R.t, o.target, &o, true, &po);
		if (load_spec) {
			/* the load target: dram[:NODE] of dram_size, or a file or device as it is */
			po.size = 0;
			open_target(&R.lt, load_spec, &o, false, &po);
		}
	}
	fill_facts(&R.f, &R.t, &o, &allowed);
	if (load_spec) {
		R.f.known |= PL_FACT_LOAD;
		R.f.load.size = R.lt.run_size;
		R.f.load.fs_sig = R.lt.fs_sig;
		R.f.load.allow_overwrite = o.allow_overwrite;
	}
	if (mode == BATCH)
		return check_batch(&R.f);
	if (mode != FACTS) {
		pl_params_defaults(&R.c);
		if (pl_params_apply(&R.c, vals, &R.f, &v) || pl_check_run(&R.c, &R.f, &plan, &v)) {
			if (mode == CHECK)
				print_verdict(&v, 0);
			refuse(-v.err, "%s", v.why);
		}
		if (mode == CHECK) {
			print_verdict(&v, plan.width);
			return 0;
		}
	}
	plu_map(&R.t, o.target, mode == RUN && writes);
	/* pre-fault what the run touches: the window (all of it for --facts: 4 MiB) */
	plu_prefault(&R.t, writes, mode == FACTS ? 4ULL << 20 : ~0ULL);
	if (load_spec) {
		plu_map(&R.lt, load_spec, mode == RUN && writes);
		plu_prefault(&R.lt, writes, mode == FACTS ? 4ULL << 20 : ~0ULL);
	}
	if (node >= 0 && R.t.node >= 0 && R.t.node != node)
		fprintf(stderr, "pmemlab-run: asked for node %ld, got node %ld\n", node, R.t.node);
	print_facts(o.target);
	if (load_spec)
		printf("#fact load_target %s\n#fact load_target_kind %s\n#fact load_target_size %llu\n"
		       "#fact load_target_node %ld\n#fact load_target_page_size %llu\n",
		       load_spec, R.lt.kind, R.lt.run_size, R.lt.node, R.lt.page_size);
	if (mode == FACTS)
		return 0;
	R.n = plan.n;
	R.width = plan.width;
	pick_cpus(R.n, &allowed, cpus);
	atomic_store(&R.loaders, R.n - (R.c.probe ? 1 : 0));
	setup = (struct pl_setup){ .p = &R.c, .f = &R.f, .target = R.t.addr,
				   .target_size = R.t.size, .n = R.n, .width = R.width,
				   .stop = &R.stop, .probe_stop = &R.probe_stop };
	/* with load_target, the load threads (1..n-1) run on its memory, on windows of its size */
	lsetup = setup;
	if (load_spec) {
		lsetup.target = R.lt.addr;
		lsetup.target_size = R.lt.size;
	}
	for (i = 0; i < (int)R.n; i++)
		setup_worker(&R.w[i], i ? &lsetup : &setup, i, cpus[i]);
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
			refuse(EINVAL, "cannot pin thread %u to CPU %d: %s", w->t.idx, w->t.cpu,
			       strerror(w->pin_err));
		if (w->pin_err)
			refuse(EINVAL, "thread %u: pinned to CPU %d but runs on CPU %d", w->t.idx,
			       w->t.cpu, w->ran_on);
	}
	print_results();
	if (o.raw_samples)
		write_samples(o.raw_samples);
	printf("#state %s\n", R.aborted ? "error:aborted" : "done");
	return R.aborted ? 1 : 0;
}
