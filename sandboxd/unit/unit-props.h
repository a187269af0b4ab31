/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Request + configuration → the properties of the transient service unit that runs one execution.
 * Pure and table-driven: the result is a list of (name, D-Bus type, value, reason) that sysd.c
 * appends to the StartTransientUnit call, and that cmocka checks without a bus. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/conf.h"
#include "model/context.h"
#include "model/language.h"
#include "model/request.h"
#include "unit-name.h"

/* Paths inside the sandbox. */
#define SANDBOX_WORKSPACE "/workspace"
/* Inside the sandbox, below its private /run: where the helper and the unit's cgroup directories are
 * bound. sandbox-exec detaches both before the program exists (their sources name the host). */
#define SANDBOX_HELPER "/run/.sandbox-exec"
#define SANDBOX_CGROUP_DIR "/run/.cgroup"
/* sandbox-exec's bounding set: CAP_KILL (5), CAP_SETGID (6), CAP_SETUID (7), CAP_SETPCAP (8),
 * CAP_SYS_ADMIN (21); see sandbox-exec.c for what each is for and when it is dropped. */
#define SANDBOX_HELPER_CAPABILITIES                                                                  \
        ((UINT64_C(1) << 5) | (UINT64_C(1) << 6) | (UINT64_C(1) << 7) | (UINT64_C(1) << 8) | (UINT64_C(1) << 21))

typedef enum PropKind {
        PK_BOOL,       /* b */
        PK_STRING,     /* s */
        PK_U64,        /* t */
        PK_U32,        /* u */
        PK_I32,        /* i */
        PK_STRV,       /* as */
        PK_FD,         /* h */
        PK_BINDS,      /* a(ssbt): strv holds triples source, destination, "-" (ignore if missing) or "" */
        PK_EXEC,       /* a(sasb): strv holds the argv, s the path */
        PK_EXEC_EX,    /* a(sasas): strv holds the argv, s the path, flag the one ExecStartEx flag or NULL */
        PK_BSTRV,      /* (bas): b and strv, e.g. RestrictAddressFamilies= as an allow-list */
        PK_TMPFS,      /* a(ss): strv holds pairs path, options */
} PropKind;

typedef struct UnitProp {
        const char *name;
        PropKind kind;
        bool b;
        uint64_t u;
        int32_t i;
        int fd;
        char *s;
        char **strv;
        size_t n;
        const char *flag;
        const char *reason;
} UnitProp;

typedef struct UnitProps {
        UnitProp *props;
        size_t n, allocated;
} UnitProps;

typedef struct CgroupBind {
        const char *source;      /* host path of the unit's cgroup directory for one controller */
        const char *name;        /* "memory", "pids", "cpuacct", "unified" */
} CgroupBind;

/* The unit's own cgroup directory in each hierarchy sandboxd uses (n roots, ret has room for
 * CGROUP_ROOTS_MAX): ret[i].source is malloc'ed, freed by cgroup_binds_done(). 0, -E2BIG (n too
 * large) or -ENOMEM (nothing left allocated). */
int cgroup_binds_build(const CgroupRoot *roots, size_t n, const char *unit, CgroupBind *ret);
void cgroup_binds_done(CgroupBind *cg, size_t n);

typedef struct UnitPlan {
        const char *execution_id;
        const Language *language;
        Limits limits;
        char *const *user_env;   /* sorted "KEY=VALUE" */
        size_t n_user_env;
        uint64_t seed;
        const char *helper;      /* host path of sandbox-exec */
        const char *workspace;   /* host path of this execution's tmpfs (a mount unit), or of the
                                  * session's: the sandbox's root (sandbox-root.h), with workspace/
                                  * and tmp/ in it */
        const char *usr_layer;   /* host path of the /usr layer (usr-layer.h), or NULL: no overlay */
        /* host path of the request's environment's usr/ tree (model/environment.h): one more lower
         * layer of the overlay, below usr_layer (its whiteouts hide /usr/local there too) and above
         * the host's /usr; only with usr_layer. NULL: the language's base. */
        const char *environment_layer;
        const char *session_state_dir; /* a session's run: the workspace relative to /var/lib (for
                                        * StateDirectory=, see SESSION_STATE_PREFIX), else NULL */
        const CgroupBind *cgroups;
        size_t n_cgroups;
        uint64_t nofile;
        uint64_t max_code_bytes;
        uint64_t head_bytes, tail_bytes;   /* output capture (sandbox-exec keeps it) */
        int stdin_fd;                      /* the control channel */
        /* This run's input files (below <workspace>/input), written by sandboxd: sandbox-exec
         * copies each once more inside the unit, so its pages are charged to the execution. */
        const InputFile *inputs;
        size_t n_inputs;
        /* The request's "args": argv words after the language's run command (never in a warm unit,
         * whose command line was fixed when it started: warm-policy.h). */
        char *const *args;
        size_t n_args;
        /* The systemd protections of the kernel and of the helper (RestrictNamespaces=,
         * ProtectKernel*=, ...): always on in sandboxd; off only in bench/ to measure their cost. */
        bool no_kernel_protection;
        /* A unit of the warm pool (warm-pool.c): started before its request, with the pool's limits;
         * sandbox-exec --warm waits for the claim, which brings the deadline, the source and the
         * environment (limits.timeout_ms is then only the backstop's: the unit's longest life). Where
         * the language has a warm_argv, the runtime starts at once and imports warm_preload
         * (comma-separated module names, "" for none). */
        bool warm;
        const char *warm_preload;       /* ignored in the strong tier: its runtime starts after the claim */
        /* A run with network (issue 16): the egress proxy's socket unit, whose network namespace
         * the unit joins (JoinsNamespaceOf=, After=); the program gets the proxy variables. NULL:
         * no network. */
        const char *proxy_socket;
        /* The strong tier (docs/isolation.md): sandbox-exec runs the program (and its compile step)
         * under gVisor, `runsc` (below /usr: the sandbox sees the host's /usr only) with --platform=
         * runsc_platform. NULL: the standard tier. */
        const char *runsc;
        const char *runsc_platform;
} UnitPlan;

/* The strong tier's room beyond the request's limits, for gVisor itself (its Sentry, gofer and
 * ptrace stubs: about 25 MB and 40-70 tasks idle, 3-7 host tasks per process of the program, the most
 * under TCG): the program gets memory_mb and tasks (RLIMIT_NPROC inside gVisor) as in the standard
 * tier. TasksMax= must stay out of the program's reach: were gVisor's own clone() to fail there, runsc
 * could die with the program's output. sandbox-exec counts the program's processes to tell when it
 * reached tasks (strong.c). */
#define STRONG_MEMORY_OVERHEAD_MB 64
#define STRONG_TASKS_PER_PROCESS 12
#define STRONG_TASKS_OVERHEAD 128

int unit_props_build(const UnitPlan *plan, UnitProps *ret);

/* How disk_mb is split: /dev/shm gets its own small tmpfs (1/8, at most 64 MiB), the workspace
 * tmpfs (/workspace, /tmp, /var/tmp) the rest, so together they never exceed disk_mb. */
uint64_t sandbox_shm_bytes(const Limits *l);
uint64_t sandbox_workspace_bytes(const Limits *l);
void unit_props_done(UnitProps *p);
const UnitProp *unit_props_find(const UnitProps *p, const char *name);

/* Build the fixed environment of every sandbox followed by the language's and the request's. */
int sandbox_environment(const UnitPlan *plan, char ***ret, size_t *ret_n);
/* The same as a claim's environment block: "KEY=VALUE\0" each (exec-protocol.h). */
int sandbox_environment_block(const UnitPlan *plan, char **ret, size_t *ret_len);

/* The properties a claim sets on a running warm unit whose limits differ from the request's:
 * MemoryMax=, CPUQuotaPerSecUSec=, TasksMax= (the same values unit_props_build() gives a cold unit,
 * of the strong tier if strong). */
int unit_props_claim_limits(const Limits *l, bool strong, UnitProps *ret);
/* The unit name of a warm unit: "sandboxd-warm-<32 hex>.service" (random). */
char *warm_unit_name_generate(void);
/* The fd store name of an execution's control socket: "ctl-<execution id>" for a unit started for
 * it, "ctl-sandboxd-warm-<32 hex>" for a warm unit (unit: its name), stored when the pool started it,
 * before its claim had an execution id. -ENAMETOOLONG if it does not fit n bytes. */
int control_fd_name(const char *execution_id, const char *unit, char *buf, size_t n);
#define CONTROL_FD_NAME_MAX 128

/* The egress proxy of a run with network (issue 16): a socket unit bound inside a network namespace
 * of its own, which the execution unit joins, and the service it activates, outside of it. */
#define PROXY_LISTEN_ADDRESS "127.0.0.1:3128"
#define PROXY_URL "http://" PROXY_LISTEN_ADDRESS
/* Inside the workspace: where pip installs (PIP_TARGET=) and python imports from (PYTHONPATH=). */
#define SANDBOX_PKGS_DIR ".pkgs"

typedef struct ProxyPlan {
        const char *execution_id;
        const char *socket_unit;         /* the service Requires= and comes After= it */
        const char *proxy;               /* host path of sandboxd-proxy */
        const char *root;                /* its RootDirectory=: an empty directory of sandboxd's */
        const char *empty;               /* an empty directory bound over its /sys */
        char *const *allow;              /* the request's network.allow, validated */
        size_t n_allow;
        char *const *permit;             /* PermitAddresses= in text */
        size_t n_permit;
        char *const *hosts;              /* HostsFile=: "NAME=ADDRESS" */
        size_t n_hosts;
        uint64_t max_bytes;              /* MaxTransferMB= in bytes; 0: no cap */
        uint64_t max_connections;
        uint64_t memory_max;             /* MemoryMax= of the proxy (proxy_memory_max()) */
        uint64_t connect_timeout_ms, idle_timeout_ms, head_timeout_ms;
        int stdout_fd;                   /* the write end of the event pipe */
        int stderr_fd;                   /* a journal stream (sd_journal_stream_fd()), or -1: journal */
} ProxyPlan;

/* "sandboxd-proxy-<32 hex>.socket" / ".service": the hex from the execution id (SHA-256), so that a
 * restarted sandboxd finds an execution's proxy units again. suffix ".socket" or ".service". */
char *proxy_unit_name(const char *execution_id, const char *suffix);
/* The fd store name of the read end of an execution's proxy pipe: "proxy-<32 hex>", the hex of its
 * units. -ENAMETOOLONG if it does not fit n bytes, -ENOMEM. */
int proxy_fd_name(const char *execution_id, char *buf, size_t n);
int unit_props_proxy_socket(const ProxyPlan *plan, UnitProps *ret);
int unit_props_proxy_service(const ProxyPlan *plan, UnitProps *ret);
/* The environment a program with network gets (PROXY_URL in both cases of the variables, NO_PROXY,
 * pip and python into the workspace, npm's cache in /tmp): row i, NULL past the end. */
const char *sandbox_network_env(size_t i);

/* "sandboxd-<id>.service" and the mount unit for the workspace path (unit-name.h). */
char *execution_unit_name(const char *execution_id);
static inline char *mount_unit_name_from_path(const char *path) {
        return unit_name_from_path(path, ".mount");
}
