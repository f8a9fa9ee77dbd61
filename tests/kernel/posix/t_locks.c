/*
 * flock(2) and fcntl(2) record locks between processes. The "across
 * mounts" variants open the file for the other process through the second
 * mount, so the two lock owners are two clients of the file system.
 */
#include "suite.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

#define GiB (1ll << 30)

/* The file as the other process opens it. */
static const char *other_path(bool across)
{
	return across ? t_path2("f") : "f";
}

static int open_f(void)
{
	int fd = SYS(open("f", O_CREAT | O_RDWR, 0644));

	return fd;
}

static int setlk(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET,
			    .l_start = start, .l_len = len };

	return fcntl(fd, cmd, &fl);
}

/* What the other process tries, and what it must get. */
struct attempt {
	const char *path;
	int flock_op;		/* flock(op | LOCK_NB) when set */
	short type;		/* else F_SETLK of this type on the range */
	off_t start, len;
	bool ok;
};

static void attempt_child(void *arg)
{
	const struct attempt *a = arg;
	int fd = SYS(open(a->path, O_RDWR));

	if (a->flock_op) {
		if (a->ok)
			SYS(flock(fd, a->flock_op | LOCK_NB));
		else
			ERR(flock(fd, a->flock_op | LOCK_NB), EWOULDBLOCK);
	} else if (a->ok) {
		SYS(setlk(fd, F_SETLK, a->type, a->start, a->len));
	} else {
		ERR2(setlk(fd, F_SETLK, a->type, a->start, a->len), EAGAIN,
		     EACCES);
	}
}

static void other_flock(bool across, int op, bool ok)
{
	struct attempt a = { other_path(across), op, 0, 0, 0, ok };

	t_run(NULL, attempt_child, &a);
}

static void other_setlk(bool across, short type, off_t start, off_t len,
			bool ok)
{
	struct attempt a = { other_path(across), 0, type, start, len, ok };

	t_run(NULL, attempt_child, &a);
}

static void flock_exclusive(bool across)
{
	int fd = open_f();

	other_path(across);
	SYS(flock(fd, LOCK_EX));
	other_flock(across, LOCK_EX, false);
	other_flock(across, LOCK_SH, false);
	SYS(flock(fd, LOCK_UN));
	other_flock(across, LOCK_EX, true);
	/* the other's lock ended with its process */
	SYS(flock(fd, LOCK_EX | LOCK_NB));
}

static void flock_shared(bool across)
{
	int fd = open_f();

	other_path(across);
	SYS(flock(fd, LOCK_SH));
	other_flock(across, LOCK_SH, true);
	other_flock(across, LOCK_EX, false);
	/* shared to exclusive in place */
	SYS(flock(fd, LOCK_EX | LOCK_NB));
	other_flock(across, LOCK_SH, false);
}

static void flock_per_open(void)
{
	int a = open_f(), b = open_f(), c = dup(a);

	/* flock belongs to the open file, not to the process */
	SYS(flock(a, LOCK_EX));
	ERR(flock(b, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	SYS(flock(c, LOCK_EX | LOCK_NB));
	SYS(close(a));
	ERR(flock(b, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	SYS(close(c));
	SYS(flock(b, LOCK_EX | LOCK_NB));
}

static void fcntl_ranges(bool across)
{
	int fd = open_f();

	other_path(across);
	SYS(setlk(fd, F_SETLK, F_WRLCK, 0, 100));
	other_setlk(across, F_WRLCK, 50, 100, false);
	other_setlk(across, F_RDLCK, 0, 10, false);
	other_setlk(across, F_WRLCK, 99, 1, false);
	other_setlk(across, F_WRLCK, 100, 100, true);
	/* read locks share */
	SYS(setlk(fd, F_SETLK, F_RDLCK, 0, 100));
	other_setlk(across, F_RDLCK, 0, 100, true);
	other_setlk(across, F_WRLCK, 10, 1, false);
	SYS(setlk(fd, F_SETLK, F_UNLCK, 0, 100));
	other_setlk(across, F_WRLCK, 0, 100, true);
}

struct probe {
	const char *path;
	off_t start, len;
	short want_type;
	off_t want_start, want_len;
	pid_t want_pid;
	bool pid_strict;
};

static void getlk_child(void *arg)
{
	const struct probe *p = arg;
	int fd = SYS(open(p->path, O_RDWR));
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = p->start, .l_len = p->len };

	SYS(fcntl(fd, F_GETLK, &fl));
	CHECK_EQ(fl.l_type, p->want_type);
	if (p->want_type == F_UNLCK)
		return;
	CHECK_EQ(fl.l_whence, SEEK_SET);
	CHECK_EQ(fl.l_start, p->want_start);
	CHECK_EQ(fl.l_len, p->want_len);
	if (p->pid_strict)
		CHECK_EQ(fl.l_pid, p->want_pid);
	else if (fl.l_pid != p->want_pid)
		t_note("F_GETLK across mounts names pid %d, the holder is %d",
		       (int)fl.l_pid, (int)p->want_pid);
}

static void fcntl_getlk(bool across)
{
	int fd = open_f();
	struct probe p = { other_path(across), 0, 1, F_WRLCK, 0, 100,
			   getpid(), !across };

	SYS(setlk(fd, F_SETLK, F_WRLCK, 0, 100));
	t_run(NULL, getlk_child, &p);
	p.start = 99;
	p.len = 50;
	t_run(NULL, getlk_child, &p);
	p.start = 100;
	p.want_type = F_UNLCK;
	t_run(NULL, getlk_child, &p);
	/* a read lock is reported as one */
	SYS(setlk(fd, F_SETLK, F_RDLCK, 0, 100));
	p.start = 5;
	p.want_type = F_RDLCK;
	t_run(NULL, getlk_child, &p);
}

/* Polls until pid sleeps in the kernel (blocked on the lock). */
static void wait_blocked(pid_t pid)
{
	char path[64], buf[512];
	double deadline = t_now() + t_wait_s;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	do {
		int fd = open(path, O_RDONLY);

		if (fd < 0) {
			t_note("no %s (%s): not checking that the waiter "
			       "sleeps", path, strerror(errno));
			return;
		}
		ssize_t n = SYS(read(fd, buf, sizeof(buf) - 1));

		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		char *state = strrchr(buf, ')');

		if (state && (state[2] == 'S' || state[2] == 'D'))
			return;
	} while (t_now() < deadline);
	T_FAIL("the F_SETLKW waiter never went to sleep");
}

struct waiter {
	const char *path;
	int ready, got, done;	/* pipe ends this side writes/reads */
};

static void waiter_child(void *arg)
{
	const struct waiter *w = arg;
	int fd = SYS(open(w->path, O_RDWR));

	t_send(w->ready, 'r');
	SYS(setlk(fd, F_SETLKW, F_WRLCK, 0, 100));
	t_send(w->got, 'g');
	t_recv(w->done, 'x');
}

static void fcntl_setlkw(bool across)
{
	int fd = open_f(), ready[2], got[2], done[2];
	struct t_proc p;

	other_path(across);
	t_pipe(ready);
	t_pipe(got);
	t_pipe(done);
	struct waiter w = { other_path(across), ready[1], got[1], done[0] };

	SYS(setlk(fd, F_SETLK, F_WRLCK, 0, 100));
	t_spawn(&p, NULL, waiter_child, &w);
	t_recv(ready[0], 'r');
	wait_blocked(p.pid);
	CHECKF(!t_ready(got[0]), "the waiter got the lock while it was held");
	SYS(setlk(fd, F_SETLK, F_UNLCK, 0, 100));
	t_recv(got[0], 'g');
	/* the lock is the waiter's now */
	ERR2(setlk(fd, F_SETLK, F_WRLCK, 50, 1), EAGAIN, EACCES);
	t_send(done[1], 'x');
	t_join(&p);
	SYS(setlk(fd, F_SETLK, F_WRLCK, 0, 100));
}

struct holder {
	const char *path;
	int held, go;
};

static void holder_child(void *arg)
{
	const struct holder *h = arg;
	int fd = SYS(open(h->path, O_RDWR));

	SYS(setlk(fd, F_SETLK, F_WRLCK, 0, 100));
	SYS(flock(fd, LOCK_EX | LOCK_NB));
	t_send(h->held, 'h');
	t_recv(h->go, 'x');
	/* exit without unlocking or closing */
	_exit(0);
}

static void released_on_exit(bool across)
{
	int held[2], go[2];
	struct t_proc p;

	t_pipe(held);
	t_pipe(go);
	struct holder h = { other_path(across), held[1], go[0] };

	SYS(close(open_f()));
	t_spawn(&p, NULL, holder_child, &h);
	t_recv(held[0], 'h');
	int fd = open_f();

	ERR2(setlk(fd, F_SETLK, F_WRLCK, 10, 10), EAGAIN, EACCES);
	ERR(flock(fd, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	t_send(go[1], 'x');
	t_join(&p);
	SYS(setlk(fd, F_SETLK, F_WRLCK, 0, 100));
	SYS(flock(fd, LOCK_EX | LOCK_NB));
}

static void close_releases(void)
{
	int fd = open_f();

	SYS(setlk(fd, F_SETLK, F_WRLCK, 0, 100));
	other_setlk(false, F_WRLCK, 0, 1, false);
	/* POSIX: closing any fd of the file drops the process's locks */
	SYS(close(SYS(open("f", O_RDONLY))));
	other_setlk(false, F_WRLCK, 0, 100, true);
}

static void split_and_far(void)
{
	int fd = open_f();

	SYS(setlk(fd, F_SETLK, F_WRLCK, 0, 100));
	SYS(setlk(fd, F_SETLK, F_UNLCK, 40, 20));
	other_setlk(false, F_WRLCK, 40, 20, true);
	other_setlk(false, F_WRLCK, 39, 1, false);
	other_setlk(false, F_WRLCK, 60, 1, false);
	/* ranges past EOF and past 4 GiB; len 0 runs to the end of time */
	SYS(setlk(fd, F_SETLK, F_WRLCK, 5 * GiB, 10));
	other_setlk(false, F_WRLCK, 5 * GiB + 9, 1, false);
	other_setlk(false, F_WRLCK, 5 * GiB + 10, 1, true);
	other_setlk(false, F_WRLCK, GiB + 9, 1, true);
	SYS(setlk(fd, F_SETLK, F_WRLCK, 6 * GiB, 0));
	other_setlk(false, F_WRLCK, 1ll << 50, 1, false);
	ERR(setlk(fd, F_SETLK, F_WRLCK, -1, 1), EINVAL);
}

static void flock_ex(void) { flock_exclusive(false); }
static void flock_ex_x(void) { flock_exclusive(true); }
static void flock_sh(void) { flock_shared(false); }
static void flock_sh_x(void) { flock_shared(true); }
static void ranges(void) { fcntl_ranges(false); }
static void ranges_x(void) { fcntl_ranges(true); }
static void getlk(void) { fcntl_getlk(false); }
static void getlk_x(void) { fcntl_getlk(true); }
static void setlkw(void) { fcntl_setlkw(false); }
static void setlkw_x(void) { fcntl_setlkw(true); }
static void on_exit_(void) { released_on_exit(false); }
static void on_exit_x(void) { released_on_exit(true); }

static const struct t_case cases[] = {
	{ "flock LOCK_EX vs LOCK_EX|LOCK_NB gives EWOULDBLOCK", flock_ex },
	{ "flock LOCK_SH + LOCK_SH, upgrade", flock_sh },
	{ "flock belongs to the open file", flock_per_open },
	{ "F_SETLK ranges conflict, disjoint ones do not", ranges },
	{ "F_GETLK reports holder pid and range", getlk },
	{ "F_SETLKW waiter gets the lock after unlock", setlkw },
	{ "locks released when the holder exits", on_exit_ },
	{ "closing any fd releases POSIX locks", close_releases },
	{ "unlock splits a range; ranges past 4 GiB", split_and_far },
	{ "across mounts: flock LOCK_EX", flock_ex_x },
	{ "across mounts: flock LOCK_SH", flock_sh_x },
	{ "across mounts: F_SETLK ranges", ranges_x },
	{ "across mounts: F_GETLK", getlk_x },
	{ "across mounts: F_SETLKW waiter", setlkw_x },
	{ "across mounts: released on exit", on_exit_x },
	{ NULL, NULL },
};

const struct t_group t_group_locks = { "locks", cases };
