// SPDX-License-Identifier: GPL-2.0
/*
 * copy.c - copy kernels of the userspace runner only (the module has no
 * copy op): each 64-byte line is loaded from src = p + pl_copy_delta and
 * stored to p, with regular stores (copy) or non-temporal stores (ntcopy).
 * Same conventions as kmod/core/ops.c: SIMD registers named in asm, never
 * clobbered from the compiler's point of view (-mgeneral-regs-only).
 * Instructions per 64-byte line: 2 * 64 / width (loads + stores), plus 2
 * (add, jump) per loop trip of four lines.
 */
#include "pl_core.h"
#include "runner.h"

__thread u64 pl_copy_delta;

/*
 * One 64-byte line at byte o (asm text) of the current trip: loaded from
 * o(%[s],%[i]), stored to o(%[d],%[i]).  %[s] and %[d] are the ends of the
 * source and destination blocks, %[i] counts up from minus the block's
 * length to 0: no pointer arithmetic per line, one add and one jump per trip.
 */
#define SRC(o)	o "(%[s],%[i])"
#define DST(o)	o "(%[d],%[i])"
#define CP8_W(ST, o)	"movq " SRC(o) ", %[t]\n\t" ST " %[t], " DST(o) "\n\t"
#define CP8(ST, o)	CP8_W(ST, o "+0") CP8_W(ST, o "+8") CP8_W(ST, o "+16")	\
			CP8_W(ST, o "+24") CP8_W(ST, o "+32") CP8_W(ST, o "+40")	\
			CP8_W(ST, o "+48") CP8_W(ST, o "+56")
#define CP16(ST, o)	"movdqa " SRC(o "+0") ", %%xmm1\n\tmovdqa " SRC(o "+16") ", %%xmm2\n\t"	\
			"movdqa " SRC(o "+32") ", %%xmm3\n\tmovdqa " SRC(o "+48") ", %%xmm4\n\t"	\
			ST " %%xmm1, " DST(o "+0") "\n\t" ST " %%xmm2, " DST(o "+16") "\n\t"	\
			ST " %%xmm3, " DST(o "+32") "\n\t" ST " %%xmm4, " DST(o "+48") "\n\t"
#define CP32(ST, o)	"vmovdqa " SRC(o "+0") ", %%ymm1\n\tvmovdqa " SRC(o "+32") ", %%ymm2\n\t"	\
			ST " %%ymm1, " DST(o "+0") "\n\t" ST " %%ymm2, " DST(o "+32") "\n\t"
#define CP64(ST, o)	"vmovdqa64 " SRC(o) ", %%zmm1\n\t" ST " %%zmm1, " DST(o) "\n\t"
/* sub-line: one load and one store of the width at (%[s],%[i]) -> (%[d],%[i]) */
#define CP8_ONE(ST)	"movq " SRC("") ", %[t]\n\t" ST " %[t], " DST("") "\n\t"
#define CP16_ONE(ST)	"movdqa " SRC("") ", %%xmm1\n\t" ST " %%xmm1, " DST("") "\n\t"
#define CP32_ONE(ST)	"vmovdqa " SRC("") ", %%ymm1\n\t" ST " %%ymm1, " DST("") "\n\t"
#define CP64_ONE(ST)	CP64(ST, "")

#define CP_ASM(text)	do {							\
	u64 t_;									\
	asm volatile(text : [t] "=&r"(t_)					\
		     : [s] "r"(s), [d] "r"(d), [i] "r"(i) : "memory");		\
	(void)t_;								\
} while (0)

/* TEXT over bytes [from, to) of the access, STEP bytes per trip */
#define CP_LOOP(from, to, STEP, TEXT) do {					\
	d = p + (to);								\
	s = d + delta;								\
	for (i = (s64)(from) - (s64)(to); i; i += (STEP))			\
		CP_ASM(TEXT);							\
} while (0)

/* four lines per trip, then the remaining zero to three one by one */
#define COPY_KERNEL(name, W, LINE, ONE, ST)						\
static void name(char *p, u64 n, u64 v, int flush)					\
{											\
	u64 nb = n & ~(u64)(4 * PL_LINE - 1), delta = pl_copy_delta;			\
	char *d, *s;									\
	s64 i;										\
											\
	(void)v;									\
	(void)flush;									\
	if (n < PL_LINE) {								\
		CP_LOOP(0, n, (W), ONE(ST));						\
		return;									\
	}										\
	CP_LOOP(0, nb, 4 * PL_LINE, LINE(ST, "0") LINE(ST, "64")			\
				    LINE(ST, "128") LINE(ST, "192"));			\
	CP_LOOP(nb, n, PL_LINE, LINE(ST, "0"));						\
}

COPY_KERNEL(pl_k_copy_8, 8, CP8, CP8_ONE, "movq")
COPY_KERNEL(pl_k_copy_16, 16, CP16, CP16_ONE, "movdqa")
COPY_KERNEL(pl_k_copy_32, 32, CP32, CP32_ONE, "vmovdqa")
COPY_KERNEL(pl_k_copy_64, 64, CP64, CP64_ONE, "vmovdqa64")
COPY_KERNEL(pl_k_ntcopy_8, 8, CP8, CP8_ONE, "movnti")
COPY_KERNEL(pl_k_ntcopy_16, 16, CP16, CP16_ONE, "movntdq")
COPY_KERNEL(pl_k_ntcopy_32, 32, CP32, CP32_ONE, "vmovntdq")
COPY_KERNEL(pl_k_ntcopy_64, 64, CP64, CP64_ONE, "vmovntdq")

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
