/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The daemon's shared services and facts, which every stage below the composition root (manager.c)
 * uses and none owns: the loop, the buses, the store, the configuration in force, the metrics, the
 * HTTP client, the artifact store, and what the sandboxes are built from. The manager fills it at
 * start (and replaces config on reload); the modules read it. It holds no registry of jobs or
 * sessions (the runner and the session registry are objects of their own, above) and no callback
 * upward: nothing reached through it calls back into the manager. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "conf.h"
#include "language.h"
#include "metrics.h"
#include "risk-scan.h"
#include "signed-url.h"

typedef struct ArtifactAccounts ArtifactAccounts;
typedef struct Environments Environments;
typedef struct Callbacks Callbacks;
typedef struct NetClient NetClient;
typedef struct Store Store;
typedef struct Sysd Sysd;
typedef struct WorkspacePool WorkspacePool;
typedef struct WarmPool WarmPool;
typedef struct UnitReaper UnitReaper;

typedef struct CgroupRoot {
        const char *name;        /* "memory", "pids", "cpuacct" (v1), "unified" (v2, or hybrid's) */
        char *slice_dir;         /* host path of sandboxd.slice in that hierarchy */
} CgroupRoot;

/* The hierarchies handed to sandbox-exec, at most: v1's memory, pids and cpuacct, and the unified one
 * of a hybrid host (sandbox-exec's cgroup_names[] lists the same four). */
#define CGROUP_ROOTS_MAX 4


typedef struct Context {
        sd_event *event;
        sd_bus *bus;             /* the system bus: systemd (through sysd), our D-Bus API, polkit */
        Sysd *sysd;              /* the one speaker of org.freedesktop.systemd1 (sysd.h) */
        Store *store;
        Config *config;          /* in force; replaced by the manager on reload */
        struct NetPolicy *net_policy;   /* [Network] of config, parsed (net/net-policy.h); replaced with it */
        const char *proxy;       /* host path of sandboxd-proxy (--proxy= wins over the build's default) */
        Metrics *metrics;        /* what GET /metrics renders */
        NetClient *net;          /* HTTP transfers (input downloads, callbacks), run by the network worker */
        Callbacks *callbacks;    /* callback deliveries from the store's outbox (callback.c) */
        ArtifactAccounts *accounts;   /* what the artifact budgets have charged (artifact-accounts.c) */
        WorkspacePool *pool;     /* workspaces mounted ahead of time (workspace.c) */
        WarmPool *warm;          /* execution units started ahead of time (run/warm-pool.c) */
        UnitReaper *reaper;      /* units of final executions that systemd is still ending */
        /* This node (run/node.c): its name, and its epoch in the registry, 0 while not registered;
         * every execution it takes carries them (Execution.node, node_epoch). */
        const char *node_name;
        uint64_t node_epoch;
        /* The store is shared by several nodes (PostgreSQL), and so is the queue: a submission that
         * is not a session's run may be claimed by any node (runner.c, store_claim()). */
        bool shared_queue;

        /* Artifacts: the content-addressed store (ArtifactsDirectory=) and the key that signs their
         * URLs (ArtifactURLKeyFile=), both fixed at start. */
        int artifacts_fd;
        uint8_t artifact_key[SIGNED_URL_KEY_MAX];
        size_t artifact_key_len;

        /* What the sandboxes are made of. */
        const char *helper;      /* host path of sandbox-exec (--helper= wins over Helper=) */
        char *usr_layer;         /* this start's /usr layer (usr-layer.h) */
        /* The strong tier (docs/isolation.md): why it cannot run here (Runsc= missing, ...), or NULL:
         * it can. Found at start and reload; with it, the policy in force (Strong= unset: auto where
         * the tier can run, else never). */
        char *strong_unavailable;
        IsolationSettings isolation;
        Environments *environments;  /* EnvironmentsDirectory='s, read at start and reload (environment.h) */
        char *workspaces_dir;    /* where the per-execution tmpfs mount units go */
        char *proxy_root;        /* the egress proxies' RootDirectory=: empty, root's, 0755 */
        char *proxy_empty;       /* bound over their /sys: empty, root's, 0555 */
        /* Language definitions: the vendor directory and the one that overrides it. */
        char *languages_dir;
        char *languages_etc_dir;
        CgroupRoot cgroups[CGROUP_ROOTS_MAX];
        size_t n_cgroups;
        bool cgroup_v2;
        uint64_t phys_mem_bytes;         /* the host's memory, for the session budgets (0: unknown) */

        bool stopping;           /* SIGTERM: nothing new starts */
} Context;

/* The compiled seccomp filter for programs of language l, or NULL if l is not a row. */
const SeccompFilter *context_seccomp_filter(const Context *c, const Language *l);
/* The same for a run with network (issue 16). */
const SeccompFilter *context_seccomp_filter_net(const Context *c, const Language *l);
