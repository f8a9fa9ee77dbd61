// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Writes the seed corpus of the fuzz targets: valid encodings of a frame
 * header and of every message in fuzz_messages.h. Not part of the build;
 * rerun by hand after adding a message:
 *
 *   cc -I../../common/proto gen_seeds.c ../../common/proto/pfs_xdr.c \
 *      ../../common/proto/pfs_msg.c -o /tmp/gen_seeds && /tmp/gen_seeds corpus
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pfs_proto.h"
#include "fuzz_messages.h"

static const char *outdir;

static void write_file(const char *sub, const char *name, const void *p,
		       size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, sub);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, sub, name);
	f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static int find(const char *name)
{
	size_t i;

	for (i = 0; i < FUZZ_NUM_MSGS; i++)
		if (!strcmp(fuzz_msgs[i].name, name))
			return (int)i;
	fprintf(stderr, "no message %s\n", name);
	exit(1);
}

static int enc(const struct fuzz_msg_desc *d, struct pfs_xdr *x, void *body,
	       __u32 count, void *elems)
{
	__u32 i;

	if (d->body && d->body(x, body))
		return x->err;
	if (!d->elem)
		return x->err;
	if (!d->body_count &&
	    pfs_x_count(x, &count, PFS_MAX_LIST, d->elem_min))
		return x->err;
	for (i = 0; i < count; i++)
		d->elem(x, (char *)elems + (size_t)i * d->elem_size);
	return x->err;
}

/* One seed: the selector byte, then the encoding. */
static void seed(const char *name, const char *tag, void *body, __u32 count,
		 void *elems)
{
	int idx = find(name);
	const struct fuzz_msg_desc *d = &fuzz_msgs[idx];
	struct pfs_xdr x;
	char file[128];
	__u8 *buf;
	__u32 len;

	pfs_xdr_init_size(&x);
	if (enc(d, &x, body, count, elems)) {
		fprintf(stderr, "%s: size pass failed: %d\n", name, x.err);
		exit(1);
	}
	len = x.pos;
	buf = malloc(len + 1);
	buf[0] = (__u8)idx;
	pfs_xdr_init_encode(&x, buf + 1, len);
	if (enc(d, &x, body, count, elems) || x.pos != len) {
		fprintf(stderr, "%s: encoding failed: %d\n", name, x.err);
		exit(1);
	}
	snprintf(file, sizeof(file), "%s-%s", name, tag);
	write_file("messages", file, buf, len + 1);
	free(buf);
}

#define SEED(name, tag, body) seed(#name, tag, body, 0, NULL)

int main(int argc, char **argv)
{
	struct pfs_header h = {
		.magic = PFS_PROTO_MAGIC, .version = PFS_PROTO_VERSION,
		.type = PFS_MSG_REGISTER_NODE, .payload_len = 330,
		.request_id = 42, .uid = 1000, .gid = 1000,
		.client_id = 7, .client_seq = 3,
	};
	struct pfs_capacity cap = { 1u << 30, 1u << 29, 1000, 10 };
	__u8 hb[PFS_HEADER_SIZE];

	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	mkdir(outdir, 0755);

	pfs_header_encode(&h, hb);
	write_file("header", "request", hb, sizeof(hb));
	h.flags = PFS_FLAG_REPLY;
	h.payload_len = 12;
	pfs_header_encode(&h, hb);
	write_file("header", "reply", hb, sizeof(hb));
	h.flags = PFS_FLAG_NOTIFY;
	h.type = PFS_MSG_MAP_CHANGED;
	h.request_id = 0;
	h.payload_len = PFS_MAX_PAYLOAD;
	pfs_header_encode(&h, hb);
	write_file("header", "notify-max", hb, sizeof(hb));

	{
		struct pfs_reply_status ok = { PFS_OK, "" };
		struct pfs_reply_status err = { PFS_E_UNKNOWN_NODE,
						 "no node 9" };

		SEED(reply_status, "ok", &ok);
		SEED(reply_status, "error", &err);
	}
	{
		struct pfs_auth_challenge c;
		struct pfs_auth_response r;
		struct pfs_auth_proof p;

		memset(&c, 0xa5, sizeof(c));
		memset(&r, 0x5a, sizeof(r));
		memset(&p, 0x3c, sizeof(p));
		r.role = PFS_ROLE_CLIENT;
		r.flags = PFS_AUTH_FRAME_MAC;
		p.flags = PFS_AUTH_FRAME_MAC;
		SEED(auth_challenge, "1", &c);
		SEED(auth_response, "1", &r);
		SEED(auth_proof, "1", &p);
	}
	{
		struct pfs_ping_reply p = { 3, PFS_NODE_STORAGE };
		struct pfs_register_node n = { 0, PFS_NODE_META, 8005,
					       "meta01", "10.0.0.1" };
		struct pfs_register_node_reply nr = { 5, 17 };
		struct pfs_register_target t = { 5, 0, "/data/pfs/t1" };
		struct pfs_register_target_reply tr = { 101, 1 };
		struct pfs_target_capacity tc = { 101, { 0 } };
		struct pfs_map_version mv = { 99 };
		struct pfs_get_nodes gn_all = { 0 };
		struct pfs_get_nodes gn = { PFS_NODE_STORAGE };
		struct pfs_create_pool cp = { 0, "fast" };
		struct pfs_assign_pool ap = { 101, 2 };
		struct pfs_set_target_state ts = { 101, PFS_CONS_NEEDS_RESYNC };
		struct pfs_map_changed mc = { 100, PFS_CHANGE_NODES |
						   PFS_CHANGE_STATES };
		struct pfs_entry_id e = { 0x123456789aULL, 2, 1 };

		tc.cap = cap;
		n.naddrs = 2;
		n.addrs[0] = (struct pfs_node_addr){ PFS_TRANSPORT_RDMA, 8005,
						     "10.1.0.1" };
		n.addrs[1] = (struct pfs_node_addr){ PFS_TRANSPORT_RDMA, 8005,
						     "fd00::1" };
		SEED(ping_reply, "1", &p);
		SEED(capacity, "1", &cap);
		SEED(register_node, "1", &n);
		SEED(register_node_reply, "1", &nr);
		SEED(register_target, "1", &t);
		SEED(register_target_reply, "1", &tr);
		SEED(target_capacity, "1", &tc);
		SEED(map_version, "1", &mv);
		SEED(get_nodes, "all", &gn_all);
		SEED(get_nodes, "storage", &gn);
		SEED(create_pool, "1", &cp);
		SEED(assign_pool, "1", &ap);
		SEED(set_target_state, "1", &ts);
		SEED(map_changed, "1", &mc);
		SEED(entry_id, "1", &e);
	}
	{
		struct pfs_node_info ni[2] = {
			{ 1, PFS_NODE_MGMT, 8008, PFS_REACH_ONLINE, "mgmt",
			  "mgmt.example.org", 120, { 0 } },
			{ 3, PFS_NODE_STORAGE, 8003, PFS_REACH_PROBABLY_OFFLINE,
			  "stor01", "10.0.0.3", 25000, { 0 } },
		};
		struct pfs_target_info ti[2] = {
			{ 101, 3, 1, PFS_REACH_ONLINE, PFS_CONS_GOOD,
			  PFS_CAP_NORMAL, PFS_CAP_LOW, "/data/t1", 100, { 0 } },
			{ 102, 3, 2, PFS_REACH_OFFLINE, PFS_CONS_BAD,
			  PFS_CAP_EMERGENCY, PFS_CAP_NORMAL, "/data/t2", 9000,
			  { 0 } },
		};
		struct pfs_pool_info pi[2] = { { 1, "default" },
					       { 2, "fast" } };
		struct pfs_target_capacity tcs[2] = { { 0, { 0 } },
						      { 101, { 0 } } };
		struct pfs_heartbeat hbm = { 3, 2 };
		struct pfs_heartbeat hb0 = { 4, 0 };

		ni[0].cap = cap;
		ni[1].naddrs = 1;
		ni[1].addrs[0] = (struct pfs_node_addr){ PFS_TRANSPORT_RDMA,
							 8003, "10.1.0.3" };
		ti[1].cap = cap;
		tcs[0].cap = cap;
		SEED(node_info, "1", &ni[1]);
		SEED(target_info, "1", &ti[0]);
		SEED(pool_info, "1", &pi[0]);
		seed("heartbeat", "2", &hbm, 2, tcs);
		seed("heartbeat", "0", &hb0, 0, tcs);
		seed("get_nodes_reply", "2", NULL, 2, ni);
		seed("get_nodes_reply", "0", NULL, 0, ni);
		seed("get_targets_reply", "2", NULL, 2, ti);
		seed("get_pools_reply", "2", NULL, 2, pi);
	}
	{
		struct pfs_chunk_ref cr = { { 77, 2, 1 }, 101 };
		struct pfs_chunk_io io = { { { 77, 2, 1 }, 101 }, 1 << 20,
					   512 << 10 };
		struct pfs_chunk_truncate ct = { { { 77, 2, 1 }, 101 },
						 5ull << 30 };
		struct pfs_chunk_stat cs = { 4096, 8192 };
		struct pfs_chunk_written cw = { 65536, 0x0123456789abcdefull };

		SEED(chunk_ref, "1", &cr);
		SEED(chunk_io, "1", &io);
		SEED(chunk_truncate, "1", &ct);
		SEED(chunk_stat, "1", &cs);
		SEED(chunk_written, "1", &cw);
	}
	{
		static struct pfs_attr at = { { 77, 2, 1 }, 0100644, 1000, 1000,
					      1, 123456, { 1700000000, 5 },
					      { 1700000001, 6 },
					      { 1700000002, 999999999 },
					      0, { 1700000000, 1 } };
		static struct pfs_layout lo = { 512 << 10, 1, 4,
						{ 101, 102, 103, 104 } };
		struct pfs_pattern pa = { 1 << 20, 2, 1 };
		struct pfs_set_pattern sp = { { 1, 2, 0 }, { 1 << 20, 2, 1 } };
		struct pfs_name_req nr = { { 1, 2, 0 }, "file.jpg" };
		struct pfs_create cr = { { 1, 2, 0 }, "new", 0644,
					 PFS_CREATE_EXCL };
		static struct pfs_symlink sl = { { 1, 2, 0 }, "link",
						 "../target/path" };
		static struct pfs_path pt = { "../target/path" };
		struct pfs_mknod mk = { { 1, 2, 0 }, "tty", 0020620,
					(4 << 8) | 1 };
		struct pfs_link ln = { { 77, 2, 1 }, { 1, 2, 0 }, "hard" };
		struct pfs_rename rn = { { 1, 2, 0 }, "a", { 5, 2, 0 }, "b",
					 1 };
		struct pfs_setattr sa = { { 77, 2, 1 },
					  PFS_SET_MODE | PFS_SET_SIZE, 0600,
					  0, 0, 4096, { 0, 0 }, { 0, 0 } };
		struct pfs_readdir rd = { { 1, 2, 0 }, 0, 128 };
		struct pfs_dirent de = { { 77, 2, 1 }, 3, 8, "file.jpg" };
		struct pfs_open op = { { 77, 2, 1 }, 0 };
		struct pfs_open_name on = { { 1, 2, 0 }, "file.jpg", 0 };
		struct pfs_xattr_req xr = { { 77, 2, 1 }, "user.tag", 1 };
		struct pfs_statfs sf = { { 1000, 500, 100, 50 }, 10, 90 };
		struct pfs_timespec ts = { 1700000000, 123 };
		struct pfs_dirent des[2] = { { { 5, 2, 0 }, 1, 4, "." },
					     { { 77, 2, 1 }, 3, 8, "f" } };
		struct pfs_dir_page pg = { 3, 1, 2 };

		SEED(timespec, "1", &ts);
		SEED(attr, "1", &at);
		SEED(layout, "1", &lo);
		SEED(pattern, "1", &pa);
		SEED(set_pattern, "1", &sp);
		SEED(name_req, "1", &nr);
		SEED(create, "1", &cr);
		SEED(symlink, "1", &sl);
		SEED(mknod, "1", &mk);
		SEED(path, "1", &pt);
		SEED(link, "1", &ln);
		SEED(rename, "1", &rn);
		SEED(setattr, "1", &sa);
		SEED(readdir, "1", &rd);
		SEED(dirent, "1", &de);
		SEED(open, "1", &op);
		SEED(open_name, "1", &on);
		SEED(xattr_req, "1", &xr);
		SEED(statfs, "1", &sf);
		seed("dir_page", "2", &pg, 2, des);
		{
			struct pfs_dirent_plus dps[2] = {
				{ { { 5, 2, 0 }, 1, 4, "." }, 0, { { 0 } } },
				{ { { 77, 2, 1 }, 3, 8, "f" }, 1, at },
			};

			SEED(dirent_plus, "1", &dps[1]);
			seed("dir_page_plus", "2", &pg, 2, dps);
		}
	}
	{
		struct pfs_lock_req lr = { { 77, 2, 1 }, PFS_LOCK_POSIX,
					   PFS_LOCK_WRITE, 100, PFS_LOCK_EOF,
					   0xffff888012345678ull, 4242 };
		struct pfs_lock_req fl = { { 77, 2, 1 }, PFS_LOCK_FLOCK,
					   PFS_LOCK_UNLOCK, 0, PFS_LOCK_EOF,
					   7, 1 };
		struct pfs_lock_conflict lc = { PFS_LOCK_READ, 0, 4095, 4242,
						0x1234abcd5678ef00ull };
		struct pfs_lock_conflict none = { PFS_LOCK_UNLOCK, 0, 0, 0,
						  0 };
		struct pfs_session se = { 30000 };

		SEED(lock_req, "posix", &lr);
		SEED(lock_req, "flock", &fl);
		SEED(lock_conflict, "1", &lc);
		SEED(lock_conflict, "none", &none);
		SEED(session, "1", &se);
		struct pfs_invalidate inv = { 2, { { 2, 1, 0 }, { 77, 1, 3 } } };

		SEED(invalidate, "2", &inv);
	}
	{
		struct pfs_mkdir_on mo = { { 1, 1, 1 }, "data", 0755, 2, 3 };
		struct pfs_mkdir_detached md = { { 1, 1, 1 }, 02755, 1000,
						 100, { 512 << 10, 4, 1, 0, 3 },
						 3, 1 };
		static struct pfs_dir_shards ds = {
			2, { { 9, 1, 1 }, { 10, 2, 1 } } };
		struct pfs_rmdir_detached rd = { { 9, 2, 1 },
						 PFS_RMDIR_PREPARE };
		static struct pfs_entry_check ec = {
			2, { { 9, 2, 1 }, { 10, 2, 1 } } };
		static struct pfs_entry_states es = {
			2, { PFS_ENTRY_PRESENT, PFS_ENTRY_PENDING } };
		struct pfs_list_detached ld = { 9 };
		static struct pfs_detached_page dp = {
			1, 1, { { { 9, 2, 1 }, { 1, 1, 1 },
				  PFS_DETACHED_CREATED } } };

		SEED(mkdir_on, "1", &mo);
		SEED(mkdir_detached, "1", &md);
		SEED(dir_shards, "2", &ds);
		SEED(rmdir_detached, "1", &rd);
		SEED(entry_check, "2", &ec);
		SEED(entry_states, "2", &es);
		SEED(list_detached, "1", &ld);
		SEED(detached_page, "1", &dp);
		struct pfs_move mv = { { 9, 2, 1 }, { 1, 1, 1 }, { 4, 2, 1 },
				       PFS_MOVE_PREPARE };
		struct pfs_remote_link rl = { { 4, 2, 1 }, "moved",
					      { 9, 1, 1 }, 8, 0 };

		SEED(move, "1", &mv);
		SEED(remote_link, "1", &rl);
	}
	{
		struct pfs_stats st = { 3, PFS_NODE_STORAGE, 123456789, 2 };
		struct pfs_msg_stats ms[2] = {
			{ PFS_MSG_CHUNK_WRITE, 1000, 2, 1000ull << 20, 48000 },
			{ 0, 5, 5, 240, 600 } };
		static struct pfs_chunk_unlink_many um = {
			101, 2, { { 77, 2, 1 }, { 78, 2, 1 } } };
		static struct pfs_close_many clm = {
			2, { { 77, 1, 1 }, { 78, 1, 3 } } };
		struct pfs_chunk_list cl = { 101, { 17, 0x7fffffffffffull },
					     1024 };
		struct pfs_chunk_page cp = { { 256, 0 }, 1, 2 };
		struct pfs_chunk_entry ce[2] = { { { 77, 2, 1 }, 1 << 20 },
						 { { 78, 2, 1 }, 0 } };

		seed("stats", "2", &st, 2, ms);
		SEED(msg_stats, "1", &ms[0]);
		SEED(chunk_list, "1", &cl);
		SEED(chunk_unlink_many, "2", &um);
		SEED(close_many, "2", &clm);
		seed("chunk_page", "2", &cp, 2, ce);
		SEED(chunk_entry, "1", &ce[0]);
	}
	{
		struct pfs_client_token t;
		struct pfs_client_bound b = { 0x1122334455667788ull };

		memset(&t, 0x77, sizeof(t));
		struct pfs_chunk_synced sy = { 0x0123456789abcdefull };

		SEED(client_token, "1", &t);
		SEED(client_bound, "1", &b);
		SEED(chunk_synced, "1", &sy);
	}
	{
		struct pfs_fallocate fa = { { 77, 2, 1 },
			PFS_FALLOC_PUNCH_HOLE | PFS_FALLOC_KEEP_SIZE,
			100 << 10, 3 << 20 };
		struct pfs_chunk_falloc cf = { { { 77, 2, 1 }, 101 },
			PFS_FALLOC_ZERO_RANGE, 1 << 20, 512 << 10 };
		struct pfs_chunk_seek sk = { { { 77, 2, 1 }, 101 }, 1 << 20,
			PFS_SEEK_DATA };
		struct pfs_chunk_seek_reply sr = { 1, 3 << 20 };
		struct pfs_chunk_copy cc = { { { 77, 2, 1 }, 101 },
			{ 78, 2, 1 }, 1 << 20, 5 << 20, 512 << 10 };

		SEED(fallocate, "1", &fa);
		SEED(chunk_falloc, "1", &cf);
		SEED(chunk_seek, "1", &sk);
		SEED(chunk_seek_reply, "1", &sr);
		SEED(chunk_copy, "1", &cc);
	}
	{
		struct pfs_bulk inl = { .place = PFS_BULK_INLINE,
					.in_len = 4096 };
		struct pfs_bulk rdma = {
			.place = PFS_BULK_RDMA, .in_len = 1 << 20,
			.out_len = 1 << 20, .nin = 1, .nout = 2,
			.in = { { 0x7f0000000000ull, 0x1234, 1 << 20 } },
			.out = { { 0x7f0000100000ull, 0x5678, 1 << 19 },
				 { 0x7f0000200000ull, 0x9abc, 1 << 19 } },
		};

		SEED(bulk, "1", &inl);
		SEED(bulk, "2", &rdma);
	}
	{
		struct pfs_transport_stats ts = { 2, 100, 4096, 90, 2048, 5,
						  5 << 20, 7, 7 << 20, 0, 12, 0 };

		SEED(transport_stats, "1", &ts);
	}
	return 0;
}
