/*
 * libpfsclient's C interface (pfsclient.h) against a running cluster, from C:
 *   libpfs_c_test CONFIG VERSION FROM_CTL
 * CONFIG: a config file in pfs-ctl's format; VERSION: what pfs_version()
 * must say; FROM_CTL: a file pfs-ctl put there, whose FNV-1a hash this
 * prints ("from-ctl HASH SIZE"). It leaves /capi-keep (KEEP_SIZE bytes of
 * pattern()) for pfs-ctl to read back, and prints "ok N checks".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pfsclient.h>

#define MIB (1u << 20)
#define DATA_SIZE (3 * MIB + 12345)
#define KEEP_SIZE (5 * MIB + 7)

static int checks;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		checks++;                                                  \
		if (!(cond)) {                                             \
			fprintf(stderr, "FAIL line %d: ", __LINE__);       \
			fprintf(stderr, __VA_ARGS__);                      \
			fprintf(stderr, " (last error: %s)\n", pfs_last_error()); \
			exit(1);                                           \
		}                                                          \
	} while (0)

static unsigned char pattern(size_t i)
{
	return (unsigned char)((i * 2654435761u) >> 13);
}

static unsigned char *filled(size_t n)
{
	unsigned char *b = malloc(n);

	if (!b)
		exit(2);
	for (size_t i = 0; i < n; i++)
		b[i] = pattern(i);
	return b;
}

struct listing {
	int seen_data;
	int entries;
};

static int collect(const char *name, unsigned char type, void *arg)
{
	struct listing *l = arg;

	l->entries++;
	if (strcmp(name, "data") == 0 && type == DT_REG)
		l->seen_data = 1;
	return 0;
}

static int stop_at_first(const char *name, unsigned char type, void *arg)
{
	(void)name;
	(void)type;
	(void)arg;
	return 42;
}

static void write_file(pfs_client *c, const char *path, size_t size, int excl)
{
	pfs_file *f;
	unsigned char *b = filled(size);
	size_t half = size / 2;
	struct stat st;
	int rc;

	rc = pfs_open(c, path, O_WRONLY | O_CREAT | (excl ? O_EXCL : O_TRUNC), 0640, &f);
	CHECK(rc == 0, "open %s for writing: %d", path, rc);
	/* The second half first: the file has a hole until the first comes. */
	CHECK(pfs_pwrite(f, b + half, size - half, (off_t)half) == (ssize_t)(size - half), "pwrite second half");
	CHECK(pfs_pwrite(f, b, half, 0) == (ssize_t)half, "pwrite first half");
	CHECK(pfs_fstat(f, &st) == 0 && st.st_size == (off_t)size, "fstat size %lld", (long long)st.st_size);
	CHECK(pfs_pread(f, b, 1, 0) == -EBADF, "pread on a file opened O_WRONLY");
	CHECK(pfs_fsync(f) == 0, "fsync");
	CHECK(pfs_close(f) == 0, "close after writing");
	free(b);
}

/*
 * Polls pfs_stat of path until its st_blocks satisfies done (the metadata
 * server counts st_blocks in the background after a change), 20 s at most;
 * the last answer stays in st.
 */
static void stat_until(pfs_client *c, const char *path, struct stat *st,
		       int (*done)(const struct stat *))
{
	const struct timespec pause = { 0, 10 * 1000 * 1000 };
	int polls;

	for (polls = 0; polls < 2000; polls++) {
		CHECK(pfs_stat(c, path, st) == 0, "stat %s", path);
		if (done(st))
			return;
		nanosleep(&pause, NULL);
	}
}

static int few_blocks(const struct stat *st)
{
	return st->st_blocks < 1024;
}

static int no_blocks(const struct stat *st)
{
	return st->st_blocks == 0;
}

/*
 * st_blocks is what the chunk files take (the metadata server's count), not
 * an estimate from the size: 4 KiB written past a 64 MiB hole takes a few
 * blocks, and none once truncated away.
 */
static void check_sparse_blocks(pfs_client *c)
{
	static const char page[4096] = { 1 };
	pfs_file *f;
	struct stat st;

	CHECK(pfs_open(c, "/capi/sparse", O_WRONLY | O_CREAT | O_EXCL, 0640, &f) == 0, "create /capi/sparse");
	CHECK(pfs_pwrite(f, page, sizeof(page), 64 * MIB) == (ssize_t)sizeof(page), "pwrite past a hole");
	CHECK(pfs_close(f) == 0, "close /capi/sparse");
	stat_until(c, "/capi/sparse", &st, few_blocks);
	CHECK(st.st_size == 64 * MIB + sizeof(page), "size of /capi/sparse: %lld", (long long)st.st_size);
	CHECK(st.st_blocks >= 8 && st.st_blocks < 1024, "st_blocks of 4 KiB past a 64 MiB hole: %lld",
	      (long long)st.st_blocks);
	CHECK(pfs_truncate(c, "/capi/sparse", 0) == 0, "truncate /capi/sparse");
	stat_until(c, "/capi/sparse", &st, no_blocks);
	CHECK(st.st_blocks == 0, "st_blocks after truncating to 0: %lld", (long long)st.st_blocks);
	CHECK(pfs_unlink(c, "/capi/sparse") == 0, "unlink /capi/sparse");
}

int main(int argc, char **argv)
{
	pfs_client *c, *bad = NULL;
	pfs_file *f;
	struct stat st;
	struct listing l = { 0, 0 };
	unsigned char *back;
	uint64_t hash = 1469598103934665603ull;
	ssize_t n;
	size_t i;
	off_t size;
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: %s CONFIG VERSION FROM_CTL\n", argv[0]);
		return 2;
	}
	CHECK(strcmp(pfs_version(), argv[2]) == 0, "pfs_version() says %s", pfs_version());
	CHECK(pfs_client_open("/nonexistent/ctl.conf", &bad) < 0 && !bad, "open with a missing config file");
	CHECK(pfs_last_error()[0] != '\0', "no message for the missing config file");
	rc = pfs_client_open(argv[1], &c);
	CHECK(rc == 0, "pfs_client_open(%s): %d", argv[1], rc);

	CHECK(pfs_mkdir(c, "/capi", 0750) == 0, "mkdir /capi");
	CHECK(pfs_mkdir(c, "/capi", 0750) == -EEXIST, "mkdir /capi again");
	CHECK(pfs_stat(c, "/capi", &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0750,
	      "stat /capi: mode %o", st.st_mode);
	CHECK(pfs_stat(c, "/capi/none", &st) == -ENOENT, "stat of a missing file");

	write_file(c, "/capi/data", DATA_SIZE, 1);
	CHECK(pfs_open(c, "/capi/data", O_WRONLY | O_CREAT | O_EXCL, 0640, &f) == -EEXIST, "O_EXCL on an existing file");
	CHECK(pfs_open(c, "/capi/data", O_WRONLY | O_APPEND, 0, &f) == -EOPNOTSUPP, "O_APPEND");
	CHECK(pfs_stat(c, "/capi/data", &st) == 0 && S_ISREG(st.st_mode) && st.st_size == DATA_SIZE,
	      "stat /capi/data: size %lld", (long long)st.st_size);

	back = malloc(DATA_SIZE + 100);
	CHECK(back != NULL, "malloc");
	CHECK(pfs_open(c, "/capi/data", O_RDONLY, 0, &f) == 0, "open for reading");
	n = pfs_pread(f, back, DATA_SIZE + 100, 0);
	CHECK(n == DATA_SIZE, "pread of the whole file: %zd", n);
	for (i = 0; i < DATA_SIZE && back[i] == pattern(i); i++)
		;
	CHECK(i == DATA_SIZE, "byte %zu read back differs", i);
	CHECK(pfs_pread(f, back, 100, DATA_SIZE - 10) == 10, "pread across the end");
	CHECK(pfs_pread(f, back, 100, DATA_SIZE) == 0, "pread at the end");
	CHECK(pfs_pread(f, back, 100, -1) == -EINVAL, "pread at a negative offset");
	CHECK(pfs_pwrite(f, back, 1, 0) == -EBADF, "pwrite on a file opened O_RDONLY");
	CHECK(pfs_close(f) == 0, "close after reading");

	CHECK(pfs_readdir(c, "/capi", collect, &l) == 0 && l.seen_data && l.entries == 1,
	      "readdir /capi: %d entries, data %s", l.entries, l.seen_data ? "seen" : "missing");
	CHECK(pfs_readdir(c, "/capi", stop_at_first, NULL) == 42, "readdir stopped by its callback");
	CHECK(pfs_readdir(c, "/capi/none", collect, &l) == -ENOENT, "readdir of a missing directory");

	check_sparse_blocks(c);
	CHECK(pfs_rename(c, "/capi/data", "/capi/moved") == 0, "rename");
	CHECK(pfs_stat(c, "/capi/data", &st) == -ENOENT, "the old name after rename");
	CHECK(pfs_truncate(c, "/capi/moved", 1000) == 0, "truncate");
	CHECK(pfs_stat(c, "/capi/moved", &st) == 0 && st.st_size == 1000, "size after truncate: %lld",
	      (long long)st.st_size);
	CHECK(pfs_rmdir(c, "/capi") == -ENOTEMPTY, "rmdir of a directory with a file");
	CHECK(pfs_unlink(c, "/capi/moved") == 0, "unlink");
	CHECK(pfs_rmdir(c, "/capi") == 0, "rmdir");
	CHECK(pfs_stat(c, "/capi", &st) == -ENOENT, "stat after rmdir");

	write_file(c, "/capi-keep", KEEP_SIZE, 0);

	/* What pfs-ctl wrote reads the same here. */
	CHECK(pfs_stat(c, argv[3], &st) == 0, "stat %s", argv[3]);
	size = st.st_size;
	free(back);
	back = malloc((size_t)size + 1);
	CHECK(back != NULL, "malloc");
	CHECK(pfs_open(c, argv[3], O_RDONLY, 0, &f) == 0, "open %s", argv[3]);
	CHECK(pfs_pread(f, back, (size_t)size, 0) == size, "pread %s", argv[3]);
	CHECK(pfs_close(f) == 0, "close %s", argv[3]);
	for (i = 0; i < (size_t)size; i++)
		hash = (hash ^ back[i]) * 1099511628211ull;
	printf("from-ctl %016" PRIx64 " %lld\n", hash, (long long)size);
	free(back);

	CHECK(pfs_client_close(c) == 0, "pfs_client_close");
	printf("ok %d checks\n", checks);
	return 0;
}
