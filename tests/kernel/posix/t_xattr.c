/* Extended attributes: user.* and trusted.*, flags, sizes and limits. */
#include "suite.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/xattr.h>
#include <unistd.h>

/* Sets a user.* xattr; skips the case where the fs has none. */
static void set_user(const char *path, const char *name, const void *v,
		     size_t n, int flags)
{
	if (setxattr(path, name, v, n, flags) == 0)
		return;
	if (errno == EOPNOTSUPP)
		t_skip("setxattr(%s): EOPNOTSUPP: no user xattrs here", name);
	T_FAIL("setxattr(%s, %s, %zu bytes): %s", path, name, n,
	       strerror(errno));
}

static void expect_value(const char *path, const char *name, const char *v)
{
	char buf[256];
	ssize_t n = getxattr(path, name, buf, sizeof(buf));

	CHECKF(n >= 0, "getxattr(%s, %s): %s", path, name, strerror(errno));
	CHECKF((size_t)n == strlen(v) && !memcmp(buf, v, n),
	       "%s of %s is \"%.*s\", expected \"%s\"", name, path, (int)n,
	       buf, v);
}

/* How often name is in the list of path's xattr names. */
static int listed(const char *path, const char *name)
{
	char *buf = t_alloc(65536);
	ssize_t n = llistxattr(path, buf, 65536);
	int count = 0;

	CHECKF(n >= 0, "listxattr(%s): %s", path, strerror(errno));
	CHECKF(n == 0 || buf[n - 1] == '\0', "list of %s does not end in NUL",
	       path);
	for (char *p = buf; p < buf + n; p += strlen(p) + 1)
		count += !strcmp(p, name);
	return count;
}

static void set_get_list_remove(void)
{
	char buf[16];

	t_put("f", "x");
	set_user("f", "user.a", "1", 1, 0);
	set_user("f", "user.bb", "hello", 5, 0);
	expect_value("f", "user.a", "1");
	expect_value("f", "user.bb", "hello");
	CHECK_EQ(listed("f", "user.a"), 1);
	CHECK_EQ(listed("f", "user.bb"), 1);
	/* replacing with a shorter value leaves no tail behind */
	set_user("f", "user.bb", "hi", 2, 0);
	expect_value("f", "user.bb", "hi");
	SYS(removexattr("f", "user.a"));
	ERR(getxattr("f", "user.a", buf, sizeof(buf)), ENODATA);
	ERR(removexattr("f", "user.a"), ENODATA);
	CHECK_EQ(listed("f", "user.a"), 0);
	CHECK_EQ(listed("f", "user.bb"), 1);
	/* through an fd as well */
	int fd = SYS(open("f", O_RDONLY));

	SYS(fsetxattr(fd, "user.fd", "v", 1, 0));
	CHECK_EQ(SYS(fgetxattr(fd, "user.fd", buf, sizeof(buf))), 1);
	SYS(fremovexattr(fd, "user.fd"));
	SYS(close(fd));
	ERR(getxattr("f", "user.fd", buf, sizeof(buf)), ENODATA);
	ERR(getxattr("nope", "user.a", buf, sizeof(buf)), ENOENT);
}

static void create_replace(void)
{
	char buf[16];

	t_put("f", "x");
	set_user("f", "user.k", "one", 3, XATTR_CREATE);
	ERR(setxattr("f", "user.k", "two", 3, XATTR_CREATE), EEXIST);
	expect_value("f", "user.k", "one");
	ERR(setxattr("f", "user.new", "v", 1, XATTR_REPLACE), ENODATA);
	ERR(getxattr("f", "user.new", buf, sizeof(buf)), ENODATA);
	SYS(setxattr("f", "user.k", "three", 5, XATTR_REPLACE));
	expect_value("f", "user.k", "three");
	/* flags beyond the two are refused before any fs is asked */
	ERR(setxattr("f", "user.k", "v", 1, 4), EINVAL);
}

static void size_query(void)
{
	t_put("f", "x");
	set_user("f", "user.size", "0123456789", 10, 0);
	set_user("f", "user.s2", "", 0, 0);
	CHECK_EQ(SYS(getxattr("f", "user.size", NULL, 0)), 10);
	CHECK_EQ(SYS(getxattr("f", "user.s2", NULL, 0)), 0);
	ssize_t n = SYS(listxattr("f", NULL, 0));
	char *buf = t_alloc(n);

	CHECK_EQ(SYS(listxattr("f", buf, n)), n);
	/* the names at least, each with its NUL */
	CHECK(n >= (ssize_t)(sizeof("user.size") + sizeof("user.s2")));
	/* an empty value is a value: listed, and getxattr says 0 bytes */
	CHECK_EQ(listed("f", "user.s2"), 1);
}

static void erange(void)
{
	char buf[4];

	t_put("f", "x");
	set_user("f", "user.long", "0123456789", 10, 0);
	ERR(getxattr("f", "user.long", buf, sizeof(buf)), ERANGE);
	ERR(listxattr("f", buf, sizeof(buf)), ERANGE);
	char name[300] = "user.";

	memset(name + 5, 'n', 251);
	name[256] = '\0';
	ERR(setxattr("f", name, "v", 1, 0), ERANGE);
	ERR(getxattr("f", name, buf, sizeof(buf)), ERANGE);
}

static void big_value(void)
{
	enum { MAX = 65536 };
	unsigned char *v = t_alloc(MAX + 1), *got = t_alloc(MAX + 1);

	t_put("f", "x");
	set_user("f", "user.small", "s", 1, 0);
	t_pattern(v, MAX + 1, 0, 4);
	/* beyond XATTR_SIZE_MAX no file system is asked */
	ERR(setxattr("f", "user.huge", v, MAX + 1, 0), E2BIG);
	if (setxattr("f", "user.big", v, MAX, 0) != 0) {
		if (errno == ENOSPC || errno == E2BIG || errno == ERANGE)
			t_skip("a 64 KiB value: %s (fs limit)",
			       strerrorname_np(errno));
		T_FAIL("setxattr of 64 KiB: %s", strerror(errno));
	}
	CHECK_EQ(SYS(getxattr("f", "user.big", NULL, 0)), MAX);
	CHECK_EQ(SYS(getxattr("f", "user.big", got, MAX)), MAX);
	t_check_bytes(got, v, MAX, 0, "64 KiB xattr");
	expect_value("f", "user.small", "s");
}

static void unknown_namespace(void)
{
	t_put("f", "x");
	ERR(setxattr("f", "bogus.name", "v", 1, 0), EOPNOTSUPP);
	ERR(setxattr("f", "nonamespace", "v", 1, 0), EOPNOTSUPP);
}

static void trusted_as_other(void *arg)
{
	char buf[16];

	(void)arg;
	CHECK_EQ(listed("f", "trusted.t"), 0);
	ERR(getxattr("f", "trusted.t", buf, sizeof(buf)), ENODATA);
	ERR(setxattr("f", "trusted.u", "v", 1, 0), EPERM);
}

static void trusted(void)
{
	t_need_root();
	t_put("f", "x");
	SYS(chmod("f", 0666));
	if (setxattr("f", "trusted.t", "root", 4, 0) != 0) {
		if (errno == EOPNOTSUPP)
			t_skip("trusted.*: EOPNOTSUPP");
		T_FAIL("setxattr(trusted.t): %s", strerror(errno));
	}
	expect_value("f", "trusted.t", "root");
	CHECK_EQ(listed("f", "trusted.t"), 1);
	t_run(&T_USER_A, trusted_as_other, NULL);
}

static void user_as_other(void *arg)
{
	(void)arg;
	expect_value("f", "user.x", "root");
	ERR(setxattr("f", "user.y", "v", 1, 0), EACCES);
	ERR(removexattr("f", "user.x"), EACCES);
	t_put("w/mine", "m");
	SYS(chmod("w/mine", 0400));
	/* the owner may set xattrs; write permission is what counts */
	ERR(setxattr("w/mine", "user.z", "v", 1, 0), EACCES);
}

static void user_needs_write(void)
{
	t_need_root();
	t_put("f", "x");
	set_user("f", "user.x", "root", 4, 0);
	SYS(mkdir("w", 0777));
	SYS(chmod("w", 0777));
	t_run(&T_USER_A, user_as_other, NULL);
	CHECK_EQ(listed("f", "user.y"), 0);
}

static void on_dirs_and_links(void)
{
	SYS(mkdir("d", 0755));
	set_user("d", "user.dir", "yes", 3, 0);
	expect_value("d", "user.dir", "yes");
	CHECK_EQ(listed("d", "user.dir"), 1);
	/* user.* is for regular files and directories only */
	SYS(symlink("d", "s"));
	ERR(lsetxattr("s", "user.l", "v", 1, 0), EPERM);
	/* without the l, the link is followed */
	expect_value("s", "user.dir", "yes");
}

static void many(void)
{
	char name[32];

	t_put("f", "x");
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "user.k%02d", i);
		set_user("f", name, name, strlen(name), XATTR_CREATE);
	}
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "user.k%02d", i);
		CHECKF(listed("f", name) == 1, "%s is not listed once", name);
		expect_value("f", name, name);
	}
}

static void follows_inode(void)
{
	t_put("f", "x");
	set_user("f", "user.k", "v", 1, 0);
	SYS(rename("f", "g"));
	expect_value("g", "user.k", "v");
	SYS(link("g", "h"));
	expect_value("h", "user.k", "v");
	set_user("h", "user.k", "w", 1, XATTR_REPLACE);
	expect_value("g", "user.k", "w");
	/* a new file of an old name starts without xattrs */
	t_put("f", "x");
	CHECK_EQ(listed("f", "user.k"), 0);
}

static const struct t_case cases[] = {
	{ "user.* set, get, list, remove", set_get_list_remove },
	{ "XATTR_CREATE gives EEXIST, XATTR_REPLACE ENODATA", create_replace },
	{ "size query with size 0", size_query },
	{ "too small a buffer gives ERANGE", erange },
	{ "64 KiB value, over 64 KiB gives E2BIG", big_value },
	{ "unknown namespace gives EOPNOTSUPP", unknown_namespace },
	{ "trusted.* as root, invisible to others", trusted },
	{ "user.* needs write permission", user_needs_write },
	{ "on dirs; not on symlinks (EPERM)", on_dirs_and_links },
	{ "50 xattrs listed once each", many },
	{ "xattrs belong to the inode", follows_inode },
	{ NULL, NULL },
};

const struct t_group t_group_xattr = { "xattr", cases };
