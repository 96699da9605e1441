// SPDX-License-Identifier: GPL-2.0
/*
 * tsc.c - the TSC's facts: invariant and kept reliable by the kernel, or
 * not (the module's files tsc_invariant and tsc_reliable, copied into every
 * result row by the controller; runs are flagged, not refused:
 * docs/method.md says why), and the load's note when either is not.
 */
#define pr_fmt(fmt) "pmemlab: " fmt

#include <linux/kernel.h>
#include <asm/cpufeature.h>
#include <asm/tsc.h>
#include "pmemlab.h"

bool pl_tsc_invariant(void)
{
	return boot_cpu_has(X86_FEATURE_CONSTANT_TSC) && boot_cpu_has(X86_FEATURE_NONSTOP_TSC);
}

/* the kernel has not marked it unstable (unsynchronised, or drifting against its watchdog) */
bool pl_tsc_reliable(void)
{
	return !check_tsc_unstable();
}

void pl_tsc_load_note(void)
{
	if (!pl_tsc_invariant())
		pr_warn("the TSC is not invariant (constant_tsc %d, nonstop_tsc %d): results are flagged tsc_invariant=0\n",
			boot_cpu_has(X86_FEATURE_CONSTANT_TSC), boot_cpu_has(X86_FEATURE_NONSTOP_TSC));
	if (!pl_tsc_reliable())
		pr_warn("the kernel marked the TSC unstable: results are flagged tsc_reliable=0\n");
}
