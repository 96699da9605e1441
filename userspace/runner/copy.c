// SPDX-License-Identifier: GPL-2.0
/*
 * copy.c - copy kernels of the userspace runner only (the module has no
 * copy op): each 64-byte line is loaded from src = p + pl_copy_delta and
 * stored to p, with regular stores (copy) or non-temporal stores (ntcopy).
 * Same conventions as kmod/ops.c: SIMD registers named in asm, never
 * clobbered from the compiler's point of view (-mgeneral-regs-only).
 * Instructions per 64-byte line: 2 * 64 / width (loads + stores).
 */
#include "pl_core.h"
#include "runner.h"

__thread u64 pl_copy_delta;

#define CP8(ST)  do { u64 t_; asm volatile(						\
	"movq 0(%1), %0\n\t" ST " %0, 0(%2)\n\tmovq 8(%1), %0\n\t" ST " %0, 8(%2)\n\t"	\
	"movq 16(%1), %0\n\t" ST " %0, 16(%2)\n\tmovq 24(%1), %0\n\t" ST " %0, 24(%2)\n\t" \
	"movq 32(%1), %0\n\t" ST " %0, 32(%2)\n\tmovq 40(%1), %0\n\t" ST " %0, 40(%2)\n\t" \
	"movq 48(%1), %0\n\t" ST " %0, 48(%2)\n\tmovq 56(%1), %0\n\t" ST " %0, 56(%2)"	\
	: "=&r"(t_) : "r"(s), "r"(q) : "memory"); } while (0)
#define CP8_ONE(ST) do { u64 t_; asm volatile("movq (%1), %0\n\t" ST " %0, (%2)"	\
	: "=&r"(t_) : "r"(s), "r"(q) : "memory"); } while (0)
#define CP16(ST) asm volatile(								\
	"movdqa 0(%0), %%xmm1\n\tmovdqa 16(%0), %%xmm2\n\t"				\
	"movdqa 32(%0), %%xmm3\n\tmovdqa 48(%0), %%xmm4\n\t"				\
	ST " %%xmm1, 0(%1)\n\t" ST " %%xmm2, 16(%1)\n\t"				\
	ST " %%xmm3, 32(%1)\n\t" ST " %%xmm4, 48(%1)" :: "r"(s), "r"(q) : "memory")
#define CP16_ONE(ST) asm volatile("movdqa (%0), %%xmm1\n\t" ST " %%xmm1, (%1)"		\
	:: "r"(s), "r"(q) : "memory")
#define CP32(ST) asm volatile(								\
	"vmovdqa 0(%0), %%ymm1\n\tvmovdqa 32(%0), %%ymm2\n\t"				\
	ST " %%ymm1, 0(%1)\n\t" ST " %%ymm2, 32(%1)" :: "r"(s), "r"(q) : "memory")
#define CP32_ONE(ST) asm volatile("vmovdqa (%0), %%ymm1\n\t" ST " %%ymm1, (%1)"	\
	:: "r"(s), "r"(q) : "memory")
#define CP64(ST) asm volatile("vmovdqa64 (%0), %%zmm1\n\t" ST " %%zmm1, (%1)"		\
	:: "r"(s), "r"(q) : "memory")
#define CP64_ONE CP64

#define COPY_KERNEL(name, W, LINE, ONE)							\
static void name(char *p, u64 n, u64 v, int flush)					\
{											\
	char *q, *s, *end = p + n;							\
	u64 d = pl_copy_delta;								\
											\
	(void)v;									\
	(void)flush;									\
	if (n < PL_LINE) {								\
		for (q = p; q < end; q += (W)) {					\
			s = q + d;							\
			ONE;								\
		}									\
		return;									\
	}										\
	for (q = p; q < end; q += PL_LINE) {						\
		s = q + d;								\
		LINE;									\
	}										\
}

COPY_KERNEL(pl_k_copy_8, 8, CP8("movq"), CP8_ONE("movq"))
COPY_KERNEL(pl_k_copy_16, 16, CP16("movdqa"), CP16_ONE("movdqa"))
COPY_KERNEL(pl_k_copy_32, 32, CP32("vmovdqa"), CP32_ONE("vmovdqa"))
COPY_KERNEL(pl_k_copy_64, 64, CP64("vmovdqa64"), CP64_ONE("vmovdqa64"))
COPY_KERNEL(pl_k_ntcopy_8, 8, CP8("movnti"), CP8_ONE("movnti"))
COPY_KERNEL(pl_k_ntcopy_16, 16, CP16("movntdq"), CP16_ONE("movntdq"))
COPY_KERNEL(pl_k_ntcopy_32, 32, CP32("vmovntdq"), CP32_ONE("vmovntdq"))
COPY_KERNEL(pl_k_ntcopy_64, 64, CP64("vmovntdq"), CP64_ONE("vmovntdq"))

const struct pl_op_desc pl_user_ops[PLU_NOPS] = {
	{
		.name = "copy",
		.writes = true,
		.insn = { "mov", "movdqa", "vmovdqa", "vmovdqa64" },
		.needs = { 0, PL_F_SSE2, PL_F_AVX, PL_F_AVX512F },
		.fn = { pl_k_copy_8, pl_k_copy_16, pl_k_copy_32, pl_k_copy_64 },
	},
	{
		.name = "ntcopy",
		.writes = true,
		.insn = { "mov+movnti", "movdqa+movntdq", "vmovdqa+vmovntdq", "vmovdqa64+vmovntdq" },
		.needs = { PL_F_SSE2, PL_F_SSE2, PL_F_AVX, PL_F_AVX512F },
		.fn = { pl_k_ntcopy_8, pl_k_ntcopy_16, pl_k_ntcopy_32, pl_k_ntcopy_64 },
	},
};
