/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The egress proxy of a run with network (issue 16): before the execution unit, a socket unit bound
 * inside a network namespace of its own (PrivateNetwork=) and the proxy service that it activates,
 * in one StartTransientUnit (the service, with the socket as its aux unit); the execution unit joins the socket's namespace (unit-props.c). The proxy's
 * stdout is a pipe whose read end is watched here: one event line per connection, each validated
 * (net/proxy-event.h), logged in the record, the journal and the metrics. At the execution's end the
 * units are stopped and the pipe read to EOF, then the record is final. */
#include <fcntl.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include "job-internal.h"
#include "log.h"
#include "net/net-policy.h"
#include "net/proxy-event.h"
#include "net/proxy-log.h"
#include "time-util.h"
#include "unit/unit-props.h"

#define PROXY_EOF_TIMEOUT_USEC (3 * USEC_PER_SEC)
/* The head of a client's request is due within this long (slowloris). */
#define PROXY_HEAD_TIMEOUT_MS 10000

static void proxy_kill(Job *j) {
        if (j->proxy_service)
                (void) sysd_kill_unit(j->ctx->sysd, j->proxy_service, "all", SIGKILL);
}

/* The read end waits in systemd's fd store while the execution runs, so that a restarted sandboxd
 * reads on where this one stopped (FDPOLL=0: a pipe whose writer is gone must stay, its lines are
 * waiting in it), as the control socket does. */
static void proxy_fd_store(Job *j) {
        char name[CONTROL_FD_NAME_MAX], msg[CONTROL_FD_NAME_MAX + 64];

        if (proxy_fd_name(j->exec->id, name, sizeof(name)) < 0)
                return;
        snprintf(msg, sizeof(msg), "FDSTORE=1\nFDPOLL=0\nFDNAME=%s", name);
        if (sd_pid_notify_with_fds(0, false, msg, &j->proxy_fd, 1) > 0)
                j->proxy_fd_stored = true;
}

static void proxy_fd_unstore(Job *j) {
        char name[CONTROL_FD_NAME_MAX], msg[CONTROL_FD_NAME_MAX + 64];

        if (!j->proxy_fd_stored || proxy_fd_name(j->exec->id, name, sizeof(name)) < 0)
                return;
        snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", name);
        (void) sd_notify(false, msg);
        j->proxy_fd_stored = false;
}

/* The proxy's log has ended: when it had more entries than the journal got one by one, their total. */
static void log_network_total(Job *j) {
        const Execution *x = j->exec;

        if (x->network && x->network->requests_total > j->ctx->config->net_max_logged_requests)
                (void) sd_journal_send("MESSAGE=Execution %s: %" PRIu64 " requests through the egress proxy in all, "
                                       "%zu logged one by one", x->id, x->network->requests_total,
                                       x->network->n_entries,
                                       "PRIORITY=%i", LOG_INFO,
                                       "SANDBOXD_EXECUTION_ID=%s", execution_public_id(x),
                                       "SANDBOXD_RECORD_ID=%s", x->id,
                                       "SANDBOXD_NET_REQUESTS_TOTAL=%" PRIu64, x->network->requests_total, NULL);
}

static void proxy_done_reading(Job *j) {
        bool was_stopping = j->proxy_stopping;

        if (j->proxy_fd >= 0)
                log_network_total(j);
        j->proxy_src = sd_event_source_disable_unref(j->proxy_src);
        j->proxy_timeout_src = sd_event_source_disable_unref(j->proxy_timeout_src);
        j->proxy_fd = safe_close(j->proxy_fd);
        proxy_fd_unstore(j);
        j->proxy_buf = mfree(j->proxy_buf);
        j->proxy_len = 0;
        if (was_stopping && (j->waiting & JOB_WAIT_PROXY)) {
                j->waiting &= ~JOB_WAIT_PROXY;
                job_finalize(j);
        }
}

static void proxy_protocol_error(Job *j, const char *why) {
        log_warning("%s: the egress proxy wrote a line that is not an event (%s): killing it", j->exec->id, why);
        if (j->exec->network)
                (void) net_log_set_note(j->exec->network, "proxy protocol error");
        (void) sd_journal_send("MESSAGE=Execution %s: egress proxy protocol error (%s), proxy killed", j->exec->id, why,
                               "PRIORITY=%i", LOG_WARNING,
                               "SANDBOXD_EXECUTION_ID=%s", execution_public_id(j->exec),
                               "SANDBOXD_RECORD_ID=%s", j->exec->id,
                               NULL);
        proxy_kill(j);
        /* Nothing more is read from it: what it says from now on is not believed. */
        j->proxy_src = sd_event_source_disable_unref(j->proxy_src);
        j->proxy_fd = safe_close(j->proxy_fd);
        proxy_fd_unstore(j);
        if (j->proxy_stopping)
                proxy_done_reading(j);
}

/* The log on record a second after its first unwritten entry (not at each one: a program opening
 * a hundred connections must not cost a hundred writes of the record), so that a restart loses at
 * most that second of it. */
static int on_proxy_persist(sd_event_source *s, uint64_t usec, void *userdata) {
        Job *j = userdata;

        j->proxy_persist_src = sd_event_source_disable_unref(j->proxy_persist_src);
        if (j->state == JOB_RUNNING)
                job_persist_async(j);
        return 0;
}

static void proxy_event(Job *j, const NetLogEntry *e) {
        const Execution *x = j->exec;
        uint64_t max = j->ctx->config->net_max_logged_requests;

        if (x->network && net_log_append(x->network, e, max) < 0)
                log_oom();
        if (!j->proxy_persist_src)
                (void) sd_event_add_time_relative(j->ctx->event, &j->proxy_persist_src, CLOCK_MONOTONIC, USEC_PER_SEC,
                                                  100 * USEC_PER_MSEC, on_proxy_persist, j);
        metrics_network_request(j->ctx->metrics, e->decision);
        /* The journal, like the record, gets the first MaxLoggedRequests= entries one by one: a
         * program that opens connections in a loop must not flood it (journald's rate limit would
         * then drop the daemon's other messages). The rest are counted, and the total is logged at
         * the end (log_network_total()). */
        if (x->network && x->network->requests_total > max) {
                if (x->network->requests_total == max + 1)
                        (void) sd_journal_send("MESSAGE=Execution %s: more than %" PRIu64 " requests through the egress "
                                               "proxy; the others are counted, not logged one by one", x->id, max,
                                               "PRIORITY=%i", LOG_NOTICE,
                                               "SANDBOXD_EXECUTION_ID=%s", execution_public_id(x),
                                               "SANDBOXD_RECORD_ID=%s", x->id, NULL);
                return;
        }
        (void) sd_journal_send("MESSAGE=Execution %s: %s %s:%u %s%s%s", x->id, e->method[0] ? e->method : "-",
                               e->host[0] ? e->host : "-", e->port, net_decision_to_string(e->decision),
                               e->reason[0] ? ": " : "", e->reason,
                               "PRIORITY=%i", LOG_INFO,
                               "SANDBOXD_EXECUTION_ID=%s", execution_public_id(x),
                               "SANDBOXD_RECORD_ID=%s", x->id,
                               "SANDBOXD_NET_HOST=%s", e->host,
                               "SANDBOXD_NET_PORT=%u", e->port,
                               "SANDBOXD_NET_METHOD=%s", e->method,
                               "SANDBOXD_NET_DECISION=%s", net_decision_to_string(e->decision),
                               "SANDBOXD_NET_REASON=%s", e->reason,
                               "SANDBOXD_NET_ADDRESS=%s", e->address,
                               "SANDBOXD_NET_BYTES_UP=%" PRIu64, e->bytes_up,
                               "SANDBOXD_NET_BYTES_DOWN=%" PRIu64, e->bytes_down,
                               NULL);
}

/* Lines out of the buffer; false after a protocol error. */
static bool proxy_drain_lines(Job *j) {
        size_t start = 0;

        for (;;) {
                char *nl = memchr(j->proxy_buf + start, '\n', j->proxy_len - start);
                NetLogEntry e;
                const char *why;
                int r;

                if (!nl)
                        break;
                r = proxy_event_parse(j->proxy_buf + start, (size_t) (nl - (j->proxy_buf + start)), &e, &why);
                if (r == -ENOMEM)
                        log_oom();
                else if (r < 0) {
                        size_t len = (size_t) (nl - (j->proxy_buf + start));

                        /* Printable bytes only, and not all of it: the line is hostile. */
                        for (size_t i = 0; i < len; i++)
                                if ((unsigned char) j->proxy_buf[start + i] < 0x20 ||
                                    (unsigned char) j->proxy_buf[start + i] > 0x7e)
                                        j->proxy_buf[start + i] = '?';
                        log_debug("%s: refused event line: %.*s", j->exec->id, (int) MIN(len, (size_t) 256),
                                  j->proxy_buf + start);
                        proxy_protocol_error(j, why ?: "bad line");
                        return false;
                } else
                        proxy_event(j, &e);
                start = (size_t) (nl - j->proxy_buf) + 1;
        }
        memmove(j->proxy_buf, j->proxy_buf + start, j->proxy_len - start);
        j->proxy_len -= start;
        if (j->proxy_len >= PROXY_EVENT_LINE_MAX) {
                proxy_protocol_error(j, "a line longer than 2048 bytes");
                return false;
        }
        return true;
}

static int on_proxy_pipe(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Job *j = userdata;

        for (unsigned round = 0; round < 16; round++) {
                ssize_t n = read(fd, j->proxy_buf + j->proxy_len, PROXY_EVENT_LINE_MAX - j->proxy_len);

                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return 0;
                        log_warning_errno(errno, "%s: cannot read the egress proxy's events: %m", j->exec->id);
                        proxy_done_reading(j);
                        return 0;
                }
                if (n == 0) {
                        /* Either may make the job final and free it: nothing of j after. */
                        if (j->proxy_len > 0)
                                proxy_protocol_error(j, "a line without its newline at the end");
                        else
                                proxy_done_reading(j);
                        return 0;
                }
                j->proxy_len += (size_t) n;
                if (!proxy_drain_lines(j))
                        return 0;
        }
        return 0;       /* more next time round the loop: fair to the other sources */
}

/* Shutdown (job_quiesce()): the pipe waits in the fd store for the next instance, which must find
 * a line's start at its head. The proxy writes each line at once, and a line (at most
 * PROXY_EVENT_LINE_MAX bytes) is shorter than PIPE_BUF, so the rest of a line begun is in the pipe:
 * it is read byte by byte, up to its newline and no further. Then nothing more is read; what the
 * log has goes on record as the job is freed (job_network_release()). */
void job_network_quiesce(Job *j) {
        if (j->proxy_fd >= 0 && j->proxy_buf)
                while (j->proxy_len > 0 && j->proxy_len < PROXY_EVENT_LINE_MAX) {
                        ssize_t n = read(j->proxy_fd, j->proxy_buf + j->proxy_len, 1);

                        if (n <= 0)
                                break;
                        if (j->proxy_buf[j->proxy_len++] == '\n') {
                                (void) proxy_drain_lines(j);
                                break;
                        }
                }
        if (j->proxy_src)
                (void) sd_event_source_set_enabled(j->proxy_src, SD_EVENT_OFF);
        j->proxy_timeout_src = sd_event_source_disable_unref(j->proxy_timeout_src);
}

static int on_proxy_eof_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Job *j = userdata;

        log_warning("%s: the egress proxy's event pipe did not end 3 s after its units were stopped: its log may "
                    "be incomplete", j->exec->id);
        if (j->exec->network)
                (void) net_log_set_note(j->exec->network, "the proxy's log did not end in time: it may be incomplete");
        proxy_kill(j);
        proxy_done_reading(j);
        return 0;
}

/* The proxy units' own events: nothing to do but hold the names (the sweep leaves watched units). */
static const SysdUnitEvents proxy_unit_events = {};

static int proxy_names(Job *j) {
        if (!j->proxy_socket)
                j->proxy_socket = proxy_unit_name(j->exec->id, ".socket");
        if (!j->proxy_service)
                j->proxy_service = proxy_unit_name(j->exec->id, ".service");
        if (!j->proxy_socket || !j->proxy_service)
                return -ENOMEM;
        if (!j->watch_proxy_socket && sysd_watch(j->ctx->sysd, j->proxy_socket, &proxy_unit_events, j,
                                                 &j->watch_proxy_socket) < 0)
                return -ENOMEM;
        if (!j->watch_proxy_service && sysd_watch(j->ctx->sysd, j->proxy_service, &proxy_unit_events, j,
                                                  &j->watch_proxy_service) < 0)
                return -ENOMEM;
        return 0;
}

static void on_proxy_started(void *userdata, int r, const char *message) {
        Job *j = userdata;

        j->call_start = sysd_call_free(j->call_start);
        if (j->proxy_stopping)
                return;         /* the job ended meanwhile (its finish stopped the units) */
        if (r < 0) {
                log_error("%s: StartTransientUnit(%s) failed: %s", j->exec->id, j->proxy_service, strna(message));
                job_fail_internal(j, "the egress proxy could not be started");
                return;
        }
        if (j->cancel_requested) {
                job_end_before_unit(j);
                return;
        }
        /* Its start job is queued, and the socket's before it: the execution unit's After= orders
         * it behind the socket. */
        job_start_service(j);
}

void job_network_start(Job *j) {
        Context *ctx = j->ctx;
        const Config *c = ctx->config;
        const NetPolicy *np = ctx->net_policy;
        _cleanup_close_pair_ int pipefd[2] = { -EBADF, -EBADF };
        _cleanup_close_ int errfd = -EBADF;
        UnitProps sock = {}, svc = {};
        ProxyPlan plan;
        int r;

        if (proxy_names(j) < 0) {
                job_fail_internal(j, "out of memory");
                return;
        }
        if (pipe2(pipefd, O_CLOEXEC) < 0 || fcntl(pipefd[0], F_SETFL, O_NONBLOCK) < 0) {
                log_error_errno(errno, "%s: cannot create the egress proxy's pipe: %m", j->exec->id);
                job_fail_internal(j, "cannot create the egress proxy's pipe");
                return;
        }
        /* The proxy's stderr: a journal stream of its own, apart from the event pipe. */
        errfd = sd_journal_stream_fd("sandboxd-proxy", LOG_INFO, false);
        if (errfd < 0) {
                log_error_errno(errfd, "%s: cannot open a journal stream for the egress proxy: %m", j->exec->id);
                job_fail_internal(j, "cannot open a journal stream for the egress proxy");
                return;
        }
        j->proxy_buf = malloc(PROXY_EVENT_LINE_MAX);
        if (!j->proxy_buf) {
                job_fail_internal(j, "out of memory");
                return;
        }
        plan = (ProxyPlan) {
                .execution_id = j->exec->id,
                .socket_unit = j->proxy_socket,
                .proxy = ctx->proxy,
                .root = ctx->proxy_root,
                .empty = ctx->proxy_empty,
                .allow = j->request->network_allow,
                .n_allow = j->request->n_network_allow,
                .permit = np ? np->permit_strings : NULL,
                .n_permit = np ? np->n_permit : 0,
                .hosts = np ? np->hosts : NULL,
                .n_hosts = np ? np->n_hosts : 0,
                .max_bytes = c->net_max_transfer_mb * 1024 * 1024,
                .max_connections = c->net_max_connections,
                .memory_max = proxy_memory_max(c->net_max_connections),
                .connect_timeout_ms = c->net_connect_timeout_sec * MSEC_PER_SEC,
                .idle_timeout_ms = c->net_idle_timeout_sec * MSEC_PER_SEC,
                .head_timeout_ms = PROXY_HEAD_TIMEOUT_MS,
                .stdout_fd = pipefd[1],
                .stderr_fd = errfd,
        };
        r = unit_props_proxy_socket(&plan, &sock);
        if (r >= 0)
                r = unit_props_proxy_service(&plan, &svc);
        if (r >= 0) {
                /* From here the units may exist: stopped, and the pipe read, before the record is final.
                 * The service is the unit started, the socket its aux unit (pulled in by Requires=):
                 * an aux unit created without a job of its own is idle, and systemd releases an idle
                 * service's stdio fds at once (v252: service_release_resources()), the pipe with them. */
                j->waiting |= JOB_WAIT_PROXY;
                r = sysd_start_transient_aux(ctx->sysd, j->proxy_service, &svc, j->proxy_socket, &sock,
                                             on_proxy_started, j, &j->call_start);
        }
        unit_props_done(&sock);
        unit_props_done(&svc);
        if (r < 0) {
                log_error_errno(r, "%s: cannot call StartTransientUnit(%s): %m", j->exec->id, j->proxy_socket);
                job_fail_internal(j, "cannot start the egress proxy");
                return;
        }
        /* sd-bus duplicated the write end into the message; ours closes here, so that EOF comes once
         * the proxy (and systemd's copy) are gone. */
        j->proxy_fd = TAKE_FD(pipefd[0]);
        proxy_fd_store(j);
        if (sd_event_add_io(ctx->event, &j->proxy_src, j->proxy_fd, EPOLLIN, on_proxy_pipe, j) < 0) {
                log_error("%s: cannot watch the egress proxy's pipe", j->exec->id);
                j->proxy_fd = safe_close(j->proxy_fd);
        }
}

int job_network_adopt(Job *j) {
        if (!j->exec->network)
                return 0;
        if (proxy_names(j) < 0)
                return -ENOMEM;
        /* The units are stopped at the end; the pipe, if the fd store kept it, comes with
         * job_network_take_fd(). */
        j->waiting |= JOB_WAIT_PROXY;
        j->proxy_stopping = false;
        return 0;
}

void job_network_take_fd(Job *j, int fd) {
        if (!j->exec->network) {
                safe_close(fd);
                return;
        }
        if (fd >= 0) {
                j->proxy_fd = fd;
                j->proxy_fd_stored = true;
                j->proxy_buf = malloc(PROXY_EVENT_LINE_MAX);
                if (j->proxy_buf &&
                    sd_event_add_io(j->ctx->event, &j->proxy_src, j->proxy_fd, EPOLLIN, on_proxy_pipe, j) >= 0) {
                        /* The log is on record up to a second before the restart (on_proxy_persist()). */
                        (void) net_log_set_note(j->exec->network,
                                                "sandboxd restarted while this ran: requests of its last second "
                                                "before the restart may be missing");
                        return;
                }
                j->proxy_fd = safe_close(j->proxy_fd);
                proxy_fd_unstore(j);
                j->proxy_buf = mfree(j->proxy_buf);
        }
        (void) net_log_set_note(j->exec->network,
                                "sandboxd restarted while this ran: its requests after the restart are not logged");
}

static void stop_units(Job *j) {
        if (j->proxy_service)
                (void) sysd_stop_unit(j->ctx->sysd, j->proxy_service, NULL, NULL);
        if (j->proxy_socket)
                (void) sysd_stop_unit(j->ctx->sysd, j->proxy_socket, NULL, NULL);
}

bool job_network_finish(Job *j) {
        if (!(j->waiting & JOB_WAIT_PROXY))
                return false;
        if (j->proxy_stopping)
                return true;    /* already under way */
        j->proxy_stopping = true;
        /* The call that creates the units may still be on its way: it goes on, and the stop follows
         * it in systemd's queue. */
        stop_units(j);
        if (j->proxy_fd < 0) {
                j->waiting &= ~JOB_WAIT_PROXY;
                return false;
        }
        if (sd_event_add_time_relative(j->ctx->event, &j->proxy_timeout_src, CLOCK_MONOTONIC, PROXY_EOF_TIMEOUT_USEC,
                                       10 * USEC_PER_MSEC, on_proxy_eof_timeout, j) < 0) {
                j->proxy_fd = safe_close(j->proxy_fd);
                j->waiting &= ~JOB_WAIT_PROXY;
                return false;
        }
        return true;
}

void job_network_release(Job *j) {
        /* At sandboxd's stop, what the log has that is not on record yet goes there now, so that a
         * restart loses none of it (the lines still in the pipe wait there for the next instance). */
        if (j->ctx->stopping && j->proxy_persist_src && j->state == JOB_RUNNING)
                (void) job_persist(j);
        /* At sandboxd's stop the program goes on running (a restart adopts it), and so does its
         * proxy: the adopting instance stops it at the end, or the sweep if nobody adopts it. */
        if ((j->waiting & JOB_WAIT_PROXY) && !j->proxy_stopping && !j->ctx->stopping)
                stop_units(j);
        j->waiting &= ~JOB_WAIT_PROXY;
        j->proxy_src = sd_event_source_disable_unref(j->proxy_src);
        j->proxy_timeout_src = sd_event_source_disable_unref(j->proxy_timeout_src);
        j->proxy_persist_src = sd_event_source_disable_unref(j->proxy_persist_src);
        j->proxy_fd = safe_close(j->proxy_fd);
        /* At sandboxd's stop it stays in the fd store for the next instance. */
        if (!j->ctx->stopping)
                proxy_fd_unstore(j);
        j->proxy_buf = mfree(j->proxy_buf);
        j->watch_proxy_socket = sysd_watch_free(j->watch_proxy_socket);
        j->watch_proxy_service = sysd_watch_free(j->watch_proxy_service);
        j->proxy_socket = mfree(j->proxy_socket);
        j->proxy_service = mfree(j->proxy_service);
}
