// SPDX-License-Identifier: GPL-2.0
/*
 * pmemlab - persistent-memory microbenchmark module.
 *
 * insmod pmemlab.ko target=/dev/pmemN [allow_overwrite=1]
 * insmod pmemlab.ko target=dram [dram_size=256M] [dram_node=N] [dram_pages=4k|2m]
 * insmod pmemlab.ko target=dram dram_nodes=0,1 dram_weights=3,1 [dram_size=...] [dram_pages=...]
 * insmod pmemlab.ko [target=...] targets="cxl dram dram_node=2;pm /dev/pmem0"
 *
 * Then drive it through /sys/kernel/pmemlab (docs/interface.md); the
 * method is in docs/method.md.
 */
#define pr_fmt(fmt) "pmemlab: " fmt

#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <asm/cpufeature.h>
#include <asm/tsc.h>
#include "pmemlab.h"

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

static int __init pl_init(void)
{
	int err;

	pl_mod.features = pl_cpu_features();
	if (!(pl_mod.features & PL_F_CLFLUSH) || !boot_cpu_has(X86_FEATURE_TSC)) {
		pr_err("this CPU lacks clflush or a TSC\n");
		return -EOPNOTSUPP;
	}
	if (!tsc_khz) {
		pr_err("the kernel has no TSC rate (tsc_khz = 0)\n");
		return -EOPNOTSUPP;
	}
	pl_tsc_load_note();
	pl_mod.prefetch_ok = pl_prefetch_probe();
	err = pl_prefetch_init();
	if (err)
		return err;
	pl_sysfs_init();
	err = pl_devs_init();
	if (err)
		pl_prefetch_exit();
	return err;
}

static void __exit pl_exit(void)
{
	pl_devs_exit();
	pl_prefetch_exit();
	pr_info("unloaded\n");
}

module_init(pl_init);
module_exit(pl_exit);
MODULE_DESCRIPTION("pmemlab: timed load/store/flush kernels on fsdax pmem and DRAM");
MODULE_LICENSE("GPL");
MODULE_VERSION(PL_VERSION);
