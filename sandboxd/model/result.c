/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <time.h>

#include "result.h"
#include "summary.h"
#include "time-util.h"

void format_timestamp(uint64_t usec, char *buf, size_t size) {
        time_t t = (time_t) (usec / USEC_PER_SEC);
        struct tm tm;

        if (!gmtime_r(&t, &tm)) {
                snprintf(buf, size, "invalid");
                return;
        }
        snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                 tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned) ((usec / USEC_PER_MSEC) % MSEC_PER_SEC));
}

static json_object *str_or_null(const char *s) {
        return s ? json_object_new_string(s) : NULL;
}

static json_object *time_or_null(uint64_t usec) {
        char buf[64];

        if (usec == 0)
                return NULL;
        format_timestamp(usec, buf, sizeof(buf));
        return json_object_new_string(buf);
}

static void add_stream(json_object *o, const char *name, const OutputStream *s, bool final) {
        char key[32];

        json_object_object_add(o, name, final ? json_object_new_string(s->text ?: "") : NULL);
        snprintf(key, sizeof(key), "%s_bytes", name);
        json_object_object_add(o, key, final ? json_object_new_uint64(s->bytes) : NULL);
        snprintf(key, sizeof(key), "%s_lines", name);
        json_object_object_add(o, key, final ? json_object_new_uint64(s->lines) : NULL);
        snprintf(key, sizeof(key), "%s_truncated", name);
        json_object_object_add(o, key, final ? json_object_new_boolean(s->truncated) : NULL);
}

/* MiB with one decimal, rounded down. Serialised as written ("9.4"): json-c prints a plain double
 * with %.17g, i.e. 9.4000000000000004. */
static json_object *peak_memory_mb(uint64_t bytes) {
        uint64_t tenths = bytes / (1024 * 1024) * 10 + bytes % (1024 * 1024) * 10 / (1024 * 1024);
        char buf[32];

        snprintf(buf, sizeof(buf), "%" PRIu64 ".%" PRIu64, tenths / 10, tenths % 10);
        return json_object_new_double_s((double) tenths / 10.0, buf);
}

/* null until final; then the list ([] when nothing was collected) and what was skipped. */
static void add_artifacts(json_object *o, const ExecArtifacts *a, bool final) {
        json_object *l, *s;

        if (!final) {
                json_object_object_add(o, "artifacts", NULL);
                json_object_object_add(o, "artifacts_skipped", NULL);
                json_object_object_add(o, "artifacts_skipped_total", NULL);
                return;
        }
        l = json_object_new_array();
        s = json_object_new_array();
        for (size_t i = 0; a && i < a->n_items; i++) {
                const ExecArtifact *x = &a->items[i];
                json_object *e = json_object_new_object();

                json_object_object_add(e, "path", json_object_new_string(x->path));
                json_object_object_add(e, "size", json_object_new_uint64(x->size));
                json_object_object_add(e, "mime_type", json_object_new_string(x->mime_type));
                json_object_object_add(e, "sha256", json_object_new_string(x->sha256));
                json_object_array_add(l, e);
        }
        for (size_t i = 0; a && i < a->n_skipped; i++) {
                json_object *e = json_object_new_object();

                json_object_object_add(e, "path", json_object_new_string(a->skipped[i].path));
                json_object_object_add(e, "reason", json_object_new_string(a->skipped[i].reason));
                json_object_array_add(s, e);
        }
        json_object_object_add(o, "artifacts", l);
        json_object_object_add(o, "artifacts_skipped", s);
        json_object_object_add(o, "artifacts_skipped_total", json_object_new_uint64(a ? a->n_skipped_total : 0));
}

json_object *execution_to_json(const Execution *e) {
        json_object *o = json_object_new_object(), *l;
        bool final = exec_status_is_final(e->status);

        if (!o)
                return NULL;
        json_object_object_add(o, "execution_id", json_object_new_string(execution_public_id(e)));
        /* Unique across callers: what unit names, journal fields and artifact URLs use. */
        json_object_object_add(o, "record_id", json_object_new_string(e->id));
        json_object_object_add(o, "session_id", str_or_null(e->session_id));
        json_object_object_add(o, "language", str_or_null(e->language));
        json_object_object_add(o, "status", json_object_new_string(exec_status_to_string(e->status)));
        json_object_object_add(o, "error_type", str_or_null(error_type_to_string(e->error_type)));
        json_object_object_add(o, "exit_code", final && e->exit_code >= 0 ? json_object_new_int(e->exit_code) : NULL);
        json_object_object_add(o, "signal", final && e->signal > 0 ? json_object_new_int(e->signal) : NULL);
        add_stream(o, "stdout", &e->out, final);
        add_stream(o, "stderr", &e->err, final);
        json_object_object_add(o, "duration_ms", final && e->started_usec ? json_object_new_uint64(e->duration_ms) : NULL);
        json_object_object_add(o, "cpu_time_ms", final && e->have_cpu ? json_object_new_uint64(e->cpu_usec / USEC_PER_MSEC) : NULL);
        json_object_object_add(o, "peak_memory_mb", final && e->have_peak ? peak_memory_mb(e->peak_memory_bytes) : NULL);
        json_object_object_add(o, "created_at", time_or_null(e->created_usec));
        json_object_object_add(o, "started_at", time_or_null(e->started_usec));
        json_object_object_add(o, "finished_at", time_or_null(e->finished_usec));

        l = json_object_new_object();
        json_object_object_add(l, "timeout_ms", json_object_new_uint64(e->limits.timeout_ms));
        json_object_object_add(l, "memory_mb", json_object_new_uint64(e->limits.memory_mb));
        json_object_object_add(l, "cpu_cores", json_object_new_double(e->limits.cpu_cores));
        json_object_object_add(l, "disk_mb", json_object_new_uint64(e->limits.disk_mb));
        json_object_object_add(l, "tasks", json_object_new_uint64(e->limits.tasks));
        json_object_object_add(o, "limits", l);

        json_object_object_add(o, "unit", str_or_null(e->unit));
        /* Several nodes (issue 22): which one took it, and whether it ran before on a node lost. */
        json_object_object_add(o, "node", str_or_null(e->node));
        json_object_object_add(o, "attempt", json_object_new_int((int) MAX(e->attempt, 1U)));
        json_object_object_add(o, "start", str_or_null(exec_start_path_to_string(e->start)));
        json_object_object_add(o, "reason", str_or_null(e->reason));
        json_object_object_add(o, "error_message", str_or_null(e->error_message));
        add_artifacts(o, e->artifacts, final);
        json_object_object_add(o, "network", e->network ? net_log_to_json(e->network, false) : NULL);
        json_object_object_add(o, "environment", str_or_null(e->environment));
        /* Our own JSON (isolation_to_json()); a row that does not parse shows null. */
        json_object_object_add(o, "isolation", e->isolation ? json_tokener_parse(e->isolation) : NULL);
        /* A record stored before summaries has none: made here from what it holds, the same way. */
        if (final) {
                _cleanup_free_ char *made = e->summary ? NULL : summary_build(e);

                json_object_object_add(o, "summary", str_or_null(e->summary ?: made));
        } else
                json_object_object_add(o, "summary", NULL);
        if (e->n_args > 0) {
                json_object *a = json_object_new_array_ext((int) e->n_args);

                for (size_t i = 0; a && i < e->n_args; i++)
                        json_object_array_add(a, json_object_new_string(e->args[i]));
                json_object_object_add(o, "args", a);
        }
        if (e->stdin_bytes > 0)
                json_object_object_add(o, "stdin_bytes", json_object_new_uint64(e->stdin_bytes));
        return o;
}
