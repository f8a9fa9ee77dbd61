/*
 * pfs-fsx: a data-integrity exerciser in the manner of fsx (file system
 * exerciser). A driver draws random operations on one file and hands each
 * to one of two worker processes, which run it through one of two mounts of
 * the same file system; after every operation the file is read back and
 * compared with the driver's model of it, byte for byte.
 *
 * Everything the driver and the workers share is here: the operations, a
 * command and its reply (over pipes), and the data buffer (a shared
 * anonymous mapping) that carries the bytes of writes and reads.
 */
#ifndef PFS_FSX_H
#define PFS_FSX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum fsx_op {
	OP_READ,	/* buffered pread */
	OP_WRITE,	/* buffered pwrite */
	OP_DREAD,	/* O_DIRECT pread */
	OP_DWRITE,	/* O_DIRECT pwrite */
	OP_MAPREAD,	/* mmap, copy out, munmap */
	OP_MAPWRITE,	/* ftruncate up if needed, mmap, copy in, msync */
	OP_TRUNCATE,	/* ftruncate, or truncate(2) by path */
	OP_FALLOC,	/* fallocate mode 0 or FALLOC_FL_KEEP_SIZE */
	OP_PUNCH,	/* FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE */
	OP_ZERO,	/* FALLOC_FL_ZERO_RANGE [| FALLOC_FL_KEEP_SIZE] */
	OP_COPY,	/* copy_file_range within the file */
	OP_FSYNC,	/* fsync or fdatasync */
	OP_REOPEN,	/* close this worker's descriptors of the mount */
	OP_NKINDS,
	/* not drawn: the driver's own steps */
	OP_VERIFY = OP_NKINDS,	/* fstat and read the whole file back */
	OP_CLOSE_MOUNT,		/* close every descriptor of the mount */
	OP_EXIT,
};

/* A command from the driver to a worker. */
struct fsx_cmd {
	int op;
	int mount;		/* 0 or 1: which path names the file */
	int flag;		/* per op: direct verify, path truncate, mode */
	uint64_t off;		/* READ/WRITE...: file offset; COPY: source */
	uint64_t len;		/* bytes; TRUNCATE: the new size */
	uint64_t off2;		/* COPY: destination */
};

/* A worker's answer. */
struct fsx_reply {
	int err;		/* 0 or the errno of the call that failed */
	int64_t n;		/* bytes moved */
	int64_t size;		/* VERIFY: st_size */
	char what[96];		/* the call that failed */
};

/* Runs commands from cmd_fd until OP_EXIT, answering on reply_fd. */
void fsx_worker(int id, const char *const paths[2], uint8_t *buf,
		int cmd_fd, int reply_fd);

#endif
