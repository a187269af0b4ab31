/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <syslog.h>

#include "conf.h"
#include "environment.h"
#include "key-name.h"
#include "language.h"
#include "node-name.h"
#include "risk-scan.h"
#include "strv.h"
#include "time-util.h"

#define CONF_FILE_MAX (1024 * 1024)

Config *config_new(void) {
        Config *c = calloc(1, sizeof(Config));

        if (!c)
                return NULL;
        c->api_socket = strdup("/run/sandboxd/api.sock");
        c->socket_group = strdup("sandboxd");
        c->state_dir = strdup("/var/lib/sandboxd");
        c->environments_dir = strdup("/var/lib/sandboxd/environments");
        c->runtime_dir = strdup("/run/sandboxd");
        c->helper = strdup(SANDBOX_EXEC_PATH);
        c->api_keys_file = strdup(SYSCONFDIR "/sandboxd/api-keys");
        c->piston_owner = strdup("piston");
        c->runsc = strdup("/usr/bin/runsc");
        c->runsc_platform = strdup("ptrace");
        if (!c->api_socket || !c->socket_group || !c->state_dir || !c->environments_dir || !c->runtime_dir || !c->helper ||
            !c->api_keys_file || !c->piston_owner || !c->runsc || !c->runsc_platform)
                return config_free(c);

        c->max_concurrent = 8;
        c->max_queued = 256;
        c->max_request_bytes = 2 * 1024 * 1024;
        c->max_code_bytes = 1024 * 1024;
        c->max_stdin_bytes = 1024 * 1024;
        c->keep_finished = 1024;
        c->retention_sec = 7 * 24 * 3600;
        c->sweep_interval_sec = 300;
        c->session_idle_sec = 3600;
        c->max_sessions = 64;
        c->max_sessions_per_caller = 16;
        c->max_queued_per_caller = CONFIG_UNSET;
        c->max_running_per_caller = CONFIG_UNSET;
        c->admin_queue_reserve = 16;
        c->max_stored_bytes_per_caller = 1ULL << 30;
        c->max_connections = 256;
        c->request_header_timeout_sec = 10;
        c->request_body_timeout_sec = 60;
        c->max_connections_per_address = 16;
        c->max_connections_per_user = 32;
        c->log_level = LOG_INFO;
        c->bus_max_calls_per_connection = 64;
        c->bus_max_interactive = 8;
        c->bus_max_interactive_per_user = 2;
        c->bus_interactive_timeout_sec = 60;

        c->defaults = (Limits) { .timeout_ms = 30000, .memory_mb = 512, .cpu_cores = 1.0, .disk_mb = 1024,
                                 .tasks = 128 };
        c->ceilings = (Limits) { .timeout_ms = 600000, .memory_mb = 8192, .cpu_cores = 2.0, .disk_mb = 8192,
                                 .tasks = 1024 };

        c->output_head_bytes = 64 * 1024;
        c->output_tail_bytes = 64 * 1024;
        c->nofile = 1024;
        c->kill_grace_ms = 1000;
        c->workspace_pool = 16;
        c->protect_kernel = true;

        c->pool_size = 2;
        c->pool_strong_size = 1;
        c->pool_max_age_sec = 600;
        c->pool_min_memory_mb = 128;

        c->isolation_policy = -1;
        c->isolation_classes = RISK_CLASSES_ALL;
        c->isolation_long_run_sec = 30;
        {
                size_t nl = 0, np = 0, ne = 0;

                if (strv_extend(&c->pool_languages, &nl, "python") < 0 ||
                    strv_extend(&c->pool_languages, &nl, "node") < 0 ||
                    strv_extend(&c->pool_languages, &nl, "bash") < 0 ||
                    strv_extend(&c->pool_python_preload, &np, "numpy") < 0 ||
                    strv_extend(&c->pool_environments, &ne, "python-data") < 0)
                        return config_free(c);
        }

        c->artifact_url_lifetime_sec = 900;
        c->artifact_max_files = 1000;
        c->artifact_max_file_bytes = 100ULL << 20;
        c->artifact_max_total_bytes = 1ULL << 30;
        c->artifact_store_max_bytes = 16ULL << 30;
        c->artifact_max_bytes_per_caller = 4ULL << 30;
        c->artifact_min_free = (SizeOrPercent) { .percent = 5 };
        c->callback_max_attempts = 8;
        c->callback_max_age_sec = 86400;
        c->callback_timeout_sec = 10;
        c->callback_backoff_base_ms = 1000;
        c->callback_backoff_max_sec = 600;
        c->callback_max_concurrent = 16;
        c->callback_max_pending_per_caller = 256;
        c->max_input_files = 16;
        c->max_input_file_bytes = 64ULL << 20;
        c->max_input_total_bytes = 256ULL << 20;
        c->max_inline_input_bytes = 1ULL << 20;
        c->input_connect_timeout_sec = 10;
        c->input_timeout_sec = 120;
        c->net_max_transfer_mb = 1024;
        c->net_max_connections = 32;
        c->net_connect_timeout_sec = 10;
        c->net_idle_timeout_sec = 60;
        c->net_max_logged_requests = 256;
        c->node_heartbeat_sec = 5;
        c->node_lease_sec = 30;
        return c;
}

Config *config_free(Config *c) {
        if (!c)
                return NULL;
        c->listen = strv_free(c->listen);
        c->pool_languages = strv_free(c->pool_languages);
        c->pool_python_preload = strv_free(c->pool_python_preload);
        c->pool_environments = strv_free(c->pool_environments);
        c->net_allow_domains = strv_free(c->net_allow_domains);
        c->net_permit_addresses = strv_free(c->net_permit_addresses);
        free(c->net_hosts_file);
        free(c->listen_where);
        free(c->api_keys_file);
        free(c->piston_listen);
        free(c->piston_owner);
        free(c->runsc);
        free(c->runsc_platform);
        free(c->api_socket);
        free(c->socket_group);
        free(c->state_dir);
        free(c->runtime_dir);
        free(c->database);
        free(c->store);
        free(c->environments_dir);
        free(c->callback_key_file);
        free(c->helper);
        free(c->artifacts_dir);
        free(c->artifact_url_key_file);
        free(c->node_name);
        free(c);
        return NULL;
}


int parse_size(const char *s, uint64_t *ret) {
        static const struct {
                const char *suffix;
                uint64_t factor;
        } table[] = {
                { "",  1ULL },
                { "B", 1ULL },
                { "K", 1ULL << 10 }, { "KiB", 1ULL << 10 }, { "KB", 1ULL << 10 },
                { "M", 1ULL << 20 }, { "MiB", 1ULL << 20 }, { "MB", 1ULL << 20 },
                { "G", 1ULL << 30 }, { "GiB", 1ULL << 30 }, { "GB", 1ULL << 30 },
                { "T", 1ULL << 40 }, { "TiB", 1ULL << 40 }, { "TB", 1ULL << 40 },
        };
        char *end;
        unsigned long long v;

        if (isempty(s) || !isdigit((unsigned char) s[0]))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (streq(end, table[i].suffix)) {
                        if (v > UINT64_MAX / table[i].factor)
                                return -ERANGE;
                        *ret = v * table[i].factor;
                        return 0;
                }
        return -EINVAL;
}

typedef enum ValueType {
        V_STRING,
        V_PISTON_LISTEN,
        V_PATH,          /* absolute path */
        V_U64,
        V_SIZE,
        V_SIZE_PERCENT,  /* a size, or N% (0..100) */
        V_CORES,
        V_LOGLEVEL,
        V_BOOL,          /* yes/no, true/false, on/off, 1/0 */
        V_LISTEN,        /* space-separated addresses; empty: none */
        V_WORDS,         /* space-separated names of [A-Za-z0-9_.-]; empty: none */
        V_ITEMS,         /* space-separated printable ASCII words (max = their count); empty: none */
        V_ISOLATION,     /* auto, always, never */
        V_RISK_CLASSES,  /* space-separated RiskClass names; empty: none */
        V_RUNSC_PLATFORM, /* ptrace, systrap, kvm */
        V_STORE,         /* sqlite, or a libpq connection string */
        V_NODE_NAME,     /* node-name.h; empty: the default (NULL) */
} ValueType;

typedef struct ConfKey {
        const char *section;
        const char *key;
        ValueType type;
        size_t offset;
        uint64_t min, max;       /* for numbers; 0/0 = unbounded */
} ConfKey;

#define K(sec, k, t, field, mn, mx) { sec, k, t, offsetof(Config, field), mn, mx }

/* Every key there is. Anything else is an error. */
static const ConfKey conf_keys[] = {
        K("Daemon", "APISocket",        V_PATH,     api_socket,          0, 0),
        K("Daemon", "SocketGroup",      V_STRING,   socket_group,        0, 0),
        K("Daemon", "StateDirectory",   V_PATH,     state_dir,           0, 0),
        K("Daemon", "RuntimeDirectory", V_PATH,     runtime_dir,         0, 0),
        K("Daemon", "Database",         V_PATH,     database,            0, 0),
        K("Daemon", "Store",            V_STORE,    store,               0, 0),
        K("Daemon", "EnvironmentsDirectory", V_PATH, environments_dir,  0, 0),
        K("Daemon", "RetentionSec",     V_U64,      retention_sec,       0, 100ULL * 365 * 24 * 3600),
        K("Daemon", "MaxConcurrent",    V_U64,      max_concurrent,      1, 4096),
        K("Daemon", "MaxQueued",        V_U64,      max_queued,          0, 1000000),
        K("Daemon", "MaxRequestBytes",  V_SIZE,     max_request_bytes,   1024, 1ULL << 30),
        K("Daemon", "MaxCodeBytes",     V_SIZE,     max_code_bytes,      1, 64ULL << 20),
        K("Daemon", "MaxStdinBytes",    V_SIZE,     max_stdin_bytes,     0, 64ULL << 20),
        K("Daemon", "KeepFinished",     V_U64,      keep_finished,       0, 1000000),
        K("Daemon", "SweepIntervalSec", V_U64,      sweep_interval_sec,  1, 86400),
        K("Daemon", "SessionIdleSec",   V_U64,      session_idle_sec,    1, 30ULL * 24 * 3600),
        K("Daemon", "MaxSessions",      V_U64,      max_sessions,        0, 100000),
        K("Daemon", "MaxSessionsPerCaller", V_U64,  max_sessions_per_caller, 0, 100000),
        K("Daemon", "MaxSessionsDiskMB", V_U64,     max_sessions_disk_mb, 1, 1ULL << 40),
        K("Daemon", "MaxSessionsDiskMBPerCaller", V_U64, max_sessions_disk_mb_per_caller, 1, 1ULL << 40),
        K("Daemon", "MaxQueuedPerCaller", V_U64,    max_queued_per_caller, 0, 1000000),
        K("Daemon", "MaxRunningPerCaller", V_U64,   max_running_per_caller, 1, 4096),
        K("Daemon", "AdminQueueReserve", V_U64,     admin_queue_reserve, 0, 1000000),
        K("Daemon", "MaxStoredBytesPerCaller", V_SIZE, max_stored_bytes_per_caller, 64ULL << 10, 1ULL << 50),
        K("Daemon", "MaxConnections",   V_U64,      max_connections,     1, 65536),
        K("Daemon", "RequestHeaderTimeoutSec", V_U64, request_header_timeout_sec, 1, 3600),
        K("Daemon", "RequestBodyTimeoutSec", V_U64, request_body_timeout_sec, 1, 86400),
        K("Daemon", "MaxConnectionsPerAddress", V_U64, max_connections_per_address, 1, 65536),
        K("Daemon", "MaxConnectionsPerUser", V_U64, max_connections_per_user, 1, 65536),
        K("Daemon", "LogLevel",         V_LOGLEVEL, log_level,           0, 0),
        K("Daemon", "Listen",           V_LISTEN,   listen,              0, 0),
        K("Daemon", "ListenAllowNonLoopback", V_BOOL, listen_allow_non_loopback, 0, 0),
        K("Daemon", "APIKeysFile",      V_PATH,     api_keys_file,       0, 0),
        K("Daemon", "PistonListen",     V_PISTON_LISTEN, piston_listen,  0, 0),
        K("Daemon", "PistonOwner",      V_STRING,   piston_owner,        0, 0),

        /* The interactive checks are calls pending on sandboxd's own bus connection, which the bus
         * daemon allows 128 (max_replies_per_connection), shared with the 32 other questions
         * (bus-api.c) and the calls to systemd: hence at most 32. */
        K("Bus", "MaxPendingCallsPerConnection", V_U64, bus_max_calls_per_connection, 1, 4096),
        K("Bus", "MaxInteractiveAuthorizations", V_U64, bus_max_interactive, 1, 32),
        K("Bus", "MaxInteractiveAuthorizationsPerUser", V_U64, bus_max_interactive_per_user, 1, 32),
        K("Bus", "InteractiveAuthorizationTimeoutSec", V_U64, bus_interactive_timeout_sec, 1, 3600),

        K("Callbacks", "CallbackKeyFile",       V_PATH, callback_key_file,       0, 0),
        K("Callbacks", "CallbackMaxAttempts",   V_U64,  callback_max_attempts,   1, 100),
        K("Callbacks", "CallbackMaxAgeSec",     V_U64,  callback_max_age_sec,    1, 30ULL * 86400),
        K("Callbacks", "CallbackTimeoutSec",    V_U64,  callback_timeout_sec,    1, 300),
        K("Callbacks", "CallbackBackoffBaseMS", V_U64,  callback_backoff_base_ms, 10, 3600000),
        K("Callbacks", "CallbackBackoffMaxSec", V_U64,  callback_backoff_max_sec, 1, 86400),
        K("Callbacks", "CallbackMaxConcurrent", V_U64,  callback_max_concurrent, 1, 1024),
        K("Callbacks", "CallbackAllowInternalAddresses", V_BOOL, callback_allow_internal, 0, 0),
        K("Callbacks", "CallbackMaxPendingPerCaller", V_U64, callback_max_pending_per_caller, 0, 1000000),

        K("Limits", "DefaultTimeoutMS", V_U64,      defaults.timeout_ms, 100, 86400000),
        K("Limits", "DefaultMemoryMB",  V_U64,      defaults.memory_mb,  16, 1 << 20),
        K("Limits", "DefaultCPUCores",  V_CORES,    defaults.cpu_cores,  0, 0),
        K("Limits", "DefaultDiskMB",    V_U64,      defaults.disk_mb,    1, 1 << 20),
        K("Limits", "DefaultTasks",     V_U64,      defaults.tasks,      4, 1 << 20),
        K("Limits", "MaxTimeoutMS",     V_U64,      ceilings.timeout_ms, 100, 86400000),
        K("Limits", "MaxMemoryMB",      V_U64,      ceilings.memory_mb,  16, 1 << 20),
        K("Limits", "MaxCPUCores",      V_CORES,    ceilings.cpu_cores,  0, 0),
        K("Limits", "MaxDiskMB",        V_U64,      ceilings.disk_mb,    1, 1 << 20),
        K("Limits", "MaxTasks",         V_U64,      ceilings.tasks,      4, 1 << 20),

        K("Sandbox", "Helper",          V_PATH,     helper,              0, 0),
        K("Sandbox", "OutputHeadBytes", V_SIZE,     output_head_bytes,   0, 16ULL << 20),
        K("Sandbox", "OutputTailBytes", V_SIZE,     output_tail_bytes,   0, 16ULL << 20),
        K("Sandbox", "LimitNOFILE",     V_U64,      nofile,              16, 1 << 20),
        K("Sandbox", "KillGraceMS",     V_U64,      kill_grace_ms,       0, 60000),
        K("Sandbox", "WorkspacePool",   V_U64,      workspace_pool,      0, 1024),
        K("Sandbox", "ProtectKernel",   V_BOOL,     protect_kernel,      0, 0),

        K("Pool", "Size",               V_U64,      pool_size,           0, 64),
        K("Pool", "StrongSize",         V_U64,      pool_strong_size,    0, 64),
        K("Pool", "Languages",          V_WORDS,    pool_languages,      0, 0),
        K("Pool", "PythonPreload",      V_WORDS,    pool_python_preload, 0, 0),
        K("Pool", "Environments",       V_WORDS,    pool_environments,   0, 0),
        K("Pool", "MaxAgeSec",          V_U64,      pool_max_age_sec,    10, 86400),
        K("Pool", "MinMemoryMB",        V_U64,      pool_min_memory_mb,  0, 1 << 20),
        K("Isolation", "Strong",        V_ISOLATION, isolation_policy,   0, 0),
        K("Isolation", "StrongRules",   V_RISK_CLASSES, isolation_classes, 0, 0),
        K("Isolation", "StrongTimeoutSec", V_U64,   isolation_long_run_sec, 0, 86400),
        K("Isolation", "Runsc",         V_PATH,     runsc,               0, 0),
        K("Isolation", "RunscPlatform", V_RUNSC_PLATFORM, runsc_platform, 0, 0),

        K("Inputs", "MaxInputFiles",          V_U64,  max_input_files,           0, 256),
        K("Inputs", "MaxInputFileBytes",      V_SIZE, max_input_file_bytes,      1, 64ULL << 30),
        K("Inputs", "MaxInputTotalBytes",     V_SIZE, max_input_total_bytes,     1, 64ULL << 30),
        K("Inputs", "MaxInlineInputBytes",    V_SIZE, max_inline_input_bytes,    0, 256ULL << 20),
        K("Inputs", "InputConnectTimeoutSec", V_U64,  input_connect_timeout_sec, 1, 300),
        K("Inputs", "InputTimeoutSec",        V_U64,  input_timeout_sec,         1, 3600),
        K("Inputs", "InputAllowInternalAddresses", V_BOOL, input_allow_internal,  0, 0),
        K("Artifacts", "ArtifactsDirectory",     V_PATH, artifacts_dir,             0, 0),
        K("Artifacts", "ArtifactURLKeyFile",     V_PATH, artifact_url_key_file,     0, 0),
        K("Artifacts", "ArtifactURLLifetimeSec", V_U64,  artifact_url_lifetime_sec, 1, 7ULL * 24 * 3600),
        K("Artifacts", "ArtifactMaxFiles",       V_U64,  artifact_max_files,        0, 1000000),
        K("Artifacts", "ArtifactMaxFileBytes",   V_SIZE, artifact_max_file_bytes,   0, 1ULL << 40),
        K("Artifacts", "ArtifactMaxTotalBytes",  V_SIZE, artifact_max_total_bytes,  0, 1ULL << 40),
        K("Artifacts", "ArtifactStoreMaxBytes",  V_SIZE, artifact_store_max_bytes,  0, 1ULL << 50),
        K("Artifacts", "ArtifactMaxBytesPerCaller", V_SIZE, artifact_max_bytes_per_caller, 0, 1ULL << 50),
        K("Artifacts", "ArtifactMinFreeBytes",   V_SIZE_PERCENT, artifact_min_free, 0, 1ULL << 50),

        /* The entries' syntax (allowlist.h, cidr.h) and the hosts file are net-policy.c's; here only
         * their count (the max of a V_ITEMS key). */
        K("Network", "AllowDomains",      V_ITEMS, net_allow_domains,       0, 64),
        K("Network", "PermitAddresses",   V_ITEMS, net_permit_addresses,    0, 64),
        K("Network", "HostsFile",         V_PATH,  net_hosts_file,          0, 0),
        K("Network", "MaxTransferMB",     V_U64,   net_max_transfer_mb,     0, 1ULL << 30),
        K("Network", "MaxConnections",    V_U64,   net_max_connections,     1, 1024),
        K("Network", "ConnectTimeoutSec", V_U64,   net_connect_timeout_sec, 1, 300),
        K("Network", "IdleTimeoutSec",    V_U64,   net_idle_timeout_sec,    1, 3600),
        K("Network", "MaxLoggedRequests", V_U64,   net_max_logged_requests, 0, 10000),

        /* A lease shorter than three heartbeats would expire on one late heartbeat: config_validate()
         * wants more than two. */
        K("Cluster", "NodeName",          V_NODE_NAME, node_name,           0, 0),
        K("Cluster", "NodeHeartbeatSec",  V_U64,   node_heartbeat_sec,      1, 60),
        K("Cluster", "NodeLeaseSec",      V_U64,   node_lease_sec,          3, 3600),
};

static int parse_loglevel(const char *v) {
        static const char *const names[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(v, names[i]))
                        return (int) i;
        return -EINVAL;
}

int listen_address_parse(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len) {
        char host[INET6_ADDRSTRLEN + 1];
        const char *port;
        uint64_t p;
        size_t n;
        bool v6;

        if (isempty(s))
                return -EINVAL;
        v6 = s[0] == '[';
        if (v6) {
                const char *e = strchr(s, ']');

                if (!e || e[1] != ':')
                        return -EINVAL;
                n = (size_t) (e - s - 1);
                port = e + 2;
                s++;
        } else {
                const char *e = strrchr(s, ':');

                if (!e)
                        return -EINVAL;
                n = (size_t) (e - s);
                port = e + 1;
        }
        if (n == 0 || n >= sizeof(host))
                return -EINVAL;
        memcpy(host, s, n);
        host[n] = 0;
        /* safe_atou64 would take "+80" or " 80": only digits. */
        if (!*port || strspn(port, "0123456789") != strlen(port) || strlen(port) > 5 ||
            safe_atou64(port, &p) < 0 || p < 1 || p > 65535)
                return -EINVAL;

        *ret = (struct sockaddr_storage) {};
        if (v6) {
                struct sockaddr_in6 *sa = (struct sockaddr_in6 *) ret;

                if (inet_pton(AF_INET6, host, &sa->sin6_addr) != 1)
                        return -EINVAL;
                sa->sin6_family = AF_INET6;
                sa->sin6_port = htons((uint16_t) p);
                *ret_len = sizeof(*sa);
        } else {
                struct sockaddr_in *sa = (struct sockaddr_in *) ret;

                if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
                        return -EINVAL;
                sa->sin_family = AF_INET;
                sa->sin_port = htons((uint16_t) p);
                *ret_len = sizeof(*sa);
        }
        return 0;
}

bool listen_address_is_loopback(const struct sockaddr *sa) {
        if (sa->sa_family == AF_INET)
                return (ntohl(((const struct sockaddr_in *) sa)->sin_addr.s_addr) >> 24) == 127;
        if (sa->sa_family == AF_INET6)
                return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *) sa)->sin6_addr);
        return false;
}

/* Every assignment replaces the whole list, as every other key overrides: "Listen=" in a later
 * drop-in turns TCP off again. */
static int assign_listen(char ***p, const char *value, const char *where, char **ret_error) {
        _cleanup_free_ char *copy = strdup(value);
        _cleanup_strv_free_ char **l = NULL;
        char *save = NULL;
        size_t n = 0;

        if (!copy)
                return -ENOMEM;
        for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
                struct sockaddr_storage ss;
                socklen_t sl;

                if (n >= LISTEN_MAX)
                        return error_set(ret_error, "%s: Listen= takes at most %d addresses", where, LISTEN_MAX);
                if (listen_address_parse(w, &ss, &sl) < 0)
                        return error_set(ret_error, "%s: Listen= takes ADDRESS:PORT or [IPv6]:PORT with a literal "
                                         "address, got '%.80s'", where, w);
                if (strv_contains(l, w))
                        return error_set(ret_error, "%s: Listen= names '%.80s' twice", where, w);
                if (strv_extend(&l, &n, w) < 0)
                        return -ENOMEM;
        }
        strv_free(*p);
        *p = TAKE_PTR(l);
        return 0;
}

#define WORDS_MAX 32

static int assign_words(char ***p, const char *key, const char *value, const char *where, char **ret_error) {
        _cleanup_free_ char *copy = strdup(value);
        _cleanup_strv_free_ char **l = NULL;
        char *save = NULL;
        size_t n = 0;

        if (!copy)
                return -ENOMEM;
        for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
                if (n >= WORDS_MAX)
                        return error_set(ret_error, "%s: %s= takes at most %d names", where, key, WORDS_MAX);
                if (strlen(w) > 64 || strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") !=
                                              strlen(w))
                        return error_set(ret_error, "%s: %s= takes names of letters, digits, '_', '.' and '-', "
                                         "got '%.80s'", where, key, w);
                if (strv_contains(l, w))
                        continue;
                if (strv_extend(&l, &n, w) < 0)
                        return -ENOMEM;
        }
        strv_free(*p);
        *p = TAKE_PTR(l);
        return 0;
}

/* Words of printable ASCII, at most max of them, each at most 256 bytes; duplicates kept once. */
static int assign_items(char ***p, const ConfKey *k, const char *value, const char *where, char **ret_error) {
        _cleanup_free_ char *copy = strdup(value);
        _cleanup_strv_free_ char **l = NULL;
        char *save = NULL;
        size_t n = 0;

        if (!copy)
                return -ENOMEM;
        for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
                if (n >= k->max)
                        return error_set(ret_error, "%s: %s= takes at most %" PRIu64 " entries", where, k->key, k->max);
                if (strlen(w) > 256)
                        return error_set(ret_error, "%s: %s= takes entries of at most 256 bytes, got '%.80s...'",
                                         where, k->key, w);
                for (const char *q = w; *q; q++)
                        if ((unsigned char) *q < 0x21 || (unsigned char) *q > 0x7e)
                                return error_set(ret_error, "%s: %s= takes printable ASCII, got '%.80s'", where,
                                                 k->key, w);
                if (strv_contains(l, w))
                        continue;
                if (strv_extend(&l, &n, w) < 0)
                        return -ENOMEM;
        }
        strv_free(*p);
        *p = TAKE_PTR(l);
        return 0;
}

static int assign(Config *c, const ConfKey *k, const char *value, const char *where, char **ret_error) {
        void *p = (uint8_t *) c + k->offset;
        uint64_t u;
        int r;

        switch (k->type) {
        case V_PATH:
                if (value[0] != '/')
                        return error_set(ret_error, "%s: %s= must be an absolute path, got '%s'", where, k->key, value);
                _fallthrough_;
        case V_STRING:
                if (isempty(value))
                        return error_set(ret_error, "%s: %s= must not be empty", where, k->key);
                if (free_and_strdup((char **) p, value) < 0)
                        return -ENOMEM;
                return 0;
        case V_STORE:
                /* "sqlite": the embedded store, the default. Anything else is handed to libpq when
                 * the store is opened; here only its form is checked, and the value is never quoted
                 * back: a connection string may hold what should not be logged. */
                if (streq(value, "sqlite")) {
                        *(char **) p = mfree(*(char **) p);
                        return 0;
                }
                if (!startswith(value, "postgresql://") && !startswith(value, "postgres://") && !strchr(value, '='))
                        return error_set(ret_error, "%s: %s= takes sqlite or a PostgreSQL connection string "
                                         "(postgresql://..., or key=value pairs such as service=sandboxd)", where,
                                         k->key);
                if (free_and_strdup((char **) p, value) < 0)
                        return -ENOMEM;
                return 0;
        case V_NODE_NAME:
                if (isempty(value)) {
                        *(char **) p = mfree(*(char **) p);
                        return 0;
                }
                if (!node_name_is_valid(value))
                        return error_set(ret_error, "%s: %s= takes 1 to %d letters, digits, '_', '.' and '-', "
                                         "got '%.80s'", where, k->key, NODE_NAME_MAX, value);
                if (free_and_strdup((char **) p, value) < 0)
                        return -ENOMEM;
                return 0;
        case V_PISTON_LISTEN: {
                struct sockaddr_storage ss;
                socklen_t sl;

                /* Empty: none. No key guards this listener, so loopback only, whatever
                 * ListenAllowNonLoopback= says. */
                if (isempty(value)) {
                        *(char **) p = mfree(*(char **) p);
                        return 0;
                }
                if (listen_address_parse(value, &ss, &sl) < 0)
                        return error_set(ret_error, "%s: %s= takes ADDRESS:PORT or [IPv6]:PORT with a literal "
                                         "address, got '%s'", where, k->key, value);
                if (!listen_address_is_loopback((struct sockaddr *) &ss))
                        return error_set(ret_error, "%s: %s=%s is not a loopback address: the Piston API takes no "
                                         "key, so it listens on 127.0.0.0/8 or [::1] only", where, k->key, value);
                if (free_and_strdup((char **) p, value) < 0)
                        return -ENOMEM;
                return 0;
        }
        case V_U64:
        case V_SIZE:
                r = k->type == V_SIZE ? parse_size(value, &u) : safe_atou64(value, &u);
                if (r < 0)
                        return error_set(ret_error, "%s: %s= takes %s, got '%s'", where, k->key,
                                         k->type == V_SIZE ? "a size (e.g. 64K, 2M)" : "a whole number", value);
                if ((k->min || k->max) && (u < k->min || u > k->max))
                        return error_set(ret_error, "%s: %s=%s is outside [%" PRIu64 ", %" PRIu64 "]", where,
                                         k->key, value, k->min, k->max);
                *(uint64_t *) p = u;
                return 0;
        case V_SIZE_PERCENT: {
                size_t n = strlen(value);

                if (n > 1 && value[n - 1] == '%') {
                        _cleanup_free_ char *digits = strndup(value, n - 1);

                        if (!digits)
                                return -ENOMEM;
                        if (strspn(digits, "0123456789") != n - 1 || safe_atou64(digits, &u) < 0 || u > 100)
                                return error_set(ret_error, "%s: %s= takes a size (e.g. 512M) or a percentage "
                                                 "from 0%% to 100%%, got '%s'", where, k->key, value);
                        *(SizeOrPercent *) p = (SizeOrPercent) { .percent = (unsigned) u };
                        return 0;
                }
                r = parse_size(value, &u);
                if (r < 0)
                        return error_set(ret_error, "%s: %s= takes a size (e.g. 512M) or a percentage "
                                         "from 0%% to 100%%, got '%s'", where, k->key, value);
                if (u < k->min || u > k->max)
                        return error_set(ret_error, "%s: %s=%s is outside [%" PRIu64 ", %" PRIu64 "]", where,
                                         k->key, value, k->min, k->max);
                *(SizeOrPercent *) p = (SizeOrPercent) { .bytes = u };
                return 0;
        }
        case V_CORES: {
                char *end;
                double d;

                errno = 0;
                d = strtod(value, &end);
                if (errno != 0 || *end || end == value || !isfinite(d) || d < 0.01 || d > 4096)
                        return error_set(ret_error, "%s: %s= takes a number of cores in [0.01, 4096], got '%s'",
                                         where, k->key, value);
                *(double *) p = d;
                return 0;
        }
        case V_BOOL:
                if (streq(value, "yes") || streq(value, "true") || streq(value, "on") || streq(value, "1"))
                        *(bool *) p = true;
                else if (streq(value, "no") || streq(value, "false") || streq(value, "off") || streq(value, "0"))
                        *(bool *) p = false;
                else
                        return error_set(ret_error, "%s: %s= takes yes or no, got '%s'", where, k->key, value);
                return 0;
        case V_LOGLEVEL:
                r = parse_loglevel(value);
                if (r < 0)
                        return error_set(ret_error, "%s: %s= takes a syslog level name (err, info, debug...), got '%s'",
                                         where, k->key, value);
                *(int *) p = r;
                return 0;
        case V_WORDS:
                return assign_words((char ***) p, k->key, value, where, ret_error);
        case V_ISOLATION:
                r = isolation_policy_from_string(value);
                if (r < 0)
                        return error_set(ret_error, "%s: %s= takes auto, always or never, got '%s'", where, k->key,
                                         value);
                *(int *) p = r;
                return 0;
        case V_RISK_CLASSES: {
                unsigned mask = 0;

                for (const char *w = value; *w;) {
                        char word[32];
                        size_t n = strcspn(w, " \t");

                        if (n > 0) {
                                RiskClass rc = _RISK_CLASS_INVALID;

                                if (n < sizeof(word)) {
                                        memcpy(word, w, n);
                                        word[n] = 0;
                                        rc = risk_class_from_string(word);
                                }
                                if (rc < 0)
                                        return error_set(ret_error, "%s: %s= takes processes, ffi, memory, dynamic, "
                                                         "asm or syscall, got '%.*s'", where, k->key, (int) MIN(n, 64u), w);
                                mask |= 1u << rc;
                        }
                        w += n;
                        w += strspn(w, " \t");
                }
                *(unsigned *) p = mask;
                return 0;
        }
        case V_RUNSC_PLATFORM:
                if (!streq(value, "ptrace") && !streq(value, "systrap") && !streq(value, "kvm"))
                        return error_set(ret_error, "%s: %s= takes ptrace, systrap or kvm, got '%s'", where, k->key,
                                         value);
                return free_and_strdup((char **) p, value) < 0 ? -ENOMEM : 0;
        case V_ITEMS:
                return assign_items((char ***) p, k, value, where, ret_error);
        case V_LISTEN:
                /* Where it was set, for the loopback check once every file is read (the key that
                 * allows other addresses may come later). */
                r = assign_listen((char ***) p, value, where, ret_error);
                if (r >= 0 && free_and_strdup(&c->listen_where, where) < 0)
                        return -ENOMEM;
                return r;
        }
        return -EINVAL;
}

static char *strip(char *s) {
        char *e;

        while (*s && isspace((unsigned char) *s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = 0;
        return s;
}

int config_parse_text(Config *c, const char *text, const char *filename, char **ret_error) {
        _cleanup_free_ char *copy = strdup(text);
        char section[64] = "";
        unsigned line = 0;
        char *l;

        if (!copy)
                return -ENOMEM;

        /* strtok_r would skip empty lines and mess up the count: split by hand. */
        for (char *p = copy; p; ) {
                char where[512], *eq, *key, *value;
                const ConfKey *found = NULL;
                bool section_known = false;

                l = p;
                p = strchr(p, '\n');
                if (p)
                        *p++ = 0;
                line++;
                l = strip(l);

                if (!*l || *l == '#' || *l == ';')
                        continue;

                snprintf(where, sizeof(where), "%s:%u", filename, line);

                if (*l == '[') {
                        size_t n = strlen(l);
                        if (n < 3 || l[n - 1] != ']' || n - 2 >= sizeof(section))
                                return error_set(ret_error, "%s: invalid section header '%s'", where, l);
                        memcpy(section, l + 1, n - 2);
                        section[n - 2] = 0;
                        for (size_t i = 0; i < ELEMENTSOF(conf_keys); i++)
                                if (streq(conf_keys[i].section, section))
                                        section_known = true;
                        if (!section_known)
                                return error_set(ret_error, "%s: unknown section [%s]", where, section);
                        continue;
                }

                eq = strchr(l, '=');
                if (!eq)
                        return error_set(ret_error, "%s: expected KEY=VALUE, got '%s'", where, l);
                *eq = 0;
                key = strip(l);
                value = strip(eq + 1);

                if (!*section)
                        return error_set(ret_error, "%s: assignment '%s=' outside of a section", where, key);

                for (size_t i = 0; i < ELEMENTSOF(conf_keys); i++)
                        if (streq(conf_keys[i].section, section) && streq(conf_keys[i].key, key)) {
                                found = &conf_keys[i];
                                break;
                        }
                if (!found)
                        return error_set(ret_error, "%s: unknown key '%s' in section [%s]", where, key, section);

                int r = assign(c, found, value, where, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int read_file_bounded(const char *path, char **ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        ssize_t n;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if (st.st_size > CONF_FILE_MAX)
                return -EFBIG;
        buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        n = loop_read(fd, buf, (size_t) st.st_size);
        if (n < 0)
                return (int) n;
        buf[n] = 0;
        if (strlen(buf) != (size_t) n)
                return -EBADMSG;        /* a NUL byte in a config file */
        *ret = TAKE_PTR(buf);
        return 0;
}

static int load_one(Config *c, const char *path, bool optional, char **ret_error) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_file_bounded(path, &text);
        if (r == -ENOENT && optional)
                return 0;
        if (r < 0) {
                errno = -r;
                (void) error_set(ret_error, "%s: cannot read: %m", path);
                return r;
        }
        return config_parse_text(c, text, path, ret_error);
}

int config_load(Config *c, const char *dir, char **ret_error) {
        _cleanup_free_ char *main_path = NULL, *dropin_dir = NULL;
        _cleanup_strv_free_ char **names = NULL;
        size_t n_names = 0;
        DIR *d;
        int r;

        if (asprintf(&main_path, "%s/sandboxd.conf", dir) < 0 ||
            asprintf(&dropin_dir, "%s/sandboxd.conf.d", dir) < 0)
                return -ENOMEM;

        r = load_one(c, main_path, true, ret_error);
        if (r < 0)
                return r;

        d = opendir(dropin_dir);
        if (!d) {
                if (errno != ENOENT) {
                        r = -errno;
                        (void) error_set(ret_error, "%s: cannot open: %m", dropin_dir);
                        return r;
                }
        } else {
                struct dirent *de;

                while ((de = readdir(d))) {
                        size_t l = strlen(de->d_name);

                        if (de->d_name[0] == '.' || l < 6 || !streq(de->d_name + l - 5, ".conf"))
                                continue;
                        if (n_names >= 1024)
                                break;
                        r = strv_extend(&names, &n_names, de->d_name);
                        if (r < 0)
                                break;
                }
                closedir(d);
                if (r >= 0)
                        strv_sort(names);
                for (size_t i = 0; r >= 0 && i < n_names; i++) {
                        _cleanup_free_ char *p = NULL;

                        if (asprintf(&p, "%s/%s", dropin_dir, names[i]) < 0)
                                r = -ENOMEM;
                        else
                                r = load_one(c, p, false, ret_error);
                }
                if (r < 0)
                        return r;
        }

        return config_validate(c, ret_error);
}

int config_validate(const Config *c, char **ret_error) {
        const Limits *d = &c->defaults, *m = &c->ceilings;

        for (char **a = c->listen; !c->listen_allow_non_loopback && a && *a; a++) {
                struct sockaddr_storage ss;
                socklen_t sl;

                if (listen_address_parse(*a, &ss, &sl) < 0 || !listen_address_is_loopback((struct sockaddr *) &ss))
                        return error_set(ret_error, "%s: Listen=%s is not a loopback address: the API on TCP is "
                                         "plain HTTP and its bearer keys would cross the network in clear text. "
                                         "Listen on 127.0.0.1 or [::1] (with a TLS-terminating proxy in front for "
                                         "remote clients), or set ListenAllowNonLoopback=yes in [Daemon]",
                                         c->listen_where ?: "Listen=", *a);
        }

        if (!key_name_is_valid(c->piston_owner))
                return error_set(ret_error, "PistonOwner=%s in [Daemon] is not a valid API key name "
                                 "([A-Za-z0-9_.-], 1 to 64 characters)", c->piston_owner);
        if (c->piston_listen)
                for (char **a = c->listen; a && *a; a++)
                        if (streq(*a, c->piston_listen))
                                return error_set(ret_error, "PistonListen=%s in [Daemon] is also in Listen=: the "
                                                 "Piston listener needs an address of its own", *a);

        /* Only the form: the language files are read after the configuration (and may change at a
         * reload); a name that no file defines is logged when the pool fills, and pools nothing. */
        for (char **a = c->pool_languages; a && *a; a++)
                if (!langdef_name_is_valid(*a))
                        return error_set(ret_error, "Languages=%s in [Pool] is not a valid language name", *a);
        for (char **a = c->pool_environments; a && *a; a++)
                if (!environment_name_is_valid(*a, strlen(*a)))
                        return error_set(ret_error, "Environments=%s in [Pool] is not a valid environment name", *a);

        if (d->timeout_ms > m->timeout_ms)
                return error_set(ret_error, "DefaultTimeoutMS=%" PRIu64 " exceeds MaxTimeoutMS=%" PRIu64,
                                 d->timeout_ms, m->timeout_ms);
        if (d->memory_mb > m->memory_mb)
                return error_set(ret_error, "DefaultMemoryMB=%" PRIu64 " exceeds MaxMemoryMB=%" PRIu64,
                                 d->memory_mb, m->memory_mb);
        if (d->cpu_cores > m->cpu_cores)
                return error_set(ret_error, "DefaultCPUCores=%g exceeds MaxCPUCores=%g", d->cpu_cores, m->cpu_cores);
        if (d->disk_mb > m->disk_mb)
                return error_set(ret_error, "DefaultDiskMB=%" PRIu64 " exceeds MaxDiskMB=%" PRIu64,
                                 d->disk_mb, m->disk_mb);
        if (d->tasks > m->tasks)
                return error_set(ret_error, "DefaultTasks=%" PRIu64 " exceeds MaxTasks=%" PRIu64, d->tasks, m->tasks);
        if (c->callback_backoff_base_ms > c->callback_backoff_max_sec * MSEC_PER_SEC)
                return error_set(ret_error, "CallbackBackoffBaseMS=%" PRIu64 " exceeds CallbackBackoffMaxSec=%" PRIu64,
                                 c->callback_backoff_base_ms, c->callback_backoff_max_sec);
        if (c->node_lease_sec <= 2 * c->node_heartbeat_sec)
                return error_set(ret_error, "NodeLeaseSec=%" PRIu64 " in [Cluster] must be more than twice "
                                 "NodeHeartbeatSec=%" PRIu64 ": one late heartbeat would end the lease",
                                 c->node_lease_sec, c->node_heartbeat_sec);
        if (c->max_input_file_bytes > c->max_input_total_bytes)
                return error_set(ret_error, "MaxInputFileBytes=%" PRIu64 " exceeds MaxInputTotalBytes=%" PRIu64,
                                 c->max_input_file_bytes, c->max_input_total_bytes);
        /* Inline content travels base64 (4 bytes per 3) in the request body. */
        if (c->max_inline_input_bytes / 3 * 4 >= c->max_request_bytes)
                return error_set(ret_error, "MaxInlineInputBytes=%" PRIu64 " does not fit in MaxRequestBytes=%" PRIu64
                                 " once base64-encoded", c->max_inline_input_bytes, c->max_request_bytes);
        return 0;
}
