// SPDX-License-Identifier: GPL-2.0
/*
 * The TCP transport: one kernel socket per connection.
 *
 * Every blocking socket call is bounded: connect by the connect timeout,
 * sends by sk_sndtimeo (a server that stops reading cannot hold a sender
 * forever), receives by the timeout the caller passes, and unacknowledged
 * data or unanswered keepalives by TCP_USER_TIMEOUT, so a peer that
 * vanishes without a reset is noticed too.
 *
 * Connects, sends and receives run with every signal but SIGKILL blocked:
 * a caught signal must not cut a frame in half (that would break the byte
 * stream every other request shares), while a fatal one gets the task out
 * at once, wherever it waits: for the peer to accept, to read (a full
 * socket buffer) or to answer. (The kernel's sigprocmask() blocks SIGKILL
 * too when asked to: only the system call keeps it out of the mask.)
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/net.h>
#include <linux/signal.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "pfs_proto.h"
#include "xprt.h"

struct pfs_tcp {
	struct pfs_xprt xprt;
	struct socket *sock;
};

static struct pfs_tcp *pfs_tcp(struct pfs_xprt *x)
{
	return container_of(x, struct pfs_tcp, xprt);
}

static void pfs_block_signals(sigset_t *old)
{
	sigset_t all;

	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigprocmask(SIG_BLOCK, &all, old);
}

static void pfs_restore_signals(const sigset_t *old)
{
	sigprocmask(SIG_SETMASK, (sigset_t *)old, NULL);
}

static long pfs_ms_to_timeo(unsigned int ms)
{
	return ms ? (long)msecs_to_jiffies(ms) : MAX_SCHEDULE_TIMEOUT;
}

static void pfs_tcp_tune(struct sock *sk, unsigned int timeout_ms)
{
	/* Probe an idle peer often enough to notice its death in ~timeout. */
	int probe = clamp_t(int, DIV_ROUND_UP(timeout_ms, 3000), 1, 3600);

	sock_set_keepalive(sk);
	tcp_sock_set_keepidle(sk, probe);
	tcp_sock_set_keepintvl(sk, probe);
	tcp_sock_set_keepcnt(sk, 2);
	tcp_sock_set_user_timeout(sk, timeout_ms);
	WRITE_ONCE(sk->sk_sndtimeo, pfs_ms_to_timeo(timeout_ms));
}

static struct pfs_xprt *pfs_tcp_connect(struct net *ns,
					const struct sockaddr_storage *src,
					const struct sockaddr_storage *addr,
					unsigned int timeout_ms,
					unsigned int send_timeout_ms)
{
	struct pfs_tcp *t;
	struct socket *sock;
	struct sock *sk;
	sigset_t old;
	int addrlen;
	int err;

	switch (addr->ss_family) {
	case AF_INET:
		addrlen = sizeof(struct sockaddr_in);
		break;
	case AF_INET6:
		addrlen = sizeof(struct sockaddr_in6);
		break;
	default:
		return ERR_PTR(-EAFNOSUPPORT);
	}
	t = kzalloc(sizeof(*t), GFP_NOFS);
	if (!t)
		return ERR_PTR(-ENOMEM);
	err = sock_create_kern(ns, addr->ss_family, SOCK_STREAM, IPPROTO_TCP,
			       &sock);
	if (err) {
		kfree(t);
		return ERR_PTR(err);
	}
	sk = sock->sk;
	/* The page-cache writeback path sends on this socket. */
	sk->sk_allocation = GFP_NOFS;
	tcp_sock_set_nodelay(sk);
	/* A blocking connect waits at most sk_sndtimeo. */
	sk->sk_sndtimeo = pfs_ms_to_timeo(timeout_ms);

	pfs_block_signals(&old);
	err = kernel_connect(sock, (struct sockaddr *)addr, addrlen, 0);
	pfs_restore_signals(&old);
	if (err == -EINPROGRESS || err == -EAGAIN || err == -EALREADY)
		err = -ETIMEDOUT;
	else if (err == -ERESTARTSYS)
		err = -EINTR;
	if (err) {
		sock_release(sock);
		kfree(t);
		return ERR_PTR(err);
	}
	pfs_tcp_tune(sk, send_timeout_ms);
	t->xprt.ops = &pfs_tcp_ops;
	t->sock = sock;
	return &t->xprt;
}

static int pfs_tcp_send_iter(struct socket *sock, struct msghdr *msg,
			     int flags, size_t *sent)
{
	int rc;

	while (msg_data_left(msg)) {
		msg->msg_flags = MSG_NOSIGNAL | flags;
		rc = sock_sendmsg(sock, msg);
		if (rc <= 0)
			return rc ? rc : -EIO;
		*sent += rc;
	}
	return 0;
}

static int pfs_tcp_send(struct pfs_xprt *x, struct kvec *head,
			unsigned int nhead, struct iov_iter *data,
			struct kvec *tail)
{
	struct socket *sock = pfs_tcp(x)->sock;
	bool more = data && iov_iter_count(data);
	struct msghdr msg = {};
	size_t len = 0, sent = 0;
	unsigned int i;
	sigset_t old;
	int err;

	for (i = 0; i < nhead; i++)
		len += head[i].iov_len;
	pfs_block_signals(&old);
	iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, head, nhead, len);
	/* MSG_MORE: the header and body leave with the first data bytes. */
	err = pfs_tcp_send_iter(sock, &msg, more || tail ? MSG_MORE : 0,
				&sent);
	if (!err && more) {
		msg.msg_iter = *data;
		err = pfs_tcp_send_iter(sock, &msg, tail ? MSG_MORE : 0,
					&sent);
	}
	if (!err && tail) {
		iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, tail, 1,
			      tail->iov_len);
		err = pfs_tcp_send_iter(sock, &msg, 0, &sent);
	}
	pfs_restore_signals(&old);
	if (!err)
		return 0;
	if (err == -ERESTARTSYS || err == -EINTR)
		return sent ? -EPIPE : -EINTR;
	if (err == -EAGAIN)
		return -ETIMEDOUT;	/* sk_sndtimeo: peer not reading */
	return err;
}

static int pfs_tcp_recv(struct pfs_xprt *x, struct iov_iter *to, long timeout)
{
	struct socket *sock = pfs_tcp(x)->sock;
	unsigned long deadline = jiffies + timeout;
	struct msghdr msg = { .msg_iter = *to };
	sigset_t old;
	int err = 0;
	int rc;

	pfs_block_signals(&old);
	while (msg_data_left(&msg)) {
		/* The bound is for the whole call: a trickle cannot stretch it. */
		if (timeout != MAX_SCHEDULE_TIMEOUT) {
			long left = (long)(deadline - jiffies);

			if (left <= 0) {
				err = -ETIMEDOUT;
				break;
			}
			timeout = left;
		}
		WRITE_ONCE(sock->sk->sk_rcvtimeo, timeout);
		rc = sock_recvmsg(sock, &msg, MSG_WAITALL | MSG_NOSIGNAL);
		if (rc > 0)
			continue;
		if (rc == 0)
			err = -ECONNRESET;
		else if (rc == -EAGAIN)
			err = -ETIMEDOUT;
		else if (rc == -ERESTARTSYS)
			err = -EINTR;
		else
			err = rc;
		break;
	}
	pfs_restore_signals(&old);
	*to = msg.msg_iter;
	return err;
}

static void pfs_tcp_shutdown(struct pfs_xprt *x)
{
	kernel_sock_shutdown(pfs_tcp(x)->sock, SHUT_RDWR);
}

static void pfs_tcp_destroy(struct pfs_xprt *x)
{
	struct pfs_tcp *t = pfs_tcp(x);

	kernel_sock_shutdown(t->sock, SHUT_RDWR);
	sock_release(t->sock);
	kfree(t);
}

/* Bulk data travels in the frames: after the body, after the status. */
static int pfs_tcp_bulk_map(struct pfs_xprt *x, struct pfs_rpc *rpc,
			    struct pfs_bulk *b)
{
	b->place = PFS_BULK_INLINE;
	return 1;
}

static void pfs_tcp_bulk_unmap(struct pfs_xprt *x, struct pfs_rpc *rpc)
{
}

const struct pfs_xprt_ops pfs_tcp_ops = {
	.name = "tcp",
	.connect = pfs_tcp_connect,
	.send = pfs_tcp_send,
	.recv = pfs_tcp_recv,
	.bulk_map = pfs_tcp_bulk_map,
	.bulk_unmap = pfs_tcp_bulk_unmap,
	.shutdown = pfs_tcp_shutdown,
	.destroy = pfs_tcp_destroy,
};
