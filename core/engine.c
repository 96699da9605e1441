// SPDX-License-Identifier: GPL-2.0
/*
 * engine.c - pmemlab's timed loops, generated from ops.def.
 *
 * For every op x instruction form of ops.def this file defines
 *   - one bandwidth loop per address family (walk.h), for runs without
 *     fences, read_pct mixing and delay:
 *	pl_bw_<op>_<form>_{linear,rand,dimm_linear,dimm_rand}()
 *   - one full bandwidth loop for the others: pl_bwf_<op>_<form>()
 *   - one latency loop: pl_lat_<op>_<form>()
 * pl_eng_init() selects one of them once; pl_eng_run() calls it once per
 * timed segment.  Inside a loop nothing is called: the address family, the
 * access (asm text of ops.def), the counting and the clock reads are all
 * inline, and the counters live in locals written back when the segment
 * ends.
 *
 * Bandwidth: accesses back to back; the clock is read once per batch of
 * accesses.  Each access, with all its shapes, is one asm statement: one
 * line (or one to four units) straight, longer accesses four lines per
 * loop trip on an induction register that counts up to 0 (one add and one
 * jump per trip), then the remaining lines one by one.
 *
 * Latency: one access at a time, bracketed as in FAST'20 section 3.2, in
 * one asm statement per access shape:
 *	mfence; rdtscp; lfence; mov eax, edx to two registers
 *	the access (its flushes; a loop of add/jnz per line when it spans
 *	            more than one line)
 *	mfence; rdtscp; lfence
 * (without rdtscp: lfence; rdtsc; lfence for each stamp).  Cold/warm
 * preparation, the address, the read/write choice and the store data in
 * its register are all done before the first fence.  The calibration is
 * the same asm text without the access; its median is subtracted.
 */
#include "walk.h"

/*
 * Every generated loop keeps its own code under its own name: identical
 * code folding would let a loop's symbol (the loop= of a result) run
 * another loop's body.  No instrumentation either: no ftrace entry call
 * (notrace), no stack canary with its call to __stack_chk_fail.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define PL_LOOP	__attribute__((__noipa__)) notrace __no_stack_protector
#else
#define PL_LOOP	noinline notrace __no_stack_protector
#endif

static __always_inline bool pl_is_copy(u32 opf)
{
	return (opf & PL_OPF_READS) && (opf & PL_OPF_WRITES);
}

/* ---- forms: width, and how the store data lives in the registers ---- */
#define PL_W_8		8
#define PL_W_16sse	16
#define PL_W_16vex	16
#define PL_W_32		32
#define PL_W_64		64

/* loops that used ymm/zmm end with vzeroupper */
#define PL_VZU_8
#define PL_VZU_16sse
#define PL_VZU_16vex
#define PL_VZU_32	asm volatile("vzeroupper" ::: "memory")
#define PL_VZU_64	asm volatile("vzeroupper" ::: "memory")

/*
 * Bandwidth loops: the data register holds the store data of all lanes,
 * the increment register (xmm2/ymm2/zmm2) PL_DATA_INC; each access adds
 * one to the other (one instruction; two for ymm, which needs AVX2 for a
 * 256-bit add, so the low half is added and copied up, AVX only).
 */
static __always_inline void pl_data_begin_8(u64 v) { }
static __always_inline void pl_data_step_8(u64 *v) { *v += PL_DATA_INC; }
static __always_inline u64 pl_data_end_8(u64 v) { return v; }

static __always_inline void pl_data_begin_16sse(u64 v)
{
	asm volatile("movq %0, %%xmm0\n\tpunpcklqdq %%xmm0, %%xmm0\n\t"
		     "movq %1, %%xmm2\n\tpunpcklqdq %%xmm2, %%xmm2"
		     :: "r"(v), "r"(PL_DATA_INC));
}

static __always_inline void pl_data_step_16sse(u64 *v)
{
	asm volatile("paddq %xmm2, %xmm0");
}

static __always_inline u64 pl_data_end_16sse(u64 v)
{
	asm volatile("movq %%xmm0, %0" : "=r"(v));
	return v;
}

static __always_inline void pl_data_begin_16vex(u64 v)
{
	asm volatile("vmovq %0, %%xmm0\n\tvpunpcklqdq %%xmm0, %%xmm0, %%xmm0\n\t"
		     "vmovq %1, %%xmm2\n\tvpunpcklqdq %%xmm2, %%xmm2, %%xmm2"
		     :: "r"(v), "r"(PL_DATA_INC));
}

static __always_inline void pl_data_step_16vex(u64 *v)
{
	asm volatile("vpaddq %xmm2, %xmm0, %xmm0");
}

static __always_inline u64 pl_data_end_16vex(u64 v)
{
	asm volatile("vmovq %%xmm0, %0" : "=r"(v));
	return v;
}

static __always_inline void pl_data_begin_32(u64 v)
{
	asm volatile("vmovq %0, %%xmm0\n\tvpunpcklqdq %%xmm0, %%xmm0, %%xmm0\n\t"
		     "vinsertf128 $1, %%xmm0, %%ymm0, %%ymm0\n\t"
		     "vmovq %1, %%xmm2\n\tvpunpcklqdq %%xmm2, %%xmm2, %%xmm2"
		     :: "r"(v), "r"(PL_DATA_INC));
}

static __always_inline void pl_data_step_32(u64 *v)
{
	asm volatile("vpaddq %xmm2, %xmm0, %xmm0\n\t"
		     "vinsertf128 $1, %xmm0, %ymm0, %ymm0");
}

static __always_inline u64 pl_data_end_32(u64 v)
{
	asm volatile("vmovq %%xmm0, %0" : "=r"(v));
	return v;
}

static __always_inline void pl_data_begin_64(u64 v)
{
	asm volatile("vpbroadcastq %0, %%zmm0\n\tvpbroadcastq %1, %%zmm2"
		     :: "r"(v), "r"(PL_DATA_INC));
}

static __always_inline void pl_data_step_64(u64 *v)
{
	asm volatile("vpaddq %zmm2, %zmm0, %zmm0");
}

static __always_inline u64 pl_data_end_64(u64 v)
{
	asm volatile("vmovq %%xmm0, %0" : "=r"(v));
	return v;
}

/* latency loops: put this sample's data v into the data register (before the bracket) */
static __always_inline void pl_prep_8(u64 v) { }

static __always_inline void pl_prep_16sse(u64 v)
{
	asm volatile("movq %0, %%xmm0\n\tpunpcklqdq %%xmm0, %%xmm0" :: "r"(v));
}

static __always_inline void pl_prep_16vex(u64 v)
{
	asm volatile("vmovq %0, %%xmm0\n\tvpunpcklqdq %%xmm0, %%xmm0, %%xmm0" :: "r"(v));
}

static __always_inline void pl_prep_32(u64 v)
{
	asm volatile("vmovq %0, %%xmm0\n\tvpunpcklqdq %%xmm0, %%xmm0, %%xmm0\n\t"
		     "vinsertf128 $1, %%xmm0, %%ymm0, %%ymm0" :: "r"(v));
}

static __always_inline void pl_prep_64(u64 v)
{
	asm volatile("vpbroadcastq %0, %%zmm0" :: "r"(v));
}

/* ---- asm text of the access shapes ---- */

/* memory operands: direct ([p] destination, [q] source) or induction ([e]/[s] + [i]) */
#define PA(o)		o "(%[p])"
#define PS(o)		o "(%[q])"
#define LA(o)		o "(%[e],%[i])"
#define LS(o)		o "(%[s],%[i])"

/* one 64-byte line at offset o: 64 / width units */
#define PL_LINE_8(U, A, S, o)							\
	U(A(o "+0"), S(o "+0")) U(A(o "+8"), S(o "+8"))				\
	U(A(o "+16"), S(o "+16")) U(A(o "+24"), S(o "+24"))			\
	U(A(o "+32"), S(o "+32")) U(A(o "+40"), S(o "+40"))			\
	U(A(o "+48"), S(o "+48")) U(A(o "+56"), S(o "+56"))
#define PL_LINE_16sse(U, A, S, o)						\
	U(A(o "+0"), S(o "+0")) U(A(o "+16"), S(o "+16"))			\
	U(A(o "+32"), S(o "+32")) U(A(o "+48"), S(o "+48"))
#define PL_LINE_16vex	PL_LINE_16sse
#define PL_LINE_32(U, A, S, o)	U(A(o "+0"), S(o "+0")) U(A(o "+32"), S(o "+32"))
#define PL_LINE_64(U, A, S, o)	U(A(o), S(o))

/* four lines at [e]+[i] (each followed by its flush, FL: ops.def PL_FL_*) */
#define PL_LINES4(form, U, FL)							\
	PL_LINE_##form(U, LA, LS, "0") FL(LA("0"))				\
	PL_LINE_##form(U, LA, LS, "64") FL(LA("64"))				\
	PL_LINE_##form(U, LA, LS, "128") FL(LA("128"))				\
	PL_LINE_##form(U, LA, LS, "192") FL(LA("192"))
#define PL_FLUSH4(FL)	FL(LA("0")) FL(LA("64")) FL(LA("128")) FL(LA("192"))

/*
 * Accesses shorter than a line: n is a power of two from the width to 32,
 * W(text) wraps each shape (the latency brackets put T0/T1 around it), and
 * every shape ends at label 9.
 */
#define PL_SUB_8(U, FL, W)							\
	"cmp $8, %[n]\n\tjne 11f\n\t"						\
	W(U(PA("0"), PS("0")) FL(PA("0"))) "jmp 9f\n"				\
	"11:\n\tcmp $16, %[n]\n\tjne 12f\n\t"					\
	W(U(PA("0"), PS("0")) U(PA("8"), PS("8")) FL(PA("0"))) "jmp 9f\n"	\
	"12:\n\t"								\
	W(U(PA("0"), PS("0")) U(PA("8"), PS("8")) U(PA("16"), PS("16"))	\
	  U(PA("24"), PS("24")) FL(PA("0"))) "jmp 9f\n"
#define PL_SUB_16sse(U, FL, W)							\
	"cmp $16, %[n]\n\tjne 12f\n\t"						\
	W(U(PA("0"), PS("0")) FL(PA("0"))) "jmp 9f\n"				\
	"12:\n\t"								\
	W(U(PA("0"), PS("0")) U(PA("16"), PS("16")) FL(PA("0"))) "jmp 9f\n"
#define PL_SUB_16vex	PL_SUB_16sse
#define PL_SUB_32(U, FL, W)	W(U(PA("0"), PS("0")) FL(PA("0"))) "jmp 9f\n"
#define PL_SUB_64(U, FL, W)	"jmp 9f\n"	/* a 64-byte form has no shorter access */
#define PL_AS_IS(text)		text

/*
 * Bandwidth: accesses of more than a line, four lines per trip on the
 * induction register [i] (counting up to 0 from minus the bytes of the
 * whole blocks, [e]/[s] at their end), then the remaining lines one by one.
 * Flushes after each line; with PL_FL_NONE as FL and the flushes after the
 * access (FLA), all lines are stored first and then flushed.
 */
#define PL_BW_MULTI(form, U, FL, end)						\
	"mov %[n], %[i]\n\tand $-256, %[i]\n\tjz 5f\n\t"			\
	"lea (%[p],%[i]), %[e]\n\tlea (%[q],%[i]), %[s]\n\tneg %[i]\n"		\
	"4:\n\t" PL_LINES4(form, U, FL) "add $256, %[i]\n\tjnz 4b\n"		\
	"5:\n\tmov %[n], %[i]\n\tand $255, %[i]\n\tjz " end "\n\t"		\
	"lea (%[p],%[n]), %[e]\n\tlea (%[q],%[n]), %[s]\n\tneg %[i]\n"		\
	"6:\n\t" PL_LINE_##form(U, LA, LS, "0") FL(LA("0"))			\
	"add $64, %[i]\n\tjnz 6b\n\t"
#define PL_BW_FLUSHES(FL)							\
	"7:\n\tmov %[n], %[i]\n\tand $-256, %[i]\n\tjz 71f\n\t"		\
	"lea (%[p],%[i]), %[e]\n\tneg %[i]\n"					\
	"70:\n\t" PL_FLUSH4(FL) "add $256, %[i]\n\tjnz 70b\n"			\
	"71:\n\tmov %[n], %[i]\n\tand $255, %[i]\n\tjz 9f\n\t"			\
	"lea (%[p],%[n]), %[e]\n\tneg %[i]\n"					\
	"72:\n\t" FL(LA("0")) "add $64, %[i]\n\tjnz 72b\n\t"

/*
 * Four lines (256 bytes, the papers' most common access) straight at [p],
 * each followed by its flush, or (FLA) the four flushes after the stores.
 * (Local labels of one asm text: 2 shorter accesses, 11-12 their parts,
 * 4-6 longer ones, 7 four lines or, with FLA, the flushes of longer ones
 * with 70-72, 8 one line, 9 the end, 13 four lines with FLA.)
 */
#define PL_FOUR(form, U, FL)							\
	PL_LINE_##form(U, PA, PS, "0") FL(PA("0"))				\
	PL_LINE_##form(U, PA, PS, "64") FL(PA("64"))				\
	PL_LINE_##form(U, PA, PS, "128") FL(PA("128"))				\
	PL_LINE_##form(U, PA, PS, "192") FL(PA("192"))
#define PL_FOUR_FLA(form, U, FL)						\
	PL_FOUR(form, U, PL_FL_NONE) FL(PA("0")) FL(PA("64")) FL(PA("128")) FL(PA("192"))

/*
 * The whole access as one asm text: exactly a line first (the common case
 * pays a compare and a taken jump), then shorter accesses, four lines
 * straight, and longer accesses.
 */
#define PL_BW_TEXT(form, U, FL)							\
	"cmp $64, %[n]\n\tje 8f\n\tjb 2f\n\t"					\
	"cmp $256, %[n]\n\tje 7f\n\t"						\
	PL_BW_MULTI(form, U, FL, "9f") "jmp 9f\n"				\
	"2:\n\t" PL_SUB_##form(U, FL, PL_AS_IS)					\
	"7:\n\t" PL_FOUR(form, U, FL) "jmp 9f\n"				\
	"8:\n\t" PL_LINE_##form(U, PA, PS, "0") FL(PA("0"))			\
	"9:\n\t"
#define PL_BW_TEXT_FLA(form, U, FL)						\
	"cmp $64, %[n]\n\tje 8f\n\tjb 2f\n\t"					\
	"cmp $256, %[n]\n\tje 13f\n\t"						\
	PL_BW_MULTI(form, U, PL_FL_NONE, "7f") PL_BW_FLUSHES(FL) "jmp 9f\n"	\
	"2:\n\t" PL_SUB_##form(U, FL, PL_AS_IS)					\
	"13:\n\t" PL_FOUR_FLA(form, U, FL) "jmp 9f\n"				\
	"8:\n\t" PL_LINE_##form(U, PA, PS, "0") FL(PA("0"))			\
	"9:\n\t"

/* operands a form's units name: %[t] (load temporary) and %[v] (data) for form 8 */
#define PL_OUT_8	, [t] "=&r"(t_)
#define PL_OUT_16sse
#define PL_OUT_16vex
#define PL_OUT_32
#define PL_OUT_64
#define PL_IN_8		, [v] "r"(v_)
#define PL_IN_16sse
#define PL_IN_16vex
#define PL_IN_32
#define PL_IN_64

#define PL_BW_ASM(form, text) do {						\
	u64 t_ __maybe_unused;							\
	char *e_, *s_;								\
	s64 i_;									\
										\
	asm volatile(text							\
		     : [e] "=&r"(e_), [s] "=&r"(s_), [i] "=&r"(i_) PL_OUT_##form	\
		     : [p] "r"(p_), [q] "r"(q_), [n] "r"(n) PL_IN_##form		\
		     : "memory", "cc");						\
} while (0)

/*
 * pl_acc_<op>_<form>(p, q, n, v, fla): one access of n bytes at p (source
 * q for copies) in the bandwidth loops, as one asm statement; fla: the
 * flushes after the whole access (flushing ops).  pl_line_<op>_<form>():
 * the same for n = 64 without the shape's compare (the random loops' line
 * access: there every instruction costs loads in flight, method.md).
 * pl_fls_<op>_<form>(p, n): the flushes alone of n bytes (a multiple of a
 * line), one line per trip: a split access's flushes after all its stores
 * (flush=access, pl_bwl_*).
 */
#define PL_ACC(ID, k, form, U, FL)						\
static __always_inline void pl_acc_##k##_##form(char *p_, char *q_, u64 n,	\
						u64 v_, bool fla)		\
{										\
	if ((PL_OPFL_##ID & PL_OPF_FLUSHES) && fla)				\
		PL_BW_ASM(form, PL_BW_TEXT_FLA(form, U, FL));			\
	else									\
		PL_BW_ASM(form, PL_BW_TEXT(form, U, FL));			\
}										\
static __always_inline void pl_line_##k##_##form(char *p_, char *q_, u64 n,	\
						 u64 v_, bool fla)		\
{										\
	PL_BW_ASM(form, PL_LINE_##form(U, PA, PS, "0") FL(PA("0")));		\
}										\
static __always_inline void pl_fls_##k##_##form(char *p_, u64 n)		\
{										\
	char *e_;								\
	s64 i_;									\
										\
	asm volatile("lea (%[p],%[n]), %[e]\n\tmov %[n], %[i]\n\tneg %[i]\n"	\
		     "1:\n\t" FL(LA("0")) "add $64, %[i]\n\tjnz 1b\n\t"		\
		     : [e] "=&r"(e_), [i] "=&r"(i_)				\
		     : [p] "r"(p_), [n] "r"(n)					\
		     : "memory", "cc");						\
}

/* ---- latency brackets ---- */
#define PL_T0_P		"mfence\n\trdtscp\n\tlfence\n\t"			\
			"mov %%eax, %[lo]\n\tmov %%edx, %[hi]\n\t"
#define PL_T1_P		"mfence\n\trdtscp\n\tlfence\n\t"
#define PL_T0_N		"mfence\n\tlfence\n\trdtsc\n\tlfence\n\t"		\
			"mov %%eax, %[lo]\n\tmov %%edx, %[hi]\n\t"
#define PL_T1_N		"mfence\n\tlfence\n\trdtsc\n\tlfence\n\t"
#define PL_BRACKET_P(text)	PL_T0_P text PL_T1_P
#define PL_BRACKET_N(text)	PL_T0_N text PL_T1_N

#define PL_TICKS(lo0, hi0, lo1, hi1)						\
	((((u64)(hi1) << 32) | (lo1)) - (((u64)(hi0) << 32) | (lo0)))

/*
 * One access in its bracket, as one asm text: the shape is chosen before
 * T0; one to four units, one line and four lines (256 bytes) have nothing
 * but the access between T0 and T1; other accesses loop a line per trip
 * (add and jnz are then part of the access, method.md); flushes after the
 * whole access run as a second loop inside the bracket.
 */
#define PL_BR_MULTI(form, U, FL, X)						\
	"lea (%[p],%[n]), %[e]\n\tlea (%[q],%[n]), %[s]\n\t"			\
	"mov %[n], %[i]\n\tneg %[i]\n\t"					\
	PL_T0_##X "4:\n\t" PL_LINE_##form(U, LA, LS, "0") FL(LA("0"))		\
	"add $64, %[i]\n\tjnz 4b\n\t"
#define PL_BR_TEXT(form, U, FL, X)						\
	"cmp $64, %[n]\n\tje 8f\n\tjb 2f\n\t"					\
	"cmp $256, %[n]\n\tje 7f\n\t"						\
	PL_BR_MULTI(form, U, FL, X) PL_T1_##X "jmp 9f\n"			\
	"2:\n\t" PL_SUB_##form(U, FL, PL_BRACKET_##X)				\
	"7:\n\t" PL_BRACKET_##X(PL_FOUR(form, U, FL)) "jmp 9f\n"		\
	"8:\n\t" PL_BRACKET_##X(PL_LINE_##form(U, PA, PS, "0") FL(PA("0")))	\
	"9:\n\t"
#define PL_BR_TEXT_FLA(form, U, FL, X)						\
	"cmp $64, %[n]\n\tje 8f\n\tjb 2f\n\t"					\
	"cmp $256, %[n]\n\tje 7f\n\t"						\
	PL_BR_MULTI(form, U, PL_FL_NONE, X)					\
	"mov %[n], %[i]\n\tneg %[i]\n"						\
	"5:\n\t" FL(LA("0")) "add $64, %[i]\n\tjnz 5b\n\t"			\
	PL_T1_##X "jmp 9f\n"							\
	"2:\n\t" PL_SUB_##form(U, FL, PL_BRACKET_##X)				\
	"7:\n\t" PL_BRACKET_##X(PL_FOUR_FLA(form, U, FL)) "jmp 9f\n"		\
	"8:\n\t" PL_BRACKET_##X(PL_LINE_##form(U, PA, PS, "0") FL(PA("0")))	\
	"9:\n\t"

#define PL_BR_ASM(form, text) ({						\
	u32 lo0_, hi0_, lo1_, hi1_, aux_;					\
	u64 t_ __maybe_unused;							\
	char *e_, *s_;								\
	s64 i_;									\
										\
	asm volatile(text							\
		     : "=&a"(lo1_), "=&d"(hi1_), "=&c"(aux_),			\
		       [lo] "=&r"(lo0_), [hi] "=&r"(hi0_),			\
		       [e] "=&r"(e_), [s] "=&r"(s_), [i] "=&r"(i_) PL_OUT_##form \
		     : [p] "r"(p_), [q] "r"(q_), [n] "r"(n) PL_IN_##form		\
		     : "memory", "cc");						\
	(void)aux_;								\
	PL_TICKS(lo0_, hi0_, lo1_, hi1_);					\
})

/*
 * pl_br_<op>_<form>(p, q, n, v, rdtscp, fla): the ticks of one access of
 * n bytes: T0/T1 rdtscp-based, or lfence; rdtsc; lfence where the CPU has
 * no rdtscp.
 */
#define PL_BR(ID, k, form, U, FL)						\
static __always_inline u64 pl_br_##k##_##form(char *p_, char *q_, u64 n,	\
					      u64 v_, bool rdtscp, bool fla)	\
{										\
	if ((PL_OPFL_##ID & PL_OPF_FLUSHES) && fla) {				\
		if (rdtscp)							\
			return PL_BR_ASM(form, PL_BR_TEXT_FLA(form, U, FL, P));	\
		return PL_BR_ASM(form, PL_BR_TEXT_FLA(form, U, FL, N));		\
	}									\
	if (rdtscp)								\
		return PL_BR_ASM(form, PL_BR_TEXT(form, U, FL, P));		\
	return PL_BR_ASM(form, PL_BR_TEXT(form, U, FL, N));			\
}

/* ---- what every loop shares ---- */

/*
 * The delay (delay_ticks, docs/method.md "Throttling"): n >= 1 trips of a
 * dependent dec/jnz, one register and one fused instruction a trip and
 * nothing else (no clock read, no pause: under a hypervisor each of them
 * costs tens to hundreds of nanoseconds, which made a delay of one tick
 * cost about 300 ns).  pl_eng_init converts delay_ticks once into trips
 * (pl_spin_trips); every caller skips it without a delay (pl_spin(0)
 * would run 2^64 trips).
 */
static __always_inline void pl_spin(u64 n)
{
	asm volatile("1:\n\tdec %0\n\tjnz 1b" : "+r"(n) :: "cc");
}

/* the clock's floor under the spins: wait (on the clock) until t */
static __always_inline void pl_wait_until(u64 t)
{
	while (pl_rdtsc() < t)
		;
}

/*
 * After one access of the latency and split loops: the calibrated spin,
 * then the clock until ticks have passed since it began (each of their
 * accesses costs far more than the two clock reads).
 */
static __always_inline void pl_delay(u64 ticks, u64 spins)
{
	u64 t0;

	if (!ticks)
		return;
	t0 = pl_rdtsc();
	pl_spin(spins);
	pl_wait_until(t0 + ticks);
}

/*
 * The next batch of accesses, or 0 when the segment (or the run) is over.
 * The first batch of a call runs even past until, so that every call
 * makes progress (the ceiling's short windows, a descheduled thread).
 */
static __always_inline u64 pl_bw_batch(const struct pl_eng *e, u64 *left, u64 until,
				       u64 done)
{
	u64 nb;

	if (!*left || READ_ONCE(*e->stop) || (done && pl_rdtsc() >= until))
		return 0;
	nb = e->batch < *left ? e->batch : *left;
	if (*left != ~0ULL)
		*left -= nb;
	return nb;
}

/* read_pct: an exact, deterministic interleaving (no randomness) */
static __always_inline bool pl_mix_read(u32 *acc, u32 pct)
{
	if (!pct)
		return false;
	*acc += pct;
	if (*acc >= 100) {
		*acc -= 100;
		return true;
	}
	return false;
}

/*
 * The same interleaving without the test of pct (acc stays below 100, so
 * pct 0 never reads): the per-family full loops' per-access mix, whose
 * reads are counted once at the end, (acc before + accesses x pct - acc
 * after) / 100.
 */
static __always_inline bool pl_mix_next(u32 *acc, u32 pct)
{
	*acc += pct;
	if (*acc < 100)
		return false;
	*acc -= 100;
	return true;
}

/*
 * The full path's access with its fences: fence after each access
 * (fence_interval 0), after each fence_interval bytes across accesses, or,
 * for fence_interval < access_size, the access in pieces of fence_interval
 * bytes, each with its flushes and a fence.  One call site of the access:
 * the pieces are a loop around it.
 */
/* bytes of one piece of an n-byte access: fence_interval below n cuts it (PL_FENCED) */
static __always_inline u64 pl_piece(int fence, u64 fi, u64 n)
{
	return fence != PL_FENCE_NONE && fi && fi < n ? fi : n;
}

#define PL_FENCED(ACC, p, q, v, fla) do {					\
	u64 o_ = 0;								\
										\
	do {									\
		ACC((p) + o_, (q) + o_, piece, v, fla);				\
		if (fence_each || pl_fence_due(&fence_acc, n, fi))		\
			pl_fence(fence);					\
		o_ += piece;							\
	} while (o_ < n);							\
} while (0)

static __always_inline void pl_loop_end(struct pl_eng *e, const struct pl_gen *g, u64 left,
					u64 done, u64 reads, u64 v, bool writes)
{
	e->gen = *g;
	e->left = left;
	e->data = v;
	e->st.ops += done;
	e->st.bytes += done * e->access;
	e->st.reads += writes ? reads : done;
	e->st.writes += writes ? done - reads : 0;
}

/*
 * The bandwidth loop of op ID (ident k) in form and address family FAM,
 * for runs without fences, read_pct mixing and delay: per access the next
 * address, the next store data, the access (the pass changes between runs
 * of accesses: a batch is cut where a pass ends).  Locals hold everything the
 * loop needs: the asm's "memory" clobber would make the compiler reload
 * anything it reads through e.
 */
#define PL_BW(ID, k, form, fam, FAM)						\
void pl_bw_##k##_##form##_##fam(struct pl_eng *e, u64 until);			\
PL_LOOP void pl_bw_##k##_##form##_##fam(struct pl_eng *e, u64 until)		\
{										\
	const u32 opf = PL_OPFL_##ID;						\
	struct pl_gen g = e->gen;						\
	char *const base = e->base;						\
	const u64 n = e->access, delta = e->copy_delta;				\
	const bool fla = e->flush == PL_FLUSH_ACCESS;				\
	u64 left = e->left, done = 0, v = e->data, nb;				\
	char *p;								\
										\
	if (opf & PL_OPF_DATA)							\
		pl_data_begin_##form(v);					\
	/* own copies of the loop: per-DIMM random with one DIMM a thread	\
	 * (with contiguous chunks: the random family's walk), per-DIMM	\
	 * sequential as runs inside a chunk, and accesses of one line,	\
	 * sequential or random (no shape compare per access: a 64-byte	\
	 * sequential access takes one branch, the loop's) */			\
	if (FAM == PL_FAM_DIMM_RAND && g.dimm_fast && !g.skip && n == PL_LINE) \
		PL_BW_BATCHES(k, form, PL_WALK_DIMM_RAND0, FAM, pl_line);	\
	else if (FAM == PL_FAM_DIMM_RAND && g.dimm_fast && !g.skip)		\
		PL_BW_BATCHES(k, form, PL_WALK_DIMM_RAND0, FAM, pl_acc);	\
	else if (FAM == PL_FAM_DIMM_RAND && g.dimm_fast && n == PL_LINE)	\
		PL_BW_BATCHES(k, form, PL_WALK_DIMM_RAND1, FAM, pl_line);	\
	else if (FAM == PL_FAM_DIMM_RAND && g.dimm_fast)			\
		PL_BW_BATCHES(k, form, PL_WALK_DIMM_RAND1, FAM, pl_acc);	\
	else if (FAM == PL_FAM_DIMM_LINEAR)					\
		PL_BW_BATCHES(k, form, PL_WALK_DIMM_RUNS, FAM, pl_acc);		\
	else if ((FAM == PL_FAM_RAND || FAM == PL_FAM_LINEAR) && n == PL_LINE) \
		PL_BW_BATCHES(k, form, FAM, FAM, pl_line);			\
	else									\
		PL_BW_BATCHES(k, form, FAM, FAM, pl_acc);			\
	if (opf & PL_OPF_DATA)							\
		v = pl_data_end_##form(v);					\
	PL_VZU_##form;								\
	pl_loop_end(e, &g, left, done, 0, v, opf & PL_OPF_WRITES);		\
}

/* x as the compiler must take it: not split again into the sum it was */
#define PL_OPAQUE(x)	asm("" : "+r"(x))

/*
 * One batch of nb accesses walked as a per-family loop walks it: per access
 * p the next address of WALK (a family of walk.h), the next store data, then
 * the rest of the access (the macro's last arguments); the pass (of family
 * FAM), and a per-DIMM walk's chunk, change between runs of accesses, not
 * per access, and the part of the address that stays for the run is added
 * once per run.  The plain loops and the mix loops share it.
 */
#define PL_WALK_RUNS(form, WALK, FAM, ...) do {					\
	do {									\
		u64 run = pl_walk_run_len(&g, WALK, nb), cnt = run;		\
		char *pb = base + pl_walk_pass_part(&g, WALK);			\
										\
		PL_OPAQUE(pb);							\
		do {								\
			p = pb + pl_walk_step_rel(&g, WALK);			\
			if (opf & PL_OPF_DATA)					\
				pl_data_step_##form(&v);			\
			__VA_ARGS__						\
		} while (--cnt);						\
		nb -= run;							\
		pl_walk_run_end(&g, WALK, FAM, run);				\
	} while (nb);								\
} while (0)

/* the batches of a per-family loop: each access the op's (ACC: pl_line or pl_acc) */
#define PL_BW_BATCHES(k, form, WALK, FAM, ACC) do {				\
	while ((nb = pl_bw_batch(e, &left, until, done))) {			\
		done += nb;							\
		PL_WALK_RUNS(form, WALK, FAM,					\
			ACC##_##k##_##form(p, pl_is_copy(opf) ?			\
					   p + delta : p, n, v, fla););		\
	}									\
} while (0)

/*
 * The batches of the full loop without fences (read_pct mixing and/or a
 * delay), walked as the per-family loops walk them (PL_WALK_RUNS): per
 * access the mix's choice (pl_mix_next: an add, a compare and a branch),
 * the access (the op's, or the mix's load) and, with a delay (SPIN), the
 * delay's spin (pl_spin).  Everything the inner loop reads lives in
 * registers: the walk through all families at once (pl_walk_any) with its
 * state, the fence bookkeeping and a read counter held the old loop's state
 * on the stack, a dozen loads and stores more per access, which filled the
 * load queue and cut the loads in flight (0.73 against 1.89 GB/s of random
 * 64-B loads, issue 36).  (At read_pct 100 the op's loads are all there
 * is: pl_eng_init selects the loops of op load.)  A batch with a delay
 * reads the clock once more at its start and, at its end, waits out what
 * its spins fell short of nb x delay_ticks (the floor: a core faster than
 * at calibration).
 */
#define PL_BWM_BATCHES(k, form, WALK, FAM, ACC, SPIN) do {			\
	while ((nb = pl_bw_batch(e, &left, until, done))) {			\
		const u64 tb = SPIN ? pl_rdtsc() : 0, owed = nb * delay;	\
										\
		done += nb;							\
		PL_WALK_RUNS(form, WALK, FAM,					\
			if ((opf & PL_OPF_WRITES) && pl_mix_next(&rw_acc, pct))	\
				ACC##_load_##form(p, p, n, v, false);		\
			else							\
				ACC##_##k##_##form(p, pl_is_copy(opf) ?		\
						   p + delta : p, n, v, fla);	\
			if (SPIN)						\
				pl_spin(spins););				\
		if (SPIN)							\
			pl_wait_until(tb + owed);				\
	}									\
} while (0)

/* the family's batches, chosen once per call; SPIN: with a delay */
#define PL_BWM_FAMS(k, form, SPIN) do {						\
	if (fam == PL_FAM_RAND && n == PL_LINE)					\
		PL_BWM_BATCHES(k, form, PL_FAM_RAND, PL_FAM_RAND, pl_line, SPIN); \
	else if (fam == PL_FAM_RAND)						\
		PL_BWM_BATCHES(k, form, PL_FAM_RAND, PL_FAM_RAND, pl_acc, SPIN); \
	else if (fam == PL_FAM_LINEAR && n == PL_LINE)				\
		PL_BWM_BATCHES(k, form, PL_FAM_LINEAR, PL_FAM_LINEAR, pl_line, SPIN); \
	else if (fam == PL_FAM_LINEAR)						\
		PL_BWM_BATCHES(k, form, PL_FAM_LINEAR, PL_FAM_LINEAR, pl_acc, SPIN); \
	else if (fam == PL_FAM_DIMM_LINEAR)					\
		PL_BWM_BATCHES(k, form, PL_WALK_DIMM_RUNS, PL_FAM_DIMM_LINEAR,	\
			       pl_acc, SPIN);					\
	else									\
		PL_BWM_BATCHES(k, form, PL_FAM_DIMM_RAND, PL_FAM_DIMM_RAND,	\
			       pl_acc, SPIN);					\
} while (0)

/*
 * The bandwidth loop of op ID in form with fences, read_pct mixing or a
 * delay (the full path): one per op and form.  Without fences it runs
 * per-family batches (PL_BWM_BATCHES, the family chosen once per call);
 * with fences it walks any address family in one code path (pl_walk_any:
 * a few predictable branches and, per-DIMM, two multiplications more per
 * access than the per-family loops), each access with its fences
 * (PL_FENCED).
 */
#define PL_BWF(ID, k, form)							\
void pl_bwf_##k##_##form(struct pl_eng *e, u64 until);				\
PL_LOOP void pl_bwf_##k##_##form(struct pl_eng *e, u64 until)			\
{										\
	const u32 opf = PL_OPFL_##ID;						\
	struct pl_gen g = e->gen;						\
	char *const base = e->base;						\
	const u64 n = e->access, delta = e->copy_delta;				\
	const bool fla = e->flush == PL_FLUSH_ACCESS;				\
	const int fence = e->fence, fam = e->fam;				\
	const u64 fi = e->fence_interval, delay = e->delay_ticks;		\
	const u64 spins = e->spins;						\
	const bool fence_each = fence == PL_FENCE_NONE || !fi || fi < n;	\
	const u64 piece = pl_piece(fence, fi, n);				\
	const u32 pct = e->read_pct, acc0 = e->rw_acc;				\
	u64 left = e->left, done = 0, reads = 0, v = e->data, nb;		\
	u64 fence_acc = e->fence_acc;						\
	u32 rw_acc = acc0;							\
	char *p;								\
										\
	if (opf & PL_OPF_DATA)							\
		pl_data_begin_##form(v);					\
	if (fence == PL_FENCE_NONE) {						\
		if (delay)							\
			PL_BWM_FAMS(k, form, true);				\
		else								\
			PL_BWM_FAMS(k, form, false);				\
		reads = (acc0 + done * pct - rw_acc) / 100;			\
	} else {								\
		while ((nb = pl_bw_batch(e, &left, until, done))) {		\
			const u64 tb = delay ? pl_rdtsc() : 0, owed = nb * delay; \
										\
			done += nb;						\
			do {							\
				p = base + pl_walk_any(&g);			\
				if (opf & PL_OPF_DATA)				\
					pl_data_step_##form(&v);		\
				if ((opf & PL_OPF_WRITES) &&			\
				    pl_mix_read(&rw_acc, pct)) {		\
					reads++;				\
					PL_FENCED(pl_acc_load_##form, p, p, v, false); \
				} else {					\
					PL_FENCED(pl_acc_##k##_##form, p,	\
						  pl_is_copy(opf) ? p + delta : p, \
						  v, fla);			\
				}						\
				if (delay)	/* no trip without a delay */	\
					pl_spin(spins);				\
			} while (--nb);						\
			if (delay)						\
				pl_wait_until(tb + owed);			\
		}								\
	}									\
	if (opf & PL_OPF_DATA)							\
		v = pl_data_end_##form(v);					\
	PL_VZU_##form;								\
	e->fence_acc = fence_acc;						\
	e->rw_acc = rw_acc;							\
	pl_loop_end(e, &g, left, done, reads, v, opf & PL_OPF_WRITES);		\
}

/*
 * The bandwidth loop of op ID in form for accesses longer than
 * PL_PIECE_BYTES (any fence, mix, delay and address family): each access
 * is issued in steps of at most PL_PIECE_BYTES, in the order the whole
 * access would issue them, and the clock is read between steps, so a
 * segment ends between two pieces of an access and the next call goes on
 * with the rest (e->part: the access's cursor).  A step is whole fence
 * pieces (fence_interval below access_size, PL_FENCED) up to
 * PL_PIECE_BYTES, or part of a longer fence piece; with flush=access a
 * fence piece longer than a step runs all its stores first and then all
 * its flushes, each in steps (the cursor covers twice its bytes), and its
 * fence after the last.  An access counts (ops, bytes, reads/writes, count)
 * when its last step has run; part_bytes says how much of the one in flight
 * is issued (the ceiling's windows count it).
 */
#define PL_BWL(ID, k, form)							\
void pl_bwl_##k##_##form(struct pl_eng *e, u64 until);				\
PL_LOOP void pl_bwl_##k##_##form(struct pl_eng *e, u64 until)			\
{										\
	const u32 opf = PL_OPFL_##ID;						\
	struct pl_gen g = e->gen;						\
	char *const base = e->base;						\
	const u64 n = e->access, delta = e->copy_delta;				\
	const bool fla = e->flush == PL_FLUSH_ACCESS;				\
	const int fence = e->fence;						\
	const u64 fi = e->fence_interval, delay = e->delay_ticks;		\
	const u64 spins = e->spins;						\
	const bool fence_each = fence == PL_FENCE_NONE || !fi || fi < n;	\
	const u64 pf = pl_piece(fence, fi, n);					\
	const u32 pct = e->read_pct;						\
	u64 left = e->left, done = 0, reads = 0, v = e->data, steps = 0;	\
	u64 pb = e->part_bytes, off = e->part, fence_acc = e->fence_acc;	\
	u64 span, tot, a, r, len;						\
	u32 rw_acc = e->rw_acc;							\
	bool rd = (opf & PL_OPF_WRITES) && e->part_rd, fla2;		\
	char *p = e->part_p, *q;						\
										\
	if (opf & PL_OPF_DATA)							\
		pl_data_begin_##form(v);					\
	for (;;) {								\
		if (READ_ONCE(*e->stop) || (steps && pl_rdtsc() >= until))	\
			break;							\
		if (!off) {							\
			if (!left)						\
				break;						\
			p = base + pl_walk_any(&g);				\
			if (opf & PL_OPF_DATA)					\
				pl_data_step_##form(&v);			\
			rd = (opf & PL_OPF_WRITES) && pl_mix_read(&rw_acc, pct); \
		}								\
		q = pl_is_copy(opf) ? p + delta : p;				\
		fla2 = (opf & PL_OPF_FLUSHES) && fla && !rd && pf > PL_PIECE_BYTES; \
		span = fla2 ? 2 * pf : pf;					\
		tot = n / pf * span;						\
		if (pf <= PL_PIECE_BYTES) {					\
			a = off + PL_PIECE_BYTES / pf * pf;			\
			if (a > n)						\
				a = n;						\
			pb += a - off;						\
			do {							\
				if (rd)						\
					pl_acc_load_##form(p + off, p + off, pf, v, false); \
				else						\
					pl_acc_##k##_##form(p + off, q + off, pf, v, fla); \
				if (fence_each || pl_fence_due(&fence_acc, n, fi)) \
					pl_fence(fence);			\
				off += pf;					\
			} while (off < a);					\
		} else {							\
			r = off % span;						\
			a = off / span * pf;					\
			len = r < pf ? pf - r : span - r;			\
			if (len > PL_PIECE_BYTES)				\
				len = PL_PIECE_BYTES;				\
			if (r >= pf)						\
				pl_fls_##k##_##form(p + a + r - pf, len);	\
			else if (rd)						\
				pl_acc_load_##form(p + a + r, p + a + r, len, v, false); \
			else if (fla2)						\
				pl_acc_store_##form(p + a + r, p + a + r, len, v, false); \
			else							\
				pl_acc_##k##_##form(p + a + r, q + a + r, len, v, false); \
			if (r < pf)						\
				pb += len;					\
			off += len;						\
			if (!(off % span) &&					\
			    (fence_each || pl_fence_due(&fence_acc, n, fi)))	\
				pl_fence(fence);				\
		}								\
		steps++;							\
		if (off == tot) {						\
			off = 0;						\
			pb = 0;							\
			done++;							\
			reads += rd;						\
			if (left != ~0ULL)					\
				left--;						\
			pl_delay(delay, spins);					\
		}								\
	}									\
	if (opf & PL_OPF_DATA)							\
		v = pl_data_end_##form(v);					\
	PL_VZU_##form;								\
	e->gen = g;								\
	e->left = left;								\
	e->data = v;								\
	e->part = off;								\
	e->part_p = p;								\
	e->part_rd = rd;							\
	e->part_bytes = pb;							\
	e->fence_acc = fence_acc;						\
	e->rw_acc = rw_acc;							\
	e->st.ops += done;							\
	e->st.bytes += done * n;						\
	e->st.pieces += steps;							\
	e->st.reads += (opf & PL_OPF_WRITES) ? reads : done;			\
	e->st.writes += (opf & PL_OPF_WRITES) ? done - reads : 0;		\
}

/* cold: flush each line of the access, warm: load each; then mfence */
static __always_inline void pl_prep_lines(char *p, u64 n, int prep)
{
	char *line = (char *)((unsigned long)p & ~(unsigned long)(PL_LINE - 1));
	u64 o;
	u32 t;

	if (prep == PL_PREP_NONE)
		return;
	if (n < PL_LINE)
		n = PL_LINE;
	for (o = 0; o < n; o += PL_LINE) {
		if (prep == PL_PREP_COLD)
			asm volatile("clflush (%0)" :: "r"(line + o) : "memory");
		else
			asm volatile("movzbl (%1), %0" : "=r"(t) : "r"(line + o) : "memory");
	}
	pl_mfence();
}

/*
 * The latency loop of op ID in form.  Any address family, in one code path
 * (pl_walk_any; the latency loop's own speed is outside the brackets).
 */
#define PL_LAT(ID, k, form)							\
void pl_lat_##k##_##form(struct pl_eng *e, u64 until);				\
PL_LOOP void pl_lat_##k##_##form(struct pl_eng *e, u64 until)			\
{										\
	const u32 opf = PL_OPFL_##ID;						\
	struct pl_gen g = e->gen;						\
	struct pl_hist h = e->hist;						\
	char *const base = e->base;						\
	const u64 n = e->access, delta = e->copy_delta, ov = e->overhead;	\
	const u64 delay = e->delay_ticks, nmax = e->nsamples_max;		\
	const u64 spins = e->spins;						\
	const bool fla = e->flush == PL_FLUSH_ACCESS, rdtscp = e->rdtscp;	\
	const int prep = e->prep;						\
	const u32 pct = e->read_pct;						\
	u64 *const samples = e->samples;					\
	u64 left = e->left, done = 0, reads = 0, v = e->data, ns = e->nsamples, d; \
	u32 rw_acc = e->rw_acc;							\
	char *p, *q;								\
	bool rd;								\
										\
	/* the first sample of a call runs even past until, as a batch does */ \
	while (left && !READ_ONCE(*e->stop) && (!done || pl_rdtsc() < until)) { \
		p = base + pl_walk_any(&g);					\
		q = pl_is_copy(opf) ? p + delta : p;				\
		pl_prep_lines(p, n, prep);					\
		rd = (opf & PL_OPF_WRITES) && pl_mix_read(&rw_acc, pct);	\
		if (opf & PL_OPF_DATA) {					\
			v += PL_DATA_INC;					\
			if (!rd)						\
				pl_prep_##form(v);				\
		}								\
		if (rd)								\
			d = pl_br_load_##form(p, p, n, v, rdtscp, false);	\
		else								\
			d = pl_br_##k##_##form(p, q, n, v, rdtscp, fla);	\
		d = pl_hist_add(&h, d, ov);					\
		if (ns < nmax)							\
			samples[ns++] = d;					\
		reads += rd;							\
		done++;								\
		if (left != ~0ULL)						\
			left--;							\
		pl_delay(delay, spins);					\
	}									\
	PL_VZU_##form;								\
	e->hist = h;								\
	e->nsamples = ns;							\
	e->rw_acc = rw_acc;							\
	pl_loop_end(e, &g, left, done, reads, v, opf & PL_OPF_WRITES);		\
}

/*
 * ---- the generated loops ----
 * One per instruction row of ops.def: the module's ops everywhere, the
 * user backend's only in userspace (ops.def keeps their rows out of
 * __KERNEL__), where pl_eng_init can select them.
 */
/* the access and bracket primitives first (the load ones serve read_pct) */
#define PL_K(ID, k, form, U, FL, insn, needs)					\
	PL_ACC(ID, k, form, U, FL) PL_BR(ID, k, form, U, FL)
#include "ops.def"

#define PL_K(ID, k, form, U, FL, insn, needs)					\
	PL_BW(ID, k, form, linear, PL_FAM_LINEAR)				\
	PL_BW(ID, k, form, rand, PL_FAM_RAND)					\
	PL_BW(ID, k, form, dimm_linear, PL_FAM_DIMM_LINEAR)			\
	PL_BW(ID, k, form, dimm_rand, PL_FAM_DIMM_RAND)				\
	PL_BWF(ID, k, form)							\
	PL_BWL(ID, k, form)							\
	PL_LAT(ID, k, form)
#include "ops.def"

/*
 * The loops of op chase (ops.def PL_OWN): batches of chase_batch dependent
 * loads over the chain chase.c laid, PL_CHASE_UNROLL of them per step, each
 * batch in one bracket; a sample is the batch's ticks less the bracket's
 * overhead, divided by chase_batch (rounded): a hop's mean latency in its
 * batch.  count (e->left) counts hops, in whole batches.  chase_write picks
 * the loop: pl_chase_loop reads only; pl_chase_store_loop's hop also stores
 * the next store data to its line (8 bytes at offset 8, beside the pointer,
 * before the load that leaves the line); pl_chase_raw_loop runs rounds: a
 * write pass over every line of the chain (movnti of the store data at
 * offset 8, in slot order, chase_batch lines per step and none timed), an
 * mfence, then the chain's lines / chase_batch timed batches of plain hops,
 * so that each line a batch reads was written once since it was last read
 * (a chain has at least chase_batch lines: pl_eng_init_chase).  A hop
 * counts as a read, a store-chase's as a write (it reads and writes, as a
 * copy's access does); raw's write passes are its preparation, untimed and
 * not counted, as cold's flushes are not.
 */
#define PL_HOP		PL_I("mov (%[p]), %[p]")
#define PL_HOP4		PL_HOP PL_HOP PL_HOP PL_HOP
#define PL_SHOP		"add %[inc], %[v]\n\t" PL_I("mov %[v], 8(%[p])") PL_HOP
#define PL_SHOP4	PL_SHOP PL_SHOP PL_SHOP PL_SHOP

static __always_inline void pl_chase_run(struct pl_eng *e, u64 until, const int cw)
{
	struct pl_hist h = e->hist;
	const u64 batch = e->chase_batch, ov = e->overhead, nmax = e->nsamples_max;
	const u64 inc = PL_DATA_INC, n = cw == PL_CW_RAW ? pl_chase_lines(e) : 0;
	const bool rdtscp = e->rdtscp;
	u64 *const samples = e->samples;
	u64 left = e->left, done = 0, ns = e->nsamples, v = e->data, t0, t1, d, i, k;
	u64 wpos = e->chase_wpos, reads = e->chase_reads;
	char *p = e->chase_p, *a;
	bool first = true;

	/* the first step of a call (a batch, or a step of raw's write pass) runs even past until */
	while (left && !READ_ONCE(*e->stop) && (first || pl_rdtsc() < until)) {
		first = false;
		if (cw == PL_CW_RAW && !reads) {
			/* the round's write pass, one step of batch lines: untimed */
			k = n - wpos < batch ? n : wpos + batch;
			for (; wpos < k; wpos++) {
				a = pl_chase_line(e, wpos);
				v += inc;
				asm volatile(PL_I("movnti %[v], 8(%[a])") :: [a] "r"(a), [v] "r"(v) : "memory");
			}
			if (wpos < n)
				continue;
			pl_mfence();
			wpos = 0;
			reads = n / batch * batch;
		}
		t0 = pl_rdtsc_serial(rdtscp);
		if (cw == PL_CW_STORE)
			for (i = 0; i < batch; i += PL_CHASE_UNROLL)
				asm volatile(PL_SHOP4 PL_SHOP4 PL_SHOP4 PL_SHOP4
					     : [p] "+r"(p), [v] "+r"(v) : [inc] "r"(inc) : "memory");
		else
			for (i = 0; i < batch; i += PL_CHASE_UNROLL)
				asm volatile(PL_HOP4 PL_HOP4 PL_HOP4 PL_HOP4 : [p] "+r"(p) :: "memory");
		t1 = pl_rdtsc_serial(rdtscp);
		/* per hop, rounded; a batch below the overhead counts negative in the mean (hist.c) */
		d = t1 - t0;
		if (d >= ov)
			d = pl_hist_add(&h, (d - ov + batch / 2) / batch, 0);
		else
			d = pl_hist_add(&h, 0, (ov - d + batch / 2) / batch);
		if (ns < nmax)
			samples[ns++] = d;
		done += batch;
		if (cw == PL_CW_RAW)
			reads -= batch;
		if (left != ~0ULL)
			left = left > batch ? left - batch : 0;
	}
	e->chase_p = p;
	e->hist = h;
	e->nsamples = ns;
	e->left = left;
	e->st.ops += done;
	e->st.bytes += done * e->access;
	/* a hop that also stores counts as a write, as a copy's access does; raw's passes are its preparation */
	if (cw == PL_CW_STORE)
		e->st.writes += done;
	else
		e->st.reads += done;
	if (cw != PL_CW_NONE) {
		e->data = v;
		e->chase_wpos = wpos;
		e->chase_reads = reads;
	}
}

void pl_chase_loop(struct pl_eng *e, u64 until);
PL_LOOP void pl_chase_loop(struct pl_eng *e, u64 until)
{
	pl_chase_run(e, until, PL_CW_NONE);
}

void pl_chase_raw_loop(struct pl_eng *e, u64 until);
PL_LOOP void pl_chase_raw_loop(struct pl_eng *e, u64 until)
{
	pl_chase_run(e, until, PL_CW_RAW);
}

void pl_chase_store_loop(struct pl_eng *e, u64 until);
PL_LOOP void pl_chase_store_loop(struct pl_eng *e, u64 until)
{
	pl_chase_run(e, until, PL_CW_STORE);
}

struct pl_loop_ent {
	pl_loop_fn fn;
	const char *name;
};

#define PL_ENT(name)	{ name, #name }
static const struct pl_loop_ent pl_bw_loops[PL_OP_NR][PL_NFORM][PL_NFAM] = {
#define PL_K(ID, k, form, U, FL, insn, needs)					\
	[PL_OP_##ID][PL_FORM_##form] = {					\
		PL_ENT(pl_bw_##k##_##form##_linear),				\
		PL_ENT(pl_bw_##k##_##form##_rand),				\
		PL_ENT(pl_bw_##k##_##form##_dimm_linear),			\
		PL_ENT(pl_bw_##k##_##form##_dimm_rand) },
#include "ops.def"
};

static const struct pl_loop_ent pl_bwf_loops[PL_OP_NR][PL_NFORM] = {
#define PL_K(ID, k, form, U, FL, insn, needs)					\
	[PL_OP_##ID][PL_FORM_##form] = PL_ENT(pl_bwf_##k##_##form),
#include "ops.def"
};

static const struct pl_loop_ent pl_bwl_loops[PL_OP_NR][PL_NFORM] = {
#define PL_K(ID, k, form, U, FL, insn, needs)					\
	[PL_OP_##ID][PL_FORM_##form] = PL_ENT(pl_bwl_##k##_##form),
#include "ops.def"
};

static const struct pl_loop_ent pl_lat_loops[PL_OP_NR][PL_NFORM] = {
#define PL_K(ID, k, form, U, FL, insn, needs)					\
	[PL_OP_##ID][PL_FORM_##form] = PL_ENT(pl_lat_##k##_##form),
#include "ops.def"
};

/*
 * the bandwidth loop of a run: accesses longer than a piece split
 * (pl_bwl_*), else per family without fences, mix and delay
 */
static const struct pl_loop_ent *pl_bw_ent(int op, int form, int fam, bool plain, u64 access)
{
	if (access > PL_PIECE_BYTES)
		return &pl_bwl_loops[op][form];
	return plain ? &pl_bw_loops[op][form][fam] : &pl_bwf_loops[op][form];
}

const char *pl_eng_bw_name(int op, int form, int fam, bool plain)
{
	if (op < 0 || op >= PL_OP_NR || form < 0 || form >= PL_NFORM || fam < 0 ||
	    fam >= PL_NFAM)
		return NULL;
	return pl_bw_ent(op, form, fam, plain, 0)->name;
}

const char *pl_eng_bwl_name(int op, int form)
{
	if (op < 0 || op >= PL_OP_NR || form < 0 || form >= PL_NFORM)
		return NULL;
	return pl_bwl_loops[op][form].name;
}

const char *pl_eng_lat_name(int op, int form)
{
	if (op < 0 || op >= PL_OP_NR || form < 0 || form >= PL_NFORM)
		return NULL;
	return pl_lat_loops[op][form].name;
}

/* ---- set-up ---- */

/* accesses between two reads of the clock in bandwidth mode (pl_bwl_*: pieces) */
static u64 pl_batch(u64 access)
{
	u64 b = PL_PIECE_BYTES / access;

	return b < 1 ? 1 : b > 256 ? 256 : b;
}

/*
 * With a delay, a batch lasts about PL_DELAY_BATCH_TICKS (at least one
 * access): the segment's end, the stop flag and the clock's floor under
 * the spins are read that often, not once per access.
 */
#define PL_DELAY_BATCH_TICKS	16384ULL

static u64 pl_delay_batch(u64 access, u64 delay)
{
	u64 b = pl_batch(access);

	if (delay && b > PL_DELAY_BATCH_TICKS / delay)
		b = PL_DELAY_BATCH_TICKS / delay;
	return b < 1 ? 1 : b;
}

/*
 * delay_ticks as trips of pl_spin: PL_SPIN_CAL trips timed PL_SPIN_TRIALS
 * times between serialising clock reads, the fastest kept (a trial that
 * lost the CPU is slower, never faster) less the fastest empty pair of
 * reads; trips = ticks x PL_SPIN_CAL / that, rounded, at least one, at most
 * PL_SPIN_MAX a tick (a clock that did not move, an emulator's).  So the
 * spins alone last about the delay on this CPU at its clock of the moment;
 * the loops' clock floor keeps a faster core from shortening it.  About
 * 8 x 8192 trips: tens of microseconds, once per thread and run, only
 * where there is a delay.
 */
#define PL_SPIN_CAL	8192ULL
#define PL_SPIN_TRIALS	8
#define PL_SPIN_MAX	16ULL

static u64 pl_spin_trips(u64 ticks, bool rdtscp)
{
	u64 spin = ~0ULL, empty = ~0ULL, t0, t1, trips;
	int i;

	if (!ticks)
		return 1;
	for (i = 0; i < PL_SPIN_TRIALS; i++) {
		t0 = pl_rdtsc_serial(rdtscp);
		t1 = pl_rdtsc_serial(rdtscp);
		if (t1 - t0 < empty)
			empty = t1 - t0;
		t0 = pl_rdtsc_serial(rdtscp);
		pl_spin(PL_SPIN_CAL);
		t1 = pl_rdtsc_serial(rdtscp);
		if (t1 - t0 < spin)
			spin = t1 - t0;
	}
	spin = spin > empty ? spin - empty : 0;
	if (spin < PL_SPIN_CAL / PL_SPIN_MAX)
		spin = PL_SPIN_CAL / PL_SPIN_MAX;
	trips = (ticks * PL_SPIN_CAL + spin / 2) / spin;
	return trips ? trips : 1;
}

static unsigned int pl_form_width(int form)
{
	return form == PL_FORM_8 ? 8 : form == PL_FORM_32 ? 32 : form == PL_FORM_64 ? 64 : 16;
}

/* u64 is unsigned long in userspace, unsigned long long in the kernel */
#define PL_ULL(x)	((unsigned long long)(x))

/*
 * Does a loop stay inside its buffer [buf, buf + len)?  The generator's
 * extent (pl_gen_check: its largest offset + 1), a copy's source delta
 * bytes above it, the pieces of a fenced access (PL_FENCED: they must
 * divide it) and the lines a latency prep touches (whole lines).  The
 * callers' own checks (check.c, place.c) say the same of a judged run:
 * this one keeps an engine that is handed anything else from writing
 * outside its buffer, with interrupts off (the module and the runner call
 * it alike, through pl_eng_init).  0, or -EINVAL and why.
 */
static int pl_eng_fits(const char *what, const char *buf, u64 len, const struct pl_gen_cfg *g,
		       u64 access, int fence, u64 fi, u64 delta, int prep, char *why, size_t wlen)
{
	u64 extent, piece = pl_piece(fence, fi, access);
	const char *gwhy;

	if (g->access != access) {
		snprintf(why, wlen, "engine: %s: the generator's access (%llu) is not the loop's (%llu)",
			 what, PL_ULL(g->access), PL_ULL(access));
		return -EINVAL;
	}
	if (pl_gen_check(g, &extent, &gwhy)) {
		snprintf(why, wlen, "engine: %s: %s", what, gwhy);
		return -EINVAL;
	}
	if (access % piece) {
		snprintf(why, wlen, "engine: %s: pieces of %llu bytes (fence_interval) do not divide the %llu-byte access",
			 what, PL_ULL(piece), PL_ULL(access));
		return -EINVAL;
	}
	if (prep != PL_PREP_NONE) {
		if ((unsigned long)buf % PL_LINE) {
			snprintf(why, wlen, "engine: %s: cold/warm prep needs a line-aligned buffer", what);
			return -EINVAL;
		}
		extent = (extent + PL_LINE - 1) / PL_LINE * PL_LINE;
	}
	if (!buf || extent > len || delta > len - extent) {
		snprintf(why, wlen, "engine: %s: accesses reach byte %llu of a %llu-byte buffer",
			 what, PL_ULL(extent + delta), PL_ULL(len));
		return -EINVAL;
	}
	return 0;
}

/* ---- the engine's ceiling: its generator ---- */
#define PL_CEIL_MIN	(32ULL << 10)
#define PL_CEIL_MAX	(2ULL << 20)

/*
 * The ceiling's access: the run's, at most PL_CEIL_MAX.  Capped, it keeps
 * the run's pieces whole (fence_interval below access_size: PL_FENCED
 * issues pieces until it reaches the access): a multiple of the piece, or,
 * where one piece is above PL_CEIL_MAX, PL_CEIL_MAX with the fence every
 * fence_interval bytes across accesses, the same fences per byte.
 */
static u64 pl_ceil_access(u64 access, int fence, u64 fi)
{
	u64 piece = pl_piece(fence, fi, access);

	if (access <= PL_CEIL_MAX)
		return access;
	if (piece < access && piece <= PL_CEIL_MAX)
		return PL_CEIL_MAX / piece * piece;
	return PL_CEIL_MAX;
}

/*
 * The generator of the ceiling run: the same pattern, access a (at most
 * 2 MiB, pl_ceil_access) and (where it fits) step over a cache-resident
 * region of r bytes, one pass; per-DIMM keeps its family with as many ways
 * as fit.  An access above 2 MiB runs at 2 MiB or less there: the same
 * four-line loop, whose per-access cost is negligible at either size (and
 * no thread holds a buffer of 64 MiB).  Returns r.
 */
static u64 pl_ceil_gen(const struct pl_gen_cfg *in, u64 a, struct pl_gen_cfg *out)
{
	u64 r = 2 * a < PL_CEIL_MIN ? PL_CEIL_MIN : 2 * a;

	if (r > PL_CEIL_MAX)
		r = PL_CEIL_MAX;
	*out = *in;
	out->access = a;
	out->passes = 1;
	out->pass_offset = 0;
	out->span = r;
	if (2 * in->step > r)
		out->step = a;
	if (in->ways) {
		u64 ways = in->ways, gran;

		if (ways * out->step > r)
			ways = r / out->step ? r / out->step : 1;
		gran = r / ways / out->step * out->step;
		if (gran > in->gran)
			gran = in->gran / out->step * out->step;
		if (!gran)
			gran = out->step;
		out->ways = ways;
		out->gran = gran;
		out->dimms = in->dimms < ways ? in->dimms : ways;
		out->first_dimm = in->first_dimm % ways;
		if (ways * gran > r)
			r = ways * gran;
		out->span = r;
	}
	return r;
}

/* the ceiling's access, generator and op for a run of op with these inputs; returns its region */
static u64 pl_ceil_setup(int op, u64 access, int fence, u64 fi, const struct pl_gen_cfg *gen,
			 struct pl_gen_cfg *g, u64 *a, int *cop)
{
	*cop = pl_ops[op].ceil_op;
	*a = pl_ceil_access(access, fence, fi);
	return pl_ceil_gen(gen, *a, g);
}

u64 pl_eng_ceiling_len(const struct pl_eng_cfg *c)
{
	struct pl_gen_cfg g;
	int cop;
	u64 a, r = pl_ceil_setup(c->op, c->access, c->fence, c->fence_interval, &c->gen, &g, &a, &cop);

	return pl_is_copy(pl_ops[cop].flags) ? 2 * r : r;
}

void pl_eng_ceiling_inputs(const struct pl_eng *e, int *cop, u64 *a, struct pl_gen_cfg *g)
{
	pl_ceil_setup(e->loop_op, e->access, e->fence, e->fence_interval, &e->gen.c, g, a, cop);
}

/* op chase: its chain's lines in the region, its own loop (pl_chase_loop, or chase_write's) */
static int pl_eng_init_chase(struct pl_eng *e, const struct pl_eng_cfg *c, char *why, size_t len)
{
	const char *insn;
	int err;

	if (c->mode != PL_MODE_LAT || c->width != 8 || c->access % PL_LINE) {
		snprintf(why, len, "engine: chase runs in latency mode at width 8 over slots of a multiple of 64 bytes");
		return -EINVAL;
	}
	if (!c->chase_batch || c->chase_batch % PL_CHASE_UNROLL) {
		snprintf(why, len, "engine: chase_batch %llu: not a multiple of %u",
			 PL_ULL(c->chase_batch), PL_CHASE_UNROLL);
		return -EINVAL;
	}
	if (!c->hist_buckets || (c->nsamples_max && !c->samples)) {
		snprintf(why, len, "engine: a latency thread needs a histogram and its samples' buffer");
		return -EINVAL;
	}
	/* every line (one 8-byte word in each slot of access bytes) inside the region */
	err = pl_eng_fits("region", c->base, c->base_len, &c->gen, c->access, PL_FENCE_NONE, 0, 0,
			  PL_PREP_NONE, why, len);
	if (err)
		return err;
	e->op = c->op;
	e->loop_op = c->op;
	e->mode = c->mode;
	e->form = PL_FORM_8;
	e->fam = pl_gen_fam(&c->gen);
	pl_gen_init(&e->gen, &c->gen);
	switch (c->chase_write) {
	case PL_CW_NONE:
		e->loop = pl_chase_loop;
		e->loop_name = "pl_chase_loop";
		insn = pl_ops[PL_OP_CHASE].insn[0];
		break;
	case PL_CW_RAW:
		/* a batch reads each line at most once after the round's write pass */
		if (e->gen.nslots < c->chase_batch) {
			snprintf(why, len, "engine: chase_write=raw: the chain's %llu lines are fewer than chase_batch %llu (a batch would read a line twice after one write)",
				 PL_ULL(e->gen.nslots), PL_ULL(c->chase_batch));
			return -EINVAL;
		}
		e->loop = pl_chase_raw_loop;
		e->loop_name = "pl_chase_raw_loop";
		insn = "movnti+mov";
		break;
	case PL_CW_STORE:
		e->loop = pl_chase_store_loop;
		e->loop_name = "pl_chase_store_loop";
		insn = "mov+mov";
		break;
	default:
		snprintf(why, len, "engine: chase_write %d does not exist", c->chase_write);
		return -EINVAL;
	}
	e->base = c->base;
	e->access = c->access;
	e->rdtscp = c->features & PL_F_RDTSCP;
	e->batch = c->chase_batch;
	e->chase_batch = c->chase_batch;
	e->chase_page = c->chase_page;
	e->chase_seed = c->chase_seed;
	e->chase_stream = c->chase_stream;
	e->chase_write = c->chase_write;
	e->data = c->data_seed | 1;
	e->left = c->count ? c->count : ~0ULL;
	e->stop = c->stop;
	e->samples = c->samples;
	e->nsamples_max = c->samples ? c->nsamples_max : 0;
	e->hist.b = c->hist_buckets;
	pl_hist_reset(&e->hist);
	snprintf(e->insn, sizeof(e->insn), "%s", insn);
	return 0;
}

int pl_eng_init(struct pl_eng *e, const struct pl_eng_cfg *c, char *why, size_t len)
{
	const struct pl_loop_ent *ent;
	const char *insn;
	bool mix;
	int err;

	memset(e, 0, sizeof(*e));
	if (c->op < 0 || c->op >= PL_OP_NR) {
		snprintf(why, len, "engine: op %d does not exist", c->op);
		return -EINVAL;
	}
	if (c->op == PL_OP_CHASE)
		return pl_eng_init_chase(e, c, why, len);
	e->form = pl_op_form(c->op, c->width, c->features);
	if (e->form < 0 || pl_form_width(e->form) != c->width) {
		snprintf(why, len, "engine: op %s has no %u-byte form on this CPU",
			 pl_ops[c->op].name, c->width);
		return -EOPNOTSUPP;
	}
	if (c->access < c->width || c->access % c->width ||
	    (c->access < PL_LINE ? c->access & (c->access - 1) : c->access % PL_LINE)) {
		snprintf(why, len, "engine: access_size %llu: not 8, 16, 32 or a multiple of 64, or not a multiple of the width %u",
			 (unsigned long long)c->access, c->width);
		return -EINVAL;
	}
	if (c->fence != PL_FENCE_NONE && c->fence_interval && c->fence_interval < c->access &&
	    c->access % c->fence_interval) {
		snprintf(why, len, "engine: fence_interval must divide access_size");
		return -EINVAL;
	}
	/* the region, and the ceiling's buffer: nothing outside them, whatever the caller judged */
	err = pl_eng_fits("region", c->base, c->base_len, &c->gen, c->access, c->fence,
			  c->fence_interval, pl_is_copy(pl_ops[c->op].flags) ? c->copy_delta : 0,
			  c->mode == PL_MODE_LAT ? c->prep : PL_PREP_NONE, why, len);
	if (err)
		return err;
	if (c->mode == PL_MODE_BW && c->ceil_buf) {
		struct pl_gen_cfg g;
		int cop;
		u64 a, r = pl_ceil_setup(c->op, c->access, c->fence, c->fence_interval, &c->gen,
					 &g, &a, &cop);

		err = pl_eng_fits("ceiling", c->ceil_buf, c->ceil_len, &g, a, c->fence,
				  c->fence_interval, pl_is_copy(pl_ops[cop].flags) ? r : 0,
				  PL_PREP_NONE, why, len);
		if (err)
			return err;
	}
	if (c->mode == PL_MODE_LAT && c->access > PL_LAT_MAX_ACCESS) {
		snprintf(why, len, "engine: a latency access of %llu bytes: at most %llu (one bracket, interrupts off, cannot be split)",
			 PL_ULL(c->access), PL_ULL(PL_LAT_MAX_ACCESS));
		return -EINVAL;
	}
	if (c->mode == PL_MODE_LAT && !c->hist_buckets) {
		snprintf(why, len, "engine: a latency thread needs a histogram");
		return -EINVAL;
	}
	if (c->mode == PL_MODE_LAT && c->nsamples_max && !c->samples) {
		snprintf(why, len, "engine: %llu samples need a buffer", PL_ULL(c->nsamples_max));
		return -EINVAL;
	}
	e->op = c->op;
	e->mode = c->mode;
	e->fam = pl_gen_fam(&c->gen);
	e->read_pct = pl_ops[c->op].writes ? c->read_pct : 0;
	/*
	 * Bandwidth at read_pct 100: every access is the mix's load, so the
	 * loops of op load run (the per-family loop without a delay or fence:
	 * the mix's add, compare and branch and the unused store data cost
	 * loads in flight, issue 36); the result keeps the op, and its reads.
	 */
	e->loop_op = c->op;
	if (c->mode == PL_MODE_BW && e->read_pct == 100) {
		e->loop_op = PL_OP_LOAD;
		e->read_pct = 0;
	}
	e->plain = c->fence == PL_FENCE_NONE && !e->read_pct && !c->delay_ticks;
	e->split = c->mode == PL_MODE_BW && c->access > PL_PIECE_BYTES;
	ent = c->mode == PL_MODE_LAT ? &pl_lat_loops[c->op][e->form] :
				       pl_bw_ent(e->loop_op, e->form, e->fam, e->plain, c->access);
	if (!ent->fn) {
		snprintf(why, len, "engine: op %s has no loops here", pl_ops[c->op].name);
		return -EOPNOTSUPP;
	}
	e->loop = ent->fn;
	e->loop_name = ent->name;
	e->base = c->base;
	e->copy_delta = c->copy_delta;
	e->access = c->access;
	e->fence = c->fence;
	e->fence_interval = c->fence_interval;
	e->flush = c->flush;
	e->delay_ticks = c->delay_ticks;
	e->prep = c->prep;
	e->rdtscp = c->features & PL_F_RDTSCP;
	e->avx = c->features & PL_F_AVX;
	e->spins = pl_spin_trips(c->delay_ticks, e->rdtscp);
	e->batch = pl_delay_batch(c->access, c->delay_ticks);
	e->left = c->count ? c->count : ~0ULL;
	e->stop = c->stop;
	e->samples = c->samples;
	e->nsamples_max = c->samples ? c->nsamples_max : 0;
	e->data = c->data_seed | 1;
	e->ceil_buf = c->ceil_buf;
	pl_gen_init(&e->gen, &c->gen);
	e->hist.b = c->hist_buckets;
	pl_hist_reset(&e->hist);
	/* what executes per unit: the op's instructions, then the mix's load */
	insn = pl_op_insn(c->op, c->width, c->features);
	mix = e->read_pct && e->read_pct < 100;
	if (e->read_pct == 100 || e->loop_op != c->op)
		insn = pl_op_insn(PL_OP_LOAD, c->width, c->features);
	snprintf(e->insn, sizeof(e->insn), "%s%s%s", insn, mix ? "," : "",
		 mix ? pl_op_insn(PL_OP_LOAD, c->width, c->features) : "");
	return 0;
}

void pl_eng_run(struct pl_eng *e, u64 until)
{
	/* no dirty upper vector state into or out of a segment (method.md) */
	if (e->avx)
		asm volatile("vzeroupper" ::: "memory");
	e->loop(e, until);
	if (e->avx)
		asm volatile("vzeroupper" ::: "memory");
}

#define PL_CAL_N	101	/* odd; 808 bytes of stack */

/* the bracket of the latency loops with nothing inside */
static __always_inline u64 pl_empty_bracket(bool rdtscp)
{
	u32 lo0, hi0, lo1, hi1, aux;

	if (rdtscp)
		asm volatile(PL_T0_P PL_T1_P
			     : "=&a"(lo1), "=&d"(hi1), "=&c"(aux), [lo] "=&r"(lo0), [hi] "=&r"(hi0)
			     :: "memory");
	else
		asm volatile(PL_T0_N PL_T1_N
			     : "=&a"(lo1), "=&d"(hi1), "=&c"(aux), [lo] "=&r"(lo0), [hi] "=&r"(hi0)
			     :: "memory");
	(void)aux;
	return PL_TICKS(lo0, hi0, lo1, hi1);
}

void pl_eng_calibrate(struct pl_eng *e)
{
	u64 v[PL_CAL_N], x;
	int i, j;

	for (i = 0; i < PL_CAL_N; i++) {
		x = pl_empty_bracket(e->rdtscp);
		/* insertion sort: small n, runs once per thread and run */
		for (j = i; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
	e->overhead = v[PL_CAL_N / 2];
}

/* ---- the engine's ceiling: the run ---- */

/*
 * The ceiling is the best of up to PL_CEIL_WINDOWS windows of ticks /
 * windows each, after one window that brings the buffer into the cache: a
 * window that lost the CPU (userspace: preemption, interrupts) is slower,
 * never faster, so the best one is the loop's own rate.  Every window runs
 * at least one batch (a delay's batch lasts about PL_DELAY_BATCH_TICKS, or
 * one access and its delay where that is longer), so the
 * windows stop once ticks have passed, after the first measured one, and
 * at the run's stop flag: with interrupts off the ceiling lasts at most
 * ticks + one window + two batches (method.md), whatever the delay.
 */
#define PL_CEIL_WINDOWS	8

void pl_eng_ceiling(struct pl_eng *e, u64 ticks)
{
	struct pl_eng c = *e;
	struct pl_gen_cfg g;
	const struct pl_loop_ent *ent;
	int cop, k;
	u64 a, r, start, t0, t1, win = ticks / PL_CEIL_WINDOWS;

	e->ceil_bytes = 0;
	e->ceil_ticks = 0;
	e->ceil_ops = 0;
	if (e->mode != PL_MODE_BW || !e->ceil_buf)
		return;
	r = pl_ceil_setup(e->loop_op, e->access, e->fence, e->fence_interval, &e->gen.c, &g, &a, &cop);
	ent = pl_bw_ent(cop, e->form, e->fam, e->plain, a);
	if (!ent->fn)
		return;
	pl_gen_init(&c.gen, &g);
	c.access = a;	/* fences keep their rate per byte at the smaller access */
	c.op = cop;
	c.base = e->ceil_buf;
	c.copy_delta = pl_is_copy(pl_ops[cop].flags) ? r : 0;
	c.loop = ent->fn;
	c.left = ~0ULL;
	c.fence_acc = 0;
	c.rw_acc = 0;
	c.part = 0;
	c.part_bytes = 0;
	memset(&c.st, 0, sizeof(c.st));
	e->ceil_loop = ent->name;
	if (e->avx)
		asm volatile("vzeroupper" ::: "memory");
	start = pl_rdtsc();
	for (k = 0; k <= PL_CEIL_WINDOWS && !READ_ONCE(*e->stop); k++) {
		u64 bytes = c.st.bytes + c.part_bytes;

		t0 = pl_rdtsc();
		c.loop(&c, t0 + win);
		t1 = pl_rdtsc();
		/* (a split access counts when done: the window's share of one in flight too) */
		bytes = c.st.bytes + c.part_bytes - bytes;
		/* window 0 warms the cache; then keep the fastest (bytes/ticks) */
		if (k && t1 > t0 && (!e->ceil_ticks ||
				     (pl_u128)bytes * e->ceil_ticks >
				     (pl_u128)e->ceil_bytes * (t1 - t0))) {
			e->ceil_bytes = bytes;
			e->ceil_ticks = t1 - t0;
		}
		if (k && t1 - start >= ticks)
			break;
	}
	e->ceil_ops = c.st.ops;
	if (e->avx)
		asm volatile("vzeroupper" ::: "memory");
}
