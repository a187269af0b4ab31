/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "admission/quota.h"
#include "job.h"
#include "log.h"
#include "model/result.h"
#include "model/scoped-id.h"
#include "session.h"
#include "store/store.h"
#include "systemd/sysd.h"
#include "time-util.h"
#include "unit/unit-props.h"

struct Sessions {
        const Context *ctx;
        const SessionEvents *events;
        void *userdata;
        Session *list;
        unsigned n;
};

static Session *session_free(Session *s) {
        if (!s)
                return NULL;
        /* Its record's writes under way are still made; nobody is told of them. */
        if (s->sessions && s->sessions->ctx->store)
                store_cancel_userdata(s->sessions->ctx->store, s);
        sysd_call_free(s->call);
        sysd_watch_free(s->watch);
        free(s->id);
        free(s->key);
        free(s->owner);
        free(s->name);
        free(s->path);
        free(s->mount_name);
        free(s->state_dir);
        free(s);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Session *, session_free);

int sessions_new(const Context *ctx, const SessionEvents *ev, void *userdata, Sessions **ret) {
        Sessions *ss = calloc(1, sizeof(Sessions));

        if (!ss)
                return -ENOMEM;
        ss->ctx = ctx;
        ss->events = ev;
        ss->userdata = userdata;
        *ret = ss;
        return 0;
}

static void session_unlink(Sessions *ss, Session *s) {
        for (Session **p = &ss->list; *p; p = &(*p)->next)
                if (*p == s) {
                        *p = s->next;
                        ss->n--;
                        return;
                }
}

Sessions *sessions_free(Sessions *ss) {
        if (!ss)
                return NULL;
        while (ss->list) {
                Session *s = ss->list;

                ss->list = s->next;
                session_free(s);
        }
        if (ss->ctx->store)
                store_cancel_userdata(ss->ctx->store, ss);
        free(ss);
        return NULL;
}

Session *sessions_find(const Sessions *ss, const char *owner, const char *id) {
        for (Session *s = ss->list; s; s = s->next)
                if (streq(s->id, id) && streq_ptr(s->owner, owner))
                        return s;
        return NULL;
}

Session *sessions_find_key(const Sessions *ss, const char *key) {
        for (Session *s = ss->list; s; s = s->next)
                if (streq(s->key, key))
                        return s;
        return NULL;
}

Session *sessions_first(const Sessions *ss) {
        return ss->list;
}

unsigned sessions_count(const Sessions *ss) {
        return ss->n;
}

static void on_session_job_removed(void *userdata, const char *unit, const char *result);
static const SysdUnitEvents session_events = { .job_removed = on_session_job_removed };

static bool session_owns_dir(const Sessions *ss, const char *name) {
        for (Session *s = ss->list; s; s = s->next)
                if (streq(s->name, name))
                        return true;
        return false;
}

static void session_write_failed(const Context *ctx, const char *key, int r) {
        metrics_store_error(ctx->metrics);
        log_error_errno(r, "Session %s: cannot write its record: %s", key, store_error_message(ctx->store));
}

/* The answer to session_persist_async(); never called after session_free() (store_cancel_userdata()). */
static void on_session_written(void *userdata, int r, StoreRecord *rec) {
        Session *s = userdata;

        store_record_free(rec);
        if (r < 0)
                session_write_failed(s->sessions->ctx, s->key, r);
}

StoreSession session_store_row(const Session *s) {
        return (StoreSession) {
                .session_id = s->key,
                .client_id = streq(s->key, s->id) ? NULL : s->id,
                .owner = s->owner,
                .mount_unit = s->mount_name,
                .path = s->path,
                .disk_mb = s->disk_mb,
                .created_usec = s->created_usec,
                .last_used_usec = s->last_used_usec,
                .executions = s->executions,
                .node = (char *) s->sessions->ctx->node_name,
        };
}

/* Its row after a run, without waiting for the store (issue 22): the session's own state is in
 * memory, the row is for a restart and for the other nodes (its runs are routed here). */
static void session_persist_async(Session *s) {
        const Context *ctx = s->sessions->ctx;
        StoreSession x = session_store_row(s);
        int r;

        if (!ctx->store)
                return;
        r = store_session_put_async(ctx->store, &x, on_session_written, s, NULL);
        if (r < 0)
                session_write_failed(ctx, s->key, r);
}


/* name → the Session's derived paths. */
static Session *session_new(Sessions *ss, const char *key, const char *id, const char *owner, const char *name,
                            uint64_t disk_mb) {
        Session *s = calloc(1, sizeof(Session));

        if (!s)
                return NULL;
        s->sessions = ss;
        s->disk_mb = disk_mb;
        s->id = strdup(id);
        s->key = strdup(key);
        s->name = strdup(name);
        if (owner)
                s->owner = strdup(owner);
        if (!s->id || !s->key || !s->name || (owner && !s->owner) ||
            asprintf(&s->path, "%s/%s", SESSION_MOUNT_DIR, name) < 0 ||
            asprintf(&s->state_dir, "%s/%s", SESSION_STATE_PREFIX, name) < 0) {
                s->path = s->state_dir = NULL;
                return session_free(s);
        }
        s->mount_name = mount_unit_name_from_path(s->path);
        if (!s->mount_name)
                return session_free(s);
        /* Watched for its whole life: its start job's end, and "tracked" for the sweep. */
        if (ss->ctx->sysd && sysd_watch(ss->ctx->sysd, s->mount_name, &session_events, s, &s->watch) < 0)
                return session_free(s);
        return s;
}

/* Is the mount root the session's tmpfs (not the bare directory under it)? Every component of the
 * path is root's: SESSION_MOUNT_DIR is 0700 root and the tmpfs root is 0755 root (mode= of the
 * mount); the sandbox owns only workspace/ and tmp/ below it. O_PATH: nothing is read. */
static int session_statfs(const Session *s, struct statfs *ret) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st, parent;

        fd = open(s->path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstatfs(fd, ret) < 0 || fstat(fd, &st) < 0 || stat(SESSION_MOUNT_DIR, &parent) < 0)
                return -errno;
        if (ret->f_type != TMPFS_MAGIC || st.st_dev == parent.st_dev || st.st_uid != 0)
                return -EMEDIUMTYPE;
        return 0;
}

int session_used_bytes(const Session *s, uint64_t *ret) {
        struct statfs sfs;
        int r;

        r = session_statfs(s, &sfs);
        if (r < 0)
                return r;
        *ret = (uint64_t) (sfs.f_blocks - sfs.f_bfree) * (uint64_t) sfs.f_bsize;
        return 0;
}

bool session_may_run(const Session *s) {
        /* An upload streaming in has the workspace until it is renamed into place or dropped. */
        return s->ready && !s->active && s->n_uploads == 0;
}

void session_run_started(Session *s, Job *j) {
        s->active = j;
        s->last_used_usec = now_usec(CLOCK_REALTIME);
}

void session_job_gone(Session *s, Job *j, bool ran) {
        if (s->n_jobs > 0)
                s->n_jobs--;
        if (s->active == j)
                s->active = NULL;
        s->last_used_usec = now_usec(CLOCK_REALTIME);
        if (ran)
                s->executions++;
        session_persist_async(s);
}

/* The queued runs of a session that can no longer run end with an internal error (their owner
 * ends them). */
static void session_fail_jobs(Session *s, const char *why) {
        s->sessions->events->failed(s->sessions->userdata, s, why);
}

/* The answer to a removed session's delete; never called after sessions_free() (store_cancel_userdata()). */
static void on_session_deleted(void *userdata, int r, StoreRecord *rec) {
        Sessions *ss = userdata;

        store_record_free(rec);
        if (r < 0)
                log_warning("Cannot delete the record of a removed session: %s", store_error_message(ss->ctx->store));
}

void session_recorded(Session *s, int r) {
        if (!s->unrecorded)
                return;
        if (r >= 0) {
                s->unrecorded = false;
                return;
        }
        session_write_failed(s->sessions->ctx, s->key, r);
        (void) session_remove(s, "its record could not be written");
}

int session_remove(Session *s, const char *why) {
        Sessions *ss = s->sessions;
        const Context *ctx = ss->ctx;

        if (s->n_jobs > 0 || s->active || s->n_uploads > 0)
                return -EBUSY;
        log_info("Session %s: %s; removing its workspace (%s).", s->key, why, s->mount_name);
        if (ctx->sysd)
                (void) sysd_stop_unit(ctx->sysd, s->mount_name, NULL, NULL);
        /* Without waiting: its answer names no session (the session is gone by then). */
        if (ctx->store && store_session_delete_async(ctx->store, s->key, on_session_deleted, ss, NULL) < 0)
                log_warning("Session %s: cannot delete its record: %s", s->key, store_error_message(ctx->store));
        session_unlink(ss, s);
        session_free(s);
        /* The directories go once systemd has unmounted: soon, not at the next regular sweep. */
        ss->events->removed(ss->userdata);
        return 0;
}

static void on_mount_reply(void *userdata, int r, const char *message) {
        Session *s = userdata;

        s->call = sysd_call_free(s->call);
        if (r < 0) {
                log_error("Session %s: starting its workspace mount %s failed: %s", s->key, s->mount_name,
                          strna(message));
                session_fail_jobs(s, "the session's workspace could not be mounted");
                (void) session_remove(s, "its workspace could not be mounted");
        }
}

static void on_session_job_removed(void *userdata, const char *unit, const char *result) {
        Session *s = userdata;
        struct statfs sfs;
        int r;

        if (s->ready)
                return;                 /* a stop job, or a repeat */
        r = streq(result, "done") ? session_statfs(s, &sfs) : -EIO;
        if (r < 0) {
                log_error_errno(r, "Session %s: workspace mount job '%s', the tmpfs is not there: %m", s->key, result);
                session_fail_jobs(s, "the session's workspace could not be mounted");
                (void) session_remove(s, "its workspace could not be mounted");
                return;
        }
        s->ready = true;
        log_debug("Session %s: workspace mounted at %s", s->key, s->path);
        s->sessions->events->ready(s->sessions->userdata, s);
}

int sessions_acquire(Sessions *ss, const char *id, const char *owner, uint64_t disk_mb, Session **ret,
                    RequestError *err) {
        const Context *ctx = ss->ctx;
        _cleanup_(session_freep) Session *created = NULL;
        QuotaUsage u = { .new_session_disk_mb = disk_mb };
        uint64_t mine = 0;
        char name[64], key[SCOPED_ID_MAX];
        Session *s;
        int r;

        /* The caller's own session of that name; another caller's of the same name is a different
         * session, never used, never revealed (not even an administrator's run goes into someone
         * else's files). */
        s = sessions_find(ss, owner, id);
        if (s) {
                /* The tmpfs has one size for its whole life. */
                if (s->disk_mb != disk_mb)
                        return request_error(err, -EEXIST, API_ERROR_CONFLICT, "limits.disk_mb",
                                             "limits.disk_mb: session '%s' was created with disk_mb=%" PRIu64
                                             ", this request asks for %" PRIu64, id, s->disk_mb, disk_mb);
                *ret = s;
                return 0;
        }

        if (ss->n >= ctx->config->max_sessions)
                return request_error(err, -EUSERS, API_ERROR_TOO_MANY_SESSIONS, "session_id",
                                     "session_id: %u sessions exist (MaxSessions=%" PRIu64 "); delete one or retry "
                                     "later", ss->n, ctx->config->max_sessions);
        for (Session *x = ss->list; x; x = x->next) {
                u.sessions_disk_mb += x->disk_mb;
                if (streq_ptr(x->owner, owner)) {
                        mine++;
                        u.caller_sessions_disk_mb += x->disk_mb;
                }
        }
        if (mine >= ctx->config->max_sessions_per_caller)
                return request_error(err, -EUSERS, API_ERROR_TOO_MANY_SESSIONS, "session_id",
                                     "session_id: you hold %" PRIu64 " sessions (MaxSessionsPerCaller=%" PRIu64 "); "
                                     "delete one or retry later", mine, ctx->config->max_sessions_per_caller);
        /* Each session's tmpfs pages stay charged to sandboxd.slice for the session's life, whoever
         * wrote them: the sum of the sizes is what sessions may pin in memory. */
        r = quota_check_session(ctx->config, ctx->phys_mem_bytes, &u, err);
        if (r < 0)
                return r;

        /* The directory is named afresh, not after the id: a session deleted and created again never
         * meets a mount of its predecessor still being stopped. */
        r = id_generate(name, sizeof(name), "sess");
        if (r >= 0)
                r = scoped_id(key, "sess", owner, id);
        if (r < 0)
                goto internal;
        s = created = session_new(ss, key, id, owner, name, disk_mb);
        if (!s) {
                r = -ENOMEM;
                goto internal;
        }
        s->created_usec = s->last_used_usec = now_usec(CLOCK_REALTIME);
        {
                Limits l = { .disk_mb = disk_mb };

                r = sysd_start_tmpfs(ctx->sysd, s->mount_name, s->path, sandbox_workspace_bytes(&l), on_mount_reply, s,
                                     &s->call);
        }
        if (r < 0)
                goto internal;
        /* Its row goes with the first record of its run (the caller's, session_recorded()). */
        s->unrecorded = true;
        s->next = ss->list;
        ss->list = TAKE_PTR(created);
        ss->n++;
        log_info("Session %s (%s): created for %s, disk_mb=%" PRIu64 ", at %s", s->key, id, strna(owner), disk_mb,
                 s->path);
        *ret = s;
        return 0;

internal:
        return request_error(err, r, API_ERROR_INTERNAL, NULL, "cannot create session '%s': %s", id, strerror(-r));
}

int sessions_load(Sessions *ss) {
        const Context *ctx = ss->ctx;
        StoreSession *l = NULL;
        size_t n = 0, kept = 0, gone = 0;
        int r;

        if (!ctx->store)
                return 0;
        r = store_session_list(ctx->store, &l, &n);
        if (r < 0)
                return log_error_errno(r, "Cannot read the sessions: %s", store_error_message(ctx->store));
        for (size_t i = 0; i < n; i++) {
                const char *slash = strrchr(l[i].path, '/');
                _cleanup_free_ char *dir = slash ? strndup(l[i].path, (size_t) (slash - l[i].path)) : NULL;
                struct statfs sfs;
                Session *s;

                /* Another node's (a store several nodes share): its runs are routed there. */
                if (ctx->shared_queue && l[i].node && !streq_ptr(l[i].node, ctx->node_name))
                        continue;
                /* Only what this binary would have created is taken back. */
                if (!dir || !streq(dir, SESSION_MOUNT_DIR) || !id_is_valid(slash + 1, 64) ||
                    !(s = session_new(ss, l[i].session_id, l[i].client_id ?: l[i].session_id, l[i].owner, slash + 1,
                                      l[i].disk_mb))) {
                        log_warning("Session %s: record not understood, dropped.", l[i].session_id);
                        (void) store_session_delete(ctx->store, l[i].session_id);
                        gone++;
                        continue;
                }
                s->created_usec = l[i].created_usec;
                s->last_used_usec = l[i].last_used_usec;
                s->executions = l[i].executions;
                if (session_statfs(s, &sfs) < 0) {
                        /* systemd (or the machine) restarted: the tmpfs and its files are gone. */
                        log_notice("Session %s: its workspace is no longer mounted, forgetting it.", s->key);
                        if (ctx->sysd)
                                (void) sysd_stop_unit(ctx->sysd, s->mount_name, NULL, NULL);
                        (void) store_session_delete(ctx->store, s->key);
                        session_free(s);
                        gone++;
                        continue;
                }
                s->ready = true;
                s->next = ss->list;
                ss->list = s;
                ss->n++;
                kept++;
        }
        store_sessions_free(l, n);
        if (kept + gone > 0)
                log_info("Sessions: %zu kept, %zu gone.", kept, gone);
        return 0;
}

/* Mount points (SESSION_MOUNT_DIR/<name>) and systemd's symlink directories (SESSION_LINK_DIR/<name>
 * holding workspace and tmp) of sessions that are gone. Both trees are root's alone (0700 and
 * never bound into a sandbox); still nothing here follows a name: rmdir refuses a mount point in
 * use and anything not empty, unlinkat never follows a symlink. */
static void sweep_dir(const Sessions *ss, const char *path, bool links) {
        struct dirent *de;
        DIR *d;

        d = opendir_nofollow(path);
        if (!d)
                return;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.' || session_owns_dir(ss, de->d_name))
                        continue;
                if (links) {
                        _cleanup_close_ int sub = openat(dirfd(d), de->d_name,
                                                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        struct stat st;

                        if (sub < 0 || fstat(sub, &st) < 0 || st.st_uid != 0)
                                continue;
                        (void) unlinkat(sub, "workspace", 0);
                        (void) unlinkat(sub, "tmp", 0);
                }
                (void) unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
        }
        closedir(d);
}

void sessions_sweep(Sessions *ss) {
        uint64_t now = now_usec(CLOCK_REALTIME), idle = ss->ctx->config->session_idle_sec * USEC_PER_SEC;

        for (Session *s = ss->list, *next; s; s = next) {
                next = s->next;
                /* Not only ready ones: a mount whose completion never came must not stay forever. */
                if (s->n_jobs == 0 && !s->active && s->n_uploads == 0 && s->last_used_usec + idle <= now)
                        (void) session_remove(s, "idle for SessionIdleSec=");
        }
        sweep_dir(ss, SESSION_MOUNT_DIR, false);
        sweep_dir(ss, SESSION_LINK_DIR, true);
}

void session_recent_query(const Session *s, StoreQuery *q) {
        *q = (StoreQuery) STORE_QUERY_INIT;
        q->session_id = s->id;
        q->owner = s->owner;    /* others' sessions of the same name are not this one */
        q->limit = SESSION_RECENT_MAX;
}

json_object *session_recent_json(StoreRecord **l, size_t n) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; a && i < n; i++)
                json_object_array_add(a, json_object_new_string(execution_public_id(l[i]->exec)));
        return a;
}

json_object *session_to_json(Session *s) {
        const Context *ctx = s->sessions->ctx;
        json_object *o = json_object_new_object();
        char buf[64];
        uint64_t used = 0;

        json_object_object_add(o, "session_id", json_object_new_string(s->id));
        json_object_object_add(o, "record_id", json_object_new_string(s->key));
        json_object_object_add(o, "disk_mb", json_object_new_uint64(s->disk_mb));
        json_object_object_add(o, "size_bytes", session_used_bytes(s, &used) >= 0 ? json_object_new_uint64(used) : NULL);
        format_timestamp(s->created_usec, buf, sizeof(buf));
        json_object_object_add(o, "created_at", json_object_new_string(buf));
        format_timestamp(s->last_used_usec, buf, sizeof(buf));
        json_object_object_add(o, "last_used_at", json_object_new_string(buf));
        format_timestamp(s->last_used_usec + ctx->config->session_idle_sec * USEC_PER_SEC, buf, sizeof(buf));
        json_object_object_add(o, "expires_at", s->n_jobs > 0 ? NULL : json_object_new_string(buf));
        json_object_object_add(o, "executions", json_object_new_uint64(s->executions));
        json_object_object_add(o, "active", s->active ? json_object_new_string(execution_public_id(s->active->exec)) : NULL);
        json_object_object_add(o, "pending", json_object_new_uint64(s->n_jobs));
        return o;
}
