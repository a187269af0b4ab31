/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What every part of sandboxctl shares: its exit statuses and the command line (the arg_* globals,
 * defined and parsed in sandboxctl.c, read by the verbs; systemctl.h's arrangement). A verb may
 * set an option it implies before it sends its request ("top" lists with arg_status "running").
 *
 * The client's types are named Ctl*: they describe answers as sandboxctl reads them and are not
 * the daemon's types of the same concept (CtlExecution is not sandboxd's Execution, CtlLanguage
 * not its Language). */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sysexits.h>

/* Exit statuses. Verdicts follow the shell's conventions (timeout(1): 124, 128+SIGKILL for the OOM
 * killer, 128+SIGINT for cancellation) and sysexits.h otherwise; "not found" is 4 as in systemctl. */
enum {
        EXIT_NOT_FOUND = 4,
        EXIT_COMPILE_ERROR = EX_DATAERR,     /* 65 */
        EXIT_INPUT_ERROR = EX_NOINPUT,       /* 66: an input file could not be fetched */
        EXIT_RESOURCE_LIMIT = EX_TEMPFAIL,   /* 75 */
        EXIT_INTERNAL_ERROR = EX_SOFTWARE,   /* 70 */
        EXIT_TIMEOUT = 124,
        EXIT_CANCELLED = 130,
        EXIT_ORPHANED = EX_UNAVAILABLE,      /* 69: the node running it was lost (several nodes) */
        EXIT_OOM = 137,
};

#define DEFAULT_SOCKET "/run/sandboxd/api.sock"

/* The command line (sandboxctl.c). A command and its arguments, as the verb table has them. */
typedef struct CtlVerb CtlVerb;
/* Parse the options into the arg_* globals and find the command (getopt_long(): to parse another
 * command line, set optind to 0 and call ctl_args_reset() first). Returns < 0 on a usage error
 * (logged), 0 to exit successfully (--help, --version: printed), > 0 to go on with *ret_verb and its
 * arguments (pointers into argv). No other side effect: nothing is sent; --input reads its file. */
int ctl_parse_argv(int argc, char *argv[], const CtlVerb **ret_verb, char ***ret_args, size_t *ret_n_args);
/* Run the command: its exit status. */
int ctl_verb_dispatch(const CtlVerb *verb, char **args, size_t n_args);
/* Free what the arg_* globals own and set every one back to its default. */
void ctl_args_reset(void);

/* Common options */
extern const char *arg_socket;
extern const char *arg_url;            /* --url=, $SANDBOXD_URL: a TCP listener instead of the socket */
extern const char *arg_api_key_file;   /* --api-key-file=: the key for --url (else $SANDBOXD_API_KEY) */
extern bool arg_json;
extern bool arg_client_timeout_set;
extern uint64_t arg_client_timeout_ms;

/* run, submit */
extern const char *arg_language;
extern const char *arg_code;
extern const char *arg_id;
extern const char *arg_callback_url;
extern const char *arg_environment;
extern const char *arg_stdin;          /* --stdin: a file, or "-"; NULL: none */
extern bool arg_timeout_ms_set, arg_memory_mb_set, arg_disk_mb_set, arg_cpu_cores_set;
extern uint64_t arg_timeout_ms, arg_memory_mb, arg_disk_mb;
extern double arg_cpu_cores;
extern json_object *arg_env;
/* run/submit: the words after "--", the program's "args"; NULL: no "--". */
extern char **arg_program_args;
extern size_t arg_n_program_args;
extern json_object *arg_allow_net;      /* --allow-net: the request's network.allow */
extern json_object *arg_files;          /* --input, --input-url: the request's "files" */

/* run, submit: the session to run in; list: the session to list */
extern const char *arg_session;

/* status, show */
extern bool arg_wait;

/* logs: -f/--follow */
extern bool arg_follow;

/* list */
extern const char *arg_status;
extern const char *arg_error_type;
extern bool arg_failed;
extern const char *arg_order;
extern bool arg_limit_set;
extern uint64_t arg_limit;
extern const char *arg_cursor;

/* list: every page; artifacts: every artifact */
extern bool arg_all;

/* artifacts */
extern const char *arg_get;
extern const char *arg_dest;
extern const char *arg_output;

/* top */
extern bool arg_once;
extern uint64_t arg_interval_usec;

/* stats */
extern uint64_t arg_window_usec;
