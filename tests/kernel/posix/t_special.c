/*
 * Special files: FIFOs, character and block devices (mknod) and UNIX
 * sockets (bind). The file system stores their type, mode and device
 * number; their I/O is the local kernel's (a pipe, a driver, a socket).
 * They take part in rename, link, unlink, chmod, chown, utimensat and ACLs
 * like any inode.
 */
#include "suite.h"

#include <dirent.h>
#include <endian.h>
#include <fcntl.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

/* /dev/null and /dev/loop0: every Linux has these numbers. */
#define NULL_DEV makedev(1, 3)
#define LOOP_DEV makedev(7, 0)

static void make_fifo(const char *path, mode_t mode)
{
	if (mkfifo(path, mode) == 0)
		return;
	if (errno == EPERM || errno == EOPNOTSUPP)
		T_FAIL("mkfifo(%s): %s: special files are not supported", path,
		       strerrorname_np(errno));
	T_FAIL("mkfifo(%s): %s", path, strerrorname_np(errno));
}

/* The d_type readdir(3) gives name in the working directory. */
static int dtype_of(const char *name)
{
	DIR *d = opendir(".");
	struct dirent *e;
	int type = -1;

	CHECKF(d, "opendir: %s", strerror(errno));
	while ((e = readdir(d)))
		if (!strcmp(e->d_name, name))
			type = e->d_type;
	closedir(d);
	CHECKF(type >= 0, "%s not listed", name);
	return type;
}

static int bind_socket(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = SYS(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) != 0)
		T_FAIL("bind(%s): %s", path, strerrorname_np(errno));
	return s;
}

static void fifo_basics(void)
{
	struct stat st;

	make_fifo("p", 0640);
	st = t_lstat("p");
	CHECKF(S_ISFIFO(st.st_mode), "mode 0%o is no FIFO", st.st_mode);
	CHECK_EQ(st.st_mode & 07777, 0640);
	CHECK_EQ(st.st_nlink, 1);
	CHECK_EQ(st.st_size, 0);
	CHECK_EQ(st.st_uid, geteuid());
	CHECK_EQ(dtype_of("p"), DT_FIFO);
	ERR(mkfifo("p", 0644), EEXIST);
	ERR(mknod("p", S_IFIFO | 0644, 0), EEXIST);
	/* mknod(S_IFIFO) is mkfifo */
	SYS(mknod("q", S_IFIFO | 0600, 0));
	CHECKF(S_ISFIFO(t_lstat("q").st_mode), "mknod made no FIFO");
	ERR(truncate("p", 0), EINVAL);
}

/* The pipe is the local kernel's: data goes through, not to the servers. */
static void fifo_io(void)
{
	char buf[16];
	int r, w;

	make_fifo("p", 0644);
	r = SYS(open("p", O_RDONLY | O_NONBLOCK));
	w = SYS(open("p", O_WRONLY | O_NONBLOCK));
	CHECK_EQ(SYS(write(w, "through", 7)), 7);
	CHECK_EQ(SYS(read(r, buf, sizeof(buf))), 7);
	CHECK(!memcmp(buf, "through", 7));
	ERR(read(r, buf, sizeof(buf)), EAGAIN);
	SYS(close(w));
	CHECK_EQ(SYS(read(r, buf, sizeof(buf))), 0);
	SYS(close(r));
	/* nothing was stored */
	CHECK_EQ(t_stat("p").st_size, 0);
	/* a FIFO with no reader */
	ERR(open("p", O_WRONLY | O_NONBLOCK), ENXIO);
}

static void char_device(void)
{
	char buf[8];
	struct stat st;
	int fd;

	t_need_root();
	SYS(mknod("null", S_IFCHR | 0666, NULL_DEV));
	st = t_lstat("null");
	CHECKF(S_ISCHR(st.st_mode), "mode 0%o is no character device",
	       st.st_mode);
	CHECK_EQ(st.st_rdev, NULL_DEV);
	CHECK_EQ(st.st_mode & 07777, 0666 & ~022);
	CHECK_EQ(dtype_of("null"), DT_CHR);
	/* opened, it is the local /dev/null */
	fd = open("null", O_RDWR);
	if (fd < 0 && errno == EACCES)
		t_skip("open of a device node: EACCES (mounted nodev)");
	CHECKF(fd >= 0, "open of the device node: %s", strerrorname_np(errno));
	CHECK_EQ(SYS(write(fd, "gone", 4)), 4);
	CHECK_EQ(SYS(read(fd, buf, sizeof(buf))), 0);
	SYS(close(fd));
}

static void block_device(void)
{
	struct stat st;

	t_need_root();
	SYS(mknod("loop", S_IFBLK | 0600, LOOP_DEV));
	st = t_lstat("loop");
	CHECKF(S_ISBLK(st.st_mode), "mode 0%o is no block device",
	       st.st_mode);
	CHECK_EQ(st.st_rdev, LOOP_DEV);
	CHECK_EQ(major(st.st_rdev), 7);
	CHECK_EQ(dtype_of("loop"), DT_BLK);
	/* a big device number survives too */
	SYS(mknod("big", S_IFCHR | 0600, makedev(4000, 300000)));
	CHECK_EQ(t_lstat("big").st_rdev, makedev(4000, 300000));
}

static void as_user_mknod(void *arg)
{
	(void)arg;
	ERR(mknod("c", S_IFCHR | 0600, NULL_DEV), EPERM);
	ERR(mknod("b", S_IFBLK | 0600, LOOP_DEV), EPERM);
	/* FIFOs and sockets need no privilege */
	SYS(mkfifo("p", 0600));
	SYS(close(bind_socket("s")));
	CHECK_EQ(t_lstat("p").st_uid, T_USER_A.uid);
	CHECK_EQ(t_lstat("s").st_gid, T_USER_A.gid);
}

/* Only root makes devices (CAP_MKNOD); the server checks it too. */
static void mknod_permissions(void)
{
	t_need_root();
	SYS(chmod(".", 0777));
	t_run(&T_USER_A, as_user_mknod, NULL);
	CHECK(!t_exists("c"));
	CHECK(!t_exists("b"));
	/* no write permission in the directory: EACCES before anything */
	SYS(chmod(".", 0755));
	SYS(mkdir("ro", 0755));
	ERR(mknod("ro/../ro/x", S_IFDIR | 0600, 0), EPERM);
	ERR(mknod("x", 0170000 | 0600, 0), EINVAL);
}

static void unix_socket(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char buf[8];
	int s = bind_socket("sock"), c, conn;
	struct stat st = t_lstat("sock");

	CHECKF(S_ISSOCK(st.st_mode), "mode 0%o is no socket", st.st_mode);
	CHECK_EQ(dtype_of("sock"), DT_SOCK);
	SYS(listen(s, 1));
	/* connecting goes by the inode found through the name */
	c = SYS(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	snprintf(a.sun_path, sizeof(a.sun_path), "sock");
	SYS(connect(c, (struct sockaddr *)&a, sizeof(a)));
	conn = SYS(accept(s, NULL, NULL));
	CHECK_EQ(SYS(write(c, "hello", 5)), 5);
	CHECK_EQ(SYS(read(conn, buf, sizeof(buf))), 5);
	CHECK(!memcmp(buf, "hello", 5));
	/* a second bind to the name fails: it exists */
	ERR(bind(SYS(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)),
		 (struct sockaddr *)&a, sizeof(a)), EADDRINUSE);
	SYS(close(conn));
	SYS(close(c));
	SYS(close(s));
	SYS(unlink("sock"));
	CHECK(!t_exists("sock"));
}

static void names(void)
{
	make_fifo("p", 0644);
	SYS(link("p", "p2"));
	CHECK_EQ(t_lstat("p").st_nlink, 2);
	CHECK_EQ(t_lstat("p2").st_ino, t_lstat("p").st_ino);
	SYS(rename("p2", "moved"));
	CHECKF(S_ISFIFO(t_lstat("moved").st_mode), "moved is no FIFO");
	/* over a file, and a file over it */
	t_put("f", "data");
	SYS(rename("moved", "f"));
	CHECKF(S_ISFIFO(t_lstat("f").st_mode), "f is no FIFO");
	CHECK_EQ(t_lstat("p").st_nlink, 2);
	t_put("g", "data");
	SYS(rename("g", "p"));
	CHECKF(S_ISREG(t_lstat("p").st_mode), "p is no file");
	t_expect_str("p", "data");
	CHECK_EQ(t_lstat("f").st_nlink, 1);
	/* a directory cannot replace it, nor it a directory */
	SYS(mkdir("d", 0755));
	ERR(rename("d", "f"), ENOTDIR);
	ERR(rename("f", "d"), EISDIR);
	SYS(mkdir("d2", 0755));
	make_fifo("d2/p", 0600);
	SYS(rename("d2/p", "d/p"));
	CHECK(t_exists("d/p"));
	SYS(unlink("f"));
	CHECK(!t_exists("f"));
	ERR(rmdir("d/p"), ENOTDIR);
	SYS(unlink("d/p"));
	SYS(rmdir("d"));
}

static void attributes(void)
{
	struct timespec t[2] = { { 946684800, 123 }, { 978307200, 456 } };
	struct stat st;

	make_fifo("p", 0600);
	SYS(chmod("p", 0751));
	CHECK_EQ(t_lstat("p").st_mode & 07777, 0751);
	SYS(utimensat(AT_FDCWD, "p", t, 0));
	st = t_lstat("p");
	CHECK_EQ(st.st_atim.tv_sec, t[0].tv_sec);
	CHECK_EQ(st.st_atim.tv_nsec, t[0].tv_nsec);
	CHECK_EQ(st.st_mtim.tv_sec, t[1].tv_sec);
	CHECK_EQ(st.st_mtim.tv_nsec, t[1].tv_nsec);
	if (geteuid() == 0) {
		SYS(chown("p", 1000, 1000));
		CHECK_EQ(t_lstat("p").st_uid, 1000);
		CHECK_EQ(t_lstat("p").st_gid, 1000);
	}
	/* user.* xattrs only on files and directories */
	ERR(setxattr("p", "user.x", "1", 1, 0), EPERM);
}

static void as_user_open_fifo(void *arg)
{
	int expect = *(int *)arg;
	int fd = open("p", O_RDWR | O_NONBLOCK);

	if (expect) {
		CHECKF(fd < 0 && errno == expect, "open: %d (%s), expected %s",
		       fd, strerrorname_np(errno), strerrorname_np(expect));
	} else {
		CHECKF(fd >= 0, "open: %s", strerrorname_np(errno));
		SYS(close(fd));
	}
}

static void acl(void)
{
	unsigned char buf[sizeof(struct posix_acl_xattr_header) +
			  5 * sizeof(struct posix_acl_xattr_entry)];
	const uint16_t tags[] = { ACL_USER_OBJ, ACL_USER, ACL_GROUP_OBJ,
				  ACL_MASK, ACL_OTHER };
	const uint16_t perms[] = { 6, 6, 0, 6, 0 };
	struct posix_acl_xattr_header h = { htole32(POSIX_ACL_XATTR_VERSION) };
	size_t len = sizeof(h);
	int ok = 0, denied = EACCES;

	t_need_root();
	memcpy(buf, &h, sizeof(h));
	for (int i = 0; i < 5; i++) {
		struct posix_acl_xattr_entry e = {
			htole16(tags[i]), htole16(perms[i]),
			htole32(tags[i] == ACL_USER ? T_USER_A.uid
						    : ACL_UNDEFINED_ID) };

		memcpy(buf + len, &e, sizeof(e));
		len += sizeof(e);
	}
	make_fifo("p", 0600);
	t_run(&T_USER_A, as_user_open_fifo, &denied);
	if (setxattr("p", "system.posix_acl_access", buf, len, 0) != 0) {
		if (errno == EOPNOTSUPP)
			t_skip("no POSIX ACLs here");
		T_FAIL("setxattr(ACL): %s", strerrorname_np(errno));
	}
	/* the ACL's mask shows as the group bits */
	CHECK_EQ(t_lstat("p").st_mode & 0777, 0660);
	CHECK_EQ(SYS(getxattr("p", "system.posix_acl_access", NULL, 0)),
		 (long)len);
	t_run(&T_USER_A, as_user_open_fifo, &ok);
	t_run(&T_USER_B, as_user_open_fifo, &denied);
}

static void cross_mount(void)
{
	const char *p2 = t_path2("null");
	struct stat st;

	t_need_root();
	SYS(mknod("null", S_IFCHR | 0640, NULL_DEV));
	make_fifo("p", 0600);
	st = t_lstat(p2);
	CHECKF(S_ISCHR(st.st_mode), "the other mount shows mode 0%o",
	       st.st_mode);
	CHECK_EQ(st.st_rdev, NULL_DEV);
	CHECKF(S_ISFIFO(t_lstat(t_path2("p")).st_mode),
	       "the other mount shows no FIFO");
	SYS(unlink(t_path2("p")));
	/* the name is gone here too, within the notice or attr_ttl */
	double until = t_now() + t_wait_s;

	while (t_exists("p"))
		CHECKF(t_now() < until, "p still there %d s later", t_wait_s);
}

/* O_PATH descriptors of special files: fstat answers. */
static void o_path(void)
{
	struct stat st;
	int fd;

	make_fifo("p", 0600);
	fd = SYS(open("p", O_PATH));
	st = t_fstat(fd);
	CHECKF(S_ISFIFO(st.st_mode), "fstat of O_PATH: mode 0%o", st.st_mode);
	SYS(close(fd));
	SYS(close(bind_socket("s")));
	fd = SYS(open("s", O_PATH));
	CHECKF(S_ISSOCK(t_fstat(fd).st_mode), "fstat of a socket's O_PATH");
	ERR(open("s", O_RDONLY), ENXIO);
	SYS(close(fd));
}

static const struct t_case special_cases[] = {
	{ "mkfifo: type, mode, d_type, EEXIST", fifo_basics },
	{ "a FIFO's data goes through the local pipe", fifo_io },
	{ "mknod of a character device, opened", char_device },
	{ "mknod of a block device, rdev kept", block_device },
	{ "mknod of devices needs root, FIFOs do not", mknod_permissions },
	{ "bind(2) of a UNIX socket, connect through it", unix_socket },
	{ "link, rename over and under, unlink", names },
	{ "chmod, chown, utimensat, no user xattrs", attributes },
	{ "ACLs on a FIFO are enforced", acl },
	{ "seen through the second mount", cross_mount },
	{ "O_PATH descriptors and fstat", o_path },
	{ NULL, NULL },
};

const struct t_group t_group_special = { "special", special_cases };
