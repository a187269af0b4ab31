/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* run FILE|-|-c CODE, submit FILE|-|-c CODE. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandboxctl.h"
#include "sandboxctl-events.h"
#include "sandboxctl-execution.h"
#include "sandboxctl-http.h"
#include "sandboxctl-json.h"
#include "sandboxctl-run.h"
#include "sandboxctl-util.h"
#include "utf8.h"

static const char *language_from_path(const char *path) {
        static const struct {
                const char *suffix, *language;
        } table[] = {
                { ".py", "python" },  { ".js", "node" },   { ".sh", "bash" },  { ".ts", "typescript" },
                { ".go", "go" },      { ".rs", "rust" },   { ".c", "c" },      { ".cpp", "cpp" },
                { ".cc", "cpp" },     { ".cxx", "cpp" },   { ".java", "java" }, { ".rb", "ruby" },
                { ".php", "php" },    { ".pl", "perl" },   { ".lua", "lua" },  { ".r", "r" },
                { ".R", "r" },        { ".sql", "sql" },
        };
        const char *base, *dot;

        if (!path || streq(path, "-"))
                return "python";
        base = strrchr(path, '/');
        base = base ? base + 1 : path;
        dot = strrchr(base, '.');
        if (dot)
                for (size_t i = 0; i < ELEMENTSOF(table); i++)
                        if (streq(dot, table[i].suffix))
                                return table[i].language;
        return "python";
}

/* One entry of "files". The daemon checks path and URL; here only what it could not tell apart. */
static int add_input(const char *path, const char *key, json_object *value) {
        json_object *f;

        if (!value)
                return log_oom();
        if (!arg_files) {
                arg_files = json_object_new_array();
                if (!arg_files) {
                        json_object_put(value);
                        return log_oom();
                }
        }
        f = json_object_new_object();
        if (!f) {
                json_object_put(value);
                return log_oom();
        }
        if (json_add(f, key, value) < 0 || json_add(f, "path", json_object_new_string(path)) < 0 ||
            json_object_array_add(arg_files, f) < 0) {
                json_object_put(f);
                return log_oom();
        }
        return 0;
}

/* --input=FILE[=PATH]: FILE's bytes inline (base64), at PATH below /workspace/input (default: FILE's
 * base name). */
int parse_input(const char *arg) {
        _cleanup_free_ char *file = NULL, *data = NULL;
        const char *eq = strchr(arg, '='), *path, *slash;
        size_t size = 0;
        int r;

        file = eq ? strndup(arg, (size_t) (eq - arg)) : strdup(arg);
        if (!file)
                return log_oom();
        if (isempty(file) || streq(file, "-"))
                return log_error_errno(-EINVAL, "--input: expected FILE[=PATH], got '%s'.", arg);
        slash = strrchr(file, '/');
        path = eq ? eq + 1 : slash ? slash + 1 : file;
        if (isempty(path))
                return log_error_errno(-EINVAL, "--input: no PATH for '%s' (use FILE=PATH).", file);
        if (!utf8_is_valid(path, strlen(path)))
                return log_error_errno(-EINVAL, "--input: PATH '%s' is not valid UTF-8.", path);
        r = read_bounded(file, "the input file", &data, &size);
        if (r < 0)
                return r == -ENOMEM ? r : -EINVAL;
        {
                char *b64 = base64_encode((const uint8_t *) data, size);
                if (!b64)
                        return log_oom();
                r = add_input(path, "content_base64", json_object_new_string(b64));
                free(b64);
        }
        return r;
}

/* --input-url=URL=PATH: PATH is what follows the last '=' (URLs have '=' in their queries). */
int parse_input_url(const char *arg) {
        _cleanup_free_ char *url = NULL;
        const char *eq = strrchr(arg, '=');

        if (!eq || eq == arg || isempty(eq + 1))
                return log_error_errno(-EINVAL, "--input-url: expected URL=PATH, got '%s'.", arg);
        url = strndup(arg, (size_t) (eq - arg));
        if (!url)
                return log_oom();
        if (!utf8_is_valid(arg, strlen(arg)))
                return log_error_errno(-EINVAL, "--input-url: '%s' is not valid UTF-8.", arg);
        return add_input(eq + 1, "url", json_object_new_string(url));
}

/* The POST /v1/executions body from the command line. Input problems are logged and returned as
 * -EINVAL (usage), allocation failures as -ENOMEM. */
static int build_request(const char *path, json_object **ret) {
        _cleanup_(json_object_putp) json_object *req = NULL, *limits = NULL;
        _cleanup_free_ char *code = NULL, *in = NULL;
        const char *name;
        size_t size = 0, in_size = 0;
        int r;

        if (arg_code) {
                size = strlen(arg_code);
                if (size > CODE_MAX)
                        return log_error_errno(-EINVAL, "-c: code is larger than %zu MiB, refusing it.",
                                               CODE_MAX / 1024 / 1024);
                name = "-c";
        } else {
                r = read_bounded(path, "code", &code, &size);
                if (r < 0)
                        return r == -ENOMEM ? r : -EINVAL;
                name = streq(path, "-") ? "standard input" : path;
        }

        /* The API carries code as a JSON string, which must be text; the daemon could only refuse
         * it, so say so here, and clearly. */
        if (!utf8_is_valid(arg_code ?: code, size))
                return log_error_errno(-EINVAL, "%s: code is not valid UTF-8 text (or contains NUL bytes), "
                                       "refusing it.", name);

        /* --stdin: the program's standard input, UTF-8 text like everything the API carries as a JSON
         * string (NUL bytes are fine: JSON spells them \u0000). Its cap is the daemon's to enforce
         * (MaxStdinBytes=), and it says so. */
        if (arg_stdin) {
                if (streq(arg_stdin, "-") && !arg_code && streq_ptr(path, "-"))
                        return log_error_errno(-EINVAL, "--stdin=-: the code is read from standard input already; "
                                               "give the code as a FILE or with -c.");
                r = read_bounded(arg_stdin, "the standard input", &in, &in_size);
                if (r < 0)
                        return r == -ENOMEM ? r : -EINVAL;
                for (size_t i = 0; i < in_size; ) {
                        const char *nul = memchr(in + i, 0, in_size - i);
                        size_t n = nul ? (size_t) (nul - (in + i)) : in_size - i;

                        if (!utf8_is_valid(in + i, n))
                                return log_error_errno(-EINVAL, "--stdin: %s is not valid UTF-8 text, refusing it "
                                                       "(the API carries standard input as a JSON string).",
                                                       streq(arg_stdin, "-") ? "standard input" : arg_stdin);
                        i += n + 1;
                }
        }

        req = json_object_new_object();
        limits = json_object_new_object();
        if (!req || !limits)
                return log_oom();

        r = json_add(req, "language", json_object_new_string(arg_language ?: language_from_path(path)));
        if (r >= 0)
                r = json_add(req, "code", json_object_new_string_len(arg_code ?: code, (int) size));
        if (r >= 0 && arg_id)
                r = json_add(req, "execution_id", json_object_new_string(arg_id));
        if (r >= 0 && arg_session)
                r = json_add(req, "session_id", json_object_new_string(arg_session));
        if (r >= 0 && arg_callback_url)
                r = json_add(req, "callback_url", json_object_new_string(arg_callback_url));
        if (r >= 0 && arg_environment)
                r = json_add(req, "environment", json_object_new_string(arg_environment));
        if (r >= 0 && arg_timeout_ms_set)
                r = json_add(limits, "timeout_ms", json_object_new_int64((int64_t) arg_timeout_ms));
        if (r >= 0 && arg_memory_mb_set)
                r = json_add(limits, "memory_mb", json_object_new_int64((int64_t) arg_memory_mb));
        if (r >= 0 && arg_cpu_cores_set)
                r = json_add(limits, "cpu_cores", json_object_new_double(arg_cpu_cores));
        if (r >= 0 && arg_disk_mb_set)
                r = json_add(limits, "disk_mb", json_object_new_int64((int64_t) arg_disk_mb));
        if (r >= 0 && json_object_object_length(limits) > 0)
                r = json_add(req, "limits", TAKE_PTR(limits));
        if (r >= 0 && arg_env)
                r = json_add(req, "env", json_object_get(arg_env));
        if (r >= 0 && arg_files)
                r = json_add(req, "files", json_object_get(arg_files));
        if (r >= 0 && in_size > 0)
                r = json_add(req, "stdin", json_object_new_string_len(in, (int) in_size));
        if (r >= 0 && arg_program_args) {
                json_object *a = json_object_new_array();

                r = a ? 0 : -ENOMEM;
                for (size_t i = 0; r >= 0 && i < arg_n_program_args; i++)
                        r = json_object_array_add(a, json_object_new_string(arg_program_args[i])) < 0 ? -ENOMEM : 0;
                if (r >= 0)
                        r = json_add(req, "args", a);
                else
                        json_object_put(a);
        }
        if (r >= 0 && arg_allow_net) {
                json_object *net = json_object_new_object();

                r = net ? json_add(net, "allow", json_object_get(arg_allow_net)) : -ENOMEM;
                if (r >= 0)
                        r = json_add(req, "network", net);
                else
                        json_object_put(net);
        }
        if (r < 0)
                return log_oom();

        *ret = TAKE_PTR(req);
        return 0;
}

/* The end of run: the verdict that is not the program's own doing, and the exit status. printed:
 * the output already went out as it came (the events), else it is printed here from the record. */
static int run_finish(const CtlExecution *e, bool printed) {
        int r;

        if (!printed) {
                /* Byte for byte: this is the program's output, not ours. */
                if (e->out.s && e->out.len > 0)
                        fwrite(e->out.s, 1, e->out.len, stdout);
                r = flush_stdout();
                if (r < 0)
                        return EX_OSERR;
                if (e->err.s && e->err.len > 0) {
                        fwrite(e->err.s, 1, e->err.len, stderr);
                        fflush(stderr);
                }
        } else if (flush_stdout() < 0)
                return EX_OSERR;

        /* A verdict that is not the program's own doing would otherwise show up as a bare exit
         * status. Tell a human at a terminal why; leave captured stderr exactly the program's. */
        /* The program never ran: nothing of its own is on stderr, and the caller needs to know which
         * input failed, terminal or not. */
        if (streq_ptr(e->error_type.s, "input_error") && e->error_message.s) {
                fprintf(stderr, "sandboxctl: %s: input_error: ", e->execution_id.s);
                fputs_escaped(stderr, e->error_message.s, e->error_message.len, false);
                fputc('\n', stderr);
        } else if (!streq(e->status.s, "success") && !streq_ptr(e->error_type.s, "runtime_error") &&
            !streq_ptr(e->error_type.s, "compile_error") && isatty(STDERR_FILENO)) {
                if ((e->err.len > 0 && e->err.s[e->err.len - 1] != '\n') ||
                    (e->out.len > 0 && e->out.s[e->out.len - 1] != '\n'))
                        fputc('\n', stderr);
                fprintf(stderr, "sandboxctl: %s: %s", e->execution_id.s, e->error_type.s ?: e->status.s);
                if (e->reason.s) {
                        fputs(": ", stderr);
                        fputs_escaped(stderr, e->reason.s, e->reason.len, false);
                }
                fputc('\n', stderr);
        }

        return execution_exit_status(e);
}

static int verb_execute(char **args, size_t n_args, bool wait) {
        _cleanup_(json_object_putp) json_object *req = NULL, *answer = NULL, *record = NULL;
        _cleanup_free_ char *path = NULL;
        CtlExecution e;
        bool live;
        long status;
        int r;

        if (arg_code && n_args > 0) {
                (void) log_error_errno(-EINVAL, "Specify either FILE, '-' or -c CODE, not several.");
                return EX_USAGE;
        }
        if (!arg_code && n_args == 0) {
                (void) log_error_errno(-EINVAL, "Expected FILE, '-' (standard input) or -c CODE.");
                return EX_USAGE;
        }

        r = build_request(n_args > 0 ? args[0] : NULL, &req);
        if (r < 0)
                return exit_status_for(r, EX_USAGE);

        /* run without --json prints the output as it comes: submit, then follow the events. With
         * --json the answer is the record, so it waits for it as before. */
        live = wait && !arg_json;
        r = http_call("POST", wait && !live ? "/v1/executions?wait=true" : "/v1/executions", req, wait && !live,
                      &status, &answer);
        if (r < 0)
                return exit_status_for(r, EX_UNAVAILABLE);
        if (status < 200 || status >= 300)
                return log_http_error(status, answer, false);

        r = execution_parse(answer, &e);
        if (r < 0)
                return EX_UNAVAILABLE;

        if (!wait) {
                if (arg_json)
                        r = print_json(answer);
                else {
                        fwrite(e.execution_id.s, 1, e.execution_id.len, stdout);
                        fputc('\n', stdout);
                        r = flush_stdout();
                }
                return r < 0 ? exit_status_for(r, EX_OSERR) : EXIT_SUCCESS;
        }

        if (live) {
                /* The execution_id as we named it: the events route resolves it for its owner as
                 * GET /v1/executions/{id} does. */
                r = follow_events(e.execution_id.s, true, &record);
                if (r > 1)
                        return r;
                if (r == 0) {
                        if (execution_parse(record, &e) < 0)
                                return EX_UNAVAILABLE;
                        if (!execution_is_final(&e)) {
                                (void) log_error_errno(-EBADMSG, "sandboxd's result for %s is not final (status: %s).",
                                                       e.execution_id.s, e.status.s);
                                return EX_UNAVAILABLE;
                        }
                        return run_finish(&e, true);
                }
                /* No events route (an older sandboxd; nothing printed yet): wait for the record. */
                if (asprintf(&path, "/v1/executions/%s?wait=true", e.execution_id.s) < 0) {
                        path = NULL;
                        (void) log_oom();
                        return EX_OSERR;
                }
                json_object_put(TAKE_PTR(answer));
                r = http_call_ok("GET", path, NULL, true, false, &answer);
                if (r != 0)
                        return r;
                r = execution_parse(answer, &e);
                if (r < 0)
                        return EX_UNAVAILABLE;
        }

        if (!execution_is_final(&e)) {
                (void) log_error_errno(-EBADMSG,
                                       "sandboxd answered before execution %s was final (status: %s).",
                                       e.execution_id.s, e.status.s);
                return EX_UNAVAILABLE;
        }

        if (arg_json) {
                r = print_json(answer);
                if (r < 0)
                        return EX_OSERR;
                return execution_exit_status(&e);
        }

        return run_finish(&e, false);
}

int verb_run(char **args, size_t n_args) {
        return verb_execute(args, n_args, true);
}

int verb_submit(char **args, size_t n_args) {
        return verb_execute(args, n_args, false);
}
