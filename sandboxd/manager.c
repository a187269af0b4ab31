/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <json-c/json.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <systemd/sd-daemon.h>

#include "admission/quota.h"
#include "api/api-context.h"
#include "api/api.h"
#include "api/bus-api.h"
#include "api/submit.h"
#include "delivery/artifact-accounts.h"
#include "delivery/artifacts.h"
#include "delivery/callback.h"
#include "log.h"
#include "manager.h"
#include "model/language.h"
#include "model/request.h"
#include "net/net-client.h"
#include "run/job.h"
#include "run/language-version.h"
#include "run/node.h"
#include "run/runner.h"
#include "run/session.h"
#include "secret-file.h"
#include "strv.h"
#include "systemd/sysd.h"
#include "time-util.h"
#include "unit/seccomp-policy.h"
#include "net/net-policy.h"
#include "unit/usr-layer.h"
#include "unit/sandbox-root.h"
#include "model/environment.h"
#include "model/warm-policy.h"
#include "run/unit-reaper.h"
#include "run/warm-pool.h"
#include "workspace/workspace.h"

struct Manager {
        Context ctx;             /* the services every stage shares (context.h) */
        ApiContext api;          /* what the two APIs reach (api-context.h) */
        Runner *runner;          /* the jobs and the queue (runner.h) */
        Sessions *sessions;      /* the session registry (session.h) */
        Node *node;              /* this node in the store's node registry (node.h) */
        sd_event_source *sigterm, *sigint, *sighup, *sweep_timer;
        StoreCall *purge;        /* the sweep's purge, under way (store_purge_async()) */

        char *config_dir;
        char *helper_override;   /* --helper= on the command line wins over Helper= */
        char *net_worker;        /* --net-worker= or the installed sandboxd-net */
        char *proxy;             /* --proxy= or the installed sandboxd-proxy */
        char *environments_override; /* --environments-dir= wins over EnvironmentsDirectory= */

        Http *http;
        BusApi *bus_api;         /* the D-Bus API (bus-api.c) on bus */

        unsigned n_end_pending;  /* calls to end executions not yet answered, at stop */
        bool barrier_sent;       /* the last round trip to systemd before the exit (manager_end()) */
        LanguageVersions *versions; /* the runtimes' version probes (language-version.h) */
};

static int manager_reload(Manager *m);
static int load_languages(Manager *m, LanguageTable **ret);
static void use_languages(Manager *m, LanguageTable *t);

/* The environments (model/environment.h), read again at every reload: a job looks its environment up
 * by name when its unit is built, so the old set can go at once. */
static int load_environments(Manager *m) {
        Environments *e = NULL;
        const char *dir = m->environments_override ?: m->ctx.config->environments_dir;
        int r;

        r = environments_load(dir, &e);
        if (r < 0)
                return log_error_errno(r, "Cannot load the environments from '%s': %m", dir);
        environments_free(m->ctx.environments);
        m->ctx.environments = e;
        return 0;
}

static int mkdir_checked(const char *path, mode_t mode) {
        struct stat st;

        if (mkdir(path, mode) < 0 && errno != EEXIST)
                return -errno;
        if (lstat(path, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode) || st.st_uid != 0)
                return -EPERM;          /* something else was planted there */
        if ((st.st_mode & 07777) != mode && chmod(path, mode) < 0)
                return -errno;
        return 0;
}

/* Is fstype listed in /proc/filesystems (built in, or its module loaded)? */
static bool filesystem_available(const char *fstype) {
        _cleanup_fclose_ FILE *f = fopen("/proc/filesystems", "re");
        char line[256];

        if (!f)
                return false;
        while (fgets(line, sizeof(line), f)) {
                char *name = strrchr(line, '\t');

                name = name ? name + 1 : line;
                name[strcspn(name, "\n")] = '\0';
                if (streq(name, fstype))
                        return true;
        }
        return false;
}

/* sandboxd's own directories, the places systemd's StateDirectory= needs for sessions, and the
 * /usr layer of this start (usr-layer.h). Each sandbox's root is written into its own tmpfs
 * (workspace.c), not here. */
static int setup_directories(Manager *m) {
        const Config *c = m->ctx.config;
        int r;

        free(m->ctx.workspaces_dir);
        free(m->ctx.proxy_root);
        free(m->ctx.proxy_empty);
        if (asprintf(&m->ctx.workspaces_dir, "%s/workspaces", c->runtime_dir) < 0 ||
            asprintf(&m->ctx.proxy_root, "%s/proxy-root", c->runtime_dir) < 0 ||
            asprintf(&m->ctx.proxy_empty, "%s/proxy-empty", c->runtime_dir) < 0)
                return log_oom();

        r = mkdir_checked(c->state_dir, 0755);
        if (r >= 0)
                r = mkdir_checked(c->runtime_dir, 0755);
        if (r >= 0)
                r = mkdir_checked(m->ctx.workspaces_dir, 0700);
        if (r >= 0)
                /* Holds only the mount points systemd makes for the proxies' binds. */
                r = mkdir_checked(m->ctx.proxy_root, 0755);
        if (r >= 0)
                r = mkdir_checked(m->ctx.proxy_empty, 0555);
        if (r < 0)
                return log_error_errno(r, "Failed to create sandboxd's directories under '%s' and '%s': %m",
                                       c->state_dir, c->runtime_dir);
        /* Sessions: systemd's StateDirectory= places are fixed below /var/lib. The mount points'
         * parents are root's alone (systemd wants /var/lib/private 0700: a leftover directory of a
         * dynamic user must not be reachable by a later owner of the same UID). */
        {
                static const struct {
                        const char *path;
                        mode_t mode;
                } sdirs[] = {
                        { "/var/lib/private", 0700 },
                        { "/var/lib/private/sandboxd", 0700 },
                        { SESSION_MOUNT_DIR, 0700 },
                        { "/var/lib/sandboxd", 0755 },
                        { SESSION_LINK_DIR, 0700 },
                };
                for (size_t i = 0; i < ELEMENTSOF(sdirs); i++) {
                        struct stat st;

                        if (mkdir(sdirs[i].path, sdirs[i].mode) < 0 && errno != EEXIST)
                                return log_error_errno(errno, "Failed to create '%s': %m", sdirs[i].path);
                        if (lstat(sdirs[i].path, &st) < 0)
                                return log_error_errno(errno, "Cannot stat '%s': %m", sdirs[i].path);
                        if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 0022))
                                return log_error_errno(EPERM, "'%s' must be a directory owned and only "
                                                       "writable by root.", sdirs[i].path);
                }
        }

        /* The /usr layer: overlayfs must be there, or every sandbox would share /usr's inodes. */
        if (!filesystem_available("overlay"))
                return log_error_errno(ENODEV, "overlayfs is not available (modprobe overlay; see modules-load.d(5)): "
                                       "the sandboxes' /usr is an overlay of their own");
        m->ctx.usr_layer = mfree(m->ctx.usr_layer);
        {
                /* The strong tier's preload (strong-preload.c) is installed beside the helper. */
                const char *helper = m->ctx.helper;
                const char *slash = helper ? strrchr(helper, '/') : NULL;
                _cleanup_free_ char *preload = NULL;

                if (slash && asprintf(&preload, "%.*s/" STRONG_PRELOAD_NAME, (int) (slash - helper), helper) < 0)
                        return log_oom();
                r = usr_layer_build(c->state_dir, preload, &m->ctx.usr_layer);
        }
        if (r < 0)
                return r;
        return 0;
}

/* A sysctl's first line, for isolation_userns_problem(): short reads of /proc/sys, never blocking. */
static const char *read_sysctl(const char *path, void *userdata) {
        char *buf = userdata;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        ssize_t k;

        if (fd < 0)
                return NULL;
        k = loop_read(fd, buf, 63);
        if (k < 0)
                return NULL;
        buf[k] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        return buf;
}

/* The strong tier (docs/isolation.md): whether it can run here, and the policy in force. Strong=
 * unset means auto where it can, else never; set, it is what the administrator chose, and runs
 * that need a tier that cannot run are refused (submit.c), never moved to the standard one. */
static void setup_isolation(Manager *m) {
        const Config *c = m->ctx.config;
        char *why = NULL;

        if (!startswith(c->runsc, "/usr/") || strstr(c->runsc, "..")) {
                if (asprintf(&why, "Runsc=%s is not below /usr (the sandboxes see the host's /usr only)", c->runsc) < 0)
                        why = NULL;
        } else if (access(c->runsc, X_OK) < 0) {
                if (asprintf(&why, "Runsc=%s: %s (the Debian package runsc)", c->runsc, strerror(errno)) < 0)
                        why = NULL;
        } else {
                char buf[64];
                const char *p = isolation_userns_problem(read_sysctl, buf);

                if (p && !(why = strdup(p)))
                        why = NULL;
        }
        free(m->ctx.strong_unavailable);
        m->ctx.strong_unavailable = why;
        m->ctx.isolation = (IsolationSettings) {
                .policy = c->isolation_policy >= 0 ? (IsolationPolicy) c->isolation_policy
                          : why ? ISOLATION_POLICY_NEVER : ISOLATION_POLICY_AUTO,
                .classes = c->isolation_classes,
                .long_run_ms = c->isolation_long_run_sec * 1000,
        };
        if (why)
                log_notice("The strong tier cannot run here (%s); Strong=%s.", why,
                           isolation_policy_to_string(m->ctx.isolation.policy));
        else
                log_info("The strong tier runs with %s --platform=%s; Strong=%s.", c->runsc, c->runsc_platform,
                         isolation_policy_to_string(m->ctx.isolation.policy));
}

/* Where the execution units' cgroups will be, per hierarchy, so sandbox-exec can be given its own.
 * sandboxd runs as a service in a top-level slice, so its cgroup's grandparent is systemd's root. */
static int setup_cgroups(Manager *m) {
        static const char *const v1[] = { "memory", "pids", "cpuacct" };
        _cleanup_fclose_ FILE *f = NULL;
        struct statfs sfs;
        char line[1024];

        m->ctx.cgroup_v2 = statfs("/sys/fs/cgroup", &sfs) >= 0 && sfs.f_type == CGROUP2_SUPER_MAGIC;
        f = fopen("/proc/self/cgroup", "re");
        if (!f)
                return log_error_errno(errno, "Cannot read /proc/self/cgroup: %m");

        while (fgets(line, sizeof(line), f)) {
                char *ctrl, *path, *slash;

                line[strcspn(line, "\n")] = 0;
                ctrl = strchr(line, ':');
                if (!ctrl)
                        continue;
                ctrl++;
                path = strchr(ctrl, ':');
                if (!path)
                        continue;
                *path++ = 0;
                /* grandparent of our own cgroup */
                for (int k = 0; k < 2; k++) {
                        slash = strrchr(path, '/');
                        if (slash)
                                *slash = 0;
                }

                if (m->ctx.cgroup_v2) {
                        if (*ctrl != 0)
                                continue;
                        m->ctx.cgroups[0].name = "unified";
                        if (asprintf(&m->ctx.cgroups[0].slice_dir, "/sys/fs/cgroup%s/sandboxd.slice", path) < 0)
                                return log_oom();
                        m->ctx.n_cgroups = 1;
                        break;
                }
                /* The hybrid hierarchy's unified part: where the v1 controllers' cpuacct is not the unit's
                 * own (mounted apart from cpu, or not per unit), its cpu.stat still counts every process of
                 * the unit, the strong tier's gVisor included, which RUSAGE_CHILDREN cannot see. */
                if (*ctrl == 0) {
                        if (statfs("/sys/fs/cgroup/unified", &sfs) < 0 || sfs.f_type != CGROUP2_SUPER_MAGIC ||
                            m->ctx.n_cgroups >= ELEMENTSOF(m->ctx.cgroups))
                                continue;
                        m->ctx.cgroups[m->ctx.n_cgroups].name = "unified";
                        if (asprintf(&m->ctx.cgroups[m->ctx.n_cgroups].slice_dir,
                                     "/sys/fs/cgroup/unified%s/sandboxd.slice", path) < 0)
                                return log_oom();
                        m->ctx.n_cgroups++;
                        continue;
                }
                for (size_t i = 0; i < ELEMENTSOF(v1); i++) {
                        char cl[256], *tok, *save = NULL;
                        bool match = false;

                        snprintf(cl, sizeof(cl), "%s", ctrl);
                        for (tok = strtok_r(cl, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                                if (streq(tok, v1[i]))
                                        match = true;
                        if (!match || m->ctx.n_cgroups >= ELEMENTSOF(m->ctx.cgroups))
                                continue;
                        m->ctx.cgroups[m->ctx.n_cgroups].name = v1[i];
                        if (asprintf(&m->ctx.cgroups[m->ctx.n_cgroups].slice_dir, "/sys/fs/cgroup/%s%s/sandboxd.slice",
                                     v1[i], path) < 0)
                                return log_oom();
                        m->ctx.n_cgroups++;
                }
        }
        log_info("cgroup %s; %zu hierarchies handed to sandbox-exec%s%s", m->ctx.cgroup_v2 ? "v2" : "v1/hybrid",
                 m->ctx.n_cgroups, m->ctx.n_cgroups ? ", e.g. " : "", m->ctx.n_cgroups ? m->ctx.cgroups[0].slice_dir : "");
        return 0;
}

/* A take-over the store could not make is tried again at the next heartbeat. */
static void manager_taken_over(void *userdata, const char *from, int r) {
        Manager *m = userdata;

        if (r < 0 && m->node)
                node_take_over_failed(m->node, from);
}

/* What the node's heartbeat reports. */
static int manager_node_lost(void *userdata, const char *name) {
        Manager *m = userdata;

        return m->ctx.stopping ? -ECANCELED : runner_take_over(m->runner, name, manager_taken_over, m);
}

static uint64_t manager_running(void *userdata) {
        Manager *m = userdata;
        RunnerCounts n;

        runner_counts(m->runner, &n);
        return n.running;
}

/* The gauges of GET /metrics, as they are now in memory (the outbox's count is the store's: the API
 * reads it). */
static void manager_metrics_gauges(void *userdata, MetricsGauges *ret) {
        Manager *m = userdata;
        RunnerCounts n;

        runner_counts(m->runner, &n);
        *ret = (MetricsGauges) {
                .running = n.running,
                .queued = n.queued,
                .slots = m->ctx.config->max_concurrent,
                .queue_max = m->ctx.config->max_queued,
                .pool_ready = workspace_pool_count(m->ctx.pool),
                .pool_target = m->ctx.config->workspace_pool,
                .sessions = sessions_count(m->sessions),
                .records_unsaved = runner_unsaved(m->runner),
                .shared_queue = m->ctx.shared_queue,
                .claimed_here = n.claimed_here,
                .claimed_elsewhere = n.claimed_elsewhere,
                .warm_target = m->ctx.config->pool_size,
        };
        node_metrics_gauges(m->node, ret);
        for (size_t i = 0; i < language_count() && i < METRICS_LANGUAGES_MAX; i++) {
                ret->warm_pooled[i] = warm_language_pooled(m->ctx.config, language_get(i));
                ret->warm_ready[i] = m->ctx.warm ? warm_pool_ready(m->ctx.warm, language_get(i), -1) : 0;
        }
}

/* Leftovers: units of executions nobody tracks (a crash, a restart) are killed and stopped. */
static void on_list_units(void *userdata, int r, const SysdUnitInfo *units, size_t n) {
        Manager *m = userdata;
        unsigned killed = 0, stopping = 0;

        if (r < 0) {
                log_warning_errno(r, "Sweep: ListUnitsByPatterns failed: %m");
                return;
        }
        for (size_t i = 0; i < n; i++) {
                const SysdUnitInfo *u = &units[i];

                /* Watched: a job, a pool workspace or a session has it. */
                if (sysd_is_watched(m->ctx.sysd, u->name))
                        continue;
                /* Already being stopped (a session just removed: its StopUnit came before this list; a
                 * warm unit the previous instance stopped as it exited). Such a unit may end failed
                 * (KillSignal=SIGKILL), and nobody watches it: look again soon, to reset it then. */
                if (streq(u->job_type, "stop")) {
                        stopping++;
                        continue;
                }
                if (streq(u->active_state, "failed")) {
                        /* CollectMode=inactive keeps failed units for their Result=; nobody will read
                         * this one. */
                        (void) sysd_reset_failed_unit(m->ctx.sysd, u->name);
                        continue;
                }
                if (streq(u->active_state, "inactive") && !endswith(u->name, ".mount"))
                        continue;
                log_info("Sweep: stopping leftover unit %s (%s/%s)", u->name, u->active_state, u->sub_state);
                if (startswith(u->name, "sandboxd-"))
                        (void) sysd_kill_unit(m->ctx.sysd, u->name, "all", SIGKILL);
                (void) sysd_stop_unit(m->ctx.sysd, u->name, NULL, NULL);
                killed++;
        }
        if (killed)
                log_info("Sweep: %u leftover units stopped", killed);
        if (killed || stopping) {
                /* Killed units end up failed: sweep again soon to let them go. */
                (void) sd_event_source_set_time_relative(m->sweep_timer, 2 * USEC_PER_SEC);
                (void) sd_event_source_set_enabled(m->sweep_timer, SD_EVENT_ONESHOT);
        }
}

static void sweep_workspace_dirs(Manager *m) {
        struct dirent *de;
        DIR *d;

        d = opendir_nofollow(m->ctx.workspaces_dir);
        if (!d)
                return;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                /* A pool workspace, or an unfinished execution's. */
                if (workspace_pool_owns_dir(m->ctx.pool, de->d_name) || runner_uses_workspace(m->runner, de->d_name))
                        continue;
                /* Only an empty, unmounted mount point goes: rmdir refuses anything else. */
                (void) unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
        }
        closedir(d);
}

static void manager_sweep(Manager *m) {
        /* The session mounts' names: SESSION_MOUNT_DIR escaped. */
        /* sandboxd-*.service covers the egress proxies' services (sandboxd-proxy-*.service) too. */
        static const char *const patterns[] = { "sandboxd-*.service", "sandboxd-proxy-*.socket", "run-sandboxd-*.mount",
                                                "var-lib-private-sandboxd-sessions-*.mount", NULL };
        int r;

        sweep_workspace_dirs(m);
        r = sysd_list_units(m->ctx.sysd, patterns, on_list_units, m);
        if (r < 0)
                log_warning_errno(r, "Sweep: cannot list units: %m");
}

static void purged(Manager *m, uint64_t n) {
        if (n == 0)
                return;
        log_info("Sweep: %" PRIu64 " execution records older than %" PRIu64 " s purged.", n,
                 m->ctx.config->retention_sec);
        /* Their charges are off the budgets (the store's triggers took them away). */
        artifact_accounts_refresh(m->ctx.accounts);
}

static void on_purged(void *userdata, int r, uint64_t n) {
        Manager *m = userdata;

        m->purge = NULL;
        if (r < 0)
                log_warning_errno(r, "Sweep: cannot purge old execution records: %s", store_error_message(m->ctx.store));
        else
                purged(m, n);
}

static int on_sweep_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        runner_kill_overdue(m->runner);
        sessions_sweep(m->sessions);
        manager_sweep(m);
        if (m->ctx.store && m->ctx.config->retention_sec > 0) {
                uint64_t n = 0, now = now_usec(CLOCK_REALTIME), age = m->ctx.config->retention_sec * USEC_PER_SEC;
                char **blobs = NULL;
                int r = -EOPNOTSUPP;

                /* PostgreSQL: without waiting, the blobs removed under its lock (one purge at a
                 * time: the last may still be under way). SQLite: here, and the blobs after. */
                if (now > age && !m->purge)
                        r = store_purge_async(m->ctx.store, now - age, on_purged, m, &m->purge);
                if (now > age && r == -EOPNOTSUPP && store_purge_ex(m->ctx.store, now - age, &n, &blobs) >= 0)
                        purged(m, n);
                /* Their artifacts' blobs that no record refers to any more. */
                for (char **b = blobs; b && *b; b++) {
                        int k = artifacts_store_remove_blob(m->ctx.artifacts_fd, *b);

                        if (k < 0 && k != -ENOENT)
                                log_warning_errno(k, "Sweep: cannot remove artifact blob %s: %m", *b);
                }
                strv_free(blobs);
                /* The copies kept in memory go with them. */
                if (now > age)
                        runner_forget_finished_before(m->runner, now - age);
        }
        (void) sd_event_source_set_time_relative(s, m->ctx.config->sweep_interval_sec * USEC_PER_SEC);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ON);
        return 0;
}

/* Executions still running when sandboxd stops are ended: nothing would read their output. The
 * calls must be answered before the connection closes: systemd checks the caller's credentials
 * when it handles a call, and a caller that has gone by then is refused. So the loop exits only
 * when every call is answered, or after END_TIMEOUT_USEC. That bound is generous: a busy PID 1
 * (one that has just started the units a reload asked for, under emulation) was seen to begin a
 * warm unit's stop more than 5 s after it was asked, and a unit sandboxd stops waiting for ends
 * failed with nobody left to reset it. It stays below the unit's TimeoutStopSec=30s, so sandboxd
 * still exits on its own rather than being killed. */
#define END_TIMEOUT_USEC (20 * USEC_PER_SEC)
static void on_end_barrier(void *userdata, _unused_ int r, _unused_ const char *message) {
        Manager *m = userdata;

        m->barrier_sent = false;
        /* Something to wait for came up meanwhile: its last answer sends another. */
        if (m->n_end_pending == 0)
                (void) sd_event_exit(m->ctx.event, 0);
}

/* Every awaited answer is in: one more round trip before the exit, so that what was sent without an
 * awaited answer meanwhile (the StopUnit of a workspace that an execution made final while stopping
 * gave back) is handled too; a call whose caller has gone is refused, and such mounts stayed. */
static void manager_end(Manager *m) {
        if (m->barrier_sent)
                return;         /* its answer ends the loop */
        if (!m->ctx.sysd || sysd_barrier(m->ctx.sysd, on_end_barrier, m) < 0) {
                (void) sd_event_exit(m->ctx.event, 0);
                return;
        }
        m->barrier_sent = true;
}

static void on_end_reply(void *userdata, _unused_ int r, _unused_ const char *message) {
        Manager *m = userdata;

        if (m->n_end_pending > 0 && --m->n_end_pending == 0)
                manager_end(m);
}

static void on_end_quiet(void *userdata) {
        on_end_reply(userdata, 0, NULL);
}

/* More answers to wait for: a unit the reaper took over while sandboxd stops. */
static void on_end_more(void *userdata, unsigned n) {
        Manager *m = userdata;

        m->n_end_pending += n;
}

static int on_end_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        log_warning("%u calls to stop executions unanswered, exiting anyway.", m->n_end_pending);
        return sd_event_exit(m->ctx.event, 0);
}

static void manager_end_executions(Manager *m) {
        /* Executions go on: systemd keeps their units running, their control sockets wait in the fd
         * store, and the next start adopts them (a restart or upgrade loses nothing). Queued ones
         * stay queued in the store. Only the workspaces mounted ahead of time and the warm units
         * nobody claimed are given back. */
        m->n_end_pending += workspace_pool_stop_all(m->ctx.pool, on_end_reply, m);
        m->n_end_pending += warm_pool_stop_all(m->ctx.warm, on_end_reply, m);
        /* Units of final executions still ending: finished as they end (reset, workspace stopped). */
        m->n_end_pending += unit_reaper_stop_all(m->ctx.reaper, on_end_reply, on_end_more, m);
        /* And this instance reads their control sockets and proxy pipes only up to a clean point,
         * then not at all: what it read and did not record would be lost to the next one. */
        m->n_end_pending += runner_quiesce(m->runner, on_end_quiet, m);
        runner_flush_waiters(m->runner);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        int r;

        if (si->ssi_signo == SIGHUP) {
                (void) manager_reload(m);
                return 0;
        }
        log_info("Received %s, stopping.", si->ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
        if (m->ctx.stopping)
                return 0;
        m->ctx.stopping = true;
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Stopping.");
        /* The other nodes see this one gone now, not when its lease runs out; unless executions go on
         * for the next start to adopt (below): then the lease stays, and only if this node does not
         * come back within NodeLeaseSec= do the others take them over. */
        {
                RunnerCounts n;

                runner_counts(m->runner, &n);
                if (n.running + n.queued == 0)
                        node_leave(m->node);
                else
                        log_info("Keeping this node's lease: %" PRIu64 " executions continue with the next start.",
                                 (uint64_t) (n.running + n.queued));
        }
        manager_end_executions(m);
        /* The bound of it all, the last round trip included. */
        r = sd_event_add_time_relative(m->ctx.event, NULL, CLOCK_MONOTONIC, END_TIMEOUT_USEC, 0, on_end_timeout, m);
        if (r < 0)
                return sd_event_exit(m->ctx.event, 0);
        if (m->n_end_pending == 0)
                manager_end(m);
        return 0;
}

/* What another node sent through the store (store.h): a cancel for an execution this node runs. */
static void manager_store_notify(void *userdata, const char *channel, const char *payload) {
        Manager *m = userdata;

        if (!m->runner)
                return;
        if (streq(channel, STORE_CHANNEL_CANCEL))
                runner_cancel_from_elsewhere(m->runner, payload);
        else if (streq(channel, STORE_CHANNEL_QUEUE))
                runner_queue_hint(m->runner, payload);
        else if (streq(channel, STORE_CHANNEL_CLAIMED))
                runner_claimed_elsewhere(m->runner, payload);
        else if (streq(channel, STORE_CHANNEL_FINAL)) {
                runner_final_elsewhere(m->runner, payload);
                api_final_elsewhere(payload);
        } else if (streq(channel, STORE_CHANNEL_RECONNECTED))
                runner_store_scan(m->runner);
}

static int open_store(Manager *m) {
        _cleanup_free_ char *path = NULL, *error = NULL;
        uint64_t count = 0;
        int r;

        /* Store=: PostgreSQL. Most of its queries are still synchronous (store-pg.c; the
         * asynchronous ones, store_put_async(), need the event loop attached here); a lost
         * connection is made again on the event loop. The log names the database as the store does,
         * never the connection string. */
        if (m->ctx.config->store) {
                r = store_open_pg(m->ctx.config->store, &m->ctx.store, &error);
                if (r < 0)
                        return log_error_errno(r, "%s", error ?: "Cannot open the PostgreSQL execution store.");
                r = store_attach_event(m->ctx.store, m->ctx.event);
                if (r < 0)
                        return log_error_errno(r, "Cannot attach the PostgreSQL store to the event loop: %m");
                r = store_set_notify(m->ctx.store, manager_store_notify, m);
                if (r < 0)
                        return log_error_errno(r, "Cannot listen to the other nodes' notifications: %m");
                /* Nodes on one database share its queue (runner.h). */
                m->ctx.shared_queue = true;
                (void) store_count(m->ctx.store, &count);
                log_info("Execution store in PostgreSQL: %" PRIu64 " records.", count);
                return 0;
        }

        path = m->ctx.config->database ? strdup(m->ctx.config->database) : NULL;
        if (!path && asprintf(&path, "%s/sandboxd.db", m->ctx.config->state_dir) < 0)
                return log_oom();
        r = store_open_sqlite(path, &m->ctx.store, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ?: "Cannot open the execution store.");
        /* The asynchronous calls' callbacks (store_put_async()) come from the loop here too, never
         * from inside the call that made them. */
        r = store_attach_event(m->ctx.store, m->ctx.event);
        if (r < 0)
                return log_error_errno(r, "Cannot attach the execution store to the event loop: %m");
        (void) store_count(m->ctx.store, &count);

        log_info("Execution store %s: %" PRIu64 " records.", path, count);
        return 0;
}

/* The URL key: the bytes of a regular file owned by root (or us) and private to its owner (0600),
 * in directories nobody else can write, never through a symlink (secret-file.h: the same checks as
 * for every key file). The default file is created with 32 random bytes if missing (O_EXCL: two
 * starts racing cannot both write one); a configured file must exist. */
static int load_artifact_key(Manager *m) {
        _cleanup_free_ char *def = NULL, *error = NULL;
        const char *path = m->ctx.config->artifact_url_key_file;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        ssize_t n;

        if (!path) {
                if (asprintf(&def, "%s/artifact-url.key", m->ctx.config->state_dir) < 0) {
                        def = NULL;
                        return log_oom();
                }
                path = def;
        }
        fd = secret_file_open(path, geteuid(), SECRET_OWNER_ONLY, "artifact URL key (ArtifactURLKeyFile=)", &st,
                              &error);
        if (fd == -ENOENT && def) {
                uint8_t key[SIGNED_URL_KEY_MIN];
                size_t got = 0;

                while (got < sizeof(key)) {
                        n = getrandom(key + got, sizeof(key) - got, 0);
                        if (n < 0 && errno != EINTR)
                                return log_error_errno(errno, "Cannot get random bytes for the artifact URL key: %m");
                        if (n > 0)
                                got += (size_t) n;
                }
                fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
                if (fd >= 0) {
                        int r = loop_write(fd, key, sizeof(key));

                        if (r >= 0 && fsync(fd) < 0)
                                r = -errno;
                        if (r < 0) {
                                (void) unlink(path);
                                return log_error_errno(r, "Cannot write the artifact URL key '%s': %m", path);
                        }
                        memcpy(m->ctx.artifact_key, key, sizeof(key));
                        m->ctx.artifact_key_len = sizeof(key);
                        log_info("Generated the artifact URL key %s.", path);
                        return 0;
                }
                if (errno != EEXIST)
                        return log_error_errno(errno, "Cannot create the artifact URL key '%s': %m", path);
                fd = secret_file_open(path, geteuid(), SECRET_OWNER_ONLY, "artifact URL key (ArtifactURLKeyFile=)",
                                      &st, &error);
        }
        if (fd < 0)
                return log_error_errno(fd, "%s", error ?: "out of memory");
        if (st.st_size < SIGNED_URL_KEY_MIN || st.st_size > SIGNED_URL_KEY_MAX)
                return log_error_errno(EINVAL, "The artifact URL key '%s' has %jd bytes, it needs %d to %d.", path,
                                       (intmax_t) st.st_size, SIGNED_URL_KEY_MIN, SIGNED_URL_KEY_MAX);
        n = loop_read(fd, m->ctx.artifact_key, (size_t) st.st_size);
        if (n != st.st_size)
                return log_error_errno(n < 0 ? (int) n : EIO, "Cannot read the artifact URL key '%s': %m", path);
        m->ctx.artifact_key_len = (size_t) n;
        return 0;
}

/* The artifact store's blobs as the PostgreSQL store sees them under its artifacts lock
 * (store_set_blob_hooks()). */
static int artifact_blob_exists(void *userdata, const char *sha256) {
        Manager *m = userdata;
        int fd = artifacts_store_open_blob(m->ctx.artifacts_fd, sha256);

        if (fd < 0)
                return fd;
        safe_close(fd);
        return 0;
}

static int artifact_blob_remove(void *userdata, const char *sha256) {
        Manager *m = userdata;
        int r = artifacts_store_remove_blob(m->ctx.artifacts_fd, sha256);

        if (r < 0 && r != -ENOENT)
                log_warning_errno(r, "Sweep: cannot remove artifact blob %s: %m", sha256);
        return r;
}

static int open_artifacts(Manager *m) {
        _cleanup_free_ char *def = NULL, *error = NULL;
        const char *dir = m->ctx.config->artifacts_dir;
        int r;

        if (!dir) {
                if (asprintf(&def, "%s/artifacts", m->ctx.config->state_dir) < 0) {
                        def = NULL;
                        return log_oom();
                }
                dir = def;
        }
        /* Created if missing (mode 0700; its parent must exist), then opened only after the same
         * checks as a key file's directories: every node serves what is in it, so nobody but root
         * (or us) may be able to put or replace a file there, not even through a directory above it
         * (ArtifactsDirectory= may name a file system several nodes mount). */
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Cannot create the artifact store '%s' (ArtifactsDirectory=): %m", dir);
        r = secret_dir_open(dir, geteuid(), "artifact store (ArtifactsDirectory=)", &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ?: "out of memory");
        m->ctx.artifacts_fd = r;
        /* PostgreSQL may be shared with other nodes writing into and purging the same directory:
         * the check before recording and the unlink after purging go under the store's lock. One
         * node alone on SQLite has no need: its collections are recorded and its purges run on this
         * one event loop (job-artifacts.c checks the blobs right before recording). */
        if (m->ctx.config->store)
                store_set_blob_hooks(m->ctx.store, artifact_blob_exists, artifact_blob_remove, m);
        return load_artifact_key(m);
}

/* What quota.c makes of the configuration, derived values included. */
static void log_budgets(Manager *m) {
        const Config *c = m->ctx.config;

        log_info("Budgets per caller: %" PRIu64 " running, %" PRIu64 " queued (of %" PRIu64 ", %" PRIu64
                 " kept for admins), %" PRIu64 " callbacks pending, %" PRIu64 " bytes stored, %" PRIu64
                 " MB of session disk (of %" PRIu64 " MB for all sessions).",
                 quota_max_running_per_caller(c), quota_max_queued_per_caller(c), c->max_queued,
                 c->max_queued - quota_queue_limit(c, false), c->callback_max_pending_per_caller,
                 c->max_stored_bytes_per_caller, quota_sessions_disk_mb_per_caller(c, m->ctx.phys_mem_bytes),
                 quota_sessions_disk_mb(c, m->ctx.phys_mem_bytes));
}

static int load_config(const char *dir, Config **ret, NetPolicy **ret_policy) {
        _cleanup_(config_freep) Config *c = config_new();
        _cleanup_(net_policy_freep) NetPolicy *p = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        if (!c)
                return log_oom();
        r = config_load(c, dir, &error);
        /* [Network] as the proxy needs it, HostsFile= read again: at every load and reload. */
        if (r >= 0)
                r = net_policy_load(c, &p, &error);
        if (r < 0)
                return log_error_errno(r, "Configuration error: %s", error ?: "out of memory");
        *ret = TAKE_PTR(c);
        *ret_policy = TAKE_PTR(p);
        return 0;
}

static int manager_reload(Manager *m) {
        _cleanup_(language_table_unrefp) LanguageTable *lt = NULL;
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_(net_policy_freep) NetPolicy *np = NULL;
        int r;

        (void) sd_notify(false, "RELOADING=1\nSTATUS=Reloading configuration.");
        r = load_config(m->config_dir, &c, &np);
        if (r >= 0) {
                r = load_languages(m, &lt);
                if (r >= 0 && language_table_same_sources(lt, language_table_current()))
                        lt = language_table_unref(lt);   /* the same files: the rows (and versions) stay */
        }
        if (r < 0) {
                log_warning("Reload failed, keeping the previous configuration.");
                (void) sd_notify(false, "READY=1");
                runner_notify_status_now(m->runner);
                return r;
        }
        if (!streq(c->api_socket, m->ctx.config->api_socket) || !streq(c->state_dir, m->ctx.config->state_dir) ||
            !streq(c->runtime_dir, m->ctx.config->runtime_dir) || !streq_ptr(c->database, m->ctx.config->database) ||
            !streq_ptr(c->store, m->ctx.config->store))
                log_notice("APISocket=, StateDirectory=, RuntimeDirectory=, Database= and Store= take effect at the next "
                           "restart.");
        if (!streq_ptr(c->artifacts_dir, m->ctx.config->artifacts_dir) ||
            !streq_ptr(c->artifact_url_key_file, m->ctx.config->artifact_url_key_file))
                log_notice("ArtifactsDirectory= and ArtifactURLKeyFile= take effect at the next restart.");
        if (!strv_equal(c->listen, m->ctx.config->listen) ||
            c->listen_allow_non_loopback != m->ctx.config->listen_allow_non_loopback)
                log_notice("Listen= and ListenAllowNonLoopback= take effect at the next restart.");
        node_reload(m->node, c);
        /* Keep the paths the running parts depend on. */
        SWAP_STR(c->api_socket, m->ctx.config->api_socket);
        SWAP_STR(c->state_dir, m->ctx.config->state_dir);
        SWAP_STR(c->runtime_dir, m->ctx.config->runtime_dir);
        if (sandbox_workspace_bytes(&c->defaults) != sandbox_workspace_bytes(&m->ctx.config->defaults) ||
            c->workspace_pool < m->ctx.config->workspace_pool)
                workspace_pool_drain(m->ctx.pool);
        /* Warm units were started with the configuration that was in force (limits, environment,
         * preloaded modules, the helper): new ones with the new one. */
        warm_pool_drain(m->ctx.warm);
        config_free(m->ctx.config);
        m->ctx.config = TAKE_PTR(c);
        net_policy_free(m->ctx.net_policy);
        m->ctx.net_policy = TAKE_PTR(np);
        if (lt)
                use_languages(m, lt);
        (void) load_environments(m);
        setup_isolation(m);
        log_set_max_level(m->ctx.config->log_level);
        (void) sd_event_source_set_time_relative(m->sweep_timer,
                                                 m->ctx.config->sweep_interval_sec * USEC_PER_SEC);
        (void) sd_event_source_set_enabled(m->sweep_timer, SD_EVENT_ON);
        /* New keys apply to the next request; Listen= needs a restart. */
        (void) http_reload_auth(m->http, m->ctx.config->api_keys_file);
        /* The key file may have changed; the new limits and delays apply to the next attempt. */
        (void) callbacks_reload(m->ctx.callbacks);
        workspace_pool_fill(m->ctx.pool);
        warm_pool_fill(m->ctx.warm);
        log_info("Configuration reloaded from %s.", m->config_dir);
        log_budgets(m);
        (void) sd_notify(false, "READY=1");
        runner_notify_status_now(m->runner);
        runner_dispatch(m->runner);
        return 0;
}

/* The language files (sandboxd.languages(5)): the vendor directory, then CONFIG_DIR/languages. A
 * file that is refused is logged and left out; the others load. Each row gets its filters: the
 * common allow-list plus the row's SystemCall=s, a few milliseconds each, once per load. A row the
 * policy refuses is logged and stays in the table as not available, with the reason. */
static int load_languages(Manager *m, LanguageTable **ret) {
        const char *dirs[] = { m->ctx.languages_dir, m->ctx.languages_etc_dir };
        _cleanup_(language_table_unrefp) LanguageTable *t = NULL;
        _cleanup_strv_free_ char **errors = NULL;
        int r;

        r = language_table_load(dirs, ELEMENTSOF(dirs), &t, &errors);
        if (r < 0)
                return log_error_errno(r, "Cannot load the language definitions from %s and %s: %m", dirs[0],
                                       dirs[1]);
        for (char **e = errors; e && *e; e++)
                log_error("%s", *e);

        for (size_t i = 0; i < language_table_count(t); i++) {
                Language *l = language_table_row(t, i);
                const char *what = "";

                r = seccomp_policy_build(l->extra_syscalls, &l->filter.bpf, &l->filter.bpf_len);
                if (r >= 0) {
                        what = "network ";
                        r = seccomp_policy_build_ex(l->extra_syscalls, true, &l->net_filter.bpf,
                                                    &l->net_filter.bpf_len);
                }
                if (r == -ENOMEM)
                        return log_oom();
                /* A host directory every execution of the language could write would carry data
                 * from one execution to the next: refused, whatever the reason given. */
                if (r >= 0 && l->n_rw_paths > 0) {
                        if (!(l->refused = strdup("ReadWritePath= is not allowed: a host directory every "
                                                       "execution could write would carry data between executions")))
                                return log_oom();
                        log_error("Language '%s': %s; it is not available.", l->name, l->refused);
                } else if (r < 0) {
                        l->filter.bpf = mfree(l->filter.bpf);
                        l->net_filter.bpf = mfree(l->net_filter.bpf);
                        if (asprintf(&l->refused, "its %ssystem call filter cannot be built: %s", what,
                                     r == -EPERM ? "a SystemCall= the policy denies" : strerror(-r)) < 0) {
                                l->refused = NULL;      /* undefined after a failed asprintf() */
                                return log_oom();
                        }
                        log_error("Language '%s': %s; it is not available.", l->name, l->refused);
                }
        }
        if (language_table_count(t) == 0)
                log_warning("No language definitions in %s or %s: every request will be refused.", dirs[0], dirs[1]);
        *ret = TAKE_PTR(t);
        return 0;
}

/* Make t current and ask each runtime for its version (in the background). */
static void use_languages(Manager *m, LanguageTable *t) {
        size_t n_available = 0;

        language_table_set_current(t);
        for (size_t i = 0; i < language_table_count(t); i++)
                n_available += language_available(language_table_row(t, i));
        log_info("%zu languages loaded, %zu of them available.", language_table_count(t), n_available);
        language_versions_probe(m->versions, t);
}

/* The wiring: what the session registry reports goes to the runner (and the sweep). */
static void on_session_ready(void *userdata, Session *s) {
        Manager *m = userdata;

        runner_dispatch(m->runner);
}

static void on_session_failed(void *userdata, Session *s, const char *why) {
        Manager *m = userdata;

        runner_fail_session(m->runner, s, why);
}

static void on_session_removed(void *userdata) {
        Manager *m = userdata;

        /* The directories go once systemd has unmounted: soon, not at the next regular sweep. */
        if (m->sweep_timer) {
                (void) sd_event_source_set_time_relative(m->sweep_timer, USEC_PER_SEC);
                (void) sd_event_source_set_enabled(m->sweep_timer, SD_EVENT_ONESHOT);
        }
}

static const SessionEvents manager_session_events = {
        .ready = on_session_ready,
        .failed = on_session_failed,
        .removed = on_session_removed,
};

static int api_reload(void *userdata) {
        return manager_reload(userdata);
}

static const ApiOps manager_api_ops = {
        .gauges = manager_metrics_gauges,
        .reload = api_reload,
};

/* The network worker runs as "nobody" (65534 where there is none): a user that owns no file and
 * no process of sandboxd's or of a sandbox (those get dynamic users from systemd's range). */
static int start_net_worker(Manager *m) {
        const struct passwd *pw = getpwnam("nobody");
        uid_t uid = pw && pw->pw_uid != 0 ? pw->pw_uid : 65534;
        gid_t gid = pw && pw->pw_gid != 0 ? pw->pw_gid : 65534;

        return net_client_new(m->ctx.event, m->net_worker, uid, gid, &m->ctx.net);
}

int manager_new(const char *config_dir, const char *languages_dir, const char *helper_override,
                const char *net_worker, const char *proxy, const char *environments_dir, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        HttpSettings hs;
        struct group *g;
        sigset_t ss;
        int r;

        m = calloc(1, sizeof(Manager));
        if (!m)
                return log_oom();
        m->ctx.artifacts_fd = -EBADF;
        m->config_dir = strdup(config_dir);
        m->ctx.metrics = metrics_new();
        if (!m->config_dir || !m->ctx.metrics)
                return log_oom();
        if (helper_override && !(m->helper_override = strdup(helper_override)))
                return log_oom();
        if (environments_dir && !(m->environments_override = strdup(environments_dir)))
                return log_oom();
        m->net_worker = strdup(net_worker ?: SANDBOXD_NET_PATH);
        m->proxy = strdup(proxy ?: SANDBOXD_PROXY_PATH);
        m->ctx.proxy = m->proxy;
        if (!m->net_worker || !m->proxy)
                return log_oom();

        r = load_config(config_dir, &m->ctx.config, &m->ctx.net_policy);
        if (r < 0)
                return r;
        log_set_max_level(m->ctx.config->log_level);
        {
                long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

                m->ctx.phys_mem_bytes = pages > 0 && size > 0 ? (uint64_t) pages * (uint64_t) size : 0;
                if (m->ctx.phys_mem_bytes == 0)
                        log_warning("Cannot tell the host's memory: no session disk budget unless MaxSessionsDiskMB= "
                                    "and MaxSessionsDiskMBPerCaller= are set.");
        }

        r = sd_event_default(&m->ctx.event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate event loop: %m");
        (void) sd_event_set_watchdog(m->ctx.event, true);
        r = start_net_worker(m);
        if (r < 0)
                return r;

        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        signal(SIGPIPE, SIG_IGN);
        r = sd_event_add_signal(m->ctx.event, &m->sigterm, SIGTERM, on_signal, m);
        if (r >= 0)
                r = sd_event_add_signal(m->ctx.event, &m->sigint, SIGINT, on_signal, m);
        if (r >= 0)
                r = sd_event_add_signal(m->ctx.event, &m->sighup, SIGHUP, on_signal, m);
        if (r < 0)
                return log_error_errno(r, "Failed to set up signal handling: %m");

        if (asprintf(&m->ctx.languages_etc_dir, "%s/languages", config_dir) < 0 ||
            !(m->ctx.languages_dir = strdup(languages_dir ?: SANDBOXD_LANGUAGES_DIR)))
                return log_oom();
        r = language_versions_new(m->ctx.event, &m->versions);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the version probes: %m");
        {
                _cleanup_(language_table_unrefp) LanguageTable *t = NULL;

                r = load_languages(m, &t);
                if (r < 0)
                        return r;
                use_languages(m, t);
        }

        m->ctx.helper = m->helper_override ?: m->ctx.config->helper;
        r = setup_directories(m);
        if (r < 0)
                return r;
        r = setup_cgroups(m);
        if (r < 0)
                return r;
        setup_isolation(m);
        r = open_store(m);
        if (r < 0)
                return r;
        r = open_artifacts(m);
        if (r < 0)
                return r;
        r = artifact_accounts_new(&m->ctx, &m->ctx.accounts);
        if (r < 0)
                return r;
        r = load_environments(m);
        if (r < 0)
                return r;
        if (access(m->ctx.helper, X_OK) < 0)
                return log_error_errno(errno, "Helper '%s' is not executable: %m", m->ctx.helper);

        r = sd_bus_open_system_with_description(&m->ctx.bus, "sandboxd");
        if (r < 0)
                return log_error_errno(r, "Failed to connect to the system bus: %m");
        r = sd_bus_attach_event(m->ctx.bus, m->ctx.event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus to the event loop: %m");
        /* Losing the bus means losing track of every unit: exit, and be restarted to re-adopt. */
        (void) sd_bus_set_exit_on_disconnect(m->ctx.bus, true);

        r = sysd_new(m->ctx.bus, &m->ctx.sysd);
        if (r < 0)
                return log_error_errno(r, "Failed to subscribe to systemd's signals: %m");

        r = callbacks_new(&m->ctx, &m->ctx.callbacks);
        if (r < 0)
                return r;
        r = workspace_pool_new(&m->ctx, &m->ctx.pool);
        if (r < 0)
                return log_oom();
        r = warm_pool_new(&m->ctx, &m->ctx.warm);
        if (r < 0)
                return log_oom();
        r = unit_reaper_new(&m->ctx, &m->ctx.reaper);
        if (r < 0)
                return log_oom();
        r = sessions_new(&m->ctx, &manager_session_events, m, &m->sessions);
        if (r < 0)
                return log_oom();
        r = runner_new(&m->ctx, m->sessions, &m->runner);
        if (r < 0)
                return log_oom();
        /* After the runner: the heartbeat reports its count. */
        r = node_new(&m->ctx, manager_running, manager_node_lost, m, &m->node);
        if (r < 0)
                return r;
        m->api = (ApiContext) {
                .ctx = &m->ctx,
                .runner = m->runner,
                .sessions = m->sessions,
                .node = m->node,
                .ops = &manager_api_ops,
                .ops_data = m,
        };
        r = sessions_load(m->sessions);
        if (r < 0)
                return r;
        r = runner_adopt(m->runner);
        if (r < 0)
                return r;
        /* /usr layers of earlier starts: in use only by what was adopted (see the runner). */
        if (!runner_has_adopted(m->runner))
                (void) usr_layer_prune(m->ctx.config->state_dir, m->ctx.usr_layer);
        /* Resume the deliveries pending from before (and any the adoption just enqueued). */
        callbacks_kick(m->ctx.callbacks);
        /* Resumed queued executions start now if slots are free: with nothing running, no finishing
         * execution would ever dispatch them. */
        runner_dispatch(m->runner);
        r = runner_start_claiming(m->runner);
        if (r < 0)
                return r;

        g = getgrnam(m->ctx.config->socket_group);
        hs = (HttpSettings) {
                .socket_path = m->ctx.config->api_socket,
                .socket_mode = 0660,
                .socket_gid = g ? g->gr_gid : (gid_t) -1,
                .max_body = m->ctx.config->max_request_bytes,
                .max_connections = (unsigned) m->ctx.config->max_connections,
                .header_timeout_usec = m->ctx.config->request_header_timeout_sec * USEC_PER_SEC,
                .body_timeout_usec = m->ctx.config->request_body_timeout_sec * USEC_PER_SEC,
                .max_connections_per_address = (unsigned) m->ctx.config->max_connections_per_address,
                .max_connections_per_user = (unsigned) m->ctx.config->max_connections_per_user,
                .listen = m->ctx.config->listen,
                .allow_non_loopback = m->ctx.config->listen_allow_non_loopback,
                .api_keys_file = m->ctx.config->api_keys_file,
                .public_route = api_route_is_public,
                .open_listen = m->ctx.config->piston_listen,
                .open_owner = m->ctx.config->piston_owner,
                .open_route = api_route_is_piston,
                .begin = api_begin,
        };
        if (!g)
                log_notice("Group '%s' does not exist: the API socket is for root only.", m->ctx.config->socket_group);
        r = http_new(m->ctx.event, &hs, api_handle, &m->api, &m->http);
        if (r < 0)
                return r;
        r = bus_api_new(&m->api, &m->bus_api);
        if (r < 0)
                return r;

        /* The first sweep after the one below comes soon: what the start-up sweep stopped (units and
         * mounts a previous instance left) is gone by then, and so can its directories. */
        r = sd_event_add_time_relative(m->ctx.event, &m->sweep_timer, CLOCK_MONOTONIC,
                                       MIN(m->ctx.config->sweep_interval_sec, (uint64_t) 5) * USEC_PER_SEC, USEC_PER_SEC,
                                       on_sweep_timer, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the sweep timer: %m");

        sessions_sweep(m->sessions);
        manager_sweep(m);
        workspace_pool_fill(m->ctx.pool);
        *ret = TAKE_PTR(m);
        return 0;
}

int manager_run(Manager *m) {
        int r;

        (void) sd_notifyf(false, "READY=1\nSTATUS=Listening on %s.", m->ctx.config->api_socket);
        log_info("sandboxd " PACKAGE_VERSION " running, API on %s, %" PRIu64 " slots.", m->ctx.config->api_socket,
                 m->ctx.config->max_concurrent);
        log_budgets(m);
        r = sd_event_loop(m->ctx.event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return r;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        m->ctx.stopping = true;
        m->purge = store_call_cancel(m->purge);
        m->http = http_free(m->http);
        m->bus_api = bus_api_free(m->bus_api);
        /* After the APIs (whose callers are gone), before the runner and the store. */
        submissions_stop(&m->api);
        m->node = node_free(m->node);    /* no leave: only a clean stop (SIGTERM) ends the lease */
        m->runner = runner_free(m->runner);
        /* After the jobs: their collections held references. */
        m->ctx.accounts = artifact_accounts_free(m->ctx.accounts);
        m->ctx.callbacks = callbacks_free(m->ctx.callbacks);   /* before the transfers and the store it uses */
        m->sessions = sessions_free(m->sessions);
        m->ctx.net = net_client_free(m->ctx.net);
        m->ctx.warm = warm_pool_free(m->ctx.warm);
        m->ctx.reaper = unit_reaper_free(m->ctx.reaper);
        m->ctx.pool = workspace_pool_free(m->ctx.pool);

        m->ctx.sysd = sysd_free(m->ctx.sysd);
        sd_bus_flush_close_unref(m->ctx.bus);
        sd_event_source_disable_unref(m->sigterm);
        sd_event_source_disable_unref(m->sigint);
        sd_event_source_disable_unref(m->sighup);
        sd_event_source_disable_unref(m->sweep_timer);
        sd_event_unref(m->ctx.event);
        for (size_t i = 0; i < m->ctx.n_cgroups; i++)
                free(m->ctx.cgroups[i].slice_dir);
        store_close(m->ctx.store);
        safe_close(m->ctx.artifacts_fd);
        explicit_bzero(m->ctx.artifact_key, sizeof(m->ctx.artifact_key));
        metrics_free(m->ctx.metrics);
        config_free(m->ctx.config);
        language_versions_free(m->versions);
        language_table_set_current(NULL);
        free(m->ctx.languages_dir);
        free(m->ctx.languages_etc_dir);
        free(m->ctx.usr_layer);
        free(m->ctx.strong_unavailable);
        free(m->ctx.workspaces_dir);
        free(m->ctx.proxy_root);
        free(m->ctx.proxy_empty);
        free(m->config_dir);
        free(m->helper_override);
        free(m->environments_override);
        environments_free(m->ctx.environments);
        free(m->net_worker);
        free(m->proxy);
        net_policy_free(m->ctx.net_policy);
        free(m);
        return NULL;
}
