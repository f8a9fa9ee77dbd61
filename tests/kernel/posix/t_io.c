/* fsync, O_DIRECT, and files that are unlinked while open. */
#include "suite.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define MiB (1u << 20)

/* ---- fsync --------------------------------------------------------------- */

static void fsync_reopen(void)
{
	enum { N = 1 << 20 };
	unsigned char *want = t_alloc(N);
	int fd = SYS(open("f", O_CREAT | O_WRONLY | O_TRUNC, 0644));

	t_pattern(want, N, 0, 1);
	t_pwrite_all(fd, want, N / 2, 0);
	SYS(fsync(fd));
	t_pwrite_all(fd, want + N / 2, N / 2, N / 2);
	SYS(fdatasync(fd));
	SYS(close(fd));
	/* drop the cached pages: the read comes from the fs */
	fd = SYS(open("f", O_RDONLY));
	SYS(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	SYS(close(fd));
	t_expect_file("f", want, N);
	CHECK_EQ(t_stat("f").st_size, N);
}

static void fsync_kinds(void)
{
	t_put("f", "x");
	int fd = SYS(open("f", O_RDONLY));

	/* fsync needs no write access, and works on directories */
	SYS(fsync(fd));
	SYS(fdatasync(fd));
	SYS(close(fd));
	SYS(mkdir("d", 0755));
	t_put("d/new", "n");
	fd = SYS(open("d", O_RDONLY | O_DIRECTORY));
	SYS(fsync(fd));
	SYS(close(fd));
	/* fsync of an empty, never written file */
	fd = SYS(open("empty", O_CREAT | O_WRONLY, 0644));
	SYS(fsync(fd));
	SYS(close(fd));
	CHECK_EQ(t_stat("empty").st_size, 0);
	/* O_SYNC and O_DSYNC writes */
	fd = SYS(open("sync", O_CREAT | O_WRONLY | O_SYNC, 0644));
	CHECK_EQ(SYS(write(fd, "sync", 4)), 4);
	SYS(close(fd));
	fd = SYS(open("sync", O_WRONLY | O_APPEND | O_DSYNC));
	CHECK_EQ(SYS(write(fd, "ed", 2)), 2);
	SYS(close(fd));
	t_expect_str("sync", "synced");
}

/* ---- O_DIRECT ------------------------------------------------------------ */

static int open_direct(const char *path, int flags)
{
	int fd = open(path, flags | O_DIRECT, 0644);

	if (fd < 0 && errno == EINVAL)
		t_skip("open(O_DIRECT): EINVAL (not supported)");
	if (fd < 0)
		T_FAIL("open(%s, O_DIRECT): %s", path, strerror(errno));
	return fd;
}

static void direct_rw(void)
{
	enum { N = 64 * 1024 };
	int fd = open_direct("f", O_CREAT | O_RDWR | O_TRUNC);
	unsigned char *buf = t_alloc_aligned(N), *want = t_alloc(N);

	t_pattern(want, N, 0, 2);
	memcpy(buf, want, N);
	t_pwrite_all(fd, buf, N, 0);
	/* a second extent after a hole */
	t_pattern(buf, 4096, MiB, 3);
	t_pwrite_all(fd, buf, 4096, MiB);
	CHECK_EQ(t_fstat(fd).st_size, MiB + 4096);
	memset(buf, 0xEE, N);
	t_pread_all(fd, buf, N, 0);
	t_check_bytes(buf, want, N, 0, "O_DIRECT read");
	t_pread_all(fd, buf, 4096, MiB - 4096);
	t_check_zero(buf, 4096, MiB - 4096, "hole, O_DIRECT");
	t_pread_all(fd, buf, 4096, MiB);
	t_pattern(want, 4096, MiB, 3);
	t_check_bytes(buf, want, 4096, MiB, "second extent");
	/* short read at EOF */
	CHECK_EQ(SYS(pread(fd, buf, 8192, MiB)), 4096);
	SYS(close(fd));
	/* buffered I/O sees what O_DIRECT wrote */
	fd = SYS(open("f", O_RDONLY));
	t_pread_all(fd, want + 1, 4095, MiB + 1);
	t_pattern(buf, 4095, MiB + 1, 3);
	t_check_bytes(want + 1, buf, 4095, MiB + 1, "buffered after direct");
}

static void direct_after_buffered(void)
{
	enum { N = 16384 };
	unsigned char *want = t_alloc(N), *buf;
	int bfd = SYS(open("f", O_CREAT | O_RDWR | O_TRUNC, 0644));

	/* dirty pages, no fsync: a direct read must see them */
	t_pattern(want, N, 0, 4);
	t_pwrite_all(bfd, want, N, 0);
	int dfd = open_direct("f", O_RDWR);

	buf = t_alloc_aligned(N);
	t_pread_all(dfd, buf, N, 0);
	t_check_bytes(buf, want, N, 0, "direct read of buffered data");
	/* a direct write must not leave stale pages for buffered reads */
	t_pattern(buf, N, 0, 5);
	t_pwrite_all(dfd, buf, N, 0);
	t_pread_all(bfd, want, N, 0);
	t_check_bytes(want, buf, N, 0, "buffered read after direct write");
}

/* ---- unlinked while open ------------------------------------------------- */

static void unlinked_usable(void)
{
	int fd = SYS(open("f", O_CREAT | O_RDWR, 0644));
	char buf[32];

	t_pwrite_all(fd, "before", 6, 0);
	SYS(unlink("f"));
	CHECK(!t_exists("f"));
	CHECK_EQ(t_fstat(fd).st_nlink, 0);
	t_pwrite_all(fd, " after", 6, 6);
	t_pread_all(fd, buf, 12, 0);
	CHECK(!memcmp(buf, "before after", 12));
	SYS(ftruncate(fd, 6));
	CHECK_EQ(t_fstat(fd).st_size, 6);
	SYS(fsync(fd));
	/* the name is free: a new file there is a different file */
	t_put("f", "new file");
	CHECK(t_stat("f").st_ino != t_fstat(fd).st_ino);
	t_expect_fd(fd, "before");
	SYS(close(fd));
	t_expect_str("f", "new file");
}

static void reader_of_unlinked(void *arg)
{
	int *fds = arg;

	t_recv(fds[1], 'u');
	t_expect_fd(fds[0], "kept alive");
}

static void unlinked_other_process(void)
{
	int fd = SYS(open("f", O_CREAT | O_RDWR, 0644));
	int sync[2];
	struct t_proc p;

	t_pwrite_all(fd, "kept alive", 10, 0);
	t_pipe(sync);
	int args[2] = { fd, sync[0] };

	t_spawn(&p, NULL, reader_of_unlinked, args);
	SYS(close(fd));
	SYS(unlink("f"));
	t_send(sync[1], 'u');
	t_join(&p);
}

static unsigned long long free_bytes(void)
{
	struct statvfs sv;

	SYS(statvfs(".", &sv));
	return (unsigned long long)sv.f_bfree * sv.f_frsize;
}

static void space_freed(void)
{
	enum { N = 16 * MiB, CHUNK = MiB };
	unsigned char *buf = t_alloc(CHUNK);
	int fd = SYS(open("f", O_CREAT | O_RDWR, 0644));
	unsigned long long before = free_bytes(), full, open_after, freed;

	t_pattern(buf, CHUNK, 0, 6);
	for (unsigned off = 0; off < N; off += CHUNK)
		t_pwrite_all(fd, buf, CHUNK, off);
	SYS(fsync(fd));
	full = free_bytes();
	SYS(unlink("f"));
	open_after = free_bytes();
	SYS(close(fd));
	/* the fs may free the blocks asynchronously: poll, then report */
	double deadline = t_now() + t_wait_s / 4.0, t0 = t_now();

	do {
		freed = free_bytes();
	} while (freed + N / 2 < before && t_now() < deadline);
	t_note("free space: %lld MiB used by 16 MiB written, %lld MiB still "
	       "used while open, %lld MiB after close (%.2fs)",
	       ((long long)before - (long long)full) / (long long)MiB,
	       ((long long)before - (long long)open_after) / (long long)MiB,
	       ((long long)before - (long long)freed) / (long long)MiB,
	       t_now() - t0);
	if (freed + N / 2 < before)
		t_note("space of the unlinked file was not freed (other "
		       "writers on this fs can cause this)");
}

static const struct t_case fsync_cases[] = {
	{ "fsync, fdatasync; data survives close and reopen", fsync_reopen },
	{ "fsync of read-only fds and dirs, O_SYNC, O_DSYNC", fsync_kinds },
	{ NULL, NULL },
};

static const struct t_case direct_cases[] = {
	{ "aligned pwrite and pread", direct_rw },
	{ "coherent with buffered I/O", direct_after_buffered },
	{ NULL, NULL },
};

static const struct t_case unlinked_cases[] = {
	{ "fd still reads and writes, nlink 0, name gone", unlinked_usable },
	{ "another process reads it after the unlink", unlinked_other_process },
	{ "space comes back after close (report)", space_freed },
	{ NULL, NULL },
};

const struct t_group t_group_fsync = { "fsync", fsync_cases };
const struct t_group t_group_direct = { "direct", direct_cases };
const struct t_group t_group_unlinked = { "unlinked", unlinked_cases };
