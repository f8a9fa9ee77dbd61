/* rename(2) and renameat2(2): every edge case POSIX and Linux define. */
#include "suite.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static int renameat2_(const char *from, const char *to, unsigned flags)
{
	return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, flags);
}

/* Counts how often name shows up in a listing of dir. */
static int listed(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	CHECKF(d != NULL, "opendir(%s): %s", dir, strerror(errno));
	while ((e = readdir(d)))
		n += !strcmp(e->d_name, name);
	closedir(d);
	return n;
}

static void same_dir(void)
{
	t_put("a", "content");
	ino_t ino = t_stat("a").st_ino;

	SYS(rename("a", "b"));
	CHECK(!t_exists("a"));
	CHECK_EQ(t_stat("b").st_ino, ino);
	t_expect_str("b", "content");
	CHECK_EQ(listed(".", "a"), 0);
	CHECK_EQ(listed(".", "b"), 1);
}

static void across_dirs(void)
{
	SYS(mkdir("d1", 0755));
	SYS(mkdir("d2", 0755));
	t_put("d1/f", "file");
	SYS(rename("d1/f", "d2/g"));
	CHECK(!t_exists("d1/f"));
	t_expect_str("d2/g", "file");
	/* a directory moves with its contents and its ".." follows */
	SYS(mkdir("d1/sub", 0755));
	t_put("d1/sub/inner", "inner");
	nlink_t n1 = t_stat("d1").st_nlink, n2 = t_stat("d2").st_nlink;

	SYS(rename("d1/sub", "d2/sub"));
	t_expect_str("d2/sub/inner", "inner");
	CHECK_EQ(t_stat("d2/sub/..").st_ino, t_stat("d2").st_ino);
	CHECK(!t_exists("d1/sub"));
	CHECK_EQ(listed("d1", "sub"), 0);
	CHECK_EQ(listed("d2", "sub"), 1);
	if (t_stat("d1").st_nlink != n1 - 1 || t_stat("d2").st_nlink != n2 + 1)
		t_note("parent nlink after moving a dir: %lu->%lu, %lu->%lu",
		       (unsigned long)n1, (unsigned long)t_stat("d1").st_nlink,
		       (unsigned long)n2, (unsigned long)t_stat("d2").st_nlink);
	SYS(rmdir("d1"));
}

static void over_file(void)
{
	t_put("src", "new data");
	t_put("dst", "old data");
	ino_t src_ino = t_stat("src").st_ino;
	int fd = SYS(open("dst", O_RDONLY));

	SYS(rename("src", "dst"));
	CHECK(!t_exists("src"));
	CHECK_EQ(t_stat("dst").st_ino, src_ino);
	t_expect_str("dst", "new data");
	/* the replaced inode lives on for whoever has it open */
	t_expect_fd(fd, "old data");
	CHECK_EQ(t_fstat(fd).st_nlink, 0);
	SYS(close(fd));
}

static void over_empty_dir(void)
{
	SYS(mkdir("a", 0755));
	t_put("a/x", "x");
	SYS(mkdir("b", 0755));
	SYS(rename("a", "b"));
	CHECK(!t_exists("a"));
	t_expect_str("b/x", "x");
	CHECK_EQ(listed(".", "b"), 1);
}

static void dir_over_nonempty_dir(void)
{
	SYS(mkdir("a", 0755));
	SYS(mkdir("b", 0755));
	t_put("b/keep", "k");
	ERR2(rename("a", "b"), ENOTEMPTY, EEXIST);
	t_expect_str("b/keep", "k");
	CHECK(S_ISDIR(t_stat("a").st_mode));
}

static void file_over_dir(void)
{
	t_put("f", "f");
	SYS(mkdir("d", 0755));
	ERR(rename("f", "d"), EISDIR);
	CHECK(S_ISDIR(t_stat("d").st_mode));
	t_expect_str("f", "f");
}

static void dir_over_file(void)
{
	t_put("f", "f");
	SYS(mkdir("d", 0755));
	ERR(rename("d", "f"), ENOTDIR);
	t_expect_str("f", "f");
	/* a trailing slash on a file name is ENOTDIR as well */
	ERR(rename("f", "g/"), ENOTDIR);
}

static void into_own_subtree(void)
{
	SYS(mkdir("a", 0755));
	SYS(mkdir("a/b", 0755));
	SYS(mkdir("a/b/c", 0755));
	ERR(rename("a", "a/b/c/x"), EINVAL);
	ERR(rename("a", "a/x"), EINVAL);
	ERR(rename("a/b", "a/b/c/b"), EINVAL);
	CHECK(S_ISDIR(t_stat("a/b/c").st_mode));
}

static void missing(void)
{
	t_put("f", "f");
	ERR(rename("nope", "x"), ENOENT);
	ERR(rename("f", "nodir/f"), ENOENT);
	CHECK(!t_exists("x"));
	t_expect_str("f", "f");
}

static void noreplace(void)
{
	t_put("a", "a");
	t_put("b", "b");
	/* to a free name first: that tells whether the fs has the flag */
	if (renameat2_("a", "c", RENAME_NOREPLACE) != 0) {
		if (errno == EINVAL)
			t_skip("renameat2(RENAME_NOREPLACE): EINVAL (not "
			       "supported)");
		T_FAIL("renameat2(RENAME_NOREPLACE) to a free name: %s",
		       strerror(errno));
	}
	CHECK(!t_exists("a"));
	t_expect_str("c", "a");
	ERR(renameat2_("c", "b", RENAME_NOREPLACE), EEXIST);
	t_expect_str("c", "a");
	t_expect_str("b", "b");
}

static void exchange(void)
{
	t_put("a", "was a");
	t_put("b", "was b");
	ino_t ia = t_stat("a").st_ino, ib = t_stat("b").st_ino;

	if (renameat2_("a", "b", RENAME_EXCHANGE) != 0) {
		if (errno == EINVAL || errno == EOPNOTSUPP)
			t_skip("renameat2(RENAME_EXCHANGE): %s",
			       strerror(errno));
		T_FAIL("renameat2(RENAME_EXCHANGE): %s", strerror(errno));
	}
	t_expect_str("a", "was b");
	t_expect_str("b", "was a");
	CHECK_EQ(t_stat("a").st_ino, ib);
	CHECK_EQ(t_stat("b").st_ino, ia);
	/* a file and a directory in different parents trade places */
	SYS(mkdir("d", 0755));
	SYS(mkdir("p", 0755));
	t_put("d/inner", "i");
	SYS(renameat2_("a", "p/d", RENAME_NOREPLACE));
	SYS(renameat2_("p/d", "d", RENAME_EXCHANGE));
	t_expect_str("d", "was b");
	t_expect_str("p/d/inner", "i");
	CHECK_EQ(t_stat("p/d/..").st_ino, t_stat("p").st_ino);
	ERR(renameat2_("b", "nope", RENAME_EXCHANGE), ENOENT);
	ERR(renameat2_("b", "d", RENAME_EXCHANGE | RENAME_NOREPLACE), EINVAL);
}

static void to_itself(void)
{
	t_put("a", "same");
	ino_t ino = t_stat("a").st_ino;

	SYS(rename("a", "a"));
	t_expect_str("a", "same");
	CHECK_EQ(t_stat("a").st_ino, ino);
	/* two links to one inode: POSIX makes rename a no-op, both stay */
	SYS(link("a", "h"));
	SYS(rename("a", "h"));
	CHECK(t_exists("a"));
	CHECK(t_exists("h"));
	CHECK_EQ(t_stat("a").st_nlink, 2);
	SYS(mkdir("d", 0755));
	SYS(rename("d", "d"));
	CHECK(S_ISDIR(t_stat("d").st_mode));
}

static void open_fd_follows(void)
{
	int fd = SYS(open("a", O_CREAT | O_RDWR, 0644));

	t_pwrite_all(fd, "before", 6, 0);
	SYS(mkdir("d", 0755));
	SYS(rename("a", "d/b"));
	t_pwrite_all(fd, " after", 6, 6);
	SYS(close(fd));
	t_expect_str("d/b", "before after");
}

/* Rename replaces in one step: the name always opens one whole file. */
static void reader(void *arg)
{
	double deadline = t_now() + 0.5;
	int n = 0;

	(void)arg;
	while (t_now() < deadline || n < 200) {
		char buf[16];
		int fd = open("target", O_RDONLY);

		CHECKF(fd >= 0, "open(target) during renames: %s",
		       strerror(errno));
		ssize_t r = SYS(read(fd, buf, sizeof(buf)));

		close(fd);
		CHECKF(r == 8 && (!memcmp(buf, "AAAAAAAA", 8) ||
				  !memcmp(buf, "BBBBBBBB", 8)),
		       "read %zd bytes \"%.*s\" during renames", r,
		       (int)(r > 0 ? r : 0), buf);
		n++;
	}
}

static void atomic_replace(void)
{
	struct t_proc p;
	int i = 0;

	t_put("target", "AAAAAAAA");
	t_spawn(&p, NULL, reader, NULL);
	/* swap contents in until the reader has seen enough */
	do {
		t_put("tmp", i++ % 2 ? "AAAAAAAA" : "BBBBBBBB");
		SYS(rename("tmp", "target"));
	} while (!t_done(&p));
	t_note("%d renames over an open-and-read loop", i);
}

static const struct t_case cases[] = {
	{ "in the same dir", same_dir },
	{ "across dirs, a dir's .. follows", across_dirs },
	{ "over a file: replaced inode stays readable", over_file },
	{ "over an empty dir", over_empty_dir },
	{ "dir over a non-empty dir gives ENOTEMPTY", dir_over_nonempty_dir },
	{ "file over a dir gives EISDIR", file_over_dir },
	{ "dir over a file gives ENOTDIR", dir_over_file },
	{ "dir into its own subtree gives EINVAL", into_own_subtree },
	{ "missing source or target dir gives ENOENT", missing },
	{ "RENAME_NOREPLACE gives EEXIST", noreplace },
	{ "RENAME_EXCHANGE swaps", exchange },
	{ "to itself (or another link of it) is a no-op", to_itself },
	{ "an open fd follows the renamed file", open_fd_follows },
	{ "replacing is atomic for a reader", atomic_replace },
	{ NULL, NULL },
};

const struct t_group t_group_rename = { "rename", cases };
