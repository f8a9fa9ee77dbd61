/* File helpers shared by the cases: each fails the case on any error. */
#include "suite.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

void t_pattern(void *buf, size_t n, uint64_t off, unsigned seed)
{
	unsigned char *p = buf;

	/* a byte that changes with every offset and every seed, never a run of
	 * equal bytes, so a misplaced or stale block is always visible */
	for (size_t i = 0; i < n; i++) {
		uint64_t x = (off + i) * 0x9E3779B97F4A7C15ull + seed;

		p[i] = (unsigned char)((x >> 32) ^ (x >> 56) ^ (off + i));
	}
}

void t_check_bytes(const void *got, const void *want, size_t n, uint64_t off,
		   const char *what)
{
	const unsigned char *g = got, *w = want;

	for (size_t i = 0; i < n; i++)
		if (g[i] != w[i])
			T_FAIL("%s: byte at offset %llu is 0x%02x, expected "
			       "0x%02x", what, (unsigned long long)(off + i),
			       g[i], w[i]);
}

void t_check_zero(const void *got, size_t n, uint64_t off, const char *what)
{
	const unsigned char *g = got;

	for (size_t i = 0; i < n; i++)
		if (g[i])
			T_FAIL("%s: byte at offset %llu is 0x%02x, expected 0",
			       what, (unsigned long long)(off + i), g[i]);
}

void t_pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
	ssize_t w = pwrite(fd, buf, n, (off_t)off);

	if (w < 0)
		T_FAIL("pwrite(%zu bytes at %llu): %s", n,
		       (unsigned long long)off, strerrorname_np(errno));
	CHECKF((size_t)w == n, "pwrite(%zu bytes at %llu) wrote %zd", n,
	       (unsigned long long)off, w);
}

void t_pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	ssize_t r = pread(fd, buf, n, (off_t)off);

	if (r < 0)
		T_FAIL("pread(%zu bytes at %llu): %s", n,
		       (unsigned long long)off, strerrorname_np(errno));
	CHECKF((size_t)r == n, "pread(%zu bytes at %llu) read %zd", n,
	       (unsigned long long)off, r);
}

void t_write_file(const char *path, const void *buf, size_t n)
{
	int fd = SYS(open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			  0644));

	if (n)
		t_pwrite_all(fd, buf, n, 0);
	SYS(close(fd));
}

void t_put(const char *path, const char *s)
{
	t_write_file(path, s, strlen(s));
}

void t_expect_file(const char *path, const void *buf, size_t n)
{
	int fd = SYS(open(path, O_RDONLY | O_CLOEXEC));
	unsigned char *got = t_alloc(n + 1);
	ssize_t r;
	size_t have = 0;

	/* read(2) until EOF, not one pread: a short file must show as short */
	while ((r = SYS(read(fd, got + have, n + 1 - have))) > 0)
		if ((have += r) == n + 1)
			break;
	SYS(close(fd));
	CHECKF(have == n, "%s holds %zu%s bytes, expected %zu", path, have,
	       have > n ? " or more" : "", n);
	t_check_bytes(got, buf, n, 0, path);
}

void t_expect_str(const char *path, const char *s)
{
	t_expect_file(path, s, strlen(s));
}

void t_expect_fd(int fd, const char *s)
{
	size_t n = strlen(s);
	char *got = t_alloc(n + 2);
	ssize_t r = SYS(pread(fd, got, n + 1, 0));

	CHECKF((size_t)r == n && !memcmp(got, s, n),
	       "fd %d holds \"%.*s\" (%zd bytes), expected \"%s\"", fd,
	       (int)(r > 0 ? r : 0), got, r, s);
}

struct stat t_stat(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		T_FAIL("stat(%s): %s", path, strerrorname_np(errno));
	return st;
}

struct stat t_lstat(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		T_FAIL("lstat(%s): %s", path, strerrorname_np(errno));
	return st;
}

struct stat t_fstat(int fd)
{
	struct stat st;

	SYS(fstat(fd, &st));
	return st;
}

bool t_exists(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0)
		return true;
	if (errno != ENOENT)
		T_FAIL("lstat(%s): %s", path, strerrorname_np(errno));
	return false;
}

int ts_cmp(struct timespec a, struct timespec b)
{
	if (a.tv_sec != b.tv_sec)
		return a.tv_sec < b.tv_sec ? -1 : 1;
	if (a.tv_nsec != b.tv_nsec)
		return a.tv_nsec < b.tv_nsec ? -1 : 1;
	return 0;
}
