// pfsclient.h: the C interface of libpfs, for programs that are not pfs-ctl.
// Each pfs_client drives its own io_context from the calling thread, one
// call at a time under its mutex; nothing is thrown across the C boundary.
#include "pfsclient.h"

#include <dirent.h>
#include <sys/sysmacros.h>
#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <set>
#include <string>

#include "client_settings.hpp"
#include "cluster.hpp"
#include "filesystem.hpp"
#include "listing.hpp"
#include "run_sync.hpp"

using pfs::Error;
using pfs::Result;
using pfs::Status;

struct pfs_client {
    std::mutex mu;
    pfs::asio::io_context io;
    std::unique_ptr<pfs::client::Cluster> cluster;
    std::unique_ptr<pfs::client::FileSystem> fs;
    std::set<pfs_file*> files;

    template <class T>
    T run(pfs::awaitable<T> task) {
        return pfs::run_sync(io, std::move(task));
    }
    ~pfs_client();
};

struct pfs_file {
    pfs_client* client;
    pfs::client::OpenFile open;
};

namespace {

thread_local std::string last_error;

// Wire statuses (>= 1000) as the errno a program can act on, as pfs.ko
// maps them.
int as_errno(int code) { return code < 0 ? code : pfs_status_to_errno(code); }

int failed(const Error& e) {
    last_error = e.message;
    return as_errno(e.code);
}

int done(const Status& st) { return st ? 0 : failed(st.error()); }

// Runs body, which returns what the C function does, with last_error
// cleared first and any exception turned into an errno.
template <class Body>
auto guarded(Body body) -> decltype(body()) {
    last_error.clear();
    try {
        return body();
    } catch (const std::bad_alloc&) {
        last_error = "out of memory";
        return -ENOMEM;
    } catch (const std::exception& e) {
        last_error = e.what();
        return -EIO;
    }
}

int missing(const char* what) {
    last_error = std::string(what) + " is NULL";
    return -EINVAL;
}

void fill_stat(const pfs_attr& a, struct stat* st) {
    std::memset(st, 0, sizeof *st);
    st->st_ino = static_cast<ino_t>(a.id.ino ^ (static_cast<uint64_t>(a.id.owner_node) << 48));
    st->st_mode = a.mode;
    st->st_nlink = a.nlink;
    st->st_uid = a.uid;
    st->st_gid = a.gid;
    st->st_rdev = makedev(pfs_dev_major(a.rdev), pfs_dev_minor(a.rdev));
    st->st_size = static_cast<off_t>(a.size);
    st->st_blksize = 1 << 20;
    // The metadata server's count; an estimate while it has none.
    st->st_blocks = static_cast<blkcnt_t>(S_ISREG(a.mode) && a.blocks != PFS_BLOCKS_UNKNOWN ? a.blocks
                                                                                          : (a.size + 511) / 512);
    st->st_atim = timespec{static_cast<time_t>(a.atime.sec), static_cast<long>(a.atime.nsec)};
    st->st_mtim = timespec{static_cast<time_t>(a.mtime.sec), static_cast<long>(a.mtime.nsec)};
    st->st_ctim = timespec{static_cast<time_t>(a.ctime.sec), static_cast<long>(a.ctime.nsec)};
}

void close_connections(pfs_client* c) {
    c->cluster->close();
    c->io.restart();
    c->io.poll();  // the readers see their closed sockets before the loop goes away
}

}  // namespace

pfs_client::~pfs_client() {
    for (pfs_file* f : files) delete f;
}

extern "C" {

const char* pfs_version(void) {
    static const std::string v(pfs::version());
    return v.c_str();
}

const char* pfs_last_error(void) { return last_error.c_str(); }

int pfs_client_open(const char* config_file, pfs_client** out) {
    return guarded([&]() -> int {
        if (!out) return missing("client");
        *out = nullptr;
        pfs::Options options("pfs-ctl", "libpfs");
        pfs::client::add_client_options(options);
        std::vector<const char*> argv{"libpfs"};
        if (config_file) argv.insert(argv.end(), {"--config", config_file});
        auto parsed = options.parse(static_cast<int>(argv.size()), argv.data());
        if (parsed.kind != pfs::ParseOutcome::Kind::run) return failed(Error{-EINVAL, parsed.message});
        auto settings = pfs::client::load_client_settings(options);
        if (!settings) return failed(settings.error());

        auto c = std::make_unique<pfs_client>();
        c->cluster = std::make_unique<pfs::client::Cluster>(c->io.get_executor(), settings->mgmtd, settings->secret,
                                                            settings->client_config());
        c->fs = std::make_unique<pfs::client::FileSystem>(*c->cluster);
        auto st = c->run(c->cluster->start());
        if (!st) {
            close_connections(c.get());
            return failed(Error{st.error().code, "pfs-mgmtd at " + settings->mgmtd.str() + ": " + st.error().message});
        }
        *out = c.release();
        return 0;
    });
}

int pfs_client_close(pfs_client* c) {
    if (!c) return 0;
    int rc = guarded([&]() -> int {
        std::lock_guard lock(c->mu);
        return done(c->run(c->fs->shutdown()));
    });
    guarded([&]() -> int {
        close_connections(c);
        return 0;
    });
    delete c;
    return rc;
}

int pfs_stat(pfs_client* c, const char* path, struct stat* st) {
    return guarded([&]() -> int {
        if (!c || !path || !st) return missing("client, path or stat buffer");
        std::lock_guard lock(c->mu);
        auto attr = c->run(c->fs->stat(path));
        if (!attr) return failed(attr.error());
        fill_stat(*attr, st);
        return 0;
    });
}

int pfs_mkdir(pfs_client* c, const char* path, mode_t mode) {
    return guarded([&]() -> int {
        if (!c || !path) return missing("client or path");
        std::lock_guard lock(c->mu);
        auto attr = c->run(c->fs->mkdir(path, mode & 07777));
        return attr ? 0 : failed(attr.error());
    });
}

int pfs_rmdir(pfs_client* c, const char* path) {
    return guarded([&]() -> int {
        if (!c || !path) return missing("client or path");
        std::lock_guard lock(c->mu);
        return done(c->run(c->fs->rmdir(path)));
    });
}

int pfs_unlink(pfs_client* c, const char* path) {
    return guarded([&]() -> int {
        if (!c || !path) return missing("client or path");
        std::lock_guard lock(c->mu);
        return done(c->run(c->fs->unlink(path)));
    });
}

int pfs_rename(pfs_client* c, const char* from, const char* to) {
    return guarded([&]() -> int {
        if (!c || !from || !to) return missing("client or path");
        std::lock_guard lock(c->mu);
        return done(c->run(c->fs->rename(from, to)));
    });
}

int pfs_truncate(pfs_client* c, const char* path, off_t length) {
    return guarded([&]() -> int {
        if (!c || !path) return missing("client or path");
        if (length < 0) return failed(Error{-EINVAL, "negative length"});
        std::lock_guard lock(c->mu);
        return done(c->run(c->fs->truncate(path, static_cast<uint64_t>(length))));
    });
}

int pfs_readdir(pfs_client* c, const char* path, int (*fn)(const char*, unsigned char, void*), void* arg) {
    return guarded([&]() -> int {
        if (!c || !path || !fn) return missing("client, path or callback");
        std::vector<pfs::client::Entry> entries;
        {
            std::lock_guard lock(c->mu);
            auto listed = c->run(c->fs->readdir(path));
            if (!listed) return failed(listed.error());
            auto plain = pfs::client::plain_entries(std::move(*listed));
            if (!plain) return failed(plain.error());
            entries = std::move(*plain);
        }
        // The callback runs unlocked: it may call libpfs itself.
        for (const auto& e : entries)
            if (int rc = fn(e.name.c_str(), e.type, arg)) return rc;
        return 0;
    });
}

int pfs_open(pfs_client* c, const char* path, int flags, mode_t mode, pfs_file** out) {
    return guarded([&]() -> int {
        if (!c || !path || !out) return missing("client, path or file");
        *out = nullptr;
        // Appends from several clients would need the servers to place the
        // data at the end; the protocol has no such write.
        if (flags & O_APPEND) return failed(Error{-EOPNOTSUPP, "O_APPEND is not supported by libpfs"});
        std::lock_guard lock(c->mu);
        auto opened = c->run(c->fs->open(path, flags, mode & 07777));
        if (!opened) return failed(opened.error());
        auto f = std::make_unique<pfs_file>(pfs_file{c, std::move(*opened)});
        c->files.insert(f.get());
        *out = f.release();
        return 0;
    });
}

ssize_t pfs_pread(pfs_file* f, void* buf, size_t count, off_t offset) {
    return guarded([&]() -> ssize_t {
        if (!f || (!buf && count)) return missing("file or buffer");
        if (offset < 0) return failed(Error{-EINVAL, "negative offset"});
        if ((f->open.open_flags & O_ACCMODE) == O_WRONLY) return failed(Error{-EBADF, "file not open for reading"});
        std::lock_guard lock(f->client->mu);
        auto n = f->client->run(f->client->fs->read(f->open, static_cast<uint64_t>(offset),
                                                    std::span(static_cast<uint8_t*>(buf), count)));
        if (!n) return failed(n.error());
        return static_cast<ssize_t>(*n);
    });
}

ssize_t pfs_pwrite(pfs_file* f, const void* buf, size_t count, off_t offset) {
    return guarded([&]() -> ssize_t {
        if (!f || (!buf && count)) return missing("file or buffer");
        if (offset < 0) return failed(Error{-EINVAL, "negative offset"});
        if (count > SSIZE_MAX) return failed(Error{-EINVAL, "count over SSIZE_MAX"});
        if ((f->open.open_flags & O_ACCMODE) == O_RDONLY) return failed(Error{-EBADF, "file not open for writing"});
        std::lock_guard lock(f->client->mu);
        auto st = f->client->run(f->client->fs->write(f->open, static_cast<uint64_t>(offset),
                                                      std::span(static_cast<const uint8_t*>(buf), count)));
        if (!st) return failed(st.error());
        return static_cast<ssize_t>(count);
    });
}

int pfs_fsync(pfs_file* f) {
    return guarded([&]() -> int {
        if (!f) return missing("file");
        std::lock_guard lock(f->client->mu);
        return done(f->client->run(f->client->fs->fsync(f->open)));
    });
}

int pfs_fstat(pfs_file* f, struct stat* st) {
    return guarded([&]() -> int {
        if (!f || !st) return missing("file or stat buffer");
        std::lock_guard lock(f->client->mu);
        auto attr = f->client->run(f->client->fs->attr(f->open));
        if (!attr) return failed(attr.error());
        fill_stat(*attr, st);
        return 0;
    });
}

int pfs_close(pfs_file* f) {
    if (!f) return 0;
    pfs_client* c = f->client;
    int rc = guarded([&]() -> int {
        std::lock_guard lock(c->mu);
        return done(c->run(c->fs->close(f->open)));
    });
    std::lock_guard lock(c->mu);
    c->files.erase(f);
    delete f;
    return rc;
}

}  // extern "C"
