/*
 * POSIX ACLs through their xattrs (system.posix_acl_access/_default), in
 * the kernel's binary format, so no libacl is needed: a little-endian u32
 * version 2, then entries {u16 tag, u16 perm, u32 id} sorted by tag and id.
 */
#include "suite.h"

#include <endian.h>
#include <fcntl.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
#include <stdio.h>
#include <sys/xattr.h>
#include <unistd.h>

#define ACCESS "system.posix_acl_access"
#define DEFAULT "system.posix_acl_default"
#define NOID ((uint32_t)ACL_UNDEFINED_ID)
#define R ACL_READ
#define W ACL_WRITE
#define X ACL_EXECUTE

struct ace {
	uint16_t tag, perm;
	uint32_t id;
};

#define MAX_ACES 16

static size_t encode(unsigned char *buf, const struct ace *e, size_t n)
{
	struct posix_acl_xattr_header h = { htole32(POSIX_ACL_XATTR_VERSION) };
	size_t len = sizeof(h);

	memcpy(buf, &h, sizeof(h));
	for (size_t i = 0; i < n; i++) {
		struct posix_acl_xattr_entry x = { htole16(e[i].tag),
						   htole16(e[i].perm),
						   htole32(e[i].id) };

		memcpy(buf + len, &x, sizeof(x));
		len += sizeof(x);
	}
	return len;
}

static int set_acl_raw(const char *path, const char *name, const struct ace *e,
		       size_t n)
{
	unsigned char buf[sizeof(struct posix_acl_xattr_header) +
			  MAX_ACES * sizeof(struct posix_acl_xattr_entry)];

	return setxattr(path, name, buf, encode(buf, e, n), 0);
}

static void set_acl(const char *path, const char *name, const struct ace *e,
		    size_t n)
{
	if (set_acl_raw(path, name, e, n) == 0)
		return;
	if (errno == EOPNOTSUPP)
		t_skip("setxattr(%s): EOPNOTSUPP: no POSIX ACLs here", name);
	T_FAIL("setxattr(%s, %s): %s", path, name, strerror(errno));
}

/* Reads an ACL back; returns the number of entries. */
static size_t get_acl(const char *path, const char *name, struct ace *e)
{
	unsigned char buf[sizeof(struct posix_acl_xattr_header) +
			  MAX_ACES * sizeof(struct posix_acl_xattr_entry)];
	struct posix_acl_xattr_header h;
	ssize_t len = getxattr(path, name, buf, sizeof(buf));
	size_t n;

	CHECKF(len >= 0, "getxattr(%s, %s): %s", path, name, strerror(errno));
	CHECKF((size_t)len >= sizeof(h) &&
		       (len - sizeof(h)) % sizeof(struct posix_acl_xattr_entry) ==
			       0,
	       "%s of %s has a length of %zd", name, path, len);
	memcpy(&h, buf, sizeof(h));
	CHECK_EQ(le32toh(h.a_version), POSIX_ACL_XATTR_VERSION);
	n = (len - sizeof(h)) / sizeof(struct posix_acl_xattr_entry);
	for (size_t i = 0; i < n; i++) {
		struct posix_acl_xattr_entry x;

		memcpy(&x, buf + sizeof(h) + i * sizeof(x), sizeof(x));
		e[i] = (struct ace){ le16toh(x.e_tag), le16toh(x.e_perm),
				     le32toh(x.e_id) };
	}
	return n;
}

/* The perm of the entry with tag (and id, for named entries). */
static int perm_of(const struct ace *e, size_t n, uint16_t tag, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (e[i].tag == tag &&
		    (tag != ACL_USER && tag != ACL_GROUP ? true : e[i].id == id))
			return e[i].perm;
	return -1;
}

static void expect_acl(const char *path, const char *name,
		       const struct ace *want, size_t n)
{
	struct ace got[MAX_ACES];
	size_t m = get_acl(path, name, got);

	CHECKF(m == n, "%s of %s has %zu entries, expected %zu", name, path,
	       m, n);
	for (size_t i = 0; i < n; i++)
		CHECKF(got[i].tag == want[i].tag &&
			       got[i].perm == want[i].perm &&
			       (want[i].id == NOID || got[i].id == want[i].id),
		       "%s of %s: entry %zu is {0x%x, %o, %u}, expected {0x%x, "
		       "%o, %u}", name, path, i, got[i].tag, got[i].perm,
		       got[i].id, want[i].tag, want[i].perm, want[i].id);
}

static void can_read(void *arg)
{
	t_expect_str(arg, "acl");
}

static void cannot_read(void *arg)
{
	ERR(open(arg, O_RDONLY), EACCES);
}

static void can_write(void *arg)
{
	int fd = SYS(open(arg, O_WRONLY));

	SYS(close(fd));
}

static void cannot_write(void *arg)
{
	ERR(open(arg, O_WRONLY), EACCES);
}

static void named_user(void)
{
	const struct ace acl[] = {
		{ ACL_USER_OBJ, R | W, NOID },
		{ ACL_USER, R, T_USER_A.uid },
		{ ACL_GROUP_OBJ, 0, NOID },
		{ ACL_MASK, R, NOID },
		{ ACL_OTHER, 0, NOID },
	};

	t_need_root();
	t_put("f", "acl");
	SYS(chmod("f", 0600));
	set_acl("f", ACCESS, acl, 5);
	expect_acl("f", ACCESS, acl, 5);
	/* the group bits of the mode show the mask */
	CHECK_EQ(t_stat("f").st_mode & 0777, 0640);
	t_run(&T_USER_A, can_read, "f");
	t_run(&T_USER_A, cannot_write, "f");
	t_run(&T_USER_B, cannot_read, "f");
}

static void set_as_a(void *arg)
{
	const struct ace acl[] = {
		{ ACL_USER_OBJ, R | W, NOID },
		{ ACL_GROUP_OBJ, 0, NOID },
		{ ACL_OTHER, R, NOID },
	};

	ERR(set_acl_raw(arg, ACCESS, acl, 3), EPERM);
}

static void named_group(void)
{
	const struct ace acl[] = {
		{ ACL_USER_OBJ, R | W, NOID },
		{ ACL_GROUP_OBJ, 0, NOID },
		{ ACL_GROUP, R, T_USER_A.gid },
		{ ACL_MASK, R, NOID },
		{ ACL_OTHER, 0, NOID },
	};

	t_need_root();
	t_put("f", "acl");
	SYS(chmod("f", 0600));
	set_acl("f", ACCESS, acl, 5);
	t_run(&T_USER_B_IN_A, can_read, "f");
	t_run(&T_USER_B, cannot_read, "f");
	t_run(&T_USER_A, set_as_a, "f");
}

static void chmod_sets_mask(void)
{
	const struct ace acl[] = {
		{ ACL_USER_OBJ, R | W, NOID },
		{ ACL_USER, R | W, T_USER_A.uid },
		{ ACL_GROUP_OBJ, 0, NOID },
		{ ACL_MASK, R, NOID },
		{ ACL_OTHER, 0, NOID },
	};
	struct ace got[MAX_ACES];
	size_t n;

	t_need_root();
	t_put("f", "acl");
	set_acl("f", ACCESS, acl, 5);
	/* the mask holds the named entry to r */
	t_run(&T_USER_A, can_read, "f");
	t_run(&T_USER_A, cannot_write, "f");
	SYS(chmod("f", 0660));
	n = get_acl("f", ACCESS, got);
	CHECK_EQ(perm_of(got, n, ACL_MASK, 0), R | W);
	CHECK_EQ(perm_of(got, n, ACL_GROUP_OBJ, 0), 0);
	CHECK_EQ(perm_of(got, n, ACL_USER, T_USER_A.uid), R | W);
	t_run(&T_USER_A, can_write, "f");
	SYS(chmod("f", 0600));
	n = get_acl("f", ACCESS, got);
	CHECK_EQ(perm_of(got, n, ACL_MASK, 0), 0);
	t_run(&T_USER_A, cannot_read, "f");
}

static void default_inherited(void)
{
	const struct ace def[] = {
		{ ACL_USER_OBJ, R | W | X, NOID },
		{ ACL_USER, R | W, T_USER_A.uid },
		{ ACL_GROUP_OBJ, R | X, NOID },
		{ ACL_MASK, R | W | X, NOID },
		{ ACL_OTHER, 0, NOID },
	};
	/* default & create mode 0666 on owner, mask and other; umask unused */
	const struct ace file[] = {
		{ ACL_USER_OBJ, R | W, NOID },
		{ ACL_USER, R | W, T_USER_A.uid },
		{ ACL_GROUP_OBJ, R | X, NOID },
		{ ACL_MASK, R | W, NOID },
		{ ACL_OTHER, 0, NOID },
	};

	t_need_root();
	SYS(mkdir("d", 0755));
	set_acl("d", DEFAULT, def, 5);
	expect_acl("d", DEFAULT, def, 5);
	umask(022);
	int fd = SYS(open("d/f", O_CREAT | O_WRONLY, 0666));

	CHECK_EQ(SYS(write(fd, "acl", 3)), 3);
	SYS(close(fd));
	expect_acl("d/f", ACCESS, file, 5);
	CHECK_EQ(t_stat("d/f").st_mode & 0777, 0660);
	t_run(&T_USER_A, can_read, "d/f");
	t_run(&T_USER_A, can_write, "d/f");
	t_run(&T_USER_B, cannot_read, "d/f");
	/* a subdirectory takes the default ACL as its own default, too */
	SYS(mkdir("d/sub", 0777));
	expect_acl("d/sub", DEFAULT, def, 5);
	CHECK_EQ(t_stat("d/sub").st_mode & 0777, 0770);
}

static void remove_acl(void)
{
	const struct ace acl[] = {
		{ ACL_USER_OBJ, R | W, NOID },
		{ ACL_USER, R, T_USER_A.uid },
		{ ACL_GROUP_OBJ, 0, NOID },
		{ ACL_MASK, R, NOID },
		{ ACL_OTHER, 0, NOID },
	};
	char buf[64];

	t_need_root();
	t_put("f", "acl");
	set_acl("f", ACCESS, acl, 5);
	t_run(&T_USER_A, can_read, "f");
	SYS(removexattr("f", ACCESS));
	ERR(getxattr("f", ACCESS, buf, sizeof(buf)), ENODATA);
	/* the mode keeps what the mask left in the group bits */
	CHECK_EQ(t_stat("f").st_mode & 0777, 0640);
	t_run(&T_USER_A, cannot_read, "f");
}

static void minimal_acl_is_mode(void)
{
	const struct ace acl[] = {
		{ ACL_USER_OBJ, R | W | X, NOID },
		{ ACL_GROUP_OBJ, R, NOID },
		{ ACL_OTHER, 0, NOID },
	};
	struct ace got[MAX_ACES];
	char buf[64];

	t_put("f", "acl");
	SYS(chmod("f", 0666));
	set_acl("f", ACCESS, acl, 3);
	CHECK_EQ(t_stat("f").st_mode & 0777, 0740);
	/* an ACL that says no more than the mode need not be stored */
	if (getxattr("f", ACCESS, buf, sizeof(buf)) >= 0) {
		CHECK_EQ(get_acl("f", ACCESS, got), 3);
		CHECK_EQ(got[1].perm, R);
	} else {
		CHECK_EQ(errno, ENODATA);
	}
}

static void invalid_acl(void)
{
	/* a named entry needs a mask */
	const struct ace no_mask[] = {
		{ ACL_USER_OBJ, R | W, NOID },
		{ ACL_USER, R, T_USER_A.uid },
		{ ACL_GROUP_OBJ, 0, NOID },
		{ ACL_OTHER, 0, NOID },
	};
	const struct ace no_other[] = {
		{ ACL_USER_OBJ, R | W, NOID },
		{ ACL_GROUP_OBJ, 0, NOID },
	};
	const struct ace ok[] = {
		{ ACL_USER_OBJ, R | W, NOID },
		{ ACL_GROUP_OBJ, 0, NOID },
		{ ACL_OTHER, 0, NOID },
	};
	unsigned char bad[8] = { 1, 0, 0, 0 };

	t_put("f", "acl");
	SYS(chmod("f", 0644));
	set_acl("f", ACCESS, ok, 3);
	ERR(set_acl_raw("f", ACCESS, no_mask, 4), EINVAL);
	ERR(set_acl_raw("f", ACCESS, no_other, 2), EINVAL);
	ERR2(setxattr("f", ACCESS, bad, 4, 0), EOPNOTSUPP, EINVAL);
	ERR2(setxattr("f", ACCESS, bad, 3, 0), EINVAL, EOPNOTSUPP);
	/* a default ACL only exists on directories */
	ERR2(set_acl_raw("f", DEFAULT, ok, 3), EACCES, EINVAL);
	CHECK_EQ(t_stat("f").st_mode & 0777, 0600);
}

static const struct t_case cases[] = {
	{ "named user entry grants read", named_user },
	{ "named group entry, only the owner sets ACLs", named_group },
	{ "chmod updates the mask", chmod_sets_mask },
	{ "default ACL is inherited by new files and dirs", default_inherited },
	{ "removing the ACL leaves the mode", remove_acl },
	{ "an ACL of three entries is the mode", minimal_acl_is_mode },
	{ "invalid ACLs give EINVAL", invalid_acl },
	{ NULL, NULL },
};

const struct t_group t_group_acl = { "acl", cases };
