// SPDX-License-Identifier: GPL-2.0
/*
 * modparams.c - the module's parameters, all of them, and the load keys of
 * a target: insmod's target= with its dram_* and allow_overwrite, and the
 * same keys of a named target (targets= at load, targets/add later), read
 * by one parser (docs/interface.md, "Loading" and "Several targets").
 */
#define pr_fmt(fmt) "pmemlab: " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include "pmemlab.h"

static char *target;
module_param(target, charp, 0444);
MODULE_PARM_DESC(target, "/dev/pmemN (fsdax namespace) or dram: the top-level target (optional with targets=)");

static char *targets = "";
module_param(targets, charp, 0444);
MODULE_PARM_DESC(targets, "named targets made at load, ';'-separated: \"<name> <spec> [key=value ...]\" each, e.g. \"cxl dram dram_node=2;pm /dev/pmem0\"");

static bool allow_overwrite;
module_param(allow_overwrite, bool, 0444);
MODULE_PARM_DESC(allow_overwrite, "allow write runs on a target that carries a signature (file system, partition table, ...) or partitions");

static char *dram_size = "256M";
module_param(dram_size, charp, 0444);
MODULE_PARM_DESC(dram_size, "size of the DRAM target (K/M/G suffixes; default 256M)");

static int dram_node = -1;
module_param(dram_node, int, 0444);
MODULE_PARM_DESC(dram_node, "NUMA node of the DRAM target (-1: node of the loading CPU)");

static char *dram_nodes = "";
module_param(dram_nodes, charp, 0444);
MODULE_PARM_DESC(dram_nodes, "NUMA nodes of the DRAM target, e.g. 0,1 (instead of dram_node): its pages go to them in weighted round robin (dram_weights)");

static char *dram_weights = "";
module_param(dram_weights, charp, 0444);
MODULE_PARM_DESC(dram_weights, "pages of each stripe on each node of dram_nodes, 0..255 each, e.g. 3,1 (default 1 each)");

static char *dram_pages = "2m";
module_param(dram_pages, charp, 0444);
MODULE_PARM_DESC(dram_pages, "DRAM target pages: 4k (vmalloc) or 2m (huge vmalloc; default)");

static bool dram_node_strict = true;
module_param(dram_node_strict, bool, 0444);
MODULE_PARM_DESC(dram_node_strict,
		 "refuse to load when the DRAM target's pages are not where dram_node or dram_nodes/dram_weights say (default 1; 0: load and log it)");

/* the load keys as written, before they are judged */
struct pl_load_text {
	const char *size, *pages, *nodes, *weights;
	long node;
	bool strict, allow;
};

static int pl_load_parse(const struct pl_load_text *x, struct pl_load *l, char *why, size_t len)
{
	char *end;

	l->dram_size = memparse(x->size, &end);
	if (end == x->size || *end) {
		snprintf(why, len, "dram_size '%s' is not a size like 256M", x->size);
		return -EINVAL;
	}
	if (!strcmp(x->pages, "2m")) {
		l->huge = true;
	} else if (!strcmp(x->pages, "4k")) {
		l->huge = false;
	} else {
		snprintf(why, len, "dram_pages '%s': want 4k or 2m", x->pages);
		return -EINVAL;
	}
	l->strict = x->strict;
	l->allow_overwrite = x->allow;
	return pl_tier_parse(&l->tier, x->nodes, x->weights, x->node, why, len);
}

/* insmod's top-level target (l->spec NULL: target= was not given) */
int pl_load_top(struct pl_load *l, char *why, size_t len)
{
	const struct pl_load_text x = {
		.size = dram_size, .pages = dram_pages, .nodes = dram_nodes,
		.weights = dram_weights, .node = dram_node, .strict = dram_node_strict,
		.allow = allow_overwrite,
	};

	memset(l, 0, sizeof(*l));
	/* left out, the module loads without a top-level target; given empty, it is a mistake */
	if (target && !*target) {
		snprintf(why, len, "target= is empty: give /dev/pmemN or dram, or leave target= out (named targets only)");
		return -EINVAL;
	}
	l->spec = target;
	return pl_load_parse(&x, l, why, len);
}

const char *pl_load_targets(void)
{
	return targets;
}

/* a name of a named target: the core's rule (PL_TARGET_NAME_RULE), also load_target's */
bool pl_name_ok(const char *s)
{
	return pl_target_name_ok(s, strlen(s));
}

/*
 * "<name> <spec> [key=value ...]" (split in place): the keys are those of
 * the module parameters of the same names, each at most once, and apply to
 * this target alone.  The defaults are the module parameters' own defaults,
 * not the values insmod was given.
 */
int pl_load_line(struct pl_load *l, const char **name, char *line, char *why, size_t len)
{
	static const char * const keys[] = {
		"dram_size", "dram_node", "dram_nodes", "dram_weights", "dram_pages",
		"dram_node_strict", "allow_overwrite",
	};
	struct pl_load_text x = { .size = "256M", .pages = "2m", .nodes = "", .weights = "",
				  .node = -1, .strict = true, .allow = false };
	unsigned int seen = 0, k;
	char *tok, *val;
	int nf = 0;

	memset(l, 0, sizeof(*l));
	*name = NULL;
	while ((tok = strsep(&line, " \t\n")) != NULL) {
		if (!*tok)
			continue;
		if (nf == 0) {
			*name = tok;
			nf++;
			continue;
		}
		if (nf == 1) {
			l->spec = tok;
			nf++;
			continue;
		}
		val = strchr(tok, '=');
		if (val)
			*val++ = '\0';
		for (k = 0; k < ARRAY_SIZE(keys); k++)
			if (!strcmp(tok, keys[k]))
				break;
		if (!val || k == ARRAY_SIZE(keys)) {
			snprintf(why, len, "'%s': want key=value with key one of dram_size, dram_node, dram_nodes, dram_weights, dram_pages, dram_node_strict, allow_overwrite",
				 tok);
			return -EINVAL;
		}
		if (seen & (1u << k)) {
			snprintf(why, len, "%s given twice", tok);
			return -EINVAL;
		}
		seen |= 1u << k;
		if ((k == 1 && kstrtol(val, 0, &x.node)) ||
		    (k == 5 && kstrtobool(val, &x.strict)) ||
		    (k == 6 && kstrtobool(val, &x.allow))) {
			snprintf(why, len, "%s '%s' is not a %s", tok, val,
				 k == 1 ? "number" : "boolean (0 or 1)");
			return -EINVAL;
		}
		if (k == 0)
			x.size = val;
		else if (k == 2)
			x.nodes = val;
		else if (k == 3)
			x.weights = val;
		else if (k == 4)
			x.pages = val;
	}
	if (nf < 2) {
		snprintf(why, len, "want \"<name> <spec> [key=value ...]\" with spec /dev/pmemN or dram");
		return -EINVAL;
	}
	if (!pl_name_ok(*name)) {
		snprintf(why, len, "name '%s': want " PL_TARGET_NAME_RULE, *name);
		return -EINVAL;
	}
	return pl_load_parse(&x, l, why, len);
}
