// SPDX-License-Identifier: GPL-2.0
/*
 * mod.c - the module's state, below every other glue file: its targets
 * (the top level and the named ones, by name) and what is common to them
 * (CPU features, prefetch control).  dev.c makes and removes targets,
 * run.c reads them, sysfs.c and prefetch.c read the common facts: each
 * from here, so that none of them calls up into another for it.
 */
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/string.h>
#include "pmemlab.h"

struct pl_module pl_mod = {
	.lock = __MUTEX_INITIALIZER(pl_mod.lock),
	.named = LIST_HEAD_INIT(pl_mod.named),
};

/*
 * the named target of that name, or NULL (under pl_mod.lock); one being
 * added (no directory yet) or being removed (gone) is not there
 */
struct pl_dev *pl_dev_find(const char *name)
{
	struct pl_dev *d;

	lockdep_assert_held(&pl_mod.lock);
	list_for_each_entry(d, &pl_mod.named, entry)
		if (!strcmp(d->name, name) && !d->opening && !d->gone)
			return d;
	return NULL;
}
