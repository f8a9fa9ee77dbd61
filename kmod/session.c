// SPDX-License-Identifier: GPL-2.0
/*
 * Our sessions with the metadata servers. A metadata server keeps our
 * opens and locks in a session of our client id, which every request
 * renews and which ends when we are silent for its session-timeout. The
 * work below renews it on every metadata server of the map, a third of
 * the shortest timeout apart, all servers at once: counting what we hold
 * where (opens in struct files, locks in the VFS, closes and unlocks on
 * their way) would cost more than one small request per server, and a
 * server where we hold nothing today may hold something a moment later.
 * A renewal waits two periods at most and the next round starts a period
 * after this one started, so a server that hangs delays no other one's.
 *
 * Each reply of a metadata server carries the epoch of our session there,
 * a number fixed when the server created it. We keep the epoch of each
 * server as last seen; what we took (an open, a lock) is tagged with the
 * epoch of the reply that granted it. When a server's epoch changes, the
 * session before is gone (it expired, or the server restarted) and with
 * it everything tagged with an older epoch (pfs_session_lost): file.c
 * opens such files again before their data is used (ESTALE when they are
 * gone), lock.c reports such locks lost (ENOLCK), and nothing queued for
 * the old session (CLOSE, unlock) is sent to the new one.
 *
 * A lost connection (a server killed, restarted) makes every session
 * suspect: the next use of a server's files renews there first
 * (pfs_session_verify), so a restart is noticed before data is read, not
 * a renewal later. So does a session whose last answered renewal started
 * a whole session timeout ago (renewals that failed, a client that was
 * frozen): the server may have ended it meanwhile, over a live connection.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "pfs.h"

#define PFS_SESSION_RENEW_DEFAULT	(10 * HZ)
#define PFS_SESSION_RENEW_MIN		(HZ / 10)

/* Our session on one metadata server. */
struct pfs_meta_session {
	spinlock_t lock;
	u32 node;
	u64 epoch;		/* as last seen; 0: not yet */
	/* sb's disconnect count at the start of the last answered renewal */
	unsigned int verified;
	/* when that renewal started (jiffies), if one was answered */
	unsigned long renewed_at;
	bool renewed;
};

void pfs_sessions_init(struct pfs_sessions *ss, struct super_block *sb)
{
	xa_init(&ss->servers);
	INIT_DELAYED_WORK(&ss->work, pfs_sessions_worker);
	ss->renew = PFS_SESSION_RENEW_DEFAULT;
	ss->timeout = 0;
	atomic_set(&ss->disconnects, 0);
	ss->sb = sb;
}

struct pfs_meta_session *pfs_session_get(struct super_block *sb, u32 node)
{
	struct pfs_sessions *ss = &PFS_SB(sb)->sessions;
	struct pfs_meta_session *s, *old;

	s = xa_load(&ss->servers, node);
	if (s)
		return s;
	s = kzalloc(sizeof(*s), GFP_NOFS);
	if (!s)
		return NULL;	/* untracked: nothing is ever found lost */
	spin_lock_init(&s->lock);
	s->node = node;
	s->verified = atomic_read(&ss->disconnects);
	old = xa_cmpxchg(&ss->servers, node, NULL, s, GFP_NOFS);
	if (old) {
		kfree(s);
		return xa_is_err(old) ? NULL : old;
	}
	return s;
}

u64 pfs_session_epoch(struct pfs_meta_session *s)
{
	u64 epoch;

	if (!s)
		return 0;
	spin_lock(&s->lock);
	epoch = s->epoch;
	spin_unlock(&s->lock);
	return epoch;
}

void pfs_session_seen(struct pfs_meta_session *s, u64 sent, u64 epoch)
{
	bool changed;
	u64 before;

	if (!s || !epoch)
		return;
	spin_lock(&s->lock);
	before = s->epoch;
	/*
	 * A reply to a request sent before the epoch changed is older news
	 * than the reply that changed it: ignored (what it granted is lost).
	 */
	changed = epoch != before && before == sent;
	if (changed)
		s->epoch = epoch;
	spin_unlock(&s->lock);
	if (changed && before)
		pr_warn("metadata node %u lost our session (it expired, or the server restarted): opens and locks held there are gone\n",
			s->node);
}

bool pfs_session_lost(struct super_block *sb, u32 node, u64 held)
{
	u64 now;

	if (!held)
		return false;
	now = pfs_session_epoch(xa_load(&PFS_SB(sb)->sessions.servers, node));
	return now && now != held;
}

void pfs_sessions_suspect(struct pfs_sb_info *sbi)
{
	atomic_inc(&sbi->sessions.disconnects);
}

/* One SESSION_RENEW under way. */
struct pfs_renewal {
	struct pfs_node *node;
	struct pfs_meta_session *s;
	u64 sent;
	unsigned long start;
	unsigned int disconnects;
	int rc;
	struct pfs_rpc rpc;
};

static int pfs_renewal_start(struct super_block *sb, u32 node_id, u16 type,
			     struct pfs_renewal *r)
{
	struct pfs_sessions *ss = &PFS_SB(sb)->sessions;

	r->rpc = (struct pfs_rpc){ .type = type, .reply_max = 64 };
	/*
	 * A renewal waits two renewal periods at most: a server that hangs
	 * must not hold back the renewals on the others past their timeout.
	 */
	if (type == PFS_MSG_SESSION_RENEW)
		r->rpc.timeout_ms = jiffies_to_msecs(2 * ss->renew);
	r->s = pfs_session_get(sb, node_id);
	r->sent = pfs_session_epoch(r->s);
	r->disconnects = atomic_read(&ss->disconnects);
	r->start = jiffies;
	r->node = pfs_net_meta_node(PFS_SB(sb)->net, node_id);
	if (IS_ERR(r->node)) {
		r->rc = PTR_ERR(r->node);
		r->node = NULL;
		return r->rc;
	}
	r->rc = pfs_rpc_start(r->node, &r->rpc);
	return r->rc;
}

/* Waits for r; returns the server's session timeout in ms, or 0. */
static unsigned int pfs_renewal_finish(struct pfs_renewal *r)
{
	struct pfs_session session = {};
	unsigned int timeout_ms = 0;

	if (!r->rc)
		r->rc = pfs_rpc_wait(&r->rpc);
	pfs_session_seen(r->s, r->sent, r->rpc.session_epoch);
	if (!r->rc && r->rpc.type == PFS_MSG_SESSION_RENEW) {
		r->rc = pfs_decode(pfs_x_session, &session, r->rpc.reply,
				   r->rpc.reply_len);
		if (!r->rc) {
			timeout_ms = session.timeout_ms;
			/* Current as of the start: a later loss asks again. */
			if (r->s) {
				spin_lock(&r->s->lock);
				r->s->verified = r->disconnects;
				r->s->renewed_at = r->start;
				r->s->renewed = true;
				spin_unlock(&r->s->lock);
			}
		}
	}
	pfs_rpc_release(&r->rpc);
	if (r->node)
		pfs_node_put(r->node);
	r->node = NULL;
	return timeout_ms;
}

int pfs_session_verify(struct super_block *sb, u32 node)
{
	struct pfs_sessions *ss = &PFS_SB(sb)->sessions;
	struct pfs_meta_session *s = xa_load(&ss->servers, node);
	unsigned long timeout = READ_ONCE(ss->timeout);
	struct pfs_renewal *r;
	bool known;
	int rc;

	if (!s)
		return 0;	/* never heard of: nothing can be lost there */
	spin_lock(&s->lock);
	known = s->verified == atomic_read(&ss->disconnects) &&
		   (!timeout || !s->renewed ||
		    time_before(jiffies, s->renewed_at + timeout));
	spin_unlock(&s->lock);
	if (known)
		return 0;
	r = kzalloc(sizeof(*r), GFP_NOFS);
	if (!r)
		return -ENOMEM;
	pfs_renewal_start(sb, node, PFS_MSG_SESSION_RENEW, r);
	pfs_renewal_finish(r);
	rc = r->rc;
	kfree(r);
	return rc;
}

/*
 * type (SESSION_RENEW or SESSION_END) to every metadata server of the map
 * at once; returns the shortest session timeout a server told (ms), 0 if
 * none did.
 */
static unsigned int pfs_sessions_call_all(struct super_block *sb, u16 type)
{
	struct pfs_renewal *r;
	unsigned int timeout_ms = 0, t;
	u32 *ids = NULL;
	int n, i;

	n = pfs_net_node_ids(PFS_SB(sb)->net, PFS_NODE_META, &ids);
	if (n <= 0)
		return 0;
	r = kvcalloc(n, sizeof(*r), GFP_KERNEL);
	if (!r) {
		kfree(ids);
		return 0;
	}
	for (i = 0; i < n; i++)
		pfs_renewal_start(sb, ids[i], type, &r[i]);
	for (i = 0; i < n; i++) {
		t = pfs_renewal_finish(&r[i]);
		if (t && (!timeout_ms || t < timeout_ms))
			timeout_ms = t;
		if (r[i].rc && type == PFS_MSG_SESSION_RENEW)
			pr_warn_ratelimited("cannot renew our session with metadata node %u: %d\n",
					    ids[i], r[i].rc);
	}
	kvfree(r);
	kfree(ids);
	return timeout_ms;
}

void pfs_sessions_worker(struct work_struct *work)
{
	struct pfs_sessions *ss = container_of(to_delayed_work(work),
					       struct pfs_sessions, work);
	unsigned int nofs = memalloc_nofs_save();
	unsigned long start = jiffies, took;
	unsigned int timeout_ms;

	timeout_ms = pfs_sessions_call_all(ss->sb, PFS_MSG_SESSION_RENEW);
	memalloc_nofs_restore(nofs);
	took = jiffies - start;
	if (timeout_ms) {
		ss->renew = max_t(unsigned long,
				  msecs_to_jiffies(timeout_ms / 3),
				  PFS_SESSION_RENEW_MIN);
		WRITE_ONCE(ss->timeout, msecs_to_jiffies(timeout_ms));
	}
	/* A period from the start of this round: slow servers delay none. */
	queue_delayed_work(system_long_wq, &ss->work,
			   took < ss->renew ? ss->renew - took : 0);
}

void pfs_sessions_start(struct super_block *sb)
{
	/* First renewal now: it also learns the servers' session timeout. */
	queue_delayed_work(system_long_wq, &PFS_SB(sb)->sessions.work, 0);
}

void pfs_sessions_end(struct super_block *sb)
{
	struct pfs_sessions *ss = &PFS_SB(sb)->sessions;

	cancel_delayed_work_sync(&ss->work);
	/* Best effort: a session we cannot end expires on its own. */
	pfs_sessions_call_all(sb, PFS_MSG_SESSION_END);
}

void pfs_sessions_free(struct pfs_sessions *ss)
{
	struct pfs_meta_session *s;
	unsigned long node;

	xa_for_each(&ss->servers, node, s)
		kfree(s);
	xa_destroy(&ss->servers);
}
