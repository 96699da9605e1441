// SPDX-License-Identifier: GPL-2.0
/*
 * ops.c - the op table, expanded from ops.def: names, flags, which form of
 * a width runs on a CPU, and the instructions it executes.  The loops that
 * execute them are generated in engine.c from the same rows.
 */
#include "pl_params.h"

const char *const pl_feature_names[PL_F_NR] = {
#define PL_FEAT(ID, name, X86, leaf, sub, reg, bit, xcr0)	[PL_FB_##ID] = name,
#include "features.def"
};

/* one op x form: its mnemonics and what it needs (ops.def PL_K rows) */
struct pl_op_kind {
	const char *insn;	/* NULL: the op has no such form */
	u32 needs;
};

static const struct pl_op_kind pl_kinds[PL_OP_NR][PL_NFORM] = {
#define PL_K(ID, ident, form, UNIT, FLUSH, insn, needs)			\
	[PL_OP_##ID][PL_FORM_##form] = { insn, needs },
#include "ops.def"
};

/* the form a width prefers (16: VEX), and the one it falls back to */
static int pl_best_form(unsigned int width)
{
	return width == 8 ? PL_FORM_8 : width == 16 ? PL_FORM_16vex :
	       width == 32 ? PL_FORM_32 : PL_FORM_64;
}

static int pl_fallback_form(unsigned int width)
{
	return width == 16 ? PL_FORM_16sse : pl_best_form(width);
}

/*
 * The op table: each field set once, by its row.  insn[] names the
 * preferred form of a width (16: VEX), needs[] what the fallback form
 * needs (16: legacy SSE), i.e. what a CPU must have to run the width at all.
 */
#define PL_WI_8		0
#define PL_WI_16sse	1
#define PL_WI_16vex	1
#define PL_WI_32	2
#define PL_WI_64	3
#define PL_INSN_8(ID, insn_)		[PL_OP_##ID].insn[0] = insn_,
#define PL_INSN_16sse(ID, insn_)
#define PL_INSN_16vex(ID, insn_)	[PL_OP_##ID].insn[1] = insn_,
#define PL_INSN_32(ID, insn_)		[PL_OP_##ID].insn[2] = insn_,
#define PL_INSN_64(ID, insn_)		[PL_OP_##ID].insn[3] = insn_,
#define PL_NEEDS_8(ID, needs_)		[PL_OP_##ID].needs[0] = needs_,
#define PL_NEEDS_16sse(ID, needs_)	[PL_OP_##ID].needs[1] = needs_,
#define PL_NEEDS_16vex(ID, needs_)
#define PL_NEEDS_32(ID, needs_)		[PL_OP_##ID].needs[2] = needs_,
#define PL_NEEDS_64(ID, needs_)		[PL_OP_##ID].needs[3] = needs_,

const struct pl_op_desc pl_ops[PL_OP_NR] = {
#define PL_OP(ID, ident, name_, flags_, CEIL)					\
	[PL_OP_##ID].name = name_,						\
	[PL_OP_##ID].flags = flags_,						\
	[PL_OP_##ID].ceil_op = PL_OP_##CEIL,					\
	[PL_OP_##ID].writes = !!((flags_) & PL_OPF_WRITES),			\
	[PL_OP_##ID].flushes = !!((flags_) & PL_OPF_FLUSHES),
#define PL_K(ID, ident, form, UNIT, FLUSH, insn_, needs_)			\
	PL_INSN_##form(ID, insn_) PL_NEEDS_##form(ID, needs_)
#define PL_NOFORM(ID, form)	[PL_OP_##ID].needs[PL_WI_##form] = PL_F_NONE,
#define PL_OWN(ID, form, insn_, needs_)						\
	[PL_OP_##ID].insn[PL_WI_##form] = insn_, [PL_OP_##ID].needs[PL_WI_##form] = needs_,
#include "ops.def"
};

/* an op with its own loop has no rows */
#define PL_K(ID, ident, form, UNIT, FLUSH, insn, needs)				\
	_Static_assert(!(PL_OPFL_##ID & PL_OPF_OWN), "ops.def: " #ID " has its own loop");
#include "ops.def"

int pl_op_form(int op, unsigned int width, u32 features)
{
	const struct pl_op_kind *k;
	int f;

	if (op < 0 || op >= PL_OP_NR)
		return -1;
	f = pl_best_form(width);
	k = &pl_kinds[op][f];
	if (k->insn && !(k->needs & ~features))
		return f;
	f = pl_fallback_form(width);
	k = &pl_kinds[op][f];
	if (k->insn && !(k->needs & ~features))
		return f;
	return -1;
}

const char *pl_op_insn(int op, unsigned int width, u32 features)
{
	int f = pl_op_form(op, width, features);

	return f < 0 ? NULL : pl_kinds[op][f].insn;
}

u32 pl_op_missing(enum pl_op op, unsigned int width, u32 features)
{
	u32 need = pl_ops[op].needs[pl_width_idx(width)];

	if (need & PL_F_NONE)
		return PL_F_NONE;
	return need & ~features;
}

/* ---- the ops a parameter names ---- */
const char *pl_op_name(int op)
{
	return op >= 0 && op < PL_OP_NR ? pl_ops[op].name : "?";
}

int pl_op_find(const char *s, size_t len)
{
	int i;

	for (i = 0; i < PL_OP_NR; i++)
		if (strlen(pl_ops[i].name) == len && !memcmp(pl_ops[i].name, s, len))
			return i;
	return -1;
}
