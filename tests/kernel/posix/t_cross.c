/*
 * Two mounts of one file system: what one changes, the other sees. Data
 * follows close-to-open (checked at once); namespace and attribute changes
 * may reach the other mount's caches a little later, so those are polled
 * with the deadline and the delay is reported.
 */
#include "suite.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

/* Polls cond until it holds (fails after t_wait_s); reports any delay. */
#define EVENTUALLY(what, cond)                                               \
	do {                                                                 \
		double t0_ = t_now();                                        \
		bool late_ = false;                                          \
		while (!(cond)) {                                            \
			struct timespec ts_ = { 0, 10 * 1000 * 1000 };       \
			if (t_now() - t0_ > t_wait_s)                        \
				T_FAIL("%s: not seen through the second "    \
				       "mount within %ds", what, t_wait_s);  \
			late_ = true;                                        \
			nanosleep(&ts_, NULL);                               \
		}                                                            \
		if (late_)                                                   \
			t_note("%s: seen through the second mount after "   \
			       "%.2fs", what, t_now() - t0_);               \
	} while (0)

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static bool holds(const char *path, const char *s)
{
	char buf[256];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	return n == (ssize_t)strlen(s) && !memcmp(buf, s, n);
}

static bool listed(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while ((e = readdir(d)))
		found |= !strcmp(e->d_name, name);
	closedir(d);
	return found;
}

static void created(void)
{
	const char *f2 = t_path2("f");

	t_put("f", "made on one");
	SYS(chmod("f", 0640));
	struct stat st1 = t_stat("f"), st2 = t_stat(f2);

	CHECK(S_ISREG(st2.st_mode));
	CHECK_EQ(st2.st_size, st1.st_size);
	CHECK_EQ(st2.st_mode, st1.st_mode);
	CHECK_EQ(st2.st_uid, st1.st_uid);
	/* not promised between two clients: reported */
	if (st2.st_mtim.tv_sec != st1.st_mtim.tv_sec)
		t_note("mtime differs between mounts: %lld, %lld",
		       (long long)st1.st_mtim.tv_sec,
		       (long long)st2.st_mtim.tv_sec);
	if (st2.st_ino != st1.st_ino)
		t_note("inode numbers differ between mounts: %llu, %llu",
		       (unsigned long long)st1.st_ino,
		       (unsigned long long)st2.st_ino);
	t_expect_str(f2, "made on one");
	/* and the other way round */
	t_put(t_path2("g"), "made on two");
	t_expect_str("g", "made on two");
}

static void close_to_open(void)
{
	enum { N = 300 * 1000 };
	unsigned char *a = t_alloc(N), *b = t_alloc(N + 4096);
	const char *f2 = t_path2("f");

	t_pattern(a, N, 0, 1);
	t_write_file("f", a, N);
	/* the second mount reads (and may cache) the first version */
	t_expect_file(f2, a, N);
	/* the first mount rewrites it, longer, and closes */
	t_pattern(b, N + 4096, 0, 2);
	t_write_file("f", b, N + 4096);
	/* an open after that close sees all of it */
	t_expect_file(f2, b, N + 4096);
	/* back the other way, an overwrite in the middle through an fd that
	 * stays open on the first mount */
	int fd = SYS(open("f", O_RDONLY));

	t_expect_file("f", b, N + 4096);
	int fd2 = SYS(open(f2, O_WRONLY));

	t_pwrite_all(fd2, "middle", 6, 1000);
	SYS(close(fd2));
	memcpy(b + 1000, "middle", 6);
	SYS(close(fd));
	t_expect_file("f", b, N + 4096);
}

static void renamed(void)
{
	const char *old2 = t_path2("old"), *new2 = t_path2("new");

	t_put("old", "moved");
	CHECK(exists(old2));
	CHECK(!exists(new2));
	SYS(rename("old", "new"));
	EVENTUALLY("rename", !exists(old2) && holds(new2, "moved"));
	/* over an existing name: the replaced file is gone there too */
	t_put("other", "replacer");
	t_expect_str(new2, "moved");
	SYS(rename("other", "new"));
	EVENTUALLY("rename over a file", holds(new2, "replacer"));
}

static void unlinked(void)
{
	const char *f2 = t_path2("f");

	t_put("f", "doomed");
	t_expect_str(f2, "doomed");
	SYS(unlink("f"));
	EVENTUALLY("unlink", !exists(f2));
	ERR(open(f2, O_RDONLY), ENOENT);
	/* a new file of the same name is the new one there */
	t_put("f", "reborn");
	EVENTUALLY("re-create", holds(f2, "reborn"));
}

static void dirs(void)
{
	const char *d2 = t_path2("d"), *sub2 = t_path2("d/sub");

	SYS(mkdir("d", 0755));
	CHECK(!listed(d2, "sub"));
	SYS(mkdir("d/sub", 0700));
	t_put("d/file", "x");
	EVENTUALLY("mkdir", listed(d2, "sub") && listed(d2, "file"));
	CHECK(S_ISDIR(t_stat(sub2).st_mode));
	CHECK_EQ(t_stat(sub2).st_mode & 07777, 0700);
	SYS(rmdir("d/sub"));
	EVENTUALLY("rmdir", !listed(d2, "sub") && !exists(sub2));
	/* made on the second mount, removed on the first */
	SYS(mkdir(t_path2("d/two"), 0755));
	SYS(rmdir("d/two"));
	EVENTUALLY("rmdir of the other's dir", !exists(t_path2("d/two")));
}

static bool attrs_are(const char *path, mode_t mode, off_t size,
		      time_t mtime)
{
	struct stat st;

	return stat(path, &st) == 0 && (st.st_mode & 07777) == mode &&
	       st.st_size == size && st.st_mtim.tv_sec == mtime;
}

static void attributes(void)
{
	const char *f2 = t_path2("f");
	struct timespec ts[2] = { { 1000000000, 0 }, { 1100000000, 0 } };

	t_put("f", "0123456789");
	CHECK_EQ(t_stat(f2).st_size, 10);
	SYS(chmod("f", 0600));
	SYS(truncate("f", 4));
	SYS(utimensat(AT_FDCWD, "f", ts, 0));
	EVENTUALLY("chmod, truncate, utimensat",
		   attrs_are(f2, 0600, 4, 1100000000));
	t_expect_str(f2, "0123");
	/* a size grown by a write on one mount */
	int fd = SYS(open("f", O_WRONLY | O_APPEND));

	CHECK_EQ(SYS(write(fd, "4567", 4)), 4);
	SYS(close(fd));
	t_expect_str(f2, "01234567");
}

static bool xattr_is(const char *path, const char *name, const char *v)
{
	char buf[64];
	ssize_t n = getxattr(path, name, buf, sizeof(buf));

	if (v == NULL)
		return n < 0 && errno == ENODATA;
	return n == (ssize_t)strlen(v) && !memcmp(buf, v, n);
}

static void xattrs(void)
{
	const char *f2 = t_path2("f");

	t_put("f", "x");
	if (setxattr("f", "user.k", "one", 3, 0) != 0) {
		if (errno == EOPNOTSUPP)
			t_skip("no user xattrs here");
		T_FAIL("setxattr: %s", strerror(errno));
	}
	EVENTUALLY("setxattr", xattr_is(f2, "user.k", "one"));
	SYS(setxattr("f", "user.k", "two", 3, XATTR_REPLACE));
	EVENTUALLY("replaced xattr", xattr_is(f2, "user.k", "two"));
	SYS(removexattr("f", "user.k"));
	EVENTUALLY("removexattr", xattr_is(f2, "user.k", NULL));
}

static bool nlink_is(const char *path, nlink_t n)
{
	struct stat st;

	return stat(path, &st) == 0 && st.st_nlink == n;
}

static void links(void)
{
	const char *f2 = t_path2("f");

	t_put("f", "linked");
	CHECK_EQ(t_stat(f2).st_nlink, 1);
	SYS(link("f", "g"));
	EVENTUALLY("link count", nlink_is(f2, 2));
	t_expect_str(t_path2("g"), "linked");
	SYS(symlink("f", "s"));
	EVENTUALLY("symlink", exists(t_path2("s")));
	char buf[8];

	CHECK_EQ(SYS(readlink(t_path2("s"), buf, sizeof(buf))), 1);
	SYS(unlink("f"));
	EVENTUALLY("unlink of a link", nlink_is(t_path2("g"), 1));
}

static void opens(void *path)
{
	SYS(close(SYS(open(path, O_RDONLY))));
}

static void refused(void *path)
{
	ERR(open(path, O_RDONLY), EACCES);
}

/*
 * Access taken away on one mount holds on the other once that one's
 * attribute cache has run out (PFS: attr_ttl, 1 s by default), however
 * long it trusts the name. One attempt only: an open that got through
 * would itself bring back the new mode.
 */
static void revoked(void)
{
	char *f2 = (char *)t_path2("f");

	t_need_root();
	t_put("f", "public");
	SYS(chmod("f", 0644));
	t_run(&T_USER_A, opens, f2);
	SYS(chown("f", T_USER_B.uid, T_USER_B.gid));
	SYS(chmod("f", 0600));
	sleep(2);
	t_run(&T_USER_A, refused, f2);
	t_run(&T_USER_B, opens, f2);
}

/*
 * O_CREAT without O_EXCL of names the other mount has never looked up (one
 * request there makes the file or finds the name): an existing file opens
 * with its data (O_TRUNC cuts it), a directory gives EISDIR, a symlink is
 * followed, and an open asks of an existing file what it asks of any.
 */
static void open_create_unseen(void *arg)
{
	(void)arg;
	/* an existing file of root's, 0644: readable, not writable */
	SYS(close(SYS(open(t_path2("rootf"), O_CREAT | O_RDONLY, 0600))));
	ERR(open(t_path2("rootf"), O_CREAT | O_WRONLY, 0600), EACCES);
	/* a new file is its creator's to write whatever its mode */
	int fd = SYS(open(t_path2("mine"), O_CREAT | O_WRONLY, 0444));

	CHECK_EQ(SYS(write(fd, "m", 1)), 1);
	SYS(close(fd));
}

static void create_unseen(void)
{
	umask(022);
	t_put("f", "old data");
	SYS(mkdir("d", 0755));
	SYS(symlink("target", "l"));
	t_put("rootf", "root's");
	SYS(chmod("rootf", 0644));
	SYS(chmod(".", 0777));

	int fd = SYS(open(t_path2("f"), O_CREAT | O_RDWR, 0600));

	t_expect_fd(fd, "old data");
	SYS(close(fd));
	fd = SYS(open(t_path2("f"), O_CREAT | O_WRONLY | O_TRUNC, 0600));
	CHECK_EQ(t_fstat(fd).st_size, 0);
	CHECK_EQ(SYS(write(fd, "new", 3)), 3);
	SYS(close(fd));
	t_expect_str("f", "new");
	CHECK_EQ(t_stat("f").st_mode & 07777, 0644);
	ERR(open(t_path2("d"), O_CREAT | O_WRONLY, 0600), EISDIR);
	fd = SYS(open(t_path2("l"), O_CREAT | O_WRONLY, 0640));
	CHECK_EQ(SYS(write(fd, "via link", 8)), 8);
	SYS(close(fd));
	t_expect_str("target", "via link");
	CHECK_EQ(t_stat("target").st_mode & 07777, 0640);
	fd = SYS(open(t_path2("n"), O_CREAT | O_RDWR | O_TRUNC, 0600));
	CHECK(t_fstat(fd).st_size == 0 && (t_fstat(fd).st_mode & 07777) == 0600);
	SYS(close(fd));
	t_run(&T_USER_A, open_create_unseen, NULL);
	CHECK_EQ(t_stat("mine").st_uid, T_USER_A.uid);
	t_expect_str("mine", "m");
}

static const struct t_case cases[] = {
	{ "a new file shows on the other mount", created },
	{ "close-to-open data both ways", close_to_open },
	{ "rename shows on the other mount", renamed },
	{ "unlink shows on the other mount", unlinked },
	{ "mkdir and rmdir show in the other's readdir", dirs },
	{ "chmod, truncate, utimensat show on the other", attributes },
	{ "xattr changes show on the other", xattrs },
	{ "link, symlink, nlink on the other", links },
	{ "chmod 0600 to another owner refuses an open on the other", revoked },
	{ "O_CREAT of names the other never looked up", create_unseen },
	{ NULL, NULL },
};

const struct t_group t_group_cross = { "cross", cases };
