/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <limits.h>
#include <systemd/sd-id128.h>
#include <unistd.h>

#include "log.h"
#include "node-name.h"
#include "node.h"
#include "time-util.h"

/* A store that keeps failing is logged once, then at most this often (with how many were not). */
#define NODE_STORE_ERROR_INTERVAL_USEC (60 * USEC_PER_SEC)

struct Node {
        Context *ctx;
        NodeRunningFn running;
        NodeLostFn lost;
        void *userdata;
        sd_event_source *timer;

        char *name;                      /* resolved at start, kept for the life of the process */
        uint64_t epoch;                  /* 0: not registered */
        uint64_t lease_expires_usec;
        bool fenced;                     /* the last heartbeat was refused: another start took the name */
        /* CLOCK_REALTIME of the first renewal of an unbroken run of them (0: the last heartbeat
         * failed). Others' leases are judged only after a whole lease of it: after an outage of the
         * store every node's lease looks run out, and each must have had the time to renew its own
         * before any takes another's work. */
        uint64_t renewed_since_usec;
        bool left;

        StoreNode *registry;             /* the rows as read at the last heartbeat */
        size_t n_registry;
        MetricsNode *metrics;            /* the same, as /metrics needs them (names point into registry) */
        /* The expired leases whose executions this node has taken over (at most one entry per row
         * of the registry), by the lease's end: each is taken once, not at every heartbeat while the
         * row stays expired (a name that left cleanly stays so for good); a lease renewed and run out
         * again (a node that came back, same epoch, and was lost again) ends elsewhere, and is taken
         * again. */
        struct { char *name; uint64_t lease_expires_usec; } *taken;
        size_t n_taken;

        StoreCall *heartbeat_call;       /* the renewal (or registration) under way */
        StoreCall *registry_call;        /* the registry's read under way (store_node_list_async()) */
        uint64_t heartbeat_sent_usec;    /* CLOCK_REALTIME it was sent at: the lease runs from there */

        uint64_t store_errors;           /* failures in a row */
        uint64_t store_errors_unlogged;
        uint64_t store_error_logged_usec; /* CLOCK_MONOTONIC */
};

/* The first failure of a run of them is logged, then one per NODE_STORE_ERROR_INTERVAL_USEC. */
static void node_store_error(Node *n, int r, const char *doing) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        n->renewed_since_usec = 0;
        n->store_errors++;
        if (n->store_errors > 1 && now < n->store_error_logged_usec + NODE_STORE_ERROR_INTERVAL_USEC) {
                n->store_errors_unlogged++;
                return;
        }
        if (n->store_errors_unlogged > 0)
                log_warning_errno(r, "Node '%s': cannot %s: %s (and %" PRIu64 " failures since the last "
                                  "message), ignoring.", n->name, doing,
                                  store_error_message(n->ctx->store) ?: "store error", n->store_errors_unlogged);
        else
                log_warning_errno(r, "Node '%s': cannot %s: %s, ignoring.", n->name, doing,
                                  store_error_message(n->ctx->store) ?: "store error");
        n->store_errors_unlogged = 0;
        n->store_error_logged_usec = now;
}

static void node_store_ok(Node *n) {
        if (n->store_errors > 0)
                log_info("Node '%s': the store answers again after %" PRIu64 " failures.", n->name,
                         n->store_errors);
        n->store_errors = 0;
        n->store_errors_unlogged = 0;
}

/* The registry as read now (l of k rows, taken). */
static void node_registry_set(Node *n, StoreNode *l, size_t k) {
        MetricsNode *m;

        m = k > 0 ? calloc(k, sizeof(MetricsNode)) : NULL;
        if (k > 0 && !m) {
                (void) log_oom();
                store_nodes_free(l, k);
                return;
        }
        for (size_t i = 0; i < k; i++)
                m[i] = (MetricsNode) { .name = l[i].name, .lease_expires_usec = l[i].lease_expires_usec };
        store_nodes_free(n->registry, n->n_registry);
        free(n->metrics);
        n->registry = l;
        n->n_registry = k;
        n->metrics = m;
}

/* At start (the loop not running yet). */
static void node_read_registry(Node *n) {
        StoreNode *l = NULL;
        size_t k = 0;
        int r;

        r = store_node_list(n->ctx->store, &l, &k);
        if (r < 0) {
                node_store_error(n, r, "read the node registry");
                return;          /* the last one read stays */
        }
        node_registry_set(n, l, k);
}

static uint64_t node_lease_usec(const Node *n) {
        return n->ctx->config->node_lease_sec * USEC_PER_SEC;
}

static void node_registered(Node *n, uint64_t now, uint64_t epoch) {
        node_store_ok(n);
        n->epoch = n->ctx->node_epoch = epoch;
        n->renewed_since_usec = now;
        n->lease_expires_usec = now + node_lease_usec(n);
        log_info("Node '%s' registered, epoch %" PRIu64 ", lease %" PRIu64 " s renewed every %" PRIu64 " s.",
                 n->name, epoch, n->ctx->config->node_lease_sec, n->ctx->config->node_heartbeat_sec);
}

/* At start (the loop not running yet). */
static int node_register(Node *n) {
        uint64_t now = now_usec(CLOCK_REALTIME), epoch = 0;
        int r;

        r = store_node_register(n->ctx->store, n->name, now, node_lease_usec(n), n->ctx->config->max_concurrent,
                                &epoch);
        if (r < 0) {
                node_store_error(n, r, "register");
                return r;
        }
        node_registered(n, now, epoch);
        return 0;
}

static void node_after_heartbeat(Node *n);

static void on_heartbeat_done(Node *n, int r);

/* The answer to node_register_async(); never called after node_free() (store_cancel_userdata()). */
static void on_registered(void *userdata, int r, uint64_t epoch) {
        Node *n = userdata;

        n->heartbeat_call = NULL;
        if (r >= 0 && epoch == 0)
                r = -EBADMSG;
        if (r < 0)
                node_store_error(n, r, "register");
        else
                node_registered(n, n->heartbeat_sent_usec, epoch);
        node_after_heartbeat(n);
}

/* A registration that failed at start (the store away), asked again at each heartbeat without
 * waiting; one at a time, as the renewals. */
static void node_register_async(Node *n) {
        int r;

        if (n->heartbeat_call)
                return;
        n->heartbeat_sent_usec = now_usec(CLOCK_REALTIME);
        r = store_node_register_async(n->ctx->store, n->name, n->heartbeat_sent_usec, node_lease_usec(n),
                                      n->ctx->config->max_concurrent, on_registered, n, &n->heartbeat_call);
        if (r < 0) {
                node_store_error(n, r, "register");
                node_after_heartbeat(n);
        }
}

/* The answer to the lease's renewal (node_heartbeat()). */
static void on_heartbeat_renewed(void *userdata, int r, StoreRecord *rec) {
        Node *n = userdata;

        store_record_free(rec);
        n->heartbeat_call = NULL;
        on_heartbeat_done(n, r);
        node_after_heartbeat(n);
}

static void on_heartbeat_done(Node *n, int r) {
        uint64_t now = n->heartbeat_sent_usec;

        if (r == -ESTALE) {
                /* Fencing: a later start under this name holds the row. Registering again would take
                 * it back from that one, which is the node the name now means: this one keeps running
                 * what it has, and says so once. */
                node_store_ok(n);
                if (!n->fenced)
                        log_error("Node '%s': the registry holds a later epoch than ours (%" PRIu64 "): another "
                                  "sandboxd registered under this name. This one no longer renews its lease; give "
                                  "each node a NodeName= of its own in [Cluster] and restart it.",
                                  n->name, n->epoch);
                n->fenced = true;
                return;
        }
        if (r < 0) {
                node_store_error(n, r, "renew its lease");
                return;
        }
        node_store_ok(n);
        if (n->fenced)
                log_notice("Node '%s': the lease of epoch %" PRIu64 " is renewed again.", n->name, n->epoch);
        n->fenced = false;
        n->lease_expires_usec = now + node_lease_usec(n);
        if (n->renewed_since_usec == 0)
                n->renewed_since_usec = now;
}

/* The lease renewed without waiting for the store (issue 22); what depends on it (the registry, the
 * take-overs) follows the answer. One renewal at a time: a tick that finds the last one unanswered
 * (a store far behind) skips. */
static void node_heartbeat(Node *n) {
        int r;

        if (n->heartbeat_call)
                return;
        n->heartbeat_sent_usec = now_usec(CLOCK_REALTIME);
        r = store_node_heartbeat_async(n->ctx->store, n->name, n->epoch, n->heartbeat_sent_usec, node_lease_usec(n),
                                       n->running ? n->running(n->userdata) : 0, on_heartbeat_renewed, n,
                                       &n->heartbeat_call);
        if (r < 0) {
                node_store_error(n, r, "renew its lease");
                node_after_heartbeat(n);
        }
}

static bool node_taken(const Node *n, const StoreNode *x) {
        for (size_t i = 0; i < n->n_taken; i++)
                if (streq(n->taken[i].name, x->name))
                        return n->taken[i].lease_expires_usec == x->lease_expires_usec;
        return false;
}

/* Remembered for x's lease; entries of names no longer in the registry go (the list stays within
 * its size). A failure to remember only means trying again at the next heartbeat. */
static void node_mark_taken(Node *n, const StoreNode *x) {
        size_t k = 0;
        void *m;

        for (size_t i = 0; i < n->n_taken; i++) {
                bool listed = false;

                for (size_t j = 0; j < n->n_registry && !listed; j++)
                        listed = streq(n->registry[j].name, n->taken[i].name);
                if (!listed || streq(n->taken[i].name, x->name)) {
                        free(n->taken[i].name);
                        continue;
                }
                n->taken[k++] = n->taken[i];
        }
        n->n_taken = k;
        m = reallocarray(n->taken, k + 1, sizeof(*n->taken));
        if (!m)
                return;
        n->taken = m;
        n->taken[k].name = strdup(x->name);
        if (!n->taken[k].name)
                return;
        n->taken[k].lease_expires_usec = x->lease_expires_usec;
        n->n_taken++;
}

static void node_take_over_lost(Node *n);

void node_take_over_failed(Node *n, const char *name) {
        for (size_t i = 0; i < n->n_taken; i++)
                if (streq(n->taken[i].name, name))
                        n->taken[i].lease_expires_usec = 0;     /* matches no lease: not taken */
}

/* The registry read after the lease's renewal (node_after_heartbeat()); never called after
 * node_free() (store_cancel_userdata()). */
static void on_registry_read(void *userdata, int r, StoreNode *l, size_t k) {
        Node *n = userdata;

        n->registry_call = NULL;
        if (r < 0) {
                node_store_error(n, r, "read the node registry");
                return;          /* the last one read stays */
        }
        node_registry_set(n, l, k);
        if (!n->left)
                node_take_over_lost(n);
}

/* After the lease's renewal (or registration): the registry, read without waiting, and then the
 * take-overs. One read at a time. */
static void node_after_heartbeat(Node *n) {
        int r;

        if (n->left || n->registry_call)
                return;
        r = store_node_list_async(n->ctx->store, on_registry_read, n, &n->registry_call);
        if (r < 0)
                node_store_error(n, r, "read the node registry");
}

static void node_take_over_lost(Node *n) {
        /* Other nodes whose lease ran out: their unfinished executions are taken over here, but only
         * by a node whose own lease is good (one cut off from the store must not take anything). */
        if (n->lost && n->epoch > 0 && !n->fenced && n->lease_expires_usec > now_usec(CLOCK_REALTIME) &&
            n->renewed_since_usec > 0 && now_usec(CLOCK_REALTIME) >= n->renewed_since_usec + node_lease_usec(n)) {
                uint64_t now = now_usec(CLOCK_REALTIME);

                for (size_t i = 0; i < n->n_registry; i++)
                        if (!streq(n->registry[i].name, n->name) && n->registry[i].lease_expires_usec < now &&
                            !node_taken(n, &n->registry[i]) && n->lost(n->userdata, n->registry[i].name) >= 0)
                                node_mark_taken(n, &n->registry[i]);
        }
}

static int on_heartbeat(sd_event_source *s, uint64_t usec, void *userdata) {
        Node *n = userdata;

        if (n->left)
                return 0;
        if (n->epoch == 0)
                node_register_async(n);
        else
                node_heartbeat(n);
        /* NodeHeartbeatSec= as in force now: a reload changes it from the next one on. */
        (void) sd_event_source_set_time_relative(s, n->ctx->config->node_heartbeat_sec * USEC_PER_SEC);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ON);
        return 0;
}

/* NodeName=, else the machine id; a machine without one (a container without /etc/machine-id) uses
 * its host name if that is a valid node name. */
static int node_resolve_name(const Config *c, char **ret) {
        char host[HOST_NAME_MAX + 1] = {};
        sd_id128_t id;
        int r;

        if (c->node_name) {
                *ret = strdup(c->node_name);
                return *ret ? 0 : log_oom();
        }
        r = sd_id128_get_machine(&id);
        if (r >= 0) {
                *ret = strdup(SD_ID128_TO_STRING(id));
                return *ret ? 0 : log_oom();
        }
        if (gethostname(host, sizeof(host) - 1) >= 0 && node_name_is_valid(host)) {
                log_warning_errno(r, "Cannot read the machine id (%m): the node is named after the host, '%s'. Set "
                                  "NodeName= in [Cluster] to name it.", host);
                *ret = strdup(host);
                return *ret ? 0 : log_oom();
        }
        return log_error_errno(r, "Cannot read the machine id for the node's name (%m), and the host name is not a "
                               "valid one: set NodeName= in [Cluster].");
}

int node_new(Context *ctx, NodeRunningFn running, NodeLostFn lost, void *userdata, Node **ret) {
        _cleanup_(node_freep) Node *n = NULL;
        int r;

        n = calloc(1, sizeof(Node));
        if (!n)
                return log_oom();
        *n = (Node) { .ctx = ctx, .running = running, .lost = lost, .userdata = userdata };
        r = node_resolve_name(ctx->config, &n->name);
        if (r < 0)
                return r;
        ctx->node_name = n->name;
        /* Not fatal: the store may be briefly unavailable (PostgreSQL restarting); the heartbeat tries
         * again, and the node is simply not in the registry meanwhile. */
        (void) node_register(n);
        node_read_registry(n);
        r = sd_event_add_time_relative(ctx->event, &n->timer, CLOCK_MONOTONIC,
                                       ctx->config->node_heartbeat_sec * USEC_PER_SEC, 0, on_heartbeat, n);
        if (r < 0)
                return log_error_errno(r, "Failed to add the node heartbeat timer: %m");
        *ret = TAKE_PTR(n);
        return 0;
}

void node_leave(Node *n) {
        int r;

        if (!n || n->left)
                return;
        n->left = true;
        (void) sd_event_source_set_enabled(n->timer, SD_EVENT_OFF);
        if (n->epoch == 0 || n->fenced)
                return;         /* nothing of ours to give back */
        r = store_node_leave(n->ctx->store, n->name, n->epoch, now_usec(CLOCK_REALTIME));
        if (r == -ESTALE)
                log_notice("Node '%s': a later epoch holds the name, nothing to give back.", n->name);
        else if (r < 0)
                log_warning_errno(r, "Node '%s': cannot end its lease: %s; the other nodes see it gone when the "
                                  "lease expires.", n->name, store_error_message(n->ctx->store) ?: "store error");
        else {
                n->lease_expires_usec = now_usec(CLOCK_REALTIME);
                log_info("Node '%s' left the registry (epoch %" PRIu64 ").", n->name, n->epoch);
        }
}

void node_reload(Node *n, const Config *c) {
        /* Called before c replaces the configuration in force, so that a change is logged once. */
        if (n && !streq_ptr(c->node_name, n->ctx->config->node_name))
                log_notice("NodeName= takes effect at the next restart; this node stays '%s'.", n->name);
}

Node *node_free(Node *n) {
        if (!n)
                return NULL;
        sd_event_source_disable_unref(n->timer);
        if (n->ctx->store)
                store_cancel_userdata(n->ctx->store, n);
        if (n->ctx->node_name == n->name)
                n->ctx->node_name = NULL;
        store_nodes_free(n->registry, n->n_registry);
        free(n->metrics);
        for (size_t i = 0; i < n->n_taken; i++)
                free(n->taken[i].name);
        free(n->taken);
        free(n->name);
        free(n);
        return NULL;
}

const char *node_name(const Node *n) {
        return n ? n->name : NULL;
}

uint64_t node_epoch(const Node *n) {
        return n ? n->epoch : 0;
}

uint64_t node_lease_expires_usec(const Node *n) {
        return n ? n->lease_expires_usec : 0;
}

const StoreNode *node_registry(const Node *n, size_t *ret_n) {
        *ret_n = n ? n->n_registry : 0;
        return n ? n->registry : NULL;
}

void node_metrics_gauges(const Node *n, MetricsGauges *g) {
        g->node_name = node_name(n);
        g->nodes = n ? n->metrics : NULL;
        g->n_nodes = n ? n->n_registry : 0;
        g->now_usec = now_usec(CLOCK_REALTIME);
}
