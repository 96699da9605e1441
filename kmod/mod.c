// SPDX-License-Identifier: GPL-2.0
/*
 * mod.c - the module's state, below every other glue file: its targets
 * (the top level and the named ones, by name) and what is common to them
 * (CPU features, prefetch control), and the notification of a target's
 * `state`.  dev.c makes and removes targets, run.c reads them, sysfs.c
 * and prefetch.c read the common facts, and sysfs.c and run.c notify
 * `state`: each from here, so that none of them calls up into another
 * for it.
 */
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/string.h>
#include <linux/sysfs.h>
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

/*
 * `state` is notified at every change (running, done, error): a reader
 * that read it and then polls it for POLLPRI wakes at the change instead
 * of reading it on a schedule (docs/interface.md).  Its node is held from
 * the directory's making to the dev's release: a run may publish after
 * the files went (rmmod, targets/remove), and the notification then
 * reaches nobody.
 */
int pl_state_watch(struct pl_dev *d)
{
	d->state_kn = sysfs_get_dirent(d->kobj.sd, "state");
	return d->state_kn ? 0 : -ENOENT;
}

/* takes no lock (kernfs_notify may run in atomic context); called after d->lock is released */
void pl_state_notify(struct pl_dev *d)
{
	if (d->state_kn)
		sysfs_notify_dirent(d->state_kn);
}
