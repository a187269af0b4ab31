/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <syslog.h>

#include <cmocka.h>

#include "model/conf.h"
#include "model/risk-scan.h"
#include "strv.h"
#include "util.h"

/* Each row of each table runs as its own cmocka test, named after the row, so a failure in the TAP
 * output says which rule broke. */

/* ---- defaults ---- */

static void test_defaults(_unused_ void **state) {
        _cleanup_(config_freep) Config *c = config_new();
        _cleanup_free_ char *error = NULL;

        assert_non_null(c);
        assert_string_equal(c->api_socket, "/run/sandboxd/api.sock");
        assert_string_equal(c->socket_group, "sandboxd");
        assert_string_equal(c->state_dir, "/var/lib/sandboxd");
        assert_string_equal(c->runtime_dir, "/run/sandboxd");
        assert_string_equal(c->helper, SANDBOX_EXEC_PATH);
        assert_int_equal(c->max_concurrent, 8);
        assert_false(c->listen_allow_non_loopback);
        assert_null(c->piston_listen);          /* the Piston listener: off */
        assert_null(c->store);                  /* Store=sqlite */
        assert_null(c->node_name);              /* NodeName=: the machine id, read at start */
        assert_int_equal(c->node_heartbeat_sec, 5);
        assert_int_equal(c->node_lease_sec, 30);
        assert_int_equal(config_parse_text(c, "[Daemon]\nStore=service=sandboxd\n", "s.conf", &error), 0);
        assert_string_equal(c->store, "service=sandboxd");
        assert_int_equal(config_parse_text(c, "[Daemon]\nStore=sqlite\n", "s.conf", &error), 0);
        assert_null(c->store);
        assert_string_equal(c->piston_owner, "piston");
        assert_int_equal(c->max_queued, 256);
        assert_int_equal(c->max_request_bytes, 2 * 1024 * 1024);
        assert_int_equal(c->max_code_bytes, 1024 * 1024);
        assert_int_equal(c->keep_finished, 1024);
        assert_int_equal(c->sweep_interval_sec, 300);
        assert_int_equal(c->session_idle_sec, 3600);
        assert_int_equal(c->max_sessions, 64);
        assert_int_equal(c->max_sessions_per_caller, 16);
        assert_int_equal(c->max_sessions_disk_mb, 0);           /* from physical memory (quota.h) */
        assert_int_equal(c->max_sessions_disk_mb_per_caller, 0);
        assert_true(c->max_queued_per_caller == CONFIG_UNSET);  /* MaxQueued= */
        assert_true(c->max_running_per_caller == CONFIG_UNSET); /* MaxConcurrent= */
        assert_int_equal(c->admin_queue_reserve, 16);
        assert_int_equal(c->max_stored_bytes_per_caller, 1ULL << 30);
        assert_int_equal(c->callback_max_pending_per_caller, 256);
        assert_int_equal(c->max_connections, 256);
        assert_int_equal(c->request_header_timeout_sec, 10);
        assert_int_equal(c->request_body_timeout_sec, 60);
        assert_int_equal(c->max_connections_per_address, 16);
        assert_int_equal(c->max_connections_per_user, 32);
        assert_int_equal(c->log_level, LOG_INFO);
        assert_int_equal(c->bus_max_calls_per_connection, 64);
        assert_int_equal(c->bus_max_interactive, 8);
        assert_int_equal(c->bus_max_interactive_per_user, 2);
        assert_int_equal(c->bus_interactive_timeout_sec, 60);

        assert_int_equal(c->defaults.timeout_ms, 30000);
        assert_int_equal(c->defaults.memory_mb, 512);
        assert_true(c->defaults.cpu_cores == 1.0);
        assert_int_equal(c->defaults.disk_mb, 1024);
        assert_int_equal(c->defaults.tasks, 128);
        assert_int_equal(c->ceilings.timeout_ms, 600000);
        assert_int_equal(c->ceilings.memory_mb, 8192);
        assert_true(c->ceilings.cpu_cores == 2.0);
        assert_int_equal(c->ceilings.disk_mb, 8192);
        assert_int_equal(c->ceilings.tasks, 1024);

        assert_int_equal(c->output_head_bytes, 64 * 1024);
        assert_int_equal(c->output_tail_bytes, 64 * 1024);
        assert_int_equal(c->nofile, 1024);
        assert_int_equal(c->kill_grace_ms, 1000);

        assert_null(c->artifacts_dir);          /* StateDirectory/artifacts */
        assert_null(c->artifact_url_key_file);  /* StateDirectory/artifact-url.key */
        assert_int_equal(c->artifact_url_lifetime_sec, 900);
        assert_int_equal(c->artifact_max_files, 1000);
        assert_int_equal(c->artifact_max_file_bytes, 100ULL << 20);
        assert_int_equal(c->artifact_max_total_bytes, 1ULL << 30);
        assert_int_equal(c->artifact_store_max_bytes, 16ULL << 30);
        assert_int_equal(c->artifact_max_bytes_per_caller, 4ULL << 30);
        assert_int_equal(c->artifact_min_free.bytes, 0);
        assert_int_equal(c->artifact_min_free.percent, 5);
        assert_null(c->callback_key_file);
        assert_int_equal(c->callback_max_attempts, 8);
        assert_int_equal(c->callback_max_age_sec, 86400);
        assert_int_equal(c->callback_timeout_sec, 10);
        assert_int_equal(c->callback_backoff_base_ms, 1000);
        assert_int_equal(c->callback_backoff_max_sec, 600);
        assert_int_equal(c->callback_max_concurrent, 16);
        assert_false(c->callback_allow_internal);
        assert_int_equal(c->max_input_files, 16);
        assert_int_equal(c->max_input_file_bytes, 64ULL << 20);
        assert_int_equal(c->max_input_total_bytes, 256ULL << 20);
        assert_int_equal(c->max_inline_input_bytes, 1ULL << 20);
        assert_int_equal(c->input_connect_timeout_sec, 10);
        assert_int_equal(c->input_timeout_sec, 120);
        assert_false(c->input_allow_internal);

        /* The defaults are consistent on their own. */
        assert_int_equal(config_validate(c, &error), 0);
        assert_null(error);

        assert_null(config_free(NULL));
}

/* ---- config_parse_text: one valid assignment per row ---- */

typedef enum FieldType {
        F_STR,
        F_U64,
        F_CORES,
        F_INT,
        F_BOOL,
} FieldType;

typedef struct KeyRow {
        const char *name;
        const char *text;
        FieldType type;
        size_t offset;
        const char *s;
        uint64_t u;
        double d;
} KeyRow;

#define STR(name, text, field, v)   { name, text, F_STR, offsetof(Config, field), .s = v }
#define U64(name, text, field, v)   { name, text, F_U64, offsetof(Config, field), .u = v }
#define CORES(name, text, field, v) { name, text, F_CORES, offsetof(Config, field), .d = v }
#define INT(name, text, field, v)   { name, text, F_INT, offsetof(Config, field), .u = v }
#define BOOL(name, text, field, v)  { name, text, F_BOOL, offsetof(Config, field), .u = v }

static const KeyRow key_rows[] = {
        /* [Daemon] */
        STR("APISocket", "[Daemon]\nAPISocket=/tmp/api.sock\n", api_socket, "/tmp/api.sock"),
        STR("SocketGroup", "[Daemon]\nSocketGroup=wheel\n", socket_group, "wheel"),
        STR("StateDirectory", "[Daemon]\nStateDirectory=/srv/sandboxd\n", state_dir, "/srv/sandboxd"),
        STR("RuntimeDirectory", "[Daemon]\nRuntimeDirectory=/run/sbx\n", runtime_dir, "/run/sbx"),
        U64("MaxConcurrent", "[Daemon]\nMaxConcurrent=16\n", max_concurrent, 16),
        U64("MaxConcurrent=1 (minimum)", "[Daemon]\nMaxConcurrent=1\n", max_concurrent, 1),
        U64("MaxConcurrent=4096 (maximum)", "[Daemon]\nMaxConcurrent=4096\n", max_concurrent, 4096),
        U64("MaxQueued=0", "[Daemon]\nMaxQueued=0\n", max_queued, 0),
        U64("MaxQueued", "[Daemon]\nMaxQueued=1000\n", max_queued, 1000),
        U64("MaxRequestBytes=64K", "[Daemon]\nMaxRequestBytes=64K\n", max_request_bytes, 64 * 1024),
        U64("MaxRequestBytes=2M", "[Daemon]\nMaxRequestBytes=2M\n", max_request_bytes, 2 * 1024 * 1024),
        U64("MaxRequestBytes=1G (maximum)", "[Daemon]\nMaxRequestBytes=1G\n", max_request_bytes, 1ULL << 30),
        U64("MaxRequestBytes=1024 (minimum)", "[Daemon]\nMaxRequestBytes=1024\n", max_request_bytes, 1024),
        U64("MaxCodeBytes=512KiB", "[Daemon]\nMaxCodeBytes=512KiB\n", max_code_bytes, 512 * 1024),
        U64("MaxCodeBytes=64MB (maximum)", "[Daemon]\nMaxCodeBytes=64MB\n", max_code_bytes, 64ULL << 20),
        U64("MaxCodeBytes=1 (minimum)", "[Daemon]\nMaxCodeBytes=1\n", max_code_bytes, 1),
        /* [Network] (the lists' entries are net-policy.c's: test-net-policy) */
        STR("HostsFile", "[Network]\nHostsFile=/etc/sandboxd/hosts\n", net_hosts_file, "/etc/sandboxd/hosts"),
        U64("MaxTransferMB", "[Network]\nMaxTransferMB=10\n", net_max_transfer_mb, 10),
        U64("MaxTransferMB=0 (no cap)", "[Network]\nMaxTransferMB=0\n", net_max_transfer_mb, 0),
        U64("Network MaxConnections", "[Network]\nMaxConnections=1024\n", net_max_connections, 1024),
        U64("Network MaxConnections leaves [Daemon]'s", "[Network]\nMaxConnections=3\n", max_connections, 256),
        U64("ConnectTimeoutSec", "[Network]\nConnectTimeoutSec=300\n", net_connect_timeout_sec, 300),
        U64("IdleTimeoutSec", "[Network]\nIdleTimeoutSec=1\n", net_idle_timeout_sec, 1),
        U64("MaxLoggedRequests=0", "[Network]\nMaxLoggedRequests=0\n", net_max_logged_requests, 0),
        U64("MaxLoggedRequests", "[Network]\nMaxLoggedRequests=10000\n", net_max_logged_requests, 10000),
        /* [Inputs] */
        U64("MaxInputFiles", "[Inputs]\nMaxInputFiles=3\n", max_input_files, 3),
        U64("MaxInputFiles=0", "[Inputs]\nMaxInputFiles=0\n", max_input_files, 0),
        U64("MaxInputFiles=256 (maximum)", "[Inputs]\nMaxInputFiles=256\n", max_input_files, 256),
        U64("MaxInputFileBytes", "[Inputs]\nMaxInputFileBytes=10M\n", max_input_file_bytes, 10ULL << 20),
        U64("MaxInputTotalBytes", "[Inputs]\nMaxInputTotalBytes=1G\n", max_input_total_bytes, 1ULL << 30),
        U64("MaxInlineInputBytes", "[Inputs]\nMaxInlineInputBytes=64K\n", max_inline_input_bytes, 64 * 1024),
        U64("MaxInlineInputBytes=0", "[Inputs]\nMaxInlineInputBytes=0\n", max_inline_input_bytes, 0),
        U64("InputConnectTimeoutSec", "[Inputs]\nInputConnectTimeoutSec=3\n", input_connect_timeout_sec, 3),
        U64("InputTimeoutSec", "[Inputs]\nInputTimeoutSec=3600\n", input_timeout_sec, 3600),
        BOOL("InputAllowInternalAddresses=yes", "[Inputs]\nInputAllowInternalAddresses=yes\n", input_allow_internal, 1),
        BOOL("InputAllowInternalAddresses=true", "[Inputs]\nInputAllowInternalAddresses=true\n", input_allow_internal, 1),
        BOOL("InputAllowInternalAddresses=1", "[Inputs]\nInputAllowInternalAddresses=1\n", input_allow_internal, 1),
        BOOL("InputAllowInternalAddresses=no after yes",
             "[Inputs]\nInputAllowInternalAddresses=yes\nInputAllowInternalAddresses=no\n", input_allow_internal, 0),
        BOOL("InputAllowInternalAddresses=off", "[Inputs]\nInputAllowInternalAddresses=off\n", input_allow_internal, 0),
        BOOL("ListenAllowNonLoopback=yes", "[Daemon]\nListenAllowNonLoopback=yes\n", listen_allow_non_loopback, 1),
        BOOL("ListenAllowNonLoopback=no after yes", "[Daemon]\nListenAllowNonLoopback=yes\nListenAllowNonLoopback=no\n",
             listen_allow_non_loopback, 0),
        BOOL("ProtectKernel=no", "[Sandbox]\nProtectKernel=no\n", protect_kernel, 0),
        BOOL("ProtectKernel=yes after no", "[Sandbox]\nProtectKernel=no\nProtectKernel=yes\n", protect_kernel, 1),
        /* [Callbacks] */
        BOOL("CallbackAllowInternalAddresses=yes", "[Callbacks]\nCallbackAllowInternalAddresses=yes\n",
             callback_allow_internal, 1),
        BOOL("CallbackAllowInternalAddresses=no after yes",
             "[Callbacks]\nCallbackAllowInternalAddresses=yes\nCallbackAllowInternalAddresses=no\n",
             callback_allow_internal, 0),
        U64("KeepFinished", "[Daemon]\nKeepFinished=0\n", keep_finished, 0),
        U64("SweepIntervalSec", "[Daemon]\nSweepIntervalSec=60\n", sweep_interval_sec, 60),
        U64("SessionIdleSec=2", "[Daemon]\nSessionIdleSec=2\n", session_idle_sec, 2),
        U64("MaxSessions=0 (sessions off)", "[Daemon]\nMaxSessions=0\n", max_sessions, 0),
        U64("MaxSessionsPerCaller", "[Daemon]\nMaxSessionsPerCaller=3\n", max_sessions_per_caller, 3),
        U64("MaxSessionsDiskMB", "[Daemon]\nMaxSessionsDiskMB=65536\n", max_sessions_disk_mb, 65536),
        U64("MaxSessionsDiskMBPerCaller", "[Daemon]\nMaxSessionsDiskMBPerCaller=1\n", max_sessions_disk_mb_per_caller,
            1),
        U64("MaxQueuedPerCaller=0", "[Daemon]\nMaxQueuedPerCaller=0\n", max_queued_per_caller, 0),
        U64("MaxQueuedPerCaller", "[Daemon]\nMaxQueuedPerCaller=32\n", max_queued_per_caller, 32),
        U64("MaxRunningPerCaller=1 (minimum)", "[Daemon]\nMaxRunningPerCaller=1\n", max_running_per_caller, 1),
        U64("MaxRunningPerCaller=4096 (maximum)", "[Daemon]\nMaxRunningPerCaller=4096\n", max_running_per_caller,
            4096),
        U64("AdminQueueReserve=0", "[Daemon]\nAdminQueueReserve=0\n", admin_queue_reserve, 0),
        U64("MaxStoredBytesPerCaller=64K (minimum)", "[Daemon]\nMaxStoredBytesPerCaller=64K\n",
            max_stored_bytes_per_caller, 64 * 1024),
        U64("MaxStoredBytesPerCaller=10G", "[Daemon]\nMaxStoredBytesPerCaller=10G\n", max_stored_bytes_per_caller,
            10ULL << 30),
        U64("MaxConnections", "[Daemon]\nMaxConnections=65536\n", max_connections, 65536),
        U64("RequestHeaderTimeoutSec", "[Daemon]\nRequestHeaderTimeoutSec=1\n", request_header_timeout_sec, 1),
        U64("RequestBodyTimeoutSec", "[Daemon]\nRequestBodyTimeoutSec=86400\n", request_body_timeout_sec, 86400),
        U64("MaxConnectionsPerAddress", "[Daemon]\nMaxConnectionsPerAddress=3\n", max_connections_per_address, 3),
        U64("MaxConnectionsPerUser", "[Daemon]\nMaxConnectionsPerUser=65536\n", max_connections_per_user, 65536),
        INT("Strong: unset", "", isolation_policy, -1),
        INT("Strong=auto", "[Isolation]\nStrong=auto\n", isolation_policy, ISOLATION_POLICY_AUTO),
        INT("Strong=always", "[Isolation]\nStrong=always\n", isolation_policy, ISOLATION_POLICY_ALWAYS),
        INT("Strong=never", "[Isolation]\nStrong=never\n", isolation_policy, ISOLATION_POLICY_NEVER),
        INT("StrongRules: every class by default", "", isolation_classes, RISK_CLASSES_ALL),
        INT("StrongRules=ffi asm", "[Isolation]\nStrongRules=ffi  asm\n", isolation_classes,
            (1u << RISK_FFI) | (1u << RISK_ASM)),
        INT("StrongRules= none", "[Isolation]\nStrongRules=\n", isolation_classes, 0),
        INT("StrongRules: the last assignment", "[Isolation]\nStrongRules=ffi\nStrongRules=processes memory dynamic "
            "syscall\n", isolation_classes, RISK_CLASSES_ALL & ~((1u << RISK_FFI) | (1u << RISK_ASM))),
        U64("StrongTimeoutSec: 30 s by default", "", isolation_long_run_sec, 30),
        U64("StrongTimeoutSec=0", "[Isolation]\nStrongTimeoutSec=0\n", isolation_long_run_sec, 0),
        U64("StrongSize: 1 by default", "", pool_strong_size, 1),
        U64("StrongSize=0", "[Pool]\nStrongSize=0\n", pool_strong_size, 0),
        U64("StrongSize=64", "[Pool]\nStrongSize=64\n", pool_strong_size, 64),
        STR("Runsc: Debian's", "", runsc, "/usr/bin/runsc"),
        STR("Runsc", "[Isolation]\nRunsc=/opt/gvisor/runsc\n", runsc, "/opt/gvisor/runsc"),
        STR("RunscPlatform: ptrace by default", "", runsc_platform, "ptrace"),
        STR("RunscPlatform=systrap", "[Isolation]\nRunscPlatform=systrap\n", runsc_platform, "systrap"),
        INT("LogLevel=debug", "[Daemon]\nLogLevel=debug\n", log_level, LOG_DEBUG),
        INT("LogLevel=err", "[Daemon]\nLogLevel=err\n", log_level, LOG_ERR),
        INT("LogLevel=emerg", "[Daemon]\nLogLevel=emerg\n", log_level, LOG_EMERG),
        INT("LogLevel=warning", "[Daemon]\nLogLevel=warning\n", log_level, LOG_WARNING),

        /* [Bus] */
        U64("MaxPendingCallsPerConnection=1 (minimum)", "[Bus]\nMaxPendingCallsPerConnection=1\n",
            bus_max_calls_per_connection, 1),
        U64("MaxPendingCallsPerConnection=4096 (maximum)", "[Bus]\nMaxPendingCallsPerConnection=4096\n",
            bus_max_calls_per_connection, 4096),
        U64("MaxInteractiveAuthorizations=1 (minimum)", "[Bus]\nMaxInteractiveAuthorizations=1\n",
            bus_max_interactive, 1),
        U64("MaxInteractiveAuthorizations=32 (maximum)", "[Bus]\nMaxInteractiveAuthorizations=32\n",
            bus_max_interactive, 32),
        U64("MaxInteractiveAuthorizationsPerUser", "[Bus]\nMaxInteractiveAuthorizationsPerUser=5\n",
            bus_max_interactive_per_user, 5),
        U64("InteractiveAuthorizationTimeoutSec=1 (minimum)", "[Bus]\nInteractiveAuthorizationTimeoutSec=1\n",
            bus_interactive_timeout_sec, 1),
        U64("InteractiveAuthorizationTimeoutSec=3600 (maximum)",
            "[Bus]\nInteractiveAuthorizationTimeoutSec=3600\n", bus_interactive_timeout_sec, 3600),

        /* [Limits] */
        U64("DefaultTimeoutMS", "[Limits]\nDefaultTimeoutMS=5000\n", defaults.timeout_ms, 5000),
        U64("DefaultMemoryMB", "[Limits]\nDefaultMemoryMB=256\n", defaults.memory_mb, 256),
        CORES("DefaultCPUCores=0.5", "[Limits]\nDefaultCPUCores=0.5\n", defaults.cpu_cores, 0.5),
        CORES("DefaultCPUCores=2", "[Limits]\nDefaultCPUCores=2\n", defaults.cpu_cores, 2.0),
        U64("DefaultDiskMB", "[Limits]\nDefaultDiskMB=1\n", defaults.disk_mb, 1),
        U64("DefaultTasks", "[Limits]\nDefaultTasks=4\n", defaults.tasks, 4),
        U64("MaxTimeoutMS", "[Limits]\nMaxTimeoutMS=86400000\n", ceilings.timeout_ms, 86400000),
        U64("MaxMemoryMB", "[Limits]\nMaxMemoryMB=16\n", ceilings.memory_mb, 16),
        CORES("MaxCPUCores=0.25", "[Limits]\nMaxCPUCores=0.25\n", ceilings.cpu_cores, 0.25),
        CORES("MaxCPUCores=4096", "[Limits]\nMaxCPUCores=4096\n", ceilings.cpu_cores, 4096.0),
        U64("MaxDiskMB", "[Limits]\nMaxDiskMB=1048576\n", ceilings.disk_mb, 1 << 20),
        U64("MaxTasks", "[Limits]\nMaxTasks=4096\n", ceilings.tasks, 4096),

        /* [Sandbox] */
        STR("Helper", "[Sandbox]\nHelper=/opt/sandboxd/sandbox-exec\n", helper, "/opt/sandboxd/sandbox-exec"),
        U64("OutputHeadBytes=0", "[Sandbox]\nOutputHeadBytes=0\n", output_head_bytes, 0),
        U64("OutputHeadBytes=1M", "[Sandbox]\nOutputHeadBytes=1M\n", output_head_bytes, 1024 * 1024),
        U64("OutputTailBytes=16M (maximum)", "[Sandbox]\nOutputTailBytes=16M\n", output_tail_bytes, 16 << 20),
        U64("OutputTailBytes=8K", "[Sandbox]\nOutputTailBytes=8K\n", output_tail_bytes, 8192),
        U64("LimitNOFILE", "[Sandbox]\nLimitNOFILE=16\n", nofile, 16),
        U64("KillGraceMS", "[Sandbox]\nKillGraceMS=60000\n", kill_grace_ms, 60000),

        /* [Artifacts] */
        STR("ArtifactsDirectory", "[Artifacts]\nArtifactsDirectory=/srv/artifacts\n", artifacts_dir, "/srv/artifacts"),
        STR("ArtifactURLKeyFile", "[Artifacts]\nArtifactURLKeyFile=/etc/sandboxd/url.key\n", artifact_url_key_file,
            "/etc/sandboxd/url.key"),
        U64("ArtifactURLLifetimeSec=1 (minimum)", "[Artifacts]\nArtifactURLLifetimeSec=1\n",
            artifact_url_lifetime_sec, 1),
        U64("ArtifactURLLifetimeSec=604800 (maximum)", "[Artifacts]\nArtifactURLLifetimeSec=604800\n",
            artifact_url_lifetime_sec, 604800),
        U64("ArtifactMaxFiles=0 (no artifacts)", "[Artifacts]\nArtifactMaxFiles=0\n", artifact_max_files, 0),
        U64("ArtifactMaxFiles", "[Artifacts]\nArtifactMaxFiles=200000\n", artifact_max_files, 200000),
        U64("ArtifactMaxFileBytes=10M", "[Artifacts]\nArtifactMaxFileBytes=10M\n", artifact_max_file_bytes, 10 << 20),
        U64("ArtifactMaxTotalBytes=1T (maximum)", "[Artifacts]\nArtifactMaxTotalBytes=1T\n",
            artifact_max_total_bytes, 1ULL << 40),
        U64("ArtifactStoreMaxBytes=100G", "[Artifacts]\nArtifactStoreMaxBytes=100G\n",
            artifact_store_max_bytes, 100ULL << 30),
        U64("ArtifactStoreMaxBytes=1024T (maximum)", "[Artifacts]\nArtifactStoreMaxBytes=1024T\n",
            artifact_store_max_bytes, 1ULL << 50),
        U64("ArtifactMaxBytesPerCaller=0 (only empty files)", "[Artifacts]\nArtifactMaxBytesPerCaller=0\n",
            artifact_max_bytes_per_caller, 0),
        U64("ArtifactMaxBytesPerCaller=64M", "[Artifacts]\nArtifactMaxBytesPerCaller=64M\n",
            artifact_max_bytes_per_caller, 64ULL << 20),
        U64("ArtifactMinFreeBytes=2G: bytes", "[Artifacts]\nArtifactMinFreeBytes=2G\n",
            artifact_min_free.bytes, 2ULL << 30),
        INT("ArtifactMinFreeBytes=2G: no percentage", "[Artifacts]\nArtifactMinFreeBytes=2G\n",
            artifact_min_free.percent, 0),
        INT("ArtifactMinFreeBytes=10%: percentage", "[Artifacts]\nArtifactMinFreeBytes=10%\n",
            artifact_min_free.percent, 10),
        U64("ArtifactMinFreeBytes=10%: no bytes", "[Artifacts]\nArtifactMinFreeBytes=10%\n",
            artifact_min_free.bytes, 0),
        INT("ArtifactMinFreeBytes=0%", "[Artifacts]\nArtifactMinFreeBytes=0%\n", artifact_min_free.percent, 0),
        INT("ArtifactMinFreeBytes=100%", "[Artifacts]\nArtifactMinFreeBytes=100%\n", artifact_min_free.percent,
            100),
        INT("ArtifactMinFreeBytes=0 after a percentage", "[Artifacts]\nArtifactMinFreeBytes=7%\n"
            "ArtifactMinFreeBytes=0\n", artifact_min_free.percent, 0),
        /* [Callbacks] */
        STR("CallbackKeyFile", "[Callbacks]\nCallbackKeyFile=/etc/sandboxd/cb.key\n", callback_key_file,
            "/etc/sandboxd/cb.key"),
        U64("CallbackMaxAttempts=1 (minimum)", "[Callbacks]\nCallbackMaxAttempts=1\n", callback_max_attempts, 1),
        U64("CallbackMaxAttempts=100 (maximum)", "[Callbacks]\nCallbackMaxAttempts=100\n", callback_max_attempts, 100),
        U64("CallbackMaxAgeSec", "[Callbacks]\nCallbackMaxAgeSec=3600\n", callback_max_age_sec, 3600),
        U64("CallbackTimeoutSec", "[Callbacks]\nCallbackTimeoutSec=1\n", callback_timeout_sec, 1),
        U64("CallbackMaxPendingPerCaller=0 (callbacks refused)", "[Callbacks]\nCallbackMaxPendingPerCaller=0\n",
            callback_max_pending_per_caller, 0),
        U64("CallbackMaxPendingPerCaller", "[Callbacks]\nCallbackMaxPendingPerCaller=10000\n",
            callback_max_pending_per_caller, 10000),
        U64("CallbackBackoffBaseMS", "[Callbacks]\nCallbackBackoffBaseMS=10\n", callback_backoff_base_ms, 10),
        U64("CallbackBackoffMaxSec", "[Callbacks]\nCallbackBackoffMaxSec=86400\n", callback_backoff_max_sec, 86400),
        U64("CallbackMaxConcurrent", "[Callbacks]\nCallbackMaxConcurrent=1024\n", callback_max_concurrent, 1024),

        /* [Cluster] */
        STR("NodeName", "[Cluster]\nNodeName=node-1.example_A\n", node_name, "node-1.example_A"),
        STR("NodeName: 64 characters",
            "[Cluster]\nNodeName=n123456789012345678901234567890123456789012345678901234567890123\n", node_name,
            "n123456789012345678901234567890123456789012345678901234567890123"),
        STR("NodeName: a machine id", "[Cluster]\nNodeName=0123456789abcdef0123456789abcdef\n", node_name,
            "0123456789abcdef0123456789abcdef"),
        U64("NodeHeartbeatSec=1 (minimum)", "[Cluster]\nNodeHeartbeatSec=1\n", node_heartbeat_sec, 1),
        U64("NodeHeartbeatSec=60 (maximum)", "[Cluster]\nNodeHeartbeatSec=60\n", node_heartbeat_sec, 60),
        U64("NodeLeaseSec=3 (minimum)", "[Cluster]\nNodeLeaseSec=3\n", node_lease_sec, 3),
        U64("NodeLeaseSec=3600 (maximum)", "[Cluster]\nNodeLeaseSec=3600\n", node_lease_sec, 3600),

        /* Syntax around the assignment. */
        U64("spaces around '=' and the line", "[Daemon]\n   MaxConcurrent =  12  \n", max_concurrent, 12),
        U64("tabs", "\t[Daemon]\t\n\tMaxConcurrent\t=\t13\n", max_concurrent, 13),
        U64("CRLF line ends", "[Daemon]\r\nMaxConcurrent=14\r\n", max_concurrent, 14),
        U64("no newline at the end", "[Daemon]\nMaxConcurrent=15", max_concurrent, 15),
        U64("comments and blank lines", "# a comment\n; another\n\n   # indented\n[Daemon]\n\n#MaxConcurrent=1\n"
            "MaxConcurrent=17\n;MaxConcurrent=2\n", max_concurrent, 17),
        U64("later assignment overrides", "[Daemon]\nMaxConcurrent=4\nMaxConcurrent=6\n", max_concurrent, 6),
        U64("section reopened", "[Daemon]\nMaxConcurrent=4\n[Limits]\nDefaultTasks=8\n[Daemon]\nMaxConcurrent=5\n",
            max_concurrent, 5),
        U64("other sections untouched", "[Limits]\nDefaultTasks=8\n[Sandbox]\nLimitNOFILE=64\n", max_concurrent, 8),
        STR("value with '=' and spaces inside", "[Daemon]\nSocketGroup=a b=c\n", socket_group, "a b=c"),
        STR("Store=: a URI", "[Daemon]\nStore=postgresql://sandboxd@db.example/sandboxd\n", store,
            "postgresql://sandboxd@db.example/sandboxd"),
        STR("Store=: key=value pairs", "[Daemon]\nStore=service=sandboxd passfile=/etc/sandboxd/pgpass\n", store,
            "service=sandboxd passfile=/etc/sandboxd/pgpass"),
};

static void test_key_row(void **state) {
        const KeyRow *row = *state;
        _cleanup_(config_freep) Config *c = config_new();
        _cleanup_free_ char *error = NULL;
        const void *p;

        assert_non_null(c);
        p = (const uint8_t *) c + row->offset;
        assert_int_equal(config_parse_text(c, row->text, "x.conf", &error), 0);
        assert_null(error);

        switch (row->type) {
        case F_STR:
                assert_string_equal(*(char *const *) p, row->s);
                break;
        case F_U64:
                assert_int_equal(*(const uint64_t *) p, row->u);
                break;
        case F_CORES:
                assert_true(*(const double *) p == row->d);
                break;
        case F_INT:
                assert_int_equal(*(const int *) p, (int) row->u);
                break;
        case F_BOOL:
                assert_int_equal(*(const bool *) p, row->u != 0);
                break;
        }
}

/* ---- config_parse_text: errors name FILE:LINE ---- */

typedef struct ErrorRow {
        const char *name;
        const char *text;
        const char *error;
} ErrorRow;

static const ErrorRow error_rows[] = {
        /* PistonListen=: no key guards it, so loopback only, whatever ListenAllowNonLoopback= says. */
        { "PistonListen 0.0.0.0", "[Daemon]\nListenAllowNonLoopback=yes\nPistonListen=0.0.0.0:2000\n",
          "x.conf:3: PistonListen=0.0.0.0:2000 is not a loopback address: the Piston API takes no key, so it "
          "listens on 127.0.0.0/8 or [::1] only" },
        { "PistonListen [::]", "[Daemon]\nPistonListen=[::]:2000\n",
          "x.conf:2: PistonListen=[::]:2000 is not a loopback address: the Piston API takes no key, so it "
          "listens on 127.0.0.0/8 or [::1] only" },
        { "PistonListen a name", "[Daemon]\nPistonListen=localhost:2000\n",
          "x.conf:2: PistonListen= takes ADDRESS:PORT or [IPv6]:PORT with a literal address, got 'localhost:2000'" },
        { "PistonListen two addresses", "[Daemon]\nPistonListen=127.0.0.1:1 127.0.0.1:2\n",
          "x.conf:2: PistonListen= takes ADDRESS:PORT or [IPv6]:PORT with a literal address, got "
          "'127.0.0.1:1 127.0.0.1:2'" },
        { "ArtifactURLLifetimeSec=0", "[Artifacts]\nArtifactURLLifetimeSec=0\n",
          "x.conf:2: ArtifactURLLifetimeSec=0 is outside [1, 604800]" },
        { "ArtifactURLLifetimeSec too long", "[Artifacts]\nArtifactURLLifetimeSec=604801\n",
          "x.conf:2: ArtifactURLLifetimeSec=604801 is outside [1, 604800]" },
        { "ArtifactURLKeyFile relative", "[Artifacts]\nArtifactURLKeyFile=url.key\n",
          "x.conf:2: ArtifactURLKeyFile= must be an absolute path, got 'url.key'" },
        { "ArtifactsDirectory relative", "[Artifacts]\nArtifactsDirectory=artifacts\n",
          "x.conf:2: ArtifactsDirectory= must be an absolute path, got 'artifacts'" },
        { "ArtifactMaxFiles too many", "[Artifacts]\nArtifactMaxFiles=1000001\n",
          "x.conf:2: ArtifactMaxFiles=1000001 is outside [0, 1000000]" },
        { "ArtifactMaxFileBytes not a size", "[Artifacts]\nArtifactMaxFileBytes=lots\n",
          "x.conf:2: ArtifactMaxFileBytes= takes a size (e.g. 64K, 2M), got 'lots'" },
        { "ArtifactMaxTotalBytes over 1T", "[Artifacts]\nArtifactMaxTotalBytes=2T\n",
          "x.conf:2: ArtifactMaxTotalBytes=2T is outside [0, 1099511627776]" },
        { "ArtifactStoreMaxBytes over 1024T", "[Artifacts]\nArtifactStoreMaxBytes=1025T\n",
          "x.conf:2: ArtifactStoreMaxBytes=1025T is outside [0, 1125899906842624]" },
        { "ArtifactMaxBytesPerCaller not a size", "[Artifacts]\nArtifactMaxBytesPerCaller=-1\n",
          "x.conf:2: ArtifactMaxBytesPerCaller= takes a size (e.g. 64K, 2M), got '-1'" },
        { "ArtifactMinFreeBytes over 100%", "[Artifacts]\nArtifactMinFreeBytes=101%\n",
          "x.conf:2: ArtifactMinFreeBytes= takes a size (e.g. 512M) or a percentage from 0% to 100%, got '101%'" },
        { "ArtifactMinFreeBytes a fraction", "[Artifacts]\nArtifactMinFreeBytes=2.5%\n",
          "x.conf:2: ArtifactMinFreeBytes= takes a size (e.g. 512M) or a percentage from 0% to 100%, got '2.5%'" },
        { "ArtifactMinFreeBytes only '%'", "[Artifacts]\nArtifactMinFreeBytes=%\n",
          "x.conf:2: ArtifactMinFreeBytes= takes a size (e.g. 512M) or a percentage from 0% to 100%, got '%'" },
        { "ArtifactMinFreeBytes a word", "[Artifacts]\nArtifactMinFreeBytes=some\n",
          "x.conf:2: ArtifactMinFreeBytes= takes a size (e.g. 512M) or a percentage from 0% to 100%, got 'some'" },
        { "ArtifactMinFreeBytes over 1024T", "[Artifacts]\nArtifactMinFreeBytes=2048T\n",
          "x.conf:2: ArtifactMinFreeBytes=2048T is outside [0, 1125899906842624]" },
        { "artifact key in [Daemon]", "[Daemon]\nArtifactMaxFiles=1\n",
          "x.conf:2: unknown key 'ArtifactMaxFiles' in section [Daemon]" },
        { "Network MaxConnections=0", "[Network]\nMaxConnections=0\n",
          "x.conf:2: MaxConnections=0 is outside [1, 1024]" },
        { "Network MaxConnections too many", "[Network]\nMaxConnections=1025\n",
          "x.conf:2: MaxConnections=1025 is outside [1, 1024]" },
        { "ConnectTimeoutSec=0", "[Network]\nConnectTimeoutSec=0\n", "x.conf:2: ConnectTimeoutSec=0 is outside [1, 300]" },
        { "IdleTimeoutSec too long", "[Network]\nIdleTimeoutSec=3601\n", "x.conf:2: IdleTimeoutSec=3601 is outside [1, 3600]" },
        { "MaxLoggedRequests too many", "[Network]\nMaxLoggedRequests=10001\n",
          "x.conf:2: MaxLoggedRequests=10001 is outside [0, 10000]" },
        { "MaxTransferMB not a number", "[Network]\nMaxTransferMB=1G\n", "x.conf:2: MaxTransferMB= takes a whole number, got '1G'" },
        { "HostsFile relative", "[Network]\nHostsFile=hosts\n", "x.conf:2: HostsFile= must be an absolute path, got 'hosts'" },
        { "AllowDomains control character", "[Network]\nAllowDomains=a.example \x01b\n",
          "x.conf:2: AllowDomains= takes printable ASCII, got '\x01b'" },
        { "AllowDomains non-ASCII", "[Network]\nAllowDomains=\xc3\xa9.example\n",
          "x.conf:2: AllowDomains= takes printable ASCII, got '\xc3\xa9.example'" },
        { "network key in [Inputs]", "[Inputs]\nAllowDomains=pypi.org\n", "x.conf:2: unknown key 'AllowDomains' in section [Inputs]" },
        { "unknown key", "[Daemon]\n# comment\nFoo=1\n",
          "x.conf:3: unknown key 'Foo' in section [Daemon]" },
        { "key of another section", "[Limits]\n\nMaxConcurrent=4\n",
          "x.conf:3: unknown key 'MaxConcurrent' in section [Limits]" },
        { "key case matters", "[Daemon]\nmaxconcurrent=4\n",
          "x.conf:2: unknown key 'maxconcurrent' in section [Daemon]" },
        { "empty key", "[Daemon]\n=4\n", "x.conf:2: unknown key '' in section [Daemon]" },
        { "line count over CRLF and comments", "[Daemon]\r\n; c\r\n\r\n# c\r\nFoo=1\r\n",
          "x.conf:5: unknown key 'Foo' in section [Daemon]" },
        { "unknown section", "[Daemon]\nMaxConcurrent=4\n\n[Nope]\n", "x.conf:4: unknown section [Nope]" },
        { "section case matters", "[daemon]\n", "x.conf:1: unknown section [daemon]" },
        { "section with spaces", "[ Daemon ]\n", "x.conf:1: unknown section [ Daemon ]" },
        { "CallbackMaxAttempts=0", "[Callbacks]\nCallbackMaxAttempts=0\n",
          "x.conf:2: CallbackMaxAttempts=0 is outside [1, 100]" },
        { "CallbackTimeoutSec=301", "[Callbacks]\nCallbackTimeoutSec=301\n",
          "x.conf:2: CallbackTimeoutSec=301 is outside [1, 300]" },
        { "CallbackMaxConcurrent=0", "[Callbacks]\nCallbackMaxConcurrent=0\n",
          "x.conf:2: CallbackMaxConcurrent=0 is outside [1, 1024]" },
        { "CallbackKeyFile relative", "[Callbacks]\nCallbackKeyFile=cb.key\n",
          "x.conf:2: CallbackKeyFile= must be an absolute path, got 'cb.key'" },
        { "Callback key in [Daemon]", "[Daemon]\nCallbackMaxAttempts=3\n",
          "x.conf:2: unknown key 'CallbackMaxAttempts' in section [Daemon]" },
        { "unterminated section header", "\n[Daemon\n", "x.conf:2: invalid section header '[Daemon'" },
        { "empty section header", "[]\n", "x.conf:1: invalid section header '[]'" },
        { "assignment outside a section", "# top\n\nMaxConcurrent=4\n[Daemon]\n",
          "x.conf:3: assignment 'MaxConcurrent=' outside of a section" },
        { "no '='", "[Daemon]\nMaxConcurrent\n", "x.conf:2: expected KEY=VALUE, got 'MaxConcurrent'" },
        { "bad number", "[Daemon]\nMaxConcurrent=four\n",
          "x.conf:2: MaxConcurrent= takes a whole number, got 'four'" },
        { "negative number", "[Daemon]\nMaxQueued=-1\n", "x.conf:2: MaxQueued= takes a whole number, got '-1'" },
        { "fraction for a whole number", "[Daemon]\nKeepFinished=1.5\n",
          "x.conf:2: KeepFinished= takes a whole number, got '1.5'" },
        { "hex number", "[Daemon]\nMaxConnections=0x10\n",
          "x.conf:2: MaxConnections= takes a whole number, got '0x10'" },
        { "size suffix on a whole number", "[Daemon]\nMaxQueued=1K\n",
          "x.conf:2: MaxQueued= takes a whole number, got '1K'" },
        { "number overflows", "[Daemon]\nMaxQueued=18446744073709551616\n",
          "x.conf:2: MaxQueued= takes a whole number, got '18446744073709551616'" },
        { "empty number", "[Daemon]\nMaxQueued=\n", "x.conf:2: MaxQueued= takes a whole number, got ''" },
        { "below minimum", "[Daemon]\nMaxConcurrent=0\n", "x.conf:2: MaxConcurrent=0 is outside [1, 4096]" },
        { "RequestHeaderTimeoutSec=0", "[Daemon]\nRequestHeaderTimeoutSec=0\n",
          "x.conf:2: RequestHeaderTimeoutSec=0 is outside [1, 3600]" },
        { "MaxConnectionsPerUser=0", "[Daemon]\nMaxConnectionsPerUser=0\n",
          "x.conf:2: MaxConnectionsPerUser=0 is outside [1, 65536]" },
        { "MaxPendingCallsPerConnection=0", "[Bus]\nMaxPendingCallsPerConnection=0\n",
          "x.conf:2: MaxPendingCallsPerConnection=0 is outside [1, 4096]" },
        { "MaxPendingCallsPerConnection over BUS_CALLS_MAX", "[Bus]\nMaxPendingCallsPerConnection=4097\n",
          "x.conf:2: MaxPendingCallsPerConnection=4097 is outside [1, 4096]" },
        { "MaxInteractiveAuthorizations=0", "[Bus]\nMaxInteractiveAuthorizations=0\n",
          "x.conf:2: MaxInteractiveAuthorizations=0 is outside [1, 32]" },
        { "MaxInteractiveAuthorizations over the bus daemon's budget", "[Bus]\nMaxInteractiveAuthorizations=33\n",
          "x.conf:2: MaxInteractiveAuthorizations=33 is outside [1, 32]" },
        { "MaxInteractiveAuthorizationsPerUser=0", "[Bus]\nMaxInteractiveAuthorizationsPerUser=0\n",
          "x.conf:2: MaxInteractiveAuthorizationsPerUser=0 is outside [1, 32]" },
        { "InteractiveAuthorizationTimeoutSec=0", "[Bus]\nInteractiveAuthorizationTimeoutSec=0\n",
          "x.conf:2: InteractiveAuthorizationTimeoutSec=0 is outside [1, 3600]" },
        { "InteractiveAuthorizationTimeoutSec too long", "[Bus]\nInteractiveAuthorizationTimeoutSec=3601\n",
          "x.conf:2: InteractiveAuthorizationTimeoutSec=3601 is outside [1, 3600]" },
        { "MaxPendingCallsPerConnection in [Daemon]", "[Daemon]\nMaxPendingCallsPerConnection=1\n",
          "x.conf:2: unknown key 'MaxPendingCallsPerConnection' in section [Daemon]" },
        { "above maximum", "[Daemon]\nMaxConcurrent=4097\n", "x.conf:2: MaxConcurrent=4097 is outside [1, 4096]" },
        { "SessionIdleSec=0", "[Daemon]\nSessionIdleSec=0\n", "x.conf:2: SessionIdleSec=0 is outside [1, 2592000]" },
        { "MaxSessionsDiskMB=0", "[Daemon]\nMaxSessionsDiskMB=0\n",
          "x.conf:2: MaxSessionsDiskMB=0 is outside [1, 1099511627776]" },
        { "MaxSessionsDiskMBPerCaller=0", "[Daemon]\nMaxSessionsDiskMBPerCaller=0\n",
          "x.conf:2: MaxSessionsDiskMBPerCaller=0 is outside [1, 1099511627776]" },
        { "MaxRunningPerCaller=0", "[Daemon]\nMaxRunningPerCaller=0\n",
          "x.conf:2: MaxRunningPerCaller=0 is outside [1, 4096]" },
        { "MaxQueuedPerCaller too many", "[Daemon]\nMaxQueuedPerCaller=1000001\n",
          "x.conf:2: MaxQueuedPerCaller=1000001 is outside [0, 1000000]" },
        { "MaxStoredBytesPerCaller too small", "[Daemon]\nMaxStoredBytesPerCaller=1K\n",
          "x.conf:2: MaxStoredBytesPerCaller=1K is outside [65536, 1125899906842624]" },
        { "MaxStoredBytesPerCaller not a size", "[Daemon]\nMaxStoredBytesPerCaller=much\n",
          "x.conf:2: MaxStoredBytesPerCaller= takes a size (e.g. 64K, 2M), got 'much'" },
        { "CallbackMaxPendingPerCaller in [Daemon]", "[Daemon]\nCallbackMaxPendingPerCaller=1\n",
          "x.conf:2: unknown key 'CallbackMaxPendingPerCaller' in section [Daemon]" },
        { "DefaultMemoryMB below minimum", "[Limits]\nDefaultMemoryMB=15\n",
          "x.conf:2: DefaultMemoryMB=15 is outside [16, 1048576]" },
        { "DefaultTasks below minimum", "[Limits]\nDefaultTasks=3\n",
          "x.conf:2: DefaultTasks=3 is outside [4, 1048576]" },
        { "MaxTimeoutMS above maximum", "[Limits]\nMaxTimeoutMS=86400001\n",
          "x.conf:2: MaxTimeoutMS=86400001 is outside [100, 86400000]" },
        { "KillGraceMS above maximum", "[Sandbox]\nKillGraceMS=60001\n",
          "x.conf:2: KillGraceMS=60001 is outside [0, 60000]" },
        { "size below minimum", "[Daemon]\nMaxRequestBytes=1023\n",
          "x.conf:2: MaxRequestBytes=1023 is outside [1024, 1073741824]" },
        { "size above maximum", "[Daemon]\nMaxRequestBytes=2G\n",
          "x.conf:2: MaxRequestBytes=2G is outside [1024, 1073741824]" },
        { "MaxInputFiles above maximum", "[Inputs]\nMaxInputFiles=257\n",
          "x.conf:2: MaxInputFiles=257 is outside [0, 256]" },
        { "InputAllowInternalAddresses not a boolean", "[Inputs]\nInputAllowInternalAddresses=maybe\n",
          "x.conf:2: InputAllowInternalAddresses= takes yes or no, got 'maybe'" },
        { "CallbackAllowInternalAddresses not a boolean", "[Callbacks]\nCallbackAllowInternalAddresses=maybe\n",
          "x.conf:2: CallbackAllowInternalAddresses= takes yes or no, got 'maybe'" },
        { "CallbackAllowInternalAddresses in [Inputs]", "[Inputs]\nCallbackAllowInternalAddresses=yes\n",
          "x.conf:2: unknown key 'CallbackAllowInternalAddresses' in section [Inputs]" },
        { "InputTimeoutSec zero", "[Inputs]\nInputTimeoutSec=0\n", "x.conf:2: InputTimeoutSec=0 is outside [1, 3600]" },
        { "InputConnectTimeoutSec above maximum", "[Inputs]\nInputConnectTimeoutSec=301\n",
          "x.conf:2: InputConnectTimeoutSec=301 is outside [1, 300]" },
        { "MaxInputFileBytes zero", "[Inputs]\nMaxInputFileBytes=0\n",
          "x.conf:2: MaxInputFileBytes=0 is outside [1, 68719476736]" },
        { "input key in the wrong section", "[Daemon]\nMaxInputFiles=3\n",
          "x.conf:2: unknown key 'MaxInputFiles' in section [Daemon]" },
        { "size above maximum by one", "[Sandbox]\nOutputHeadBytes=16777217\n",
          "x.conf:2: OutputHeadBytes=16777217 is outside [0, 16777216]" },
        { "fractional size", "[Daemon]\nMaxCodeBytes=1.5M\n",
          "x.conf:2: MaxCodeBytes= takes a size (e.g. 64K, 2M), got '1.5M'" },
        { "size garbage", "[Sandbox]\nOutputTailBytes=lots\n",
          "x.conf:2: OutputTailBytes= takes a size (e.g. 64K, 2M), got 'lots'" },
        { "size lowercase suffix", "[Sandbox]\nOutputTailBytes=64k\n",
          "x.conf:2: OutputTailBytes= takes a size (e.g. 64K, 2M), got '64k'" },
        { "cores zero", "[Limits]\nDefaultCPUCores=0\n",
          "x.conf:2: DefaultCPUCores= takes a number of cores in [0.01, 4096], got '0'" },
        { "cores below 0.01", "[Limits]\nDefaultCPUCores=0.005\n",
          "x.conf:2: DefaultCPUCores= takes a number of cores in [0.01, 4096], got '0.005'" },
        { "cores negative", "[Limits]\nMaxCPUCores=-1\n",
          "x.conf:2: MaxCPUCores= takes a number of cores in [0.01, 4096], got '-1'" },
        { "cores too many", "[Limits]\nMaxCPUCores=4097\n",
          "x.conf:2: MaxCPUCores= takes a number of cores in [0.01, 4096], got '4097'" },
        { "cores nan", "[Limits]\nMaxCPUCores=nan\n",
          "x.conf:2: MaxCPUCores= takes a number of cores in [0.01, 4096], got 'nan'" },
        { "cores inf", "[Limits]\nMaxCPUCores=inf\n",
          "x.conf:2: MaxCPUCores= takes a number of cores in [0.01, 4096], got 'inf'" },
        { "cores garbage", "[Limits]\nDefaultCPUCores=1.5x\n",
          "x.conf:2: DefaultCPUCores= takes a number of cores in [0.01, 4096], got '1.5x'" },
        { "cores empty", "[Limits]\nDefaultCPUCores=\n",
          "x.conf:2: DefaultCPUCores= takes a number of cores in [0.01, 4096], got ''" },
        { "relative path", "[Daemon]\nAPISocket=run/api.sock\n",
          "x.conf:2: APISocket= must be an absolute path, got 'run/api.sock'" },
        { "relative Helper", "[Sandbox]\nHelper=sandbox-exec\n",
          "x.conf:2: Helper= must be an absolute path, got 'sandbox-exec'" },
        { "empty path", "[Daemon]\nStateDirectory=\n",
          "x.conf:2: StateDirectory= must be an absolute path, got ''" },
        { "empty string", "[Daemon]\nSocketGroup=\n", "x.conf:2: SocketGroup= must not be empty" },
        { "empty string after spaces", "[Daemon]\nSocketGroup =   \n", "x.conf:2: SocketGroup= must not be empty" },
        { "bad log level", "[Daemon]\nLogLevel=verbose\n",
          "x.conf:2: LogLevel= takes a syslog level name (err, info, debug...), got 'verbose'" },
        { "Strong: not a policy", "[Isolation]\nStrong=yes\n",
          "x.conf:2: Strong= takes auto, always or never, got 'yes'" },
        { "StrongRules: not a class", "[Isolation]\nStrongRules=ffi process\n",
          "x.conf:2: StrongRules= takes processes, ffi, memory, dynamic, asm or syscall, got 'process'" },
        { "StrongRules: a long word", "[Isolation]\nStrongRules=processesprocessesprocessesprocesses\n",
          "x.conf:2: StrongRules= takes processes, ffi, memory, dynamic, asm or syscall, got "
          "'processesprocessesprocessesprocesses'" },
        { "StrongTimeoutSec over a day", "[Isolation]\nStrongTimeoutSec=86401\n",
          "x.conf:2: StrongTimeoutSec=86401 is outside [0, 86400]" },
        { "StrongSize over 64", "[Pool]\nStrongSize=65\n", "x.conf:2: StrongSize=65 is outside [0, 64]" },
        { "Runsc: relative", "[Isolation]\nRunsc=runsc\n", "x.conf:2: Runsc= must be an absolute path, got 'runsc'" },
        { "RunscPlatform: unknown", "[Isolation]\nRunscPlatform=kvm2\n",
          "x.conf:2: RunscPlatform= takes ptrace, systrap or kvm, got 'kvm2'" },
        { "numeric log level", "[Daemon]\nLogLevel=7\n",
          "x.conf:2: LogLevel= takes a syslog level name (err, info, debug...), got '7'" },
        { "Store: neither sqlite nor a connection string", "[Daemon]\nStore=mysql\n",
          "x.conf:2: Store= takes sqlite or a PostgreSQL connection string (postgresql://..., or key=value pairs "
          "such as service=sandboxd)" },
        { "NodeName: a space", "[Cluster]\nNodeName=node 1\n",
          "x.conf:2: NodeName= takes 1 to 64 letters, digits, '_', '.' and '-', got 'node 1'" },
        { "NodeName: a slash", "[Cluster]\nNodeName=a/b\n",
          "x.conf:2: NodeName= takes 1 to 64 letters, digits, '_', '.' and '-', got 'a/b'" },
        { "NodeName: not ASCII", "[Cluster]\nNodeName=n\u00f6de\n",
          "x.conf:2: NodeName= takes 1 to 64 letters, digits, '_', '.' and '-', got 'n\u00f6de'" },
        { "NodeName: 65 characters",
          "[Cluster]\nNodeName=n1234567890123456789012345678901234567890123456789012345678901234\n",
          "x.conf:2: NodeName= takes 1 to 64 letters, digits, '_', '.' and '-', got "
          "'n1234567890123456789012345678901234567890123456789012345678901234'" },
        { "NodeHeartbeatSec=0", "[Cluster]\nNodeHeartbeatSec=0\n", "x.conf:2: NodeHeartbeatSec=0 is outside [1, 60]" },
        { "NodeHeartbeatSec=61", "[Cluster]\nNodeHeartbeatSec=61\n",
          "x.conf:2: NodeHeartbeatSec=61 is outside [1, 60]" },
        { "NodeHeartbeatSec: not a number", "[Cluster]\nNodeHeartbeatSec=5s\n",
          "x.conf:2: NodeHeartbeatSec= takes a whole number, got '5s'" },
        { "NodeLeaseSec=2", "[Cluster]\nNodeLeaseSec=2\n", "x.conf:2: NodeLeaseSec=2 is outside [3, 3600]" },
        { "NodeLeaseSec=3601", "[Cluster]\nNodeLeaseSec=3601\n", "x.conf:2: NodeLeaseSec=3601 is outside [3, 3600]" },
        { "Cluster: unknown key", "[Cluster]\nNodes=3\n", "x.conf:2: unknown key 'Nodes' in section [Cluster]" },
        { "first error wins", "[Daemon]\nFoo=1\nBar=2\n", "x.conf:2: unknown key 'Foo' in section [Daemon]" },
        { "error after valid lines", "[Daemon]\nMaxConcurrent=2\n[Limits]\nDefaultTasks=8\nDefaultTasks=x\n",
          "x.conf:5: DefaultTasks= takes a whole number, got 'x'" },
};

static void test_error_row(void **state) {
        const ErrorRow *row = *state;
        _cleanup_(config_freep) Config *c = config_new();
        _cleanup_free_ char *error = NULL;

        assert_non_null(c);
        assert_int_equal(config_parse_text(c, row->text, "x.conf", &error), -EINVAL);
        assert_non_null(error);
        assert_string_equal(error, row->error);

        /* Without a place for the message it fails the same way. */
        assert_int_equal(config_parse_text(c, row->text, "x.conf", NULL), -EINVAL);
}

static void test_parse_misc(_unused_ void **state) {
        _cleanup_(config_freep) Config *c = config_new();
        _cleanup_free_ char *error = NULL;

        assert_non_null(c);

        /* Nothing at all is fine and changes nothing. */
        assert_int_equal(config_parse_text(c, "", "x.conf", &error), 0);
        assert_int_equal(config_parse_text(c, "\n\n# only comments\n;\n", "x.conf", &error), 0);
        assert_int_equal(config_parse_text(c, "[Daemon]\n[Limits]\n[Sandbox]\n", "x.conf", &error), 0);
        assert_null(error);
        assert_int_equal(c->max_concurrent, 8);

        /* A second text applied to the same Config overrides the first. */
        assert_int_equal(config_parse_text(c, "[Daemon]\nMaxConcurrent=3\nSocketGroup=a\n", "a.conf", &error), 0);
        assert_int_equal(config_parse_text(c, "[Daemon]\nMaxConcurrent=5\n", "b.conf", &error), 0);
        assert_int_equal(c->max_concurrent, 5);
        assert_string_equal(c->socket_group, "a");

        /* The file name is used as given. */
        assert_int_equal(config_parse_text(c, "[Oops]\n", "/etc/sandboxd/sandboxd.conf.d/50-x.conf", &error),
                         -EINVAL);
        assert_string_equal(error, "/etc/sandboxd/sandboxd.conf.d/50-x.conf:1: unknown section [Oops]");

        /* A later error replaces an earlier message rather than leaking it. */
        assert_int_equal(config_parse_text(c, "\n[Oops]\n", "y.conf", &error), -EINVAL);
        assert_string_equal(error, "y.conf:2: unknown section [Oops]");
}

/* ---- config_load ---- */

static int rm_one(const char *path, _unused_ const struct stat *st, int type, _unused_ struct FTW *ftw) {
        return type == FTW_DP ? rmdir(path) : unlink(path);
}

static void rm_rf(const char *path) {
        (void) nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static char *make_tmpdir(void) {
        char *d = NULL;

        assert_true(asprintf(&d, "%s/test-conf.XXXXXX", getenv("TMPDIR") ?: "/tmp") > 0);
        assert_non_null(mkdtemp(d));
        return d;
}

static void write_file(const char *dir, const char *name, const char *text) {
        _cleanup_free_ char *p = NULL;
        _cleanup_close_ int fd = -EBADF;

        assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, text, strlen(text)), 0);
}

static void make_dropin_dir(const char *dir) {
        _cleanup_free_ char *p = NULL;

        assert_true(asprintf(&p, "%s/sandboxd.conf.d", dir) > 0);
        assert_int_equal(mkdir(p, 0755), 0);
}

static void test_load_empty_dir(_unused_ void **state) {
        _cleanup_free_ char *dir = make_tmpdir(), *error = NULL;
        _cleanup_(config_freep) Config *c = config_new();

        /* Neither sandboxd.conf nor sandboxd.conf.d: the defaults. */
        assert_int_equal(config_load(c, dir, &error), 0);
        assert_null(error);
        assert_int_equal(c->max_concurrent, 8);
        assert_int_equal(c->defaults.timeout_ms, 30000);
        rm_rf(dir);
}

static void test_load_order(_unused_ void **state) {
        _cleanup_free_ char *dir = make_tmpdir(), *error = NULL;
        _cleanup_(config_freep) Config *c = config_new();

        write_file(dir, "sandboxd.conf",
                   "[Daemon]\nMaxConcurrent=2\nKeepFinished=5\n[Limits]\nDefaultTasks=64\n");
        make_dropin_dir(dir);
        /* Created out of order: readdir() order must not matter. */
        write_file(dir, "sandboxd.conf.d/20-b.conf", "[Daemon]\nMaxConcurrent=4\n");
        write_file(dir, "sandboxd.conf.d/10-a.conf", "[Daemon]\nMaxConcurrent=3\nKeepFinished=10\nMaxQueued=7\n");
        write_file(dir, "sandboxd.conf.d/05-z.conf", "[Daemon]\nMaxQueued=6\nKeepFinished=9\n");
        /* Not ending in .conf, or hidden: ignored, even though they would not parse. */
        write_file(dir, "sandboxd.conf.d/30-c.conf.bak", "garbage\n");
        write_file(dir, "sandboxd.conf.d/30-c.conf~", "garbage\n");
        write_file(dir, "sandboxd.conf.d/README", "garbage\n");
        write_file(dir, "sandboxd.conf.d/40.CONF", "garbage\n");
        write_file(dir, "sandboxd.conf.d/.hidden.conf", "garbage\n");
        write_file(dir, "sandboxd.conf.d/conf", "garbage\n");

        assert_int_equal(config_load(c, dir, &error), 0);
        assert_null(error);
        assert_int_equal(c->max_concurrent, 4);     /* main 2, 10-a 3, 20-b 4 */
        assert_int_equal(c->keep_finished, 10);     /* main 5, 05-z 9, 10-a 10 */
        assert_int_equal(c->max_queued, 7);         /* 05-z 6, 10-a 7 */
        assert_int_equal(c->defaults.tasks, 64);    /* main only */
        assert_int_equal(c->max_connections, 256);  /* nobody */
        rm_rf(dir);
}

static void test_load_dropins_without_main(_unused_ void **state) {
        _cleanup_free_ char *dir = make_tmpdir(), *error = NULL;
        _cleanup_(config_freep) Config *c = config_new();

        make_dropin_dir(dir);
        write_file(dir, "sandboxd.conf.d/10-a.conf", "[Sandbox]\nLimitNOFILE=99\n");
        assert_int_equal(config_load(c, dir, &error), 0);
        assert_null(error);
        assert_int_equal(c->nofile, 99);
        rm_rf(dir);
}

static void test_load_dropin_error(_unused_ void **state) {
        _cleanup_free_ char *dir = make_tmpdir(), *error = NULL, *expect = NULL;
        _cleanup_(config_freep) Config *c = config_new();

        write_file(dir, "sandboxd.conf", "[Daemon]\nMaxConcurrent=2\n");
        make_dropin_dir(dir);
        write_file(dir, "sandboxd.conf.d/10-a.conf", "[Daemon]\nMaxConcurrent=3\n");
        write_file(dir, "sandboxd.conf.d/20-b.conf", "# b\n[Daemon]\n\nBogus=1\n");
        write_file(dir, "sandboxd.conf.d/30-c.conf", "[Daemon]\nAlsoBogus=1\n");

        assert_int_equal(config_load(c, dir, &error), -EINVAL);
        assert_true(asprintf(&expect, "%s/sandboxd.conf.d/20-b.conf:4: unknown key 'Bogus' in section [Daemon]",
                             dir) > 0);
        assert_non_null(error);
        assert_string_equal(error, expect);
        rm_rf(dir);
}

static void test_load_main_error(_unused_ void **state) {
        _cleanup_free_ char *dir = make_tmpdir(), *error = NULL, *expect = NULL;
        _cleanup_(config_freep) Config *c = config_new();

        write_file(dir, "sandboxd.conf", "[Daemon]\nMaxConcurrent=2\n[Limits]\nDefaultMemoryMB=1\n");
        make_dropin_dir(dir);
        write_file(dir, "sandboxd.conf.d/10-a.conf", "[Daemon]\nMaxConcurrent=3\n");

        assert_int_equal(config_load(c, dir, &error), -EINVAL);
        assert_true(asprintf(&expect, "%s/sandboxd.conf:4: DefaultMemoryMB=1 is outside [16, 1048576]", dir) > 0);
        assert_string_equal(error, expect);
        rm_rf(dir);
}

static void test_load_validates_after_all_files(_unused_ void **state) {
        _cleanup_free_ char *dir = make_tmpdir(), *error = NULL;
        _cleanup_(config_freep) Config *c = config_new(), *c2 = config_new();

        /* The default goes above the built-in ceiling in one file and the ceiling is raised in a
         * later one: only the end result counts. */
        make_dropin_dir(dir);
        write_file(dir, "sandboxd.conf.d/10-a.conf", "[Limits]\nDefaultTimeoutMS=700000\n");
        write_file(dir, "sandboxd.conf.d/20-b.conf", "[Limits]\nMaxTimeoutMS=900000\n");
        assert_int_equal(config_load(c, dir, &error), 0);
        assert_null(error);
        assert_int_equal(c->defaults.timeout_ms, 700000);
        assert_int_equal(c->ceilings.timeout_ms, 900000);

        /* Without the second file: refused by validation. */
        write_file(dir, "sandboxd.conf.d/20-b.conf", "# nothing\n");
        assert_int_equal(config_load(c2, dir, &error), -EINVAL);
        assert_string_equal(error, "DefaultTimeoutMS=700000 exceeds MaxTimeoutMS=600000");
        rm_rf(dir);
}

/* What sandboxd --check-config prints: the file and line of the Listen= in force, whichever file
 * allows (or does not allow) other addresses. */
static void test_load_listen_loopback(_unused_ void **state) {
        _cleanup_free_ char *dir = make_tmpdir(), *error = NULL, *expect = NULL;
        _cleanup_(config_freep) Config *c = config_new(), *c2 = config_new();

        make_dropin_dir(dir);
        write_file(dir, "sandboxd.conf", "[Daemon]\nMaxConcurrent=4\n");
        write_file(dir, "sandboxd.conf.d/50-tcp.conf", "# remote clients\n[Daemon]\nListen=0.0.0.0:8080\n");
        assert_int_equal(config_load(c, dir, &error), -EINVAL);
        assert_true(asprintf(&expect, "%s/sandboxd.conf.d/50-tcp.conf:3: Listen=0.0.0.0:8080 is not a loopback "
                             "address", dir) > 0);
        if (!startswith(error, expect))
                fail_msg("error '%s' does not start with '%s'", error, expect);
        assert_non_null(strstr(error, "ListenAllowNonLoopback=yes"));

        write_file(dir, "sandboxd.conf.d/60-allow.conf", "[Daemon]\nListenAllowNonLoopback=yes\n");
        assert_int_equal(config_load(c2, dir, &error), 0);
        assert_string_equal(c2->listen[0], "0.0.0.0:8080");
        assert_true(c2->listen_allow_non_loopback);
        rm_rf(dir);
}

static void test_load_unreadable(_unused_ void **state) {
        _cleanup_free_ char *dir = make_tmpdir(), *error = NULL, *p = NULL, *expect = NULL;
        _cleanup_(config_freep) Config *c = config_new();

        /* A directory where the main file should be is an error, not "missing". */
        assert_true(asprintf(&p, "%s/sandboxd.conf", dir) > 0);
        assert_int_equal(mkdir(p, 0755), 0);
        assert_int_equal(config_load(c, dir, &error), -EBADFD);
        assert_non_null(error);
        assert_true(asprintf(&expect, "%s/sandboxd.conf: cannot read: ", dir) > 0);
        assert_non_null(startswith(error, expect));
        rm_rf(dir);
}

/* ---- config_validate ---- */

typedef struct ValidateRow {
        const char *name;
        const char *text;
        const char *error;       /* NULL: valid */
} ValidateRow;

static const ValidateRow validate_rows[] = {
        { "timeout above ceiling", "[Limits]\nDefaultTimeoutMS=600001\n",
          "DefaultTimeoutMS=600001 exceeds MaxTimeoutMS=600000" },
        { "memory above ceiling", "[Limits]\nMaxMemoryMB=256\n", "DefaultMemoryMB=512 exceeds MaxMemoryMB=256" },
        { "cores above ceiling", "[Limits]\nDefaultCPUCores=3\n", "DefaultCPUCores=3 exceeds MaxCPUCores=2" },
        { "fractional cores above ceiling", "[Limits]\nDefaultCPUCores=0.75\nMaxCPUCores=0.5\n",
          "DefaultCPUCores=0.75 exceeds MaxCPUCores=0.5" },
        { "disk above ceiling", "[Limits]\nDefaultDiskMB=8193\n", "DefaultDiskMB=8193 exceeds MaxDiskMB=8192" },
        { "tasks above ceiling", "[Limits]\nMaxTasks=64\n", "DefaultTasks=128 exceeds MaxTasks=64" },
        { "input file cap above the total", "[Inputs]\nMaxInputFileBytes=300M\n",
          "MaxInputFileBytes=314572800 exceeds MaxInputTotalBytes=268435456" },
        { "input file cap equal to the total", "[Inputs]\nMaxInputFileBytes=256M\n", NULL },
        { "inline cap does not fit the body", "[Inputs]\nMaxInlineInputBytes=2M\n",
          "MaxInlineInputBytes=2097152 does not fit in MaxRequestBytes=2097152 once base64-encoded" },
        { "inline cap fits a larger body", "[Daemon]\nMaxRequestBytes=4M\n[Inputs]\nMaxInlineInputBytes=2M\n", NULL },
        { "all equal to the ceilings", "[Limits]\nDefaultTimeoutMS=600000\nDefaultMemoryMB=8192\n"
          "DefaultCPUCores=2\nDefaultDiskMB=8192\nDefaultTasks=1024\n", NULL },
        { "callback base above the max step", "[Callbacks]\nCallbackBackoffBaseMS=2000\nCallbackBackoffMaxSec=1\n",
          "CallbackBackoffBaseMS=2000 exceeds CallbackBackoffMaxSec=1" },
        { "callback base equal to the max step", "[Callbacks]\nCallbackBackoffBaseMS=1000\nCallbackBackoffMaxSec=1\n",
          NULL },
        { "all ceilings lowered to the defaults", "[Limits]\nMaxTimeoutMS=30000\nMaxMemoryMB=512\n"
          "MaxCPUCores=1\nMaxDiskMB=1024\nMaxTasks=128\n", NULL },
        /* Listen=: loopback only, unless ListenAllowNonLoopback=yes (in any file, before or after). */
        { "Listen: 127.0.0.1", "[Daemon]\nListen=127.0.0.1:8080\n", NULL },
        { "Listen: 127.1.2.3 (all of 127/8)", "[Daemon]\nListen=127.1.2.3:8080\n", NULL },
        { "Listen: [::1]", "[Daemon]\nListen=[::1]:8080\n", NULL },
        { "Listen: both loopbacks", "[Daemon]\nListen=127.0.0.1:8080 [::1]:8080\n", NULL },
        { "Listen: 0.0.0.0", "[Daemon]\n\nListen=0.0.0.0:8080\n",
          "x.conf:3: Listen=0.0.0.0:8080 is not a loopback address: the API on TCP is plain HTTP and its bearer "
          "keys would cross the network in clear text. Listen on 127.0.0.1 or [::1] (with a TLS-terminating proxy "
          "in front for remote clients), or set ListenAllowNonLoopback=yes in [Daemon]" },
        { "Listen: [::]", "[Daemon]\nListen=[::]:8080\n",
          "x.conf:2: Listen=[::]:8080 is not a loopback address: the API on TCP is plain HTTP and its bearer "
          "keys would cross the network in clear text. Listen on 127.0.0.1 or [::1] (with a TLS-terminating proxy "
          "in front for remote clients), or set ListenAllowNonLoopback=yes in [Daemon]" },
        { "Listen: a LAN address after a loopback one", "[Daemon]\nListen=127.0.0.1:8080 192.168.1.5:8080\n",
          "x.conf:2: Listen=192.168.1.5:8080 is not a loopback address: the API on TCP is plain HTTP and its bearer "
          "keys would cross the network in clear text. Listen on 127.0.0.1 or [::1] (with a TLS-terminating proxy "
          "in front for remote clients), or set ListenAllowNonLoopback=yes in [Daemon]" },
        { "Listen: 128.0.0.1", "[Daemon]\nListen=128.0.0.1:80\n",
          "x.conf:2: Listen=128.0.0.1:80 is not a loopback address: the API on TCP is plain HTTP and its bearer "
          "keys would cross the network in clear text. Listen on 127.0.0.1 or [::1] (with a TLS-terminating proxy "
          "in front for remote clients), or set ListenAllowNonLoopback=yes in [Daemon]" },
        { "Listen: IPv4-mapped loopback is not ::1", "[Daemon]\nListen=[::ffff:127.0.0.1]:80\n",
          "x.conf:2: Listen=[::ffff:127.0.0.1]:80 is not a loopback address: the API on TCP is plain HTTP and its "
          "bearer keys would cross the network in clear text. Listen on 127.0.0.1 or [::1] (with a TLS-terminating "
          "proxy in front for remote clients), or set ListenAllowNonLoopback=yes in [Daemon]" },
        { "Listen: the last assignment is the one named",
          "[Daemon]\nListen=0.0.0.0:1\n[Limits]\n[Daemon]\nListen=[2001:db8::1]:8080\n",
          "x.conf:5: Listen=[2001:db8::1]:8080 is not a loopback address: the API on TCP is plain HTTP and its "
          "bearer keys would cross the network in clear text. Listen on 127.0.0.1 or [::1] (with a TLS-terminating "
          "proxy in front for remote clients), or set ListenAllowNonLoopback=yes in [Daemon]" },
        { "Listen: 0.0.0.0 turned off again", "[Daemon]\nListen=0.0.0.0:8080\nListen=\n", NULL },
        { "PistonListen: loopback", "[Daemon]\nPistonListen=127.0.0.1:2000\nPistonOwner=bots\n", NULL },
        { "PistonListen: [::1]", "[Daemon]\nPistonListen=[::1]:2000\n", NULL },
        { "PistonListen: turned off again", "[Daemon]\nPistonListen=127.0.0.1:2000\nPistonListen=\n", NULL },
        { "PistonListen: also in Listen=", "[Daemon]\nListen=127.0.0.1:8080 127.0.0.1:2000\nPistonListen=127.0.0.1:2000\n",
          "PistonListen=127.0.0.1:2000 in [Daemon] is also in Listen=: the Piston listener needs an address of its own" },
        { "PistonOwner: not a key name", "[Daemon]\nPistonOwner=bad/name\n",
          "PistonOwner=bad/name in [Daemon] is not a valid API key name ([A-Za-z0-9_.-], 1 to 64 characters)" },
        { "NodeLeaseSec: three heartbeats", "[Cluster]\nNodeHeartbeatSec=1\nNodeLeaseSec=3\n", NULL },
        { "NodeLeaseSec: two heartbeats", "[Cluster]\nNodeHeartbeatSec=10\nNodeLeaseSec=20\n",
          "NodeLeaseSec=20 in [Cluster] must be more than twice NodeHeartbeatSec=10: one late heartbeat would end "
          "the lease" },
        { "NodeLeaseSec: the default, with a long heartbeat", "[Cluster]\nNodeHeartbeatSec=15\n",
          "NodeLeaseSec=30 in [Cluster] must be more than twice NodeHeartbeatSec=15: one late heartbeat would end "
          "the lease" },
        { "NodeName: empty is the default again", "[Cluster]\nNodeName=a\nNodeName=\n", NULL },
        { "Listen: 0.0.0.0 allowed", "[Daemon]\nListen=0.0.0.0:8080\nListenAllowNonLoopback=yes\n", NULL },
        { "Listen: allowed before", "[Daemon]\nListenAllowNonLoopback=true\nListen=[::]:8080 0.0.0.0:8080\n", NULL },
        { "Listen: allowed, then not", "[Daemon]\nListenAllowNonLoopback=yes\nListen=10.0.0.1:8080\n"
          "ListenAllowNonLoopback=no\n",
          "x.conf:3: Listen=10.0.0.1:8080 is not a loopback address: the API on TCP is plain HTTP and its bearer "
          "keys would cross the network in clear text. Listen on 127.0.0.1 or [::1] (with a TLS-terminating proxy "
          "in front for remote clients), or set ListenAllowNonLoopback=yes in [Daemon]" },
};

static void test_validate_row(void **state) {
        const ValidateRow *row = *state;
        _cleanup_(config_freep) Config *c = config_new();
        _cleanup_free_ char *error = NULL;

        assert_int_equal(config_parse_text(c, row->text, "x.conf", &error), 0);
        if (!row->error) {
                assert_int_equal(config_validate(c, &error), 0);
                assert_null(error);
                return;
        }
        assert_int_equal(config_validate(c, &error), -EINVAL);
        assert_non_null(error);
        assert_string_equal(error, row->error);
        assert_int_equal(config_validate(c, NULL), -EINVAL);
}

/* ---- parse_size ---- */

/* The lists: every assignment replaces the list, duplicates are kept once, at most 64 entries. */
static void test_network_lists(_unused_ void **state) {
        _cleanup_(config_freep) Config *c = config_new();
        _cleanup_free_ char *error = NULL, *many = NULL;
        size_t n = 0;

        assert_non_null(c);
        assert_null(c->net_allow_domains);
        assert_int_equal(config_parse_text(c, "[Network]\nAllowDomains=pypi.org *.pythonhosted.org pypi.org\n"
                                              "PermitAddresses=10.0.0.0/8\nPermitAddresses=198.18.0.0/30 fd00::/8\n",
                                           "x.conf", &error), 0);
        assert_int_equal(strv_length(c->net_allow_domains), 2);
        assert_string_equal(c->net_allow_domains[0], "pypi.org");
        assert_string_equal(c->net_allow_domains[1], "*.pythonhosted.org");
        assert_int_equal(strv_length(c->net_permit_addresses), 2);
        assert_string_equal(c->net_permit_addresses[0], "198.18.0.0/30");
        assert_int_equal(config_parse_text(c, "[Network]\nAllowDomains=\n", "x.conf", &error), 0);
        assert_null(c->net_allow_domains);

        many = strdup("[Network]\nAllowDomains=");
        assert_non_null(many);
        for (int i = 0; i < 65; i++) {
                char *m = NULL;

                assert_true(asprintf(&m, "%s h%d.example", many, i) > 0);
                free(many);
                many = m;
        }
        assert_int_equal(config_parse_text(c, many, "x.conf", &error), -EINVAL);
        assert_string_equal(error, "x.conf:2: AllowDomains= takes at most 64 entries");
        (void) n;
}

static void test_parse_size(_unused_ void **state) {
        static const struct {
                const char *s;
                int ret;
                uint64_t v;
        } rows[] = {
                { "0",                      0,       0 },
                { "1",                      0,       1 },
                { "1B",                     0,       1 },
                { "007",                    0,       7 },
                { "64K",                    0,       64 * 1024 },
                { "64KiB",                  0,       64 * 1024 },
                { "64KB",                   0,       64 * 1024 },
                { "2M",                     0,       2 * 1024 * 1024 },
                { "2MiB",                   0,       2 * 1024 * 1024 },
                { "2MB",                    0,       2 * 1024 * 1024 },
                { "3G",                     0,       3ULL << 30 },
                { "3GiB",                   0,       3ULL << 30 },
                { "1T",                     0,       1ULL << 40 },
                { "1TiB",                   0,       1ULL << 40 },
                { "0K",                     0,       0 },
                { "18446744073709551615",   0,       UINT64_MAX },
                { "18446744073709551615B",  0,       UINT64_MAX },
                { "16777215T",              0,       16777215ULL << 40 },
                { "17179869183G",           0,       17179869183ULL << 30 },
                { "18446744073709551616",   -ERANGE, 0 },
                { "99999999999999999999K",  -ERANGE, 0 },
                { "16777216T",              -ERANGE, 0 },
                { "17179869184G",           -ERANGE, 0 },
                { "18014398509481984K",     -ERANGE, 0 },
                { NULL,                     -EINVAL, 0 },
                { "",                       -EINVAL, 0 },
                { "K",                      -EINVAL, 0 },
                { "M1",                     -EINVAL, 0 },
                { "1.5M",                   -EINVAL, 0 },
                { "1,5M",                   -EINVAL, 0 },
                { ".5M",                    -EINVAL, 0 },
                { "-1",                     -EINVAL, 0 },
                { "+1",                     -EINVAL, 0 },
                { " 1",                     -EINVAL, 0 },
                { "1 ",                     -EINVAL, 0 },
                { "1 M",                    -EINVAL, 0 },
                { "1k",                     -EINVAL, 0 },
                { "1m",                     -EINVAL, 0 },
                { "1MM",                    -EINVAL, 0 },
                { "1Mi",                    -EINVAL, 0 },
                { "1P",                     -EINVAL, 0 },
                { "0x10",                   -EINVAL, 0 },
                { "1e3",                    -EINVAL, 0 },
                { "abc",                    -EINVAL, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                uint64_t v = 0xdeadbeef;
                int r = parse_size(rows[i].s, &v);

                if (r != rows[i].ret || (r == 0 && v != rows[i].v)) {
                        print_error("parse_size(\"%s\") = %d, %llu\n", strna(rows[i].s), r, (unsigned long long) v);
                        fail();
                }
                /* On failure the output is left alone. */
                if (r < 0)
                        assert_int_equal(v, 0xdeadbeef);
        }
}

int main(void) {
        size_t n = 1 + ELEMENTSOF(key_rows) + ELEMENTSOF(error_rows) + 1 + 8 + ELEMENTSOF(validate_rows) + 2, i = 0;
        _cleanup_free_ struct CMUnitTest *tests = calloc(n, sizeof(struct CMUnitTest));

        if (!tests)
                return EXIT_FAILURE;

        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_defaults);
        for (size_t k = 0; k < ELEMENTSOF(key_rows); k++)
                tests[i++] = (struct CMUnitTest) { key_rows[k].name, test_key_row, NULL, NULL, (void *) &key_rows[k] };
        for (size_t k = 0; k < ELEMENTSOF(error_rows); k++)
                tests[i++] = (struct CMUnitTest) { error_rows[k].name, test_error_row, NULL, NULL,
                                                   (void *) &error_rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_parse_misc);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_load_empty_dir);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_load_order);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_load_dropins_without_main);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_load_dropin_error);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_load_main_error);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_load_validates_after_all_files);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_load_listen_loopback);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_load_unreadable);
        for (size_t k = 0; k < ELEMENTSOF(validate_rows); k++)
                tests[i++] = (struct CMUnitTest) { validate_rows[k].name, test_validate_row, NULL, NULL,
                                                   (void *) &validate_rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_network_lists);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_parse_size);
        assert_true(i <= n);

        return _cmocka_run_group_tests("conf", tests, i, NULL, NULL);
}
