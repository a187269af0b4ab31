/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Configuration: /etc/sandboxd/sandboxd.conf, then /etc/sandboxd/sandboxd.conf.d/\*.conf in lexical
 * order, ini style like systemd's own files. Later assignments override earlier ones. Unknown
 * sections and keys, bad values and limits that contradict each other are errors that name the file
 * and line. The result is immutable once loaded; a reload builds a new one and swaps it in. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "util.h"

typedef struct Limits {
        uint64_t timeout_ms;
        uint64_t memory_mb;
        double cpu_cores;
        uint64_t disk_mb;
        uint64_t tasks;
} Limits;

/* A size, or a share of something's size (a file system's): exactly one of them is not 0, or both
 * are 0. */
typedef struct SizeOrPercent {
        uint64_t bytes;
        unsigned percent;            /* 0..100 */
} SizeOrPercent;

typedef struct Config {
        /* [Daemon] */
        char *api_socket;            /* APISocket= */
        char *socket_group;          /* SocketGroup= (may be absent on the host: then root only) */
        char *state_dir;             /* StateDirectory= /var/lib/sandboxd */
        char *runtime_dir;           /* RuntimeDirectory= /run/sandboxd */
        char *database;              /* Database= NULL: StateDirectory/sandboxd.db */
        char *store;                 /* Store= NULL: SQLite (Database=); else a libpq connection string */
        char *environments_dir;      /* EnvironmentsDirectory= /var/lib/sandboxd/environments
                                      * (model/environment.h) */
        uint64_t retention_sec;      /* RetentionSec= finished records older than this are purged; 0: never */
        uint64_t max_concurrent;     /* MaxConcurrent= slots */
        uint64_t max_queued;         /* MaxQueued= */
        uint64_t max_request_bytes;  /* MaxRequestBytes= */
        uint64_t max_code_bytes;     /* MaxCodeBytes= */
        uint64_t max_stdin_bytes;    /* MaxStdinBytes=: a request's "stdin"; 0: none accepted */
        uint64_t keep_finished;      /* KeepFinished= results kept in memory */
        uint64_t sweep_interval_sec; /* SweepIntervalSec= */
        uint64_t session_idle_sec;   /* SessionIdleSec= a session unused this long is removed */
        uint64_t max_sessions;       /* MaxSessions= sessions at once (each holds a tmpfs) */
        uint64_t max_sessions_per_caller; /* MaxSessionsPerCaller= of them one owner may hold */
        /* Budgets per caller (owner) and for everyone (quota.h gives the values in force). */
        uint64_t max_sessions_disk_mb;    /* MaxSessionsDiskMB= sum of all sessions' disk_mb; 0: from RAM */
        uint64_t max_sessions_disk_mb_per_caller; /* MaxSessionsDiskMBPerCaller= one owner's sum; 0: from RAM */
        uint64_t max_queued_per_caller;   /* MaxQueuedPerCaller= CONFIG_UNSET: MaxQueued= */
        uint64_t max_running_per_caller;  /* MaxRunningPerCaller= slots one owner holds; CONFIG_UNSET: all */
        uint64_t admin_queue_reserve;     /* AdminQueueReserve= queue places only admins may take */
        uint64_t max_stored_bytes_per_caller; /* MaxStoredBytesPerCaller= one owner's records in the store */
        uint64_t max_connections;    /* MaxConnections= */
        uint64_t request_header_timeout_sec; /* RequestHeaderTimeoutSec= headers due after connect/last answer */
        uint64_t request_body_timeout_sec;   /* RequestBodyTimeoutSec= body due after the headers */
        uint64_t max_connections_per_address; /* MaxConnectionsPerAddress= TCP, one address (IPv6: /64) */
        uint64_t max_connections_per_user;    /* MaxConnectionsPerUser= unix socket, one uid but root */
        int log_level;               /* LogLevel= */
        char **listen;               /* Listen= TCP addresses, NULL-terminated; NULL: no TCP listener */
        char *listen_where;          /* "FILE:LINE" of the Listen= assignment in force, for config_validate() */
        bool listen_allow_non_loopback; /* ListenAllowNonLoopback= Listen= may name other than 127.0.0.0/8, ::1 */
        char *api_keys_file;         /* APIKeysFile= keys of the TCP listeners */
        char *piston_listen;         /* PistonListen= the Piston API's own TCP listener (loopback only, no
                                      * key: only the Piston routes, as piston_owner); NULL: none */
        char *piston_owner;          /* PistonOwner= whose executions those are: "key:<this>" */

        /* [Bus] the D-Bus API's own budgets (the execution budgets above are the same for both APIs) */
        uint64_t bus_max_calls_per_connection; /* MaxPendingCallsPerConnection= one sender, counted from arrival */
        uint64_t bus_max_interactive;          /* MaxInteractiveAuthorizations= interactive polkit checks, all */
        uint64_t bus_max_interactive_per_user; /* MaxInteractiveAuthorizationsPerUser= of them one uid's */
        uint64_t bus_interactive_timeout_sec;  /* InteractiveAuthorizationTimeoutSec= then refused */

        /* [Callbacks] */
        char *callback_key_file;     /* CallbackKeyFile= NULL: StateDirectory/callback.key, generated */
        uint64_t callback_max_attempts;   /* CallbackMaxAttempts= attempts in all, then failed */
        uint64_t callback_max_age_sec;    /* CallbackMaxAgeSec= no attempt after this long since enqueued */
        uint64_t callback_timeout_sec;    /* CallbackTimeoutSec= one attempt, connect to last byte */
        uint64_t callback_backoff_base_ms;   /* CallbackBackoffBaseMS= the first retry's delay step */
        uint64_t callback_backoff_max_sec;   /* CallbackBackoffMaxSec= the largest delay step */
        uint64_t callback_max_concurrent;    /* CallbackMaxConcurrent= attempts in flight at once */
        bool callback_allow_internal;        /* CallbackAllowInternalAddresses= loopback, private, link-local */
        uint64_t callback_max_pending_per_caller; /* CallbackMaxPendingPerCaller= one owner's undelivered */

        /* [Limits] */
        Limits defaults;             /* DefaultTimeoutMS= ... */
        Limits ceilings;             /* MaxTimeoutMS= ... */

        /* [Sandbox] */
        char *helper;                /* Helper= path of sandbox-exec on the host */
        uint64_t output_head_bytes;  /* OutputHeadBytes= */
        uint64_t output_tail_bytes;  /* OutputTailBytes= */
        uint64_t nofile;             /* LimitNOFILE= inside the sandbox */
        uint64_t kill_grace_ms;      /* KillGraceMS= sandboxd's own deadline beyond timeout_ms */
        uint64_t workspace_pool;     /* WorkspacePool= workspaces of the default size mounted ahead */
        bool protect_kernel;         /* ProtectKernel= systemd's kernel protections on every unit (bench/ turns
                                      * them off to measure their cost) */

        /* [Pool] the warm pool (warm-pool.c): units started ahead of demand, one program each */
        uint64_t pool_size;          /* Size= ready units per pooled language; 0: no pool */
        uint64_t pool_strong_size;   /* StrongSize= ready units of the strong tier per pooled language,
                                      * kept while the strong tier can run and Strong= is not never */
        char **pool_languages;       /* Languages= the languages pooled (names as in the request) */
        char **pool_python_preload;  /* PythonPreload= modules a warm python has imported */
        char **pool_environments;    /* Environments= the environments pooled (with their language) */
        uint64_t pool_max_age_sec;   /* MaxAgeSec= a ready unit older than this is replaced */
        uint64_t pool_min_memory_mb; /* MinMemoryMB= a request below this memory_mb starts cold where
                                      * the runtime is preloaded (its imports count against memory_mb) */

        /* [Isolation] the tiers (model/risk-scan.h, docs/isolation.md) */
        int isolation_policy;        /* Strong= IsolationPolicy, or -1: not set (auto where the strong
                                      * tier works, else never: decided at start) */
        unsigned isolation_classes;  /* StrongRules= RiskClass bits that send a program there */
        uint64_t isolation_long_run_sec;  /* StrongTimeoutSec= a longer timeout_ms does too; 0: never */
        char *runsc;                 /* Runsc= gVisor's runsc */
        char *runsc_platform;        /* RunscPlatform= its --platform= */

        /* [Inputs] the request's "files" */
        uint64_t max_input_files;            /* MaxInputFiles= per execution; 0: "files" refused */
        uint64_t max_input_file_bytes;       /* MaxInputFileBytes= one downloaded file */
        uint64_t max_input_total_bytes;      /* MaxInputTotalBytes= all files of one execution */
        uint64_t max_inline_input_bytes;     /* MaxInlineInputBytes= all inline files (decoded) */
        uint64_t input_connect_timeout_sec;  /* InputConnectTimeoutSec= */
        uint64_t input_timeout_sec;          /* InputTimeoutSec= one whole download */
        bool input_allow_internal;           /* InputAllowInternalAddresses= loopback, private, link-local */

        /* [Artifacts] */
        char *artifacts_dir;              /* ArtifactsDirectory= NULL: StateDirectory/artifacts */
        char *artifact_url_key_file;      /* ArtifactURLKeyFile= NULL: StateDirectory/artifact-url.key,
                                           * generated at the first start */
        uint64_t artifact_url_lifetime_sec;  /* ArtifactURLLifetimeSec= */
        uint64_t artifact_max_files;      /* ArtifactMaxFiles= per execution */
        uint64_t artifact_max_file_bytes; /* ArtifactMaxFileBytes= */
        uint64_t artifact_max_total_bytes;  /* ArtifactMaxTotalBytes= per execution */
        /* The disk budgets, in charged bytes (a file's allocation, not its size): */
        uint64_t artifact_store_max_bytes;       /* ArtifactStoreMaxBytes= the whole store */
        uint64_t artifact_max_bytes_per_caller;  /* ArtifactMaxBytesPerCaller= one owner's executions */
        SizeOrPercent artifact_min_free;         /* ArtifactMinFreeBytes= left available on the store's
                                                  * file system */

        /* [Network] the egress proxy of a run with network (issue 16). The lists are checked and
         * parsed, and HostsFile= read, by net/net-policy.c (NetPolicy), at every load and reload. */
        char **net_allow_domains;         /* AllowDomains= allowlist entries; NULL: network refused */
        char **net_permit_addresses;      /* PermitAddresses= CIDR blocks exempt from the internal refusal */
        char *net_hosts_file;             /* HostsFile= hosts(5) file the proxy resolves from first */
        uint64_t net_max_transfer_mb;     /* MaxTransferMB= bytes up+down per execution; 0: no cap */
        uint64_t net_max_connections;     /* MaxConnections= open at once per execution */
        uint64_t net_connect_timeout_sec; /* ConnectTimeoutSec= */
        uint64_t net_idle_timeout_sec;    /* IdleTimeoutSec= */
        uint64_t net_max_logged_requests; /* MaxLoggedRequests= entries kept in the record */

        /* [Cluster] the node registry (issue 22; manager.c). The name is read at start only: a
         * reload that changes it is logged and takes effect at the next start. */
        char *node_name;                  /* NodeName= NULL: the machine id (sd_id128_get_machine()) */
        uint64_t node_heartbeat_sec;      /* NodeHeartbeatSec= the lease is renewed this often */
        uint64_t node_lease_sec;          /* NodeLeaseSec= a node not heard from this long is gone; more
                                           * than twice NodeHeartbeatSec= (config_validate()) */
} Config;

/* A per-caller key left out: it follows its global counterpart (MaxQueued=, MaxConcurrent=). */
#define CONFIG_UNSET UINT64_MAX

Config *config_new(void);          /* defaults */
Config *config_free(Config *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Config *, config_free);

/* Parse one file's text into c. On error returns -EINVAL and sets *ret_error (malloc'ed)
 * to "FILE:LINE: message". */
int config_parse_text(Config *c, const char *text, const char *filename, char **ret_error);

/* Load dir/sandboxd.conf (optional) and dir/sandboxd.conf.d/\*.conf, then validate. */
int config_load(Config *c, const char *dir, char **ret_error);

/* Cross-field checks (defaults ≤ ceilings, non-zero slots, ...). */
int config_validate(const Config *c, char **ret_error);

/* Listen= takes at most this many addresses. */
#define LISTEN_MAX 8

/* "127.0.0.1:8080" or "[::1]:8080": a literal address (no name lookups at start) and a port in
 * 1..65535. */
int listen_address_parse(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len);

/* Is this a loopback address: 127.0.0.0/8 or ::1? (0.0.0.0 and :: are every address, not loopback;
 * ::ffff:127.0.0.1 is not ::1 either.) Without ListenAllowNonLoopback=, Listen= takes only these
 * (config_validate()), and so does a socket passed by systemd (http.c): TCP is plain HTTP, and its
 * bearer keys must not cross a network in clear text. */
bool listen_address_is_loopback(const struct sockaddr *sa);

/* "2M" → 2097152. Suffixes K, M, G, T (1024-based), optional "B"/"iB". */
int parse_size(const char *s, uint64_t *ret);
