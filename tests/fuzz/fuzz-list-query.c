/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The list query, both spellings: the input as ListExecutions' JSON object (list_query_json_parse(),
 * then list_query_parse() over list_query_json_get()), and the same input as GET /v1/executions'
 * query string, "k=v&k=v" (list_query_parse() over those pairs). A cursor the parser passes is
 * decoded as the store would (store_cursor_parse()), and one it decodes formats back to itself. */

#include "api/list-query.h"
#include "fuzz.h"
#include "store/store-internal.h"
#include "store/store.h"
#include "util.h"

#define PAIRS_MAX 16

typedef struct Pairs {
        char *keys[PAIRS_MAX], *values[PAIRS_MAX];
        size_t n;
} Pairs;

static const char *pairs_get(void *userdata, const char *key) {
        Pairs *p = userdata;

        /* The first, as libmicrohttpd's MHD_lookup_connection_value() answers. */
        for (size_t i = 0; i < p->n; i++)
                if (streq(p->keys[i], key))
                        return p->values[i];
        return NULL;
}

static void check_query(const StoreQuery *q) {
        StoreCursor c;

        fuzz_check(q->limit >= 1 && q->limit <= STORE_LIST_MAX);
        fuzz_check(q->order == STORE_ORDER_CREATED_AT || q->order == STORE_ORDER_DURATION_MS);
        fuzz_check(q->status >= -1 && q->status < _EXEC_STATUS_MAX);
        fuzz_check(q->error_type >= -1 && q->error_type < _ERROR_TYPE_MAX);
        if (q->cursor && store_cursor_parse(q->cursor, &c) >= 0) {
                _cleanup_free_ char *again = NULL;

                fuzz_check(store_cursor_format(&c, &again) >= 0);
                fuzz_check(streq(again, q->cursor));
        }
}

static void fuzz_json(const uint8_t *data, size_t size) {
        StoreQuery q = STORE_QUERY_INIT;
        ListQueryJson l;
        RequestError err;
        int r;

        r = list_query_json_parse((const char *) data, size, &l, &err);
        if (r < 0) {
                fuzz_check(!l.object);
                return;
        }
        if (list_query_parse(list_query_json_get, &l, &q, &err) >= 0)
                check_query(&q);
        list_query_json_done(&l);
}

static void fuzz_query_string(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = fuzz_text(data, size);
        StoreQuery q = STORE_QUERY_INIT;
        RequestError err;
        Pairs p = {};
        char *save = NULL;

        for (char *kv = strtok_r(text, "&", &save); kv && p.n < PAIRS_MAX; kv = strtok_r(NULL, "&", &save)) {
                char *eq = strchr(kv, '=');

                if (eq)
                        *eq++ = 0;
                p.keys[p.n] = kv;
                p.values[p.n++] = eq ?: (char *) "";
        }
        if (list_query_parse(pairs_get, &p, &q, &err) >= 0)
                check_query(&q);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        fuzz_json(data, size);
        fuzz_query_string(data, size);
        return 0;
}
