/*
 * The POSIX behaviour suite: a tiny TAP harness and the helpers its cases
 * share.
 *
 * A case is a void function. It runs with its own empty directory as the
 * working directory (on the first mount; t_path2() names the same place
 * through the second one), so cases use relative paths. A failed check
 * leaves the case at once (longjmp in the suite process, _exit in a child),
 * and the runner closes the fds, kills the children and removes the
 * directory the case left behind: cases need no cleanup on their error paths.
 */
#ifndef PFS_POSIX_SUITE_H
#define PFS_POSIX_SUITE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

struct t_case {
	const char *name;
	void (*fn)(void);
};

struct t_group {
	const char *name;
	const struct t_case *cases;	/* ends with { NULL, NULL } */
};

/* Who a child runs as: setgroups(groups), setgid(gid), setuid(uid). */
struct t_cred {
	uid_t uid;
	gid_t gid;
	size_t ngroups;
	gid_t groups[2];
};

/* 1000:1000, 65534:65534 and 65534:65534 with 1000 as a supplementary group */
extern const struct t_cred T_USER_A, T_USER_B, T_USER_B_IN_A;

/* Per-run settings (main.c). */
extern int t_wait_s;		/* deadline of every poll for a condition */

/* ---- verdicts ------------------------------------------------------------ */

noreturn void t_fail_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
noreturn void t_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A TAP diagnostic line ("# ..."): what a case reports without judging. */
void t_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

long t_sys_at(long ret, const char *expr, const char *file, int line);
void t_err_at(long ret, int e1, int e2, const char *expr, const char *file,
	      int line);
void t_eq_at(long long a, long long b, const char *ea, const char *eb,
	     const char *file, int line);

#define T_FAIL(...) t_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK(c) ((c) ? (void)0 : t_fail_at(__FILE__, __LINE__, "%s", #c))
#define CHECKF(c, ...) ((c) ? (void)0 : t_fail_at(__FILE__, __LINE__, __VA_ARGS__))
#define CHECK_EQ(a, b) \
	t_eq_at((long long)(a), (long long)(b), #a, #b, __FILE__, __LINE__)
/* A call that must succeed (return >= 0); gives its result. */
#define SYS(e) t_sys_at((long)(e), #e, __FILE__, __LINE__)
/* A call that must fail (-1) with errno e (or, for ERR2, e1 or e2). */
#define ERR(e, err) t_err_at((long)(e), err, err, #e, __FILE__, __LINE__)
#define ERR2(e, e1, e2) t_err_at((long)(e), e1, e2, #e, __FILE__, __LINE__)

/* ---- environment --------------------------------------------------------- */

void t_need_root(void);		/* skips the case unless euid 0 */
bool t_have_mount2(void);
/* rel seen through the second mount; skips the case when there is none. */
const char *t_path2(const char *rel);
/* A path at the top of this run's scratch tree (shared between cases). */
const char *t_shared(const char *name);
double t_now(void);		/* monotonic seconds */

/* ---- files --------------------------------------------------------------- */

/* Deterministic bytes that depend on the file offset and a seed. */
void t_pattern(void *buf, size_t n, uint64_t off, unsigned seed);
/* Fails the case, naming the first differing offset. */
void t_check_bytes(const void *got, const void *want, size_t n, uint64_t off,
		   const char *what);
void t_check_zero(const void *got, size_t n, uint64_t off, const char *what);
void t_pwrite_all(int fd, const void *buf, size_t n, uint64_t off);
void t_pread_all(int fd, void *buf, size_t n, uint64_t off);
/* Creates or truncates path (mode 0644) and writes n bytes. */
void t_write_file(const char *path, const void *buf, size_t n);
void t_put(const char *path, const char *s);
/* The whole file must be exactly s / n bytes of buf. */
void t_expect_file(const char *path, const void *buf, size_t n);
void t_expect_str(const char *path, const char *s);
void t_expect_fd(int fd, const char *s);	/* pread from 0, exact */
struct stat t_stat(const char *path);
struct stat t_lstat(const char *path);
struct stat t_fstat(int fd);
bool t_exists(const char *path);		/* lstat succeeds */
/* Zeroed memory, freed after the case; the second 4 KiB aligned (O_DIRECT). */
void *t_alloc(size_t n) __attribute__((returns_nonnull, alloc_size(1)));
void *t_alloc_aligned(size_t n)
	__attribute__((returns_nonnull, alloc_size(1)));
int ts_cmp(struct timespec a, struct timespec b);

/* ---- processes ----------------------------------------------------------- */

struct t_proc {
	pid_t pid;
	int msg_fd;
};

/*
 * Runs fn(arg) in a child (as cred unless cred is NULL). CHECK failures in
 * the child are sent back and fail the case at t_join(); t_skip() in the
 * child skips it.
 */
void t_spawn(struct t_proc *p, const struct t_cred *cred, void (*fn)(void *),
	     void *arg);
void t_join(struct t_proc *p);
/* True (after the checks of t_join) once the child has exited. */
bool t_done(struct t_proc *p);
/* Waits for the child; gives the signal that killed it, or 0. */
int t_join_signal(struct t_proc *p);
static inline void t_run(const struct t_cred *cred, void (*fn)(void *),
			 void *arg)
{
	struct t_proc p;

	t_spawn(&p, cred, fn, arg);
	t_join(&p);
}

/* Pipes to order steps between processes: one byte is one event. */
void t_pipe(int fds[2]);
void t_send(int fd, char c);
/* Waits (at most t_wait_s) for the next byte, which must be c. */
void t_recv(int fd, char c);
/* True if a byte is ready to read right now. */
bool t_ready(int fd);

/* ---- groups -------------------------------------------------------------- */

extern const struct t_group t_group_life, t_group_rename, t_group_links,
	t_group_perms, t_group_acl, t_group_xattr, t_group_sparse,
	t_group_append, t_group_truncate, t_group_mmap, t_group_fsync,
	t_group_direct, t_group_unlinked, t_group_locks, t_group_readdir,
	t_group_cross, t_group_space,
	t_group_special, t_group_replaced, t_group_statx,
	t_group_tmpfile;

#endif
