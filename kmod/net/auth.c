// SPDX-License-Identifier: GPL-2.0
/*
 * The authentication handshake every connection runs before anything
 * else (the user-space twin is common/cpp/handshake.cpp):
 *
 *   server: AUTH_CHALLENGE   server_nonce
 *   client: AUTH_RESPONSE    client_nonce,
 *                            HMAC(secret, "pfs-auth-v1 client" || sn || cn)
 *   server: AUTH_RESPONSE|REPLY  status, then when OK
 *                            HMAC(secret, "pfs-auth-v1 server" || cn || sn)
 *
 * Both nonces are fresh, so neither side can replay an old exchange, and
 * the client checks the server's proof, so a rogue server that does not
 * know the secret cannot pose as one of ours.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <crypto/algapi.h>
#include <crypto/hash.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/slab.h>

#include "net_int.h"

/* Built in on most kernels; elsewhere they must be there before a mount. */
MODULE_SOFTDEP("pre: hmac sha256");

#define PFS_AUTH_FRAME_MAX	256	/* kHandshakeMaxPayload */

static const char pfs_client_label[] = "pfs-auth-v1 client";
static const char pfs_server_label[] = "pfs-auth-v1 server";

static int pfs_auth_mac(const u8 *secret, size_t secret_len,
			const char *label, const u8 *first, const u8 *second,
			u8 *mac)
{
	struct crypto_shash *tfm;
	int err;

	tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	err = crypto_shash_setkey(tfm, secret, secret_len);
	if (!err) {
		SHASH_DESC_ON_STACK(desc, tfm);

		desc->tfm = tfm;
		err = crypto_shash_init(desc) ?:
		      crypto_shash_update(desc, label, strlen(label)) ?:
		      crypto_shash_update(desc, first, PFS_AUTH_NONCE_LEN) ?:
		      crypto_shash_update(desc, second, PFS_AUTH_NONCE_LEN) ?:
		      crypto_shash_final(desc, mac);
		shash_desc_zero(desc);
	}
	crypto_free_shash(tfm);
	return err;
}

int pfs_auth_client_proof(const u8 *secret, size_t secret_len,
			  const u8 *server_nonce, const u8 *client_nonce,
			  u8 *mac)
{
	return pfs_auth_mac(secret, secret_len, pfs_client_label,
			    server_nonce, client_nonce, mac);
}

int pfs_auth_server_proof(const u8 *secret, size_t secret_len,
			  const u8 *client_nonce, const u8 *server_nonce,
			  u8 *mac)
{
	return pfs_auth_mac(secret, secret_len, pfs_server_label,
			    client_nonce, server_nonce, mac);
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

static int pfs_auth_run(struct pfs_net *net, struct pfs_xprt *x,
			const char *peer, struct pfs_auth_state *s,
			unsigned long deadline)
{
	struct kvec head[2];
	struct pfs_xdr xdr;
	int err;

	err = pfs_auth_read(x, s, PFS_MSG_AUTH_CHALLENGE, deadline);
	if (err)
		return err;
	pfs_xdr_init_decode(&xdr, s->buf, s->h.payload_len);
	pfs_x_auth_challenge(&xdr, &s->challenge);
	if (pfs_xdr_finish(&xdr))
		return -EPROTO;

	get_random_bytes(s->response.nonce, sizeof(s->response.nonce));
	err = pfs_auth_client_proof(net->secret, net->cfg.secret_len,
				    s->challenge.nonce, s->response.nonce,
				    s->response.mac);
	if (err)
		return err;
	pfs_xdr_init_encode(&xdr, s->buf, sizeof(s->buf));
	if (pfs_x_auth_response(&xdr, &s->response))
		return -EINVAL;
	pfs_frame_header(net, PFS_MSG_AUTH_RESPONSE, 1, xdr.pos, s->hdr);
	head[0].iov_base = s->hdr;
	head[0].iov_len = PFS_HEADER_SIZE;
	head[1].iov_base = s->buf;
	head[1].iov_len = xdr.pos;
	err = x->ops->send(x, head, 2, NULL);
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
		pr_err("%s refused the shared secret (authentication failed): check the secret file\n",
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
	err = pfs_auth_server_proof(net->secret, net->cfg.secret_len,
				    s->response.nonce, s->challenge.nonce,
				    s->expect);
	if (err)
		return err;
	if (crypto_memneq(s->expect, s->proof.mac, sizeof(s->expect))) {
		pr_err("%s could not prove it knows the shared secret: refusing it\n",
		       peer);
		return -EACCES;
	}
	return 0;
}

int pfs_auth_handshake(struct pfs_net *net, struct pfs_xprt *x,
		       const char *peer, unsigned long deadline)
{
	struct pfs_auth_state *s;
	int err;

	s = kzalloc(sizeof(*s), GFP_NOFS);
	if (!s)
		return -ENOMEM;
	err = pfs_auth_run(net, x, peer, s, deadline);
	if (err == -EPROTO)
		pr_warn("%s: malformed authentication handshake\n", peer);
	kfree_sensitive(s);
	return err;
}
