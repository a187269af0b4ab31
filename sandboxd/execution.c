/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "execution.h"

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
        free(e->session_id);
        free(e->out.text);
        free(e->err.text);
        free(e->unit);
        free(e->error_message);
        free(e);
        return NULL;
}
