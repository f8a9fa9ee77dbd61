// SPDX-License-Identifier: GPL-2.0
/*
 * Keys and the authentication handshake every connection runs before
 * anything else (the user-space twin is common/cpp/auth_crypto.cpp and
 * handshake.cpp):
 *
 *   server: AUTH_CHALLENGE   server_nonce
 *   client: AUTH_RESPONSE    client_nonce,
 *                            HMAC(key, "pfs-auth-v2 client" || sn || cn ||
 *                                 role || flags), role, flags
 *   server: AUTH_RESPONSE|REPLY  status, then when OK
 *                            HMAC(key, "pfs-auth-v2 server" || cn || sn ||
 *                                 role || final flags), final flags
 *
 * key is the client role's key: HMAC(cluster secret, "pfs-role-v1
 * client"), or what a "pfs-key-v1 client HEX" file holds, so a client node
 * needs no more than that key. Both nonces are fresh, so neither side can
 * replay an old exchange; the client checks the server's proof, so a rogue
 * server that does not know the key cannot pose as one of ours. With
 * PFS_AUTH_FRAME_MAC in the final flags both sides then key frame MACs
 * with HMAC(key, "pfs-session-v2" || sn || cn) (mac.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <crypto/algapi.h>
#include <crypto/hash.h>
#include <crypto/sha2.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/slab.h>

#include "net_int.h"

/* Built in on most kernels; elsewhere they must be there before a mount. */
MODULE_SOFTDEP("pre: hmac sha256");

#define PFS_AUTH_FRAME_MAX	256	/* kHandshakeMaxPayload */

static const char pfs_client_label[] = "pfs-auth-v2 client";
static const char pfs_server_label[] = "pfs-auth-v2 server";
static const char pfs_session_label[] = "pfs-session-v2";
static const char pfs_role_label[] = "pfs-role-v1 client";
static const char pfs_client_id_label[] = "pfs-client-id-v1";
static const char pfs_key_magic[] = "pfs-key-v1 ";

/* HMAC-SHA256(key, label || a || b || tail), any of them empty. */
static int pfs_auth_mac(const u8 *key, size_t key_len, const char *label,
			const u8 *a, size_t a_len, const u8 *b, size_t b_len,
			const u8 *tail, size_t tail_len, u8 *mac)
{
	struct crypto_shash *tfm;
	int err;

	tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	err = crypto_shash_setkey(tfm, key, key_len);
	if (!err) {
		SHASH_DESC_ON_STACK(desc, tfm);

		desc->tfm = tfm;
		err = crypto_shash_init(desc) ?:
		      crypto_shash_update(desc, label, strlen(label)) ?:
		      crypto_shash_update(desc, a, a_len) ?:
		      crypto_shash_update(desc, b, b_len) ?:
		      crypto_shash_update(desc, tail, tail_len) ?:
		      crypto_shash_final(desc, mac);
		shash_desc_zero(desc);
	}
	crypto_free_shash(tfm);
	return err;
}

int pfs_auth_client_key(const u8 *file, size_t len, u8 *key)
{
	size_t magic = strlen(pfs_key_magic), role = strlen("client ");

	if (len < magic || memcmp(file, pfs_key_magic, magic))
		return pfs_auth_mac(file, len, pfs_role_label, NULL, 0, NULL,
				    0, NULL, 0, key);
	/* A role key file: "pfs-key-v1 client HEX". */
	if (len != magic + role + 2 * PFS_AUTH_MAC_LEN ||
	    memcmp(file + magic, "client ", role))
		return -EINVAL;
	return hex2bin(key, file + magic + role, PFS_AUTH_MAC_LEN) ?
	       -EINVAL : 0;
}

u64 pfs_auth_client_id(const u8 *token)
{
	u8 digest[SHA256_DIGEST_SIZE];
	struct sha256_state sha;
	u64 id;
	int i;

	sha256_init(&sha);
	sha256_update(&sha, pfs_client_id_label, strlen(pfs_client_id_label));
	sha256_update(&sha, token, PFS_CLIENT_TOKEN_LEN);
	sha256_final(&sha, digest);
	for (i = 7, id = 0; i >= 0; i--)
		id = id << 8 | digest[i];
	memzero_explicit(digest, sizeof(digest));
	return id ?: 1;
}

/* Everything the handshake keeps, off the stack (reply_status is big). */
struct pfs_auth_state {
	struct pfs_header h;
	u8 hdr[PFS_HEADER_SIZE];
	u8 buf[PFS_AUTH_FRAME_MAX];
	struct pfs_auth_challenge challenge;
	struct pfs_auth_response response;
	struct pfs_auth_proof proof;
	u8 expect[PFS_AUTH_MAC_LEN];
	struct pfs_reply_status status;
};

static long pfs_time_left(unsigned long deadline)
{
	long left = (long)(deadline - jiffies);

	return left > 0 ? left : 0;
}

/* Reads one handshake frame of the given type into s->h and s->buf. */
static int pfs_auth_read(struct pfs_xprt *x, struct pfs_auth_state *s,
			 u16 type, unsigned long deadline)
{
	long left = pfs_time_left(deadline);
	int err;

	if (!left)
		return -ETIMEDOUT;
	err = pfs_xprt_recv_buf(x, s->hdr, sizeof(s->hdr), left);
	if (err)
		return err;
	err = pfs_header_decode(&s->h, s->hdr, sizeof(s->hdr));
	if (err)
		return -EPROTO;
	if (s->h.type != type || s->h.payload_len > sizeof(s->buf))
		return -EPROTO;
	left = pfs_time_left(deadline);
	if (!left)
		return -ETIMEDOUT;
	return pfs_xprt_recv_buf(x, s->buf, s->h.payload_len, left);
}

/* The role byte and flags every proof ends with. */
static void pfs_auth_tail(u8 *tail, u8 flags)
{
	tail[0] = PFS_ROLE_CLIENT;
	tail[1] = flags;
}

static int pfs_auth_run(struct pfs_net *net, struct pfs_xprt *x,
			const char *peer, struct pfs_auth_state *s,
			unsigned long deadline, u8 want, u8 *session)
{
	const u8 *key = net->cfg.key;
	struct kvec head[2];
	struct pfs_xdr xdr;
	u8 tail[2];
	int err;

	err = pfs_auth_read(x, s, PFS_MSG_AUTH_CHALLENGE, deadline);
	if (err)
		return err;
	pfs_xdr_init_decode(&xdr, s->buf, s->h.payload_len);
	pfs_x_auth_challenge(&xdr, &s->challenge);
	if (pfs_xdr_finish(&xdr))
		return -EPROTO;

	get_random_bytes(s->response.nonce, sizeof(s->response.nonce));
	s->response.role = PFS_ROLE_CLIENT;
	s->response.flags = want;
	pfs_auth_tail(tail, s->response.flags);
	err = pfs_auth_mac(key, PFS_AUTH_MAC_LEN, pfs_client_label,
			   s->challenge.nonce, PFS_AUTH_NONCE_LEN,
			   s->response.nonce, PFS_AUTH_NONCE_LEN,
			   tail, sizeof(tail), s->response.mac);
	if (err)
		return err;
	pfs_xdr_init_encode(&xdr, s->buf, sizeof(s->buf));
	if (pfs_x_auth_response(&xdr, &s->response))
		return -EINVAL;
	pfs_frame_header(net, PFS_MSG_AUTH_RESPONSE, 0, 1, xdr.pos, s->hdr);
	head[0].iov_base = s->hdr;
	head[0].iov_len = PFS_HEADER_SIZE;
	head[1].iov_base = s->buf;
	head[1].iov_len = xdr.pos;
	err = x->ops->send(x, head, 2, NULL, NULL);
	if (err)
		return err;

	err = pfs_auth_read(x, s, PFS_MSG_AUTH_RESPONSE, deadline);
	if (err)
		return err;
	if (!(s->h.flags & PFS_FLAG_REPLY))
		return -EPROTO;
	pfs_xdr_init_decode(&xdr, s->buf, s->h.payload_len);
	if (pfs_x_reply_status(&xdr, &s->status))
		return -EPROTO;
	if (s->status.status == PFS_E_AUTH) {
		pr_err("%s refused the shared secret (our client key): check the secret file\n",
		       peer);
		return -EACCES;
	}
	if (s->status.status != PFS_OK) {
		pr_err("%s: authentication handshake failed: %s (%s)\n", peer,
		       pfs_status_name(s->status.status), s->status.message);
		return pfs_status_to_errno(s->status.status);
	}
	pfs_x_auth_proof(&xdr, &s->proof);
	if (pfs_xdr_finish(&xdr))
		return -EPROTO;
	pfs_auth_tail(tail, s->proof.flags);
	err = pfs_auth_mac(key, PFS_AUTH_MAC_LEN, pfs_server_label,
			   s->response.nonce, PFS_AUTH_NONCE_LEN,
			   s->challenge.nonce, PFS_AUTH_NONCE_LEN,
			   tail, sizeof(tail), s->expect);
	if (err)
		return err;
	if (crypto_memneq(s->expect, s->proof.mac, sizeof(s->expect))) {
		pr_err("%s could not prove it knows the shared secret (the client key): refusing it\n",
		       peer);
		return -EACCES;
	}
	if ((want & s->proof.flags) != want) {
		pr_err("%s refused frame MACs%s: refusing it\n", peer,
		       (s->proof.flags & PFS_AUTH_FRAME_MAC) ?
		       " over file data" : "");
		return -EACCES;
	}
	if (!(s->proof.flags & PFS_AUTH_FRAME_MAC))
		return s->proof.flags & PFS_AUTH_DATA_MAC ? -EPROTO : 0;
	err = pfs_auth_mac(key, PFS_AUTH_MAC_LEN, pfs_session_label,
			   s->challenge.nonce, PFS_AUTH_NONCE_LEN,
			   s->response.nonce, PFS_AUTH_NONCE_LEN, NULL, 0,
			   session);
	return err ?: s->proof.flags;
}

int pfs_auth_handshake(struct pfs_net *net, struct pfs_xprt *x,
		       const char *peer, unsigned long deadline, u8 want,
		       u8 *session)
{
	struct pfs_auth_state *s;
	int err;

	s = kzalloc(sizeof(*s), GFP_NOFS);
	if (!s)
		return -ENOMEM;
	err = pfs_auth_run(net, x, peer, s, deadline, want, session);
	if (err == -EPROTO)
		pr_warn("%s: malformed authentication handshake\n", peer);
	kfree_sensitive(s);
	return err;
}
