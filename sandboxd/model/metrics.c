/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <stdarg.h>

#include "language.h"
#include "metrics.h"
#include "time-util.h"

#define MIB (UINT64_C(1024) * UINT64_C(1024))

/* Seconds, in µs: from a warm start (a few ms) to the longest timeout a configuration is likely to
 * allow (5 min); beyond that +Inf says enough. */
static const uint64_t seconds_bounds[] = {
        5000, 10000, 25000, 50000, 100000, 250000, 500000,
        1 * USEC_PER_SEC, 2500 * USEC_PER_MSEC, 5 * USEC_PER_SEC, 10 * USEC_PER_SEC, 30 * USEC_PER_SEC,
        60 * USEC_PER_SEC, 120 * USEC_PER_SEC, 300 * USEC_PER_SEC,
};

/* Bytes: powers of 4 from 1 MiB (an interpreter barely started) to 4 GiB, then 8 GiB, the default
 * MemoryCeiling= of 8192 MB: no execution can go above the last bound unless the ceiling is raised. */
static const uint64_t bytes_bounds[] = {
        1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, 1024 * MIB, 4096 * MIB, 8192 * MIB,
};

static const struct {
        const char *name;
        const char *help;
        const uint64_t *bounds;
        size_t n_bounds;
        uint64_t scale;
} histogram_table[_METRICS_HISTOGRAM_MAX] = {
        [METRICS_QUEUE_WAIT] = {
                "sandboxd_execution_queue_wait_seconds",
                "Time from the request being accepted to the execution leaving the queue to start.",
                seconds_bounds, ELEMENTSOF(seconds_bounds), USEC_PER_SEC,
        },
        [METRICS_START_LATENCY] = {
                "sandboxd_execution_start_latency_seconds",
                "Time from the request being accepted to the execution's unit running (queue wait included).",
                seconds_bounds, ELEMENTSOF(seconds_bounds), USEC_PER_SEC,
        },
        [METRICS_DURATION] = {
                "sandboxd_execution_duration_seconds",
                "Duration of finished executions that started (duration_ms of the execution object).",
                seconds_bounds, ELEMENTSOF(seconds_bounds), USEC_PER_SEC,
        },
        [METRICS_PEAK_MEMORY] = {
                "sandboxd_execution_peak_memory_bytes",
                "Peak memory of finished executions, as their cgroup recorded it.",
                bytes_bounds, ELEMENTSOF(bytes_bounds), 1,
        },
        [METRICS_CPU] = {
                "sandboxd_execution_cpu_seconds",
                "CPU time (user and system) of finished executions.",
                seconds_bounds, ELEMENTSOF(seconds_bounds), USEC_PER_SEC,
        },
        [METRICS_FIRST_OUTPUT] = {
                "sandboxd_execution_first_output_seconds",
                "Time from the program's start to its first byte of output, for executions that printed.",
                seconds_bounds, ELEMENTSOF(seconds_bounds), USEC_PER_SEC,
        },
        [METRICS_POOL_REFILL] = {
                "sandboxd_pool_refill_seconds",
                "Time from a warm unit being asked for to it being ready to be claimed (runtime started, "
                "modules imported).",
                seconds_bounds, ELEMENTSOF(seconds_bounds), USEC_PER_SEC,
        },
};

void metrics_init(Metrics *m) {
        *m = (Metrics) {};
        for (size_t i = 0; i < _METRICS_HISTOGRAM_MAX; i++) {
                assert(histogram_table[i].n_bounds <= METRICS_BUCKETS_MAX);
                m->histograms[i] = (MetricsHistogram) {
                        .bounds = histogram_table[i].bounds,
                        .n_bounds = histogram_table[i].n_bounds,
                        .scale = histogram_table[i].scale,
                };
        }
}

Metrics *metrics_new(void) {
        Metrics *m = malloc(sizeof(Metrics));

        if (!m)
                return NULL;
        metrics_init(m);
        return m;
}

Metrics *metrics_free(Metrics *m) {
        free(m);
        return NULL;
}

void metrics_histogram_observe(MetricsHistogram *h, uint64_t value) {
        size_t i = 0;

        while (i < h->n_bounds && value > h->bounds[i])
                i++;
        h->buckets[i]++;
        h->count++;
        h->sum = value > UINT64_MAX - h->sum ? UINT64_MAX : h->sum + value;
}

/* The counters' row of a language name: one the metrics have seen, or a new one for a name of the
 * current table while there is room; METRICS_LANGUAGES_MAX ("other") for anything else (a name no
 * longer defined, read back from the store, or beyond the array). */
static size_t find_name(const Metrics *m, const char *name) {
        for (size_t i = 0; name && i < m->n_language_names; i++)
                if (streq(m->language_names[i], name))
                        return i;
        return METRICS_LANGUAGES_MAX;
}

static size_t language_index(Metrics *m, const char *name) {
        size_t i = find_name(m, name);
        const Language *l;

        if (i < METRICS_LANGUAGES_MAX || !name)
                return i;
        l = language_find(name);
        if (!l || !streq(l->name, name) || m->n_language_names >= METRICS_LANGUAGES_MAX ||
            strlen(name) > METRICS_LANGUAGE_NAME_MAX)
                return METRICS_LANGUAGES_MAX;
        strcpy(m->language_names[m->n_language_names], name);
        return m->n_language_names++;
}

void metrics_observe(Metrics *m, const Execution *e, uint64_t queue_wait_usec, uint64_t start_latency_usec) {
        if (!m || !e)
                return;
        if (e->status >= 0 && e->status < _EXEC_STATUS_MAX && e->error_type >= 0 && e->error_type < _ERROR_TYPE_MAX)
                m->executions[language_index(m, e->language)][e->status][e->error_type]++;

        if (queue_wait_usec != METRICS_UNKNOWN)
                metrics_histogram_observe(&m->histograms[METRICS_QUEUE_WAIT], queue_wait_usec);
        if (start_latency_usec != METRICS_UNKNOWN)
                metrics_histogram_observe(&m->histograms[METRICS_START_LATENCY], start_latency_usec);
        /* Its tier, from our own JSON (risk-scan.h); a record from before the tiers ran standard. */
        m->tier_runs[e->isolation && strstr(e->isolation, "\"tier\":\"strong\"") ? 1 : 0]++;
        /* The API shows a duration only for executions that started; the histogram counts the same. */
        if (e->started_usec > 0)
                metrics_histogram_observe(&m->histograms[METRICS_DURATION],
                                          e->duration_ms > UINT64_MAX / USEC_PER_MSEC ? UINT64_MAX : e->duration_ms * USEC_PER_MSEC);
        if (e->have_peak)
                metrics_histogram_observe(&m->histograms[METRICS_PEAK_MEMORY], e->peak_memory_bytes);
        if (e->have_cpu)
                metrics_histogram_observe(&m->histograms[METRICS_CPU], e->cpu_usec);
        if (e->have_first_output)
                metrics_histogram_observe(&m->histograms[METRICS_FIRST_OUTPUT], e->first_output_usec);
}

void metrics_pool_claim(Metrics *m, ExecStartPath p) {
        if (m && p > START_UNKNOWN && p < _START_MAX)
                m->pool_claims[p]++;
}

void metrics_pool_refill(Metrics *m, uint64_t usec) {
        if (m)
                metrics_histogram_observe(&m->histograms[METRICS_POOL_REFILL], usec);
}

void metrics_pool_retired(Metrics *m, bool died) {
        if (m)
                m->pool_retired[died ? 0 : 1]++;
}

void metrics_network_request(Metrics *m, NetDecision d) {
        if (m && d >= 0 && d < _NET_DECISION_MAX)
                m->network_requests[d]++;
}

void metrics_store_error(Metrics *m) {
        if (m)
                m->store_errors++;
}

void metrics_workspace_recycled(Metrics *m) {
        if (m)
                m->workspaces_recycled++;
}

void metrics_workspace_replaced(Metrics *m) {
        if (m)
                m->workspaces_replaced++;
}

size_t metrics_escape_label(const char *s, char *buf, size_t size) {
        size_t n = 0;

#define PUT(c)                                  \
        do {                                    \
                if (n + 1 < size)               \
                        buf[n] = (c);           \
                n++;                            \
        } while (0)

        for (; s && *s; s++)
                switch (*s) {
                case '\\':
                        PUT('\\');
                        PUT('\\');
                        break;
                case '"':
                        PUT('\\');
                        PUT('"');
                        break;
                case '\n':
                        PUT('\\');
                        PUT('n');
                        break;
                default:
                        PUT(*s);
                }
#undef PUT
        if (size > 0)
                buf[MIN(n, size - 1)] = 0;
        return n;
}

/* ---- rendering ---- */

typedef struct Text {
        char *data;
        size_t len, allocated;
        bool oom;
} Text;

_printf_(2, 3) static void text_printf(Text *t, const char *fmt, ...) {
        va_list ap;
        int k;

        if (t->oom)
                return;
        for (;;) {
                size_t room = t->allocated - t->len;

                va_start(ap, fmt);
                k = vsnprintf(t->data ? t->data + t->len : NULL, room, fmt, ap);
                va_end(ap);
                if (k < 0) {
                        t->oom = true;
                        return;
                }
                if ((size_t) k < room) {
                        t->len += (size_t) k;
                        return;
                }

                size_t a = MAX(t->allocated * 2, t->len + (size_t) k + 1);
                char *p = realloc(t->data, MAX(a, (size_t) 4096));
                if (!p) {
                        t->oom = true;
                        return;
                }
                t->data = p;
                t->allocated = MAX(a, (size_t) 4096);
        }
}

/* value/scale in decimal, exactly, without trailing zeros: 5000 µs → "0.005", 1048576 B → "1048576". */
static void format_fixed(uint64_t value, uint64_t scale, char *buf, size_t size) {
        uint64_t frac, digits = 0;
        int n;

        if (scale <= 1) {
                snprintf(buf, size, "%" PRIu64, value);
                return;
        }
        for (uint64_t s = scale; s > 1; s /= 10)
                digits++;
        frac = value % scale;
        n = snprintf(buf, size, "%" PRIu64, value / scale);
        if (frac == 0 || n < 0 || (size_t) n >= size)
                return;
        while (frac % 10 == 0) {
                frac /= 10;
                digits--;
        }
        snprintf(buf + n, size - (size_t) n, ".%0*" PRIu64, (int) digits, frac);
}

static void render_header(Text *t, const char *name, const char *type, const char *help) {
        text_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void render_gauge(Text *t, const char *name, const char *help, uint64_t value) {
        render_header(t, name, "gauge", help);
        text_printf(t, "%s %" PRIu64 "\n", name, value);
}

static void render_counter(Text *t, const char *name, const char *help, uint64_t value) {
        render_header(t, name, "counter", help);
        text_printf(t, "%s %" PRIu64 "\n", name, value);
}

static void render_histogram(Text *t, size_t id, const MetricsHistogram *h) {
        const char *name = histogram_table[id].name;
        uint64_t cumulative = 0;
        char v[64];

        render_header(t, name, "histogram", histogram_table[id].help);
        for (size_t i = 0; i < h->n_bounds; i++) {
                cumulative += h->buckets[i];
                format_fixed(h->bounds[i], h->scale, v, sizeof(v));
                text_printf(t, "%s_bucket{le=\"%s\"} %" PRIu64 "\n", name, v, cumulative);
        }
        cumulative += h->buckets[h->n_bounds];
        text_printf(t, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, cumulative);
        format_fixed(h->sum, h->scale, v, sizeof(v));
        text_printf(t, "%s_sum %s\n%s_count %" PRIu64 "\n", name, v, name, h->count);
}

/* The label sets a final execution can have: success and cancelled come without an error type,
 * failed always with one. These are always shown (at 0 too), so that a rate over them exists from
 * the first scrape; any other combination only if something was counted there. */
static bool combination_expected(ExecStatus s, ErrorType e) {
        if (s == EXEC_SUCCESS || s == EXEC_CANCELLED)
                return e == ERROR_NONE;
        return s == EXEC_FAILED && e != ERROR_NONE;
}

static void render_language(Text *t, const char *name, const uint64_t (*counts)[_ERROR_TYPE_MAX], bool other) {
        char language[128];

        (void) metrics_escape_label(name, language, sizeof(language));
        for (int s = 0; s < _EXEC_STATUS_MAX; s++)
                for (int e = 0; e < _ERROR_TYPE_MAX; e++) {
                        uint64_t v = counts ? counts[s][e] : 0;

                        if (v == 0 && (other || !combination_expected(s, e)))
                                continue;
                        text_printf(t, "sandboxd_executions_total{language=\"%s\",status=\"%s\",error_type=\"%s\"} %" PRIu64 "\n",
                                    language, exec_status_to_string(s), error_type_to_string(e) ?: "none", v);
                }
}

/* The languages counted so far, then those of the current table not counted yet (at 0), then
 * "other". */
static void render_executions(Text *t, const Metrics *m) {
        render_header(t, "sandboxd_executions_total", "counter",
                      "Executions that became final, by language, status and error type "
                      "(error_type \"none\" for success and cancelled).");
        for (size_t l = 0; l < m->n_language_names; l++)
                render_language(t, m->language_names[l], (const uint64_t (*)[_ERROR_TYPE_MAX]) m->executions[l], false);
        for (size_t l = 0; l < language_count(); l++)
                if (find_name(m, language_get(l)->name) == METRICS_LANGUAGES_MAX &&
                    m->n_language_names + l < METRICS_LANGUAGES_MAX)
                        render_language(t, language_get(l)->name, NULL, false);
        render_language(t, "other", (const uint64_t (*)[_ERROR_TYPE_MAX]) m->executions[METRICS_LANGUAGES_MAX], true);
}

/* The node registry (issue 22): who this node is, how many nodes hold a lease and how many let it
 * run out, and when each lease ends (Unix time, so that "time() - x" alerts on it). */
static void render_nodes(Text *t, const MetricsGauges *g) {
        uint64_t alive = 0;
        char label[256], v[64];

        render_header(t, "sandboxd_node_info", "gauge",
                      "Always 1; this node's name (NodeName= of [Cluster]) as a label.");
        if (g->node_name) {
                (void) metrics_escape_label(g->node_name, label, sizeof(label));
                text_printf(t, "sandboxd_node_info{node=\"%s\"} 1\n", label);
        }
        for (size_t i = 0; i < g->n_nodes; i++)
                if (g->now_usec < g->nodes[i].lease_expires_usec)
                        alive++;
        render_header(t, "sandboxd_cluster_nodes", "gauge",
                      "Nodes in the store's registry whose lease is in force (state=\"alive\") or has run out "
                      "(state=\"expired\"), as read at this node's last heartbeat.");
        text_printf(t, "sandboxd_cluster_nodes{state=\"alive\"} %" PRIu64 "\n", alive);
        text_printf(t, "sandboxd_cluster_nodes{state=\"expired\"} %" PRIu64 "\n",
                    (uint64_t) g->n_nodes - alive);
        render_header(t, "sandboxd_node_lease_expires_seconds", "gauge",
                      "When each node's lease ends (or ended), in seconds since the Unix epoch.");
        for (size_t i = 0; i < g->n_nodes; i++) {
                (void) metrics_escape_label(g->nodes[i].name, label, sizeof(label));
                format_fixed(g->nodes[i].lease_expires_usec, USEC_PER_SEC, v, sizeof(v));
                text_printf(t, "sandboxd_node_lease_expires_seconds{node=\"%s\"} %s\n", label, v);
        }
}

int metrics_render(const Metrics *m, const MetricsGauges *g, char **ret) {
        Text t = {};
        char version[64];

        render_executions(&t, m);
        for (size_t i = 0; i < _METRICS_HISTOGRAM_MAX; i++)
                render_histogram(&t, i, &m->histograms[i]);

        render_gauge(&t, "sandboxd_executions_running", "Executions holding a slot (preparing, starting, running or finishing).",
                     g->running);
        render_gauge(&t, "sandboxd_executions_queued", "Executions waiting for a slot.", g->queued);
        render_gauge(&t, "sandboxd_slots", "Execution slots (MaxConcurrent=).", g->slots);
        if (g->shared_queue) {
                render_counter(&t, "sandboxd_queue_claimed_from_other_nodes_total",
                               "Executions other nodes accepted that this node claimed from the shared queue and ran.",
                               g->claimed_here);
                render_counter(&t, "sandboxd_queue_claimed_by_other_nodes_total",
                               "Executions this node accepted that another node claimed from the shared queue.",
                               g->claimed_elsewhere);
        }
        render_gauge(&t, "sandboxd_queue_capacity", "Executions the queue holds before refusing with 429 (MaxQueued=).",
                     g->queue_max);
        render_gauge(&t, "sandboxd_workspace_pool_ready",
                     "Workspaces mounted ahead of time, not in use (ready, being mounted or being wiped).",
                     g->pool_ready);
        render_gauge(&t, "sandboxd_workspace_pool_target", "Workspaces to keep mounted ahead of time (WorkspacePool=).",
                     g->pool_target);
        render_gauge(&t, "sandboxd_sessions", "Sessions that exist, each holding a persistent workspace tmpfs.",
                     g->sessions);
        render_gauge(&t, "sandboxd_records_unsaved",
                     "Final execution records the store refused, held in memory and written again until it "
                     "takes them.",
                     g->records_unsaved);
        render_gauge(&t, "sandboxd_callback_outbox_size",
                     "Callback deliveries pending (not yet delivered or given up).",
                     g->outbox);

        render_header(&t, "sandboxd_pool_ready_units", "gauge",
                      "Warm units ready to be claimed, per pooled language (Languages= of [Pool]).");
        for (size_t l = 0; l < language_count() && l < METRICS_LANGUAGES_MAX; l++) {
                char language[128];

                if (!g->warm_pooled[l])
                        continue;
                (void) metrics_escape_label(language_get(l)->name, language, sizeof(language));
                text_printf(&t, "sandboxd_pool_ready_units{language=\"%s\"} %" PRIu64 "\n", language, g->warm_ready[l]);
        }
        render_gauge(&t, "sandboxd_pool_target_units",
                     "Warm units to keep ready per pooled language and kind (Size= of [Pool]; python with "
                     "PythonPreload= keeps Size= preloaded and Size= plain ones).",
                     g->warm_target);
        render_header(&t, "sandboxd_pool_claims_total", "counter",
                      "Executions whose unit was claimed from the warm pool (start=\"warm\") or started for them "
                      "(start=\"cold\").");
        for (int p = START_WARM; p < _START_MAX; p++)
                text_printf(&t, "sandboxd_pool_claims_total{start=\"%s\"} %" PRIu64 "\n", exec_start_path_to_string(p),
                            m->pool_claims[p]);
        render_header(&t, "sandboxd_executions_tier_total", "counter",
                      "Executions that ended, by the isolation tier they ran in (standard, strong: gVisor).");
        text_printf(&t, "sandboxd_executions_tier_total{tier=\"standard\"} %" PRIu64 "\n", m->tier_runs[0]);
        text_printf(&t, "sandboxd_executions_tier_total{tier=\"strong\"} %" PRIu64 "\n", m->tier_runs[1]);
        render_header(&t, "sandboxd_network_requests_total", "counter",
                      "Connections and requests the egress proxies of runs with network handled, by decision "
                      "(allowed, denied).");
        for (int d = 0; d < _NET_DECISION_MAX; d++)
                text_printf(&t, "sandboxd_network_requests_total{decision=\"%s\"} %" PRIu64 "\n",
                            net_decision_to_string(d), m->network_requests[d]);
        render_header(&t, "sandboxd_pool_retired_total", "counter",
                      "Warm units replaced before any claim: the unit died (reason=\"died\") or was older than "
                      "MaxAgeSec= (reason=\"aged\").");
        text_printf(&t, "sandboxd_pool_retired_total{reason=\"died\"} %" PRIu64 "\n", m->pool_retired[0]);
        text_printf(&t, "sandboxd_pool_retired_total{reason=\"aged\"} %" PRIu64 "\n", m->pool_retired[1]);

        render_counter(&t, "sandboxd_store_errors_total", "Writes of execution records the store refused.",
                       m->store_errors);
        render_counter(&t, "sandboxd_workspaces_recycled_total",
                       "Pool workspaces wiped after their execution and made ready again, without a new mount.",
                       m->workspaces_recycled);
        render_counter(&t, "sandboxd_workspaces_replaced_total",
                       "Pool workspaces unmounted after their execution instead (over the wipe budget, a wipe "
                       "that failed, an execution that failed in sandboxd or ended before its unit ran); the "
                       "pool mounts a fresh one.",
                       m->workspaces_replaced);
        /* sandboxd never reconnects to the bus: sd_bus_set_exit_on_disconnect() ends the daemon when the
         * bus goes away (its units' state can no longer be followed), and systemd restarts it, which
         * re-adopts every execution. The counter is there so that dashboards need not change if that
         * ever does; until then a restart shows as this process's counters starting over. */
        render_counter(&t, "sandboxd_dbus_reconnects_total",
                       "Reconnections to the system bus. Always 0: sandboxd exits on bus loss and is restarted.",
                       m->dbus_reconnects);

        render_nodes(&t, g);

        (void) metrics_escape_label(PACKAGE_VERSION, version, sizeof(version));
        render_header(&t, "sandboxd_build_info", "gauge", "Always 1; the version of sandboxd as a label.");
        text_printf(&t, "sandboxd_build_info{version=\"%s\"} 1\n", version);

        if (t.oom || !t.data) {
                free(t.data);
                return -ENOMEM;
        }
        *ret = t.data;
        return 0;
}
