// SPDX-License-Identifier: GPL-2.0 OR MIT
#include "pfs_proto.h"

void pfs_header_encode(const struct pfs_header *h, __u8 *out)
{
	struct pfs_xdr x;
	struct pfs_header c = *h;

	pfs_xdr_init_encode(&x, out, PFS_HEADER_SIZE);
	pfs_x_u32(&x, &c.magic);
	pfs_x_u16(&x, &c.version);
	pfs_x_u16(&x, &c.type);
	pfs_x_u32(&x, &c.flags);
	pfs_x_u32(&x, &c.payload_len);
	pfs_x_u64(&x, &c.request_id);
	pfs_x_u32(&x, &c.uid);
	pfs_x_u32(&x, &c.gid);
	pfs_x_u64(&x, &c.client_id);
	pfs_x_u64(&x, &c.client_seq);
}

int pfs_header_decode(struct pfs_header *h, const __u8 *buf, __u32 len)
{
	struct pfs_xdr x;

	if (len < PFS_HEADER_SIZE)
		return -EBADMSG;
	pfs_xdr_init_decode(&x, buf, PFS_HEADER_SIZE);
	pfs_x_u32(&x, &h->magic);
	pfs_x_u16(&x, &h->version);
	pfs_x_u16(&x, &h->type);
	pfs_x_u32(&x, &h->flags);
	pfs_x_u32(&x, &h->payload_len);
	pfs_x_u64(&x, &h->request_id);
	pfs_x_u32(&x, &h->uid);
	pfs_x_u32(&x, &h->gid);
	pfs_x_u64(&x, &h->client_id);
	pfs_x_u64(&x, &h->client_seq);
	if (x.err)
		return x.err;
	if (h->magic != PFS_PROTO_MAGIC)
		return -EBADMSG;
	if (h->version != PFS_PROTO_VERSION)
		return -EPROTONOSUPPORT;
	if (h->payload_len > PFS_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (h->flags & ~PFS_FLAGS_KNOWN)
		return -EBADMSG;
	return 0;
}

/* Decoded enumerations must be within [0, max]. */
static int pfs_x_enum8(struct pfs_xdr *x, __u8 *v, __u8 max)
{
	if (pfs_x_u8(x, v))
		return x->err;
	if (pfs_xdr_decoding(x) && *v > max)
		x->err = -EBADMSG;
	return x->err;
}

static int pfs_x_node_type(struct pfs_xdr *x, __u16 *v, int allow_any)
{
	if (pfs_x_u16(x, v))
		return x->err;
	if (pfs_xdr_decoding(x) &&
	    !((allow_any && *v == 0) ||
	      (*v >= PFS_NODE_MGMT && *v <= PFS_NODE_CLIENT)))
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_reply_status(struct pfs_xdr *x, struct pfs_reply_status *m)
{
	/* Decoding may have failed: then m->status is not to be looked at. */
	if (pfs_x_s32(x, &m->status))
		return x->err;
	if (m->status != PFS_OK)
		pfs_x_str(x, m->message, sizeof(m->message));
	else if (pfs_xdr_decoding(x))
		m->message[0] = '\0';
	return x->err;
}

static int pfs_x_bulk_seg(struct pfs_xdr *x, struct pfs_bulk_seg *m)
{
	pfs_x_u64(x, &m->addr);
	pfs_x_u32(x, &m->rkey);
	pfs_x_u32(x, &m->length);
	if (pfs_xdr_decoding(x) && !x->err &&
	    (m->length == 0 || m->length > PFS_MAX_IO ||
	     m->addr + m->length < m->addr))
		x->err = -EBADMSG;
	return x->err;
}

/* n segments whose lengths add up to exactly len. */
static int pfs_x_bulk_segs(struct pfs_xdr *x, __u8 n, struct pfs_bulk_seg *s,
			   __u32 len)
{
	__u64 sum = 0;
	__u8 i;

	for (i = 0; i < n; i++) {
		if (pfs_x_bulk_seg(x, &s[i]))
			return x->err;
		sum += s[i].length;
	}
	if (pfs_xdr_decoding(x) && sum != len)
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_bulk(struct pfs_xdr *x, struct pfs_bulk *m)
{
	if (pfs_x_enum8(x, &m->place, PFS_BULK_RDMA))
		return x->err;
	pfs_x_u32(x, &m->in_len);
	if (pfs_x_u32(x, &m->out_len))
		return x->err;
	if (pfs_xdr_decoding(x) &&
	    (m->in_len > PFS_MAX_IO || m->out_len > PFS_MAX_IO))
		return x->err = -EBADMSG;
	if (m->place != PFS_BULK_RDMA)
		return x->err;
	pfs_x_u8(x, &m->nin);
	if (pfs_x_u8(x, &m->nout))
		return x->err;
	if (pfs_xdr_decoding(x) &&
	    (m->nin > PFS_BULK_SEGS_MAX || m->nout > PFS_BULK_SEGS_MAX ||
	     !m->nin != !m->in_len || !m->nout != !m->out_len))
		return x->err = -EBADMSG;
	pfs_x_bulk_segs(x, m->nin, m->in, m->in_len);
	return pfs_x_bulk_segs(x, m->nout, m->out, m->out_len);
}

int pfs_x_auth_challenge(struct pfs_xdr *x, struct pfs_auth_challenge *m)
{
	return pfs_x_bytes(x, m->nonce, sizeof(m->nonce));
}

static int pfs_x_auth_flags(struct pfs_xdr *x, __u8 *flags)
{
	if (pfs_x_u8(x, flags))
		return x->err;
	if (pfs_xdr_decoding(x) && (*flags & ~PFS_AUTH_FLAGS_KNOWN))
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_auth_response(struct pfs_xdr *x, struct pfs_auth_response *m)
{
	pfs_x_bytes(x, m->nonce, sizeof(m->nonce));
	pfs_x_bytes(x, m->mac, sizeof(m->mac));
	if (pfs_x_u8(x, &m->role))
		return x->err;
	if (pfs_xdr_decoding(x) &&
	    (m->role < PFS_ROLE_CLIENT || m->role > PFS_ROLE_MAX))
		x->err = -EBADMSG;
	return pfs_x_auth_flags(x, &m->flags);
}

int pfs_x_auth_proof(struct pfs_xdr *x, struct pfs_auth_proof *m)
{
	pfs_x_bytes(x, m->mac, sizeof(m->mac));
	return pfs_x_auth_flags(x, &m->flags);
}

int pfs_x_client_token(struct pfs_xdr *x, struct pfs_client_token *m)
{
	return pfs_x_bytes(x, m->token, sizeof(m->token));
}

int pfs_x_groups(struct pfs_xdr *x, struct pfs_groups *m)
{
	__u32 i;

	if (pfs_x_u32(x, &m->count))
		return x->err;
	if (m->count > PFS_GROUPS_MAX)
		return x->err = -EBADMSG;
	for (i = 0; i < m->count; i++)
		pfs_x_u32(x, &m->gids[i]);
	return x->err;
}

int pfs_x_client_bound(struct pfs_xdr *x, struct pfs_client_bound *m)
{
	if (pfs_x_u64(x, &m->client_id))
		return x->err;
	if (pfs_xdr_decoding(x) && !m->client_id)
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_ping_reply(struct pfs_xdr *x, struct pfs_ping_reply *m)
{
	pfs_x_u32(x, &m->node_id);
	return pfs_x_node_type(x, &m->node_type, 0);
}

int pfs_x_stats(struct pfs_xdr *x, struct pfs_stats *m)
{
	pfs_x_u32(x, &m->node_id);
	pfs_x_node_type(x, &m->node_type, 0);
	pfs_x_u64(x, &m->uptime_ms);
	return pfs_x_count(x, &m->count, PFS_STATS_TYPES_MAX,
			   PFS_MSG_STATS_MIN_SIZE);
}

int pfs_x_transport_stats(struct pfs_xdr *x, struct pfs_transport_stats *m)
{
	pfs_x_u64(x, &m->rdma_connections);
	pfs_x_u64(x, &m->sends);
	pfs_x_u64(x, &m->send_bytes);
	pfs_x_u64(x, &m->recvs);
	pfs_x_u64(x, &m->recv_bytes);
	pfs_x_u64(x, &m->reads);
	pfs_x_u64(x, &m->read_bytes);
	pfs_x_u64(x, &m->writes);
	pfs_x_u64(x, &m->write_bytes);
	pfs_x_u64(x, &m->bounce_bytes);
	pfs_x_u64(x, &m->remote_regions);
	return pfs_x_u64(x, &m->remote_regions_now);
}

int pfs_x_msg_stats(struct pfs_xdr *x, struct pfs_msg_stats *m)
{
	pfs_x_u16(x, &m->type);
	pfs_x_u64(x, &m->requests);
	pfs_x_u64(x, &m->errors);
	pfs_x_u64(x, &m->bytes_in);
	pfs_x_u64(x, &m->bytes_out);
	if (pfs_xdr_decoding(x) && !x->err && m->errors > m->requests)
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_capacity(struct pfs_xdr *x, struct pfs_capacity *m)
{
	pfs_x_u64(x, &m->bytes_total);
	pfs_x_u64(x, &m->bytes_free);
	pfs_x_u64(x, &m->inodes_total);
	pfs_x_u64(x, &m->inodes_free);
	if (pfs_xdr_decoding(x) && !x->err &&
	    (m->bytes_free > m->bytes_total ||
	     m->inodes_free > m->inodes_total))
		x->err = -EBADMSG;
	return x->err;
}

static int pfs_x_node_addrs(struct pfs_xdr *x, __u8 *n,
			    struct pfs_node_addr *addrs)
{
	__u8 i;

	if (pfs_x_u8(x, n))
		return x->err;
	if (pfs_xdr_decoding(x) && *n > PFS_NODE_ADDRS_MAX)
		return x->err = -EBADMSG;
	for (i = 0; i < *n; i++) {
		pfs_x_enum8(x, &addrs[i].transport, PFS_TRANSPORT_RDMA);
		pfs_x_u16(x, &addrs[i].port);
		if (pfs_x_str(x, addrs[i].addr, sizeof(addrs[i].addr)))
			break;
	}
	return x->err;
}

int pfs_x_register_node(struct pfs_xdr *x, struct pfs_register_node *m)
{
	pfs_x_u32(x, &m->node_id);
	pfs_x_node_type(x, &m->node_type, 0);
	pfs_x_u16(x, &m->port);
	pfs_x_str(x, m->alias, sizeof(m->alias));
	pfs_x_str(x, m->host, sizeof(m->host));
	return pfs_x_node_addrs(x, &m->naddrs, m->addrs);
}

int pfs_x_register_node_reply(struct pfs_xdr *x,
			      struct pfs_register_node_reply *m)
{
	pfs_x_u32(x, &m->node_id);
	return pfs_x_u64(x, &m->map_version);
}

int pfs_x_register_target(struct pfs_xdr *x, struct pfs_register_target *m)
{
	pfs_x_u32(x, &m->node_id);
	pfs_x_u32(x, &m->target_id);
	return pfs_x_str(x, m->path, sizeof(m->path));
}

int pfs_x_register_target_reply(struct pfs_xdr *x,
				struct pfs_register_target_reply *m)
{
	pfs_x_u32(x, &m->target_id);
	return pfs_x_u32(x, &m->pool_id);
}

int pfs_x_heartbeat(struct pfs_xdr *x, struct pfs_heartbeat *m)
{
	pfs_x_u32(x, &m->node_id);
	return pfs_x_count(x, &m->count, PFS_MAX_LIST, PFS_TARGET_CAP_MIN_SIZE);
}

int pfs_x_target_capacity(struct pfs_xdr *x, struct pfs_target_capacity *m)
{
	pfs_x_u32(x, &m->target_id);
	return pfs_x_capacity(x, &m->cap);
}

int pfs_x_map_version(struct pfs_xdr *x, struct pfs_map_version *m)
{
	return pfs_x_u64(x, &m->map_version);
}

int pfs_x_get_nodes(struct pfs_xdr *x, struct pfs_get_nodes *m)
{
	return pfs_x_node_type(x, &m->node_type, 1);
}

int pfs_x_node_info(struct pfs_xdr *x, struct pfs_node_info *m)
{
	pfs_x_u32(x, &m->node_id);
	pfs_x_node_type(x, &m->node_type, 0);
	pfs_x_u16(x, &m->port);
	pfs_x_enum8(x, &m->reachability, PFS_REACH_OFFLINE);
	pfs_x_str(x, m->alias, sizeof(m->alias));
	pfs_x_str(x, m->host, sizeof(m->host));
	pfs_x_u64(x, &m->last_seen_ms);
	pfs_x_capacity(x, &m->cap);
	return pfs_x_node_addrs(x, &m->naddrs, m->addrs);
}

int pfs_x_target_info(struct pfs_xdr *x, struct pfs_target_info *m)
{
	pfs_x_u32(x, &m->target_id);
	pfs_x_u32(x, &m->node_id);
	pfs_x_u32(x, &m->pool_id);
	pfs_x_enum8(x, &m->reachability, PFS_REACH_OFFLINE);
	pfs_x_enum8(x, &m->consistency, PFS_CONS_BAD);
	pfs_x_enum8(x, &m->space_class, PFS_CAP_EMERGENCY);
	pfs_x_enum8(x, &m->inode_class, PFS_CAP_EMERGENCY);
	pfs_x_str(x, m->path, sizeof(m->path));
	pfs_x_u64(x, &m->last_seen_ms);
	return pfs_x_capacity(x, &m->cap);
}

int pfs_x_pool_info(struct pfs_xdr *x, struct pfs_pool_info *m)
{
	pfs_x_u32(x, &m->pool_id);
	return pfs_x_str(x, m->name, sizeof(m->name));
}

int pfs_x_create_pool(struct pfs_xdr *x, struct pfs_create_pool *m)
{
	pfs_x_u32(x, &m->pool_id);
	return pfs_x_str(x, m->name, sizeof(m->name));
}

int pfs_x_assign_pool(struct pfs_xdr *x, struct pfs_assign_pool *m)
{
	pfs_x_u32(x, &m->target_id);
	return pfs_x_u32(x, &m->pool_id);
}

int pfs_x_set_target_state(struct pfs_xdr *x, struct pfs_set_target_state *m)
{
	pfs_x_u32(x, &m->target_id);
	return pfs_x_enum8(x, &m->consistency, PFS_CONS_BAD);
}

int pfs_x_map_changed(struct pfs_xdr *x, struct pfs_map_changed *m)
{
	pfs_x_u64(x, &m->map_version);
	return pfs_x_u32(x, &m->changes);
}

int pfs_x_entry_id(struct pfs_xdr *x, struct pfs_entry_id *m)
{
	pfs_x_u64(x, &m->ino);
	pfs_x_u32(x, &m->owner_node);
	return pfs_x_u32(x, &m->generation);
}

/* Decoded flag words must not carry unknown bits. */
static int pfs_x_flags32(struct pfs_xdr *x, __u32 *v, __u32 known)
{
	if (pfs_x_u32(x, v))
		return x->err;
	if (pfs_xdr_decoding(x) && (*v & ~known))
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_timespec(struct pfs_xdr *x, struct pfs_timespec *m)
{
	pfs_x_s64(x, &m->sec);
	pfs_x_u32(x, &m->nsec);
	if (pfs_xdr_decoding(x) && !x->err && m->nsec >= 1000000000u)
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_attr(struct pfs_xdr *x, struct pfs_attr *m)
{
	pfs_x_entry_id(x, &m->id);
	pfs_x_u32(x, &m->mode);
	pfs_x_u32(x, &m->uid);
	pfs_x_u32(x, &m->gid);
	pfs_x_u32(x, &m->nlink);
	pfs_x_u64(x, &m->size);
	pfs_x_timespec(x, &m->atime);
	pfs_x_timespec(x, &m->mtime);
	pfs_x_timespec(x, &m->ctime);
	pfs_x_u32(x, &m->rdev);
	pfs_x_timespec(x, &m->btime);
	pfs_x_u64(x, &m->blocks);
	return pfs_x_u32(x, &m->xattrs);
}

int pfs_x_layout(struct pfs_xdr *x, struct pfs_layout *m)
{
	__u32 i;

	pfs_x_u32(x, &m->chunk_size);
	pfs_x_u32(x, &m->pool_id);
	if (pfs_x_count(x, &m->count, PFS_STRIPE_TARGETS_MAX, 4))
		return x->err;
	for (i = 0; i < m->count; i++)
		if (pfs_x_u32(x, &m->targets[i]))
			return x->err;
	if (pfs_xdr_decoding(x) && pfs_stripe_check(m->chunk_size, m->count))
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_pattern(struct pfs_xdr *x, struct pfs_pattern *m)
{
	pfs_x_u32(x, &m->chunk_size);
	pfs_x_u32(x, &m->num_targets);
	pfs_x_u32(x, &m->pool_id);
	pfs_x_u32(x, &m->inline_max);
	pfs_x_u32(x, &m->dir_stripes);
	if (pfs_xdr_decoding(x) && !x->err &&
	    (pfs_stripe_check(m->chunk_size, m->num_targets) ||
	     m->inline_max > m->chunk_size || m->inline_max > PFS_INLINE_MAX ||
	     m->dir_stripes > PFS_DIR_SHARDS_MAX))
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_set_pattern(struct pfs_xdr *x, struct pfs_set_pattern *m)
{
	pfs_x_entry_id(x, &m->dir);
	return pfs_x_pattern(x, &m->pattern);
}

int pfs_x_name_req(struct pfs_xdr *x, struct pfs_name_req *m)
{
	pfs_x_entry_id(x, &m->dir);
	return pfs_x_str(x, m->name, sizeof(m->name));
}

int pfs_x_create(struct pfs_xdr *x, struct pfs_create *m)
{
	pfs_x_entry_id(x, &m->dir);
	pfs_x_str(x, m->name, sizeof(m->name));
	pfs_x_flags32(x, &m->mode, 07777);
	return pfs_x_flags32(x, &m->flags, PFS_CREATE_KNOWN);
}

int pfs_x_mknod(struct pfs_xdr *x, struct pfs_mknod *m)
{
	pfs_x_entry_id(x, &m->dir);
	pfs_x_str(x, m->name, sizeof(m->name));
	pfs_x_u32(x, &m->mode);
	pfs_x_u32(x, &m->rdev);
	if (pfs_xdr_decoding(x) && !x->err && !pfs_mknod_mode_valid(m->mode))
		x->err = -EBADMSG;
	return x->err;
}

/* A DT_* type of an entry: decoding refuses anything else. */
static int pfs_x_dtype(struct pfs_xdr *x, __u8 *v)
{
	pfs_x_u8(x, v);
	if (pfs_xdr_decoding(x) && !x->err && !pfs_dtype_valid(*v))
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_symlink(struct pfs_xdr *x, struct pfs_symlink *m)
{
	pfs_x_entry_id(x, &m->dir);
	pfs_x_str(x, m->name, sizeof(m->name));
	return pfs_x_str(x, m->target, sizeof(m->target));
}

int pfs_x_path(struct pfs_xdr *x, struct pfs_path *m)
{
	return pfs_x_str(x, m->path, sizeof(m->path));
}

int pfs_x_link(struct pfs_xdr *x, struct pfs_link *m)
{
	pfs_x_entry_id(x, &m->id);
	pfs_x_entry_id(x, &m->dir);
	return pfs_x_str(x, m->name, sizeof(m->name));
}

int pfs_x_rename(struct pfs_xdr *x, struct pfs_rename *m)
{
	pfs_x_entry_id(x, &m->src_dir);
	pfs_x_str(x, m->src_name, sizeof(m->src_name));
	pfs_x_entry_id(x, &m->dst_dir);
	pfs_x_str(x, m->dst_name, sizeof(m->dst_name));
	return pfs_x_flags32(x, &m->flags, 3);
}

int pfs_x_setattr(struct pfs_xdr *x, struct pfs_setattr *m)
{
	pfs_x_entry_id(x, &m->id);
	pfs_x_flags32(x, &m->valid, PFS_SET_KNOWN);
	pfs_x_u32(x, &m->mode);
	pfs_x_u32(x, &m->uid);
	pfs_x_u32(x, &m->gid);
	pfs_x_u64(x, &m->size);
	pfs_x_timespec(x, &m->atime);
	return pfs_x_timespec(x, &m->mtime);
}

int pfs_x_readdir(struct pfs_xdr *x, struct pfs_readdir *m)
{
	pfs_x_entry_id(x, &m->dir);
	pfs_x_u64(x, &m->cookie);
	pfs_x_u32(x, &m->max_entries);
	if (pfs_xdr_decoding(x) && !x->err &&
	    (m->max_entries == 0 || m->max_entries > PFS_READDIR_MAX))
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_dir_page(struct pfs_xdr *x, struct pfs_dir_page *m)
{
	pfs_x_u64(x, &m->next_cookie);
	pfs_x_enum8(x, &m->eof, 1);
	return pfs_x_count(x, &m->count, PFS_READDIR_MAX, PFS_DIRENT_MIN_SIZE);
}

int pfs_x_dirent(struct pfs_xdr *x, struct pfs_dirent *m)
{
	pfs_x_entry_id(x, &m->id);
	pfs_x_u64(x, &m->cookie);
	/* any byte: readers judge whole entries (pfs.ko logs which it refuses) */
	pfs_x_u8(x, &m->type);
	return pfs_x_str(x, m->name, sizeof(m->name));
}

int pfs_x_dirent_plus(struct pfs_xdr *x, struct pfs_dirent_plus *m)
{
	pfs_x_dirent(x, &m->ent);
	pfs_x_enum8(x, &m->has_attr, 1);
	if (x->err || !m->has_attr)
		return x->err;
	return pfs_x_attr(x, &m->attr);
}

int pfs_x_open(struct pfs_xdr *x, struct pfs_open *m)
{
	pfs_x_entry_id(x, &m->id);
	return pfs_x_u32(x, &m->flags);
}

int pfs_x_create_made(struct pfs_xdr *x, struct pfs_create_made *m)
{
	if (pfs_x_u32(x, &m->made))
		return x->err;
	if (pfs_xdr_decoding(x) && m->made > 1)
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_open_name(struct pfs_xdr *x, struct pfs_open_name *m)
{
	pfs_x_entry_id(x, &m->dir);
	pfs_x_str(x, m->name, sizeof(m->name));
	return pfs_x_u32(x, &m->flags);
}

int pfs_x_xattr_req(struct pfs_xdr *x, struct pfs_xattr_req *m)
{
	pfs_x_entry_id(x, &m->id);
	pfs_x_str(x, m->name, sizeof(m->name));
	return pfs_x_flags32(x, &m->flags, 3);
}

int pfs_x_statfs(struct pfs_xdr *x, struct pfs_statfs *m)
{
	pfs_x_capacity(x, &m->storage);
	pfs_x_u64(x, &m->inodes_used);
	return pfs_x_u64(x, &m->inodes_free);
}

/* Lock (and rmdir phase) enumerations start at 1: 0 is never valid. */
static int pfs_x_lock_enum(struct pfs_xdr *x, __u8 *v, __u8 max)
{
	if (pfs_x_u8(x, v))
		return x->err;
	if (pfs_xdr_decoding(x) && (*v == 0 || *v > max))
		x->err = -EBADMSG;
	return x->err;
}

static int pfs_x_lock_range(struct pfs_xdr *x, __u64 *start, __u64 *end)
{
	pfs_x_u64(x, start);
	pfs_x_u64(x, end);
	if (pfs_xdr_decoding(x) && !x->err && *start > *end)
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_lock_req(struct pfs_xdr *x, struct pfs_lock_req *m)
{
	pfs_x_entry_id(x, &m->id);
	pfs_x_lock_enum(x, &m->kind, PFS_LOCK_POSIX);
	pfs_x_lock_enum(x, &m->type, PFS_LOCK_UNLOCK);
	pfs_x_lock_range(x, &m->start, &m->end);
	pfs_x_u64(x, &m->owner);
	return pfs_x_u32(x, &m->pid);
}

int pfs_x_lock_conflict(struct pfs_xdr *x, struct pfs_lock_conflict *m)
{
	pfs_x_lock_enum(x, &m->type, PFS_LOCK_UNLOCK);
	pfs_x_lock_range(x, &m->start, &m->end);
	pfs_x_u32(x, &m->pid);
	return pfs_x_u64(x, &m->client_id);
}

static int pfs_x_entry_ids(struct pfs_xdr *x, __u32 *count,
			   struct pfs_entry_id *ids, __u32 max)
{
	__u32 i;

	if (pfs_x_count(x, count, max, 16))
		return x->err;
	if (pfs_xdr_decoding(x) && *count == 0)
		return x->err = -EBADMSG;
	for (i = 0; i < *count; i++)
		if (pfs_x_entry_id(x, &ids[i]))
			return x->err;
	return x->err;
}

int pfs_x_invalidate(struct pfs_xdr *x, struct pfs_invalidate *m)
{
	return pfs_x_entry_ids(x, &m->count, m->ids, PFS_INVALIDATE_MAX);
}

int pfs_x_close_many(struct pfs_xdr *x, struct pfs_close_many *m)
{
	return pfs_x_entry_ids(x, &m->count, m->ids, PFS_CLOSE_MANY_MAX);
}

int pfs_x_chunk_unlink_many(struct pfs_xdr *x,
			    struct pfs_chunk_unlink_many *m)
{
	pfs_x_u32(x, &m->target_id);
	return pfs_x_entry_ids(x, &m->count, m->files, PFS_CHUNK_UNLINK_MAX);
}

int pfs_x_mkdir_on(struct pfs_xdr *x, struct pfs_mkdir_on *m)
{
	pfs_x_entry_id(x, &m->dir);
	pfs_x_str(x, m->name, sizeof(m->name));
	pfs_x_flags32(x, &m->mode, 07777);
	pfs_x_u32(x, &m->node);
	pfs_x_u32(x, &m->stripes);
	if (pfs_xdr_decoding(x) && !x->err && m->stripes > PFS_DIR_SHARDS_MAX)
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_mkdir_detached(struct pfs_xdr *x, struct pfs_mkdir_detached *m)
{
	pfs_x_entry_id(x, &m->parent);
	pfs_x_flags32(x, &m->mode, 07777);
	pfs_x_u32(x, &m->uid);
	pfs_x_u32(x, &m->gid);
	pfs_x_pattern(x, &m->pattern);
	pfs_x_u32(x, &m->stripes);
	pfs_x_u32(x, &m->shard_index);
	if (pfs_xdr_decoding(x) && !x->err &&
	    (m->stripes > PFS_DIR_SHARDS_MAX ||
	     (m->shard_index && m->shard_index >= m->stripes)))
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_dir_shards(struct pfs_xdr *x, struct pfs_dir_shards *m)
{
	return pfs_x_entry_ids(x, &m->count, m->ids, PFS_DIR_SHARDS_MAX);
}

int pfs_x_rmdir_detached(struct pfs_xdr *x, struct pfs_rmdir_detached *m)
{
	pfs_x_entry_id(x, &m->id);
	return pfs_x_lock_enum(x, &m->phase, PFS_RMDIR_CONFIRM);
}

int pfs_x_entry_check(struct pfs_xdr *x, struct pfs_entry_check *m)
{
	return pfs_x_entry_ids(x, &m->count, m->ids, PFS_ENTRY_CHECK_MAX);
}

int pfs_x_entry_states(struct pfs_xdr *x, struct pfs_entry_states *m)
{
	__u32 i;

	if (pfs_x_count(x, &m->count, PFS_ENTRY_CHECK_MAX, 1))
		return x->err;
	for (i = 0; i < m->count; i++)
		if (pfs_x_enum8(x, &m->states[i], PFS_ENTRY_PENDING))
			return x->err;
	return x->err;
}

int pfs_x_list_detached(struct pfs_xdr *x, struct pfs_list_detached *m)
{
	return pfs_x_u64(x, &m->after);
}

int pfs_x_detached_page(struct pfs_xdr *x, struct pfs_detached_page *m)
{
	__u32 i;

	if (pfs_x_count(x, &m->count, PFS_DETACHED_PAGE_MAX, 33))
		return x->err;
	pfs_x_enum8(x, &m->eof, 1);
	for (i = 0; i < m->count && !x->err; i++) {
		pfs_x_entry_id(x, &m->dirs[i].id);
		pfs_x_entry_id(x, &m->dirs[i].parent);
		pfs_x_enum8(x, &m->dirs[i].state, PFS_DETACHED_MOVING);
	}
	return x->err;
}

int pfs_x_move(struct pfs_xdr *x, struct pfs_move *m)
{
	pfs_x_entry_id(x, &m->id);
	pfs_x_entry_id(x, &m->from);
	pfs_x_entry_id(x, &m->to);
	return pfs_x_lock_enum(x, &m->phase, PFS_MOVE_ABORT);
}

int pfs_x_remote_link(struct pfs_xdr *x, struct pfs_remote_link *m)
{
	pfs_x_entry_id(x, &m->dir);
	pfs_x_str(x, m->name, sizeof(m->name));
	pfs_x_entry_id(x, &m->id);
	pfs_x_dtype(x, &m->type);
	return pfs_x_flags32(x, &m->flags, PFS_REMOTE_LINK_NOREPLACE);
}

int pfs_x_session(struct pfs_xdr *x, struct pfs_session *m)
{
	return pfs_x_u32(x, &m->timeout_ms);
}

/* A count of 1..max entry ids, then the ids. */

int pfs_x_chunk_ref(struct pfs_xdr *x, struct pfs_chunk_ref *m)
{
	pfs_x_entry_id(x, &m->file);
	pfs_x_u32(x, &m->target_id);
	if (pfs_xdr_decoding(x) && !x->err && m->target_id == 0)
		x->err = -EBADMSG;
	return x->err;
}

static int pfs_x_file_offset(struct pfs_xdr *x, __u64 *v)
{
	if (pfs_x_u64(x, v))
		return x->err;
	if (pfs_xdr_decoding(x) && *v > PFS_MAX_FILE_OFFSET)
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_chunk_io(struct pfs_xdr *x, struct pfs_chunk_io *m)
{
	pfs_x_chunk_ref(x, &m->chunk);
	pfs_x_file_offset(x, &m->offset);
	pfs_x_u32(x, &m->length);
	if (pfs_xdr_decoding(x) && !x->err && m->length > PFS_MAX_IO)
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_chunk_truncate(struct pfs_xdr *x, struct pfs_chunk_truncate *m)
{
	pfs_x_chunk_ref(x, &m->chunk);
	return pfs_x_file_offset(x, &m->size);
}

/* A fallocate mode and a non-empty range within the largest file. */
static int pfs_x_falloc_range(struct pfs_xdr *x, __u32 *mode, __u64 *offset,
			      __u64 *length)
{
	pfs_x_u32(x, mode);
	pfs_x_file_offset(x, offset);
	if (pfs_x_u64(x, length))
		return x->err;
	if (pfs_xdr_decoding(x) &&
	    (pfs_falloc_mode_check(*mode) || *length == 0 ||
	     *length > PFS_MAX_FILE_OFFSET - *offset))
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_fallocate(struct pfs_xdr *x, struct pfs_fallocate *m)
{
	pfs_x_entry_id(x, &m->id);
	return pfs_x_falloc_range(x, &m->mode, &m->offset, &m->length);
}

int pfs_x_chunk_falloc(struct pfs_xdr *x, struct pfs_chunk_falloc *m)
{
	pfs_x_chunk_ref(x, &m->chunk);
	return pfs_x_falloc_range(x, &m->mode, &m->offset, &m->length);
}

int pfs_x_chunk_seek(struct pfs_xdr *x, struct pfs_chunk_seek *m)
{
	pfs_x_chunk_ref(x, &m->chunk);
	pfs_x_file_offset(x, &m->offset);
	if (pfs_x_u8(x, &m->what))
		return x->err;
	if (pfs_xdr_decoding(x) &&
	    m->what != PFS_SEEK_DATA && m->what != PFS_SEEK_HOLE)
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_chunk_seek_reply(struct pfs_xdr *x, struct pfs_chunk_seek_reply *m)
{
	pfs_x_enum8(x, &m->found, 1);
	return pfs_x_file_offset(x, &m->offset);
}

int pfs_x_chunk_copy(struct pfs_xdr *x, struct pfs_chunk_copy *m)
{
	pfs_x_chunk_ref(x, &m->src);
	pfs_x_entry_id(x, &m->dst);
	pfs_x_file_offset(x, &m->src_offset);
	pfs_x_file_offset(x, &m->dst_offset);
	if (pfs_x_u32(x, &m->length))
		return x->err;
	if (pfs_xdr_decoding(x) &&
	    (m->length == 0 || m->length > PFS_MAX_IO ||
	     m->src_offset + m->length > PFS_MAX_FILE_OFFSET ||
	     m->dst_offset + m->length > PFS_MAX_FILE_OFFSET))
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_chunk_stat(struct pfs_xdr *x, struct pfs_chunk_stat *m)
{
	pfs_x_u64(x, &m->size);
	return pfs_x_u64(x, &m->allocated);
}

int pfs_x_chunk_written(struct pfs_xdr *x, struct pfs_chunk_written *m)
{
	pfs_x_u32(x, &m->length);
	return pfs_x_u64(x, &m->verifier);
}

int pfs_x_inline_written(struct pfs_xdr *x, struct pfs_inline_written *m)
{
	pfs_x_chunk_written(x, &m->written);
	return pfs_x_attr(x, &m->attr);
}

int pfs_x_chunk_synced(struct pfs_xdr *x, struct pfs_chunk_synced *m)
{
	return pfs_x_u64(x, &m->verifier);
}

static int pfs_x_chunk_cookie(struct pfs_xdr *x, struct pfs_chunk_cookie *m)
{
	pfs_x_u32(x, &m->dir);
	return pfs_x_u64(x, &m->pos);
}

int pfs_x_chunk_list(struct pfs_xdr *x, struct pfs_chunk_list *m)
{
	pfs_x_u32(x, &m->target_id);
	pfs_x_chunk_cookie(x, &m->cookie);
	pfs_x_u32(x, &m->max_entries);
	if (pfs_xdr_decoding(x) && !x->err &&
	    (m->target_id == 0 || m->max_entries == 0 ||
	     m->max_entries > PFS_CHUNK_LIST_MAX))
		x->err = -EBADMSG;
	return x->err;
}

int pfs_x_chunk_page(struct pfs_xdr *x, struct pfs_chunk_page *m)
{
	pfs_x_chunk_cookie(x, &m->next);
	pfs_x_enum8(x, &m->eof, 1);
	return pfs_x_count(x, &m->count, PFS_CHUNK_LIST_MAX,
			   PFS_CHUNK_ENTRY_MIN_SIZE);
}

int pfs_x_chunk_entry(struct pfs_xdr *x, struct pfs_chunk_entry *m)
{
	pfs_x_entry_id(x, &m->file);
	return pfs_x_u64(x, &m->size);
}

const char *pfs_status_name(__s32 status)
{
	switch (status) {
	case PFS_OK:
		return "ok";
	case PFS_E_PROTO:
		return "malformed message";
	case PFS_E_AUTH:
		return "authentication failed";
	case PFS_E_VERSION:
		return "protocol version not supported";
	case PFS_E_UNKNOWN_MSG:
		return "message type not served";
	case PFS_E_UNKNOWN_NODE:
		return "unknown node";
	case PFS_E_UNKNOWN_TARGET:
		return "unknown target";
	case PFS_E_UNKNOWN_POOL:
		return "unknown storage pool";
	case PFS_E_INTERNAL:
		return "internal server error";
	case PFS_E_MOVED:
		return "data moved to the storage targets";
	case PFS_E_WRONG_SHARD:
		return "name of another shard of a striped directory";
	}
	return status > 0 && status < 1000 ? "system error" : "unknown status";
}

int pfs_status_to_errno(__s32 status)
{
	switch (status) {
	case PFS_OK:
		return 0;
	case PFS_E_PROTO:
		return -EPROTO;
	case PFS_E_AUTH:
		return -EACCES;
	case PFS_E_VERSION:
		return -EPROTONOSUPPORT;
	case PFS_E_UNKNOWN_MSG:
		return -EOPNOTSUPP;
	case PFS_E_UNKNOWN_NODE:
	case PFS_E_UNKNOWN_TARGET:
	case PFS_E_UNKNOWN_POOL:
		return -ENOENT;
	case PFS_E_MOVED:
		return -EREMCHG;	/* callers fetch the layout again */
	case PFS_E_WRONG_SHARD:
		return -EREMOTE;	/* callers ask DIR_SHARDS */
	}
	if (status > 0 && status < 1000)
		return -status;
	return -EIO;
}

const char *pfs_msg_name(__u16 type)
{
	switch (type) {
#define PFS_MSG_NAME(name, number, sent_by)				\
	case number:							\
		return #name;
	PFS_MESSAGES(PFS_MSG_NAME)
#undef PFS_MSG_NAME
	}
	return "?";
}

__u32 pfs_msg_sent_by(__u16 type)
{
	switch (type) {
#define PFS_MSG_SENT_BY(name, number, sent_by)				\
	case number:							\
		return sent_by;
	PFS_MESSAGES(PFS_MSG_SENT_BY)
#undef PFS_MSG_SENT_BY
	}
	return PFS_SENT_BY_NONE;
}
