/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "artifacts.h"
#include "conf.h"
#include "http.h"
#include "language.h"
#include "metrics.h"
#include "queue.h"
#include "signed-url.h"
#include "store.h"

typedef struct Callbacks Callbacks;
typedef struct BusApi BusApi;
typedef struct CurlEvent CurlEvent;
typedef struct Job Job;
typedef struct Session Session;
typedef struct Workspace Workspace;

typedef struct CgroupRoot {
        const char *name;        /* "memory", "pids", "cpuacct" (v1) or "unified" (v2) */
        char *slice_dir;         /* host path of sandboxd.slice in that hierarchy */
} CgroupRoot;

typedef struct SeccompFilter {
        uint8_t *bpf;            /* classic BPF, bpf_len / 8 instructions */
        size_t bpf_len;
} SeccompFilter;

typedef struct Manager {
        sd_event *event;
        sd_bus *bus;             /* the system bus: systemd (through sysd), our D-Bus API, polkit */
        struct Sysd *sysd;       /* the one speaker of org.freedesktop.systemd1 (sysd.h) */
        sd_event_source *sigterm, *sigint, *sighup, *sweep_timer;

        char *config_dir;
        char *helper_override;   /* --helper= on the command line wins over Helper= */
        Config *config;

        Http *http;
        BusApi *bus_api;         /* the D-Bus API (bus-api.c) on bus */
        Store *store;
        Metrics *metrics;        /* what GET /metrics renders */
        CurlEvent *curl;         /* HTTP client transfers (input downloads, callbacks) on the loop */
        Callbacks *callbacks;    /* callback deliveries from the store's outbox (callback.c) */

        /* Artifacts: the content-addressed store (ArtifactsDirectory=) and the key that signs their
         * URLs (ArtifactURLKeyFile=), both fixed at start. */
        int artifacts_fd;
        uint8_t artifact_key[SIGNED_URL_KEY_MAX];
        size_t artifact_key_len;
        /* What the artifact budgets have charged (artifact-accounts.c): the whole store's, and the
         * callers' that have a collection running. */
        ArtifactAccount artifact_store_account;
        struct ArtifactCallerAccount *artifact_callers;

        /* The seccomp filters, compiled once at start: filters[i] for the language row
         * language_get(i), which may add system calls to the common allow-list
         * (Language.extra_syscalls). */
        SeccompFilter *filters;
        size_t n_filters;

        char *usr_layer;         /* this start's /usr layer (usr-layer.h) */
        unsigned n_adopted_live; /* adopted executions not yet final: they may use older layers */
        char *workspaces_dir;    /* where the per-execution tmpfs mount units go */

        CgroupRoot cgroups[3];
        size_t n_cgroups;
        bool cgroup_v2;
        uint64_t phys_mem_bytes;         /* the host's memory, for the session budgets (0: unknown) */

        /* All jobs, newest first. The queue (queue.c): each owner's waiting jobs, and the slots they
         * hold; n_queued and n_running are its counters. */
        Job *jobs;
        Queue queue;
        unsigned n_jobs, n_running, n_queued, n_finished;
        uint64_t counter_finished;

        /* Workspaces mounted ahead of time (workspace.c). */
        Workspace *pool;
        unsigned n_pool;
        uint64_t pool_retry_after;

        /* Sessions (session.c): persistent workspaces shared by the runs of one session_id. */
        Session *sessions;
        unsigned n_sessions;

        bool stopping;
        unsigned n_end_pending;  /* calls to end executions not yet answered, at stop */
} Manager;

int manager_new(const char *config_dir, const char *helper_override, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);
int manager_run(Manager *m);

/* (Re)load the configuration; on error the old one stays. */
int manager_reload(Manager *m);

Job *manager_find_job(Manager *m, const char *id);
/* Start queued jobs while slots are free, round robin between owners (queue.h). */
void manager_dispatch_queue(Manager *m);
/* A job's place in the queue: it waits from job_new() (manager_queue_job), holds a slot from
 * job_start() (manager_job_starts) or its adoption after a restart (manager_adopt_running_job), and
 * leaves when final or freed (manager_job_leaves: any state, more than once is fine). */
int manager_queue_job(Manager *m, Job *j);
int manager_adopt_running_job(Manager *m, Job *j);
void manager_job_starts(Manager *m, Job *j);
void manager_job_leaves(Manager *m, Job *j);
/* Drop the oldest finished jobs beyond KeepFinished=. */
void manager_evict_finished(Manager *m);
void manager_notify_status(Manager *m);
/* The compiled seccomp filter for programs of language l, or NULL if l is not a row. */
const SeccompFilter *manager_seccomp_filter(Manager *m, const Language *l);
/* The gauges of GET /metrics, as they are now. */
void manager_metrics_gauges(Manager *m, MetricsGauges *ret);
