/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "net-client.h"
#include "time-util.h"

/* The restart backoff: 100 ms, doubling, at most 30 s; a worker that lived a minute starts it anew. */
#define RESTART_BASE_USEC (100 * USEC_PER_MSEC)
#define RESTART_MAX_USEC (30 * USEC_PER_SEC)
#define RESTART_RESET_USEC (60 * USEC_PER_SEC)
/* The worker's fd for the socketpair. */
#define WORKER_FD 3

extern char **environ;

struct NetCall {
        NetClient *client;
        NetCall *prev, *next;
        uint32_t id;
        net_call_data_t data;
        net_call_done_t done;
        void *userdata;
};

struct NetClient {
        sd_event *event;
        char *path;
        uid_t uid;
        gid_t gid;

        int fd;                          /* our end of the socketpair, -EBADF while restarting */
        pid_t pid;                       /* the worker, 0 once reaped */
        pid_t last_pid;                  /* the worker's, for the journal */
        int pidfd;
        sd_event_source *io, *child, *restart;
        uint64_t started_usec;
        unsigned restarts;               /* in a row, for the backoff */

        uint8_t in[2 * NET_FRAME_MAX];
        size_t in_len;
        NetOutQueue out;

        uint32_t last_id;                /* of this worker: ids are handed out 1, 2, ... */
        NetCall *calls;
};

static int spawn_worker(NetClient *c);

static void call_unlink(NetCall *q) {
        NetClient *c = q->client;

        if (q->prev)
                q->prev->next = q->next;
        else
                c->calls = q->next;
        if (q->next)
                q->next->prev = q->prev;
        q->prev = q->next = NULL;
}

static NetCall *find_call(NetClient *c, uint32_t id) {
        for (NetCall *q = c->calls; q; q = q->next)
                if (q->id == id)
                        return q;
        return NULL;
}

static void finish(NetCall *q, const NetDone *d) {
        call_unlink(q);
        q->done(q, d, q->userdata);
        free(q);
}

/* Queue a frame; the loop writes it (EPOLLOUT). Never writes here: no failure path runs inside a
 * caller's net_call_start() or net_call_cancel(). */
static int send_frame(NetClient *c, NetFrameType type, uint32_t id, const void *payload, size_t len) {
        int r = net_out_queue_frame(&c->out, type, id, payload, len);

        if (r < 0)
                return r;
        return sd_event_source_set_io_events(c->io, EPOLLIN | EPOLLOUT);
}

static int on_restart(sd_event_source *s, uint64_t usec, void *userdata) {
        NetClient *c = userdata;

        if (spawn_worker(c) < 0) {
                uint64_t delay = MIN(RESTART_BASE_USEC << MIN(c->restarts, 10U), RESTART_MAX_USEC);

                c->restarts++;
                (void) sd_event_source_set_time_relative(c->restart, delay);
                (void) sd_event_source_set_enabled(c->restart, SD_EVENT_ONESHOT);
        }
        return 0;
}

static int on_child(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        NetClient *c = userdata;
        int status = 0;

        if (c->pid > 0 && waitpid(c->pid, &status, WNOHANG) == c->pid) {
                if (WIFEXITED(status))
                        log_debug("The network worker (PID %d) exited with status %d.", (int) c->pid,
                                  WEXITSTATUS(status));
                else if (WIFSIGNALED(status))
                        log_debug("The network worker (PID %d) was killed by signal %d.", (int) c->pid,
                                  WTERMSIG(status));
                c->pid = 0;
        }
        c->child = sd_event_source_disable_unref(c->child);
        c->pidfd = safe_close(c->pidfd);
        return 0;
}

/* The worker is gone or broke the framing: kill it (its end of the socketpair then closes, and its
 * pidfd source reaps it), fail what it had in hand, and start another one after the backoff. */
static void worker_lost(NetClient *c, const char *why) {
        uint64_t now = now_usec(CLOCK_MONOTONIC), delay;
        NetDone lost = {
                .transport = TRANSPORT_OTHER,
                .flags = NET_DONE_WORKER_LOST,
        };

        log_error("The network worker (PID %d) %s; %s.", (int) c->last_pid, why,
                  c->calls ? "failing the transfers it had, restarting it" : "restarting it");
        if (c->pid > 0)
                (void) kill(c->pid, SIGKILL);
        c->io = sd_event_source_disable_unref(c->io);
        c->fd = safe_close(c->fd);
        c->in_len = 0;
        net_out_queue_clear(&c->out);

        if (now - c->started_usec >= RESTART_RESET_USEC)
                c->restarts = 0;
        delay = MIN(RESTART_BASE_USEC << MIN(c->restarts, 10U), RESTART_MAX_USEC);
        c->restarts++;
        (void) sd_event_source_set_time_relative(c->restart, delay);
        (void) sd_event_source_set_enabled(c->restart, SD_EVENT_ONESHOT);

        snprintf(lost.error, sizeof(lost.error), "the network worker %s", why);
        while (c->calls)
                finish(c->calls, &lost);
}

/* One frame from the worker. 0, or -EBADMSG for a protocol error. */
static int handle_frame(NetClient *c, const NetFrame *f) {
        NetCall *q;
        NetDone d;
        int r;

        if (net_frame_id_check(f->id, c->last_id) < 0)
                return -EBADMSG;
        q = find_call(c, f->id);
        if (f->type == NET_FRAME_DONE) {
                r = net_done_parse(f, &d);
                if (r < 0)
                        return r;
                if (q)
                        finish(q, &d);
                return 0;
        }
        /* NET_FRAME_DATA; one of a cancelled call is still on its way: dropped. */
        if (!q)
                return 0;
        if (!q->data || q->data(q, f->payload, f->len, q->userdata) < 0) {
                d = (NetDone) { .transport = TRANSPORT_OTHER, .flags = NET_DONE_ABORTED };
                (void) send_frame(c, NET_FRAME_CANCEL, q->id, NULL, 0);
                finish(q, &d);
        }
        return 0;
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        NetClient *c = userdata;
        size_t at = 0;
        ssize_t n;

        if (revents & EPOLLOUT) {
                n = write(c->fd, net_out_queue_data(&c->out), net_out_queue_pending(&c->out));
                if (n < 0 && errno != EAGAIN && errno != EINTR) {
                        worker_lost(c, "closed its socket");
                        return 0;
                }
                if (net_out_queue_consumed(&c->out, n > 0 ? (size_t) n : 0))
                        (void) sd_event_source_set_io_events(c->io, EPOLLIN);
        }
        if (!(revents & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                return 0;

        n = read(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n <= 0) {
                worker_lost(c, n == 0 ? "exited" : "closed its socket");
                return 0;
        }
        c->in_len += (size_t) n;
        for (;;) {
                NetFrame f;
                int size = net_frame_next(c->in + at, c->in_len - at, NET_TO_DAEMON, &f), r = size;

                if (size == 0)
                        break;
                if (size > 0)
                        r = handle_frame(c, &f);
                if (r < 0) {
                        worker_lost(c, "sent a malformed frame");
                        return 0;
                }
                at += (size_t) size;
        }
        memmove(c->in, c->in + at, c->in_len - at);
        c->in_len -= at;
        return 0;
}

static int spawn_worker(NetClient *c) {
        _cleanup_close_pair_ int pair[2] = { -EBADF, -EBADF };
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t none, all;
        char uid[32], gid[32];
        char *argv[] = { c->path, uid, gid, NULL };
        pid_t pid;
        int r;

        snprintf(uid, sizeof(uid), "--uid=%u", (unsigned) c->uid);
        snprintf(gid, sizeof(gid), "--gid=%u", (unsigned) c->gid);
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                return log_error_errno(errno, "Cannot create the network worker's socket: %m");
        if (fcntl(pair[0], F_SETFL, O_NONBLOCK) < 0)
                return log_error_errno(errno, "Cannot set up the network worker's socket: %m");

        sigemptyset(&none);
        sigfillset(&all);
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        /* dup2 onto fd 3 clears its O_CLOEXEC; every other fd of the daemon is O_CLOEXEC. */
        r = posix_spawn_file_actions_adddup2(&fa, pair[1], WORKER_FD);
        if (r == 0)
                r = posix_spawnattr_setsigmask(&attr, &none);
        if (r == 0)
                r = posix_spawnattr_setsigdefault(&attr, &all);
        if (r == 0)
                r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        if (r == 0)
                r = posix_spawn(&pid, c->path, &fa, &attr, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        if (r != 0)
                return log_error_errno(r, "Cannot start the network worker %s: %m", c->path);

        c->pid = c->last_pid = pid;
        c->pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (c->pidfd < 0 ||
            sd_event_add_io(c->event, &c->child, c->pidfd, EPOLLIN, on_child, c) < 0) {
                r = log_error_errno(c->pidfd < 0 ? errno : ENOMEM, "Cannot watch the network worker: %m");
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                c->pid = 0;
                c->pidfd = safe_close(c->pidfd);
                return r;
        }
        (void) sd_event_source_set_description(c->child, "net-worker-pid");
        r = sd_event_add_io(c->event, &c->io, pair[0], EPOLLIN, on_io, c);
        if (r < 0) {
                (void) kill(pid, SIGKILL);
                return log_error_errno(r, "Cannot watch the network worker's socket: %m");
        }
        (void) sd_event_source_set_description(c->io, "net-worker");
        c->fd = TAKE_FD(pair[0]);
        c->last_id = 0;
        c->started_usec = now_usec(CLOCK_MONOTONIC);
        log_debug("Started the network worker %s (PID %d) as %u:%u.", c->path, (int) pid, (unsigned) c->uid,
                  (unsigned) c->gid);
        return 0;
}

int net_client_new(sd_event *event, const char *path, uid_t uid, gid_t gid, NetClient **ret) {
        _cleanup_(net_client_freep) NetClient *c = calloc(1, sizeof(NetClient));
        int r;

        if (!c)
                return log_oom();
        c->event = sd_event_ref(event);
        c->fd = c->pidfd = -EBADF;
        c->uid = uid;
        c->gid = gid;
        c->path = strdup(path);
        if (!c->path)
                return log_oom();
        r = sd_event_add_time(event, &c->restart, CLOCK_MONOTONIC, 0, 10 * USEC_PER_MSEC, on_restart, c);
        if (r < 0)
                return log_error_errno(r, "Cannot add the network worker's restart timer: %m");
        (void) sd_event_source_set_enabled(c->restart, SD_EVENT_OFF);
        (void) sd_event_source_set_description(c->restart, "net-worker-restart");
        r = spawn_worker(c);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

NetClient *net_client_free(NetClient *c) {
        if (!c)
                return NULL;
        while (c->calls) {
                NetCall *q = c->calls;

                call_unlink(q);
                free(q);
        }
        c->io = sd_event_source_disable_unref(c->io);
        c->fd = safe_close(c->fd);
        c->child = sd_event_source_disable_unref(c->child);
        c->pidfd = safe_close(c->pidfd);
        if (c->pid > 0) {
                /* It ends on EOF anyway; killed, it cannot hold the stop up. */
                (void) kill(c->pid, SIGKILL);
                (void) waitpid(c->pid, NULL, 0);
        }
        sd_event_source_disable_unref(c->restart);
        sd_event_unref(c->event);
        net_out_queue_done(&c->out);
        free(c->path);
        return mfree(c);
}

pid_t net_client_pid(NetClient *c) {
        return c && c->fd >= 0 ? c->pid : 0;
}

int net_call_start(NetClient *c, const NetRequest *q, const void *body, net_call_data_t data,
                   net_call_done_t done, void *userdata, NetCall **ret) {
        _cleanup_free_ uint8_t *payload = NULL;
        _cleanup_free_ NetCall *call = NULL;
        int len, r;

        if (!c || c->fd < 0)
                return -ENOTCONN;
        if (c->last_id == UINT32_MAX)
                return -EOVERFLOW;
        payload = malloc(NET_FRAME_PAYLOAD_MAX);
        call = calloc(1, sizeof(NetCall));
        if (!payload || !call)
                return -ENOMEM;
        len = net_request_format(q, payload, NET_FRAME_PAYLOAD_MAX);
        if (len < 0)
                return len;
        call->client = c;
        call->id = ++c->last_id;
        call->data = data;
        call->done = done;
        call->userdata = userdata;
        r = send_frame(c, NET_FRAME_REQUEST, call->id, payload, (size_t) len);
        for (uint64_t at = 0; r >= 0 && at < q->body_len; at += NET_FRAME_PAYLOAD_MAX)
                r = send_frame(c, NET_FRAME_BODY, call->id, (const uint8_t *) body + at,
                               (size_t) MIN(q->body_len - at, (uint64_t) NET_FRAME_PAYLOAD_MAX));
        if (r < 0)
                return r;       /* what was queued is a request the worker completes for nobody */
        call->next = c->calls;
        if (c->calls)
                c->calls->prev = call;
        c->calls = call;
        *ret = TAKE_PTR(call);
        return 0;
}

void net_call_cancel(NetCall *q) {
        NetClient *c;

        if (!q)
                return;
        c = q->client;
        if (c->fd >= 0)
                (void) send_frame(c, NET_FRAME_CANCEL, q->id, NULL, 0);
        call_unlink(q);
        free(q);
}
