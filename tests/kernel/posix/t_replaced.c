/*
 * Inodes that lose their last name while a process holds them open: by
 * unlink or rmdir, or replaced by a rename over them. The descriptor keeps
 * working (fstat says nlink 0) until the last close, for every type. And
 * what statx(2) says about an inode's birth, and O_TMPFILE's files, which
 * start with no name.
 */
#include "suite.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* An O_PATH (symlinks, sockets) or O_RDONLY descriptor of name. */
static int hold(const char *name, int flags)
{
	return SYS(open(name, flags | O_CLOEXEC));
}

/* fd's inode is the one fstat said before, its last name gone. */
static void check_orphan(int fd, const struct stat *before, const char *what)
{
	struct stat st;

	CHECKF(fstat(fd, &st) == 0, "fstat of the %s replaced: %s", what,
	       strerrorname_np(errno));
	CHECK_EQ(st.st_ino, before->st_ino);
	CHECK_EQ(st.st_mode, before->st_mode);
	CHECKF(st.st_nlink == 0, "%s: nlink %lu after its last name went",
	       what, (unsigned long)st.st_nlink);
	SYS(close(fd));
}

static void renamed_over_dir(void)
{
	struct stat before;
	int fd;

	SYS(mkdir("victim", 0755));
	SYS(mkdir("new", 0700));
	fd = hold("victim", O_RDONLY | O_DIRECTORY);
	before = t_fstat(fd);
	SYS(rename("new", "victim"));
	CHECK_EQ(t_stat("victim").st_mode & 07777, 0700);
	check_orphan(fd, &before, "directory");
}

static void removed_dir(void)
{
	struct stat before;
	int fd;

	SYS(mkdir("gone", 0755));
	fd = hold("gone", O_RDONLY | O_DIRECTORY);
	before = t_fstat(fd);
	SYS(rmdir("gone"));
	/* an empty, dead directory: no new entries in it */
	ERR(mkdirat(fd, "x", 0755), ENOENT);
	check_orphan(fd, &before, "directory");
}

static void renamed_over_file(void)
{
	struct stat before;
	int fd;

	t_put("victim", "old");
	t_put("new", "new data");
	fd = hold("victim", O_RDONLY);
	before = t_fstat(fd);
	SYS(rename("new", "victim"));
	t_expect_fd(fd, "old");
	check_orphan(fd, &before, "file");
	t_expect_str("victim", "new data");
}

static void renamed_over_symlink(void)
{
	struct stat before;
	int fd;

	SYS(symlink("somewhere", "victim"));
	SYS(symlink("elsewhere", "new"));
	fd = hold("victim", O_PATH | O_NOFOLLOW);
	before = t_fstat(fd);
	CHECKF(S_ISLNK(before.st_mode), "O_PATH|O_NOFOLLOW gave no symlink");
	SYS(rename("new", "victim"));
	check_orphan(fd, &before, "symlink");
}

static void renamed_over_fifo(void)
{
	struct stat before;
	int fd;

	SYS(mkfifo("victim", 0600));
	SYS(mkfifo("new", 0600));
	fd = hold("victim", O_RDWR | O_NONBLOCK);
	before = t_fstat(fd);
	SYS(rename("new", "victim"));
	/* the pipe still works: it is this host's */
	CHECK_EQ(SYS(write(fd, "x", 1)), 1);
	check_orphan(fd, &before, "FIFO");
}

static void unlinked_socket(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = SYS(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	struct stat before;
	int fd;

	snprintf(a.sun_path, sizeof(a.sun_path), "sock");
	SYS(bind(s, (struct sockaddr *)&a, sizeof(a)));
	fd = hold("sock", O_PATH);
	before = t_fstat(fd);
	SYS(unlink("sock"));
	check_orphan(fd, &before, "socket");
	SYS(close(s));
}

/* O_TMPFILE: an unnamed file; linkat() through /proc/self/fd names it. */
static void tmpfile_linked(void)
{
	char proc[64];
	int fd = open(".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0640);
	struct stat st;

	CHECKF(fd >= 0, "open(O_TMPFILE): %s", strerrorname_np(errno));
	t_pwrite_all(fd, "unnamed data", 12, 0);
	st = t_fstat(fd);
	CHECKF(S_ISREG(st.st_mode), "O_TMPFILE made mode 0%o", st.st_mode);
	CHECK_EQ(st.st_nlink, 0);
	CHECK_EQ(st.st_mode & 07777, 0640 & ~022);
	CHECK_EQ(st.st_size, 12);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	SYS(linkat(AT_FDCWD, proc, AT_FDCWD, "named", AT_SYMLINK_FOLLOW));
	CHECK_EQ(t_fstat(fd).st_nlink, 1);
	CHECK_EQ(t_stat("named").st_ino, st.st_ino);
	SYS(close(fd));
	t_expect_str("named", "unnamed data");
	if (t_have_mount2())
		t_expect_str(t_path2("named"), "unnamed data");
}

/* O_TMPFILE | O_EXCL is never linked; the file goes at close. */
static void tmpfile_excl(void)
{
	char proc[64];
	int fd = open(".", O_TMPFILE | O_EXCL | O_RDWR | O_CLOEXEC, 0600);

	CHECKF(fd >= 0, "open(O_TMPFILE|O_EXCL): %s", strerrorname_np(errno));
	t_pwrite_all(fd, "x", 1, 0);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	ERR(linkat(AT_FDCWD, proc, AT_FDCWD, "named", AT_SYMLINK_FOLLOW),
	    ENOENT);
	SYS(close(fd));
	CHECK(!t_exists("named"));
	/* a directory it is not, and a file is no place for one */
	t_put("f", "x");
	ERR2(open("f", O_TMPFILE | O_RDWR, 0600), ENOTDIR, EISDIR);
}

/* statx: the birth time is the creation's, kept through later changes. */
static void birth_time(void)
{
	struct statx sx, later;
	struct timespec past[2] = { { 946684800, 0 }, { 946684800, 0 } };
	struct timespec t0;

	SYS(clock_gettime(CLOCK_REALTIME, &t0));
	t_put("f", "x");
	SYS(statx(AT_FDCWD, "f", 0, STATX_BASIC_STATS | STATX_BTIME, &sx));
	if (!(sx.stx_mask & STATX_BTIME))
		T_FAIL("statx gives no STATX_BTIME (mask 0x%x)", sx.stx_mask);
	/* within a few seconds of now (the servers' clock) */
	CHECKF(sx.stx_btime.tv_sec >= t0.tv_sec - 5 &&
	       sx.stx_btime.tv_sec <= t0.tv_sec + 5,
	       "btime %lld, now %lld", (long long)sx.stx_btime.tv_sec,
	       (long long)t0.tv_sec);
	CHECKF(sx.stx_btime.tv_sec <= sx.stx_ctime.tv_sec,
	       "born after its last change");
	/* neither times, data, mode nor names move it */
	SYS(utimensat(AT_FDCWD, "f", past, 0));
	t_put("f", "more data");
	SYS(chmod("f", 0600));
	SYS(rename("f", "g"));
	SYS(statx(AT_FDCWD, "g", 0, STATX_BTIME, &later));
	CHECK(later.stx_mask & STATX_BTIME);
	CHECK_EQ(later.stx_btime.tv_sec, sx.stx_btime.tv_sec);
	CHECK_EQ(later.stx_btime.tv_nsec, sx.stx_btime.tv_nsec);
	/* every type has one */
	SYS(mkdir("d", 0755));
	SYS(statx(AT_FDCWD, "d", 0, STATX_BTIME, &later));
	CHECK(later.stx_mask & STATX_BTIME);
	SYS(symlink("g", "l"));
	SYS(statx(AT_FDCWD, "l", AT_SYMLINK_NOFOLLOW, STATX_BTIME, &later));
	CHECK(later.stx_mask & STATX_BTIME);
}

/* The second mount sees the same birth time. */
static void birth_time_cross(void)
{
	struct statx a, b;

	t_put("f", "x");
	SYS(statx(AT_FDCWD, "f", 0, STATX_BTIME, &a));
	SYS(statx(AT_FDCWD, t_path2("f"), 0, STATX_BTIME, &b));
	CHECK(a.stx_mask & b.stx_mask & STATX_BTIME);
	CHECK_EQ(a.stx_btime.tv_sec, b.stx_btime.tv_sec);
	CHECK_EQ(a.stx_btime.tv_nsec, b.stx_btime.tv_nsec);
}

static const struct t_case replaced_cases[] = {
	{ "open directory renamed over: fstat, nlink 0", renamed_over_dir },
	{ "open directory removed: fstat, nlink 0", removed_dir },
	{ "open file renamed over: reads, nlink 0", renamed_over_file },
	{ "O_PATH symlink renamed over: fstat, nlink 0",
	  renamed_over_symlink },
	{ "open FIFO renamed over: fstat, nlink 0", renamed_over_fifo },
	{ "O_PATH socket unlinked: fstat, nlink 0", unlinked_socket },
	{ NULL, NULL },
};

static const struct t_case tmpfile_cases[] = {
	{ "O_TMPFILE: nlink 0, linkat names it", tmpfile_linked },
	{ "O_TMPFILE|O_EXCL: never linked", tmpfile_excl },
	{ NULL, NULL },
};

static const struct t_case statx_cases[] = {
	{ "statx: STATX_BTIME, kept through changes", birth_time },
	{ "statx: the second mount sees the same btime", birth_time_cross },
	{ NULL, NULL },
};

const struct t_group t_group_replaced = { "replaced", replaced_cases };
const struct t_group t_group_statx = { "statx", statx_cases };
const struct t_group t_group_tmpfile = { "tmpfile", tmpfile_cases };
