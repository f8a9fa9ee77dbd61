/*
 * The runner: command line, scratch tree, one TAP line per case, verdicts
 * that leave a case early, and children that report back.
 */
#include "suite.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const struct t_cred T_USER_A = { 1000, 1000, 0, { 0 } };
const struct t_cred T_USER_B = { 65534, 65534, 0, { 0 } };
const struct t_cred T_USER_B_IN_A = { 65534, 65534, 1, { 1000 } };

int t_wait_s = 60;

static const struct t_group *const groups[] = {
	&t_group_life,	  &t_group_rename,   &t_group_links, &t_group_perms,
	&t_group_acl,	  &t_group_xattr,    &t_group_sparse, &t_group_append,
	&t_group_truncate, &t_group_mmap,    &t_group_fsync, &t_group_direct,
	&t_group_unlinked, &t_group_locks,   &t_group_readdir, &t_group_cross,
	&t_group_space,
	&t_group_special,  &t_group_replaced, &t_group_statx,
	&t_group_tmpfile,
};
#define NGROUPS (sizeof(groups) / sizeof(groups[0]))

enum { R_PASS, R_FAIL, R_SKIP };

/* The run. */
static char root[PATH_MAX + 32];	/* DIR/pfs-posix.PID */
static char root2[PATH_MAX + 32];	/* DIR2/pfs-posix.PID, or "" */
static bool users_ok;		/* uid 1000/65534 can reach the scratch tree */

/* The case in progress. */
static char case_rel[128];	/* case directory relative to root */
static jmp_buf case_jmp;
static int case_result;
static char case_msg[1024];
static char alarm_line[512];
static int case_timeout_s = 300;

/* Children still running, killed when a case ends early. */
#define MAX_LIVE 32
static pid_t live[MAX_LIVE];
/* Memory of t_alloc, freed when the case ends. */
#define MAX_ALLOCS 64
static void *allocs[MAX_ALLOCS];

static bool in_child;
static int child_msg_fd = -1;

/* ---- verdicts ------------------------------------------------------------ */

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "unknown errno";
}

static noreturn void finish(int result, const char *msg)
{
	if (in_child) {
		char buf[sizeof(case_msg) + 1];
		int n = snprintf(buf, sizeof(buf), "%c%s",
				 result == R_FAIL ? 'F' : 'S', msg);

		if (n > (int)sizeof(buf) - 1)
			n = sizeof(buf) - 1;
		if (write(child_msg_fd, buf, n) < 0) {
			/* the parent reports the exit status alone */
		}
		_exit(result == R_FAIL ? 1 : 2);
	}
	case_result = result;
	snprintf(case_msg, sizeof(case_msg), "%s", msg);
	for (char *c = case_msg; *c; c++)
		if (*c == '\n' || *c == '#')
			*c = ' ';
	longjmp(case_jmp, 1);
}

void t_fail_at(const char *file, int line, const char *fmt, ...)
{
	char msg[900], out[1024];
	const char *base = strrchr(file, '/');
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(out, sizeof(out), "%s (%s:%d)%s", msg, base ? base + 1 : file,
		 line, in_child ? " [in child]" : "");
	finish(R_FAIL, out);
}

void t_skip(const char *fmt, ...)
{
	char msg[900];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	finish(R_SKIP, msg);
}

void t_note(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

long t_sys_at(long ret, const char *expr, const char *file, int line)
{
	if (ret < 0)
		t_fail_at(file, line, "%s: %s", expr, errname(errno));
	return ret;
}

void t_err_at(long ret, int e1, int e2, const char *expr, const char *file,
	      int line)
{
	int e = errno;

	if (ret != -1)
		t_fail_at(file, line, "%s gave %ld, expected %s", expr, ret,
			  errname(e1));
	if (e != e1 && e != e2)
		t_fail_at(file, line, "%s: %s, expected %s%s%s", expr,
			  errname(e), errname(e1), e1 == e2 ? "" : " or ",
			  e1 == e2 ? "" : errname(e2));
}

void t_eq_at(long long a, long long b, const char *ea, const char *eb,
	     const char *file, int line)
{
	if (a != b)
		t_fail_at(file, line, "%s == %s: %lld != %lld", ea, eb, a, b);
}

/* ---- environment --------------------------------------------------------- */

void t_need_root(void)
{
	if (geteuid() != 0)
		t_skip("needs root");
	if (!users_ok)
		t_skip("uid %u cannot reach the scratch directory %s (make "
		       "every directory above it searchable by others)",
		       (unsigned)T_USER_A.uid, root);
}

bool t_have_mount2(void)
{
	return root2[0] != '\0';
}

static const char *ring_path(const char *fmt, const char *a, const char *b,
			     const char *c)
{
	static char ring[8][PATH_MAX];
	static unsigned next;
	char *p = ring[next++ % 8];

	if (snprintf(p, PATH_MAX, fmt, a, b, c) >= PATH_MAX)
		T_FAIL("path too long");
	return p;
}

const char *t_path2(const char *rel)
{
	if (!t_have_mount2())
		t_skip("no second mount given (DIR2)");
	return ring_path("%s/%s/%s", root2, case_rel, rel);
}

const char *t_shared(const char *name)
{
	return ring_path("%s/%s%s", root, name, "");
}

double t_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *track(void *p, size_t n)
{
	if (!p)
		T_FAIL("out of memory (%zu bytes)", n);
	for (int i = 0; i < MAX_ALLOCS; i++) {
		if (!allocs[i]) {
			allocs[i] = p;
			return p;
		}
	}
	free(p);
	T_FAIL("more than %d allocations in one case", MAX_ALLOCS);
}

void *t_alloc(size_t n)
{
	return track(calloc(1, n ? n : 1), n);
}

void *t_alloc_aligned(size_t n)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, n) != 0)
		p = NULL;
	else
		memset(p, 0, n);
	return track(p, n);
}

/* ---- processes ----------------------------------------------------------- */

static void drop_to(const struct t_cred *c)
{
	SYS(setgroups(c->ngroups, c->groups));
	SYS(setresgid(c->gid, c->gid, c->gid));
	SYS(setresuid(c->uid, c->uid, c->uid));
}

void t_spawn(struct t_proc *p, const struct t_cred *cred, void (*fn)(void *),
	     void *arg)
{
	int fds[2], slot = -1;

	for (int i = 0; i < MAX_LIVE && slot < 0; i++)
		if (!live[i])
			slot = i;
	if (slot < 0)
		T_FAIL("too many children");
	SYS(pipe2(fds, O_CLOEXEC));
	fflush(stdout);
	p->pid = SYS(fork());
	if (p->pid == 0) {
		close(fds[0]);
		in_child = true;
		child_msg_fd = fds[1];
		if (cred)
			drop_to(cred);
		fn(arg);
		_exit(0);
	}
	close(fds[1]);
	p->msg_fd = fds[0];
	live[slot] = p->pid;
}

/* Collects a child that has exited: its messages and status. */
static int collect(struct t_proc *p, int status, char *msg, size_t cap)
{
	size_t n = 0;
	ssize_t r;

	for (int i = 0; i < MAX_LIVE; i++)
		if (live[i] == p->pid)
			live[i] = 0;
	while (n < cap - 1 && (r = read(p->msg_fd, msg + n, cap - 1 - n)) > 0)
		n += r;
	msg[n] = '\0';
	close(p->msg_fd);
	return status;
}

/* The verdict of an exited child: its signal, or 0 after a clean exit. */
static int verdict(struct t_proc *p, int status)
{
	char msg[sizeof(case_msg) + 1];

	collect(p, status, msg, sizeof(msg));
	if (WIFSIGNALED(status))
		return WTERMSIG(status);
	if (msg[0] == 'F')
		finish(R_FAIL, msg + 1);
	if (msg[0] == 'S')
		finish(R_SKIP, msg + 1);
	if (WEXITSTATUS(status) != 0)
		T_FAIL("child %d exited with %d", (int)p->pid,
		       WEXITSTATUS(status));
	return 0;
}

int t_join_signal(struct t_proc *p)
{
	int status;

	while (waitpid(p->pid, &status, 0) < 0)
		if (errno != EINTR)
			T_FAIL("waitpid: %s", strerror(errno));
	return verdict(p, status);
}

bool t_done(struct t_proc *p)
{
	int status, sig;
	pid_t w = SYS(waitpid(p->pid, &status, WNOHANG));

	if (w == 0)
		return false;
	sig = verdict(p, status);
	if (sig)
		T_FAIL("child %d killed by signal %d (%s)", (int)p->pid, sig,
		       strsignal(sig));
	return true;
}

void t_join(struct t_proc *p)
{
	int sig = t_join_signal(p);

	if (sig)
		T_FAIL("child %d killed by signal %d (%s)", (int)p->pid, sig,
		       strsignal(sig));
}

void t_pipe(int fds[2])
{
	SYS(pipe2(fds, O_CLOEXEC));
}

void t_send(int fd, char c)
{
	CHECK_EQ(SYS(write(fd, &c, 1)), 1);
}

void t_recv(int fd, char c)
{
	double deadline = t_now() + t_wait_s;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char got;

	for (;;) {
		int left = (int)((deadline - t_now()) * 1000);

		if (left < 0)
			T_FAIL("no '%c' from the other process within %ds", c,
			       t_wait_s);
		if (poll(&pfd, 1, left) > 0)
			break;
	}
	ssize_t n = read(fd, &got, 1);
	if (n == 0)
		T_FAIL("the other process closed the pipe before '%c'", c);
	SYS(n);
	CHECKF(got == c, "expected '%c' from the other process, got '%c'", c,
	       got);
}

bool t_ready(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return SYS(poll(&pfd, 1, 0)) > 0;
}

/* ---- the run ------------------------------------------------------------- */

static int rm_one(const char *path, const struct stat *st, int type,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DNR)
		chmod(path, 0700);
	if (remove(path) != 0 && errno != ENOENT)
		t_note("cleanup: cannot remove %s: %s", path, strerror(errno));
	return 0;
}

static void rmtree(const char *path)
{
	nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static void on_alarm(int sig)
{
	(void)sig;
	if (write(1, alarm_line, strlen(alarm_line)) < 0) {
		/* nothing left to tell anyone */
	}
	for (int i = 0; i < MAX_LIVE; i++)
		if (live[i])
			kill(live[i], SIGKILL);
	_exit(1);
}

static void close_from(int fd)
{
	if (syscall(SYS_close_range, fd, ~0U, 0) != 0)
		for (int i = fd; i < 4096; i++)
			close(i);
}

static int run_case(const struct t_group *g, int idx, int number)
{
	const struct t_case *c = &g->cases[idx];
	char dir[sizeof(root) + sizeof(case_rel) + 2];
	double t0 = t_now();

	snprintf(case_rel, sizeof(case_rel), "%s.%02d", g->name, idx + 1);
	snprintf(dir, sizeof(dir), "%s/%s", root, case_rel);
	snprintf(alarm_line, sizeof(alarm_line),
		 "not ok %d - %s: %s: timed out after %ds\n", number, g->name,
		 c->name, case_timeout_s);
	case_msg[0] = '\0';
	if (mkdir(dir, 0755) != 0 || chmod(dir, 0755) != 0 || chdir(dir) != 0) {
		case_result = R_FAIL;
		snprintf(case_msg, sizeof(case_msg), "cannot set up %.900s: %s",
			 dir, strerror(errno));
	} else {
		alarm(case_timeout_s);
		if (setjmp(case_jmp) == 0) {
			c->fn();
			case_result = R_PASS;
		}
		alarm(0);
	}
	for (int i = 0; i < MAX_LIVE; i++) {
		if (live[i]) {
			kill(live[i], SIGKILL);
			waitpid(live[i], NULL, 0);
			live[i] = 0;
		}
	}
	close_from(3);
	for (int i = 0; i < MAX_ALLOCS; i++) {
		free(allocs[i]);
		allocs[i] = NULL;
	}
	umask(022);
	if (chdir(root) != 0)
		t_note("cannot return to %s: %s", root, strerror(errno));
	rmtree(dir);

	double dt = t_now() - t0;
	if (case_result == R_PASS)
		printf("ok %d - %s: %s", number, g->name, c->name);
	else if (case_result == R_SKIP)
		printf("ok %d - %s: %s # SKIP %s", number, g->name, c->name,
		       case_msg);
	else
		printf("not ok %d - %s: %s: %s", number, g->name, c->name,
		       case_msg);
	if (dt >= 1.0)
		printf(" (%.1fs)", dt);
	putchar('\n');
	fflush(stdout);
	return case_result;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: pfs-posix-suite [-l] [-g GROUP[,GROUP...]] [-c SUBSTRING]"
		" [-x 'GROUP: CASE[|GROUP: CASE...]'] [-t CASE_TIMEOUT_S]"
		" [-w WAIT_S] [-K] DIR [DIR2]\n"
		"  DIR   directory on the file system under test\n"
		"  DIR2  the same directory through a second mount (optional)\n"
		"  -l    list groups and cases; -K keep the scratch tree\n"
		"  -x    skip these cases (as -l names them): known limitations\n");
	exit(2);
}

static bool selected(const char *list, const char *name)
{
	size_t n = strlen(name);

	if (!list)
		return true;
	for (const char *p = list; *p;) {
		const char *e = strchrnul(p, ',');

		if ((size_t)(e - p) == n && !strncmp(p, name, n))
			return true;
		p = *e ? e + 1 : e;
	}
	return false;
}

/* Whether the len bytes at item say "group: name". */
static bool names_case(const char *item, size_t len, const char *group,
		       const char *name)
{
	size_t g = strlen(group);

	return len == g + 2 + strlen(name) && !strncmp(item, group, g) &&
	       !strncmp(item + g, ": ", 2) &&
	       !strncmp(item + g + 2, name, len - g - 2);
}

/* Whether list (cases separated by '|') names "group: name". */
static bool excluded(const char *list, const char *group, const char *name)
{
	for (const char *p = list; p && *p;) {
		const char *e = strchrnul(p, '|');

		if (names_case(p, e - p, group, name))
			return true;
		p = *e ? e + 1 : e;
	}
	return false;
}

/* Every case -x names exists: a typo must not run what it meant to skip. */
static bool exclusions_known(const char *list)
{
	for (const char *p = list; p && *p;) {
		const char *e = strchrnul(p, '|');
		bool found = false;

		for (size_t g = 0; g < NGROUPS; g++)
			for (int i = 0; groups[g]->cases[i].name; i++)
				found |= names_case(p, e - p, groups[g]->name,
						    groups[g]->cases[i].name);
		if (!found) {
			fprintf(stderr, "unknown case '%.*s' (-x)\n",
				(int)(e - p), p);
			return false;
		}
		p = *e ? e + 1 : e;
	}
	return true;
}

/* The second mount must show what the first one wrote. */
static void check_mount2(void)
{
	char mark[64], p1[sizeof(root) + 16], p2[sizeof(root) + 16];
	char got[64] = "";
	FILE *f;

	snprintf(mark, sizeof(mark), "pfs-posix %d %ld", (int)getpid(),
		 (long)time(NULL));
	snprintf(p1, sizeof(p1), "%s/.mount-check", root);
	snprintf(p2, sizeof(p2), "%s/.mount-check", root2);
	f = fopen(p1, "w");
	if (!f || fputs(mark, f) < 0 || fclose(f) != 0) {
		fprintf(stderr, "cannot write %s: %s\n", p1, strerror(errno));
		exit(2);
	}
	f = fopen(p2, "r");
	if (!f || !fgets(got, sizeof(got), f) || strcmp(got, mark) != 0) {
		fprintf(stderr, "%s does not show what %s holds: DIR2 must be "
			"the same directory through a second mount\n", p2, p1);
		exit(2);
	}
	fclose(f);
	unlink(p1);
}

static bool can_reach_as_users(void)
{
	pid_t pid;
	int status;

	if (geteuid() != 0)
		return false;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(1000, 1000, 1000) ||
		    setresuid(1000, 1000, 1000) || access(root, X_OK))
			_exit(1);
		_exit(0);
	}
	return pid > 0 && waitpid(pid, &status, 0) == pid &&
	       WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
	const char *only = NULL, *filter = NULL, *skip = NULL;
	bool list = false, keep = false;
	int opt, number = 0, counts[3] = { 0 };
	char real[PATH_MAX];
	struct statfs sfs;
	double t0 = t_now();

	while ((opt = getopt(argc, argv, "lg:c:x:t:w:K")) != -1) {
		switch (opt) {
		case 'l': list = true; break;
		case 'g': only = optarg; break;
		case 'c': filter = optarg; break;
		case 'x': skip = optarg; break;
		case 't': case_timeout_s = atoi(optarg); break;
		case 'w': t_wait_s = atoi(optarg); break;
		case 'K': keep = true; break;
		default: usage();
		}
	}
	if (list) {
		for (size_t g = 0; g < NGROUPS; g++)
			for (int i = 0; groups[g]->cases[i].name; i++)
				printf("%s: %s\n", groups[g]->name,
				       groups[g]->cases[i].name);
		return 0;
	}
	if (argc - optind < 1 || argc - optind > 2 || case_timeout_s <= 0 ||
	    t_wait_s <= 0)
		usage();
	if (!exclusions_known(skip))
		return 2;
	if (only) {
		/* every name given must exist: a typo must not pass silently */
		for (const char *p = only; *p;) {
			const char *e = strchrnul(p, ',');
			bool found = false;

			for (size_t g = 0; g < NGROUPS; g++)
				found |= strlen(groups[g]->name) ==
						 (size_t)(e - p) &&
					 !strncmp(p, groups[g]->name, e - p);
			if (!found) {
				fprintf(stderr, "unknown group '%.*s'\n",
					(int)(e - p), p);
				return 2;
			}
			p = *e ? e + 1 : e;
		}
	}

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	umask(022);
	close_from(3);
	if (!realpath(argv[optind], real) || statfs(real, &sfs) != 0) {
		fprintf(stderr, "%s: %s\n", argv[optind], strerror(errno));
		return 2;
	}
	snprintf(root, sizeof(root), "%s/pfs-posix.%d", real, (int)getpid());
	if (mkdir(root, 0755) != 0 || chmod(root, 0755) != 0 ||
	    chdir(root) != 0) {
		fprintf(stderr, "%s: %s\n", root, strerror(errno));
		return 2;
	}
	if (argc - optind == 2) {
		if (!realpath(argv[optind + 1], real)) {
			fprintf(stderr, "%s: %s\n", argv[optind + 1],
				strerror(errno));
			return 2;
		}
		snprintf(root2, sizeof(root2), "%s/pfs-posix.%d", real,
			 (int)getpid());
		check_mount2();
	}
	users_ok = can_reach_as_users();
	t_note("pfs-posix-suite in %s (f_type 0x%lx, euid %u)%s%s", root,
	       (unsigned long)sfs.f_type, (unsigned)geteuid(),
	       root2[0] ? ", second mount " : "", root2);
	if (geteuid() == 0 && !users_ok)
		t_note("uid 1000 cannot reach %s: the non-root cases will skip",
		       root);

	for (size_t g = 0; g < NGROUPS; g++) {
		if (!selected(only, groups[g]->name))
			continue;
		for (int i = 0; groups[g]->cases[i].name; i++) {
			if (filter && !strstr(groups[g]->cases[i].name, filter))
				continue;
			if (excluded(skip, groups[g]->name,
				     groups[g]->cases[i].name)) {
				printf("ok %d - %s: %s # SKIP excluded (-x)\n",
				       ++number, groups[g]->name,
				       groups[g]->cases[i].name);
				counts[R_SKIP]++;
				continue;
			}
			counts[run_case(groups[g], i, ++number)]++;
		}
	}
	if (!keep) {
		if (chdir("/") != 0)
			t_note("chdir /: %s", strerror(errno));
		rmtree(root);
	}
	printf("1..%d\n", number);
	t_note("%d passed, %d failed, %d skipped (%d cases, %.1fs)",
	       counts[R_PASS], counts[R_FAIL], counts[R_SKIP], number,
	       t_now() - t0);
	return counts[R_FAIL] ? 1 : 0;
}
