// SPDX-License-Identifier: GPL-2.0
/*
 * pfs-gpu-io: what cuFile does with nvidia-fs, against the test double of
 * nvidia-fs (/dev/pfs_nvfs_mock): O_DIRECT reads and writes of a file whose
 * buffer is a "GPU" buffer mapped from the device.
 *
 *   pfs-gpu-io write FILE SIZE SEED [GPU]  writes SIZE bytes of pattern SEED
 *   pfs-gpu-io read FILE SIZE OUT [GPU]    reads SIZE bytes into a buffer
 *                                          filled with 0xa5 first (a hole
 *                                          must come back as zeros), saves
 *                                          them to OUT
 *   pfs-gpu-io pattern OUT SIZE SEED       the pattern, into an ordinary file
 *   pfs-gpu-io mixed FILE                  one read into a buffer of a "GPU"
 *                                          half and a CPU half: must fail
 *                                          with EINVAL
 *
 * GPU is the "GPU" number (the mapping's offset in pages), 0 by default.
 * Exit status 0 on success; on failure, the errno's message on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MOCK_DEV "/dev/pfs_nvfs_mock"

static void die(const char *what)
{
	fprintf(stderr, "pfs-gpu-io: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void fill_pattern(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)(x >> 24);
	}
}

/* SIZE bytes of "GPU" memory of GPU gpu, at *at when given (MAP_FIXED). */
static uint8_t *gpu_buffer(size_t size, unsigned long gpu, void *at)
{
	int fd = open(MOCK_DEV, O_RDWR);
	void *p;

	if (fd < 0)
		die(MOCK_DEV);
	p = mmap(at, size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | (at ? MAP_FIXED : 0), fd,
		 (off_t)gpu * sysconf(_SC_PAGESIZE));
	if (p == MAP_FAILED)
		die("mmap " MOCK_DEV);
	close(fd);
	return p;
}

static int transfer(int write_it, const char *path, uint8_t *buf, size_t size)
{
	int fd = open(path, write_it ? O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT :
				       O_RDONLY | O_DIRECT, 0644);
	size_t done = 0;

	if (fd < 0)
		die(path);
	while (done < size) {
		ssize_t n = write_it ? pwrite(fd, buf + done, size - done, done) :
				       pread(fd, buf + done, size - done, done);

		if (n < 0)
			die(write_it ? "pwrite" : "pread");
		if (n == 0) {
			fprintf(stderr, "pfs-gpu-io: %s ends after %zu of %zu bytes\n",
				path, done, size);
			exit(2);
		}
		done += n;
	}
	if (close(fd))
		die("close");
	return 0;
}

static void save(const char *out, const uint8_t *buf, size_t size)
{
	FILE *f = fopen(out, "w");

	if (!f || fwrite(buf, 1, size, f) != size || fclose(f))
		die(out);
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	unsigned long gpu = argc > 5 ? strtoul(argv[5], NULL, 0) : 0;
	size_t size = argc > 3 ? strtoull(argv[3], NULL, 0) : 0;
	uint8_t *buf;

	if (!strcmp(cmd, "write") && argc >= 5 && size) {
		buf = gpu_buffer(size, gpu, NULL);
		fill_pattern(buf, size, strtoull(argv[4], NULL, 0));
		return transfer(1, argv[2], buf, size);
	}
	if (!strcmp(cmd, "read") && argc >= 5 && size) {
		buf = gpu_buffer(size, gpu, NULL);
		memset(buf, 0xa5, size);
		transfer(0, argv[2], buf, size);
		save(argv[4], buf, size);
		return 0;
	}
	if (!strcmp(cmd, "pattern") && argc == 5 && size) {
		buf = malloc(size);
		if (!buf)
			die("malloc");
		fill_pattern(buf, size, strtoull(argv[4], NULL, 0));
		save(argv[2], buf, size);
		return 0;
	}
	if (!strcmp(cmd, "mixed") && argc == 3) {
		const size_t half = 1 << 20;
		int fd;

		/* A CPU region, its first half then replaced by "GPU" pages. */
		buf = mmap(NULL, 2 * half, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (buf == MAP_FAILED)
			die("mmap");
		gpu_buffer(half, 0, buf);
		fd = open(argv[2], O_RDONLY | O_DIRECT);
		if (fd < 0)
			die(argv[2]);
		if (pread(fd, buf, 2 * half, 0) >= 0) {
			fprintf(stderr, "pfs-gpu-io: a read into mixed CPU and GPU pages succeeded\n");
			return 1;
		}
		if (errno != EINVAL)
			die("pread into mixed CPU and GPU pages");
		printf("mixed CPU and GPU pages: %s\n", strerror(errno));
		return 0;
	}
	fprintf(stderr, "usage: pfs-gpu-io write FILE SIZE SEED [GPU] | read FILE SIZE OUT [GPU] |\n"
			"       pattern OUT SIZE SEED | mixed FILE\n");
	return 2;
}
