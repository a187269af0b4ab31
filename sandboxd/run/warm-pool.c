/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "exec-protocol.h"
#include "log.h"
#include "model/environment.h"
#include "model/warm-policy.h"
#include "strv.h"
#include "time-util.h"
#include "unit/unit-props.h"
#include "warm-pool.h"
#include "workspace/workspace.h"

/* Units starting at once: a burst of starts (the pool filling at boot, after a reload) would
 * otherwise compete with the executions being served for PID 1. */
#define WARM_STARTS_MAX 2
/* How often the pool looks at itself: refills that had to wait (no workspace ready, a backoff) and
 * units that aged out. */
#define WARM_TICK_USEC (1 * USEC_PER_SEC)
#define WARM_BACKOFF_MIN_USEC (100 * USEC_PER_MSEC)
/* A claim's replacement is started this long after the claim, or as the claimed run ends if that is
 * sooner: a unit starting while the program runs competes with it for PID 1 and the CPUs (the start
 * costs PID 1 and its forked child ~40 ms of CPU, the preload more), and most programs are done by
 * then. A unit takes longer than this to become ready anyway. */
#define WARM_REFILL_DELAY_USEC (25 * USEC_PER_MSEC)
/* A strong unit's: gVisor takes a quarter of a second or more to start the program, all of it CPU;
 * the replacement waits for the run's end, or this long. */
#define WARM_STRONG_REFILL_DELAY_USEC (2 * USEC_PER_SEC)
#define WARM_BACKOFF_MAX_USEC (30 * USEC_PER_SEC)
/* A ready line, or the start of a setup failure's report (logged, then the unit is replaced). */
#define WARM_LINE_MAX 256

typedef enum WarmState {
        WARM_STARTING,           /* StartTransientUnit sent: waiting for the start job and the ready line */
        WARM_READY,              /* claimable */
        WARM_RETIRING,           /* being stopped; freed once systemd says it is gone */
} WarmState;

/* The kinds of units: the standard tier's plain and preloaded ones, the strong tier's. */
enum {
        KIND_ANY = -2,
        KIND_STANDARD = -1,      /* plain or preloaded */
        KIND_PLAIN = 0,
        KIND_PRELOADED = 1,
        KIND_STRONG = 2,
};

typedef enum WarmRetire {
        RETIRE_DIED,             /* it ended by itself, or never started */
        RETIRE_AGED,             /* MaxAgeSec= */
        RETIRE_DRAIN,            /* a reload or a stop */
} WarmRetire;

/* A retiring unit whose end systemd never reports is forgotten after this long (its failed state is
 * reset; the sweep stops what might be left). */
#define WARM_RETIRE_FORGET_USEC (30 * USEC_PER_SEC)

typedef struct WarmUnit WarmUnit;
struct WarmUnit {
        WarmPool *pool;
        WarmUnit *next;
        WarmState state;
        const Language *language;
        char *unit_name, *workspace, *mount_name;
        int ctl_fd;
        sd_event_source *ctl_src;
        uint8_t *out;            /* header and filter, still to be sent */
        size_t out_len, out_off;
        char line[WARM_LINE_MAX + 1];
        size_t line_len;
        SysdCall *call;
        SysdWatch *watch;
        SysdWatch *watch_mount;  /* the workspace's mount: watched, so the sweep leaves it alone */
        bool start_ended;        /* the start job is over: done, failed, or canceled by our stop (or
                                  * there never was one); until then an "inactive" is the unit as
                                  * created, not its end */
        bool seen_end;           /* the last ActiveState systemd reported was inactive or failed */
        bool seen_failed;        /* ... and it was failed */
        bool died;               /* retired because it ended by itself (metrics) */
        bool preloaded;          /* its runtime imported PythonPreload= (else a plain one) */
        bool strong;             /* the strong tier's: its runtime starts under gVisor after the claim */
        char *environment;       /* the environment whose layer it has (NULL: none) */
        bool fd_stored;          /* ctl_fd is in systemd's fd store (control_fd_name()) */
        uint64_t asked_mono, ready_mono, retired_mono;
        uint64_t lease;          /* of the workspace, from the workspace pool */
        Limits limits;
};

struct WarmPool {
        Context *ctx;
        sysd_done_t stop_cb;     /* at stop: called as each unit is gone */
        void *stop_userdata;
        WarmUnit *list;
        sd_event_source *timer;
        sd_event_source *refill; /* one-shot: the replacement of claimed units (WARM_REFILL_DELAY_USEC) */
        uint64_t retry_after;    /* CLOCK_MONOTONIC: no start before (starts failed) */
        uint64_t strong_hold;    /* CLOCK_MONOTONIC: no strong unit started before (one was claimed) */
        uint64_t backoff;
};

void warm_claim_done(WarmClaim *c) {
        free(c->unit_name);
        free(c->workspace);
        free(c->mount_name);
        c->ctl_fd = safe_close(c->ctl_fd);
        *c = (WarmClaim) { .ctl_fd = -EBADF };
}

/* The control socket of a unit goes into systemd's fd store before the unit is started, as a cold
 * execution's does (job.c): a sandboxd killed after a claim finds it there, under the name the
 * record's unit gives. Here, ahead of demand, PID 1's handling of it is off the request's path. */
static void store_control_fd(WarmUnit *u, int fd) {
        char name[CONTROL_FD_NAME_MAX], msg[CONTROL_FD_NAME_MAX + 64];

        if (control_fd_name(NULL, u->unit_name, name, sizeof(name)) < 0)
                return;
        snprintf(msg, sizeof(msg), "FDSTORE=1\nFDPOLL=0\nFDNAME=%s", name);
        u->fd_stored = sd_pid_notify_with_fds(0, false, msg, &fd, 1) > 0;
}

static void unstore_control_fd(WarmUnit *u) {
        char name[CONTROL_FD_NAME_MAX], msg[CONTROL_FD_NAME_MAX + 64];

        if (!u->fd_stored)
                return;
        u->fd_stored = false;
        if (control_fd_name(NULL, u->unit_name, name, sizeof(name)) < 0)
                return;
        snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", name);
        (void) sd_notify(false, msg);
}

static WarmUnit *warm_unit_free(WarmUnit *u) {
        if (!u)
                return NULL;
        unstore_control_fd(u);
        language_unref(u->language);
        u->ctl_src = sd_event_source_disable_unref(u->ctl_src);
        u->ctl_fd = safe_close(u->ctl_fd);
        u->call = sysd_call_free(u->call);
        u->watch = sysd_watch_free(u->watch);
        u->watch_mount = sysd_watch_free(u->watch_mount);
        free(u->out);
        free(u->unit_name);
        free(u->workspace);
        free(u->mount_name);
        free(u->environment);
        free(u);
        return NULL;
}

static void pool_unlink(WarmPool *p, WarmUnit *u) {
        for (WarmUnit **x = &p->list; *x; x = &(*x)->next)
                if (*x == u) {
                        *x = u->next;
                        u->next = NULL;
                        return;
                }
}

static uint64_t now_mono(WarmPool *p) {
        uint64_t t = 0;

        (void) sd_event_now(p->ctx->event, CLOCK_MONOTONIC, &t);
        return t;
}

static void pool_failed_start(WarmPool *p) {
        p->backoff = p->backoff ? MIN(p->backoff * 2, (uint64_t) WARM_BACKOFF_MAX_USEC) : WARM_BACKOFF_MIN_USEC;
        p->retry_after = now_mono(p) + p->backoff;
}

static void on_unit_gone(WarmUnit *u, const char *state) {
        WarmPool *p = u->pool;


        /* At stop every call is answered before sandboxd exits (systemd drops the calls of a client
         * that is gone): the reset's answer is this unit's end for the manager. */
        if (p->stop_cb && (!p->ctx->sysd || !(!state || streq(state, "failed")) ||
                           sysd_reset_failed_unit_cb(p->ctx->sysd, u->unit_name, p->stop_cb, p->stop_userdata) < 0))
                p->stop_cb(p->stop_userdata, 0, NULL);
        else if (!p->stop_cb && p->ctx->sysd && (!state || streq(state, "failed")))
                (void) sysd_reset_failed_unit(p->ctx->sysd, u->unit_name);
        pool_unlink(p, u);
        warm_unit_free(u);
}

/* Done with this unit before any claim: the service is stopped (its processes killed: KillSignal=
 * SIGKILL), and its workspace. Unless systemd said already that it is gone (gone_state), it stays in
 * the list, watched, until it is: the sweep never sees it as a leftover, and its failed state is
 * reset. A unit that died while starting backs the pool off. */
static void warm_unit_retire(WarmUnit *u, WarmRetire why, const char *gone_state) {
        WarmPool *p = u->pool;
        Sysd *sysd = p->ctx->sysd;

        if (u->state == WARM_RETIRING)
                return;
        if (u->state == WARM_STARTING && why == RETIRE_DIED)
                pool_failed_start(p);
        u->died = why == RETIRE_DIED;
        u->state = WARM_RETIRING;
        u->retired_mono = now_mono(p);
        if (why != RETIRE_DRAIN)
                metrics_pool_retired(p->ctx->metrics, why == RETIRE_DIED);
        u->ctl_src = sd_event_source_disable_unref(u->ctl_src);
        u->ctl_fd = safe_close(u->ctl_fd);
        /* The workspace is the workspace pool's again (or stopped) from here on. */
        u->watch_mount = sysd_watch_free(u->watch_mount);
        if (sysd) {
                if (!gone_state)
                        (void) sysd_stop_unit(sysd, u->unit_name, NULL, NULL);
                (void) sysd_unref_unit(sysd, u->unit_name);
                /* The workspace pool unmounts it (and mounts a fresh one): the runtime ran in it. At
                 * stop, the answer counts (warm_pool_stop_all()). */
                if (u->mount_name && !workspace_pool_give_back(p->ctx->pool, u->workspace, u->mount_name, u->lease, false) &&
                    (!p->stop_cb || sysd_stop_unit(sysd, u->mount_name, p->stop_cb, p->stop_userdata) < 0)) {
                        if (p->stop_cb)
                                p->stop_cb(p->stop_userdata, 0, NULL);
                        else
                                (void) sysd_stop_unit(sysd, u->mount_name, NULL, NULL);
                }
        }
        if (!sysd || !u->watch || gone_state)
                on_unit_gone(u, gone_state ?: "inactive");
}

static void on_warm_job_removed(void *userdata, const char *unit, const char *result) {
        WarmUnit *u = userdata;

        /* The first job to end is the start job (a stop of ours replaces it: "canceled"). */
        if (u->start_ended)
                return;
        u->start_ended = true;
        if (u->state == WARM_RETIRING) {
                /* Retired while starting: its end is known only now. Still deactivating, it reports
                 * its end as a state change later. */
                if (u->seen_end)
                        on_unit_gone(u, u->seen_failed ? "failed" : "inactive");
                return;
        }
        if (!streq(result, "done")) {
                log_warning("Warm unit %s: start job ended with '%s', replaced.", unit, result);
                warm_unit_retire(u, RETIRE_DIED, u->seen_end ? (u->seen_failed ? "failed" : "inactive") : NULL);
                return;
        }
}

static void on_warm_active_state(void *userdata, const char *unit, const char *state) {
        WarmUnit *u = userdata;

        u->seen_failed = streq(state, "failed");
        u->seen_end = u->seen_failed || streq(state, "inactive");
        if (!u->seen_end)
                return;
        /* A transient unit is created inactive, before its start job runs: only an end after the
         * start job counts (a failed start is the job's result). Taking that first "inactive" of a
         * unit retired while starting for its end left it to fail after sandboxd had exited, with
         * nobody to reset it (seen as a failed warm unit after a reload followed by a stop). */
        if (!u->start_ended)
                return;
        if (u->state == WARM_RETIRING) {
                on_unit_gone(u, state);
                return;
        }
        log_warning("Warm unit %s ended before a claim (%s), replaced.", unit, state);
        warm_unit_retire(u, RETIRE_DIED, state);
}

static const SysdUnitEvents warm_events = { .job_removed = on_warm_job_removed, .active_state = on_warm_active_state };
/* Nothing to hear: the service's end covers the mount's. */
static const SysdUnitEvents mount_events = {};

static void on_start_reply(void *userdata, int r, const char *message) {
        WarmUnit *u = userdata;

        u->call = sysd_call_free(u->call);
        if (r < 0) {
                log_warning("Warm unit %s could not be started: %s", u->unit_name, strna(message));
                /* No unit: nothing to wait for (retired already: it is gone now). */
                u->start_ended = true;
                u->watch = sysd_watch_free(u->watch);
                if (u->state == WARM_RETIRING)
                        on_unit_gone(u, "inactive");
                else
                        warm_unit_retire(u, RETIRE_DIED, NULL);
        }
}

static void warm_unit_ready(WarmUnit *u) {
        WarmPool *p = u->pool;

        u->state = WARM_READY;
        u->ready_mono = now_mono(p);
        p->backoff = 0;
        metrics_pool_refill(p->ctx->metrics, u->ready_mono - u->asked_mono);
        log_debug("Warm unit %s (%s) ready after %" PRIu64 " ms.", u->unit_name, u->language->name,
                  (u->ready_mono - u->asked_mono) / USEC_PER_MSEC);
        /* Nothing else may come before the claim: EOF or bytes now mean it ended. */
        (void) sd_event_source_set_io_events(u->ctl_src, EPOLLIN);
}

static int on_warm_control(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        WarmUnit *u = userdata;
        size_t want = strlen(EXEC_READY_LINE);

        if ((revents & EPOLLOUT) && u->out_off < u->out_len) {
                ssize_t n = send(fd, u->out + u->out_off, u->out_len - u->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

                if (n < 0 && errno != EAGAIN && errno != EINTR) {
                        warm_unit_retire(u, RETIRE_DIED, NULL);
                        return 0;
                }
                if (n > 0)
                        u->out_off += (size_t) n;
                if (u->out_off >= u->out_len) {
                        u->out = mfree(u->out);
                        (void) sd_event_source_set_io_events(s, EPOLLIN);
                }
        }
        if (!(revents & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                return 0;

        if (u->state == WARM_READY) {
                /* A ready unit says nothing until claimed: it ended (or broke the protocol). */
                log_warning("Warm unit %s ended its control channel before a claim, replaced.", u->unit_name);
                warm_unit_retire(u, RETIRE_DIED, NULL);
                return 0;
        }
        /* The ready line, read only as far as it goes, so nothing beyond it is consumed. */
        while (u->line_len < want) {
                ssize_t n = recv(fd, u->line + u->line_len, want - u->line_len, MSG_DONTWAIT);

                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return 0;
                if (n <= 0)
                        break;
                u->line_len += (size_t) n;
                if (memcmp(u->line, EXEC_READY_LINE, u->line_len) != 0)
                        break;
        }
        if (u->line_len == want && memcmp(u->line, EXEC_READY_LINE, want) == 0) {
                warm_unit_ready(u);
                return 0;
        }
        /* Not the ready line: sandbox-exec's setup failed and this is its report. Its first line,
         * printable, for the journal. */
        {
                ssize_t n = recv(fd, u->line + u->line_len, WARM_LINE_MAX - u->line_len, MSG_DONTWAIT);

                if (n > 0)
                        u->line_len += (size_t) n;
                u->line[u->line_len] = '\0';
                for (size_t i = 0; i < u->line_len; i++)
                        if ((unsigned char) u->line[i] < 0x20 || (unsigned char) u->line[i] >= 0x7f)
                                u->line[i] = ' ';
                log_warning("Warm unit %s (%s) failed before it was ready: %s", u->unit_name, u->language->name,
                            u->line_len > 0 ? u->line : "no report");
        }
        warm_unit_retire(u, RETIRE_DIED, NULL);
        return 0;
}

/* The modules a runtime imports before its claim, comma-separated: the environment's Preload=, or
 * without one, PythonPreload= for a preloaded unit. NULL on OOM; "" for none. */
static char *preload_list(const Config *c, const Environment *env, bool preloaded) {
        char *const *mods = env ? env->preload : preloaded ? c->pool_python_preload : NULL;
        size_t n = env ? env->n_preload : strv_length(mods), len = 1;
        char *s;

        for (size_t i = 0; i < n; i++)
                len += strlen(mods[i]) + 1;
        s = calloc(1, len);
        if (!s)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        strcat(s, ",");
                strcat(s, mods[i]);
        }
        return s;
}

static int warm_unit_start(WarmPool *p, const Language *l, const Environment *env, Workspace *w, int kind) {
        Context *ctx = p->ctx;
        const Config *c = ctx->config;
        const SeccompFilter *f = context_seccomp_filter(ctx, l);
        _cleanup_close_pair_ int ctl[2] = { -EBADF, -EBADF };
        _cleanup_free_ char *preload = NULL;
        UnitProps props = {};
        CgroupBind cg[CGROUP_ROOTS_MAX];
        WarmUnit *u;
        char header[EXEC_HEADER_MAX + 1];
        int hl, r;

        if (!f)
                return -EINVAL;
        u = calloc(1, sizeof(WarmUnit));
        if (!u)
                return -ENOMEM;
        u->pool = p;
        u->language = language_ref(l);
        u->ctl_fd = -EBADF;
        u->state = WARM_STARTING;
        u->workspace = TAKE_PTR(w->path);
        u->mount_name = TAKE_PTR(w->mount_name);
        u->lease = w->lease;
        workspace_free(w);
        u->unit_name = warm_unit_name_generate();
        /* The pool's limits; the timeout is only the backstop's (RuntimeMaxSec=): the unit waits at
         * most MaxAgeSec= for its claim, then runs at most MaxTimeoutMS=. */
        u->limits = c->defaults;
        u->limits.timeout_ms = c->pool_max_age_sec * MSEC_PER_SEC + c->ceilings.timeout_ms;
        u->preloaded = kind == KIND_PRELOADED && !env;
        u->strong = kind == KIND_STRONG;
        if (env || u->preloaded) {
                preload = preload_list(c, env, u->preloaded);
                if (!preload)
                        goto oom;
        }
        if (env && !(u->environment = strdup(env->name)))
                goto oom;
        if (!u->unit_name)
                goto oom;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) < 0) {
                r = -errno;
                goto fail;
        }
        (void) fcntl(ctl[0], F_SETFL, O_NONBLOCK);

        hl = exec_header_format(header, sizeof(header), f->bpf_len, 0, 0);
        if (hl < 0) {
                r = hl;
                goto fail;
        }
        u->out_len = (size_t) hl + f->bpf_len;
        u->out = malloc(u->out_len);
        if (!u->out)
                goto oom;
        memcpy(u->out, header, (size_t) hl);
        memcpy(u->out + hl, f->bpf, f->bpf_len);

        r = cgroup_binds_build(ctx->cgroups, ctx->n_cgroups, u->unit_name, cg);
        if (r < 0)
                goto fail;
        {
                const char *id = u->unit_name + strlen("sandboxd-");
                _cleanup_free_ char *unit_id = strndup(id, strlen(id) - strlen(".service"));
                UnitPlan plan = {
                        .execution_id = unit_id ?: "warm",
                        .language = l,
                        .limits = u->limits,
                        /* An environment's variables are there as its runtime starts (the claim sends
                         * them again, merged with the request's). */
                        .user_env = env ? env->env : NULL,
                        .n_user_env = env ? env->n_env : 0,
                        .usr_layer = ctx->usr_layer,
                        .environment_layer = env ? env->usr_dir : NULL,
                        .helper = ctx->helper,
                        .workspace = u->workspace,
                        .cgroups = cg,
                        .n_cgroups = ctx->n_cgroups,
                        .nofile = c->nofile,
                        .max_code_bytes = c->max_code_bytes,
                        .head_bytes = c->output_head_bytes,
                        .tail_bytes = c->output_tail_bytes,
                        .stdin_fd = ctl[1],
                        .no_kernel_protection = !c->protect_kernel,
                        .warm = true,
                        .warm_preload = preload,
                        .runsc = u->strong ? c->runsc : NULL,
                        .runsc_platform = c->runsc_platform,
                };

                r = unit_props_build(&plan, &props);
        }
        cgroup_binds_done(cg, ctx->n_cgroups);
        if (r < 0)
                goto fail;

        store_control_fd(u, ctl[0]);
        /* Watch first, then start. */
        r = sysd_watch(ctx->sysd, u->mount_name, &mount_events, u, &u->watch_mount);
        if (r >= 0)
                r = sysd_watch(ctx->sysd, u->unit_name, &warm_events, u, &u->watch);
        if (r >= 0)
                r = sysd_start_transient(ctx->sysd, u->unit_name, &props, on_start_reply, u, &u->call);
        unit_props_done(&props);
        if (r < 0)
                goto fail;
        u->ctl_fd = TAKE_FD(ctl[0]);
        r = sd_event_add_io(ctx->event, &u->ctl_src, u->ctl_fd, EPOLLIN | EPOLLOUT, on_warm_control, u);
        u->asked_mono = now_mono(p);
        u->next = p->list;
        p->list = u;
        if (r < 0) {
                warm_unit_retire(u, RETIRE_DIED, NULL);
                return r;
        }
        return 0;

oom:
        r = -ENOMEM;
fail:
        /* Nothing was started: the workspace goes back, as it was (nothing ran in it), watched by the
         * workspace pool again (ours first goes, or the pool could not watch it). */
        u->watch_mount = sysd_watch_free(u->watch_mount);
        if (ctx->sysd && u->mount_name &&
            !workspace_pool_give_back(ctx->pool, u->workspace, u->mount_name, u->lease, true))
                (void) sysd_stop_unit(ctx->sysd, u->mount_name, NULL, NULL);
        warm_unit_free(u);
        pool_failed_start(p);
        return r;
}

static bool unit_of_kind(const WarmUnit *u, int kind) {
        if (kind == KIND_ANY)
                return true;
        if (u->strong)
                return kind == KIND_STRONG;
        return kind == KIND_STANDARD || (kind == KIND_PRELOADED && u->preloaded) || (kind == KIND_PLAIN && !u->preloaded);
}

/* Units of l (NULL: any language and environment) of environment env (NULL: none) not being stopped,
 * in state (or any_state), of kind. */
static unsigned count_units(const WarmPool *p, const Language *l, const char *env, WarmState state, bool any_state,
                            int kind) {
        unsigned n = 0;

        for (const WarmUnit *u = p->list; u; u = u->next)
                if ((!l || (u->language == l && streq_ptr(u->environment, env))) && u->state != WARM_RETIRING &&
                    (any_state || u->state == state) && unit_of_kind(u, kind))
                        n++;
        return n;
}

/* Start units of l (and env) while fewer than Size= (StrongSize=) of that kind are there, within
 * WARM_STARTS_MAX. false: stop filling for now (no workspace ready, or a start failed). */
static bool fill_kind(WarmPool *p, const Language *l, const Environment *env, int kind) {
        Context *ctx = p->ctx;
        const Config *c = ctx->config;
        uint64_t size = kind == KIND_STRONG ? c->pool_strong_size : c->pool_size;

        while (count_units(p, l, env ? env->name : NULL, 0, true, kind) < size &&
               count_units(p, NULL, NULL, WARM_STARTING, false, KIND_ANY) < WARM_STARTS_MAX) {
                Workspace *w = workspace_pool_take(ctx->pool, sandbox_workspace_bytes(&c->defaults));

                /* The pool's workspaces are mounted ahead of time too; without one ready, the next
                 * tick tries again. */
                workspace_pool_fill(ctx->pool);
                if (!w)
                        return false;
                if (warm_unit_start(p, l, env, w, kind) < 0) {
                        log_warning("Cannot start a warm unit for %s%s%s%s; retrying later.", l->name,
                                    env ? " environment " : "", env ? env->name : "",
                                    kind == KIND_STRONG ? " (strong tier)" : "");
                        return false;
                }
        }
        return true;
}

/* Ready units older than MaxAgeSec= are replaced: their backstop (RuntimeMaxSec=) would come
 * closer than a claim's longest run. */
static void retire_aged(WarmPool *p) {
        uint64_t now = now_mono(p), max_age = p->ctx->config->pool_max_age_sec * USEC_PER_SEC;

        for (WarmUnit *u = p->list, *next; u; u = next) {
                next = u->next;
                if (u->state == WARM_READY && now - u->asked_mono >= max_age) {
                        log_debug("Warm unit %s aged out, replaced.", u->unit_name);
                        warm_unit_retire(u, RETIRE_AGED, NULL);
                } else if (u->state == WARM_RETIRING && now - u->retired_mono >= WARM_RETIRE_FORGET_USEC) {
                        /* Still there: a stop sent while its start was on its way to systemd may have
                         * found no unit yet. Once more (and its workspace's mount), then forget it. */
                        if (p->ctx->sysd) {
                                (void) sysd_stop_unit(p->ctx->sysd, u->unit_name, NULL, NULL);
                                if (u->mount_name)
                                        (void) sysd_stop_unit(p->ctx->sysd, u->mount_name, NULL, NULL);
                        }
                        on_unit_gone(u, NULL);
                }
        }
}

/* The language of this name in Languages=, if the pool keeps units of it here: defined by that name
 * (not an alias), available, its filter built. */
static const Language *pooled_language(WarmPool *p, const char *name) {
        const Language *l = language_find(name);

        if (!l || !streq(l->name, name) || !warm_language_pooled(p->ctx->config, l) || !language_available(l) ||
            !context_seccomp_filter(p->ctx, l))
                return NULL;
        return l;
}

void warm_pool_fill(WarmPool *p) {
        Context *ctx = p->ctx;
        const Config *c = ctx->config;

        if (ctx->stopping || !ctx->sysd || c->pool_size == 0 || now_mono(p) < p->retry_after)
                return;
        /* In the order of Languages= (the administrator's: the first is filled first), not the
         * table's (file names). A name no file defines pools nothing. */
        for (char **name = c->pool_languages; name && *name; name++) {
                const Language *l = pooled_language(p, *name);

                if (!l)
                        continue;
                /* Size= of each kind: the preloaded ones first (python with PythonPreload=). */
                for (int kind = warm_language_preloads(c, l) ? KIND_PRELOADED : KIND_PLAIN; kind >= KIND_PLAIN; kind--)
                        if (!fill_kind(p, l, NULL, kind))
                                return;
        }
        /* Then the environments, in the order of Environments=, each of a pooled language. */
        for (char **name = c->pool_environments; name && *name; name++) {
                const Environment *env = environments_find(ctx->environments, *name);
                const Language *l = env ? language_find(env->language) : NULL;

                if (!l || !streq(l->name, env->language) || !warm_language_pooled(c, l) || !language_available(l) ||
                    !context_seccomp_filter(ctx, l))
                        continue;
                if (!fill_kind(p, l, env, KIND_PLAIN))
                        return;
        }
        /* Last, StrongSize= units of the strong tier per pooled language, while it can run here and
         * is not turned off (Strong=never: no run would claim them). */
        if (ctx->strong_unavailable || ctx->isolation.policy == ISOLATION_POLICY_NEVER || now_mono(p) < p->strong_hold)
                return;
        for (char **name = c->pool_languages; name && *name; name++) {
                const Language *l = pooled_language(p, *name);

                if (!l || !warm_language_strong(c, l))
                        continue;
                if (!fill_kind(p, l, NULL, KIND_STRONG))
                        return;
        }
}

static int on_refill(sd_event_source *s, uint64_t usec, void *userdata) {
        warm_pool_fill(userdata);
        return 0;
}

/* Fill the pool at `at` (CLOCK_MONOTONIC) unless a refill is due sooner already. */
static void refill_at(WarmPool *p, uint64_t at) {
        uint64_t due;
        int enabled = SD_EVENT_OFF;

        if (p->refill && sd_event_source_get_enabled(p->refill, &enabled) >= 0 && enabled != SD_EVENT_OFF &&
            sd_event_source_get_time(p->refill, &due) >= 0 && due <= at)
                return;
        if (p->refill) {
                if (sd_event_source_set_time(p->refill, at) >= 0 &&
                    sd_event_source_set_enabled(p->refill, SD_EVENT_ONESHOT) >= 0)
                        return;
        } else if (sd_event_add_time(p->ctx->event, &p->refill, CLOCK_MONOTONIC, at, USEC_PER_MSEC, on_refill, p) >= 0)
                return;
        warm_pool_fill(p);      /* no timer: at once rather than at the next tick */
}

void warm_pool_claim_ended(WarmPool *p) {
        int enabled = SD_EVENT_OFF;

        p->strong_hold = 0;
        /* Only a replacement still waiting for its delay is brought forward. */
        if (p->refill && sd_event_source_get_enabled(p->refill, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                refill_at(p, now_mono(p));
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        WarmPool *p = userdata;

        retire_aged(p);
        warm_pool_fill(p);
        (void) sd_event_source_set_time_relative(s, WARM_TICK_USEC);
        return 0;
}

int warm_pool_new(Context *ctx, WarmPool **ret) {
        WarmPool *p = calloc(1, sizeof(WarmPool));
        int r;

        if (!p)
                return -ENOMEM;
        p->ctx = ctx;
        r = sd_event_add_time_relative(ctx->event, &p->timer, CLOCK_MONOTONIC, WARM_TICK_USEC, 100 * USEC_PER_MSEC,
                                       on_tick, p);
        if (r < 0) {
                free(p);
                return r;
        }
        (void) sd_event_source_set_enabled(p->timer, SD_EVENT_ON);
        *ret = p;
        return 0;
}

WarmPool *warm_pool_free(WarmPool *p) {
        if (!p)
                return NULL;
        while (p->list) {
                WarmUnit *u = p->list;

                p->list = u->next;
                warm_unit_free(u);
        }
        sd_event_source_disable_unref(p->timer);
        sd_event_source_disable_unref(p->refill);
        free(p);
        return NULL;
}

int warm_pool_claim(WarmPool *p, const Language *l, const char *environment, bool preloaded, bool strong,
                    WarmClaim *ret) {
        WarmUnit *u = NULL;

        if (environment)
                preloaded = false;      /* one kind */

        /* The kind asked for. A run that wants the preload takes a plain one if no preloaded one is
         * ready (it imports what it needs; the plain unit's replacement is cheap); one that does not
         * never takes a preloaded one: its replacement would import the preload again (~100 ms of
         * CPU for numpy), more than a cold start costs, and under load that is throughput lost. */
        for (unsigned pass = 0; pass < (preloaded ? 2u : 1u) && !u; pass++)
                for (u = p->list; u; u = u->next)
                        if (u->language == l && streq_ptr(u->environment, environment) && u->state == WARM_READY &&
                            u->strong == strong && (strong || pass > 0 || u->preloaded == preloaded))
                                break;
        if (u) {
                pool_unlink(p, u);
                /* The job watches it from here on (sysd routes by name: nothing is missed in
                 * between, both happen in this one dispatch). */
                u->watch = sysd_watch_free(u->watch);
                u->watch_mount = sysd_watch_free(u->watch_mount);
                u->ctl_src = sd_event_source_disable_unref(u->ctl_src);
                *ret = (WarmClaim) {
                        .unit_name = TAKE_PTR(u->unit_name),
                        .workspace = TAKE_PTR(u->workspace),
                        .mount_name = TAKE_PTR(u->mount_name),
                        .ctl_fd = TAKE_FD(u->ctl_fd),
                        .limits = u->limits,
                        .lease = u->lease,
                        .fd_stored = u->fd_stored,
                };
                u->fd_stored = false;   /* the job's to remove now */
                warm_unit_free(u);
                if (strong)
                        p->strong_hold = now_mono(p) + WARM_STRONG_REFILL_DELAY_USEC;
                refill_at(p, now_mono(p) + (strong ? WARM_STRONG_REFILL_DELAY_USEC : WARM_REFILL_DELAY_USEC));
                return 1;
        }
        return 0;
}

void warm_pool_foreach(const WarmPool *p, void (*cb)(void *userdata, const char *unit, const char *language,
                                                     bool ready), void *userdata) {
        for (const WarmUnit *u = p->list; u; u = u->next)
                cb(userdata, u->unit_name, u->language->name, u->state == WARM_READY);
}

unsigned warm_pool_ready(const WarmPool *p, const Language *l, int preloaded) {
        return count_units(p, l, NULL, WARM_READY, false, preloaded < 0 ? KIND_STANDARD : preloaded ? KIND_PRELOADED : KIND_PLAIN);
}

unsigned warm_pool_ready_strong(const WarmPool *p, const Language *l) {
        return count_units(p, l, NULL, WARM_READY, false, KIND_STRONG);
}

unsigned warm_pool_ready_environment(const WarmPool *p, const char *environment) {
        unsigned n = 0;

        for (const WarmUnit *u = p->list; u; u = u->next)
                if (u->state == WARM_READY && streq_ptr(u->environment, environment))
                        n++;
        return n;
}

void warm_pool_drain(WarmPool *p) {
        for (WarmUnit *u = p->list, *next; u; u = next) {
                next = u->next;
                warm_unit_retire(u, RETIRE_DRAIN, NULL);
        }
        p->retry_after = 0;
        p->backoff = 0;
}

unsigned warm_pool_stop_all(WarmPool *p, sysd_done_t cb, void *userdata) {
        unsigned n = 0;

        /* Each unit is stopped and waited for, then its failed state reset; its workspace's mount is
         * stopped: two answers per unit, nothing of the pool outlives sandboxd. Units being retired
         * already have their mount's stop behind them: one answer. Without a bus nothing is sent. */
        if (!p->ctx->sysd)
                return 0;
        p->stop_cb = cb;
        p->stop_userdata = userdata;
        for (WarmUnit *u = p->list, *next; u; u = next) {
                next = u->next;
                n += u->state == WARM_RETIRING ? 1 : 1 + (u->mount_name ? 1 : 0);
                warm_unit_retire(u, RETIRE_DRAIN, NULL);
        }
        return n;
}
