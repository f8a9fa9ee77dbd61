/* Life cycle of files and directories: create, open, stat, times, remove. */
#include "suite.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void create_excl(void)
{
	int fd = SYS(open("f", O_CREAT | O_EXCL | O_WRONLY, 0640));

	CHECK_EQ(SYS(write(fd, "data", 4)), 4);
	SYS(close(fd));
	ERR(open("f", O_CREAT | O_EXCL | O_WRONLY, 0640), EEXIST);
	/* without O_EXCL an existing file opens and keeps its data */
	SYS(close(SYS(open("f", O_CREAT | O_WRONLY, 0600))));
	t_expect_str("f", "data");
	CHECK_EQ(t_stat("f").st_mode & 07777, 0640);
	SYS(mkdir("d", 0755));
	ERR(open("d", O_CREAT | O_EXCL | O_RDONLY, 0644), EEXIST);
	ERR(mkdir("f", 0755), EEXIST);
	ERR(mkdir("d", 0755), EEXIST);
	/* a new name appears in its directory's listing */
	DIR *dir = opendir(".");
	struct dirent *e;
	int seen = 0;

	CHECK(dir != NULL);
	while ((e = readdir(dir)))
		seen += !strcmp(e->d_name, "f") || !strcmp(e->d_name, "d");
	closedir(dir);
	CHECK_EQ(seen, 2);
}

static void open_missing(void)
{
	struct stat st;

	ERR(open("nope", O_RDONLY), ENOENT);
	ERR(open("nope", O_WRONLY), ENOENT);
	ERR(stat("nope", &st), ENOENT);
	ERR(unlink("nope"), ENOENT);
	ERR(rmdir("nope"), ENOENT);
	ERR(open("nodir/f", O_CREAT | O_WRONLY, 0644), ENOENT);
	ERR(mkdir("nodir/d", 0755), ENOENT);
	t_put("f", "x");
	ERR(open("f/x", O_RDONLY), ENOTDIR);
	ERR(open("f/x", O_CREAT | O_WRONLY, 0644), ENOTDIR);
	ERR(open("f", O_RDONLY | O_DIRECTORY), ENOTDIR);
	/* a failed lookup must not leave a name behind */
	CHECK(!t_exists("nope"));
}

static void write_read_back(void)
{
	/* sizes that straddle page and typical chunk boundaries */
	static const size_t sizes[] = { 1, 4095, 70000, 1 << 20, 13 };
	size_t total = 0;
	uint64_t off = 0;
	int fd = SYS(open("f", O_CREAT | O_WRONLY | O_TRUNC, 0644));

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		total += sizes[i];
	unsigned char *want = t_alloc(total), *got = t_alloc(total + 1);

	t_pattern(want, total, 0, 1);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		CHECK_EQ(SYS(write(fd, want + off, sizes[i])), sizes[i]);
		off += sizes[i];
	}
	SYS(close(fd));
	t_expect_file("f", want, total);
	fd = SYS(open("f", O_RDONLY));
	/* a read in the middle, and reads at and past the end */
	CHECK_EQ(SYS(lseek(fd, 4000, SEEK_SET)), 4000);
	CHECK_EQ(SYS(read(fd, got, 200000)), 200000);
	t_check_bytes(got, want + 4000, 200000, 4000, "read at 4000");
	CHECK_EQ(SYS(pread(fd, got, 100, total - 10)), 10);
	CHECK_EQ(SYS(pread(fd, got, 100, total)), 0);
	CHECK_EQ(SYS(pread(fd, got, 100, total + 100000)), 0);
	SYS(close(fd));
	/* an overwrite in the middle changes only those bytes */
	fd = SYS(open("f", O_WRONLY));
	t_pattern(want + 5000, 3000, 5000, 2);
	t_pwrite_all(fd, want + 5000, 3000, 5000);
	SYS(close(fd));
	t_expect_file("f", want, total);
}

static void stat_fields(void)
{
	int fd = SYS(open("f", O_CREAT | O_EXCL | O_WRONLY, 0640));
	char buf[1234];
	struct stat st, dir = t_stat(".");

	t_pattern(buf, sizeof(buf), 0, 3);
	t_pwrite_all(fd, buf, sizeof(buf), 0);
	SYS(close(fd));
	st = t_stat("f");
	CHECK(S_ISREG(st.st_mode));
	CHECK_EQ(st.st_mode & 07777, 0640);
	CHECK_EQ(st.st_size, 1234);
	CHECK_EQ(st.st_nlink, 1);
	CHECK_EQ(st.st_uid, geteuid());
	CHECK_EQ(st.st_gid, getegid());
	CHECK(st.st_ino != 0);
	CHECK(st.st_ino != dir.st_ino);
	CHECK_EQ(st.st_dev, dir.st_dev);
	CHECK(st.st_blksize > 0);
	/* the same numbers through fstat and lstat */
	fd = SYS(open("f", O_RDONLY));
	struct stat fst = t_fstat(fd), lst = t_lstat("f");

	SYS(close(fd));
	CHECK_EQ(fst.st_ino, st.st_ino);
	CHECK_EQ(fst.st_size, st.st_size);
	CHECK_EQ(lst.st_ino, st.st_ino);
	CHECK_EQ(lst.st_mode, st.st_mode);
	if (st.st_blocks * 512 < st.st_size)
		t_note("st_blocks %lld for %lld bytes of data",
		       (long long)st.st_blocks, (long long)st.st_size);
}

/* 2000-01-01: far enough in the past that any "now" is later */
#define PAST 946684800

static void set_past(const char *path)
{
	struct timespec ts[2] = { { PAST, 0 }, { PAST, 0 } };

	SYS(utimensat(AT_FDCWD, path, ts, 0));
	CHECK_EQ(t_stat(path).st_mtim.tv_sec, PAST);
}

static void near_now(struct timespec t, const char *what)
{
	long long d = (long long)t.tv_sec - time(NULL);

	/* the server may stamp times: allow some clock difference */
	CHECKF(d > -300 && d < 300, "%s is %lld s away from this clock", what,
	       d);
}

/*
 * Repeats op until the ctime of path moves past before: ctime has the
 * granularity of a coarse clock, so one op may land in the same tick.
 * A file system that never updates ctime fails after t_wait_s.
 */
static struct stat ctime_moves(const char *path, struct timespec before,
			       void (*op)(const char *), const char *what)
{
	double deadline = t_now() + t_wait_s;
	struct stat st;

	do {
		op(path);
		st = t_stat(path);
		if (ts_cmp(st.st_ctim, before) > 0)
			return st;
	} while (t_now() < deadline);
	T_FAIL("ctime did not move on %s", what);
}

static void write_one(const char *path)
{
	int fd = SYS(open(path, O_WRONLY));

	t_pwrite_all(fd, "w", 1, 0);
	SYS(close(fd));
}

static void toggle_mode(const char *path)
{
	mode_t m = t_stat(path).st_mode & 07777;

	SYS(chmod(path, m == 0640 ? 0600 : 0640));
}

static void times_on_write(void)
{
	struct stat st;

	t_put("f", "abc");
	set_past("f");
	st = t_stat("f");
	CHECK_EQ(st.st_atim.tv_sec, PAST);
	write_one("f");
	struct stat st2 = t_stat("f");

	CHECKF(st2.st_mtim.tv_sec > PAST, "mtime did not move on write");
	near_now(st2.st_mtim, "mtime after write");
	/* write does not touch atime */
	CHECK_EQ(st2.st_atim.tv_sec, PAST);
	st2 = ctime_moves("f", st.st_ctim, write_one, "write");
	near_now(st2.st_ctim, "ctime after write");
}

static void times_on_chmod(void)
{
	t_put("f", "abc");
	SYS(chmod("f", 0640));
	set_past("f");
	struct stat st = t_stat("f");
	struct stat st2 = ctime_moves("f", st.st_ctim, toggle_mode, "chmod");

	CHECK_EQ(st2.st_mtim.tv_sec, PAST);
	CHECK_EQ(st2.st_atim.tv_sec, PAST);
}

static void times_set(void)
{
	struct timespec ts[2] = { { 1000000000, 123456789 },
				  { 1100000000, 987654321 } };
	struct stat st;

	t_put("f", "abc");
	SYS(utimensat(AT_FDCWD, "f", ts, 0));
	st = t_stat("f");
	CHECK_EQ(st.st_atim.tv_sec, 1000000000);
	CHECK_EQ(st.st_mtim.tv_sec, 1100000000);
	/* nanoseconds may be cut to the file system's granularity */
	CHECKF(st.st_atim.tv_nsec <= 123456789 &&
		       st.st_mtim.tv_nsec <= 987654321,
	       "nanoseconds grew: %ld %ld", st.st_atim.tv_nsec,
	       st.st_mtim.tv_nsec);
	if (st.st_atim.tv_nsec != 123456789)
		t_note("atime nanoseconds stored as %ld", st.st_atim.tv_nsec);
	/* UTIME_OMIT keeps one time, UTIME_NOW sets the other to now */
	struct timespec omit_now[2] = { { 0, UTIME_OMIT }, { 0, UTIME_NOW } };

	SYS(utimensat(AT_FDCWD, "f", omit_now, 0));
	st = t_stat("f");
	CHECK_EQ(st.st_atim.tv_sec, 1000000000);
	near_now(st.st_mtim, "mtime after UTIME_NOW");
	/* futimens on an fd */
	int fd = SYS(open("f", O_RDONLY));

	SYS(futimens(fd, ts));
	SYS(close(fd));
	CHECK_EQ(t_stat("f").st_mtim.tv_sec, 1100000000);
	/* reading is not a change: mtime and ctime stay */
	struct stat before = t_stat("f");
	char buf[8];

	fd = SYS(open("f", O_RDONLY));
	CHECK_EQ(SYS(read(fd, buf, sizeof(buf))), 3);
	SYS(close(fd));
	st = t_stat("f");
	CHECK(ts_cmp(st.st_mtim, before.st_mtim) == 0);
	CHECK(ts_cmp(st.st_ctim, before.st_ctim) == 0);
}

static void mkdir_rmdir(void)
{
	struct stat st, parent = t_stat(".");

	SYS(mkdir("d", 0750));
	st = t_stat("d");
	CHECK(S_ISDIR(st.st_mode));
	CHECK_EQ(st.st_mode & 07777, 0750);
	CHECK_EQ(st.st_uid, geteuid());
	if (st.st_nlink != 2)
		t_note("an empty directory has nlink %lu (2 by convention)",
		       (unsigned long)st.st_nlink);
	if (t_stat(".").st_nlink != parent.st_nlink + 1)
		t_note("mkdir changed the parent's nlink from %lu to %lu",
		       (unsigned long)parent.st_nlink,
		       (unsigned long)t_stat(".").st_nlink);
	CHECK_EQ(t_stat("d/.").st_ino, st.st_ino);
	CHECK_EQ(t_stat("d/..").st_ino, parent.st_ino);
	ERR(rmdir("."), EINVAL);
	ERR2(rmdir("d/.."), ENOTEMPTY, EEXIST);
	SYS(rmdir("d"));
	CHECK(!t_exists("d"));
	ERR(rmdir("d"), ENOENT);
	/* the name can be used again, for a file this time */
	t_put("d", "file now");
	t_expect_str("d", "file now");
}

static void rmdir_nonempty(void)
{
	SYS(mkdir("d", 0755));
	t_put("d/f", "x");
	ERR(rmdir("d"), ENOTEMPTY);
	SYS(unlink("d/f"));
	SYS(mkdir("d/sub", 0755));
	ERR(rmdir("d"), ENOTEMPTY);
	SYS(rmdir("d/sub"));
	SYS(rmdir("d"));
	CHECK(!t_exists("d"));
}

static void rmdir_file(void)
{
	t_put("f", "x");
	ERR(rmdir("f"), ENOTDIR);
	ERR(unlink("f/"), ENOTDIR);
	ERR(rmdir("f/"), ENOTDIR);
	t_expect_str("f", "x");
}

static void unlink_dir(void)
{
	SYS(mkdir("d", 0755));
	ERR(unlink("d"), EISDIR);
	CHECK(S_ISDIR(t_stat("d").st_mode));
}

static void name_too_long(void)
{
	char name[300], other[300];
	struct stat st;

	memset(name, 'n', 255);
	name[255] = '\0';
	SYS(close(SYS(open(name, O_CREAT | O_WRONLY, 0644))));
	CHECK(S_ISREG(t_stat(name).st_mode));
	/* the longest name comes back whole from readdir */
	DIR *dir = opendir(".");
	struct dirent *e;
	bool found = false;

	CHECK(dir != NULL);
	while ((e = readdir(dir)))
		found |= !strcmp(e->d_name, name);
	closedir(dir);
	CHECK(found);
	memset(other, 'o', 256);
	other[256] = '\0';
	ERR(open(other, O_CREAT | O_WRONLY, 0644), ENAMETOOLONG);
	ERR(open(other, O_RDONLY), ENAMETOOLONG);
	ERR(stat(other, &st), ENAMETOOLONG);
	ERR(mkdir(other, 0755), ENAMETOOLONG);
	ERR(rename(name, other), ENAMETOOLONG);
	ERR(link(name, other), ENAMETOOLONG);
	ERR(symlink(name, other), ENAMETOOLONG);
	CHECK(t_exists(name));
	SYS(unlink(name));
}

static void deep_paths(void)
{
	enum { DEPTH = 128 };
	char *path = t_alloc(PATH_MAX + 64), *p = path;
	struct stat st;

	/* every mkdir walks the whole path from the case directory */
	for (int i = 0; i < DEPTH; i++) {
		p += sprintf(p, "%sdir-%04d", i ? "/" : "", i);
		SYS(mkdir(path, 0755));
	}
	strcpy(p, "/leaf");
	t_put(path, "deep");
	t_expect_str(path, "deep");
	CHECK(strlen(path) > 1024);
	/* the longest path the kernel takes (PATH_MAX - 1 bytes) resolves, one
	 * byte more is refused as a whole */
	char *longp = t_alloc(PATH_MAX + 8);

	for (int i = 0; i < PATH_MAX; i += 2)
		memcpy(longp + i, "./", 2);
	strcpy(longp + PATH_MAX - 2, "f");
	CHECK_EQ(strlen(longp), PATH_MAX - 1);
	t_put("f", "top");
	CHECK(S_ISREG(t_stat(longp).st_mode));
	strcpy(longp + PATH_MAX - 2, "./f");
	CHECK_EQ(strlen(longp), PATH_MAX + 1);
	ERR(stat(longp, &st), ENAMETOOLONG);
	/* moving the leaf out through the full path */
	SYS(rename(path, "leaf"));
	t_expect_str("leaf", "deep");
	CHECK(!t_exists(path));
	/* a walk back up with .. from the bottom lands at the top again */
	*p = '\0';
	SYS(chdir(path));
	for (int i = 0; i < DEPTH; i++)
		SYS(chdir(".."));
	t_expect_str("leaf", "deep");
}

static void creation_mode_umask(void)
{
	umask(027);
	SYS(close(SYS(open("f", O_CREAT | O_WRONLY, 0666))));
	SYS(mkdir("d", 0777));
	umask(022);
	CHECK_EQ(t_stat("f").st_mode & 07777, 0640);
	CHECK_EQ(t_stat("d").st_mode & 07777, 0750);
	/* chmod sets the bits exactly, umask does not apply */
	SYS(chmod("f", 0777));
	CHECK_EQ(t_stat("f").st_mode & 07777, 0777);
}

static void fifo(void)
{
	if (mkfifo("p", 0640) != 0) {
		if (errno == EPERM || errno == EOPNOTSUPP)
			t_skip("mkfifo: %s", strerror(errno));
		T_FAIL("mkfifo: %s", strerror(errno));
	}
	struct stat st = t_stat("p");

	CHECK(S_ISFIFO(st.st_mode));
	CHECK_EQ(st.st_mode & 07777, 0640);
	/* the fifo is a rendezvous in this kernel, not data in the file */
	int r = SYS(open("p", O_RDONLY | O_NONBLOCK));
	int w = SYS(open("p", O_WRONLY | O_NONBLOCK));
	char c;

	CHECK_EQ(SYS(write(w, "z", 1)), 1);
	CHECK_EQ(SYS(read(r, &c, 1)), 1);
	CHECK_EQ(c, 'z');
	SYS(unlink("p"));
}

static const struct t_case cases[] = {
	{ "create with O_CREAT, O_EXCL gives EEXIST", create_excl },
	{ "open of a missing name gives ENOENT", open_missing },
	{ "write and read back", write_read_back },
	{ "stat fields", stat_fields },
	{ "write moves mtime and ctime, not atime", times_on_write },
	{ "chmod moves ctime only", times_on_chmod },
	{ "utimensat and futimens set times, read does not", times_set },
	{ "mkdir and rmdir", mkdir_rmdir },
	{ "rmdir of a non-empty dir gives ENOTEMPTY", rmdir_nonempty },
	{ "rmdir of a file gives ENOTDIR", rmdir_file },
	{ "unlink of a dir gives EISDIR", unlink_dir },
	{ "255-byte names work, 256 give ENAMETOOLONG", name_too_long },
	{ "deep paths", deep_paths },
	{ "umask applies to the creation mode", creation_mode_umask },
	{ "mkfifo", fifo },
	{ NULL, NULL },
};

const struct t_group t_group_life = { "life", cases };
