/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The PFS wire protocol: frame header, message type registry, status codes,
 * identifiers and message bodies. Compiled unchanged by the kernel client
 * and the C++ servers; this is the only definition of the protocol.
 *
 * A frame is a 48-byte little-endian header followed by payload_len bytes.
 * A reply carries PFS_FLAG_REPLY, the request's type and request_id, and a
 * payload that starts with a struct pfs_reply_status; the reply body
 * follows only when the status is PFS_OK.
 */
#ifndef PFS_PROTO_H
#define PFS_PROTO_H

#include "pfs_xdr.h"
#include "pfs_stripe.h"

#define PFS_PROTO_MAGIC		0x31534650u	/* "PFS1" as LE bytes */
/* 3: pfs_attr carries rdev and btime; MKNOD; special-file DT_ types;
 * FALLOCATE, GET_LAYOUT and the chunk messages of fallocate, seek, copy
 * 4: bulk data beside the body (PFS_FLAG_BULK, struct pfs_bulk); nodes
 * list more addresses (struct pfs_node_addr: RDMA rails)
 * 5: pfs_attr carries blocks, the metadata server's st_blocks
 * 6: READDIR_PLUS, entries with their attributes; pfs_attr.xattrs
 * 8: inline files (pfs_pattern.inline_max, PFS_INLINE_TARGET,
 * PFS_FLAG_INLINE_LAYOUTS, PFS_E_MOVED)
 * 9: frame MACs leave bulk data to PFS_AUTH_DATA_MAC; an open's inline
 * content is the bulk data of its reply
 * 10: the inline store records a write's size and mtime and answers with
 * the file's attributes (struct pfs_inline_written)
 * 11: read-only opens given an inline file's whole content need no CLOSE
 * (PFS_FLAG_UNTRACKED)
 * 12: striped directories (pfs_pattern.dir_stripes, pfs_mkdir_on.stripes,
 * pfs_mkdir_detached's shard fields, DIR_SHARDS, PFS_E_WRONG_SHARD, shard
 * indexes in readdir cookies) */
#define PFS_PROTO_VERSION	12
#define PFS_HEADER_SIZE		48
#define PFS_MAX_PAYLOAD		(16u << 20)

#define PFS_DEFAULT_MGMTD_PORT	8008
#define PFS_DEFAULT_META_PORT	8005
#define PFS_DEFAULT_STORAGE_PORT 8003

#define PFS_AUTH_NONCE_LEN	32
#define PFS_AUTH_MAC_LEN	32	/* HMAC-SHA256 */
#define PFS_CLIENT_TOKEN_LEN	32
/*
 * With PFS_AUTH_FRAME_MAC, every frame after the handshake is followed by
 * this many bytes (not counted in payload_len): HMAC-SHA256 under the
 * connection's session key over the direction, the frame's sequence
 * number in that direction, the header and the payload, truncated.
 */
#define PFS_FRAME_MAC_LEN	16

#define PFS_ALIAS_MAX		64	/* all *_MAX include the NUL */
#define PFS_HOST_MAX		256
#define PFS_TARGET_PATH_MAX	256
#define PFS_POOL_NAME_MAX	64
#define PFS_STATUS_MSG_MAX	256
#define PFS_MAX_LIST		65536	/* elements in one list reply */
#define PFS_MAX_IO		(8u << 20)	/* bytes in one chunk read/write */
#define PFS_NAME_MAX		256	/* a directory entry's name, NUL included */
#define PFS_PATH_MAX		4096	/* a symlink's target, NUL included */
#define PFS_XATTR_VALUE_MAX	65536
#define PFS_READDIR_MAX		4096	/* entries in one READDIR reply */
#define PFS_MAX_FILE_OFFSET	(1ull << 62)

enum pfs_flags {
	PFS_FLAG_REPLY = 1u << 0,
	PFS_FLAG_NOTIFY = 1u << 1,	/* unsolicited push, request_id 0 */
	/*
	 * request: the payload starts with struct pfs_groups, the caller's
	 * supplementary groups (header.gid is its primary group)
	 */
	PFS_FLAG_GROUPS = 1u << 2,
	/*
	 * bulk data beside the body, never inside it. A request's payload
	 * starts with struct pfs_bulk (then the groups block, if any, and
	 * the body); the reply's, which carries the flag too, with a __u32
	 * count of the data bytes it brings (then the status and the body).
	 * Where the data travels is the transport's business, named in
	 * pfs_bulk.place: on a byte stream (INLINE) it ends the payload of
	 * the request or reply; over RDMA the request names memory the
	 * requester registered for this request alone, and the server reads
	 * the request's data from it and writes the reply's data into it
	 * before it answers.
	 */
	PFS_FLAG_BULK = 1u << 3,
	/*
	 * request (CHUNK_READ): the reply's bulk data covers the whole length
	 * asked, zeros where the chunk file has no data (a hole, past its
	 * end), instead of stopping short for the requester to zero the rest:
	 * it cannot write them with its CPU (GPU memory).
	 */
	PFS_FLAG_ZERO_FILL = 1u << 4,
	/*
	 * request to a metadata server: the sender follows layouts of inline
	 * files (PFS_INLINE_TARGET) and answers of PFS_E_MOVED. Without it,
	 * a file is moved to its storage targets before its layout is given
	 * out, and new files are never inline.
	 */
	PFS_FLAG_INLINE_LAYOUTS = 1u << 5,
	/*
	 * request (OPEN, OPEN_NAME, CREATE that opens; with INLINE_LAYOUTS
	 * and a bulk block whose out_len is the most the client takes): the
	 * reply to a read-only open of an inline file no larger than out_len
	 * brings the file's content as its bulk data: all of it, as many
	 * bytes as the file's size in the reply (fewer: no content). The
	 * file is then read in one round trip.
	 */
	PFS_FLAG_INLINE_CONTENT = 1u << 6,
	/*
	 * request (with INLINE_CONTENT): the client sends no CLOSE for the
	 * open if the server gives it the whole content. reply: it did, and
	 * did not count the open (an unlinked file's data is then freed at
	 * once: the client holds what it read, and counts its open with an
	 * OPEN by id before it unlinks the file itself).
	 */
	PFS_FLAG_UNTRACKED = 1u << 7,
};
#define PFS_FLAGS_KNOWN (PFS_FLAG_REPLY | PFS_FLAG_NOTIFY | PFS_FLAG_GROUPS | \
			 PFS_FLAG_BULK | PFS_FLAG_ZERO_FILL |		\
			 PFS_FLAG_INLINE_LAYOUTS | PFS_FLAG_INLINE_CONTENT | \
			 PFS_FLAG_UNTRACKED)

enum pfs_bulk_place {
	PFS_BULK_INLINE = 0,	/* the bytes are in the frame's payload */
	PFS_BULK_RDMA = 1,	/* moved by RDMA READ/WRITE of the server */
};

/* Memory of the requester, registered for one request (RDMA). */
struct pfs_bulk_seg {
	__u64 addr;
	__u32 rkey;
	__u32 length;
};

/* Segments one direction of a request's bulk data may be spread over. */
#define PFS_BULK_SEGS_MAX	16

/*
 * The bulk data of a request: in_len bytes come with it (a write's data),
 * and its reply may bring up to out_len (a read's). Each is at most
 * PFS_MAX_IO. With PFS_BULK_RDMA, the nin segments of `in` hold the
 * request's data and the nout of `out` take the reply's, in order; their
 * lengths add up to exactly in_len and out_len (none present for a length
 * of 0, none empty), and a server never touches a byte outside them.
 */
struct pfs_bulk {
	__u8 place;		/* enum pfs_bulk_place */
	__u32 in_len;
	__u32 out_len;
	__u8 nin;
	__u8 nout;
	struct pfs_bulk_seg in[PFS_BULK_SEGS_MAX];
	struct pfs_bulk_seg out[PFS_BULK_SEGS_MAX];
};
#define PFS_BULK_MAX_SIZE	(1 + 4 + 4 + 2 + 2 * PFS_BULK_SEGS_MAX * 16)

/*
 * Supplementary groups a request carries: the servers check permissions
 * with header.uid, header.gid and these (a caller in more groups is
 * checked with the first PFS_GROUPS_MAX, as NFS's AUTH_SYS does with 16).
 */
#define PFS_GROUPS_MAX		64

/*
 * Roles. Each connection proves one in its handshake, with a key derived
 * from the cluster secret for that role (see common/cpp/auth_crypto.hpp),
 * and may send only the requests its role allows: a client cannot send
 * what servers send each other, nor change the map.
 */
enum pfs_role {
	PFS_ROLE_CLIENT = 1,	/* a mount, libpfs, pfs-ctl with a client key */
	PFS_ROLE_ADMIN = 2,	/* pfs-ctl with the admin key: also the map */
	PFS_ROLE_SERVER = 3,	/* pfs-mgmtd, pfs-meta, pfs-storage */
};
#define PFS_ROLE_MAX PFS_ROLE_SERVER

/* Who may send a message as a request: a mask of (1 << enum pfs_role). */
#define PFS_SENT_BY_NONE	0u	/* the handshake, notifications */
#define PFS_SENT_BY_SERVER	(1u << PFS_ROLE_SERVER)
#define PFS_SENT_BY_ADMIN	(PFS_SENT_BY_SERVER | (1u << PFS_ROLE_ADMIN))
#define PFS_SENT_BY_ANY		(PFS_SENT_BY_ADMIN | (1u << PFS_ROLE_CLIENT))

/*
 * Every message, once: X(NAME, type number, who may send it). The enum,
 * the names in logs and the servers' role checks derive from this list.
 */
#define PFS_MESSAGES(X)							\
	/* connection */						\
	X(AUTH_CHALLENGE, 1, PFS_SENT_BY_NONE)	/* server -> client, first */ \
	X(AUTH_RESPONSE, 2, PFS_SENT_BY_NONE)	/* reply proves the server */ \
	X(PING, 3, PFS_SENT_BY_ANY)					\
	X(GET_STATS, 4, PFS_SENT_BY_ANY)	/* -> stats, list, transport */ \
	X(BIND_CLIENT, 5, PFS_SENT_BY_ANY)	/* pfs_client_token */	\
	X(SYNC_ALL, 6, PFS_SENT_BY_ANY)	/* all answered before, durable */ \
	/* management */						\
	X(REGISTER_NODE, 100, PFS_SENT_BY_ANY)	/* servers: by servers */ \
	X(REGISTER_TARGET, 101, PFS_SENT_BY_SERVER)			\
	X(HEARTBEAT, 102, PFS_SENT_BY_SERVER)				\
	X(GET_NODES, 103, PFS_SENT_BY_ANY)				\
	X(GET_TARGETS, 104, PFS_SENT_BY_ANY)				\
	X(GET_POOLS, 105, PFS_SENT_BY_ANY)				\
	X(CREATE_POOL, 106, PFS_SENT_BY_ADMIN)				\
	X(ASSIGN_POOL, 107, PFS_SENT_BY_ADMIN)				\
	X(SET_TARGET_STATE, 108, PFS_SENT_BY_ADMIN)			\
	X(SUBSCRIBE, 109, PFS_SENT_BY_ANY)				\
	X(MAP_CHANGED, 110, PFS_SENT_BY_NONE)	/* notify */		\
	/* metadata: the namespace, checked against the caller's uid/gids */ \
	X(LOOKUP, 200, PFS_SENT_BY_ANY)		/* pfs_name_req -> attr */ \
	X(GETATTR, 201, PFS_SENT_BY_ANY)	/* entry_id -> attr */	\
	X(CREATE, 202, PFS_SENT_BY_ANY)		/* -> attr + layout */	\
	X(MKDIR, 203, PFS_SENT_BY_ANY)		/* pfs_create -> attr */ \
	X(SYMLINK, 204, PFS_SENT_BY_ANY)	/* -> attr */		\
	X(READLINK, 205, PFS_SENT_BY_ANY)	/* entry_id -> pfs_path */ \
	X(LINK, 206, PFS_SENT_BY_ANY)		/* pfs_link -> attr */	\
	X(UNLINK, 207, PFS_SENT_BY_ANY)		/* pfs_name_req */	\
	X(RMDIR, 208, PFS_SENT_BY_ANY)		/* pfs_name_req */	\
	X(RENAME, 209, PFS_SENT_BY_ANY)		/* pfs_rename */	\
	X(SETATTR, 210, PFS_SENT_BY_ANY)	/* pfs_setattr -> attr */ \
	X(READDIR, 211, PFS_SENT_BY_ANY)	/* -> dir_page + dirents */ \
	X(OPEN, 212, PFS_SENT_BY_ANY)		/* -> attr + layout */	\
	X(CLOSE, 213, PFS_SENT_BY_ANY)		/* entry_id */		\
	X(GETXATTR, 214, PFS_SENT_BY_ANY)	/* xattr_req -> value */ \
	X(SETXATTR, 215, PFS_SENT_BY_ANY)	/* xattr_req + value */	\
	X(LISTXATTR, 216, PFS_SENT_BY_ANY)	/* -> names, NUL-ended */ \
	X(REMOVEXATTR, 217, PFS_SENT_BY_ANY)	/* pfs_xattr_req */	\
	X(STATFS, 218, PFS_SENT_BY_ANY)		/* -> pfs_statfs */	\
	X(GET_PATTERN, 219, PFS_SENT_BY_ANY)	/* entry_id -> pattern */ \
	X(SET_PATTERN, 220, PFS_SENT_BY_ANY)	/* owner or root */	\
	/* locks and sessions (header.client_id, see pfs_lock_req) */	\
	X(LOCK, 221, PFS_SENT_BY_ANY)		/* EAGAIN on conflict */ \
	X(GETLK, 222, PFS_SENT_BY_ANY)		/* -> pfs_lock_conflict */ \
	X(SESSION_RENEW, 223, PFS_SENT_BY_ANY)	/* -> pfs_session */	\
	X(SESSION_END, 224, PFS_SENT_BY_ANY)				\
	X(INVALIDATE, 225, PFS_SENT_BY_NONE)	/* notify */		\
	X(OPEN_NAME, 226, PFS_SENT_BY_ANY)	/* -> attr [+ layout] */ \
	X(MKDIR_ON, 227, PFS_SENT_BY_ANY)	/* pfs_mkdir_on -> attr */ \
	/* between metadata servers (and fsck's LIST_DETACHED) */	\
	X(MKDIR_DETACHED, 228, PFS_SENT_BY_SERVER)			\
	X(RMDIR_DETACHED, 229, PFS_SENT_BY_ADMIN)	/* and fsck --repair */ \
	X(ENTRY_CHECK, 230, PFS_SENT_BY_ADMIN)	/* and fsck */	\
	X(LIST_DETACHED, 231, PFS_SENT_BY_ADMIN)			\
	X(MOVE, 232, PFS_SENT_BY_SERVER)				\
	X(REMOTE_LINK, 233, PFS_SENT_BY_SERVER)				\
	X(ENTRY_DROP, 234, PFS_SENT_BY_SERVER)				\
	X(INVALIDATE_ALL, 235, PFS_SENT_BY_NONE) /* notify */		\
	X(CLOSE_MANY, 236, PFS_SENT_BY_ANY)	/* pfs_close_many */	\
	X(FALLOCATE, 237, PFS_SENT_BY_ANY)	/* pfs_fallocate -> attr */ \
	X(GET_LAYOUT, 238, PFS_SENT_BY_ANY)	/* entry_id -> layout */ \
	X(MKNOD, 239, PFS_SENT_BY_ANY)		/* pfs_mknod -> attr */	\
	X(READDIR_PLUS, 240, PFS_SENT_BY_ANY)	/* -> dir_page + dirent_plus */ \
	X(DIR_SHARDS, 241, PFS_SENT_BY_ANY)	/* entry_id -> pfs_dir_shards */ \
	/* storage: chunk files, one per file per target */		\
	X(CHUNK_WRITE, 300, PFS_SENT_BY_ANY)	/* chunk_io + data */	\
	X(CHUNK_READ, 301, PFS_SENT_BY_ANY)	/* chunk_io -> data */	\
	X(CHUNK_TRUNCATE, 302, PFS_SENT_BY_ADMIN) /* cut, durably */	\
	X(CHUNK_SYNC, 303, PFS_SENT_BY_ANY)	/* ref -> chunk_synced */ \
	X(CHUNK_UNLINK, 304, PFS_SENT_BY_ADMIN)	/* pfs_chunk_ref */	\
	X(CHUNK_STAT, 305, PFS_SENT_BY_ANY)	/* -> pfs_chunk_stat */	\
	X(CHUNK_LIST, 306, PFS_SENT_BY_ADMIN)	/* -> page + entries */	\
	X(CHUNK_UNLINK_MANY, 307, PFS_SENT_BY_ADMIN)			\
	X(CHUNK_FALLOCATE, 308, PFS_SENT_BY_ADMIN) /* from FALLOCATE */ \
	X(CHUNK_SEEK, 309, PFS_SENT_BY_ANY)	/* -> pfs_chunk_seek_reply */ \
	X(CHUNK_COPY, 310, PFS_SENT_BY_ANY)	/* -> chunk_written */

enum pfs_msg_type {
#define PFS_MSG_ENUM(name, number, sent_by) PFS_MSG_##name = number,
	PFS_MESSAGES(PFS_MSG_ENUM)
#undef PFS_MSG_ENUM
};

/*
 * Notes on some messages:
 *
 * BIND_CLIENT: a connection acts for a client id only once it has shown
 * the id's token; every other request of a client or admin connection
 * carrying a client id it did not bind is refused (EPERM).
 *
 * INVALIDATE_ALL (notify, empty): the server stopped tracking what it
 * told this client (its table was full, or notices could not be
 * delivered): everything the client caches from it may be stale.
 *
 * READDIR_PLUS is READDIR (struct pfs_readdir) whose entries carry their
 * attributes (readdirplus): a listing followed by a stat of every entry
 * costs one request per page, not one per entry. Each entry given with
 * attributes is watched for the client as if it had been looked up.
 *
 * OPEN_NAME is LOOKUP and OPEN in one: a regular file is opened (counted
 * as OPEN counts it) and its layout follows the attributes; any other type
 * is only looked up (pfs_attr alone, nothing opened).
 *
 * Directories on other metadata servers. MKDIR_ON is MKDIR with the server
 * named (0: the server picks). The rest go between metadata servers: the
 * parent's owner has the chosen server make a detached directory (one
 * whose entry lives with another server), prepares and commits its removal;
 * the detached directory's owner asks the parent's owner whether an entry
 * still names it (ENTRY_CHECK), to settle what a crash left half done;
 * LIST_DETACHED is for fsck. RENAME to a directory of another server moves
 * the entry: the source's server has the inode's owner record the move
 * (MOVE PREPARE), the target's server add the entry (REMOTE_LINK), drops
 * its own entry, then has the owner record the new place (MOVE COMMIT).
 * The owner settles a move a crash cut short by asking both servers
 * (ENTRY_CHECK) and, where both name it, has the source's server drop its
 * entry (ENTRY_DROP). RMDIR_DETACHED also removes a file whose entry is on
 * another server.
 *
 * CLOSE_MANY closes several entries of this server, as pfs.ko gathers the
 * closes of a few milliseconds. Every one is closed; the reply carries the
 * first error.
 *
 * FALLOCATE (fallocate(2) of a file) is checked like a write (W_OK) by the
 * file's metadata server, which applies it to every chunk file the range
 * touches (CHUNK_FALLOCATE, a server's message, like CHUNK_TRUNCATE) and
 * then, without PFS_FALLOC_KEEP_SIZE, raises the size to the range's end.
 * GET_LAYOUT answers a file's layout without opening it (st_blocks and
 * SEEK_DATA of a file not opened yet).
 *
 * Striped directories. A directory made with stripes > 1 (MKDIR_ON, or a
 * parent whose pattern has dir_stripes > 1) keeps its entries in that
 * many shards on different metadata servers: shard 0 is the directory
 * itself, the others are detached directories of other servers whose
 * parent is the directory (pfs_mkdir_detached.shard_index). A name lives
 * in shard pfs_dir_shard(name): the client sends LOOKUP, CREATE, MKDIR,
 * UNLINK, RENAME, ... for it to that shard (the directory's id replaced
 * by the shard's), and a server given a name of another shard answers
 * PFS_E_WRONG_SHARD. DIR_SHARDS lists a directory's shards (one, itself,
 * when it is not striped); the list never changes while it exists.
 * READDIR goes shard by shard: a cookie's bits from
 * PFS_COOKIE_SHARD_SHIFT up name the shard it belongs to, and a shard's
 * last page ends with the next shard's first cookie and eof 0.
 */

/* Mask of the roles that may send type as a request; 0 for none. */
__u32 pfs_msg_sent_by(__u16 type);

/*
 * Status codes on the wire: 0 is success, 1..999 are Linux errno numbers
 * (asm-generic values), 1000 and above are PFS's own.
 */
enum pfs_status {
	PFS_OK = 0,
	PFS_E_PROTO = 1000,		/* malformed or unexpected message */
	PFS_E_AUTH = 1001,		/* authentication failed */
	PFS_E_VERSION = 1002,		/* protocol version not spoken */
	PFS_E_UNKNOWN_MSG = 1003,	/* message type not served here */
	PFS_E_UNKNOWN_NODE = 1004,
	PFS_E_UNKNOWN_TARGET = 1005,
	PFS_E_UNKNOWN_POOL = 1006,
	PFS_E_INTERNAL = 1007,
	/*
	 * A chunk request for an inline file that is not (or no longer)
	 * inline: its data moved to its storage targets. Fetch the layout
	 * again (GET_LAYOUT) and send the request where it now says.
	 */
	PFS_E_MOVED = 1008,
	/*
	 * A name sent to a shard of a striped directory that is not the
	 * name's (pfs_dir_shard), or a READDIR cookie of another shard: ask
	 * DIR_SHARDS and send the request to the right shard.
	 */
	PFS_E_WRONG_SHARD = 1009,
};

const char *pfs_status_name(__s32 status);
/* A wire status as a negative errno (0 for PFS_OK). */
int pfs_status_to_errno(__s32 status);
/* Message type name for logs, "?" when unknown. */
const char *pfs_msg_name(__u16 type);

struct pfs_header {
	__u32 magic;
	__u16 version;
	__u16 type;
	__u32 flags;
	__u32 payload_len;
	__u64 request_id;
	__u32 uid;
	__u32 gid;
	__u64 client_id;	/* 0 when the sender is not a registered client */
	/*
	 * Requests: per-client sequence of mutating requests. A metadata
	 * server's reply: the epoch of the client's session there (0: none),
	 * which changes when the session is lost (expired, server restarted).
	 */
	__u64 client_seq;
};

/* Writes exactly PFS_HEADER_SIZE bytes. */
void pfs_header_encode(const struct pfs_header *h, __u8 *out);
/*
 * Reads and validates a header from len bytes: -EBADMSG when short or the
 * magic is wrong, -EPROTONOSUPPORT for another version, -EMSGSIZE when
 * payload_len exceeds PFS_MAX_PAYLOAD, -EBADMSG for unknown flag bits.
 */
int pfs_header_decode(struct pfs_header *h, const __u8 *buf, __u32 len);

/* ---- identifiers and enumerations ---- */

typedef __u32 pfs_node_id;	/* 0 = unassigned */
typedef __u32 pfs_target_id;	/* 0 = unassigned / the node itself */
typedef __u32 pfs_pool_id;	/* 1 = the default pool */

#define PFS_DEFAULT_POOL_ID 1

enum pfs_node_type {
	PFS_NODE_MGMT = 1,
	PFS_NODE_META = 2,
	PFS_NODE_STORAGE = 3,
	PFS_NODE_CLIENT = 4,
};

enum pfs_reachability {
	PFS_REACH_ONLINE = 0,
	PFS_REACH_PROBABLY_OFFLINE = 1,
	PFS_REACH_OFFLINE = 2,
};

enum pfs_consistency {
	PFS_CONS_GOOD = 0,
	PFS_CONS_NEEDS_RESYNC = 1,
	PFS_CONS_BAD = 2,
};

enum pfs_cap_class {
	PFS_CAP_NORMAL = 0,
	PFS_CAP_LOW = 1,
	PFS_CAP_EMERGENCY = 2,
};

/* Reasons carried by PFS_MSG_MAP_CHANGED, as a bit mask. */
enum pfs_map_change {
	PFS_CHANGE_NODES = 1u << 0,
	PFS_CHANGE_TARGETS = 1u << 1,
	PFS_CHANGE_POOLS = 1u << 2,
	PFS_CHANGE_STATES = 1u << 3,
	PFS_CHANGE_CAPACITY = 1u << 4,
};

/*
 * A file system entry (file or directory): the metadata node that owns its
 * inode and a number unique on that node; generation tells reuse apart.
 */
struct pfs_entry_id {
	__u64 ino;
	__u32 owner_node;
	__u32 generation;
};

/* The root directory, on the first metadata server registered. */
#define PFS_ROOT_INO		1
#define PFS_ROOT_GENERATION	1

/* ---- message bodies ---- */

struct pfs_reply_status {
	__s32 status;
	char message[PFS_STATUS_MSG_MAX];	/* only on the wire when != OK */
};

struct pfs_auth_challenge {
	__u8 nonce[PFS_AUTH_NONCE_LEN];
};

enum pfs_auth_flags {
	PFS_AUTH_FRAME_MAC = 1u << 0,	/* every later frame carries a MAC */
	/*
	 * The MACs cover bulk data too. Without it a frame's MAC leaves out
	 * the bulk data that ends a frame (a request's data after its body,
	 * a bulk reply's after its body), as RDMA moves that data outside
	 * frames: the header (its payload_len), the bulk block and the body
	 * stay covered. Asking for it asks for PFS_AUTH_FRAME_MAC as well.
	 */
	PFS_AUTH_DATA_MAC = 1u << 1,
};
#define PFS_AUTH_FLAGS_KNOWN (PFS_AUTH_FRAME_MAC | PFS_AUTH_DATA_MAC)

/*
 * The client's answer to the challenge: the role it claims and proves
 * with that role's key, and what it asks of the connection.
 */
struct pfs_auth_response {
	__u8 nonce[PFS_AUTH_NONCE_LEN];		/* the client's own */
	__u8 mac[PFS_AUTH_MAC_LEN];		/* proves the client */
	__u8 role;				/* enum pfs_role */
	__u8 flags;				/* enum pfs_auth_flags asked */
};

struct pfs_auth_proof {
	__u8 mac[PFS_AUTH_MAC_LEN];		/* proves the server */
	__u8 flags;				/* what the connection uses */
};

/*
 * BIND_CLIENT: the token whose hash is the client id (see
 * pfs_client_id_of in common/cpp and kmod/net/auth.c): only who holds the
 * token can act as that client. The reply is struct pfs_client_bound.
 */
struct pfs_client_token {
	__u8 token[PFS_CLIENT_TOKEN_LEN];
};

struct pfs_client_bound {
	__u64 client_id;
};

/* What PFS_FLAG_GROUPS puts in front of a request's payload. */
struct pfs_groups {
	__u32 count;		/* <= PFS_GROUPS_MAX */
	__u32 gids[PFS_GROUPS_MAX];
};

struct pfs_ping_reply {
	__u32 node_id;
	__u16 node_type;
};

/*
 * GET_STATS (every daemon): what the server has served since it started,
 * per message type. Rates come from two samples: the difference of the
 * counters over the difference of uptime_ms. GET_STATS itself is not
 * counted, so watching a server does not show up in what it reports.
 * The reply is this, then count x struct pfs_msg_stats.
 */
struct pfs_stats {
	__u32 node_id;
	__u16 node_type;
	__u64 uptime_ms;
	__u32 count;
};

#define PFS_STATS_TYPES_MAX	1024

/*
 * What a process moved over RDMA since it started: GET_STATS's reply ends
 * with it (after the list).
 */
struct pfs_transport_stats {
	__u64 rdma_connections;		/* established, ever */
	__u64 sends, send_bytes;	/* messages (frames) */
	__u64 recvs, recv_bytes;
	__u64 reads, read_bytes;	/* RDMA READ it issued */
	__u64 writes, write_bytes;	/* RDMA WRITE it issued */
	__u64 bounce_bytes;		/* copied to reach registered memory */
	__u64 remote_regions;		/* memory lent for requests, ever */
	__u64 remote_regions_now;	/* ... and still lent */
};

struct pfs_msg_stats {
	__u16 type;		/* 0: requests of types the server does not serve */
	__u64 requests;
	__u64 errors;		/* replies with a status other than PFS_OK */
	__u64 bytes_in;		/* request frames, headers included */
	__u64 bytes_out;	/* reply frames, headers included */
};

struct pfs_capacity {
	__u64 bytes_total;
	__u64 bytes_free;
	__u64 inodes_total;
	__u64 inodes_free;
};

/*
 * Where else a node serves requests, beside host:port over TCP: one entry
 * per rail (an RDMA interface's address), in the order the node lists them.
 */
#define PFS_NODE_ADDRS_MAX	8
#define PFS_ADDR_MAX		48	/* an IPv4 or IPv6 address as text */

enum pfs_transport {
	PFS_TRANSPORT_TCP = 0,
	PFS_TRANSPORT_RDMA = 1,
};

struct pfs_node_addr {
	__u8 transport;		/* enum pfs_transport */
	__u16 port;
	char addr[PFS_ADDR_MAX];
};

struct pfs_register_node {
	__u32 node_id;		/* the id the node had, or 0 */
	__u16 node_type;
	__u16 port;		/* where the node serves requests, 0 = none */
	char alias[PFS_ALIAS_MAX];
	char host[PFS_HOST_MAX];
	__u8 naddrs;
	struct pfs_node_addr addrs[PFS_NODE_ADDRS_MAX];
};

struct pfs_register_node_reply {
	__u32 node_id;
	__u64 map_version;
};

struct pfs_register_target {
	__u32 node_id;
	__u32 target_id;	/* the id the target had, or 0 */
	char path[PFS_TARGET_PATH_MAX];
};

struct pfs_register_target_reply {
	__u32 target_id;
	__u32 pool_id;
};

/* Followed by count x struct pfs_target_capacity. */
struct pfs_heartbeat {
	__u32 node_id;
	__u32 count;
};

struct pfs_target_capacity {
	__u32 target_id;	/* 0: the node's own store (metadata) */
	struct pfs_capacity cap;
};

struct pfs_map_version {
	__u64 map_version;
};

struct pfs_get_nodes {
	__u16 node_type;	/* 0 = all */
};

/* List replies: a u32 count (pfs_x_count) then the elements. */
struct pfs_node_info {
	__u32 node_id;
	__u16 node_type;
	__u16 port;
	__u8 reachability;
	char alias[PFS_ALIAS_MAX];
	char host[PFS_HOST_MAX];
	__u64 last_seen_ms;	/* age of the last heartbeat */
	struct pfs_capacity cap;
	__u8 naddrs;
	struct pfs_node_addr addrs[PFS_NODE_ADDRS_MAX];
};

struct pfs_target_info {
	__u32 target_id;
	__u32 node_id;
	__u32 pool_id;
	__u8 reachability;
	__u8 consistency;
	__u8 space_class;	/* enum pfs_cap_class */
	__u8 inode_class;
	char path[PFS_TARGET_PATH_MAX];
	__u64 last_seen_ms;
	struct pfs_capacity cap;
};

struct pfs_pool_info {
	__u32 pool_id;
	char name[PFS_POOL_NAME_MAX];
};

struct pfs_create_pool {
	__u32 pool_id;		/* 0 = assign */
	char name[PFS_POOL_NAME_MAX];
};

struct pfs_assign_pool {
	__u32 target_id;
	__u32 pool_id;
};

struct pfs_set_target_state {
	__u32 target_id;
	__u8 consistency;
};

struct pfs_map_changed {
	__u64 map_version;
	__u32 changes;		/* enum pfs_map_change bits */
};

struct pfs_timespec {
	__s64 sec;
	__u32 nsec;		/* < 1e9 */
};

/*
 * What stat(2) reports; mode carries the S_IFMT type bits. rdev: a device
 * file's number as Linux's new_encode_dev() packs it (0 for other types);
 * btime: when the inode was created (statx's STATX_BTIME). blocks: a
 * regular file's st_blocks (512-byte units its chunk files take on the
 * targets) as the metadata server last learnt it, or PFS_BLOCKS_UNKNOWN
 * while a change it was told of (a size or mtime set, a truncate, a
 * fallocate) is not counted yet; unused for other types. xattrs: which
 * extended attributes the entry has that clients look for on every stat
 * or permission check (ls -l asks for both kinds), so that a client may
 * answer "none" itself.
 */
#define PFS_BLOCKS_UNKNOWN	(~(__u64)0)

enum pfs_attr_xattrs {
	PFS_ATTR_ACL_ACCESS = 1u << 0,	/* system.posix_acl_access */
	PFS_ATTR_ACL_DEFAULT = 1u << 1,	/* system.posix_acl_default */
	PFS_ATTR_SECURITY = 1u << 2,	/* any security.* */
	/* not an xattr: a striped directory (see DIR_SHARDS) */
	PFS_ATTR_STRIPED = 1u << 3,
};

struct pfs_attr {
	struct pfs_entry_id id;
	__u32 mode;
	__u32 uid;
	__u32 gid;
	__u32 nlink;
	__u64 size;
	struct pfs_timespec atime;
	struct pfs_timespec mtime;
	struct pfs_timespec ctime;
	__u32 rdev;
	struct pfs_timespec btime;
	__u64 blocks;
	__u32 xattrs;		/* enum pfs_attr_xattrs; others: ignored */
};

/*
 * The one target of an inline file's layout: its data lives with the
 * file's own metadata server (pfs_entry_id.owner_node), which answers the
 * chunk messages for it, until a write past the pattern's inline_max
 * moves it to the storage targets (PFS_E_MOVED).
 */
#define PFS_INLINE_TARGET	0xffffffffu

/* A file's stripe layout: chunk size and its targets in stripe order. */
struct pfs_layout {
	__u32 chunk_size;
	__u32 pool_id;
	__u32 count;
	__u32 targets[PFS_STRIPE_TARGETS_MAX];
};

/*
 * What a directory hands down to new entries. inline_max: files created
 * here keep up to this many bytes with their metadata server (0: none;
 * at most chunk_size and PFS_INLINE_MAX). dir_stripes: directories made
 * here are striped over this many metadata servers (0 and 1: not; at most
 * PFS_DIR_SHARDS_MAX, and as many as there are metadata servers).
 */
struct pfs_pattern {
	__u32 chunk_size;
	__u32 num_targets;
	__u32 pool_id;
	__u32 inline_max;
	__u32 dir_stripes;
};
#define PFS_INLINE_MAX		(1u << 20)

struct pfs_set_pattern {
	struct pfs_entry_id dir;
	struct pfs_pattern pattern;
};

struct pfs_name_req {
	struct pfs_entry_id dir;
	char name[PFS_NAME_MAX];
};

enum pfs_create_flags {
	PFS_CREATE_EXCL = 1u << 0,	/* O_EXCL: an existing name is EEXIST */
	PFS_CREATE_OPEN = 1u << 1,	/* also open it: one request, not two */
	/* with OPEN, how an existing file is opened (neither: read) */
	PFS_CREATE_READ = 1u << 2,
	PFS_CREATE_WRITE = 1u << 3,
	/*
	 * O_TMPFILE: a file no entry names (nlink 0, name empty), opened
	 * (with OPEN): freed at its last close unless LINK names it first.
	 */
	PFS_CREATE_TMPFILE = 1u << 4,
	/*
	 * The reply starts with struct pfs_create_made. With OPEN and
	 * without EXCL: O_CREAT as a kernel client needs it, in one round
	 * trip. An existing name is found as OPEN_NAME finds it (a regular
	 * file of this server opened, anything else only looked up, nothing
	 * opened); a new one is made and opened. Without OPEN: the reply
	 * says whether the file is new or one the name had already.
	 */
	PFS_CREATE_FIND = 1u << 5,
};
#define PFS_CREATE_KNOWN 0x3fu

/*
 * PFS_CREATE_READ and WRITE for an open with O_* flags oflags (a macro: the
 * O_* values are the includer's, kernel or libc): what opening an existing
 * file asks of it, O_TRUNC asking for write.
 */
#define PFS_CREATE_ACCESS(oflags)					\
	((((oflags) & O_ACCMODE) != O_WRONLY ? (__u32)PFS_CREATE_READ : 0u) |	\
	 (((oflags) & O_ACCMODE) != O_RDONLY || ((oflags) & O_TRUNC) ?	\
	  (__u32)PFS_CREATE_WRITE : 0u))

/* Leads the reply to CREATE with PFS_CREATE_FIND. */
struct pfs_create_made {
	__u32 made;		/* 1: this request made the file; 0: found */
};

struct pfs_create {
	struct pfs_entry_id dir;
	char name[PFS_NAME_MAX];
	__u32 mode;		/* permission bits */
	__u32 flags;		/* enum pfs_create_flags */
};

/*
 * MKNOD: a FIFO, socket, character or block device. The file's contents
 * are never the servers': clients do their I/O locally (a FIFO's pipe, a
 * socket's endpoint, a device's driver); the server keeps the inode.
 */
struct pfs_mknod {
	struct pfs_entry_id dir;
	char name[PFS_NAME_MAX];
	__u32 mode;		/* S_IFIFO, S_IFSOCK, S_IFCHR or S_IFBLK | perms */
	__u32 rdev;		/* devices: new_encode_dev(); others 0 */
};

/* The S_IFMT values (the same on every Linux architecture). */
#define PFS_S_IFMT	0170000u
#define PFS_S_IFSOCK	0140000u
#define PFS_S_IFLNK	0120000u
#define PFS_S_IFREG	0100000u
#define PFS_S_IFBLK	0060000u
#define PFS_S_IFDIR	0040000u
#define PFS_S_IFCHR	0020000u
#define PFS_S_IFIFO	0010000u

/* Device numbers as Linux's new_encode_dev() packs them (12:20 bits). */
static inline __u32 pfs_encode_dev(__u32 major, __u32 minor)
{
	return (minor & 0xff) | (major << 8) | ((minor & ~0xffu) << 12);
}

static inline __u32 pfs_dev_major(__u32 rdev)
{
	return (rdev & 0xfff00) >> 8;
}

static inline __u32 pfs_dev_minor(__u32 rdev)
{
	return (rdev & 0xff) | ((rdev >> 12) & 0xfff00);
}

/* A mode MKNOD takes: a special type and permission bits only. */
static inline int pfs_mknod_mode_valid(__u32 mode)
{
	__u32 type = mode & PFS_S_IFMT;

	if (mode & ~(PFS_S_IFMT | 07777u))
		return 0;
	return type == PFS_S_IFIFO || type == PFS_S_IFSOCK ||
	       type == PFS_S_IFCHR || type == PFS_S_IFBLK;
}

/* DT_* as readdir reports them (d_type: the S_IFMT bits >> 12). */
static inline int pfs_dtype_valid(__u8 type)
{
	switch (type) {
	case 1: case 2: case 4: case 6: case 8: case 10: case 12:
		return 1;	/* FIFO CHR DIR BLK REG LNK SOCK */
	}
	return 0;
}

struct pfs_symlink {
	struct pfs_entry_id dir;
	char name[PFS_NAME_MAX];
	char target[PFS_PATH_MAX];
};

struct pfs_path {
	char path[PFS_PATH_MAX];
};

struct pfs_link {
	struct pfs_entry_id id;
	struct pfs_entry_id dir;
	char name[PFS_NAME_MAX];
};

struct pfs_rename {
	struct pfs_entry_id src_dir;
	char src_name[PFS_NAME_MAX];
	struct pfs_entry_id dst_dir;
	char dst_name[PFS_NAME_MAX];
	__u32 flags;		/* RENAME_NOREPLACE 1, RENAME_EXCHANGE 2 */
};

enum pfs_setattr_valid {
	PFS_SET_MODE = 1u << 0,
	PFS_SET_UID = 1u << 1,
	PFS_SET_GID = 1u << 2,
	PFS_SET_SIZE = 1u << 3,
	PFS_SET_ATIME = 1u << 4,
	PFS_SET_MTIME = 1u << 5,
	/*
	 * size = max(size, given), chunks untouched: writers report how far
	 * they wrote without racing each other or truncating.
	 */
	PFS_SET_SIZE_EXTEND = 1u << 6,
	/*
	 * With ATIME / MTIME: "now" (utimensat's UTIME_NOW, touch), which
	 * whoever may write the file may set; an explicit time needs the
	 * owner. The server stamps its own clock.
	 */
	PFS_SET_ATIME_NOW = 1u << 7,
	PFS_SET_MTIME_NOW = 1u << 8,
	/*
	 * Answered once applied, before the journal has it on disk (it goes
	 * with the next commit, within PFS_LAZY_COMMIT_MS): the size report
	 * at close(2), which promises no durability. fsync sends it without.
	 * Not with SIZE (a truncate).
	 */
	PFS_SET_LAZY = 1u << 9,
};
#define PFS_SET_KNOWN 0x3ffu
#define PFS_LAZY_COMMIT_MS 50

struct pfs_setattr {
	struct pfs_entry_id id;
	__u32 valid;		/* enum pfs_setattr_valid */
	__u32 mode;
	__u32 uid;
	__u32 gid;
	__u64 size;
	struct pfs_timespec atime;
	struct pfs_timespec mtime;
};

struct pfs_readdir {
	struct pfs_entry_id dir;
	__u64 cookie;		/* 0: from the start */
	__u32 max_entries;	/* <= PFS_READDIR_MAX */
};

/*
 * A READDIR reply: this, then count x struct pfs_dirent; a READDIR_PLUS
 * reply: this, then count x struct pfs_dirent_plus.
 */
struct pfs_dir_page {
	__u64 next_cookie;
	__u8 eof;
	__u32 count;
};

struct pfs_dirent {
	struct pfs_entry_id id;
	__u64 cookie;		/* resume after this entry */
	__u8 type;		/* DT_*; readers check pfs_dtype_valid() */
	char name[PFS_NAME_MAX];
};

/*
 * A READDIR_PLUS entry: the attributes LOOKUP would give, where the server
 * has them (the entry's inode is its own, the caller may look names up,
 * and it is neither "." nor "..").
 */
struct pfs_dirent_plus {
	struct pfs_dirent ent;
	__u8 has_attr;
	struct pfs_attr attr;	/* when has_attr */
};

struct pfs_open {
	struct pfs_entry_id id;
	__u32 flags;		/* O_* of the opener */
};

struct pfs_open_name {
	struct pfs_entry_id dir;
	char name[PFS_NAME_MAX];
	__u32 flags;		/* O_* of the opener */
};

struct pfs_mkdir_on {
	struct pfs_entry_id dir;
	char name[PFS_NAME_MAX];
	__u32 mode;		/* permission bits */
	__u32 node;		/* metadata node id; 0: the server picks */
	/* shards of the new directory (0: as the parent's pattern says) */
	__u32 stripes;
};

/*
 * The new directory's attributes as the parent's owner decided them.
 * shard_index 0: a directory for an entry in parent, striped over
 * `stripes` servers when that is above 1 (its server makes the other
 * shards). shard_index 1 and up: that shard of parent, a striped
 * directory of `stripes` shards.
 */
struct pfs_mkdir_detached {
	struct pfs_entry_id parent;
	__u32 mode;		/* permission bits */
	__u32 uid;
	__u32 gid;
	struct pfs_pattern pattern;
	__u32 stripes;		/* <= PFS_DIR_SHARDS_MAX */
	__u32 shard_index;	/* < stripes */
};

/* A directory's shards, in shard order; the first is the directory. */
#define PFS_DIR_SHARDS_MAX	64
struct pfs_dir_shards {
	__u32 count;		/* 1..PFS_DIR_SHARDS_MAX */
	struct pfs_entry_id ids[PFS_DIR_SHARDS_MAX];
};

/*
 * READDIR cookies of a striped directory: the shard index above this bit,
 * the shard's own cookie below it (shard 0's are plain cookies).
 */
#define PFS_COOKIE_SHARD_SHIFT	48
#define PFS_COOKIE_LOCAL_MASK	((1ull << PFS_COOKIE_SHARD_SHIFT) - 1)

static inline __u32 pfs_cookie_shard(__u64 cookie)
{
	return (__u32)(cookie >> PFS_COOKIE_SHARD_SHIFT);
}

/*
 * The shard of a striped directory of `count` shards that keeps `name`
 * (len bytes): FNV-1a, the same on every client and server.
 */
static inline __u32 pfs_dir_shard(const char *name, __u32 len, __u32 count)
{
	__u32 h = 2166136261u;
	__u32 i;

	if (count <= 1)
		return 0;
	for (i = 0; i < len; i++) {
		h ^= (__u8)name[i];
		h *= 16777619u;
	}
	return h % count;
}

enum pfs_rmdir_phase {
	PFS_RMDIR_PREPARE = 1,	/* empty? then refuse new entries */
	PFS_RMDIR_COMMIT = 2,	/* the entry is gone: remove it */
	PFS_RMDIR_ABORT = 3,	/* the entry stays: accept entries again */
	/* its entry (a mkdir's) is durable: CREATED becomes CONFIRMED now */
	PFS_RMDIR_CONFIRM = 4,
};

struct pfs_rmdir_detached {
	struct pfs_entry_id id;
	__u8 phase;		/* enum pfs_rmdir_phase */
};

#define PFS_ENTRY_CHECK_MAX	64
struct pfs_entry_check {
	__u32 count;		/* 1..PFS_ENTRY_CHECK_MAX */
	struct pfs_entry_id ids[PFS_ENTRY_CHECK_MAX];
};

enum pfs_entry_state {
	PFS_ENTRY_ABSENT = 0,	/* no entry names it, durably */
	PFS_ENTRY_PRESENT = 1,	/* an entry names it, durably */
	PFS_ENTRY_PENDING = 2,	/* an operation on it is under way: ask later */
};

struct pfs_entry_states {
	__u32 count;
	__u8 states[PFS_ENTRY_CHECK_MAX];	/* enum pfs_entry_state, per id */
};

struct pfs_list_detached {
	__u64 after;		/* inode number to resume after (0: first) */
};

enum pfs_detached_state {
	PFS_DETACHED_CONFIRMED = 0,
	PFS_DETACHED_CREATED = 1,	/* made, its entry not yet confirmed */
	PFS_DETACHED_REMOVING = 2,	/* removal prepared */
	PFS_DETACHED_MOVING = 3,	/* its entry moves between directories */
};

enum pfs_move_phase {
	PFS_MOVE_PREPARE = 1,	/* record the move from -> to */
	PFS_MOVE_COMMIT = 2,	/* the entry is in to now */
	PFS_MOVE_ABORT = 3,	/* the entry stays in from */
};

/* To an inode's owner: its entry moves from one directory to another. */
struct pfs_move {
	struct pfs_entry_id id;
	struct pfs_entry_id from;	/* the directory naming it now */
	struct pfs_entry_id to;		/* the directory it moves to */
	__u8 phase;		/* enum pfs_move_phase */
};

#define PFS_REMOTE_LINK_NOREPLACE	1u
/* To a directory's owner: an entry naming an inode moved in. */
struct pfs_remote_link {
	struct pfs_entry_id dir;
	char name[PFS_NAME_MAX];
	struct pfs_entry_id id;
	__u8 type;		/* DT_*, pfs_dtype_valid() */
	__u32 flags;		/* PFS_REMOTE_LINK_* */
};

struct pfs_detached_dir {
	struct pfs_entry_id id;
	struct pfs_entry_id parent;
	__u8 state;		/* enum pfs_detached_state */
};

#define PFS_DETACHED_PAGE_MAX	64
struct pfs_detached_page {
	__u32 count;
	__u8 eof;
	struct pfs_detached_dir dirs[PFS_DETACHED_PAGE_MAX];
};

/* SETXATTR carries the value right after this body. */
struct pfs_xattr_req {
	struct pfs_entry_id id;
	char name[PFS_NAME_MAX];
	__u32 flags;		/* XATTR_CREATE 1, XATTR_REPLACE 2 */
};

struct pfs_statfs {
	struct pfs_capacity storage;	/* all storage targets */
	__u64 inodes_used;		/* on the metadata servers */
	__u64 inodes_free;
};

/*
 * Advisory locks, cluster-wide, kept by the metadata server that owns the
 * inode. Two kinds that never conflict with each other (as on Linux):
 * flock (whole file; start/end are ignored) and POSIX byte ranges.
 *
 * A lock belongs to (header.client_id, owner): owner is opaque to the
 * server, unique within the client (the kernel passes a keyed hash of the
 * struct file * for flock and of the fl_owner for POSIX, never an address;
 * libpfs an id per open file). Locks of
 * different (client, owner) pairs conflict when one is a write lock (and,
 * for POSIX, the ranges overlap); one owner's locks never conflict with each
 * other. A POSIX request replaces the owner's locks in its range: ranges
 * merge with adjacent ones of the same type, an unlock or a different type
 * in the middle of a range splits it (upgrade/downgrade in place).
 *
 * LOCK never waits: it answers PFS_OK when granted (or released) and the
 * status EAGAIN, with no body, when another owner holds a conflicting lock
 * (GETLK names it). Blocking waits (F_SETLKW, flock without LOCK_NB) are the
 * client's retry loop with backoff. ENOLCK: the client holds too many locks.
 * GETLK takes a READ or WRITE request and answers the first conflicting lock,
 * or type PFS_LOCK_UNLOCK when there is none (F_GETLK).
 *
 * Sessions: every request with a nonzero client_id starts or renews that
 * client's session on the server it reaches; SESSION_RENEW does only that
 * and tells the client the timeout. A session not renewed within the
 * timeout ends as SESSION_END ends it at once: its locks are released and
 * the files it opened (OPEN, CREATE with PFS_CREATE_OPEN) are closed, so an
 * unlinked file a dead client held open is removed. Neither locks nor
 * sessions survive a restart of the metadata server.
 */
enum pfs_lock_kind {
	PFS_LOCK_FLOCK = 1,
	PFS_LOCK_POSIX = 2,
};

enum pfs_lock_type {
	PFS_LOCK_READ = 1,	/* shared */
	PFS_LOCK_WRITE = 2,	/* exclusive */
	PFS_LOCK_UNLOCK = 3,
};

#define PFS_LOCK_EOF (~0ULL)	/* end of a range that runs to end of file */

struct pfs_lock_req {
	struct pfs_entry_id id;
	__u8 kind;		/* enum pfs_lock_kind */
	__u8 type;		/* enum pfs_lock_type */
	__u64 start;
	__u64 end;		/* inclusive, >= start; PFS_LOCK_EOF */
	__u64 owner;
	__u32 pid;		/* for F_GETLK's l_pid */
};

struct pfs_lock_conflict {
	__u8 type;		/* PFS_LOCK_UNLOCK: no conflict */
	__u64 start;
	__u64 end;
	__u32 pid;
	__u64 client_id;
};

/* SESSION_RENEW's reply: renew well within this (a third of it). */
struct pfs_session {
	__u32 timeout_ms;
};

/*
 * INVALIDATE (metadata server -> client, PFS_FLAG_NOTIFY, header.client_id
 * = the client told): entries whose attributes changed, and directories
 * whose names changed, by another client's request. A client is told
 * about an entry it was answered about (LOOKUP, GETATTR, CREATE, OPEN,
 * READDIR of a directory) or changed (a directory it created, removed or
 * renamed a name in) once: after the notice it must ask again to hear of
 * the next change. Notices are never dropped silently: when the server
 * forgets what it told a client, or cannot deliver a notice, the client
 * gets INVALIDATE_ALL (at once, or before the reply to its next request),
 * and a lost connection loses the notices it would have carried. Clients
 * may therefore trust names longer than attributes (pfs.ko's name_ttl).
 */
#define PFS_INVALIDATE_MAX	4	/* ids in one notice */

struct pfs_invalidate {
	__u32 count;
	struct pfs_entry_id ids[PFS_INVALIDATE_MAX];
};

/* A file's chunk file on one storage target. */
struct pfs_chunk_ref {
	struct pfs_entry_id file;
	__u32 target_id;
};

/*
 * A read or write of length bytes at offset in a chunk file. A write's
 * payload carries the data right after this body (never copied into it).
 */
struct pfs_chunk_io {
	struct pfs_chunk_ref chunk;
	__u64 offset;
	__u32 length;		/* <= PFS_MAX_IO */
};

/*
 * CHUNK_UNLINK of the chunks of several files on one target, as the
 * metadata server batches the deletions of removed files. Every chunk is
 * tried; the reply carries the first error (a missing chunk is none).
 */
#define PFS_CHUNK_UNLINK_MAX	64
struct pfs_chunk_unlink_many {
	__u32 target_id;
	__u32 count;		/* 1..PFS_CHUNK_UNLINK_MAX */
	struct pfs_entry_id files[PFS_CHUNK_UNLINK_MAX];
};

#define PFS_CLOSE_MANY_MAX	64
struct pfs_close_many {
	__u32 count;		/* 1..PFS_CLOSE_MANY_MAX */
	struct pfs_entry_id ids[PFS_CLOSE_MANY_MAX];
};

struct pfs_chunk_truncate {
	struct pfs_chunk_ref chunk;
	__u64 size;
};

struct pfs_chunk_stat {
	__u64 size;
	__u64 allocated;	/* bytes on disk (sparse files use less) */
};

/*
 * The write verifier: a number a storage target keeps while nothing it
 * acknowledged can have been lost, and changes when it may have (a crash
 * or power loss before the data reached the disk). A write acknowledged
 * under one verifier is durable once a CHUNK_SYNC answers the same one; a
 * different one means the write may be gone (NFS's write verifier).
 */
struct pfs_chunk_written {
	__u32 length;
	__u64 verifier;
};

/*
 * A CHUNK_WRITE's reply from an inline store (PFS_INLINE_TARGET): the file's
 * metadata server records the size the write reaches and mtime and ctime
 * now along with the data (journaled lazily, durable by the next
 * CHUNK_SYNC of the file), so the writer owes it no size report; attr is
 * the file's attributes after that. A CHUNK_COPY into an inline file
 * records the same and answers a plain pfs_chunk_written.
 */
struct pfs_inline_written {
	struct pfs_chunk_written written;
	struct pfs_attr attr;
};

/* CHUNK_SYNC's reply. */
struct pfs_chunk_synced {
	__u64 verifier;
};

/*
 * CHUNK_LIST: the chunk files of one target, a page at a time, for fsck.
 * The cookie is the server's position in its listing, opaque to clients;
 * zeros start from the beginning. Chunks created or removed while a listing
 * runs may or may not appear; none appears twice.
 */
#define PFS_CHUNK_LIST_MAX	4096	/* entries in one CHUNK_LIST reply */

struct pfs_chunk_cookie {
	__u32 dir;
	__u64 pos;
};

struct pfs_chunk_list {
	__u32 target_id;
	struct pfs_chunk_cookie cookie;
	__u32 max_entries;	/* 1..PFS_CHUNK_LIST_MAX */
};

/* A CHUNK_LIST reply: this, then count x struct pfs_chunk_entry. */
struct pfs_chunk_page {
	struct pfs_chunk_cookie next;
	__u8 eof;
	__u32 count;
};

struct pfs_chunk_entry {
	struct pfs_entry_id file;
	__u64 size;		/* of the chunk file */
};

/*
 * fallocate(2) modes, with Linux's values. PUNCH_HOLE needs KEEP_SIZE and
 * excludes ZERO_RANGE; other Linux modes (COLLAPSE_RANGE, INSERT_RANGE,
 * UNSHARE_RANGE) are not spoken.
 */
enum pfs_falloc_mode {
	PFS_FALLOC_KEEP_SIZE = 0x01,
	PFS_FALLOC_PUNCH_HOLE = 0x02,
	PFS_FALLOC_ZERO_RANGE = 0x10,
};
#define PFS_FALLOC_KNOWN 0x13u

/* 0 when mode is a combination PFS serves, -EOPNOTSUPP or -EINVAL. */
static inline int pfs_falloc_mode_check(__u32 mode)
{
	if (mode & ~PFS_FALLOC_KNOWN)
		return -EOPNOTSUPP;
	if ((mode & PFS_FALLOC_PUNCH_HOLE) &&
	    (!(mode & PFS_FALLOC_KEEP_SIZE) || (mode & PFS_FALLOC_ZERO_RANGE)))
		return -EOPNOTSUPP;
	return 0;
}

/* FALLOCATE: length >= 1, offset + length <= PFS_MAX_FILE_OFFSET. */
struct pfs_fallocate {
	struct pfs_entry_id id;
	__u32 mode;		/* enum pfs_falloc_mode */
	__u64 offset;
	__u64 length;
};

/* CHUNK_FALLOCATE: the same on one chunk file, in its own offsets. */
struct pfs_chunk_falloc {
	struct pfs_chunk_ref chunk;
	__u32 mode;		/* enum pfs_falloc_mode */
	__u64 offset;
	__u64 length;
};

enum pfs_seek_what {
	PFS_SEEK_DATA = 3,	/* Linux's SEEK_DATA */
	PFS_SEEK_HOLE = 4,	/* Linux's SEEK_HOLE */
};

/*
 * CHUNK_SEEK: lseek(SEEK_DATA or SEEK_HOLE) on a chunk file from offset.
 * The reply's found is 0 when there is no data at or after offset (DATA),
 * and a missing chunk or one that ends before offset is a hole (HOLE
 * answers offset itself).
 */
struct pfs_chunk_seek {
	struct pfs_chunk_ref chunk;
	__u64 offset;
	__u8 what;		/* enum pfs_seek_what */
};

struct pfs_chunk_seek_reply {
	__u8 found;
	__u64 offset;
};

/*
 * CHUNK_COPY: length bytes of src's chunk file at src_offset to the chunk
 * file of dst on the same target at dst_offset, copied by the storage
 * server (copy_file_range, a reflink where its file system can). Bytes
 * past the source chunk's end are holes, and the copy makes them holes in
 * the destination too. Answered like a CHUNK_WRITE (pfs_chunk_written).
 */
struct pfs_chunk_copy {
	struct pfs_chunk_ref src;
	struct pfs_entry_id dst;
	__u64 src_offset;
	__u64 dst_offset;
	__u32 length;		/* 1..PFS_MAX_IO */
};

/*
 * One function per body: encodes, decodes or sizes according to x->op.
 * Decoding also validates enumerations and ranges.
 */
int pfs_x_reply_status(struct pfs_xdr *x, struct pfs_reply_status *m);
int pfs_x_bulk(struct pfs_xdr *x, struct pfs_bulk *m);
int pfs_x_auth_challenge(struct pfs_xdr *x, struct pfs_auth_challenge *m);
int pfs_x_auth_response(struct pfs_xdr *x, struct pfs_auth_response *m);
int pfs_x_auth_proof(struct pfs_xdr *x, struct pfs_auth_proof *m);
int pfs_x_client_token(struct pfs_xdr *x, struct pfs_client_token *m);
int pfs_x_client_bound(struct pfs_xdr *x, struct pfs_client_bound *m);
int pfs_x_groups(struct pfs_xdr *x, struct pfs_groups *m);
int pfs_x_ping_reply(struct pfs_xdr *x, struct pfs_ping_reply *m);
int pfs_x_stats(struct pfs_xdr *x, struct pfs_stats *m);
int pfs_x_msg_stats(struct pfs_xdr *x, struct pfs_msg_stats *m);
int pfs_x_transport_stats(struct pfs_xdr *x, struct pfs_transport_stats *m);
int pfs_x_capacity(struct pfs_xdr *x, struct pfs_capacity *m);
int pfs_x_register_node(struct pfs_xdr *x, struct pfs_register_node *m);
int pfs_x_register_node_reply(struct pfs_xdr *x,
			      struct pfs_register_node_reply *m);
int pfs_x_register_target(struct pfs_xdr *x, struct pfs_register_target *m);
int pfs_x_register_target_reply(struct pfs_xdr *x,
				struct pfs_register_target_reply *m);
int pfs_x_heartbeat(struct pfs_xdr *x, struct pfs_heartbeat *m);
int pfs_x_target_capacity(struct pfs_xdr *x, struct pfs_target_capacity *m);
int pfs_x_map_version(struct pfs_xdr *x, struct pfs_map_version *m);
int pfs_x_get_nodes(struct pfs_xdr *x, struct pfs_get_nodes *m);
int pfs_x_node_info(struct pfs_xdr *x, struct pfs_node_info *m);
int pfs_x_target_info(struct pfs_xdr *x, struct pfs_target_info *m);
int pfs_x_pool_info(struct pfs_xdr *x, struct pfs_pool_info *m);
int pfs_x_create_pool(struct pfs_xdr *x, struct pfs_create_pool *m);
int pfs_x_assign_pool(struct pfs_xdr *x, struct pfs_assign_pool *m);
int pfs_x_set_target_state(struct pfs_xdr *x, struct pfs_set_target_state *m);
int pfs_x_map_changed(struct pfs_xdr *x, struct pfs_map_changed *m);
int pfs_x_entry_id(struct pfs_xdr *x, struct pfs_entry_id *m);
int pfs_x_timespec(struct pfs_xdr *x, struct pfs_timespec *m);
int pfs_x_attr(struct pfs_xdr *x, struct pfs_attr *m);
int pfs_x_layout(struct pfs_xdr *x, struct pfs_layout *m);
int pfs_x_pattern(struct pfs_xdr *x, struct pfs_pattern *m);
int pfs_x_set_pattern(struct pfs_xdr *x, struct pfs_set_pattern *m);
int pfs_x_name_req(struct pfs_xdr *x, struct pfs_name_req *m);
int pfs_x_create(struct pfs_xdr *x, struct pfs_create *m);
int pfs_x_mknod(struct pfs_xdr *x, struct pfs_mknod *m);
int pfs_x_symlink(struct pfs_xdr *x, struct pfs_symlink *m);
int pfs_x_path(struct pfs_xdr *x, struct pfs_path *m);
int pfs_x_link(struct pfs_xdr *x, struct pfs_link *m);
int pfs_x_rename(struct pfs_xdr *x, struct pfs_rename *m);
int pfs_x_setattr(struct pfs_xdr *x, struct pfs_setattr *m);
int pfs_x_readdir(struct pfs_xdr *x, struct pfs_readdir *m);
int pfs_x_dir_page(struct pfs_xdr *x, struct pfs_dir_page *m);
int pfs_x_dirent(struct pfs_xdr *x, struct pfs_dirent *m);
int pfs_x_dirent_plus(struct pfs_xdr *x, struct pfs_dirent_plus *m);
int pfs_x_open(struct pfs_xdr *x, struct pfs_open *m);
int pfs_x_create_made(struct pfs_xdr *x, struct pfs_create_made *m);
int pfs_x_open_name(struct pfs_xdr *x, struct pfs_open_name *m);
int pfs_x_mkdir_on(struct pfs_xdr *x, struct pfs_mkdir_on *m);
int pfs_x_mkdir_detached(struct pfs_xdr *x, struct pfs_mkdir_detached *m);
int pfs_x_dir_shards(struct pfs_xdr *x, struct pfs_dir_shards *m);
int pfs_x_rmdir_detached(struct pfs_xdr *x, struct pfs_rmdir_detached *m);
int pfs_x_entry_check(struct pfs_xdr *x, struct pfs_entry_check *m);
int pfs_x_entry_states(struct pfs_xdr *x, struct pfs_entry_states *m);
int pfs_x_list_detached(struct pfs_xdr *x, struct pfs_list_detached *m);
int pfs_x_detached_page(struct pfs_xdr *x, struct pfs_detached_page *m);
int pfs_x_move(struct pfs_xdr *x, struct pfs_move *m);
int pfs_x_remote_link(struct pfs_xdr *x, struct pfs_remote_link *m);
int pfs_x_xattr_req(struct pfs_xdr *x, struct pfs_xattr_req *m);
int pfs_x_statfs(struct pfs_xdr *x, struct pfs_statfs *m);
int pfs_x_lock_req(struct pfs_xdr *x, struct pfs_lock_req *m);
int pfs_x_lock_conflict(struct pfs_xdr *x, struct pfs_lock_conflict *m);
int pfs_x_session(struct pfs_xdr *x, struct pfs_session *m);
int pfs_x_invalidate(struct pfs_xdr *x, struct pfs_invalidate *m);
int pfs_x_chunk_ref(struct pfs_xdr *x, struct pfs_chunk_ref *m);
int pfs_x_chunk_io(struct pfs_xdr *x, struct pfs_chunk_io *m);
int pfs_x_chunk_truncate(struct pfs_xdr *x, struct pfs_chunk_truncate *m);
int pfs_x_chunk_stat(struct pfs_xdr *x, struct pfs_chunk_stat *m);
int pfs_x_chunk_written(struct pfs_xdr *x, struct pfs_chunk_written *m);
int pfs_x_inline_written(struct pfs_xdr *x, struct pfs_inline_written *m);
int pfs_x_chunk_synced(struct pfs_xdr *x, struct pfs_chunk_synced *m);
int pfs_x_chunk_list(struct pfs_xdr *x, struct pfs_chunk_list *m);
int pfs_x_close_many(struct pfs_xdr *x, struct pfs_close_many *m);
int pfs_x_chunk_unlink_many(struct pfs_xdr *x,
			    struct pfs_chunk_unlink_many *m);
int pfs_x_chunk_page(struct pfs_xdr *x, struct pfs_chunk_page *m);
int pfs_x_chunk_entry(struct pfs_xdr *x, struct pfs_chunk_entry *m);
int pfs_x_fallocate(struct pfs_xdr *x, struct pfs_fallocate *m);
int pfs_x_chunk_falloc(struct pfs_xdr *x, struct pfs_chunk_falloc *m);
int pfs_x_chunk_seek(struct pfs_xdr *x, struct pfs_chunk_seek *m);
int pfs_x_chunk_seek_reply(struct pfs_xdr *x, struct pfs_chunk_seek_reply *m);
int pfs_x_chunk_copy(struct pfs_xdr *x, struct pfs_chunk_copy *m);

/* Smallest encodings, for pfs_x_count's min_elem_size. */
#define PFS_NODE_INFO_MIN_SIZE	(4 + 2 + 2 + 1 + 2 + 2 + 8 + 32 + 1)
#define PFS_TARGET_INFO_MIN_SIZE (4 * 3 + 4 + 2 + 8 + 32)
#define PFS_POOL_INFO_MIN_SIZE	(4 + 2)
#define PFS_TARGET_CAP_MIN_SIZE	(4 + 32)
#define PFS_DIRENT_MIN_SIZE	(16 + 8 + 1 + 2)
#define PFS_DIRENT_PLUS_MIN_SIZE (PFS_DIRENT_MIN_SIZE + 1)
#define PFS_MSG_STATS_MIN_SIZE	(2 + 8 * 4)
#define PFS_CHUNK_ENTRY_MIN_SIZE (16 + 8)

#endif /* PFS_PROTO_H */
