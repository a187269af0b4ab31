/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "store-test-util.h"
#include "time-util.h"

/* ---- round trips ---- */

static void test_roundtrip_full(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *r = record_full("exec_20251130_0a1b2c3d4e5f6789");

        assert_int_equal(store_put(s, r), 0);
        get_equal(s, r);
        assert_int_equal(count(s), 1);

        /* And from the file, after a restart. */
        s = store_close(s);
        s = open_ok();
        get_equal(s, r);
}

static void test_roundtrip_nulls(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *r = store_record_new("exec_2");
        _cleanup_(store_record_freep) StoreRecord *got = NULL;

        /* A queued execution: nothing known yet beyond the request. */
        assert_non_null(r);
        r->exec->language = "bash";
        r->exec->created_usec = BASE_USEC;
        r->exec->limits = (Limits) { 100, 16, 0.01, 1, 4 };
        assert_int_equal(store_put(s, r), 0);

        assert_int_equal(store_get(s, "exec_2", &got), 0);
        assert_record_equal(r, got);
        assert_null(got->exec->session_id);
        assert_int_equal(got->exec->status, EXEC_QUEUED);
        assert_int_equal(got->exec->error_type, ERROR_NONE);
        assert_int_equal(got->exec->exit_code, -1);
        assert_int_equal(got->exec->signal, 0);
        assert_false(got->exec->have_peak);
        assert_false(got->exec->have_cpu);
        assert_int_equal(got->exec->started_usec, 0);
        assert_int_equal(got->exec->finished_usec, 0);
        assert_null(got->exec->out.text);
        assert_null(got->exec->unit);
        assert_null(got->exec->reason);
        assert_null(got->code);
        assert_null(got->owner);
}

/* The two static strings of an Execution come back as strings with the process's lifetime, also
 * for values this binary does not know (a language removed since, a reason from a newer build). */
static void test_static_strings(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *r = record_full("exec_3");
        _cleanup_(store_record_freep) StoreRecord *got = NULL, *got2 = NULL;

        r->exec->language = "cobol";
        r->exec->reason = "a reason from the future";
        assert_int_equal(store_put(s, r), 0);
        assert_int_equal(store_get(s, "exec_3", &got), 0);
        assert_record_equal(r, got);
        assert_int_equal(store_get(s, "exec_3", &got2), 0);
        assert_ptr_equal(got->exec->reason, got2->exec->reason);   /* interned once */
        assert_ptr_equal(got->exec->language, got2->exec->language);
}

static void test_update_transition(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *r = record_full("exec_t");
        _cleanup_(store_record_freep) StoreRecord *got = NULL;
        Execution *e = r->exec;

        /* queued → running → success, as the job writes them. */
        e->status = EXEC_QUEUED;
        e->error_type = ERROR_NONE;
        e->exit_code = -1;
        e->signal = 0;
        e->started_usec = e->finished_usec = 0;
        e->have_cpu = e->have_peak = false;
        e->cpu_usec = e->peak_memory_bytes = 0;
        e->out = (OutputStream) { .text = mfree(e->out.text) };
        e->err = (OutputStream) { .text = mfree(e->err.text) };
        e->reason = NULL;
        assert_int_equal(store_put(s, r), 0);
        get_equal(s, r);

        e->status = EXEC_RUNNING;
        e->started_usec = BASE_USEC + 500;
        assert_int_equal(store_put(s, r), 0);
        get_equal(s, r);

        /* A cancel once asked stays asked: a later write that does not carry the flag (a node that
         * has not read it yet, while another set it) does not clear it. */
        e->cancel_requested = true;
        assert_int_equal(store_put(s, r), 0);
        e->cancel_requested = false;
        assert_int_equal(store_put(s, r), 0);
        assert_int_equal(store_get(s, "exec_t", &got), 0);
        assert_true(got->exec->cancel_requested);
        got = store_record_free(got);
        e->cancel_requested = true;
        get_equal(s, r);

        /* The job has dropped the code and does not repeat the owner: both stay as stored. */
        e->status = EXEC_SUCCESS;
        e->exit_code = 0;
        e->finished_usec = BASE_USEC + 900;
        e->duration_ms = 400;
        e->have_cpu = true;
        e->cpu_usec = 1000;
        e->out = (OutputStream) { strdup("ok\n"), 3, 1, false };
        e->reason = "program exited with status 0";
        _cleanup_free_ char *code = TAKE_PTR(r->code);
        _cleanup_free_ char *owner = TAKE_PTR(r->owner);
        assert_int_equal(store_put(s, r), 0);

        assert_int_equal(store_get(s, "exec_t", &got), 0);
        assert_int_equal(got->exec->status, EXEC_SUCCESS);
        assert_string_equal(got->code, code);
        assert_string_equal(got->owner, owner);
        r->code = TAKE_PTR(code);
        r->owner = TAKE_PTR(owner);
        assert_record_equal(r, got);
        assert_int_equal(count(s), 1);
}

/* A run with network: its allow list and log come back as they went in; without, none. */
static void test_network_log(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *r = record_full("exec_net"), *got = NULL, *plain = NULL;
        char *const allow[] = { "pypi.org", "*.pythonhosted.org" };
        NetLogEntry e = { .host = "pypi.org", .port = 443, .method = "CONNECT", .decision = NET_DECISION_ALLOWED,
                          .address = "151.101.0.223", .bytes_up = 517, .bytes_down = 6033,
                          .started_usec = BASE_USEC + 123456, .duration_ms = 42 };
        NetLogEntry d = { .host = "evil.com", .port = 80, .method = "GET", .decision = NET_DECISION_DENIED,
                          .reason = "not in the allowlist", .started_usec = BASE_USEC + 7 };

        r->exec->network = net_log_new(allow, 2);
        assert_non_null(r->exec->network);
        assert_int_equal(net_log_append(r->exec->network, &e, 2), 0);
        assert_int_equal(net_log_append(r->exec->network, &d, 2), 0);
        assert_int_equal(net_log_append(r->exec->network, &d, 2), 0);      /* counted, not kept */
        assert_int_equal(net_log_set_note(r->exec->network, "proxy protocol error"), 0);
        assert_int_equal(store_put(s, r), 0);
        assert_int_equal(store_get(s, "exec_net", &got), 0);
        assert_non_null(got->exec->network);
        assert_int_equal(got->exec->network->n_allow, 2);
        assert_string_equal(got->exec->network->allow[1], "*.pythonhosted.org");
        assert_int_equal(got->exec->network->n_entries, 2);
        assert_int_equal(got->exec->network->requests_total, 3);
        assert_string_equal(got->exec->network->note, "proxy protocol error");
        assert_memory_equal(&got->exec->network->entries[0], &e, sizeof(e));
        assert_memory_equal(&got->exec->network->entries[1], &d, sizeof(d));

        plain = record_full("exec_plain");
        assert_int_equal(store_put(s, plain), 0);
        plain = store_record_free(plain);
        assert_int_equal(store_get(s, "exec_plain", &plain), 0);
        assert_null(plain->exec->network);
}

static void test_invalid_arguments(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *r = record_full("exec_ok");
        StoreRecord *got = NULL;
        char *saved;

        assert_int_equal(store_get(s, "exec_missing", &got), -ENOENT);
        assert_int_equal(store_get(s, "../../etc/passwd", &got), -ENOENT);
        assert_null(got);

        r->exec->status = 77;
        assert_int_equal(store_put(s, r), -EINVAL);
        r->exec->status = EXEC_SUCCESS;
        r->exec->error_type = -3;
        assert_int_equal(store_put(s, r), -EINVAL);
        r->exec->error_type = ERROR_NONE;
        r->exec->limits.memory_mb = UINT64_MAX;   /* would wrap in a signed column */
        assert_int_equal(store_put(s, r), -EINVAL);
        r->exec->limits.memory_mb = 512;
        saved = r->exec->id;
        r->exec->id = (char *) "bad id'; DROP TABLE executions; --";
        assert_int_equal(store_put(s, r), -EINVAL);
        r->exec->id = saved;
        assert_int_equal(store_put(NULL, r), -EINVAL);
        assert_int_equal(store_put(s, NULL), -EINVAL);
        assert_int_equal(count(s), 0);
        assert_int_equal(store_put(s, r), 0);
        assert_int_equal(count(s), 1);
}

/* ---- listing ---- */

#define N_ROWS 250

typedef struct Row {
        char id[16];
        char session[16];
        const char *owner;
        int status, error_type;
        uint64_t created, duration;
} Row;

static Row rows[N_ROWS];

/* Ids are a permutation of the insertion order and both keys have many ties, so the tie-break on
 * execution_id is really exercised. */
static void fill_rows(Store *s) {
        static const int status_of[10] = {
                EXEC_QUEUED, EXEC_RUNNING, EXEC_SUCCESS, EXEC_SUCCESS, EXEC_SUCCESS,
                EXEC_SUCCESS, EXEC_SUCCESS, EXEC_FAILED, EXEC_FAILED, EXEC_CANCELLED,
        };
        static const char *const owners[3] = { "uid:0", "key:ci", NULL };

        for (unsigned i = 0; i < N_ROWS; i++) {
                Row *w = rows + i;
                _cleanup_(store_record_freep) StoreRecord *r = NULL;

                (void) snprintf(w->id, sizeof(w->id), "exec_%03u", (i * 97) % N_ROWS);
                if (i % 5 == 4)
                        w->session[0] = 0;
                else
                        (void) snprintf(w->session, sizeof(w->session), "sess_%u", i % 5);
                w->owner = owners[i % 3];
                w->status = status_of[i % 10];
                w->error_type = w->status == EXEC_FAILED ? (int) (ERROR_COMPILE + (i / 10) % 6) : ERROR_NONE;
                w->created = BASE_USEC + (i / 4) * 1000;
                w->duration = (i * 37) % 23;

                r = store_record_new(w->id);
                assert_non_null(r);
                r->exec->session_id = w->session[0] ? strdup(w->session) : NULL;
                r->exec->language = "python";
                r->exec->status = w->status;
                r->exec->error_type = w->error_type;
                r->exec->created_usec = w->created;
                r->exec->duration_ms = w->duration;
                r->exec->finished_usec = exec_status_is_final(w->status) ? w->created + w->duration * 1000 : 0;
                r->owner = w->owner ? strdup(w->owner) : NULL;
                r->exec->out = (OutputStream) { strf("output of %s\n", w->id), 10, 1, false };
                assert_int_equal(store_put(s, r), 0);
        }
}

static StoreOrder sort_order;

static int row_cmp(const void *a, const void *b) {
        const Row *x = *(const Row *const *) a, *y = *(const Row *const *) b;
        uint64_t kx = sort_order == STORE_ORDER_CREATED_AT ? x->created : x->duration;
        uint64_t ky = sort_order == STORE_ORDER_CREATED_AT ? y->created : y->duration;

        /* Descending key, then descending id. */
        if (kx != ky)
                return kx < ky ? 1 : -1;
        return -strcmp(x->id, y->id);
}

static bool row_matches(const Row *w, const StoreQuery *q) {
        if (q->session_id && !streq(q->session_id, w->session))
                return false;
        if (q->owner && !streq_ptr(q->owner, w->owner))
                return false;
        if (q->status >= 0 && w->status != q->status)
                return false;
        if (q->error_type >= 0 && w->error_type != q->error_type)
                return false;
        if (q->failed && w->status != EXEC_FAILED)
                return false;
        return true;
}

/* Page through q and compare with the expected sequence: every matching row exactly once, in
 * order, the last page without a cursor. */
static void check_paging(Store *s, StoreQuery q) {
        const Row *want[N_ROWS];
        size_t n_want = 0, seen = 0, pages = 0;
        _cleanup_free_ char *cursor = NULL;

        for (size_t i = 0; i < N_ROWS; i++)
                if (row_matches(rows + i, &q))
                        want[n_want++] = rows + i;
        sort_order = q.order;
        qsort(want, n_want, sizeof(want[0]), row_cmp);

        for (;;) {
                StoreRecord **l = NULL;
                size_t n = 0;
                char *next = NULL;

                q.cursor = cursor;
                assert_int_equal(store_list(s, &q, &l, &n, &next), 0);
                assert_true(n <= q.limit);
                for (size_t i = 0; i < n; i++) {
                        if (seen >= n_want || !streq(l[i]->exec->id, want[seen]->id)) {
                                print_error("page %zu row %zu: got %s, want %s\n", pages, i, l[i]->exec->id,
                                            seen < n_want ? want[seen]->id : "(end)");
                                fail();
                        }
                        seen++;
                }
                store_records_free(l, n);
                pages++;
                free(cursor);
                cursor = next;
                if (!next) {
                        /* Only the last page is short; a full page is last only when nothing is left. */
                        assert_int_equal(seen, n_want);
                        break;
                }
                assert_int_equal(n, q.limit);
                assert_true(pages <= N_ROWS + 1);
        }
        assert_int_equal(pages, n_want == 0 ? 1 : (n_want + q.limit - 1) / q.limit);
}

static void test_list_paging(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        static const char *const sessions[] = { NULL, "sess_1", "sess_9" };
        static const int statuses[] = { -1, EXEC_SUCCESS, EXEC_FAILED };
        static const int errors[] = { -1, ERROR_NONE, ERROR_TIMEOUT };
        static const char *const owners[] = { NULL, "key:ci" };
        static const unsigned limits[] = { 7, 50, 1000 };
        unsigned combos = 0;

        fill_rows(s);
        assert_int_equal(count(s), N_ROWS);

        for (int o = 0; o < _STORE_ORDER_MAX; o++) {
                /* One row per page over everything: the cursor alone carries the position. */
                check_paging(s, (StoreQuery) { .status = -1, .error_type = -1, .order = o, .limit = 1 });
                check_paging(s, (StoreQuery) { .status = -1, .error_type = -1, .order = o, .limit = 50 });
                check_paging(s, (StoreQuery) { .status = -1, .error_type = -1, .order = o, .limit = 250 });

                for (size_t a = 0; a < ELEMENTSOF(sessions); a++)
                        for (size_t b = 0; b < ELEMENTSOF(statuses); b++)
                                for (size_t c = 0; c < ELEMENTSOF(errors); c++)
                                        for (int f = 0; f < 2; f++)
                                                for (size_t d = 0; d < ELEMENTSOF(owners); d++)
                                                        for (size_t e = 0; e < ELEMENTSOF(limits); e++) {
                                                                check_paging(s, (StoreQuery) {
                                                                        .session_id = sessions[a],
                                                                        .status = statuses[b],
                                                                        .error_type = errors[c],
                                                                        .failed = f,
                                                                        .owner = owners[d],
                                                                        .order = o,
                                                                        .limit = limits[e],
                                                                });
                                                                combos++;
                                                        }
        }
        assert_int_equal(combos, 2 * 3 * 3 * 3 * 2 * 2 * 3);
}

static size_t list_count(Store *s, StoreQuery q) {
        StoreRecord **l = NULL;
        size_t n = 0;

        q.limit = 1000;
        assert_int_equal(store_list(s, &q, &l, &n, NULL), 0);
        store_records_free(l, n);
        return n;
}

/* The filters one by one, against counts worked out by hand from fill_rows(). */
static void test_list_filters(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        StoreQuery q;

        fill_rows(s);

        q = STORE_QUERY_INIT;
        assert_int_equal(list_count(s, q), 250);
        q.session_id = "sess_0";
        assert_int_equal(list_count(s, q), 50);
        q = STORE_QUERY_INIT;
        q.status = EXEC_SUCCESS;
        assert_int_equal(list_count(s, q), 125);
        q = STORE_QUERY_INIT;
        q.failed = true;
        assert_int_equal(list_count(s, q), 50);
        q.status = EXEC_FAILED;
        assert_int_equal(list_count(s, q), 50);
        q.status = EXEC_SUCCESS;   /* contradicts failed=true */
        assert_int_equal(list_count(s, q), 0);
        q = STORE_QUERY_INIT;
        q.error_type = ERROR_NONE;
        assert_int_equal(list_count(s, q), 200);
        q.error_type = ERROR_COMPILE;   /* failed rows with (i / 10) % 6 == 0 */
        assert_int_equal(list_count(s, q), 10);
        q = STORE_QUERY_INIT;
        q.owner = "uid:0";
        assert_int_equal(list_count(s, q), 84);
        q.owner = "nobody";
        assert_int_equal(list_count(s, q), 0);
        /* Values are bound, never pasted into SQL. */
        q.owner = "x' OR '1'='1";
        assert_int_equal(list_count(s, q), 0);
}

/* Rows inserted between two pages neither repeat nor shift the next page. */
static void test_list_stable(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        StoreQuery q = STORE_QUERY_INIT;
        StoreRecord **l = NULL, **l2 = NULL;
        size_t n = 0, n2 = 0;
        _cleanup_free_ char *next = NULL, *next2 = NULL;
        _cleanup_free_ char *last = NULL;

        fill_rows(s);
        q.limit = 10;
        assert_int_equal(store_list(s, &q, &l, &n, &next), 0);
        assert_int_equal(n, 10);
        assert_non_null(next);
        last = strdup(l[9]->exec->id);
        store_records_free(l, n);

        for (unsigned i = 0; i < 5; i++) {
                _cleanup_(store_record_freep) StoreRecord *r = record_full("x");
                free(r->exec->id);
                r->exec->id = strf("new_%u", i);
                r->exec->created_usec = BASE_USEC + 10000000 + i;   /* newer than all */
                assert_int_equal(store_put(s, r), 0);
        }

        q.cursor = next;
        assert_int_equal(store_list(s, &q, &l2, &n2, &next2), 0);
        assert_int_equal(n2, 10);
        for (size_t i = 0; i < n2; i++) {
                assert_null(startswith(l2[i]->exec->id, "new_"));
                assert_string_not_equal(l2[i]->exec->id, last);
        }
        store_records_free(l2, n2);
}

static char *b64url(const char *s) {
        static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        size_t n = strlen(s);
        char *r = malloc(n / 3 * 4 + 5), *o = r;

        assert_non_null(r);
        for (size_t i = 0; i < n; i += 3) {
                uint32_t v = (uint32_t) (uint8_t) s[i] << 16;
                size_t k = MIN(n - i, (size_t) 3);

                if (k > 1)
                        v |= (uint32_t) (uint8_t) s[i + 1] << 8;
                if (k > 2)
                        v |= (uint8_t) s[i + 2];
                *o++ = a[(v >> 18) & 63];
                *o++ = a[(v >> 12) & 63];
                if (k > 1)
                        *o++ = a[(v >> 6) & 63];
                if (k > 2)
                        *o++ = a[v & 63];
        }
        *o = 0;
        return r;
}

static void test_bad_cursor(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        StoreQuery q = STORE_QUERY_INIT;
        StoreRecord **l = NULL;
        size_t n = 0;
        _cleanup_free_ char *next = NULL, *next_d = NULL;
        StoreCursor c;
        static const char *const forged_payloads[] = {
                "c:01:exec_1",                                   /* leading zero */
                "c:+1:exec_1",
                "c:-1:exec_1",
                "c:1:",
                "c:1",
                "c::exec_1",
                "x:1:exec_1",
                "c:99999999999999999999:exec_1",                 /* > UINT64_MAX */
                "c:9223372036854775808:exec_1",                  /* > INT64_MAX */
                "c:1:exec_1' OR '1'='1",
                "c:1:exec_1:extra",
                "c:1:.hidden",
                "c:1:exec_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",   /* > 64 */
                "C:1:exec_1",
        };
        static const char *const forged_texts[] = {
                "", "=", "!!!!", "Yzox", "YzoxOmV4ZWNfMQ==", "YzoxOmV4ZWNfMQ.", "a", "YzoxOmV4ZWNfMR",
                "YzoxOmV4ZWNfMQ YzoxOmV4ZWNfMQ", "%00", "' OR 1=1 --",
        };

        fill_rows(s);

        q.limit = 7;
        assert_int_equal(store_list(s, &q, &l, &n, &next), 0);
        store_records_free(l, n);
        assert_non_null(next);
        assert_int_equal(store_cursor_parse(next, &c), 0);
        assert_int_equal(c.order, STORE_ORDER_CREATED_AT);

        /* A genuine one, hand-made, is accepted: the forgeries below differ in one point each. */
        _cleanup_free_ char *good = b64url("c:1:exec_1");
        assert_int_equal(store_cursor_parse(good, &c), 0);
        assert_int_equal(c.key, 1);
        assert_string_equal(c.id, "exec_1");

        for (size_t i = 0; i < ELEMENTSOF(forged_payloads); i++) {
                _cleanup_free_ char *t = b64url(forged_payloads[i]);

                q.cursor = t;
                l = NULL;
                if (store_list(s, &q, &l, &n, NULL) != -EINVAL) {
                        print_error("forged cursor accepted: %s\n", forged_payloads[i]);
                        fail();
                }
                assert_null(l);
        }
        for (size_t i = 0; i < ELEMENTSOF(forged_texts); i++) {
                q.cursor = forged_texts[i];
                if (store_list(s, &q, &l, &n, NULL) != -EINVAL) {
                        print_error("forged cursor accepted: '%s'\n", forged_texts[i]);
                        fail();
                }
        }

        /* A cursor of the other order. */
        q.cursor = NULL;
        q.order = STORE_ORDER_DURATION_MS;
        assert_int_equal(store_list(s, &q, &l, &n, &next_d), 0);
        store_records_free(l, n);
        assert_non_null(next_d);
        q.cursor = next;
        assert_int_equal(store_list(s, &q, &l, &n, NULL), -EINVAL);
        q.order = STORE_ORDER_CREATED_AT;
        q.cursor = next_d;
        assert_int_equal(store_list(s, &q, &l, &n, NULL), -EINVAL);

        /* The rest of the query. */
        q = STORE_QUERY_INIT;
        q.limit = 0;
        assert_int_equal(store_list(s, &q, &l, &n, NULL), -EINVAL);
        q.limit = 1001;
        assert_int_equal(store_list(s, &q, &l, &n, NULL), -EINVAL);
        q = STORE_QUERY_INIT;
        q.status = _EXEC_STATUS_MAX;
        assert_int_equal(store_list(s, &q, &l, &n, NULL), -EINVAL);
        q = STORE_QUERY_INIT;
        q.error_type = -2;
        assert_int_equal(store_list(s, &q, &l, &n, NULL), -EINVAL);
        q = STORE_QUERY_INIT;
        q.order = 2;
        assert_int_equal(store_list(s, &q, &l, &n, NULL), -EINVAL);
        q = STORE_QUERY_INIT;
        q.session_id = "sess' OR 1=1 --";
        assert_int_equal(store_list(s, &q, &l, &n, NULL), -EINVAL);

        assert_int_equal(count(s), N_ROWS);
}

static void test_unfinished(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        StoreRecord **l = NULL;
        size_t n = 0;

        fill_rows(s);
        assert_int_equal(store_list_unfinished(s, &l, &n), 0);
        assert_int_equal(n, 50);   /* i % 10 ∈ {0, 1} */
        for (size_t i = 0; i < n; i++) {
                assert_true(l[i]->exec->status == EXEC_QUEUED || l[i]->exec->status == EXEC_RUNNING);
                if (i > 0) {
                        const Execution *a = l[i - 1]->exec, *b = l[i]->exec;
                        assert_true(a->created_usec < b->created_usec ||
                                    (a->created_usec == b->created_usec && strcmp(a->id, b->id) < 0));
                }
        }
        store_records_free(l, n);
}

static void test_purge(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        StoreRecord **l = NULL;
        size_t n = 0, expect = 0;
        uint64_t purged = 0, cut = BASE_USEC + 30 * 1000;

        fill_rows(s);
        for (size_t i = 0; i < N_ROWS; i++)
                if (exec_status_is_final(rows[i].status) && rows[i].created + rows[i].duration * 1000 < cut)
                        expect++;
        assert_true(expect > 0);

        assert_int_equal(store_purge(s, cut, &purged), 0);
        assert_int_equal(purged, expect);
        assert_int_equal(count(s), N_ROWS - expect);
        /* Again: nothing left to do. */
        assert_int_equal(store_purge(s, cut, &purged), 0);
        assert_int_equal(purged, 0);

        /* Everything finished, however recent; never the unfinished. */
        assert_int_equal(store_purge(s, UINT64_MAX, NULL), 0);
        assert_int_equal(count(s), 50);
        assert_int_equal(store_list_unfinished(s, &l, &n), 0);
        assert_int_equal(n, 50);
        store_records_free(l, n);
}

/* ---- what an administrator can do to the file ---- */


/* ---- usage per owner (migration 8) ---- */

static uint64_t len0(const char *s) {
        return s ? strlen(s) : 0;       /* bytes, not characters: the outputs hold UTF-8 */
}

/* What one record counts, with the code the store kept. */
static uint64_t record_bytes(const StoreRecord *r, const char *code) {
        const Execution *e = r->exec;

        return STORE_RECORD_OVERHEAD_BYTES + len0(code) + len0(e->out.text) + len0(e->err.text) + len0(r->request) +
               len0(e->error_message) + len0(e->summary) + len0(e->isolation);
}

static StoreUsage usage(Store *s, const char *owner) {
        StoreUsage u = { UINT64_MAX, UINT64_MAX, UINT64_MAX };

        assert_int_equal(store_usage_get(s, owner, &u), 0);
        return u;
}

static void assert_usage(Store *s, const char *owner, uint64_t records, uint64_t bytes, uint64_t pending) {
        StoreUsage u = usage(s, owner);

        if (u.records != records || u.bytes != bytes || u.pending_callbacks != pending) {
                print_error("%s: records %" PRIu64 " bytes %" PRIu64 " pending %" PRIu64 ", want %" PRIu64 " %" PRIu64
                            " %" PRIu64 "\n", owner, u.records, u.bytes, u.pending_callbacks, records, bytes, pending);
                fail();
        }
}

static void test_usage(_unused_ void **state) {
        Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *a = record_full("exec_u1"), *b = record_full("exec_u2"),
                                                  *anon = record_full("exec_anon"), *c = record_full("exec_u3");
        _cleanup_(store_callback_freep) StoreCallback *cb = NULL;
        _cleanup_free_ char *code = NULL;
        uint64_t bytes_a, bytes_b, body, purged = 0;

        assert_int_equal(store_usage_get(s, "", &(StoreUsage) {}), -EINVAL);
        assert_usage(s, "uid:1000", 0, 0, 0);

        /* Queued: the code and the request are in. */
        a->exec->status = EXEC_QUEUED;
        a->exec->finished_usec = 0;
        bytes_a = record_bytes(a, a->code);
        assert_int_equal(store_put(s, a), 0);
        assert_usage(s, "uid:1000", 1, bytes_a, 0);

        /* Final with more output, the code dropped by the job (the store keeps it): still one record,
         * counted with what the row holds now. */
        a->exec->status = EXEC_FAILED;
        a->exec->finished_usec = BASE_USEC + 63003;
        free(a->exec->out.text);
        a->exec->out.text = strdup("x\u00e9\u2713 a longer output, with UTF-8 in it\n");
        code = TAKE_PTR(a->code);
        bytes_a = record_bytes(a, code);
        assert_int_equal(store_put(s, a), 0);
        assert_usage(s, "uid:1000", 1, bytes_a, 0);

        /* Another owner is counted apart; a record without owner is nobody's. */
        free(b->owner);
        b->owner = strdup("key:ci");
        bytes_b = record_bytes(b, b->code);
        assert_int_equal(store_put(s, b), 0);
        anon->owner = mfree(anon->owner);
        assert_int_equal(store_put(s, anon), 0);
        assert_usage(s, "uid:1000", 1, bytes_a, 0);
        assert_usage(s, "key:ci", 1, bytes_b, 0);

        /* A final record with its delivery: the body counts, and the delivery is pending. */
        c->callback = callback_new("exec_u3", BASE_USEC + 100);
        body = strlen(c->callback->body);
        assert_int_equal(store_put(s, c), 0);
        assert_usage(s, "uid:1000", 2, bytes_a + record_bytes(c, c->code) + body, 1);
        /* The same final write again (a retried put) changes nothing. */
        assert_int_equal(store_put(s, c), 0);
        assert_usage(s, "uid:1000", 2, bytes_a + record_bytes(c, c->code) + body, 1);

        /* A record with a pending delivery is kept by the purge; the others go, and with them what
         * they counted. */
        assert_int_equal(store_purge(s, UINT64_MAX, &purged), 0);
        assert_int_equal(purged, 3);
        assert_usage(s, "uid:1000", 1, record_bytes(c, c->code) + body, 1);
        assert_usage(s, "key:ci", 0, 0, 0);

        /* Delivered: no longer pending; then purgeable, and nothing is left counted. */
        assert_int_equal(store_callback_get(s, "exec_u3", false, &cb), 0);
        cb->state = CALLBACK_DELIVERED;
        cb->delivered_usec = BASE_USEC + 200;
        assert_int_equal(store_callback_update(s, cb), 0);
        assert_usage(s, "uid:1000", 1, record_bytes(c, c->code) + body, 0);

        /* Migration 8 on a database that has rows already: the usage is computed from them. */
        store_close(s);
        sql_exec_raw2("DROP TRIGGER record_usage_insert; DROP TRIGGER record_usage_update; "
                     "DROP TRIGGER record_usage_delete; DROP TRIGGER record_usage_callback_insert; "
                     "DROP TRIGGER record_usage_callback_state; DROP TABLE record_usage; "
                     "DROP TRIGGER artifacts_charge; DROP TRIGGER artifacts_refund; DROP TRIGGER artifacts_immutable; "
                     "DROP TABLE artifact_usage; DROP TABLE artifact_blobs; DROP TABLE artifact_store_usage; "
                     "ALTER TABLE artifacts DROP COLUMN charged_bytes; ALTER TABLE artifacts DROP COLUMN owner; "
                     "ALTER TABLE executions DROP COLUMN client_id; ALTER TABLE sessions DROP COLUMN client_id; "
                     "ALTER TABLE executions DROP COLUMN start; ALTER TABLE executions DROP COLUMN network; ALTER TABLE executions DROP COLUMN environment; ALTER TABLE executions DROP COLUMN summary; "
                     "ALTER TABLE executions DROP COLUMN isolation; DROP INDEX executions_node; "
                     "ALTER TABLE executions DROP COLUMN node; ALTER TABLE executions DROP COLUMN node_epoch; "
                     "ALTER TABLE executions DROP COLUMN attempt; DROP TABLE nodes; "
                     "ALTER TABLE sessions DROP COLUMN node; "
                     "UPDATE callbacks SET state = 'pending'; PRAGMA user_version = 7",
                     PG_DROP_TRIGGER_FUNCTIONS PG_UNDO_9_TO_18 PG_UNDO_8
                     "UPDATE callbacks SET state = 'pending'; UPDATE sandboxd_schema SET version = 7");
        c->exec->summary = mfree(c->exec->summary);     /* the column went with the others */
        c->exec->isolation = mfree(c->exec->isolation);
        s = open_ok();
        assert_usage(s, "uid:1000", 1, record_bytes(c, c->code) + body, 1);
        assert_int_equal(store_purge(s, UINT64_MAX, &purged), 0);
        assert_int_equal(purged, 0);
        cb->state = CALLBACK_FAILED;
        assert_int_equal(store_callback_update(s, cb), 0);
        assert_int_equal(store_purge(s, UINT64_MAX, &purged), 0);
        assert_int_equal(purged, 1);
        assert_usage(s, "uid:1000", 0, 0, 0);
        assert_int_equal(count(s), 0);
        store_close(s);
}

static void test_schema_newer(_unused_ void **state) {
        Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *r = record_full("exec_v");

        assert_int_equal(store_put(s, r), 0);
        store_close(s);

        sql_exec_raw2("PRAGMA user_version = 99", "UPDATE sandboxd_schema SET version = 99");
        open_fails(-EPROTONOSUPPORT, "database schema version 99 is newer than this sandboxd supports (18)", NULL);
        /* Refusing did not touch it. */
        sql_exec_raw2("PRAGMA user_version = 18", "UPDATE sandboxd_schema SET version = 18");
        s = open_ok();
        get_equal(s, r);
        store_close(s);

        /* A version 1 database (as the first release wrote it) is migrated on open, rows kept. */
        sql_exec_raw2("DROP TRIGGER record_usage_insert; DROP TRIGGER record_usage_update; "
                     "DROP TRIGGER record_usage_delete; DROP TRIGGER record_usage_callback_insert; "
                     "DROP TRIGGER record_usage_callback_state; DROP TABLE record_usage; "
                     "DROP TABLE callbacks; DROP TABLE sessions; DROP TABLE artifacts; DROP TABLE artifact_collections; "
                     "DROP TABLE artifact_usage; DROP TABLE artifact_blobs; DROP TABLE artifact_store_usage; "
                     "ALTER TABLE executions DROP COLUMN error_message; ALTER TABLE executions DROP COLUMN cancel_requested; "
                     "ALTER TABLE executions DROP COLUMN request; ALTER TABLE executions DROP COLUMN workspace; "
                     "ALTER TABLE executions DROP COLUMN client_id; ALTER TABLE executions DROP COLUMN start; "
                     "ALTER TABLE executions DROP COLUMN network; ALTER TABLE executions DROP COLUMN environment; ALTER TABLE executions DROP COLUMN summary; "
                     "ALTER TABLE executions DROP COLUMN isolation; DROP INDEX executions_node; "
                     "ALTER TABLE executions DROP COLUMN node; ALTER TABLE executions DROP COLUMN node_epoch; "
                     "ALTER TABLE executions DROP COLUMN attempt; DROP TABLE nodes; "
                     "PRAGMA user_version = 1",
                     PG_DROP_TRIGGER_FUNCTIONS PG_UNDO_8
                     "DROP TABLE callbacks, sessions, artifacts, artifact_collections, artifact_usage, artifact_blobs, "
                     "artifact_store_usage, nodes; "
                     "ALTER TABLE executions DROP COLUMN error_message, DROP COLUMN cancel_requested, "
                     "DROP COLUMN request, DROP COLUMN workspace, DROP COLUMN client_id, DROP COLUMN start, "
                     "DROP COLUMN network, DROP COLUMN environment, DROP COLUMN summary, DROP COLUMN isolation, "
                     "DROP COLUMN node, DROP COLUMN node_epoch, DROP COLUMN attempt; "
                     "UPDATE sandboxd_schema SET version = 1");
        r->workspace = mfree(r->workspace);     /* version 1 had none of them */
        r->exec->client_id = mfree(r->exec->client_id);
        r->exec->environment = mfree(r->exec->environment);
        r->exec->summary = mfree(r->exec->summary);
        r->exec->isolation = mfree(r->exec->isolation);
        r->request = mfree(r->request);
        r->exec->error_message = mfree(r->exec->error_message);
        s = open_ok();
        get_equal(s, r);
        store_close(s);
}

static void write_file(const void *p, size_t n) {
        _cleanup_close_ int fd = open(dbpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, p, n), 0);
}

static void assert_file_is(const void *p, size_t n) {
        _cleanup_free_ uint8_t *buf = malloc(n + 1);
        _cleanup_close_ int fd = open(dbpath, O_RDONLY | O_CLOEXEC);

        assert_non_null(buf);
        assert_true(fd >= 0);
        assert_int_equal(loop_read(fd, buf, n + 1), (ssize_t) n);
        assert_memory_equal(buf, p, n);
}

static void test_garbage_file(_unused_ void **state) {
        static const size_t sizes[] = { 100, 512, 4096, 3 * 4096 + 7, 65536 };

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                _cleanup_free_ uint8_t *junk = malloc(sizes[i]);

                assert_non_null(junk);
                assert_int_equal(getrandom(junk, sizes[i], 0), (ssize_t) sizes[i]);
                write_file(junk, sizes[i]);
                open_fails(-EBADMSG, "is not a sandboxd database or is corrupted", NULL);
                assert_file_is(junk, sizes[i]);
                /* Nothing was created next to it either. */
                _cleanup_free_ char *wal = strf("%s-wal", dbpath);
                assert_int_equal(access(wal, F_OK), -1);
        }
}

/* Someone else's database: refused, and left as it was. */
static void test_foreign_database(_unused_ void **state) {
        sql_exec_raw("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)");
        open_fails(-EBADMSG, "is not a sandboxd database", NULL);
        sql_exec_raw("INSERT INTO invoices (id, total) VALUES (1, 2.5)");
        if (is_pg()) {
                /* A database that was ours and is marked as someone else's now. */
                sql_exec_raw("DROP TABLE invoices");
                store_close(open_ok());
                sql_exec_raw("UPDATE sandboxd_schema SET application_id = 1234");
        } else
                sql_exec_raw("PRAGMA application_id = 1234");
        open_fails(-EBADMSG, "is not a sandboxd database", "application_id");
}

/* Pages in the middle of the file overwritten: found by the integrity check at open. */
static void test_corrupted_pages(_unused_ void **state) {
        Store *s = open_ok();
        uint8_t junk[4 * 4096];
        struct stat st;
        _cleanup_close_ int fd = -EBADF;

        fill_rows(s);
        store_close(s);

        assert_int_equal(stat(dbpath, &st), 0);
        assert_true(st.st_size > 12 * 4096);
        memset(junk, 0x5a, sizeof(junk));
        fd = open(dbpath, O_WRONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(pwrite(fd, junk, sizeof(junk), 4 * 4096), (ssize_t) sizeof(junk));
        fd = safe_close(fd);

        open_fails(-EBADMSG, "is corrupted", NULL);
}

/* Run fn as nobody when we are root (root ignores file permissions); directly otherwise. The
 * child reports by its exit status: cmocka's assertions do not cross fork(). */
static void run_unprivileged(int (*fn)(void)) {
        pid_t pid;
        int status;

        if (geteuid() != 0) {
                assert_int_equal(fn(), 0);
                return;
        }
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
                        _exit(2);
                _exit(fn() == 0 ? 0 : 1);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

static int expect_open_failure(int want, const char *sub) {
        _cleanup_free_ char *error = NULL;
        Store *s = NULL;
        int r;

        r = store_open_sqlite(dbpath, &s, &error);
        if (r != want || !error || !strstr(error, sub) || !strstr(error, dbpath) || s) {
                fprintf(stderr, "# got %d '%s', want %d with '%s'\n", r, strna(error), want, sub);
                store_close(s);
                return -1;
        }
        fprintf(stderr, "# as uid %u: %s\n", (unsigned) geteuid(), error);
        return 0;
}

static int child_new_db_in_readonly_dir(void) {
        return expect_open_failure(-EACCES, "Permission denied");
}

static int child_readonly_file(void) {
        return expect_open_failure(-EACCES, "database is not writable (Permission denied)");
}

static void test_readonly_dir(_unused_ void **state) {
        assert_int_equal(chmod(tmpdir, 0555), 0);
        run_unprivileged(child_new_db_in_readonly_dir);
        assert_int_equal(access(dbpath, F_OK), -1);
}

static void test_readonly_file(_unused_ void **state) {
        Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *r = record_full("exec_ro");

        assert_int_equal(store_put(s, r), 0);
        store_close(s);

        assert_int_equal(chmod(dbpath, 0444), 0);
        run_unprivileged(child_readonly_file);

        assert_int_equal(chmod(dbpath, 0644), 0);
        s = open_ok();
        get_equal(s, r);
        store_close(s);
}

static void test_missing_dir(_unused_ void **state) {
        (void) snprintf(dbpath, sizeof(dbpath), "%s/no/such/dir/sandboxd.db", tmpdir);
        open_fails(-ENOENT, "cannot open the database", NULL);
}

/* A full disk, simulated by capping the database's size: the write that does not fit fails with
 * ENOSPC, changes nothing, and everything before it stays readable; once there is room again,
 * writes work without reopening. */
static void test_disk_full(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_free_ char *big = malloc(8192 + 1);
        StoreRecord *kept[400] = {};
        size_t n_ok = 0;
        int r = 0;

        assert_non_null(big);
        memset(big, 'x', 8192);
        big[8192] = 0;

        for (; n_ok < 10; n_ok++) {
                kept[n_ok] = record_full("x");
                free(kept[n_ok]->exec->id);
                kept[n_ok]->exec->id = strf("exec_%03zu", n_ok);
                assert_int_equal(store_put(s, kept[n_ok]), 0);
        }

        /* 1 is below the current size: SQLite caps at the current size instead. */
        assert_int_equal(store_sqlite_set_max_pages_for_test(s, 1), 0);
        for (; n_ok < ELEMENTSOF(kept); n_ok++) {
                kept[n_ok] = record_full("x");
                free(kept[n_ok]->exec->id);
                kept[n_ok]->exec->id = strf("exec_%03zu", n_ok);
                free(kept[n_ok]->exec->out.text);
                kept[n_ok]->exec->out.text = strdup(big);
                r = store_put(s, kept[n_ok]);
                if (r < 0)
                        break;
        }
        assert_int_equal(r, -ENOSPC);
        assert_non_null(strstr(store_error_message(s), "full"));
        assert_true(n_ok < ELEMENTSOF(kept));

        /* The failed one is not there, every earlier one is, intact. */
        _cleanup_(store_record_freep) StoreRecord *failed = kept[n_ok];
        StoreRecord *got = NULL;
        assert_int_equal(store_get(s, failed->exec->id, &got), -ENOENT);
        assert_int_equal(count(s), n_ok);
        for (size_t i = 0; i < n_ok; i++)
                get_equal(s, kept[i]);

        /* An update of an existing row that needs more room fails the same way and leaves the old row. */
        StoreRecord *first = kept[0];
        char *old_text = first->exec->out.text;
        first->exec->out.text = big;
        assert_int_equal(store_put(s, first), -ENOSPC);
        first->exec->out.text = old_text;
        get_equal(s, first);

        /* Room again. */
        assert_int_equal(store_sqlite_set_max_pages_for_test(s, UINT32_MAX - 1), 0);
        assert_int_equal(store_put(s, failed), 0);
        get_equal(s, failed);

        s = store_close(s);
        s = open_ok();
        assert_int_equal(count(s), n_ok + 1);
        for (size_t i = 0; i < n_ok; i++) {
                get_equal(s, kept[i]);
                store_record_free(kept[i]);
        }
}

static void test_cursor_roundtrip(_unused_ void **state) {
        StoreCursor c = { .order = STORE_ORDER_DURATION_MS, .key = INT64_MAX }, d;
        _cleanup_free_ char *t = NULL;

        strcpy(c.id, "exec_20251130_0a1b2c3d4e5f6789");
        assert_int_equal(store_cursor_format(&c, &t), 0);
        assert_int_equal(store_cursor_parse(t, &d), 0);
        assert_int_equal(d.order, c.order);
        assert_int_equal(d.key, c.key);
        assert_string_equal(d.id, c.id);
        /* Only url-safe characters: the cursor goes into a query string as is. */
        assert_int_equal(strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"), strlen(t));

        c.key = (uint64_t) INT64_MAX + 1;
        assert_int_equal(store_cursor_format(&c, &t), -EINVAL);
}

/* Sessions: put, replace by id, list oldest first, delete (twice: not an error), bad input. */
static void test_sessions(void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        StoreSession a = { .session_id = (char *) "sess-a", .owner = (char *) "uid:0",
                           .mount_unit = (char *) "a.mount", .path = (char *) "/p/a", .disk_mb = 64,
                           .created_usec = 100, .last_used_usec = 200, .executions = 1,
                           .node = (char *) "node-a" };
        StoreSession b = { .session_id = (char *) "sess-b", .mount_unit = (char *) "b.mount",
                           .path = (char *) "/p/b", .disk_mb = 32, .created_usec = 50, .last_used_usec = 60 };
        StoreSession bad = a, *l = NULL;
        size_t n = 0;

        assert_int_equal(store_session_list(s, &l, &n), 0);
        assert_int_equal(n, 0);
        store_sessions_free(l, n);
        assert_int_equal(store_session_put(s, &a), 0);
        assert_int_equal(store_session_put(s, &b), 0);
        a.executions = 7;
        a.last_used_usec = 300;
        assert_int_equal(store_session_put(s, &a), 0);
        assert_int_equal(store_session_list(s, &l, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(l[0].session_id, "sess-b");
        assert_null(l[0].owner);
        assert_int_equal(l[0].disk_mb, 32);
        assert_string_equal(l[1].session_id, "sess-a");
        assert_string_equal(l[1].owner, "uid:0");
        assert_string_equal(l[1].mount_unit, "a.mount");
        assert_string_equal(l[1].path, "/p/a");
        assert_int_equal(l[1].executions, 7);
        assert_int_equal(l[1].last_used_usec, 300);
        assert_int_equal(l[1].created_usec, 100);
        assert_string_equal(l[1].node, "node-a");
        assert_null(l[0].node);
        store_sessions_free(l, n);

        /* One by its id: the node whose tmpfs holds it (runs are routed there). */
        assert_int_equal(store_session_get(s, "sess-a", &l), 0);
        assert_string_equal(l->session_id, "sess-a");
        assert_string_equal(l->node, "node-a");
        assert_int_equal(l->executions, 7);
        store_sessions_free(l, 1);
        assert_int_equal(store_session_get(s, "sess-zz", &l), -ENOENT);
        assert_int_equal(store_session_get(s, "../x", &l), -EINVAL);

        assert_int_equal(store_session_delete(s, "sess-a"), 0);
        assert_int_equal(store_session_delete(s, "sess-a"), 0);
        assert_int_equal(store_session_list(s, &l, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(l[0].session_id, "sess-b");
        store_sessions_free(l, n);

        bad.session_id = (char *) "../x";
        assert_int_equal(store_session_put(s, &bad), -EINVAL);
        bad = a;
        bad.mount_unit = NULL;
        assert_int_equal(store_session_put(s, &bad), -EINVAL);
        bad = a;
        bad.disk_mb = UINT64_MAX;
        assert_int_equal(store_session_put(s, &bad), -EINVAL);
        assert_int_equal(store_session_delete(s, "a/b"), -EINVAL);
}

/* The node registry: a registration takes the name's row over (epoch + 1), a heartbeat of an older
 * epoch is refused, the list is by name, and a lease that ran out (or that the node gave back when
 * it left) shows as not alive while the row and its epoch stay. */
static StoreRecord *record_on(const char *id, ExecStatus st, const char *node, uint64_t epoch, uint64_t created) {
        StoreRecord *r = record_full(id);

        r->exec->status = st;
        if (!exec_status_is_final(st)) {
                r->exec->finished_usec = 0;
                r->exec->summary = mfree(r->exec->summary);
        }
        free(r->exec->node);
        r->exec->node = node ? strdup(node) : NULL;
        r->exec->node_epoch = epoch;
        r->exec->created_usec = created;
        return r;
}

/* A queued record accepted by node, unclaimed (epoch 0: the shared queue), of owner, no session. */
static StoreRecord *record_queued(const char *id, const char *node, const char *owner, uint64_t created) {
        StoreRecord *r = record_on(id, EXEC_QUEUED, node, 0, created);

        r->exec->session_id = mfree(r->exec->session_id);
        free(r->owner);
        r->owner = strdup(owner);
        assert_non_null(r->owner);
        return r;
}

/* The queue nodes share (store_claim(), store_claim_next(), store_claim_routed()): each unclaimed
 * row is claimed once; the next claim takes, of each owner's oldest, the one whose owner runs fewest
 * (then the oldest), never this node's own, never a session's run, not an owner in skip; a claimed
 * row fences the accepting node's writes; routed session runs go to their node only. SQLite: one
 * node, none of it. */
static void test_shared_queue(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *a1 = record_queued("exec_qa1", "n1", "key:a", BASE_USEC + 1);
        _cleanup_(store_record_freep) StoreRecord *a2 = record_queued("exec_qa2", "n1", "key:a", BASE_USEC + 2);
        _cleanup_(store_record_freep) StoreRecord *b1 = record_queued("exec_qb1", "n1", "key:b", BASE_USEC + 3);
        _cleanup_(store_record_freep) StoreRecord *ar = record_on("exec_qar", EXEC_RUNNING, "n3", 1, BASE_USEC);
        _cleanup_(store_record_freep) StoreRecord *own = record_queued("exec_qown", "n2", "key:c", BASE_USEC);
        _cleanup_(store_record_freep) StoreRecord *sess = record_queued("exec_qs", "n1", "key:a", BASE_USEC);
        _cleanup_(store_record_freep) StoreRecord *routed = record_queued("exec_qr", "n2", "key:a", BASE_USEC + 5);
        StoreRecord *got = NULL, **l = NULL;
        char *skip[] = { (char *) "key:b" };
        size_t n = 0;

        if (!is_pg()) {
                assert_int_equal(store_claim(s, "exec_qa1", "n1", 1), -EOPNOTSUPP);
                assert_int_equal(store_claim_next(s, "n2", 1, NULL, 0, &got), -EOPNOTSUPP);
                assert_int_equal(store_claim_routed(s, "n2", 1, &l, &n), -EOPNOTSUPP);
                assert_int_equal(store_queue_notify(s, "n1"), -EOPNOTSUPP);
                return;
        }
        free(ar->owner);
        ar->owner = strdup("key:a");
        sess->exec->session_id = strdup("s1");
        routed->exec->session_id = strdup("s2");
        assert_int_equal(store_put(s, a1), 0);
        assert_int_equal(store_put(s, a2), 0);
        assert_int_equal(store_put(s, b1), 0);
        assert_int_equal(store_put(s, ar), 0);
        assert_int_equal(store_put(s, own), 0);
        assert_int_equal(store_put(s, sess), 0);
        assert_int_equal(store_put(s, routed), 0);

        /* Bad arguments. */
        assert_int_equal(store_claim(s, "exec_qa1", "n1", 0), -EINVAL);
        assert_int_equal(store_claim(s, "../x", "n1", 1), -EINVAL);
        assert_int_equal(store_claim_next(s, "n2", 1, NULL, 1, &got), -EINVAL);
        assert_int_equal(store_claim_next(s, "bad name!", 1, NULL, 0, &got), -EINVAL);

        /* key:a runs one already (exec_qar), key:b none: b's oldest first, though a's are older. */
        assert_int_equal(store_claim_next(s, "n2", 4, NULL, 0, &got), 0);
        assert_string_equal(got->exec->id, "exec_qb1");
        assert_string_equal(got->exec->node, "n2");
        assert_int_equal(got->exec->node_epoch, 4);
        store_record_free(got);
        /* The accepting node's own claim of it comes too late; its writes are fenced. */
        assert_int_equal(store_claim(s, "exec_qb1", "n1", 1), -ESTALE);
        b1->exec->status = EXEC_CANCELLED;
        assert_int_equal(store_put(s, b1), -ESTALE);
        /* Then key:a's oldest; never n2's own (exec_qown), never a session's run (exec_qs). */
        assert_int_equal(store_claim_next(s, "n2", 4, NULL, 0, &got), 0);
        assert_string_equal(got->exec->id, "exec_qa1");
        store_record_free(got);
        /* key:a skipped (at its cap on n2): nothing else. */
        skip[0] = (char *) "key:a";
        assert_int_equal(store_claim_next(s, "n2", 4, skip, 1, &got), -ENOENT);
        /* n1 claims its own exec_qa2, once; then there is nothing left for n2 but its own. */
        assert_int_equal(store_claim(s, "exec_qa2", "n1", 1), 0);
        assert_int_equal(store_claim(s, "exec_qa2", "n1", 1), -ESTALE);
        a2->exec->node_epoch = 1;
        a2->exec->status = EXEC_RUNNING;
        assert_int_equal(store_put(s, a2), 0);
        assert_int_equal(store_claim_next(s, "n2", 4, NULL, 0, &got), -ENOENT);
        assert_int_equal(store_claim_next(s, "n3", 1, NULL, 0, &got), 0);
        assert_string_equal(got->exec->id, "exec_qown");
        store_record_free(got);
        /* What is left are two sessions' runs, routed to n1 and n2: no other node claims them. */
        assert_int_equal(store_claim_next(s, "n3", 1, NULL, 0, &got), -ENOENT);

        /* A session's run routed to n2 (stored by another node for n2): n2's alone, once. */
        assert_int_equal(store_claim_routed(s, "n1", 1, &l, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(l[0]->exec->id, "exec_qs");
        store_records_free(l, n);
        assert_int_equal(store_claim_routed(s, "n2", 4, &l, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(l[0]->exec->id, "exec_qr");
        assert_int_equal(l[0]->exec->node_epoch, 4);
        store_records_free(l, n);
        assert_int_equal(store_claim_routed(s, "n2", 4, &l, &n), 0);
        assert_int_equal(n, 0);
        free(l);
        assert_int_equal(store_queue_notify(s, "n1"), 0);
}

/* Several nodes (store_take_over()): a lost node's unfinished executions go to the node that takes
 * them, only once its lease has run out, each once; from then on the lost node's writes are fenced
 * (-ESTALE), the taker's pass; a restart takes its own at its new epoch. */
static void test_take_over(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *a = record_on("exec_ta", EXEC_RUNNING, "n1", 1, BASE_USEC + 2);
        _cleanup_(store_record_freep) StoreRecord *b = record_on("exec_tb", EXEC_QUEUED, "n1", 1, BASE_USEC + 1);
        _cleanup_(store_record_freep) StoreRecord *c = record_on("exec_tc", EXEC_RUNNING, "n2", 1, BASE_USEC + 3);
        _cleanup_(store_record_freep) StoreRecord *d = record_on("exec_td", EXEC_SUCCESS, "n1", 1, BASE_USEC);
        _cleanup_(store_record_freep) StoreRecord *old = record_on("exec_to", EXEC_RUNNING, NULL, 0, BASE_USEC + 4);
        StoreRecord **l = NULL;
        uint64_t e = 0;
        size_t n = 0;

        assert_int_equal(store_node_register(s, "n1", BASE_USEC, 30 * USEC_PER_SEC, 8, &e), 0);
        assert_int_equal(store_node_register(s, "n2", BASE_USEC, 30 * USEC_PER_SEC, 8, &e), 0);
        assert_int_equal(store_put(s, a), 0);
        assert_int_equal(store_put(s, b), 0);
        assert_int_equal(store_put(s, c), 0);
        assert_int_equal(store_put(s, d), 0);
        assert_int_equal(store_put(s, old), 0);

        /* n1's lease is good until BASE_USEC + 30 s: nothing to take. */
        assert_int_equal(store_take_over(s, "n1", "n2", 1, BASE_USEC + 29 * USEC_PER_SEC, &l, &n), 0);
        assert_int_equal(n, 0);
        free(l);
        l = NULL;
        /* Past it: the queued and the running one, oldest first; not the final one, not n2's. */
        assert_int_equal(store_take_over(s, "n1", "n2", 1, BASE_USEC + 31 * USEC_PER_SEC, &l, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(l[0]->exec->id, "exec_tb");
        assert_string_equal(l[1]->exec->id, "exec_ta");
        for (size_t i = 0; i < n; i++) {
                assert_string_equal(l[i]->exec->node, "n2");
                assert_int_equal(l[i]->exec->node_epoch, 1);
                assert_int_equal(l[i]->exec->attempt, 1);
        }
        store_records_free(l, n);
        l = NULL;
        /* Once: a second taker finds nothing. */
        assert_int_equal(store_take_over(s, "n1", "n3", 1, BASE_USEC + 31 * USEC_PER_SEC, &l, &n), 0);
        assert_int_equal(n, 0);
        free(l);
        l = NULL;

        /* The lost node's late write is refused; the taker's passes, with the next attempt. */
        a->exec->status = EXEC_SUCCESS;
        assert_int_equal(store_put(s, a), -ESTALE);
        assert_non_null(strstr(store_error_message(s), "taken over by another node"));
        free(a->exec->node);
        a->exec->node = strdup("n2");
        a->exec->status = EXEC_QUEUED;
        a->exec->attempt = 2;
        assert_int_equal(store_put(s, a), 0);
        get_equal(s, a);
        /* A write that names no node (tools) and a row that has none are not fenced. */
        old->exec->status = EXEC_CANCELLED;
        free(old->exec->node);
        old->exec->node = strdup("n9");
        old->exec->node_epoch = 7;
        assert_int_equal(store_put(s, old), 0);
        old->exec->status = EXEC_RUNNING;
        free(old->exec->node);
        old->exec->node = strdup("n8");
        assert_int_equal(store_put(s, old), -ESTALE);
        old->exec->node = mfree(old->exec->node);
        old->exec->node_epoch = 0;
        assert_int_equal(store_put(s, old), 0);

        /* n2 restarts at epoch 2 and takes its own (SQLite: every unfinished one, whatever its node). */
        assert_int_equal(store_take_over(s, NULL, "n2", 2, BASE_USEC + 40 * USEC_PER_SEC, &l, &n), 0);
        assert_int_equal(n, 4);
        assert_string_equal(l[0]->exec->id, "exec_tb");
        assert_string_equal(l[1]->exec->id, "exec_ta");
        assert_int_equal(l[1]->exec->attempt, 2);
        assert_string_equal(l[2]->exec->id, "exec_tc");
        assert_string_equal(l[3]->exec->id, "exec_to");
        for (size_t i = 0; i < n; i++) {
                assert_string_equal(l[i]->exec->node, "n2");
                assert_int_equal(l[i]->exec->node_epoch, 2);
        }
        store_records_free(l, n);
        /* Its writes at epoch 1 are fenced now. */
        free(c->exec->node);
        c->exec->node = strdup("n2");
        c->exec->node_epoch = 1;
        assert_int_equal(store_put(s, c), -ESTALE);
        c->exec->node_epoch = 2;
        assert_int_equal(store_put(s, c), 0);

        assert_int_equal(store_take_over(s, "bad name", "n2", 2, BASE_USEC, &l, &n), -EINVAL);
        assert_int_equal(store_take_over(s, NULL, "n2", (uint64_t) INT64_MAX + 1, BASE_USEC, &l, &n), -EINVAL);
}

static void test_nodes(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        StoreNode *l = NULL;
        uint64_t e1 = 0, e2 = 0, eb = 0;
        size_t n = 0;

        assert_int_equal(store_node_list(s, &l, &n), 0);
        assert_int_equal(n, 0);
        store_nodes_free(l, n);

        assert_int_equal(store_node_register(s, "node-b", BASE_USEC, 30 * USEC_PER_SEC, 8, &e1), 0);
        assert_int_equal(e1, 1);
        assert_int_equal(store_node_register(s, "node-a.example", BASE_USEC, 30 * USEC_PER_SEC, 4, &eb), 0);
        assert_int_equal(eb, 1);
        /* node-b again (a restart, or a second process under its name): the epoch moves on, and the
         * first one's heartbeats are refused from now on. */
        assert_int_equal(store_node_register(s, "node-b", BASE_USEC + 10, 30 * USEC_PER_SEC, 16, &e2), 0);
        assert_int_equal(e2, 2);
        assert_int_equal(store_node_heartbeat(s, "node-b", e1, BASE_USEC + 20, 30 * USEC_PER_SEC, 3), -ESTALE);
        assert_int_equal(store_node_heartbeat(s, "node-b", e2, BASE_USEC + 5 * USEC_PER_SEC, 30 * USEC_PER_SEC, 3), 0);
        assert_int_equal(store_node_heartbeat(s, "node-c", 1, BASE_USEC, 30 * USEC_PER_SEC, 0), -ESTALE);
        assert_int_equal(store_node_leave(s, "node-b", e1, BASE_USEC), -ESTALE);

        assert_int_equal(store_node_list(s, &l, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(l[0].name, "node-a.example");
        assert_int_equal(l[0].epoch, 1);
        assert_int_equal(l[0].slots, 4);
        assert_int_equal(l[0].running, 0);
        assert_int_equal(l[0].started_usec, BASE_USEC);
        assert_int_equal(l[0].heartbeat_usec, BASE_USEC);
        assert_int_equal(l[0].lease_expires_usec, BASE_USEC + 30 * USEC_PER_SEC);
        assert_string_equal(l[1].name, "node-b");
        assert_int_equal(l[1].epoch, 2);
        assert_int_equal(l[1].slots, 16);
        assert_int_equal(l[1].running, 3);
        assert_int_equal(l[1].started_usec, BASE_USEC + 10);
        assert_int_equal(l[1].heartbeat_usec, BASE_USEC + 5 * USEC_PER_SEC);
        assert_int_equal(l[1].lease_expires_usec, BASE_USEC + 35 * USEC_PER_SEC);
        /* The lease's expiry, as the API judges it. */
        assert_true(store_node_is_alive(&l[0], BASE_USEC + 30 * USEC_PER_SEC - 1));
        assert_false(store_node_is_alive(&l[0], BASE_USEC + 30 * USEC_PER_SEC));
        assert_true(store_node_is_alive(&l[1], BASE_USEC + 30 * USEC_PER_SEC));
        store_nodes_free(l, n);

        /* node-b leaves: its lease ends now, never later than it was; the row stays, so the next
         * registration continues the epoch. */
        assert_int_equal(store_node_leave(s, "node-b", e2, BASE_USEC + 6 * USEC_PER_SEC), 0);
        assert_int_equal(store_node_leave(s, "node-b", e2, BASE_USEC + 100 * USEC_PER_SEC), 0);
        assert_int_equal(store_node_list(s, &l, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(l[1].lease_expires_usec, BASE_USEC + 6 * USEC_PER_SEC);
        assert_int_equal(l[1].running, 0);
        assert_false(store_node_is_alive(&l[1], BASE_USEC + 6 * USEC_PER_SEC));
        store_nodes_free(l, n);
        assert_int_equal(store_node_register(s, "node-b", BASE_USEC + 7 * USEC_PER_SEC, 30 * USEC_PER_SEC, 16, &e1),
                         0);
        assert_int_equal(e1, 3);

        /* Closed and opened again: the rows are kept. */
        store_close(s);
        s = open_ok();
        assert_int_equal(store_node_register(s, "node-a.example", BASE_USEC, 30 * USEC_PER_SEC, 4, &eb), 0);
        assert_int_equal(eb, 2);

        /* Bad input is refused before the backend sees it. */
        assert_int_equal(store_node_register(s, "", BASE_USEC, 1, 1, &eb), -EINVAL);
        assert_int_equal(store_node_register(s, "a b", BASE_USEC, 1, 1, &eb), -EINVAL);
        assert_int_equal(store_node_register(s, "x/y", BASE_USEC, 1, 1, &eb), -EINVAL);
        assert_int_equal(store_node_register(s, "n1234567890123456789012345678901234567890123456789012345678901234",
                                             BASE_USEC, 1, 1, &eb), -EINVAL);
        assert_int_equal(store_node_register(s, "n", (uint64_t) INT64_MAX, 1, 1, &eb), -EINVAL);
        assert_int_equal(store_node_register(s, "n", BASE_USEC, 1, UINT64_MAX, &eb), -EINVAL);
        assert_int_equal(store_node_register(s, "n", BASE_USEC, 1, 1, NULL), -EINVAL);
        assert_int_equal(store_node_heartbeat(s, "n", UINT64_MAX, BASE_USEC, 1, 0), -EINVAL);
        assert_int_equal(store_node_heartbeat(s, "n", 1, BASE_USEC, 1, UINT64_MAX), -EINVAL);
        assert_int_equal(store_node_leave(s, "", 1, BASE_USEC), -EINVAL);
        assert_int_equal(store_node_list(s, NULL, &n), -EINVAL);
        /* A 64-character name is the longest. */
        assert_int_equal(store_node_register(s, "n123456789012345678901234567890123456789012345678901234567890123",
                                             BASE_USEC, 1, 1, &eb), 0);
}

/* Several processes opening a new store at once (sandboxd nodes starting together, against one
 * PostgreSQL): the migrations run once, every open succeeds, the schema is whole. PostgreSQL only: a
 * SQLite file is one node's, and several processes turning a new file to WAL at once meet SQLite's
 * own deadlock avoidance (SQLITE_BUSY without the busy handler, a hot journal another one removed:
 * 1 run in ~30 failed so here), which is not a way sandboxd is run. */
static void test_concurrent_open(_unused_ void **state) {
        enum { N = 4 };
        pid_t pids[N];
        int status;

        for (size_t i = 0; i < N; i++) {
                pids[i] = fork();
                assert_true(pids[i] >= 0);
                if (pids[i] == 0) {
                        _cleanup_free_ char *error = NULL;
                        Store *s = NULL;
                        int r = store_open_test(&s, &error);

                        if (r < 0)
                                fprintf(stderr, "# child %zu: %d %s\n", i, r, strna(error));
                        store_close(s);
                        _exit(r < 0 ? 1 : 0);
                }
        }
        for (size_t i = 0; i < N; i++) {
                assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
                assert_true(WIFEXITED(status));
                assert_int_equal(WEXITSTATUS(status), 0);
        }
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *r = record_full("exec_c");
        r->callback = callback_new("exec_c", BASE_USEC);
        assert_int_equal(store_put(s, r), 0);
        get_equal(s, r);
        assert_usage(s, "uid:1000", 1, record_bytes(r, r->code) + strlen(r->callback->body), 1);
}

/* PostgreSQL's full disk (SQLSTATE 53100, disk_full), raised by a trigger the way the server raises
 * it when it cannot extend a file: the write fails with -ENOSPC and the server's message, changes
 * nothing, earlier records stay; once there is room again, writes work without reopening. */
static void test_disk_full_pg(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *a = record_full("exec_a"), *b = record_full("exec_b");
        StoreRecord *got = NULL;

        assert_int_equal(store_put(s, a), 0);
        sql_exec_raw("CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN "
                     "RAISE EXCEPTION 'could not extend file \"base/1/2\": No space left on device' "
                     "USING ERRCODE = 'disk_full'; END $f$; "
                     "CREATE TRIGGER full_disk BEFORE INSERT OR UPDATE ON executions "
                     "FOR EACH ROW EXECUTE FUNCTION full_disk()");
        assert_int_equal(store_put(s, b), -ENOSPC);
        assert_non_null(strstr(store_error_message(s), "No space left on device"));
        /* With a delivery: the transaction is rolled back, the connection usable. */
        b->callback = callback_new("exec_b", BASE_USEC);
        assert_int_equal(store_put(s, b), -ENOSPC);
        free(a->exec->out.text);
        a->exec->out.text = strdup("an update that does not fit");
        assert_int_equal(store_put(s, a), -ENOSPC);
        assert_int_equal(store_get(s, "exec_b", &got), -ENOENT);
        assert_int_equal(count(s), 1);

        sql_exec_raw("DROP TRIGGER full_disk ON executions");
        assert_int_equal(store_put(s, b), 0);
        get_equal(s, b);
        assert_int_equal(store_callback_count(s, CALLBACK_PENDING, &(uint64_t) { 0 }), 0);
}

/* What the server's errors become, by SQLSTATE (store-pg.c's table), raised by a trigger on a write:
 * the errno, the server's message kept for the log, the write not done, the connection usable. */
static void test_error_mapping_pg(_unused_ void **state) {
        static const struct {
                const char *sqlstate;
                int error;
        } cases[] = {
                { "53100", -ENOSPC },   /* disk_full */
                { "53200", -ENOMEM },   /* out_of_memory */
                { "53300", -EBUSY },    /* too_many_connections */
                { "54000", -E2BIG },    /* program_limit_exceeded */
                { "23505", -EINVAL },   /* unique_violation */
                { "22001", -EINVAL },   /* string_data_right_truncation */
                { "40001", -EBUSY },    /* serialization_failure */
                { "40P01", -EBUSY },    /* deadlock_detected */
                { "55P03", -EBUSY },    /* lock_not_available */
                { "57014", -EBUSY },    /* query_canceled */
                { "42501", -EACCES },   /* insufficient_privilege */
                { "25006", -EROFS },    /* read_only_sql_transaction */
                { "XX001", -EBADMSG },  /* data_corrupted */
                { "42P01", -EBADMSG },  /* undefined_table */
                { "58030", -EIO },      /* io_error */
                { "P0001", -EIO },      /* raise_exception: anything else */
        };
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *a = record_full("exec_a"), *b = record_full("exec_b");

        assert_int_equal(store_put(s, a), 0);
        sql_exec_raw("CREATE TABLE fail_with (sqlstate TEXT NOT NULL); "
                     "CREATE FUNCTION fail_with() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN "
                     "RAISE EXCEPTION 'failing with %', (SELECT sqlstate FROM fail_with) "
                     "USING ERRCODE = (SELECT sqlstate FROM fail_with); END $f$; "
                     "CREATE TRIGGER fail_with BEFORE INSERT OR UPDATE ON executions "
                     "FOR EACH ROW EXECUTE FUNCTION fail_with()");
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *sql = NULL, *want = NULL;
                int r;

                assert_true(asprintf(&sql, "DELETE FROM fail_with; INSERT INTO fail_with VALUES ('%s')",
                                     cases[i].sqlstate) >= 0);
                sql_exec_raw(sql);
                r = store_put(s, b);
                if (r != cases[i].error) {
                        print_error("SQLSTATE %s: got %d, want %d\n", cases[i].sqlstate, r, cases[i].error);
                        fail();
                }
                assert_true(asprintf(&want, "failing with %s", cases[i].sqlstate) >= 0);
                assert_non_null(strstr(store_error_message(s), want));
                assert_int_equal(count(s), 1);
        }
        sql_exec_raw("DROP TRIGGER fail_with ON executions");
        assert_int_equal(store_put(s, b), 0);
        assert_int_equal(count(s), 2);
}

/* The server ends the store's connection (a restart, a failover, an administrator): the call that
 * notices fails with -EIO, the next one reconnects, nothing committed is lost. */
/* Connection strings the store refuses before connecting: malformed, or holding a password (a file
 * must: the string is in the configuration and may be logged). Neither message quotes the string. */
static void test_bad_conninfo_pg(_unused_ void **state) {
        static const struct {
                const char *conninfo, *message;
        } cases[] = {
                { "host=/nowhere password=hunter2", "holds a password" },
                { "postgresql://sandboxd:hunter2@localhost/db", "holds a password" },
                { "postgresql://localhost/db?password=hunter2", "holds a password" },
                { "host='unterminated", "invalid connection string" },
                { "nokey=1", "invalid connection string" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *error = NULL;
                Store *s = NULL;

                assert_int_equal(store_open_pg(cases[i].conninfo, &s, &error), -EINVAL);
                assert_null(s);
                assert_non_null(error);
                fprintf(stderr, "# %s\n", error);
                assert_non_null(strstr(error, cases[i].message));
                assert_null(strstr(error, "hunter2"));
        }
}

/* A password in a file, as the configuration documents it: a service file (PGSERVICEFILE) naming the
 * server, the role and a passfile= of mode 0600; the connection string is "service=NAME" alone. The
 * role sandboxd_pw must authenticate (tests/pg/pg-scratch's pg_hba.conf: scram-sha-256). Without
 * the file, or with a wrong password in it: -EACCES, and the message never holds the password. */
static void test_password_file_pg(_unused_ void **state) {
        char dir[] = "/tmp/test-store-pw-XXXXXX", host[512] = "";
        _cleanup_free_ char *sql = NULL, *services = NULL, *good = NULL, *bad = NULL, *svcpath = NULL;
        const char *h = strstr(pg_conninfo, "host=");
        uint64_t n = 1;
        FILE *f;

        assert_non_null(h);
        assert_int_equal(sscanf(h, "host=%511s", host), 1);
        assert_non_null(mkdtemp(dir));
        assert_true(asprintf(&sql, "DROP ROLE IF EXISTS sandboxd_pw; CREATE ROLE sandboxd_pw LOGIN PASSWORD "
                             "'pw-Zq8vK3'; ALTER DATABASE %s OWNER TO sandboxd_pw", dbpath) >= 0);
        assert_int_equal(pg_exec_in(pg_conninfo, sql), 0);

        assert_true(asprintf(&good, "%s/pgpass", dir) >= 0);
        assert_true(asprintf(&bad, "%s/pgpass-wrong", dir) >= 0);
        assert_true(asprintf(&svcpath, "%s/pg_service.conf", dir) >= 0);
        f = fopen(good, "we");
        assert_non_null(f);
        fputs("*:*:*:sandboxd_pw:pw-Zq8vK3\n", f);
        assert_int_equal(fclose(f), 0);
        f = fopen(bad, "we");
        assert_non_null(f);
        fputs("*:*:*:sandboxd_pw:not-it-4Rt\n", f);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(chmod(good, 0600), 0);
        assert_int_equal(chmod(bad, 0600), 0);
        assert_true(asprintf(&services,
                             "[sbx]\nhost=%s\nport=5432\nuser=sandboxd_pw\ndbname=%s\npassfile=%s\n"
                             "[sbx_nofile]\nhost=%s\nport=5432\nuser=sandboxd_pw\ndbname=%s\npassfile=%s/none\n"
                             "[sbx_wrong]\nhost=%s\nport=5432\nuser=sandboxd_pw\ndbname=%s\npassfile=%s\n",
                             host, dbpath, good, host, dbpath, dir, host, dbpath, bad) >= 0);
        f = fopen(svcpath, "we");
        assert_non_null(f);
        fputs(services, f);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(setenv("PGSERVICEFILE", svcpath, 1), 0);

        {
                _cleanup_(store_closep) Store *s = NULL;
                _cleanup_free_ char *error = NULL;

                assert_int_equal(store_open_pg("service=sbx", &s, &error), 0);
                assert_int_equal(store_count(s, &n), 0);
                assert_int_equal(n, 0);
        }
        for (size_t i = 0; i < 2; i++) {
                _cleanup_free_ char *error = NULL;
                Store *s = NULL;

                assert_int_equal(store_open_pg(i == 0 ? "service=sbx_nofile" : "service=sbx_wrong", &s, &error), -EACCES);
                assert_null(s);
                assert_non_null(error);
                fprintf(stderr, "# %s\n", error);
                assert_non_null(strstr(error, dbpath));
                assert_null(strstr(error, "pw-Zq8vK3"));
                assert_null(strstr(error, "not-it-4Rt"));
        }
        assert_int_equal(unsetenv("PGSERVICEFILE"), 0);
        (void) unlink(good);
        (void) unlink(bad);
        (void) unlink(svcpath);
        (void) rmdir(dir);
        free(sql);
        assert_true(asprintf(&sql, "ALTER DATABASE %s OWNER TO sandboxd", dbpath) >= 0);
        assert_int_equal(pg_exec_in(pg_conninfo, sql), 0);
}

static void test_reconnect_pg(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *a = record_full("exec_a");
        _cleanup_free_ char *sql = NULL;
        uint64_t n = 0;
        int r;

        assert_int_equal(store_put(s, a), 0);
        assert_true(asprintf(&sql, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE application_name = 'sandboxd' AND datname = '%s'", dbpath) >= 0);
        assert_int_equal(pg_exec_in(pg_conninfo, sql), 0);

        r = store_count(s, &n);
        fprintf(stderr, "# after the backend was terminated: %d %s\n", r, store_error_message(s));
        assert_int_equal(r, -EIO);
        assert_int_equal(store_count(s, &n), 0);
        assert_int_equal(n, 1);
        get_equal(s, a);
        /* The session's settings came back with it: a second session holding the row makes a write
         * wait lock_timeout, then -EBUSY. */
        free(sql);
        assert_true(asprintf(&sql, "%s dbname=%s", pg_conninfo, dbpath) >= 0);
        PGconn *c = PQconnectdb(sql);
        assert_int_equal(PQstatus(c), CONNECTION_OK);
        PQclear(PQexec(c, "BEGIN; SELECT 1 FROM executions WHERE execution_id = 'exec_a' FOR UPDATE"));
        assert_int_equal(store_put(s, a), -EBUSY);
        PQclear(PQexec(c, "ROLLBACK"));
        PQfinish(c);
        assert_int_equal(store_put(s, a), 0);
}

/* The database stops taking connections while the store's is cut: every call fails with -EIO, and
 * between two attempts (a backoff) without trying again; once connections are allowed, a call after
 * the backoff reconnects. */
static void test_reconnect_backoff_pg(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_free_ char *deny = NULL, *allow = NULL, *cut = NULL;
        uint64_t n = 0;
        int r = 0;

        assert_true(asprintf(&deny, "ALTER DATABASE %s ALLOW_CONNECTIONS false", dbpath) >= 0);
        assert_true(asprintf(&allow, "ALTER DATABASE %s ALLOW_CONNECTIONS true", dbpath) >= 0);
        assert_true(asprintf(&cut, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE application_name = 'sandboxd' AND datname = '%s'", dbpath) >= 0);
        assert_int_equal(store_count(s, &n), 0);
        assert_int_equal(pg_exec_in(pg_conninfo, deny), 0);
        assert_int_equal(pg_exec_in(pg_conninfo, cut), 0);

        assert_int_equal(store_count(s, &n), -EIO);     /* the cut connection */
        assert_int_equal(store_count(s, &n), -EIO);     /* an attempt, refused */
        fprintf(stderr, "# %s\n", store_error_message(s));
        assert_non_null(strstr(store_error_message(s), "not currently accepting connections"));
        assert_int_equal(store_count(s, &n), -EIO);     /* within the backoff: no attempt */
        fprintf(stderr, "# %s\n", store_error_message(s));
        assert_non_null(startswith(store_error_message(s), "not connected, next attempt in "));

        assert_int_equal(pg_exec_in(pg_conninfo, allow), 0);
        /* The first backoff step is 100-200 ms; a few seconds is plenty. */
        for (unsigned i = 0; i < 100; i++) {
                r = store_count(s, &n);
                if (r == 0)
                        break;
                assert_int_equal(r, -EIO);
                (void) usleep(50 * 1000);
        }
        assert_int_equal(r, 0);
        assert_int_equal(n, 0);
}

static unsigned n_reconnected, n_cancel_after;

static void on_reconnect_notify(_unused_ void *userdata, const char *channel, const char *payload) {
        n_reconnected += streq(channel, STORE_CHANNEL_RECONNECTED);
        n_cancel_after += streq(channel, STORE_CHANNEL_CANCEL) && streq(payload, "after-reconnect");
}

/* With an event loop attached (the daemon's), the reconnection runs there: calls meanwhile fail at
 * once, saying so, and once the database takes connections again the loop alone (no call) brings the
 * connection back, its session settings with it (sent without waiting, in one query): lock_timeout,
 * and the LISTENs (a notification sent after it arrives; the listener was told of the reconnection). */
static void test_reconnect_event_pg(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *a = record_full("exec_a");
        _cleanup_free_ char *deny = NULL, *allow = NULL, *cut = NULL, *sql = NULL;
        sd_event *e = NULL;
        uint64_t n = 0;

        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(store_attach_event(s, e), 0);
        assert_int_equal(store_attach_event(s, e), -EBUSY);
        n_reconnected = n_cancel_after = 0;
        assert_int_equal(store_set_notify(s, on_reconnect_notify, NULL), 0);
        assert_int_equal(store_put(s, a), 0);
        assert_true(asprintf(&deny, "ALTER DATABASE %s ALLOW_CONNECTIONS false", dbpath) >= 0);
        assert_true(asprintf(&allow, "ALTER DATABASE %s ALLOW_CONNECTIONS true", dbpath) >= 0);
        assert_true(asprintf(&cut, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE application_name = 'sandboxd' AND datname = '%s'", dbpath) >= 0);
        assert_int_equal(pg_exec_in(pg_conninfo, deny), 0);
        assert_int_equal(pg_exec_in(pg_conninfo, cut), 0);

        assert_int_equal(store_count(s, &n), -EIO);     /* the cut connection */
        assert_int_equal(store_count(s, &n), -EIO);     /* reconnecting on the loop, or refused */
        fprintf(stderr, "# %s\n", store_error_message(s));
        assert_non_null(startswith(store_error_message(s), "not connected, "));
        /* The loop runs the attempts; the server refuses them. */
        for (unsigned i = 0; i < 20; i++)
                assert_true(sd_event_run(e, 50 * USEC_PER_MSEC) >= 0);
        assert_int_equal(store_count(s, &n), -EIO);
        fprintf(stderr, "# %s\n", store_error_message(s));
        assert_non_null(strstr(store_error_message(s), "not currently accepting connections"));

        assert_int_equal(pg_exec_in(pg_conninfo, allow), 0);
        /* The loop alone, no call: the backoff after a few failures is well under 3 s. */
        for (unsigned i = 0; i < 60; i++)
                assert_true(sd_event_run(e, 50 * USEC_PER_MSEC) >= 0);
        assert_int_equal(store_count(s, &n), 0);
        assert_int_equal(n, 1);
        get_equal(s, a);
        /* lock_timeout is set again: a row another session holds makes a write fail with -EBUSY. */
        assert_true(asprintf(&sql, "%s dbname=%s", pg_conninfo, dbpath) >= 0);
        PGconn *c = PQconnectdb(sql);
        assert_int_equal(PQstatus(c), CONNECTION_OK);
        PQclear(PQexec(c, "BEGIN; SELECT 1 FROM executions WHERE execution_id = 'exec_a' FOR UPDATE"));
        assert_int_equal(store_put(s, a), -EBUSY);
        PQclear(PQexec(c, "ROLLBACK"));
        assert_int_equal(n_reconnected, 1);
        assert_int_equal(n_cancel_after, 0);
        PQclear(PQexec(c, "NOTIFY " STORE_CHANNEL_CANCEL ", 'after-reconnect'"));
        for (unsigned i = 0; i < 100 && n_cancel_after == 0; i++)
                assert_true(sd_event_run(e, 20 * USEC_PER_MSEC) >= 0);
        assert_int_equal(n_cancel_after, 1);
        PQfinish(c);
        store_close(TAKE_PTR(s));
        sd_event_unref(e);
}

/* ---- asynchronous calls ---- */

#define ASYNC_SEEN_MAX (STORE_ASYNC_MAX + 8)

/* What the callbacks saw, in the order they were called. */
typedef struct AsyncSeen {
        size_t n;
        int r[ASYNC_SEEN_MAX];
        uintptr_t tag[ASYNC_SEEN_MAX];
        StoreRecord *rec[ASYNC_SEEN_MAX];
        char *error[ASYNC_SEEN_MAX];
} AsyncSeen;

static AsyncSeen seen;
static Store *seen_store;

static void seen_reset(void) {
        for (size_t i = 0; i < seen.n; i++) {
                store_record_free(seen.rec[i]);
                free(seen.error[i]);
        }
        seen = (AsyncSeen) {};
}

/* userdata: a tag (1, 2 ...), cast. */
static void on_async_done(void *userdata, int r, StoreRecord *rec) {
        assert_true(seen.n < ASYNC_SEEN_MAX);
        seen.tag[seen.n] = (uintptr_t) userdata;
        seen.r[seen.n] = r;
        seen.rec[seen.n] = rec;
        seen.error[seen.n] = r < 0 ? strdup(store_error_message(seen_store)) : NULL;
        seen.n++;
}

/* Run the loop until n callbacks came, or about timeout_ms went by. */
static void run_until(sd_event *e, size_t n, unsigned timeout_ms) {
        for (unsigned i = 0; i < timeout_ms / 10 && seen.n < n; i++)
                assert_true(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
}

static Store *open_with_event(sd_event **ret_event) {
        Store *s = open_ok();

        assert_int_equal(sd_event_new(ret_event), 0);
        assert_int_equal(store_attach_event(s, *ret_event), 0);
        seen_reset();
        seen_store = s;
        return s;
}

static void close_with_event(Store *s, sd_event *e) {
        store_close(s);
        sd_event_unref(e);
        seen_reset();
        seen_store = NULL;
}

/* Several writes of one execution, asynchronous, then a synchronous read: the read waits for them
 * and sees the last; the callbacks come afterwards, from the loop, in order. */
static void test_async_order(_unused_ void **state) {
        sd_event *e = NULL;
        Store *s = open_with_event(&e);
        _cleanup_(store_record_freep) StoreRecord *r = record_on("exec_a", EXEC_RUNNING, NULL, 0, BASE_USEC);
        _cleanup_(store_record_freep) StoreRecord *got = NULL;
        StoreCall *c = NULL;

        assert_int_equal(store_put(s, r), 0);
        for (unsigned i = 1; i <= 5; i++) {
                r->exec->duration_ms = i;
                r->exec->out.lines = 10 * i;
                assert_int_equal(store_put_async(s, r, on_async_done, (void *) (uintptr_t) i, &c), 0);
                assert_non_null(c);
        }
        assert_int_equal(store_async_pending(s), 5);
        /* Nothing called back from inside a call. */
        assert_int_equal(seen.n, 0);
        assert_int_equal(store_get(s, "exec_a", &got), 0);
        assert_int_equal(got->exec->duration_ms, 5);
        assert_record_equal(r, got);
        assert_int_equal(seen.n, 0);

        /* A read, asynchronous, behind a write. */
        r->exec->duration_ms = 6;
        assert_int_equal(store_put_async(s, r, on_async_done, (void *) 6, NULL), 0);
        assert_int_equal(store_get_async(s, "exec_a", on_async_done, (void *) 7, NULL), 0);
        assert_int_equal(store_get_async(s, "exec_none", on_async_done, (void *) 8, NULL), 0);
        assert_int_equal(store_get_async(s, "not an id!", on_async_done, (void *) 9, NULL), 0);
        assert_int_equal(seen.n, 0);
        run_until(e, 9, 5000);
        assert_int_equal(seen.n, 9);
        for (unsigned i = 0; i < 7; i++) {
                assert_int_equal(seen.tag[i], i + 1);
                assert_int_equal(seen.r[i], 0);
        }
        assert_null(seen.rec[0]);
        assert_non_null(seen.rec[6]);
        assert_record_equal(r, seen.rec[6]);
        assert_int_equal(seen.r[7], -ENOENT);
        assert_null(seen.rec[7]);
        assert_int_equal(seen.r[8], -ENOENT);
        assert_int_equal(store_async_pending(s), 0);

        /* A barrier behind writes: answered after them, with nothing of its own; alone, at once (from
         * the loop all the same). */
        r->exec->duration_ms = 7;
        assert_int_equal(store_put_async(s, r, on_async_done, (void *) 10, NULL), 0);
        assert_int_equal(store_put_async(s, r, on_async_done, (void *) 11, NULL), 0);
        assert_int_equal(store_barrier_async(s, on_async_done, (void *) 12, NULL), 0);
        assert_int_equal(seen.n, 9);
        run_until(e, 12, 5000);
        assert_int_equal(seen.n, 12);
        assert_int_equal(seen.tag[9], 10);
        assert_int_equal(seen.tag[10], 11);
        assert_int_equal(seen.tag[11], 12);
        assert_int_equal(seen.r[11], 0);
        assert_null(seen.rec[11]);
        assert_int_equal(store_barrier_async(s, on_async_done, (void *) 13, NULL), 0);
        assert_int_equal(seen.n, 12);
        run_until(e, 13, 5000);
        assert_int_equal(seen.tag[12], 13);
        assert_int_equal(store_async_pending(s), 0);

        /* Refused at once, never called back. */
        assert_int_equal(store_put_async(s, NULL, on_async_done, NULL, NULL), -EINVAL);
        assert_int_equal(store_get_async(s, NULL, on_async_done, NULL, NULL), -EINVAL);
        close_with_event(s, e);
}

/* The lease renewed asynchronously: the current epoch's renews (the registry shows it), an older
 * epoch's is fenced (-ESTALE, through the callback); invalid arguments refused at once. Then
 * store_async_drain(): calls queued are made and called back before it returns. */
static void test_async_heartbeat(_unused_ void **state) {
        sd_event *e = NULL;
        Store *s = open_with_event(&e);
        StoreNode *l = NULL;
        uint64_t e1 = 0, e2 = 0;
        size_t n = 0;

        assert_int_equal(store_node_register(s, "node-h", BASE_USEC, 30 * USEC_PER_SEC, 4, &e1), 0);
        assert_int_equal(store_node_register(s, "node-h", BASE_USEC + 1, 30 * USEC_PER_SEC, 4, &e2), 0);
        assert_int_equal(store_node_heartbeat_async(s, "node-h", e2, BASE_USEC + 500, 30 * USEC_PER_SEC, 7,
                                                    on_async_done, (void *) 1, NULL), 0);
        assert_int_equal(store_node_heartbeat_async(s, "node-h", e1, BASE_USEC + 600, 30 * USEC_PER_SEC, 1,
                                                    on_async_done, (void *) 2, NULL), 0);
        assert_int_equal(store_node_heartbeat_async(s, "no such node", e2, BASE_USEC, 30 * USEC_PER_SEC, 1,
                                                    on_async_done, (void *) 3, NULL), -EINVAL);
        assert_int_equal(seen.n, 0);
        run_until(e, 2, 5000);
        assert_int_equal(seen.n, 2);
        assert_int_equal(seen.tag[0], 1);
        assert_int_equal(seen.r[0], 0);
        assert_null(seen.rec[0]);
        assert_int_equal(seen.tag[1], 2);
        assert_int_equal(seen.r[1], -ESTALE);
        assert_int_equal(store_node_list(s, &l, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(l[0].epoch, e2);
        assert_int_equal(l[0].heartbeat_usec, BASE_USEC + 500);
        assert_int_equal(l[0].running, 7);
        store_nodes_free(l, n);

        /* Drained: made and called back before store_async_drain() returns, no loop iteration. */
        assert_int_equal(store_node_heartbeat_async(s, "node-h", e2, BASE_USEC + 900, 30 * USEC_PER_SEC, 2,
                                                    on_async_done, (void *) 4, NULL), 0);
        assert_int_equal(seen.n, 2);
        store_async_drain(s);
        assert_int_equal(seen.n, 3);
        assert_int_equal(seen.tag[2], 4);
        assert_int_equal(seen.r[2], 0);
        assert_int_equal(store_async_pending(s), 0);
        close_with_event(s, e);
}

static struct {
        size_t n;
        int r[4];
        uint64_t v[4];
} registered;

static void on_registered(void *userdata, int r, uint64_t v) {
        assert_true(registered.n < ELEMENTSOF(registered.r));
        registered.r[registered.n] = r;
        registered.v[registered.n++] = v;
}

/* A registration without waiting: a new name's epoch 1, the same name again epoch 2 (the row's lease
 * and slots the second's), in the order of the calls; invalid arguments refused at once. */
static void test_async_register(_unused_ void **state) {
        sd_event *e = NULL;
        Store *s = open_with_event(&e);
        StoreNode *l = NULL;
        size_t n = 0;

        registered.n = 0;
        assert_int_equal(store_node_register_async(s, "node-r", BASE_USEC, 30 * USEC_PER_SEC, 4, on_registered, NULL,
                                                   NULL), 0);
        assert_int_equal(store_node_register_async(s, "node-r", BASE_USEC + 5, 20 * USEC_PER_SEC, 6, on_registered,
                                                   NULL, NULL), 0);
        assert_int_equal(store_node_register_async(s, "a b", BASE_USEC, 1, 1, on_registered, NULL, NULL), -EINVAL);
        assert_int_equal(registered.n, 0);
        for (unsigned i = 0; i < 500 && registered.n < 2; i++)
                assert_true(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
        assert_int_equal(registered.n, 2);
        assert_int_equal(registered.r[0], 0);
        assert_int_equal(registered.v[0], 1);
        assert_int_equal(registered.r[1], 0);
        assert_int_equal(registered.v[1], 2);
        assert_int_equal(store_node_list(s, &l, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(l[0].epoch, 2);
        assert_int_equal(l[0].slots, 6);
        assert_int_equal(l[0].lease_expires_usec, BASE_USEC + 5 + 20 * USEC_PER_SEC);
        store_nodes_free(l, n);
        close_with_event(s, e);
}

/* A final record with its callback delivery, asynchronous (one statement on PostgreSQL): written
 * together; fenced (the row another node's at a newer epoch) neither is, -ESTALE through the
 * callback; a retried final write keeps the first delivery. */
static void test_async_put_callback(_unused_ void **state) {
        sd_event *e = NULL;
        Store *s = open_with_event(&e);
        _cleanup_(store_record_freep) StoreRecord *a = record_on("exec_pcb", EXEC_SUCCESS, "n1", 1, BASE_USEC);
        _cleanup_(store_record_freep) StoreRecord *held = record_on("exec_pcf", EXEC_RUNNING, "n2", 3, BASE_USEC);
        _cleanup_(store_record_freep) StoreRecord *late = record_on("exec_pcf", EXEC_SUCCESS, "n1", 1, BASE_USEC);
        _cleanup_(store_record_freep) StoreRecord *got = NULL;
        StoreCallback *cb = NULL;

        a->callback = callback_new("exec_pcb", BASE_USEC + 10);
        late->callback = callback_new("exec_pcf", BASE_USEC + 10);
        assert_int_equal(store_put(s, held), 0);
        assert_int_equal(store_put_async(s, a, on_async_done, (void *) 1, NULL), 0);
        assert_int_equal(store_put_async(s, late, on_async_done, (void *) 2, NULL), 0);
        /* The same final record again with another body: the delivery stays the first. */
        free(a->callback->body);
        a->callback->body = strdup("{\"second\":true}");
        assert_non_null(a->callback->body);
        assert_int_equal(store_put_async(s, a, on_async_done, (void *) 3, NULL), 0);
        run_until(e, 3, 5000);
        assert_int_equal(seen.n, 3);
        assert_int_equal(seen.tag[0], 1);
        assert_int_equal(seen.r[0], 0);
        assert_int_equal(seen.tag[1], 2);
        assert_int_equal(seen.r[1], -ESTALE);
        assert_non_null(seen.error[1]);
        assert_int_equal(seen.tag[2], 3);
        assert_int_equal(seen.r[2], 0);

        assert_int_equal(store_callback_get(s, "exec_pcb", true, &cb), 0);
        assert_string_equal(cb->body, "{\"execution_id\":\"exec_pcb\",\"stdout\":\"w\u00f6rld\"}");
        assert_int_equal(cb->state, CALLBACK_PENDING);
        assert_int_equal(cb->next_attempt_usec, BASE_USEC + 10);
        cb = store_callback_free(cb);
        assert_int_equal(store_get(s, "exec_pcb", &got), 0);
        assert_int_equal(got->exec->status, EXEC_SUCCESS);
        got = store_record_free(got);

        /* Fenced: neither the record nor its delivery. */
        assert_int_equal(store_callback_get(s, "exec_pcf", true, &cb), -ENOENT);
        assert_int_equal(store_get(s, "exec_pcf", &got), 0);
        assert_int_equal(got->exec->status, EXEC_RUNNING);
        assert_string_equal(got->exec->node, "n2");
        close_with_event(s, e);
}

/* A new session's row with its first run's record (store_put_session_async()): both written; a record
 * the fence keeps out takes the session's row with it on PostgreSQL (one transaction: neither), and
 * the connection goes on at once. */
static void test_async_put_session(_unused_ void **state) {
        sd_event *e = NULL;
        Store *s = open_with_event(&e);
        _cleanup_(store_record_freep) StoreRecord *q = record_queued("exec_ps", "n1", "uid:0", BASE_USEC);
        _cleanup_(store_record_freep) StoreRecord *held = record_on("exec_pf2", EXEC_RUNNING, "n2", 3, BASE_USEC);
        _cleanup_(store_record_freep) StoreRecord *late = record_on("exec_pf2", EXEC_QUEUED, "n1", 1, BASE_USEC);
        _cleanup_(store_record_freep) StoreRecord *got = NULL;
        StoreSession x = { .session_id = (char *) "sess-ps", .owner = (char *) "uid:0", .mount_unit = (char *) "ps.mount",
                           .path = (char *) "/p/ps", .disk_mb = 16, .created_usec = 10, .last_used_usec = 20,
                           .node = (char *) "n1" }, y = x, bad = x, *l = NULL;

        y.session_id = (char *) "sess-pf";
        bad.session_id = (char *) "../bad";
        assert_int_equal(store_put_session_async(s, q, &bad, on_async_done, NULL, NULL), -EINVAL);
        assert_int_equal(store_put(s, held), 0);
        assert_int_equal(store_put_session_async(s, q, &x, on_async_done, (void *) 1, NULL), 0);
        assert_int_equal(store_put_session_async(s, late, &y, on_async_done, (void *) 2, NULL), 0);
        assert_int_equal(store_get_async(s, "exec_ps", on_async_done, (void *) 3, NULL), 0);
        run_until(e, 3, 5000);
        assert_int_equal(seen.n, 3);
        assert_int_equal(seen.r[0], 0);
        assert_int_equal(seen.r[1], -ESTALE);
        assert_int_equal(seen.r[2], 0);
        assert_string_equal(seen.rec[2]->exec->id, "exec_ps");
        assert_int_equal(store_session_get(s, "sess-ps", &l), 0);
        assert_int_equal(l->disk_mb, 16);
        store_sessions_free(l, 1);
        l = NULL;
        if (is_pg())
                assert_int_equal(store_session_get(s, "sess-pf", &l), -ENOENT);
        assert_int_equal(store_get(s, "exec_pf2", &got), 0);
        assert_int_equal(got->exec->status, EXEC_RUNNING);
        close_with_event(s, e);
}

/* The dispatch's claim, asynchronous: the first of two nodes claims (0), the second is told -ESTALE,
 * both through the callback; the row is the first's. A backend of one node: -EOPNOTSUPP at once. */
static void test_async_claim(_unused_ void **state) {
        sd_event *e = NULL;
        Store *s = open_with_event(&e);
        _cleanup_(store_record_freep) StoreRecord *q = record_queued("exec_cq", "n1", "key:a", BASE_USEC);
        _cleanup_(store_record_freep) StoreRecord *got = NULL;

        if (!is_pg()) {
                assert_int_equal(store_claim_async(s, "exec_cq", "n1", 1, on_async_done, NULL, NULL), -EOPNOTSUPP);
                assert_int_equal(store_queue_notify_async(s, "n1", on_async_done, NULL, NULL), -EOPNOTSUPP);
                assert_int_equal(store_claim_next_async(s, "n2", 1, NULL, 0, on_async_done, NULL, NULL), -EOPNOTSUPP);
                assert_int_equal(store_async_pending(s), 0);
                close_with_event(s, e);
                return;
        }
        assert_int_equal(store_put(s, q), 0);
        assert_int_equal(store_claim_async(s, "exec_cq", "n1", 0, on_async_done, NULL, NULL), -EINVAL);
        assert_int_equal(store_claim_async(s, "exec_cq", "n2", 3, on_async_done, (void *) 1, NULL), 0);
        assert_int_equal(store_claim_async(s, "exec_cq", "n1", 5, on_async_done, (void *) 2, NULL), 0);
        assert_int_equal(store_queue_notify_async(s, "bad name!", on_async_done, NULL, NULL), -EINVAL);
        assert_int_equal(store_queue_notify_async(s, "n1", on_async_done, (void *) 3, NULL), 0);
        assert_int_equal(seen.n, 0);
        run_until(e, 3, 5000);
        assert_int_equal(seen.n, 3);
        assert_int_equal(seen.tag[2], 3);
        assert_int_equal(seen.r[2], 0);
        assert_int_equal(seen.tag[0], 1);
        assert_int_equal(seen.r[0], 0);
        assert_int_equal(seen.tag[1], 2);
        assert_int_equal(seen.r[1], -ESTALE);
        assert_non_null(seen.error[1]);
        assert_int_equal(store_get(s, "exec_cq", &got), 0);
        assert_string_equal(got->exec->node, "n2");
        assert_int_equal(got->exec->node_epoch, 3);

        /* The next one, asynchronously: key:b's (key:a skipped), then nothing left (-ENOENT). */
        {
                _cleanup_(store_record_freep) StoreRecord *qa = record_queued("exec_cqa", "n1", "key:a", BASE_USEC + 1);
                _cleanup_(store_record_freep) StoreRecord *qb = record_queued("exec_cqb", "n1", "key:b", BASE_USEC + 2);
                char *skip[] = { (char *) "key:a" };

                assert_int_equal(store_put(s, qa), 0);
                assert_int_equal(store_put(s, qb), 0);
                assert_int_equal(store_claim_next_async(s, "n3", 2, NULL, 1, on_async_done, NULL, NULL), -EINVAL);
                assert_int_equal(store_claim_next_async(s, "n3", 2, skip, 1, on_async_done, (void *) 4, NULL), 0);
                assert_int_equal(store_claim_next_async(s, "n3", 2, skip, 1, on_async_done, (void *) 5, NULL), 0);
                run_until(e, 5, 5000);
                assert_int_equal(seen.n, 5);
                assert_int_equal(seen.r[3], 0);
                assert_non_null(seen.rec[3]);
                assert_string_equal(seen.rec[3]->exec->id, "exec_cqb");
                assert_string_equal(seen.rec[3]->exec->node, "n3");
                assert_int_equal(seen.r[4], -ENOENT);
                assert_null(seen.rec[4]);
        }
        close_with_event(s, e);
}

/* A session's row written and deleted without waiting: the write's copy is taken at the call (the
 * caller's struct changes after it), the delete comes after it in order, both answered through the
 * callback; an invalid session is refused at once. */
static void test_async_sessions(_unused_ void **state) {
        sd_event *e = NULL;
        Store *s = open_with_event(&e);
        char path[] = "/p/x";
        StoreSession x = { .session_id = (char *) "sess-x", .owner = (char *) "uid:0", .mount_unit = (char *) "x.mount",
                           .path = path, .disk_mb = 16, .created_usec = 10, .last_used_usec = 20, .executions = 3,
                           .node = (char *) "node-x" }, bad = x, *l = NULL;
        size_t n = 0;

        bad.session_id = (char *) "../bad";
        assert_int_equal(store_session_put_async(s, &bad, on_async_done, NULL, NULL), -EINVAL);
        assert_int_equal(store_session_delete_async(s, "../bad", on_async_done, NULL, NULL), -EINVAL);
        assert_int_equal(store_session_put_async(s, &x, on_async_done, (void *) 1, NULL), 0);
        path[1] = 'q';  /* after the call: not what is written */
        x.executions = 4;
        assert_int_equal(seen.n, 0);
        run_until(e, 1, 5000);
        assert_int_equal(seen.n, 1);
        assert_int_equal(seen.r[0], 0);
        assert_int_equal(store_session_list(s, &l, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(l[0].path, "/p/x");
        assert_int_equal(l[0].executions, 3);
        assert_string_equal(l[0].node, "node-x");
        store_sessions_free(l, n);

        assert_int_equal(store_session_put_async(s, &x, on_async_done, (void *) 2, NULL), 0);
        assert_int_equal(store_session_delete_async(s, "sess-x", on_async_done, (void *) 3, NULL), 0);
        assert_int_equal(store_session_delete_async(s, "sess-none", on_async_done, (void *) 4, NULL), 0);
        run_until(e, 4, 5000);
        assert_int_equal(seen.n, 4);
        for (unsigned i = 1; i < 4; i++) {
                assert_int_equal(seen.tag[i], i + 1);
                assert_int_equal(seen.r[i], 0);
        }
        assert_int_equal(store_session_list(s, &l, &n), 0);
        assert_int_equal(n, 0);
        store_sessions_free(l, n);
        close_with_event(s, e);
}

/* An owner's usage and one session, read without waiting: what the synchronous reads return, from
 * the loop; a session that is not there -ENOENT; a cancelled read not delivered (ASan: not leaked). */
static struct {
        unsigned calls;
        int r;
        StoreUsage u;
        StoreSession *x;
} got;

static void on_usage_got(void *userdata, int r, const StoreUsage *u) {
        got.calls++;
        got.r = r;
        got.u = u ? *u : (StoreUsage) { .records = UINT64_MAX };
}

static void on_session_got(void *userdata, int r, StoreSession *x) {
        got.calls++;
        got.r = r;
        store_sessions_free(got.x, got.x ? 1 : 0);
        got.x = x;
}

static void run_until_got(sd_event *e, unsigned n) {
        for (unsigned i = 0; i < 500 && got.calls < n; i++)
                assert_true(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
}

static void test_async_usage_session(_unused_ void **state) {
        sd_event *e = NULL;
        Store *s = open_with_event(&e);
        _cleanup_(store_record_freep) StoreRecord *a = record_full("exec_ua");
        StoreSession x = { .session_id = (char *) "sess-y", .owner = (char *) "uid:1000", .mount_unit = (char *) "y.mount",
                           .path = (char *) "/p/y", .disk_mb = 32, .created_usec = 10, .last_used_usec = 20,
                           .node = (char *) "node-y" };
        StoreUsage want = {};
        StoreCall *c = NULL;

        got = (typeof(got)) {};
        assert_int_equal(store_usage_get_async(s, "", on_usage_got, NULL, NULL), -EINVAL);
        assert_int_equal(store_session_get_async(s, "../bad", on_session_got, NULL, NULL), -EINVAL);

        /* The usage of an owner without records: zero, not an error. */
        assert_int_equal(store_usage_get_async(s, "uid:1000", on_usage_got, NULL, NULL), 0);
        assert_int_equal(got.calls, 0);
        run_until_got(e, 1);
        assert_int_equal(got.r, 0);
        assert_int_equal(got.u.records, 0);
        assert_int_equal(got.u.bytes, 0);
        /* With a record: the synchronous read's numbers. */
        assert_int_equal(store_put(s, a), 0);
        assert_int_equal(store_usage_get(s, "uid:1000", &want), 0);
        assert_int_equal(want.records, 1);
        assert_int_equal(store_usage_get_async(s, "uid:1000", on_usage_got, NULL, NULL), 0);
        run_until_got(e, 2);
        assert_int_equal(got.r, 0);
        assert_int_equal(got.u.records, 1);
        assert_int_equal(got.u.bytes, want.bytes);

        /* A session: not there, then there. */
        assert_int_equal(store_session_get_async(s, "sess-y", on_session_got, NULL, NULL), 0);
        run_until_got(e, 3);
        assert_int_equal(got.r, -ENOENT);
        assert_null(got.x);
        assert_int_equal(store_session_put(s, &x), 0);
        assert_int_equal(store_session_get_async(s, "sess-y", on_session_got, NULL, NULL), 0);
        run_until_got(e, 4);
        assert_int_equal(got.r, 0);
        assert_non_null(got.x);
        assert_string_equal(got.x->path, "/p/y");
        assert_string_equal(got.x->node, "node-y");
        assert_int_equal(got.x->disk_mb, 32);

        /* Cancelled: neither delivered; the next ones are, in order. */
        assert_int_equal(store_session_get_async(s, "sess-y", on_session_got, NULL, &c), 0);
        (void) store_call_cancel(c);
        assert_int_equal(store_usage_get_async(s, "uid:1000", on_usage_got, NULL, &c), 0);
        (void) store_call_cancel(c);
        assert_int_equal(store_usage_get_async(s, "uid:2", on_usage_got, NULL, NULL), 0);
        run_until_got(e, 5);
        assert_int_equal(got.calls, 5);
        assert_int_equal(got.u.records, 0);
        assert_int_equal(store_async_pending(s), 0);

        store_sessions_free(got.x, got.x ? 1 : 0);
        got = (typeof(got)) {};
        close_with_event(s, e);
}

/* The list without waiting: page for page what store_list() gives (the same rows, the same cursors),
 * a query that matches nothing answered empty from the loop, a cursor of the other order refused at
 * once, a cancelled page freed (ASan: not leaked). */
static struct {
        unsigned calls;
        int r;
        StoreRecord **l;
        size_t n;
        char *next;
} paged;

static void on_paged(void *userdata, int r, StoreRecord **l, size_t n, char *next) {
        paged.calls++;
        paged.r = r;
        paged.l = l;
        paged.n = n;
        paged.next = next;
}

static void page_async(Store *s, sd_event *e, const StoreQuery *q) {
        unsigned want = paged.calls + 1;

        assert_int_equal(store_list_async(s, q, on_paged, NULL, NULL), 0);
        assert_int_equal(paged.calls, want - 1);   /* never from inside the call */
        for (unsigned i = 0; i < 500 && paged.calls < want; i++)
                assert_true(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
        assert_int_equal(paged.calls, want);
}

static void test_list_async(_unused_ void **state) {
        sd_event *e = NULL;
        Store *s = open_with_event(&e);
        StoreQuery qs[] = {
                { .status = -1, .error_type = -1, .order = STORE_ORDER_CREATED_AT, .limit = 7 },
                { .status = -1, .error_type = -1, .order = STORE_ORDER_DURATION_MS, .limit = 50 },
                { .status = EXEC_FAILED, .error_type = -1, .session_id = "sess_1", .order = STORE_ORDER_CREATED_AT, .limit = 3 },
        };
        StoreCall *c = NULL;

        paged = (typeof(paged)) {};
        fill_rows(s);
        for (size_t k = 0; k < ELEMENTSOF(qs); k++) {
                StoreQuery q = qs[k];
                _cleanup_free_ char *cursor = NULL;
                unsigned pages = 0;

                for (;;) {
                        StoreRecord **l = NULL;
                        size_t n = 0;
                        _cleanup_free_ char *next = NULL;

                        q.cursor = cursor;
                        assert_int_equal(store_list(s, &q, &l, &n, &next), 0);
                        page_async(s, e, &q);
                        assert_int_equal(paged.r, 0);
                        assert_int_equal(paged.n, n);
                        for (size_t i = 0; i < n; i++)
                                assert_string_equal(paged.l[i]->exec->id, l[i]->exec->id);
                        assert_true(streq_ptr(paged.next, next));
                        store_records_free(l, n);
                        store_records_free(paged.l, paged.n);
                        free(paged.next);
                        paged.l = NULL;
                        paged.next = NULL;
                        free(cursor);
                        cursor = TAKE_PTR(next);
                        pages++;
                        assert_true(pages <= N_ROWS + 1);
                        if (!cursor)
                                break;
                }
                assert_true(pages >= 2 || k == 2);
        }

        /* failed=true with another status: nothing, from the loop all the same. */
        page_async(s, e, &(StoreQuery) { .status = EXEC_SUCCESS, .failed = true, .error_type = -1, .limit = 5 });
        assert_int_equal(paged.r, 0);
        assert_int_equal(paged.n, 0);
        assert_null(paged.next);

        /* A cursor of the other order: refused at once, never called back. */
        {
                StoreRecord **l = NULL;
                size_t n = 0;
                _cleanup_free_ char *next = NULL;

                assert_int_equal(store_list(s, &(StoreQuery) { .status = -1, .error_type = -1, .limit = 2 }, &l, &n,
                                            &next), 0);
                store_records_free(l, n);
                assert_non_null(next);
                assert_int_equal(store_list_async(s, &(StoreQuery) { .status = -1, .error_type = -1, .limit = 2,
                                                                     .order = STORE_ORDER_DURATION_MS, .cursor = next },
                                                  on_paged, NULL, NULL), -EINVAL);
        }

        /* Cancelled: not delivered. */
        assert_int_equal(store_list_async(s, &qs[0], on_paged, NULL, &c), 0);
        (void) store_call_cancel(c);
        page_async(s, e, &qs[2]);
        store_records_free(paged.l, paged.n);
        free(paged.next);
        assert_int_equal(store_async_pending(s), 0);
        paged = (typeof(paged)) {};
        close_with_event(s, e);
}

/* The calls that answer with a list. */
static struct {
        unsigned calls;
        int r;
        StoreNode *nodes;
        StoreRecord **records;
        size_t n, n_nodes, n_records;
} listed;

static void on_nodes_listed(void *userdata, int r, StoreNode *l, size_t n) {
        listed.calls++;
        listed.r = r;
        store_nodes_free(listed.nodes, listed.n_nodes);
        listed.nodes = l;
        listed.n = listed.n_nodes = n;
}

static void on_records_listed(void *userdata, int r, StoreRecord **l, size_t n) {
        listed.calls++;
        listed.r = r;
        store_records_free(listed.records, listed.n_records);
        listed.records = l;
        listed.n = listed.n_records = n;
}

/* Run the loop until n lists came, or about 5 s went by. */
static void run_until_listed(sd_event *e, unsigned n) {
        for (unsigned i = 0; i < 500 && listed.calls < n; i++)
                assert_true(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
}

static void listed_reset(void) {
        store_nodes_free(listed.nodes, listed.n_nodes);
        store_records_free(listed.records, listed.n_records);
        listed = (typeof(listed)) {};
}

/* The registry and the routed runs, read without waiting: the lists come to the callback (routed runs
 * oldest first, claimed for the node); a cancelled call's list is freed, not delivered. A backend of
 * one node: the registry all the same, the routed runs -EOPNOTSUPP at once. */
static void test_async_lists(_unused_ void **state) {
        sd_event *e = NULL;
        Store *s = open_with_event(&e);
        _cleanup_(store_record_freep) StoreRecord *r1 = record_queued("exec_rt1", "n2", "key:a", BASE_USEC + 9);
        _cleanup_(store_record_freep) StoreRecord *r2 = record_queued("exec_rt2", "n2", "key:b", BASE_USEC + 3);
        StoreCall *c = NULL;
        uint64_t epoch = 0;

        listed_reset();
        assert_int_equal(store_node_register(s, "node-l2", BASE_USEC, 30 * USEC_PER_SEC, 4, &epoch), 0);
        assert_int_equal(store_node_register(s, "node-l1", BASE_USEC, 30 * USEC_PER_SEC, 2, &epoch), 0);
        assert_int_equal(store_node_list_async(s, on_nodes_listed, NULL, NULL), 0);
        assert_int_equal(listed.calls, 0);
        run_until_listed(e, 1);
        assert_int_equal(listed.calls, 1);
        assert_int_equal(listed.r, 0);
        assert_int_equal(listed.n, 2);
        assert_string_equal(listed.nodes[0].name, "node-l1");
        assert_int_equal(listed.nodes[0].slots, 2);
        assert_string_equal(listed.nodes[1].name, "node-l2");
        /* Cancelled: not delivered (ASan: and not leaked). */
        assert_int_equal(store_node_list_async(s, on_nodes_listed, NULL, &c), 0);
        (void) store_call_cancel(c);
        assert_int_equal(store_node_list_async(s, on_nodes_listed, (void *) 1, NULL), 0);
        run_until_listed(e, 2);
        assert_int_equal(listed.calls, 2);
        assert_int_equal(store_async_pending(s), 0);

        if (!is_pg()) {
                assert_int_equal(store_claim_routed_async(s, "n2", 1, on_records_listed, NULL, NULL), -EOPNOTSUPP);
                listed_reset();
                close_with_event(s, e);
                return;
        }
        r1->exec->session_id = strdup("s1");
        r2->exec->session_id = strdup("s2");
        assert_int_equal(store_put(s, r1), 0);
        assert_int_equal(store_put(s, r2), 0);
        assert_int_equal(store_claim_routed_async(s, "n2", 0, on_records_listed, NULL, NULL), -EINVAL);
        assert_int_equal(store_claim_routed_async(s, "n2", 6, on_records_listed, NULL, NULL), 0);
        run_until_listed(e, 3);
        assert_int_equal(listed.calls, 3);
        assert_int_equal(listed.r, 0);
        assert_int_equal(listed.n, 2);
        assert_string_equal(listed.records[0]->exec->id, "exec_rt2");
        assert_string_equal(listed.records[1]->exec->id, "exec_rt1");
        assert_int_equal(listed.records[0]->exec->node_epoch, 6);
        /* Claimed: a second look finds none. */
        assert_int_equal(store_claim_routed_async(s, "n2", 6, on_records_listed, NULL, NULL), 0);
        run_until_listed(e, 4);
        assert_int_equal(listed.calls, 4);
        assert_int_equal(listed.r, 0);
        assert_int_equal(listed.n, 0);
        listed_reset();
        close_with_event(s, e);
}

/* A cancelled call's callback is not called, but its write is made; store_cancel_userdata() too. */
static void test_async_cancel(_unused_ void **state) {
        sd_event *e = NULL;
        Store *s = open_with_event(&e);
        _cleanup_(store_record_freep) StoreRecord *r = record_on("exec_c", EXEC_RUNNING, NULL, 0, BASE_USEC);
        StoreCall *c1 = NULL, *c2 = NULL;

        r->exec->duration_ms = 1;
        assert_int_equal(store_put_async(s, r, on_async_done, (void *) 1, &c1), 0);
        r->exec->duration_ms = 2;
        assert_int_equal(store_put_async(s, r, on_async_done, (void *) 2, &c2), 0);
        r->exec->duration_ms = 3;
        assert_int_equal(store_put_async(s, r, on_async_done, (void *) 3, NULL), 0);
        r->exec->duration_ms = 4;
        assert_int_equal(store_put_async(s, r, on_async_done, (void *) 3, NULL), 0);
        assert_int_equal(store_get_async(s, "exec_c", on_async_done, (void *) 5, NULL), 0);
        assert_null(store_call_cancel(c1));
        assert_null(store_call_cancel(NULL));
        store_cancel_userdata(s, (void *) 3);
        run_until(e, 2, 5000);
        assert_int_equal(seen.n, 2);
        assert_int_equal(seen.tag[0], 2);
        assert_int_equal(seen.tag[1], 5);
        assert_non_null(seen.rec[1]);
        assert_int_equal(seen.rec[1]->exec->duration_ms, 4);
        get_equal(s, r);
        assert_int_equal(store_async_pending(s), 0);

        /* Closed with calls queued: the writes are made, nobody is called back. */
        r->exec->duration_ms = 9;
        assert_int_equal(store_put_async(s, r, on_async_done, (void *) 9, NULL), 0);
        close_with_event(s, e);
        s = open_ok();
        get_equal(s, r);
        store_close(s);
}

/* A burst past the bound: every call taken (the store never refuses for being behind), the store
 * behind from the STORE_ASYNC_MAX-th on and until it caught up, every answer in order. */
static void test_async_bound(_unused_ void **state) {
        sd_event *e = NULL;
        Store *s = open_with_event(&e);
        _cleanup_(store_record_freep) StoreRecord *r = record_on("exec_b", EXEC_RUNNING, NULL, 0, BASE_USEC);
        const unsigned n = STORE_ASYNC_MAX + 5;

        assert_false(store_is_behind(s));
        for (unsigned i = 0; i < n; i++) {
                assert_int_equal(store_is_behind(s), i >= STORE_ASYNC_MAX);
                r->exec->duration_ms = i;
                assert_int_equal(store_put_async(s, r, on_async_done, (void *) (uintptr_t) i, NULL), 0);
        }
        assert_int_equal(store_async_pending(s), n);
        assert_true(store_is_behind(s));
        run_until(e, n, 60000);
        assert_int_equal(seen.n, n);
        for (size_t i = 0; i < seen.n; i++) {
                assert_int_equal(seen.tag[i], i);
                assert_int_equal(seen.r[i], 0);
        }
        r->exec->duration_ms = n - 1;
        get_equal(s, r);
        assert_int_equal(store_async_pending(s), 0);
        assert_false(store_is_behind(s));
        r->exec->duration_ms = 7;
        assert_int_equal(store_put_async(s, r, on_async_done, (void *) 7, NULL), 0);
        run_until(e, n + 1, 5000);
        assert_int_equal(seen.n, n + 1);
        get_equal(s, r);
        close_with_event(s, e);
}

/* Without an event loop: synchronous, the callback called before the call returns, no handle. */
static void test_async_no_event(_unused_ void **state) {
        _cleanup_(store_closep) Store *s = open_ok();
        _cleanup_(store_record_freep) StoreRecord *r = record_on("exec_n", EXEC_RUNNING, NULL, 0, BASE_USEC);
        StoreCall *c = (StoreCall *) 1;

        seen_reset();
        seen_store = s;
        assert_int_equal(store_put_async(s, r, on_async_done, (void *) 1, &c), 0);
        assert_null(c);
        assert_int_equal(seen.n, 1);
        assert_int_equal(seen.r[0], 0);
        assert_int_equal(store_get_async(s, "exec_n", on_async_done, (void *) 2, NULL), 0);
        assert_int_equal(seen.n, 2);
        assert_int_equal(seen.r[1], 0);
        assert_record_equal(r, seen.rec[1]);
        assert_int_equal(store_async_pending(s), 0);
        seen_reset();
}

/* A second session that holds exec_id's row: a write of it waits on the server (up to lock_timeout). */
static PGconn *pg_hold_row(const char *exec_id) {
        _cleanup_free_ char *conn = NULL, *sql = NULL;
        PGconn *c;
        PGresult *res;

        assert_true(asprintf(&conn, "%s dbname=%s", pg_conninfo, dbpath) >= 0);
        c = PQconnectdb(conn);
        assert_int_equal(PQstatus(c), CONNECTION_OK);
        assert_true(asprintf(&sql, "BEGIN; SELECT 1 FROM executions WHERE execution_id = '%s' FOR UPDATE", exec_id) >= 0);
        res = PQexec(c, sql);
        assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
        PQclear(res);
        return c;
}

static const char *seen_notify[2];
static unsigned n_seen_notify;

static void on_async_notify(_unused_ void *userdata, const char *channel, const char *payload) {
        if (streq(channel, STORE_CHANNEL_QUEUE) && streq(payload, "node9"))
                n_seen_notify++;
        (void) seen_notify;
}

/* An asynchronous write under way on the server (waiting for a row lock): the loop is not held, a
 * notification that comes meanwhile is handed on, the answer comes once the lock is let go. */
static void test_async_wait_pg(_unused_ void **state) {
        sd_event *e = NULL;
        Store *s = open_with_event(&e);
        _cleanup_(store_record_freep) StoreRecord *r = record_on("exec_w", EXEC_RUNNING, NULL, 0, BASE_USEC);
        PGconn *c;

        assert_int_equal(store_set_notify(s, on_async_notify, NULL), 0);
        assert_int_equal(store_put(s, r), 0);
        c = pg_hold_row("exec_w");
        r->exec->duration_ms = 77;
        assert_int_equal(store_put_async(s, r, on_async_done, (void *) 1, NULL), 0);
        r->exec->duration_ms = 78;
        assert_int_equal(store_put_async(s, r, on_async_done, (void *) 2, NULL), 0);
        n_seen_notify = 0;
        PQclear(PQexec(c, "NOTIFY " STORE_CHANNEL_QUEUE ", 'node9'"));     /* sent at its commit: none yet */
        for (unsigned i = 0; i < 20; i++)
                assert_true(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
        assert_int_equal(seen.n, 0);            /* waits on the server, not in a call */
        PQclear(PQexec(c, "COMMIT"));
        PQfinish(c);
        run_until(e, 2, 5000);
        assert_int_equal(seen.n, 2);
        assert_int_equal(seen.r[0], 0);
        assert_int_equal(seen.r[1], 0);
        for (unsigned i = 0; i < 20 && n_seen_notify == 0; i++)
                assert_true(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
        assert_int_equal(n_seen_notify, 1);
        get_equal(s, r);
        close_with_event(s, e);
}

static char order_log[8];
static size_t n_order;

static void on_order_done(_unused_ void *userdata, _unused_ int r, StoreRecord *rec) {
        store_record_free(rec);
        if (n_order < sizeof(order_log) - 1)
                order_log[n_order++] = 'A';
}

static void on_order_notify(_unused_ void *userdata, const char *channel, const char *payload) {
        if (streq(channel, STORE_CHANNEL_CLAIMED) && streq(payload, "exec_o") && n_order < sizeof(order_log) - 1)
                order_log[n_order++] = 'N';
}

/* An answer and a notification that came after it, read together: handed on in that order (the
 * answer's callback first), as they came. A node's record of a queued run and another node's
 * "claimed" of it: the claim must not be handed on before the job it names is in the runner. */
static void test_notify_order_pg(_unused_ void **state) {
        sd_event *e = NULL;
        Store *s = open_with_event(&e);
        _cleanup_(store_record_freep) StoreRecord *r = record_on("exec_o", EXEC_QUEUED, NULL, 0, BASE_USEC);
        _cleanup_free_ char *conn = NULL;
        PGconn *c, *other;

        n_order = 0;
        memset(order_log, 0, sizeof(order_log));
        assert_int_equal(store_set_notify(s, on_order_notify, NULL), 0);
        assert_int_equal(store_put(s, r), 0);
        c = pg_hold_row("exec_o");
        r->exec->duration_ms = 5;
        assert_int_equal(store_put_async(s, r, on_order_done, NULL, NULL), 0);
        for (unsigned i = 0; i < 10; i++)
                assert_true(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
        assert_int_equal(n_order, 0);           /* sent, waiting for the lock */
        /* The lock goes: the answer comes to the socket (the loop does not run, nothing reads it);
         * then the notification, after it. */
        PQclear(PQexec(c, "COMMIT"));
        (void) usleep(200 * 1000);
        assert_true(asprintf(&conn, "%s dbname=%s", pg_conninfo, dbpath) >= 0);
        other = PQconnectdb(conn);
        assert_int_equal(PQstatus(other), CONNECTION_OK);
        PQclear(PQexec(other, "NOTIFY " STORE_CHANNEL_CLAIMED ", 'exec_o'"));
        PQfinish(other);
        (void) usleep(200 * 1000);
        for (unsigned i = 0; i < 100 && n_order < 2; i++)
                assert_true(sd_event_run(e, 20 * USEC_PER_MSEC) >= 0);
        assert_string_equal(order_log, "AN");
        PQfinish(c);
        close_with_event(s, e);
}

/* The connection is cut while an asynchronous write is under way: it fails (-EIO), and so does the
 * one queued behind it, at once; nothing hangs; the store reconnects as ever, and the next
 * asynchronous write is made. */
static void test_async_reconnect_pg(_unused_ void **state) {
        sd_event *e = NULL;
        Store *s = open_with_event(&e);
        _cleanup_(store_record_freep) StoreRecord *r = record_on("exec_k", EXEC_RUNNING, NULL, 0, BASE_USEC);
        _cleanup_free_ char *cut = NULL;
        uint64_t n = 0;
        PGconn *c;
        int k = 0;

        assert_int_equal(store_put(s, r), 0);
        c = pg_hold_row("exec_k");
        r->exec->duration_ms = 1;
        assert_int_equal(store_put_async(s, r, on_async_done, (void *) 1, NULL), 0);
        r->exec->duration_ms = 2;
        assert_int_equal(store_put_async(s, r, on_async_done, (void *) 2, NULL), 0);
        assert_true(sd_event_run(e, 20 * USEC_PER_MSEC) >= 0);
        assert_int_equal(seen.n, 0);
        assert_true(asprintf(&cut, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE application_name = 'sandboxd' AND datname = '%s'", dbpath) >= 0);
        assert_int_equal(pg_exec_in(pg_conninfo, cut), 0);
        run_until(e, 2, 5000);
        assert_int_equal(seen.n, 2);
        fprintf(stderr, "# the call under way: %d %s\n# the one queued: %d %s\n", seen.r[0], seen.error[0],
                seen.r[1], seen.error[1]);
        assert_int_equal(seen.r[0], -EIO);
        assert_int_equal(seen.r[1], -EIO);
        assert_int_equal(store_async_pending(s), 0);
        PQclear(PQexec(c, "ROLLBACK"));
        PQfinish(c);

        /* Back: the reconnection runs on the loop. */
        for (unsigned i = 0; i < 100; i++) {
                k = store_count(s, &n);
                if (k == 0)
                        break;
                assert_int_equal(k, -EIO);
                assert_true(sd_event_run(e, 50 * USEC_PER_MSEC) >= 0);
        }
        assert_int_equal(k, 0);
        r->exec->duration_ms = 3;
        assert_int_equal(store_put_async(s, r, on_async_done, (void *) 3, NULL), 0);
        run_until(e, 3, 5000);
        assert_int_equal(seen.n, 3);
        assert_int_equal(seen.r[2], 0);
        get_equal(s, r);
        close_with_event(s, e);
}

int main(void) {
        struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_roundtrip_full, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_roundtrip_nulls, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_static_strings, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_update_transition, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_invalid_arguments, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_list_paging, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_list_filters, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_list_stable, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_bad_cursor, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_unfinished, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_purge, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_sessions, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_nodes, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_async_heartbeat, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_async_register, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_async_put_callback, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_async_put_session, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_async_claim, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_async_sessions, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_async_usage_session, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_list_async, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_async_lists, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_usage, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_schema_newer, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_garbage_file, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_foreign_database, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_corrupted_pages, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_readonly_dir, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_readonly_file, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_missing_dir, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_disk_full, setup_dir, teardown_dir),
                cmocka_unit_test(test_cursor_roundtrip),
                cmocka_unit_test_setup_teardown(test_network_log, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_concurrent_open, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_take_over, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_shared_queue, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_disk_full_pg, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_reconnect_pg, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_bad_conninfo_pg, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_password_file_pg, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_reconnect_backoff_pg, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_reconnect_event_pg, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_error_mapping_pg, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_async_order, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_async_cancel, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_async_bound, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_async_no_event, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_async_wait_pg, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_notify_order_pg, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_async_reconnect_pg, setup_dir, teardown_dir),
        };

        static const char *const sqlite_only[] = {
                "test_garbage_file", "test_corrupted_pages", "test_readonly_dir", "test_readonly_file",
                "test_missing_dir", "test_disk_full", NULL,
        };

        static const char *const pg_only[] = { "test_concurrent_open", "test_disk_full_pg", "test_reconnect_pg",
                                               "test_bad_conninfo_pg", "test_password_file_pg",
                                               "test_reconnect_backoff_pg", "test_reconnect_event_pg",
                                               "test_error_mapping_pg", "test_async_wait_pg", "test_notify_order_pg",
                                               "test_async_reconnect_pg", NULL };

        return run_store_tests("store", tests, ELEMENTSOF(tests), sqlite_only, pg_only);
}
