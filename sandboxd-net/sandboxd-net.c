/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandboxd-net: the network worker. sandboxd starts it on a socketpair (fd 3); it gives up every
 * privilege before it reads a byte from the network, then runs the HTTP transfers the daemon asks
 * for with libcurl — the address guard of curl-event.h on every connection, as before — and sends
 * back only net-frame.h frames: the body of a download in DATA frames, and one DONE frame with the
 * outcome. libcurl's parsing of HTTP and TLS, which a remote server controls, runs here, as an
 * unprivileged user with no capabilities, not in the root daemon. See docs/ARCHITECTURE.md, "The
 * network worker". It ends when the daemon closes its end. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "net/curl-event.h"
#include "net/fetch.h"
#include "net/net-frame.h"
#include "util.h"

#ifndef CURL_WRITEFUNC_ERROR
#define CURL_WRITEFUNC_ERROR 0
#endif

#ifndef __has_feature
#define __has_feature(x) 0                      /* gcc before 14 */
#endif

#define DAEMON_FD 3
/* Output queued for the daemon beyond which downloads pause: the worker's memory stays bounded
 * when the daemon's loop is busy. */
#define OUT_HIGH (4U * 1024U * 1024U)
/* A callback's body (the execution's JSON) is at most this large. */
#define BODY_MAX (256U * 1024U * 1024U)

typedef struct Worker Worker;
typedef struct Transfer Transfer;

struct Transfer {
        Worker *w;
        Transfer *prev, *next;
        uint32_t id;
        NetRequestKind kind;
        uint32_t connect_timeout_sec, timeout_sec;
        uint64_t max_response_bytes, bytes;
        char *url;
        uint8_t *body;
        uint64_t body_len, body_have;
        CURL *easy;
        struct curl_slist *headers;
        bool started, paused, too_large;
        uint64_t retry_after;
        CurlGuard guard;
        char errbuf[CURL_ERROR_SIZE];
};

struct Worker {
        sd_event *event;
        CurlEvent *curl;
        sd_event_source *io;
        uint8_t in[2 * NET_FRAME_MAX];
        size_t in_len;
        NetOutQueue out;
        Transfer *transfers;
};

static void transfer_free(Transfer *t) {
        Worker *w = t->w;

        if (t->prev)
                t->prev->next = t->next;
        else
                w->transfers = t->next;
        if (t->next)
                t->next->prev = t->prev;
        if (t->easy) {
                if (t->started)
                        curl_event_remove(w->curl, t->easy);
                curl_easy_cleanup(t->easy);
        }
        curl_slist_free_all(t->headers);
        free(t->url);
        free(t->body);
        free(t);
}

static Transfer *find_transfer(Worker *w, uint32_t id) {
        for (Transfer *t = w->transfers; t; t = t->next)
                if (t->id == id)
                        return t;
        return NULL;
}

static void out_queue(Worker *w, NetFrameType type, uint32_t id, const void *p, size_t len) {
        if (net_out_queue_frame(&w->out, type, id, p, len) < 0)
                _exit(EXIT_FAILURE);    /* the daemon fails what was in flight and restarts us */
        (void) sd_event_source_set_io_events(w->io, EPOLLIN | EPOLLOUT);
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *userdata) {
        Transfer *t = userdata;
        Worker *w = t->w;
        size_t n = size * nmemb;

        if (t->kind == NET_REQUEST_POST) {
                /* A callback's answer is read and dropped; a receiver that keeps talking is cut off. */
                t->bytes += n;
                if (t->bytes > t->max_response_bytes) {
                        t->too_large = true;
                        return CURL_WRITEFUNC_ERROR;
                }
                return n;
        }
        if (t->bytes + n > t->max_response_bytes) {
                t->too_large = true;
                return CURL_WRITEFUNC_ERROR;
        }
        if (net_out_queue_pending(&w->out) > OUT_HIGH) {
                t->paused = true;
                return CURL_WRITEFUNC_PAUSE;
        }
        t->bytes += n;
        for (size_t at = 0; at < n; at += NET_FRAME_PAYLOAD_MAX)
                out_queue(w, NET_FRAME_DATA, t->id, p + at, MIN(n - at, (size_t) NET_FRAME_PAYLOAD_MAX));
        return n;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *userdata) {
        Transfer *t = userdata;
        size_t n = size * nitems;
        char value[32];

        if (n > 12 && strncasecmp(buf, "Retry-After:", 12) == 0 && n - 12 < sizeof(value)) {
                memcpy(value, buf + 12, n - 12);
                value[n - 12] = 0;
                t->retry_after = retry_after_parse(value);
        }
        return n;
}

static void send_done(Transfer *t, const NetDone *d) {
        static uint8_t payload[NET_FRAME_PAYLOAD_MAX];

        out_queue(t->w, NET_FRAME_DONE, t->id, payload, net_done_format(d, payload));
        transfer_free(t);
}

static void on_done(CURL *easy, CURLcode result, void *userdata) {
        Transfer *t = userdata;
        NetDone d = {
                .transport = curl_transport_result(easy, result, &t->guard),
                .curl_code = (uint32_t) result,
                .retry_after_sec = t->retry_after,
        };
        long status = 0, redirects = 0;

        t->started = false;     /* curl-event.c removed it from the multi */
        (void) curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        (void) curl_easy_getinfo(easy, CURLINFO_REDIRECT_COUNT, &redirects);
        d.http_status = status >= 100 && status <= 999 ? (uint32_t) status : 0;
        d.redirects = (uint32_t) MIN(MAX(redirects, 0L), 1000L);
        if (t->too_large)
                d.flags |= NET_DONE_TOO_LARGE;
        if (t->guard.refused > 0) {
                d.flags |= NET_DONE_REFUSED;
                net_text_sanitize(d.refused_address, sizeof(d.refused_address), t->guard.refused_address);
        }
        net_text_sanitize(d.error, sizeof(d.error), t->errbuf[0] ? t->errbuf : curl_easy_strerror(result));
        send_done(t, &d);
}

static int transfer_start(Transfer *t) {
        CURL *e;
        int r;

        e = t->easy = curl_easy_init();
        if (!e)
                return -ENOMEM;
#define SET(opt, val)                                                   \
        do {                                                            \
                if (curl_easy_setopt(e, opt, val) != CURLE_OK)          \
                        return -EIO;                                    \
        } while (0)
        SET(CURLOPT_URL, t->url);
        SET(CURLOPT_PROTOCOLS_STR, "http,https");
        SET(CURLOPT_NOSIGNAL, 1L);
        SET(CURLOPT_CONNECTTIMEOUT, (long) t->connect_timeout_sec);
        SET(CURLOPT_TIMEOUT, (long) t->timeout_sec);
        SET(CURLOPT_USERAGENT, "sandboxd/" PACKAGE_VERSION);
        SET(CURLOPT_WRITEFUNCTION, on_write);
        SET(CURLOPT_WRITEDATA, t);
        SET(CURLOPT_ERRORBUFFER, t->errbuf);
        /* A connection of its own: one kept alive would skip the guard, and what one caller's server
         * left in it (bytes past its Content-Length) must never start another's answer. */
        SET(CURLOPT_FRESH_CONNECT, 1L);
        SET(CURLOPT_FORBID_REUSE, 1L);
        if (t->kind == NET_REQUEST_DOWNLOAD) {
                /* http and https only, for every redirect too. No CURLOPT_ACCEPT_ENCODING: nothing is
                 * decompressed, so the bytes counted are the bytes written. */
                SET(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
                SET(CURLOPT_FOLLOWLOCATION, 1L);
                SET(CURLOPT_MAXREDIRS, (long) FETCH_MAX_REDIRS);
                /* Refused before a byte is sent when Content-Length says so; on_write counts the rest. */
                SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) MIN(t->max_response_bytes, (uint64_t) INT64_MAX));
                /* A 4xx/5xx body is not the file. */
                SET(CURLOPT_FAILONERROR, 1L);
        } else {
                SET(CURLOPT_FOLLOWLOCATION, 0L);
                SET(CURLOPT_MAXREDIRS, 0L);
                SET(CURLOPT_POST, 1L);
                SET(CURLOPT_POSTFIELDS, t->body ? (char *) t->body : "");
                SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) t->body_len);
                SET(CURLOPT_HTTPHEADER, t->headers);
                SET(CURLOPT_HEADERFUNCTION, on_header);
                SET(CURLOPT_HEADERDATA, t);
        }
#undef SET
        r = curl_guard_apply(e, &t->guard);
        if (r < 0)
                return r;
        r = curl_event_add(t->w->curl, e, on_done, t);
        if (r < 0)
                return r;
        t->started = true;
        return 0;
}

/* A transfer that could not even start ends at once with TRANSPORT_OTHER. */
static void transfer_begin(Transfer *t) {
        int r = transfer_start(t);
        NetDone d = { .transport = TRANSPORT_OTHER, .curl_code = CURLE_FAILED_INIT };

        if (r >= 0)
                return;
        snprintf(d.error, sizeof(d.error), "cannot start the transfer: %s", strerror(-r));
        send_done(t, &d);
}

/* One frame from the daemon. A frame that breaks the protocol ends the worker: the daemon restarts
 * it, and the two never disagree about what is in flight. */
static int handle_frame(Worker *w, const NetFrame *f) {
        Transfer *t = find_transfer(w, f->id);
        NetRequest q;

        switch (f->type) {
        case NET_FRAME_REQUEST:
                if (t || net_request_parse(f, &q) < 0 || q.body_len > BODY_MAX ||
                    (q.kind == NET_REQUEST_DOWNLOAD && q.body_len > 0))
                        return -EBADMSG;
                t = calloc(1, sizeof(Transfer));
                if (!t)
                        return -ENOMEM;
                *t = (Transfer) {
                        .w = w,
                        .id = f->id,
                        .kind = q.kind,
                        .connect_timeout_sec = q.connect_timeout_sec,
                        .timeout_sec = q.timeout_sec,
                        .max_response_bytes = q.max_response_bytes,
                        .body_len = q.body_len,
                        .guard = { .allow_internal = q.allow_internal },
                        .next = w->transfers,
                };
                if (w->transfers)
                        w->transfers->prev = t;
                w->transfers = t;
                for (size_t i = 0; i < q.n_headers; i++) {
                        struct curl_slist *l = curl_slist_append(t->headers, q.headers[i]);
                        if (!l)
                                return -ENOMEM;
                        t->headers = l;
                }
                if (q.body_len > 0 && !(t->body = malloc(q.body_len + 1)))
                        return -ENOMEM;
                t->url = strdup(q.url);
                if (!t->url)
                        return -ENOMEM;
                if (t->body_len == 0)
                        transfer_begin(t);
                return 0;
        case NET_FRAME_BODY:
                if (!t || t->body_have + f->len > t->body_len)
                        return -EBADMSG;
                memcpy(t->body + t->body_have, f->payload, f->len);
                t->body_have += f->len;
                if (t->body_have == t->body_len)
                        transfer_begin(t);
                return 0;
        case NET_FRAME_CANCEL:
                if (t)
                        transfer_free(t);
                return 0;
        default:
                return -EBADMSG;
        }
}

static void resume_paused(Worker *w) {
        for (Transfer *t = w->transfers, *next; t; t = next) {
                next = t->next;
                if (t->paused && t->easy) {
                        t->paused = false;
                        /* May write (and pause again) at once, or end the transfer: next is kept. */
                        (void) curl_easy_pause(t->easy, CURLPAUSE_CONT);
                }
                if (net_out_queue_pending(&w->out) > OUT_HIGH)
                        break;
        }
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Worker *w = userdata;
        size_t at = 0;
        ssize_t n;

        if (revents & EPOLLOUT) {
                n = write(fd, net_out_queue_data(&w->out), net_out_queue_pending(&w->out));
                if (n < 0 && errno != EAGAIN && errno != EINTR)
                        return sd_event_exit(w->event, EXIT_FAILURE);
                if (net_out_queue_consumed(&w->out, n > 0 ? (size_t) n : 0))
                        (void) sd_event_source_set_io_events(w->io, EPOLLIN);
                if (net_out_queue_pending(&w->out) <= OUT_HIGH / 2)
                        resume_paused(w);
        }
        if (!(revents & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                return 0;
        n = read(fd, w->in + w->in_len, sizeof(w->in) - w->in_len);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n <= 0)     /* the daemon closed its end: done */
                return sd_event_exit(w->event, n == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
        w->in_len += (size_t) n;
        for (;;) {
                NetFrame f;
                int size = net_frame_next(w->in + at, w->in_len - at, NET_TO_WORKER, &f);

                if (size == 0)
                        break;
                if (size < 0 || handle_frame(w, &f) < 0) {
                        fprintf(stderr, "sandboxd-net: a malformed frame from the daemon, exiting\n");
                        return sd_event_exit(w->event, EXIT_FAILURE);
                }
                at += (size_t) size;
        }
        memmove(w->in, w->in + at, w->in_len - at);
        w->in_len -= at;
        return 0;
}

/* Everything the worker had as root, given up before the first byte from the network: the
 * capability bounding set (every capability, so no exec could ever give one back), the
 * supplementary groups, then GID and UID (all three of each, so there is no way back); ambient
 * capabilities cleared; no new privileges; not dumpable (no ptrace, no core of its memory by
 * another process of the same user). Checked afterwards, not trusted. */
static int drop_privileges(uid_t uid, gid_t gid) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct caps[2] = {};
        uid_t ru, eu, su;

        if (uid == 0 || gid == 0)
                return -EINVAL;
        for (unsigned long c = 0; c <= 63; c++)
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
                        return -errno;
        if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                return -errno;
        (void) prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return -errno;
        if (getresuid(&ru, &eu, &su) < 0 || ru != uid || eu != uid || su != uid || getgroups(0, NULL) != 0)
                return -EPERM;
        if (syscall(SYS_capget, &h, caps) < 0)
                return -errno;
        for (size_t i = 0; i < ELEMENTSOF(caps); i++)
                if (caps[i].effective || caps[i].permitted || caps[i].inheritable)
                        return -EPERM;
        for (unsigned long c = 0; c <= 63; c++)
                if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1)
                        return -EPERM;
        return 0;
}

/* A small deny list on top of the user and the empty capability set: what a worker that libcurl's
 * parsers let an attacker steer could still try. It never runs a program, traces or reads another
 * process, changes namespaces or mounts, or opens sockets other than IP (connections), netlink
 * (getaddrinfo's AI_ADDRCONFIG) and unix (nscd, systemd-resolved's NSS module). Default allow:
 * libcurl, its TLS library and the NSS modules glibc loads for name resolution use more than is
 * worth listing here. */
static int seccomp_install(void) {
        static const char *const deny[] = {
                "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
                "mount", "umount2", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick",
                "pivot_root", "chroot", "unshare", "setns", "bpf", "perf_event_open", "userfaultfd",
                "keyctl", "add_key", "request_key", "io_uring_setup", "io_uring_enter", "io_uring_register",
                "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
                "open_by_handle_at", "name_to_handle_at", "swapon", "swapoff", "reboot", "acct",
                "personality", "memfd_create",
        };
        static const int families_allowed[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        int r = 0;

        if (!ctx)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(deny) && r >= 0; i++) {
                int nr = seccomp_syscall_resolve_name(deny[i]);

#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
                /* LeakSanitizer stops the process with ptrace at exit (the ASan leg only). */
                if (streq(deny[i], "ptrace"))
                        continue;
#endif
                if (nr != __NR_SCMP_ERROR)
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
        }
        /* socket(): every family but the four, as disjoint rules (one comparison of a0 each). */
        for (int f = 0; f <= AF_MAX && r >= 0; f++) {
                bool ok = false;

                for (size_t i = 0; i < ELEMENTSOF(families_allowed); i++)
                        ok = ok || f == families_allowed[i];
                if (!ok)
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                                             SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t) f));
        }
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                                     SCMP_A0(SCMP_CMP_GT, (scmp_datum_t) AF_MAX));
        if (r >= 0)
                r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r >= 0)
                r = seccomp_load(ctx);
        seccomp_release(ctx);
        return r;
}

static int parse_id(const char *arg, const char *prefix, unsigned *ret) {
        size_t l = strlen(prefix);
        char *end;
        unsigned long v;

        if (strncmp(arg, prefix, l) != 0)
                return -EINVAL;
        errno = 0;
        v = strtoul(arg + l, &end, 10);
        if (errno || end == arg + l || *end || v == 0 || v >= UINT32_MAX)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

int main(int argc, char *argv[]) {
        Worker w = {};
        unsigned uid = 0, gid = 0;
        int type = 0, r;
        socklen_t len = sizeof(type);

        if (argc != 3 || parse_id(argv[1], "--uid=", &uid) < 0 || parse_id(argv[2], "--gid=", &gid) < 0) {
                fprintf(stderr, "Usage: %s --uid=UID --gid=GID   (started by sandboxd, its socket on fd 3)\n",
                        argv[0]);
                return EXIT_FAILURE;
        }
        if (getsockopt(DAEMON_FD, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM) {
                fprintf(stderr, "sandboxd-net: fd 3 is not sandboxd's socket\n");
                return EXIT_FAILURE;
        }
        r = drop_privileges((uid_t) uid, (gid_t) gid);
        if (r < 0) {
                fprintf(stderr, "sandboxd-net: cannot drop privileges: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        /* Cleared by the UID change, so set after it: the worker never outlives the daemon. */
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() == 1)
                return EXIT_FAILURE;
        r = seccomp_install();
        if (r < 0) {
                fprintf(stderr, "sandboxd-net: cannot load the system call filter: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        signal(SIGPIPE, SIG_IGN);
        /* systemd's stop signals the whole cgroup: the worker ends when the daemon closes its end
         * (or dies: PR_SET_PDEATHSIG), never before the daemon has let go of its transfers. */
        signal(SIGTERM, SIG_IGN);
        if (fcntl(DAEMON_FD, F_SETFD, FD_CLOEXEC) < 0 || fcntl(DAEMON_FD, F_SETFL, O_NONBLOCK) < 0)
                return EXIT_FAILURE;

        if (sd_event_new(&w.event) < 0 || curl_event_new(w.event, &w.curl) < 0 ||
            sd_event_add_io(w.event, &w.io, DAEMON_FD, EPOLLIN, on_io, &w) < 0) {
                fprintf(stderr, "sandboxd-net: cannot set up the event loop\n");
                return EXIT_FAILURE;
        }
        r = sd_event_loop(w.event);
        while (w.transfers)
                transfer_free(w.transfers);
        curl_event_free(w.curl);
        sd_event_source_disable_unref(w.io);
        sd_event_unref(w.event);
        net_out_queue_done(&w.out);
        return r < 0 ? EXIT_FAILURE : r;
}
