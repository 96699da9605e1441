// SPDX-License-Identifier: GPL-2.0
/*
 * results.c - turn a finished run into the `result`, `histogram` and
 * `samples` files (built once, under the target's lock, read through bin attributes;
 * the text is the core's, core/resultfmt.c).
 */
#define pr_fmt(fmt) "pmemlab: " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/lockdep.h>
#include <asm/tsc.h>
#include "pmemlab.h"

static int pl_build_samples(struct pl_dev *d, struct pl_run *r)
{
	size_t nthr = 0, per = r->c.samples, k = 0;
	unsigned int i;

	for (i = 0; i < r->n; i++)
		nthr += !!r->w[i].t.e.samples;
	if (!nthr || !per)
		return 0;
	d->samples = kvmalloc_array(nthr * per, sizeof(u64), GFP_KERNEL);
	if (!d->samples)
		return -ENOMEM;
	for (i = 0; i < r->n; i++) {
		if (!r->w[i].t.e.samples)
			continue;
		pl_report_samples(&r->w[i].t, d->samples + k * per, per);
		k++;
	}
	d->samples_len = nthr * per * sizeof(u64);
	return 0;
}

int pl_results_build(struct pl_dev *d, struct pl_run *r)
{
	struct pl_buf b = { .cap = (r->n + 1) * PL_LINE_BYTES }, h = { .cap = 1 };
	struct pl_report rep;
	u64 *buckets;
	unsigned int i;
	int err = -ENOMEM;

	lockdep_assert_held(&d->lock);
	pl_results_free(d);
	for (i = 0; i < r->n; i++)
		h.cap += pl_report_hist_room(&r->w[i].t);
	buckets = kvcalloc(PL_HIST_NB, sizeof(u64), GFP_KERNEL);
	b.p = kvmalloc(b.cap, GFP_KERNEL);
	h.p = kvmalloc(h.cap, GFP_KERNEL);
	if (!buckets || !b.p || !h.p) {
		kvfree(b.p);
		kvfree(h.p);
		goto out;
	}
	h.p[0] = '\0';
	pl_report_begin(&rep, buckets, tsc_khz, r->width);
	pl_report_times(&rep, r->run_tsc, r->done_tsc);
	for (i = 0; i < r->n; i++)
		pl_report_thread(&b, &h, &rep, &r->w[i].t);
	pl_report_all(&b, &h, &rep, r->c.mode, &d->agg);
	d->agg_valid = true;
	d->result = b.p;
	d->result_len = b.len;
	d->histo = h.p;
	d->histo_len = h.len;
	err = pl_build_samples(d, r);
out:
	kvfree(buckets);
	return err;
}

void pl_results_free(struct pl_dev *d)
{
	lockdep_assert_held(&d->lock);
	kvfree(d->result);
	kvfree(d->histo);
	kvfree(d->samples);
	d->result = NULL;
	d->histo = NULL;
	d->samples = NULL;
	d->result_len = 0;
	d->histo_len = 0;
	d->samples_len = 0;
	d->agg_valid = false;
	memset(&d->agg, 0, sizeof(d->agg));
}
