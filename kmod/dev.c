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
#include <linux/random.h>
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
	/* random: a token read before a reload or of a removed target matches no new one */
	d->params_gen = get_random_u64();
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
	if (!err && d->has_target)
		err = pl_state_watch(d);
	if (err)
		kobject_del(&d->kobj);
	return err;
}

/*
 * Its files, run, target and memory (no run goes on it and none loads it:
 * d->gone, under pl_mod.lock); still listed, so that its name stays taken
 * until its directory is gone.  Without pl_mod.lock: removing the files
 * waits for their writers, which take it.
 */
static void pl_dev_close(struct pl_dev *d)
{
	if (d->kobj.state_in_sysfs) {
		sysfs_remove_groups(&d->kobj, d->has_target ? pl_dev_groups : pl_bare_groups);
		kobject_del(&d->kobj);
	}
	pl_run_stop(d);
	pl_run_reap(d);
	if (d->has_target) {
		pl_target_close(&d->t);
		d->has_target = false;
	}
}

/* closed, then unlisted and freed */
static void pl_dev_unlist(struct pl_dev *d)
{
	mutex_lock(&pl_mod.lock);
	list_del_init(&d->entry);
	pl_mod.nnamed--;
	mutex_unlock(&pl_mod.lock);
	kobject_put(&d->kobj);
}

static void pl_dev_destroy(struct pl_dev *d)
{
	pl_dev_close(d);
	kobject_put(&d->kobj);
}

/* any named target of that name: there, being added or being removed (under pl_mod.lock) */
static struct pl_dev *pl_dev_listed(const char *name)
{
	struct pl_dev *d;

	lockdep_assert_held(&pl_mod.lock);
	list_for_each_entry(d, &pl_mod.named, entry)
		if (!strcmp(d->name, name))
			return d;
	return NULL;
}

/* a target whose run is active (under pl_mod.lock), or NULL */
static struct pl_dev *pl_dev_running(void)
{
	struct pl_dev *o;

	lockdep_assert_held(&pl_mod.lock);
	if (pl_mod.top->active)
		return pl_mod.top;
	list_for_each_entry(o, &pl_mod.named, entry)
		if (o->active)
			return o;
	return NULL;
}

/*
 * Targets change between runs: an add allocates, places and fills memory
 * at full bandwidth, a remove frees and unmaps it (the kernel's TLB flush
 * reaches every CPU), either beside a measurement.  So targets/add and
 * targets/remove are refused while any run is active (here), and run and
 * check while a target is being added or removed (run.c, pl_targets_changing).
 */
static int pl_targets_between_runs(const char *what, const char *name)
{
	char l[PL_NAME_LEN + 8];
	struct pl_dev *o = pl_dev_running();

	if (!o)
		return 0;
	return pl_targets_fail(-EBUSY, "targets/%s: %s: a run is active on %s; %s targets between runs",
			       what, name, pl_dev_label(o, l, sizeof(l)), what);
}

/* the name taken for d (under pl_mod.lock), or why not */
static int pl_targets_reserve(struct pl_dev *d)
{
	struct pl_dev *o;
	int err;

	lockdep_assert_held(&pl_mod.lock);
	if (pl_mod.closing)
		return pl_targets_fail(-ENODEV, "targets/add: %s: the module is being unloaded", d->name);
	o = pl_dev_listed(d->name);
	if (o && o->opening)
		return pl_targets_fail(-EBUSY, "targets/add: %s: a target of that name is being added",
				       d->name);
	if (o && o->gone)
		return pl_targets_fail(-EBUSY, "targets/add: %s: the target of that name is being removed; add it when targets/remove returns",
				       d->name);
	if (o)
		return pl_targets_fail(-EEXIST, "targets/add: %s: the name is in use", d->name);
	if (pl_mod.nnamed >= PL_MAX_NAMED)
		return pl_targets_fail(-ENOSPC, "targets/add: %s: %d named targets already",
				       d->name, PL_MAX_NAMED);
	err = pl_targets_between_runs("add", d->name);
	if (err)
		return err;
	d->opening = true;
	list_add_tail(&d->entry, &pl_mod.named);
	pl_mod.nnamed++;
	return 0;
}

/*
 * "<name> <spec> [key=value ...]" (modparams.c): the name taken ("opening":
 * an add or remove of it is EBUSY, run and check elsewhere are EBUSY), the
 * target opened without pl_mod.lock (the fill and tally give up on a fatal
 * signal or rmmod), then its directory.
 */
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
	d = pl_dev_alloc(name, l.spec);
	if (!d) {
		err = pl_targets_fail(-ENOMEM, "targets/add: %s: out of memory", name);
		goto out;
	}
	d->allow_overwrite = l.allow_overwrite;
	mutex_lock(&pl_mod.lock);
	err = pl_targets_reserve(d);
	mutex_unlock(&pl_mod.lock);
	if (err) {
		kobject_put(&d->kobj);
		goto out;
	}
	err = pl_target_open(&d->t, &l);
	if (err && READ_ONCE(d->t.stop)) {
		pl_dev_unlist(d);
		err = pl_targets_fail(-ENODEV, "targets/add: %s: the module is being unloaded", name);
		goto out;
	} else if (err) {
		/* the log has it already (target.c) */
		mutex_lock(&pl_mod.top->lock);
		scnprintf(pl_mod.top->last_error, PL_ERR_LEN, "%s%s", d->who, d->t.why);
		pl_printable(pl_mod.top->last_error);
		mutex_unlock(&pl_mod.top->lock);
		pl_dev_unlist(d);
		goto out;
	}
	d->has_target = true;
	/* rmmod waits for this write (the targets/ files go first), then closes what is listed */
	err = pl_dev_register(d, pl_mod.targets);
	if (err) {
		pl_dev_close(d);
		pl_dev_unlist(d);
		err = pl_targets_fail(err, "targets/add: %s: cannot make its directory", name);
		goto out;
	}
	pr_info("target %s: %s %s, %llu bytes, node %d, %llu-byte pages, fs signature %s\n",
		d->name, d->spec, d->t.kind == PL_TARGET_FSDAX ? "fsdax" : "dram",
		d->t.size, d->t.node, d->t.page_size, d->t.fs_sig);
	/* from here a remove may take it: d is not touched again */
	mutex_lock(&pl_mod.lock);
	d->opening = false;
	mutex_unlock(&pl_mod.lock);
out:
	kfree(why);
	return err;
}

/*
 * Marked gone and kept listed while its directory, run and target go, so
 * that an add of the same name meanwhile is EBUSY (not a second directory
 * of that name); unlisted last.
 */
static int pl_targets_remove(const char *name)
{
	char l[PL_NAME_LEN + 8];
	struct pl_dev *d;
	int err = 0;

	if (!pl_name_ok(name))
		return pl_targets_fail(-EINVAL, "targets/remove: want the name of a target (1 to 31 of a-z 0-9 _ -)");
	mutex_lock(&pl_mod.lock);
	d = pl_dev_listed(name);
	if (pl_mod.closing)
		err = pl_targets_fail(-ENODEV, "targets/remove: %s: the module is being unloaded", name);
	else if (!d)
		err = pl_targets_fail(-ENOENT, "targets/remove: no target named %s", name);
	else if (d->opening)
		err = pl_targets_fail(-EBUSY, "targets/remove: %s: it is being added", name);
	else if (d->gone)
		err = pl_targets_fail(-EBUSY, "targets/remove: %s: it is being removed", name);
	else if (d->active)
		err = pl_targets_fail(-EBUSY, "targets/remove: %s: its run is active", name);
	else if (d->loaded_by)
		err = pl_targets_fail(-EBUSY, "targets/remove: %s: the run on %s uses it", name,
				      pl_dev_label(d->loaded_by, l, sizeof(l)));
	else
		err = pl_targets_between_runs("remove", name);
	if (!err)
		d->gone = true;
	mutex_unlock(&pl_mod.lock);
	if (err)
		return err;
	pl_dev_close(d);
	pl_dev_unlist(d);
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

/*
 * every named target, then the top level: runs stopped, then reaped, then
 * closed.  An add or remove in flight is waited for (the targets/ files
 * go first): an add opening a target gives up (t->stop), one that has
 * opened it leaves it listed, a remove unlists its own.
 */
static void pl_devs_teardown(void)
{
	struct pl_dev *d, *n;

	mutex_lock(&pl_mod.lock);
	pl_mod.closing = true;
	pl_mod.top->gone = true;
	list_for_each_entry(d, &pl_mod.named, entry) {
		d->gone = true;
		WRITE_ONCE(d->t.stop, 1);
	}
	mutex_unlock(&pl_mod.lock);
	pl_targets_dir_close();	/* no add or remove from here, none in flight */
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
