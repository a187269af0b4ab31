/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <json-c/json.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <systemd/sd-daemon.h>

#include "api.h"
#include "artifact-accounts.h"
#include "artifacts.h"
#include "callback.h"
#include "bus-api.h"
#include "curl-event.h"
#include "job.h"
#include "language.h"
#include "request.h"
#include "log.h"
#include "manager.h"
#include "quota.h"
#include "seccomp-policy.h"
#include "session.h"
#include "strv.h"
#include "sysd.h"
#include "time-util.h"
#include "usr-layer.h"
#include "workspace.h"

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
        const Config *c = m->config;
        int r;

        free(m->workspaces_dir);
        if (asprintf(&m->workspaces_dir, "%s/workspaces", c->runtime_dir) < 0)
                return log_oom();

        r = mkdir_checked(c->state_dir, 0755);
        if (r >= 0)
                r = mkdir_checked(c->runtime_dir, 0755);
        if (r >= 0)
                r = mkdir_checked(m->workspaces_dir, 0700);
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
        m->usr_layer = mfree(m->usr_layer);
        r = usr_layer_build(c->state_dir, &m->usr_layer);
        if (r < 0)
                return r;
        return 0;
}

/* Where the execution units' cgroups will be, per hierarchy, so sandbox-exec can be given its own.
 * sandboxd runs as a service in a top-level slice, so its cgroup's grandparent is systemd's root. */
static int setup_cgroups(Manager *m) {
        static const char *const v1[] = { "memory", "pids", "cpuacct" };
        _cleanup_fclose_ FILE *f = NULL;
        struct statfs sfs;
        char line[1024];

        m->cgroup_v2 = statfs("/sys/fs/cgroup", &sfs) >= 0 && sfs.f_type == CGROUP2_SUPER_MAGIC;
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

                if (m->cgroup_v2) {
                        if (*ctrl != 0)
                                continue;
                        m->cgroups[0].name = "unified";
                        if (asprintf(&m->cgroups[0].slice_dir, "/sys/fs/cgroup%s/sandboxd.slice", path) < 0)
                                return log_oom();
                        m->n_cgroups = 1;
                        break;
                }
                for (size_t i = 0; i < ELEMENTSOF(v1); i++) {
                        char cl[256], *tok, *save = NULL;
                        bool match = false;

                        snprintf(cl, sizeof(cl), "%s", ctrl);
                        for (tok = strtok_r(cl, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                                if (streq(tok, v1[i]))
                                        match = true;
                        if (!match || m->n_cgroups >= ELEMENTSOF(m->cgroups))
                                continue;
                        m->cgroups[m->n_cgroups].name = v1[i];
                        if (asprintf(&m->cgroups[m->n_cgroups].slice_dir, "/sys/fs/cgroup/%s%s/sandboxd.slice",
                                     v1[i], path) < 0)
                                return log_oom();
                        m->n_cgroups++;
                }
        }
        log_info("cgroup %s; %zu hierarchies handed to sandbox-exec%s%s", m->cgroup_v2 ? "v2" : "v1/hybrid",
                 m->n_cgroups, m->n_cgroups ? ", e.g. " : "", m->n_cgroups ? m->cgroups[0].slice_dir : "");
        return 0;
}

Job *manager_find_job(Manager *m, const char *id) {
        for (Job *j = m->jobs; j; j = j->next)
                if (streq(j->exec->id, id))
                        return j;
        return NULL;
}

static Job *job_of_entry(QueueEntry *e) {
        return (Job *) ((uint8_t *) e - offsetof(Job, queue_entry));
}

static void queue_counters(Manager *m) {
        m->n_queued = m->queue.n_waiting;
        m->n_running = m->queue.n_active;
}

int manager_queue_job(Manager *m, Job *j) {
        int r = queue_push(&m->queue, &j->queue_entry, j->owner, j->session ? &j->session->lane : NULL,
                           j->callback_url != NULL);

        queue_counters(m);
        return r;
}

int manager_adopt_running_job(Manager *m, Job *j) {
        int r = queue_push_active(&m->queue, &j->queue_entry, j->owner, j->callback_url != NULL);

        queue_counters(m);
        return r;
}

void manager_job_starts(Manager *m, Job *j) {
        queue_start(&m->queue, &j->queue_entry);
        queue_counters(m);
}

void manager_job_leaves(Manager *m, Job *j) {
        queue_drop(&m->queue, &j->queue_entry);
        queue_counters(m);
}

/* A session's runs form a lane: its next run may start once its mount is ready and no run of it is
 * active. */
static bool session_lane_ready(QueueLane *l, void *userdata) {
        Session *s = (Session *) ((uint8_t *) l - offsetof(Session, lane));

        return session_may_run(s);
}

/* Round robin between the owners with waiting jobs, each owner's oldest first, an owner at
 * MaxRunningPerCaller= skipped; a run of a busy session waits without holding up anything (queue.h).
 * Starting may finish a job at once and re-enter here, so every slot is picked afresh. */
void manager_dispatch_queue(Manager *m) {
        while (!m->stopping && m->n_running < m->config->max_concurrent) {
                QueueEntry *e = queue_pick(&m->queue, (unsigned) quota_max_running_per_caller(m->config),
                                           session_lane_ready, m);

                if (!e)
                        return;
                job_start(job_of_entry(e));
        }
}

void manager_evict_finished(Manager *m) {
        while (m->n_finished > m->config->keep_finished) {
                Job *oldest = NULL;

                for (Job *j = m->jobs; j; j = j->next)
                        if (j->state == JOB_DONE && !j->waiters)
                                oldest = j;
                if (!oldest)
                        return;
                job_free(oldest);
                m->n_finished--;
        }
}

void manager_notify_status(Manager *m) {
        (void) sd_notifyf(false, "STATUS=%u running, %u queued, %" PRIu64 " finished", m->n_running, m->n_queued,
                          m->counter_finished);
}

void manager_metrics_gauges(Manager *m, MetricsGauges *ret) {
        uint64_t outbox = 0;

        /* One indexed count: deliveries stay in the store, not in memory. */
        (void) store_callback_count(m->store, CALLBACK_PENDING, &outbox);
        *ret = (MetricsGauges) {
                .running = m->n_running,
                .queued = m->n_queued,
                .slots = m->config->max_concurrent,
                .queue_max = m->config->max_queued,
                .pool_ready = m->n_pool,
                .pool_target = m->config->workspace_pool,
                .outbox = outbox,
                .sessions = m->n_sessions,
        };
}

/* Leftovers: units of executions nobody tracks (a crash, a restart) are killed and stopped. */
static void on_list_units(void *userdata, int r, const SysdUnitInfo *units, size_t n) {
        Manager *m = userdata;
        unsigned killed = 0;

        if (r < 0) {
                log_warning_errno(r, "Sweep: ListUnitsByPatterns failed: %m");
                return;
        }
        for (size_t i = 0; i < n; i++) {
                const SysdUnitInfo *u = &units[i];

                /* Watched: a job, a pool workspace or a session has it. */
                if (sysd_is_watched(m->sysd, u->name))
                        continue;
                /* Already being stopped (a session just removed: its StopUnit came before this list). */
                if (streq(u->job_type, "stop"))
                        continue;
                if (streq(u->active_state, "failed")) {
                        /* CollectMode=inactive keeps failed units for their Result=; nobody will read
                         * this one. */
                        (void) sysd_reset_failed_unit(m->sysd, u->name);
                        continue;
                }
                if (streq(u->active_state, "inactive") && !endswith(u->name, ".mount"))
                        continue;
                log_info("Sweep: stopping leftover unit %s (%s/%s)", u->name, u->active_state, u->sub_state);
                if (startswith(u->name, "sandboxd-"))
                        (void) sysd_kill_unit(m->sysd, u->name, "all", SIGKILL);
                (void) sysd_stop_unit(m->sysd, u->name, NULL, NULL);
                killed++;
        }
        if (killed) {
                log_info("Sweep: %u leftover units stopped", killed);
                /* Killed units end up failed: sweep again soon to let them go. */
                (void) sd_event_source_set_time_relative(m->sweep_timer, 2 * USEC_PER_SEC);
                (void) sd_event_source_set_enabled(m->sweep_timer, SD_EVENT_ONESHOT);
        }
}

static void sweep_workspace_dirs(Manager *m) {
        _cleanup_close_ int dfd = -EBADF;
        DIR *d;
        struct dirent *de;

        dfd = open(m->workspaces_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return;
        d = fdopendir(dfd);
        if (!d)
                return;
        dfd = -EBADF;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                if (workspace_pool_owns_dir(m, de->d_name))
                        continue;
                /* An execution's workspace is named by its id (or comes from the pool, above). */
                {
                        bool busy = false;
                        for (Job *j = m->jobs; j; j = j->next)
                                if (!job_is_final(j) && j->workspace && endswith(j->workspace, de->d_name) &&
                                    j->workspace[strlen(j->workspace) - strlen(de->d_name) - 1] == '/')
                                        busy = true;
                        if (busy)
                                continue;
                }
                /* Only an empty, unmounted mount point goes: rmdir refuses anything else. */
                (void) unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
        }
        closedir(d);
}

static void manager_sweep(Manager *m) {
        /* The session mounts' names: SESSION_MOUNT_DIR escaped. */
        static const char *const patterns[] = { "sandboxd-*.service", "run-sandboxd-*.mount",
                                                "var-lib-private-sandboxd-sessions-*.mount", NULL };
        int r;

        sweep_workspace_dirs(m);
        r = sysd_list_units(m->sysd, patterns, on_list_units, m);
        if (r < 0)
                log_warning_errno(r, "Sweep: cannot list units: %m");
}

/* Executions far past their deadline: the deadline timer should have ended them; if the unit
 * did not go (a lost signal, a bus hiccup), kill it again. */
static void sweep_overdue(Manager *m) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        for (Job *j = m->jobs; j; j = j->next) {
                if (j->state != JOB_RUNNING || j->start_mono == 0)
                        continue;
                if (now - j->start_mono > 2 * j->exec->limits.timeout_ms * USEC_PER_MSEC + 5 * USEC_PER_SEC) {
                        log_warning("Sweep: %s runs past twice its timeout, killing it again", j->exec->id);
                        j->outcome.deadline_hit = true;
                        (void) sysd_kill_unit(m->sysd, j->unit_name, "all", SIGKILL);
                }
        }
}

static int on_sweep_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        sweep_overdue(m);
        session_sweep(m);
        manager_sweep(m);
        if (m->store && m->config->retention_sec > 0) {
                uint64_t n = 0, now = now_usec(CLOCK_REALTIME), age = m->config->retention_sec * USEC_PER_SEC;

                char **blobs = NULL;

                if (now > age && store_purge_ex(m->store, now - age, &n, &blobs) >= 0 && n > 0)
                        log_info("Sweep: %" PRIu64 " execution records older than %" PRIu64 " s purged.", n,
                                 m->config->retention_sec);
                /* Their artifacts' blobs that no record refers to any more. */
                for (char **b = blobs; b && *b; b++) {
                        int k = artifacts_store_remove_blob(m->artifacts_fd, *b);

                        if (k < 0 && k != -ENOENT)
                                log_warning_errno(k, "Sweep: cannot remove artifact blob %s: %m", *b);
                }
                strv_free(blobs);
                /* Their charges are off the budgets (the store's triggers took them away). */
                if (n > 0)
                        artifact_accounts_refresh(m);
                /* The copies kept in memory go with them. */
                for (Job *j = m->jobs, *next; j; j = next) {
                        next = j->next;
                        if (now > age && job_is_final(j) && !j->waiters && j->exec->finished_usec < now - age) {
                                job_free(j);
                                m->n_finished--;
                        }
                }
        }
        (void) sd_event_source_set_time_relative(s, m->config->sweep_interval_sec * USEC_PER_SEC);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ON);
        return 0;
}

/* Executions still running when sandboxd stops are ended: nothing would read their output. The
 * calls must be answered before the connection closes: systemd checks the caller's credentials
 * when it handles a call, and a caller that has gone by then is refused. So the loop exits only
 * when every call is answered (or after a few seconds). */
static void on_end_reply(void *userdata, _unused_ int r, _unused_ const char *message) {
        Manager *m = userdata;

        if (m->n_end_pending > 0 && --m->n_end_pending == 0)
                (void) sd_event_exit(m->event, 0);
}

static int on_end_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        log_warning("%u calls to stop executions unanswered, exiting anyway.", m->n_end_pending);
        return sd_event_exit(m->event, 0);
}

static void manager_end_executions(Manager *m) {
        /* Executions go on: systemd keeps their units running, their control sockets wait in the fd
         * store, and the next start adopts them (a restart or upgrade loses nothing). Queued ones
         * stay queued in the store. Only the workspaces mounted ahead of time are given back. */
        for (Workspace *w = m->pool; w && m->sysd; w = w->next)
                if (sysd_stop_unit(m->sysd, w->mount_name, on_end_reply, m) >= 0)
                        m->n_end_pending++;
        for (Job *j = m->jobs; j; j = j->next)
                if (!job_is_final(j))
                        job_flush_waiters(j);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        if (si->ssi_signo == SIGHUP) {
                (void) manager_reload(m);
                return 0;
        }
        log_info("Received %s, stopping.", si->ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
        if (m->stopping)
                return 0;
        m->stopping = true;
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Stopping.");
        manager_end_executions(m);
        if (m->n_end_pending == 0)
                return sd_event_exit(m->event, 0);
        return sd_event_add_time_relative(m->event, NULL, CLOCK_MONOTONIC, 5 * USEC_PER_SEC, 0, on_end_timeout, m);
}

static int open_store(Manager *m) {
        _cleanup_free_ char *path = NULL, *error = NULL;
        uint64_t count = 0;
        int r;

        path = m->config->database ? strdup(m->config->database) : NULL;
        if (!path && asprintf(&path, "%s/sandboxd.db", m->config->state_dir) < 0)
                return log_oom();
        r = store_open_sqlite(path, &m->store, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ?: "Cannot open the execution store.");
        (void) store_count(m->store, &count);

        log_info("Execution store %s: %" PRIu64 " records.", path, count);
        return 0;
}

/* The URL key: the bytes of a regular file owned by us and private to us (0600 or stricter), never
 * through a symlink. The default file is created with 32 random bytes if missing (O_EXCL: two starts
 * racing cannot both write one); a configured file must exist. */
static int load_artifact_key(Manager *m) {
        _cleanup_free_ char *def = NULL;
        const char *path = m->config->artifact_url_key_file;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        ssize_t n;

        if (!path) {
                if (asprintf(&def, "%s/artifact-url.key", m->config->state_dir) < 0) {
                        def = NULL;
                        return log_oom();
                }
                path = def;
        }
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0 && errno == ENOENT && def) {
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
                        memcpy(m->artifact_key, key, sizeof(key));
                        m->artifact_key_len = sizeof(key);
                        log_info("Generated the artifact URL key %s.", path);
                        return 0;
                }
                if (errno != EEXIST)
                        return log_error_errno(errno, "Cannot create the artifact URL key '%s': %m", path);
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        }
        if (fd < 0)
                return log_error_errno(errno, "Cannot open the artifact URL key '%s' (ArtifactURLKeyFile=): %m", path);
        if (fstat(fd, &st) < 0)
                return log_error_errno(errno, "Cannot stat '%s': %m", path);
        if (!S_ISREG(st.st_mode))
                return log_error_errno(EBADFD, "The artifact URL key '%s' is not a regular file.", path);
        if (st.st_uid != geteuid() || (st.st_mode & 0077))
                return log_error_errno(EPERM, "The artifact URL key '%s' must be owned by uid %u and not accessible to "
                                       "group or others (chmod 0600).", path, (unsigned) geteuid());
        if (st.st_size < SIGNED_URL_KEY_MIN || st.st_size > SIGNED_URL_KEY_MAX)
                return log_error_errno(EINVAL, "The artifact URL key '%s' has %jd bytes, it needs %d to %d.", path,
                                       (intmax_t) st.st_size, SIGNED_URL_KEY_MIN, SIGNED_URL_KEY_MAX);
        n = loop_read(fd, m->artifact_key, (size_t) st.st_size);
        if (n != st.st_size)
                return log_error_errno(n < 0 ? (int) n : EIO, "Cannot read the artifact URL key '%s': %m", path);
        m->artifact_key_len = (size_t) n;
        return 0;
}

static int open_artifacts(Manager *m) {
        _cleanup_free_ char *def = NULL;
        const char *dir = m->config->artifacts_dir;
        int r;

        if (!dir) {
                if (asprintf(&def, "%s/artifacts", m->config->state_dir) < 0) {
                        def = NULL;
                        return log_oom();
                }
                dir = def;
        }
        r = artifacts_store_open(dir);
        if (r < 0)
                return log_error_errno(r, "Cannot open the artifact store '%s' (ArtifactsDirectory=): %m", dir);
        m->artifacts_fd = r;
        return load_artifact_key(m);
}

/* The rest of a queued request, as job_persist() stored it. */
static int request_from_record(Manager *m, StoreRecord *rec, ExecRequest **ret) {
        _cleanup_(exec_request_freep) ExecRequest *req = calloc(1, sizeof(ExecRequest));
        json_object *o = NULL, *env, *seed, *files;
        int r = -EBADMSG;

        if (!req)
                return -ENOMEM;
        req->language = language_find(rec->exec->language);
        if (!req->language || !rec->code || !rec->request)
                return -EBADMSG;
        o = json_tokener_parse(rec->request);
        if (!o || !json_object_object_get_ex(o, "env", &env) || !json_object_is_type(env, json_type_array) ||
            !json_object_object_get_ex(o, "seed", &seed))
                goto finish;
        req->n_env = json_object_array_length(env);
        if (req->n_env > REQUEST_ENV_MAX)
                goto finish;
        req->env = calloc(req->n_env + 1, sizeof(char *));
        if (!req->env) {
                r = -ENOMEM;
                goto finish;
        }
        for (size_t i = 0; i < req->n_env; i++) {
                req->env[i] = strdup(json_object_get_string(json_object_array_get_idx(env, i)) ?: "");
                if (!req->env[i]) {
                        r = -ENOMEM;
                        goto finish;
                }
        }
        req->seed = json_object_get_uint64(seed);
        req->callback_url = callback_url_from_request_json(rec->request);
        /* The input files, checked again against the configuration as it is now. */
        if (json_object_object_get_ex(o, "files", &files)) {
                RequestError err;

                r = request_parse_files(files, m->config, rec->exec->limits.disk_mb, req, &err);
                if (r < 0) {
                        if (r != -ENOMEM) {
                                log_warning("%s: stored input files refused: %s", rec->exec->id, err.message);
                                r = -EBADMSG;
                        }
                        goto finish;
                }
        }
        req->execution_id = strdup(rec->exec->id);
        req->session_id = rec->exec->session_id ? strdup(rec->exec->session_id) : NULL;
        req->code = TAKE_PTR(rec->code);
        req->code_len = strlen(req->code);
        req->limits = rec->exec->limits;
        memcpy(req->fingerprint, rec->fingerprint, sizeof(req->fingerprint));
        if (!req->execution_id || (rec->exec->session_id && !req->session_id)) {
                r = -ENOMEM;
                goto finish;
        }
        *ret = TAKE_PTR(req);
        r = 0;
finish:
        json_object_put(o);
        return r;
}

/* At start only (before the loop runs), so a synchronous call is fine here. */
static bool unit_exists(Manager *m, const char *id) {
        _cleanup_free_ char *name = execution_unit_name(id);

        return name && sysd_unit_exists_sync(m->sysd, name);
}

/* A passed fd nobody takes. LISTEN_FDS stays in the environment for http.c, and sd_listen_fds()
 * there touches every fd of the range (F_SETFD): a closed one fails the start with EBADF, again at
 * every restart while the fd store holds the fd. So the number stays valid, on /dev/null. */
static void release_passed_fd(int fd) {
        _cleanup_close_ int null = -EBADF;

        if (fd < 0)
                return;
        null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0 || dup3(null, fd, O_CLOEXEC) < 0)
                safe_close(fd);
}

/* After a restart: running executions are watched again (with their control socket from systemd's
 * fd store: report and output intact), queued ones go back in the queue in their order, and a
 * record whose execution cannot be resumed is failed with a reason: never lost, never stuck. */
static int manager_adopt(Manager *m) {
        StoreRecord **l = NULL;
        size_t n = 0, adopted = 0, requeued = 0, failed = 0;
        char **names = NULL;
        int n_fds, r;

        n_fds = sd_listen_fds_with_names(false, &names);
        if (n_fds < 0)
                n_fds = 0;

        r = store_list_unfinished(m->store, &l, &n);
        if (r < 0) {
                strv_free_n(names, (size_t) n_fds);
                return log_error_errno(r, "Cannot read unfinished executions: %s", store_error_message(m->store));
        }
        for (size_t i = 0; i < n; i++) {
                Execution *e = l[i]->exec;
                char want[96];
                int fd = -EBADF;
                Job *j;

                snprintf(want, sizeof(want), "ctl-%s", e->id);
                for (int k = 0; k < n_fds; k++)
                        if (names && names[k] && streq(names[k], want)) {
                                fd = SD_LISTEN_FDS_START + k;
                                free(names[k]);
                                names[k] = NULL;        /* claimed */
                                break;
                        }

                /* Queued on record, but started: the crash came between StartTransientUnit and
                 * the record's update. The unit (or its control socket) tells. */
                if (e->status == EXEC_QUEUED && (fd >= 0 || unit_exists(m, e->id))) {
                        log_notice("%s: was being started when sandboxd stopped; adopting it.", e->id);
                        e->status = EXEC_RUNNING;
                }

                if (e->status == EXEC_RUNNING) {
                        (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
                        (void) fcntl(fd, F_SETFL, O_NONBLOCK);
                        r = job_adopt(m, l[i], fd, &j);
                        if (r >= 0) {
                                adopted++;
                                continue;
                        }
                        release_passed_fd(fd);
                } else if (e->status == EXEC_QUEUED) {
                        ExecRequest *req = NULL;
                        uint64_t created = e->created_usec;

                        release_passed_fd(fd);
                        r = request_from_record(m, l[i], &req);
                        if (r >= 0)
                                r = job_new(m, req, l[i]->owner, &j);
                        if (r >= 0) {
                                j->exec->created_usec = created;
                                requeued++;
                                continue;
                        }
                } else
                        release_passed_fd(fd);

                /* Cannot be resumed: say so in the record. */
                e = l[i]->exec ?: e;
                if (!l[i]->exec)
                        continue;
                e->status = EXEC_FAILED;
                e->error_type = ERROR_INTERNAL;
                e->reason = "sandboxd restarted and could not resume this execution";
                e->finished_usec = now_usec(CLOCK_REALTIME);
                {
                        _cleanup_free_ char *url = callback_url_from_request_json(l[i]->request);

                        if (url && callback_prepare(e, url, &l[i]->callback) < 0)
                                log_oom();
                }
                if (store_put(m->store, l[i]) < 0)
                        log_warning("%s: cannot mark as failed: %s", e->id, store_error_message(m->store));
                failed++;
        }
        store_records_free(l, n);

        /* Control sockets nobody claims (a record purged meanwhile): let them go. */
        for (int k = 0; k < n_fds; k++)
                if (names && names[k] && startswith(names[k], "ctl-")) {
                        char msg[128];

                        snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", names[k]);
                        (void) sd_notify(false, msg);
                        release_passed_fd(SD_LISTEN_FDS_START + k);
                }
        strv_free_n(names, (size_t) n_fds);

        if (adopted + requeued + failed > 0)
                log_info("After the restart: %zu running executions adopted, %zu queued resumed, %zu failed.",
                         adopted, requeued, failed);
        return 0;
}

/* What quota.c makes of the configuration, derived values included. */
static void log_budgets(Manager *m) {
        const Config *c = m->config;

        log_info("Budgets per caller: %" PRIu64 " running, %" PRIu64 " queued (of %" PRIu64 ", %" PRIu64
                 " kept for admins), %" PRIu64 " callbacks pending, %" PRIu64 " bytes stored, %" PRIu64
                 " MB of session disk (of %" PRIu64 " MB for all sessions).",
                 quota_max_running_per_caller(c), quota_max_queued_per_caller(c), c->max_queued,
                 c->max_queued - quota_queue_limit(c, false), c->callback_max_pending_per_caller,
                 c->max_stored_bytes_per_caller, quota_sessions_disk_mb_per_caller(c, m->phys_mem_bytes),
                 quota_sessions_disk_mb(c, m->phys_mem_bytes));
}

static int load_config(const char *dir, Config **ret) {
        _cleanup_(config_freep) Config *c = config_new();
        _cleanup_free_ char *error = NULL;
        int r;

        if (!c)
                return log_oom();
        r = config_load(c, dir, &error);
        if (r < 0)
                return log_error_errno(r, "Configuration error: %s", error ?: "out of memory");
        *ret = TAKE_PTR(c);
        return 0;
}

int manager_reload(Manager *m) {
        _cleanup_(config_freep) Config *c = NULL;
        int r;

        (void) sd_notify(false, "RELOADING=1\nSTATUS=Reloading configuration.");
        r = load_config(m->config_dir, &c);
        if (r < 0) {
                log_warning("Reload failed, keeping the previous configuration.");
                (void) sd_notify(false, "READY=1");
                manager_notify_status(m);
                return r;
        }
        if (!streq(c->api_socket, m->config->api_socket) || !streq(c->state_dir, m->config->state_dir) ||
            !streq(c->runtime_dir, m->config->runtime_dir) || !streq_ptr(c->database, m->config->database))
                log_notice("APISocket=, StateDirectory=, RuntimeDirectory= and Database= take effect at the next restart.");
        if (!streq_ptr(c->artifacts_dir, m->config->artifacts_dir) ||
            !streq_ptr(c->artifact_url_key_file, m->config->artifact_url_key_file))
                log_notice("ArtifactsDirectory= and ArtifactURLKeyFile= take effect at the next restart.");
        if (!strv_equal(c->listen, m->config->listen))
                log_notice("Listen= takes effect at the next restart.");
        /* Keep the paths the running parts depend on. */
        SWAP_STR(c->api_socket, m->config->api_socket);
        SWAP_STR(c->state_dir, m->config->state_dir);
        SWAP_STR(c->runtime_dir, m->config->runtime_dir);
        if (sandbox_workspace_bytes(&c->defaults) != sandbox_workspace_bytes(&m->config->defaults) ||
            c->workspace_pool < m->config->workspace_pool)
                workspace_pool_drain(m);
        config_free(m->config);
        m->config = TAKE_PTR(c);
        log_set_max_level(m->config->log_level);
        (void) sd_event_source_set_time_relative(m->sweep_timer,
                                                 m->config->sweep_interval_sec * USEC_PER_SEC);
        (void) sd_event_source_set_enabled(m->sweep_timer, SD_EVENT_ON);
        /* New keys apply to the next request; Listen= needs a restart. */
        (void) http_reload_auth(m->http, m->config->api_keys_file);
        /* The key file may have changed; the new limits and delays apply to the next attempt. */
        (void) callbacks_reload(m->callbacks);
        workspace_pool_fill(m);
        log_info("Configuration reloaded from %s.", m->config_dir);
        log_budgets(m);
        (void) sd_notify(false, "READY=1");
        manager_notify_status(m);
        manager_dispatch_queue(m);
        return 0;
}

/* One filter per language row: the common allow-list plus the row's extra_syscalls. A few
 * milliseconds each, once; a row the policy refuses stops the daemon here rather than failing
 * every execution of that language later. */
static int build_seccomp_filters(Manager *m) {
        size_t n = language_count();
        int r;

        m->filters = calloc(n, sizeof(SeccompFilter));
        if (!m->filters)
                return log_oom();
        m->n_filters = n;

        for (size_t i = 0; i < n; i++) {
                const Language *l = language_get(i);

                r = seccomp_policy_build(l->extra_syscalls, &m->filters[i].bpf, &m->filters[i].bpf_len);
                if (r < 0)
                        return log_error_errno(r, "Failed to compile the system call filter for '%s': %m",
                                               l->name);
        }
        return 0;
}

const SeccompFilter *manager_seccomp_filter(Manager *m, const Language *l) {
        for (size_t i = 0; i < m->n_filters; i++)
                if (language_get(i) == l)
                        return m->filters + i;
        return NULL;
}

int manager_new(const char *config_dir, const char *helper_override, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        HttpSettings hs;
        struct group *g;
        sigset_t ss;
        int r;

        m = calloc(1, sizeof(Manager));
        if (!m)
                return log_oom();
        m->artifacts_fd = -EBADF;
        queue_init(&m->queue);
        m->config_dir = strdup(config_dir);
        m->metrics = metrics_new();
        if (!m->config_dir || !m->metrics)
                return log_oom();
        if (helper_override && !(m->helper_override = strdup(helper_override)))
                return log_oom();

        r = load_config(config_dir, &m->config);
        if (r < 0)
                return r;
        log_set_max_level(m->config->log_level);
        {
                long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

                m->phys_mem_bytes = pages > 0 && size > 0 ? (uint64_t) pages * (uint64_t) size : 0;
                if (m->phys_mem_bytes == 0)
                        log_warning("Cannot tell the host's memory: no session disk budget unless MaxSessionsDiskMB= "
                                    "and MaxSessionsDiskMBPerCaller= are set.");
        }

        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate event loop: %m");
        (void) sd_event_set_watchdog(m->event, true);
        r = curl_event_new(m->event, &m->curl);
        if (r < 0)
                return log_error_errno(r, "Failed to set up libcurl: %m");

        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        signal(SIGPIPE, SIG_IGN);
        r = sd_event_add_signal(m->event, &m->sigterm, SIGTERM, on_signal, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, &m->sigint, SIGINT, on_signal, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, &m->sighup, SIGHUP, on_signal, m);
        if (r < 0)
                return log_error_errno(r, "Failed to set up signal handling: %m");

        r = build_seccomp_filters(m);
        if (r < 0)
                return r;

        r = setup_directories(m);
        if (r < 0)
                return r;
        r = setup_cgroups(m);
        if (r < 0)
                return r;
        r = open_store(m);
        if (r < 0)
                return r;
        r = open_artifacts(m);
        if (r < 0)
                return r;
        r = artifact_accounts_load(m);
        if (r < 0)
                return r;
        if (access(m->helper_override ?: m->config->helper, X_OK) < 0)
                return log_error_errno(errno, "Helper '%s' is not executable: %m", m->helper_override ?: m->config->helper);

        r = sd_bus_open_system_with_description(&m->bus, "sandboxd");
        if (r < 0)
                return log_error_errno(r, "Failed to connect to the system bus: %m");
        r = sd_bus_attach_event(m->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus to the event loop: %m");
        /* Losing the bus means losing track of every unit: exit, and be restarted to re-adopt. */
        (void) sd_bus_set_exit_on_disconnect(m->bus, true);

        r = sysd_new(m->bus, &m->sysd);
        if (r < 0)
                return log_error_errno(r, "Failed to subscribe to systemd's signals: %m");

        r = callbacks_new(m, &m->callbacks);
        if (r < 0)
                return r;
        r = session_load(m);
        if (r < 0)
                return r;
        r = manager_adopt(m);
        if (r < 0)
                return r;
        /* /usr layers of earlier starts: in use only by what was adopted (see job_finalize()). */
        if (m->n_adopted_live == 0)
                (void) usr_layer_prune(m->config->state_dir, m->usr_layer);
        /* Resume the deliveries pending from before (and any the adoption just enqueued). */
        callbacks_kick(m->callbacks);
        /* Resumed queued executions start now if slots are free: with nothing running, no finishing
         * execution would ever dispatch them. */
        manager_dispatch_queue(m);

        g = getgrnam(m->config->socket_group);
        hs = (HttpSettings) {
                .socket_path = m->config->api_socket,
                .socket_mode = 0660,
                .socket_gid = g ? g->gr_gid : (gid_t) -1,
                .max_body = m->config->max_request_bytes,
                .max_connections = (unsigned) m->config->max_connections,
                .listen = m->config->listen,
                .api_keys_file = m->config->api_keys_file,
                .public_route = api_route_is_public,
        };
        if (!g)
                log_notice("Group '%s' does not exist: the API socket is for root only.", m->config->socket_group);
        r = http_new(m->event, &hs, api_handle, m, &m->http);
        if (r < 0)
                return r;
        r = bus_api_new(m, &m->bus_api);
        if (r < 0)
                return r;

        r = sd_event_add_time_relative(m->event, &m->sweep_timer, CLOCK_MONOTONIC,
                                       m->config->sweep_interval_sec * USEC_PER_SEC, USEC_PER_SEC, on_sweep_timer, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the sweep timer: %m");

        session_sweep(m);
        manager_sweep(m);
        workspace_pool_fill(m);
        *ret = TAKE_PTR(m);
        return 0;
}

int manager_run(Manager *m) {
        int r;

        (void) sd_notifyf(false, "READY=1\nSTATUS=Listening on %s.", m->config->api_socket);
        log_info("sandboxd " PACKAGE_VERSION " running, API on %s, %" PRIu64 " slots.", m->config->api_socket,
                 m->config->max_concurrent);
        log_budgets(m);
        r = sd_event_loop(m->event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return r;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        m->stopping = true;
        m->http = http_free(m->http);
        m->bus_api = bus_api_free(m->bus_api);
        while (m->jobs)
                job_free(m->jobs);
        queue_done(&m->queue);
        artifact_accounts_free(m);      /* after the jobs: their collections held references */
        m->callbacks = callbacks_free(m->callbacks);   /* before the transfers and the store it uses */
        session_free_all(m);
        m->curl = curl_event_free(m->curl);
        while (m->pool) {
                Workspace *w = m->pool;
                m->pool = w->next;
                workspace_free(w);
        }

        m->sysd = sysd_free(m->sysd);
        sd_bus_flush_close_unref(m->bus);
        sd_event_source_disable_unref(m->sigterm);
        sd_event_source_disable_unref(m->sigint);
        sd_event_source_disable_unref(m->sighup);
        sd_event_source_disable_unref(m->sweep_timer);
        sd_event_unref(m->event);
        for (size_t i = 0; i < m->n_cgroups; i++)
                free(m->cgroups[i].slice_dir);
        store_close(m->store);
        safe_close(m->artifacts_fd);
        explicit_bzero(m->artifact_key, sizeof(m->artifact_key));
        metrics_free(m->metrics);
        config_free(m->config);
        for (size_t i = 0; i < m->n_filters; i++)
                free(m->filters[i].bpf);
        free(m->filters);
        free(m->usr_layer);
        free(m->workspaces_dir);
        free(m->config_dir);
        free(m->helper_override);
        free(m);
        return NULL;
}
