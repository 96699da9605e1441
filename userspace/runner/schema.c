// SPDX-License-Identifier: GPL-2.0
/*
 * schema.c - the run parameter table (core/params.def) as JSON, for
 * `pmemlab-run --schema` and the controller (libplcore.so): each
 * parameter's name, kind, unit, range, multiple, names, default (as the
 * module shows it), allowed values in words and description, the ops and
 * CPU features the validator knows, and the longest value text (text_max).
 */
#include <stdlib.h>
#include "runner.h"

static const char *const kind_names[] = {
	[PL_K_NUM] = "num", [PL_K_SIZE] = "size", [PL_K_BOOL] = "bool",
	[PL_K_ENUM] = "enum", [PL_K_OPS] = "ops", [PL_K_CPUS] = "cpus", [PL_K_NAME] = "name",
};

static const char *const rule_names[] = {
	[PL_R_NONE] = "", [PL_R_WIDTH] = "width", [PL_R_ACCESS] = "access",
	[PL_R_BELOW_TARGET] = "below_target", [PL_R_IN_TARGET] = "in_target",
	[PL_R_ONLINE] = "online", [PL_R_PREFETCH] = "prefetch",
};

static void put_str(struct pl_buf *b, const char *s)
{
	pl_out(b, "\"");
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			pl_out(b, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			pl_out(b, "\\u%04x", *s);
		else
			pl_out(b, "%c", *s);
	}
	pl_out(b, "\"");
}

static void put_param(struct pl_buf *b, const struct pl_params *defaults, int id)
{
	const struct pl_param *d = &pl_params[id];
	char text[512];
	int i;

	pl_out(b, "{\"name\": ");
	put_str(b, d->name);
	pl_out(b, ", \"kind\": \"%s\", \"rule\": \"%s\", \"unit\": ", kind_names[d->kind],
	       rule_names[d->rule]);
	put_str(b, d->unit);
	pl_out(b, ", \"lo\": %llu, \"hi\": %llu, \"multiple_of\": %llu, \"names\": [", d->lo, d->hi,
	       d->mult);
	for (i = 0; d->names && d->names[i]; i++) {
		pl_out(b, "%s", i ? ", " : "");
		put_str(b, d->names[i]);
	}
	pl_out(b, "], \"choices\": [%s], \"default\": ",
	       d->rule == PL_R_WIDTH ? "0, 8, 16, 32, 64" : "");
	pl_param_show(defaults, id, text, sizeof(text));
	put_str(b, text);
	pl_out(b, ", \"allowed\": ");
	pl_param_allowed(id, text, sizeof(text));
	put_str(b, text);
	pl_out(b, ", \"doc\": ");
	put_str(b, d->desc);
	pl_out(b, "}");
}

const char *plu_schema_json(void)
{
	static char *json;
	struct pl_params defaults;
	struct pl_buf b = { 0 };
	int i;

	if (json)
		return json;
	b.cap = 64 << 10;
	b.p = malloc(b.cap);
	if (!b.p)
		return NULL;
	pl_params_defaults(&defaults);
	pl_out(&b, "{\"params\": [");
	for (i = 0; i < PL_NPARAMS; i++) {
		pl_out(&b, "%s\n  ", i ? "," : "");
		put_param(&b, &defaults, i);
	}
	pl_out(&b, "],\n \"ops\": [");
	for (i = 0; i < PL_OP_NR; i++) {
		pl_out(&b, "%s{\"name\": ", i ? ", " : "");
		put_str(&b, pl_op_name(i));
		pl_out(&b, ", \"reads\": %s, \"writes\": %s, \"flushes\": %s, \"non_temporal\": %s, \"own_loop\": %s}",
		       pl_ops[i].flags & PL_OPF_READS ? "true" : "false",
		       pl_ops[i].flags & PL_OPF_WRITES ? "true" : "false",
		       pl_ops[i].flags & PL_OPF_FLUSHES ? "true" : "false",
		       pl_ops[i].flags & PL_OPF_NT ? "true" : "false",
		       pl_ops[i].flags & PL_OPF_OWN ? "true" : "false");
	}
	pl_out(&b, "],\n \"features\": [");
	for (i = 0; i < PL_F_NR; i++) {
		pl_out(&b, "%s", i ? ", " : "");
		put_str(&b, pl_feature_names[i]);
	}
	pl_out(&b, "],\n \"text_max\": %d}\n", PL_TEXT_MAX);
	if (b.len + 1 >= b.cap) {	/* cut short: never hand out half a table */
		free(b.p);
		return NULL;
	}
	json = b.p;
	return json;
}
