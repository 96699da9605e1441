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
 * Instructions per 64-byte line: 64 / width, plus one flush for flushing ops,
 * plus 2 (add, jump) per loop trip of four lines.
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

/*
 * ---- one instruction, given its memory operand a as asm text ----
 * Loads go to %[t] (width 8) or xmm1/ymm1/zmm1, stores come from %[v]
 * (width 8) or xmm0/ymm0/zmm0 (PREP).
 */
#define I_LD8(a)	"movq " a ", %[t]\n\t"
#define I_LD16(a)	"movdqa " a ", %%xmm1\n\t"
#define I_LD32(a)	"vmovdqa " a ", %%ymm1\n\t"
#define I_LD64(a)	"vmovdqa64 " a ", %%zmm1\n\t"
#define I_NTLD16(a)	"movntdqa " a ", %%xmm1\n\t"
#define I_NTLD32(a)	"vmovntdqa " a ", %%ymm1\n\t"
#define I_NTLD64(a)	"vmovntdqa " a ", %%zmm1\n\t"
#define I_ST8(a)	"movq %[v], " a "\n\t"
#define I_ST16(a)	"movdqa %%xmm0, " a "\n\t"
#define I_ST32(a)	"vmovdqa %%ymm0, " a "\n\t"
#define I_ST64(a)	"vmovdqa64 %%zmm0, " a "\n\t"
#define I_NTST8(a)	"movnti %[v], " a "\n\t"
#define I_NTST16(a)	"movntdq %%xmm0, " a "\n\t"
#define I_NTST32(a)	"vmovntdq %%ymm0, " a "\n\t"
#define I_NTST64(a)	"vmovntdq %%zmm0, " a "\n\t"

/* flushes, same convention */
#define F_NONE(a)	""
#define F_CLWB(a)	"clwb " a "\n\t"
#define F_CLFLUSHOPT(a)	"clflushopt " a "\n\t"
#define F_CLFLUSH(a)	"clflush " a "\n\t"

/*
 * ---- one 64-byte line at byte o (asm text) of a block ----
 * A block ends at %[e]; the induction register %[i] counts up from minus
 * the block's length to 0, so byte o of the current trip is o(%[e],%[i]):
 * no pointer arithmetic per line, one add and one jump per loop trip.
 */
#define AT(o)		o "(%[e],%[i])"
#define LINE_8(I, o)	I(AT(o "+0")) I(AT(o "+8")) I(AT(o "+16")) I(AT(o "+24")) \
			I(AT(o "+32")) I(AT(o "+40")) I(AT(o "+48")) I(AT(o "+56"))
#define LINE_16(I, o)	I(AT(o "+0")) I(AT(o "+16")) I(AT(o "+32")) I(AT(o "+48"))
#define LINE_32(I, o)	I(AT(o "+0")) I(AT(o "+32"))
#define LINE_64(I, o)	I(AT(o))

/* a loop trip: PL_UNROLL lines, each flushed after its stores (F_NONE: none) */
#define PL_UNROLL	4
#define PL_BLOCK	(PL_UNROLL * PL_LINE)
#define LINES4(L, I, F)	L(I, "0") F(AT("0")) L(I, "64") F(AT("64"))		\
			L(I, "128") F(AT("128")) L(I, "192") F(AT("192"))
#define LINES1(L, I, F)	L(I, "0") F(AT("0"))
#define FLUSH4(F)	F(AT("0")) F(AT("64")) F(AT("128")) F(AT("192"))

/* one asm statement over the operands every kernel may name */
#define PL_ASM(text)	do {							\
	u64 t_;									\
	asm volatile(text : [t] "=&r"(t_)					\
		     : [e] "r"(e), [i] "r"(i), [v] "r"(v), [p] "r"(q)		\
		     : "memory");						\
	(void)t_;								\
} while (0)

/* run TEXT over [p + from, p + to) in trips of STEP bytes (to - from: multiple of STEP) */
#define PL_LOOP(from, to, STEP, TEXT) do {					\
	e = p + (to);								\
	for (i = (s64)(from) - (s64)(to); i; i += (STEP))			\
		PL_ASM(TEXT);							\
} while (0)

/*
 * One kernel: sub-line accesses issue single instructions (one line, so
 * one flush); otherwise whole lines, four per loop trip and the remaining
 * zero to three one by one, flushed after each line or, for flush ==
 * PL_FLUSH_ACCESS, all lines after the whole access.  Instructions per
 * line: 64 / W (+ 1 flush) + 2 per trip of four lines.
 */
#define PL_KERNEL(name, W, PREP, I, F, FL)					\
static void name(char *p, u64 n, u64 v, int flush)				\
{										\
	u64 nb = n & ~(u64)(PL_BLOCK - 1);					\
	char *q = p, *e = p;							\
	s64 i = 0;								\
										\
	PREP(v);								\
	if (n < PL_LINE) {							\
		for (; q < p + n; q += (W))					\
			PL_ASM(I("(%[p])"));					\
		q = p;								\
		if (FL)								\
			PL_ASM(F("(%[p])"));					\
		return;								\
	}									\
	if (!(FL) || flush == PL_FLUSH_LINE) {					\
		PL_LOOP(0, nb, PL_BLOCK, LINES4(LINE_##W, I, F));		\
		PL_LOOP(nb, n, PL_LINE, LINES1(LINE_##W, I, F));		\
		return;								\
	}									\
	PL_LOOP(0, nb, PL_BLOCK, LINES4(LINE_##W, I, F_NONE));			\
	PL_LOOP(nb, n, PL_LINE, LINES1(LINE_##W, I, F_NONE));			\
	PL_LOOP(0, nb, PL_BLOCK, FLUSH4(F));					\
	PL_LOOP(nb, n, PL_LINE, F(AT("0")));					\
}

#define PL_KERNELS_W(W)								\
PL_KERNEL(pl_k_load_##W, W, PREP_NONE, I_LD##W, F_NONE, 0)			\
PL_KERNEL(pl_k_store_##W, W, PREP_##W, I_ST##W, F_NONE, 0)			\
PL_KERNEL(pl_k_ntstore_##W, W, PREP_##W, I_NTST##W, F_NONE, 0)		\
PL_KERNEL(pl_k_clwb_##W, W, PREP_##W, I_ST##W, F_CLWB, 1)			\
PL_KERNEL(pl_k_clflushopt_##W, W, PREP_##W, I_ST##W, F_CLFLUSHOPT, 1)	\
PL_KERNEL(pl_k_clflush_##W, W, PREP_##W, I_ST##W, F_CLFLUSH, 1)

PL_KERNELS_W(8)
PL_KERNELS_W(16)
PL_KERNELS_W(32)
PL_KERNELS_W(64)
PL_KERNEL(pl_k_ntload_16, 16, PREP_NONE, I_NTLD16, F_NONE, 0)
PL_KERNEL(pl_k_ntload_32, 32, PREP_NONE, I_NTLD32, F_NONE, 0)
PL_KERNEL(pl_k_ntload_64, 64, PREP_NONE, I_NTLD64, F_NONE, 0)

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
