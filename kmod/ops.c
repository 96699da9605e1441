// SPDX-License-Identifier: GPL-2.0
/*
 * ops.c - pmemlab access kernels: one function per op x instruction width.
 *
 * Every kernel emits exactly the instruction its op names, in inline asm
 * (never the kernel's clwb()/clflushopt() helpers, which fall back to
 * clflush through alternatives).  Store kernels write non-zero data that
 * changes with every access (v).  SIMD registers are named in the asm but
 * never listed as clobbers: the file is compiled with -mno-sse (kernel) or
 * -mgeneral-regs-only (userspace), so the compiler never uses them, and the
 * caller brackets SIMD use with kernel_fpu_begin/end.
 *
 * Bytes per call: n (a multiple of 64, or 8/16/32 for sub-line accesses).
 * Instructions per 64-byte line: 64 / width, plus one flush for flushing ops.
 */
#include "pl_core.h"

const char *const pl_feature_names[PL_F_NR] = {
	"sse2", "sse4_1", "avx", "avx2", "avx512f",
	"clflush", "clflushopt", "clwb", "rdtscp",
};

/* ---- store data: put v into the data register of the width ---- */
#define PREP_8(v)	do { } while (0)
#define PREP_16(v)	asm volatile("movq %0, %%xmm0\n\t"			\
				     "punpcklqdq %%xmm0, %%xmm0" :: "r"(v))
#define PREP_32(v)	asm volatile("vmovq %0, %%xmm0\n\t"			\
				     "vpunpcklqdq %%xmm0, %%xmm0, %%xmm0\n\t"	\
				     "vinsertf128 $1, %%xmm0, %%ymm0, %%ymm0"	\
				     :: "r"(v))
#define PREP_64(v)	asm volatile("vpbroadcastq %0, %%zmm0" :: "r"(v))
#define PREP_NONE(v)	do { (void)(v); } while (0)

/* ---- one instruction / one 64-byte line ---- */

/* width 8: general-purpose registers */
#define LD8_ONE(p, v)	do { u64 t_; asm volatile("movq (%1), %0" : "=r"(t_) : "r"(p) : "memory"); } while (0)
#define LD8_LINE(p, v)	do { u64 t_; asm volatile(				\
	"movq 0(%1), %0\n\tmovq 8(%1), %0\n\tmovq 16(%1), %0\n\t"		\
	"movq 24(%1), %0\n\tmovq 32(%1), %0\n\tmovq 40(%1), %0\n\t"		\
	"movq 48(%1), %0\n\tmovq 56(%1), %0"					\
	: "=&r"(t_) : "r"(p) : "memory"); } while (0)
#define ST8_ONE(p, v)	asm volatile("movq %1, (%0)" :: "r"(p), "r"(v) : "memory")
#define ST8_LINE(p, v)	asm volatile(						\
	"movq %1, 0(%0)\n\tmovq %1, 8(%0)\n\tmovq %1, 16(%0)\n\t"		\
	"movq %1, 24(%0)\n\tmovq %1, 32(%0)\n\tmovq %1, 40(%0)\n\t"		\
	"movq %1, 48(%0)\n\tmovq %1, 56(%0)" :: "r"(p), "r"(v) : "memory")
#define NTST8_ONE(p, v)	asm volatile("movnti %1, (%0)" :: "r"(p), "r"(v) : "memory")
#define NTST8_LINE(p, v) asm volatile(						\
	"movnti %1, 0(%0)\n\tmovnti %1, 8(%0)\n\tmovnti %1, 16(%0)\n\t"	\
	"movnti %1, 24(%0)\n\tmovnti %1, 32(%0)\n\tmovnti %1, 40(%0)\n\t"	\
	"movnti %1, 48(%0)\n\tmovnti %1, 56(%0)" :: "r"(p), "r"(v) : "memory")

/* width 16: xmm (loads into xmm1, stores from xmm0) */
#define LD16_ONE(p, v)	asm volatile("movdqa (%0), %%xmm1" :: "r"(p) : "memory")
#define LD16_LINE(p, v)	asm volatile(						\
	"movdqa 0(%0), %%xmm1\n\tmovdqa 16(%0), %%xmm1\n\t"			\
	"movdqa 32(%0), %%xmm1\n\tmovdqa 48(%0), %%xmm1" :: "r"(p) : "memory")
#define NTLD16_ONE(p, v) asm volatile("movntdqa (%0), %%xmm1" :: "r"(p) : "memory")
#define NTLD16_LINE(p, v) asm volatile(					\
	"movntdqa 0(%0), %%xmm1\n\tmovntdqa 16(%0), %%xmm1\n\t"		\
	"movntdqa 32(%0), %%xmm1\n\tmovntdqa 48(%0), %%xmm1" :: "r"(p) : "memory")
#define ST16_ONE(p, v)	asm volatile("movdqa %%xmm0, (%0)" :: "r"(p) : "memory")
#define ST16_LINE(p, v)	asm volatile(						\
	"movdqa %%xmm0, 0(%0)\n\tmovdqa %%xmm0, 16(%0)\n\t"			\
	"movdqa %%xmm0, 32(%0)\n\tmovdqa %%xmm0, 48(%0)" :: "r"(p) : "memory")
#define NTST16_ONE(p, v) asm volatile("movntdq %%xmm0, (%0)" :: "r"(p) : "memory")
#define NTST16_LINE(p, v) asm volatile(					\
	"movntdq %%xmm0, 0(%0)\n\tmovntdq %%xmm0, 16(%0)\n\t"			\
	"movntdq %%xmm0, 32(%0)\n\tmovntdq %%xmm0, 48(%0)" :: "r"(p) : "memory")

/* width 32: ymm */
#define LD32_ONE(p, v)	asm volatile("vmovdqa (%0), %%ymm1" :: "r"(p) : "memory")
#define LD32_LINE(p, v)	asm volatile(						\
	"vmovdqa 0(%0), %%ymm1\n\tvmovdqa 32(%0), %%ymm1" :: "r"(p) : "memory")
#define NTLD32_ONE(p, v) asm volatile("vmovntdqa (%0), %%ymm1" :: "r"(p) : "memory")
#define NTLD32_LINE(p, v) asm volatile(					\
	"vmovntdqa 0(%0), %%ymm1\n\tvmovntdqa 32(%0), %%ymm1" :: "r"(p) : "memory")
#define ST32_ONE(p, v)	asm volatile("vmovdqa %%ymm0, (%0)" :: "r"(p) : "memory")
#define ST32_LINE(p, v)	asm volatile(						\
	"vmovdqa %%ymm0, 0(%0)\n\tvmovdqa %%ymm0, 32(%0)" :: "r"(p) : "memory")
#define NTST32_ONE(p, v) asm volatile("vmovntdq %%ymm0, (%0)" :: "r"(p) : "memory")
#define NTST32_LINE(p, v) asm volatile(					\
	"vmovntdq %%ymm0, 0(%0)\n\tvmovntdq %%ymm0, 32(%0)" :: "r"(p) : "memory")

/* width 64: zmm (AVX-512F); an access is never smaller than 64 bytes here */
#define LD64_LINE(p, v)	asm volatile("vmovdqa64 (%0), %%zmm1" :: "r"(p) : "memory")
#define LD64_ONE	LD64_LINE
#define NTLD64_LINE(p, v) asm volatile("vmovntdqa (%0), %%zmm1" :: "r"(p) : "memory")
#define NTLD64_ONE	NTLD64_LINE
#define ST64_LINE(p, v)	asm volatile("vmovdqa64 %%zmm0, (%0)" :: "r"(p) : "memory")
#define ST64_ONE	ST64_LINE
#define NTST64_LINE(p, v) asm volatile("vmovntdq %%zmm0, (%0)" :: "r"(p) : "memory")
#define NTST64_ONE	NTST64_LINE

/* ---- flushes ---- */
#define FL_NONE(p)		do { } while (0)
#define FL_CLWB(p)		asm volatile("clwb (%0)" :: "r"(p) : "memory")
#define FL_CLFLUSHOPT(p)	asm volatile("clflushopt (%0)" :: "r"(p) : "memory")
#define FL_CLFLUSH(p)		asm volatile("clflush (%0)" :: "r"(p) : "memory")

/*
 * One kernel: sub-line accesses issue single instructions (one line, so
 * one flush); otherwise whole lines, flushed after each line or, for
 * flush == PL_FLUSH_ACCESS, all lines after the whole access.
 */
#define PL_KERNEL(name, W, PREP, LINE, ONE, FLUSH)				\
static void name(char *p, u64 n, u64 v, int flush)				\
{										\
	char *q, *end = p + n;							\
										\
	PREP(v);								\
	if (n < PL_LINE) {							\
		for (q = p; q < end; q += (W))					\
			ONE(q, v);						\
		FLUSH(p);							\
		return;								\
	}									\
	if (flush == PL_FLUSH_LINE) {						\
		for (q = p; q < end; q += PL_LINE) {				\
			LINE(q, v);						\
			FLUSH(q);						\
		}								\
		return;								\
	}									\
	for (q = p; q < end; q += PL_LINE)					\
		LINE(q, v);							\
	for (q = p; q < end; q += PL_LINE)					\
		FLUSH(q);							\
}

#define PL_KERNELS_W(W)								\
PL_KERNEL(pl_k_load_##W, W, PREP_NONE, LD##W##_LINE, LD##W##_ONE, FL_NONE)	\
PL_KERNEL(pl_k_store_##W, W, PREP_##W, ST##W##_LINE, ST##W##_ONE, FL_NONE)	\
PL_KERNEL(pl_k_ntstore_##W, W, PREP_##W, NTST##W##_LINE, NTST##W##_ONE, FL_NONE) \
PL_KERNEL(pl_k_clwb_##W, W, PREP_##W, ST##W##_LINE, ST##W##_ONE, FL_CLWB)	\
PL_KERNEL(pl_k_clflushopt_##W, W, PREP_##W, ST##W##_LINE, ST##W##_ONE, FL_CLFLUSHOPT) \
PL_KERNEL(pl_k_clflush_##W, W, PREP_##W, ST##W##_LINE, ST##W##_ONE, FL_CLFLUSH)

PL_KERNELS_W(8)
PL_KERNELS_W(16)
PL_KERNELS_W(32)
PL_KERNELS_W(64)
PL_KERNEL(pl_k_ntload_16, 16, PREP_NONE, NTLD16_LINE, NTLD16_ONE, FL_NONE)
PL_KERNEL(pl_k_ntload_32, 32, PREP_NONE, NTLD32_LINE, NTLD32_ONE, FL_NONE)
PL_KERNEL(pl_k_ntload_64, 64, PREP_NONE, NTLD64_LINE, NTLD64_ONE, FL_NONE)

#define FNS(k)	{ pl_k_##k##_8, pl_k_##k##_16, pl_k_##k##_32, pl_k_##k##_64 }
#define VEC(f8, extra)	{ (f8), PL_F_SSE2 | (extra), PL_F_AVX | (extra),	\
			  PL_F_AVX512F | (extra) }

/* The op table: name, what it needs per width, the kernels. */
const struct pl_op_desc pl_ops[PL_OP_NR] = {
	[PL_OP_LOAD] = {
		.name = "load",
		.insn = { "mov", "movdqa", "vmovdqa", "vmovdqa64" },
		.needs = VEC(0, 0),
		.fn = FNS(load),
	},
	[PL_OP_NTLOAD] = {
		.name = "ntload",
		.insn = { NULL, "movntdqa", "vmovntdqa", "vmovntdqa" },
		.needs = { PL_F_NONE, PL_F_SSE41, PL_F_AVX2, PL_F_AVX512F },
		.fn = { NULL, pl_k_ntload_16, pl_k_ntload_32, pl_k_ntload_64 },
	},
	[PL_OP_STORE] = {
		.name = "store",
		.writes = true,
		.insn = { "mov", "movdqa", "vmovdqa", "vmovdqa64" },
		.needs = VEC(0, 0),
		.fn = FNS(store),
	},
	[PL_OP_NTSTORE] = {
		.name = "ntstore",
		.writes = true,
		.insn = { "movnti", "movntdq", "vmovntdq", "vmovntdq" },
		.needs = VEC(PL_F_SSE2, 0),
		.fn = FNS(ntstore),
	},
	[PL_OP_STORE_CLWB] = {
		.name = "store+clwb",
		.writes = true,
		.flushes = true,
		.insn = { "mov+clwb", "movdqa+clwb", "vmovdqa+clwb", "vmovdqa64+clwb" },
		.needs = VEC(PL_F_CLWB, PL_F_CLWB),
		.fn = FNS(clwb),
	},
	[PL_OP_STORE_CLFLUSHOPT] = {
		.name = "store+clflushopt",
		.writes = true,
		.flushes = true,
		.insn = { "mov+clflushopt", "movdqa+clflushopt", "vmovdqa+clflushopt",
			  "vmovdqa64+clflushopt" },
		.needs = VEC(PL_F_CLFLUSHOPT, PL_F_CLFLUSHOPT),
		.fn = FNS(clflushopt),
	},
	[PL_OP_STORE_CLFLUSH] = {
		.name = "store+clflush",
		.writes = true,
		.flushes = true,
		.insn = { "mov+clflush", "movdqa+clflush", "vmovdqa+clflush",
			  "vmovdqa64+clflush" },
		.needs = VEC(PL_F_CLFLUSH, PL_F_CLFLUSH),
		.fn = FNS(clflush),
	},
};

int pl_op_lookup(const char *name, size_t len)
{
	int i;

	for (i = 0; i < PL_OP_NR; i++)
		if (strlen(pl_ops[i].name) == len && !memcmp(pl_ops[i].name, name, len))
			return i;
	return -1;
}

u32 pl_op_missing(enum pl_op op, unsigned int width, u32 features)
{
	u32 need = pl_ops[op].needs[pl_width_idx(width)];

	if (need & PL_F_NONE)
		return PL_F_NONE;
	return need & ~features;
}
