// SPDX-License-Identifier: GPL-2.0
/*
 * Write verifiers (struct pfs_chunk_written): what each target of a file
 * acknowledged this client's writes under since the file's last sync.
 * CHUNK_SYNC answers the target's verifier now; a different one (the
 * target crashed or lost power in between) means those writes may never
 * have reached its disk, and fsync says so with EIO instead of 0 over
 * zeros (NFS's COMMIT verifier). Two writes under different verifiers
 * mean the same.
 */
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "pfs.h"

enum {
	PFS_VERF_NONE,		/* nothing written since the last sync */
	PFS_VERF_SEEN,		/* written under .seen */
	PFS_VERF_LOST,		/* written under two verifiers */
};

struct pfs_verfs {
	spinlock_t lock;
	u32 count;
	struct {
		u64 seen;
		u8 state;
	} t[];
};

struct pfs_verfs *pfs_verfs_alloc(u32 count)
{
	struct pfs_verfs *v = kzalloc(struct_size(v, t, count), GFP_NOFS);

	if (!v)
		return NULL;
	spin_lock_init(&v->lock);
	v->count = count;
	return v;
}

void pfs_verfs_free(struct pfs_verfs *v)
{
	kfree(v);
}

void pfs_verfs_seen(struct pfs_verfs *v, u32 index, u64 verifier)
{
	if (!v || index >= v->count)
		return;
	spin_lock(&v->lock);
	if (v->t[index].state == PFS_VERF_NONE) {
		v->t[index].seen = verifier;
		v->t[index].state = PFS_VERF_SEEN;
	} else if (v->t[index].seen != verifier) {
		v->t[index].state = PFS_VERF_LOST;
	}
	spin_unlock(&v->lock);
}

int pfs_verfs_synced(struct pfs_verfs *v, u32 index, u64 verifier)
{
	bool lost;

	if (!v || index >= v->count)
		return 0;
	spin_lock(&v->lock);
	lost = v->t[index].state == PFS_VERF_LOST ||
	       (v->t[index].state == PFS_VERF_SEEN &&
		v->t[index].seen != verifier);
	v->t[index].state = PFS_VERF_NONE;
	spin_unlock(&v->lock);
	return lost ? -EIO : 0;
}
