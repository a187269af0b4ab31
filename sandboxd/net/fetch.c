/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <curl/curl.h>

#include "fetch.h"
#include "log.h"

typedef enum DownloadFailure {
        DOWNLOAD_OK,
        DOWNLOAD_TOO_BIG,        /* over MaxInputFileBytes= */
        DOWNLOAD_TOTAL,          /* over the total budget */
        DOWNLOAD_WRITE,          /* write(2) failed: errno in write_errno */
} DownloadFailure;

typedef struct Download {
        Fetch *fetch;
        size_t index;            /* in the request's files[] */
        char *path, *url;
        NetCall *call;           /* while the worker downloads it */
        int dir_fd, fd;          /* the file's parent directory and the file, while it downloads */
        char *name;              /* last component of path */
        uint64_t bytes;
        DownloadFailure failure;
        int write_errno;
        bool started, done, whole;
} Download;

struct Fetch {
        NetClient *net;
        int input_fd;            /* <workspace>/input */
        FetchLimits limits;
        Download *downloads;
        size_t n, next, running, done;
        uint64_t total;          /* bytes written so far, inline files included */
        fetch_done_t cb;
        void *userdata;
};

_printf_(3, 4) static int set_message(char **ret, int r, const char *fmt, ...) {
        va_list ap;

        if (ret) {
                free(*ret);
                *ret = NULL;
                va_start(ap, fmt);
                if (vasprintf(ret, fmt, ap) < 0)
                        *ret = NULL;
                va_end(ap);
        }
        return r;
}

/* One component below dir_fd, never through a symlink or onto another mount. openat2() came with
 * Linux 5.6; without it O_NOFOLLOW on a single component (no '/') is just as strict. */
static int open_beneath(int dir_fd, const char *name, int flags, mode_t mode) {
        struct open_how how = {
                .flags = (uint64_t) (flags | O_NOFOLLOW | O_CLOEXEC),
                .mode = (flags & O_CREAT) ? mode : 0,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
        };
        int fd;

        fd = (int) syscall(SYS_openat2, dir_fd, name, &how, sizeof(how));
        if (fd < 0 && errno == ENOSYS)
                fd = openat(dir_fd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
        return fd < 0 ? -errno : fd;
}

/* What is created takes the owner of the directory it is created in (through the new entry's own
 * fd, never a path): in a session's workspace, which belongs to the previous run's dynamic user (the
 * one the next run most likely gets again: systemd re-owns the tree only when the UID changes), the
 * run can then replace or delete its inputs. In a single-use workspace everything stays root's. */
static int inherit_owner(int dir_fd, int fd) {
        struct stat st;

        if (fstat(dir_fd, &st) < 0)
                return -errno;
        if (st.st_uid == 0 && st.st_gid == 0)
                return 0;
        return fchown(fd, st.st_uid, st.st_gid) < 0 ? -errno : 0;
}

/* mkdir (0755) unless it exists, then open it: it must be a real directory, not a symlink to one. */
static int mkdir_open(int dir_fd, const char *name) {
        bool created = mkdirat(dir_fd, name, 0755) >= 0;
        int fd, r;

        if (!created && errno != EEXIST)
                return -errno;
        fd = open_beneath(dir_fd, name, O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return fd == -ELOOP ? -ENOTDIR : fd;
        if (created) {
                (void) fchmod(fd, 0755);        /* whatever the umask */
                r = inherit_owner(dir_fd, fd);
                if (r < 0) {
                        safe_close(fd);
                        return r;
                }
        }
        return fd;
}

static const char *open_error(int r) {
        switch (r) {
        case -ENOTDIR:
        case -ELOOP:
                return "a directory on its path exists in the workspace as something else (a file or a symlink)";
        case -EEXIST:
                return "exists in the workspace and is not a regular file";
        case -ENOSPC:
        case -EDQUOT:
                return "no space left in the workspace (limits.disk_mb)";
        default:
                return NULL;
        }
}

/* Create the file at path below input_fd, with its directories. Returns the file's fd and its
 * parent's in *ret_dir_fd and last component in *ret_name. An existing regular file is replaced. */
static int create_file(int input_fd, const char *path, int *ret_dir_fd, char **ret_name) {
        _cleanup_free_ char *copy = strdup(path);
        _cleanup_close_ int dir = -EBADF;
        char *p, *slash;
        int fd, r;

        if (!copy)
                return -ENOMEM;
        dir = fcntl(input_fd, F_DUPFD_CLOEXEC, 3);
        if (dir < 0)
                return -errno;
        for (p = copy; (slash = strchr(p, '/')); p = slash + 1) {
                int sub;

                *slash = 0;
                sub = mkdir_open(dir, p);
                if (sub < 0)
                        return sub;
                safe_close(dir);
                dir = sub;
        }

        for (int attempt = 0;; attempt++) {
                struct stat st;

                fd = open_beneath(dir, p, O_WRONLY | O_CREAT | O_EXCL, 0644);
                if (fd >= 0 || fd != -EEXIST || attempt > 0)
                        break;
                /* What an earlier run of the session left: a regular file is replaced, anything else
                 * (symlink, directory, FIFO, socket, device) is refused. */
                if (fstatat(dir, p, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                if (!S_ISREG(st.st_mode))
                        return -EEXIST;
                if (unlinkat(dir, p, 0) < 0)
                        return -errno;
        }
        if (fd < 0)
                return fd;
        (void) fchmod(fd, 0644);
        r = inherit_owner(dir, fd);
        if (r < 0) {
                (void) unlinkat(dir, p, 0);
                safe_close(fd);
                return r;
        }
        *ret_name = strdup(p);
        if (!*ret_name) {
                (void) unlinkat(dir, p, 0);
                safe_close(fd);
                return -ENOMEM;
        }
        *ret_dir_fd = TAKE_FD(dir);
        return fd;
}

static void download_close(Download *d, bool remove_file) {
        net_call_cancel(TAKE_PTR(d->call));
        d->fd = safe_close(d->fd);
        if (remove_file && d->dir_fd >= 0 && d->name)
                (void) unlinkat(d->dir_fd, d->name, 0);
        d->dir_fd = safe_close(d->dir_fd);
        d->name = mfree(d->name);
}

Fetch *fetch_free(Fetch *f) {
        if (!f)
                return NULL;
        for (size_t i = 0; i < f->n; i++) {
                Download *d = f->downloads + i;

                /* A file that did not arrive whole does not stay behind (a session keeps its workspace). */
                download_close(d, !d->whole);
                free(d->path);
                free(d->url);
        }
        free(f->downloads);
        safe_close(f->input_fd);
        free(f);
        return NULL;
}

static int on_data(NetCall *call, const void *p, size_t n, void *userdata) {
        Download *d = userdata;
        Fetch *f = d->fetch;
        int r;

        /* Counted here, not only in the worker: what the worker says is not trusted either. */
        if (d->bytes + n > f->limits.max_file_bytes) {
                d->failure = DOWNLOAD_TOO_BIG;
                return -EFBIG;
        }
        if (f->total + n > f->limits.max_total_bytes) {
                d->failure = DOWNLOAD_TOTAL;
                return -EFBIG;
        }
        /* A write to the workspace tmpfs: memory, not disk, so fine on the loop. */
        r = loop_write(d->fd, p, n);
        if (r < 0) {
                d->failure = DOWNLOAD_WRITE;
                d->write_errno = -r;
                return r;
        }
        d->bytes += n;
        f->total += n;
        return 0;
}

static void fetch_fail(Fetch *f, int r, const char *message) {
        fetch_done_t cb = f->cb;

        /* Stop the others now; the owner frees f (and with it the partial files). */
        for (size_t i = 0; i < f->n; i++)
                if (f->downloads[i].started && !f->downloads[i].done) {
                        net_call_cancel(TAKE_PTR(f->downloads[i].call));
                        f->downloads[i].done = true;
                }
        f->next = f->n;
        f->cb = NULL;
        if (cb)
                cb(f, r, message, f->userdata);
}

/* What the caller is told (error_message): sandboxd's own limits by name, otherwise only the class of
 * the failure (curl-event.h), never libcurl's text or the address: those would make the downloads a
 * port scanner of the daemon's network. The detail is for the journal (log_detail()). */
static void describe_failure(Download *d, const NetDone *done, char *buf, size_t size) {
        const FetchLimits *l = &d->fetch->limits;
        long code = done->http_status, redirects = done->redirects;
        TransportResult t;

        switch (d->failure) {
        case DOWNLOAD_TOO_BIG:
                snprintf(buf, size, "larger than %" PRIu64 " bytes (MaxInputFileBytes=)", l->max_file_bytes);
                return;
        case DOWNLOAD_TOTAL:
                snprintf(buf, size, "the input files exceed %" PRIu64 " bytes in all (MaxInputTotalBytes=, limits.disk_mb, "
                         "limits.memory_mb)", l->max_total_bytes);
                return;
        case DOWNLOAD_WRITE:
                if (d->write_errno == ENOSPC || d->write_errno == EDQUOT)
                        snprintf(buf, size, "no space left in the workspace (limits.disk_mb)");
                else
                        snprintf(buf, size, "cannot write the file: %s", strerror(d->write_errno));
                return;
        case DOWNLOAD_OK:
                break;
        }
        if (done->flags & NET_DONE_TOO_LARGE) {         /* the worker's count of the same limit */
                snprintf(buf, size, "larger than %" PRIu64 " bytes (MaxInputFileBytes=)", l->max_file_bytes);
                return;
        }
        if (done->flags & NET_DONE_WORKER_LOST) {
                snprintf(buf, size, "the download was interrupted: sandboxd's network worker stopped");
                return;
        }

        switch ((CURLcode) done->curl_code) {
        case CURLE_FILESIZE_EXCEEDED:
                snprintf(buf, size, "larger than %" PRIu64 " bytes (MaxInputFileBytes=)", l->max_file_bytes);
                return;
        case CURLE_UNSUPPORTED_PROTOCOL:
                if (redirects > 0 || code / 100 == 3) {
                        snprintf(buf, size, "redirected to a URL that is not http:// or https://");
                        return;
                }
                break;
        case CURLE_TOO_MANY_REDIRECTS:
                snprintf(buf, size, "more than %d redirects", FETCH_MAX_REDIRS);
                return;
        default:
                break;
        }

        t = done->transport;
        if (t == TRANSPORT_OK)
                snprintf(buf, size, "HTTP %ld", code);
        else if (t == TRANSPORT_TIMEOUT)
                snprintf(buf, size, "timed out after %" PRIu64 " s (InputTimeoutSec=)", l->timeout_sec);
        else
                snprintf(buf, size, "%s", transport_result_to_string(t));
}

/* What the operator is told: libcurl's own words, the refused address. */
static void log_detail(Download *d, const NetDone *done, const char *why) {
        if ((done->flags & NET_DONE_REFUSED) && done->transport == TRANSPORT_REFUSED)
                log_info("Input files[%zu] '%s': %s: %s (InputAllowInternalAddresses=no)", d->index, d->path, why,
                         done->refused_address);
        else
                log_info("Input files[%zu] '%s': %s: %s", d->index, d->path, why, done->error);
}

static int fetch_pump(Fetch *f, char **ret_message);

static void on_done(NetCall *call, const NetDone *done, void *userdata) {
        Download *d = userdata;
        Fetch *f = d->fetch;
        _cleanup_free_ char *message = NULL;
        int r;

        d->call = NULL;         /* freed by the client when this returns */
        d->done = true;
        f->running--;
        if (done->curl_code != CURLE_OK || (done->flags & ~NET_DONE_REFUSED) || d->failure != DOWNLOAD_OK ||
            done->http_status < 200 || done->http_status > 299) {
                char why[256];

                describe_failure(d, done, why, sizeof(why));
                (void) set_message(&message, 0, "files[%zu] '%s': %s", d->index, d->path, why);
                log_detail(d, done, why);
                fetch_fail(f, -EIO, message ?: "an input file could not be fetched");
                return;
        }

        /* Whole: close it now (and keep it). */
        d->whole = true;
        d->fd = safe_close(d->fd);
        d->dir_fd = safe_close(d->dir_fd);
        f->done++;

        r = fetch_pump(f, &message);
        if (r < 0) {
                fetch_fail(f, r, message ?: "an input file could not be fetched");
                return;
        }
        if (f->running == 0 && f->next >= f->n) {
                fetch_done_t cb = f->cb;

                f->cb = NULL;
                if (cb)
                        cb(f, 0, NULL, f->userdata);
        }
}

static int download_begin(Fetch *f, Download *d, char **ret_message) {
        const FetchLimits *l = &f->limits;
        NetRequest q;
        int r;

        r = create_file(f->input_fd, d->path, &d->dir_fd, &d->name);
        if (r < 0)
                return set_message(ret_message, r, "files[%zu] '%s': %s", d->index, d->path,
                                   open_error(r) ?: strerror(-r));
        d->fd = r;

        /* The worker sets libcurl up as this module did: http and https only (redirects too, at
         * most FETCH_MAX_REDIRS), the connect and transfer timeouts, MaxInputFileBytes= from
         * Content-Length and counted, a 4xx/5xx body never written, a fresh connection per file, no
         * decompression (the bytes counted are the bytes written), no proxy, the address guard. */
        q = (NetRequest) {
                .kind = NET_REQUEST_DOWNLOAD,
                .allow_internal = l->allow_internal,
                .connect_timeout_sec = (uint32_t) MIN(l->connect_timeout_sec, (uint64_t) UINT32_MAX),
                .timeout_sec = (uint32_t) MIN(l->timeout_sec, (uint64_t) UINT32_MAX),
                .max_response_bytes = l->max_file_bytes,
                .url = d->url,
        };
        r = net_call_start(f->net, &q, NULL, on_data, on_done, d, &d->call);
        if (r == -ENOTCONN)
                return set_message(ret_message, r, "files[%zu] '%s': cannot start the download: sandboxd's network "
                                   "worker is restarting", d->index, d->path);
        if (r < 0)
                return set_message(ret_message, r, "files[%zu] '%s': cannot start the download: %s", d->index, d->path,
                                   strerror(-r));
        d->started = true;
        f->running++;
        return 0;
}

/* Start downloads while fewer than FETCH_PARALLEL run. */
static int fetch_pump(Fetch *f, char **ret_message) {
        while (f->running < FETCH_PARALLEL && f->next < f->n) {
                int r = download_begin(f, f->downloads + f->next++, ret_message);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int write_inline(int input_fd, size_t index, const InputFile *in, char **ret_message) {
        _cleanup_close_ int dir = -EBADF, fd = -EBADF;
        _cleanup_free_ char *name = NULL;
        int r;

        fd = create_file(input_fd, in->path, &dir, &name);
        if (fd < 0)
                return set_message(ret_message, fd, "files[%zu] '%s': %s", index, in->path,
                                   open_error(fd) ?: strerror(-fd));
        r = loop_write(fd, in->content, in->content_len);
        if (r < 0) {
                (void) unlinkat(dir, name, 0);
                return set_message(ret_message, r, "files[%zu] '%s': %s", index, in->path,
                                   open_error(r) ?: strerror(-r));
        }
        return 0;
}

int fetch_start(NetClient *net, const char *workspace_dir, const InputFile *files, size_t n_files,
                const FetchLimits *limits, fetch_done_t cb, void *userdata, Fetch **ret, char **ret_message) {
        _cleanup_(fetch_freep) Fetch *f = NULL;
        _cleanup_close_ int ws = -EBADF;
        _cleanup_close_ int root = -EBADF;
        uint64_t inline_total = 0;
        size_t n_urls = 0;
        int r;

        *ret = NULL;
        if (n_files == 0)
                return 0;
        /* The workspace tmpfs's root is the daemon's (0755 root): nothing in its path is the
         * sandbox's. workspace/ below it is created if missing: a session's first run (systemd
         * creates it as the unit's StateDirectory= otherwise, and re-owns what is in it). */
        root = open(workspace_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (root < 0)
                return set_message(ret_message, -errno, "cannot open the workspace: %s", strerror(errno));
        ws = mkdir_open(root, "workspace");
        if (ws < 0)
                return set_message(ret_message, ws, "cannot open the workspace: %s", strerror(-ws));

        f = calloc(1, sizeof(Fetch));
        if (!f)
                return -ENOMEM;
        f->net = net;
        f->limits = *limits;
        f->cb = cb;
        f->userdata = userdata;
        f->input_fd = mkdir_open(ws, "input");
        if (f->input_fd < 0)
                return set_message(ret_message, f->input_fd, "input: %s",
                                   f->input_fd == -ENOTDIR ? "exists in the workspace and is not a directory"
                                                           : strerror(-f->input_fd));

        for (size_t i = 0; i < n_files; i++)
                if (files[i].url)
                        n_urls++;
        f->downloads = calloc(n_urls + 1, sizeof(Download));
        if (!f->downloads)
                return -ENOMEM;

        for (size_t i = 0; i < n_files; i++) {
                const InputFile *in = files + i;
                Download *d;

                if (!in->url) {
                        inline_total += in->content_len;
                        if (inline_total > limits->max_total_bytes)
                                return set_message(ret_message, -EFBIG, "files[%zu] '%s': the input files exceed %" PRIu64
                                                   " bytes in all (MaxInputTotalBytes=, limits.disk_mb, limits.memory_mb)", i, in->path,
                                                   limits->max_total_bytes);
                        r = write_inline(f->input_fd, i, in, ret_message);
                        if (r < 0)
                                return r;
                        continue;
                }
                d = f->downloads + f->n++;
                *d = (Download) { .fetch = f, .index = i, .dir_fd = -EBADF, .fd = -EBADF };
                d->path = strdup(in->path);
                d->url = strdup(in->url);
                if (!d->path || !d->url)
                        return -ENOMEM;
        }
        f->total = inline_total;
        if (f->n == 0)
                return 0;

        r = fetch_pump(f, ret_message);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(f);
        return 0;
}
