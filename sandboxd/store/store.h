/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The execution store: one row per execution, every field of the result, kept across restarts.
 * Backend-neutral: callers see only this header. The embedded default is SQLite (store-sqlite.c);
 * PostgreSQL (store-pg.c) is one more StoreOps table (store-internal.h), for stores nodes share.
 *
 * Every function returns 0 or a negative errno:
 *   -EINVAL     bad argument (a limit outside 1..1000, a forged or foreign cursor, an invalid id)
 *   -ENOENT     store_get(): no such execution
 *   -ENOSPC     the disk (or the database's size cap) is full; the write did not happen, earlier
 *               records are intact
 *   -EROFS, -EACCES   the database cannot be written
 *   -EBADMSG    the database is corrupted, or is not a sandboxd database
 *   -EPROTONOSUPPORT  store_open_*(): the schema is newer than this binary knows
 *   -EBUSY      another process holds the database longer than the busy timeout
 *   -ENOMEM, -EIO
 * A Store is used from one thread (the daemon's event loop). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "model/execution.h"
#include "util.h"

/* The default location (StateDirectory= of sandboxd.service). */
#define STORE_DEFAULT_PATH "/var/lib/sandboxd/sandboxd.db"

/* store_list(): limit is 1..STORE_LIST_MAX. */
#define STORE_LIST_MAX 1000U

typedef struct Store Store;

/* The outbox: one callback delivery per execution that asked for one (callback.c delivers them). */
typedef enum CallbackState {
        CALLBACK_PENDING,               /* to be attempted (again) at next_attempt_usec */
        CALLBACK_DELIVERED,             /* a receiver answered 2xx */
        CALLBACK_FAILED,                /* given up: refused, or out of attempts or time */
        _CALLBACK_STATE_MAX,
        _CALLBACK_STATE_INVALID = -22,
} CallbackState;

const char *callback_state_to_string(CallbackState s);
CallbackState callback_state_from_string(const char *s);

typedef struct StoreCallback {
        char *execution_id;
        char *url;
        char *delivery_id;              /* the same on every attempt: receivers dedupe on it */
        CallbackState state;
        uint64_t attempts;              /* attempts started so far */
        uint64_t next_attempt_usec;     /* pending: when the next attempt is due (CLOCK_REALTIME) */
        char *last_error;               /* NULL: none */
        uint64_t created_usec;          /* enqueued (CLOCK_REALTIME) */
        uint64_t delivered_usec;        /* 0: not delivered */
        char *body;                     /* what is posted, the same bytes every attempt; NULL if not loaded */
        char *client_id;                /* loaded with the body: the execution_id its caller chose (the
                                         * execution's; NULL: the id is generated, execution_id) */
        /* store_callback_update() as a claim (several nodes share the outbox): only if the row is
         * still pending with claim_attempts attempts, as this node read it; else -ESTALE (another
         * node took this attempt). 0: an update without condition. */
        uint64_t claim_attempts;
        bool claim;
} StoreCallback;

StoreCallback *store_callback_free(StoreCallback *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(StoreCallback *, store_callback_free);
void store_callbacks_free(StoreCallback **l, size_t n);

typedef struct StoreRecord {            /* what is stored besides the Execution itself */
        Execution *exec;                /* owned */
        char *code;                     /* may be NULL; bounded by the caller */
        uint8_t fingerprint[32];        /* idempotency: SHA-256 of the canonical request */
        char *owner;                    /* "uid:0", "key:ci" ...; NULL = unknown */
        char *workspace;                /* the workspace mount of a started execution; NULL = keep */
        char *request;                  /* the rest of the request (JSON: env, seed); NULL = keep */
        StoreCallback *callback;        /* store_put(): enqueue this delivery in the same transaction, unless
                                         * the execution has one already; NULL: none. Not read back. */
} StoreRecord;

typedef enum StoreOrder {
        STORE_ORDER_CREATED_AT,         /* newest first */
        STORE_ORDER_DURATION_MS,        /* slowest first */
        _STORE_ORDER_MAX,
        _STORE_ORDER_INVALID = -22,
} StoreOrder;

typedef struct StoreQuery {
        const char *session_id;         /* NULL: any */
        int status;                     /* ExecStatus, or -1: any */
        int error_type;                 /* ErrorType, or -1: any (ERROR_NONE means "no error") */
        bool failed;                    /* only status=failed */
        const char *owner;              /* NULL: any (admin) */
        StoreOrder order;               /* newest first / slowest first; ties broken by execution_id */
        unsigned limit;                 /* 1..1000 */
        const char *cursor;             /* NULL, or next_cursor of the previous page */
} StoreQuery;

/* A query that matches everything, newest first, 50 a page. */
#define STORE_QUERY_INIT                                                                  \
        ((StoreQuery) { .status = -1, .error_type = -1, .order = STORE_ORDER_CREATED_AT, .limit = 50 })

/* Open (creating if missing) the SQLite database at path, in WAL mode, check its integrity and
 * apply the schema migrations this binary knows. The directory must exist. On failure
 * *ret_error (if ret_error is not NULL) is a malloc'ed one-line message that names the path and
 * says what is wrong, fit to print before exiting. */
int store_open_sqlite(const char *path, Store **ret, char **ret_error);
/* Open the PostgreSQL store (store-pg.c) named by conninfo, a libpq connection string
 * ("postgresql://sandboxd@db.example/sandboxd", "host=/run/postgresql dbname=sandboxd",
 * "service=sandboxd"), and apply the same schema migrations as the SQLite store, under an advisory
 * lock. A password goes in a file the string names (passfile=, a service file), never into the
 * string itself where a command line or a configuration file would show it. The database must be
 * empty or sandboxd's: anything else is -EBADMSG, untouched. Connection failures are -EIO (-EACCES
 * when a password is needed or was refused). The calls below wait for the server, except the
 * asynchronous ones (store_*_async()). On failure *ret_error is as for
 * store_open_sqlite(), naming the database and host (never the string). */
int store_open_pg(const char *conninfo, Store **ret, char **ret_error);
/* Waits for the asynchronous calls under way or queued (their writes are not lost), and drops their
 * callbacks: a StoreCall handle is invalid after it. */
Store *store_close(Store *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Store *, store_close);

/* The daemon's event loop: from now on, what a backend can do without a caller waiting (the
 * PostgreSQL store's reconnections, the asynchronous calls) runs there, and no call waits for it. Without it (tools, unit
 * tests) a call that finds the connection lost reconnects itself, waiting up to connect_timeout. */
int store_attach_event(Store *s, sd_event *event);

/* The backend's own text for the last failed call ("database or disk is full"), for logs; never
 * NULL. Valid until the next call on s. */
const char *store_error_message(Store *s);

/* What an API caller is told of a failed call r: a fixed text per errno. The backend's own message
 * (store_error_message()) goes to the log only: a database server's names its host, socket, database
 * and roles. */
const char *store_error_public(int r);

/* Insert, or update every column by execution_id (call it at every transition). code, owner,
 * workspace and request are kept from the stored row when r leaves them NULL: the job may drop the code once the
 * sandbox has it. A single statement: a failed write changes nothing. */
int store_put(Store *s, const StoreRecord *r);

/* -ENOENT if there is none. */
int store_get(Store *s, const char *id, StoreRecord **ret);

/* Asynchronous calls: the answer comes later, to a callback, and the caller does not wait for the
 * server (issue 22: no handler of the event loop blocks on the database).
 *
 * done(userdata, r, rec) is called once, from the event loop, never from inside a store call:
 * r is what store_put() / store_get() would have returned; rec is store_get_async()'s record on
 * success (the callback owns it: store_record_free()), NULL otherwise; store_error_message() says
 * why a call failed while done runs. Callbacks come in the order of the calls. done may be NULL:
 * nobody waits (a write whose failure nobody acts on still happens). done may call the store (not
 * store_close()).
 *
 * Order: every call, asynchronous or not, takes effect in the order it was made. A synchronous call
 * made while asynchronous ones are queued or under way first waits for all of them to end (their
 * callbacks come later, from the loop): synchronous calls still block, and block longer by what is
 * queued before them.
 *
 * Returns 0 when the call was queued (*ret_call, if ret_call is not NULL, is its handle until done
 * is called or the call is cancelled), or a negative errno when it was refused, done never called:
 * -EINVAL (as the synchronous call), -ENOMEM. Every error of the store itself (-EIO while the
 * connection is lost, -ESTALE, -ENOSPC ...) comes to done.
 *
 * Bounds: the store takes every call (a call refused for being behind would leave the daemon's own
 * writes nowhere to go but a synchronous call). What may queue calls is bounded where it comes in:
 * the daemon's own calls by its jobs, deliveries and timers (each bounded by its configuration), the
 * callers' by their front ends, which hold at most MaxConnections= HTTP requests and BUS_CALLS_MAX
 * D-Bus calls, each with a few calls under way at most, and refuse new requests that need the store
 * (503 store_error) while store_is_behind().
 *
 * PostgreSQL: one statement at a time on the store's connection (non-blocking, driven by the loop),
 * the others queued; a lost connection fails the call under way and those queued with -EIO, and is
 * made again as for synchronous calls (a record with its callback delivery is one statement, too).
 * SQLite (local, fast): the call runs at
 * once, the callback comes from the loop. Without an event loop (store_attach_event(): tools, unit
 * tests) every call runs synchronously and done is called before store_*_async() returns, with
 * *ret_call NULL. */
typedef struct StoreCall StoreCall;
typedef void (*StoreDoneFn)(void *userdata, int r, StoreRecord *rec);
/* The calls that read a list answer with it (the callback owns it; NULL, 0 when r < 0). */
typedef struct StoreNode StoreNode;
typedef void (*StoreNodesDoneFn)(void *userdata, int r, StoreNode *l, size_t n);
typedef void (*StoreRecordsDoneFn)(void *userdata, int r, StoreRecord **l, size_t n);
#define STORE_ASYNC_MAX 1024U
int store_put_async(Store *s, const StoreRecord *r, StoreDoneFn done, void *userdata, StoreCall **ret_call);
int store_get_async(Store *s, const char *id, StoreDoneFn done, void *userdata, StoreCall **ret_call);
/* A new session's row and the first record of its first run, without waiting, both or neither
 * (PostgreSQL: one transaction; SQLite: the row, then the record if the row was written):
 * done(userdata, r, NULL). */
typedef struct StoreSession StoreSession;
int store_put_session_async(Store *s, const StoreRecord *r, const StoreSession *x, StoreDoneFn done, void *userdata,
                            StoreCall **ret_call);
/* No statement: done(userdata, 0, NULL) once every call made before it has been answered (their
 * writes made, or refused). An answer given after it says "what I asked of the store is done" (a
 * cancel on record before its 202). */
int store_barrier_async(Store *s, StoreDoneFn done, void *userdata, StoreCall **ret_call);
/* The caller goes away: done will not be called for c (NULL: nothing). The statement still runs (a
 * write queued is still written, in its order). c is invalid afterwards. Returns NULL. */
StoreCall *store_call_cancel(StoreCall *c);
/* The same for every pending call of userdata (a job freed with writes under way). */
void store_cancel_userdata(Store *s, void *userdata);
/* Wait for every asynchronous call queued or under way to end, and call back now those that have
 * (a stop: what they answer still counts, before the store is closed). Not from inside a callback. */
void store_async_drain(Store *s);
/* Calls queued, under way, or finished and not yet delivered. */
size_t store_async_pending(Store *s);
/* STORE_ASYNC_MAX calls or more are pending: the store is far behind, and the front ends refuse what
 * would queue more for a caller (503 store_error) until it catches up. */
bool store_is_behind(Store *s);

/* One page of matching records, full records (outputs and code included). *ret_next_cursor is
 * NULL on the last page, else an opaque string to pass as the next query's cursor: keyset
 * pagination, so rows inserted meanwhile neither repeat nor shift a page. *ret is an array of
 * *ret_n records (NULL when none), free it with store_records_free(). */
int store_list(Store *s, const StoreQuery *q, StoreRecord ***ret, size_t *ret_n, char **ret_next_cursor);
/* The same without waiting (store_put_async()): done(userdata, r, l, n, next_cursor) gets the page
 * (done owns l and next_cursor: store_records_free(), free()). A query store_list() refuses is
 * refused here (-EINVAL), done never called. */
typedef void (*StorePageDoneFn)(void *userdata, int r, StoreRecord **l, size_t n, char *next_cursor);
int store_list_async(Store *s, const StoreQuery *q, StorePageDoneFn done, void *userdata, StoreCall **ret_call);

/* Several nodes (issue 22): take unfinished executions (queued or running) for node at epoch, and
 * return them, oldest first; from then on store_put() of any other node (or of node at an older
 * epoch) is refused for them with -ESTALE.
 * from NULL: this node's own after a restart, and those of no node (records written before); a
 * SQLite store, one node's by nature, takes every unfinished one whatever its node.
 * from a node name: that node's, only if its lease had run out at now_usec (CLOCK_REALTIME) in the
 * registry; two nodes trying at once take each execution once. */
/* Notifications between nodes sharing the store (PostgreSQL's LISTEN/NOTIFY): channel, payload.
 * STORE_CHANNEL_CANCEL: payload an execution id, whose cancel another node took (store_cancel_elsewhere())
 * for this node to carry out if it holds it. STORE_CHANNEL_RECONNECTED: the connection was made
 * again, and what was sent meanwhile is lost: look in the store. Called from the event loop, never
 * from inside a store call. */
#define STORE_CHANNEL_CANCEL "sandboxd_cancel"
#define STORE_CHANNEL_RECONNECTED ""
/* The queue nodes share (store_claim(), store_claim_next()). QUEUE: payload the sender's node name:
 * it queued work it has no slot for, idle nodes may claim it. CLAIMED: payload an execution id: a node
 * claimed a queued execution another node accepted (which stops holding it in its queue). FINAL:
 * payload an execution id: its final record was written (by whichever node). */
#define STORE_CHANNEL_QUEUE "sandboxd_queue"
#define STORE_CHANNEL_CLAIMED "sandboxd_claimed"
#define STORE_CHANNEL_FINAL "sandboxd_final"
typedef void (*StoreNotifyFn)(void *userdata, const char *channel, const char *payload);
/* After store_attach_event(). -EOPNOTSUPP: a backend without notifications (SQLite: one node). */
int store_set_notify(Store *s, StoreNotifyFn fn, void *userdata);
/* A cancel asked on a node that does not hold the execution: its cancel_requested is set and the
 * node that holds it is notified (STORE_CHANNEL_CANCEL). -EALREADY: not queued or running any more;
 * -ENOENT: no such execution; -EOPNOTSUPP: a backend of one node. */
int store_cancel_elsewhere(Store *s, const char *id);
/* The same without waiting (store_put_async()): done(userdata, r, NULL) gets what it would return.
 * -EOPNOTSUPP (a backend of one node) at once, done never called. */
int store_cancel_elsewhere_async(Store *s, const char *id, StoreDoneFn done, void *userdata, StoreCall **ret_call);

int store_take_over(Store *s, const char *from, const char *node, uint64_t epoch, uint64_t now_usec,
                    StoreRecord ***ret, size_t *ret_n);
/* The same without waiting (store_put_async()): done(userdata, r, l, n), the records taken, oldest
 * first. */
int store_take_over_async(Store *s, const char *from, const char *node, uint64_t epoch, uint64_t now_usec,
                          StoreRecordsDoneFn done, void *userdata, StoreCall **ret_call);

/* The queue several nodes share (a backend with notifications: PostgreSQL). A submission that may run
 * on any node is stored queued and unclaimed: its node is the one that accepted it, its node_epoch 0.
 * A node claims it before starting it; each is claimed once.
 * store_claim(): node (at epoch) claims the unclaimed queued execution id (the node that accepted it,
 * about to start it); -ESTALE: another node claimed it first, or it is not queued any more.
 * store_claim_next(): node claims the next unclaimed queued execution another node accepted, fairly:
 * of each owner's oldest, the one whose owner has the fewest executions running on all nodes (then the
 * oldest), skipping owners named in skip (at their running cap on this node) and session runs (which
 * run where their session is); the node that accepted it is notified (STORE_CHANNEL_CLAIMED). *ret is
 * the record as claimed; -ENOENT: nothing to claim. Rows another node is claiming at the same moment
 * are skipped, not waited for (FOR UPDATE SKIP LOCKED).
 * store_queue_notify(): tell the other nodes (STORE_CHANNEL_QUEUE) that node queued work it cannot
 * start now.
 * All three: -EOPNOTSUPP on a backend of one node. */
int store_claim(Store *s, const char *id, const char *node, uint64_t epoch);
/* store_claim() without waiting (store_put_async()): done(userdata, r, NULL) gets what it would return.
 * -EOPNOTSUPP (a backend of one node) at once, done never called. */
int store_claim_async(Store *s, const char *id, const char *node, uint64_t epoch, StoreDoneFn done, void *userdata,
                      StoreCall **ret_call);
int store_claim_next(Store *s, const char *node, uint64_t epoch, char *const *skip, size_t n_skip, StoreRecord **ret);
/* The same without waiting: done(userdata, r, rec) gets what it would return and the record claimed
 * (-ENOENT: nothing to claim). skip is copied; -EOPNOTSUPP at once on a backend of one node. */
int store_claim_next_async(Store *s, const char *node, uint64_t epoch, char *const *skip, size_t n_skip,
                           StoreDoneFn done, void *userdata, StoreCall **ret_call);
int store_queue_notify(Store *s, const char *node);
/* The same without waiting; done may be NULL (a notification nobody acts on if it fails). */
int store_queue_notify_async(Store *s, const char *node, StoreDoneFn done, void *userdata, StoreCall **ret_call);
/* Runs of node's sessions accepted by other nodes (routed: stored queued for node, unclaimed),
 * claimed for node at epoch, oldest first, at most STORE_CLAIM_ROUTED_MAX a call. -EOPNOTSUPP on a
 * backend of one node. */
#define STORE_CLAIM_ROUTED_MAX 64
int store_claim_routed(Store *s, const char *node, uint64_t epoch, StoreRecord ***ret, size_t *ret_n);
/* The same without waiting: done(userdata, r, l, n) gets the records claimed, oldest first. */
int store_claim_routed_async(Store *s, const char *node, uint64_t epoch, StoreRecordsDoneFn done, void *userdata,
                             StoreCall **ret_call);

/* Records with status queued or running, oldest first: what a restart has to resolve. */
int store_list_unfinished(Store *s, StoreRecord ***ret, size_t *ret_n);

/* Delete finished records whose finished_at is before finished_before_usec (CLOCK_REALTIME), with
 * their callback deliveries. Unfinished records, and records whose delivery is still pending, are
 * never purged. *ret_n (may be NULL) is the number deleted. */
int store_purge(Store *s, uint64_t finished_before_usec, uint64_t *ret_n);
/* The same, and their artifact rows go with them in the same transaction. *ret_unreferenced (may be
 * NULL) is a NULL-terminated list of the sha256 digests no artifact refers to any more (NULL when
 * there are none): the blobs the caller removes from the artifact store. Free with strv_free(). */
int store_purge_ex(Store *s, uint64_t finished_before_usec, uint64_t *ret_n, char ***ret_unreferenced);

/* The artifact store's blobs, for a store that several nodes share (PostgreSQL): exists returns 0 if
 * the blob of the digest is there, -ENOENT if not; remove unlinks it (-ENOENT if it was gone). With
 * them set, store_put_artifacts() checks every blob it records under the artifacts lock (-ESTALE: one
 * is missing, nothing was recorded; collect again), and store_purge_ex() removes the unreferenced
 * blobs itself under that lock, before its transaction commits, and returns none. Without them (the
 * default, and SQLite, which one node owns), both behave as described above. Why: a collection on
 * one node and a purge on another meet only in the database; the check and the unlink have to be
 * inside the same lock as the rows (docs/ARCHITECTURE.md, "Artifacts on several nodes"). */
typedef int (*store_blob_fn_t)(void *userdata, const char *sha256);
void store_set_blob_hooks(Store *s, store_blob_fn_t exists, store_blob_fn_t remove, void *userdata);

/* The artifacts of an execution, replacing any stored before, in one transaction (all or nothing).
 * Paths must be unique; sha256 64 hex digits. */
int store_put_artifacts(Store *s, const char *id, const ExecArtifacts *a);
/* The same without waiting (store_put_async()): done(userdata, r, NULL) gets what it would return
 * (PostgreSQL: the same transaction, its statements sent one after the other from the loop, the blobs
 * checked under the lock between them). */
int store_put_artifacts_async(Store *s, const char *id, const ExecArtifacts *a, StoreDoneFn done, void *userdata,
                              StoreCall **ret_call);
/* -ENOENT when none were stored for id (not collected, or purged). */
int store_get_artifacts(Store *s, const char *id, ExecArtifacts **ret);
/* The same without waiting (store_put_async()): done(userdata, r, a) gets what store_get_artifacts()
 * returns, a done's to free. */
typedef void (*StoreArtifactsDoneFn)(void *userdata, int r, ExecArtifacts *a);
int store_get_artifacts_async(Store *s, const char *id, StoreArtifactsDoneFn done, void *userdata,
                              StoreCall **ret_call);
/* What the recorded artifacts are charged (ExecArtifact.charged_bytes), kept as running sums by the
 * store itself, so either is one lookup: the whole store's, each distinct content counted once (what
 * the artifact store really holds), and one owner's, every artifact of its executions counted
 * (NULL: executions with no known owner). 0 when there are none. */
int store_artifact_store_bytes(Store *s, uint64_t *ret);
int store_artifact_caller_bytes(Store *s, const char *owner, uint64_t *ret);
/* Both without waiting (store_put_async()): done(userdata, r, bytes). */
typedef void (*StoreU64DoneFn)(void *userdata, int r, uint64_t v);
int store_artifact_store_bytes_async(Store *s, StoreU64DoneFn done, void *userdata, StoreCall **ret_call);
int store_artifact_caller_bytes_async(Store *s, const char *owner, StoreU64DoneFn done, void *userdata,
                                      StoreCall **ret_call);
/* store_purge() without waiting, on a store that removes the blobs itself (store_set_blob_hooks():
 * PostgreSQL, one transaction sent statement by statement, the blobs removed under its lock):
 * done(userdata, r, n) with the number of records purged. -EOPNOTSUPP at once elsewhere (SQLite: the
 * caller purges with store_purge_ex(), local and quick, and unlinks what it hands back). */
int store_purge_async(Store *s, uint64_t finished_before_usec, StoreU64DoneFn done, void *userdata,
                      StoreCall **ret_call);

int store_count(Store *s, uint64_t *ret);

/* The delivery of one execution, -ENOENT if it has none. with_body: load the body too. */
int store_callback_get(Store *s, const char *id, bool with_body, StoreCallback **ret);
/* store_callback_get() without the body and without waiting (store_put_async()): done(userdata, r, c),
 * c done's to free. */
typedef void (*StoreCallbackDoneFn)(void *userdata, int r, StoreCallback *c);
int store_callback_get_async(Store *s, const char *id, StoreCallbackDoneFn done, void *userdata,
                             StoreCall **ret_call);
/* Pending deliveries due at now_usec, earliest first, at most limit (1..STORE_LIST_MAX), bodies
 * loaded. *ret is NULL when none. */
int store_callback_due(Store *s, uint64_t now_usec, unsigned limit, StoreCallback ***ret, size_t *ret_n);
/* When the earliest pending delivery is due; -ENOENT if none is pending. */
int store_callback_next_due(Store *s, uint64_t *ret_usec);
/* How many deliveries are in state st. */
int store_callback_count(Store *s, CallbackState st, uint64_t *ret);
/* The same without waiting (store_put_async()): done(userdata, r, count). */
int store_callback_count_async(Store *s, CallbackState st, StoreU64DoneFn done, void *userdata, StoreCall **ret_call);
/* Write state, attempts, next_attempt_usec, last_error and delivered_usec of c by execution_id;
 * -ENOENT if there is no such delivery. */
int store_callback_update(Store *s, const StoreCallback *c);
/* Both without waiting (store_put_async()). store_callback_due_async() answers with the list
 * (StoreCallbacksDoneFn, the callback owns it: store_callbacks_free()); now_usec UINT64_MAX reads the
 * limit pending deliveries due first, due or not (the first one not due says when to look again).
 * store_callback_update_async(): done(userdata, r, NULL) gets what store_callback_update() returns. */
typedef void (*StoreCallbacksDoneFn)(void *userdata, int r, StoreCallback **l, size_t n);
int store_callback_due_async(Store *s, uint64_t now_usec, unsigned limit, StoreCallbacksDoneFn done, void *userdata,
                             StoreCall **ret_call);
int store_callback_update_async(Store *s, const StoreCallback *c, StoreDoneFn done, void *userdata,
                                StoreCall **ret_call);
/* Sessions (session.c): one row each, written at creation and after every run, deleted when the
 * session expires. Validated like execution ids. */
typedef struct StoreSession {
        char *session_id;               /* the record id (scoped-id.h): the key */
        char *client_id;                /* the session_id its owner chose; NULL: rows from before
                                         * migration 10, whose key is that id */
        char *owner;                    /* "uid:N" / "key:NAME" of its creator; NULL = unknown */
        char *mount_unit;               /* the tmpfs mount unit holding the workspace */
        char *path;                     /* where it is mounted */
        uint64_t disk_mb;
        uint64_t created_usec, last_used_usec;   /* CLOCK_REALTIME */
        uint64_t executions;            /* runs finished in it */
        char *node;                     /* NodeName= of the node whose tmpfs holds it (several nodes:
                                         * its runs are routed there); NULL: unknown (written before) */
} StoreSession;

/* Insert or replace by session_id. */
int store_session_put(Store *s, const StoreSession *x);
/* Deleting a session that is not there is not an error. */
int store_session_delete(Store *s, const char *session_id);
/* Both without waiting (store_put_async()): done(userdata, r, NULL) gets what they would return. x is
 * copied. */
int store_session_put_async(Store *s, const StoreSession *x, StoreDoneFn done, void *userdata, StoreCall **ret_call);
int store_session_delete_async(Store *s, const char *session_id, StoreDoneFn done, void *userdata,
                               StoreCall **ret_call);
/* Every session, oldest first; free with store_sessions_free(). */
int store_session_list(Store *s, StoreSession **ret, size_t *ret_n);
/* One session by session_id (the record id); -ENOENT if there is none. Free with store_sessions_free(ret, 1). */
int store_session_get(Store *s, const char *session_id, StoreSession **ret);
/* The same without waiting (store_put_async()): done(userdata, r, x) gets what store_session_get()
 * returns, x done's to free (store_sessions_free(x, 1)). */
typedef void (*StoreSessionDoneFn)(void *userdata, int r, StoreSession *x);
int store_session_get_async(Store *s, const char *session_id, StoreSessionDoneFn done, void *userdata,
                            StoreCall **ret_call);
void store_sessions_free(StoreSession *l, size_t n);

/* What one owner's records take in the store, kept up to date by the database itself (triggers of
 * store migration 8, on every insert, update and delete of a record or a delivery), so reading it
 * is one indexed lookup, never a scan. A record counts STORE_RECORD_OVERHEAD_BYTES plus the bytes of
 * its code, stdout, stderr, request (env, seed, input files) and error message, and the body of its
 * callback delivery; artifacts are not counted here. Purged records are subtracted. */
#define STORE_RECORD_OVERHEAD_BYTES 256
typedef struct StoreUsage {
        uint64_t records;               /* execution records */
        uint64_t bytes;                 /* as above */
        uint64_t pending_callbacks;     /* deliveries in state pending */
} StoreUsage;

/* owner's usage; all zero for an owner without records. */
int store_usage_get(Store *s, const char *owner, StoreUsage *ret);
/* The same without waiting (store_put_async()): done(userdata, r, u) with u the usage when r >= 0
 * (NULL otherwise), valid while done runs. */
typedef void (*StoreUsageDoneFn)(void *userdata, int r, const StoreUsage *u);
int store_usage_get_async(Store *s, const char *owner, StoreUsageDoneFn done, void *userdata, StoreCall **ret_call);

/* The node registry (issue 22): one row per sandboxd node sharing the store, keyed by its
 * NodeName=. A node registers at start and renews a lease by heartbeat; a row whose lease has
 * expired is a node that left or died. The epoch fences the name: every registration increments
 * it, and a heartbeat carrying an older epoch than the row's is refused, so that of two processes
 * started under one name only the later one holds the row. Timestamps are CLOCK_REALTIME
 * microseconds, as everywhere in the store: nodes compare them with each other's clocks. */
#define STORE_NODES_MAX 1024            /* store_node_list() returns at most this many rows */
struct StoreNode {
        char *name;                     /* NodeName= */
        uint64_t epoch;                 /* registrations of this name so far, the current one included */
        uint64_t started_usec;          /* the current registration */
        uint64_t heartbeat_usec;        /* the last renewal (at registration: started_usec) */
        uint64_t lease_expires_usec;    /* alive while now < this */
        uint64_t slots;                 /* MaxConcurrent= of the node when it registered */
        uint64_t running;               /* executions running there at the last heartbeat */
};

/* Insert the row for name, or take it over: epoch + 1 (1 for a new name), started and heartbeat
 * now, the lease until now + lease_usec, running 0. *ret_epoch: the new epoch. */
int store_node_register(Store *s, const char *name, uint64_t now_usec, uint64_t lease_usec, uint64_t slots,
                        uint64_t *ret_epoch);
/* The same without waiting (store_put_async()): done(userdata, r, epoch); an epoch of 0 is no
 * registration (the caller refuses it, as store_node_register() does with -EBADMSG). */
int store_node_register_async(Store *s, const char *name, uint64_t now_usec, uint64_t lease_usec, uint64_t slots,
                              StoreU64DoneFn done, void *userdata, StoreCall **ret_call);
/* Renew the lease of name's row to now + lease_usec and record running, if the row is still at
 * epoch; -ESTALE if it is not (another registration under the name took over) or is gone. */
int store_node_heartbeat(Store *s, const char *name, uint64_t epoch, uint64_t now_usec, uint64_t lease_usec,
                         uint64_t running);
/* The same without waiting (store_put_async()): done(userdata, r, NULL) gets what it would return. */
int store_node_heartbeat_async(Store *s, const char *name, uint64_t epoch, uint64_t now_usec, uint64_t lease_usec,
                               uint64_t running, StoreDoneFn done, void *userdata, StoreCall **ret_call);
/* The node leaves: its lease ends now (the row stays, for the epoch), if the row is still at epoch;
 * -ESTALE otherwise. */
int store_node_leave(Store *s, const char *name, uint64_t epoch, uint64_t now_usec);
/* Every node, by name (bytewise), at most STORE_NODES_MAX; free with store_nodes_free(). */
int store_node_list(Store *s, StoreNode **ret, size_t *ret_n);
/* The same without waiting: done(userdata, r, l, n) gets the list (free with store_nodes_free()). */
int store_node_list_async(Store *s, StoreNodesDoneFn done, void *userdata, StoreCall **ret_call);
void store_nodes_free(StoreNode *l, size_t n);
/* Is n's lease in force at now_usec? */
static inline bool store_node_is_alive(const StoreNode *n, uint64_t now_usec) {
        return now_usec < n->lease_expires_usec;
}

StoreRecord *store_record_new(const char *id);   /* with a fresh Execution; NULL on OOM */
StoreRecord *store_record_free(StoreRecord *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(StoreRecord *, store_record_free);
void store_records_free(StoreRecord **l, size_t n);

/* Execution.language: a language name interned for the life of the process, because Execution does
 * not own it and the language tables it came from are freed at reloads; bounded (a database or a
 * stream of reloads cannot make it grow without limit): past the bound it is "unknown". */
const char *store_intern_language(const char *name);
/* The same for Execution.reason: the values the database hands back, and the few made at run time
 * ("node X lost"); bounded (past the bound: NULL). */
const char *store_intern_reason(const char *reason);
