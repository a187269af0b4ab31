/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "store-sqlite-internal.h"

/* Numbered migrations: migrations[i] takes the schema from version i to i + 1 (PRAGMA
 * user_version). Append only; never edit one that has shipped.
 *
 * Column order matters: SQLite reads a row's columns in order and keeps only the first part of a
 * large row on the b-tree page, the rest in overflow pages. Everything a query filters or sorts on
 * comes first, the outputs and the code last, so a scan never touches overflow pages.
 * Units are in the names: the result's cpu_time_ms and peak_memory_mb are derived from the exact
 * cpu_usec and peak_memory_bytes. Timestamps are CLOCK_REALTIME microseconds; NULL means "not
 * known (yet)" for every nullable column. STRICT makes a type mismatch an error instead of a silent
 * conversion. Every index ends in execution_id so that "ORDER BY key DESC, execution_id DESC" and
 * the keyset seek of the next page come straight from the index. */
/* The triggers that keep record_usage (migration 8) right, with RECORD_BYTES(r) as defined where
 * they are expanded: each migration that adds a column counting in a record's bytes defines it
 * anew and makes them again (migrations 12 and 14). */
#define RECORD_USAGE_TRIGGERS                                                                            \
        "CREATE TRIGGER record_usage_insert AFTER INSERT ON executions WHEN new.owner IS NOT NULL BEGIN\n" \
        "        INSERT INTO record_usage (owner, records, bytes, pending_callbacks)\n" \
        "                VALUES (new.owner, 1, " RECORD_BYTES("new") ", 0)\n" \
        "                ON CONFLICT (owner) DO UPDATE SET records = records + 1, bytes = bytes + excluded.bytes;\n" \
        "END;\n" \
        "CREATE TRIGGER record_usage_update AFTER UPDATE ON executions BEGIN\n" \
        "        UPDATE record_usage SET records = records - 1, bytes = bytes - " RECORD_BYTES("old") "\n" \
        "                WHERE owner = old.owner;\n" \
        "        INSERT INTO record_usage (owner, records, bytes, pending_callbacks)\n" \
        "                SELECT new.owner, 1, " RECORD_BYTES("new") ", 0 WHERE new.owner IS NOT NULL\n" \
        "                ON CONFLICT (owner) DO UPDATE SET records = records + 1, bytes = bytes + excluded.bytes;\n" \
        "END;\n" \
        "CREATE TRIGGER record_usage_delete BEFORE DELETE ON executions WHEN old.owner IS NOT NULL BEGIN\n" \
        "        UPDATE record_usage SET records = records - 1,\n" \
        "                bytes = bytes - " RECORD_BYTES("old") " - (SELECT ifnull(sum(length(CAST(body AS BLOB))), 0)\n" \
        "                        FROM callbacks WHERE execution_id = old.execution_id),\n" \
        "                pending_callbacks = pending_callbacks - (SELECT count(*) FROM callbacks\n" \
        "                        WHERE execution_id = old.execution_id AND state = 'pending')\n" \
        "                WHERE owner = old.owner;\n" \
        "        DELETE FROM record_usage WHERE owner = old.owner AND records <= 0;\n" \
        "END;\n"
#define RECORD_USAGE_TRIGGERS_AGAIN                                                                      \
        "DROP TRIGGER IF EXISTS record_usage_insert;\n"                                                 \
        "DROP TRIGGER IF EXISTS record_usage_update;\n"                                                 \
        "DROP TRIGGER IF EXISTS record_usage_delete;\n"                                                 \
        RECORD_USAGE_TRIGGERS

const char *const sqlite_migrations[] = {
        /* 1 */
        "CREATE TABLE executions (\n"
        "        execution_id TEXT PRIMARY KEY NOT NULL,\n"
        "        session_id TEXT,\n"
        "        owner TEXT,\n"
        "        status TEXT NOT NULL,\n"
        "        error_type TEXT,\n"
        "        created_at INTEGER NOT NULL,\n"
        "        started_at INTEGER,\n"
        "        finished_at INTEGER,\n"
        "        duration_ms INTEGER NOT NULL,\n"
        "        exit_code INTEGER,\n"
        "        signal INTEGER,\n"
        "        cpu_usec INTEGER,\n"
        "        peak_memory_bytes INTEGER,\n"
        "        language TEXT NOT NULL,\n"
        "        timeout_ms INTEGER NOT NULL,\n"
        "        memory_mb INTEGER NOT NULL,\n"
        "        cpu_cores REAL NOT NULL,\n"
        "        disk_mb INTEGER NOT NULL,\n"
        "        tasks INTEGER NOT NULL,\n"
        "        unit TEXT,\n"
        "        reason TEXT,\n"
        "        fingerprint BLOB NOT NULL CHECK (length(fingerprint) = 32),\n"
        "        stdout_bytes INTEGER NOT NULL,\n"
        "        stdout_lines INTEGER NOT NULL,\n"
        "        stdout_truncated INTEGER NOT NULL CHECK (stdout_truncated IN (0, 1)),\n"
        "        stderr_bytes INTEGER NOT NULL,\n"
        "        stderr_lines INTEGER NOT NULL,\n"
        "        stderr_truncated INTEGER NOT NULL CHECK (stderr_truncated IN (0, 1)),\n"
        "        stdout TEXT,\n"
        "        stderr TEXT,\n"
        "        code TEXT\n"
        ") STRICT;\n"
        "CREATE INDEX executions_created ON executions (created_at, execution_id);\n"
        "CREATE INDEX executions_session ON executions (session_id, created_at, execution_id);\n"
        "CREATE INDEX executions_status ON executions (status, created_at, execution_id);\n"
        "CREATE INDEX executions_error ON executions (error_type, created_at, execution_id);\n"
        "CREATE INDEX executions_owner ON executions (owner, created_at, execution_id);\n"
        "CREATE INDEX executions_duration ON executions (duration_ms, execution_id);\n"
        "CREATE INDEX executions_finished ON executions (finished_at);\n",
        /* 2: what a restarted sandboxd needs to resume an execution: the workspace mount of a running
         * one, the rest of the request (env, seed; JSON) of a queued one. */
        "ALTER TABLE executions ADD COLUMN workspace TEXT;\n"
        "ALTER TABLE executions ADD COLUMN request TEXT;\n",
        /* 3: the callback outbox, one delivery per execution. Written in the same transaction as the
         * final record, so a crash cannot lose one between them; deleted with its execution, which
         * store_purge() keeps while the delivery is pending. The body is stored, not re-rendered:
         * every attempt posts the same bytes under the same signature input. */
        "CREATE TABLE callbacks (\n"
        "        execution_id TEXT PRIMARY KEY NOT NULL\n"
        "                REFERENCES executions (execution_id) ON DELETE CASCADE,\n"
        "        state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),\n"
        "        next_attempt_at INTEGER,\n"
        "        attempts INTEGER NOT NULL,\n"
        "        created_at INTEGER NOT NULL,\n"
        "        delivered_at INTEGER,\n"
        "        url TEXT NOT NULL,\n"
        "        delivery_id TEXT NOT NULL,\n"
        "        last_error TEXT,\n"
        "        body TEXT NOT NULL\n"
        ") STRICT;\n"
        "CREATE INDEX callbacks_due ON callbacks (state, next_attempt_at);\n",
        /* 4 (sessions): one row per session, so that a restarted sandboxd keeps them (their tmpfs
         * mount units keep running under systemd) and the idle sweep still removes them. */
        "CREATE TABLE IF NOT EXISTS sessions (\n"
        "        session_id TEXT PRIMARY KEY NOT NULL,\n"
        "        owner TEXT,\n"
        "        mount_unit TEXT NOT NULL,\n"
        "        path TEXT NOT NULL,\n"
        "        disk_mb INTEGER NOT NULL,\n"
        "        created_at INTEGER NOT NULL,\n"
        "        last_used_at INTEGER NOT NULL,\n"
        "        executions INTEGER NOT NULL\n"
        ") STRICT;\n",
        /* 5: the message of an execution that failed before it ran (which input file, and why). */
        "ALTER TABLE executions ADD COLUMN error_message TEXT;\n",
        /* 6 (artifacts): one row per collected file, the blob named by its sha256 in the artifact
         * store; and per execution whose output/ was collected, what was skipped (JSON
         * [{"path","reason"}], the first 100) and how many in all. Rows go when their execution is
         * purged (store_purge_ex()). */
        "CREATE TABLE artifacts (\n"
        "        execution_id TEXT NOT NULL,\n"
        "        path TEXT NOT NULL,\n"
        "        size INTEGER NOT NULL,\n"
        "        mime_type TEXT NOT NULL,\n"
        "        sha256 TEXT NOT NULL CHECK (length(sha256) = 64),\n"
        "        PRIMARY KEY (execution_id, path)\n"
        ") STRICT;\n"
        "CREATE INDEX artifacts_sha256 ON artifacts (sha256);\n"
        "CREATE TABLE artifact_collections (\n"
        "        execution_id TEXT PRIMARY KEY NOT NULL,\n"
        "        skipped_total INTEGER NOT NULL,\n"
        "        skipped TEXT NOT NULL\n"
        ") STRICT;\n",
        /* 7: the caller asked for a cancel (sandboxd's own state: a verdict of "cancelled" is only
         * ever decided from it, never from what the sandbox reports), kept for an adoption. */
        "ALTER TABLE executions ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;\n",
        /* 8 (record usage per owner, for MaxStoredBytesPerCaller= and CallbackMaxPendingPerCaller=):
         * what each owner's execution records take, kept by triggers so that admission reads one row
         * instead of summing a caller's records. A record counts 256 bytes (its fixed columns and
         * index entries) plus the bytes of code, stdout, stderr, request and error_message (TEXT
         * length() counts characters: CAST AS BLOB counts bytes), plus its delivery's body. Deleting
         * a record (the purge) subtracts it, its delivery included, BEFORE the row goes: the cascade
         * that deletes the delivery cannot find the owner any more. Rows without an owner are not
         * counted. Seeded from the rows already there. Artifacts are not in here. */
#define RECORD_BYTES(r)                                                                                  \
        "(256 + ifnull(length(CAST(" r ".code AS BLOB)), 0) + ifnull(length(CAST(" r ".stdout AS BLOB)), 0)" \
        " + ifnull(length(CAST(" r ".stderr AS BLOB)), 0) + ifnull(length(CAST(" r ".request AS BLOB)), 0)"  \
        " + ifnull(length(CAST(" r ".error_message AS BLOB)), 0))"
        "CREATE TABLE record_usage (\n"
        "        owner TEXT PRIMARY KEY NOT NULL,\n"
        "        records INTEGER NOT NULL,\n"
        "        bytes INTEGER NOT NULL,\n"
        "        pending_callbacks INTEGER NOT NULL\n"
        ") STRICT;\n"
        "INSERT INTO record_usage (owner, records, bytes, pending_callbacks)\n"
        "        SELECT owner, count(*), sum(" RECORD_BYTES("executions") "), 0 FROM executions\n"
        "        WHERE owner IS NOT NULL GROUP BY owner;\n"
        "UPDATE record_usage SET\n"
        "        bytes = bytes + (SELECT ifnull(sum(length(CAST(c.body AS BLOB))), 0) FROM callbacks c\n"
        "                JOIN executions e USING (execution_id) WHERE e.owner = record_usage.owner),\n"
        "        pending_callbacks = (SELECT count(*) FROM callbacks c JOIN executions e USING (execution_id)\n"
        "                WHERE e.owner = record_usage.owner AND c.state = 'pending');\n"
        RECORD_USAGE_TRIGGERS
        "CREATE TRIGGER record_usage_callback_insert AFTER INSERT ON callbacks BEGIN\n"
        "        UPDATE record_usage SET bytes = bytes + length(CAST(new.body AS BLOB)),\n"
        "                pending_callbacks = pending_callbacks + (new.state = 'pending')\n"
        "                WHERE owner = (SELECT owner FROM executions WHERE execution_id = new.execution_id);\n"
        "END;\n"
        "CREATE TRIGGER record_usage_callback_state AFTER UPDATE OF state ON callbacks\n"
        "        WHEN old.state IS NOT new.state BEGIN\n"
        "        UPDATE record_usage SET pending_callbacks = pending_callbacks + (new.state = 'pending')\n"
        "                - (old.state = 'pending')\n"
        "                WHERE owner = (SELECT owner FROM executions WHERE execution_id = new.execution_id);\n"
        "END;\n",
#undef RECORD_BYTES
        /* 9 (artifact budgets): what each artifact is charged (its st_blocks * 512 when collected:
         * what the store really holds of it) and to whom (the execution's owner, copied into the row
         * so that what a row added is exactly what its deletion takes away), and the running sums
         * the budgets are judged against, so that no collection has to add up every row:
         * artifact_usage per owner ('' for an unknown one) over its artifact rows, every row counted
         * even where content is shared (a caller's usage never depends on what others stored);
         * artifact_blobs per distinct content (charged once, by the row that stored it first, kept
         * while any row refers to it) and artifact_store_usage, their sum: what the store really
         * holds. Triggers keep all three in the transaction that changes the rows, purges included.
         * Rows collected before this migration were copied without their holes: charged their size. */
        "ALTER TABLE artifacts ADD COLUMN charged_bytes INTEGER NOT NULL DEFAULT 0;\n"
        "ALTER TABLE artifacts ADD COLUMN owner TEXT;\n"
        "UPDATE artifacts SET charged_bytes = size, owner = COALESCE((SELECT owner FROM executions e "
        "WHERE e.execution_id = artifacts.execution_id), '');\n"
        "CREATE TABLE artifact_usage (\n"
        "        owner TEXT PRIMARY KEY NOT NULL,\n"
        "        bytes INTEGER NOT NULL,\n"
        "        artifacts INTEGER NOT NULL\n"
        ") STRICT;\n"
        "CREATE TABLE artifact_blobs (\n"
        "        sha256 TEXT PRIMARY KEY NOT NULL CHECK (length(sha256) = 64),\n"
        "        bytes INTEGER NOT NULL,\n"
        "        refs INTEGER NOT NULL\n"
        ") STRICT;\n"
        "CREATE TABLE artifact_store_usage (\n"
        "        id INTEGER PRIMARY KEY CHECK (id = 0),\n"
        "        bytes INTEGER NOT NULL,\n"
        "        blobs INTEGER NOT NULL\n"
        ") STRICT;\n"
        "INSERT INTO artifact_usage (owner, bytes, artifacts) "
        "SELECT owner, sum(charged_bytes), count(*) FROM artifacts GROUP BY owner;\n"
        "INSERT INTO artifact_blobs (sha256, bytes, refs) "
        "SELECT sha256, max(charged_bytes), count(*) FROM artifacts GROUP BY sha256;\n"
        "INSERT INTO artifact_store_usage (id, bytes, blobs) "
        "SELECT 0, COALESCE(sum(bytes), 0), count(*) FROM artifact_blobs;\n"
        "CREATE TRIGGER artifacts_charge AFTER INSERT ON artifacts BEGIN\n"
        "        INSERT INTO artifact_usage (owner, bytes, artifacts) VALUES (NEW.owner, NEW.charged_bytes, 1)\n"
        "                ON CONFLICT (owner) DO UPDATE SET bytes = bytes + excluded.bytes, artifacts = artifacts + 1;\n"
        "        INSERT INTO artifact_blobs (sha256, bytes, refs) VALUES (NEW.sha256, NEW.charged_bytes, 1)\n"
        "                ON CONFLICT (sha256) DO UPDATE SET refs = refs + 1;\n"
        "END;\n"
        "CREATE TRIGGER artifacts_refund AFTER DELETE ON artifacts BEGIN\n"
        "        UPDATE artifact_usage SET bytes = bytes - OLD.charged_bytes, artifacts = artifacts - 1\n"
        "                WHERE owner = OLD.owner;\n"
        "        DELETE FROM artifact_usage WHERE owner = OLD.owner AND artifacts <= 0;\n"
        "        UPDATE artifact_blobs SET refs = refs - 1 WHERE sha256 = OLD.sha256;\n"
        "        DELETE FROM artifact_blobs WHERE sha256 = OLD.sha256 AND refs <= 0;\n"
        "END;\n"
        "CREATE TRIGGER artifact_blobs_charge AFTER INSERT ON artifact_blobs BEGIN\n"
        "        UPDATE artifact_store_usage SET bytes = bytes + NEW.bytes, blobs = blobs + 1;\n"
        "END;\n"
        "CREATE TRIGGER artifact_blobs_refund AFTER DELETE ON artifact_blobs BEGIN\n"
        "        UPDATE artifact_store_usage SET bytes = bytes - OLD.bytes, blobs = blobs - 1;\n"
        "END;\n"
        "CREATE TRIGGER artifacts_immutable BEFORE UPDATE OF charged_bytes, owner, sha256 ON artifacts BEGIN\n"
        "        SELECT RAISE(ABORT, 'artifact rows are replaced, never updated');\n"
        "END;\n",
        /* 10 (ids scoped by owner, scoped-id.h): the id the caller chose, where execution_id and
         * session_id now hold the record id derived from it and the owner. NULL for a generated id,
         * and for the rows written before, whose key is the caller's id itself (still found: a
         * lookup falls back to the record id, checked against the owner). */
        "ALTER TABLE executions ADD COLUMN client_id TEXT;\n"
        "ALTER TABLE sessions ADD COLUMN client_id TEXT;\n",
        /* 11 (the warm pool): how the execution's unit came to be, "warm" or "cold"; NULL until it
         * started, and for the rows written before. */
        "ALTER TABLE executions ADD COLUMN start TEXT;\n",
        /* 12 (network, issue 16): a run with network's allow list and the egress proxy's log, as
         * JSON (model/net-log.h); NULL for a run without network, and for the rows written before.
         * It counts in the record's bytes (migration 8): the triggers again, with it. The rows before
         * have none, so the sums stay right. */
#define RECORD_BYTES(r)                                                                                  \
        "(256 + ifnull(length(CAST(" r ".code AS BLOB)), 0) + ifnull(length(CAST(" r ".stdout AS BLOB)), 0)" \
        " + ifnull(length(CAST(" r ".stderr AS BLOB)), 0) + ifnull(length(CAST(" r ".request AS BLOB)), 0)"  \
        " + ifnull(length(CAST(" r ".error_message AS BLOB)), 0) + ifnull(length(CAST(" r ".network AS BLOB)), 0))"
        "ALTER TABLE executions ADD COLUMN network TEXT;\n"
        RECORD_USAGE_TRIGGERS_AGAIN,
#undef RECORD_BYTES
        /* 13 (environments, issue 17): the request's "environment" (model/environment.h); NULL for
         * the language's base, and for the rows written before. A name of at most 64 bytes: within
         * the 256 bytes a record is charged beyond its texts. */
        "ALTER TABLE executions ADD COLUMN environment TEXT;\n",
        /* 14 (the summary, issue 18): model/summary.h, at most SUMMARY_MAX bytes, made when the record
         * became final; NULL before, and for the rows written before this (the API makes theirs when
         * it renders them). It counts in the record's bytes: the triggers of migration 12 again, with
         * it. The rows before have none, so the sums stay right. */
#define RECORD_BYTES(r)                                                                                  \
        "(256 + ifnull(length(CAST(" r ".code AS BLOB)), 0) + ifnull(length(CAST(" r ".stdout AS BLOB)), 0)" \
        " + ifnull(length(CAST(" r ".stderr AS BLOB)), 0) + ifnull(length(CAST(" r ".request AS BLOB)), 0)"  \
        " + ifnull(length(CAST(" r ".error_message AS BLOB)), 0) + ifnull(length(CAST(" r ".network AS BLOB)), 0)" \
        " + ifnull(length(CAST(" r ".summary AS BLOB)), 0))"
        "ALTER TABLE executions ADD COLUMN summary TEXT;\n"
        RECORD_USAGE_TRIGGERS_AGAIN,
#undef RECORD_BYTES
        /* 15 (the tiers, issue 21): the record's "isolation" as JSON (model/risk-scan.h), at most
         * ISOLATION_JSON_MAX bytes; NULL for the rows written before. It counts in the record's
         * bytes: the triggers again, with it. */
#define RECORD_BYTES(r)                                                                                  \
        "(256 + ifnull(length(CAST(" r ".code AS BLOB)), 0) + ifnull(length(CAST(" r ".stdout AS BLOB)), 0)" \
        " + ifnull(length(CAST(" r ".stderr AS BLOB)), 0) + ifnull(length(CAST(" r ".request AS BLOB)), 0)"  \
        " + ifnull(length(CAST(" r ".error_message AS BLOB)), 0) + ifnull(length(CAST(" r ".network AS BLOB)), 0)" \
        " + ifnull(length(CAST(" r ".summary AS BLOB)), 0) + ifnull(length(CAST(" r ".isolation AS BLOB)), 0))"
        "ALTER TABLE executions ADD COLUMN isolation TEXT;\n"
        RECORD_USAGE_TRIGGERS_AGAIN,
#undef RECORD_BYTES
        /* 16 (the node registry, issue 22): one row per node sharing the store, keyed by its
         * NodeName=. epoch counts the registrations of the name and fences it (a heartbeat of an
         * older epoch is refused); the lease is alive while lease_expires_usec is ahead of the clock;
         * slots and running are the node's capacity and load at its last heartbeat. The row stays
         * when the node leaves, so that its next start continues the epoch. Few rows, never
         * scanned but whole (store_node_list()): no index beyond the key. */
        "CREATE TABLE nodes (\n"
        "        node_name TEXT PRIMARY KEY NOT NULL,\n"
        "        epoch INTEGER NOT NULL CHECK (epoch >= 1),\n"
        "        started_usec INTEGER NOT NULL,\n"
        "        heartbeat_usec INTEGER NOT NULL,\n"
        "        lease_expires_usec INTEGER NOT NULL,\n"
        "        slots INTEGER NOT NULL,\n"
        "        running INTEGER NOT NULL\n"
        ") STRICT;\n",
        /* 17 (executions on nodes, issue 22): the node that runs an execution and its epoch when it
         * took it (the fence of store_put()), and the attempt (2 once run again after its node was
         * lost). The index finds a lost node's unfinished executions (store_take_over()). */
        "ALTER TABLE executions ADD COLUMN node TEXT;\n"
        "ALTER TABLE executions ADD COLUMN node_epoch INTEGER;\n"
        "ALTER TABLE executions ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;\n"
        "CREATE INDEX executions_node ON executions (node, status) WHERE node IS NOT NULL;\n",
        /* 18 (sessions on nodes, issue 22): the node whose tmpfs holds the session's workspace; a
         * run of the session sent to another node is routed there (NULL: written before, this
         * node's). */
        "ALTER TABLE sessions ADD COLUMN node TEXT;\n",
};

const size_t sqlite_n_migrations = ELEMENTSOF(sqlite_migrations);

/* store-pg-schema.c numbers its migrations the same way. */
_Static_assert(ELEMENTSOF(sqlite_migrations) == STORE_SCHEMA_VERSION, "one migration per schema version");
