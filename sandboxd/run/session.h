/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Sessions: executions with the same session_id share one persistent, size-bounded /workspace.
 *
 * A session owns one tmpfs mount unit (size: the session's disk_mb, the bound across all its runs),
 * mounted by systemd at /var/lib/private/sandboxd/sessions/<name> and stopped when the session
 * expires (SessionIdleSec=) or is deleted. Its runs are serialized: the queue skips a job whose
 * session is busy, without holding up anything behind it.
 *
 * Each run gets a fresh DynamicUser= UID. The session's workspace/ and tmp/ are the run's
 * StateDirectory= sandboxd/sessions/<name>/{workspace,tmp}: systemd creates them and, when their
 * owner differs from the new UID, re-owns the whole tree itself before the unit starts (v252
 * setup_exec_directory → path_chown_recursive: openat O_NOFOLLOW, fchownat AT_EMPTY_PATH on O_PATH
 * fds, suid/sgid dropped), never following a symlink. sandboxd itself reaches inside the tree only
 * through fds that never follow a link (inputs: net/fetch.c; files between runs:
 * delivery/session-files.c; artifacts) and only while no run of the session is active; otherwise it
 * statfs()es the mount root, a root-owned directory the sandbox cannot replace. Other sessions cannot be reached: /var/lib/private is 0700 root, a run's
 * root is an empty skeleton, hard links cannot leave their tmpfs. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "admission/queue.h"
#include "model/context.h"
#include "model/request.h"
#include "store/store.h"
#include "systemd/sysd.h"

/* StateDirectory= names are relative to /var/lib (systemd's fixed prefix for system services). */
#define SESSION_STATE_PREFIX "sandboxd/sessions"
#define SESSION_MOUNT_DIR "/var/lib/private/" SESSION_STATE_PREFIX   /* the tmpfs mounts */
#define SESSION_LINK_DIR "/var/lib/" SESSION_STATE_PREFIX            /* systemd's symlinks */
/* How many execution ids GET /v1/sessions/{id} lists. */
#define SESSION_RECENT_MAX 10U

typedef struct Job Job;
typedef struct Session Session;
typedef struct Sessions Sessions;

/* What the registry tells its owner (the composition root wires it to the runner). */
typedef struct SessionEvents {
        /* The session's mount is ready: its first run may start. */
        void (*ready)(void *userdata, Session *s);
        /* The session cannot run (its mount failed): its queued runs must end, with why. */
        void (*failed)(void *userdata, Session *s, const char *why);
        /* A session was removed: its directories can be swept once systemd has unmounted. */
        void (*removed)(void *userdata);
} SessionEvents;

struct Session {
        Sessions *sessions;              /* the registry it is in */
        Session *next;
        char *id, *owner;                /* the session_id its owner chose, and the owner */
        char *key;                       /* its record id (scoped-id.h): unique across owners */
        char *name;                      /* directory name below SESSION_MOUNT_DIR */
        char *path, *mount_name;
        char *state_dir;                 /* SESSION_STATE_PREFIX "/" name */
        uint64_t disk_mb;
        uint64_t created_usec, last_used_usec, executions;
        bool ready;                      /* mounted and checked */
        bool unrecorded;                 /* created, its row not written yet (sessions_acquire()) */
        Job *active;                     /* the run that holds the workspace now */
        unsigned n_jobs;                 /* its unfinished (queued or running) executions */
        unsigned n_uploads;              /* PUTs of files streaming in (no run starts, it is not removed) */
        QueueLane lane;                  /* its queued runs, one at a time (queue.h) */
        SysdCall *call;                  /* StartTransientUnit of its mount */
        SysdWatch *watch;                /* its mount unit's start job */
};

/* The registry of sessions (this file's): created empty, filled by sessions_load() at start. */
int sessions_new(const Context *ctx, const SessionEvents *ev, void *userdata, Sessions **ret);
Sessions *sessions_free(Sessions *ss);
DEFINE_TRIVIAL_CLEANUP_FUNC(Sessions *, sessions_free);
/* The session an owner calls id (ids are scoped by owner: another owner's "id" is another session). */
Session *sessions_find(const Sessions *ss, const char *owner, const char *id);
/* The session whose record id is key. */
Session *sessions_find_key(const Sessions *ss, const char *key);
/* The first session (then s->next), and how many there are. */
Session *sessions_first(const Sessions *ss);
unsigned sessions_count(const Sessions *ss);

/* The session a submitted request runs in: the existing one, or a new one whose mount is started and
 * whose row is not written yet (unrecorded: the caller writes it with its run's first record,
 * store_put_session_async(), then says how that went with session_recorded()). Refusals fill *err
 * (docs/http-api.md): 403 forbidden, another caller's session; 409 conflict, a different
 * limits.disk_mb; 429 too_many_sessions, MaxSessions= or MaxSessionsPerCaller= reached; 429
 * session_disk_quota_exceeded or session_disk_full, the sum of disk_mb over the caller's or all
 * sessions would exceed MaxSessionsDiskMBPerCaller= or MaxSessionsDiskMB= (quota.h); 500 internal. */
int sessions_acquire(Sessions *ss, const char *id, const char *owner, uint64_t disk_mb, Session **ret,
                    RequestError *err);

/* May a run of this session start now (mounted, no run of it active)? */
bool session_may_run(const Session *s);
/* A job of the session starts / becomes final (j counted in n_jobs until final). */
void session_run_started(Session *s, Job *j);
void session_job_gone(Session *s, Job *j, bool ran);

/* At start, before executions are adopted: the stored sessions whose mount is still there come
 * back; the others are forgotten (their files went with their tmpfs). */
int sessions_load(Sessions *ss);
/* Idle sessions (no run active or queued, unused for SessionIdleSec=) are removed; directories of
 * removed sessions go once unmounted. */
void sessions_sweep(Sessions *ss);
/* Stop the mount (its contents go), delete the record. Refused with -EBUSY while a run is queued
 * or active. */
int session_remove(Session *s, const char *why);

/* Used bytes of the session's tmpfs (statfs of the mount root), or a negative errno. */
int session_used_bytes(const Session *s, uint64_t *ret);
/* Its row as the store keeps it (borrows from s). */
StoreSession session_store_row(const Session *s);
/* The write of an unrecorded session's row ended with r: it is recorded, or (r < 0) it goes unless
 * a run uses it meanwhile (then its row is written after that run, as every session's is). */
void session_recorded(Session *s, int r);
/* A session's JSON, without its "recent_executions": those are read from the store (the query of
 * session_recent_query(), without waiting), then session_recent_json() of the page. */
json_object *session_to_json(Session *s);
void session_recent_query(const Session *s, StoreQuery *q);
json_object *session_recent_json(StoreRecord **l, size_t n);
