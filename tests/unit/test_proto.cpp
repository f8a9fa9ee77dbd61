// Unit tests of the shared C wire protocol (common/proto/): frame header,
// every message body, the XDR primitives' bounds checks, stripe math and
// status mapping.
#include <catch2/catch.hpp>

#include <dirent.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

extern "C" {
#include "pfs_proto.h"
#include "pfs_stripe.h"
}

namespace {

using Bytes = std::vector<std::uint8_t>;

template <typename T>
T zeroed()
{
	T t;
	std::memset(static_cast<void *>(&t), 0, sizeof(t));
	return t;
}

template <std::size_t N>
void set_str(char (&dst)[N], const std::string &s)
{
	REQUIRE(s.size() < N);
	std::memset(dst, 0, N);
	std::memcpy(dst, s.data(), s.size());
}

// Decodes from an exactly sized heap copy, so an overread is a real one.
struct Copy {
	explicit Copy(const std::uint8_t *p, std::size_t n)
		: buf(new std::uint8_t[n ? n : 1]), len(static_cast<__u32>(n))
	{
		if (n)
			std::memcpy(buf.get(), p, n);
	}
	std::unique_ptr<std::uint8_t[]> buf;
	__u32 len;
};

// ---- a message: a body, optionally followed by a list ----------------

// List replies have no body of their own.
struct NoBody {
	char unused;
};

// What a test knows about one message type: its codec (body and list
// elements), whether the list count is a pfs_x_count of its own or carried
// in the body (HEARTBEAT), and a message of that type.
//
// Structs are compared with memcmp, so their padding must be zero: bodies
// and elements are zeroed in place (a struct copy need not copy padding)
// and then filled field by field.
template <typename Body, typename Elem = char>
struct Msg {
	int (*body_fn)(struct pfs_xdr *, Body *);
	int (*elem_fn)(struct pfs_xdr *, Elem *);
	__u32 elem_min;
	__u32 Body::*body_count;

	Body body;
	std::vector<Elem> elems;

	explicit Msg(int (*b)(struct pfs_xdr *, Body *),
		     int (*e)(struct pfs_xdr *, Elem *) = nullptr,
		     __u32 min = 0, __u32 Body::*count = nullptr)
		: body_fn(b), elem_fn(e), elem_min(min), body_count(count)
	{
		reset();
		elems.reserve(64);
	}

	Msg(const Msg &o)
		: body_fn(o.body_fn), elem_fn(o.elem_fn),
		  elem_min(o.elem_min), body_count(o.body_count)
	{
		std::memcpy(static_cast<void *>(&body), &o.body, sizeof(Body));
		elems.reserve(64);
		for (const Elem &e : o.elems)
			std::memcpy(static_cast<void *>(&add()), &e,
				    sizeof(Elem));
	}

	Msg &operator=(const Msg &) = delete;

	void reset()
	{
		std::memset(static_cast<void *>(&body), 0, sizeof(Body));
		elems.clear();
	}

	// A zeroed element at the end of the list.
	Elem &add()
	{
		REQUIRE(elems.size() < elems.capacity());	// no moves
		elems.emplace_back();
		std::memset(static_cast<void *>(&elems.back()), 0,
			    sizeof(Elem));
		return elems.back();
	}

	// Runs the codec over this message in whatever mode x is.
	int x(struct pfs_xdr *xd)
	{
		__u32 n = static_cast<__u32>(elems.size());

		if (body_fn && body_fn(xd, &body))
			return xd->err;
		if (!elem_fn)
			return xd->err;
		if (body_count)
			n = body.*body_count;
		else if (pfs_x_count(xd, &n, PFS_MAX_LIST, elem_min))
			return xd->err;
		if (pfs_xdr_decoding(xd)) {
			elems.clear();
			elems.resize(n);
			if (n)
				std::memset(static_cast<void *>(elems.data()),
					    0, n * sizeof(Elem));
		}
		for (__u32 i = 0; i < n; i++)
			if (elem_fn(xd, &elems[i]))
				break;
		return xd->err;
	}

	bool same(const Msg &o) const
	{
		if (std::memcmp(&body, &o.body, sizeof(Body)) ||
		    elems.size() != o.elems.size())
			return false;
		return elems.empty() ||
		       !std::memcmp(elems.data(), o.elems.data(),
				    elems.size() * sizeof(Elem));
	}
};

// A reply that is a pfs_x_count and that many elements.
template <typename Elem>
struct ListMsg : Msg<NoBody, Elem> {
	ListMsg(int (*fn)(struct pfs_xdr *, Elem *), __u32 min)
		: Msg<NoBody, Elem>(nullptr, fn, min)
	{
	}
};

// HEARTBEAT: the body carries the count of the target capacities following.
struct HeartbeatMsg : Msg<struct pfs_heartbeat, struct pfs_target_capacity> {
	HeartbeatMsg()
		: Msg(pfs_x_heartbeat, pfs_x_target_capacity,
		      PFS_TARGET_CAP_MIN_SIZE, &pfs_heartbeat::count)
	{
	}
};

template <typename M>
__u32 size_of(M &m)
{
	struct pfs_xdr x;

	pfs_xdr_init_size(&x);
	REQUIRE(m.x(&x) == 0);
	return x.pos;
}

template <typename M>
Bytes encode(M &m)
{
	__u32 n = size_of(m);
	Bytes buf(n);
	struct pfs_xdr x;

	pfs_xdr_init_encode(&x, buf.data(), n);
	REQUIRE(m.x(&x) == 0);
	REQUIRE(x.pos == n);	// size pass == encoded length
	return buf;
}

// Decodes a whole buffer (pfs_xdr_finish included) into out.
template <typename M>
int decode(M &out, const std::uint8_t *p, std::size_t n)
{
	Copy c(p, n);
	struct pfs_xdr x;

	out.reset();
	pfs_xdr_init_decode(&x, c.buf.get(), c.len);
	out.x(&x);
	return pfs_xdr_finish(&x);
}

template <typename M>
int decode(M &out, const Bytes &b)
{
	return decode(out, b.data(), b.size());
}

// The checks every message must pass.
template <typename M>
void check_message(M &m)
{
	Bytes buf = encode(m);
	M out = m;

	INFO("encoded length " << buf.size());
	REQUIRE(decode(out, buf) == 0);
	CHECK(out.same(m));
	CHECK(encode(out) == buf);

	// Every strict prefix is malformed.
	for (std::size_t len = 0; len < buf.size(); len++) {
		INFO("prefix of " << len << " bytes");
		CHECK(decode(out, buf.data(), len) == -EBADMSG);
	}

	// One trailing byte: the body decodes, pfs_xdr_finish rejects it.
	{
		Bytes longer = buf;
		struct pfs_xdr x;

		longer.push_back(0);
		out.reset();
		pfs_xdr_init_decode(&x, longer.data(), (__u32)longer.size());
		CHECK(out.x(&x) == 0);
		CHECK(pfs_xdr_finish(&x) == -EBADMSG);
	}

	// Encoding into any smaller buffer fails with -EMSGSIZE.
	for (std::size_t cap = 0; cap < buf.size(); cap++) {
		Bytes small(cap + 1);
		struct pfs_xdr x;

		INFO("buffer of " << cap << " bytes");
		pfs_xdr_init_encode(&x, small.data(), (__u32)cap);
		CHECK(m.x(&x) == -EMSGSIZE);
	}
}

// The fill() functions expect zeroed structs and set every field.
void fill(struct pfs_capacity &c)
{
	c.bytes_total = 4ULL << 40;
	c.bytes_free = 1ULL << 40;
	c.inodes_total = 1000000;
	c.inodes_free = 999999;
}

void fill(struct pfs_node_info &n, __u32 id)
{
	n.node_id = id;
	n.node_type = PFS_NODE_STORAGE;
	n.port = PFS_DEFAULT_STORAGE_PORT;
	n.reachability = PFS_REACH_PROBABLY_OFFLINE;
	set_str(n.alias, "storage" + std::to_string(id));
	set_str(n.host, "node" + std::to_string(id) + ".example.org");
	n.last_seen_ms = 1234;
	fill(n.cap);
}

void fill(struct pfs_target_info &t, __u32 id)
{
	t.target_id = id;
	t.node_id = 3;
	t.pool_id = PFS_DEFAULT_POOL_ID;
	t.reachability = PFS_REACH_OFFLINE;
	t.consistency = PFS_CONS_NEEDS_RESYNC;
	t.space_class = PFS_CAP_EMERGENCY;
	t.inode_class = PFS_CAP_LOW;
	set_str(t.path, "/data/pfs/target" + std::to_string(id));
	t.last_seen_ms = 99;
	fill(t.cap);
}

void fill(struct pfs_pool_info &p, __u32 id, const std::string &name)
{
	p.pool_id = id;
	set_str(p.name, name);
}

void fill(struct pfs_target_capacity &t, __u32 id)
{
	t.target_id = id;
	fill(t.cap);
}

void fill(struct pfs_chunk_ref &c, __u32 target)
{
	c.file.ino = 0x8000000000000123ULL;
	c.file.owner_node = 4;
	c.file.generation = 0xfeedf00d;
	c.target_id = target;
}

// A filled struct by value, for tests that do not compare padding.
template <typename T, typename... Args>
T sample(Args &&...args)
{
	auto t = zeroed<T>();

	fill(t, std::forward<Args>(args)...);
	return t;
}

struct pfs_header sample_header()
{
	auto h = zeroed<struct pfs_header>();

	h.magic = PFS_PROTO_MAGIC;
	h.version = PFS_PROTO_VERSION;
	h.type = PFS_MSG_GET_TARGETS;
	h.flags = PFS_FLAG_REPLY;
	h.payload_len = 1000;
	h.request_id = 0x0102030405060708ULL;
	h.uid = 1001;
	h.gid = 1002;
	h.client_id = 0x1112131415161718ULL;
	h.client_seq = 0x2122232425262728ULL;
	return h;
}

// Encodes a body, lets the test damage the bytes, decodes.
template <typename Body, typename F>
int decode_patched(int (*fn)(struct pfs_xdr *, Body *), const Body &in,
		   F patch)
{
	Msg<Body> m(fn);

	m.body = in;	// padding does not matter here
	Bytes b = encode(m);
	patch(b);
	Msg<Body> out(fn);
	return decode(out, b);
}

void put_u16(Bytes &b, std::size_t at, unsigned v)
{
	b.at(at) = (std::uint8_t)v;
	b.at(at + 1) = (std::uint8_t)(v >> 8);
}

void put_u32(Bytes &b, std::size_t at, __u32 v)
{
	for (int i = 0; i < 4; i++)
		b.at(at + i) = (std::uint8_t)(v >> (8 * i));
}

} // namespace

// ---- frame header -------------------------------------------------------

TEST_CASE("proto: header round trip and wire layout", "[proto]")
{
	struct pfs_header h = sample_header();
	auto out = zeroed<struct pfs_header>();
	Bytes b(PFS_HEADER_SIZE);

	pfs_header_encode(&h, b.data());
	REQUIRE(pfs_header_decode(&out, b.data(), PFS_HEADER_SIZE) == 0);
	CHECK(std::memcmp(&h, &out, sizeof(h)) == 0);

	// Little endian, fields at fixed offsets.
	CHECK(std::memcmp(b.data(), "PFS1", 4) == 0);
	CHECK(b[4] == PFS_PROTO_VERSION);
	CHECK(b[5] == 0);
	CHECK(b[6] == (PFS_MSG_GET_TARGETS & 0xff));
	CHECK(b[8] == PFS_FLAG_REPLY);
	CHECK(b[12] == (1000 & 0xff));
	CHECK(b[13] == (1000 >> 8));
	CHECK(b[16] == 0x08);
	CHECK(b[23] == 0x01);
	CHECK(b[24] == (1001 & 0xff));
	CHECK(b[28] == (1002 & 0xff));
	CHECK(b[32] == 0x18);
	CHECK(b[40] == 0x28);
	CHECK(b[47] == 0x21);

	// A longer buffer (header + payload) is fine.
	Bytes longer = b;
	longer.resize(100, 0xee);
	CHECK(pfs_header_decode(&out, longer.data(), 100) == 0);
}

TEST_CASE("proto: header decode rejects bad headers", "[proto]")
{
	struct pfs_header h = sample_header();
	auto out = zeroed<struct pfs_header>();
	Bytes b(PFS_HEADER_SIZE);

	auto dec = [&](const struct pfs_header &in) {
		pfs_header_encode(&in, b.data());
		Copy c(b.data(), b.size());
		return pfs_header_decode(&out, c.buf.get(), c.len);
	};

	SECTION("bad magic") {
		h.magic = 0x31534651u;
		CHECK(dec(h) == -EBADMSG);
		h.magic = 0;
		CHECK(dec(h) == -EBADMSG);
	}
	SECTION("other versions") {
		h.version = PFS_PROTO_VERSION + 1;
		CHECK(dec(h) == -EPROTONOSUPPORT);
		h.version = 0;
		CHECK(dec(h) == -EPROTONOSUPPORT);
		h.version = 0xffff;
		CHECK(dec(h) == -EPROTONOSUPPORT);
	}
	SECTION("payload length") {
		h.payload_len = PFS_MAX_PAYLOAD;
		CHECK(dec(h) == 0);
		h.payload_len = PFS_MAX_PAYLOAD + 1;
		CHECK(dec(h) == -EMSGSIZE);
		h.payload_len = 1u << 30;	// 1 GiB
		CHECK(dec(h) == -EMSGSIZE);
		h.payload_len = 0xffffffffu;
		CHECK(dec(h) == -EMSGSIZE);
		h.payload_len = 0;
		CHECK(dec(h) == 0);
	}
	SECTION("flags") {
		h.flags = PFS_FLAG_REPLY | PFS_FLAG_NOTIFY;
		CHECK(dec(h) == 0);
		h.flags = PFS_FLAG_BULK;
		CHECK(dec(h) == 0);
		h.flags = PFS_FLAG_BULK | PFS_FLAG_ZERO_FILL;
		CHECK(dec(h) == 0);
		h.flags = PFS_FLAG_INLINE_LAYOUTS;
		CHECK(dec(h) == 0);
		h.flags = PFS_FLAG_INLINE_CONTENT;
		CHECK(dec(h) == 0);
		h.flags = PFS_FLAG_REPLY | PFS_FLAG_UNTRACKED;
		CHECK(dec(h) == 0);
		h.flags = 1u << 8;
		CHECK(dec(h) == -EBADMSG);
		h.flags = PFS_FLAG_REPLY | (1u << 31);
		CHECK(dec(h) == -EBADMSG);
	}
	SECTION("short buffers") {
		pfs_header_encode(&h, b.data());
		for (__u32 len = 0; len < PFS_HEADER_SIZE; len++) {
			Copy c(b.data(), len);

			INFO("length " << len);
			CHECK(pfs_header_decode(&out, c.buf.get(), len) ==
			      -EBADMSG);
		}
	}
}

// ---- every message body round trips ------------------------------------

TEST_CASE("proto: reply status", "[proto]")
{
	Msg m(pfs_x_reply_status);

	SECTION("ok carries no message") {
		m.body.status = PFS_OK;
		CHECK(encode(m).size() == 4);
		check_message(m);
	}
	SECTION("error carries its message") {
		m.body.status = PFS_E_UNKNOWN_TARGET;
		set_str(m.body.message, "target 7 is not registered");
		CHECK(encode(m).size() == 4 + 2 + 26);
		check_message(m);
	}
	SECTION("errno status with empty message") {
		m.body.status = ENOSPC;
		check_message(m);
	}
	SECTION("a decoded ok status clears the message") {
		m.body.status = PFS_OK;
		Bytes b = encode(m);
		Msg out(pfs_x_reply_status);
		struct pfs_xdr x;

		set_str(out.body.message, "stale");
		pfs_xdr_init_decode(&x, b.data(), (__u32)b.size());
		REQUIRE(pfs_x_reply_status(&x, &out.body) == 0);
		CHECK(out.body.message[0] == '\0');
	}
}

TEST_CASE("proto: authentication messages", "[proto]")
{
	Msg c(pfs_x_auth_challenge);
	Msg r(pfs_x_auth_response);
	Msg p(pfs_x_auth_proof);

	for (int i = 0; i < PFS_AUTH_NONCE_LEN; i++)
		c.body.nonce[i] = (__u8)(i * 7 + 1);
	for (int i = 0; i < PFS_AUTH_NONCE_LEN; i++)
		r.body.nonce[i] = (__u8)(255 - i);
	for (int i = 0; i < PFS_AUTH_MAC_LEN; i++)
		r.body.mac[i] = (__u8)(i ^ 0x5a);
	for (int i = 0; i < PFS_AUTH_MAC_LEN; i++)
		p.body.mac[i] = (__u8)(i * 3);
	r.body.role = PFS_ROLE_ADMIN;
	r.body.flags = PFS_AUTH_FRAME_MAC;
	p.body.flags = PFS_AUTH_FRAME_MAC;
	CHECK(encode(c).size() == PFS_AUTH_NONCE_LEN);
	CHECK(encode(r).size() == PFS_AUTH_NONCE_LEN + PFS_AUTH_MAC_LEN + 2);
	CHECK(encode(p).size() == PFS_AUTH_MAC_LEN + 1);
	check_message(c);
	check_message(r);
	check_message(p);

	// A role outside 1..3 or an unknown flag is refused.
	for (int bad = 0; bad < 3; bad++) {
		Msg x(pfs_x_auth_response);

		x.body = r.body;
		if (bad == 0)
			x.body.role = 0;
		else if (bad == 1)
			x.body.role = PFS_ROLE_MAX + 1;
		else
			x.body.flags = 0x80;
		Bytes b = encode(x);
		Msg out(pfs_x_auth_response);
		CHECK(decode(out, b) == -EBADMSG);
	}
	Msg t(pfs_x_client_token);
	for (int i = 0; i < PFS_CLIENT_TOKEN_LEN; i++)
		t.body.token[i] = (__u8)(i + 9);
	CHECK(encode(t).size() == PFS_CLIENT_TOKEN_LEN);
	check_message(t);
	Msg bound(pfs_x_client_bound);
	bound.body.client_id = 0x1122334455667788ULL;
	check_message(bound);
	bound.body.client_id = 0;
	Bytes zero = encode(bound);
	CHECK(decode(bound, zero) == -EBADMSG);	/* 0 is no client */
}

TEST_CASE("proto: every message has a name and says who may send it", "[proto]")
{
	CHECK(std::string(pfs_msg_name(PFS_MSG_BIND_CLIENT)) == "BIND_CLIENT");
	CHECK(pfs_msg_sent_by(PFS_MSG_LOOKUP) == PFS_SENT_BY_ANY);
	CHECK(pfs_msg_sent_by(PFS_MSG_MOVE) == PFS_SENT_BY_SERVER);
	CHECK(pfs_msg_sent_by(PFS_MSG_SET_TARGET_STATE) == PFS_SENT_BY_ADMIN);
	CHECK(pfs_msg_sent_by(PFS_MSG_CHUNK_UNLINK_MANY) == PFS_SENT_BY_ADMIN);
	CHECK(pfs_msg_sent_by(PFS_MSG_MAP_CHANGED) == PFS_SENT_BY_NONE);
	CHECK(pfs_msg_sent_by(9999) == PFS_SENT_BY_NONE);
	/* Clients may never send what servers send each other. */
	const __u16 server_only[] = {
		PFS_MSG_REGISTER_TARGET, PFS_MSG_HEARTBEAT, PFS_MSG_MKDIR_DETACHED,
		PFS_MSG_MOVE,
		PFS_MSG_REMOTE_LINK, PFS_MSG_ENTRY_DROP,
	};
	for (__u16 type : server_only) {
		INFO(pfs_msg_name(type));
		CHECK_FALSE(pfs_msg_sent_by(type) & (1u << PFS_ROLE_CLIENT));
		CHECK_FALSE(pfs_msg_sent_by(type) & (1u << PFS_ROLE_ADMIN));
		CHECK(pfs_msg_sent_by(type) & (1u << PFS_ROLE_SERVER));
	}
	for (unsigned type = 0; type < 65536; type++) {
		const char *name = pfs_msg_name((__u16)type);

		if (std::string(name) == "?")
			CHECK(pfs_msg_sent_by((__u16)type) == PFS_SENT_BY_NONE);
	}
}

TEST_CASE("proto: fixed-size bodies round trip", "[proto]")
{
	SECTION("ping reply") {
		Msg m(pfs_x_ping_reply);
		m.body.node_id = 12;
		m.body.node_type = PFS_NODE_META;
		check_message(m);
	}
	SECTION("capacity") {
		Msg m(pfs_x_capacity);
		fill(m.body);
		CHECK(encode(m).size() == 32);
		check_message(m);
		m.body.bytes_free = m.body.bytes_total;	// full equality ok
		m.body.inodes_free = m.body.inodes_total;
		check_message(m);
	}
	SECTION("register node reply") {
		Msg m(pfs_x_register_node_reply);
		m.body.node_id = 5;
		m.body.map_version = 0xffffffffffffffffULL;
		check_message(m);
	}
	SECTION("register target reply") {
		Msg m(pfs_x_register_target_reply);
		m.body.target_id = 101;
		m.body.pool_id = 2;
		check_message(m);
	}
	SECTION("target capacity") {
		Msg m(pfs_x_target_capacity);
		fill(m.body, 101);
		check_message(m);
	}
	SECTION("map version") {
		Msg m(pfs_x_map_version);
		m.body.map_version = 77;
		check_message(m);
	}
	SECTION("get nodes") {
		Msg m(pfs_x_get_nodes);
		m.body.node_type = 0;	// all
		check_message(m);
		m.body.node_type = PFS_NODE_CLIENT;
		check_message(m);
	}
	SECTION("assign pool") {
		Msg m(pfs_x_assign_pool);
		m.body.target_id = 101;
		m.body.pool_id = 3;
		check_message(m);
	}
	SECTION("set target state") {
		Msg m(pfs_x_set_target_state);
		m.body.target_id = 101;
		m.body.consistency = PFS_CONS_BAD;
		check_message(m);
	}
	SECTION("map changed") {
		Msg m(pfs_x_map_changed);
		m.body.map_version = 8;
		m.body.changes = PFS_CHANGE_TARGETS | PFS_CHANGE_CAPACITY;
		check_message(m);
	}
	SECTION("entry id") {
		Msg m(pfs_x_entry_id);
		m.body.ino = 0x8000000000000001ULL;
		m.body.owner_node = 2;
		m.body.generation = 0xdeadbeef;
		CHECK(encode(m).size() == 16);
		check_message(m);
	}
	SECTION("chunk ref") {
		Msg m(pfs_x_chunk_ref);
		fill(m.body, 101);
		CHECK(encode(m).size() == 20);
		check_message(m);
	}
	SECTION("chunk io") {
		Msg m(pfs_x_chunk_io);
		fill(m.body.chunk, 102);
		m.body.offset = PFS_MAX_FILE_OFFSET;	// largest accepted
		m.body.length = PFS_MAX_IO;
		CHECK(encode(m).size() == 32);
		check_message(m);
		m.body.offset = (5ULL << 30) + 7;
		m.body.length = 0;
		check_message(m);
	}
	SECTION("chunk truncate") {
		Msg m(pfs_x_chunk_truncate);
		fill(m.body.chunk, 103);
		m.body.size = 10ULL << 30;
		CHECK(encode(m).size() == 28);
		check_message(m);
	}
	SECTION("chunk stat") {
		Msg m(pfs_x_chunk_stat);
		m.body.size = 0x0102030405060708ULL;
		m.body.allocated = 4096;
		CHECK(encode(m).size() == 16);
		check_message(m);
	}
	SECTION("chunk written") {
		Msg m(pfs_x_chunk_written);
		m.body.length = PFS_MAX_IO;
		m.body.verifier = 0x1122334455667788ULL;
		CHECK(encode(m).size() == 12);
		check_message(m);
		Msg synced(pfs_x_chunk_synced);
		synced.body.verifier = 0x8877665544332211ULL;
		CHECK(encode(synced).size() == 8);
		check_message(synced);
		Msg inl(pfs_x_inline_written);
		inl.body.written = m.body;
		inl.body.attr.id = { 77, 2, 1 };
		inl.body.attr.mode = 0100644;
		inl.body.attr.nlink = 1;
		inl.body.attr.size = 5000;
		inl.body.attr.blocks = PFS_BLOCKS_UNKNOWN;
		inl.body.attr.mtime = { 1700000000, 123 };
		Msg attr(pfs_x_attr);
		CHECK(size_of(inl) == 12 + size_of(attr));
		check_message(inl);
	}
}

TEST_CASE("proto: chunk messages reject what no server may act on", "[proto]")
{
	auto ref = sample<struct pfs_chunk_ref>(101);
	auto io = zeroed<struct pfs_chunk_io>();
	auto tr = zeroed<struct pfs_chunk_truncate>();
	auto none = [](Bytes &) {};

	fill(io.chunk, 101);
	fill(tr.chunk, 101);
	SECTION("target 0 names no target") {
		ref.target_id = 0;
		CHECK(decode_patched(pfs_x_chunk_ref, ref, none) == -EBADMSG);
		io.chunk.target_id = 0;
		CHECK(decode_patched(pfs_x_chunk_io, io, none) == -EBADMSG);
		tr.chunk.target_id = 0;
		CHECK(decode_patched(pfs_x_chunk_truncate, tr, none) == -EBADMSG);
	}
	SECTION("more than PFS_MAX_IO bytes in one request") {
		io.length = PFS_MAX_IO + 1;
		CHECK(decode_patched(pfs_x_chunk_io, io, none) == -EBADMSG);
		io.length = 0xffffffffu;
		CHECK(decode_patched(pfs_x_chunk_io, io, none) == -EBADMSG);
	}
	SECTION("offsets and sizes beyond PFS_MAX_FILE_OFFSET") {
		io.offset = PFS_MAX_FILE_OFFSET + 1;
		CHECK(decode_patched(pfs_x_chunk_io, io, none) == -EBADMSG);
		io.offset = ~0ULL;
		CHECK(decode_patched(pfs_x_chunk_io, io, none) == -EBADMSG);
		tr.size = PFS_MAX_FILE_OFFSET + 1;
		CHECK(decode_patched(pfs_x_chunk_truncate, tr, none) == -EBADMSG);
		tr.size = PFS_MAX_FILE_OFFSET;
		CHECK(decode_patched(pfs_x_chunk_truncate, tr, none) == 0);
	}
}

TEST_CASE("proto: bulk blocks name only memory that holds what they say", "[proto]")
{
	auto none = [](Bytes &) {};
	auto inl = zeroed<struct pfs_bulk>();
	auto rdma = zeroed<struct pfs_bulk>();

	inl.place = PFS_BULK_INLINE;
	inl.in_len = 4096;
	inl.out_len = PFS_MAX_IO;
	rdma.place = PFS_BULK_RDMA;
	rdma.in_len = 100;
	rdma.out_len = 300;
	rdma.nin = 1;
	rdma.in[0] = { 0x10000, 0x1234, 100 };
	rdma.nout = 2;
	rdma.out[0] = { 0x20000, 0x5678, 256 };
	rdma.out[1] = { 0x40000, 0x9abc, 44 };
	SECTION("round trips, the segments only with RDMA") {
		Msg<struct pfs_bulk> a(pfs_x_bulk), b(pfs_x_bulk);

		a.body = inl;
		check_message(a);
		CHECK(encode(a).size() == 9);
		b.body = rdma;
		check_message(b);
		CHECK(encode(b).size() == 11 + 3 * 16);
		rdma.in_len = 0;	/* no in segment on the wire */
		rdma.nin = 0;
		rdma.in[0] = {};
		b.body = rdma;
		check_message(b);
		CHECK(encode(b).size() == 11 + 2 * 16);
	}
	SECTION("lengths beyond PFS_MAX_IO") {
		inl.in_len = PFS_MAX_IO + 1;
		CHECK(decode_patched(pfs_x_bulk, inl, none) == -EBADMSG);
		inl.in_len = 0;
		inl.out_len = 0xffffffffu;
		CHECK(decode_patched(pfs_x_bulk, inl, none) == -EBADMSG);
	}
	SECTION("segments that do not add up to their data, or run past the address space") {
		rdma.in[0].length = 99;
		CHECK(decode_patched(pfs_x_bulk, rdma, none) == -EBADMSG);
		rdma.in[0].length = 101;
		CHECK(decode_patched(pfs_x_bulk, rdma, none) == -EBADMSG);
		rdma.in[0].length = 100;
		rdma.out[1].length = 45;
		CHECK(decode_patched(pfs_x_bulk, rdma, none) == -EBADMSG);
		rdma.out[1].length = 44;
		rdma.out[1].addr = ~0ULL - 10;
		CHECK(decode_patched(pfs_x_bulk, rdma, none) == -EBADMSG);
		rdma.out[1].addr = 0x40000;
		CHECK(decode_patched(pfs_x_bulk, rdma, none) == 0);
	}
	SECTION("a length without segments, segments without a length, too many, an empty one") {
		rdma.nin = 0;
		CHECK(decode_patched(pfs_x_bulk, rdma, [](Bytes &b) { b.resize(b.size() - 16); }) == -EBADMSG);
		auto no_len = rdma;
		no_len.nin = 1;
		no_len.in_len = 0;
		CHECK(decode_patched(pfs_x_bulk, no_len, none) == -EBADMSG);
		auto many = rdma;
		many.nin = 1;
		CHECK(decode_patched(pfs_x_bulk, many, [](Bytes &b) { b[9] = PFS_BULK_SEGS_MAX + 1; }) == -EBADMSG);
		auto empty = rdma;
		empty.nin = 1;
		empty.out[0].length = 300;
		empty.out[1].length = 0;
		CHECK(decode_patched(pfs_x_bulk, empty, none) == -EBADMSG);
	}
	SECTION("an unknown place") {
		inl.place = 2;
		CHECK(decode_patched(pfs_x_bulk, inl, none) == -EBADMSG);
	}
}

TEST_CASE("proto: bodies with strings round trip", "[proto]")
{
	SECTION("register node") {
		Msg m(pfs_x_register_node);
		m.body.node_id = 0;
		m.body.node_type = PFS_NODE_CLIENT;
		m.body.port = 0;
		set_str(m.body.alias, "client-a");
		set_str(m.body.host, "10.1.2.3");
		check_message(m);
		// Longest strings that fit.
		set_str(m.body.alias, std::string(PFS_ALIAS_MAX - 1, 'a'));
		set_str(m.body.host, std::string(PFS_HOST_MAX - 1, 'h'));
		check_message(m);
		// Empty strings.
		set_str(m.body.alias, "");
		set_str(m.body.host, "");
		check_message(m);
	}
	SECTION("register target") {
		Msg m(pfs_x_register_target);
		m.body.node_id = 4;
		m.body.target_id = 0;
		set_str(m.body.path, "/srv/pfs/storage/t0");
		check_message(m);
	}
	SECTION("node info") {
		Msg m(pfs_x_node_info);
		fill(m.body, 9);
		check_message(m);
	}
	SECTION("target info") {
		Msg m(pfs_x_target_info);
		fill(m.body, 102);
		check_message(m);
	}
	SECTION("pool info") {
		Msg m(pfs_x_pool_info);
		fill(m.body, 2, "fast-nvme");
		check_message(m);
	}
	SECTION("create pool") {
		Msg m(pfs_x_create_pool);
		m.body.pool_id = 0;
		set_str(m.body.name, std::string(PFS_POOL_NAME_MAX - 1, 'p'));
		check_message(m);
	}
	SECTION("READDIR_PLUS entry, with and without attributes") {
		Msg m(pfs_x_dirent_plus);
		m.body.ent.id = { 77, 2, 1 };
		m.body.ent.cookie = 3;
		m.body.ent.type = 8;
		set_str(m.body.ent.name, "file.jpg");
		check_message(m);
		m.body.has_attr = 1;
		m.body.attr.id = m.body.ent.id;
		m.body.attr.mode = 0100644;
		m.body.attr.size = 100 << 10;
		m.body.attr.blocks = PFS_BLOCKS_UNKNOWN;
		check_message(m);
		Msg attr(pfs_x_attr);
		CHECK(size_of(m) == PFS_DIRENT_PLUS_MIN_SIZE + 8 + size_of(attr));
		// has_attr is a flag: 2 is refused.
		Bytes bytes = encode(m);
		bytes[PFS_DIRENT_MIN_SIZE + 8] = 2;
		Msg back(pfs_x_dirent_plus);
		CHECK(decode(back, bytes) == -EBADMSG);
	}
}

TEST_CASE("proto: list replies round trip", "[proto]")
{
	SECTION("heartbeat") {
		HeartbeatMsg m;

		m.body.node_id = 3;
		check_message(m);	// no targets
		for (__u32 i = 0; i < 3; i++)
			fill(m.add(), 100 + i);
		m.body.count = 3;
		check_message(m);
	}
	SECTION("GET_NODES reply") {
		ListMsg m(pfs_x_node_info, PFS_NODE_INFO_MIN_SIZE);
		check_message(m);
		for (__u32 i = 1; i <= 3; i++)
			fill(m.add(), i);
		check_message(m);
	}
	SECTION("GET_TARGETS reply") {
		ListMsg m(pfs_x_target_info, PFS_TARGET_INFO_MIN_SIZE);
		for (__u32 i = 1; i <= 2; i++)
			fill(m.add(), 100 + i);
		check_message(m);
	}
	SECTION("GET_POOLS reply") {
		ListMsg m(pfs_x_pool_info, PFS_POOL_INFO_MIN_SIZE);
		fill(m.add(), 1, "default");
		fill(m.add(), 2, "");
		fill(m.add(), 3, "archive");
		check_message(m);
	}
}

TEST_CASE("proto: MIN_SIZE constants are the smallest encodings", "[proto]")
{
	Msg ni(pfs_x_node_info);
	ni.body.node_type = PFS_NODE_MGMT;
	CHECK(size_of(ni) == PFS_NODE_INFO_MIN_SIZE);

	Msg ti(pfs_x_target_info);
	CHECK(size_of(ti) == PFS_TARGET_INFO_MIN_SIZE);

	Msg pi(pfs_x_pool_info);
	CHECK(size_of(pi) == PFS_POOL_INFO_MIN_SIZE);

	Msg tc(pfs_x_target_capacity);
	CHECK(size_of(tc) == PFS_TARGET_CAP_MIN_SIZE);

	Msg de(pfs_x_dirent);
	CHECK(size_of(de) == PFS_DIRENT_MIN_SIZE);

	Msg dp(pfs_x_dirent_plus);
	CHECK(size_of(dp) == PFS_DIRENT_PLUS_MIN_SIZE);
}

// ---- strings ----------------------------------------------------------

TEST_CASE("proto: string bounds", "[proto]")
{
	struct pfs_xdr x;
	char s[8];

	SECTION("exactly cap-1 characters round trip") {
		Bytes b(2 + 7);
		std::strcpy(s, "1234567");
		pfs_xdr_init_encode(&x, b.data(), (__u32)b.size());
		REQUIRE(pfs_x_str(&x, s, sizeof(s)) == 0);
		REQUIRE(x.pos == b.size());
		char out[8] = "zzzzzzz";
		pfs_xdr_init_decode(&x, b.data(), (__u32)b.size());
		REQUIRE(pfs_x_str(&x, out, sizeof(out)) == 0);
		CHECK(pfs_xdr_finish(&x) == 0);
		CHECK(std::string(out) == "1234567");
	}
	SECTION("decoding a string too long for the buffer") {
		Bytes b = { 8, 0, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h' };
		pfs_xdr_init_decode(&x, b.data(), (__u32)b.size());
		CHECK(pfs_x_str(&x, s, sizeof(s)) == -EBADMSG);
		Bytes huge = { 0xff, 0xff, 'a' };
		pfs_xdr_init_decode(&x, huge.data(), (__u32)huge.size());
		CHECK(pfs_x_str(&x, s, sizeof(s)) == -EBADMSG);
	}
	SECTION("length beyond the bytes left") {
		Bytes b = { 5, 0, 'a', 'b' };
		pfs_xdr_init_decode(&x, b.data(), (__u32)b.size());
		CHECK(pfs_x_str(&x, s, sizeof(s)) == -EBADMSG);
	}
	SECTION("embedded NUL") {
		Bytes b = { 3, 0, 'a', 0, 'b' };
		pfs_xdr_init_decode(&x, b.data(), (__u32)b.size());
		CHECK(pfs_x_str(&x, s, sizeof(s)) == -EBADMSG);
		Bytes t = { 1, 0, 0 };
		pfs_xdr_init_decode(&x, t.data(), (__u32)t.size());
		CHECK(pfs_x_str(&x, s, sizeof(s)) == -EBADMSG);
	}
	SECTION("empty string") {
		Bytes b = { 0, 0 };
		std::strcpy(s, "old");
		pfs_xdr_init_decode(&x, b.data(), (__u32)b.size());
		CHECK(pfs_x_str(&x, s, sizeof(s)) == 0);
		CHECK(s[0] == '\0');
	}
	SECTION("encoding an unterminated buffer") {
		Bytes b(64);
		std::memset(s, 'x', sizeof(s));
		pfs_xdr_init_encode(&x, b.data(), (__u32)b.size());
		CHECK(pfs_x_str(&x, s, sizeof(s)) == -EINVAL);
		pfs_xdr_init_size(&x);
		CHECK(pfs_x_str(&x, s, sizeof(s)) == -EINVAL);
	}
	SECTION("bad capacities") {
		Bytes b = { 0, 0 };
		pfs_xdr_init_decode(&x, b.data(), (__u32)b.size());
		CHECK(pfs_x_str(&x, s, 0) == -EINVAL);
		pfs_xdr_init_decode(&x, b.data(), (__u32)b.size());
		CHECK(pfs_x_str(&x, s, 0x10001) == -EINVAL);
	}
	SECTION("too long strings inside messages") {
		// A 64-byte alias in REGISTER_NODE (cap 64) is rejected.
		Msg m(pfs_x_register_node);
		m.body.node_type = PFS_NODE_META;
		set_str(m.body.alias, std::string(PFS_ALIAS_MAX - 1, 'a'));
		Bytes b = encode(m);
		// alias length at offset 8; grow it by one and add a byte.
		put_u16(b, 8, PFS_ALIAS_MAX);
		b.insert(b.begin() + 10, 'a');
		Msg out(pfs_x_register_node);
		CHECK(decode(out, b) == -EBADMSG);
	}
}

// ---- counts -----------------------------------------------------------

TEST_CASE("proto: list counts", "[proto]")
{
	struct pfs_xdr x;
	__u32 n;

	SECTION("count above max") {
		// Enough bytes follow, the count is still too large.
		Bytes b(4 + (std::size_t)(PFS_MAX_LIST + 1) * 6);
		put_u32(b, 0, PFS_MAX_LIST + 1);
		pfs_xdr_init_decode(&x, b.data(), (__u32)b.size());
		CHECK(pfs_x_count(&x, &n, PFS_MAX_LIST, 6) == -EBADMSG);
		put_u32(b, 0, PFS_MAX_LIST);
		pfs_xdr_init_decode(&x, b.data(), (__u32)b.size());
		CHECK(pfs_x_count(&x, &n, PFS_MAX_LIST, 6) == 0);
		CHECK(n == PFS_MAX_LIST);
		put_u32(b, 0, 0xffffffffu);
		pfs_xdr_init_decode(&x, b.data(), (__u32)b.size());
		CHECK(pfs_x_count(&x, &n, PFS_MAX_LIST, 0) == -EBADMSG);
	}
	SECTION("count larger than the bytes left allow") {
		Bytes b(4 + 2 * PFS_POOL_INFO_MIN_SIZE);
		put_u32(b, 0, 3);
		pfs_xdr_init_decode(&x, b.data(), (__u32)b.size());
		CHECK(pfs_x_count(&x, &n, PFS_MAX_LIST,
				  PFS_POOL_INFO_MIN_SIZE) == -EBADMSG);
		put_u32(b, 0, 2);
		pfs_xdr_init_decode(&x, b.data(), (__u32)b.size());
		CHECK(pfs_x_count(&x, &n, PFS_MAX_LIST,
				  PFS_POOL_INFO_MIN_SIZE) == 0);
		CHECK(n == 2);
	}
	SECTION("hostile counts in list replies") {
		ListMsg m(pfs_x_node_info, PFS_NODE_INFO_MIN_SIZE);
		fill(m.add(), 1);
		Bytes b = encode(m);
		auto out = m;
		put_u32(b, 0, 2);
		CHECK(decode(out, b) == -EBADMSG);
		put_u32(b, 0, 1000000);
		CHECK(decode(out, b) == -EBADMSG);
		put_u32(b, 0, 0);
		CHECK(decode(out, b) == -EBADMSG);	// trailing element
	}
	SECTION("hostile heartbeat count") {
		HeartbeatMsg m;
		m.body.count = 1;
		fill(m.add(), 1);
		Bytes b = encode(m);
		HeartbeatMsg out;
		put_u32(b, 4, 2);
		CHECK(decode(out, b) == -EBADMSG);
		put_u32(b, 4, 0xffffffffu);
		CHECK(decode(out, b) == -EBADMSG);
	}
	SECTION("encoding a count above max") {
		Bytes b(8);
		n = PFS_MAX_LIST + 1;
		pfs_xdr_init_encode(&x, b.data(), (__u32)b.size());
		CHECK(pfs_x_count(&x, &n, PFS_MAX_LIST, 6) == -EMSGSIZE);
		pfs_xdr_init_size(&x);
		CHECK(pfs_x_count(&x, &n, PFS_MAX_LIST, 6) == -EMSGSIZE);
	}
}

// ---- enumerations and ranges --------------------------------------------

TEST_CASE("proto: enumerations out of range are rejected", "[proto]")
{
	SECTION("node types") {
		auto in = zeroed<struct pfs_ping_reply>();
		in.node_type = PFS_NODE_STORAGE;
		for (unsigned t : { 0u, 5u, 0xffffu })
			CHECK(decode_patched(pfs_x_ping_reply, in, [&](Bytes &b) {
				      put_u16(b, 4, t);
			      }) == -EBADMSG);
		for (unsigned t = PFS_NODE_MGMT; t <= PFS_NODE_CLIENT; t++)
			CHECK(decode_patched(pfs_x_ping_reply, in, [&](Bytes &b) {
				      put_u16(b, 4, t);
			      }) == 0);

		auto rn = zeroed<struct pfs_register_node>();
		rn.node_type = PFS_NODE_META;
		CHECK(decode_patched(pfs_x_register_node, rn, [](Bytes &b) {
			      put_u16(b, 4, 0);
		      }) == -EBADMSG);

		// GET_NODES accepts 0 (all) but nothing above CLIENT.
		auto gn = zeroed<struct pfs_get_nodes>();
		CHECK(decode_patched(pfs_x_get_nodes, gn, [](Bytes &) {}) == 0);
		CHECK(decode_patched(pfs_x_get_nodes, gn, [](Bytes &b) {
			      put_u16(b, 0, 5);
		      }) == -EBADMSG);
	}
	SECTION("node info reachability") {
		auto in = sample<struct pfs_node_info>(1);
		CHECK(decode_patched(pfs_x_node_info, in, [](Bytes &b) {
			      b.at(8) = PFS_REACH_OFFLINE + 1;
		      }) == -EBADMSG);
		CHECK(decode_patched(pfs_x_node_info, in, [](Bytes &b) {
			      put_u16(b, 4, 9);
		      }) == -EBADMSG);
	}
	SECTION("target info states") {
		auto in = sample<struct pfs_target_info>(1);
		for (std::size_t at = 12; at < 16; at++) {
			INFO("byte " << at);
			CHECK(decode_patched(pfs_x_target_info, in, [&](Bytes &b) {
				      b.at(at) = 3;
			      }) == -EBADMSG);
			CHECK(decode_patched(pfs_x_target_info, in, [&](Bytes &b) {
				      b.at(at) = 0xff;
			      }) == -EBADMSG);
			CHECK(decode_patched(pfs_x_target_info, in, [&](Bytes &b) {
				      b.at(at) = 2;
			      }) == 0);
		}
	}
	SECTION("set target state") {
		auto in = zeroed<struct pfs_set_target_state>();
		CHECK(decode_patched(pfs_x_set_target_state, in, [](Bytes &b) {
			      b.at(4) = PFS_CONS_BAD + 1;
		      }) == -EBADMSG);
	}
}

TEST_CASE("proto: special files: MKNOD, rdev, btime, d_type", "[proto]")
{
	SECTION("MKNOD takes special types with permission bits only") {
		Msg m(pfs_x_mknod);
		m.body.dir = { 1, 2, 1 };
		set_str(m.body.name, "tty");
		m.body.mode = 0020620;
		m.body.rdev = pfs_encode_dev(4, 1);
		check_message(m);
		// the mode sits after the id (16) and the name (2 + 3)
		const unsigned bad[] = { 0100644, 0040755, 0120777, 0,
					 0170000 | 0600, 0010000 | 0200000 };
		for (unsigned mode : bad) {
			INFO("mode 0" << std::oct << mode);
			CHECK(decode_patched(pfs_x_mknod, m.body, [&](Bytes &b) {
				      put_u32(b, 21, mode);
			      }) == -EBADMSG);
		}
		for (unsigned mode : { 0010644u, 0140755u, 0020600u, 0060600u })
			CHECK(decode_patched(pfs_x_mknod, m.body, [&](Bytes &b) {
				      put_u32(b, 21, mode);
			      }) == 0);
	}
	SECTION("attributes carry rdev and btime") {
		Msg m(pfs_x_attr);
		m.body.id = { 77, 2, 1 };
		m.body.mode = 0060600;
		m.body.nlink = 1;
		m.body.rdev = pfs_encode_dev(4000, 300000);
		m.body.btime = { 1700000000, 999999999 };
		check_message(m);
		Msg<struct pfs_attr> out(pfs_x_attr);
		REQUIRE(decode(out, encode(m)) == 0);
		CHECK(pfs_dev_major(out.body.rdev) == 4000);
		CHECK(pfs_dev_minor(out.body.rdev) == 300000);
		CHECK(out.body.btime.sec == 1700000000);
	}
	SECTION("entries moved in of unknown types are refused") {
		auto rl = zeroed<struct pfs_remote_link>();
		for (unsigned t = 0; t < 256; t++) {
			bool known = t == DT_FIFO || t == DT_CHR || t == DT_DIR ||
				     t == DT_BLK || t == DT_REG || t == DT_LNK ||
				     t == DT_SOCK;
			INFO("type " << t);
			// after the dir id (16), the empty name (2), the id (16)
			CHECK(decode_patched(pfs_x_remote_link, rl, [&](Bytes &b) {
				      b.at(34) = (std::uint8_t)t;
			      }) == (known ? 0 : -EBADMSG));
			CHECK(pfs_dtype_valid((__u8)t) == known);
		}
	}
}

TEST_CASE("proto: capacity with free > total is rejected", "[proto]")
{
	auto c = sample<struct pfs_capacity>();

	SECTION("bytes") {
		c.bytes_free = c.bytes_total + 1;
		CHECK(decode_patched(pfs_x_capacity, c, [](Bytes &) {}) ==
		      -EBADMSG);
	}
	SECTION("inodes") {
		c.inodes_free = c.inodes_total + 1;
		CHECK(decode_patched(pfs_x_capacity, c, [](Bytes &) {}) ==
		      -EBADMSG);
	}
	SECTION("inside other messages") {
		auto n = sample<struct pfs_node_info>(1);
		n.cap.bytes_free = ~0ULL;
		n.cap.bytes_total = 0;
		CHECK(decode_patched(pfs_x_node_info, n, [](Bytes &) {}) ==
		      -EBADMSG);
		auto t = sample<struct pfs_target_info>(1);
		t.cap.inodes_free = 2;
		t.cap.inodes_total = 1;
		CHECK(decode_patched(pfs_x_target_info, t, [](Bytes &) {}) ==
		      -EBADMSG);
		auto tc = sample<struct pfs_target_capacity>(1);
		tc.cap.bytes_free = tc.cap.bytes_total + 1;
		CHECK(decode_patched(pfs_x_target_capacity, tc,
				     [](Bytes &) {}) == -EBADMSG);
	}
}

// ---- XDR primitives ----------------------------------------------------

TEST_CASE("proto: xdr primitives", "[proto]")
{
	struct pfs_xdr x;

	SECTION("little endian integers") {
		Bytes b(1 + 2 + 4 + 8 + 4 + 8);
		__u8 a = 0x11;
		__u16 s = 0x2233;
		__u32 w = 0x44556677;
		__u64 q = 0x8899aabbccddeeffULL;
		__s32 sw = -2;
		__s64 sq = -3;

		pfs_xdr_init_encode(&x, b.data(), (__u32)b.size());
		pfs_x_u8(&x, &a);
		pfs_x_u16(&x, &s);
		pfs_x_u32(&x, &w);
		pfs_x_u64(&x, &q);
		pfs_x_s32(&x, &sw);
		pfs_x_s64(&x, &sq);
		REQUIRE(x.err == 0);
		REQUIRE(x.pos == b.size());
		Bytes want = { 0x11, 0x33, 0x22, 0x77, 0x66, 0x55, 0x44,
			       0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88,
			       0xfe, 0xff, 0xff, 0xff,
			       0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
		CHECK(b == want);

		__u8 a2 = 0;
		__u16 s2 = 0;
		__u32 w2 = 0;
		__u64 q2 = 0;
		__s32 sw2 = 0;
		__s64 sq2 = 0;
		pfs_xdr_init_decode(&x, b.data(), (__u32)b.size());
		pfs_x_u8(&x, &a2);
		pfs_x_u16(&x, &s2);
		pfs_x_u32(&x, &w2);
		pfs_x_u64(&x, &q2);
		pfs_x_s32(&x, &sw2);
		pfs_x_s64(&x, &sq2);
		CHECK(pfs_xdr_finish(&x) == 0);
		CHECK(a2 == a);
		CHECK(s2 == s);
		CHECK(w2 == w);
		CHECK(q2 == q);
		CHECK(sw2 == sw);
		CHECK(sq2 == sq);
	}
	SECTION("errors are sticky") {
		Bytes b = { 1, 2, 3 };
		__u32 w = 0;
		__u8 a = 0;

		pfs_xdr_init_decode(&x, b.data(), (__u32)b.size());
		CHECK(pfs_x_u32(&x, &w) == -EBADMSG);
		CHECK(pfs_x_u8(&x, &a) == -EBADMSG);	// would fit, no-op
		CHECK(x.pos == 0);
		CHECK(a == 0);
		CHECK(pfs_xdr_finish(&x) == -EBADMSG);
	}
	SECTION("encoding past the buffer") {
		Bytes b(3);
		__u32 w = 1;

		pfs_xdr_init_encode(&x, b.data(), (__u32)b.size());
		CHECK(pfs_x_u32(&x, &w) == -EMSGSIZE);
		CHECK(pfs_xdr_finish(&x) == -EMSGSIZE);
	}
	SECTION("remaining") {
		Bytes b(10);
		__u16 s;

		pfs_xdr_init_decode(&x, b.data(), (__u32)b.size());
		CHECK(pfs_xdr_remaining(&x) == 10);
		pfs_x_u16(&x, &s);
		CHECK(pfs_xdr_remaining(&x) == 8);
		pfs_xdr_init_size(&x);
		CHECK(pfs_xdr_remaining(&x) == 0);
	}
	SECTION("size pass overflow") {
		// Sizing more than 4 GiB fails instead of wrapping.
		static __u8 big[1];
		pfs_xdr_init_size(&x);
		x.pos = 0xfffffff0u;
		CHECK(pfs_x_bytes(&x, big, 0x20) == -EMSGSIZE);
	}
}

// ---- random garbage ------------------------------------------------------

namespace {

// Decodes garbage; what decodes must re-encode to the same bytes.
template <typename M>
void garbage(M &&proto, const Bytes &in)
{
	auto &out = proto;

	if (decode(out, in) != 0)
		return;
	REQUIRE(encode(out) == in);
}

} // namespace

TEST_CASE("proto: random garbage never crashes a decoder", "[proto]")
{
	std::mt19937 rng(20240611);
	std::uniform_int_distribution<int> byte(0, 255);
	std::uniform_int_distribution<int> len(0, 400);
	HeartbeatMsg hb;
	int decoded = 0;

	for (int i = 0; i < 10000; i++) {
		Bytes in((std::size_t)len(rng));
		struct pfs_header h;

		for (auto &c : in)
			c = (std::uint8_t)byte(rng);
		// Make some inputs start plausibly: small lengths and counts.
		if (i % 2 && in.size() >= 4) {
			in[1] = in[2] = in[3] = 0;
			in[0] %= 8;
		}
		if (i % 4 == 1 && in.size() >= PFS_HEADER_SIZE) {
			std::memcpy(in.data(), "PFS1", 4);
			in[4] = PFS_PROTO_VERSION;
			in[5] = 0;
			in[8] &= PFS_FLAGS_KNOWN;	// flags
			in[9] = in[10] = in[11] = 0;
			in[14] = in[15] = 0;		// payload_len
		}

		{
			Copy c(in.data(), in.size());
			if (pfs_header_decode(&h, c.buf.get(), c.len) == 0)
				decoded++;
		}
		garbage(Msg(pfs_x_reply_status), in);
		garbage(Msg(pfs_x_auth_challenge), in);
		garbage(Msg(pfs_x_auth_response), in);
		garbage(Msg(pfs_x_auth_proof), in);
		garbage(Msg(pfs_x_ping_reply), in);
		garbage(Msg(pfs_x_capacity), in);
		garbage(Msg(pfs_x_register_node), in);
		garbage(Msg(pfs_x_register_node_reply), in);
		garbage(Msg(pfs_x_register_target), in);
		garbage(Msg(pfs_x_register_target_reply), in);
		garbage(hb, in);
		garbage(Msg(pfs_x_target_capacity), in);
		garbage(Msg(pfs_x_map_version), in);
		garbage(Msg(pfs_x_get_nodes), in);
		garbage(Msg(pfs_x_node_info), in);
		garbage(Msg(pfs_x_target_info), in);
		garbage(Msg(pfs_x_pool_info), in);
		garbage(Msg(pfs_x_create_pool), in);
		garbage(Msg(pfs_x_assign_pool), in);
		garbage(Msg(pfs_x_set_target_state), in);
		garbage(Msg(pfs_x_map_changed), in);
		garbage(Msg(pfs_x_entry_id), in);
		garbage(Msg(pfs_x_chunk_ref), in);
		garbage(Msg(pfs_x_chunk_io), in);
		garbage(Msg(pfs_x_chunk_truncate), in);
		garbage(Msg(pfs_x_chunk_stat), in);
		garbage(Msg(pfs_x_chunk_written), in);
		garbage(Msg(pfs_x_inline_written), in);
		garbage(Msg(pfs_x_mknod), in);
		garbage(Msg(pfs_x_attr), in);
		garbage(Msg(pfs_x_dirent), in);
		garbage(Msg(pfs_x_dirent_plus), in);
		garbage(ListMsg(pfs_x_node_info,
				PFS_NODE_INFO_MIN_SIZE), in);
		garbage(ListMsg(pfs_x_target_info,
				PFS_TARGET_INFO_MIN_SIZE), in);
		garbage(ListMsg(pfs_x_pool_info,
				PFS_POOL_INFO_MIN_SIZE), in);
	}
	CHECK(decoded > 0);
}

// ---- stripe math -------------------------------------------------------

TEST_CASE("stripe: layout check", "[proto][stripe]")
{
	CHECK(pfs_stripe_check(PFS_CHUNK_SIZE_MIN, 1) == 0);
	CHECK(pfs_stripe_check(PFS_CHUNK_SIZE_MAX, PFS_STRIPE_TARGETS_MAX) == 0);
	CHECK(pfs_stripe_check(512u << 10, 4) == 0);
	CHECK(pfs_stripe_check(0, 1) == -EINVAL);
	CHECK(pfs_stripe_check(PFS_CHUNK_SIZE_MIN / 2, 1) == -EINVAL);
	CHECK(pfs_stripe_check(PFS_CHUNK_SIZE_MIN - 1, 1) == -EINVAL);
	CHECK(pfs_stripe_check(PFS_CHUNK_SIZE_MIN + 1, 1) == -EINVAL);
	CHECK(pfs_stripe_check(3 * PFS_CHUNK_SIZE_MIN, 1) == -EINVAL);
	CHECK(pfs_stripe_check(PFS_CHUNK_SIZE_MAX * 2u, 1) == -EINVAL);
	CHECK(pfs_stripe_check(0xffffffffu, 1) == -EINVAL);
	CHECK(pfs_stripe_check(PFS_CHUNK_SIZE_MIN, 0) == -EINVAL);
	CHECK(pfs_stripe_check(PFS_CHUNK_SIZE_MIN,
			       PFS_STRIPE_TARGETS_MAX + 1) == -EINVAL);
}

namespace {

struct pfs_stripe_pos locate(__u32 chunk, __u32 n, __u64 off)
{
	struct pfs_stripe_pos p;

	std::memset(&p, 0xa5, sizeof(p));
	pfs_stripe_locate(chunk, n, off, &p);
	return p;
}

void check_pos(const struct pfs_stripe_pos &p, __u32 index, __u32 in_chunk,
	       __u64 file_off)
{
	CHECK(p.target_index == index);
	CHECK(p.offset_in_chunk == in_chunk);
	CHECK(p.chunk_file_offset == file_off);
}

} // namespace

TEST_CASE("stripe: locate", "[proto][stripe]")
{
	const __u32 c = 64u << 10;
	const __u32 n = 4;

	check_pos(locate(c, n, 0), 0, 0, 0);
	check_pos(locate(c, n, c - 1), 0, c - 1, c - 1);
	check_pos(locate(c, n, c), 1, 0, 0);
	check_pos(locate(c, n, c + 1), 1, 1, 1);
	check_pos(locate(c, n, 3ULL * c + 5), 3, 5, 5);
	check_pos(locate(c, n, 4ULL * c), 0, 0, c);
	check_pos(locate(c, n, 4ULL * c + 7), 0, 7, c + 7);
	check_pos(locate(c, n, 9ULL * c + 7), 1, 7, 2ULL * c + 7);
	check_pos(locate(c, 1, 10ULL * c + 3), 0, 3, 10ULL * c + 3);

	// Beyond 4 GiB: 1 MiB chunks over 3 targets; 5 GiB + 123 is in
	// stripe 5120 = 3 * 1706 + 2.
	const __u32 m = 1u << 20;
	check_pos(locate(m, 3, (5ULL << 30) + 123), 2, 123,
		  1706ULL * m + 123);
	// Largest offsets do not overflow.
	const __u64 top = ~0ULL;
	auto p = locate(PFS_CHUNK_SIZE_MAX, PFS_STRIPE_TARGETS_MAX, top);
	__u64 stripe = top >> 30;
	check_pos(p, (__u32)(stripe % PFS_STRIPE_TARGETS_MAX),
		  PFS_CHUNK_SIZE_MAX - 1,
		  ((stripe / PFS_STRIPE_TARGETS_MAX) << 30) +
			  (PFS_CHUNK_SIZE_MAX - 1));

	// Against plain arithmetic for many offsets.
	std::mt19937_64 rng(7);
	for (int i = 0; i < 20000; i++) {
		__u32 chunk = PFS_CHUNK_SIZE_MIN << (rng() % 15);
		__u32 nt = 1 + (__u32)(rng() % PFS_STRIPE_TARGETS_MAX);
		__u64 off = rng() >> (rng() % 64);
		__u64 s = off / chunk;
		auto q = locate(chunk, nt, off);

		INFO("chunk " << chunk << " targets " << nt << " offset " << off);
		REQUIRE(q.target_index == s % nt);
		REQUIRE(q.offset_in_chunk == off % chunk);
		REQUIRE(q.chunk_file_offset == (s / nt) * chunk + off % chunk);
	}
}

TEST_CASE("stripe: target sizes against brute force", "[proto][stripe]")
{
	std::mt19937_64 rng(42);
	int combos = 0;

	for (__u32 chunk : { 64u << 10, 128u << 10, 1u << 20 }) {
		for (__u32 n : { 1u, 2u, 3u, 4u, 7u, 16u, 256u }) {
			const __u64 stripe = (__u64)chunk * n;
			std::vector<__u64> sizes = {
				0, 1, chunk - 1ULL, chunk, chunk + 1ULL,
				stripe - 1, stripe, stripe + 1,
				5 * stripe + chunk / 2, 3 * stripe + 2ULL * chunk,
			};
			for (int i = 0; i < 6; i++)
				sizes.push_back(rng() % (20 * stripe));
			if (chunk == (1u << 20) && n <= 16) {
				sizes.push_back((4ULL << 30) + 1);
				sizes.push_back((5ULL << 30) + 12345);
			}
			for (__u64 size : sizes) {
				// Deal the file out chunk by chunk.
				std::vector<__u64> want(n, 0);
				for (__u64 s = 0; s * chunk < size; s++)
					want[s % n] += std::min<__u64>(
						chunk, size - s * chunk);
				__u64 total = 0;
				for (__u32 t = 0; t < n; t++) {
					__u64 got = pfs_stripe_target_size(
						chunk, n, t, size);
					INFO("chunk " << chunk << " targets " << n
						      << " size " << size
						      << " target " << t);
					REQUIRE(got == want[t]);
					total += got;
				}
				REQUIRE(total == size);
				combos++;
			}
		}
	}
	CHECK(combos > 300);
}

// ---- status codes ------------------------------------------------------

TEST_CASE("proto: striped directories: shards, patterns, cookies", "[proto]")
{
	SECTION("DIR_SHARDS lists 1 to 64 shards") {
		Msg m(pfs_x_dir_shards);
		m.body.count = 3;
		for (__u32 i = 0; i < 3; i++)
			m.body.ids[i] = { 10 + i, 1 + i, 1 };
		check_message(m);
		auto one = zeroed<struct pfs_dir_shards>();
		one.count = 1;
		CHECK(decode_patched(pfs_x_dir_shards, one, [](Bytes &) {}) == 0);
		CHECK(decode_patched(pfs_x_dir_shards, one, [](Bytes &b) {
			      put_u32(b, 0, 0);
		      }) == -EBADMSG);
		CHECK(decode_patched(pfs_x_dir_shards, one, [](Bytes &b) {
			      put_u32(b, 0, PFS_DIR_SHARDS_MAX + 1);
		      }) != 0);
	}
	SECTION("a pattern's dir_stripes, MKDIR_ON's stripes") {
		auto p = zeroed<struct pfs_pattern>();
		p.chunk_size = 1u << 20;
		p.num_targets = 2;
		p.pool_id = 1;
		p.dir_stripes = PFS_DIR_SHARDS_MAX;
		CHECK(decode_patched(pfs_x_pattern, p, [](Bytes &) {}) == 0);
		CHECK(decode_patched(pfs_x_pattern, p, [](Bytes &b) {
			      put_u32(b, 16, PFS_DIR_SHARDS_MAX + 1);
		      }) == -EBADMSG);
		auto on = zeroed<struct pfs_mkdir_on>();
		set_str(on.name, "d");
		on.stripes = 4;
		Msg<struct pfs_mkdir_on> mo(pfs_x_mkdir_on);
		mo.body = on;
		check_message(mo);
		CHECK(decode_patched(pfs_x_mkdir_on, on, [](Bytes &b) {
			      put_u32(b, b.size() - 4, PFS_DIR_SHARDS_MAX + 1);
		      }) == -EBADMSG);
	}
	SECTION("MKDIR_DETACHED names a shard within its directory's stripes") {
		auto md = zeroed<struct pfs_mkdir_detached>();
		md.parent = { 9, 2, 1 };
		md.pattern.chunk_size = 1u << 20;
		md.pattern.num_targets = 1;
		md.pattern.pool_id = 1;
		md.stripes = 3;
		md.shard_index = 2;
		Msg<struct pfs_mkdir_detached> m(pfs_x_mkdir_detached);
		m.body = md;
		check_message(m);
		CHECK(decode_patched(pfs_x_mkdir_detached, md, [](Bytes &b) {
			      put_u32(b, b.size() - 4, 3);
		      }) == -EBADMSG);
	}
	SECTION("cookies carry their shard") {
		CHECK(pfs_cookie_shard(5) == 0);
		CHECK(pfs_cookie_shard((2ull << PFS_COOKIE_SHARD_SHIFT) | 5) == 2);
		CHECK(((7ull << PFS_COOKIE_SHARD_SHIFT | 5) & PFS_COOKIE_LOCAL_MASK) == 5);
	}
}

TEST_CASE("proto: status to errno", "[proto]")
{
	CHECK(pfs_status_to_errno(PFS_OK) == 0);
	CHECK(pfs_status_to_errno(PFS_E_PROTO) == -EPROTO);
	CHECK(pfs_status_to_errno(PFS_E_AUTH) == -EACCES);
	CHECK(pfs_status_to_errno(PFS_E_VERSION) == -EPROTONOSUPPORT);
	CHECK(pfs_status_to_errno(PFS_E_UNKNOWN_MSG) == -EOPNOTSUPP);
	CHECK(pfs_status_to_errno(PFS_E_UNKNOWN_NODE) == -ENOENT);
	CHECK(pfs_status_to_errno(PFS_E_UNKNOWN_TARGET) == -ENOENT);
	CHECK(pfs_status_to_errno(PFS_E_UNKNOWN_POOL) == -ENOENT);
	CHECK(pfs_status_to_errno(PFS_E_INTERNAL) == -EIO);
	// 1..999 are errno numbers.
	CHECK(pfs_status_to_errno(ENOENT) == -ENOENT);
	CHECK(pfs_status_to_errno(ENOSPC) == -ENOSPC);
	CHECK(pfs_status_to_errno(EEXIST) == -EEXIST);
	CHECK(pfs_status_to_errno(999) == -999);
	// Anything else is an I/O error.
	CHECK(pfs_status_to_errno(-1) == -EIO);
	CHECK(pfs_status_to_errno(-ENOENT) == -EIO);
	CHECK(pfs_status_to_errno(PFS_E_MOVED) == -EREMCHG);
	CHECK(pfs_status_to_errno(PFS_E_WRONG_SHARD) == -EREMOTE);
	CHECK(pfs_status_to_errno(1010) == -EIO);
	CHECK(pfs_status_to_errno(0x7fffffff) == -EIO);
	CHECK(pfs_status_to_errno((__s32)0x80000000) == -EIO);

	CHECK(std::string(pfs_status_name(PFS_OK)) == "ok");
	CHECK(std::string(pfs_status_name(PFS_E_UNKNOWN_POOL)) ==
	      "unknown storage pool");
	CHECK(std::string(pfs_status_name(ENOENT)) == "system error");
	CHECK(std::string(pfs_status_name(5000)) == "unknown status");
	CHECK(std::string(pfs_msg_name(PFS_MSG_HEARTBEAT)) == "HEARTBEAT");
	CHECK(std::string(pfs_msg_name(PFS_MSG_MAP_CHANGED)) == "MAP_CHANGED");
	CHECK(std::string(pfs_msg_name(0)) == "?");
	CHECK(std::string(pfs_msg_name(9999)) == "?");
}
