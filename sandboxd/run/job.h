/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One execution's life: queued → preparing (workspace mount unit, then the input files) → starting
 * (service) → running → finishing (unit gone, report read, then the artifacts collected from the
 * workspace on a worker thread) → done. Every step is an event on the loop. */

#include "admission/queue.h"
#include "capture.h"
#include "delivery/artifacts.h"
#include "live-log.h"
#include "model/context.h"
#include "model/execution.h"
#include "model/request.h"
#include "store/store.h"
#include "systemd/sysd.h"

typedef enum JobState {
        JOB_QUEUED,
        JOB_PREPARING,
        JOB_STARTING,
        JOB_RUNNING,
        JOB_FINISHING,
        JOB_DONE,
} JobState;

typedef struct Job Job;
typedef struct JobWaiter JobWaiter;

/* What a job waits for before it can be final: all of it from its creation; each is cleared once,
 * when it happened or can no longer happen. */
typedef enum JobWait {
        JOB_WAIT_UNIT = 1U << 0,         /* the service unit has not gone (inactive, failed, or never started) */
        JOB_WAIT_PROPS = 1U << 1,        /* its result (Result=, exit status, times) is not read */
        JOB_WAIT_REPORT = 1U << 2,       /* the control socket has not reached EOF (the report and output) */
        JOB_WAIT_ARTIFACTS = 1U << 3,    /* the artifacts are not collected (or known to be none) */
        /* A run with network: its proxy units are not stopped or its event pipe not read to EOF
         * (set once the proxy is asked for; never part of JOB_WAIT_ALL). */
        JOB_WAIT_PROXY = 1U << 4,
        JOB_WAIT_ALL = JOB_WAIT_UNIT | JOB_WAIT_PROPS | JOB_WAIT_REPORT | JOB_WAIT_ARTIFACTS,
} JobWait;
typedef struct Session Session;

/* What a job tells its owner (the runner, runner.h), which created it. A job never calls the queue
 * or anything above it: it reports here, and the owner decides what follows. */
typedef struct JobEvents {
        /* It holds no place in the queue any more: final, or being freed (any state; more than once
         * is fine). */
        void (*left)(void *userdata, Job *j);
        /* It became final: its slot is free. The final record is being written (final_writing) or,
         * without a store, its waiters are answered. The callee may free j unless final_writing. */
        void (*finished)(void *userdata, Job *j);
        /* The final record's write ended (record_unsaved: the store refused it, write it again) and
         * the waiters are answered. The callee may free j. */
        void (*written)(void *userdata, Job *j);
        /* It is being freed (by anyone): it must leave the owner's tables. */
        void (*freed)(void *userdata, Job *j);
        /* Asked to go quiet by job_quiesce(), it has (it reads nothing more, and this instance never
         * makes it final). A job that became final instead reports that with finished, not this. */
        void (*quiet)(void *userdata, Job *j);
        /* Cancelled while queued and not claimed yet in the shared queue (job_cancel()): claim it
         * without waiting (claiming until the answer, which ends it cancelled here or sends the
         * cancel to the node that claimed it first). < 0: the claim could not be asked. */
        int (*claim)(void *userdata, Job *j);
        /* job_rewrite_final_async()'s answer k (0: written, record_unsaved cleared). The callee may
         * free j. */
        void (*rewritten)(void *userdata, Job *j, int k);
} JobEvents;

struct Job {
        Context *ctx;
        const JobEvents *events;         /* its owner's (runner.c), with events_data */
        void *events_data;
        Job *prev, *next;                /* the owner's list of all jobs */
        QueueEntry queue_entry;          /* the owner's queue: waiting, or holding a slot */
        JobState state;

        Execution *exec;
        ExecRequest *request;            /* until the unit is started */
        uint8_t fingerprint[32];
        char *owner;                     /* "uid:N" of the caller that submitted it */
        char *callback_url;              /* where the result goes when final (callback.c); NULL: nowhere */

        char *unit_name;
        /* workspace: host path of the tmpfs mount whose workspace/ and tmp/ the run gets (for a
         * session run: the session's; mount_name is then NULL, the session owns the mount). */
        char *mount_name, *workspace;
        uint64_t pool_lease;             /* lent by the pool (workspace_pool_give_back), else 0 */
        Session *session;                /* NULL: a single-use workspace */

        SysdCall *call_mount, *call_start, *call_props;
        SysdWatch *watch_unit, *watch_mount;   /* systemd's signals about the service and the mount */
        struct Fetch *fetch;             /* input files being downloaded (preparing, before the service) */
        bool linked;
        int ctl_fd;
        sd_event_source *ctl_src, *deadline_src, *drain_src, *cancel_src;
        uint8_t *ctl_buf;
        size_t ctl_len, ctl_off;
        uint8_t *report;                 /* what sandbox-exec sent back: text, then the output */
        size_t report_len, report_allocated, report_max;
        bool report_overflow;
        bool report_started;             /* the report's text has begun: no more live frames */
        LiveLog *live;                   /* live output for GET .../events (live-log.h); NULL once final */

        bool mount_started, unit_started;
        unsigned waiting;                /* JobWait: what it still waits for before it is final */
        bool fd_stored;                  /* the control socket is in systemd's fd store */
        bool adopted_without_report;     /* re-adopted after a restart that lost the control socket */
        bool cancel_requested;
        bool adopted;            /* started by an earlier instance of sandboxd */
        bool strong;             /* runs in the strong tier (gVisor): the unit and sandbox-exec say so */
        bool early_end;          /* final on sandbox-exec's report, before systemd ended the unit: the
                                  * unit reaper (unit-reaper.h) finishes it */
        ArtifactCollect *collect;        /* artifacts being collected (finishing) */
        struct ArtifactCallerAccount *artifact_caller;   /* the owner's budget account, while collecting */
        struct ArtifactCallerWait *artifact_wait;        /* ... while it is read from the store */
        int collect_ws_fd;               /* the workspace to collect from, meanwhile */
        bool artifacts_retried;          /* collected a second time (a blob was purged meanwhile) */
        bool final_rewriting;            /* job_rewrite_final_async() under way */
        bool artifacts_recording;        /* the list's write is under way (on_artifacts_recorded()) */
        bool artifacts_collect_ok;       /* what is being recorded was collected (not an error's list) */
        uint64_t artifacts_charged;      /* what the collection charged, settled once recorded */
        bool artifacts_stored;           /* the list is in the store (and so not kept in memory once final) */
        bool output_stored;              /* the final record is in the store: stdout/stderr are read there */
        bool claiming;                   /* queued, the dispatch's claim in the shared queue under way */
        bool workspace_readied;          /* preparing: workspace_ready() ran (the service starts once) */
        bool final_writing;              /* final, the final record's first write under way (job_finish()):
                                          * its waiters wait for it, the owner keeps the job */
        bool final_in_call;              /* inside that write's call (its answer may come at once) */
        bool record_unsaved;             /* final, and the final record's write failed: the runner retries
                                          * it, and keeps the job (the only copy) until it succeeds */
        bool elsewhere;                  /* queued here, claimed and run by another node (the shared
                                          * queue): kept only for its waiters, until its final record
                                          * arrives (job_follow_final()) */
        UnitOutcome outcome;
        char *result;                    /* owned copy of Result= */
        uint64_t exec_start_mono, exec_exit_mono, cpu_nsec;
        uint64_t queued_mono, start_mono;
        uint64_t running_mono;           /* the start job completed: the unit runs (for metrics) */

        /* Network (issue 16, job-network.c): the egress proxy's units and the read end of the pipe
         * that is its stdout, with a line buffer of PROXY_EVENT_LINE_MAX bytes. */
        char *proxy_socket, *proxy_service;
        int proxy_fd;
        sd_event_source *proxy_src, *proxy_timeout_src, *proxy_persist_src;
        SysdWatch *watch_proxy_socket, *watch_proxy_service;
        char *proxy_buf;
        size_t proxy_len;
        bool proxy_stopping;             /* StopUnit sent, reading until EOF (at most 3 s) */
        bool proxy_fd_stored;            /* the pipe's read end is in systemd's fd store */

        /* sandboxd is stopping (job_quiesce()): quiesce, go quiet at the next clean point of the
         * channels that wait in the fd store; quiet, reached it: nothing more is read from them and
         * the execution is left to the next instance, never made final here. */
        bool quiesce, quiet;
        bool quiesce_notify;             /* job_quiesce() returned false: events->quiet is due */
        bool quiesce_hurry;              /* job_quiesce_hurry(): a live frame next is a clean point too */

        JobWaiter *waiters;
        unsigned holds;                  /* answers being rendered from it (submit.c): not evicted */
};

/* Create a queued job from a validated request (takes ownership of req), in session s if the request
 * names one (then s must be that session: -ENOENT if NULL). It reports to ev (with userdata). */
int job_new(Context *ctx, ExecRequest *req, const char *owner, Session *s, const JobEvents *ev, void *userdata,
            Job **ret);
/* A running execution found in the store at start (its unit may or may not still run), with its
 * control socket from the fd store or -EBADF, in session s (NULL: none, or gone). Takes exec, owner
 * and workspace from rec. */
int job_adopt(Context *ctx, StoreRecord *rec, int ctl_fd, Session *s, const JobEvents *ev, void *userdata,
              Job **ret);
/* Write the execution's current state to the store, waiting for it: only at sandboxd's stop (the
 * proxy's log not on record yet; the last try of the unsaved final records), when the loop is
 * ending. */
int job_persist(Job *j);
/* The same without waiting (store_put_async()): for the transitions nothing waits on (running, the
 * proxy's log), never of a queued or final job. A failure is logged and counted when the answer comes,
 * as job_persist() does; writes of the job keep their order with its later ones. */
void job_persist_async(Job *j);
/* The first record of a queued job (submit.c), without waiting and with an answer: done(userdata, r,
 * NULL) gets what job_persist() would have returned; nothing is logged (job_persist_failed() says it).
 * The first run of a session not recorded yet carries the session's row: both or neither.
 * userdata is not the job: job_free() does not cancel the call. -EINVAL without a store or once the job
 * left the queue. */
int job_record_async(Job *j, StoreDoneFn done, void *userdata, StoreCall **ret_call);
/* A failed write of j's record (r), logged and counted. */
void job_persist_failed(Job *j, int r);
Job *job_free(Job *j);
DEFINE_TRIVIAL_CLEANUP_FUNC(Job *, job_free);

/* Start (the owner has given it a slot): mount the workspace, then the service. */
void job_start(Job *j);
/* Must it be claimed in the shared queue (store.h) before it starts or is cancelled here (unclaimed,
 * this node registered)? */
bool job_needs_claim(const Job *j);
/* A job another node claimed and ran (elsewhere) is final there: rec (its final record, taken) is now
 * this job's, its waiters are answered and its owner told (events->finished), as for a job run here. */
void job_follow_final(Job *j, StoreRecord *rec);
/* Cancel: a queued job ends at once; a running one is killed. 0, or -EALREADY if final, -EREMOTE if
 * another node claimed it meanwhile (the shared queue: it is that node's to cancel). */
int job_cancel(Job *j);
void job_send_cancel(Job *j);
/* End the job now with an internal error (sandboxd's or systemd's failure, why says which). */
void job_fail(Job *j, const char *why);

bool job_is_final(const Job *j);
int job_persist_final(Job *j);
/* The same without waiting: final_rewriting until the answer (events->rewritten). */
int job_rewrite_final_async(Job *j);

/* Call cb(j, userdata) once the job is final (at once if it already is). */
int job_add_waiter(Job *j, void (*cb)(Job *j, void *userdata), void *userdata, JobWaiter **ret);
void job_remove_waiter(Job *j, JobWaiter *w);

/* An adopted run with network: the read end of its proxy's pipe from the fd store (-EBADF: none). */
void job_network_take_fd(Job *j, int fd);
/* The unit is gone (its ActiveState said so, or it is unknown after a restart). */
void job_on_unit_inactive(Job *j);
/* Shutdown: answer every waiter now (they see the job unfinished). */
void job_flush_waiters(Job *j);
/* Shutdown: the execution goes on and the next instance adopts it, reading its control socket and
 * its proxy's pipe from the fd store where this one stopped. So from here this instance reads them
 * only up to a clean point (the payload is sent whole; no live frame, report or proxy line is half
 * read) and then not at all, and never makes the job final on what it read (a report consumed here
 * and lost at exit left the next instance with neither report nor unit: "no report and no exit
 * status"). true: quiet now, or not running (nothing to wait for). false: the payload is still going
 * out, a frame or line is half read, or the report is coming in or waiting (the program is done:
 * read here, as a stop, unlike a restart, empties the fd store): events->quiet or, if it becomes
 * final meanwhile (a report under way is read to its end), events->finished follows. */
bool job_quiesce(Job *j);
/* The live frames waiting have been read for long enough (a program that writes without end): from
 * now on a live frame next is a clean point as well, and the job goes quiet at the next one. */
void job_quiesce_hurry(Job *j);
