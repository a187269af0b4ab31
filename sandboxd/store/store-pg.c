/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <libpq-fe.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/random.h>

#include "model/backoff.h"
#include "store-pg-internal.h"
#include "strv.h"
#include "time-util.h"

/* The PostgreSQL store (issue 22): the same tables, schema versions and semantics as the SQLite
 * store, in a database several sandboxd nodes can share. The schema is in store-pg-schema.c.
 *
 * Most calls are still synchronous: they wait for the server's answer with the blocking libpq calls
 * (PQexecParams), on the event loop. The asynchronous ones (store_put_async(), store_get_async(),
 * with an event loop attached) do not: their statements are queued, first in first out, one at a
 * time on the connection (non-blocking: PQsendQueryParams(), PQflush() while the socket takes more,
 * the results read when it is readable), and each ends in a callback from the loop. A synchronous
 * call first waits for the queue to empty: one connection, one order.
 *
 * Connecting: conninfo is a libpq connection string, "postgresql://user@host/db" or
 * "host=/run/postgresql dbname=sandboxd" or "service=sandboxd". A password never goes on a command
 * line or into sandboxd.conf: name a password file (passfile=/etc/sandboxd/pgpass, mode 0600, the
 * .pgpass format) or a service file, or use peer or certificate authentication. Messages name the
 * database and its host, never the connection string itself.
 *
 * Every value is bound as a parameter of PQexecParams(); the only SQL text not a constant is that of
 * the list query, built from fixed fragments by which filters are set. */

/* "SBXD", as the SQLite store's application_id: in sandboxd_schema, and the key of the advisory lock
 * the migrations take, so that two nodes opening a new database at once do not both run them. */
#define SANDBOXD_APPLICATION_ID 0x53425844
/* The key of the advisory lock of artifact changes: a purge decides which blobs nothing refers to any
 * more, and must not race a collection adding a reference (SQLite's writer lock does this there). */
#define ARTIFACTS_LOCK_KEY 0x53425841

/* How long a statement waits for a row lock another node holds: SQLite's busy timeout; past it the
 * call fails with -EBUSY. The migrations wait longer for the advisory lock: another node may be
 * running them. */
#define LOCK_TIMEOUT "1s"
#define MIGRATION_LOCK_TIMEOUT "60s"
#define CONNECT_TIMEOUT_SEC "10"

/* PostgreSQL 11: CREATE TRIGGER ... EXECUTE FUNCTION. */
#define PG_MIN_SERVER_VERSION 110000

/* Notifications that arrive during one call, held until the loop hands them on; past this, they
 * are dropped and the listener told to look in the store instead (as after a reconnection). */
#define PG_NOTIFY_HELD_MAX 256

typedef struct PgStore {
        Store base;
        PGconn *conn;
        char *name;                     /* "PostgreSQL database 'x' on host", for messages */
        unsigned reconnect_failures;    /* failed reconnections in a row */
        unsigned connections;           /* sessions set up so far (a transaction's steps need one) */
        uint64_t reconnect_usec;        /* CLOCK_MONOTONIC: no new attempt before this */
        /* With an event loop (store_attach_event()): a reconnection runs there, PQresetStart() and
         * PQresetPoll() on the connection's socket, and calls meanwhile fail at once; after a failed
         * one, the next starts from the timer, not from a call. */
        sd_event *event;
        sd_event_source *reconnect_io;  /* the socket, while PQresetPoll() is under way */
        sd_event_source *reconnect_timer;
        bool reconnecting;              /* until the new session's settings are in (pg_setup_send()) */
        int setup_error;                /* the first failure among the settings' results */
        /* Notifications (store_set_notify()): the idle connection's socket, watched for what the
         * server sends between our queries; what arrives during one is handed on from a defer
         * source, never from inside the call. */
        StoreNotifyFn notify;
        void *notify_data;
        sd_event_source *io;            /* the socket: notifications, and the asynchronous call's answer */
        sd_event_source *notify_defer;
        char *held[PG_NOTIFY_HELD_MAX][2];      /* channel, payload: read, not yet handed on */
        uint64_t held_seq[PG_NOTIFY_HELD_MAX];  /* ... and the answers finished when each was read */
        size_t n_held;
        bool held_dropped;                      /* more than that: the listener looks in the store */
        /* The asynchronous call whose statement is on the connection (the others wait in
         * base.calls); flushing: PQflush() has more to send, the socket is watched for EPOLLOUT. */
        StoreCall *inflight;
        bool flushing;
} PgStore;

/* Reconnecting after a failed attempt: not before this backoff (exponential with jitter, backoff.h),
 * so that a server that is down costs each call one failed -EIO, not a connection attempt (up to
 * connect_timeout, on the event loop) every time. */
static const BackoffPolicy reconnect_backoff = {
        .base_usec = 200 * USEC_PER_MSEC,
        .max_usec = 30 * USEC_PER_SEC,
};

static PgStore *PG_STORE(Store *s) {
        return (PgStore *) s;
}

/* ---- errors ---- */

/* SQLSTATE → negative errno, by the longest matching prefix: the class (two characters) unless a
 * condition of it means something else. */
static const struct {
        const char *sqlstate;
        int error;
} pg_errors[] = {
        { "53100", -ENOSPC },           /* disk_full */
        { "53200", -ENOMEM },           /* out_of_memory */
        { "53300", -EBUSY },            /* too_many_connections */
        { "53", -EIO },                 /* insufficient resources, other */
        { "54", -E2BIG },               /* program limit exceeded (a row too large) */
        { "22", -EINVAL },              /* data exception */
        { "23", -EINVAL },              /* integrity constraint violation */
        { "40", -EBUSY },               /* serialization failure, deadlock: retry */
        { "55P03", -EBUSY },            /* lock_not_available: lock_timeout */
        { "57014", -EBUSY },            /* query_canceled: statement_timeout */
        { "57P", -EIO },                /* the server is shutting down */
        { "08", -EIO },                 /* connection exception */
        { "28", -EACCES },              /* invalid authorization */
        { "42501", -EACCES },           /* insufficient_privilege */
        { "25006", -EROFS },            /* read_only_sql_transaction: a standby */
        { "3D000", -ENOENT },           /* invalid_catalog_name: no such database */
        { "42P01", -EBADMSG },          /* undefined_table: not our schema */
        { "42703", -EBADMSG },          /* undefined_column */
        { "XX001", -EBADMSG },          /* data_corrupted */
        { "XX002", -EBADMSG },          /* index_corrupted */
};

static int pg_errno_of_sqlstate(const char *sqlstate) {
        size_t best = 0;
        int r = -EIO;

        if (!sqlstate)
                return -EIO;
        for (size_t i = 0; i < ELEMENTSOF(pg_errors); i++) {
                size_t n = strlen(pg_errors[i].sqlstate);

                if (n > best && strncmp(sqlstate, pg_errors[i].sqlstate, n) == 0) {
                        best = n;
                        r = pg_errors[i].error;
                }
        }
        return r;
}

/* libpq's messages end in a newline, some span lines: one line for the log. */
static void pg_set_error(PgStore *ps, const char *message) {
        _cleanup_free_ char *m = strdup(message ?: "unknown error");

        store_set_error(&ps->base, m ? store_one_line(m) : message);
}

_printf_(2, 3) static int asprintf_error(PgStore *ps, const char *fmt, ...) {
        _cleanup_free_ char *m = NULL;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&m, fmt, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        pg_set_error(ps, m);
        return 0;
}

/* Record a failed result (or, res NULL, the connection's failure) and turn it into an errno. Without
 * an SQLSTATE the server was not reached or the connection went away: -EIO, and the next call
 * reconnects. */
static int pg_fail(PgStore *ps, const PGresult *res) {
        const char *sqlstate = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

        pg_set_error(ps, res && !isempty(PQresultErrorMessage(res)) ? PQresultErrorMessage(res)
                                                                     : PQerrorMessage(ps->conn));
        if (!res && PQstatus(ps->conn) == CONNECTION_OK)
                return -ENOMEM;         /* libpq could not allocate the result */
        return pg_errno_of_sqlstate(sqlstate);
}

/* ---- parameters ---- */

#define PG_PARAMS_MAX 56

/* The parameters of one statement: text, except the fingerprint (binary). Numbers are formatted
 * into the struct itself, strings point at the caller's. */
typedef struct PgParams {
        int n;
        const char *values[PG_PARAMS_MAX];
        int lengths[PG_PARAMS_MAX];
        int formats[PG_PARAMS_MAX];
        char numbers[PG_PARAMS_MAX][32];
} PgParams;

static void pp_text(PgParams *p, const char *s) {
        assert(p->n < PG_PARAMS_MAX);
        p->values[p->n] = s;
        p->lengths[p->n] = 0;
        p->formats[p->n] = 0;
        p->n++;
}

_printf_(2, 3) static void pp_number(PgParams *p, const char *fmt, ...) {
        va_list ap;

        assert(p->n < PG_PARAMS_MAX);
        va_start(ap, fmt);
        (void) vsnprintf(p->numbers[p->n], sizeof(p->numbers[p->n]), fmt, ap);
        va_end(ap);
        pp_text(p, p->numbers[p->n]);
}

static void pp_u64(PgParams *p, uint64_t v) {
        pp_number(p, "%" PRIu64, v);   /* ≤ INT64_MAX: store_record_is_valid() */
}

/* 0 means "not yet" for the timestamps. */
static void pp_u64_or_null(PgParams *p, uint64_t v, bool have) {
        if (have)
                pp_u64(p, v);
        else
                pp_text(p, NULL);
}

static void pp_int(PgParams *p, int v) {
        pp_number(p, "%d", v);
}

static void pp_bytes(PgParams *p, const void *b, size_t n) {
        assert(p->n < PG_PARAMS_MAX);
        p->values[p->n] = b;
        p->lengths[p->n] = (int) n;
        p->formats[p->n] = 1;
        p->n++;
}

/* ---- running statements ---- */

/* What every session of ours starts with, on the first connection and after a reconnection: how
 * long a statement waits for another session's lock (-EBUSY past it, like SQLite's busy timeout).
 * The encoding is a connection parameter (client_encoding=UTF8), which libpq keeps across resets.
 * And a commit is acknowledged only once it is in the server's write-ahead log: the daemon tells its
 * callers "accepted" after its record's commit, which a server with synchronous_commit=off could
 * lose in a crash. Only "off" is raised, to "on": a stronger setting of the administrator's
 * (remote_write, remote_apply for a standby) is kept. Each statement alone (the synchronous setup,
 * pg_session_setup()), or all in one simple query (after a reconnection on the loop,
 * pg_setup_send()). */
#define PG_SETUP_LOCK_TIMEOUT "SET lock_timeout = '" LOCK_TIMEOUT "'"
#define PG_SETUP_SYNCHRONOUS_COMMIT                                             \
        "SELECT set_config('synchronous_commit', 'on', false) "                 \
        "WHERE current_setting('synchronous_commit') = 'off'"
/* A cancel for one of this node's executions, sent by another node (store_cancel_elsewhere());
 * listened to on every session, handed on only with store_set_notify(). Then the shared queue's
 * (store.h). */
#define PG_SETUP_LISTEN_CANCEL "LISTEN " STORE_CHANNEL_CANCEL
#define PG_SETUP_LISTEN_QUEUE "LISTEN " STORE_CHANNEL_QUEUE
#define PG_SETUP_LISTEN_CLAIMED "LISTEN " STORE_CHANNEL_CLAIMED
#define PG_SETUP_LISTEN_FINAL "LISTEN " STORE_CHANNEL_FINAL

static const char sql_session_setup[] =
        PG_SETUP_LOCK_TIMEOUT "; " PG_SETUP_SYNCHRONOUS_COMMIT "; " PG_SETUP_LISTEN_CANCEL "; "
        PG_SETUP_LISTEN_QUEUE "; " PG_SETUP_LISTEN_CLAIMED "; " PG_SETUP_LISTEN_FINAL;

static int pg_session_setup(PgStore *ps) {
        static const char *const statements[] = {
                PG_SETUP_LOCK_TIMEOUT,
                PG_SETUP_SYNCHRONOUS_COMMIT,
                PG_SETUP_LISTEN_CANCEL,
                PG_SETUP_LISTEN_QUEUE,
                PG_SETUP_LISTEN_CLAIMED,
                PG_SETUP_LISTEN_FINAL,
        };

        ps->connections++;
        for (size_t i = 0; i < ELEMENTSOF(statements); i++) {
                PGresult *res = PQexec(ps->conn, statements[i]);
                int r = 0;

                if (!res || (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK))
                        r = pg_fail(ps, res);
                PQclear(res);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The server's notices and warnings ("terminating connection due to immediate shutdown command")
 * are dropped: libpq's default prints them on stderr, the journal, as unattributed lines, and what
 * they tell of comes back as the failed call's error (store_error_message()), which the caller logs. */
static void pg_notice(void *userdata, const char *message) {
}

static void pg_io_update(PgStore *ps);

static void pg_notify_held_free(PgStore *ps) {
        for (size_t i = 0; i < ps->n_held; i++) {
                free(ps->held[i][0]);
                free(ps->held[i][1]);
        }
        ps->n_held = 0;
}

/* Hand on the notifications held that are due: those that came before every answer not yet delivered
 * (store_notify_horizon(); store.c hands on the rest before each answer, pg_notify_flush_store()).
 * Taken out first: a listener may call the store, which may hold more. From the event loop only. */
static void pg_notify_deliver(PgStore *ps) {
        char *due[PG_NOTIFY_HELD_MAX][2];
        uint64_t horizon = store_notify_horizon(&ps->base);
        size_t k = 0;
        bool dropped;

        while (k < ps->n_held && ps->held_seq[k] < horizon)
                k++;
        memcpy(due, ps->held, k * sizeof(due[0]));
        memmove(ps->held, ps->held + k, (ps->n_held - k) * sizeof(ps->held[0]));
        memmove(ps->held_seq, ps->held_seq + k, (ps->n_held - k) * sizeof(ps->held_seq[0]));
        ps->n_held -= k;
        /* More arrived than could be held: the listener looks in the store, once the rest is handed on. */
        dropped = ps->held_dropped && ps->n_held == 0;
        if (dropped)
                ps->held_dropped = false;
        for (size_t i = 0; i < k; i++) {
                if (ps->notify)
                        ps->notify(ps->notify_data, due[i][0], due[i][1]);
                free(due[i][0]);
                free(due[i][1]);
        }
        if (dropped && ps->notify)
                ps->notify(ps->notify_data, STORE_CHANNEL_RECONNECTED, "");
}

static void pg_notify_flush_store(Store *s) {
        pg_notify_deliver(PG_STORE(s));
}

static int on_notify_defer(sd_event_source *s, void *userdata);

/* A defer source for what is due now; what waits for an answer's delivery goes from there. */
static void pg_notify_schedule(PgStore *ps) {
        bool due = (ps->n_held > 0 && ps->held_seq[0] < store_notify_horizon(&ps->base)) ||
                   (ps->n_held == 0 && ps->held_dropped);

        if (due && !ps->notify_defer)
                (void) sd_event_add_defer(ps->event, &ps->notify_defer, on_notify_defer, ps);
}

/* What libpq has read is held, stamped with the answers finished so far (store-internal.h), and
 * handed on from the loop in that order: never from inside a call (the listener may call the store,
 * or free what the caller is using), never before an answer that came before it. */
static void pg_notify_pending(PgStore *ps) {
        uint64_t stamp = ps->base.finish_seq;
        PGnotify *n;

        while (ps->conn && (n = PQnotifies(ps->conn))) {
                char *channel, *payload;
                bool same = false;

                if (!ps->notify || !ps->event) {
                        PQfreemem(n);   /* nobody listens */
                        continue;
                }
                /* The same twice between two answers (a burst of STORE_CHANNEL_QUEUE) is handed on
                 * once. */
                for (size_t i = 0; !same && n->relname && n->extra && i < ps->n_held; i++)
                        same = ps->held_seq[i] == stamp && streq(ps->held[i][0], n->relname) &&
                               streq(ps->held[i][1], n->extra);
                if (same) {
                        PQfreemem(n);
                        continue;
                }
                channel = n->relname ? strdup(n->relname) : NULL;
                payload = n->extra ? strdup(n->extra) : NULL;
                PQfreemem(n);
                if (!channel || !payload || ps->n_held >= PG_NOTIFY_HELD_MAX) {
                        free(channel);
                        free(payload);
                        ps->held_dropped = true;
                        continue;
                }
                ps->held[ps->n_held][0] = channel;
                ps->held[ps->n_held][1] = payload;
                ps->held_seq[ps->n_held] = stamp;
                ps->n_held++;
        }
        if (ps->event)
                pg_notify_schedule(ps);
}

static int on_notify_defer(sd_event_source *s, void *userdata) {
        PgStore *ps = userdata;

        ps->notify_defer = sd_event_source_disable_unref(ps->notify_defer);
        pg_notify_pending(ps);
        pg_notify_deliver(ps);
        return 0;
}

static int on_conn_io(sd_event_source *s, int fd, uint32_t revents, void *userdata);

/* Watch the connection's socket while it is connected and someone listens or an asynchronous call is
 * under way: what comes is the server's own (notifications, or its goodbye; a synchronous call reads
 * its answer itself before the loop runs again) or the asynchronous call's answer; EPOLLOUT too while
 * its statement is not all sent. Made again after each reconnection (pg_reconnect_start() drops it:
 * the socket changes). If the source cannot be made, a call under way ends at the next synchronous
 * call, which waits for it. */
static void pg_io_update(PgStore *ps) {
        uint32_t events = EPOLLIN | (ps->inflight && ps->flushing ? EPOLLOUT : 0);
        int fd;

        if (!ps->event || ps->reconnecting || PQstatus(ps->conn) != CONNECTION_OK || (!ps->notify && !ps->inflight)) {
                ps->io = sd_event_source_disable_unref(ps->io);
                return;
        }
        fd = PQsocket(ps->conn);
        if (ps->io && fd >= 0 && sd_event_source_get_io_fd(ps->io) == fd &&
            sd_event_source_set_io_events(ps->io, events) >= 0)
                return;
        ps->io = sd_event_source_disable_unref(ps->io);
        if (fd >= 0)
                (void) sd_event_add_io(ps->event, &ps->io, fd, events, on_conn_io, ps);
}

static int pg_set_notify(Store *s, StoreNotifyFn fn, void *userdata) {
        PgStore *ps = PG_STORE(s);

        if (!ps->event)
                return -ENOTCONN;
        ps->notify = fn;
        ps->notify_data = userdata;
        pg_io_update(ps);
        return 0;
}

static void pg_reconnect_failed(PgStore *ps) {
        uint64_t rnd, now = now_usec(CLOCK_MONOTONIC);

        pg_set_error(ps, PQerrorMessage(ps->conn));
        if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t) sizeof(rnd))
                rnd = now * 6364136223846793005ULL;
        ps->reconnect_failures = MIN(ps->reconnect_failures + 1, 64U);
        ps->reconnect_usec = now + backoff_delay_usec(&reconnect_backoff, ps->reconnect_failures, rnd, 0);
}

static int pg_reconnect_start(PgStore *ps);
static void pg_async_end(PgStore *ps);

static int on_reconnect_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        PgStore *ps = userdata;

        ps->reconnect_timer = sd_event_source_disable_unref(ps->reconnect_timer);
        (void) pg_reconnect_start(ps);
        return 0;
}

/* A reconnection that failed: the next one from the timer, after the backoff. */
static void pg_reconnect_retry(PgStore *ps) {
        ps->reconnecting = false;
        ps->reconnect_io = sd_event_source_disable_unref(ps->reconnect_io);
        pg_reconnect_failed(ps);
        ps->reconnect_timer = sd_event_source_disable_unref(ps->reconnect_timer);
        if (sd_event_add_time(ps->event, &ps->reconnect_timer, CLOCK_MONOTONIC, ps->reconnect_usec,
                              10 * USEC_PER_MSEC, on_reconnect_timer, ps) < 0)
                /* Without the timer, the next call after the backoff starts it (pg_connected()). */
                ps->reconnect_timer = NULL;
}

static int on_reconnect_io(sd_event_source *s, int fd, uint32_t revents, void *userdata);

/* Wait for what PQresetPoll() asked for, on the socket it names now: libpq may change the socket
 * from one step to the next (another address of the host, another host of the list). */
static int pg_reconnect_wait(PgStore *ps, PostgresPollingStatusType st) {
        int fd = PQsocket(ps->conn);

        ps->reconnect_io = sd_event_source_disable_unref(ps->reconnect_io);
        if (fd < 0)
                return -EBADF;
        return sd_event_add_io(ps->event, &ps->reconnect_io, fd, st == PGRES_POLLING_READING ? EPOLLIN : EPOLLOUT,
                               on_reconnect_io, ps);
}

/* The new session's settings are in: the connection is the calls' again. */
static void pg_setup_done(PgStore *ps) {
        ps->reconnect_io = sd_event_source_disable_unref(ps->reconnect_io);
        if (ps->setup_error < 0) {
                pg_reconnect_retry(ps);     /* the next PQresetStart() closes this one */
                return;
        }
        ps->connections++;
        ps->reconnecting = false;
        ps->reconnect_failures = 0;
        pg_io_update(ps);
        /* Notifications sent while the connection was down are lost: tell the listener, which looks
         * in the store for what it may have missed. */
        if (ps->notify)
                ps->notify(ps->notify_data, STORE_CHANNEL_RECONNECTED, "");
        pg_notify_pending(ps);
}

/* The settings' results, as they come; the end of them ends the reconnection. */
static int on_setup_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        PgStore *ps = userdata;
        int f = PQflush(ps->conn);

        if (f < 0 || !PQconsumeInput(ps->conn)) {
                pg_set_error(ps, PQerrorMessage(ps->conn));
                pg_reconnect_retry(ps);
                return 0;
        }
        if (f > 0)
                return 0;       /* more to send: still watched for EPOLLOUT */
        (void) sd_event_source_set_io_events(ps->reconnect_io, EPOLLIN);
        while (!PQisBusy(ps->conn)) {
                PGresult *res = PQgetResult(ps->conn);

                if (!res) {
                        pg_setup_done(ps);
                        return 0;
                }
                if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK &&
                    ps->setup_error == 0)
                        ps->setup_error = pg_fail(ps, res);
                PQclear(res);
        }
        return 0;
}

/* The new session's settings, without waiting (the reconnection runs on the loop): one simple query
 * of all of them, its results read as they come (on_setup_io()); calls meanwhile fail at once, as
 * during the rest of the reconnection. */
static int pg_setup_send(PgStore *ps) {
        int fd = PQsocket(ps->conn), f;

        ps->setup_error = 0;
        if (fd < 0)
                return -EBADF;
        if ((!PQisnonblocking(ps->conn) && PQsetnonblocking(ps->conn, 1) < 0) ||
            !PQsendQuery(ps->conn, sql_session_setup) || (f = PQflush(ps->conn)) < 0) {
                pg_set_error(ps, PQerrorMessage(ps->conn));
                return -EIO;
        }
        ps->reconnect_io = sd_event_source_disable_unref(ps->reconnect_io);
        return sd_event_add_io(ps->event, &ps->reconnect_io, fd, f > 0 ? EPOLLIN | EPOLLOUT : EPOLLIN, on_setup_io,
                               ps);
}

static void pg_reconnect_step(PgStore *ps, PostgresPollingStatusType st) {
        switch (st) {
        case PGRES_POLLING_READING:
        case PGRES_POLLING_WRITING:
                if (pg_reconnect_wait(ps, st) < 0)
                        pg_reconnect_retry(ps);
                return;
        case PGRES_POLLING_OK:
                /* Still reconnecting until the settings are in: no call uses the connection before. */
                if (pg_setup_send(ps) < 0)
                        pg_reconnect_retry(ps);     /* the next PQresetStart() closes this one */
                return;
        default:
                pg_reconnect_retry(ps);
                return;
        }
}

static int on_reconnect_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        PgStore *ps = userdata;

        pg_reconnect_step(ps, PQresetPoll(ps->conn));
        return 0;
}

/* Start a reconnection on the event loop; it goes on from on_reconnect_io(). */
static int pg_reconnect_start(PgStore *ps) {
        if (ps->reconnecting)
                return 0;
        /* Not expected (a call is sent only on a connection found good, and its loss is seen on the
         * socket first), but a call under way must not outlive the connection it was sent on. */
        if (ps->inflight)
                pg_async_end(ps);
        ps->reconnect_timer = sd_event_source_disable_unref(ps->reconnect_timer);
        if (!PQresetStart(ps->conn)) {
                pg_reconnect_retry(ps);
                return -EIO;
        }
        ps->reconnecting = true;
        ps->io = sd_event_source_disable_unref(ps->io);
        /* The first step as if the socket were ready for writing, as libpq documents. */
        pg_reconnect_step(ps, PGRES_POLLING_WRITING);
        return 0;
}

static int pg_attach_event(Store *s, sd_event *event) {
        PgStore *ps = PG_STORE(s);

        if (ps->event)
                return -EBUSY;
        ps->event = sd_event_ref(event);
        return 0;
}

/* A connection that went away (a server restart, a network cut, a terminated backend) is made
 * again; the call that noticed failed with -EIO. With an event loop the reconnection runs there
 * (pg_reconnect_start()), and every call until it is done fails with -EIO at once; without one, the
 * next call reconnects, waiting up to connect_timeout. A failed attempt makes the calls of the next
 * backoff step fail with -EIO at once. */
static int pg_connected(PgStore *ps) {
        uint64_t now;

        if (!ps->reconnecting && PQstatus(ps->conn) == CONNECTION_OK)
                return 0;
        now = now_usec(CLOCK_MONOTONIC);
        if (ps->reconnecting || (ps->reconnect_failures > 0 && now < ps->reconnect_usec)) {
                /* The last attempt's message stays: it says why. */
                if (startswith(store_error_message(&ps->base), "not connected"))
                        return -EIO;
                if (ps->reconnecting)
                        (void) asprintf_error(ps, "not connected, reconnecting: %s", store_error_message(&ps->base));
                else
                        (void) asprintf_error(ps, "not connected, next attempt in %" PRIu64 " ms: %s",
                                              usec_to_msec_up(ps->reconnect_usec - now),
                                              store_error_message(&ps->base));
                return -EIO;
        }
        if (ps->event) {
                /* The connection was found lost just now (or the backoff's timer could not be armed):
                 * the reconnection runs on the event loop from here. */
                (void) pg_reconnect_start(ps);
                if (!ps->reconnecting && PQstatus(ps->conn) == CONNECTION_OK)
                        return 0;
                if (!startswith(store_error_message(&ps->base), "not connected"))
                        (void) asprintf_error(ps, "not connected, reconnecting: %s", store_error_message(&ps->base));
                return -EIO;
        }
        PQreset(ps->conn);
        if (PQstatus(ps->conn) != CONNECTION_OK) {
                pg_reconnect_failed(ps);
                return -EIO;
        }
        ps->reconnect_failures = 0;
        return pg_session_setup(ps);
}

static void pg_async_flush(PgStore *ps);

/* Run sql with the parameters p (NULL: none). *ret (if not NULL) gets the result, rows in text
 * format, to PQclear(). The asynchronous calls queued before end first (their order is the callers'). */
static int pg_query(PgStore *ps, const char *sql, const PgParams *p, PGresult **ret) {
        PGresult *res;
        ExecStatusType st;
        int r;

        pg_async_flush(ps);
        r = pg_connected(ps);
        if (r < 0)
                return r;
        res = PQexecParams(ps->conn, sql, p ? p->n : 0, NULL, p ? p->values : NULL, p ? p->lengths : NULL,
                           p ? p->formats : NULL, 0);
        pg_notify_pending(ps);
        st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
                r = pg_fail(ps, res);
                PQclear(res);
                return r;
        }
        if (ret)
                *ret = res;
        else
                PQclear(res);
        return 0;
}

/* A statement that changes rows: *ret_n (may be NULL) how many. */
static int pg_command(PgStore *ps, const char *sql, const PgParams *p, uint64_t *ret_n) {
        PGresult *res = NULL;
        int r;

        r = pg_query(ps, sql, p, &res);
        if (r < 0)
                return r;
        if (ret_n)
                *ret_n = strtoull(PQcmdTuples(res), NULL, 10);
        PQclear(res);
        return 0;
}

static void pg_rollback_if_open(PgStore *ps) {
        PGTransactionStatusType t = PQtransactionStatus(ps->conn);

        if (t == PQTRANS_INTRANS || t == PQTRANS_INERROR)
                PQclear(PQexec(ps->conn, "ROLLBACK"));
}

static int pg_begin(PgStore *ps) {
        return pg_query(ps, "BEGIN", NULL, NULL);
}

/* The end of a transaction: COMMIT if r >= 0 (its failure becomes r), a rollback if r (now) < 0. */
static int pg_end(PgStore *ps, int r) {
        if (r >= 0)
                r = pg_query(ps, "COMMIT", NULL, NULL);
        if (r < 0)
                pg_rollback_if_open(ps);
        return r;
}

/* A lock held to the transaction's end. */
static const char sql_lock[] = "SELECT pg_advisory_xact_lock($1::bigint)";

static int pg_lock(PgStore *ps, int64_t key) {
        PgParams p = {};

        pp_number(&p, "%" PRIi64, key);
        return pg_query(ps, sql_lock, &p, NULL);
}

/* ---- reading results ---- */

static const char *pg_text(const PGresult *res, int row, int col) {
        return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

static int pg_strdup(const PGresult *res, int row, int col, char **ret) {
        const char *t = pg_text(res, row, col);

        if (!t) {
                *ret = NULL;
                return 0;
        }
        *ret = strdup(t);
        return *ret ? 0 : -ENOMEM;
}

static int pg_u64(const PGresult *res, int row, int col, uint64_t *ret, bool *ret_have) {
        return store_column_u64(pg_text(res, row, col), ret, ret_have);
}

/* A bytea in the text format PostgreSQL 9.0 and later use ("\x" and hex digits). */
static int pg_bytea(const char *t, uint8_t *buf, size_t size, size_t *ret_n) {
        size_t n;

        if (!t || !startswith(t, "\\x"))
                return -EBADMSG;
        t += 2;
        n = strlen(t);
        if (n / 2 > size || unhexmem(t, n, buf) < 0)
                return -EBADMSG;
        *ret_n = n / 2;
        return 0;
}

static int pg_row_to_record(const PGresult *res, int row, StoreRecord **ret) {
        uint8_t fingerprint[32];
        StoreRow v = { .fingerprint = fingerprint };
        const char *cores;
        char *end = NULL;
        int k;

        if (PQnfields(res) != _STORE_COL_MAX)
                return -EBADMSG;
        for (int i = 0; i < _STORE_COL_MAX; i++)
                v.text[i] = pg_text(res, row, i);
        cores = v.text[STORE_COL_CPU_CORES];
        if (!cores)
                return -EBADMSG;
        v.cpu_cores = strtod(cores, &end);
        if (end == cores || *end != 0)
                return -EBADMSG;
        k = pg_bytea(v.text[STORE_COL_FINGERPRINT], fingerprint, sizeof(fingerprint), &v.fingerprint_size);
        if (k < 0)
                return k;
        return store_record_from_row(&v, ret);
}

static int pg_collect_records(PgStore *ps, const PGresult *res, StoreRecord ***ret, size_t *ret_n) {
        int n = PQntuples(res), r;
        StoreRecord **l;

        if (n == 0) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        l = calloc((size_t) n, sizeof(StoreRecord *));
        if (!l)
                return -ENOMEM;
        for (int i = 0; i < n; i++) {
                r = pg_row_to_record(res, i, &l[i]);
                if (r < 0) {
                        if (r == -EBADMSG)
                                store_set_error(&ps->base, "a stored record is damaged");
                        store_records_free(l, (size_t) i);
                        return r;
                }
        }
        *ret = l;
        *ret_n = (size_t) n;
        return 0;
}

/* Run a query for records and collect them. */
static int pg_query_records(PgStore *ps, const char *sql, const PgParams *p, StoreRecord ***ret, size_t *ret_n) {
        PGresult *res = NULL;
        int r;

        r = pg_query(ps, sql, p, &res);
        if (r < 0)
                return r;
        r = pg_collect_records(ps, res, ret, ret_n);
        PQclear(res);
        return r;
}


/* ---- asynchronous calls (store.h, store_put_async()) ---- */

typedef enum PgCallKind {
        PG_CALL_PUT,
        PG_CALL_GET,
        PG_CALL_FENCED,                 /* a command that must change a row: none, -ESTALE */
        PG_CALL_COMMAND,                /* a statement whose result says nothing but success */
        PG_CALL_NODES,                  /* the node registry's rows (store_node_list()) */
        PG_CALL_RECORDS,                /* records, all of them */
        PG_CALL_ROW,                    /* a command that must change a row: none, -ENOENT */
        PG_CALL_CALLBACKS,              /* callback deliveries with their bodies */
        PG_CALL_USAGE,                  /* an owner's record_usage row (store_usage_get()) */
        PG_CALL_SESSIONS,               /* session rows */
        PG_CALL_ARTIFACTS,              /* an execution's artifact list (store_get_artifacts()) */
        PG_CALL_CALLBACK,               /* one delivery, without its body (store_callback_get()) */
        PG_CALL_U64,                    /* one number: the first column of the first row, none 0 */
        PG_CALL_UNFINISHED,             /* a statement on an unfinished execution: no row, -EALREADY */
        PG_CALL_TXN,                    /* a transaction: its steps, one after the other (pg_txn_new()) */
} PgCallKind;

/* The statement of an asynchronous call: its parameters copied, since the caller's record changes
 * (or goes) before the statement is sent. */
typedef struct PgCall {
        PgCallKind kind;
        const char *sql;                /* a constant, or sql_owned */
        char *sql_owned;
        bool sent;                      /* sent, or failed before it could be */
        int n;
        char *values[PG_PARAMS_MAX];
        int lengths[PG_PARAMS_MAX];
        int formats[PG_PARAMS_MAX];
        PGresult *res;                  /* its result as read so far */

        /* PG_CALL_TXN: its statements (steps[0] BEGIN, steps[n_steps - 1] COMMIT, steps[n_steps]
         * ROLLBACK), each sent once the one before it succeeded, on the connection it began on; after
         * each, check() (if set) may fail it. The first failure is rolled back and ends the call. */
        struct PgCall **steps;
        size_t n_steps, step;
        int failed;                     /* the failure being rolled back, or 0 */
        unsigned connection;            /* PgStore.connections at BEGIN */
        int (*check)(PgStore *ps, struct PgCall *txn, const PGresult *res);
        char **check_items;             /* check()'s data, strv */
        uint64_t value;                 /* with has_value, the answer (a list of one, STORE_CALL_U64) */
        bool has_value;
} PgCall;

static void pg_call_free(void *p) {
        PgCall *pc = p;

        if (!pc)
                return;
        for (int i = 0; i < pc->n; i++)
                free(pc->values[i]);
        for (size_t i = 0; pc->steps && i <= pc->n_steps; i++)
                pg_call_free(pc->steps[i]);
        free(pc->steps);
        strv_free(pc->check_items);
        free(pc->sql_owned);
        PQclear(pc->res);
        free(pc);
}

static void pg_call_freep(PgCall **p) {
        pg_call_free(*p);
}

static int pg_call_new(PgCallKind kind, const char *sql, const PgParams *p, PgCall **ret) {
        PgCall *pc = calloc(1, sizeof(PgCall));

        if (!pc)
                return -ENOMEM;
        pc->kind = kind;
        pc->sql = sql;
        for (int i = 0; i < p->n; i++) {
                size_t n;

                pc->n = i + 1;
                pc->lengths[i] = p->lengths[i];
                pc->formats[i] = p->formats[i];
                if (!p->values[i])
                        continue;       /* SQL NULL */
                n = p->formats[i] ? (size_t) p->lengths[i] : strlen(p->values[i]) + 1;
                pc->values[i] = malloc(MAX(n, 1U));
                if (!pc->values[i]) {
                        pg_call_free(pc);
                        return -ENOMEM;
                }
                memcpy(pc->values[i], p->values[i], n);
        }
        *ret = pc;
        return 0;
}

static PgCall *PG_CALL(StoreCall *c) {
        return c->data;
}

/* The statement of pc to send, or sent: pc itself, or the transaction's current step. */
static PgCall *pg_call_statement(PgCall *pc) {
        if (pc->kind != PG_CALL_TXN)
                return pc;
        return pc->failed ? pc->steps[pc->n_steps] : pc->steps[pc->step];
}

/* A transaction of up to n statements added with pg_txn_add() (BEGIN, COMMIT and ROLLBACK its own). */
static int pg_txn_new(size_t n, PgCall **ret) {
        _cleanup_(pg_call_freep) PgCall *pc = calloc(1, sizeof(PgCall));
        int r;

        if (!pc)
                return -ENOMEM;
        pc->kind = PG_CALL_TXN;
        pc->steps = calloc(n + 3, sizeof(PgCall *));
        if (!pc->steps)
                return -ENOMEM;
        r = pg_call_new(PG_CALL_COMMAND, "BEGIN", &(PgParams) {}, &pc->steps[0]);
        if (r < 0)
                return r;
        pc->n_steps = 1;
        *ret = TAKE_PTR(pc);
        return 0;
}

static int pg_txn_add(PgCall *txn, PgCallKind kind, const char *sql, const PgParams *p) {
        return pg_call_new(kind, sql, p, &txn->steps[txn->n_steps++]);
}

/* The artifacts lock (ARTIFACTS_LOCK_KEY), held to the transaction's end. */
static int pg_txn_add_lock(PgCall *txn) {
        PgParams p = {};

        pp_number(&p, "%" PRIi64, (int64_t) ARTIFACTS_LOCK_KEY);
        return pg_txn_add(txn, PG_CALL_COMMAND, sql_lock, &p);
}

static int pg_call_queue_txn(PgStore *ps, StoreCall *c, PgCall **txn);

/* The oldest call of ours not sent yet. Calls without a PgCall are store.c's, run synchronously. */
static StoreCall *pg_async_next(PgStore *ps) {
        for (StoreCall *c = ps->base.calls; c; c = c->next)
                if (!c->finished && c->data && !PG_CALL(c)->sent)
                        return c;
        return NULL;
}

/* A result of the call under way: the first, unless a later one is an error. */
static void pg_call_keep(PgCall *pc, PGresult *res) {
        ExecStatusType st = PQresultStatus(res);

        if (!pc->res || (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK &&
                         (PQresultStatus(pc->res) == PGRES_COMMAND_OK || PQresultStatus(pc->res) == PGRES_TUPLES_OK))) {
                PQclear(pc->res);
                pc->res = res;
        } else
                PQclear(res);
}

static int pg_collect_nodes(const PGresult *res, StoreNode **ret, size_t *ret_n);
static int pg_collect_callbacks(PgStore *ps, const PGresult *res, bool with_body, StoreCallback ***ret,
                                size_t *ret_n);
static int pg_collect_sessions(const PGresult *res, StoreSession **ret, size_t *ret_n);
static int pg_usage_of(const PGresult *res, StoreUsage *ret);
static int pg_collect_artifacts(const PGresult *res, ExecArtifacts **ret);

/* What the call's result means, as the synchronous call would have returned it: *ret a record
 * (PG_CALL_GET), or a list of *ret_n (PG_CALL_NODES, PG_CALL_RECORDS). */
static int pg_call_result(PgStore *ps, PgCall *pc, void **ret, size_t *ret_n) {
        ExecStatusType st = pc->res ? PQresultStatus(pc->res) : PGRES_FATAL_ERROR;
        StoreRecord **l = NULL;
        size_t n = 0;
        int r;

        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
                /* No result at all: the connection went away before one came, -EIO. */
                r = pg_fail(ps, pc->res);
                return r == -ENOMEM && !pc->res ? -EIO : r;
        }
        if (pc->kind == PG_CALL_PUT) {
                if (strtoull(PQcmdTuples(pc->res), NULL, 10) > 0)
                        return 0;
                pg_set_error(ps, "the execution was taken over by another node");
                return -ESTALE;         /* the fence (FENCE_WHERE) */
        }
        if (pc->kind == PG_CALL_COMMAND)
                return 0;
        if (pc->kind == PG_CALL_FENCED) {
                if (strtoull(PQcmdTuples(pc->res), NULL, 10) > 0)
                        return 0;
                pg_set_error(ps, "no row matched (a later epoch holds it, or another node took it)");
                return -ESTALE;         /* as pg_command_fenced() */
        }
        if (pc->kind == PG_CALL_ROW) {
                if (strtoull(PQcmdTuples(pc->res), NULL, 10) > 0)
                        return 0;
                pg_set_error(ps, "no such row");
                return -ENOENT;
        }
        if (pc->kind == PG_CALL_UNFINISHED) {
                if (strtoull(PQcmdTuples(pc->res), NULL, 10) > 0)
                        return 0;
                pg_set_error(ps, "the execution is not queued or running any more");
                return -EALREADY;
        }
        if (pc->kind == PG_CALL_CALLBACKS) {
                StoreCallback **cbs = NULL;

                r = pg_collect_callbacks(ps, pc->res, true, &cbs, ret_n);
                if (r >= 0)
                        *ret = cbs;
                return r;
        }
        if (pc->kind == PG_CALL_U64) {
                uint64_t *v = calloc(1, sizeof(uint64_t));

                if (!v)
                        return -ENOMEM;
                if (PQntuples(pc->res) > 0 && (r = pg_u64(pc->res, 0, 0, v, NULL)) < 0) {
                        free(v);
                        return r;
                }
                *ret = v;
                *ret_n = 1;
                return 0;
        }
        if (pc->kind == PG_CALL_ARTIFACTS) {
                ExecArtifacts *a = NULL;

                r = pg_collect_artifacts(pc->res, &a);
                if (r >= 0) {
                        *ret = a;
                        *ret_n = 1;
                }
                return r;
        }
        if (pc->kind == PG_CALL_CALLBACK) {
                StoreCallback **cbs = NULL;
                size_t n_cbs = 0;

                r = pg_collect_callbacks(ps, pc->res, false, &cbs, &n_cbs);
                if (r < 0)
                        return r;
                if (n_cbs == 0) {
                        free(cbs);
                        return -ENOENT;
                }
                *ret = TAKE_PTR(cbs[0]);
                *ret_n = 1;
                store_callbacks_free(cbs, n_cbs);
                return 0;
        }
        if (pc->kind == PG_CALL_SESSIONS) {
                StoreSession *sessions = NULL;

                r = pg_collect_sessions(pc->res, &sessions, ret_n);
                if (r >= 0)
                        *ret = sessions;
                return r;
        }
        if (pc->kind == PG_CALL_USAGE) {
                StoreUsage *u = calloc(1, sizeof(StoreUsage));

                if (!u)
                        return -ENOMEM;
                r = pg_usage_of(pc->res, u);
                if (r < 0) {
                        free(u);
                        return r;
                }
                *ret = u;
                *ret_n = 1;
                return 0;
        }
        if (pc->kind == PG_CALL_NODES) {
                StoreNode *nodes = NULL;

                r = pg_collect_nodes(pc->res, &nodes, ret_n);
                if (r >= 0)
                        *ret = nodes;
                return r;
        }
        r = pg_collect_records(ps, pc->res, &l, &n);
        if (r < 0)
                return r;
        if (pc->kind == PG_CALL_RECORDS) {
                *ret = l;
                *ret_n = n;
                return 0;
        }
        if (n == 0)
                return -ENOENT;
        *ret = TAKE_PTR(l[0]);
        store_records_free(l, n);
        return 0;
}

/* A transaction's step has its result: the next step, the rollback, or the end. */
static void pg_txn_step_end(PgStore *ps, StoreCall *c) {
        PgCall *pc = PG_CALL(c), *st = pg_call_statement(pc);
        void *got = NULL;
        size_t n = 0;
        int r;

        /* Steps answer with no data (check() reads a step's rows). */
        assert(st->kind == PG_CALL_COMMAND || st->kind == PG_CALL_PUT);
        r = pg_call_result(ps, st, &got, &n);
        if (pc->failed) {
                /* Rolled back (or the connection went, which ends it as well). */
                st->res = (PQclear(st->res), NULL);
                store_call_finish(c, pc->failed, NULL);
                return;
        }
        if (r >= 0 && pc->step == 0)
                pc->connection = ps->connections;
        if (r >= 0 && pc->check)
                r = pc->check(ps, pc, st->res);
        st->res = (PQclear(st->res), NULL);
        if (r < 0) {
                if (pc->step == 0 || PQstatus(ps->conn) != CONNECTION_OK || ps->connections != pc->connection) {
                        /* Nothing begun, or the server has ended it with the connection. */
                        store_call_finish(c, r, NULL);
                        return;
                }
                pc->failed = r;
                pc->sent = false;       /* the ROLLBACK goes next */
                return;
        }
        if (++pc->step == pc->n_steps) {
                uint64_t *v = pc->has_value ? malloc(sizeof(uint64_t)) : NULL;

                if (v) {
                        *v = pc->value;
                        store_call_finish_list(c, 0, v, 1);
                } else
                        /* Committed: out of memory for the number alone is not a failure. */
                        store_call_finish(c, 0, NULL);
                return;
        }
        pc->sent = false;
}

/* The call under way ends with what was read of its result. */
static void pg_async_end(PgStore *ps) {
        StoreCall *c = TAKE_PTR(ps->inflight);
        PgCall *pc = PG_CALL(c);
        void *got = NULL;
        size_t n = 0;
        int r;

        ps->flushing = false;
        if (pc->kind == PG_CALL_TXN) {
                pg_txn_step_end(ps, c);
                return;
        }
        r = pg_call_result(ps, pc, &got, &n);
        pc->res = (PQclear(pc->res), NULL);
        if (pc->kind == PG_CALL_NODES || pc->kind == PG_CALL_RECORDS || pc->kind == PG_CALL_CALLBACKS ||
            pc->kind == PG_CALL_USAGE || pc->kind == PG_CALL_SESSIONS || pc->kind == PG_CALL_ARTIFACTS ||
            pc->kind == PG_CALL_CALLBACK || pc->kind == PG_CALL_U64)
                store_call_finish_list(c, r, r >= 0 ? got : NULL, n);
        else
                store_call_finish(c, r, got);
}

/* Send the oldest queued call if none is under way. One that cannot be sent fails at once (-EIO: the
 * connection is lost or being made again; pg_connected() starts the reconnection, as a synchronous
 * call does), and the next is tried: no call waits for a connection that may not come back. */
static void pg_async_kick(PgStore *ps) {
        StoreCall *c;

        while (!ps->inflight && (c = pg_async_next(ps))) {
                PgCall *pc = PG_CALL(c), *st = pg_call_statement(pc);
                int r, f;

                pc->sent = true;
                r = pg_connected(ps);
                if (r >= 0 && pc->kind == PG_CALL_TXN && pc->step > 0 && ps->connections != pc->connection) {
                        /* Begun on a connection since lost: the server rolled it back. */
                        pg_set_error(ps, "the connection was lost during the transaction");
                        r = -EIO;
                }
                if (r < 0) {
                        store_call_finish(c, pc->failed ?: r, NULL);
                        continue;
                }
                /* Set on an idle connection (nothing to flush, so it cannot fail for that); kept:
                 * PQexecParams() and PQgetResult() wait as ever in this mode, as libpq documents. */
                if (!PQisnonblocking(ps->conn) && PQsetnonblocking(ps->conn, 1) < 0) {
                        pg_set_error(ps, PQerrorMessage(ps->conn));
                        store_call_finish(c, -EIO, NULL);
                        continue;
                }
                if (!PQsendQueryParams(ps->conn, st->sql, st->n, NULL, (const char *const *) st->values, st->lengths,
                                       st->formats, 0)) {
                        pg_set_error(ps, PQerrorMessage(ps->conn));
                        store_call_finish(c, -EIO, NULL);
                        continue;
                }
                ps->inflight = c;
                f = PQflush(ps->conn);
                if (f < 0) {
                        /* The socket failed: the call ends with the connection's error. */
                        pg_async_end(ps);
                        continue;
                }
                ps->flushing = f > 0;
        }
        pg_io_update(ps);
}

/* Read what the server has sent for the call under way, without waiting; it ends when all came. */
static void pg_async_read(PgStore *ps) {
        while (ps->inflight && !PQisBusy(ps->conn)) {
                PGresult *res = PQgetResult(ps->conn);

                if (!res) {
                        pg_async_end(ps);
                        return;
                }
                pg_call_keep(pg_call_statement(PG_CALL(ps->inflight)), res);
        }
}

static int on_conn_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        PgStore *ps = userdata;

        if (ps->inflight && ps->flushing) {
                int f = PQflush(ps->conn);

                ps->flushing = f > 0;   /* < 0: PQconsumeInput() below finds the connection broken */
        }
        if (!PQconsumeInput(ps->conn) || PQstatus(ps->conn) != CONNECTION_OK) {
                /* The server went away. The call under way ends with what came of its result (the
                 * server's goodbye: "terminating connection ...", -EIO), without waiting for more;
                 * those queued fail as they are tried; the next call reconnects, as ever. */
                ps->io = sd_event_source_disable_unref(ps->io);
                if (ps->inflight) {
                        pg_async_read(ps);
                        if (ps->inflight)
                                pg_async_end(ps);
                }
                pg_async_kick(ps);
                pg_notify_pending(ps);
                return 0;
        }
        pg_async_read(ps);
        pg_async_kick(ps);
        /* Notifications read with the answer, or alone: from the loop, the queue in order again. */
        pg_notify_pending(ps);
        return 0;
}

/* Before a synchronous call (and at store_close()): every asynchronous call queued or under way
 * ends first, waiting for the server (PQgetResult() blocks, non-blocking mode or not). Their
 * callbacks come later, from the loop; notifications read meanwhile are held (pg_notify_pending()). */
static void pg_async_flush(PgStore *ps) {
        bool any = false;

        while (ps->inflight || pg_async_next(ps)) {
                PGresult *res;

                any = true;
                if (!ps->inflight) {
                        pg_async_kick(ps);
                        continue;
                }
                while ((res = PQgetResult(ps->conn)))
                        pg_call_keep(pg_call_statement(PG_CALL(ps->inflight)), res);
                pg_async_end(ps);
        }
        if (any) {
                pg_io_update(ps);
                pg_notify_pending(ps);
        }
}

static void pg_async_flush_store(Store *s) {
        pg_async_flush(PG_STORE(s));
}

/* Close *txn (COMMIT, and ROLLBACK for a failure) and queue it as c's call, taking it. */
static int pg_call_queue_txn(PgStore *ps, StoreCall *c, PgCall **txn) {
        PgCall *t = *txn;
        int r;

        r = pg_txn_add(t, PG_CALL_COMMAND, "COMMIT", &(PgParams) {});
        if (r >= 0)
                r = pg_call_new(PG_CALL_COMMAND, "ROLLBACK", &(PgParams) {}, &t->steps[t->n_steps]);
        if (r < 0)
                return r;
        c->data = TAKE_PTR(*txn);
        c->data_free = pg_call_free;
        pg_async_kick(ps);
        return 0;
}

static int pg_call_queue(PgStore *ps, StoreCall *c, PgCallKind kind, const char *sql, const PgParams *p) {
        PgCall *pc = NULL;
        int r;

        r = pg_call_new(kind, sql, p, &pc);
        if (r < 0)
                return r;
        c->data = pc;
        c->data_free = pg_call_free;
        pg_async_kick(ps);
        return 0;
}

/* ---- records ---- */

/* Every transition rewrites the whole row, except that a NULL code, owner, workspace or request
 * keeps the stored one, and a cancel once asked stays asked (another node may have set the flag,
 * store_cancel_elsewhere(), since the holder last read the row). */
#define SQL_PUT                                                                                        \
        "INSERT INTO executions (" STORE_COLUMNS ") VALUES " \
        "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, " \
        "$21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41, " \
        "$42, $43, $44) " \
        "ON CONFLICT (execution_id) DO UPDATE SET " \
        "session_id = excluded.session_id, owner = COALESCE(excluded.owner, executions.owner), " \
        "status = excluded.status, error_type = excluded.error_type, created_at = excluded.created_at, " \
        "started_at = excluded.started_at, finished_at = excluded.finished_at, " \
        "duration_ms = excluded.duration_ms, exit_code = excluded.exit_code, signal = excluded.signal, " \
        "cpu_usec = excluded.cpu_usec, peak_memory_bytes = excluded.peak_memory_bytes, " \
        "language = excluded.language, timeout_ms = excluded.timeout_ms, memory_mb = excluded.memory_mb, " \
        "cpu_cores = excluded.cpu_cores, disk_mb = excluded.disk_mb, tasks = excluded.tasks, " \
        "unit = excluded.unit, reason = excluded.reason, fingerprint = excluded.fingerprint, " \
        "stdout_bytes = excluded.stdout_bytes, stdout_lines = excluded.stdout_lines, " \
        "stdout_truncated = excluded.stdout_truncated, stderr_bytes = excluded.stderr_bytes, " \
        "stderr_lines = excluded.stderr_lines, stderr_truncated = excluded.stderr_truncated, " \
        "stdout = excluded.stdout, stderr = excluded.stderr, code = COALESCE(excluded.code, executions.code), " \
        "workspace = COALESCE(excluded.workspace, executions.workspace), " \
        "request = COALESCE(excluded.request, executions.request), " \
        "error_message = excluded.error_message, " \
        "cancel_requested = GREATEST(excluded.cancel_requested, executions.cancel_requested), " \
        "client_id = excluded.client_id, start = excluded.start, network = excluded.network, " \
        "environment = excluded.environment, summary = excluded.summary, isolation = excluded.isolation, " \
        "node = excluded.node, node_epoch = excluded.node_epoch, attempt = excluded.attempt " \
        FENCE_WHERE

static const char sql_put[] = SQL_PUT;
/* A final record: the same, and every node is told (STORE_CHANNEL_FINAL: remote waiters, the node
 * that accepted it). A row for the fence's count. */
static const char sql_put_final[] =
        "WITH u AS (" SQL_PUT " RETURNING execution_id) SELECT pg_notify('" STORE_CHANNEL_FINAL "', execution_id) FROM u";

static const char sql_get[] = "SELECT " STORE_COLUMNS " FROM executions WHERE execution_id = $1";

static const char sql_unfinished[] =
        "SELECT " STORE_COLUMNS " FROM executions WHERE status IN ($1, $2) ORDER BY created_at, execution_id";

/* A record with its callback delivery, in one statement: the delivery is inserted only when the
 * record was (u has its row: the fence let it through), and both commit together or not at all; an
 * execution is final once, so a second final write (a retried put) keeps the delivery as it is. The
 * delivery's parameters follow the record's ($45..$54, params_callback()); typed here, as a SELECT
 * list does not take them from the columns. One row when written, none when fenced. */
#define SQL_PUT_CALLBACK(tail)                                                                         \
        "WITH u AS (" SQL_PUT " RETURNING execution_id), " \
        "c AS (INSERT INTO callbacks (" CALLBACK_COLUMNS ", body) " \
        "SELECT $45::text, $46::text, $47::bigint, $48::bigint, $49::bigint, $50::bigint, $51::text, " \
        "$52::text, $53::text, $54::text FROM u ON CONFLICT (execution_id) DO NOTHING) " tail
static const char sql_put_callback[] = SQL_PUT_CALLBACK("SELECT execution_id FROM u");
static const char sql_put_final_callback[] =
        SQL_PUT_CALLBACK("SELECT pg_notify('" STORE_CHANNEL_FINAL "', execution_id) FROM u");

/* The statement that writes rec, with its parameters in *p (network: the log's JSON, kept by the
 * caller while p is used). */
static const char *pg_put_statement(const StoreRecord *rec, const char *network, PgParams *p);

/* The parameters of sql_put, in the order of STORE_COLUMNS. network: the log's JSON, kept by the
 * caller while p is used. */
static void params_record(PgParams *p, const StoreRecord *r, const char *network) {
        const Execution *e = r->exec;

        pp_text(p, e->id);
        pp_text(p, e->session_id);
        pp_text(p, r->owner);
        pp_text(p, exec_status_to_string(e->status));
        pp_text(p, error_type_to_string(e->error_type));      /* NONE → NULL */
        pp_u64(p, e->created_usec);
        pp_u64_or_null(p, e->started_usec, e->started_usec > 0);
        pp_u64_or_null(p, e->finished_usec, e->finished_usec > 0);
        pp_u64(p, e->duration_ms);
        if (e->exit_code == -1)
                pp_text(p, NULL);
        else
                pp_int(p, e->exit_code);
        if (e->signal == 0)
                pp_text(p, NULL);
        else
                pp_int(p, e->signal);
        pp_u64_or_null(p, e->cpu_usec, e->have_cpu);
        pp_u64_or_null(p, e->peak_memory_bytes, e->have_peak);
        pp_text(p, e->language);
        pp_u64(p, e->limits.timeout_ms);
        pp_u64(p, e->limits.memory_mb);
        pp_number(p, "%.17g", e->limits.cpu_cores);     /* reads back exactly */
        pp_u64(p, e->limits.disk_mb);
        pp_u64(p, e->limits.tasks);
        pp_text(p, e->unit);
        pp_text(p, e->reason);
        pp_bytes(p, r->fingerprint, sizeof(r->fingerprint));
        pp_u64(p, e->out.bytes);
        pp_u64(p, e->out.lines);
        pp_int(p, e->out.truncated);
        pp_u64(p, e->err.bytes);
        pp_u64(p, e->err.lines);
        pp_int(p, e->err.truncated);
        pp_text(p, e->out.text);
        pp_text(p, e->err.text);
        pp_text(p, r->code);
        pp_text(p, r->workspace);
        pp_text(p, r->request);
        pp_text(p, e->error_message);
        pp_int(p, e->cancel_requested);
        pp_text(p, e->client_id);
        pp_text(p, exec_start_path_to_string(e->start));
        pp_text(p, network);
        pp_text(p, e->environment);
        pp_text(p, e->summary);
        pp_text(p, e->isolation);
        pp_text(p, e->node);
        pp_u64_or_null(p, e->node_epoch, e->node_epoch > 0);
        pp_u64(p, MAX(e->attempt, 1U));
        assert(p->n == _STORE_COL_MAX);
}

static void params_callback(PgParams *p, const StoreCallback *c) {
        pp_text(p, c->execution_id);
        pp_text(p, callback_state_to_string(c->state));
        pp_u64_or_null(p, c->next_attempt_usec, c->state == CALLBACK_PENDING);
        pp_u64(p, c->attempts);
        pp_u64(p, c->created_usec);
        pp_u64_or_null(p, c->delivered_usec, c->delivered_usec > 0);
        pp_text(p, c->url);
        pp_text(p, c->delivery_id);
        pp_text(p, c->last_error);
        pp_text(p, c->body);
}

/* A statement that changes one row if it is still ours (an epoch, a fence): -ESTALE when it changed
 * none. */
static int pg_command_fenced(PgStore *ps, const char *sql, const PgParams *p) {
        uint64_t n = 0;
        int r;

        r = pg_command(ps, sql, p, &n);
        if (r < 0)
                return r;
        return n == 0 ? -ESTALE : 0;
}

static const char *pg_put_statement(const StoreRecord *rec, const char *network, PgParams *p) {
        bool final = exec_status_is_final(rec->exec->status);

        params_record(p, rec, network);
        if (!rec->callback)
                return final ? sql_put_final : sql_put;
        params_callback(p, rec->callback);
        return final ? sql_put_final_callback : sql_put_callback;
}

/* -ESTALE when the fence kept the row (another node took the execution over). */
static int pg_put(Store *s, const StoreRecord *rec) {
        PgStore *ps = PG_STORE(s);
        _cleanup_free_ char *network = NULL;
        const char *sql;
        PgParams p = {};
        int r;

        r = store_network_to_json(rec->exec, &network);
        if (r < 0)
                return r;
        sql = pg_put_statement(rec, network, &p);
        r = pg_command_fenced(ps, sql, &p);
        if (r == -ESTALE)
                pg_set_error(ps, "the execution was taken over by another node");
        return r;
}

static int pg_get(Store *s, const char *id, StoreRecord **ret) {
        PgStore *ps = PG_STORE(s);
        StoreRecord **l = NULL;
        PgParams p = {};
        size_t n = 0;
        int r;

        pp_text(&p, id);
        r = pg_query_records(ps, sql_get, &p, &l, &n);
        if (r < 0)
                return r;
        if (n == 0)
                return -ENOENT;
        *ret = TAKE_PTR(l[0]);
        store_records_free(l, n);       /* n is 1: execution_id is the primary key */
        return 0;
}

static int pg_put_async(Store *s, const StoreRecord *rec, StoreCall *c) {
        _cleanup_free_ char *network = NULL;
        PgParams p = {};
        int r;

        r = store_network_to_json(rec->exec, &network);
        if (r < 0)
                return r;
        /* Copied: network may go. */
        return pg_call_queue(PG_STORE(s), c, PG_CALL_PUT, pg_put_statement(rec, network, &p), &p);
}

static int pg_get_async(Store *s, const char *id, StoreCall *c) {
        PgParams p = {};

        pp_text(&p, id);
        return pg_call_queue(PG_STORE(s), c, PG_CALL_GET, sql_get, &p);
}

/* The list's statement for a, with its parameters in *p. */
static int pg_list_sql(const StoreListArgs *a, PgParams *pp, char **ret_sql) {
        _cleanup_free_ char *sql = NULL;
        const char *key = a->order == STORE_ORDER_DURATION_MS ? "duration_ms" : "created_at";
        size_t size = 0;
        FILE *f;

        /* Only fixed fragments, the fixed key name and parameter numbers go into the text. */
        f = open_memstream(&sql, &size);
        if (!f)
                return -ENOMEM;
        fputs("SELECT " STORE_COLUMNS " FROM executions WHERE true", f);
        if (a->session_id) {
                pp_text(pp, a->session_id);
                fprintf(f, " AND session_id = $%d", pp->n);
        }
        if (a->owner) {
                pp_text(pp, a->owner);
                fprintf(f, " AND owner = $%d", pp->n);
        }
        if (a->status >= 0) {
                pp_text(pp, exec_status_to_string(a->status));
                fprintf(f, " AND status = $%d", pp->n);
        }
        if (a->error_type == ERROR_NONE)
                fputs(" AND error_type IS NULL", f);
        else if (a->error_type > ERROR_NONE) {
                pp_text(pp, error_type_to_string(a->error_type));
                fprintf(f, " AND error_type = $%d", pp->n);
        }
        if (a->after) {
                pp_u64(pp, a->after->key);
                pp_text(pp, a->after->id);
                fprintf(f, " AND (%s, execution_id) < ($%d::bigint, $%d)", key, pp->n - 1, pp->n);
        }
        pp_number(pp, "%u", a->limit);
        fprintf(f, " ORDER BY %s DESC, execution_id DESC LIMIT $%d", key, pp->n);
        if (fclose(f) != 0 || !sql)
                return -ENOMEM;
        *ret_sql = TAKE_PTR(sql);
        return 0;
}

static int pg_list(Store *s, const StoreListArgs *a, StoreRecord ***ret, size_t *ret_n) {
        _cleanup_free_ char *sql = NULL;
        PgParams p = {};
        int r;

        r = pg_list_sql(a, &p, &sql);
        if (r < 0)
                return r;
        return pg_query_records(PG_STORE(s), sql, &p, ret, ret_n);
}

static int pg_list_async(Store *s, const StoreListArgs *a, StoreCall *c) {
        _cleanup_free_ char *sql = NULL;
        PgParams p = {};
        int r;

        r = pg_list_sql(a, &p, &sql);
        if (r < 0)
                return r;
        r = pg_call_queue(PG_STORE(s), c, PG_CALL_RECORDS, sql, &p);
        if (r >= 0)
                PG_CALL(c)->sql_owned = TAKE_PTR(sql);  /* sent later: the call keeps the text */
        return r;
}

static int pg_list_unfinished(Store *s, StoreRecord ***ret, size_t *ret_n) {
        PgParams p = {};

        pp_text(&p, exec_status_to_string(EXEC_QUEUED));
        pp_text(&p, exec_status_to_string(EXEC_RUNNING));
        return pg_query_records(PG_STORE(s), sql_unfinished, &p, ret, ret_n);
}

/* One statement: the flag, and the notification to the node that holds it (sent at commit). */
static const char sql_cancel_elsewhere[] =
        "WITH u AS (UPDATE executions SET cancel_requested = 1 WHERE execution_id = $1 AND status IN ($2, $3) "
        "RETURNING node) SELECT node, pg_notify('" STORE_CHANNEL_CANCEL "', $1) FROM u";

static void params_cancel_elsewhere(PgParams *p, const char *id) {
        pp_text(p, id);
        pp_text(p, exec_status_to_string(EXEC_QUEUED));
        pp_text(p, exec_status_to_string(EXEC_RUNNING));
}

static int pg_cancel_elsewhere_async(Store *s, const char *id, StoreCall *c) {
        PgParams p = {};

        params_cancel_elsewhere(&p, id);
        return pg_call_queue(PG_STORE(s), c, PG_CALL_UNFINISHED, sql_cancel_elsewhere, &p);
}

static int pg_cancel_elsewhere(Store *s, const char *id) {
        PgStore *ps = PG_STORE(s);
        PGresult *res = NULL;
        PgParams p = {};
        int r;

        params_cancel_elsewhere(&p, id);
        r = pg_query(ps, sql_cancel_elsewhere, &p, &res);
        if (r < 0)
                return r;
        r = PQntuples(res) > 0 ? 0 : -EALREADY;
        PQclear(res);
        return r;
}

/* store_take_over(): one statement; rows another node is taking at the same moment are locked
 * until it commits, after which they no longer match (their node changed): each is taken once. */
static const char sql_take_own[] =
        "UPDATE executions SET node = $1, node_epoch = $2 WHERE status IN ($3, $4) AND (node IS NULL OR node = $1) "
        "RETURNING " STORE_COLUMNS;
static const char sql_take_from[] =
        "UPDATE executions SET node = $1, node_epoch = $2 WHERE status IN ($3, $4) AND node = $5 "
        "AND EXISTS (SELECT 1 FROM nodes WHERE node_name = $5 AND lease_expires_usec < $6) RETURNING " STORE_COLUMNS;

static const char *params_take_over(PgParams *p, const char *from, const char *node, uint64_t epoch,
                                    uint64_t now_usec) {
        pp_text(p, node);
        pp_u64_or_null(p, epoch, epoch > 0);
        pp_text(p, exec_status_to_string(EXEC_QUEUED));
        pp_text(p, exec_status_to_string(EXEC_RUNNING));
        if (!from)
                return sql_take_own;
        pp_text(p, from);
        pp_u64(p, now_usec);
        return sql_take_from;
}

static int pg_take_over(Store *s, const char *from, const char *node, uint64_t epoch, uint64_t now_usec,
                        StoreRecord ***ret, size_t *ret_n) {
        PgParams p = {};
        const char *sql = params_take_over(&p, from, node, epoch, now_usec);

        return pg_query_records(PG_STORE(s), sql, &p, ret, ret_n);
}

static int pg_take_over_async(Store *s, const char *from, const char *node, uint64_t epoch, uint64_t now_usec,
                              StoreCall *c) {
        PgParams p = {};
        const char *sql = params_take_over(&p, from, node, epoch, now_usec);

        return pg_call_queue(PG_STORE(s), c, PG_CALL_RECORDS, sql, &p);
}

/* ---- the shared queue (store.h) ---- */

/* An unclaimed queued execution (node_epoch NULL) is claimed by setting both; each row once. */
static const char sql_claim[] =
        "UPDATE executions SET node = $2, node_epoch = $3 WHERE execution_id = $1 AND status = $4 "
        "AND node_epoch IS NULL";

/* Each owner's oldest unclaimed queued execution accepted elsewhere (not a session's run), the one
 * whose owner runs the fewest on all nodes first, then the oldest; locked rows skipped. The UPDATE
 * checks again what the lock may have changed; the node that accepted it is told. */
static const char sql_claim_next[] =
        "WITH heads AS (SELECT DISTINCT ON (owner) execution_id, owner, created_at FROM executions "
        "WHERE status = $3 AND node_epoch IS NULL AND session_id IS NULL AND node IS DISTINCT FROM $1 "
        "AND COALESCE(owner, '') <> ALL ($5::text[]) ORDER BY owner, created_at, execution_id), "
        "pick AS (SELECT e.execution_id FROM executions e JOIN heads h ON e.execution_id = h.execution_id "
        "WHERE e.status = $3 AND e.node_epoch IS NULL ORDER BY (SELECT count(*) FROM executions r "
        "WHERE r.status = $4 AND r.owner IS NOT DISTINCT FROM h.owner), h.created_at, h.execution_id "
        "LIMIT 1 FOR UPDATE OF e SKIP LOCKED), "
        "u AS (UPDATE executions x SET node = $1, node_epoch = $2 FROM pick "
        "WHERE x.execution_id = pick.execution_id AND x.status = $3 AND x.node_epoch IS NULL RETURNING x.*) "
        "SELECT " STORE_COLUMNS " FROM u CROSS JOIN LATERAL "
        "(SELECT pg_notify('" STORE_CHANNEL_CLAIMED "', u.execution_id)) n";

static void params_claim(PgParams *p, const char *id, const char *node, uint64_t epoch) {
        pp_text(p, id);
        pp_text(p, node);
        pp_u64(p, epoch);
        pp_text(p, exec_status_to_string(EXEC_QUEUED));
}

static int pg_claim(Store *s, const char *id, const char *node, uint64_t epoch) {
        PgParams p = {};

        params_claim(&p, id, node, epoch);
        return pg_command_fenced(PG_STORE(s), sql_claim, &p);
}

static int pg_claim_async(Store *s, const char *id, const char *node, uint64_t epoch, StoreCall *c) {
        PgParams p = {};

        params_claim(&p, id, node, epoch);
        return pg_call_queue(PG_STORE(s), c, PG_CALL_FENCED, sql_claim, &p);
}

/* A text[] literal: every element double-quoted, '"' and '\' escaped. */
static char *pg_text_array(char *const *l, size_t n) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        fputc('{', f);
        for (size_t i = 0; i < n; i++) {
                fputs(i > 0 ? ",\"" : "\"", f);
                for (const char *c = l[i]; *c; c++) {
                        if (*c == '"' || *c == '\\')
                                fputc('\\', f);
                        fputc(*c, f);
                }
                fputc('"', f);
        }
        fputc('}', f);
        if (fclose(f) != 0)
                return NULL;
        return TAKE_PTR(buf);
}

static void params_claim_next(PgParams *p, const char *node, uint64_t epoch, const char *owners) {
        pp_text(p, node);
        pp_u64(p, epoch);
        pp_text(p, exec_status_to_string(EXEC_QUEUED));
        pp_text(p, exec_status_to_string(EXEC_RUNNING));
        pp_text(p, owners);
}

static int pg_claim_next_async(Store *s, const char *node, uint64_t epoch, char *const *skip, size_t n_skip,
                               StoreCall *c) {
        _cleanup_free_ char *owners = pg_text_array(skip, n_skip);
        PgParams p = {};

        if (!owners)
                return -ENOMEM;
        params_claim_next(&p, node, epoch, owners);     /* copied: owners goes */
        return pg_call_queue(PG_STORE(s), c, PG_CALL_GET, sql_claim_next, &p);
}

static int pg_claim_next(Store *s, const char *node, uint64_t epoch, char *const *skip, size_t n_skip,
                         StoreRecord **ret) {
        _cleanup_free_ char *owners = pg_text_array(skip, n_skip);
        StoreRecord **l = NULL;
        PgParams p = {};
        size_t n = 0;
        int r;

        if (!owners)
                return -ENOMEM;
        params_claim_next(&p, node, epoch, owners);
        r = pg_query_records(PG_STORE(s), sql_claim_next, &p, &l, &n);
        if (r < 0)
                return r;
        if (n == 0)
                return -ENOENT;
        *ret = TAKE_PTR(l[0]);
        store_records_free(l, n);       /* LIMIT 1 */
        return 0;
}

/* At most STORE_CLAIM_ROUTED_MAX a call, oldest first: the rest at the next. */
static const char sql_claim_routed[] =
        "UPDATE executions SET node_epoch = $2 WHERE execution_id IN (SELECT execution_id FROM executions "
        "WHERE node = $1 AND node_epoch IS NULL AND status = $3 AND session_id IS NOT NULL "
        "ORDER BY created_at, execution_id LIMIT " STRINGIFY(STORE_CLAIM_ROUTED_MAX) " FOR UPDATE SKIP LOCKED) "
        "RETURNING " STORE_COLUMNS;

static void params_claim_routed(PgParams *p, const char *node, uint64_t epoch) {
        pp_text(p, node);
        pp_u64(p, epoch);
        pp_text(p, exec_status_to_string(EXEC_QUEUED));
}

static int pg_claim_routed(Store *s, const char *node, uint64_t epoch, StoreRecord ***ret, size_t *ret_n) {
        PgParams p = {};

        params_claim_routed(&p, node, epoch);
        return pg_query_records(PG_STORE(s), sql_claim_routed, &p, ret, ret_n);
}

static int pg_claim_routed_async(Store *s, const char *node, uint64_t epoch, StoreCall *c) {
        PgParams p = {};

        params_claim_routed(&p, node, epoch);
        return pg_call_queue(PG_STORE(s), c, PG_CALL_RECORDS, sql_claim_routed, &p);
}

static const char sql_queue_notify[] = "SELECT pg_notify('" STORE_CHANNEL_QUEUE "', $1)";

static int pg_queue_notify(Store *s, const char *node) {
        PgParams p = {};

        pp_text(&p, node);
        return pg_query(PG_STORE(s), sql_queue_notify, &p, NULL);
}

static int pg_queue_notify_async(Store *s, const char *node, StoreCall *c) {
        PgParams p = {};

        pp_text(&p, node);
        return pg_call_queue(PG_STORE(s), c, PG_CALL_COMMAND, sql_queue_notify, &p);
}

#define PURGE_WHERE                                                                                    \
        "finished_at IS NOT NULL AND finished_at < $1 "                                                \
        "AND execution_id NOT IN (SELECT execution_id FROM callbacks WHERE state = 'pending')"
#define PURGED "SELECT execution_id FROM executions WHERE " PURGE_WHERE

/* One transaction: the digests the purged executions' artifacts use, their artifact rows, the
 * records, then which of those digests no row refers to any more. Under the artifacts lock, so
 * that no collection adds a reference to one of them meanwhile. */
static int pg_purge(Store *s, uint64_t finished_before_usec, uint64_t *ret_n, char ***ret_unreferenced) {
        PgStore *ps = PG_STORE(s);
        _cleanup_strv_free_ char **unused = NULL;
        size_t n_unused = 0;
        PGresult *digests = NULL;
        PgParams p = {};
        uint64_t n = 0;
        int r;

        /* finished_before_usec may be UINT64_MAX ("everything finished"): the column holds ≤ INT64_MAX. */
        pp_u64(&p, MIN(finished_before_usec, (uint64_t) INT64_MAX));

        r = pg_begin(ps);
        if (r < 0)
                return r;
        r = pg_lock(ps, ARTIFACTS_LOCK_KEY);
        if (r >= 0)
                r = pg_query(ps, "SELECT DISTINCT sha256 FROM artifacts WHERE execution_id IN (" PURGED ")", &p,
                             &digests);
        if (r >= 0)
                r = pg_command(ps, "DELETE FROM artifacts WHERE execution_id IN (" PURGED ")", &p, NULL);
        if (r >= 0)
                r = pg_command(ps, "DELETE FROM artifact_collections WHERE execution_id IN (" PURGED ")", &p, NULL);
        if (r >= 0)
                r = pg_command(ps, "DELETE FROM executions WHERE " PURGE_WHERE, &p, &n);
        for (int i = 0; r >= 0 && digests && i < PQntuples(digests); i++) {
                const char *d = pg_text(digests, i, 0);
                PGresult *used = NULL;
                PgParams q = {};

                if (!d)
                        continue;
                pp_text(&q, d);
                r = pg_query(ps, "SELECT 1 FROM artifacts WHERE sha256 = $1 LIMIT 1", &q, &used);
                if (r >= 0 && PQntuples(used) == 0)
                        r = strv_extend(&unused, &n_unused, d);
                PQclear(used);
        }
        PQclear(digests);
        /* Several nodes: the blobs go while the lock is held, so that no collection on any node checks
         * a blob (pg_put_artifacts()) between the decision and the unlink. Should the commit fail
         * after this, the rows stay and their blobs are gone: records past their retention whose
         * downloads answer 404 until the next sweep purges them. The other order (unlink after the
         * commit, outside the lock) can lose the blob of a record another node has just written. */
        if (r >= 0 && s->blob_remove) {
                /* The hook logs its own failures: a blob left behind is space, not a wrong answer. */
                for (char **d = unused; d && *d; d++)
                        (void) s->blob_remove(s->blob_userdata, *d);
                unused = strv_free(unused);
        }
        r = pg_end(ps, r);
        if (r < 0)
                return r;
        *ret_n = n;
        if (ret_unreferenced)
                *ret_unreferenced = TAKE_PTR(unused);
        return 0;
}

/* pg_purge() in one statement, for the transaction of pg_purge_async(): which executions go is decided
 * once (gone); the digests of their artifacts that no other row refers to come back, with the count,
 * one row each (a row with a NULL digest when there is none). Every part sees the snapshot from
 * before the statement, so "another row" is a row of an execution not purged. */
static const char sql_purge_all[] =
        "WITH gone AS (" PURGED "), "
        "d AS (SELECT DISTINCT sha256 FROM artifacts WHERE execution_id IN (SELECT execution_id FROM gone)), "
        "da AS (DELETE FROM artifacts WHERE execution_id IN (SELECT execution_id FROM gone)), "
        "dc AS (DELETE FROM artifact_collections WHERE execution_id IN (SELECT execution_id FROM gone)), "
        "de AS (DELETE FROM executions WHERE execution_id IN (SELECT execution_id FROM gone) RETURNING 1), "
        "unused AS (SELECT sha256 FROM d WHERE NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.sha256 = d.sha256 "
        "AND a.execution_id NOT IN (SELECT execution_id FROM gone))) "
        "SELECT (SELECT count(*) FROM de), u.sha256 FROM (SELECT 1) one LEFT JOIN unused u ON true";

/* After the purge's statement (step 2), still under the lock: its count, and the blobs no row refers
 * to removed now (as pg_purge(), and why). */
static int pg_check_purge(PgStore *ps, PgCall *txn, const PGresult *res) {
        Store *s = &ps->base;

        if (txn->step != 2)
                return 0;
        if (PQntuples(res) < 1 || PQnfields(res) != 2) {
                pg_set_error(ps, "the purge answered no count");
                return -EIO;
        }
        txn->value = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
        txn->has_value = true;
        for (int i = 0; s->blob_remove && i < PQntuples(res); i++)
                if (!PQgetisnull(res, i, 1))
                        (void) s->blob_remove(s->blob_userdata, PQgetvalue(res, i, 1));
        return 0;
}

static int pg_purge_async(Store *s, uint64_t finished_before_usec, StoreCall *c) {
        _cleanup_(pg_call_freep) PgCall *txn = NULL;
        PgParams p = {};
        int r;

        r = pg_txn_new(2, &txn);
        if (r < 0)
                return r;
        txn->check = pg_check_purge;
        r = pg_txn_add_lock(txn);
        if (r < 0)
                return r;
        pp_u64(&p, MIN(finished_before_usec, (uint64_t) INT64_MAX));
        r = pg_txn_add(txn, PG_CALL_COMMAND, sql_purge_all, &p);
        if (r < 0)
                return r;
        return pg_call_queue_txn(PG_STORE(s), c, &txn);
}

/* One non-negative number, the first column of the only row; no row, or NULL: *ret_have false. */
static int pg_query_u64(PgStore *ps, const char *sql, const PgParams *p, uint64_t *ret, bool *ret_have) {
        PGresult *res = NULL;
        uint64_t v = 0;
        bool have = false;
        int r;

        r = pg_query(ps, sql, p, &res);
        if (r < 0)
                return r;
        if (PQntuples(res) > 0)
                r = pg_u64(res, 0, 0, &v, &have);
        PQclear(res);
        if (r < 0)
                return r;
        *ret = v;
        if (ret_have)
                *ret_have = have;
        return 0;
}

static int pg_count(Store *s, uint64_t *ret) {
        return pg_query_u64(PG_STORE(s), "SELECT count(*) FROM executions", NULL, ret, NULL);
}

/* ---- artifacts ---- */

static const char sql_artifacts_delete[] = "DELETE FROM artifacts WHERE execution_id = $1";
/* Charged to the execution's owner ('' for none or unknown): the usage triggers (migration 9) add it
 * up. */
static const char sql_artifact_insert[] =
        "INSERT INTO artifacts (execution_id, path, size, mime_type, sha256, charged_bytes, owner) "
        "VALUES ($1, $2, $3, $4, $5, $6, COALESCE((SELECT owner FROM executions WHERE execution_id = $1), ''))";
static const char sql_collection_put[] =
        "INSERT INTO artifact_collections (execution_id, skipped_total, skipped) "
        "VALUES ($1, $2, $3) ON CONFLICT (execution_id) DO UPDATE SET "
        "skipped_total = excluded.skipped_total, skipped = excluded.skipped";

static void params_artifact(PgParams *p, const char *id, const ExecArtifact *x) {
        pp_text(p, id);
        pp_text(p, x->path);
        pp_u64(p, x->size);
        pp_text(p, x->mime_type);
        pp_text(p, x->sha256);
        pp_u64(p, x->charged_bytes);
}

static void params_collection(PgParams *p, const char *id, const ExecArtifacts *a, const char *skipped) {
        pp_text(p, id);
        pp_u64(p, a->n_skipped_total);
        pp_text(p, skipped);
}

static int pg_put_artifacts(Store *s, const char *id, const ExecArtifacts *a) {
        PgStore *ps = PG_STORE(s);
        _cleanup_free_ char *skipped = NULL;
        PgParams p = {};
        int r;

        r = store_skipped_to_json(a, &skipped);
        if (r < 0)
                return r;

        r = pg_begin(ps);
        if (r < 0)
                return r;
        r = pg_lock(ps, ARTIFACTS_LOCK_KEY);
        /* Under the lock a purge on any node holds while it removes blobs: a blob seen here stays
         * until a later purge finds no row referring to it, and this transaction's rows will. */
        for (size_t i = 0; r >= 0 && s->blob_exists && i < a->n_items; i++) {
                int k = s->blob_exists(s->blob_userdata, a->items[i].sha256);

                if (k == -ENOENT) {
                        store_set_error(s, "an artifact blob was purged meanwhile");
                        r = -ESTALE;
                } else if (k < 0)
                        r = k;
        }
        pp_text(&p, id);
        if (r >= 0)
                r = pg_command(ps, sql_artifacts_delete, &p, NULL);
        for (size_t i = 0; r >= 0 && i < a->n_items; i++) {
                PgParams q = {};

                params_artifact(&q, id, &a->items[i]);
                r = pg_command(ps, sql_artifact_insert, &q, NULL);
        }
        if (r >= 0) {
                PgParams q = {};

                params_collection(&q, id, a, skipped);
                r = pg_command(ps, sql_collection_put, &q, NULL);
        }
        return pg_end(ps, r);
}

/* After the lock (step 1), the blobs: as pg_put_artifacts(). */
static int pg_check_blobs(PgStore *ps, PgCall *txn, const PGresult *res) {
        Store *s = &ps->base;

        if (txn->step != 1 || !s->blob_exists)
                return 0;
        for (char **h = txn->check_items; h && *h; h++) {
                int k = s->blob_exists(s->blob_userdata, *h);

                if (k == -ENOENT) {
                        store_set_error(s, "an artifact blob was purged meanwhile");
                        return -ESTALE;
                }
                if (k < 0)
                        return k;
        }
        return 0;
}

/* pg_put_artifacts() without waiting: the same statements, one transaction sent step by step. */
static int pg_put_artifacts_async(Store *s, const char *id, const ExecArtifacts *a, StoreCall *c) {
        _cleanup_(pg_call_freep) PgCall *txn = NULL;
        _cleanup_free_ char *skipped = NULL;
        PgParams p = {};
        int r;

        r = store_skipped_to_json(a, &skipped);
        if (r < 0)
                return r;
        r = pg_txn_new(a->n_items + 3, &txn);
        if (r < 0)
                return r;
        txn->check = pg_check_blobs;
        txn->check_items = calloc(a->n_items + 1, sizeof(char *));
        if (!txn->check_items)
                return -ENOMEM;
        for (size_t i = 0; i < a->n_items; i++) {
                txn->check_items[i] = strdup(a->items[i].sha256);
                if (!txn->check_items[i])
                        return -ENOMEM;
        }
        r = pg_txn_add_lock(txn);
        if (r < 0)
                return r;
        pp_text(&p, id);
        r = pg_txn_add(txn, PG_CALL_COMMAND, sql_artifacts_delete, &p);
        for (size_t i = 0; r >= 0 && i < a->n_items; i++) {
                p = (PgParams) {};
                params_artifact(&p, id, &a->items[i]);
                r = pg_txn_add(txn, PG_CALL_COMMAND, sql_artifact_insert, &p);
        }
        if (r < 0)
                return r;
        p = (PgParams) {};
        params_collection(&p, id, a, skipped);
        r = pg_txn_add(txn, PG_CALL_COMMAND, sql_collection_put, &p);
        if (r < 0)
                return r;
        return pg_call_queue_txn(PG_STORE(s), c, &txn);
}

/* The collection and its files in one statement: no row, none was recorded (-ENOENT); a collection
 * without files is one row whose file columns are NULL. */
static const char sql_get_artifacts[] =
        "SELECT c.skipped_total, c.skipped, a.path, a.size, a.mime_type, a.sha256, a.charged_bytes "
        "FROM artifact_collections c LEFT JOIN artifacts a ON a.execution_id = c.execution_id "
        "WHERE c.execution_id = $1 ORDER BY a.path";

static int pg_collect_artifacts(const PGresult *res, ExecArtifacts **ret) {
        _cleanup_(exec_artifacts_freep) ExecArtifacts *a = NULL;
        int r;

        if (PQntuples(res) == 0)
                return -ENOENT;
        a = exec_artifacts_new();
        if (!a)
                return -ENOMEM;
        r = pg_u64(res, 0, 0, &a->n_skipped_total, NULL);
        if (r >= 0)
                r = store_skipped_from_json(a, pg_text(res, 0, 1));
        for (int i = 0; r >= 0 && i < PQntuples(res); i++) {
                const char *path = pg_text(res, i, 2), *mime = pg_text(res, i, 4), *sha = pg_text(res, i, 5);
                uint64_t size = 0, charged = 0;
                size_t n = a->n_items;

                if (!path || !mime || !sha || pg_u64(res, i, 3, &size, NULL) < 0 ||
                    pg_u64(res, i, 6, &charged, NULL) < 0)
                        continue;       /* no file (NULL), or not written by us */
                r = exec_artifacts_add(a, path, size, mime, sha);
                if (r == -EINVAL)
                        r = 0;
                if (r >= 0 && a->n_items > n)
                        a->items[n].charged_bytes = charged;
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}

static int pg_get_artifacts(Store *s, const char *id, ExecArtifacts **ret) {
        PGresult *res = NULL;
        PgParams p = {};
        int r;

        pp_text(&p, id);
        r = pg_query(PG_STORE(s), sql_get_artifacts, &p, &res);
        if (r < 0)
                return r;
        r = pg_collect_artifacts(res, ret);
        PQclear(res);
        return r;
}

static int pg_get_artifacts_async(Store *s, const char *id, StoreCall *c) {
        PgParams p = {};

        pp_text(&p, id);
        return pg_call_queue(PG_STORE(s), c, PG_CALL_ARTIFACTS, sql_get_artifacts, &p);
}

/* The usage tables (migration 9): an indexed lookup, never a sum over rows. No row is 0. */
static const char sql_artifact_store_bytes[] = "SELECT greatest(bytes, 0) FROM artifact_store_usage WHERE id = 0";
static const char sql_artifact_caller_bytes[] = "SELECT greatest(bytes, 0) FROM artifact_usage WHERE owner = $1";

static int pg_artifact_store_bytes(Store *s, uint64_t *ret) {
        return pg_query_u64(PG_STORE(s), sql_artifact_store_bytes, NULL, ret, NULL);
}

static int pg_artifact_store_bytes_async(Store *s, StoreCall *c) {
        return pg_call_queue(PG_STORE(s), c, PG_CALL_U64, sql_artifact_store_bytes, &(PgParams) {});
}

static int pg_artifact_caller_bytes(Store *s, const char *owner, uint64_t *ret) {
        PgParams p = {};

        pp_text(&p, owner);
        return pg_query_u64(PG_STORE(s), sql_artifact_caller_bytes, &p, ret, NULL);
}

static int pg_artifact_caller_bytes_async(Store *s, const char *owner, StoreCall *c) {
        PgParams p = {};

        pp_text(&p, owner);
        return pg_call_queue(PG_STORE(s), c, PG_CALL_U64, sql_artifact_caller_bytes, &p);
}

/* ---- the callback outbox ---- */

static int pg_row_to_callback(const PGresult *res, int row, bool with_body, StoreCallback **ret) {
        _cleanup_(store_callback_freep) StoreCallback *c = calloc(1, sizeof(StoreCallback));
        bool have;
        int k;

        if (!c)
                return -ENOMEM;
        k = pg_strdup(res, row, CB_ID, &c->execution_id);
        if (k >= 0 && !c->execution_id)
                k = -EBADMSG;
        if (k >= 0) {
                c->state = callback_state_from_string(pg_text(res, row, CB_STATE));
                if (c->state < 0)
                        k = -EBADMSG;
        }
        k = k ?: pg_u64(res, row, CB_NEXT, &c->next_attempt_usec, &have);
        k = k ?: pg_u64(res, row, CB_ATTEMPTS, &c->attempts, NULL);
        k = k ?: pg_u64(res, row, CB_CREATED, &c->created_usec, NULL);
        k = k ?: pg_u64(res, row, CB_DELIVERED, &c->delivered_usec, &have);
        k = k ?: pg_strdup(res, row, CB_URL, &c->url);
        k = k ?: pg_strdup(res, row, CB_DELIVERY_ID, &c->delivery_id);
        k = k ?: pg_strdup(res, row, CB_LAST_ERROR, &c->last_error);
        if (k >= 0 && with_body)
                k = pg_strdup(res, row, CB_BODY, &c->body);
        if (k >= 0 && with_body)
                k = pg_strdup(res, row, CB_CLIENT_ID, &c->client_id);
        if (k >= 0 && (!c->url || !c->delivery_id || (with_body && !c->body)))
                k = -EBADMSG;
        if (k < 0)
                return k;
        *ret = TAKE_PTR(c);
        return 0;
}

/* The rows of res as deliveries: *ret NULL when there are none. */
static int pg_collect_callbacks(PgStore *ps, const PGresult *res, bool with_body, StoreCallback ***ret,
                                size_t *ret_n) {
        StoreCallback **l = NULL;
        int n, r;

        n = PQntuples(res);
        if (n > 0) {
                l = calloc((size_t) n, sizeof(StoreCallback *));
                if (!l)
                        return -ENOMEM;
        }
        for (int i = 0; i < n; i++) {
                r = pg_row_to_callback(res, i, with_body, &l[i]);
                if (r < 0) {
                        if (r == -EBADMSG)
                                store_set_error(&ps->base, "a stored callback delivery is damaged");
                        store_callbacks_free(l, (size_t) i);
                        return r;
                }
        }
        *ret = l;
        *ret_n = (size_t) n;
        return 0;
}

static int pg_query_callbacks(PgStore *ps, const char *sql, const PgParams *p, bool with_body, StoreCallback ***ret,
                              size_t *ret_n) {
        PGresult *res = NULL;
        int r;

        r = pg_query(ps, sql, p, &res);
        if (r < 0)
                return r;
        r = pg_collect_callbacks(ps, res, with_body, ret, ret_n);
        PQclear(res);
        return r;
}

static const char sql_callback_get[] = "SELECT " CALLBACK_COLUMNS " FROM callbacks WHERE execution_id = $1";

static int pg_callback_get_async(Store *s, const char *id, StoreCall *c) {
        PgParams p = {};

        pp_text(&p, id);
        return pg_call_queue(PG_STORE(s), c, PG_CALL_CALLBACK, sql_callback_get, &p);
}

static int pg_callback_get(Store *s, const char *id, bool with_body, StoreCallback **ret) {
        StoreCallback **l = NULL;
        PgParams p = {};
        size_t n = 0;
        int r;

        pp_text(&p, id);
        r = pg_query_callbacks(PG_STORE(s),
                               with_body ? "SELECT " CALLBACK_COLUMNS ", body, " CALLBACK_CLIENT_ID
                                           " FROM callbacks WHERE execution_id = $1"
                                         : sql_callback_get,
                               &p, with_body, &l, &n);
        if (r < 0)
                return r;
        if (n == 0)
                return -ENOENT;
        *ret = TAKE_PTR(l[0]);
        store_callbacks_free(l, n);
        return 0;
}

static const char sql_callback_due[] =
        "SELECT " CALLBACK_COLUMNS ", body, " CALLBACK_CLIENT_ID " FROM callbacks "
        "WHERE state = 'pending' AND next_attempt_at <= $1 "
        "ORDER BY next_attempt_at, execution_id LIMIT $2";

static void params_callback_due(PgParams *p, uint64_t now_usec, unsigned limit) {
        pp_u64(p, MIN(now_usec, (uint64_t) INT64_MAX));
        pp_number(p, "%u", limit);
}

static int pg_callback_due(Store *s, uint64_t now_usec, unsigned limit, StoreCallback ***ret, size_t *ret_n) {
        PgParams p = {};

        params_callback_due(&p, now_usec, limit);
        return pg_query_callbacks(PG_STORE(s), sql_callback_due, &p, true, ret, ret_n);
}

static int pg_callback_due_async(Store *s, uint64_t now_usec, unsigned limit, StoreCall *c) {
        PgParams p = {};

        params_callback_due(&p, now_usec, limit);
        return pg_call_queue(PG_STORE(s), c, PG_CALL_CALLBACKS, sql_callback_due, &p);
}

static int pg_callback_next_due(Store *s, uint64_t *ret_usec) {
        uint64_t v = 0;
        bool have = false;
        int r;

        r = pg_query_u64(PG_STORE(s), "SELECT CASE WHEN m < 0 THEN 0 ELSE m END FROM "
                         "(SELECT min(next_attempt_at) AS m FROM callbacks WHERE state = 'pending') AS due",
                         NULL, &v, &have);
        if (r < 0)
                return r;
        if (!have)
                return -ENOENT;
        *ret_usec = v;
        return 0;
}

static const char sql_callback_count[] = "SELECT count(*) FROM callbacks WHERE state = $1";

static int pg_callback_count(Store *s, CallbackState state, uint64_t *ret) {
        PgParams p = {};

        pp_text(&p, callback_state_to_string(state));
        return pg_query_u64(PG_STORE(s), sql_callback_count, &p, ret, NULL);
}

static int pg_callback_count_async(Store *s, CallbackState state, StoreCall *c) {
        PgParams p = {};

        pp_text(&p, callback_state_to_string(state));
        return pg_call_queue(PG_STORE(s), c, PG_CALL_U64, sql_callback_count, &p);
}

static const char sql_callback_update[] =
        "UPDATE callbacks SET state = $2, next_attempt_at = $3, attempts = $4, last_error = $5, "
        "delivered_at = $6 WHERE execution_id = $1 "
        "AND ($7::bigint IS NULL OR (attempts = $7::bigint AND state = 'pending'))";

static void params_callback_update(PgParams *p, const StoreCallback *c) {
        pp_text(p, c->execution_id);
        pp_text(p, callback_state_to_string(c->state));
        pp_u64_or_null(p, c->next_attempt_usec, c->state == CALLBACK_PENDING);
        pp_u64(p, c->attempts);
        pp_text(p, c->last_error);
        pp_u64_or_null(p, c->delivered_usec, c->delivered_usec > 0);
        pp_u64_or_null(p, c->claim_attempts, c->claim);
}

static int pg_callback_update(Store *s, const StoreCallback *c) {
        PgParams p = {};
        uint64_t n = 0;
        int r;

        params_callback_update(&p, c);
        r = pg_command(PG_STORE(s), sql_callback_update, &p, &n);
        if (r < 0)
                return r;
        return n == 0 ? (c->claim ? -ESTALE : -ENOENT) : 0;
}

/* A claim that finds the row changed is -ESTALE (PG_CALL_FENCED), any other update -ENOENT. */
static int pg_callback_update_async(Store *s, const StoreCallback *x, StoreCall *c) {
        PgParams p = {};

        params_callback_update(&p, x);
        return pg_call_queue(PG_STORE(s), c, x->claim ? PG_CALL_FENCED : PG_CALL_ROW, sql_callback_update, &p);
}

/* ---- sessions and usage ---- */

static const char sql_session_put[] =
        "INSERT INTO sessions (session_id, owner, mount_unit, path, disk_mb, created_at, "
        "last_used_at, executions, client_id, node) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) "
        "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, "
        "mount_unit = excluded.mount_unit, path = excluded.path, disk_mb = excluded.disk_mb, "
        "created_at = excluded.created_at, last_used_at = excluded.last_used_at, "
        "executions = excluded.executions, client_id = excluded.client_id, node = excluded.node";
static const char sql_session_delete[] = "DELETE FROM sessions WHERE session_id = $1";

static void params_session(PgParams *p, const StoreSession *x) {
        pp_text(p, x->session_id);
        pp_text(p, x->owner);
        pp_text(p, x->mount_unit);
        pp_text(p, x->path);
        pp_u64(p, x->disk_mb);
        pp_u64(p, x->created_usec);
        pp_u64(p, x->last_used_usec);
        pp_u64(p, x->executions);
        pp_text(p, x->client_id);
        pp_text(p, x->node);
}

static int pg_session_put(Store *s, const StoreSession *x) {
        PgParams p = {};

        params_session(&p, x);
        return pg_command(PG_STORE(s), sql_session_put, &p, NULL);
}

static int pg_session_put_async(Store *s, const StoreSession *x, StoreCall *c) {
        PgParams p = {};

        params_session(&p, x);
        return pg_call_queue(PG_STORE(s), c, PG_CALL_COMMAND, sql_session_put, &p);
}

/* The session's row, then the record (fenced as pg_put()), in one transaction. */
static int pg_put_session_async(Store *s, const StoreRecord *rec, const StoreSession *x, StoreCall *c) {
        _cleanup_(pg_call_freep) PgCall *txn = NULL;
        _cleanup_free_ char *network = NULL;
        const char *sql;
        PgParams p = {};
        int r;

        r = store_network_to_json(rec->exec, &network);
        if (r < 0)
                return r;
        r = pg_txn_new(2, &txn);
        if (r < 0)
                return r;
        params_session(&p, x);
        r = pg_txn_add(txn, PG_CALL_COMMAND, sql_session_put, &p);
        if (r < 0)
                return r;
        p = (PgParams) {};
        sql = pg_put_statement(rec, network, &p);
        r = pg_txn_add(txn, PG_CALL_PUT, sql, &p);
        if (r < 0)
                return r;
        return pg_call_queue_txn(PG_STORE(s), c, &txn);
}

static int pg_session_delete(Store *s, const char *session_id) {
        PgParams p = {};

        pp_text(&p, session_id);
        return pg_command(PG_STORE(s), sql_session_delete, &p, NULL);
}

static int pg_session_delete_async(Store *s, const char *session_id, StoreCall *c) {
        PgParams p = {};

        pp_text(&p, session_id);
        return pg_call_queue(PG_STORE(s), c, PG_CALL_COMMAND, sql_session_delete, &p);
}

static const char sql_session_list[] =
        "SELECT session_id, owner, mount_unit, path, disk_mb, created_at, last_used_at, executions, "
        "client_id, node FROM sessions WHERE $1::text IS NULL OR session_id = $1 "
        "ORDER BY created_at, session_id";

/* The rows of res as sessions: *ret NULL when there are none. */
static int pg_collect_sessions(const PGresult *res, StoreSession **ret, size_t *ret_n) {
        StoreSession *l = NULL;
        int n, r = 0;

        n = PQntuples(res);
        if (n > 0) {
                l = calloc((size_t) n, sizeof(StoreSession));
                if (!l)
                        return -ENOMEM;
        }
        for (int i = 0; r >= 0 && i < n; i++) {
                StoreSession *x = &l[i];

                r = pg_strdup(res, i, 0, &x->session_id);
                r = r ?: pg_strdup(res, i, 1, &x->owner);
                r = r ?: pg_strdup(res, i, 2, &x->mount_unit);
                r = r ?: pg_strdup(res, i, 3, &x->path);
                r = r ?: pg_u64(res, i, 4, &x->disk_mb, NULL);
                r = r ?: pg_u64(res, i, 5, &x->created_usec, NULL);
                r = r ?: pg_u64(res, i, 6, &x->last_used_usec, NULL);
                r = r ?: pg_u64(res, i, 7, &x->executions, NULL);
                r = r ?: pg_strdup(res, i, 8, &x->client_id);
                r = r ?: pg_strdup(res, i, 9, &x->node);
                if (r >= 0 && (!x->session_id || !x->mount_unit || !x->path))
                        r = -EBADMSG;
        }
        if (r < 0) {
                store_sessions_free(l, (size_t) n);
                return r;
        }
        *ret = l;
        *ret_n = (size_t) n;
        return 0;
}

static int pg_session_list(Store *s, const char *id, StoreSession **ret, size_t *ret_n) {
        PGresult *res = NULL;
        PgParams p = {};
        int r;

        pp_text(&p, id);
        r = pg_query(PG_STORE(s), sql_session_list, &p, &res);
        if (r < 0)
                return r;
        r = pg_collect_sessions(res, ret, ret_n);
        PQclear(res);
        return r;
}

/* One session by id (the list shape, at most one row). */
static int pg_session_get_async(Store *s, const char *id, StoreCall *c) {
        PgParams p = {};

        pp_text(&p, id);
        return pg_call_queue(PG_STORE(s), c, PG_CALL_SESSIONS, sql_session_list, &p);
}

/* Never negative unless someone edited the table by hand: then it counts as nothing. */
static const char sql_usage_get[] =
        "SELECT greatest(records, 0), greatest(bytes, 0), greatest(pending_callbacks, 0) "
        "FROM record_usage WHERE owner = $1";

static int pg_usage_of(const PGresult *res, StoreUsage *ret) {
        int r = 0;

        *ret = (StoreUsage) {};
        if (PQntuples(res) > 0) {
                r = pg_u64(res, 0, 0, &ret->records, NULL);
                r = r ?: pg_u64(res, 0, 1, &ret->bytes, NULL);
                r = r ?: pg_u64(res, 0, 2, &ret->pending_callbacks, NULL);
        }
        return r;
}

static int pg_usage_get(Store *s, const char *owner, StoreUsage *ret) {
        PGresult *res = NULL;
        PgParams p = {};
        int r;

        pp_text(&p, owner);
        r = pg_query(PG_STORE(s), sql_usage_get, &p, &res);
        if (r < 0)
                return r;
        r = pg_usage_of(res, ret);
        PQclear(res);
        return r;
}

static int pg_usage_get_async(Store *s, const char *owner, StoreCall *c) {
        PgParams p = {};

        pp_text(&p, owner);
        return pg_call_queue(PG_STORE(s), c, PG_CALL_USAGE, sql_usage_get, &p);
}

/* ---- the node registry ---- */

/* ON CONFLICT DO UPDATE is atomic against another session registering the same name: one of the two
 * waits for the other's row, and each gets an epoch of its own. */
static const char sql_node_register[] =
        "INSERT INTO nodes (node_name, epoch, started_usec, heartbeat_usec, lease_expires_usec, slots, "
        "running) VALUES ($1, 1, $2, $2, $3, $4, 0) "
        "ON CONFLICT (node_name) DO UPDATE SET epoch = nodes.epoch + 1, "
        "started_usec = excluded.started_usec, heartbeat_usec = excluded.heartbeat_usec, "
        "lease_expires_usec = excluded.lease_expires_usec, slots = excluded.slots, running = 0 "
        "RETURNING epoch";

static void params_register(PgParams *p, const char *name, uint64_t now_usec, uint64_t lease_expires_usec,
                            uint64_t slots) {
        pp_text(p, name);
        pp_u64(p, now_usec);
        pp_u64(p, lease_expires_usec);
        pp_u64(p, slots);
}

static int pg_node_register(Store *s, const char *name, uint64_t now_usec, uint64_t lease_expires_usec,
                            uint64_t slots, uint64_t *ret_epoch) {
        PGresult *res = NULL;
        PgParams p = {};
        uint64_t epoch = 0;
        int r;

        params_register(&p, name, now_usec, lease_expires_usec, slots);
        r = pg_query(PG_STORE(s), sql_node_register, &p, &res);
        if (r < 0)
                return r;
        r = PQntuples(res) == 1 ? pg_u64(res, 0, 0, &epoch, NULL) : -EBADMSG;
        PQclear(res);
        if (r < 0)
                return r;
        if (epoch == 0)
                return -EBADMSG;
        *ret_epoch = epoch;
        return 0;
}

/* The epoch as one number (PG_CALL_U64): 0 if no row came back, which store.c refuses. */
static int pg_node_register_async(Store *s, const char *name, uint64_t now_usec, uint64_t lease_expires_usec,
                                  uint64_t slots, StoreCall *c) {
        PgParams p = {};

        params_register(&p, name, now_usec, lease_expires_usec, slots);
        return pg_call_queue(PG_STORE(s), c, PG_CALL_U64, sql_node_register, &p);
}

static const char sql_node_heartbeat[] =
        "UPDATE nodes SET heartbeat_usec = $3, lease_expires_usec = $4, running = $5 WHERE node_name = $1 AND epoch = $2";

static void params_heartbeat(PgParams *p, const char *name, uint64_t epoch, uint64_t now_usec,
                             uint64_t lease_expires_usec, uint64_t running) {
        pp_text(p, name);
        pp_u64(p, epoch);
        pp_u64(p, now_usec);
        pp_u64(p, lease_expires_usec);
        pp_u64(p, running);
}

static int pg_node_heartbeat(Store *s, const char *name, uint64_t epoch, uint64_t now_usec,
                             uint64_t lease_expires_usec, uint64_t running) {
        PgParams p = {};

        params_heartbeat(&p, name, epoch, now_usec, lease_expires_usec, running);
        return pg_command_fenced(PG_STORE(s), sql_node_heartbeat, &p);
}

static int pg_node_heartbeat_async(Store *s, const char *name, uint64_t epoch, uint64_t now_usec,
                                   uint64_t lease_expires_usec, uint64_t running, StoreCall *c) {
        PgParams p = {};

        params_heartbeat(&p, name, epoch, now_usec, lease_expires_usec, running);
        return pg_call_queue(PG_STORE(s), c, PG_CALL_FENCED, sql_node_heartbeat, &p);
}

static int pg_node_leave(Store *s, const char *name, uint64_t epoch, uint64_t now_usec) {
        PgParams p = {};

        pp_text(&p, name);
        pp_u64(&p, epoch);
        pp_u64(&p, now_usec);
        return pg_command_fenced(PG_STORE(s),
                                 "UPDATE nodes SET lease_expires_usec = least(lease_expires_usec, $3::bigint), running = 0 "
                                 "WHERE node_name = $1 AND epoch = $2",
                                 &p);
}

static const char sql_node_list[] =
        "SELECT node_name, epoch, started_usec, heartbeat_usec, lease_expires_usec, slots, running "
        "FROM nodes ORDER BY node_name LIMIT $1";

static int pg_collect_nodes(const PGresult *res, StoreNode **ret, size_t *ret_n) {
        StoreNode *l = NULL;
        int n = PQntuples(res), r = 0;

        if (n > 0) {
                l = calloc((size_t) n, sizeof(StoreNode));
                if (!l)
                        return -ENOMEM;
        }
        for (int i = 0; r >= 0 && i < n; i++) {
                StoreNode *x = &l[i];

                r = pg_strdup(res, i, 0, &x->name);
                r = r ?: pg_u64(res, i, 1, &x->epoch, NULL);
                r = r ?: pg_u64(res, i, 2, &x->started_usec, NULL);
                r = r ?: pg_u64(res, i, 3, &x->heartbeat_usec, NULL);
                r = r ?: pg_u64(res, i, 4, &x->lease_expires_usec, NULL);
                r = r ?: pg_u64(res, i, 5, &x->slots, NULL);
                r = r ?: pg_u64(res, i, 6, &x->running, NULL);
                if (r >= 0 && !x->name)
                        r = -EBADMSG;
        }
        if (r < 0) {
                store_nodes_free(l, (size_t) n);
                return r;
        }
        *ret = l;
        *ret_n = (size_t) n;
        return 0;
}

static int pg_node_list(Store *s, StoreNode **ret, size_t *ret_n) {
        PGresult *res = NULL;
        PgParams p = {};
        int r;

        pp_u64(&p, STORE_NODES_MAX);
        r = pg_query(PG_STORE(s), sql_node_list, &p, &res);
        if (r < 0)
                return r;
        r = pg_collect_nodes(res, ret, ret_n);
        PQclear(res);
        return r;
}

static int pg_node_list_async(Store *s, StoreCall *c) {
        PgParams p = {};

        pp_u64(&p, STORE_NODES_MAX);
        return pg_call_queue(PG_STORE(s), c, PG_CALL_NODES, sql_node_list, &p);
}

static void pg_close(Store *s) {
        PgStore *ps = PG_STORE(s);

        sd_event_source_disable_unref(ps->reconnect_io);
        sd_event_source_disable_unref(ps->reconnect_timer);
        assert(!ps->inflight);          /* store_close() waited for it (pg_async_flush()) */
        sd_event_source_disable_unref(ps->io);
        sd_event_source_disable_unref(ps->notify_defer);
        pg_notify_held_free(ps);
        sd_event_unref(ps->event);
        PQfinish(ps->conn);
        free(ps->name);
        free(ps);
}

static const StoreOps pg_ops = {
        .name = "postgresql",
        .close = pg_close,
        .put = pg_put,
        .get = pg_get,
        .list = pg_list,
        .list_unfinished = pg_list_unfinished,
        .purge = pg_purge,
        .put_artifacts = pg_put_artifacts,
        .get_artifacts = pg_get_artifacts,
        .artifact_store_bytes = pg_artifact_store_bytes,
        .artifact_caller_bytes = pg_artifact_caller_bytes,
        .count = pg_count,
        .callback_get = pg_callback_get,
        .callback_due = pg_callback_due,
        .callback_next_due = pg_callback_next_due,
        .callback_update = pg_callback_update,
        .callback_count = pg_callback_count,
        .session_put = pg_session_put,
        .session_delete = pg_session_delete,
        .session_list = pg_session_list,
        .usage_get = pg_usage_get,
        .attach_event = pg_attach_event,
        .set_notify = pg_set_notify,
        .cancel_elsewhere = pg_cancel_elsewhere,
        .node_register = pg_node_register,
        .node_heartbeat = pg_node_heartbeat,
        .node_leave = pg_node_leave,
        .node_list = pg_node_list,
        .take_over = pg_take_over,
        .claim = pg_claim,
        .claim_next = pg_claim_next,
        .queue_notify = pg_queue_notify,
        .claim_routed = pg_claim_routed,
        .put_async = pg_put_async,
        .get_async = pg_get_async,
        .claim_async = pg_claim_async,
        .claim_next_async = pg_claim_next_async,
        .node_list_async = pg_node_list_async,
        .claim_routed_async = pg_claim_routed_async,
        .callback_due_async = pg_callback_due_async,
        .callback_update_async = pg_callback_update_async,
        .usage_get_async = pg_usage_get_async,
        .session_get_async = pg_session_get_async,
        .list_async = pg_list_async,
        .get_artifacts_async = pg_get_artifacts_async,
        .callback_get_async = pg_callback_get_async,
        .artifact_store_bytes_async = pg_artifact_store_bytes_async,
        .artifact_caller_bytes_async = pg_artifact_caller_bytes_async,
        .callback_count_async = pg_callback_count_async,
        .session_put_async = pg_session_put_async,
        .put_artifacts_async = pg_put_artifacts_async,
        .purge_async = pg_purge_async,
        .take_over_async = pg_take_over_async,
        .put_session_async = pg_put_session_async,
        .session_delete_async = pg_session_delete_async,
        .queue_notify_async = pg_queue_notify_async,
        .node_register_async = pg_node_register_async,
        .node_heartbeat_async = pg_node_heartbeat_async,
        .cancel_elsewhere_async = pg_cancel_elsewhere_async,
        .async_flush = pg_async_flush_store,
        .notify_flush = pg_notify_flush_store,
};

/* ---- opening ---- */

/* Fail opening with "PostgreSQL database 'x' on host: what" in *ret_error. */
_printf_(4, 5) static int open_error(PgStore *ps, char **ret_error, int r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        r = store_open_failv(ret_error, ps->name, r, fmt, ap);
        va_end(ap);
        return r;
}

/* A failed statement while opening: the store's message, worded after what it means. */
static int open_pg_error(PgStore *ps, char **ret_error, int r, const char *doing) {
        const char *msg = store_error_message(&ps->base);

        pg_rollback_if_open(ps);
        switch (r) {
        case -EBADMSG:
                return open_error(ps, ret_error, r, "is not a sandboxd database or is damaged: %s", msg);
        case -ENOSPC:
                return open_error(ps, ret_error, r, "%s: no space left: %s", doing, msg);
        case -EACCES:
        case -EROFS:
                return open_error(ps, ret_error, r, "%s: %s (%s: sandboxd's role must be able to create tables and "
                                  "write them)", doing, msg, strerror(-r));
        case -EBUSY:
                return open_error(ps, ret_error, r, "%s: the database is locked by another session: %s", doing, msg);
        default:
                return open_error(ps, ret_error, r, "%s: %s (%s)", doing, msg, strerror(-r));
        }
}

/* What is in the database already, looked at under the migration lock: nothing (a new database),
 * ours (its version), or someone else's. Only the current schema (the first of search_path that
 * exists) is looked at: a database may hold sandboxd's tables in a schema of their own. */
static int read_version(PgStore *ps, char **ret_error, int64_t *ret_version) {
        PGresult *res = NULL;
        uint64_t ours = 0, objects = 0, app_id = 0, version = 0;
        bool have_app = false;
        int r;

        r = pg_query(ps,
                     "SELECT count(*) FILTER (WHERE c.relname = 'sandboxd_schema'), count(*) "
                     "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                     "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
                     NULL, &res);
        if (r < 0)
                return open_pg_error(ps, ret_error, r, "cannot read the database");
        r = pg_u64(res, 0, 0, &ours, NULL);
        r = r ?: pg_u64(res, 0, 1, &objects, NULL);
        PQclear(res);
        if (r < 0)
                return open_error(ps, ret_error, -EIO, "cannot read the database's catalog");

        if (ours == 0) {
                if (objects > 0)
                        return open_error(ps, ret_error, -EBADMSG,
                                          "is not a sandboxd database (a PostgreSQL database with other tables, "
                                          "%" PRIu64 " of them, and no sandboxd_schema)", objects);
                *ret_version = -1;
                return 0;
        }

        r = pg_query(ps, "SELECT application_id, version FROM sandboxd_schema WHERE id = 0", NULL, &res);
        if (r < 0)
                return open_pg_error(ps, ret_error, r, "cannot read the schema version");
        if (PQntuples(res) == 1) {
                r = pg_u64(res, 0, 0, &app_id, &have_app);
                r = r ?: pg_u64(res, 0, 1, &version, NULL);
        } else
                r = -EBADMSG;
        PQclear(res);
        if (r < 0 || !have_app)
                return open_error(ps, ret_error, -EBADMSG, "is not a sandboxd database (sandboxd_schema is damaged)");
        if (app_id != SANDBOXD_APPLICATION_ID)
                return open_error(ps, ret_error, -EBADMSG,
                                  "is not a sandboxd database (sandboxd_schema application_id 0x%08" PRIx64 ")", app_id);
        if (version > INT32_MAX)
                return open_error(ps, ret_error, -EBADMSG, "is not a sandboxd database (schema version %" PRIu64 ")",
                                  version);
        *ret_version = (int64_t) version;
        return 0;
}

/* In one transaction, under an advisory lock so that two nodes opening a new database at once do not
 * both run migration 1: the version, then every migration this binary knows beyond it. A refusal
 * (someone else's database, a newer schema) rolls back, so nothing was changed. */
static int migrate(PgStore *ps, char **ret_error) {
        int64_t version = -1;
        PgParams p = {};
        int r;

        r = pg_begin(ps);
        if (r < 0)
                return open_pg_error(ps, ret_error, r, "cannot start the schema migration");
        r = pg_query(ps, "SET LOCAL lock_timeout = '" MIGRATION_LOCK_TIMEOUT "'", NULL, NULL);
        if (r >= 0)
                r = pg_lock(ps, SANDBOXD_APPLICATION_ID);
        if (r < 0)
                return open_pg_error(ps, ret_error, r, "cannot take the schema migration lock");

        r = read_version(ps, ret_error, &version);
        if (r < 0) {
                pg_rollback_if_open(ps);
                return r;
        }
        if (version > STORE_SCHEMA_VERSION) {
                pg_rollback_if_open(ps);
                return open_error(ps, ret_error, -EPROTONOSUPPORT,
                                  "database schema version %" PRIi64 " is newer than this sandboxd supports (%d)",
                                  version, STORE_SCHEMA_VERSION);
        }
        if (version < 0) {
                pp_number(&p, "%d", SANDBOXD_APPLICATION_ID);
                r = pg_query(ps, "CREATE TABLE sandboxd_schema (id INTEGER PRIMARY KEY CHECK (id = 0), "
                             "application_id BIGINT NOT NULL, version INTEGER NOT NULL)", NULL, NULL);
                if (r >= 0)
                        r = pg_query(ps, "INSERT INTO sandboxd_schema (id, application_id, version) VALUES (0, $1, 0)",
                                     &p, NULL);
                if (r < 0)
                        return open_pg_error(ps, ret_error, r, "cannot create the schema");
                version = 0;
        }

        for (int64_t v = version; v < STORE_SCHEMA_VERSION; v++) {
                /* Several statements and no parameters: PQexec(), the text is ours. */
                PGresult *res = PQexec(ps->conn, pg_migrations[v]);

                if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
                        r = pg_fail(ps, res);
                        PQclear(res);
                        pg_rollback_if_open(ps);
                        return open_error(ps, ret_error, r, "schema migration %" PRIi64 " failed: %s", v + 1,
                                          store_error_message(&ps->base));
                }
                PQclear(res);
        }
        if (version < STORE_SCHEMA_VERSION) {
                PgParams q = {};

                pp_number(&q, "%d", STORE_SCHEMA_VERSION);
                r = pg_query(ps, "UPDATE sandboxd_schema SET version = $1 WHERE id = 0", &q, NULL);
                if (r < 0)
                        return open_pg_error(ps, ret_error, r, "schema migration failed");
        }
        r = pg_end(ps, 0);
        if (r < 0)
                return open_pg_error(ps, ret_error, r, "schema migration failed");
        return 0;
}

int store_open_pg(const char *conninfo, Store **ret, char **ret_error) {
        _cleanup_(store_closep) Store *s = NULL;
        /* Defaults first: what conninfo says overrides them (expand_dbname); but the encoding is
         * ours, after it: every text is UTF-8 and octet_length() counts its bytes. */
        const char *const keywords[] = { "connect_timeout", "application_name", "dbname", "client_encoding", NULL };
        const char *const values[] = { CONNECT_TIMEOUT_SEC, "sandboxd", conninfo, "UTF8", NULL };
        PQconninfoOption *parsed;
        char *parse_error = NULL;
        PgStore *ps;
        int r;

        if (ret_error)
                *ret_error = NULL;
        if (isempty(conninfo) || !ret)
                return -EINVAL;

        ps = calloc(1, sizeof(PgStore));
        if (!ps)
                return -ENOMEM;
        ps->base.ops = &pg_ops;
        s = &ps->base;

        /* A malformed string is a configuration mistake: say so without connecting (the message
         * quotes no part of it, so no password either). */
        parsed = PQconninfoParse(conninfo, &parse_error);
        if (!parsed) {
                ps->name = strdup("PostgreSQL");
                r = open_error(ps, ret_error, parse_error ? -EINVAL : -ENOMEM, "invalid connection string: %s",
                               strna(parse_error));
                PQfreemem(parse_error);
                return r;
        }
        for (PQconninfoOption *o = parsed; o->keyword; o++)
                if (streq(o->keyword, "password") && !isempty(o->val)) {
                        PQconninfoFree(parsed);
                        ps->name = strdup("PostgreSQL");
                        return open_error(ps, ret_error, -EINVAL,
                                          "the connection string holds a password: put it in a password file "
                                          "(passfile=, mode 0600) or a service file instead");
                }
        PQconninfoFree(parsed);

        ps->conn = PQconnectdbParams(keywords, values, 1);
        if (!ps->conn)
                return -ENOMEM;
        (void) PQsetNoticeProcessor(ps->conn, pg_notice, ps);
        if (asprintf(&ps->name, "PostgreSQL database '%s' on %s", strna(PQdb(ps->conn)),
                     isempty(PQhost(ps->conn)) ? "the default socket" : PQhost(ps->conn)) < 0) {
                ps->name = NULL;
                return -ENOMEM;
        }
        if (PQstatus(ps->conn) != CONNECTION_OK)
                /* A password wanted and not given, or given and refused: -EACCES, as for a file the
                 * daemon may not open. */
                return open_error(ps, ret_error,
                                  PQconnectionNeedsPassword(ps->conn) || PQconnectionUsedPassword(ps->conn) ? -EACCES
                                                                                                           : -EIO,
                                  "cannot connect: %s", PQerrorMessage(ps->conn));
        if (PQserverVersion(ps->conn) < PG_MIN_SERVER_VERSION)
                return open_error(ps, ret_error, -EPROTONOSUPPORT, "PostgreSQL %d is too old: sandboxd needs 11 or later",
                                  PQserverVersion(ps->conn));
        /* octet_length() counts bytes in the database's encoding, and every text we store is UTF-8. */
        if (!streq_ptr(PQparameterStatus(ps->conn, "server_encoding"), "UTF8"))
                return open_error(ps, ret_error, -EINVAL,
                                  "the database's encoding is %s: sandboxd needs UTF8 (CREATE DATABASE ... ENCODING 'UTF8')",
                                  strna(PQparameterStatus(ps->conn, "server_encoding")));

        r = pg_session_setup(ps);
        if (r < 0)
                return open_pg_error(ps, ret_error, r, "cannot configure the session");

        r = migrate(ps, ret_error);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(s);
        return 0;
}
