/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>

#include "artifacts.h"
#include "model/mime.h"
#include "utf8.h"
#include "util.h"

/* One read buffer per collection: the copy streams through it, so memory is constant whatever the
 * sizes of the files. */
#define COPY_CHUNK (64U * 1024U)

#define RESOLVE_HOSTILE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

/* What a hole reads as: hashed in COPY_CHUNK steps, never written. */
static const uint8_t zeros[COPY_CHUNK];

/* One lock for every account: collections of different executions charge the same caller and the
 * store at once, and a file must be judged and charged in one step (two collections each seeing
 * room for one more file would both take it). Held for a few additions, never across I/O. */
static pthread_mutex_t accounts_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t add_saturating(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void artifact_account_set_committed(ArtifactAccount *a, uint64_t committed) {
        if (!a)
                return;
        pthread_mutex_lock(&accounts_lock);
        a->committed = committed;
        pthread_mutex_unlock(&accounts_lock);
}

void artifact_account_release(ArtifactAccount *a, uint64_t reserved) {
        if (!a)
                return;
        pthread_mutex_lock(&accounts_lock);
        a->reserved -= MIN(a->reserved, reserved);
        pthread_mutex_unlock(&accounts_lock);
}

uint64_t artifact_account_used(ArtifactAccount *a) {
        uint64_t u;

        if (!a)
                return 0;
        pthread_mutex_lock(&accounts_lock);
        u = add_saturating(a->committed, a->reserved);
        pthread_mutex_unlock(&accounts_lock);
        return u;
}

static bool budget_fits(uint64_t used, uint64_t charge, uint64_t max) {
        return max == ARTIFACT_BUDGET_NONE || (charge <= max && used <= max - charge);
}

const char *artifact_budget_check(const ArtifactBudgetCheck *c) {
        /* Nothing is taken from any budget by an empty file or one that is all holes. */
        if (c->charge == 0)
                return NULL;
        if (!budget_fits(c->execution_used, c->charge, c->execution_max))
                return "execution_budget";
        if (!budget_fits(c->caller_used, c->charge, c->caller_max))
                return "caller_budget";
        if (!budget_fits(c->store_used, c->charge, c->store_max))
                return "store_budget";
        /* Even with min_free 0 the file must fit: a copy that ran into ENOSPC would fail the whole
         * collection (a store error), not just this file. */
        if (c->available != UINT64_MAX && (c->available < c->charge || c->available - c->charge < c->min_free))
                return "low_disk_space";
        return NULL;
}

int artifacts_openat_beneath(int dir_fd, const char *path, int flags) {
        struct open_how how = {
                .flags = (uint64_t) (flags | O_NOFOLLOW | O_CLOEXEC),
                .resolve = RESOLVE_HOSTILE,
        };
        long fd;

        fd = syscall(SYS_openat2, dir_fd, path, &how, sizeof(how));
        if (fd < 0)
                return -errno;
        return (int) fd;
}

ArtifactList *artifact_list_free(ArtifactList *l) {
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n_items; i++)
                free(l->items[i].path);
        free(l->items);
        for (size_t i = 0; i < l->n_skipped; i++)
                free(l->skipped[i].path);
        free(l->skipped);
        return mfree(l);
}

/* A name is collected only if it is valid UTF-8 and holds no control character: C0 (newline
 * included), DEL and C1 (U+0080..U+009F, encoded C2 80..C2 9F). Such names reach JSON, logs and the
 * terminals of whoever lists them. */
static size_t utf8_char_len(const uint8_t *p, size_t n) {
        /* The shortest valid prefix is the sequence; utf8_is_valid() rejects truncated ones. */
        for (size_t k = 1; k <= 4 && k <= n; k++)
                if (utf8_is_valid(p, k))
                        return k;
        return 0;
}

static bool char_is_control(const uint8_t *p, size_t k) {
        if (k == 1)
                return p[0] < 0x20 || p[0] == 0x7f;
        return k == 2 && p[0] == 0xc2 && p[1] <= 0x9f;
}

static bool name_is_valid(const char *name) {
        const uint8_t *p = (const uint8_t *) name;
        size_t n = strlen(name);

        for (size_t i = 0, k; i < n; i += k) {
                k = utf8_char_len(p + i, n - i);
                if (k == 0 || char_is_control(p + i, k))
                        return false;
        }
        return true;
}

/* Printable form of a hostile path: characters that are valid, printable UTF-8 as they are, every
 * other byte and the backslash itself as \xNN (so the rendering is unambiguous), cut at a character
 * boundary to at most max bytes. */
char *artifacts_path_render(const char *path, size_t max) {
        const uint8_t *p = (const uint8_t *) path;
        size_t n = strlen(path), o = 0;
        char *r;

        r = malloc(MIN(n * 4, max) + 1);
        if (!r)
                return NULL;
        for (size_t i = 0, k; i < n; i += k) {
                k = utf8_char_len(p + i, n - i);
                if (k == 0 || char_is_control(p + i, k) || p[i] == '\\') {
                        if (o + 4 > max)
                                break;
                        (void) snprintf(r + o, 5, "\\x%02x", p[i]);
                        o += 4;
                        k = 1;
                } else {
                        if (o + k > max)
                                break;
                        memcpy(r + o, p + i, k);
                        o += k;
                }
        }
        r[o] = '\0';
        return r;
}

typedef struct Walk {
        int store_fd;
        const ArtifactLimits *lim;
        ArtifactAccount *caller, *store;        /* lim's, or NULL when their budget is none */
        const atomic_bool *cancel;
        bool no_openat2;                /* the kernel (or a filter) refused openat2(): ENOSYS */
        dev_t dev;                      /* output/'s file system; nothing on another is collected */
        uint8_t *buf;
        size_t n_items_allocated;
        bool stored;                    /* a blob was written: syncfs() before returning */
        ArtifactList *list;
} Walk;

/* name is always one component (a readdir() entry or "output"), so the O_NOFOLLOW fallback for a
 * kernel without openat2() (before 5.6) refuses exactly what RESOLVE_NO_SYMLINKS would. */
static int open_child(Walk *w, int dir_fd, const char *name, int flags) {
        int fd;

        if (!w->no_openat2) {
                fd = artifacts_openat_beneath(dir_fd, name, flags);
                if (fd != -ENOSYS)
                        return fd;
                w->no_openat2 = true;
        }
        if (strchr(name, '/'))
                return -EINVAL;
        fd = openat(dir_fd, name, flags | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static char *path_join(const char *prefix, const char *name) {
        char *r;

        if (isempty(prefix))
                return strdup(name);
        if (asprintf(&r, "%s/%s", prefix, name) < 0)
                return NULL;
        return r;
}

/* Record a skipped entry: counted always, listed while there is room. */
static int skip_add(Walk *w, const char *prefix, const char *name, const char *reason) {
        ArtifactList *l = w->list;
        _cleanup_free_ char *joined = NULL;
        char *rendered;

        l->n_skipped_total++;
        if (l->n_skipped >= ARTIFACT_SKIPPED_LISTED_MAX)
                return 0;

        if (!l->skipped) {
                l->skipped = calloc(ARTIFACT_SKIPPED_LISTED_MAX, sizeof(ArtifactSkip));
                if (!l->skipped)
                        return -ENOMEM;
        }
        joined = path_join(prefix, name);
        if (!joined)
                return -ENOMEM;
        rendered = artifacts_path_render(joined, w->lim->max_path);
        if (!rendered)
                return -ENOMEM;
        l->skipped[l->n_skipped++] = (ArtifactSkip) { .path = rendered, .reason = reason };
        return 0;
}

static const char *reason_from_type(mode_t mode) {
        switch (mode & S_IFMT) {
        case S_IFLNK:
                return "symlink";
        case S_IFIFO:
                return "fifo";
        case S_IFSOCK:
                return "socket";
        case S_IFCHR:
        case S_IFBLK:
                return "device";
        default:
                return "io_error";
        }
}

/* Why the open of an entry that fstatat() had just seen as a directory or regular file failed: it
 * was replaced meanwhile (by a symlink: ELOOP, or ENOTDIR where O_DIRECTORY judged first; by a mount:
 * EXDEV), or something else went wrong. What is there now names the reason. */
static const char *reason_from_open_error(int dir_fd, const char *name, mode_t was, int r) {
        struct stat st;

        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && (st.st_mode & S_IFMT) != (was & S_IFMT))
                return reason_from_type(st.st_mode);
        switch (r) {
        case -ELOOP:
                return "symlink";
        case -EXDEV:
                return "device";
        default:
                return "io_error";
        }
}

/* What a file really takes: st_blocks counts 512-byte units whatever the file system's block size. */
static uint64_t file_charge(const struct stat *st) {
        uint64_t blocks = (uint64_t) st->st_blocks;

        return blocks > UINT64_MAX / 512 ? UINT64_MAX : blocks * 512;
}

/* The size rules, judged from a stat before a byte is read; NULL if the file may be collected. */
static const char *file_judge(const Walk *w, const struct stat *st) {
        uint64_t size = (uint64_t) st->st_size;

        if (st->st_nlink > 1)
                return "hardlink";
        if (w->list->n_items >= w->lim->max_files)
                return "too_many";
        if (size > w->lim->max_file_bytes)
                return "too_large";
        /* Larger than the execution's whole disk yet allocated less than its size: mostly holes,
         * which cost no disk but would be hashed byte by byte (and served as zeros). A dense file
         * that large is the execution budget's to refuse. */
        if (w->lim->execution_max_bytes != ARTIFACT_BUDGET_NONE && size > w->lim->execution_max_bytes &&
            file_charge(st) < size)
                return "sparse";
        if (size > w->lim->max_total_bytes || w->list->total_bytes > w->lim->max_total_bytes - size)
                return "total_too_large";
        return NULL;
}

/* The budgets, judged and charged in one step just before the copy: NULL (charged to the caller's
 * and the store's account, to be given back by budget_unreserve() if the copy does not happen) or
 * the reason the file is skipped. */
static const char *budget_reserve(Walk *w, uint64_t charge) {
        const ArtifactLimits *lim = w->lim;
        ArtifactBudgetCheck c = {
                .charge = charge,
                .execution_used = w->list->charged_bytes,
                .execution_max = lim->execution_max_bytes,
                .caller_max = w->caller ? lim->caller_max_bytes : ARTIFACT_BUDGET_NONE,
                .store_max = w->store ? lim->store_max_bytes : ARTIFACT_BUDGET_NONE,
                .available = UINT64_MAX,
                .min_free = lim->min_free_bytes,
        };
        struct statvfs sv;
        const char *reason;

        if (charge == 0)
                return NULL;
        /* Outside the lock: a system call. Other writers to that file system are not ours to
         * serialize anyway, so this is a headroom, not an exact reservation. */
        if (fstatvfs(w->store_fd, &sv) >= 0 && sv.f_frsize > 0) {
                uint64_t frsize = (uint64_t) sv.f_frsize;

                /* UINT64_MAX means "not known": a larger value is capped one below it. */
                c.available = (uint64_t) sv.f_bavail >= UINT64_MAX / frsize ? UINT64_MAX - 1
                                                                             : (uint64_t) sv.f_bavail * frsize;
                if (lim->min_free_percent > 0) {
                        uint64_t total = (uint64_t) sv.f_blocks > UINT64_MAX / frsize ? UINT64_MAX
                                                                                       : (uint64_t) sv.f_blocks * frsize;
                        c.min_free = MAX(c.min_free, total / 100 * lim->min_free_percent);
                }
        }

        pthread_mutex_lock(&accounts_lock);
        if (w->caller)
                c.caller_used = add_saturating(w->caller->committed, w->caller->reserved);
        if (w->store)
                c.store_used = add_saturating(w->store->committed, w->store->reserved);
        reason = artifact_budget_check(&c);
        if (!reason) {
                if (w->caller)
                        w->caller->reserved = add_saturating(w->caller->reserved, charge);
                if (w->store)
                        w->store->reserved = add_saturating(w->store->reserved, charge);
        }
        pthread_mutex_unlock(&accounts_lock);
        return reason;
}

static void budget_unreserve(Walk *w, uint64_t charge) {
        artifact_account_release(w->caller, charge);
        artifact_account_release(w->store, charge);
}

/* A file for the copy in the store's directory, not yet visible under any name. O_TMPFILE where the
 * file system has it (Linux 3.11; tmpfs, ext4, xfs, btrfs); else a random dot-name, unlinked again
 * after the link. Mode 0644 explicitly: the umask does not decide, and no mode bit of the sandbox's
 * file is ever copied. */
static int store_tmpfile(int store_fd, char ret_name[static 32]) {
        uint64_t rnd;
        int fd;

        ret_name[0] = '\0';
        fd = openat(store_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0) {
                /* EOPNOTSUPP: the file system lacks it; EISDIR: a kernel before 3.11 ignored the flag. */
                if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
                        return -errno;
                if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
                        return -EIO;
                (void) snprintf(ret_name, 32, ".tmp-%016" PRIx64, rnd);
                fd = openat(store_fd, ret_name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd < 0) {
                        ret_name[0] = '\0';
                        return -errno;
                }
        }
        if (fchmod(fd, 0644) < 0) {
                int r = -errno;
                if (ret_name[0])
                        (void) unlinkat(store_fd, ret_name, 0);
                ret_name[0] = '\0';
                safe_close(fd);
                return r;
        }
        return fd;
}

/* Link the written file as shard_fd/name; -EEXIST if the name is taken. */
static int link_tmp(int store_fd, int tmp_fd, const char *tmp_name, int shard_fd, const char *name) {
        char proc[64];

        if (tmp_name[0])
                return linkat(store_fd, tmp_name, shard_fd, name, 0) < 0 ? -errno : 0;
        /* /proc/self/fd needs no capability, AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH: the latter only
         * where /proc is missing. */
        (void) snprintf(proc, sizeof(proc), "/proc/self/fd/%d", tmp_fd);
        if (linkat(AT_FDCWD, proc, shard_fd, name, AT_SYMLINK_FOLLOW) >= 0)
                return 0;
        if (errno != ENOENT)
                return -errno;
        return linkat(tmp_fd, "", shard_fd, name, AT_EMPTY_PATH) < 0 ? -errno : 0;
}

/* Give the written file its name store/<xx>/<hex>. Identical content already stored: the copy is
 * dropped (the content is the name) -- unless the stored file has the wrong size, which a crash can
 * leave (linked, but its data never reached the disk): then the copy replaces it. */
static int store_link(int store_fd, int tmp_fd, const char *tmp_name, const char *hex, uint64_t size) {
        char shard[3] = { hex[0], hex[1], '\0' }, other[32];
        _cleanup_close_ int shard_fd = -EBADF;
        struct stat st;
        uint64_t rnd;
        int r;

        if (mkdirat(store_fd, shard, 0755) < 0 && errno != EEXIST)
                return -errno;
        shard_fd = openat(store_fd, shard, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (shard_fd < 0)
                return -errno;

        r = link_tmp(store_fd, tmp_fd, tmp_name, shard_fd, hex);
        if (r != -EEXIST)
                return r;
        if (fstatat(shard_fd, hex, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISREG(st.st_mode) &&
            (uint64_t) st.st_size == size)
                return 0;

        if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
                return -EIO;
        (void) snprintf(other, sizeof(other), ".tmp-%016" PRIx64, rnd);
        r = link_tmp(store_fd, tmp_fd, tmp_name, shard_fd, other);
        if (r < 0)
                return r;
        if (renameat(shard_fd, other, shard_fd, hex) < 0) {
                r = -errno;
                (void) unlinkat(shard_fd, other, 0);
                return r;
        }
        return 0;
}

static void md_ctx_freep(EVP_MD_CTX **p) {
        EVP_MD_CTX_free(*p);
}

/* The next stretch of data at or after off, as [*ret_data, *ret_end), both at most size; *ret_data ==
 * size when only a hole is left. Holes are what SEEK_DATA/SEEK_HOLE report (Linux 3.1; tmpfs since
 * 3.8): a file system without them reports the whole file as data, and so does a kernel that refuses
 * the whence (EINVAL). -errno on any other failure. */
static int next_data(int fd, uint64_t off, uint64_t size, uint64_t *ret_data, uint64_t *ret_end) {
        off_t d, h;

        d = lseek(fd, (off_t) off, SEEK_DATA);
        if (d < 0) {
                if (errno == ENXIO) {
                        *ret_data = *ret_end = size;
                        return 0;
                }
                if (errno != EINVAL)
                        return -errno;
                *ret_data = off;
                *ret_end = size;
                return 0;
        }
        if ((uint64_t) d >= size) {
                *ret_data = *ret_end = size;
                return 0;
        }
        h = lseek(fd, d, SEEK_HOLE);
        if (h < 0)
                return -errno;
        *ret_data = MAX((uint64_t) d, off);
        *ret_end = MAX(MIN((uint64_t) h, size), *ret_data);
        return 0;
}

typedef struct Copy {
        EVP_MD_CTX *md;
        uint8_t head[MIME_SNIFF_BYTES];
        size_t head_len;
} Copy;

/* Bytes of the file in order (data, or a hole's zeros): hashed, and the first ones kept for the MIME
 * sniffing. */
static int copy_feed(Copy *c, const uint8_t *p, size_t n) {
        if (c->head_len < sizeof(c->head)) {
                size_t k = MIN(sizeof(c->head) - c->head_len, n);
                memcpy(c->head + c->head_len, p, k);
                c->head_len += k;
        }
        return EVP_DigestUpdate(c->md, p, n) == 1 ? 0 : -EIO;
}

static int pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t off) {
        while (n > 0) {
                ssize_t k = pwrite(fd, p, n, (off_t) off);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -EIO;
                p += k;
                n -= (size_t) k;
                off += (uint64_t) k;
        }
        return 0;
}

/* Copy exactly size bytes of fd into the store while hashing them, holes kept as holes: only the
 * data stretches are read and written (at their offsets), a hole is hashed as zeros and left
 * unwritten, and ftruncate() gives the copy its size. So the store holds what the file really held,
 * never more than charge (its st_blocks * 512): a file reporting more data than that is not copied
 * further. Returns 0 (stored), 1 (the sandbox's file misbehaved: a read error, it ended early or
 * changed size, more data than its allocation; skipped as io_error) or -errno (the store failed). */
static int copy_to_store(Walk *w, int fd, uint64_t size, uint64_t charge, const char *path, Artifact *a) {
        _cleanup_(md_ctx_freep) EVP_MD_CTX *md = NULL;
        _cleanup_close_ int tmp_fd = -EBADF;
        uint8_t digest[EVP_MAX_MD_SIZE];
        unsigned digest_len = 0;
        char tmp_name[32];
        uint64_t off = 0, data_bytes = 0;
        struct stat st;
        Copy c = {};
        int r;

        md = EVP_MD_CTX_new();
        if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
                return -ENOMEM;
        c.md = md;

        tmp_fd = store_tmpfile(w->store_fd, tmp_name);
        if (tmp_fd < 0)
                return tmp_fd;

        while (off < size) {
                uint64_t data = size, end = size;

                r = next_data(fd, off, size, &data, &end);
                if (r < 0) {
                        r = 1;
                        goto fail;
                }
                /* The hole before it. A large file is not waited for by artifact_collect_cancel(),
                 * neither its data nor its holes. */
                while (off < data) {
                        size_t n = (size_t) MIN(data - off, (uint64_t) COPY_CHUNK);

                        if (w->cancel && atomic_load(w->cancel)) {
                                r = -ECANCELED;
                                goto fail;
                        }
                        r = copy_feed(&c, zeros, n);
                        if (r < 0)
                                goto fail;
                        off += n;
                }
                if (data >= size)
                        break;
                if (end - data > charge - data_bytes) {
                        r = 1;
                        goto fail;
                }
                data_bytes += end - data;
                while (off < end) {
                        ssize_t n;

                        if (w->cancel && atomic_load(w->cancel)) {
                                r = -ECANCELED;
                                goto fail;
                        }
                        n = pread(fd, w->buf, (size_t) MIN(end - off, (uint64_t) COPY_CHUNK), (off_t) off);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0) {
                                /* A read error, or the file shrank after fstat(). */
                                r = 1;
                                goto fail;
                        }
                        r = copy_feed(&c, w->buf, (size_t) n);
                        if (r < 0)
                                goto fail;
                        r = pwrite_all(tmp_fd, w->buf, (size_t) n, off);
                        if (r < 0)
                                goto fail;
                        off += (uint64_t) n;
                }
        }
        /* Bytes beyond size (the file grew after fstat()) are not read: size was judged, not more.
         * No process of the sandbox is left to change the file, so a different size now is a file
         * system that misbehaves: not stored. */
        if (fstat(fd, &st) < 0 || (uint64_t) st.st_size != size) {
                r = 1;
                goto fail;
        }
        /* The trailing hole, and the size of a file that is all holes. */
        if (ftruncate(tmp_fd, (off_t) size) < 0) {
                r = -errno;
                goto fail;
        }

        if (EVP_DigestFinal_ex(md, digest, &digest_len) != 1 || digest_len != 32) {
                r = -EIO;
                goto fail;
        }
        hexmem(digest, digest_len, a->sha256);

        r = store_link(w->store_fd, tmp_fd, tmp_name, a->sha256, size);
        if (tmp_name[0])
                (void) unlinkat(w->store_fd, tmp_name, 0);
        if (r < 0)
                return r;
        w->stored = true;
        a->size = size;
        a->charged_bytes = charge;
        a->mime_type = mime_type_guess(path, c.head, c.head_len);
        return 0;

fail:
        if (tmp_name[0])
                (void) unlinkat(w->store_fd, tmp_name, 0);
        return r;
}

static int item_add(Walk *w, Artifact *a) {
        ArtifactList *l = w->list;

        if (l->n_items >= w->n_items_allocated) {
                size_t n = MAX(w->n_items_allocated * 2, (size_t) 16);
                Artifact *p = reallocarray(l->items, n, sizeof(Artifact));
                if (!p)
                        return -ENOMEM;
                l->items = p;
                w->n_items_allocated = n;
        }
        l->items[l->n_items++] = *a;
        l->total_bytes += a->size;
        l->charged_bytes = add_saturating(l->charged_bytes, a->charged_bytes);
        return 0;
}

static int visit_file(Walk *w, int dir_fd, const char *prefix, const char *name, const struct stat *st) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        const char *reason;
        struct stat fst;
        uint64_t charge;
        Artifact a = {};
        int r;

        reason = file_judge(w, st);
        if (reason)
                return skip_add(w, prefix, name, reason);

        /* O_NONBLOCK: should a FIFO have been put in place since fstatat(), the open returns at once
         * instead of waiting for a writer; O_NOCTTY likewise for a terminal. */
        fd = open_child(w, dir_fd, name, O_RDONLY | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return skip_add(w, prefix, name, reason_from_open_error(dir_fd, name, st->st_mode, fd));
        if (fstat(fd, &fst) < 0)
                return skip_add(w, prefix, name, "io_error");
        if (!S_ISREG(fst.st_mode))
                return skip_add(w, prefix, name, reason_from_type(fst.st_mode));
        if (fst.st_dev != st->st_dev || fst.st_ino != st->st_ino)
                return skip_add(w, prefix, name, "io_error");
        /* Judged again on what was opened: this stat, not the earlier one, is about these bytes. */
        reason = file_judge(w, &fst);
        if (reason)
                return skip_add(w, prefix, name, reason);

        path = path_join(prefix, name);
        if (!path)
                return -ENOMEM;
        charge = file_charge(&fst);
        reason = budget_reserve(w, charge);
        if (reason)
                return skip_add(w, prefix, name, reason);
        r = copy_to_store(w, fd, (uint64_t) fst.st_size, charge, path, &a);
        if (r != 0) {
                budget_unreserve(w, charge);
                return r < 0 ? r : skip_add(w, prefix, name, "io_error");
        }

        a.path = TAKE_PTR(path);
        r = item_add(w, &a);
        if (r < 0) {
                budget_unreserve(w, charge);
                free(a.path);
        }
        return r;
}

/* One directory entry at the given depth (0: directly in output/). A subdirectory to descend into is
 * returned opened, with its path. */
static int visit(Walk *w, int dir_fd, const char *prefix, unsigned depth, const char *name, int *ret_fd,
                 char **ret_path) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st, fst;
        size_t len;

        *ret_fd = -EBADF;
        *ret_path = NULL;

        if (!name_is_valid(name))
                return skip_add(w, prefix, name, "name_invalid");
        len = strlen(prefix) + !isempty(prefix) + strlen(name);
        if (len > w->lim->max_path)
                return skip_add(w, prefix, name, "path_too_long");

        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno == ENOENT)
                        return 0;       /* gone since readdir() */
                return skip_add(w, prefix, name, "io_error");
        }
        /* Something mounted below output/ (fstatat() reports the mount's root): not the
         * workspace's. */
        if (st.st_dev != w->dev)
                return skip_add(w, prefix, name, "device");

        if (S_ISREG(st.st_mode))
                return visit_file(w, dir_fd, prefix, name, &st);
        if (!S_ISDIR(st.st_mode))
                return skip_add(w, prefix, name, reason_from_type(st.st_mode));

        if (depth + 1 > w->lim->max_depth || depth + 1 > ARTIFACT_DEPTH_MAX)
                return skip_add(w, prefix, name, "too_deep");
        fd = open_child(w, dir_fd, name, O_RDONLY | O_DIRECTORY);
        if (fd < 0)
                return skip_add(w, prefix, name, reason_from_open_error(dir_fd, name, st.st_mode, fd));
        if (fstat(fd, &fst) < 0 || !S_ISDIR(fst.st_mode) || fst.st_dev != st.st_dev ||
            fst.st_ino != st.st_ino)
                return skip_add(w, prefix, name, "io_error");

        *ret_path = path_join(prefix, name);
        if (!*ret_path)
                return -ENOMEM;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

typedef struct Level {
        DIR *dir;
        char *path;                     /* relative to output/, "" for output/ itself */
} Level;

static int cmp_artifact(const void *a, const void *b) {
        return strcmp(((const Artifact *) a)->path, ((const Artifact *) b)->path);
}

static int cmp_skip(const void *a, const void *b) {
        return strcmp(((const ArtifactSkip *) a)->path, ((const ArtifactSkip *) b)->path);
}

/* Depth-first with an explicit stack of open directories, one per level: fds and memory are bounded
 * by max_depth (at most ARTIFACT_DEPTH_MAX), not by what the sandbox created, and nothing recurses
 * on the C stack. */
static int walk(Walk *w, int output_fd) {
        _cleanup_free_ Level *levels = NULL;
        unsigned max_depth = MIN(w->lim->max_depth, (unsigned) ARTIFACT_DEPTH_MAX);
        size_t n = 0;
        int r = 0;

        levels = calloc((size_t) max_depth + 1, sizeof(Level));
        if (!levels) {
                safe_close(output_fd);
                return -ENOMEM;
        }
        levels[0].path = strdup("");
        levels[0].dir = levels[0].path ? fdopendir(output_fd) : NULL;
        if (!levels[0].dir) {
                r = levels[0].path ? -errno : -ENOMEM;
                free(levels[0].path);
                safe_close(output_fd);
                return r;
        }
        n = 1;

        while (n > 0) {
                Level *l = &levels[n - 1];
                struct dirent *de;
                char *child_path;
                int child_fd;

                if (w->cancel && atomic_load(w->cancel)) {
                        r = -ECANCELED;
                        break;
                }

                errno = 0;
                de = readdir(l->dir);
                if (!de) {
                        if (errno != 0) {
                                r = skip_add(w, "", isempty(l->path) ? "." : l->path, "io_error");
                                if (r < 0)
                                        break;
                        }
                        closedir(l->dir);
                        free(l->path);
                        n--;
                        continue;
                }
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;

                r = visit(w, dirfd(l->dir), l->path, (unsigned) (n - 1), de->d_name, &child_fd, &child_path);
                if (r < 0)
                        break;
                if (child_fd < 0)
                        continue;

                assert(n <= max_depth);
                levels[n].dir = fdopendir(child_fd);
                if (!levels[n].dir) {
                        r = -errno;
                        safe_close(child_fd);
                        free(child_path);
                        break;
                }
                levels[n].path = child_path;
                n++;
        }

        while (n > 0) {
                n--;
                closedir(levels[n].dir);
                free(levels[n].path);
        }
        return r;
}

static int collect(int workspace_fd, int store_fd, const ArtifactLimits *lim, const atomic_bool *cancel,
                   ArtifactList **ret) {
        _cleanup_(artifact_list_freep) ArtifactList *l = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        _cleanup_close_ int output_fd = -EBADF;
        struct stat st;
        Walk w;
        int r;

        if (workspace_fd < 0 || store_fd < 0 || !lim || !ret)
                return -EINVAL;

        l = calloc(1, sizeof(ArtifactList));
        buf = malloc(COPY_CHUNK);
        if (!l || !buf)
                return -ENOMEM;
        w = (Walk) { .store_fd = store_fd, .lim = lim, .caller = lim->caller, .store = lim->store, .cancel = cancel,
                     .buf = buf, .list = l };

        if (fstatat(workspace_fd, "output", &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT) {
                        r = skip_add(&w, "", ".", "io_error");
                        if (r < 0)
                                return r;
                }
                *ret = TAKE_PTR(l);
                return 0;
        }
        if (!S_ISDIR(st.st_mode)) {
                r = skip_add(&w, "", ".", "not_directory");
                if (r < 0)
                        return r;
                *ret = TAKE_PTR(l);
                return 0;
        }
        output_fd = open_child(&w, workspace_fd, "output", O_RDONLY | O_DIRECTORY);
        if (output_fd < 0) {
                /* Replaced by a symlink or a file since fstatat(). */
                r = skip_add(&w, "", ".",
                             output_fd == -ELOOP || output_fd == -ENOTDIR ? "not_directory" : "io_error");
                if (r < 0)
                        return r;
                *ret = TAKE_PTR(l);
                return 0;
        }
        if (fstat(output_fd, &st) < 0)
                return -errno;
        w.dev = st.st_dev;

        r = walk(&w, TAKE_FD(output_fd));
        /* The blobs are on disk before anyone records them: one syncfs() for the whole collection
         * rather than an fsync() per file. */
        if (r >= 0 && w.stored && syncfs(store_fd) < 0)
                r = -errno;
        if (r < 0) {
                /* No list, so nobody could give back what it charged. */
                budget_unreserve(&w, l->charged_bytes);
                return r;
        }

        if (l->n_items > 1)
                qsort(l->items, l->n_items, sizeof(Artifact), cmp_artifact);
        if (l->n_skipped > 1)
                qsort(l->skipped, l->n_skipped, sizeof(ArtifactSkip), cmp_skip);

        *ret = TAKE_PTR(l);
        return 0;
}

int artifacts_collect(int workspace_fd, int store_fd, const ArtifactLimits *lim, ArtifactList **ret) {
        return collect(workspace_fd, store_fd, lim, NULL, ret);
}

struct ArtifactCollect {
        sd_event_source *source;        /* the eventfd: the worker is done */
        int event_fd;
        pthread_t thread;
        bool thread_running;            /* created and not yet joined */
        atomic_bool cancel;
        int workspace_fd, store_fd;
        ArtifactLimits lim;
        int result;                     /* worker's, read after the join */
        ArtifactList *list;
        artifacts_done_t cb;
        void *userdata;
};

static void *collect_thread(void *userdata) {
        ArtifactCollect *c = userdata;

        c->result = collect(c->workspace_fd, c->store_fd, &c->lim, &c->cancel, &c->list);
        (void) eventfd_write(c->event_fd, 1);
        return NULL;
}

static int on_collect_done(_unused_ sd_event_source *s, _unused_ int fd, _unused_ uint32_t revents,
                           void *userdata) {
        ArtifactCollect *c = userdata;
        ArtifactList *list;
        int r;

        if (!c->thread_running)
                return 0;
        (void) pthread_join(c->thread, NULL);
        c->thread_running = false;
        (void) sd_event_source_set_enabled(c->source, SD_EVENT_OFF);

        r = c->result;
        list = r < 0 ? NULL : TAKE_PTR(c->list);
        c->list = artifact_list_free(c->list);
        /* Last: the callback may free c with artifact_collect_cancel(). */
        c->cb(r, list, c->userdata);
        return 0;
}

ArtifactCollect *artifact_collect_cancel(ArtifactCollect *c) {
        if (!c)
                return NULL;
        if (c->thread_running) {
                atomic_store(&c->cancel, true);
                (void) pthread_join(c->thread, NULL);
                c->thread_running = false;
        }
        c->source = sd_event_source_disable_unref(c->source);
        safe_close(c->event_fd);
        safe_close(c->workspace_fd);
        safe_close(c->store_fd);
        /* A list done but never handed to cb: nobody else will give back what it charged. */
        if (c->list) {
                artifact_account_release(c->lim.caller, c->list->charged_bytes);
                artifact_account_release(c->lim.store, c->list->charged_bytes);
        }
        artifact_list_free(c->list);
        return mfree(c);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(ArtifactCollect *, artifact_collect_cancel);

int artifacts_collect_async(sd_event *event, int workspace_fd, int store_fd, const ArtifactLimits *lim,
                            artifacts_done_t cb, void *userdata, ArtifactCollect **ret) {
        _cleanup_(artifact_collect_cancelp) ArtifactCollect *c = NULL;
        sigset_t all, old;
        int r;

        if (!event || workspace_fd < 0 || store_fd < 0 || !lim || !cb || !ret)
                return -EINVAL;

        c = calloc(1, sizeof(ArtifactCollect));
        if (!c)
                return -ENOMEM;
        *c = (ArtifactCollect) {
                .event_fd = -EBADF, .workspace_fd = -EBADF, .store_fd = -EBADF,
                .lim = *lim, .cb = cb, .userdata = userdata,
        };
        atomic_init(&c->cancel, false);

        c->workspace_fd = fcntl(workspace_fd, F_DUPFD_CLOEXEC, 3);
        if (c->workspace_fd < 0)
                return -errno;
        c->store_fd = fcntl(store_fd, F_DUPFD_CLOEXEC, 3);
        if (c->store_fd < 0)
                return -errno;
        c->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->event_fd < 0)
                return -errno;
        r = sd_event_add_io(event, &c->source, c->event_fd, EPOLLIN, on_collect_done, c);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(c->source, "artifacts-collect");

        /* Signals stay with the loop thread (signalfd sources): the worker blocks them all. */
        sigfillset(&all);
        r = -pthread_sigmask(SIG_BLOCK, &all, &old);
        if (r < 0)
                return r;
        r = -pthread_create(&c->thread, NULL, collect_thread, c);
        (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0)
                return r;
        c->thread_running = true;

        *ret = TAKE_PTR(c);
        return 0;
}

int artifacts_store_open(const char *dir) {
        int fd;

        if (isempty(dir))
                return -EINVAL;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static int blob_path(const char *sha256_hex, char ret[static 68]) {
        if (!is_lower_hex(sha256_hex, 64))
                return -EINVAL;
        (void) snprintf(ret, 68, "%.2s/%s", sha256_hex, sha256_hex);
        return 0;
}

int artifacts_store_open_blob(int store_fd, const char *sha256_hex) {
        char path[68];
        int fd, r;

        r = blob_path(sha256_hex, path);
        if (r < 0)
                return r;
        fd = openat(store_fd, path, O_RDONLY | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int artifacts_store_remove_blob(int store_fd, const char *sha256_hex) {
        char path[68];
        int r;

        r = blob_path(sha256_hex, path);
        if (r < 0)
                return r;
        /* The shard directory stays: a concurrent collection may be linking into it. */
        if (unlinkat(store_fd, path, 0) < 0)
                return -errno;
        return 0;
}
