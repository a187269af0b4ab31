/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <json-c/json.h>
#include <sqlite3.h>
#include <stdarg.h>

#include "store-sqlite-internal.h"
#include "strv.h"
#include "model/request.h"

/* The embedded store: one SQLite file in WAL mode. Everything sqlite3_* lives in store-sqlite*.c: the
 * schema (store-sqlite-schema.c), the outbox, artifacts and sessions in files of their own, the
 * records, opening and migrating here.
 *
 * Why these settings: WAL lets readers (a list) run while a write commits and turns each commit
 * into one append; synchronous=NORMAL then fsyncs only at checkpoints, so a power cut may lose the
 * last few transitions but never corrupts the file, and a transition costs no fsync on the event
 * loop. busy_timeout covers a second process (sqlite3 on the command line, a backup) holding the
 * lock for a moment. */

#define BUSY_TIMEOUT_MS 1000

/* "SBXD": PRAGMA application_id, so that `file` and we ourselves can tell our database from
 * someone else's SQLite file. */
#define SANDBOXD_APPLICATION_ID 0x53425844


/* Every transition rewrites the whole row, except that a NULL code or owner keeps the stored one
 * and a cancel once asked stays asked; and only its node's writes at the epoch it was taken at (FENCE_WHERE, store-internal.h). */
static const char sql_put[] =
        "INSERT INTO executions (" STORE_COLUMNS ") VALUES "
        "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
        "?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36, ?37, ?38, ?39, ?40, ?41, "
        "?42, ?43, ?44) "
        "ON CONFLICT (execution_id) DO UPDATE SET "
        "session_id = excluded.session_id, owner = COALESCE(excluded.owner, owner), "
        "status = excluded.status, error_type = excluded.error_type, created_at = excluded.created_at, "
        "started_at = excluded.started_at, finished_at = excluded.finished_at, "
        "duration_ms = excluded.duration_ms, exit_code = excluded.exit_code, signal = excluded.signal, "
        "cpu_usec = excluded.cpu_usec, peak_memory_bytes = excluded.peak_memory_bytes, "
        "language = excluded.language, timeout_ms = excluded.timeout_ms, memory_mb = excluded.memory_mb, "
        "cpu_cores = excluded.cpu_cores, disk_mb = excluded.disk_mb, tasks = excluded.tasks, "
        "unit = excluded.unit, reason = excluded.reason, fingerprint = excluded.fingerprint, "
        "stdout_bytes = excluded.stdout_bytes, stdout_lines = excluded.stdout_lines, "
        "stdout_truncated = excluded.stdout_truncated, stderr_bytes = excluded.stderr_bytes, "
        "stderr_lines = excluded.stderr_lines, stderr_truncated = excluded.stderr_truncated, "
        "stdout = excluded.stdout, stderr = excluded.stderr, code = COALESCE(excluded.code, code), "
        "workspace = COALESCE(excluded.workspace, workspace), request = COALESCE(excluded.request, request), "
        "error_message = excluded.error_message, cancel_requested = MAX(excluded.cancel_requested, executions.cancel_requested), "
        "client_id = excluded.client_id, start = excluded.start, network = excluded.network, "
        "environment = excluded.environment, summary = excluded.summary, isolation = excluded.isolation, "
        "node = excluded.node, node_epoch = excluded.node_epoch, attempt = excluded.attempt "
        FENCE_WHERE;

static const char sql_get[] = "SELECT " STORE_COLUMNS " FROM executions WHERE execution_id = ?1";

static const char sql_count[] = "SELECT count(*) FROM executions";

static const char sql_unfinished[] =
        "SELECT " STORE_COLUMNS " FROM executions WHERE status IN (?1, ?2) ORDER BY created_at, execution_id";

#define PURGE_WHERE                                                                                    \
        "finished_at IS NOT NULL AND finished_at < ?1 "                                                \
        "AND execution_id NOT IN (SELECT execution_id FROM callbacks WHERE state = 'pending')"
#define PURGED "SELECT execution_id FROM executions WHERE " PURGE_WHERE
static const char sql_purge[] = "DELETE FROM executions WHERE " PURGE_WHERE;
static const char sql_purge_digests[] = "SELECT DISTINCT sha256 FROM artifacts WHERE execution_id IN (" PURGED ")";
static const char sql_purge_artifacts[] = "DELETE FROM artifacts WHERE execution_id IN (" PURGED ")";
static const char sql_purge_collections[] = "DELETE FROM artifact_collections WHERE execution_id IN (" PURGED ")";
static const char sql_digest_used[] = "SELECT 1 FROM artifacts WHERE sha256 = ?1 LIMIT 1";

static const StoreOps sqlite_ops;

/* An execution is final once: a second final write (a retried put) keeps the delivery as it is. */
static const char sql_callback_enqueue[] =
        "INSERT INTO callbacks (" CALLBACK_COLUMNS ", body) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
        "ON CONFLICT (execution_id) DO NOTHING";

SqliteStore *SQLITE_STORE(Store *s) {
        return (SqliteStore *) s;
}

/* ---- errors ---- */

/* SQLite result code → negative errno. For the codes that come from a failed system call the
 * errno SQLite saw is the better answer (ENOENT for a missing directory, EACCES, EROFS). */
static int sqlite_errno(sqlite3 *db, int rc) {
        int sys = db ? sqlite3_system_errno(db) : 0;

        switch (rc & 0xff) {
        case SQLITE_OK:
        case SQLITE_ROW:
        case SQLITE_DONE:
                return 0;
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_READONLY:
                return -EROFS;
        case SQLITE_CANTOPEN:
                return sys > 0 ? -sys : -EACCES;
        case SQLITE_PERM:
        case SQLITE_AUTH:
                return -EACCES;
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
                return -EBADMSG;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_TOOBIG:
                return -E2BIG;
        case SQLITE_CONSTRAINT:
        case SQLITE_MISMATCH:
        case SQLITE_RANGE:
                return -EINVAL;
        case SQLITE_IOERR:
                /* A write that failed for lack of space may surface as an I/O error (an fsync, the
                 * shared-memory file): keep it ENOSPC. */
                return sys > 0 ? -sys : -EIO;
        default:
                return -EIO;
        }
}

/* Record the failure for store_error_message() and turn it into an errno. */
int sq_fail(SqliteStore *ss, int rc) {
        store_set_error(&ss->base, sqlite3_errmsg(ss->db));
        return sqlite_errno(ss->db, rc);
}

/* A failed step inside an explicit transaction may leave it open: roll it back so the connection
 * is usable and nothing half-done is committed later. */
void sq_rollback_if_open(SqliteStore *ss) {
        if (ss->db && !sqlite3_get_autocommit(ss->db))
                (void) sqlite3_exec(ss->db, "ROLLBACK", NULL, NULL, NULL);
}

/* ---- binding and reading rows ---- */

int sq_bind_text(sqlite3_stmt *st, int i, const char *s) {
        return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

int sq_bind_u64(sqlite3_stmt *st, int i, uint64_t v) {
        return sqlite3_bind_int64(st, i, (sqlite3_int64) v);   /* ≤ INT64_MAX: store_record_is_valid() */
}

/* 0 means "not yet" for the timestamps. */
int sq_bind_u64_or_null(sqlite3_stmt *st, int i, uint64_t v, bool have) {
        return have ? sq_bind_u64(st, i, v) : sqlite3_bind_null(st, i);
}

static int bind_record(sqlite3_stmt *st, const StoreRecord *r) {
        const Execution *e = r->exec;
        int rc = SQLITE_OK;

#define B(x)                                    \
        do {                                    \
                rc = (x);                       \
                if (rc != SQLITE_OK)            \
                        return rc;              \
        } while (0)
        B(sq_bind_text(st, 1 + STORE_COL_ID, e->id));
        B(sq_bind_text(st, 1 + STORE_COL_SESSION, e->session_id));
        B(sq_bind_text(st, 1 + STORE_COL_OWNER, r->owner));
        B(sq_bind_text(st, 1 + STORE_COL_STATUS, exec_status_to_string(e->status)));
        B(sq_bind_text(st, 1 + STORE_COL_ERROR_TYPE, error_type_to_string(e->error_type)));   /* NONE → NULL */
        B(sq_bind_u64(st, 1 + STORE_COL_CREATED, e->created_usec));
        B(sq_bind_u64_or_null(st, 1 + STORE_COL_STARTED, e->started_usec, e->started_usec > 0));
        B(sq_bind_u64_or_null(st, 1 + STORE_COL_FINISHED, e->finished_usec, e->finished_usec > 0));
        B(sq_bind_u64(st, 1 + STORE_COL_DURATION, e->duration_ms));
        B(e->exit_code == -1 ? sqlite3_bind_null(st, 1 + STORE_COL_EXIT_CODE)
                             : sqlite3_bind_int(st, 1 + STORE_COL_EXIT_CODE, e->exit_code));
        B(e->signal == 0 ? sqlite3_bind_null(st, 1 + STORE_COL_SIGNAL) : sqlite3_bind_int(st, 1 + STORE_COL_SIGNAL, e->signal));
        B(sq_bind_u64_or_null(st, 1 + STORE_COL_CPU, e->cpu_usec, e->have_cpu));
        B(sq_bind_u64_or_null(st, 1 + STORE_COL_PEAK, e->peak_memory_bytes, e->have_peak));
        B(sq_bind_text(st, 1 + STORE_COL_LANGUAGE, e->language));
        B(sq_bind_u64(st, 1 + STORE_COL_TIMEOUT, e->limits.timeout_ms));
        B(sq_bind_u64(st, 1 + STORE_COL_MEMORY, e->limits.memory_mb));
        B(sqlite3_bind_double(st, 1 + STORE_COL_CPU_CORES, e->limits.cpu_cores));
        B(sq_bind_u64(st, 1 + STORE_COL_DISK, e->limits.disk_mb));
        B(sq_bind_u64(st, 1 + STORE_COL_TASKS, e->limits.tasks));
        B(sq_bind_text(st, 1 + STORE_COL_UNIT, e->unit));
        B(sq_bind_text(st, 1 + STORE_COL_REASON, e->reason));
        B(sqlite3_bind_blob(st, 1 + STORE_COL_FINGERPRINT, r->fingerprint, sizeof(r->fingerprint), SQLITE_STATIC));
        B(sq_bind_u64(st, 1 + STORE_COL_OUT_BYTES, e->out.bytes));
        B(sq_bind_u64(st, 1 + STORE_COL_OUT_LINES, e->out.lines));
        B(sqlite3_bind_int(st, 1 + STORE_COL_OUT_TRUNCATED, e->out.truncated));
        B(sq_bind_u64(st, 1 + STORE_COL_ERR_BYTES, e->err.bytes));
        B(sq_bind_u64(st, 1 + STORE_COL_ERR_LINES, e->err.lines));
        B(sqlite3_bind_int(st, 1 + STORE_COL_ERR_TRUNCATED, e->err.truncated));
        B(sq_bind_text(st, 1 + STORE_COL_OUT, e->out.text));
        B(sq_bind_text(st, 1 + STORE_COL_ERR, e->err.text));
        B(sq_bind_text(st, 1 + STORE_COL_CODE, r->code));
        B(sq_bind_text(st, 1 + STORE_COL_WORKSPACE, r->workspace));
        B(sq_bind_text(st, 1 + STORE_COL_REQUEST, r->request));
        B(sq_bind_text(st, 1 + STORE_COL_ERROR_MESSAGE, e->error_message));
        B(sqlite3_bind_int(st, 1 + STORE_COL_CANCEL_REQUESTED, e->cancel_requested));
        B(sq_bind_text(st, 1 + STORE_COL_CLIENT_ID, e->client_id));
        B(sq_bind_text(st, 1 + STORE_COL_START, exec_start_path_to_string(e->start)));
        B(sq_bind_text(st, 1 + STORE_COL_ENVIRONMENT, e->environment));
        B(sq_bind_text(st, 1 + STORE_COL_SUMMARY, e->summary));
        B(sq_bind_text(st, 1 + STORE_COL_ISOLATION, e->isolation));
        B(sq_bind_text(st, 1 + STORE_COL_NODE, e->node));
        B(sq_bind_u64_or_null(st, 1 + STORE_COL_NODE_EPOCH, e->node_epoch, e->node_epoch > 0));
        B(sq_bind_u64(st, 1 + STORE_COL_ATTEMPT, MAX(e->attempt, 1U)));
        {
                _cleanup_free_ char *network = NULL;

                if (store_network_to_json(e, &network) < 0)
                        return SQLITE_NOMEM;
                /* SQLITE_TRANSIENT: SQLite copies the text before it goes. */
                rc = network ? sqlite3_bind_text(st, 1 + STORE_COL_NETWORK, network, -1, SQLITE_TRANSIENT)
                             : sqlite3_bind_null(st, 1 + STORE_COL_NETWORK);
                if (rc != SQLITE_OK)
                        return rc;
        }
#undef B
        return rc;
}

/* A copy of a TEXT column, NULL for SQL NULL. -ENOMEM only when SQLite itself ran out. */
int sq_column_strdup(sqlite3_stmt *st, int i, char **ret) {
        const unsigned char *t;
        int n;
        char *c;

        if (sqlite3_column_type(st, i) == SQLITE_NULL) {
                *ret = NULL;
                return 0;
        }
        t = sqlite3_column_text(st, i);
        n = sqlite3_column_bytes(st, i);
        if (!t)
                return -ENOMEM;
        c = malloc((size_t) n + 1);
        if (!c)
                return -ENOMEM;
        memcpy(c, t, (size_t) n);
        c[n] = 0;
        *ret = c;
        return 0;
}

/* Unsigned columns: a negative value is a damaged (or hand-edited) row, not something to wrap. */
int sq_column_u64(sqlite3_stmt *st, int i, uint64_t *ret, bool *ret_have) {
        sqlite3_int64 v;

        if (sqlite3_column_type(st, i) == SQLITE_NULL) {
                if (!ret_have)
                        return -EBADMSG;
                *ret_have = false;
                *ret = 0;
                return 0;
        }
        v = sqlite3_column_int64(st, i);
        if (v < 0)
                return -EBADMSG;
        *ret = (uint64_t) v;
        if (ret_have)
                *ret_have = true;
        return 0;
}

/* The row st is on, through the conversion every backend shares (store-row.c). INTEGER columns read
 * as text are their decimal digits; cpu_cores and the fingerprint are read as they are. */
static int row_to_record(sqlite3_stmt *st, StoreRecord **ret) {
        StoreRow row = {};

        for (int i = 0; i < _STORE_COL_MAX; i++)
                if (sqlite3_column_type(st, i) != SQLITE_NULL) {
                        row.text[i] = (const char *) sqlite3_column_text(st, i);
                        if (!row.text[i])
                                return -ENOMEM;
                }
        row.cpu_cores = sqlite3_column_double(st, STORE_COL_CPU_CORES);
        row.fingerprint = sqlite3_column_blob(st, STORE_COL_FINGERPRINT);
        row.fingerprint_size = (size_t) MAX(sqlite3_column_bytes(st, STORE_COL_FINGERPRINT), 0);
        return store_record_from_row(&row, ret);
}

/* Step st to the end, collecting every row. st is reset whatever happens. */
static int collect(SqliteStore *ss, sqlite3_stmt *st, StoreRecord ***ret, size_t *ret_n) {
        StoreRecord **l = NULL;
        size_t n = 0, allocated = 0;
        int rc, r = 0;

        for (;;) {
                rc = sqlite3_step(st);
                if (rc == SQLITE_DONE)
                        break;
                if (rc != SQLITE_ROW) {
                        r = sq_fail(ss, rc);
                        goto finish;
                }
                if (sq_grow((void **) &l, &allocated, n, sizeof(StoreRecord *), 16) < 0) {
                        r = -ENOMEM;
                        goto finish;
                }
                r = row_to_record(st, &l[n]);
                if (r < 0) {
                        if (r == -EBADMSG)
                                store_set_error(&ss->base, "a stored record is damaged");
                        goto finish;
                }
                n++;
        }

finish:
        (void) sqlite3_reset(st);
        if (r < 0) {
                store_records_free(l, n);
                return r;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

/* ---- operations ---- */

/* One prepared, bound and stepped statement that returns no rows; finalized. */
int sq_exec_bound(SqliteStore *ss, sqlite3_stmt *st, int rc) {
        int r = 0;

        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc != SQLITE_DONE)
                r = sq_fail(ss, rc);
        sqlite3_finalize(st);
        return r;
}

static int sqlite_put(Store *s, const StoreRecord *rec) {
        SqliteStore *ss = SQLITE_STORE(s);
        int rc, r = 0;

        /* With a delivery to enqueue, the record and the delivery commit together or not at all. */
        if (rec->callback) {
                rc = sqlite3_exec(ss->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
                if (rc != SQLITE_OK)
                        return sq_fail(ss, rc);
        }

        rc = bind_record(ss->put, rec);
        if (rc != SQLITE_OK)
                r = sq_fail(ss, rc);
        else {
                rc = sqlite3_step(ss->put);
                if (rc != SQLITE_DONE)
                        r = sq_fail(ss, rc);
                else if (sqlite3_changes(ss->db) == 0) {
                        store_set_error(s, "the execution was taken over by another node");
                        r = -ESTALE;
                }
        }
        (void) sqlite3_reset(ss->put);
        (void) sqlite3_clear_bindings(ss->put);   /* no dangling SQLITE_STATIC pointers into rec */

        if (r >= 0 && rec->callback) {
                sqlite3_stmt *st = NULL;

                rc = sqlite3_prepare_v2(ss->db, sql_callback_enqueue, -1, &st, NULL);
                if (rc == SQLITE_OK)
                        r = sq_exec_bound(ss, st, bind_callback(st, rec->callback));
                else
                        r = sq_fail(ss, rc);
                if (r >= 0) {
                        rc = sqlite3_exec(ss->db, "COMMIT", NULL, NULL, NULL);
                        if (rc != SQLITE_OK)
                                r = sq_fail(ss, rc);
                }
        }
        if (r < 0)
                sq_rollback_if_open(ss);
        return r;
}

static int sqlite_get(Store *s, const char *id, StoreRecord **ret) {
        SqliteStore *ss = SQLITE_STORE(s);
        StoreRecord **l = NULL;
        size_t n = 0;
        int rc, r;

        rc = sqlite3_bind_text(ss->get, 1, id, -1, SQLITE_STATIC);
        if (rc != SQLITE_OK) {
                (void) sqlite3_reset(ss->get);
                return sq_fail(ss, rc);
        }
        r = collect(ss, ss->get, &l, &n);
        (void) sqlite3_clear_bindings(ss->get);
        if (r < 0)
                return r;
        if (n == 0) {
                free(l);
                return -ENOENT;
        }
        *ret = l[0];
        for (size_t i = 1; i < n; i++)   /* cannot happen: execution_id is the primary key */
                store_record_free(l[i]);
        free(l);
        return 0;
}

/* The rows of a prepared statement whose parameters were bound with result rc; finalizes st. */
static int collect_bound(SqliteStore *ss, sqlite3_stmt *st, int rc, StoreRecord ***ret, size_t *ret_n) {
        int r = rc != SQLITE_OK ? sq_fail(ss, rc) : collect(ss, st, ret, ret_n);

        sqlite3_finalize(st);
        return r;
}

static int sqlite_list(Store *s, const StoreListArgs *a, StoreRecord ***ret, size_t *ret_n) {
        SqliteStore *ss = SQLITE_STORE(s);
        _cleanup_free_ char *sql = NULL;
        sqlite3_stmt *st = NULL;
        const char *key = a->order == STORE_ORDER_DURATION_MS ? "duration_ms" : "created_at";
        int rc, i = 0;

        /* Only fixed fragments and the fixed key name go into the text; every value is a parameter. */
        if (asprintf(&sql,
                     "SELECT " STORE_COLUMNS " FROM executions WHERE 1%s%s%s%s%s%s%s%s ORDER BY %s DESC, execution_id DESC "
                     "LIMIT ?",
                     a->session_id ? " AND session_id = ?" : "",
                     a->owner ? " AND owner = ?" : "",
                     a->status >= 0 ? " AND status = ?" : "",
                     a->error_type == ERROR_NONE ? " AND error_type IS NULL" : "",
                     a->error_type > ERROR_NONE ? " AND error_type = ?" : "",
                     a->after ? " AND (" : "",
                     a->after ? key : "",
                     a->after ? ", execution_id) < (?, ?)" : "",
                     key) < 0)
                return -ENOMEM;

        rc = sqlite3_prepare_v2(ss->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);

        if (a->session_id)
                rc = rc ?: sqlite3_bind_text(st, ++i, a->session_id, -1, SQLITE_STATIC);
        if (a->owner)
                rc = rc ?: sqlite3_bind_text(st, ++i, a->owner, -1, SQLITE_STATIC);
        if (a->status >= 0)
                rc = rc ?: sqlite3_bind_text(st, ++i, exec_status_to_string(a->status), -1, SQLITE_STATIC);
        if (a->error_type > ERROR_NONE)
                rc = rc ?: sqlite3_bind_text(st, ++i, error_type_to_string(a->error_type), -1, SQLITE_STATIC);
        if (a->after) {
                rc = rc ?: sq_bind_u64(st, ++i, a->after->key);
                rc = rc ?: sqlite3_bind_text(st, ++i, a->after->id, -1, SQLITE_STATIC);
        }
        rc = rc ?: sqlite3_bind_int64(st, ++i, a->limit);
        return collect_bound(ss, st, rc, ret, ret_n);
}

static int sqlite_list_unfinished(Store *s, StoreRecord ***ret, size_t *ret_n) {
        SqliteStore *ss = SQLITE_STORE(s);
        sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(ss->db, sql_unfinished, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);
        rc = sqlite3_bind_text(st, 1, exec_status_to_string(EXEC_QUEUED), -1, SQLITE_STATIC);
        rc = rc ?: sqlite3_bind_text(st, 2, exec_status_to_string(EXEC_RUNNING), -1, SQLITE_STATIC);
        return collect_bound(ss, st, rc, ret, ret_n);
}

/* store_take_over(): UPDATE ... RETURNING, one statement (SQLite's writer lock makes it atomic). */
static const char sql_take_own[] =
        "UPDATE executions SET node = ?1, node_epoch = ?2 WHERE status IN (?3, ?4) RETURNING " STORE_COLUMNS;
static const char sql_take_from[] =
        "UPDATE executions SET node = ?1, node_epoch = ?2 WHERE status IN (?3, ?4) AND node = ?5 "
        "AND EXISTS (SELECT 1 FROM nodes WHERE node_name = ?5 AND lease_expires_usec < ?6) RETURNING " STORE_COLUMNS;

static int sqlite_take_over(Store *s, const char *from, const char *node, uint64_t epoch, uint64_t now_usec,
                            StoreRecord ***ret, size_t *ret_n) {
        SqliteStore *ss = SQLITE_STORE(s);
        sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(ss->db, from ? sql_take_from : sql_take_own, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);
        rc = sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
        rc = rc ?: sq_bind_u64_or_null(st, 2, epoch, epoch > 0);
        rc = rc ?: sqlite3_bind_text(st, 3, exec_status_to_string(EXEC_QUEUED), -1, SQLITE_STATIC);
        rc = rc ?: sqlite3_bind_text(st, 4, exec_status_to_string(EXEC_RUNNING), -1, SQLITE_STATIC);
        if (from) {
                rc = rc ?: sqlite3_bind_text(st, 5, from, -1, SQLITE_STATIC);
                rc = rc ?: sq_bind_u64(st, 6, now_usec);
        }
        return collect_bound(ss, st, rc, ret, ret_n);
}

int sq_commit(SqliteStore *ss, int r) {
        if (r >= 0) {
                int rc = sqlite3_exec(ss->db, "COMMIT", NULL, NULL, NULL);

                if (rc != SQLITE_OK)
                        r = sq_fail(ss, rc);
        }
        if (r < 0)
                sq_rollback_if_open(ss);
        return r;
}

int sq_grow(void **l, size_t *allocated, size_t n, size_t size, size_t min) {
        size_t m;
        void *t;

        if (n < *allocated)
                return 0;
        m = MAX(*allocated * 2, min);
        t = reallocarray(*l, m, size);
        if (!t)
                return -ENOMEM;
        *l = t;
        *allocated = m;
        return 0;
}

/* Run one statement with ?1 = v to completion. */
static int exec_u64(SqliteStore *ss, const char *sql, uint64_t v) {
        sqlite3_stmt *st = NULL;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(ss->db, sql, -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sq_bind_u64(st, 1, v);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc != SQLITE_DONE)
                r = sq_fail(ss, rc);
        sqlite3_finalize(st);
        return r;
}

/* One transaction: the digests the purged executions' artifacts use, their artifact rows, the
 * records, then which of those digests no row refers to any more. */
static int sqlite_purge(Store *s, uint64_t finished_before_usec, uint64_t *ret_n, char ***ret_unreferenced) {
        SqliteStore *ss = SQLITE_STORE(s);
        _cleanup_strv_free_ char **candidates = NULL, **unused = NULL;
        size_t n_candidates = 0, n_unused = 0;
        sqlite3_stmt *st = NULL;
        uint64_t n = 0;
        int rc, r = 0;

        rc = sqlite3_exec(ss->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                return sq_fail(ss, rc);

        rc = sqlite3_prepare_v2(ss->db, sql_purge_digests, -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sq_bind_u64(st, 1, finished_before_usec);
        while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *d = (const char *) sqlite3_column_text(st, 0);

                if (d && strv_extend(&candidates, &n_candidates, d) < 0) {
                        sqlite3_finalize(st);
                        sq_rollback_if_open(ss);
                        return -ENOMEM;
                }
                rc = SQLITE_OK;
        }
        if (rc != SQLITE_DONE)
                r = sq_fail(ss, rc);
        sqlite3_finalize(st);
        st = NULL;

        if (r >= 0)
                r = exec_u64(ss, sql_purge_artifacts, finished_before_usec);
        if (r >= 0)
                r = exec_u64(ss, sql_purge_collections, finished_before_usec);
        if (r >= 0) {
                r = exec_u64(ss, sql_purge, finished_before_usec);
                n = (uint64_t) sqlite3_changes64(ss->db);
        }
        if (r >= 0 && n_candidates > 0) {
                rc = sqlite3_prepare_v2(ss->db, sql_digest_used, -1, &st, NULL);
                if (rc != SQLITE_OK)
                        r = sq_fail(ss, rc);
                for (size_t i = 0; r >= 0 && i < n_candidates; i++) {
                        rc = sqlite3_bind_text(st, 1, candidates[i], -1, SQLITE_STATIC);
                        if (rc == SQLITE_OK)
                                rc = sqlite3_step(st);
                        if (rc == SQLITE_DONE)
                                r = strv_extend(&unused, &n_unused, candidates[i]);
                        else if (rc != SQLITE_ROW)
                                r = sq_fail(ss, rc);
                        (void) sqlite3_reset(st);
                }
                sqlite3_finalize(st);
        }
        if (r >= 0) {
                rc = sqlite3_exec(ss->db, "COMMIT", NULL, NULL, NULL);
                if (rc != SQLITE_OK)
                        r = sq_fail(ss, rc);
        }
        if (r < 0) {
                sq_rollback_if_open(ss);
                return r;
        }
        *ret_n = n;
        if (ret_unreferenced)
                *ret_unreferenced = TAKE_PTR(unused);
        return 0;
}

static int sqlite_count(Store *s, uint64_t *ret) {
        SqliteStore *ss = SQLITE_STORE(s);
        int rc, r = 0;

        rc = sqlite3_step(ss->count);
        if (rc == SQLITE_ROW)
                *ret = (uint64_t) sqlite3_column_int64(ss->count, 0);
        else
                r = sq_fail(ss, rc);
        (void) sqlite3_reset(ss->count);
        return r;
}

static void sqlite_close(Store *s) {
        SqliteStore *ss = SQLITE_STORE(s);

        sqlite3_finalize(ss->put);
        sqlite3_finalize(ss->get);
        sqlite3_finalize(ss->count);
        if (ss->db) {
                /* Recommended before closing a long-lived connection: refreshes the planner's
                 * statistics where they have gone stale, cheaply. Best effort. */
                (void) sqlite3_exec(ss->db, "PRAGMA optimize", NULL, NULL, NULL);
                (void) sqlite3_close(ss->db);
        }
        free(ss->path);
        free(ss);
}

/* ---- sessions ---- */

static const StoreOps sqlite_ops = {
        .name = "sqlite",
        .close = sqlite_close,
        .put = sqlite_put,
        .get = sqlite_get,
        .list = sqlite_list,
        .list_unfinished = sqlite_list_unfinished,
        .purge = sqlite_purge,
        .put_artifacts = sqlite_put_artifacts,
        .get_artifacts = sqlite_get_artifacts,
        .artifact_store_bytes = sqlite_artifact_store_bytes,
        .artifact_caller_bytes = sqlite_artifact_caller_bytes,
        .count = sqlite_count,
        .callback_get = sqlite_callback_get,
        .callback_due = sqlite_callback_due,
        .callback_next_due = sqlite_callback_next_due,
        .callback_update = sqlite_callback_update,
        .callback_count = sqlite_callback_count,
        .session_put = sqlite_session_put,
        .session_delete = sqlite_session_delete,
        .session_list = sqlite_session_list,
        .usage_get = sqlite_usage_get,
        .node_register = sqlite_node_register,
        .node_heartbeat = sqlite_node_heartbeat,
        .node_leave = sqlite_node_leave,
        .node_list = sqlite_node_list,
        .take_over = sqlite_take_over,
};

/* ---- opening ---- */

/* Fail opening with "PATH: what: detail" in *ret_error. A damaged or foreign file always gets the
 * same wording, whatever step noticed it, so that the administrator knows what to do. */
_printf_(4, 5) static int open_error(SqliteStore *ss, char **ret_error, int r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        r = store_open_failv(ret_error, ss->path, r, fmt, ap);
        va_end(ap);
        return r;
}

/* Why a file cannot be opened for writing, asked of the kernel directly: SQLite retries a failed
 * read-write open read-only, so the errno it keeps is that of the retry (ENOENT for a new file in
 * a read-only directory) rather than the one that matters. A missing file needs a writable
 * directory (for the file, and in WAL mode for its -wal and -shm files); an existing one needs
 * read and write access. 0 if nothing is wrong with the permissions. */
static int diagnose_path(const char *path) {
        _cleanup_free_ char *dir = strdup(path);
        char *slash;

        if (!dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (slash == dir)
                slash[1] = 0;
        else if (slash)
                *slash = 0;
        else
                strcpy(dir, ".");

        if (access(path, F_OK) < 0) {
                if (errno != ENOENT)
                        return -errno;
                return access(dir, W_OK | X_OK) < 0 ? -errno : 0;
        }
        if (access(path, R_OK | W_OK) < 0)
                return -errno;
        return access(dir, W_OK | X_OK) < 0 ? -errno : 0;
}

/* A failed SQLite call while opening: word the message after what the error means. */
static int open_sqlite_error(SqliteStore *ss, char **ret_error, int rc, const char *doing) {
        int r = sqlite_errno(ss->db, rc);
        const char *msg = ss->db ? sqlite3_errmsg(ss->db) : sqlite3_errstr(rc);

        if ((rc & 0xff) == SQLITE_CANTOPEN) {
                int d = diagnose_path(ss->path);
                if (d < 0)
                        r = d;
        }

        switch (r) {
        case -EBADMSG:
                return open_error(ss, ret_error, r, "is not a sandboxd database or is corrupted: %s", msg);
        case -ENOSPC:
                return open_error(ss, ret_error, r, "%s: no space left: %s", doing, msg);
        case -EACCES:
        case -EROFS:
        case -EPERM:
                return open_error(ss, ret_error, r,
                                  "%s: %s (%s: the file and its directory must be writable by sandboxd)", doing,
                                  msg, strerror(-r));
        case -EBUSY:
                return open_error(ss, ret_error, r, "%s: the database is locked by another process: %s", doing, msg);
        default:
                return open_error(ss, ret_error, r, "%s: %s (%s)", doing, msg, strerror(-r));
        }
}

static int pragma_int(SqliteStore *ss, const char *sql, int64_t *ret) {
        sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(ss->db, sql, -1, &st, NULL);
        if (rc == SQLITE_OK) {
                rc = sqlite3_step(st);
                if (rc == SQLITE_ROW) {
                        *ret = sqlite3_column_int64(st, 0);
                        rc = SQLITE_OK;
                }
        }
        sqlite3_finalize(st);
        return rc;
}

/* PRAGMA quick_check: the b-tree structure and the record formats, without cross-checking the
 * indexes against the table (that is integrity_check, linear in rows × indexes). On 10,000 typical
 * records it takes a few milliseconds (bench/store_bench.c measures it), cheap enough for every
 * start. rc is SQLITE_OK or the error; *ret_problem the first complaint if the check ran. */
static int quick_check(SqliteStore *ss, char **ret_problem) {
        sqlite3_stmt *st = NULL;
        const unsigned char *t;
        int rc;

        *ret_problem = NULL;
        rc = sqlite3_prepare_v2(ss->db, "PRAGMA quick_check(1)", -1, &st, NULL);
        if (rc == SQLITE_OK) {
                rc = sqlite3_step(st);
                if (rc == SQLITE_ROW) {
                        t = sqlite3_column_text(st, 0);
                        if (!t || !streq((const char *) t, "ok")) {
                                char *p = strdup(t ? (const char *) t : "quick_check failed");

                                /* One line for the log: the report comes as several. */
                                for (char *c = p; c && *c; c++)
                                        if (*c == '\n')
                                                *c = ' ';
                                *ret_problem = p;
                        }
                        rc = SQLITE_OK;
                }
        }
        sqlite3_finalize(st);
        return rc;
}

static int migrate(SqliteStore *ss, char **ret_error) {
        char sql[128];
        int64_t version = 0, app_id = 0;
        int rc;

        /* IMMEDIATE: take the write lock before reading the version, so that two processes opening
         * a new database at once cannot both run migration 1. */
        rc = sqlite3_exec(ss->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                return open_sqlite_error(ss, ret_error, rc, "cannot start the schema migration");

        rc = pragma_int(ss, "PRAGMA user_version", &version);
        if (rc != SQLITE_OK)
                goto fail;
        if (version > SQLITE_SCHEMA_VERSION) {
                sq_rollback_if_open(ss);
                return open_error(ss, ret_error, -EPROTONOSUPPORT,
                                  "database schema version %" PRIi64 " is newer than this sandboxd supports (%d)",
                                  version, SQLITE_SCHEMA_VERSION);
        }
        if (version == SQLITE_SCHEMA_VERSION) {
                rc = sqlite3_exec(ss->db, "COMMIT", NULL, NULL, NULL);
                if (rc != SQLITE_OK)
                        goto fail;
                return 0;
        }

        for (int64_t v = version; v < SQLITE_SCHEMA_VERSION; v++) {
                rc = sqlite3_exec(ss->db, sqlite_migrations[v], NULL, NULL, NULL);
                if (rc != SQLITE_OK) {
                        int r = sqlite_errno(ss->db, rc);
                        _cleanup_free_ char *msg = strdup(sqlite3_errmsg(ss->db));

                        sq_rollback_if_open(ss);
                        return open_error(ss, ret_error, r, "schema migration %" PRIi64 " failed: %s", v + 1,
                                          strna(msg));
                }
        }

        /* Neither pragma takes parameters; both values are ours, not input. */
        if (version == 0) {
                (void) snprintf(sql, sizeof(sql), "PRAGMA application_id = %d", SANDBOXD_APPLICATION_ID);
                rc = sqlite3_exec(ss->db, sql, NULL, NULL, NULL);
                if (rc != SQLITE_OK)
                        goto fail;
        }
        (void) snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", SQLITE_SCHEMA_VERSION);
        rc = sqlite3_exec(ss->db, sql, NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                goto fail;
        rc = sqlite3_exec(ss->db, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                goto fail;

        /* Belt and braces: what we just wrote must read back. */
        rc = pragma_int(ss, "PRAGMA application_id", &app_id);
        if (rc != SQLITE_OK)
                goto fail;
        if (app_id != SANDBOXD_APPLICATION_ID)
                return open_error(ss, ret_error, -EIO, "schema migration did not take effect");
        return 0;

fail:
        {
                int r = open_sqlite_error(ss, ret_error, rc, "schema migration failed");
                sq_rollback_if_open(ss);
                return r;
        }
}

int store_open_sqlite(const char *path, Store **ret, char **ret_error) {
        _cleanup_(store_closep) Store *s = NULL;
        _cleanup_free_ char *problem = NULL;
        SqliteStore *ss;
        int64_t app_id = 0, version = 0, n_objects = 0;
        sqlite3_stmt *st = NULL;
        const char *mode;
        bool wal = false;
        int rc, r;

        if (ret_error)
                *ret_error = NULL;
        if (isempty(path) || !ret)
                return -EINVAL;

        ss = calloc(1, sizeof(SqliteStore));
        if (!ss)
                return -ENOMEM;
        ss->base.ops = &sqlite_ops;
        s = &ss->base;
        ss->path = strdup(path);
        if (!ss->path)
                return -ENOMEM;

        /* The directory must exist (StateDirectory= creates it): creating it here would hide a
         * mistyped path. The file itself is created. */
        rc = sqlite3_open_v2(path, &ss->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
        if (rc != SQLITE_OK) {
                if (!ss->db)
                        return -ENOMEM;
                return open_sqlite_error(ss, ret_error, rc, "cannot open the database");
        }
        (void) sqlite3_extended_result_codes(ss->db, 1);
        (void) sqlite3_busy_timeout(ss->db, BUSY_TIMEOUT_MS);

        /* READWRITE silently falls back to read-only when the file is not writable: every write
         * would fail later, one request at a time. Refuse now instead. */
        if (sqlite3_db_readonly(ss->db, "main") == 1) {
                r = access(path, W_OK) < 0 ? -errno : -EROFS;
                return open_error(ss, ret_error, r, "database is not writable (%s)", strerror(-r));
        }

        /* The first reads of the file: a random file fails here with SQLITE_NOTADB. Only then is
         * anything written (journal mode, schema): never touch a file that is not ours. */
        rc = pragma_int(ss, "PRAGMA application_id", &app_id);
        if (rc == SQLITE_OK)
                rc = pragma_int(ss, "PRAGMA user_version", &version);
        if (rc == SQLITE_OK)
                rc = pragma_int(ss, "SELECT count(*) FROM sqlite_schema", &n_objects);
        if (rc != SQLITE_OK)
                return open_sqlite_error(ss, ret_error, rc, "cannot read the database");
        if (app_id != 0 && app_id != SANDBOXD_APPLICATION_ID)
                return open_error(ss, ret_error, -EBADMSG,
                                  "is not a sandboxd database (SQLite application_id 0x%08" PRIx64 ")",
                                  (uint64_t) app_id);
        if (app_id == 0 && (version != 0 || n_objects > 0))
                return open_error(ss, ret_error, -EBADMSG,
                                  "is not a sandboxd database (an SQLite file with other contents)");
        if (version > SQLITE_SCHEMA_VERSION)
                return open_error(ss, ret_error, -EPROTONOSUPPORT,
                                  "database schema version %" PRIi64 " is newer than this sandboxd supports (%d)",
                                  version, SQLITE_SCHEMA_VERSION);

        /* The pragma answers with the mode in effect: a file system without shared memory support
         * leaves it at "delete" instead of failing. */
        rc = sqlite3_prepare_v2(ss->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
        if (rc == SQLITE_OK) {
                rc = sqlite3_step(st);
                if (rc == SQLITE_ROW) {
                        mode = (const char *) sqlite3_column_text(st, 0);
                        wal = mode && streq(mode, "wal");
                        if (!wal)
                                problem = strdup(strna(mode));
                        rc = SQLITE_OK;
                }
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_OK)
                return open_sqlite_error(ss, ret_error, rc, "cannot switch to write-ahead logging");
        if (!wal)
                return open_error(ss, ret_error, -EOPNOTSUPP,
                                  "cannot switch to write-ahead logging (journal mode stays %s)", strna(problem));

        rc = sqlite3_exec(ss->db, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                return open_sqlite_error(ss, ret_error, rc, "cannot configure the database");

        rc = quick_check(ss, &problem);
        if (rc != SQLITE_OK)
                return open_sqlite_error(ss, ret_error, rc, "integrity check failed");
        if (problem)
                return open_error(ss, ret_error, -EBADMSG, "is corrupted: PRAGMA quick_check: %s", problem);

        r = migrate(ss, ret_error);
        if (r < 0)
                return r;

        rc = sqlite3_prepare_v3(ss->db, sql_put, -1, SQLITE_PREPARE_PERSISTENT, &ss->put, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_prepare_v3(ss->db, sql_get, -1, SQLITE_PREPARE_PERSISTENT, &ss->get, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_prepare_v3(ss->db, sql_count, -1, SQLITE_PREPARE_PERSISTENT, &ss->count, NULL);
        if (rc != SQLITE_OK)
                return open_sqlite_error(ss, ret_error, rc, "cannot prepare statements");

        *ret = TAKE_PTR(s);
        return 0;
}

int store_sqlite_set_max_pages_for_test(Store *s, uint64_t max_pages) {
        SqliteStore *ss = SQLITE_STORE(s);
        char sql[64];
        int rc;

        if (!s || s->ops != &sqlite_ops)
                return -EINVAL;
        (void) snprintf(sql, sizeof(sql), "PRAGMA max_page_count = %" PRIu64, max_pages);
        rc = sqlite3_exec(ss->db, sql, NULL, NULL, NULL);
        return rc == SQLITE_OK ? 0 : sq_fail(ss, rc);
}
