// SPDX-License-Identifier: GPL-2.0
/*
 * args.c - pmemlab-run's KEY=VALUE arguments, as the module's load and
 * sysfs parameters: the runner's own options (the target, as the module's
 * load-time parameters) judged here, the run parameters handed to the
 * core's table (params.def) by name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

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
		o->dram_nodes = val;	/* judged with dram_weights (core/tier.c) */
	} else if (!strcmp(key, "dram_weights")) {
		o->dram_weights = val;
	} else if (!strcmp(key, "dram_node_strict")) {
		o->dram_node_strict = opt_num(key, val, false, 0, 1, 0);
	} else {
		return false;
	}
	return true;
}

/* ---- arguments ---- */
/* KEY=VALUE: an option of the runner, or a run parameter (its text in vals) */
void plu_set_arg(struct opts *o, const char **vals, char *arg)
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
