// SPDX-License-Identifier: GPL-2.0
/*
 * Requests a metadata server must get although nobody waits for them: the
 * CLOSEs of file.c and the unlocks of lock.c, and the size reports of
 * writers (file.c) that could not wait for theirs. A lost CLOSE keeps a
 * file open on the server (an unlinked one keeps its chunks), a lost
 * unlock keeps a lock held cluster-wide, both for as long as our session
 * lives; a lost size report leaves the file shorter than its data for
 * every other client until the next report, which may never come (the
 * writer was killed while it waited).
 *
 * One that got no answer (the server unreachable, the connection lost, a
 * timeout) waits here and is sent again in the background, with backoff,
 * until the server answers it, whatever the answer (a CLOSE answered
 * EBADF: the server no longer counts that open, as after a restart or the
 * end of our session), or until the mount ends: umount sends what is left
 * once more before SESSION_END, which closes and unlocks on the server
 * whatever is still ours; umount -f drops it. A pass stops at a server's
 * first unanswered request, so one that is down costs a pass one timeout.
 *
 * Unlocks and later locks of the same owner must reach the server in
 * order: pfs_resend_flush_lock() sends the unlocks waiting for an
 * (inode, owner) before a new LOCK of it goes out; likewise a truncate of
 * ours waits for the size reports of the file (pfs_resend_flush_size), so
 * that a report of the old size cannot grow it back. A size report goes
 * out as the writer that made it (the file's opener), not as the worker.
 *
 * A CLOSE or unlock ends an open or a lock granted in one session of ours
 * on the server (its epoch, see session.c): when that session is lost,
 * the server dropped them already, and the session we have there now may
 * hold another open or lock of the same file and owner. They are dropped,
 * not sent.
 *
 * The servers keep no reply cache: a request whose reply was lost may have
 * been done, and is done again (a second CLOSE of a file opened twice by
 * this client ends one open too many; an unlock is idempotent).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "pfs.h"

#define PFS_RESEND_MAX		4096	/* waiting per mount */
#define PFS_RESEND_MIN_MS	100
#define PFS_RESEND_MAX_MS	5000

struct pfs_resend_item {
	struct list_head list;
	u16 type;			/* PFS_MSG_CLOSE, _LOCK or _SETATTR */
	struct pfs_lock_req m;		/* CLOSE, SETATTR: only m.id */
	u64 epoch;			/* CLOSE, LOCK: of what they end */
	u64 size;			/* SETATTR: reported */
	const struct cred *cred;	/* SETATTR: the writer's */
};

static void pfs_resend_free(struct pfs_resend_item *it)
{
	if (it->cred)
		put_cred(it->cred);
	kfree(it);
}

void pfs_resend_init(struct pfs_resender *r, struct super_block *sb)
{
	spin_lock_init(&r->lock);
	INIT_LIST_HEAD(&r->items);
	r->count = 0;
	mutex_init(&r->send_lock);
	INIT_DELAYED_WORK(&r->work, pfs_resend_worker);
	r->backoff_ms = 0;
	r->stopping = false;
	r->sb = sb;
}

bool pfs_resend_unanswered(int err)
{
	return err == -EINTR || pfs_net_transient(err);
}

static struct pfs_resender *pfs_resender(struct super_block *sb)
{
	return &PFS_SB(sb)->resend;
}

/*
 * Queues a copy of m (type CLOSE or LOCK; SETATTR with size and cred) at
 * the tail; false if full.
 */
static bool pfs_resend_add(struct super_block *sb, u16 type,
			   const struct pfs_lock_req *m, u64 epoch, u64 size,
			   const struct cred *cred)
{
	struct pfs_resender *r = pfs_resender(sb);
	struct pfs_resend_item *it;
	bool queued = false;

	it = kzalloc(sizeof(*it), GFP_NOFS);
	if (!it)
		return false;
	it->type = type;
	it->m = *m;
	it->epoch = epoch;
	it->size = size;
	it->cred = cred ? get_cred(cred) : NULL;
	spin_lock(&r->lock);
	if (!r->stopping && r->count < PFS_RESEND_MAX) {
		list_add_tail(&it->list, &r->items);
		r->count++;
		queued = true;
	}
	spin_unlock(&r->lock);
	if (!queued)
		pfs_resend_free(it);
	return queued;
}

/* Runs the worker after delay (0: now) unless the mount ends. */
static void pfs_resend_kick(struct pfs_resender *r, unsigned long delay)
{
	spin_lock(&r->lock);
	if (!r->stopping && r->count)
		mod_delayed_work(system_long_wq, &r->work, delay);
	spin_unlock(&r->lock);
}

static const char *pfs_resend_what(u16 type)
{
	switch (type) {
	case PFS_MSG_CLOSE:
		return "CLOSE";
	case PFS_MSG_LOCK:
		return "unlock";
	default:
		return "size report";
	}
}

static void pfs_resend_lost(u16 type, const struct pfs_lock_req *m, int err)
{
	if (type == PFS_MSG_SETATTR)
		pr_warn_ratelimited("size report of inode %llu could not be sent (%d): the next one tells\n",
				    m->id.ino, err);
	else
		pr_warn_ratelimited("%s of inode %llu could not be sent (%d): the server keeps it until our session ends\n",
				    pfs_resend_what(type), m->id.ino, err);
}

void pfs_resend_close(struct super_block *sb, const struct pfs_entry_id *ids,
		      const u64 *epochs, unsigned int n, int err)
{
	struct pfs_lock_req m = {};
	unsigned int i;

	if (!pfs_resend_unanswered(err))
		return;		/* answered: the server has it */
	pr_info_ratelimited("CLOSE of %u inodes (inode %llu first) got no answer (%d), to be sent again\n",
			    n, ids[0].ino, err);
	for (i = 0; i < n; i++) {
		m.id = ids[i];
		if (!pfs_resend_add(sb, PFS_MSG_CLOSE, &m, epochs[i], 0, NULL))
			pfs_resend_lost(PFS_MSG_CLOSE, &m, err);
	}
	pfs_resend_kick(pfs_resender(sb), 0);
}

void pfs_resend_close_later(struct super_block *sb,
			    const struct pfs_entry_id *id, u64 epoch)
{
	struct pfs_lock_req m = { .id = *id };

	if (!pfs_resend_add(sb, PFS_MSG_CLOSE, &m, epoch, 0, NULL))
		pfs_resend_lost(PFS_MSG_CLOSE, &m, -ENOBUFS);
	pfs_resend_kick(pfs_resender(sb), 0);
}

void pfs_resend_unlock(struct super_block *sb, const struct pfs_lock_req *m,
		       u64 epoch, int err)
{
	if (err) {
		if (!pfs_resend_unanswered(err))
			return;
		pr_info_ratelimited("unlock of inode %llu got no answer (%d), to be sent again\n",
				    m->id.ino, err);
	}
	if (!pfs_resend_add(sb, PFS_MSG_LOCK, m, epoch, 0, NULL))
		pfs_resend_lost(PFS_MSG_LOCK, m, err ?: -ENOBUFS);
	pfs_resend_kick(pfs_resender(sb), 0);
}

void pfs_resend_size(struct super_block *sb, const struct pfs_entry_id *id,
		     u64 size, const struct cred *cred, int err)
{
	struct pfs_lock_req m = { .id = *id };

	if (!pfs_resend_unanswered(err))
		return;	/* answered: the server has it, or refused */
	pr_info_ratelimited("size report of inode %llu got no answer (%d), to be sent again\n",
			    id->ino, err);
	if (!pfs_resend_add(sb, PFS_MSG_SETATTR, &m, 0, size, cred))
		pfs_resend_lost(PFS_MSG_SETATTR, &m, err);
	pfs_resend_kick(pfs_resender(sb), 0);
}

static int pfs_resend_report(struct super_block *sb,
			     const struct pfs_resend_item *it)
{
	struct pfs_setattr req = {
		.id = it->m.id,
		.valid = PFS_SET_SIZE_EXTEND | PFS_SET_MTIME |
			 PFS_SET_MTIME_NOW,
		.size = it->size,
	};
	const struct cred *old = override_creds(it->cred);
	int rc;

	rc = pfs_meta_simple(sb, &it->m.id, PFS_MSG_SETATTR, pfs_x_setattr,
			     &req);
	revert_creds(old);
	return rc;
}

/* Sends one item: 0 when answered (or moot), else why not. */
static int pfs_resend_one(struct super_block *sb, struct pfs_resend_item *it)
{
	int rc;

	/* What the session ended is ended: never a later session's. */
	if (pfs_session_lost(sb, it->m.id.owner_node, it->epoch))
		return 0;
	if (it->type == PFS_MSG_CLOSE)
		rc = pfs_meta_simple(sb, &it->m.id, PFS_MSG_CLOSE,
				     pfs_x_entry_id, &it->m.id);
	else if (it->type == PFS_MSG_LOCK)
		rc = pfs_meta_simple(sb, &it->m.id, PFS_MSG_LOCK,
				     pfs_x_lock_req, &it->m);
	else
		rc = pfs_resend_report(sb, it);
	return pfs_resend_unanswered(rc) ? rc : 0;
}

/*
 * One pass over the items match() selects (all when NULL), in order;
 * send_lock held. After a server's first unanswered item its others wait
 * for the next pass. Returns 0 when every selected item was answered.
 */
static int pfs_resend_pass(struct pfs_resender *r,
			   bool (*match)(const struct pfs_resend_item *,
					 const void *),
			   const void *arg)
{
	struct pfs_resend_item *it, *tmp;
	LIST_HEAD(todo);
	LIST_HEAD(keep);
	u32 down[8];
	unsigned int ndown = 0, i;
	int err = 0, rc;

	spin_lock(&r->lock);
	list_for_each_entry_safe(it, tmp, &r->items, list) {
		if (!match || match(it, arg))
			list_move_tail(&it->list, &todo);
	}
	spin_unlock(&r->lock);

	list_for_each_entry_safe(it, tmp, &todo, list) {
		for (i = 0; i < ndown; i++)
			if (down[i] == it->m.id.owner_node)
				break;
		if (i < ndown) {
			list_move_tail(&it->list, &keep);
			continue;
		}
		rc = pfs_net_check(PFS_SB(r->sb)->net);
		if (!rc)
			rc = pfs_resend_one(r->sb, it);
		if (!rc) {
			list_del(&it->list);
			pfs_resend_free(it);
			spin_lock(&r->lock);
			r->count--;
			spin_unlock(&r->lock);
			continue;
		}
		err = err ?: rc;
		list_move_tail(&it->list, &keep);
		if (ndown < ARRAY_SIZE(down))
			down[ndown++] = it->m.id.owner_node;
	}
	/* What waits goes back in front of what came meanwhile, in order. */
	spin_lock(&r->lock);
	list_splice(&keep, &r->items);
	spin_unlock(&r->lock);
	return err;
}

void pfs_resend_worker(struct work_struct *work)
{
	struct pfs_resender *r = container_of(to_delayed_work(work),
					      struct pfs_resender, work);
	unsigned int nofs = memalloc_nofs_save();
	int err;

	mutex_lock(&r->send_lock);
	err = pfs_resend_pass(r, NULL, NULL);
	mutex_unlock(&r->send_lock);
	memalloc_nofs_restore(nofs);
	if (!err) {
		r->backoff_ms = 0;
		return;
	}
	if (pfs_net_check(PFS_SB(r->sb)->net))
		return;		/* umount -f: dropped at umount */
	r->backoff_ms = clamp_t(unsigned int, r->backoff_ms * 2,
				PFS_RESEND_MIN_MS, PFS_RESEND_MAX_MS);
	pfs_resend_kick(r, msecs_to_jiffies(r->backoff_ms));
}

struct pfs_lock_key {
	struct pfs_entry_id id;
	u64 owner;
};

static bool pfs_resend_is_unlock_of(const struct pfs_resend_item *it,
				    const void *arg)
{
	const struct pfs_lock_key *k = arg;

	return it->type == PFS_MSG_LOCK && it->m.owner == k->owner &&
	       !memcmp(&it->m.id, &k->id, sizeof(k->id));
}

/* The items match() selects, sent now (in order); 0 when all answered. */
static int pfs_resend_flush(struct super_block *sb,
			    bool (*match)(const struct pfs_resend_item *,
					  const void *),
			    const void *arg)
{
	struct pfs_resender *r = pfs_resender(sb);
	int err;

	/* Nothing waits (the usual case): no need to wait for the worker. */
	if (!READ_ONCE(r->count))
		return 0;
	/* The worker's pass holds what it sends: after it, all is listed. */
	if (mutex_lock_killable(&r->send_lock))
		return -EINTR;
	err = pfs_resend_pass(r, match, arg);
	mutex_unlock(&r->send_lock);
	return err;
}

int pfs_resend_flush_lock(struct super_block *sb,
			  const struct pfs_entry_id *id, u64 owner)
{
	struct pfs_lock_key key = { .id = *id, .owner = owner };

	return pfs_resend_flush(sb, pfs_resend_is_unlock_of, &key);
}

static bool pfs_resend_is_size_of(const struct pfs_resend_item *it,
				  const void *arg)
{
	const struct pfs_entry_id *id = arg;

	return it->type == PFS_MSG_SETATTR &&
	       !memcmp(&it->m.id, id, sizeof(*id));
}

int pfs_resend_flush_size(struct super_block *sb,
			  const struct pfs_entry_id *id)
{
	return pfs_resend_flush(sb, pfs_resend_is_size_of, id);
}

void pfs_resend_drain(struct super_block *sb)
{
	struct pfs_resender *r = pfs_resender(sb);
	struct pfs_resend_item *it, *tmp;
	LIST_HEAD(left);
	unsigned int n = 0;

	cancel_delayed_work_sync(&r->work);
	mutex_lock(&r->send_lock);
	pfs_resend_pass(r, NULL, NULL);
	mutex_unlock(&r->send_lock);
	spin_lock(&r->lock);
	r->stopping = true;
	list_splice_init(&r->items, &left);
	r->count = 0;
	spin_unlock(&r->lock);
	cancel_delayed_work_sync(&r->work);
	list_for_each_entry_safe(it, tmp, &left, list) {
		n++;
		pfs_resend_free(it);
	}
	if (n)
		pr_warn("%u CLOSEs, unlocks and size reports could not be sent before umount\n",
			n);
}
