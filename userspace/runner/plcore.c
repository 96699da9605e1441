// SPDX-License-Identifier: GPL-2.0
/*
 * plcore.c - the entry points of libplcore.so the controller calls
 * (userspace/pmemlab/params.py, through ctypes): the run parameter table
 * as JSON and the module's validator (core/check.c), so that a config
 * is judged exactly as the module and the runner judge it.
 *
 * Facts of the machine and target come as "key=value" lines; a key left
 * out is not known, and rules that need it are not judged:
 *	target_size=BYTES  dead=0|1  features=sse2 avx ...  online=CPU-LIST
 *	possible=N  tsc_khz=N  prefetch=0|1  backend=kernel|user
 *	fs_signature=NAME  allow_overwrite=0|1
 *	scattered=0|1 (the target's pages are scattered in physical memory: DRAM)
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "runner.h"

struct plc_facts {
	struct pl_facts f;
	u64 online[PL_CPU_WORDS];
	char fs_sig[32];
};

static bool line_is(const char *line, size_t len, const char *key, const char **val,
		    size_t *vlen)
{
	size_t k = strlen(key);

	if (len <= k || memcmp(line, key, k) || line[k] != '=')
		return false;
	*val = line + k + 1;
	*vlen = len - k - 1;
	return true;
}

static u64 num(const char *s, size_t len)
{
	u64 v = 0;

	return pl_text_u64(s, len, false, &v) ? 0 : v;
}

static u32 feature_bits(const char *s, size_t len)
{
	size_t at = 0, n;
	u32 bits = 0;
	int i;

	while (at < len) {
		for (n = 0; at + n < len && s[at + n] != ' '; n++)
			;
		for (i = 0; i < PL_F_NR; i++)
			if (strlen(pl_feature_names[i]) == n && !memcmp(pl_feature_names[i], s + at, n))
				bits |= 1u << i;
		at += n + 1;
	}
	return bits;
}

static void online_cpus(struct plc_facts *pf, const char *s, size_t len)
{
	unsigned int cpu, top;

	if (!pl_cpus_parse(s, len, pf->online, &top))
		return;
	pf->f.online = pf->online;
	pf->f.online_bits = PL_MAX_CPUS;
	pf->f.nr_online = 0;
	for (cpu = pl_cpu_next(pf->online, 0); cpu < PL_MAX_CPUS; cpu = pl_cpu_next(pf->online, cpu + 1))
		pf->f.nr_online++;
	pf->f.known |= PL_FACT_CPUS;
}

static void parse_facts(struct plc_facts *pf, const char *text)
{
	struct pl_facts *f = &pf->f;
	const char *line = text, *end, *v;
	size_t len, n;

	memset(pf, 0, sizeof(*pf));
	f->nr_possible = PL_MAX_CPUS;
	for (; line && *line; line = *end ? end + 1 : end) {
		end = strchrnul(line, '\n');
		len = end - line;
		if (line_is(line, len, "target_size", &v, &n)) {
			f->target_size = num(v, n);
			f->known |= PL_FACT_TARGET;
		} else if (line_is(line, len, "dead", &v, &n)) {
			f->dead = num(v, n);
		} else if (line_is(line, len, "features", &v, &n)) {
			f->features = feature_bits(v, n);
			f->known |= PL_FACT_CPU;
		} else if (line_is(line, len, "online", &v, &n)) {
			online_cpus(pf, v, n);
		} else if (line_is(line, len, "possible", &v, &n)) {
			f->nr_possible = num(v, n);
		} else if (line_is(line, len, "tsc_khz", &v, &n)) {
			f->tsc_khz = num(v, n);
			f->known |= PL_FACT_TSC;
		} else if (line_is(line, len, "prefetch", &v, &n)) {
			f->prefetch = num(v, n);
			f->known |= PL_FACT_PREFETCH;
		} else if (line_is(line, len, "backend", &v, &n)) {
			f->user = n == 4 && !memcmp(v, "user", 4);
			f->known |= PL_FACT_BACKEND;
		} else if (line_is(line, len, "fs_signature", &v, &n)) {
			snprintf(pf->fs_sig, sizeof(pf->fs_sig), "%.*s", (int)n, v);
			f->fs_sig = pf->fs_sig;
			f->known |= PL_FACT_FS;
		} else if (line_is(line, len, "allow_overwrite", &v, &n)) {
			f->allow_overwrite = num(v, n);
		} else if (line_is(line, len, "scattered", &v, &n)) {
			f->scattered = num(v, n);
			f->known |= PL_FACT_LAYOUT;
		}
	}
}

const char *plc_schema(void)
{
	return plu_schema_json();
}

static int verdict_out(const struct pl_verdict *v, char *out, size_t len, int *param,
		       int *machine)
{
	snprintf(out, len, "%s", v->why);
	*param = v->param;
	*machine = v->machine;
	return v->err;
}

/*
 * One value judged on its own, as a write of its sysfs file: 0 and the
 * value as the module shows it in out, or -errno and the reason.
 */
int plc_value(const char *name, const char *text, const char *facts, char *out, size_t len,
	      int *param, int *machine)
{
	struct pl_params p;
	struct plc_facts pf;
	struct pl_verdict v;
	int id = pl_param_find(name, strlen(name));

	*param = id;
	*machine = 0;
	if (id < 0) {
		snprintf(out, len, "%s: unknown parameter", name);
		return -ENOENT;
	}
	parse_facts(&pf, facts);
	pl_params_defaults(&p);
	if (pl_param_set(&p, id, text, strlen(text), &pf.f, &v))
		return verdict_out(&v, out, len, param, machine);
	pl_param_show(&p, id, out, len);
	return 0;
}

/*
 * A run: n values on the defaults, set in table order, then judged as
 * `run` judges them.  0 and "width=N" in out, or -errno and the reason.
 */
int plc_check(const char *const *names, const char *const *values, int n, const char *facts,
	      char *out, size_t len, int *param, int *machine)
{
	const char *text[PL_NPARAMS] = { 0 };
	struct pl_params p;
	struct plc_facts pf;
	struct pl_verdict v;
	struct pl_plan plan;
	int i, id;

	*param = -1;
	*machine = 0;
	for (i = 0; i < n; i++) {
		id = pl_param_find(names[i], strlen(names[i]));
		if (id < 0) {
			snprintf(out, len, "%s: unknown parameter", names[i]);
			return -ENOENT;
		}
		text[id] = values[i];
	}
	parse_facts(&pf, facts);
	pl_params_defaults(&p);
	if (pl_params_apply(&p, text, &pf.f, &v) || pl_check_run(&p, &pf.f, &plan, &v))
		return verdict_out(&v, out, len, param, machine);
	snprintf(out, len, "width=%u", plan.width);
	return 0;
}
