// SPDX-License-Identifier: GPL-2.0
/*
 * Advisory locks, enforced cluster-wide by the metadata server that owns
 * the file: flock(2) and POSIX (fcntl) byte ranges. The server never
 * waits; a blocking request is our retry loop, interruptible by signals.
 * A lock the server granted is then recorded locally too, so that the VFS
 * releases it on close and /proc/locks shows it.
 *
 * The server keeps a client's locks as long as its session lives: the
 * session work (session.c) renews it while the file system is mounted.
 * A session that was lost all the same (it expired, or the server
 * restarted: locks live in its memory only) took our locks with it. Each
 * open file remembers the session epoch its last flock and POSIX lock
 * were granted under; the next lock or unlock of that kind through the
 * file after the epoch changed fails with ENOLCK, once, and the local
 * records of those locks go too (an unlock is still sent). F_GETLK asks
 * the server, which tells the truth.
 *
 * A lock's owner on the wire is opaque: the struct file (flock) or
 * fl_owner (POSIX) it stands for, hashed with SipHash under a random key
 * of the mount, so servers never learn a kernel address, and one owner is
 * one id for the mount's life (distinct owners collide with probability
 * 2^-64 per pair).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#if __has_include(<linux/filelock.h>)
#include <linux/filelock.h>	/* 6.3+ */
#endif
#include <linux/sched/signal.h>

#include "pfs.h"

#define PFS_LOCK_RETRY_MIN_MS	5
#define PFS_LOCK_RETRY_MAX_MS	500

#ifdef PFS_HAVE_FILE_LOCK_CORE
#define pfs_fl_type(fl)		((fl)->c.flc_type)
#define pfs_fl_flags(fl)	((fl)->c.flc_flags)
#define pfs_fl_owner(fl)	((fl)->c.flc_owner)
#define pfs_fl_pid(fl)		((fl)->c.flc_pid)
#else
#define pfs_fl_type(fl)		((fl)->fl_type)
#define pfs_fl_flags(fl)	((fl)->fl_flags)
#define pfs_fl_owner(fl)	((fl)->fl_owner)
#define pfs_fl_pid(fl)		((fl)->fl_pid)
#endif

static u8 pfs_lock_type(int fl_type)
{
	switch (fl_type) {
	case F_RDLCK:
		return PFS_LOCK_READ;
	case F_WRLCK:
		return PFS_LOCK_WRITE;
	default:
		return PFS_LOCK_UNLOCK;
	}
}

static u64 pfs_lock_owner(struct file *file, const void *owner)
{
	return siphash_1u64((u64)(uintptr_t)owner,
			    &PFS_SB(file_inode(file)->i_sb)->lock_key);
}

static void pfs_lock_fill(struct file *file, struct file_lock *fl, u8 kind,
			  struct pfs_lock_req *m)
{
	memset(m, 0, sizeof(*m));
	m->id = PFS_I(file_inode(file))->id;
	m->kind = kind;
	m->type = pfs_lock_type(pfs_fl_type(fl));
	if (kind == PFS_LOCK_FLOCK) {
		m->start = 0;
		m->end = PFS_LOCK_EOF;
		m->owner = pfs_lock_owner(file, file);
	} else {
		m->start = fl->fl_start;
		m->end = fl->fl_end == OFFSET_MAX ? PFS_LOCK_EOF : fl->fl_end;
		m->owner = pfs_lock_owner(file, pfs_fl_owner(fl));
	}
	m->pid = task_tgid_nr(current);
}

/*
 * One LOCK request: 0 granted, -EAGAIN conflict, or another error; *epoch
 * gets the session epoch the answer came under (0: none).
 */
static int pfs_lock_once(struct inode *inode, const struct pfs_lock_req *m,
			 u64 *epoch)
{
	struct pfs_rpc rpc = { .type = PFS_MSG_LOCK };
	u32 len = 0;
	void *req;
	int rc;

	*epoch = 0;
	req = pfs_encode(pfs_x_lock_req, (struct pfs_lock_req *)m, &len);
	if (IS_ERR(req))
		return PTR_ERR(req);
	rpc.req = req;
	rpc.req_len = len;
	rc = pfs_meta_call(inode->i_sb, &PFS_I(inode)->id, &rpc);
	*epoch = rpc.session_epoch;
	pfs_rpc_release(&rpc);
	kfree(req);
	return rc;
}

/* Where file keeps the epoch of its locks of kind. */
static u64 *pfs_lock_epoch(struct file *file, u8 kind)
{
	struct pfs_file_info *fi = file->private_data;

	return kind == PFS_LOCK_FLOCK ? &fi->flock_epoch : &fi->posix_epoch;
}

/*
 * An unlock: one that gets no answer (a server down or stopped, a lost
 * connection, the task killed) is sent again from the background until
 * the server has it (resend.c), so the lock is not held cluster-wide for
 * the rest of our session. The caller drops the lock locally anyway.
 * Returns the server's refusal, if it answered one.
 */
static int pfs_unlock_once(struct inode *inode, const struct pfs_lock_req *m,
			   u64 held, u64 *epoch)
{
	int rc = pfs_lock_once(inode, m, epoch);

	if (!rc || !pfs_resend_unanswered(rc))
		return rc;
	pfs_resend_unlock(inode->i_sb, m, held, rc);
	return 0;
}

static int pfs_lock_wait(struct inode *inode, const struct pfs_lock_req *m,
			 bool wait, u64 *epoch)
{
	unsigned int delay_ms = PFS_LOCK_RETRY_MIN_MS;
	int rc;

	for (;;) {
		rc = pfs_lock_once(inode, m, epoch);
		if (rc != -EAGAIN || !wait)
			return rc;
		if (schedule_timeout_interruptible(msecs_to_jiffies(delay_ms)) ||
		    signal_pending(current))
			return -ERESTARTSYS;
		delay_ms = min(delay_ms * 2, PFS_LOCK_RETRY_MAX_MS);
	}
}

/*
 * The local records of the locks of kind that fl's owner (flock: its
 * file) holds on the file, dropped: the server lost them.
 */
static void pfs_lock_drop_local(struct file *file, struct file_lock *fl)
{
	struct file_lock unlock;

	locks_init_lock(&unlock);
	locks_copy_lock(&unlock, fl);
	pfs_fl_type(&unlock) = F_UNLCK;
	pfs_fl_flags(&unlock) &= ~FL_SLEEP;
	unlock.fl_start = 0;
	unlock.fl_end = OFFSET_MAX;
	locks_lock_file_wait(file, &unlock);
}

/*
 * The locks of kind taken through file were lost with our session on the
 * inode's server (see the top of this file): said once (ENOLCK), and the
 * local records are dropped.
 */
static int pfs_lock_lost(struct file *file, struct file_lock *fl,
			 const struct pfs_lock_req *m, u64 *held)
{
	pr_info_ratelimited("locks of inode %llu were lost with our session on metadata node %u\n",
			    m->id.ino, m->id.owner_node);
	WRITE_ONCE(*held, 0);
	pfs_lock_drop_local(file, fl);
	return -ENOLCK;
}

/* Whether a reply under epoch tells that locks held under held are gone. */
static bool pfs_lock_epoch_moved(u64 held, u64 epoch)
{
	return held && epoch && held != epoch;
}

/* Takes or drops the lock on the server, then mirrors it locally. */
static int pfs_set_lock(struct file *file, struct file_lock *fl, u8 kind,
			bool wait)
{
	struct inode *inode = file_inode(file);
	u64 *held = pfs_lock_epoch(file, kind);
	struct pfs_lock_req m;
	u64 was, epoch = 0;
	int rc;

	pfs_lock_fill(file, fl, kind, &m);
	/* Unreachable: what we know will do, the request tells the rest. */
	pfs_session_verify(inode->i_sb, m.id.owner_node);
	was = READ_ONCE(*held);
	if (pfs_session_lost(inode->i_sb, m.id.owner_node, was)) {
		/* Harmless in the new session, and what was asked for. */
		if (m.type == PFS_LOCK_UNLOCK)
			pfs_unlock_once(inode, &m, 0, &epoch);
		return pfs_lock_lost(file, fl, &m, held);
	}
	if (m.type == PFS_LOCK_UNLOCK) {
		/* Dropped locally even while the server cannot be reached. */
		rc = pfs_unlock_once(inode, &m, was, &epoch);
		/* All of them gone: a later loss takes nothing of ours. */
		if (m.start == 0 && m.end == PFS_LOCK_EOF)
			WRITE_ONCE(*held, 0);
		pfs_fl_flags(fl) &= ~FL_SLEEP;
		locks_lock_file_wait(file, fl);
		/* Its answer came from a session that never had them. */
		if (!rc && pfs_lock_epoch_moved(was, epoch))
			return pfs_lock_lost(file, fl, &m, held);
		return rc;
	}
	/* An unlock of this owner that is still to be sent goes first. */
	rc = pfs_resend_flush_lock(inode->i_sb, &m.id, m.owner);
	if (!rc)
		rc = pfs_lock_wait(inode, &m, wait, &epoch);
	if (rc == -EAGAIN && kind == PFS_LOCK_FLOCK)
		rc = -EWOULDBLOCK;
	if (rc)
		return rc;
	/*
	 * Granted in the session of that epoch. When locks were taken
	 * before in another one (it expired while we could not tell), they
	 * are gone: that is said first, the new lock given back.
	 */
	was = READ_ONCE(*held);
	if (pfs_lock_epoch_moved(was, epoch)) {
		m.type = PFS_LOCK_UNLOCK;
		pfs_unlock_once(inode, &m, epoch, &epoch);
		return pfs_lock_lost(file, fl, &m, held);
	}
	if (epoch)
		WRITE_ONCE(*held, epoch);
	/* Granted by the server: nothing local can conflict. */
	pfs_fl_flags(fl) &= ~FL_SLEEP;
	rc = locks_lock_file_wait(file, fl);
	if (rc) {
		m.type = PFS_LOCK_UNLOCK;
		pfs_unlock_once(inode, &m, epoch, &epoch);
	}
	return rc;
}

static int pfs_get_lock(struct file *file, struct file_lock *fl)
{
	struct inode *inode = file_inode(file);
	struct pfs_rpc rpc = { .type = PFS_MSG_GETLK, .reply_max = 256 };
	struct pfs_lock_conflict c;
	struct pfs_lock_req m;
	u32 len = 0;
	void *req;
	int rc;

	pfs_lock_fill(file, fl, PFS_LOCK_POSIX, &m);
	req = pfs_encode(pfs_x_lock_req, &m, &len);
	if (IS_ERR(req))
		return PTR_ERR(req);
	rpc.req = req;
	rpc.req_len = len;
	rc = pfs_meta_call(inode->i_sb, &m.id, &rpc);
	kfree(req);
	if (!rc)
		rc = pfs_decode(pfs_x_lock_conflict, &c, rpc.reply,
				rpc.reply_len);
	pfs_rpc_release(&rpc);
	if (rc)
		return rc;
	if (c.type == PFS_LOCK_UNLOCK) {
		pfs_fl_type(fl) = F_UNLCK;
		return 0;
	}
	pfs_fl_type(fl) = c.type == PFS_LOCK_READ ? F_RDLCK : F_WRLCK;
	fl->fl_start = c.start;
	fl->fl_end = c.end == PFS_LOCK_EOF || c.end > OFFSET_MAX ?
		     OFFSET_MAX : c.end;
	/* A holder on another client has no pid here. */
	pfs_fl_pid(fl) = c.client_id == PFS_SB(inode->i_sb)->client_id ?
			 c.pid : 0;
	return 0;
}

int pfs_lock(struct file *file, int cmd, struct file_lock *fl)
{
	if (!(pfs_fl_flags(fl) & FL_POSIX))
		return -ENOLCK;
	if (IS_GETLK(cmd))
		return pfs_get_lock(file, fl);
	return pfs_set_lock(file, fl, PFS_LOCK_POSIX, IS_SETLKW(cmd));
}

int pfs_flock(struct file *file, int cmd, struct file_lock *fl)
{
	if (!(pfs_fl_flags(fl) & FL_FLOCK))
		return -ENOLCK;
	return pfs_set_lock(file, fl, PFS_LOCK_FLOCK,
			    pfs_fl_flags(fl) & FL_SLEEP);
}
