// SPDX-License-Identifier: GPL-2.0
/*
 * pmemlab - persistent-memory microbenchmark module.
 *
 * insmod pmemlab.ko target=/dev/pmemN [allow_overwrite=1]
 * insmod pmemlab.ko target=dram [dram_size=256M] [dram_node=N] [dram_pages=4k|2m]
 * insmod pmemlab.ko target=dram dram_nodes=0,1 dram_weights=3,1 [dram_size=...] [dram_pages=...]
 *
 * Then drive it through /sys/kernel/pmemlab (docs/interface.md); the
 * method is in docs/method.md.
 */
#define pr_fmt(fmt) "pmemlab: " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <asm/cpufeature.h>
#include <asm/tsc.h>
#include "pmemlab.h"

struct pl_global pl;

char *target;
module_param(target, charp, 0444);
MODULE_PARM_DESC(target, "/dev/pmemN (fsdax namespace) or dram");

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

static u32 pl_cpu_features(void)
{
	static const struct { u16 bit; u32 f; } map[] = {
#define PL_FEAT(ID, name, X86, leaf, sub, reg, bit, xcr0)	{ X86_FEATURE_##X86, PL_F_##ID },
#include "features.def"
	};
	u32 f = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(map); i++)
		if (boot_cpu_has(map[i].bit))
			f |= map[i].f;
	return f;
}

static int pl_parse_dram_size(u64 *out)
{
	char *end;
	u64 v = memparse(dram_size, &end);

	if (end == dram_size || *end) {
		pr_err("dram_size '%s' is not a size like 256M\n", dram_size);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int __init pl_init(void)
{
	struct pl_tier tier;
	char why[PL_WHY_LEN];
	bool huge;
	u64 size;
	int err;

	mutex_init(&pl.lock);
	pl_params_defaults(&pl.cfg);
	pl.features = pl_cpu_features();
	pl.allow_overwrite = allow_overwrite;
	if (!(pl.features & PL_F_CLFLUSH) || !boot_cpu_has(X86_FEATURE_TSC)) {
		pr_err("this CPU lacks clflush or a TSC\n");
		return -EOPNOTSUPP;
	}
	if (!tsc_khz) {
		pr_err("the kernel has no TSC rate (tsc_khz = 0)\n");
		return -EOPNOTSUPP;
	}
	pl_guard_load_note();
	if (!strcmp(dram_pages, "2m")) {
		huge = true;
	} else if (!strcmp(dram_pages, "4k")) {
		huge = false;
	} else {
		pr_err("dram_pages '%s': want 4k or 2m\n", dram_pages);
		return -EINVAL;
	}
	err = pl_parse_dram_size(&size);
	if (err)
		return err;
	err = pl_tier_parse(&tier, dram_nodes, dram_weights, dram_node, why, sizeof(why));
	if (err) {
		pl_printable(why);
		pr_err("%s\n", why);
		return err;
	}
	pl.prefetch_ok = pl_prefetch_probe();
	err = pl_target_open(&pl.t, target, size, &tier, huge);
	if (err)
		return err;
	err = pl_prefetch_init();
	if (err)
		goto err_target;
	err = pl_sysfs_init();
	if (err)
		goto err_prefetch;
	pr_info("target %s: %s, %llu bytes, node %d, %llu-byte pages, fs signature %s\n",
		target, pl.t.kind == PL_TARGET_FSDAX ? "fsdax" : "dram", pl.t.size,
		pl.t.node, pl.t.page_size, pl.t.fs_sig);
	return 0;

err_prefetch:
	pl_prefetch_exit();
err_target:
	pl_target_close(&pl.t);
	return err;
}

static void __exit pl_exit(void)
{
	pl_sysfs_exit();
	pl_run_reap();
	pl_prefetch_exit();
	pl_target_close(&pl.t);
	pr_info("unloaded\n");
}

module_init(pl_init);
module_exit(pl_exit);
MODULE_DESCRIPTION("pmemlab: timed load/store/flush kernels on fsdax pmem and DRAM");
MODULE_LICENSE("GPL");
MODULE_VERSION(PL_VERSION);
