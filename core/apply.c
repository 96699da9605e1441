// SPDX-License-Identifier: GPL-2.0
/*
 * apply.c - a run parameter set from its text: parsed by the table's rules
 * (params.c), judged by the validator (check.c), stored only when both
 * accept it.  The module's sysfs writes, the runner's KEY=VALUE arguments
 * and the controller's values (libplcore.so) all come through here, so
 * params.c and check.c never call each other's text and verdict code.
 */
#include "pl_run.h"

/* "load ntload ... copy ntcopy": what op= accepts, for a refusal */
static void pl_out_op_names(struct pl_buf *b)
{
	int i;

	for (i = 0; i < PL_OP_NR; i++)
		pl_out(b, "%s%s", i ? " " : "", pl_ops[i].name);
}

#define PL_SHOW(len)	((int)((len) < 32 ? (len) : 32))

static int pl_parse_num(int id, const char *s, size_t len, u64 *v, struct pl_verdict *vd)
{
	bool size = pl_params[id].kind == PL_K_SIZE;

	switch (pl_text_u64(s, len, size, v)) {
	case 0:
		return 0;
	case -E2BIG:
		return pl_refuse(vd, -EINVAL, id, false, "value too long");
	case -ERANGE:
		return pl_refuse(vd, -EINVAL, id, false, "'%.*s' is too large", PL_SHOW(len), s);
	default:
		return pl_refuse(vd, -EINVAL, id, false, "'%.*s' is not a non-negative integer%s",
				 PL_SHOW(len), s, size ? " (K/M/G/T suffixes allowed)" : "");
	}
}

static int pl_parse_enum(int id, const char *s, size_t len, u64 *v, struct pl_verdict *vd)
{
	const char *const *names = pl_params[id].names;
	u64 i;

	for (i = 0; names[i]; i++)
		if (strlen(names[i]) == len && !memcmp(names[i], s, len)) {
			*v = i;
			return 0;
		}
	return pl_refuse(vd, -EINVAL, id, false, "'%.*s' is not one of the allowed names",
			 PL_SHOW(len), s);
}

static int pl_set_ops(struct pl_params *p, const char *s, size_t len, const struct pl_facts *f,
		      struct pl_verdict *v)
{
	u8 ops[PL_MAX_THREADS];
	size_t at = 0, tok;
	unsigned int n = 0;
	int op;

	for (;;) {
		for (tok = 0; at + tok < len && s[at + tok] != ','; tok++)
			;
		op = tok ? pl_op_find(s + at, tok) : -1;
		if (op < 0) {
			char names[PL_OP_NR * 24];
			struct pl_buf b = { .p = names, .cap = sizeof(names) };

			names[0] = '\0';
			pl_out_op_names(&b);
			return pl_refuse(v, -EINVAL, PL_P_op, false, "'%.*s' is not an op (%s)",
					 PL_SHOW(tok), s + at, names);
		}
		if (n == PL_MAX_THREADS)
			return pl_refuse(v, -EINVAL, PL_P_op, false, "more than %d entries",
					 PL_MAX_THREADS);
		ops[n++] = op;
		at += tok;
		if (at == len)
			break;
		at++;			/* the comma */
	}
	memcpy(p->ops, ops, n);
	p->nops = n;
	return 0;
}

static int pl_set_cpus(struct pl_params *p, const char *s, size_t len, const struct pl_facts *f,
		       struct pl_verdict *v)
{
	unsigned int top;
	int err;

	/* judged first, stored after: a refused list leaves the old one */
	if (!pl_cpus_parse(s, len, NULL, &top))
		return pl_refuse(v, -EINVAL, PL_P_cpus, false, "'%.*s' is not a CPU list like 0-3,6",
				 PL_SHOW(len), s);
	err = pl_judge_cpus(top, f, v);
	if (err)
		return err;
	memset(p->cpus, 0, sizeof(p->cpus));
	pl_cpus_parse(s, len, p->cpus, &top);
	return 0;
}

/*
 * a NAME value: printable, no white space, then as the backend names its
 * targets (check.c: the module's rule for a named target's name; the
 * runner's spec is its own to judge)
 */
static int pl_set_name(struct pl_params *p, int id, const char *s, size_t len,
		       const struct pl_facts *f, struct pl_verdict *v)
{
	char *dst = (char *)p + pl_params[id].off;
	size_t i;
	int err;

	if (len > PL_NAME_MAX)
		return pl_refuse(v, -EINVAL, id, false, "%zu characters: at most %d", len, PL_NAME_MAX);
	for (i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return pl_refuse(v, -EINVAL, id, false,
					 "want printable characters without spaces (character %zu is not)", i + 1);
	err = pl_judge_name(id, s, len, f, v);
	if (err)
		return err;
	memcpy(dst, s, len);
	dst[len] = '\0';
	return 0;
}

int pl_param_set(struct pl_params *p, int id, const char *text, size_t len,
		 const struct pl_facts *f, struct pl_verdict *v)
{
	const char *s = text;
	u64 val;
	int err;

	pl_verdict_clear(v);
	if (len - (len && text[len - 1] == '\n') > PL_TEXT_MAX)
		return pl_refuse(v, -EINVAL, id, false,
				 "value of %zu bytes: at most %d fit in one sysfs write (a page); nothing was set",
				 len - (text[len - 1] == '\n'), PL_TEXT_MAX);
	if (memchr(text, '\0', len))
		return pl_refuse(v, -EINVAL, id, false, "value contains a NUL byte");
	pl_text_trim(&s, &len);
	if (!len && pl_params[id].kind != PL_K_CPUS && pl_params[id].kind != PL_K_NAME)
		return pl_refuse(v, -EINVAL, id, false, "empty value");
	switch (pl_params[id].kind) {
	case PL_K_NAME:
		return pl_set_name(p, id, s, len, f, v);
	case PL_K_OPS:
		return pl_set_ops(p, s, len, f, v);
	case PL_K_CPUS:
		return pl_set_cpus(p, s, len, f, v);
	case PL_K_ENUM:
		err = pl_parse_enum(id, s, len, &val, v);
		break;
	default:
		err = pl_parse_num(id, s, len, &val, v);
		break;
	}
	if (!err)
		err = pl_judge_value(id, val, f, v);
	if (!err)
		*pl_param_slot(p, id) = val;
	return err;
}

int pl_params_apply(struct pl_params *p, const char *const *text, const struct pl_facts *f,
		    struct pl_verdict *v)
{
	int id, err;

	pl_verdict_clear(v);
	for (id = 0; id < PL_NPARAMS; id++) {
		if (!text[id])
			continue;
		err = pl_param_set(p, id, text[id], strlen(text[id]), f, v);
		if (err)
			return err;
	}
	return 0;
}
