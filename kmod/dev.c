// SPDX-License-Identifier: GPL-2.0
/*
 * dev.c - the targets of one load: the top level (insmod's target=, or
 * none), named targets made by targets= at load and targets/add later,
 * removed by targets/remove (never while a run uses them), and the
 * teardown of all of them at rmmod with runs in flight.  The targets/
 * directory and its add and remove files are here, with what they do; a
 * target's own files are sysfs.c's, which this file registers.
 */
#define pr_fmt(fmt) "pmemlab: " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/list.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include "pmemlab.h"

/* a refusal of targets/add or targets/remove: the top level's last_error and the log */
static __printf(2, 3) int pl_targets_fail(int err, const char *fmt, ...)
{
	struct pl_dev *top = pl_mod.top;
	va_list ap;

	mutex_lock(&top->lock);
	va_start(ap, fmt);
	vscnprintf(top->last_error, sizeof(top->last_error), fmt, ap);
	va_end(ap);
	pl_printable(top->last_error);
	pr_warn_ratelimited("%s\n", top->last_error);
	mutex_unlock(&top->lock);
	return err;
}

static struct pl_dev *pl_dev_alloc(const char *name, const char *spec)
{
	struct pl_dev *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return NULL;
	kobject_init(&d->kobj, &pl_dev_ktype);	/* from here kobject_put frees it */
	mutex_init(&d->lock);
	INIT_LIST_HEAD(&d->entry);
	strscpy(d->name, name, sizeof(d->name));
	if (name[0])
		snprintf(d->who, sizeof(d->who), "targets/add: %s: ", name);
	d->t.who = d->who;
	d->spec = kstrdup(spec ? spec : "", GFP_KERNEL);
	pl_params_defaults(&d->cfg);
	if (!d->spec) {
		kobject_put(&d->kobj);
		return NULL;
	}
	return d;
}

/* its directory and files (the groups of pl_dev_groups, or the module's alone) */
static int pl_dev_register(struct pl_dev *d, struct kobject *parent)
{
	int err;

	err = kobject_add(&d->kobj, parent, "%s", d->name[0] ? d->name : "pmemlab");
	if (err)
		return err;
	err = sysfs_create_groups(&d->kobj, d->has_target ? pl_dev_groups : pl_bare_groups);
	if (err)
		kobject_del(&d->kobj);
	return err;
}

/* no run goes on it and none loads it (d->gone, under pl_mod.lock): files, run, target, memory */
static void pl_dev_destroy(struct pl_dev *d)
{
	if (d->kobj.state_in_sysfs) {
		sysfs_remove_groups(&d->kobj, d->has_target ? pl_dev_groups : pl_bare_groups);
		kobject_del(&d->kobj);
	}
	pl_run_stop(d);
	pl_run_reap(d);
	if (d->has_target)
		pl_target_close(&d->t);
	kobject_put(&d->kobj);
}

/* "<name> <spec> [key=value ...]" (modparams.c): open it, then its directory */
static int pl_targets_add_line(char *line)
{
	struct pl_load l;
	const char *name;
	struct pl_dev *d;
	char *why;
	int err;

	why = kmalloc(PL_WHY_LEN, GFP_KERNEL);
	if (!why)
		return -ENOMEM;
	err = pl_load_line(&l, &name, line, why, PL_WHY_LEN);
	if (err) {
		err = pl_targets_fail(err, "targets/add: %s", why);
		goto out;
	}
	mutex_lock(&pl_mod.lock);
	if (pl_mod.closing) {
		err = -ENODEV;
	} else if (pl_dev_find(name)) {
		err = pl_targets_fail(-EEXIST, "targets/add: %s: the name is in use", name);
	} else if (pl_mod.nnamed >= PL_MAX_NAMED) {
		err = pl_targets_fail(-ENOSPC, "targets/add: %s: %d named targets already",
				      name, PL_MAX_NAMED);
	} else {
		d = pl_dev_alloc(name, l.spec);
		if (!d) {
			err = pl_targets_fail(-ENOMEM, "targets/add: %s: out of memory", name);
			goto unlock;
		}
		d->allow_overwrite = l.allow_overwrite;
		err = pl_target_open(&d->t, &l);
		if (err) {
			/* the log has it already (target.c) */
			mutex_lock(&pl_mod.top->lock);
			scnprintf(pl_mod.top->last_error, PL_ERR_LEN, "%s%s", d->who, d->t.why);
			pl_printable(pl_mod.top->last_error);
			mutex_unlock(&pl_mod.top->lock);
			kobject_put(&d->kobj);
			goto unlock;
		}
		d->has_target = true;
		err = pl_dev_register(d, pl_mod.targets);
		if (err) {
			pl_target_close(&d->t);
			kobject_put(&d->kobj);
			err = pl_targets_fail(err, "targets/add: %s: cannot make its directory", name);
			goto unlock;
		}
		list_add_tail(&d->entry, &pl_mod.named);
		pl_mod.nnamed++;
		pr_info("target %s: %s %s, %llu bytes, node %d, %llu-byte pages, fs signature %s\n",
			d->name, d->spec, d->t.kind == PL_TARGET_FSDAX ? "fsdax" : "dram",
			d->t.size, d->t.node, d->t.page_size, d->t.fs_sig);
	}
unlock:
	mutex_unlock(&pl_mod.lock);
out:
	kfree(why);
	return err;
}

static int pl_targets_remove(const char *name)
{
	char l[PL_NAME_LEN + 8];
	struct pl_dev *d;
	int err = 0;

	if (!pl_name_ok(name))
		return pl_targets_fail(-EINVAL, "targets/remove: want the name of a target (1 to 31 of a-z 0-9 _ -)");
	mutex_lock(&pl_mod.lock);
	d = pl_dev_find(name);
	if (!d)
		err = pl_targets_fail(-ENOENT, "targets/remove: no target named %s", name);
	else if (d->active)
		err = pl_targets_fail(-EBUSY, "targets/remove: %s: its run is active", name);
	else if (d->loaded_by)
		err = pl_targets_fail(-EBUSY, "targets/remove: %s: the run on %s uses it", name,
				      pl_dev_label(d->loaded_by, l, sizeof(l)));
	if (!err) {
		d->gone = true;
		list_del_init(&d->entry);
		pl_mod.nnamed--;
	}
	mutex_unlock(&pl_mod.lock);
	if (err)
		return err;
	pl_dev_destroy(d);
	pr_info("target %s removed\n", name);
	return 0;
}

/* ---- targets/add and targets/remove: their refusals go to the top level ---- */
static ssize_t add_store(struct kobject *k, struct kobj_attribute *a,
			 const char *buf, size_t count)
{
	char *line;
	int err;

	if (count - (count && buf[count - 1] == '\n') > PL_TEXT_MAX)
		return pl_targets_fail(-EINVAL, "targets/add: a line of %zu bytes: at most %d fit in one sysfs write",
				       count, PL_TEXT_MAX);
	line = kmemdup_nul(buf, count, GFP_KERNEL);
	if (!line)
		return -ENOMEM;
	err = pl_targets_add_line(line);
	kfree(line);
	return err ? err : count;
}

static ssize_t remove_store(struct kobject *k, struct kobj_attribute *a,
			    const char *buf, size_t count)
{
	char *name;
	int err;

	name = kmemdup_nul(buf, min_t(size_t, count, 64), GFP_KERNEL);
	if (!name)
		return -ENOMEM;
	err = pl_targets_remove(strim(name));
	kfree(name);
	return err ? err : count;
}

static struct kobj_attribute pl_attr_add = __ATTR(add, 0200, NULL, add_store);
static struct kobj_attribute pl_attr_remove = __ATTR(remove, 0200, NULL, remove_store);

static struct attribute *pl_targets_attrs[] = {
	&pl_attr_add.attr, &pl_attr_remove.attr, NULL,
};

static const struct attribute_group pl_targets_group = {
	.attrs = pl_targets_attrs,
};

/* /sys/kernel/pmemlab/targets, under the top level's kobject */
static int pl_targets_dir_init(void)
{
	int err;

	pl_mod.targets = kobject_create_and_add("targets", &pl_mod.top->kobj);
	if (!pl_mod.targets)
		return -ENOMEM;
	err = sysfs_create_group(pl_mod.targets, &pl_targets_group);
	if (err) {
		kobject_put(pl_mod.targets);
		pl_mod.targets = NULL;
	}
	return err;
}

/* add and remove go first (no store runs after it), the directory last */
static void pl_targets_dir_close(void)
{
	if (pl_mod.targets)
		sysfs_remove_group(pl_mod.targets, &pl_targets_group);
}

static void pl_targets_dir_exit(void)
{
	if (!pl_mod.targets)
		return;
	kobject_put(pl_mod.targets);
	pl_mod.targets = NULL;
}

/*
 * targets= at load: each entry as a targets/add line; the first refused fails
 * the load. A name given twice fails it with -EINVAL, not -EEXIST: from init,
 * -EEXIST reads as "already loaded" to kmod (modprobe then reports success),
 * and 7.2's loader hands it to insmod as -EBUSY.
 */
static int pl_targets_load(const char *list)
{
	char *copy, *rest, *entry;
	int err = 0;

	if (!list || !*list)
		return 0;
	copy = kstrdup(list, GFP_KERNEL);
	if (!copy)
		return -ENOMEM;
	rest = copy;
	while (!err && (entry = strsep(&rest, ";")) != NULL) {
		entry = strim(entry);
		if (*entry)
			err = pl_targets_add_line(entry);
	}
	kfree(copy);
	return err == -EEXIST ? -EINVAL : err;
}

/* every named target, then the top level: runs stopped, then reaped, then closed */
static void pl_devs_teardown(void)
{
	struct pl_dev *d, *n;

	pl_targets_dir_close();	/* no add or remove from here */
	mutex_lock(&pl_mod.lock);
	pl_mod.closing = true;
	pl_mod.top->gone = true;
	list_for_each_entry(d, &pl_mod.named, entry)
		d->gone = true;
	mutex_unlock(&pl_mod.lock);
	/*
	 * Every run told to stop before any is waited for, and every run over
	 * before any target closes: a run's load threads may be on another's.
	 */
	list_for_each_entry(d, &pl_mod.named, entry)
		pl_run_stop(d);
	pl_run_stop(pl_mod.top);
	list_for_each_entry(d, &pl_mod.named, entry)
		pl_run_reap(d);
	pl_run_reap(pl_mod.top);
	list_for_each_entry_safe(d, n, &pl_mod.named, entry) {
		list_del_init(&d->entry);
		pl_mod.nnamed--;
		pl_dev_destroy(d);
	}
	pl_targets_dir_exit();
	pl_dev_destroy(pl_mod.top);
	pl_mod.top = NULL;
}

/* insmod: the top level (its target if target= was given), targets/, then targets= */
int pl_devs_init(void)
{
	struct pl_load l;
	struct pl_dev *top;
	char *why;
	int err;

	why = kmalloc(PL_WHY_LEN, GFP_KERNEL);
	if (!why)
		return -ENOMEM;
	err = pl_load_top(&l, why, PL_WHY_LEN);
	if (err) {
		pl_printable(why);
		pr_err("%s\n", why);
		kfree(why);
		return err;
	}
	kfree(why);
	top = pl_dev_alloc("", l.spec);
	if (!top)
		return -ENOMEM;
	top->allow_overwrite = l.allow_overwrite;
	if (l.spec && *l.spec) {
		err = pl_target_open(&top->t, &l);
		if (err) {
			kobject_put(&top->kobj);
			return err;
		}
		top->has_target = true;
	}
	err = pl_dev_register(top, kernel_kobj);
	if (err) {
		if (top->has_target)
			pl_target_close(&top->t);
		kobject_put(&top->kobj);
		return err;
	}
	pl_mod.top = top;
	err = pl_targets_dir_init();
	if (!err)
		err = pl_targets_load(pl_load_targets());
	if (err) {
		pl_devs_teardown();
		return err;
	}
	if (top->has_target)
		pr_info("target %s: %s, %llu bytes, node %d, %llu-byte pages, fs signature %s\n",
			top->spec, top->t.kind == PL_TARGET_FSDAX ? "fsdax" : "dram", top->t.size,
			top->t.node, top->t.page_size, top->t.fs_sig);
	return 0;
}

void pl_devs_exit(void)
{
	pl_devs_teardown();
}
