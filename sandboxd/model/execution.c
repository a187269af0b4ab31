/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "execution.h"
#include "strv.h"
#include "string-table.h"

static const char *const exec_start_path_table[_START_MAX] = {
        [START_WARM] = "warm",
        [START_COLD] = "cold",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(exec_start_path, ExecStartPath);

ExecStartPath exec_start_path_from_string(const char *s) {
        ssize_t i = s ? string_table_lookup(exec_start_path_table, ELEMENTSOF(exec_start_path_table), s) : -EINVAL;

        return i < 0 ? START_UNKNOWN : (ExecStartPath) i;
}

Execution *execution_new(const char *id) {
        Execution *e = calloc(1, sizeof(Execution));

        if (!e)
                return NULL;
        e->id = strdup(id);
        if (!e->id)
                return mfree(e);
        e->status = EXEC_QUEUED;
        e->error_type = ERROR_NONE;
        e->exit_code = -1;
        return e;
}

Execution *execution_free(Execution *e) {
        if (!e)
                return NULL;
        free(e->id);
        free(e->client_id);
        free(e->session_id);
        free(e->out.text);
        free(e->err.text);
        free(e->unit);
        free(e->error_message);
        free(e->environment);
        free(e->isolation);
        free(e->node);
        free(e->summary);
        strv_free(e->args);
        exec_artifacts_free(e->artifacts);
        net_log_free(e->network);
        free(e);
        return NULL;
}

ExecArtifacts *exec_artifacts_new(void) {
        return calloc(1, sizeof(ExecArtifacts));
}

ExecArtifacts *exec_artifacts_free(ExecArtifacts *a) {
        if (!a)
                return NULL;
        for (size_t i = 0; i < a->n_items; i++) {
                free(a->items[i].path);
                free(a->items[i].mime_type);
        }
        free(a->items);
        for (size_t i = 0; i < a->n_skipped; i++) {
                free(a->skipped[i].path);
                free(a->skipped[i].reason);
        }
        free(a->skipped);
        free(a);
        return NULL;
}

int exec_artifacts_add(ExecArtifacts *a, const char *path, uint64_t size, const char *mime_type, const char *sha256) {
        ExecArtifact *n, *x;

        if (strlen(sha256) != 64)
                return -EINVAL;
        n = reallocarray(a->items, a->n_items + 1, sizeof(ExecArtifact));
        if (!n)
                return -ENOMEM;
        a->items = n;
        x = &n[a->n_items];
        *x = (ExecArtifact) { .path = strdup(path), .size = size, .charged_bytes = size,
                              .mime_type = strdup(mime_type) };
        if (!x->path || !x->mime_type) {
                free(x->path);
                free(x->mime_type);
                return -ENOMEM;
        }
        memcpy(x->sha256, sha256, 65);
        a->n_items++;
        return 0;
}

int exec_artifacts_add_skip(ExecArtifacts *a, const char *path, const char *reason) {
        ExecArtifactSkip *n, *x;

        n = reallocarray(a->skipped, a->n_skipped + 1, sizeof(ExecArtifactSkip));
        if (!n)
                return -ENOMEM;
        a->skipped = n;
        x = &n[a->n_skipped];
        *x = (ExecArtifactSkip) { .path = strdup(path), .reason = strdup(reason) };
        if (!x->path || !x->reason) {
                free(x->path);
                free(x->reason);
                return -ENOMEM;
        }
        a->n_skipped++;
        return 0;
}
