/* Hard links and symbolic links. */
#include "suite.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

static void hard_link_count(void)
{
	t_put("a", "shared");
	CHECK_EQ(t_stat("a").st_nlink, 1);
	SYS(link("a", "b"));
	CHECK_EQ(t_stat("a").st_nlink, 2);
	CHECK_EQ(t_stat("b").st_nlink, 2);
	CHECK_EQ(t_stat("a").st_ino, t_stat("b").st_ino);
	/* one inode: a write through one name shows through the other */
	int fd = SYS(open("b", O_WRONLY | O_APPEND));

	CHECK_EQ(SYS(write(fd, "+", 1)), 1);
	SYS(close(fd));
	t_expect_str("a", "shared+");
	/* a link in another directory counts the same */
	SYS(mkdir("d", 0755));
	SYS(link("a", "d/c"));
	CHECK_EQ(t_stat("b").st_nlink, 3);
	SYS(unlink("d/c"));
	SYS(unlink("a"));
	CHECK_EQ(t_stat("b").st_nlink, 1);
	t_expect_str("b", "shared+");
	CHECK(!t_exists("a"));
}

static void link_errors(void)
{
	SYS(mkdir("d", 0755));
	ERR(link("d", "d2"), EPERM);
	CHECK(!t_exists("d2"));
	t_put("a", "a");
	t_put("b", "b");
	ERR(link("a", "b"), EEXIST);
	t_expect_str("b", "b");
	ERR(link("nope", "c"), ENOENT);
	ERR(link("a", "nodir/c"), ENOENT);
	CHECK_EQ(t_stat("a").st_nlink, 1);
}

static void symlink_readlink(void)
{
	const char *target = "some/where/../target";
	char buf[64];
	size_t n = strlen(target);

	SYS(symlink(target, "s"));
	memset(buf, 'X', sizeof(buf));
	CHECK_EQ(SYS(readlink("s", buf, sizeof(buf))), n);
	CHECK(!memcmp(buf, target, n));
	/* readlink does not add a NUL */
	CHECK_EQ(buf[n], 'X');
	/* a small buffer gets the beginning */
	CHECK_EQ(SYS(readlink("s", buf, 4)), 4);
	CHECK(!memcmp(buf, "some", 4));
	struct stat st = t_lstat("s");

	CHECK(S_ISLNK(st.st_mode));
	CHECK_EQ(st.st_size, n);
	CHECK_EQ(st.st_mode & 07777, 0777);
	CHECK_EQ(st.st_uid, geteuid());
	t_put("f", "x");
	ERR(readlink("f", buf, sizeof(buf)), EINVAL);
	ERR(symlink("elsewhere", "s"), EEXIST);
	ERR(symlink("elsewhere", "f"), EEXIST);
	/* unlink removes the link, not what it points to */
	SYS(symlink("f", "sf"));
	SYS(unlink("sf"));
	t_expect_str("f", "x");
}

static void long_target(void)
{
	char *target = t_alloc(PATH_MAX + 1), *got = t_alloc(PATH_MAX + 1);

	/* the longest target Linux stores: PATH_MAX - 1 bytes */
	for (int i = 0; i < PATH_MAX - 1; i++)
		target[i] = "abcdefgh/"[i % 9];
	SYS(symlink(target, "s"));
	CHECK_EQ(SYS(readlink("s", got, PATH_MAX)), PATH_MAX - 1);
	CHECK(!memcmp(got, target, PATH_MAX - 1));
	CHECK_EQ(t_lstat("s").st_size, PATH_MAX - 1);
	target[PATH_MAX - 1] = 'x';
	ERR(symlink(target, "s2"), ENAMETOOLONG);
}

static void dangling(void)
{
	struct stat st;

	SYS(symlink("missing", "s"));
	ERR(stat("s", &st), ENOENT);
	CHECK(S_ISLNK(t_lstat("s").st_mode));
	ERR(open("s", O_RDONLY), ENOENT);
	ERR(open("s", O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
	CHECK(!t_exists("missing"));
	/* O_CREAT follows the link and creates its target */
	int fd = SYS(open("s", O_CREAT | O_WRONLY, 0644));

	CHECK_EQ(SYS(write(fd, "made", 4)), 4);
	SYS(close(fd));
	t_expect_str("missing", "made");
	t_expect_str("s", "made");
}

static void loops(void)
{
	struct stat st;
	char name[16], prev[16];

	SYS(symlink("b", "a"));
	SYS(symlink("a", "b"));
	SYS(symlink("self", "self"));
	ERR(stat("a", &st), ELOOP);
	ERR(open("a", O_RDONLY), ELOOP);
	ERR(open("self", O_CREAT | O_WRONLY, 0644), ELOOP);
	ERR(stat("self/x", &st), ELOOP);
	/* Linux follows 40 links in a row and no more */
	t_put("end", "end");
	strcpy(prev, "end");
	for (int i = 1; i <= 41; i++) {
		snprintf(name, sizeof(name), "l%02d", i);
		SYS(symlink(prev, name));
		strcpy(prev, name);
	}
	t_expect_str("l40", "end");
	ERR(stat("l41", &st), ELOOP);
	/* O_NOFOLLOW refuses a link as the last component */
	ERR(open("l01", O_RDONLY | O_NOFOLLOW), ELOOP);
}

static void stat_vs_lstat(void)
{
	t_put("f", "data");
	SYS(mkdir("d", 0755));
	t_put("d/inner", "in");
	SYS(symlink("f", "sf"));
	SYS(symlink("d", "sd"));
	struct stat f = t_stat("f"), s = t_stat("sf"), l = t_lstat("sf");

	CHECK_EQ(s.st_ino, f.st_ino);
	CHECK(S_ISREG(s.st_mode));
	CHECK_EQ(s.st_size, 4);
	CHECK(S_ISLNK(l.st_mode));
	CHECK(l.st_ino != f.st_ino);
	CHECK_EQ(l.st_size, 1);
	/* a link to a dir is walked through in the middle of a path */
	t_expect_str("sd/inner", "in");
	CHECK(S_ISLNK(t_lstat("sd").st_mode));
	/* a trailing slash makes lstat follow */
	CHECK(S_ISDIR(t_lstat("sd/").st_mode));
	/* a link to a link to a file */
	SYS(symlink("sf", "ssf"));
	CHECK_EQ(t_stat("ssf").st_ino, f.st_ino);
	/* rmdir does not follow: the link is not a directory */
	ERR(rmdir("sd"), ENOTDIR);
	/* a relative target is resolved from the link's own directory */
	SYS(symlink("inner", "d/sin"));
	t_expect_str("d/sin", "in");
}

static const struct t_case cases[] = {
	{ "hard link counts go 1, 2, 1", hard_link_count },
	{ "link to a dir gives EPERM, EEXIST, ENOENT", link_errors },
	{ "symlink and readlink", symlink_readlink },
	{ "symlink with a PATH_MAX - 1 byte target", long_target },
	{ "dangling symlink", dangling },
	{ "symlink loops give ELOOP", loops },
	{ "stat follows, lstat does not", stat_vs_lstat },
	{ NULL, NULL },
};

const struct t_group t_group_links = { "links", cases };
