/*
 * Permission checks as seen by unprivileged users: the suite prepares as
 * root, and a forked child that dropped to uid 1000 or 65534 tries.
 */
#include "suite.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

/* A directory every user may create in (not sticky). */
static void open_dir(const char *path)
{
	SYS(mkdir(path, 0777));
	SYS(chmod(path, 0777));
}

static void secret_file(const char *path, mode_t mode)
{
	t_put(path, "secret");
	SYS(chmod(path, mode));
}

static void others_0600(void *arg)
{
	(void)arg;
	ERR(open("f600", O_RDONLY), EACCES);
	ERR(open("f600", O_WRONLY), EACCES);
	ERR(open("f600", O_RDWR | O_TRUNC), EACCES);
	ERR(truncate("f600", 0), EACCES);
	/* stat needs no permission on the file itself */
	CHECK_EQ(t_stat("f600").st_size, 6);
	t_expect_str("f644", "secret");
	ERR(open("f644", O_WRONLY), EACCES);
	ERR(open("f644", O_WRONLY | O_APPEND), EACCES);
}

static void file_modes(void)
{
	t_need_root();
	secret_file("f600", 0600);
	secret_file("f644", 0644);
	t_run(&T_USER_A, others_0600, NULL);
	t_expect_str("f600", "secret");
}

static void in_dir_no_x(void *arg)
{
	struct stat st;

	(void)arg;
	/* r without x: names can be listed, not looked up */
	ERR(stat("rw/f", &st), EACCES);
	ERR(open("rw/f", O_RDONLY), EACCES);
	ERR(open("rw/new", O_CREAT | O_WRONLY, 0644), EACCES);
	ERR(chdir("rw"), EACCES);
	DIR *d = opendir("rw");
	struct dirent *e;
	bool seen = false;

	CHECKF(d != NULL, "opendir of a readable dir: %s", strerror(errno));
	while ((e = readdir(d)))
		seen |= !strcmp(e->d_name, "f");
	closedir(d);
	CHECK(seen);
	/* x without r: names can be looked up, not listed */
	CHECK(opendir("x") == NULL && errno == EACCES);
	t_expect_str("x/f", "secret");
}

static void dir_no_search(void)
{
	t_need_root();
	SYS(mkdir("rw", 0755));
	secret_file("rw/f", 0644);
	SYS(chmod("rw", 0776));
	SYS(mkdir("x", 0755));
	secret_file("x/f", 0644);
	SYS(chmod("x", 0711));
	t_run(&T_USER_A, in_dir_no_x, NULL);
}

static void in_dir_no_w(void *arg)
{
	(void)arg;
	ERR(open("ro/new", O_CREAT | O_WRONLY, 0644), EACCES);
	ERR(mkdir("ro/sub", 0755), EACCES);
	ERR(symlink("x", "ro/link"), EACCES);
	ERR(unlink("ro/f"), EACCES);
	ERR(rename("ro/f", "ro/g"), EACCES);
	ERR(rename("ro/f", "w/g"), EACCES);
	ERR(rename("w/mine", "ro/mine"), EACCES);
	ERR(link("w/mine", "ro/mine"), EACCES);
	/* writing an existing, writable file in the dir is still fine */
	int fd = SYS(open("ro/open", O_WRONLY | O_TRUNC));

	CHECK_EQ(SYS(write(fd, "mine", 4)), 4);
	SYS(close(fd));
}

static void in_dir_w(void *arg)
{
	(void)arg;
	SYS(unlink("ro/f"));
	t_put("ro/new", "new");
	SYS(rename("ro/new", "ro/newer"));
}

static void dir_no_write(void)
{
	t_need_root();
	open_dir("w");
	SYS(mkdir("ro", 0755));
	secret_file("ro/f", 0644);
	secret_file("ro/open", 0666);
	t_put("w/mine", "m");
	SYS(chown("w/mine", T_USER_A.uid, T_USER_A.gid));
	t_run(&T_USER_A, in_dir_no_w, NULL);
	t_expect_str("ro/f", "secret");
	t_expect_str("ro/open", "mine");
	CHECK(!t_exists("ro/new"));
	/* with w for others the same user may remove root's file */
	SYS(chmod("ro", 0757));
	t_run(&T_USER_A, in_dir_w, NULL);
	CHECK(!t_exists("ro/f"));
	t_expect_str("ro/newer", "new");
}

static void sticky_a(void *arg)
{
	(void)arg;
	t_put("t/a", "a's");
	t_put("t/a2", "a's");
}

static void sticky_b(void *arg)
{
	(void)arg;
	ERR(unlink("t/a"), EPERM);
	ERR(rename("t/a", "t/b-took-it"), EPERM);
	t_put("t/b", "b's");
	/* replacing someone else's name is removing it */
	ERR(rename("t/b", "t/a"), EPERM);
	SYS(unlink("t/b"));
	/* B owns the dir "own": the owner of the dir may remove anything */
	SYS(unlink("own/a"));
}

static void sticky_a_own(void *arg)
{
	(void)arg;
	t_put("own/a", "a's");
	SYS(unlink("t/a2"));
}

static void sticky(void)
{
	t_need_root();
	SYS(mkdir("t", 0777));
	SYS(chmod("t", 01777));
	SYS(mkdir("own", 0777));
	SYS(chmod("own", 01777));
	SYS(chown("own", T_USER_B.uid, T_USER_B.gid));
	CHECK_EQ(t_stat("t").st_mode & 07777, 01777);
	t_run(&T_USER_A, sticky_a, NULL);
	t_run(&T_USER_A, sticky_a_own, NULL);
	t_run(&T_USER_B, sticky_b, NULL);
	t_expect_str("t/a", "a's");
	CHECK(!t_exists("t/a2"));
	CHECK(!t_exists("own/a"));
	/* root removes anyone's file */
	SYS(unlink("t/a"));
}

static void chmod_as_a(void *arg)
{
	(void)arg;
	ERR(chmod("roots", 0777), EPERM);
	t_put("w/mine", "m");
	SYS(chmod("w/mine", 0600));
	CHECK_EQ(t_stat("w/mine").st_mode & 07777, 0600);
	/* setgid for a group the caller is not in is dropped silently */
	SYS(chmod("w/other-group", 02755));
	CHECK_EQ(t_stat("w/other-group").st_mode & 07777, 0755);
}

static void chmod_non_owner(void)
{
	t_need_root();
	open_dir("w");
	secret_file("roots", 0666);
	t_put("w/other-group", "x");
	SYS(chown("w/other-group", T_USER_A.uid, 0));
	t_run(&T_USER_A, chmod_as_a, NULL);
	CHECK_EQ(t_stat("roots").st_mode & 07777, 0666);
}

static void chown_as_a(void *arg)
{
	(void)arg;
	t_put("w/mine", "m");
	ERR(chown("w/mine", T_USER_B.uid, -1), EPERM);
	ERR(chown("w/mine", -1, 0), EPERM);
	ERR(chown("roots", T_USER_A.uid, -1), EPERM);
	/* giving a file to one's own uid and gid is allowed (no change) */
	SYS(chown("w/mine", T_USER_A.uid, T_USER_A.gid));
}

static void chgrp_as_member(void *arg)
{
	(void)arg;
	t_put("w/b", "b");
	SYS(chown("w/b", -1, T_USER_A.gid));
	CHECK_EQ(t_stat("w/b").st_gid, T_USER_A.gid);
}

static void chown_non_root(void)
{
	t_need_root();
	open_dir("w");
	secret_file("roots", 0666);
	t_run(&T_USER_A, chown_as_a, NULL);
	CHECK_EQ(t_stat("w/mine").st_uid, T_USER_A.uid);
	CHECK_EQ(t_stat("roots").st_uid, 0);
	t_run(&T_USER_B_IN_A, chgrp_as_member, NULL);
	/* root gives files away */
	SYS(chown("w/mine", T_USER_B.uid, T_USER_B.gid));
	CHECK_EQ(t_stat("w/mine").st_uid, T_USER_B.uid);
	CHECK_EQ(t_stat("w/mine").st_gid, T_USER_B.gid);
}

static void access_as_a(void *arg)
{
	(void)arg;
	ERR(access("f600", R_OK), EACCES);
	SYS(access("f600", F_OK));
	SYS(access("f644", R_OK));
	ERR(access("f644", W_OK), EACCES);
	ERR(access("f644", X_OK), EACCES);
	SYS(access("f755", R_OK | X_OK));
	ERR(access("nope", F_OK), ENOENT);
}

static void access_check(void)
{
	t_need_root();
	secret_file("f600", 0600);
	secret_file("f644", 0644);
	secret_file("f755", 0755);
	t_run(&T_USER_A, access_as_a, NULL);
	/* root may read anything but executes only what has an x bit */
	SYS(access("f600", R_OK | W_OK));
	ERR(access("f644", X_OK), EACCES);
	SYS(access("f755", X_OK));
}

static void group_reader(void *arg)
{
	(void)arg;
	t_expect_str("g640", "secret");
	ERR(open("g640", O_WRONLY), EACCES);
}

static void group_outsider(void *arg)
{
	(void)arg;
	ERR(open("g640", O_RDONLY), EACCES);
}

static void owner_class_first(void *arg)
{
	(void)arg;
	/* the owner is judged by the owner bits alone, even if the group
	 * bits would allow more */
	ERR(open("o070", O_RDONLY), EACCES);
}

static void group_access(void)
{
	t_need_root();
	secret_file("g640", 0640);
	SYS(chown("g640", 0, T_USER_A.gid));
	secret_file("o070", 0070);
	SYS(chown("o070", T_USER_A.uid, T_USER_A.gid));
	t_run(&T_USER_A, group_reader, NULL);
	t_run(&T_USER_B_IN_A, group_reader, NULL);
	t_run(&T_USER_B, group_outsider, NULL);
	t_run(&T_USER_A, owner_class_first, NULL);
}

static void create_as_a(void *arg)
{
	(void)arg;
	t_put("w/f", "x");
	t_put("sg/f", "x");
	SYS(mkdir("sg/sub", 0755));
}

static void new_file_owner(void)
{
	enum { GID = 4242 };

	t_need_root();
	open_dir("w");
	open_dir("sg");
	SYS(chown("sg", 0, GID));
	SYS(chmod("sg", 02777));
	t_run(&T_USER_A, create_as_a, NULL);
	struct stat st = t_stat("w/f");

	CHECK_EQ(st.st_uid, T_USER_A.uid);
	CHECK_EQ(st.st_gid, T_USER_A.gid);
	/* a setgid dir hands its group down, and its setgid bit to subdirs */
	st = t_stat("sg/f");
	CHECK_EQ(st.st_uid, T_USER_A.uid);
	CHECK_EQ(st.st_gid, GID);
	st = t_stat("sg/sub");
	CHECK_EQ(st.st_gid, GID);
	CHECK(st.st_mode & S_ISGID);
}

static void write_as_a(void *arg)
{
	(void)arg;
	int fd = SYS(open("suid", O_WRONLY));

	CHECK_EQ(SYS(write(fd, "w", 1)), 1);
	SYS(close(fd));
	SYS(truncate("sgid", 1));
}

static void write_clears_suid(void)
{
	t_need_root();
	secret_file("suid", 04777);
	secret_file("sgid", 02777);
	t_run(&T_USER_A, write_as_a, NULL);
	CHECK_EQ(t_stat("suid").st_mode & 07777, 0777);
	CHECK_EQ(t_stat("sgid").st_mode & 07777, 0777);
	/* chown clears them as well, even done by root */
	SYS(chmod("suid", 04755));
	SYS(chown("suid", T_USER_A.uid, -1));
	CHECK_EQ(t_stat("suid").st_mode & 07777, 0755);
}

static void utimes_as_a(void *arg)
{
	struct timespec ts[2] = { { 1000000000, 0 }, { 1000000000, 0 } };

	(void)arg;
	/* "now" needs write permission, explicit times need ownership */
	SYS(utimensat(AT_FDCWD, "f666", NULL, 0));
	ERR(utimensat(AT_FDCWD, "f666", ts, 0), EPERM);
	ERR(utimensat(AT_FDCWD, "f644", NULL, 0), EACCES);
}

static void utimes_non_owner(void)
{
	t_need_root();
	secret_file("f666", 0666);
	secret_file("f644", 0644);
	t_run(&T_USER_A, utimes_as_a, NULL);
	CHECK(t_stat("f666").st_mtim.tv_sec != 1000000000);
}

static const struct t_case cases[] = {
	{ "0600 file of root gives EACCES to others", file_modes },
	{ "dir without x or r gives EACCES", dir_no_search },
	{ "dir without w refuses create, unlink, rename", dir_no_write },
	{ "sticky dir: only owners remove", sticky },
	{ "chmod by a non-owner gives EPERM", chmod_non_owner },
	{ "chown by non-root gives EPERM", chown_non_root },
	{ "access(2)", access_check },
	{ "group bits and supplementary groups", group_access },
	{ "new files take creator's ids, setgid dirs", new_file_owner },
	{ "write by a non-owner clears setuid and setgid", write_clears_suid },
	{ "utimensat by a non-owner", utimes_non_owner },
	{ NULL, NULL },
};

const struct t_group t_group_perms = { "perms", cases };
