/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The messages fuzz_messages.c feeds, shared with gen_seeds.c so that the
 * seed corpus uses the same selector bytes. Append new messages at the end:
 * the index is the first byte of every corpus file.
 */
#ifndef PFS_FUZZ_MESSAGES_H
#define PFS_FUZZ_MESSAGES_H

#include <stddef.h>

#include "pfs_proto.h"

typedef int (*fuzz_x_fn)(struct pfs_xdr *x, void *m);

struct fuzz_msg_desc {
	const char *name;
	size_t body_size;		/* 0: no body before the list */
	fuzz_x_fn body;
	size_t elem_size;		/* 0: not a list */
	fuzz_x_fn elem;
	__u32 elem_min;			/* pfs_x_count's min_elem_size */
	__u32 (*body_count)(const void *body);	/* count kept in the body */
};

#define FUZZ_WRAP(name)							\
	static inline int fuzz_x_##name(struct pfs_xdr *x, void *m)	\
	{								\
		return pfs_x_##name(x, (struct pfs_##name *)m);		\
	}

FUZZ_WRAP(reply_status)
FUZZ_WRAP(auth_challenge)
FUZZ_WRAP(auth_response)
FUZZ_WRAP(auth_proof)
FUZZ_WRAP(ping_reply)
FUZZ_WRAP(capacity)
FUZZ_WRAP(register_node)
FUZZ_WRAP(register_node_reply)
FUZZ_WRAP(register_target)
FUZZ_WRAP(register_target_reply)
FUZZ_WRAP(heartbeat)
FUZZ_WRAP(target_capacity)
FUZZ_WRAP(map_version)
FUZZ_WRAP(get_nodes)
FUZZ_WRAP(node_info)
FUZZ_WRAP(target_info)
FUZZ_WRAP(pool_info)
FUZZ_WRAP(create_pool)
FUZZ_WRAP(assign_pool)
FUZZ_WRAP(set_target_state)
FUZZ_WRAP(map_changed)
FUZZ_WRAP(entry_id)
FUZZ_WRAP(timespec)
FUZZ_WRAP(attr)
FUZZ_WRAP(layout)
FUZZ_WRAP(pattern)
FUZZ_WRAP(set_pattern)
FUZZ_WRAP(name_req)
FUZZ_WRAP(create)
FUZZ_WRAP(create_made)
FUZZ_WRAP(symlink)
FUZZ_WRAP(mknod)
FUZZ_WRAP(path)
FUZZ_WRAP(link)
FUZZ_WRAP(rename)
FUZZ_WRAP(setattr)
FUZZ_WRAP(readdir)
FUZZ_WRAP(dirent)
FUZZ_WRAP(open)
FUZZ_WRAP(open_name)
FUZZ_WRAP(mkdir_on)
FUZZ_WRAP(mkdir_detached)
FUZZ_WRAP(rmdir_detached)
FUZZ_WRAP(entry_check)
FUZZ_WRAP(entry_states)
FUZZ_WRAP(list_detached)
FUZZ_WRAP(detached_page)
FUZZ_WRAP(dir_shards)
FUZZ_WRAP(move)
FUZZ_WRAP(remote_link)
FUZZ_WRAP(xattr_req)
FUZZ_WRAP(statfs)
FUZZ_WRAP(dir_page)
FUZZ_WRAP(chunk_ref)
FUZZ_WRAP(chunk_io)
FUZZ_WRAP(chunk_truncate)
FUZZ_WRAP(chunk_stat)
FUZZ_WRAP(chunk_written)
FUZZ_WRAP(lock_req)
FUZZ_WRAP(lock_conflict)
FUZZ_WRAP(session)
FUZZ_WRAP(invalidate)
FUZZ_WRAP(stats)
FUZZ_WRAP(msg_stats)
FUZZ_WRAP(chunk_list)
FUZZ_WRAP(chunk_unlink_many)
FUZZ_WRAP(close_many)
FUZZ_WRAP(chunk_page)
FUZZ_WRAP(chunk_entry)
FUZZ_WRAP(client_token)
FUZZ_WRAP(client_bound)
FUZZ_WRAP(chunk_synced)
FUZZ_WRAP(fallocate)
FUZZ_WRAP(chunk_falloc)
FUZZ_WRAP(chunk_seek)
FUZZ_WRAP(chunk_seek_reply)
FUZZ_WRAP(chunk_copy)
FUZZ_WRAP(bulk)
FUZZ_WRAP(transport_stats)
FUZZ_WRAP(dirent_plus)

static inline __u32 fuzz_heartbeat_count(const void *body)
{
	return ((const struct pfs_heartbeat *)body)->count;
}

static inline __u32 fuzz_dir_page_count(const void *body)
{
	return ((const struct pfs_dir_page *)body)->count;
}

static inline __u32 fuzz_stats_count(const void *body)
{
	return ((const struct pfs_stats *)body)->count;
}

static inline __u32 fuzz_chunk_page_count(const void *body)
{
	return ((const struct pfs_chunk_page *)body)->count;
}

#define FUZZ_BODY(name) \
	{ #name, sizeof(struct pfs_##name), fuzz_x_##name, 0, NULL, 0, NULL }
#define FUZZ_LIST(name, elem, min) \
	{ name, 0, NULL, sizeof(struct pfs_##elem), fuzz_x_##elem, min, NULL }

static const struct fuzz_msg_desc fuzz_msgs[] = {
	FUZZ_BODY(reply_status),
	FUZZ_BODY(auth_challenge),
	FUZZ_BODY(auth_response),
	FUZZ_BODY(auth_proof),
	FUZZ_BODY(ping_reply),
	FUZZ_BODY(capacity),
	FUZZ_BODY(register_node),
	FUZZ_BODY(register_node_reply),
	FUZZ_BODY(register_target),
	FUZZ_BODY(register_target_reply),
	/* HEARTBEAT: body with the count, then the capacities */
	{ "heartbeat", sizeof(struct pfs_heartbeat), fuzz_x_heartbeat,
	  sizeof(struct pfs_target_capacity), fuzz_x_target_capacity,
	  PFS_TARGET_CAP_MIN_SIZE, fuzz_heartbeat_count },
	FUZZ_BODY(target_capacity),
	FUZZ_BODY(map_version),
	FUZZ_BODY(get_nodes),
	FUZZ_BODY(node_info),
	FUZZ_BODY(target_info),
	FUZZ_BODY(pool_info),
	FUZZ_BODY(create_pool),
	FUZZ_BODY(assign_pool),
	FUZZ_BODY(set_target_state),
	FUZZ_BODY(map_changed),
	FUZZ_BODY(entry_id),
	/* list replies */
	FUZZ_LIST("get_nodes_reply", node_info, PFS_NODE_INFO_MIN_SIZE),
	FUZZ_LIST("get_targets_reply", target_info, PFS_TARGET_INFO_MIN_SIZE),
	FUZZ_LIST("get_pools_reply", pool_info, PFS_POOL_INFO_MIN_SIZE),
	/* storage */
	FUZZ_BODY(chunk_ref),
	FUZZ_BODY(chunk_io),
	FUZZ_BODY(chunk_truncate),
	FUZZ_BODY(chunk_stat),
	FUZZ_BODY(chunk_written),
	/* metadata */
	FUZZ_BODY(timespec),
	FUZZ_BODY(attr),
	FUZZ_BODY(layout),
	FUZZ_BODY(pattern),
	FUZZ_BODY(set_pattern),
	FUZZ_BODY(name_req),
	FUZZ_BODY(create),
	FUZZ_BODY(create_made),
	FUZZ_BODY(symlink),
	FUZZ_BODY(path),
	FUZZ_BODY(link),
	FUZZ_BODY(rename),
	FUZZ_BODY(setattr),
	FUZZ_BODY(readdir),
	FUZZ_BODY(dirent),
	FUZZ_BODY(open),
	FUZZ_BODY(open_name),
	/* directories on other metadata servers */
	FUZZ_BODY(mkdir_on),
	FUZZ_BODY(mkdir_detached),
	FUZZ_BODY(rmdir_detached),
	FUZZ_BODY(entry_check),
	FUZZ_BODY(entry_states),
	FUZZ_BODY(list_detached),
	FUZZ_BODY(detached_page),
	FUZZ_BODY(dir_shards),
	FUZZ_BODY(xattr_req),
	FUZZ_BODY(statfs),
	/* READDIR reply: the page with the count, then the entries */
	{ "dir_page", sizeof(struct pfs_dir_page), fuzz_x_dir_page,
	  sizeof(struct pfs_dirent), fuzz_x_dirent, PFS_DIRENT_MIN_SIZE,
	  fuzz_dir_page_count },
	/* locks and sessions */
	FUZZ_BODY(lock_req),
	FUZZ_BODY(lock_conflict),
	FUZZ_BODY(session),
	FUZZ_BODY(invalidate),
	/* GET_STATS reply: the totals with the count, then one per type */
	{ "stats", sizeof(struct pfs_stats), fuzz_x_stats,
	  sizeof(struct pfs_msg_stats), fuzz_x_msg_stats,
	  PFS_MSG_STATS_MIN_SIZE, fuzz_stats_count },
	FUZZ_BODY(msg_stats),
	FUZZ_BODY(chunk_list),
	FUZZ_BODY(chunk_unlink_many),
	FUZZ_BODY(close_many),
	/* CHUNK_LIST reply: the page with the count, then the entries */
	{ "chunk_page", sizeof(struct pfs_chunk_page), fuzz_x_chunk_page,
	  sizeof(struct pfs_chunk_entry), fuzz_x_chunk_entry,
	  PFS_CHUNK_ENTRY_MIN_SIZE, fuzz_chunk_page_count },
	FUZZ_BODY(chunk_entry),
	FUZZ_BODY(move),
	FUZZ_BODY(remote_link),
	FUZZ_BODY(client_token),
	FUZZ_BODY(client_bound),
	FUZZ_BODY(chunk_synced),
	/* the space of files */
	FUZZ_BODY(fallocate),
	FUZZ_BODY(chunk_falloc),
	FUZZ_BODY(chunk_seek),
	FUZZ_BODY(chunk_seek_reply),
	FUZZ_BODY(chunk_copy),
	FUZZ_BODY(mknod),
	FUZZ_BODY(bulk),
	FUZZ_BODY(transport_stats),
	/*
	 * READDIR_PLUS reply: the page, then entries with attributes; the
	 * page bounds its count by the smaller READDIR entry
	 */
	{ "dir_page_plus", sizeof(struct pfs_dir_page), fuzz_x_dir_page,
	  sizeof(struct pfs_dirent_plus), fuzz_x_dirent_plus,
	  PFS_DIRENT_MIN_SIZE, fuzz_dir_page_count },
	FUZZ_BODY(dirent_plus),
};

#define FUZZ_NUM_MSGS (sizeof(fuzz_msgs) / sizeof(fuzz_msgs[0]))

#endif /* PFS_FUZZ_MESSAGES_H */
