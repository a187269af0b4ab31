/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Rows ⇄ records, the part every backend shares: a backend reads a row of executions into a
 * StoreRow (text per column) and this turns it into a StoreRecord, with the same checks whichever
 * database the row came from. Also the JSON texts some columns hold. */

#include <limits.h>
#include <json-c/json.h>

#include "model/request.h"
#include "store-internal.h"

int store_column_u64(const char *t, uint64_t *ret, bool *ret_have) {
        char *end = NULL;
        long long v;

        if (!t) {
                if (!ret_have)
                        return -EBADMSG;
                *ret_have = false;
                *ret = 0;
                return 0;
        }
        errno = 0;
        v = strtoll(t, &end, 10);
        if (errno != 0 || end == t || *end != 0 || v < 0)
                return -EBADMSG;
        *ret = (uint64_t) v;
        if (ret_have)
                *ret_have = true;
        return 0;
}

static int row_u64(const StoreRow *row, int col, uint64_t *ret, bool *ret_have) {
        return store_column_u64(row->text[col], ret, ret_have);
}

static int row_int(const StoreRow *row, int col, int null_value, int *ret) {
        const char *t = row->text[col];
        char *end = NULL;
        long long v;

        if (!t) {
                *ret = null_value;
                return 0;
        }
        errno = 0;
        v = strtoll(t, &end, 10);
        if (errno != 0 || end == t || *end != 0 || v < INT32_MIN || v > INT32_MAX)
                return -EBADMSG;
        *ret = (int) v;
        return 0;
}

static int row_bool(const StoreRow *row, int col, bool *ret) {
        int v = 0;
        int k = row_int(row, col, 0, &v);

        if (k < 0)
                return k;
        *ret = v != 0;
        return 0;
}

static int row_strdup(const StoreRow *row, int col, char **ret) {
        if (!row->text[col]) {
                *ret = NULL;
                return 0;
        }
        *ret = strdup(row->text[col]);
        return *ret ? 0 : -ENOMEM;
}

int store_record_from_row(const StoreRow *row, StoreRecord **ret) {
        _cleanup_(store_record_freep) StoreRecord *r = NULL;
        Execution *e;
        bool have;
        int k;

        if (!row->text[STORE_COL_ID])
                return -EBADMSG;
        r = store_record_new(row->text[STORE_COL_ID]);
        if (!r)
                return -ENOMEM;
        e = r->exec;

#define C(x)                                    \
        do {                                    \
                k = (x);                        \
                if (k < 0)                      \
                        return k;               \
        } while (0)
        C(row_strdup(row, STORE_COL_SESSION, &e->session_id));
        C(row_strdup(row, STORE_COL_CLIENT_ID, &e->client_id));
        e->start = exec_start_path_from_string(row->text[STORE_COL_START]);
        C(row_strdup(row, STORE_COL_OWNER, &r->owner));

        e->status = exec_status_from_string(row->text[STORE_COL_STATUS]);
        if (e->status < 0)
                return -EBADMSG;
        if (!row->text[STORE_COL_ERROR_TYPE])
                e->error_type = ERROR_NONE;
        else {
                e->error_type = error_type_from_string(row->text[STORE_COL_ERROR_TYPE]);
                if (e->error_type <= ERROR_NONE)
                        return -EBADMSG;
        }

        C(row_u64(row, STORE_COL_CREATED, &e->created_usec, NULL));
        C(row_u64(row, STORE_COL_STARTED, &e->started_usec, &have));
        C(row_u64(row, STORE_COL_FINISHED, &e->finished_usec, &have));
        C(row_u64(row, STORE_COL_DURATION, &e->duration_ms, NULL));
        C(row_int(row, STORE_COL_EXIT_CODE, -1, &e->exit_code));
        C(row_int(row, STORE_COL_SIGNAL, 0, &e->signal));
        C(row_u64(row, STORE_COL_CPU, &e->cpu_usec, &e->have_cpu));
        C(row_u64(row, STORE_COL_PEAK, &e->peak_memory_bytes, &e->have_peak));

        if (!row->text[STORE_COL_LANGUAGE])
                return -EBADMSG;
        e->language = store_intern_language(row->text[STORE_COL_LANGUAGE]);

        C(row_u64(row, STORE_COL_TIMEOUT, &e->limits.timeout_ms, NULL));
        C(row_u64(row, STORE_COL_MEMORY, &e->limits.memory_mb, NULL));
        e->limits.cpu_cores = row->cpu_cores;
        C(row_u64(row, STORE_COL_DISK, &e->limits.disk_mb, NULL));
        C(row_u64(row, STORE_COL_TASKS, &e->limits.tasks, NULL));
        C(row_strdup(row, STORE_COL_UNIT, &e->unit));
        if (row->text[STORE_COL_REASON])
                e->reason = store_intern_reason(row->text[STORE_COL_REASON]);

        if (!row->fingerprint || row->fingerprint_size != sizeof(r->fingerprint))
                return -EBADMSG;
        memcpy(r->fingerprint, row->fingerprint, sizeof(r->fingerprint));

        C(row_u64(row, STORE_COL_OUT_BYTES, &e->out.bytes, NULL));
        C(row_u64(row, STORE_COL_OUT_LINES, &e->out.lines, NULL));
        C(row_bool(row, STORE_COL_OUT_TRUNCATED, &e->out.truncated));
        C(row_u64(row, STORE_COL_ERR_BYTES, &e->err.bytes, NULL));
        C(row_u64(row, STORE_COL_ERR_LINES, &e->err.lines, NULL));
        C(row_bool(row, STORE_COL_ERR_TRUNCATED, &e->err.truncated));
        C(row_strdup(row, STORE_COL_OUT, &e->out.text));
        C(row_strdup(row, STORE_COL_ERR, &e->err.text));
        C(row_strdup(row, STORE_COL_CODE, &r->code));
        C(row_strdup(row, STORE_COL_WORKSPACE, &r->workspace));
        C(row_strdup(row, STORE_COL_REQUEST, &r->request));
        C(row_strdup(row, STORE_COL_ERROR_MESSAGE, &e->error_message));
        C(row_strdup(row, STORE_COL_ENVIRONMENT, &e->environment));
        C(row_strdup(row, STORE_COL_SUMMARY, &e->summary));
        C(row_strdup(row, STORE_COL_ISOLATION, &e->isolation));
        C(row_strdup(row, STORE_COL_NODE, &e->node));
        C(row_u64(row, STORE_COL_NODE_EPOCH, &e->node_epoch, &have));
        {
                uint64_t attempt = 1;

                C(row_u64(row, STORE_COL_ATTEMPT, &attempt, &have));
                if (attempt < 1 || attempt > UINT_MAX)
                        return -EBADMSG;
                e->attempt = (unsigned) attempt;
        }
        C(request_args_from_json(r->request, &e->args, &e->n_args, &e->stdin_bytes));
        C(row_bool(row, STORE_COL_CANCEL_REQUESTED, &e->cancel_requested));
        if (row->text[STORE_COL_NETWORK]) {
                int q = net_log_from_json(row->text[STORE_COL_NETWORK], &e->network);

                if (q == -ENOMEM)
                        return q;
                /* Not valid (written by nothing but us): the record without its log. */
        }
#undef C

        *ret = TAKE_PTR(r);
        return 0;
}

int store_network_to_json(const Execution *e, char **ret) {
        json_object *o;
        char *t;

        if (!e->network) {
                *ret = NULL;
                return 0;
        }
        o = net_log_to_json(e->network, true);
        if (!o)
                return -ENOMEM;
        t = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_object_put(o);
        if (!t)
                return -ENOMEM;
        *ret = t;
        return 0;
}

int store_skipped_to_json(const ExecArtifacts *a, char **ret) {
        json_object *l = json_object_new_array();
        char *t;

        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < a->n_skipped; i++) {
                json_object *e = json_object_new_object();

                json_object_object_add(e, "path", json_object_new_string(a->skipped[i].path));
                json_object_object_add(e, "reason", json_object_new_string(a->skipped[i].reason));
                json_object_array_add(l, e);
        }
        t = strdup(json_object_to_json_string_ext(l, JSON_C_TO_STRING_PLAIN));
        json_object_put(l);
        if (!t)
                return -ENOMEM;
        *ret = t;
        return 0;
}

int store_skipped_from_json(ExecArtifacts *a, const char *text) {
        json_object *l = text ? json_tokener_parse(text) : NULL;
        int r = 0;

        for (size_t i = 0; l && json_object_is_type(l, json_type_array) && i < json_object_array_length(l) && r >= 0;
             i++) {
                json_object *e = json_object_array_get_idx(l, i), *p = NULL, *why = NULL;

                if (!json_object_object_get_ex(e, "path", &p) || !json_object_object_get_ex(e, "reason", &why))
                        continue;
                r = exec_artifacts_add_skip(a, json_object_get_string(p) ?: "", json_object_get_string(why) ?: "");
        }
        json_object_put(l);
        return r;
}
