// SPDX-License-Identifier: GPL-2.0
/*
 * pmemlab-run - the userspace backend of pmemlab (docs/userspace.md): the
 * module's own core (core/: parameters and validator, worker set-up,
 * access kernels, timed loops, result text) on memory a user can map
 * (target.c), in threads pinned to the CPUs their result lines name (the
 * run itself: run.c); its arguments in args.c, its refusals in error.c.
 * main.c, as the module's: the entry, the CPU it runs on, the arguments'
 * flow from parsing to the verdict, and the output.
 *
 *	pmemlab-run target=dram[:NODE] [dram_size=256M] [dram_pages=4k|2m|hugetlb] KEY=VALUE...
 *	pmemlab-run target=dram dram_nodes=0,1 dram_weights=3,1 [dram_node_strict=0] ...
 *						    pages over nodes in weighted round robin
 *	pmemlab-run target=/mnt/pmem/file|/dev/daxX.Y [allow_overwrite=1] [size=BYTES] KEY=VALUE...
 *	pmemlab-run target=/path/file allow_file=1 ...  a file not on DAX (page cache)
 *	pmemlab-run --facts target=...              target facts only
 *	pmemlab-run --check target=... KEY=VALUE... judge the run, run nothing
 *	pmemlab-run --check-batch target=...        judge each line of KEY=VALUEs on stdin
 *	pmemlab-run --serve target=... [KEY=VALUE...]  run each line of KEY=VALUEs on stdin
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
 *
 * --serve (the user backend's sweeps, docs/userspace.md): the target mapped
 * and pre-faulted once (for a write run when the KEY=VALUEs of the command
 * line, the sweep's first point, write), its facts printed once, then
 * `#ready`; then one run per line of KEY=VALUEs on stdin (run parameters and
 * raw_samples=PATH), judged as a one-shot run is, its output as one-shot's,
 * then `#end`.  A refused line prints `#refused ERRNO reason`, a line whose
 * mapping differs from the one made (a write run on a file mapped for
 * reading, another load_target) `#state restart: reason`, each then `#end`;
 * the process goes on.  SIGINT aborts the run in progress (#state
 * error:aborted); EOF ends the process.  A chase's chain stays in the
 * target for the next run that would lay the same one (chain=kept in its
 * result) and is written back before a run that meets its lines and when
 * the process ends (chains.c).
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run.h"

#define PL_VERSION		"0.1.0"

/* ---- CPU ---- */
static u32 features;

static u64 xgetbv0(void)
{
	u32 lo, hi;

	asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((u64)hi << 32) | lo;
}

/* the features of features.def this CPU has and the OS lets a process use (XCR0) */
static u32 detect_features(void)
{
	static const struct { unsigned int leaf, sub, reg, bit; u64 xcr0; u32 f; } map[] = {
#define PL_REG_a	0
#define PL_REG_b	1
#define PL_REG_c	2
#define PL_REG_d	3
#define PL_FEAT(ID, name, X86, leaf, sub, reg, bit, xcr0)			\
		{ leaf, sub, PL_REG_##reg, bit, xcr0, PL_F_##ID },
#include "features.def"
	};
	unsigned int r[4], i;
	u64 xcr0 = 0;
	u32 f = 0;

	/* the OS saves the registers' state: XSAVE enabled (CPUID 1 ECX.OSXSAVE), then XCR0 */
	if (__get_cpuid(1, &r[0], &r[1], &r[2], &r[3]) && (r[2] & (1u << 27)))
		xcr0 = xgetbv0();
	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (!__get_cpuid_count(map[i].leaf, map[i].sub, &r[0], &r[1], &r[2], &r[3]))
			continue;
		if ((r[map[i].reg] & (1u << map[i].bit)) && (xcr0 & map[i].xcr0) == map[i].xcr0)
			f |= map[i].f;
	}
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

/* the run: its parameters, facts, targets and workers (run.c runs it) */
static struct plu_run R;

/* ---- results: the module's text (core/resultfmt.c) ---- */
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
	pl_report_times(&rep, R.run_tsc, R.done_tsc);
	for (i = 0; i < R.n; i++)
		pl_report_thread(&b, &h, &rep, &R.w[i].t);
	pl_report_all(&b, &h, &rep, R.c.mode, &all);
	printf("%s# histogram\n%s", b.p, h.p);
	free(b.p);
	free(h.p);
	free(buckets);
}

/* the module's raw_samples (core/resultfmt.c: not filled is PL_SAMPLE_NONE) */
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

/*
 * Does the run write (to map the target for it), and does it store data
 * (then the pre-fault fills the window; a chase's chain keeps what is
 * there)?  The values are judged later.
 */
static bool run_writes(const char *const *vals, const struct pl_facts *f, bool *stores)
{
	static const int ids[] = { PL_P_threads, PL_P_op, PL_P_read_pct };
	struct pl_params p;
	struct pl_verdict v;
	unsigned int i;

	pl_params_defaults(&p);
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		if (vals[ids[i]])
			pl_param_set(&p, ids[i], vals[ids[i]], strlen(vals[ids[i]]), f, &v);
	*stores = pl_run_stores(&p, f);
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

/* after a run of --serve: the workers' buffers back, the run's state cleared for the next */
static void run_reset(void)
{
	unsigned int i;

	for (i = 0; i < R.n; i++) {
		struct pl_eng_cfg *ec = &R.w[i].t.ec;

		if (ec->hist_buckets)
			plu_guarded_free(ec->hist_buckets, PL_HIST_NB * sizeof(u64));
		if (ec->samples)
			plu_guarded_free(ec->samples, ec->nsamples_max * sizeof(u64));
		if (ec->ceil_buf)
			plu_guarded_free(ec->ceil_buf, ec->ceil_len);
	}
	memset(R.w, 0, sizeof(R.w));
	R.stop = R.probe_stop = 0;
	R.aborted = 0;
	atomic_store(&R.arrived, 0);
	atomic_store(&R.loaders, 0);
	atomic_store(&R.go_tsc, 0);
	R.n = 0;
}

/*
 * PMEMLAB_RUN_CEILING_SLOWDOWN=K, 1 to 10^9 (the tests of the ceiling's
 * reuse, docs/method.md): every engine ceiling this process measures is
 * taken as K times slower, as one measured while its CPU was starved.
 */
static u64 ceiling_slowdown(void)
{
	const char *env = getenv("PMEMLAB_RUN_CEILING_SLOWDOWN");
	unsigned long long k;
	char *end;

	if (!env)
		return 1;
	errno = 0;
	k = strtoull(env, &end, 10);
	if (errno || end == env || *end || !k || k > 1000000000ULL)
		refuse(EINVAL, "PMEMLAB_RUN_CEILING_SLOWDOWN: '%s' is not a whole number from 1 to 10^9", env);
	/* a test's hook: never silent, as its ceilings (and loop_bound) are not the machine's */
	if (k > 1)
		fprintf(stderr, "pmemlab-run: PMEMLAB_RUN_CEILING_SLOWDOWN=%llu: every ceiling this process measures is taken %llu times slower (a test hook; its ceilings are not this machine's)\n",
			k, k);
	return k;
}

/* --serve: a run per line of stdin on the target mapped once (see the top of this file) */
static int serve(const cpu_set_t *allowed, bool writes, bool stores, const char *load_spec)
{
	const char *vals[PL_NPARAMS];
	const char *samples;
	struct pl_verdict v;
	struct pl_plan plan;
	char *line = NULL, *tok, *save, *eq;
	size_t cap = 0;
	bool w, st;
	int id;
	static struct pl_ceil_cache ceil;

	R.keep_chains = true;	/* a chase's chain stays for the next identical one (chains.c) */
	R.ceil = &ceil;
	printf("#ready\n");
	fflush(stdout);
	while (getline(&line, &cap, stdin) > 0) {
		const char *lt;

		R.run_tsc = pl_rdtsc();	/* the run line read: its setup starts */
		memset(vals, 0, sizeof(vals));
		pl_verdict_clear(&v);
		samples = NULL;
		for (tok = strtok_r(line, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
			eq = strchr(tok, '=');
			if (eq && eq - tok == 11 && !strncmp(tok, "raw_samples", 11)) {
				samples = eq + 1;
				continue;
			}
			id = eq ? pl_param_find(tok, eq - tok) : -1;
			if (id < 0) {
				pl_refuse(&v, -EINVAL, -1, false, "%s: unknown parameter (a line of --serve "
					  "takes run parameters and raw_samples)", tok);
				break;
			}
			vals[id] = eq + 1;
		}
		lt = vals[PL_P_load_target] && *vals[PL_P_load_target] ? vals[PL_P_load_target] : NULL;
		if (!v.err && (lt ? !load_spec || strcmp(lt, load_spec) : load_spec != NULL)) {
			printf("#state restart: load_target %s, mapped %s\n#end\n", lt ? lt : "none",
			       load_spec ? load_spec : "none");
			fflush(stdout);
			continue;
		}
		/* a file or device mapped for reading, or not filled (a chase's): a store run maps it again */
		if (!v.err && (strcmp(R.t.kind, "dram") || (load_spec && strcmp(R.lt.kind, "dram"))) &&
		    (w = run_writes(vals, &R.f, &st), (w && !writes) || (st && !stores))) {
			printf("#state restart: a %s run, the target mapped %s\n#end\n", st ? "store" : "write",
			       writes ? "without its pre-fault fill" : "for reading");
			fflush(stdout);
			continue;
		}
		pl_params_defaults(&R.c);
		if (!v.err && !pl_params_apply(&R.c, vals, &R.f, &v))
			pl_check_run(&R.c, &R.f, &plan, &v);
		if (v.err) {
			pl_printable(v.why);
			printf("#refused %s %s\n#end\n", errno_name(-v.err), v.why);
			fflush(stdout);
			continue;
		}
		R.n = plan.n;
		R.width = plan.width;
		R.stop = R.probe_stop = R.aborted = 0;	/* a SIGINT between runs aborts none */
		plu_run(&R, allowed, load_spec != NULL);
		R.done_tsc = pl_rdtsc();
		print_results();
		if (!R.aborted) {
			struct pl_threads ts = { (char *)&R.w[0].t, sizeof(R.w[0]), R.n };

			pl_ceil_store(&ceil, &ts, R.c.prefetch, 0);
		}
		if (samples)
			write_samples(samples);
		printf("#state %s\n#end\n", R.aborted ? "error:aborted" : "done");
		fflush(stdout);
		run_reset();
	}
	free(line);
	plu_chains_restore();	/* the kept chains' words written back: the target as it was */
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .dram_size = 256ULL << 20, .dram_pages = 1, .dram_node = -1,
			  .dram_node_strict = 1 };
	const char *vals[PL_NPARAMS] = { 0 };
	enum { RUN, FACTS, CHECK, BATCH, SERVE } mode = RUN;
	const char *load_spec;
	struct pl_verdict v;
	struct pl_plan plan;
	cpu_set_t allowed;
	bool writes = false, stores = false;
	long node;
	int i;

	R.run_tsc = pl_rdtsc();	/* a one-shot run: its setup is the whole process's before it */
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--facts")) {
			mode = FACTS;
		} else if (!strcmp(argv[i], "--check")) {
			mode = CHECK;
		} else if (!strcmp(argv[i], "--check-batch")) {
			mode = BATCH;
		} else if (!strcmp(argv[i], "--serve")) {
			mode = SERVE;
		} else if (!strcmp(argv[i], "--schema")) {
			const char *json = plu_schema_json();

			if (!json)
				refuse(ENOMEM, "no memory for the schema");
			fputs(json, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: pmemlab-run [--facts | --check | --check-batch | --serve | --schema] "
			       "target=dram[:NODE]|PATH KEY=VALUE...\n"
			       "(the module's run parameters, docs/interface.md; see main.c)\n");
			return 0;
		} else {
			plu_set_arg(&o, vals, argv[i]);
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
	R.ceil_slow = ceiling_slowdown();
	R.tsc_khz = o.tsc_khz ? o.tsc_khz : read_tsc_khz();
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		refuse(EINVAL, "sched_getaffinity: %s", strerror(errno));
	if (mode == RUN || mode == CHECK || mode == SERVE)
		writes = run_writes(vals, &R.f, &stores);
	{
		/* --facts and --check-batch do not know whether a run writes: judged as if it may */
		struct plu_path_opts po = { .size = o.size, .may_write = writes || mode == FACTS ||
					    mode == BATCH, .probe = mode != RUN && mode != SERVE,
					    .allow_file = o.allow_file };

		node = open_target(&R.t, o.target, &o, true, &po);
		if (load_spec) {
			/* the load target: dram[:NODE] of dram_size, or a file or device as it is */
			po.size = 0;
			open_target(&R.lt, load_spec, &o, false, &po);
		}
	}
	plu_facts(&R.f, &R.t, &o, &allowed, features, R.tsc_khz);
	if (load_spec) {
		R.f.known |= PL_FACT_LOAD;
		R.f.load.size = R.lt.run_size;
		R.f.load.fs_sig = R.lt.fs_sig;
		R.f.load.allow_overwrite = o.allow_overwrite;
		R.f.load.scattered = !strcmp(R.lt.kind, "dram");
	}
	if (mode == BATCH)
		return check_batch(&R.f);
	if (mode != FACTS && mode != SERVE) {
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
	plu_map(&R.t, o.target, (mode == RUN || mode == SERVE) && writes);
	/* pre-fault what the run touches: the window (all of it for --facts: 4 MiB) */
	plu_prefault(&R.t, stores, mode == FACTS ? 4ULL << 20 : ~0ULL);
	if (load_spec) {
		plu_map(&R.lt, load_spec, (mode == RUN || mode == SERVE) && writes);
		plu_prefault(&R.lt, stores, mode == FACTS ? 4ULL << 20 : ~0ULL);
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
	if (mode == SERVE)
		return serve(&allowed, writes, stores, load_spec);
	R.n = plan.n;
	R.width = plan.width;
	plu_run(&R, &allowed, load_spec != NULL);
	R.done_tsc = pl_rdtsc();
	print_results();
	if (o.raw_samples)
		write_samples(o.raw_samples);
	printf("#state %s\n", R.aborted ? "error:aborted" : "done");
	return R.aborted ? 1 : 0;
}