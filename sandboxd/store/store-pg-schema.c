/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "store-pg-internal.h"

/* The PostgreSQL schema: pg_migrations[i] takes it from version i to i + 1, numbered like the
 * SQLite store's (store-sqlite-schema.c), one per feature, so that version N has the same tables,
 * columns and usage sums in either backend; the comments there say what each is for. Append only;
 * never edit one that has shipped. The version is in sandboxd_schema (store-pg.c), which also marks
 * the database as ours.
 *
 * The differences from SQLite are those of the dialect: BIGINT for the INTEGER columns (every value
 * is ≤ INT64_MAX, store_record_is_valid()), DOUBLE PRECISION, BYTEA for the fingerprint,
 * octet_length() for SQLite's length(CAST(x AS BLOB)) (UTF-8 bytes), and the triggers as PL/pgSQL
 * functions. A record's bytes are one function, sandboxd_record_bytes(), that the migrations
 * adding a counted column replace (12, 14 and 15), where SQLite makes its triggers again. */

#define RECORD_BYTES_FUNCTION(body)                                                                      \
        "CREATE OR REPLACE FUNCTION sandboxd_record_bytes(r executions) RETURNS bigint\n"                \
        "        LANGUAGE sql STABLE AS $f$ SELECT (256 + " body ")::bigint $f$;\n"

#define BYTES_8                                                                                          \
        "coalesce(octet_length(r.code), 0) + coalesce(octet_length(r.stdout), 0)"                         \
        " + coalesce(octet_length(r.stderr), 0) + coalesce(octet_length(r.request), 0)"                   \
        " + coalesce(octet_length(r.error_message), 0)"
#define BYTES_12 BYTES_8 " + coalesce(octet_length(r.network), 0)"
#define BYTES_14 BYTES_12 " + coalesce(octet_length(r.summary), 0)"
#define BYTES_15 BYTES_14 " + coalesce(octet_length(r.isolation), 0)"

const char *const pg_migrations[] = {
        /* 1 */
        "CREATE TABLE executions (\n"
        /* COLLATE "C": execution_id orders (and pages) bytewise, as in SQLite, whatever the
         * database's collation. */
        "        execution_id TEXT COLLATE \"C\" PRIMARY KEY NOT NULL,\n"
        "        session_id TEXT,\n"
        "        owner TEXT,\n"
        "        status TEXT NOT NULL,\n"
        "        error_type TEXT,\n"
        "        created_at BIGINT NOT NULL,\n"
        "        started_at BIGINT,\n"
        "        finished_at BIGINT,\n"
        "        duration_ms BIGINT NOT NULL,\n"
        "        exit_code INTEGER,\n"
        "        signal INTEGER,\n"
        "        cpu_usec BIGINT,\n"
        "        peak_memory_bytes BIGINT,\n"
        "        language TEXT NOT NULL,\n"
        "        timeout_ms BIGINT NOT NULL,\n"
        "        memory_mb BIGINT NOT NULL,\n"
        "        cpu_cores DOUBLE PRECISION NOT NULL,\n"
        "        disk_mb BIGINT NOT NULL,\n"
        "        tasks BIGINT NOT NULL,\n"
        "        unit TEXT,\n"
        "        reason TEXT,\n"
        "        fingerprint BYTEA NOT NULL CHECK (length(fingerprint) = 32),\n"
        "        stdout_bytes BIGINT NOT NULL,\n"
        "        stdout_lines BIGINT NOT NULL,\n"
        "        stdout_truncated INTEGER NOT NULL CHECK (stdout_truncated IN (0, 1)),\n"
        "        stderr_bytes BIGINT NOT NULL,\n"
        "        stderr_lines BIGINT NOT NULL,\n"
        "        stderr_truncated INTEGER NOT NULL CHECK (stderr_truncated IN (0, 1)),\n"
        "        stdout TEXT,\n"
        "        stderr TEXT,\n"
        "        code TEXT\n"
        ");\n"
        "CREATE INDEX executions_created ON executions (created_at, execution_id);\n"
        "CREATE INDEX executions_session ON executions (session_id, created_at, execution_id);\n"
        "CREATE INDEX executions_status ON executions (status, created_at, execution_id);\n"
        "CREATE INDEX executions_error ON executions (error_type, created_at, execution_id);\n"
        "CREATE INDEX executions_owner ON executions (owner, created_at, execution_id);\n"
        "CREATE INDEX executions_duration ON executions (duration_ms, execution_id);\n"
        "CREATE INDEX executions_finished ON executions (finished_at);\n",
        /* 2 */
        "ALTER TABLE executions ADD COLUMN workspace TEXT;\n"
        "ALTER TABLE executions ADD COLUMN request TEXT;\n",
        /* 3 */
        "CREATE TABLE callbacks (\n"
        "        execution_id TEXT COLLATE \"C\" PRIMARY KEY NOT NULL\n"
        "                REFERENCES executions (execution_id) ON DELETE CASCADE,\n"
        "        state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),\n"
        "        next_attempt_at BIGINT,\n"
        "        attempts BIGINT NOT NULL,\n"
        "        created_at BIGINT NOT NULL,\n"
        "        delivered_at BIGINT,\n"
        "        url TEXT NOT NULL,\n"
        "        delivery_id TEXT NOT NULL,\n"
        "        last_error TEXT,\n"
        "        body TEXT NOT NULL\n"
        ");\n"
        "CREATE INDEX callbacks_due ON callbacks (state, next_attempt_at);\n",
        /* 4 */
        "CREATE TABLE IF NOT EXISTS sessions (\n"
        "        session_id TEXT PRIMARY KEY NOT NULL,\n"
        "        owner TEXT,\n"
        "        mount_unit TEXT NOT NULL,\n"
        "        path TEXT NOT NULL,\n"
        "        disk_mb BIGINT NOT NULL,\n"
        "        created_at BIGINT NOT NULL,\n"
        "        last_used_at BIGINT NOT NULL,\n"
        "        executions BIGINT NOT NULL\n"
        ");\n",
        /* 5 */
        "ALTER TABLE executions ADD COLUMN error_message TEXT;\n",
        /* 6 */
        "CREATE TABLE artifacts (\n"
        "        execution_id TEXT COLLATE \"C\" NOT NULL,\n"
        "        path TEXT COLLATE \"C\" NOT NULL,\n"
        "        size BIGINT NOT NULL,\n"
        "        mime_type TEXT NOT NULL,\n"
        "        sha256 TEXT NOT NULL CHECK (length(sha256) = 64),\n"
        "        PRIMARY KEY (execution_id, path)\n"
        ");\n"
        "CREATE INDEX artifacts_sha256 ON artifacts (sha256);\n"
        "CREATE TABLE artifact_collections (\n"
        "        execution_id TEXT PRIMARY KEY NOT NULL,\n"
        "        skipped_total BIGINT NOT NULL,\n"
        "        skipped TEXT NOT NULL\n"
        ");\n",
        /* 7 */
        "ALTER TABLE executions ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;\n",
        /* 8: record usage per owner. The delete trigger runs BEFORE the row goes, as in SQLite: the
         * cascade that deletes the delivery cannot find the owner afterwards. */
        "CREATE TABLE record_usage (\n"
        "        owner TEXT PRIMARY KEY NOT NULL,\n"
        "        records BIGINT NOT NULL,\n"
        "        bytes BIGINT NOT NULL,\n"
        "        pending_callbacks BIGINT NOT NULL\n"
        ");\n"
        RECORD_BYTES_FUNCTION(BYTES_8)
        "INSERT INTO record_usage (owner, records, bytes, pending_callbacks)\n"
        "        SELECT owner, count(*), sum(sandboxd_record_bytes(e)), 0 FROM executions e\n"
        "        WHERE owner IS NOT NULL GROUP BY owner;\n"
        "UPDATE record_usage SET\n"
        "        bytes = bytes + (SELECT coalesce(sum(octet_length(c.body)), 0) FROM callbacks c\n"
        "                JOIN executions e USING (execution_id) WHERE e.owner = record_usage.owner),\n"
        "        pending_callbacks = (SELECT count(*) FROM callbacks c JOIN executions e USING (execution_id)\n"
        "                WHERE e.owner = record_usage.owner AND c.state = 'pending');\n"
        "CREATE FUNCTION sandboxd_record_usage_add(o text, b bigint) RETURNS void LANGUAGE sql AS $f$\n"
        "        INSERT INTO record_usage AS u (owner, records, bytes, pending_callbacks) VALUES (o, 1, b, 0)\n"
        "                ON CONFLICT (owner) DO UPDATE SET records = u.records + 1, bytes = u.bytes + excluded.bytes\n"
        "$f$;\n"
        "CREATE FUNCTION sandboxd_record_usage_insert() RETURNS trigger LANGUAGE plpgsql AS $f$\n"
        "BEGIN\n"
        "        IF NEW.owner IS NOT NULL THEN\n"
        "                PERFORM sandboxd_record_usage_add(NEW.owner, sandboxd_record_bytes(NEW));\n"
        "        END IF;\n"
        "        RETURN NULL;\n"
        "END $f$;\n"
        "CREATE FUNCTION sandboxd_record_usage_update() RETURNS trigger LANGUAGE plpgsql AS $f$\n"
        "BEGIN\n"
        "        UPDATE record_usage SET records = records - 1, bytes = bytes - sandboxd_record_bytes(OLD)\n"
        "                WHERE owner = OLD.owner;\n"
        "        IF NEW.owner IS NOT NULL THEN\n"
        "                PERFORM sandboxd_record_usage_add(NEW.owner, sandboxd_record_bytes(NEW));\n"
        "        END IF;\n"
        "        RETURN NULL;\n"
        "END $f$;\n"
        "CREATE FUNCTION sandboxd_record_usage_delete() RETURNS trigger LANGUAGE plpgsql AS $f$\n"
        "BEGIN\n"
        "        IF OLD.owner IS NOT NULL THEN\n"
        "                UPDATE record_usage SET records = records - 1,\n"
        "                        bytes = bytes - sandboxd_record_bytes(OLD) - (SELECT coalesce(sum(octet_length(body)), 0)\n"
        "                                FROM callbacks WHERE execution_id = OLD.execution_id),\n"
        "                        pending_callbacks = pending_callbacks - (SELECT count(*) FROM callbacks\n"
        "                                WHERE execution_id = OLD.execution_id AND state = 'pending')\n"
        "                        WHERE owner = OLD.owner;\n"
        "                DELETE FROM record_usage WHERE owner = OLD.owner AND records <= 0;\n"
        "        END IF;\n"
        "        RETURN OLD;\n"
        "END $f$;\n"
        "CREATE FUNCTION sandboxd_record_usage_callback_insert() RETURNS trigger LANGUAGE plpgsql AS $f$\n"
        "BEGIN\n"
        "        UPDATE record_usage SET bytes = bytes + octet_length(NEW.body),\n"
        "                pending_callbacks = pending_callbacks + (NEW.state = 'pending')::int\n"
        "                WHERE owner = (SELECT owner FROM executions WHERE execution_id = NEW.execution_id);\n"
        "        RETURN NULL;\n"
        "END $f$;\n"
        "CREATE FUNCTION sandboxd_record_usage_callback_state() RETURNS trigger LANGUAGE plpgsql AS $f$\n"
        "BEGIN\n"
        "        UPDATE record_usage SET pending_callbacks = pending_callbacks + (NEW.state = 'pending')::int\n"
        "                - (OLD.state = 'pending')::int\n"
        "                WHERE owner = (SELECT owner FROM executions WHERE execution_id = NEW.execution_id);\n"
        "        RETURN NULL;\n"
        "END $f$;\n"
        "CREATE TRIGGER record_usage_insert AFTER INSERT ON executions\n"
        "        FOR EACH ROW EXECUTE FUNCTION sandboxd_record_usage_insert();\n"
        "CREATE TRIGGER record_usage_update AFTER UPDATE ON executions\n"
        "        FOR EACH ROW EXECUTE FUNCTION sandboxd_record_usage_update();\n"
        "CREATE TRIGGER record_usage_delete BEFORE DELETE ON executions\n"
        "        FOR EACH ROW EXECUTE FUNCTION sandboxd_record_usage_delete();\n"
        "CREATE TRIGGER record_usage_callback_insert AFTER INSERT ON callbacks\n"
        "        FOR EACH ROW EXECUTE FUNCTION sandboxd_record_usage_callback_insert();\n"
        "CREATE TRIGGER record_usage_callback_state AFTER UPDATE OF state ON callbacks\n"
        "        FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)\n"
        "        EXECUTE FUNCTION sandboxd_record_usage_callback_state();\n",
        /* 9: artifact budgets. */
        "ALTER TABLE artifacts ADD COLUMN charged_bytes BIGINT NOT NULL DEFAULT 0;\n"
        "ALTER TABLE artifacts ADD COLUMN owner TEXT;\n"
        "UPDATE artifacts SET charged_bytes = size, owner = COALESCE((SELECT owner FROM executions e "
        "WHERE e.execution_id = artifacts.execution_id), '');\n"
        "CREATE TABLE artifact_usage (\n"
        "        owner TEXT PRIMARY KEY NOT NULL,\n"
        "        bytes BIGINT NOT NULL,\n"
        "        artifacts BIGINT NOT NULL\n"
        ");\n"
        "CREATE TABLE artifact_blobs (\n"
        "        sha256 TEXT PRIMARY KEY NOT NULL CHECK (length(sha256) = 64),\n"
        "        bytes BIGINT NOT NULL,\n"
        "        refs BIGINT NOT NULL\n"
        ");\n"
        "CREATE TABLE artifact_store_usage (\n"
        "        id INTEGER PRIMARY KEY CHECK (id = 0),\n"
        "        bytes BIGINT NOT NULL,\n"
        "        blobs BIGINT NOT NULL\n"
        ");\n"
        "INSERT INTO artifact_usage (owner, bytes, artifacts) "
        "SELECT owner, sum(charged_bytes), count(*) FROM artifacts GROUP BY owner;\n"
        "INSERT INTO artifact_blobs (sha256, bytes, refs) "
        "SELECT sha256, max(charged_bytes), count(*) FROM artifacts GROUP BY sha256;\n"
        "INSERT INTO artifact_store_usage (id, bytes, blobs) "
        "SELECT 0, COALESCE(sum(bytes), 0), count(*) FROM artifact_blobs;\n"
        "CREATE FUNCTION sandboxd_artifacts_charge() RETURNS trigger LANGUAGE plpgsql AS $f$\n"
        "BEGIN\n"
        "        INSERT INTO artifact_usage AS u (owner, bytes, artifacts) VALUES (NEW.owner, NEW.charged_bytes, 1)\n"
        "                ON CONFLICT (owner) DO UPDATE SET bytes = u.bytes + excluded.bytes, artifacts = u.artifacts + 1;\n"
        "        INSERT INTO artifact_blobs AS b (sha256, bytes, refs) VALUES (NEW.sha256, NEW.charged_bytes, 1)\n"
        "                ON CONFLICT (sha256) DO UPDATE SET refs = b.refs + 1;\n"
        "        RETURN NULL;\n"
        "END $f$;\n"
        "CREATE FUNCTION sandboxd_artifacts_refund() RETURNS trigger LANGUAGE plpgsql AS $f$\n"
        "BEGIN\n"
        "        UPDATE artifact_usage SET bytes = bytes - OLD.charged_bytes, artifacts = artifacts - 1\n"
        "                WHERE owner = OLD.owner;\n"
        "        DELETE FROM artifact_usage WHERE owner = OLD.owner AND artifacts <= 0;\n"
        "        UPDATE artifact_blobs SET refs = refs - 1 WHERE sha256 = OLD.sha256;\n"
        "        DELETE FROM artifact_blobs WHERE sha256 = OLD.sha256 AND refs <= 0;\n"
        "        RETURN NULL;\n"
        "END $f$;\n"
        "CREATE FUNCTION sandboxd_artifact_blobs_charge() RETURNS trigger LANGUAGE plpgsql AS $f$\n"
        "BEGIN\n"
        "        UPDATE artifact_store_usage SET bytes = bytes + NEW.bytes, blobs = blobs + 1;\n"
        "        RETURN NULL;\n"
        "END $f$;\n"
        "CREATE FUNCTION sandboxd_artifact_blobs_refund() RETURNS trigger LANGUAGE plpgsql AS $f$\n"
        "BEGIN\n"
        "        UPDATE artifact_store_usage SET bytes = bytes - OLD.bytes, blobs = blobs - 1;\n"
        "        RETURN NULL;\n"
        "END $f$;\n"
        "CREATE FUNCTION sandboxd_artifacts_immutable() RETURNS trigger LANGUAGE plpgsql AS $f$\n"
        "BEGIN\n"
        "        RAISE EXCEPTION 'artifact rows are replaced, never updated' USING ERRCODE = 'integrity_constraint_violation';\n"
        "END $f$;\n"
        "CREATE TRIGGER artifacts_charge AFTER INSERT ON artifacts\n"
        "        FOR EACH ROW EXECUTE FUNCTION sandboxd_artifacts_charge();\n"
        "CREATE TRIGGER artifacts_refund AFTER DELETE ON artifacts\n"
        "        FOR EACH ROW EXECUTE FUNCTION sandboxd_artifacts_refund();\n"
        "CREATE TRIGGER artifact_blobs_charge AFTER INSERT ON artifact_blobs\n"
        "        FOR EACH ROW EXECUTE FUNCTION sandboxd_artifact_blobs_charge();\n"
        "CREATE TRIGGER artifact_blobs_refund AFTER DELETE ON artifact_blobs\n"
        "        FOR EACH ROW EXECUTE FUNCTION sandboxd_artifact_blobs_refund();\n"
        "CREATE TRIGGER artifacts_immutable BEFORE UPDATE OF charged_bytes, owner, sha256 ON artifacts\n"
        "        FOR EACH ROW EXECUTE FUNCTION sandboxd_artifacts_immutable();\n",
        /* 10 */
        "ALTER TABLE executions ADD COLUMN client_id TEXT;\n"
        "ALTER TABLE sessions ADD COLUMN client_id TEXT;\n",
        /* 11 */
        "ALTER TABLE executions ADD COLUMN start TEXT;\n",
        /* 12 */
        "ALTER TABLE executions ADD COLUMN network TEXT;\n"
        RECORD_BYTES_FUNCTION(BYTES_12),
        /* 13 */
        "ALTER TABLE executions ADD COLUMN environment TEXT;\n",
        /* 14 */
        "ALTER TABLE executions ADD COLUMN summary TEXT;\n"
        RECORD_BYTES_FUNCTION(BYTES_14),
        /* 15 */
        "ALTER TABLE executions ADD COLUMN isolation TEXT;\n"
        RECORD_BYTES_FUNCTION(BYTES_15),
        /* 16: COLLATE "C" so that the list orders by name bytewise, as in SQLite. */
        "CREATE TABLE nodes (\n"
        "        node_name TEXT COLLATE \"C\" PRIMARY KEY NOT NULL,\n"
        "        epoch BIGINT NOT NULL CHECK (epoch >= 1),\n"
        "        started_usec BIGINT NOT NULL,\n"
        "        heartbeat_usec BIGINT NOT NULL,\n"
        "        lease_expires_usec BIGINT NOT NULL,\n"
        "        slots BIGINT NOT NULL,\n"
        "        running BIGINT NOT NULL\n"
        ");\n",
        /* 17 */
        "ALTER TABLE executions ADD COLUMN node TEXT, ADD COLUMN node_epoch BIGINT,\n"
        "        ADD COLUMN attempt BIGINT NOT NULL DEFAULT 1;\n"
        "CREATE INDEX executions_node ON executions (node, status) WHERE node IS NOT NULL;\n",
        /* 18 */
        "ALTER TABLE sessions ADD COLUMN node TEXT;\n",
};

_Static_assert(ELEMENTSOF(pg_migrations) == STORE_SCHEMA_VERSION, "one migration per schema version");
