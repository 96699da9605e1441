// SPDX-License-Identifier: GPL-2.0
/*
 * params.c - the table of run parameters (params.def) and their text: the
 * one parser of the values the module's sysfs files, the runner's
 * KEY=VALUE arguments and the controller accept, and the one printer of
 * the canonical form they read back.  What a value may be is judged in
 * check.c; a value's text applied to the parameters (parsed here, judged
 * there) in apply.c.
 */
#include "pl_params.h"

const char *const pl_mode_names[] = { "bandwidth", "latency", NULL };
const char *const pl_pattern_names[] = { "seq", "rand", "stride", "hotspot", NULL };
const char *const pl_fence_names[] = { "none", "sfence", "mfence", NULL };
const char *const pl_flush_names[] = { "line", "access", NULL };
const char *const pl_placement_names[] = { "global", "per-thread", "per-dimm", NULL };
const char *const pl_onoff_names[] = { "on", "off", NULL };
const char *const pl_chase_write_names[] = { "none", "raw", "store", NULL };

/* enums are stored as the index of their name: keep both in step */
_Static_assert(PL_MODE_BW == 0 && PL_MODE_LAT == 1, "mode names");
_Static_assert(PL_PAT_SEQ == 0 && PL_PAT_RAND == 1 && PL_PAT_STRIDE == 2 &&
	      PL_PAT_HOTSPOT == 3, "pattern names");
_Static_assert(PL_FENCE_NONE == 0 && PL_FENCE_SFENCE == 1 && PL_FENCE_MFENCE == 2,
	      "fence names");
_Static_assert(PL_FLUSH_LINE == 0 && PL_FLUSH_ACCESS == 1, "flush names");
_Static_assert(PL_PLACE_GLOBAL == 0 && PL_PLACE_THREAD == 1 && PL_PLACE_DIMM == 2,
	      "placement names");
_Static_assert(PL_CW_NONE == 0 && PL_CW_RAW == 1 && PL_CW_STORE == 2, "chase_write names");
_Static_assert(PL_OP_NR <= 256, "ops are stored in a u8");

/* the descriptions are for the documentation and the controller, not the module */
#ifdef __KERNEL__
#define PL_DOC(text)		NULL
#else
#define PL_DOC(text)		text
#endif

#define PL_OFF_NUM(n)		offsetof(struct pl_params, n)
#define PL_OFF_SIZE(n)		offsetof(struct pl_params, n)
#define PL_OFF_BOOL(n)		offsetof(struct pl_params, n)
#define PL_OFF_ENUM(n)		offsetof(struct pl_params, n)
#define PL_OFF_OPS(n)		0
#define PL_OFF_CPUS(n)		0
#define PL_OFF_NAME(n)		offsetof(struct pl_params, n)

const struct pl_param pl_params[PL_NPARAMS] = {
#define PL_PARAM(_name, _kind, _rule, _unit, _lo, _hi, _def, _mult, _names, _desc)	\
	[PL_P_##_name] = { .name = #_name, .kind = PL_K_##_kind, .rule = PL_R_##_rule,	\
			   .unit = _unit, .lo = _lo, .hi = _hi, .def = _def,		\
			   .mult = _mult, .names = _names, .desc = PL_DOC(_desc),	\
			   .off = PL_OFF_##_kind(_name) },
#include "params.def"
#undef PL_PARAM
};

u64 *pl_param_slot(struct pl_params *p, int id)
{
	return (u64 *)((char *)p + pl_params[id].off);
}

static u64 pl_value_of(const struct pl_params *p, int id)
{
	return *(const u64 *)((const char *)p + pl_params[id].off);
}

int pl_param_find(const char *name, size_t len)
{
	int i;

	for (i = 0; i < PL_NPARAMS; i++)
		if (strlen(pl_params[i].name) == len && !memcmp(pl_params[i].name, name, len))
			return i;
	return -1;
}

void pl_params_defaults(struct pl_params *p)
{
	int i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < PL_NPARAMS; i++)
		if (pl_params[i].kind != PL_K_OPS && pl_params[i].kind != PL_K_CPUS &&
		    pl_params[i].kind != PL_K_NAME)
			*pl_param_slot(p, i) = pl_params[i].def;
	p->ops[0] = PL_OP_LOAD;
	p->nops = 1;
}

/* ---- CPU bitmaps of PL_MAX_CPUS bits ---- */
bool pl_cpu_test(const u64 *mask, unsigned int cpu)
{
	return cpu < PL_MAX_CPUS && (mask[cpu / 64] >> (cpu % 64)) & 1;
}

unsigned int pl_cpu_next(const u64 *mask, unsigned int from)
{
	unsigned int cpu;
	u64 w;

	for (cpu = from; cpu < PL_MAX_CPUS; cpu = (cpu | 63) + 1) {
		w = mask[cpu / 64] >> (cpu % 64);
		if (w)
			return cpu + __builtin_ctzll(w);
	}
	return PL_MAX_CPUS;
}

unsigned int pl_cpu_top(const u64 *mask)
{
	int w;

	for (w = PL_CPU_WORDS - 1; w >= 0; w--)
		if (mask[w])
			return w * 64 + 64 - __builtin_clzll(mask[w]);
	return 0;
}

/* ---- text ---- */
static bool pl_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* s[0..len) without white space at either end */
void pl_text_trim(const char **s, size_t *len)
{
	while (*len && pl_space(**s)) {
		(*s)++;
		(*len)--;
	}
	while (*len && pl_space((*s)[*len - 1]))
		(*len)--;
}

/* decimal, or hex after 0x; never octal.  0, -EINVAL (not a number) or -ERANGE */
static int pl_parse_u64(const char *s, size_t len, u64 *out)
{
	unsigned int base = 10, d;
	size_t i = 0;
	u64 v = 0;

	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	}
	if (i == len)
		return -EINVAL;
	for (; i < len; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			d = s[i] - '0';
		else if (base == 16 && s[i] >= 'a' && s[i] <= 'f')
			d = s[i] - 'a' + 10;
		else if (base == 16 && s[i] >= 'A' && s[i] <= 'F')
			d = s[i] - 'A' + 10;
		else
			return -EINVAL;
		if (v > (~0ULL - d) / base)
			return -ERANGE;
		v = v * base + d;
	}
	*out = v;
	return 0;
}

int pl_text_u64(const char *s, size_t len, bool size, u64 *v)
{
	unsigned int shift = 0;
	int err;

	if (len > 31)
		return -E2BIG;
	if (size && len > 1) {
		switch (s[len - 1]) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		}
		if (shift)
			len--;
	}
	err = pl_parse_u64(s, len, v);
	if (!err && *v > (~0ULL >> shift))
		err = -ERANGE;
	if (!err)
		*v <<= shift;
	return err;
}

static bool pl_cpu_num(const char *s, size_t len, size_t *at, unsigned int *cpu)
{
	size_t start = *at;
	u64 v = 0;

	while (*at < len && s[*at] >= '0' && s[*at] <= '9' && v < PL_MAX_CPUS)
		v = v * 10 + (s[(*at)++] - '0');
	*cpu = v;
	return *at > start && v < PL_MAX_CPUS;
}

bool pl_cpus_parse(const char *s, size_t len, u64 *mask, unsigned int *top)
{
	unsigned int a, b, used, group, cpu;
	size_t at = 0;

	*top = 0;
	while (len) {
		if (!pl_cpu_num(s, len, &at, &a))
			return false;
		b = a;
		used = group = 1;
		if (at < len && s[at] == '-') {
			at++;
			if (!pl_cpu_num(s, len, &at, &b) || b < a)
				return false;
			if (at < len && s[at] == ':') {
				at++;
				if (!pl_cpu_num(s, len, &at, &used) || at == len || s[at++] != '/' ||
				    !pl_cpu_num(s, len, &at, &group) || !used || used > group)
					return false;
			}
		}
		for (cpu = a; cpu <= b; cpu++)
			if ((cpu - a) % group < used) {
				if (mask)
					mask[cpu / 64] |= 1ULL << (cpu % 64);
				if (cpu + 1 > *top)
					*top = cpu + 1;
			}
		if (at == len)
			break;
		if (s[at++] != ',' || at == len)
			return false;
	}
	return true;
}

/* ---- printing ---- */
void pl_out(struct pl_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->len + 1 >= b->cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len += (size_t)n < b->cap - b->len ? (size_t)n : b->cap - b->len - 1;
}

static void pl_out_cpus(struct pl_buf *t, const u64 *mask)
{
	unsigned int a, b;
	const char *sep = "";

	for (a = pl_cpu_next(mask, 0); a < PL_MAX_CPUS; a = pl_cpu_next(mask, b + 1)) {
		for (b = a; b + 1 < PL_MAX_CPUS && pl_cpu_test(mask, b + 1); b++)
			;
		if (a == b)
			pl_out(t, "%s%u", sep, a);
		else
			pl_out(t, "%s%u-%u", sep, a, b);
		sep = ",";
	}
}

size_t pl_param_show(const struct pl_params *p, int id, char *buf, size_t len)
{
	struct pl_buf t = { .p = buf, .cap = len };
	unsigned int i;

	if (!len)
		return 0;
	buf[0] = '\0';
	switch (pl_params[id].kind) {
	case PL_K_OPS:
		for (i = 0; i < p->nops; i++)
			pl_out(&t, "%s%s", i ? "," : "", pl_op_name(p->ops[i]));
		break;
	case PL_K_CPUS:
		pl_out_cpus(&t, p->cpus);
		break;
	case PL_K_NAME:
		pl_out(&t, "%s", (const char *)p + pl_params[id].off);
		break;
	case PL_K_ENUM:
		pl_out(&t, "%s", pl_params[id].names[pl_value_of(p, id)]);
		break;
	default:
		pl_out(&t, "%llu", pl_value_of(p, id));
		break;
	}
	return t.len;
}

/* a size as its shortest exact K/M/G/T form */
static void pl_out_size(struct pl_buf *t, u64 v)
{
	static const char suffix[] = "TGMK";
	int i;

	for (i = 0; i < 4; i++)
		if (v && !(v & ((1ULL << (40 - 10 * i)) - 1))) {
			pl_out(t, "%llu%c", v >> (40 - 10 * i), suffix[i]);
			return;
		}
	pl_out(t, "%llu", v);
}

size_t pl_param_allowed(int id, char *buf, size_t len)
{
	const struct pl_param *d = &pl_params[id];
	struct pl_buf t = { .p = buf, .cap = len };
	int i, op;

	if (!len)
		return 0;
	buf[0] = '\0';
	switch (d->kind) {
	case PL_K_ENUM:
		for (i = 0; d->names[i]; i++)
			pl_out(&t, "%s%s", i ? ", " : "", d->names[i]);
		break;
	case PL_K_OPS:
		for (op = 0; op < PL_OP_NR; op++)
			pl_out(&t, "%s%s", op ? ", " : "", pl_op_name(op));
		pl_out(&t, ", or a comma list of them");
		break;
	case PL_K_CPUS:
		pl_out(&t, "a CPU list such as 0-3,6, or empty");
		break;
	case PL_K_NAME:
		pl_out(&t, "a name of up to %d printable characters without spaces, or empty", PL_NAME_MAX);
		break;
	case PL_K_BOOL:
		pl_out(&t, "0 or 1");
		break;
	default:
		if (d->rule == PL_R_WIDTH) {
			pl_out(&t, "0, 8, 16, 32 or 64");
			break;
		}
		if (d->rule == PL_R_ACCESS) {
			pl_out(&t, "8, 16, 32 or a multiple of 64, up to ");
			pl_out_size(&t, d->hi);
			break;
		}
		if (d->kind == PL_K_SIZE) {
			pl_out_size(&t, d->lo);
			pl_out(&t, "..");
			pl_out_size(&t, d->hi);
		} else {
			pl_out(&t, "%llu..%llu", d->lo, d->hi);
		}
		if (d->mult)
			pl_out(&t, ", a multiple of %llu", d->mult);
		if (d->rule == PL_R_BELOW_TARGET)
			pl_out(&t, ", below target_size");
		else if (d->rule == PL_R_IN_TARGET)
			pl_out(&t, ", at most target_size");
		else if (d->rule == PL_R_ONLINE)
			pl_out(&t, ", at most the online CPUs");
		break;
	}
	if (d->rule == PL_R_PREFETCH)
		pl_out(&t, " (off needs prefetch_control)");
	return t.len;
}
