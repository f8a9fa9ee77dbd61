/*
 * libpfsclient: a PFS file system from a program, without mounting it.
 *
 * The same client pfs-ctl uses: paths are resolved on the metadata servers,
 * file contents go straight to and from the storage servers (RDMA where the
 * servers offer it and the configuration allows, else TCP).
 *
 * Errors are negative errno values (-ENOENT, -EACCES, ...); pfs_last_error()
 * says more, for a person. Calls on one pfs_client are serialised: a client
 * may be shared by threads, and a program that wants calls in parallel opens
 * one client per thread.
 *
 * Build:  #include <pfsclient.h>, cc prog.c $(pkg-config --cflags --libs pfsclient)
 */
#ifndef PFS_PFSCLIENT_H
#define PFS_PFSCLIENT_H

#include <sys/stat.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfs_client pfs_client;
typedef struct pfs_file pfs_file;

/* "MAJOR.MINOR.PATCH" of this library (the PFS release it comes from). */
const char *pfs_version(void);

/*
 * The message of the last call of this thread that failed ("" when none
 * did), valid until this thread's next libpfs call.
 */
const char *pfs_last_error(void);

/*
 * Connects to the file system that config_file names, in pfs-ctl's format
 * (pfs-ctl(8): mgmtd, auth-file, timeout-ms, transport, rails); NULL reads
 * /etc/pfs/ctl.conf. The cluster map comes from pfs-mgmtd now; the client's
 * sessions with the metadata servers are kept while it lives.
 */
int pfs_client_open(const char *config_file, pfs_client **client);

/*
 * Ends the client's sessions (its locks and opens go on the servers), closes
 * its connections and frees it, with any pfs_file still open through it.
 * The first error of ending the sessions, or 0.
 */
int pfs_client_close(pfs_client *client);

int pfs_stat(pfs_client *client, const char *path, struct stat *st);
int pfs_mkdir(pfs_client *client, const char *path, mode_t mode);
int pfs_rmdir(pfs_client *client, const char *path);
int pfs_unlink(pfs_client *client, const char *path);
int pfs_rename(pfs_client *client, const char *from, const char *to);
int pfs_truncate(pfs_client *client, const char *path, off_t length);

/*
 * Calls fn for each entry of the directory but "." and "..", with its name
 * and its type (DT_REG, DT_DIR, ...). A non-zero return from fn stops the
 * listing and is what pfs_readdir returns. A listing holding a name that is
 * not a plain one ("", ".", "..", a '/' or a NUL: a broken or hostile
 * server) is refused whole with -EPROTO before fn sees any of it.
 */
int pfs_readdir(pfs_client *client, const char *path,
		int (*fn)(const char *name, unsigned char type, void *arg), void *arg);

/*
 * flags: O_RDONLY, O_WRONLY or O_RDWR, with O_CREAT, O_EXCL, O_TRUNC and
 * O_APPEND honoured; mode: for a file O_CREAT makes.
 */
int pfs_open(pfs_client *client, const char *path, int flags, mode_t mode, pfs_file **file);

/* Bytes read (0 at or past the end of the file), or a negative errno. */
ssize_t pfs_pread(pfs_file *file, void *buf, size_t count, off_t offset);

/*
 * Bytes written (all of them), or a negative errno. With O_APPEND, the data
 * goes to the end of the file and offset is ignored.
 */
ssize_t pfs_pwrite(pfs_file *file, const void *buf, size_t count, off_t offset);

/* What was written through file is on the storage targets' disks. */
int pfs_fsync(pfs_file *file);

/* The attributes, with the size this client wrote so far. */
int pfs_fstat(pfs_file *file, struct stat *st);

/* Frees file whatever happens; the first error of its last writes and close. */
int pfs_close(pfs_file *file);

#ifdef __cplusplus
}
#endif

#endif /* PFS_PFSCLIENT_H */
