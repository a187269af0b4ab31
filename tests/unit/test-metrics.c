/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model/language.h"
#include "model/metrics.h"
#include "util.h"

static char *render(const Metrics *m, const MetricsGauges *g) {
        static const MetricsGauges zero = {};
        char *s = NULL;

        assert_int_equal(metrics_render(m, g ?: &zero, &s), 0);
        assert_non_null(s);
        return s;
}

/* The value on the line that starts with exactly "series " (name and labels), or -1 if none. */
static int64_t value_of(const char *text, const char *series) {
        size_t n = strlen(series);

        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, series, n) == 0 && p[n] == ' ')
                        return strtoll(p + n + 1, NULL, 10);
        return -1;
}

static bool has_line(const char *text, const char *line) {
        size_t n = strlen(line);

        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == 0))
                        return true;
        return false;
}

static size_t count_prefix(const char *text, const char *prefix) {
        size_t c = 0, n = strlen(prefix);

        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                c += strncmp(p, prefix, n) == 0;
        return c;
}

static Execution exec_of(const char *language, ExecStatus s, ErrorType t, uint64_t duration_ms) {
        return (Execution) {
                .id = (char *) "x",
                .language = language,
                .status = s,
                .error_type = t,
                .duration_ms = duration_ms,
                .started_usec = 1,
        };
}

/* ---- histograms: "le" is inclusive, the rest goes to the next bucket, then +Inf ---- */

static void test_histogram_buckets(_unused_ void **state) {
        _cleanup_(metrics_freep) Metrics *m = metrics_new();
        MetricsHistogram *h;
        static const struct {
                uint64_t value;
                size_t bucket;   /* index into buckets[]; n_bounds is +Inf */
        } rows[] = {
                { 0, 0 },
                { 5000, 0 },             /* exactly 0.005 s */
                { 5001, 1 },
                { 10000, 1 },
                { 999999, 7 },           /* just under 1 s */
                { 1000000, 7 },          /* 1 s */
                { 1000001, 8 },          /* → 2.5 */
                { 300000000, 14 },       /* 300 s, the last bound */
                { 300000001, 15 },       /* +Inf */
                { UINT64_MAX, 15 },
        };

        assert_non_null(m);
        h = &m->histograms[METRICS_DURATION];
        assert_int_equal(h->n_bounds, 15);
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                uint64_t before = h->buckets[rows[i].bucket];

                metrics_histogram_observe(h, rows[i].value);
                assert_int_equal(h->buckets[rows[i].bucket], before + 1);
        }
        assert_int_equal(h->count, ELEMENTSOF(rows));
        /* The sum saturates instead of wrapping around. */
        assert_true(h->sum == UINT64_MAX);

        h = &m->histograms[METRICS_PEAK_MEMORY];
        assert_int_equal(h->n_bounds, 8);
        assert_true(h->bounds[0] == 1024 * 1024);
        assert_true(h->bounds[7] == UINT64_C(8192) * 1024 * 1024);
        metrics_histogram_observe(h, 4 * 1024 * 1024);
        metrics_histogram_observe(h, 4 * 1024 * 1024 + 1);
        assert_int_equal(h->buckets[1], 1);
        assert_int_equal(h->buckets[2], 1);
}

static void test_render_histogram(_unused_ void **state) {
        _cleanup_(metrics_freep) Metrics *m = metrics_new();
        _cleanup_free_ char *text = NULL;
        MetricsHistogram *h;

        assert_non_null(m);
        h = &m->histograms[METRICS_QUEUE_WAIT];
        metrics_histogram_observe(h, 3000);       /* 0.003 */
        metrics_histogram_observe(h, 120000);     /* 0.12 */
        metrics_histogram_observe(h, 2500000);    /* 2.5 */
        metrics_histogram_observe(h, 400000000);  /* 400: +Inf */
        text = render(m, NULL);

        /* Bounds written exactly, buckets cumulative. */
        assert_true(has_line(text, "# TYPE sandboxd_execution_queue_wait_seconds histogram"));
        assert_true(has_line(text, "sandboxd_execution_queue_wait_seconds_bucket{le=\"0.005\"} 1"));
        assert_true(has_line(text, "sandboxd_execution_queue_wait_seconds_bucket{le=\"0.1\"} 1"));
        assert_true(has_line(text, "sandboxd_execution_queue_wait_seconds_bucket{le=\"0.25\"} 2"));
        assert_true(has_line(text, "sandboxd_execution_queue_wait_seconds_bucket{le=\"2.5\"} 3"));
        assert_true(has_line(text, "sandboxd_execution_queue_wait_seconds_bucket{le=\"300\"} 3"));
        assert_true(has_line(text, "sandboxd_execution_queue_wait_seconds_bucket{le=\"+Inf\"} 4"));
        assert_true(has_line(text, "sandboxd_execution_queue_wait_seconds_sum 402.623"));
        assert_true(has_line(text, "sandboxd_execution_queue_wait_seconds_count 4"));
        assert_int_equal(count_prefix(text, "sandboxd_execution_queue_wait_seconds_bucket{"), 16);

        /* Bytes are integers, and an empty histogram is still complete. */
        assert_true(has_line(text, "sandboxd_execution_peak_memory_bytes_bucket{le=\"1048576\"} 0"));
        assert_true(has_line(text, "sandboxd_execution_peak_memory_bytes_bucket{le=\"8589934592\"} 0"));
        assert_true(has_line(text, "sandboxd_execution_peak_memory_bytes_bucket{le=\"+Inf\"} 0"));
        assert_true(has_line(text, "sandboxd_execution_peak_memory_bytes_sum 0"));
        assert_true(has_line(text, "sandboxd_execution_peak_memory_bytes_count 0"));
}

/* ---- executions ---- */

static void test_observe(_unused_ void **state) {
        _cleanup_(metrics_freep) Metrics *m = metrics_new();
        _cleanup_free_ char *text = NULL;
        Execution e;

        assert_non_null(m);
        for (int i = 0; i < 5; i++) {
                e = exec_of("python", EXEC_SUCCESS, ERROR_NONE, 40);
                e.have_peak = true;
                e.peak_memory_bytes = 9 * 1024 * 1024;
                e.have_cpu = true;
                e.cpu_usec = 20000;
                if (i < 2) {
                        e.have_first_output = true;
                        e.first_output_usec = 12000;
                }
                metrics_observe(m, &e, 1000, 30000);
        }
        for (int i = 0; i < 3; i++) {
                e = exec_of("python", EXEC_FAILED, ERROR_RUNTIME, 50);
                metrics_observe(m, &e, METRICS_UNKNOWN, METRICS_UNKNOWN);
        }
        e = exec_of("bash", EXEC_FAILED, ERROR_TIMEOUT, 500);
        metrics_observe(m, &e, 0, 0);
        /* Cancelled while queued: never started, so no duration. */
        e = exec_of("node", EXEC_CANCELLED, ERROR_NONE, 0);
        e.started_usec = 0;
        metrics_observe(m, &e, METRICS_UNKNOWN, METRICS_UNKNOWN);
        /* A language the table does not have (a record from a newer version, say). */
        e = exec_of("cobol", EXEC_SUCCESS, ERROR_NONE, 1);
        metrics_observe(m, &e, METRICS_UNKNOWN, METRICS_UNKNOWN);
        /* NULLs are fine. */
        metrics_observe(NULL, &e, 0, 0);
        metrics_observe(m, NULL, 0, 0);
        metrics_store_error(NULL);
        metrics_store_error(m);
        metrics_store_error(m);

        text = render(m, NULL);
        assert_int_equal(value_of(text, "sandboxd_executions_total{language=\"python\",status=\"success\",error_type=\"none\"}"), 5);
        assert_int_equal(value_of(text, "sandboxd_executions_total{language=\"python\",status=\"failed\",error_type=\"runtime_error\"}"), 3);
        assert_int_equal(value_of(text, "sandboxd_executions_total{language=\"python\",status=\"failed\",error_type=\"timeout\"}"), 0);
        assert_int_equal(value_of(text, "sandboxd_executions_total{language=\"bash\",status=\"failed\",error_type=\"timeout\"}"), 1);
        assert_int_equal(value_of(text, "sandboxd_executions_total{language=\"node\",status=\"cancelled\",error_type=\"none\"}"), 1);
        assert_int_equal(value_of(text, "sandboxd_executions_total{language=\"other\",status=\"success\",error_type=\"none\"}"), 1);
        /* Impossible combinations and an empty "other" are left out. */
        assert_int_equal(value_of(text, "sandboxd_executions_total{language=\"python\",status=\"success\",error_type=\"timeout\"}"), -1);
        assert_int_equal(value_of(text, "sandboxd_executions_total{language=\"python\",status=\"queued\",error_type=\"none\"}"), -1);
        assert_int_equal(value_of(text, "sandboxd_executions_total{language=\"other\",status=\"failed\",error_type=\"oom\"}"), -1);
        /* Fixed cardinality: 9 series per language of the table (success, cancelled, 7 failures),
         * plus the one "other" that was counted. */
        assert_int_equal(count_prefix(text, "sandboxd_executions_total{"), 9 * language_count() + 1);

        assert_int_equal(value_of(text, "sandboxd_execution_duration_seconds_count"), 10);
        assert_int_equal(value_of(text, "sandboxd_execution_duration_seconds_bucket{le=\"0.05\"}"), 9);
        assert_true(has_line(text, "sandboxd_execution_duration_seconds_sum 0.851"));
        assert_int_equal(value_of(text, "sandboxd_execution_queue_wait_seconds_count"), 6);
        assert_int_equal(value_of(text, "sandboxd_execution_start_latency_seconds_count"), 6);
        assert_true(has_line(text, "sandboxd_execution_start_latency_seconds_sum 0.15"));
        assert_int_equal(value_of(text, "sandboxd_execution_peak_memory_bytes_count"), 5);
        assert_int_equal(value_of(text, "sandboxd_execution_peak_memory_bytes_bucket{le=\"4194304\"}"), 0);
        assert_int_equal(value_of(text, "sandboxd_execution_peak_memory_bytes_bucket{le=\"16777216\"}"), 5);
        assert_int_equal(value_of(text, "sandboxd_execution_cpu_seconds_count"), 5);
        assert_true(has_line(text, "sandboxd_execution_cpu_seconds_sum 0.1"));
        /* Only executions that printed have a time to first output. */
        assert_int_equal(value_of(text, "sandboxd_execution_first_output_seconds_count"), 2);
        assert_true(has_line(text, "sandboxd_execution_first_output_seconds_sum 0.024"));
        assert_int_equal(value_of(text, "sandboxd_execution_first_output_seconds_bucket{le=\"0.01\"}"), 0);
        assert_int_equal(value_of(text, "sandboxd_execution_first_output_seconds_bucket{le=\"0.025\"}"), 2);
        assert_int_equal(value_of(text, "sandboxd_store_errors_total"), 2);
        assert_int_equal(value_of(text, "sandboxd_dbus_reconnects_total"), 0);
        assert_int_equal(value_of(text, "sandboxd_workspaces_recycled_total"), 0);
        assert_int_equal(value_of(text, "sandboxd_workspaces_replaced_total"), 0);
}

static void test_workspace_counters(_unused_ void **state) {
        _cleanup_(metrics_freep) Metrics *m = metrics_new();
        _cleanup_free_ char *text = NULL;
        const MetricsGauges g = {};

        assert_non_null(m);
        metrics_workspace_recycled(m);
        metrics_workspace_recycled(m);
        metrics_workspace_recycled(m);
        metrics_workspace_replaced(m);
        metrics_workspace_recycled(NULL);
        text = render(m, &g);
        assert_int_equal(value_of(text, "sandboxd_workspaces_recycled_total"), 3);
        assert_int_equal(value_of(text, "sandboxd_workspaces_replaced_total"), 1);
        assert_true(has_line(text, "# TYPE sandboxd_workspaces_recycled_total counter"));
}

static void test_gauges(_unused_ void **state) {
        _cleanup_(metrics_freep) Metrics *m = metrics_new();
        _cleanup_free_ char *text = NULL;
        const MetricsGauges g = {
                .running = 3, .queued = 7, .slots = 8, .queue_max = 256, .pool_ready = 2, .pool_target = 4,
                .sessions = 5,
                .records_unsaved = 3,
        };

        assert_non_null(m);
        text = render(m, &g);
        assert_true(has_line(text, "sandboxd_executions_running 3"));
        assert_true(has_line(text, "sandboxd_executions_queued 7"));
        assert_true(has_line(text, "sandboxd_slots 8"));
        assert_true(has_line(text, "sandboxd_queue_capacity 256"));
        assert_true(has_line(text, "sandboxd_workspace_pool_ready 2"));
        assert_true(has_line(text, "sandboxd_workspace_pool_target 4"));
        assert_true(has_line(text, "sandboxd_callback_outbox_size 0"));
        assert_true(has_line(text, "sandboxd_sessions 5"));
        assert_true(has_line(text, "sandboxd_records_unsaved 3"));
        assert_true(has_line(text, "# TYPE sandboxd_slots gauge"));
        assert_true(has_line(text, "sandboxd_build_info{version=\"" PACKAGE_VERSION "\"} 1"));
}

/* The node registry: this node's name, the nodes alive and expired at the clock given, and each
 * lease's end in Unix seconds; labels escaped. Without a name or nodes: the families, at 0. */
static void test_nodes(_unused_ void **state) {
        _cleanup_(metrics_freep) Metrics *m = metrics_new();
        _cleanup_free_ char *text = NULL, *empty = NULL;
        const MetricsNode nodes[] = {
                { .name = "a", .lease_expires_usec = 1764472830000000 },
                { .name = "b\"c", .lease_expires_usec = 1764472800500000 },
                { .name = "node-3", .lease_expires_usec = 1764472700000000 },
        };
        const MetricsGauges g = {
                .node_name = "a", .nodes = nodes, .n_nodes = ELEMENTSOF(nodes), .now_usec = 1764472800000000,
        };

        assert_non_null(m);
        text = render(m, &g);
        assert_true(has_line(text, "sandboxd_node_info{node=\"a\"} 1"));
        assert_true(has_line(text, "sandboxd_cluster_nodes{state=\"alive\"} 2"));
        assert_true(has_line(text, "sandboxd_cluster_nodes{state=\"expired\"} 1"));
        assert_true(has_line(text, "sandboxd_node_lease_expires_seconds{node=\"a\"} 1764472830"));
        assert_true(has_line(text, "sandboxd_node_lease_expires_seconds{node=\"b\\\"c\"} 1764472800.5"));
        assert_true(has_line(text, "sandboxd_node_lease_expires_seconds{node=\"node-3\"} 1764472700"));
        assert_true(has_line(text, "# TYPE sandboxd_cluster_nodes gauge"));

        empty = render(m, &(MetricsGauges) {});
        assert_true(has_line(empty, "# TYPE sandboxd_node_info gauge"));
        assert_int_equal(count_prefix(empty, "sandboxd_node_info{"), 0);
        assert_true(has_line(empty, "sandboxd_cluster_nodes{state=\"alive\"} 0"));
        assert_true(has_line(empty, "sandboxd_cluster_nodes{state=\"expired\"} 0"));
        assert_int_equal(count_prefix(empty, "sandboxd_node_lease_expires_seconds{"), 0);
}

/* Every family: one HELP, one TYPE, HELP first; every sample belongs to the family above it; the
 * text ends with a newline. (promtool checks the rest in the integration test.) */
static void test_render_shape(_unused_ void **state) {
        _cleanup_(metrics_freep) Metrics *m = metrics_new();
        _cleanup_free_ char *text = NULL;
        char family[128] = "";
        size_t families = 0;
        bool typed = false;

        assert_non_null(m);
        text = render(m, NULL);
        assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
        for (char *line = text, *nl; *line; line = nl + 1) {
                nl = strchr(line, '\n');
                assert_non_null(nl);
                *nl = 0;
                if (startswith(line, "# HELP ")) {
                        const char *name = line + 7;
                        size_t n = strcspn(name, " ");

                        assert_true(n < sizeof(family));
                        memcpy(family, name, n);
                        family[n] = 0;
                        families++;
                        typed = false;
                } else if (startswith(line, "# TYPE ")) {
                        assert_true(startswith(line + 7, family) && line[7 + strlen(family)] == ' ');
                        assert_false(typed);
                        typed = true;
                } else {
                        assert_true(typed);
                        assert_true(startswith(line, family));
                        assert_non_null(strchr(line, ' '));
                }
                *nl = '\n';
        }
        /* executions, 7 histograms, 11 gauges, 8 daemon counters (network requests, tiers too), 3 of the
         * node registry, build_info */
        assert_int_equal(families, 31);
        assert_int_equal(count_prefix(text, "# HELP "), 31);
        assert_int_equal(count_prefix(text, "# TYPE "), 31);
}

static void test_escape_label(_unused_ void **state) {
        static const struct {
                const char *in, *out;
        } rows[] = {
                { "", "" },
                { "python", "python" },
                { "a\"b", "a\\\"b" },
                { "a\\b", "a\\\\b" },
                { "a\nb", "a\\nb" },
                { "\"\\\n", "\\\"\\\\\\n" },
                { "tab\there", "tab\there" },     /* only the three the format names */
        };
        char buf[64];

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                size_t n = metrics_escape_label(rows[i].in, buf, sizeof(buf));

                assert_string_equal(buf, rows[i].out);
                assert_int_equal(n, strlen(rows[i].out));
        }

        /* Truncated like snprintf: the full length is returned, the buffer always terminated. */
        assert_int_equal(metrics_escape_label("a\"bcdef", buf, 4), 8);
        assert_string_equal(buf, "a\\\"");
        assert_int_equal(metrics_escape_label("abc", NULL, 0), 3);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_histogram_buckets),
                cmocka_unit_test(test_render_histogram),
                cmocka_unit_test(test_observe),
                cmocka_unit_test(test_gauges),
                cmocka_unit_test(test_nodes),
                cmocka_unit_test(test_workspace_counters),
                cmocka_unit_test(test_render_shape),
                cmocka_unit_test(test_escape_label),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
