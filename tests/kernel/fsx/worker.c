/*
 * A worker process of pfs-fsx: keeps its own descriptors of the file on
 * each mount (a buffered one and an O_DIRECT one, opened when first
 * needed) and runs the driver's commands with them, moving data through
 * the shared buffer.
 */
#include "fsx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct worker {
	const char *const *paths;
	uint8_t *buf;
	int fd[2][2];		/* [mount][direct] */
	long page;
};

static int fail(struct fsx_reply *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct fsx_reply *r, const char *fmt, ...)
{
	va_list ap;

	r->err = errno ? errno : EIO;
	va_start(ap, fmt);
	vsnprintf(r->what, sizeof(r->what), fmt, ap);
	va_end(ap);
	return -1;
}

static int fd_of(struct worker *w, int mount, int direct,
		 struct fsx_reply *r)
{
	int *fd = &w->fd[mount][direct];

	if (*fd < 0) {
		*fd = open(w->paths[mount],
			   O_RDWR | O_CLOEXEC | (direct ? O_DIRECT : 0));
		if (*fd < 0)
			return fail(r, "open%s of mount %d",
				    direct ? "(O_DIRECT)" : "", mount);
	}
	return *fd;
}

static void close_mount(struct worker *w, int mount, struct fsx_reply *r)
{
	for (int d = 0; d < 2; d++) {
		int fd = w->fd[mount][d];

		w->fd[mount][d] = -1;
		if (fd >= 0 && close(fd) != 0 && !r->err)
			fail(r, "close of mount %d", mount);
	}
}

/* pread/pwrite until len bytes or end of file; one call for O_DIRECT. */
static int64_t io_all(int fd, bool write, uint8_t *buf, uint64_t len,
		      uint64_t off, bool once)
{
	uint64_t done = 0;

	while (done < len) {
		ssize_t n = write ? pwrite(fd, buf + done, len - done,
					   (off_t)(off + done))
				  : pread(fd, buf + done, len - done,
					  (off_t)(off + done));

		if (n < 0)
			return -1;
		if (n == 0 || once) {
			done += (uint64_t)n;
			break;
		}
		done += (uint64_t)n;
	}
	return (int64_t)done;
}

static void do_map(struct worker *w, int fd, const struct fsx_cmd *c,
		   struct fsx_reply *r)
{
	bool write = c->op == OP_MAPWRITE;
	uint64_t base = c->off & ~(uint64_t)(w->page - 1);
	size_t maplen = (size_t)(c->off + c->len - base);
	uint8_t *p;

	if (write) {
		struct stat st;

		if (fstat(fd, &st) != 0) {
			fail(r, "fstat before mapwrite");
			return;
		}
		if ((uint64_t)st.st_size < c->off + c->len &&
		    ftruncate(fd, (off_t)(c->off + c->len)) != 0) {
			fail(r, "ftruncate to %llu before mapwrite",
			     (unsigned long long)(c->off + c->len));
			return;
		}
	}
	p = mmap(NULL, maplen, write ? PROT_READ | PROT_WRITE : PROT_READ,
		 MAP_SHARED, fd, (off_t)base);
	if (p == MAP_FAILED) {
		fail(r, "mmap at %llu", (unsigned long long)base);
		return;
	}
	if (write) {
		memcpy(p + (c->off - base), w->buf, c->len);
		if (msync(p, maplen, MS_SYNC) != 0)
			fail(r, "msync at %llu", (unsigned long long)base);
	} else {
		memcpy(w->buf, p + (c->off - base), c->len);
	}
	if (munmap(p, maplen) != 0 && !r->err)
		fail(r, "munmap at %llu", (unsigned long long)base);
	r->n = (int64_t)c->len;
}

static void do_copy(int fd, const struct fsx_cmd *c, struct fsx_reply *r)
{
	off64_t in = (off64_t)c->off, out = (off64_t)c->off2;
	uint64_t done = 0;

	while (done < c->len) {
		ssize_t n = copy_file_range(fd, &in, fd, &out, c->len - done,
					    0);

		if (n < 0) {
			fail(r, "copy_file_range from %llu",
			     (unsigned long long)in);
			return;
		}
		if (n == 0)
			break;
		done += (uint64_t)n;
	}
	r->n = (int64_t)done;
}

static void do_verify(struct worker *w, const struct fsx_cmd *c,
		      struct fsx_reply *r)
{
	int fd = fd_of(w, c->mount, c->flag, r);
	struct stat st;

	if (fd < 0)
		return;
	if (fstat(fd, &st) != 0) {
		fail(r, "fstat");
		return;
	}
	r->size = st.st_size;
	/* an O_DIRECT read of the whole file: aligned, may end short */
	r->n = io_all(fd, false, w->buf, c->len, 0, false);
	if (r->n < 0)
		fail(r, "%sread of %llu bytes for verify",
		     c->flag ? "O_DIRECT " : "", (unsigned long long)c->len);
}

static void run(struct worker *w, const struct fsx_cmd *c,
		struct fsx_reply *r)
{
	bool direct = c->op == OP_DREAD || c->op == OP_DWRITE;
	int fd;

	if (c->op == OP_VERIFY) {
		do_verify(w, c, r);
		return;
	}
	if (c->op == OP_CLOSE_MOUNT || c->op == OP_REOPEN) {
		close_mount(w, c->mount, r);
		return;
	}
	if (c->op == OP_TRUNCATE && c->flag) {
		if (truncate(w->paths[c->mount], (off_t)c->len) != 0)
			fail(r, "truncate(path, %llu)",
			     (unsigned long long)c->len);
		return;
	}
	fd = fd_of(w, c->mount, direct, r);
	if (fd < 0)
		return;
	switch (c->op) {
	case OP_READ:
	case OP_WRITE:
	case OP_DREAD:
	case OP_DWRITE:
		r->n = io_all(fd, c->op == OP_WRITE || c->op == OP_DWRITE,
			      w->buf, c->len, c->off, direct);
		if (r->n < 0)
			fail(r, "read/write at %llu", (unsigned long long)c->off);
		break;
	case OP_MAPREAD:
	case OP_MAPWRITE:
		do_map(w, fd, c, r);
		break;
	case OP_TRUNCATE:
		if (ftruncate(fd, (off_t)c->len) != 0)
			fail(r, "ftruncate(%llu)", (unsigned long long)c->len);
		break;
	case OP_FALLOC:
	case OP_PUNCH:
	case OP_ZERO:
		if (fallocate(fd, c->flag, (off_t)c->off, (off_t)c->len) != 0)
			fail(r, "fallocate(mode 0x%x, %llu, %llu)", c->flag,
			     (unsigned long long)c->off,
			     (unsigned long long)c->len);
		break;
	case OP_COPY:
		do_copy(fd, c, r);
		break;
	case OP_FSYNC:
		if ((c->flag ? fdatasync(fd) : fsync(fd)) != 0)
			fail(r, c->flag ? "fdatasync" : "fsync");
		break;
	default:
		errno = EINVAL;
		fail(r, "unknown op %d", c->op);
	}
}

void fsx_worker(int id, const char *const paths[2], uint8_t *buf,
		int cmd_fd, int reply_fd)
{
	struct worker w = { .paths = paths, .buf = buf,
			    .fd = { { -1, -1 }, { -1, -1 } },
			    .page = sysconf(_SC_PAGESIZE) };
	struct fsx_cmd c;
	struct fsx_reply r;

	(void)id;
	while (read(cmd_fd, &c, sizeof(c)) == (ssize_t)sizeof(c)) {
		if (c.op == OP_EXIT)
			break;
		memset(&r, 0, sizeof(r));
		errno = 0;
		run(&w, &c, &r);
		if (write(reply_fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
			break;
	}
	for (int m = 0; m < 2; m++) {
		memset(&r, 0, sizeof(r));
		close_mount(&w, m, &r);
	}
	_exit(0);
}
