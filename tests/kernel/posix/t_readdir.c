/*
 * readdir(3) over a large directory: every entry exactly once, also while
 * entries are deleted; telldir/seekdir resume where they left off.
 */
#include "suite.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { BIG = 10000 };

/* The index of a name "f%05d" below n, or -1. */
static int index_of(const char *name, int n)
{
	char *end;
	long i;

	if (name[0] != 'f' || strlen(name) != 6)
		return -1;
	i = strtol(name + 1, &end, 10);
	return *end == '\0' && i >= 0 && i < n ? (int)i : -1;
}

static bool dot(const char *name)
{
	return !strcmp(name, ".") || !strcmp(name, "..");
}

/*
 * Creates empty files f00000.. in dir. mknodat makes a regular file in one
 * call, without the open and close of creat(): the cheapest create there
 * is, which matters for 10,000 of them in an emulated guest.
 */
static void populate(const char *dir, int n)
{
	int dfd = SYS(open(dir, O_RDONLY | O_DIRECTORY));
	char name[16];

	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%05d", i);
		SYS(mknodat(dfd, name, S_IFREG | 0644, 0));
	}
	SYS(close(dfd));
}

static DIR *open_dir(const char *path)
{
	DIR *d = opendir(path);

	CHECKF(d != NULL, "opendir(%s): %s", path, strerror(errno));
	return d;
}

/* Reads entries until the end; counts each name's appearances. */
static int list_counts(DIR *d, unsigned char *seen, int n)
{
	struct dirent *e;
	int total = 0;

	errno = 0;
	while ((e = readdir(d))) {
		if (dot(e->d_name))
			continue;
		int i = index_of(e->d_name, n);

		CHECKF(i >= 0, "unexpected entry \"%s\"", e->d_name);
		CHECKF(seen[i] == 0, "%s listed twice", e->d_name);
		CHECKF(e->d_type == DT_REG || e->d_type == DT_UNKNOWN,
		       "%s has d_type %d", e->d_name, e->d_type);
		seen[i]++;
		total++;
	}
	CHECKF(errno == 0, "readdir: %s", strerror(errno));
	return total;
}

/* The big directory, made once and shared with the deletion case. */
static const char *big_dir(void)
{
	const char *dir = t_shared("readdir-big");

	if (mkdir(dir, 0755) == 0)
		populate(dir, BIG);
	else
		CHECKF(errno == EEXIST, "mkdir(%s): %s", dir, strerror(errno));
	return dir;
}

static void ten_thousand(void)
{
	double t0 = t_now();
	const char *dir = big_dir();
	double t1 = t_now();
	unsigned char *seen = t_alloc(BIG);
	DIR *d = open_dir(dir);
	int dots = 0;

	CHECK_EQ(list_counts(d, seen, BIG), BIG);
	for (int i = 0; i < BIG; i++)
		CHECKF(seen[i] == 1, "f%05d not listed", i);
	/* "." and ".." are there once each */
	rewinddir(d);
	for (struct dirent *e; (e = readdir(d));)
		dots += dot(e->d_name);
	CHECK_EQ(dots, 2);
	closedir(d);
	/* d_ino is the inode stat reports, for a sample */
	d = open_dir(dir);
	int dfd = dirfd(d), checked = 0;

	for (struct dirent *e; (e = readdir(d));) {
		struct stat st;
		int i = index_of(e->d_name, BIG);

		if (i < 0 || i % 500)
			continue;
		SYS(fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW));
		CHECKF(st.st_ino == e->d_ino, "%s: d_ino %llu, st_ino %llu",
		       e->d_name, (unsigned long long)e->d_ino,
		       (unsigned long long)st.st_ino);
		checked++;
	}
	closedir(d);
	CHECK_EQ(checked, BIG / 500);
	t_note("created %d files in %.2fs, listed in %.2fs", BIG, t1 - t0,
	       t_now() - t1);
}

/*
 * Deletes while listing: each entry returned is removed, and so is another
 * one further on. An entry removed before the listing reached it may or may
 * not show up (POSIX leaves it open); every other entry shows up exactly
 * once, and nothing twice.
 */
static void delete_while_listing(void)
{
	const char *dir = big_dir();
	unsigned char *seen = t_alloc(BIG), *gone = t_alloc(BIG);
	unsigned char *early = t_alloc(BIG);
	DIR *d = open_dir(dir);
	int dfd = dirfd(d), deleted = 0;
	char name[16];
	struct dirent *e;

	errno = 0;
	while ((e = readdir(d))) {
		if (dot(e->d_name))
			continue;
		int i = index_of(e->d_name, BIG);

		CHECKF(i >= 0, "unexpected entry \"%s\"", e->d_name);
		CHECKF(!seen[i], "%s listed twice while deleting", e->d_name);
		seen[i] = 1;
		if (!gone[i]) {
			SYS(unlinkat(dfd, e->d_name, 0));
			gone[i] = 1;
			deleted++;
		}
		int j = (int)(((long)i * 7919 + 5003) % BIG);

		if (!gone[j]) {
			snprintf(name, sizeof(name), "f%05d", j);
			SYS(unlinkat(dfd, name, 0));
			gone[j] = 1;
			early[j] = !seen[j];
			deleted++;
		}
	}
	CHECKF(errno == 0, "readdir: %s", strerror(errno));
	int missing_early = 0;

	for (int i = 0; i < BIG; i++) {
		if (early[i]) {
			missing_early += !seen[i];
			continue;
		}
		CHECKF(seen[i], "f%05d was never deleted early yet not listed",
		       i);
	}
	/* whatever was not listed was deleted: the dir is empty now */
	CHECK_EQ(deleted, BIG);
	rewinddir(d);
	for (int n = 0; (e = readdir(d));)
		CHECKF(dot(e->d_name) && ++n <= 2, "\"%s\" is still listed",
		       e->d_name);
	closedir(d);
	SYS(rmdir(dir));
	t_note("%d entries deleted ahead of the listing were not returned",
	       missing_early);
}

static void tell_seek(void)
{
	enum { N = 1000, FIRST = 300, NEXT = 100 };
	unsigned char *seen = t_alloc(N);
	char (*names)[NAME_MAX + 1] = t_alloc(NEXT * (NAME_MAX + 1));
	struct dirent *e;
	int got = 0;

	SYS(mkdir("d", 0755));
	populate("d", N);
	DIR *d = open_dir("d");
	long start = telldir(d);

	/* read FIRST names, remember the position */
	while (got < FIRST && (e = readdir(d))) {
		if (dot(e->d_name))
			continue;
		int i = index_of(e->d_name, N);

		CHECK(i >= 0 && !seen[i]);
		seen[i] = 1;
		got++;
	}
	CHECK_EQ(got, FIRST);
	long pos = telldir(d);

	CHECK(pos != -1);
	for (int k = 0; k < NEXT;) {
		CHECKF((e = readdir(d)) != NULL, "short listing");
		if (!dot(e->d_name))
			strcpy(names[k++], e->d_name);
	}
	/* back to the position: the same names in the same order */
	seekdir(d, pos);
	for (int k = 0; k < NEXT;) {
		CHECKF((e = readdir(d)) != NULL, "short listing after seekdir");
		if (dot(e->d_name))
			continue;
		CHECKF(!strcmp(e->d_name, names[k]),
		       "after seekdir entry %d is %s, before it was %s", k,
		       e->d_name, names[k]);
		k++;
	}
	/* from the position to the end completes the listing exactly */
	seekdir(d, pos);
	CHECK_EQ(list_counts(d, seen, N), N - FIRST);
	for (int i = 0; i < N; i++)
		CHECKF(seen[i] == 1, "f%05d not listed", i);
	/* and from the start again, everything */
	seekdir(d, start);
	memset(seen, 0, N);
	CHECK_EQ(list_counts(d, seen, N), N);
	closedir(d);
}

static void small_dirs(void)
{
	struct dirent *e;
	int n = 0;

	SYS(mkdir("d", 0755));
	DIR *d = open_dir("d");

	/* an empty dir holds . and .. only */
	while ((e = readdir(d))) {
		CHECKF(dot(e->d_name), "\"%s\" in an empty dir", e->d_name);
		n++;
	}
	CHECK_EQ(n, 2);
	/* what is made after opendir shows after rewinddir */
	t_put("d/f00001", "x");
	SYS(mkdir("d/f00002", 0755));
	SYS(symlink("x", "d/f00003"));
	rewinddir(d);
	n = 0;
	while ((e = readdir(d))) {
		int i = index_of(e->d_name, 4);

		if (i < 0)
			continue;
		n++;
		CHECK(e->d_type == DT_UNKNOWN ||
		      e->d_type == (i == 1 ? DT_REG : i == 2 ? DT_DIR : DT_LNK));
	}
	CHECK_EQ(n, 3);
	closedir(d);
	/* a removed entry is gone after rewinddir */
	SYS(unlink("d/f00001"));
	d = open_dir("d");
	while ((e = readdir(d)))
		CHECK(strcmp(e->d_name, "f00001") != 0);
	closedir(d);
}

static const struct t_case cases[] = {
	{ "10,000 entries, each exactly once", ten_thousand },
	{ "deleting while listing returns no duplicates", delete_while_listing },
	{ "telldir and seekdir resume", tell_seek },
	{ "empty dir, rewinddir sees changes, d_type", small_dirs },
	{ NULL, NULL },
};

const struct t_group t_group_readdir = { "readdir", cases };
