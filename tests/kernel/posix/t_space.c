/*
 * The space of files: fallocate (allocate, KEEP_SIZE, PUNCH_HOLE,
 * ZERO_RANGE), SEEK_DATA / SEEK_HOLE, st_blocks of sparse files and
 * copy_file_range. Offsets are chosen to cross stripe boundaries of any
 * chunk size PFS allows (64 KiB .. 1 MiB chunks over 1..4 targets) and
 * to be aligned to 4 KiB blocks where a local file system's answers
 * (ext4, the reference) depend on block boundaries.
 */
#include "suite.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/statfs.h>
#include <unistd.h>

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define PFS_MAGIC 0x50465331

static bool on_pfs(void)
{
	struct statfs s;

	SYS(statfs(".", &s));
	return s.f_type == PFS_MAGIC;
}

static int fresh(const char *name)
{
	return SYS(open(name, O_CREAT | O_RDWR | O_TRUNC, 0644));
}

/* A file of n pattern bytes (seed), not synced: still dirty in the cache. */
static int patterned(const char *name, size_t n, unsigned seed)
{
	unsigned char *buf = t_alloc(n);
	int fd = fresh(name);

	t_pattern(buf, n, 0, seed);
	t_pwrite_all(fd, buf, n, 0);
	return fd;
}

static void falloc_or_skip(int fd, int mode, off_t off, off_t len)
{
	if (fallocate(fd, mode, off, len) == 0)
		return;
	if (errno == EOPNOTSUPP && !on_pfs())
		t_skip("fallocate mode %#x: not supported here", mode);
	T_FAIL("fallocate(%#x, %lld, %lld): %s", mode, (long long)off,
	       (long long)len, strerror(errno));
}

/* The whole file: pattern seed outside [lo, hi), zeros inside. */
static void expect_zeroed(int fd, size_t n, unsigned seed, uint64_t lo,
			  uint64_t hi)
{
	unsigned char *got = t_alloc(n), *want = t_alloc(n);

	t_pattern(want, n, 0, seed);
	memset(want + lo, 0, hi - lo);
	t_pread_all(fd, got, n, 0);
	t_check_bytes(got, want, n, 0, "after punch/zero");
}

static long long allocated(int fd)
{
	return (long long)t_fstat(fd).st_blocks * 512;
}

/* ---- allocation ---------------------------------------------------------- */

static void alloc_extends(void)
{
	int fd = fresh("f");
	unsigned char *buf = t_alloc(64 * KiB);

	falloc_or_skip(fd, 0, 1 * MiB, 3 * MiB);
	CHECK_EQ(t_fstat(fd).st_size, 4 * MiB);
	CHECK_EQ(t_stat(t_path2("f")).st_size, 4 * MiB);
	CHECKF(allocated(fd) >= (long long)(3 * MiB),
	       "st_blocks * 512 = %lld after allocating 3 MiB", allocated(fd));
	memset(buf, 0xAA, 64 * KiB);
	t_pread_all(fd, buf, 64 * KiB, 2 * MiB - 32 * KiB);
	t_check_zero(buf, 64 * KiB, 2 * MiB - 32 * KiB, "allocated range");
}

static void alloc_keep_size(void)
{
	int fd = fresh("f");
	char c;

	t_pwrite_all(fd, "x", 1, 99);
	falloc_or_skip(fd, FALLOC_FL_KEEP_SIZE, 0, 4 * MiB);
	CHECK_EQ(t_fstat(fd).st_size, 100);
	CHECK_EQ(t_stat(t_path2("f")).st_size, 100);
	CHECKF(allocated(fd) >= (long long)(4 * MiB - 4 * KiB),
	       "st_blocks * 512 = %lld after allocating 4 MiB", allocated(fd));
	CHECK_EQ(SYS(pread(fd, &c, 1, 100)), 0);
	/* allocation within the size keeps the data */
	falloc_or_skip(fd, FALLOC_FL_KEEP_SIZE, 0, 200);
	CHECK_EQ(SYS(pread(fd, &c, 1, 99)), 1);
	CHECK_EQ(c, 'x');
	CHECK_EQ(t_fstat(fd).st_size, 100);
}

/* ---- punch and zero ------------------------------------------------------ */

static void punch_or_zero(int mode)
{
	const size_t n = 5 * MiB + 333;
	const uint64_t lo = 100 * KiB + 1, hi = 3 * MiB + 12345;
	int fd = patterned("f", n, 3);
	long long before;

	SYS(fsync(fd));
	before = allocated(fd);
	/* dirty pages inside and around the range, not written back yet */
	expect_zeroed(fd, n, 3, 0, 0);
	{
		unsigned char *buf = t_alloc(256 * KiB);

		t_pattern(buf, 256 * KiB, 2 * MiB, 3);
		t_pwrite_all(fd, buf, 256 * KiB, 2 * MiB);
	}
	falloc_or_skip(fd, mode, lo, hi - lo);
	CHECK_EQ(t_fstat(fd).st_size, n);
	expect_zeroed(fd, n, 3, lo, hi);
	SYS(close(fd));
	/* and through the other mount, and after a reopen */
	fd = SYS(open(t_path2("f"), O_RDONLY));
	expect_zeroed(fd, n, 3, lo, hi);
	SYS(close(fd));
	fd = SYS(open("f", O_RDONLY));
	expect_zeroed(fd, n, 3, lo, hi);
	if (mode & FALLOC_FL_PUNCH_HOLE)
		CHECKF(allocated(fd) <= before - (long long)(2 * MiB),
		       "st_blocks * 512: %lld before the punch, %lld after",
		       before, allocated(fd));
}

static void punch_hole(void)
{
	punch_or_zero(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE);
}

static void zero_range(void)
{
	punch_or_zero(FALLOC_FL_ZERO_RANGE);
}

static void zero_range_size(void)
{
	int fd = patterned("f", 100 * KiB, 4);

	/* past the end: extends, unless KEEP_SIZE */
	falloc_or_skip(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
		       50 * KiB, 1 * MiB);
	CHECK_EQ(t_fstat(fd).st_size, 100 * KiB);
	expect_zeroed(fd, 100 * KiB, 4, 50 * KiB, 100 * KiB);
	falloc_or_skip(fd, FALLOC_FL_ZERO_RANGE, 2 * MiB, 1 * MiB);
	CHECK_EQ(t_fstat(fd).st_size, 3 * MiB);
	CHECK_EQ(t_stat(t_path2("f")).st_size, 3 * MiB);
}

static void punch_past_end(void)
{
	int fd = patterned("f", 10 * KiB, 5);

	falloc_or_skip(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		       8 * KiB, 4 * MiB);
	CHECK_EQ(t_fstat(fd).st_size, 10 * KiB);
	expect_zeroed(fd, 10 * KiB, 5, 8 * KiB, 10 * KiB);
}

static void falloc_errors(void)
{
	int fd = fresh("f");
	int ro;

	ERR(fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4096), EOPNOTSUPP);
	ERR(fallocate(fd, 0, 0, 0), EINVAL);
	ERR(fallocate(fd, 0, -1, 4096), EINVAL);
	ro = SYS(open("f", O_RDONLY));
	ERR(fallocate(ro, 0, 0, 4096), EBADF);
	/* collapse and insert shift data: PFS does not (ext4 does) */
	if (on_pfs()) {
		t_pwrite_all(fd, "abc", 3, 2 * MiB);
		ERR(fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, 1 * MiB),
		    EOPNOTSUPP);
		ERR(fallocate(fd, FALLOC_FL_INSERT_RANGE, 0, 1 * MiB),
		    EOPNOTSUPP);
		CHECK_EQ(t_fstat(fd).st_size, 2 * MiB + 3);
	}
}

/* ---- SEEK_DATA, SEEK_HOLE ------------------------------------------------ */

#define DATA_AT (1600 * KiB)
#define DATA_LEN (50 * KiB)

/* 64 KiB data, hole, 50 KiB data at 1600 KiB, hole to 4 MiB. Not synced. */
static int sparse_file(void)
{
	unsigned char *buf = t_alloc(64 * KiB);
	int fd = fresh("f");

	memset(buf, 'a', 64 * KiB);
	t_pwrite_all(fd, buf, 64 * KiB, 0);
	t_pwrite_all(fd, buf, DATA_LEN, DATA_AT);
	SYS(ftruncate(fd, 4 * MiB));
	return fd;
}

/* A hole found at or after end, within the block holding end. */
static void check_hole_end(off_t got, off_t end)
{
	CHECKF(got >= end && got <= ((end + 4095) & ~4095ll),
	       "SEEK_HOLE answered %lld for data ending at %lld",
	       (long long)got, (long long)end);
}

static void seek_sparse(void)
{
	int fd = sparse_file();

	CHECK_EQ(SYS(lseek(fd, 0, SEEK_DATA)), 0);
	CHECK_EQ(SYS(lseek(fd, 0, SEEK_HOLE)), 64 * KiB);
	CHECK_EQ(SYS(lseek(fd, 64 * KiB, SEEK_DATA)), DATA_AT);
	CHECK_EQ(SYS(lseek(fd, 100 * KiB, SEEK_DATA)), DATA_AT);
	CHECK_EQ(SYS(lseek(fd, 100 * KiB, SEEK_HOLE)), 100 * KiB);
	CHECK_EQ(SYS(lseek(fd, DATA_AT + 4 * KiB, SEEK_DATA)),
		 DATA_AT + 4 * KiB);
	check_hole_end(SYS(lseek(fd, DATA_AT, SEEK_HOLE)), DATA_AT + DATA_LEN);
	ERR(lseek(fd, 2 * MiB, SEEK_DATA), ENXIO);
	CHECK_EQ(SYS(lseek(fd, 2 * MiB, SEEK_HOLE)), 2 * MiB);
	ERR(lseek(fd, 4 * MiB, SEEK_DATA), ENXIO);
	ERR(lseek(fd, 4 * MiB, SEEK_HOLE), ENXIO);
	ERR(lseek(fd, -1, SEEK_DATA), ENXIO);
	/* the file position moved with the last success */
	CHECK_EQ(SYS(lseek(fd, 0, SEEK_CUR)), 2 * MiB);
	SYS(close(fd));
	/* another client sees the same */
	fd = SYS(open(t_path2("f"), O_RDONLY));
	CHECK_EQ(SYS(lseek(fd, 64 * KiB, SEEK_DATA)), DATA_AT);
	check_hole_end(SYS(lseek(fd, DATA_AT, SEEK_HOLE)), DATA_AT + DATA_LEN);
}

static void seek_full_and_punched(void)
{
	const size_t n = 3 * MiB + 4 * KiB;
	int fd = patterned("f", n, 6);

	/* data everywhere: the only hole is the end of the file */
	CHECK_EQ(SYS(lseek(fd, 0, SEEK_HOLE)), n);
	CHECK_EQ(SYS(lseek(fd, 1 * MiB + 17, SEEK_DATA)), 1 * MiB + 17);
	falloc_or_skip(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		       768 * KiB, 1 * MiB);
	CHECK_EQ(SYS(lseek(fd, 0, SEEK_HOLE)), 768 * KiB);
	CHECK_EQ(SYS(lseek(fd, 768 * KiB, SEEK_DATA)), 1792 * KiB);
	CHECK_EQ(SYS(lseek(fd, 1 * MiB, SEEK_HOLE)), 1 * MiB);
	CHECK_EQ(SYS(lseek(fd, 1792 * KiB, SEEK_HOLE)), n);
}

static void seek_empty(void)
{
	int fd = fresh("f");

	ERR(lseek(fd, 0, SEEK_DATA), ENXIO);
	ERR(lseek(fd, 0, SEEK_HOLE), ENXIO);
	SYS(ftruncate(fd, 1 * MiB));
	ERR(lseek(fd, 0, SEEK_DATA), ENXIO);
	CHECK_EQ(SYS(lseek(fd, 0, SEEK_HOLE)), 0);
}

/* ---- st_blocks ----------------------------------------------------------- */

static void blocks_sparse(void)
{
	unsigned char *buf = t_alloc(DATA_LEN);
	int fd = fresh("f");
	struct stat st;

	t_pattern(buf, DATA_LEN, DATA_AT, 7);
	t_pwrite_all(fd, buf, DATA_LEN, DATA_AT);
	/* before any sync: the data counts, the hole does not */
	st = t_fstat(fd);
	CHECK_EQ(st.st_size, DATA_AT + DATA_LEN);
	CHECKF(st.st_blocks * 512 >= (long long)DATA_LEN &&
	       st.st_blocks * 512 <= (long long)MiB,
	       "st_blocks * 512 = %lld for 50 KiB at 1600 KiB",
	       (long long)st.st_blocks * 512);
	SYS(close(fd));
	/* a client that never opened it */
	st = t_stat(t_path2("f"));
	CHECKF(st.st_blocks * 512 >= (long long)DATA_LEN &&
	       st.st_blocks * 512 <= (long long)MiB,
	       "second mount: st_blocks * 512 = %lld",
	       (long long)st.st_blocks * 512);
	/* filling the hole shows */
	fd = patterned("g", 4 * MiB, 8);
	CHECKF(allocated(fd) >= (long long)(4 * MiB),
	       "st_blocks * 512 = %lld for 4 MiB written", allocated(fd));
}

/* ---- copy_file_range ----------------------------------------------------- */

static void copy_check(int in, loff_t off_in, int out, loff_t off_out,
		       size_t len, unsigned seed)
{
	unsigned char *got = t_alloc(len), *want = t_alloc(len);
	loff_t a = off_in, b = off_out;
	size_t done = 0;

	while (done < len) {
		ssize_t n = SYS(copy_file_range(in, &a, out, &b, len - done,
						0));

		CHECKF(n > 0, "copy_file_range stopped after %zu of %zu",
		       done, len);
		done += n;
	}
	CHECK_EQ(a, off_in + (loff_t)len);
	CHECK_EQ(b, off_out + (loff_t)len);
	t_pattern(want, len, off_in, seed);
	t_pread_all(out, got, len, off_out);
	t_check_bytes(got, want, len, off_out, "copied");
}

static void copy_unaligned(void)
{
	const size_t n = 5 * MiB + 123;
	int in = patterned("in", n, 9);	/* dirty: must be flushed */
	int out = fresh("out");

	copy_check(in, 123457, out, 777777, 3 * MiB + 99, 9);
	CHECK_EQ(t_fstat(out).st_size, 777777 + 3 * MiB + 99);
	SYS(close(out));
	out = SYS(open(t_path2("out"), O_RDONLY));
	CHECK_EQ(t_fstat(out).st_size, 777777 + 3 * MiB + 99);
	{
		unsigned char *got = t_alloc(777777);

		t_pread_all(out, got, 777777, 0);
		t_check_zero(got, 777777, 0, "before the copy");
	}
}

static void copy_aligned_over_cache(void)
{
	const size_t n = 4 * MiB;
	int in = patterned("in", n, 10);
	int out = patterned("out", n, 11);	/* cached, dirty */

	/* the same offsets: pieces may lie on the same targets */
	copy_check(in, 1 * MiB + 4 * KiB, out, 1 * MiB + 4 * KiB,
		   2 * MiB, 10);
	CHECK_EQ(t_fstat(out).st_size, n);
	SYS(close(out));
	out = SYS(open(t_path2("out"), O_RDONLY));
	{
		unsigned char *got = t_alloc(n), *want = t_alloc(n);

		t_pattern(want, n, 0, 11);
		t_pattern(want + 1 * MiB + 4 * KiB, 2 * MiB,
			  1 * MiB + 4 * KiB, 10);
		t_pread_all(out, got, n, 0);
		t_check_bytes(got, want, n, 0, "second mount after copy");
	}
}

static void copy_same_file(void)
{
	const size_t n = 2 * MiB + 5;
	int fd = patterned("f", n, 12);
	loff_t a = 0, b = 1 * MiB;

	/* 8 MiB apart: a whole number of stripes for any layout here */
	copy_check(fd, 0, fd, 8 * MiB, n, 12);
	CHECK_EQ(t_fstat(fd).st_size, 8 * MiB + n);
	/* overlapping ranges of one file */
	ERR(copy_file_range(fd, &a, fd, &b, 2 * MiB, 0), EINVAL);
}

static void copy_holes_and_end(void)
{
	int in = fresh("in"), out = patterned("out", 3 * MiB, 13);
	unsigned char *got = t_alloc(3 * MiB);
	loff_t a = 0, b = 0;

	/* a source that is a hole but for its last bytes */
	t_pwrite_all(in, "tail", 4, 2 * MiB - 4);
	CHECK_EQ(SYS(copy_file_range(in, &a, out, &b, 3 * MiB, 0)) > 0, 1);
	while (a < (loff_t)(2 * MiB))
		CHECK(SYS(copy_file_range(in, &a, out, &b, 3 * MiB, 0)) > 0);
	/* at the source's end: 0 */
	CHECK_EQ(SYS(copy_file_range(in, &a, out, &b, 1, 0)), 0);
	t_pread_all(out, got, 3 * MiB, 0);
	t_check_zero(got, 2 * MiB - 4, 0, "copied hole");
	CHECK(!memcmp(got + 2 * MiB - 4, "tail", 4));
	{
		unsigned char *want = t_alloc(1 * MiB);

		t_pattern(want, 1 * MiB, 2 * MiB, 13);
		t_check_bytes(got + 2 * MiB, want, 1 * MiB, 2 * MiB,
			      "past the copy");
	}
}

static const struct t_case space_cases[] = {
	{ "fallocate extends, reads zeroes, counts blocks", alloc_extends },
	{ "fallocate KEEP_SIZE keeps size and data", alloc_keep_size },
	{ "PUNCH_HOLE across stripes, dirty pages", punch_hole },
	{ "ZERO_RANGE across stripes, dirty pages", zero_range },
	{ "ZERO_RANGE past the end, with and without KEEP_SIZE",
	  zero_range_size },
	{ "PUNCH_HOLE past the end", punch_past_end },
	{ "fallocate errors, unsupported modes", falloc_errors },
	{ "SEEK_DATA/SEEK_HOLE on a sparse file", seek_sparse },
	{ "SEEK_HOLE in full and punched files", seek_full_and_punched },
	{ "SEEK_DATA/SEEK_HOLE of empty and hole-only files", seek_empty },
	{ "st_blocks of a sparse file", blocks_sparse },
	{ "copy_file_range, unaligned offsets", copy_unaligned },
	{ "copy_file_range over cached pages", copy_aligned_over_cache },
	{ "copy_file_range within one file", copy_same_file },
	{ "copy_file_range of holes, at the end", copy_holes_and_end },
	{ NULL, NULL },
};

const struct t_group t_group_space = { "space", space_cases };
