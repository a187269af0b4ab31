/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* sandboxctl: the command-line client of sandboxd, in the spirit of systemctl and systemd-run.
 *
 * It speaks the HTTP API of docs/http-api.md over the daemon's unix socket with libcurl, and json-c
 * on both sides. "run" waits for the verdict and then behaves like the program itself: the
 * program's output on our stdout/stderr byte for byte, its verdict as our exit status. The other
 * commands inspect and control executions and the daemon.
 *
 * Everything read is bounded: code files (16 MiB), answers (64 MiB). Answers are parsed strictly
 * and every field's type is checked before use, so a confused or hostile peer on the socket gets a
 * clear error message, never a crash or a misleading exit status.
 *
 * This file holds the command line: the options (arg_*, declared in sandboxctl.h), the verb table
 * and --help; main() is in sandboxctl-main.c (so that the parser links without it: the fuzz target
 * tests/fuzz/fuzz-sandboxctl-argv.c). Each verb, or group of verbs, has its file (sandboxctl-<verb>.c), as in
 * systemd's src/systemctl; what they share is in sandboxctl-{util,json,http,execution,table}.c. */

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandboxctl.h"
#include "sandboxctl-artifacts.h"
#include "sandboxctl-events.h"
#include "sandboxctl-info.h"
#include "sandboxctl-json.h"
#include "sandboxctl-key.h"
#include "sandboxctl-list.h"
#include "sandboxctl-mcp.h"
#include "sandboxctl-run.h"
#include "sandboxctl-session.h"
#include "sandboxctl-stats.h"
#include "sandboxctl-status.h"
#include "sandboxctl-top.h"
#include "sandboxctl-util.h"
#include "utf8.h"

#define ARG_INTERVAL_USEC_DEFAULT UINT64_C(1000000)
#define ARG_WINDOW_USEC_DEFAULT (UINT64_C(3600) * 1000000)

const char *arg_socket = NULL;
const char *arg_url = NULL;
const char *arg_api_key_file = NULL;
bool arg_json = false;
bool arg_wait = false;
bool arg_follow = false;
bool arg_client_timeout_set = false;
uint64_t arg_client_timeout_ms = 0;
const char *arg_language = NULL;
const char *arg_code = NULL;
const char *arg_session = NULL;
const char *arg_id = NULL;
const char *arg_callback_url = NULL;
const char *arg_environment = NULL;
const char *arg_stdin = NULL;
bool arg_timeout_ms_set = false, arg_memory_mb_set = false, arg_disk_mb_set = false,
     arg_cpu_cores_set = false;
uint64_t arg_timeout_ms = 0, arg_memory_mb = 0, arg_disk_mb = 0;
double arg_cpu_cores = 0;
json_object *arg_env = NULL;
char **arg_program_args = NULL;
size_t arg_n_program_args = 0;
json_object *arg_allow_net = NULL;  /* --allow-net: the request's network.allow */
json_object *arg_files = NULL;    /* --input, --input-url: the request's "files" */
const char *arg_status = NULL;
const char *arg_error_type = NULL;
bool arg_failed = false;
const char *arg_order = NULL;
bool arg_limit_set = false;
uint64_t arg_limit = 0;
const char *arg_cursor = NULL;
bool arg_all = false;
const char *arg_get = NULL;
const char *arg_dest = NULL;
const char *arg_output = NULL;
bool arg_once = false;
uint64_t arg_interval_usec = ARG_INTERVAL_USEC_DEFAULT;
uint64_t arg_window_usec = ARG_WINDOW_USEC_DEFAULT;

/* Options that only make sense for some commands; remembered so that e.g. "status --memory-mb=1"
 * is refused instead of silently ignored. */
enum {
        OPTION_GROUP_EXECUTE, /* run, submit */
        OPTION_GROUP_WAIT,    /* status, show */
        OPTION_GROUP_LIST,    /* list */
        OPTION_GROUP_SESSION, /* run, submit, list */
        OPTION_GROUP_TOP,     /* top */
        OPTION_GROUP_STATS,   /* stats */
        OPTION_GROUP_ALL,     /* list, artifacts */
        OPTION_GROUP_ARTIFACTS, /* artifacts */
        OPTION_GROUP_LOGS,    /* logs */
        _OPTION_GROUP_MAX,
};
static const char *const option_group_commands[_OPTION_GROUP_MAX] = {
        [OPTION_GROUP_EXECUTE] = "'run' and 'submit'",
        [OPTION_GROUP_WAIT] = "'status' and 'show'",
        [OPTION_GROUP_LIST] = "'list'",
        [OPTION_GROUP_SESSION] = "'run', 'submit' and 'list'",
        [OPTION_GROUP_TOP] = "'top'",
        [OPTION_GROUP_STATS] = "'stats'",
        [OPTION_GROUP_ALL] = "'list' and 'artifacts'",
        [OPTION_GROUP_ARTIFACTS] = "'artifacts'",
        [OPTION_GROUP_LOGS] = "'logs'",
};
static unsigned arg_option_groups = 0;
static const char *arg_option_group_first[_OPTION_GROUP_MAX] = {};

/* ---- Command line ---- */

struct CtlVerb {
        const char *name;
        size_t min_args, max_args;
        unsigned option_groups; /* which command-specific options it takes */
        int (*dispatch)(char **args, size_t n_args);
};

#define G(g) (1U << (g))
static const CtlVerb verbs[] = {
        { "run", 0, 1, G(OPTION_GROUP_EXECUTE) | G(OPTION_GROUP_SESSION), verb_run },
        { "submit", 0, 1, G(OPTION_GROUP_EXECUTE) | G(OPTION_GROUP_SESSION), verb_submit },
        { "status", 1, 1, G(OPTION_GROUP_WAIT), verb_status },
        /* "status" already shows the whole record, output included: "show" is the same command
         * under the name systemctl users reach for. */
        { "show", 1, 1, G(OPTION_GROUP_WAIT), verb_status },
        { "list", 0, 0, G(OPTION_GROUP_LIST) | G(OPTION_GROUP_SESSION) | G(OPTION_GROUP_ALL), verb_list },
        { "cancel", 1, 1, 0, verb_cancel },
        { "logs", 1, 1, G(OPTION_GROUP_LOGS), verb_logs },
        { "artifacts", 1, 1, G(OPTION_GROUP_ARTIFACTS) | G(OPTION_GROUP_ALL), verb_artifacts },
        { "session", 1, 3, 0, verb_session },
        { "languages", 0, 0, 0, verb_languages },
        { "health", 0, 0, 0, verb_health },
        { "nodes", 0, 0, 0, verb_nodes },
        { "top", 0, 0, G(OPTION_GROUP_TOP), verb_top },
        { "stats", 0, 0, G(OPTION_GROUP_STATS), verb_stats },
        { "key", 1, 2, 0, verb_key },
        { "mcp", 0, 0, 0, verb_mcp },
};
#undef G

static void help(void) {
        printf("%1$s [OPTIONS...] COMMAND ...\n"
               "\n"
               "Run untrusted code in sandboxd and control its executions.\n"
               "\n"
               "Commands:\n"
               "  run FILE|-|-c CODE        Run code, wait, and exit like the program did\n"
               "  submit FILE|-|-c CODE     Queue code and print the execution ID\n"
               "  status ID                 Show an execution, with its output\n"
               "  show ID                   Same as status\n"
               "  list                      List executions, newest first\n"
               "  cancel ID                 Cancel a queued or running execution\n"
               "  logs ID                   Print an execution's stored output (-f: follow it\n"
               "                            live until it ends, and exit like the program)\n"
               "  artifacts ID              List an execution's artifacts, or download them\n"
               "  session show|delete ID    Show or delete a session (its workspace goes)\n"
               "  session list              List the sessions\n"
               "  session cp LOCAL SESSION:PATH | SESSION:PATH LOCAL|-\n"
               "                            Copy a file into or out of a session's workspace\n"
               "  session ls SESSION[:PATH] List a directory of a session's workspace\n"
               "  session rm SESSION:PATH   Remove a file or empty directory there\n"
               "  languages                 List the languages sandboxd runs\n"
               "  health                    Show whether sandboxd is up, and its load\n"
               "  nodes                     List the nodes sharing the store, and their leases\n"
               "  top                       Show the running executions, refreshed in place\n"
               "  stats                     Rates, percentiles and error shares over a window\n"
               "  key new [NAME]            Make an API key (for TCP) and its line for the key file\n"
               "  mcp                       An MCP server on stdin/stdout (docs/mcp.md)\n"
               "\n"
               "Options:\n"
               "  -h --help                 Show this help\n"
               "     --version              Show package version\n"
               "     --socket=PATH          sandboxd's API socket (default: $SANDBOXD_SOCKET,\n"
               "                            else %2$s)\n"
               "     --url=URL              A TCP listener instead: http(s)://HOST:PORT (default:\n"
               "                            $SANDBOXD_URL), with an API key\n"
               "     --api-key-file=FILE    The key for --url, on the file's first line (default:\n"
               "                            $SANDBOXD_API_KEY; never on the command line)\n"
               "     --json                 Print the daemon's JSON answer\n"
               "     --client-timeout-ms=N  Give up waiting for an answer after N ms (default:\n"
               "                            none for run and status --wait, else 30000)\n"
               "\n"
               "Options for run and submit:\n"
               "  -c --code=CODE            The code itself instead of FILE\n"
               "  -l --language=LANG        Language (default: from FILE's extension: .py python,\n"
               "                            .js node, .sh bash, .ts .go .rs .c .cpp .java .rb .php\n"
               "                            .pl .lua .r .sql; otherwise python)\n"
               "     --timeout-ms=N         Wall clock limit\n"
               "     --memory-mb=N          Memory limit\n"
               "     --cpu-cores=F          CPU limit, in cores\n"
               "     --disk-mb=N            Size limit of the writable file system\n"
               "     --env=NAME=VALUE       Set an environment variable (repeatable)\n"
               "     --allow-net=HOST       Network through the egress proxy to HOST, *.SUFFIX or\n"
               "                            HOST:PORT (repeatable; within the server's AllowDomains=)\n"
               "     --input=FILE[=PATH]    Send FILE along as /workspace/input/PATH (default\n"
               "                            PATH: FILE's name; repeatable)\n"
               "     --input-url=URL=PATH   Have sandboxd download URL to /workspace/input/PATH\n"
               "                            (repeatable)\n"
               "     --session=ID           Run in this session: its /workspace persists across runs\n"
               "     --id=ID                Execution ID (an idempotency key)\n"
               "     --callback-url=URL     POST the signed result to this http(s) URL when the\n"
               "                            execution ends\n"
               "     --environment=NAME     Run with the libraries of this environment of the\n"
               "                            language (e.g. python-data; see 'languages')\n"
               "     --stdin=FILE|-         The program's standard input: FILE's bytes (UTF-8 text),\n"
               "                            or sandboxctl's own standard input with '-'\n"
               "\n"
               "Options for status and show:\n"
               "     --wait                 Wait until the execution is final\n"
               "\n"
               "Options for logs:\n"
               "  -f --follow               Print the output as it comes, until the end\n"
               "\n"
               "Options for list:\n"
               "     --session=ID           Only this session's executions\n"
               "     --status=STATUS        Only executions with this status\n"
               "     --error-type=TYPE      Only this error type ('none': no error)\n"
               "     --failed               Only failed executions\n"
               "     --order=ORDER          created_at (newest first, default) or\n"
               "                            duration_ms (slowest first)\n"
               "     --limit=N              At most N executions per page (daemon default: 50)\n"
               "     --cursor=CURSOR        Continue a listing where a page ended\n"
               "     --all                  Fetch all pages (at most 100)\n"
               "\n"
               "Options for artifacts:\n"
               "     --get=PATH             Download this artifact (to DIR/PATH, or -o FILE)\n"
               "     --all                  Download every artifact to DIR/PATH\n"
               "     --dest=DIR             Where to download (default: the current directory)\n"
               "  -o --output=FILE          Write the one artifact of --get to FILE ('-': stdout)\n"
               "\n"
               "Options for top:\n"
               "     --once                 Print one snapshot and exit\n"
               "     --interval=SECONDS     Time between refreshes (default: 1)\n"
               "\n"
               "Options for stats:\n"
               "     --window=SPAN          Executions created in the last SPAN, e.g. 30m, 1h,\n"
               "                            7d (default: 1h)\n"
               "\n"
               "See the sandboxctl(1) man page for details.\n",
               program_invocation_short_name, DEFAULT_SOCKET);
}

static int parse_u64(const char *option, const char *value, uint64_t *ret) {
        uint64_t v;
        int r;

        r = safe_atou64(value, &v);
        if (r < 0 || v > INT64_MAX)
                return log_error_errno(-EINVAL, "%s: '%s' is not a valid non-negative integer.", option, value);
        *ret = v;
        return 0;
}

/* A time span: a positive integer with a unit, s, m (or min), h, d or w; a bare number is seconds. */
static int parse_span(const char *option, const char *value, uint64_t *ret) {
        static const struct {
                const char *suffix;
                uint64_t usec;
        } units[] = {
                { "", UINT64_C(1000000) },
                { "s", UINT64_C(1000000) },
                { "m", UINT64_C(60000000) },
                { "min", UINT64_C(60000000) },
                { "h", UINT64_C(3600000000) },
                { "d", UINT64_C(86400000000) },
                { "w", UINT64_C(604800000000) },
        };
        uint64_t n;
        char *end;

        errno = 0;
        if (!value || *value < '0' || *value > '9')
                goto invalid;
        n = strtoull(value, &end, 10);
        if (errno != 0 || n == 0)
                goto invalid;
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (streq(end, units[i].suffix)) {
                        /* At most ten years: the arithmetic on it must not overflow. */
                        if (n > UINT64_C(315360000000000) / units[i].usec)
                                goto invalid;
                        *ret = n * units[i].usec;
                        return 0;
                }
invalid:
        return log_error_errno(-EINVAL, "%s: '%s' is not a time span such as 90s, 30m, 1h or 7d.", option,
                               strempty(value));
}

static void note_option_group(unsigned group, const char *option) {
        assert(group < _OPTION_GROUP_MAX);

        if (!arg_option_group_first[group])
                arg_option_group_first[group] = option;
        arg_option_groups |= 1U << group;
}

/* The options. Each belongs to the parse_*_option() of its group below, and getopt_long() knows them
 * all, because GNU getopt permutes: options may come before or after the command and its arguments,
 * as with systemctl. */
enum {
        ARG_VERSION = 0x100,
        ARG_SOCKET,
        ARG_URL,
        ARG_API_KEY_FILE,
        ARG_JSON,
        ARG_CLIENT_TIMEOUT_MS,
        ARG_TIMEOUT_MS,
        ARG_MEMORY_MB,
        ARG_CPU_CORES,
        ARG_DISK_MB,
        ARG_ENV,
        ARG_ALLOW_NET,
        ARG_INPUT,
        ARG_INPUT_URL,
        ARG_SESSION,
        ARG_ID,
        ARG_CALLBACK_URL,
        ARG_ENVIRONMENT,
        ARG_STDIN,
        ARG_WAIT,
        ARG_STATUS,
        ARG_ERROR_TYPE,
        ARG_FAILED,
        ARG_ORDER,
        ARG_LIMIT,
        ARG_CURSOR,
        ARG_ALL,
        ARG_ONCE,
        ARG_INTERVAL,
        ARG_WINDOW,
        ARG_GET,
        ARG_DEST,
};

static const struct option options[] = {
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, ARG_VERSION },
        { "socket", required_argument, NULL, ARG_SOCKET },
        { "url", required_argument, NULL, ARG_URL },
        { "api-key-file", required_argument, NULL, ARG_API_KEY_FILE },
        { "json", no_argument, NULL, ARG_JSON },
        { "client-timeout-ms", required_argument, NULL, ARG_CLIENT_TIMEOUT_MS },
        { "code", required_argument, NULL, 'c' },
        { "language", required_argument, NULL, 'l' },
        { "timeout-ms", required_argument, NULL, ARG_TIMEOUT_MS },
        { "memory-mb", required_argument, NULL, ARG_MEMORY_MB },
        { "cpu-cores", required_argument, NULL, ARG_CPU_CORES },
        { "disk-mb", required_argument, NULL, ARG_DISK_MB },
        { "env", required_argument, NULL, ARG_ENV },
        { "allow-net", required_argument, NULL, ARG_ALLOW_NET },
        { "input", required_argument, NULL, ARG_INPUT },
        { "input-url", required_argument, NULL, ARG_INPUT_URL },
        { "session", required_argument, NULL, ARG_SESSION },
        { "id", required_argument, NULL, ARG_ID },
        { "callback-url", required_argument, NULL, ARG_CALLBACK_URL },
        { "environment", required_argument, NULL, ARG_ENVIRONMENT },
        { "stdin", required_argument, NULL, ARG_STDIN },
        { "wait", no_argument, NULL, ARG_WAIT },
        { "status", required_argument, NULL, ARG_STATUS },
        { "error-type", required_argument, NULL, ARG_ERROR_TYPE },
        { "failed", no_argument, NULL, ARG_FAILED },
        { "order", required_argument, NULL, ARG_ORDER },
        { "limit", required_argument, NULL, ARG_LIMIT },
        { "cursor", required_argument, NULL, ARG_CURSOR },
        { "all", no_argument, NULL, ARG_ALL },
        { "once", no_argument, NULL, ARG_ONCE },
        { "interval", required_argument, NULL, ARG_INTERVAL },
        { "window", required_argument, NULL, ARG_WINDOW },
        { "get", required_argument, NULL, ARG_GET },
        { "dest", required_argument, NULL, ARG_DEST },
        { "output", required_argument, NULL, 'o' },
        { "follow", no_argument, NULL, 'f' },
        {}
};

/* What a parse_*_option() returns, besides a negative errno (logged). */
enum {
        OPTION_NOT_MINE,   /* another group's option */
        OPTION_TAKEN,
        OPTION_EXIT,       /* --help, --version: done, exit successfully */
};

/* The options every command takes. */
static int parse_common_option(int c, const char *value) {
        int r;

        switch (c) {
        case 'h':
                help();
                return OPTION_EXIT;
        case ARG_VERSION:
                printf("sandboxctl %s\n", PACKAGE_VERSION);
                return OPTION_EXIT;
        case ARG_SOCKET:
                if (isempty(value))
                        return log_error_errno(-EINVAL, "--socket: empty path.");
                arg_socket = value;
                return OPTION_TAKEN;
        case ARG_URL:
                if (isempty(value))
                        return log_error_errno(-EINVAL, "--url: empty URL.");
                arg_url = value;
                return OPTION_TAKEN;
        case ARG_API_KEY_FILE:
                if (isempty(value))
                        return log_error_errno(-EINVAL, "--api-key-file: empty path.");
                arg_api_key_file = value;
                return OPTION_TAKEN;
        case ARG_JSON:
                arg_json = true;
                return OPTION_TAKEN;
        case ARG_CLIENT_TIMEOUT_MS:
                r = parse_u64("--client-timeout-ms", value, &arg_client_timeout_ms);
                if (r < 0)
                        return r;
                arg_client_timeout_set = true;
                return OPTION_TAKEN;
        }
        return OPTION_NOT_MINE;
}

/* --env=NAME=VALUE */
static int parse_env(const char *value) {
        _cleanup_free_ char *name = NULL;
        const char *eq;
        int r;

        eq = strchr(value, '=');
        if (!eq || eq == value)
                return log_error_errno(-EINVAL, "--env: expected NAME=VALUE, got '%s'.", value);
        name = strndup(value, (size_t) (eq - value));
        if (!name)
                return log_oom();
        if (!utf8_is_valid(value, strlen(value)))
                return log_error_errno(-EINVAL, "--env: '%s' is not valid UTF-8.", name);
        if (!arg_env) {
                arg_env = json_object_new_object();
                if (!arg_env)
                        return log_oom();
        }
        /* Repeating a name replaces it, as in env(1). */
        r = json_add(arg_env, name, json_object_new_string(eq + 1));
        if (r < 0)
                return log_oom();
        return 0;
}

/* The execution options of run and submit: what to run and with which limits. */
static int parse_execute_option(int c, const char *value) {
        const char *option;
        char *end;
        int r = 0;

        switch (c) {
        case 'c':
                arg_code = value;
                option = "-c/--code";
                break;
        case 'l':
                if (isempty(value))
                        return log_error_errno(-EINVAL, "--language: empty language name.");
                arg_language = value;
                option = "-l/--language";
                break;
        case ARG_TIMEOUT_MS:
                r = parse_u64("--timeout-ms", value, &arg_timeout_ms);
                if (r < 0)
                        return r;
                arg_timeout_ms_set = true;
                option = "--timeout-ms";
                break;
        case ARG_MEMORY_MB:
                r = parse_u64("--memory-mb", value, &arg_memory_mb);
                if (r < 0)
                        return r;
                arg_memory_mb_set = true;
                option = "--memory-mb";
                break;
        case ARG_DISK_MB:
                r = parse_u64("--disk-mb", value, &arg_disk_mb);
                if (r < 0)
                        return r;
                arg_disk_mb_set = true;
                option = "--disk-mb";
                break;
        case ARG_CPU_CORES:
                /* Range checks are the daemon's (it knows the ceilings); only refuse what JSON
                 * cannot carry or what is not a number at all. */
                errno = 0;
                arg_cpu_cores = strtod(value, &end);
                if (isempty(value) || *end || errno != 0 || !isfinite(arg_cpu_cores))
                        return log_error_errno(-EINVAL, "--cpu-cores: '%s' is not a valid number.", value);
                arg_cpu_cores_set = true;
                option = "--cpu-cores";
                break;
        case ARG_ENV:
                r = parse_env(value);
                option = "--env";
                break;
        case ARG_INPUT:
                r = parse_input(value);
                option = "--input";
                break;
        case ARG_ALLOW_NET:
                /* The entry's syntax and the server's AllowDomains= are the daemon's to judge. */
                if (isempty(value) || !utf8_is_valid(value, strlen(value)))
                        return log_error_errno(-EINVAL, "--allow-net: expected HOST, *.SUFFIX or HOST:PORT.");
                if (!arg_allow_net && !(arg_allow_net = json_object_new_array()))
                        return log_oom();
                if (json_object_array_add(arg_allow_net, json_object_new_string(value)) < 0)
                        return log_oom();
                option = "--allow-net";
                break;
        case ARG_INPUT_URL:
                r = parse_input_url(value);
                option = "--input-url";
                break;
        case ARG_ID:
                arg_id = value;
                option = "--id";
                break;
        case ARG_CALLBACK_URL:
                /* The daemon checks it and names what is wrong; only the obvious here. */
                if (isempty(value))
                        return log_error_errno(-EINVAL, "--callback-url: empty URL.");
                arg_callback_url = value;
                option = "--callback-url";
                break;
        case ARG_ENVIRONMENT:
                /* Whether the daemon has it, for this language, is the daemon's to say. */
                if (isempty(value))
                        return log_error_errno(-EINVAL, "--environment: empty name.");
                arg_environment = value;
                option = "--environment";
                break;
        case ARG_STDIN:
                if (isempty(value))
                        return log_error_errno(-EINVAL, "--stdin: expected FILE, or - for standard input.");
                arg_stdin = value;
                option = "--stdin";
                break;
        default:
                return OPTION_NOT_MINE;
        }
        if (r < 0)
                return r;
        note_option_group(OPTION_GROUP_EXECUTE, option);
        return OPTION_TAKEN;
}

/* Options of one name that several commands take, each with the meaning it has there. */
static int parse_shared_option(int c, const char *value) {
        switch (c) {
        case ARG_SESSION:
                /* run, submit: the session to run in; list: the session whose executions to list. */
                arg_session = value;
                note_option_group(OPTION_GROUP_SESSION, "--session");
                return OPTION_TAKEN;
        case ARG_ALL:
                /* list: every page; artifacts: every artifact. */
                arg_all = true;
                note_option_group(OPTION_GROUP_ALL, "--all");
                return OPTION_TAKEN;
        case ARG_WAIT:
                arg_wait = true;
                note_option_group(OPTION_GROUP_WAIT, "--wait");
                return OPTION_TAKEN;
        case 'f':
                arg_follow = true;
                note_option_group(OPTION_GROUP_LOGS, "-f/--follow");
                return OPTION_TAKEN;
        }
        return OPTION_NOT_MINE;
}

/* The filters, order and paging of list. Values are the daemon's to check, except --order. */
static int parse_list_option(int c, const char *value) {
        const char *option;
        int r;

        switch (c) {
        case ARG_STATUS:
                if (isempty(value))
                        return log_error_errno(-EINVAL, "--status: empty status.");
                arg_status = value;
                option = "--status";
                break;
        case ARG_ERROR_TYPE:
                if (isempty(value))
                        return log_error_errno(-EINVAL, "--error-type: empty error type.");
                arg_error_type = value;
                option = "--error-type";
                break;
        case ARG_FAILED:
                arg_failed = true;
                option = "--failed";
                break;
        case ARG_ORDER:
                /* The two orders of docs/http-api.md; anything else is a typo, not a value a
                 * newer daemon might know. */
                if (!streq(value, "created_at") && !streq(value, "duration_ms"))
                        return log_error_errno(-EINVAL,
                                               "--order: expected 'created_at' or 'duration_ms', got '%s'.",
                                               value);
                arg_order = value;
                option = "--order";
                break;
        case ARG_LIMIT:
                /* The range (1..1000) is the daemon's to check, like the execution limits. */
                r = parse_u64("--limit", value, &arg_limit);
                if (r < 0)
                        return r;
                arg_limit_set = true;
                option = "--limit";
                break;
        case ARG_CURSOR:
                if (isempty(value))
                        return log_error_errno(-EINVAL, "--cursor: empty cursor.");
                arg_cursor = value;
                option = "--cursor";
                break;
        default:
                return OPTION_NOT_MINE;
        }
        note_option_group(OPTION_GROUP_LIST, option);
        return OPTION_TAKEN;
}

/* Which artifact goes where. */
static int parse_artifacts_option(int c, const char *value) {
        const char *option;

        switch (c) {
        case ARG_GET:
                arg_get = value;
                option = "--get";
                break;
        case ARG_DEST:
                if (isempty(value))
                        return log_error_errno(-EINVAL, "--dest: empty path.");
                arg_dest = value;
                option = "--dest";
                break;
        case 'o':
                if (isempty(value))
                        return log_error_errno(-EINVAL, "-o/--output: empty path.");
                arg_output = value;
                option = "-o/--output";
                break;
        default:
                return OPTION_NOT_MINE;
        }
        note_option_group(OPTION_GROUP_ARTIFACTS, option);
        return OPTION_TAKEN;
}

/* How often top refreshes, and the window of stats. */
static int parse_top_stats_option(int c, const char *value) {
        double v;
        char *end;
        int r;

        switch (c) {
        case ARG_ONCE:
                arg_once = true;
                note_option_group(OPTION_GROUP_TOP, "--once");
                return OPTION_TAKEN;
        case ARG_INTERVAL:
                /* At least 0.1 s: faster would only load the daemon and the store. */
                errno = 0;
                v = strtod(value, &end);
                if (isempty(value) || *end || errno != 0 || !isfinite(v) || v < 0.1 || v > 86400)
                        return log_error_errno(-EINVAL, "--interval: '%s' is not a number of seconds "
                                               "between 0.1 and 86400.", value);
                arg_interval_usec = (uint64_t) (v * 1e6);
                note_option_group(OPTION_GROUP_TOP, "--interval");
                return OPTION_TAKEN;
        case ARG_WINDOW:
                r = parse_span("--window", value, &arg_window_usec);
                if (r < 0)
                        return r;
                note_option_group(OPTION_GROUP_STATS, "--window");
                return OPTION_TAKEN;
        }
        return OPTION_NOT_MINE;
}

static int (*const option_parsers[])(int c, const char *value) = {
        parse_common_option,
        parse_execute_option,
        parse_shared_option,
        parse_list_option,
        parse_artifacts_option,
        parse_top_stats_option,
};

/* The command after the options: known, with as many arguments as it takes, and only options it
 * takes. */
static int parse_verb(int argc, char *argv[], const CtlVerb **ret_verb, char ***ret_args,
                      size_t *ret_n_args) {
        const CtlVerb *verb = NULL;
        size_t n_args;

        if (optind >= argc)
                return log_error_errno(-EINVAL, "Missing command. See '%s --help'.",
                                       program_invocation_short_name);

        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(argv[optind], verbs[i].name)) {
                        verb = verbs + i;
                        break;
                }
        if (!verb)
                return log_error_errno(-EINVAL, "Unknown command '%s'. See '%s --help'.", argv[optind],
                                       program_invocation_short_name);

        n_args = (size_t) (argc - optind - 1);
        if (n_args < verb->min_args)
                return log_error_errno(-EINVAL, "Too few arguments for '%s'.", verb->name);
        if (n_args > verb->max_args)
                return log_error_errno(-EINVAL, "Too many arguments for '%s'.", verb->name);

        for (unsigned g = 0; g < _OPTION_GROUP_MAX; g++)
                if ((arg_option_groups & (1U << g)) && !(verb->option_groups & (1U << g)))
                        return log_error_errno(-EINVAL, "Option %s only applies to %s.",
                                               arg_option_group_first[g], option_group_commands[g]);

        if (arg_program_args && verb->dispatch != verb_run && verb->dispatch != verb_submit)
                return log_error_errno(-EINVAL, "Arguments after '--' only apply to 'run' and 'submit'.");

        *ret_verb = verb;
        *ret_args = argv + optind + 1;
        *ret_n_args = n_args;
        return 1;
}

int ctl_parse_argv(int argc, char *argv[], const CtlVerb **ret_verb, char ***ret_args, size_t *ret_n_args) {
        int c, r;

        /* "run ... -- ARGS...": what follows the first "--" is the program's, not ours. getopt_long()
         * would move the command and FILE after it, so it never sees it. */
        for (int i = 1; i < argc; i++)
                if (streq(argv[i], "--")) {
                        arg_program_args = argv + i + 1;
                        arg_n_program_args = (size_t) (argc - i - 1);
                        argc = i;
                        break;
                }

        while ((c = getopt_long(argc, argv, "hc:l:o:f", options, NULL)) >= 0) {
                if (c == '?')
                        return -EINVAL; /* getopt_long() said why */

                r = OPTION_NOT_MINE;
                for (size_t i = 0; r == OPTION_NOT_MINE && i < ELEMENTSOF(option_parsers); i++)
                        r = option_parsers[i](c, optarg);
                if (r < 0)
                        return r;
                if (r == OPTION_EXIT)
                        return 0;
                if (r == OPTION_NOT_MINE)
                        return log_error_errno(-EINVAL, "Unhandled option %d.", c);
        }

        return parse_verb(argc, argv, ret_verb, ret_args, ret_n_args);
}

int ctl_verb_dispatch(const CtlVerb *verb, char **args, size_t n_args) {
        return verb->dispatch(args, n_args);
}

void ctl_args_reset(void) {
        arg_env = (json_object_put(arg_env), NULL);
        arg_program_args = NULL;
        arg_n_program_args = 0;
        arg_files = (json_object_put(arg_files), NULL);
        arg_allow_net = (json_object_put(arg_allow_net), NULL);
        arg_socket = NULL;
        arg_url = NULL;
        arg_api_key_file = NULL;
        arg_json = false;
        arg_wait = false;
        arg_follow = false;
        arg_client_timeout_set = false;
        arg_client_timeout_ms = 0;
        arg_language = arg_code = arg_session = arg_id = arg_callback_url = arg_environment = NULL;
        arg_timeout_ms_set = arg_memory_mb_set = arg_disk_mb_set = arg_cpu_cores_set = false;
        arg_timeout_ms = arg_memory_mb = arg_disk_mb = 0;
        arg_cpu_cores = 0;
        arg_status = arg_error_type = arg_order = arg_cursor = NULL;
        arg_failed = false;
        arg_limit_set = false;
        arg_limit = 0;
        arg_all = false;
        arg_get = arg_dest = arg_output = NULL;
        arg_once = false;
        arg_interval_usec = ARG_INTERVAL_USEC_DEFAULT;
        arg_window_usec = ARG_WINDOW_USEC_DEFAULT;
        arg_option_groups = 0;
        for (unsigned g = 0; g < _OPTION_GROUP_MAX; g++)
                arg_option_group_first[g] = NULL;
}
