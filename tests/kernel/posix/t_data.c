/* File data: sparse files past 4 GiB, O_APPEND, truncation. */
#include "suite.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define GiB (1ull << 30)
#define MiB (1ull << 20)
#define FAR (5 * GiB)

/* ---- sparse -------------------------------------------------------------- */

/* A file with "hello" at 5 GiB and nothing before. */
static int far_file(void)
{
	int fd = SYS(open("sparse", O_CREAT | O_RDWR | O_TRUNC, 0644));
	ssize_t w = pwrite(fd, "hello", 5, FAR);

	if (w < 0 && errno == EFBIG)
		t_skip("pwrite at 5 GiB: EFBIG (the fs has a smaller limit)");
	CHECKF(w == 5, "pwrite at 5 GiB: %zd (%s)", w, strerror(errno));
	return fd;
}

static void far_size(void)
{
	int fd = far_file();
	char buf[8];

	CHECK_EQ(t_fstat(fd).st_size, FAR + 5);
	SYS(close(fd));
	CHECK_EQ(t_stat("sparse").st_size, FAR + 5);
	/* the data is there through a new open */
	fd = SYS(open("sparse", O_RDONLY));
	t_pread_all(fd, buf, 5, FAR);
	CHECK(!memcmp(buf, "hello", 5));
	CHECK_EQ(SYS(pread(fd, buf, sizeof(buf), FAR + 3)), 2);
	CHECK_EQ(SYS(pread(fd, buf, sizeof(buf), FAR + 5)), 0);
}

static void hole_reads_zero(void)
{
	int fd = far_file();
	enum { N = 256 * 1024 };
	unsigned char *buf = t_alloc(N);
	/* the start, around 2 and 4 GiB (32-bit offset bugs), just before */
	const uint64_t at[] = { 0, 2 * GiB - N / 2, 4 * GiB - N / 2,
				FAR - N };

	SYS(close(fd));
	fd = SYS(open("sparse", O_RDONLY));
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		memset(buf, 0xAA, N);
		t_pread_all(fd, buf, N, at[i]);
		t_check_zero(buf, N, at[i], "hole");
	}
	/* a read that starts in the hole and ends in the data */
	t_pread_all(fd, buf, 10, FAR - 5);
	t_check_zero(buf, 5, FAR - 5, "hole before data");
	CHECK(!memcmp(buf + 5, "hello", 5));
}

static void across_4g(void)
{
	enum { N = 3 * 4096 };
	unsigned char *want = t_alloc(N), *got = t_alloc(N);
	uint64_t off = 4 * GiB - N / 2 - 1;
	int fd = SYS(open("f", O_CREAT | O_RDWR | O_TRUNC, 0644));

	/* one write over the 4 GiB line, unaligned at both ends */
	t_pattern(want, N, off, 5);
	t_pwrite_all(fd, want, N, off);
	CHECK_EQ(t_fstat(fd).st_size, off + N);
	SYS(close(fd));
	fd = SYS(open("f", O_RDONLY));
	t_pread_all(fd, got, N, off);
	t_check_bytes(got, want, N, off, "across 4 GiB");
	/* the same bytes must not also show up 4 GiB lower */
	t_pread_all(fd, got, N, off - 4 * GiB + GiB);
	t_check_zero(got, N, off - 3 * GiB, "3 GiB below");
	t_pread_all(fd, got, 4096, 0);
	t_check_zero(got, 4096, 0, "start");
}

static void blocks_report(void)
{
	int fd = far_file();

	SYS(fsync(fd));
	struct stat st = t_fstat(fd);

	/* a sparse-unaware fs is allowed: report, don't judge */
	if ((uint64_t)st.st_blocks * 512 < 64 * MiB)
		t_note("st_blocks %lld for %lld bytes: sparse",
		       (long long)st.st_blocks, (long long)st.st_size);
	else
		t_note("st_blocks %lld for %lld bytes: NOT sparse",
		       (long long)st.st_blocks, (long long)st.st_size);
}

static void seek_far(void)
{
	int fd = far_file();
	char buf[5];

	CHECK_EQ(SYS(lseek(fd, 0, SEEK_END)), FAR + 5);
	CHECK_EQ(SYS(lseek(fd, -5, SEEK_END)), FAR);
	CHECK_EQ(SYS(read(fd, buf, 5)), 5);
	CHECK(!memcmp(buf, "hello", 5));
	CHECK_EQ(SYS(lseek(fd, 0, SEEK_CUR)), FAR + 5);
	CHECK_EQ(SYS(lseek(fd, 6 * GiB, SEEK_SET)), 6 * GiB);
	CHECK_EQ(SYS(read(fd, buf, 5)), 0);
	ERR(lseek(fd, -1, SEEK_SET), EINVAL);
	/* write(2) at the position extends the file there */
	CHECK_EQ(SYS(write(fd, "end", 3)), 3);
	CHECK_EQ(t_fstat(fd).st_size, 6 * GiB + 3);
	/* SEEK_DATA/SEEK_HOLE: a file system may call it all data */
	off_t d = lseek(fd, 0, SEEK_DATA);

	if (d < 0)
		t_note("SEEK_DATA: %s", strerror(errno));
	else
		CHECK(d <= (off_t)FAR);
}

/* ---- O_APPEND ------------------------------------------------------------ */

static void append_two_fds(void)
{
	int a = SYS(open("f", O_CREAT | O_WRONLY | O_APPEND, 0644));
	int b = SYS(open("f", O_WRONLY | O_APPEND));
	char want[400] = "";

	for (int i = 0; i < 20; i++) {
		char rec[16];
		int fd = i % 3 ? a : b;

		snprintf(rec, sizeof(rec), "%c%02d,", fd == a ? 'a' : 'b', i);
		CHECK_EQ(SYS(write(fd, rec, 4)), 4);
		strcat(want, rec);
	}
	/* moving the offset away does not matter to O_APPEND */
	SYS(lseek(a, 0, SEEK_SET));
	CHECK_EQ(SYS(write(a, "END", 3)), 3);
	strcat(want, "END");
	t_expect_str("f", want);
}

enum { RECORDS = 300 };

/* Writer i writes RECORDS records of its own length, one write each. */
static size_t rec_len(int writer)
{
	return writer ? 97 : 61;
}

/* arg: {writer, fd of the start gate} */
static void appender(void *arg)
{
	int writer = ((int *)arg)[0];
	int fd = SYS(open("f", O_WRONLY | O_APPEND));
	char rec[128];

	t_recv(((int *)arg)[1], 'g');
	for (int i = 0; i < RECORDS; i++) {
		size_t n = rec_len(writer);

		memset(rec, 'a' + writer, n);
		snprintf(rec, n, "%d:%05d:", writer, i);
		rec[strlen(rec)] = 'a' + writer;
		rec[n - 1] = '\n';
		CHECK_EQ(SYS(write(fd, rec, n)), n);
	}
	SYS(close(fd));
}

/* Every record is whole, and each writer's records come in order. */
static void check_records(const char *path)
{
	size_t total = RECORDS * (rec_len(0) + rec_len(1));
	char *buf = t_alloc(total + 1);
	int next[2] = { 0, 0 };
	int fd = SYS(open(path, O_RDONLY));

	CHECK_EQ(t_fstat(fd).st_size, total);
	t_pread_all(fd, buf, total, 0);
	for (size_t off = 0; off < total;) {
		int w = buf[off] - '0', seq;

		CHECKF(w == 0 || w == 1, "garbage at offset %zu", off);
		CHECKF(sscanf(buf + off + 2, "%5d", &seq) == 1 &&
			       seq == next[w],
		       "writer %d: record %d expected at %zu", w, next[w], off);
		for (size_t i = 8; i < rec_len(w) - 1; i++)
			CHECKF(buf[off + i] == 'a' + w,
			       "record of writer %d at %zu is torn", w, off);
		CHECKF(buf[off + rec_len(w) - 1] == '\n', "torn record at %zu",
		       off);
		next[w]++;
		off += rec_len(w);
	}
	CHECK_EQ(next[0], RECORDS);
	CHECK_EQ(next[1], RECORDS);
}

static void append_two_procs(void)
{
	struct t_proc p[2];
	int gate[2], args[2][2];

	t_put("f", "");
	t_pipe(gate);
	/* both open first, then both go at once */
	for (int i = 0; i < 2; i++) {
		args[i][0] = i;
		args[i][1] = gate[0];
	}
	for (int i = 0; i < 2; i++)
		t_spawn(&p[i], NULL, appender, args[i]);
	t_send(gate[1], 'g');
	t_send(gate[1], 'g');
	t_join(&p[0]);
	t_join(&p[1]);
	check_records("f");
}

/* ---- truncate ------------------------------------------------------------ */

static void truncate_up(void)
{
	unsigned char buf[8192];
	struct timespec past[2] = { { 946684800, 0 }, { 946684800, 0 } };

	t_put("f", "abc");
	SYS(utimensat(AT_FDCWD, "f", past, 0));
	SYS(truncate("f", 8192));
	struct stat st = t_stat("f");

	CHECK_EQ(st.st_size, 8192);
	CHECKF(st.st_mtim.tv_sec > 946684800, "truncate did not move mtime");
	int fd = SYS(open("f", O_RDONLY));

	t_pread_all(fd, buf, 8192, 0);
	CHECK(!memcmp(buf, "abc", 3));
	t_check_zero(buf + 3, 8192 - 3, 3, "grown part");
	/* growing to the same size changes nothing */
	SYS(truncate("f", 8192));
	CHECK_EQ(t_stat("f").st_size, 8192);
}

/* Down, then up again: the cut data must not come back, from any cache. */
static void truncate_down_up(void)
{
	size_t n = 3 * MiB + 123, cut = MiB + 4097;
	unsigned char *want = t_alloc(n), *got = t_alloc(n);
	int fd = SYS(open("f", O_CREAT | O_RDWR | O_TRUNC, 0644));

	t_pattern(want, n, 0, 6);
	t_pwrite_all(fd, want, n, 0);
	SYS(fsync(fd));
	SYS(truncate("f", cut));
	CHECK_EQ(t_fstat(fd).st_size, cut);
	CHECK_EQ(SYS(pread(fd, got, n, 0)), cut);
	t_check_bytes(got, want, cut, 0, "kept part");
	SYS(truncate("f", n));
	t_pread_all(fd, got, n, 0);
	t_check_bytes(got, want, cut, 0, "kept part");
	t_check_zero(got + cut, n - cut, cut, "part cut and regrown");
	/* and once more from the file system, not the page cache */
	SYS(fsync(fd));
	SYS(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	SYS(close(fd));
	memset(want + cut, 0, n - cut);
	t_expect_file("f", want, n);
	/* down to zero and up */
	SYS(truncate("f", 0));
	SYS(truncate("f", 4096));
	memset(want, 0, 4096);
	t_expect_file("f", want, 4096);
}

static void ftruncate_fd(void)
{
	char buf[16];
	int fd = SYS(open("f", O_CREAT | O_RDWR, 0644));

	CHECK_EQ(SYS(write(fd, "0123456789", 10)), 10);
	SYS(ftruncate(fd, 4));
	CHECK_EQ(t_fstat(fd).st_size, 4);
	/* the offset stays at 10: the next write leaves a hole */
	CHECK_EQ(SYS(write(fd, "X", 1)), 1);
	CHECK_EQ(t_fstat(fd).st_size, 11);
	t_pread_all(fd, buf, 11, 0);
	CHECK(!memcmp(buf, "0123\0\0\0\0\0\0X", 11));
	SYS(ftruncate(fd, 2));
	SYS(close(fd));
	t_expect_str("f", "01");
	fd = SYS(open("f", O_RDONLY));
	ERR2(ftruncate(fd, 0), EINVAL, EBADF);
	ERR(ftruncate(SYS(open("f", O_RDWR)), -1), EINVAL);
	t_expect_str("f", "01");
}

static void o_trunc(void)
{
	struct timespec past[2] = { { 946684800, 0 }, { 946684800, 0 } };
	unsigned char big[20000];

	t_pattern(big, sizeof(big), 0, 7);
	t_write_file("f", big, sizeof(big));
	SYS(utimensat(AT_FDCWD, "f", past, 0));
	int fd = SYS(open("f", O_WRONLY | O_TRUNC));

	CHECK_EQ(t_fstat(fd).st_size, 0);
	CHECKF(t_fstat(fd).st_mtim.tv_sec > 946684800,
	       "O_TRUNC did not move mtime");
	CHECK_EQ(SYS(write(fd, "tiny", 4)), 4);
	SYS(close(fd));
	/* nothing of the old data past the new end */
	t_expect_str("f", "tiny");
	SYS(truncate("f", 8000));
	unsigned char *got = t_alloc(8000);

	fd = SYS(open("f", O_RDONLY));
	t_pread_all(fd, got, 8000, 0);
	t_check_zero(got + 4, 8000 - 4, 4, "after O_TRUNC and truncate up");
	/* O_TRUNC on an empty file is fine too */
	SYS(close(SYS(open("f", O_WRONLY | O_TRUNC))));
	CHECK_EQ(t_stat("f").st_size, 0);
}

static void truncate_errors(void)
{
	SYS(mkdir("d", 0755));
	t_put("f", "x");
	ERR(truncate("d", 0), EISDIR);
	ERR(truncate("nope", 0), ENOENT);
	ERR(truncate("f", -1), EINVAL);
	t_expect_str("f", "x");
}

/*
 * fsx's sequence: bytes written but not yet synced (so the servers' size
 * is still the old one) are cut by a truncate, the file grows again past
 * them: they must read as zeroes, from the page cache and from the file
 * system, buffered or direct.
 */
static void cut_unsynced(int direct)
{
	enum { BASE = 0x10000, W = 0x4b000, WLEN = 0x6000, DOWN = 0x3f000,
	       UP = 0x45000, FAR_W = 0x5f000, END = FAR_W + 0x1000 };
	unsigned char *buf = t_alloc_aligned(END), *want = t_alloc(END);
	int fd = SYS(open("f", O_CREAT | O_RDWR | O_TRUNC, 0644));

	t_pattern(want, BASE, 0, 8);
	t_pwrite_all(fd, want, BASE, 0);
	SYS(fsync(fd));
	if (direct) {
		int dfd = open("f", O_RDWR | O_DIRECT);

		if (dfd < 0 && errno == EINVAL)
			t_skip("open(O_DIRECT): EINVAL (not supported)");
		CHECKF(dfd >= 0, "open(O_DIRECT): %s", strerror(errno));
		memset(buf, 0xd1, WLEN);
		t_pwrite_all(dfd, buf, WLEN, W);
		SYS(close(dfd));
	} else {
		memset(buf, 0xd1, WLEN);
		t_pwrite_all(fd, buf, WLEN, W);
	}
	SYS(ftruncate(fd, DOWN));
	SYS(ftruncate(fd, UP));
	memset(want + FAR_W, 0x5a, 0x1000);
	t_pwrite_all(fd, want + FAR_W, 0x1000, FAR_W);
	CHECK_EQ(t_fstat(fd).st_size, END);
	t_pread_all(fd, buf, 0x4000, 0x4c000);
	t_check_zero(buf, 0x4000, 0x4c000, "cut, then regrown (cached)");
	SYS(fsync(fd));
	SYS(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	SYS(close(fd));
	t_expect_file("f", want, END);
	/* every stripe, through the other client too */
	if (t_have_mount2())
		t_expect_file(t_path2("f"), want, END);
}

static void truncate_cuts_unsynced(void)
{
	cut_unsynced(0);
}

static void truncate_cuts_unsynced_direct(void)
{
	cut_unsynced(1);
}

/* truncate(2) by path moves mtime when it changes the size, even down. */
static void truncate_path_times(void)
{
	struct timespec past[2] = { { 946684800, 0 }, { 946684800, 0 } };
	int fd = SYS(open("f", O_CREAT | O_RDWR | O_TRUNC, 0644));

	CHECK_EQ(SYS(write(fd, "0123456789", 10)), 10);
	SYS(futimens(fd, past));
	SYS(truncate("f", 0));
	struct stat st = t_fstat(fd);

	CHECK_EQ(st.st_size, 0);
	CHECKF(st.st_mtim.tv_sec > 946684800, "truncate down did not move mtime");
	CHECKF(st.st_ctim.tv_sec > 946684800, "truncate down did not move ctime");
	SYS(close(fd));
}

static const struct t_case sparse_cases[] = {
	{ "pwrite at 5 GiB sets the size", far_size },
	{ "the hole reads as zeroes", hole_reads_zero },
	{ "a write across 4 GiB", across_4g },
	{ "st_blocks of a sparse file (report)", blocks_report },
	{ "lseek past 4 GiB, SEEK_END", seek_far },
	{ NULL, NULL },
};

static const struct t_case append_cases[] = {
	{ "O_APPEND from two fds", append_two_fds },
	{ "O_APPEND from two processes", append_two_procs },
	{ NULL, NULL },
};

static const struct t_case truncate_cases[] = {
	{ "truncate up reads zeroes, moves mtime", truncate_up },
	{ "truncate down drops data, up again reads zeroes", truncate_down_up },
	{ "ftruncate on an fd", ftruncate_fd },
	{ "O_TRUNC on open", o_trunc },
	{ "truncate of a dir, a missing file, to -1", truncate_errors },
	{ "truncate cuts bytes not yet synced", truncate_cuts_unsynced },
	{ "truncate cuts O_DIRECT bytes not yet synced",
	  truncate_cuts_unsynced_direct },
	{ "truncate by path moves mtime and ctime", truncate_path_times },
	{ NULL, NULL },
};

const struct t_group t_group_sparse = { "sparse", sparse_cases };
const struct t_group t_group_append = { "append", append_cases };
const struct t_group t_group_truncate = { "truncate", truncate_cases };
