/* mmap(2) and its coherence with read(2) and write(2). */
#include "suite.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096

static void *map(int fd, size_t n, int prot, int flags)
{
	void *p = mmap(NULL, n, prot, flags, fd, 0);

	if (p == MAP_FAILED)
		T_FAIL("mmap(%zu bytes): %s", n, strerror(errno));
	return p;
}

/* A file of n bytes of pattern seed, open read-write. */
static int pattern_file(const char *path, size_t n, unsigned seed)
{
	unsigned char *buf = t_alloc(n);
	int fd = SYS(open(path, O_CREAT | O_RDWR | O_TRUNC, 0644));

	t_pattern(buf, n, 0, seed);
	t_pwrite_all(fd, buf, n, 0);
	return fd;
}

static void shared_store_msync(void)
{
	enum { N = 3 * PAGE + 100 };
	int fd = pattern_file("f", N, 1);
	unsigned char *m = map(fd, N, PROT_READ | PROT_WRITE, MAP_SHARED);
	unsigned char want[N], got[N];

	t_pattern(want, N, 0, 1);
	memcpy(m + PAGE - 4, "across a page", 13);
	memcpy(want + PAGE - 4, "across a page", 13);
	m[N - 1] = 'Z';
	want[N - 1] = 'Z';
	SYS(msync(m, N, MS_SYNC));
	SYS(munmap(m, N));
	/* read(2) through another open file */
	int fd2 = SYS(open("f", O_RDONLY));

	t_pread_all(fd2, got, N, 0);
	t_check_bytes(got, want, N, 0, "after msync");
	CHECK_EQ(t_fstat(fd2).st_size, N);
}

static void shared_store_no_msync(void)
{
	enum { N = 2 * PAGE };
	int fd = pattern_file("f", N, 2);
	unsigned char *m = map(fd, N, PROT_READ | PROT_WRITE, MAP_SHARED);
	char got[16];
	int fd2 = SYS(open("f", O_RDONLY));

	/* one page cache: a store is visible to read(2) at once */
	memcpy(m + PAGE + 7, "stored", 6);
	t_pread_all(fd2, got, 6, PAGE + 7);
	CHECK(!memcmp(got, "stored", 6));
	t_pread_all(fd, got, 6, PAGE + 7);
	CHECK(!memcmp(got, "stored", 6));
	SYS(munmap(m, N));
}

static void write_seen_by_map(void)
{
	enum { N = 2 * PAGE };
	int fd = pattern_file("f", N, 3);
	unsigned char *m = map(fd, N, PROT_READ, MAP_SHARED);
	unsigned char want[N];

	t_pattern(want, N, 0, 3);
	t_check_bytes(m, want, N, 0, "read-only mapping");
	/* and a later write(2) shows in the existing mapping */
	t_pwrite_all(fd, "written", 7, 100);
	CHECK(!memcmp(m + 100, "written", 7));
	SYS(munmap(m, N));
}

static void private_stays_private(void)
{
	enum { N = PAGE };
	int fd = pattern_file("f", N, 4);
	unsigned char *m = map(fd, N, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	unsigned char want[N];

	t_pattern(want, N, 0, 4);
	memcpy(m, "private", 7);
	SYS(munmap(m, N));
	SYS(close(fd));
	t_expect_file("f", want, N);
}

static void survives_reopen(void)
{
	enum { N = 4 * PAGE };
	int fd = SYS(open("f", O_CREAT | O_RDWR | O_TRUNC, 0644));
	unsigned char want[N];

	/* a file grown by ftruncate, then filled only through the map */
	SYS(ftruncate(fd, N));
	unsigned char *m = map(fd, N, PROT_READ | PROT_WRITE, MAP_SHARED);

	t_pattern(want, N, 0, 5);
	memcpy(m, want, N);
	SYS(msync(m, N, MS_SYNC));
	SYS(munmap(m, N));
	/* drop the cached pages: the next read comes from the fs */
	SYS(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	SYS(close(fd));
	t_expect_file("f", want, N);
}

static void toucher(void *arg)
{
	volatile unsigned char *m = arg;

	/* the default action, even where a sanitizer catches SIGBUS */
	signal(SIGBUS, SIG_DFL);
	/* the rest of the last page reads as zero, the next page faults */
	for (int i = 100; i < PAGE; i++)
		CHECKF(m[i] == 0, "byte %d past EOF in the last page is %d",
		       i, m[i]);
	(void)m[PAGE];
}

static void sigbus_past_eof(void)
{
	int fd = pattern_file("f", 100, 6);
	unsigned char *m = map(fd, 2 * PAGE, PROT_READ, MAP_SHARED);
	struct t_proc p;

	t_spawn(&p, NULL, toucher, m);
	int sig = t_join_signal(&p);

	CHECKF(sig == SIGBUS, "touching a page past EOF gave %s",
	       sig ? strsignal(sig) : "no signal");
	SYS(munmap(m, 2 * PAGE));
}

static void map_modes(void)
{
	int fd = pattern_file("f", PAGE, 7);

	SYS(close(fd));
	fd = SYS(open("f", O_RDONLY));
	/* a shared writable map needs a writable fd; a private one does not */
	CHECK(mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) ==
		      MAP_FAILED &&
	      errno == EACCES);
	SYS(munmap(map(fd, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE), PAGE));
	SYS(close(fd));
	fd = SYS(open("f", O_WRONLY));
	CHECK(mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED &&
	      errno == EACCES);
}

static const struct t_case cases[] = {
	{ "MAP_SHARED store seen by read(2) after msync", shared_store_msync },
	{ "MAP_SHARED store seen by read(2) without msync",
	  shared_store_no_msync },
	{ "read-only map of written data, later writes", write_seen_by_map },
	{ "MAP_PRIVATE stores stay private", private_stays_private },
	{ "mapped stores survive msync, close, reopen", survives_reopen },
	{ "touching a page past EOF raises SIGBUS", sigbus_past_eof },
	{ "a shared writable map needs O_RDWR", map_modes },
	{ NULL, NULL },
};

const struct t_group t_group_mmap = { "mmap", cases };
