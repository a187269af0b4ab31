/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The execution object: parsed, as an exit status, and shown; see sandboxctl-execution.h. */

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "sandboxctl.h"
#include "sandboxctl-execution.h"
#include "sandboxctl-table.h"
#include "sandboxctl-util.h"

int execution_parse(json_object *j, CtlExecution *ret) {
        static const CtlField fields[] = {
                { "execution_id", FIELD_STRING, offsetof(CtlExecution, execution_id), true },
                { "status", FIELD_STRING, offsetof(CtlExecution, status), true },
                { "session_id", FIELD_STRING, offsetof(CtlExecution, session_id), false },
                { "language", FIELD_STRING, offsetof(CtlExecution, language), false },
                { "error_type", FIELD_STRING, offsetof(CtlExecution, error_type), false },
                { "unit", FIELD_STRING, offsetof(CtlExecution, unit), false },
                { "reason", FIELD_STRING, offsetof(CtlExecution, reason), false },
                { "error_message", FIELD_STRING, offsetof(CtlExecution, error_message), false },
                { "stdout", FIELD_STRING, offsetof(CtlExecution, out), false },
                { "stderr", FIELD_STRING, offsetof(CtlExecution, err), false },
                { "created_at", FIELD_STRING, offsetof(CtlExecution, created_at), false },
                { "exit_code", FIELD_INTEGER, offsetof(CtlExecution, exit_code), false },
                { "signal", FIELD_INTEGER, offsetof(CtlExecution, signal), false },
                { "duration_ms", FIELD_INTEGER, offsetof(CtlExecution, duration_ms), false },
                { "cpu_time_ms", FIELD_INTEGER, offsetof(CtlExecution, cpu_time_ms), false },
                { "stdout_bytes", FIELD_INTEGER, offsetof(CtlExecution, stdout_bytes), false },
                { "stdout_lines", FIELD_INTEGER, offsetof(CtlExecution, stdout_lines), false },
                { "stderr_bytes", FIELD_INTEGER, offsetof(CtlExecution, stderr_bytes), false },
                { "stderr_lines", FIELD_INTEGER, offsetof(CtlExecution, stderr_lines), false },
                { "peak_memory_mb", FIELD_NUMBER, offsetof(CtlExecution, peak_memory_mb), false },
                { "stdout_truncated", FIELD_BOOLEAN, offsetof(CtlExecution, stdout_truncated), false },
                { "stderr_truncated", FIELD_BOOLEAN, offsetof(CtlExecution, stderr_truncated), false },
        };
        static const CtlField callback_fields[] = {
                { "url", FIELD_STRING, offsetof(CtlExecution, callback.url), true },
                { "state", FIELD_STRING, offsetof(CtlExecution, callback.state), true },
                { "last_error", FIELD_STRING, offsetof(CtlExecution, callback.last_error), false },
                { "attempts", FIELD_INTEGER, offsetof(CtlExecution, callback.attempts), false },
        };
        CtlExecution e = {};
        json_object *cb = NULL;
        int r;

        r = json_dispatch(j, "the execution", fields, ELEMENTSOF(fields), &e);
        if (r < 0)
                return r;
        /* Present once a final execution has a callback delivery. */
        if (json_object_object_get_ex(j, "callback", &cb) && cb) {
                r = json_dispatch(cb, "the callback", callback_fields, ELEMENTSOF(callback_fields), &e);
                if (r < 0)
                        return r;
        }

        /* These end up in our exit status: out of range values must not turn into a wrong one. */
        if (e.exit_code.set && (e.exit_code.value < 0 || e.exit_code.value > 255))
                return log_error_errno(-EBADMSG, "Malformed answer from sandboxd: exit_code %" PRIi64
                                       " is out of range.", e.exit_code.value);
        if (e.signal.set && (e.signal.value < 1 || e.signal.value > 127))
                return log_error_errno(-EBADMSG, "Malformed answer from sandboxd: signal %" PRIi64
                                       " is out of range.", e.signal.value);

        {
                json_object *n;

                if (json_object_object_get_ex(j, "network", &n) && json_object_is_type(n, json_type_object))
                        e.network = n;
        }
        *ret = e;
        return 0;
}

bool execution_is_final(const CtlExecution *e) {
        return streq_ptr(e->status.s, "success") || streq_ptr(e->status.s, "failed") ||
               streq_ptr(e->status.s, "cancelled") || streq_ptr(e->status.s, "orphaned");
}

/* The verdict as an exit status, see EXIT STATUS in sandboxctl(1). */
int execution_exit_status(const CtlExecution *e) {
        static const struct {
                const char *error_type;
                int exit_status;
        } table[] = {
                { "compile_error", EXIT_COMPILE_ERROR },
                { "timeout", EXIT_TIMEOUT },
                { "oom", EXIT_OOM },
                { "resource_limit", EXIT_RESOURCE_LIMIT },
                { "internal_error", EXIT_INTERNAL_ERROR },
                { "input_error", EXIT_INPUT_ERROR },
        };

        if (streq_ptr(e->status.s, "success"))
                return EXIT_SUCCESS;
        if (streq_ptr(e->status.s, "cancelled"))
                return EXIT_CANCELLED;
        if (streq_ptr(e->status.s, "orphaned"))
                return EXIT_ORPHANED;

        if (streq_ptr(e->error_type.s, "runtime_error")) {
                /* A failed run must never exit 0, even if the daemon reports exit_code 0 (it decided
                 * the failure from something else). */
                if (e->exit_code.set && e->exit_code.value > 0)
                        return (int) e->exit_code.value;
                if (e->signal.set)
                        return 128 + (int) e->signal.value;
                return EXIT_FAILURE;
        }
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (streq_ptr(e->error_type.s, table[i].error_type))
                        return table[i].exit_status;

        /* An error type this version does not know yet: still a failure. */
        return EXIT_FAILURE;
}

static void print_duration_field(const char *key, const CtlInteger *i) {
        if (!i->set)
                return;
        print_key(key);
        if (i->value < 1000)
                printf("%" PRIi64 "ms\n", i->value);
        else
                printf("%" PRIi64 ".%03" PRIi64 "s\n", i->value / 1000, i->value % 1000);
}

static const char *net_string(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static int64_t net_int(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return -1;
        return json_object_get_int64(v);
}

static void net_put(const char *s) {
        if (s)
                fputs_escaped(stdout, s, strlen(s), false);
        else
                fputs("-", stdout);
}

/* The network log of a run with network: the allow list, then one line per connection or request. */
static void print_network_section(json_object *n) {
        json_object *allow = NULL, *requests = NULL;
        const char *note = net_string(n, "error");

        print_key("Network");
        if (json_object_object_get_ex(n, "allow", &allow) && json_object_is_type(allow, json_type_array))
                for (size_t i = 0; i < json_object_array_length(allow); i++) {
                        json_object *a = json_object_array_get_idx(allow, i);

                        if (i > 0)
                                fputs(" ", stdout);
                        net_put(json_object_is_type(a, json_type_string) ? json_object_get_string(a) : NULL);
                }
        printf(" (%" PRIi64 " requests)\n", net_int(n, "requests_total"));
        if (note) {
                print_key("Network log");
                net_put(note);
                printf("\n");
        }
        if (!json_object_object_get_ex(n, "requests", &requests) || !json_object_is_type(requests, json_type_array))
                return;
        for (size_t i = 0; i < json_object_array_length(requests); i++) {
                json_object *q = json_object_array_get_idx(requests, i);
                const char *reason = net_string(q, "reason"), *address = net_string(q, "address");

                printf("  ");
                net_put(net_string(q, "started_at"));
                printf(" ");
                net_put(net_string(q, "decision"));
                printf(" ");
                net_put(net_string(q, "method"));
                printf(" ");
                net_put(net_string(q, "host"));
                printf(":%" PRIi64, net_int(q, "port"));
                if (address) {
                        printf(" via ");
                        net_put(address);
                }
                printf(" up=%" PRIi64 " down=%" PRIi64 " %" PRIi64 "ms", net_int(q, "bytes_up"), net_int(q, "bytes_down"),
                       net_int(q, "duration_ms"));
                if (reason) {
                        printf(": ");
                        net_put(reason);
                }
                printf("\n");
        }
}

static void print_output_section(const char *name, const CtlString *s, const CtlInteger *bytes,
                                 const CtlInteger *lines, bool truncated) {
        if (!s->s || (s->len == 0 && (!bytes->set || bytes->value == 0)))
                return;

        printf("\n-- %s", name);
        if (bytes->set)
                printf(": %" PRIi64 " byte%s", bytes->value, bytes->value == 1 ? "" : "s");
        if (lines->set)
                printf(", %" PRIi64 " line%s", lines->value, lines->value == 1 ? "" : "s");
        if (truncated)
                printf(", truncated");
        printf(" --\n");
        fputs_escaped(stdout, s->s, s->len, true);
        if (s->len > 0 && s->s[s->len - 1] != '\n')
                fputc('\n', stdout);
}

int execution_print(const CtlExecution *e) {
        print_string_field("Execution", &e->execution_id);
        print_string_field("Session", &e->session_id);
        print_string_field("Language", &e->language);
        print_string_field("Status", &e->status);
        print_string_field("Error", &e->error_type);
        if (e->exit_code.set) {
                print_key("Exit code");
                printf("%" PRIi64 "\n", e->exit_code.value);
        }
        if (e->signal.set) {
                const char *name = sigabbrev_np((int) e->signal.value);

                print_key("Signal");
                if (name)
                        printf("%" PRIi64 " (SIG%s)\n", e->signal.value, name);
                else
                        printf("%" PRIi64 "\n", e->signal.value);
        }
        print_duration_field("Duration", &e->duration_ms);
        print_duration_field("CPU time", &e->cpu_time_ms);
        if (e->peak_memory_mb.set) {
                print_key("Peak memory");
                printf("%.1fM\n", e->peak_memory_mb.value);
        }
        print_string_field("Unit", &e->unit);
        print_string_field("Reason", &e->reason);
        if (e->callback.state.s) {
                print_key("Callback");
                printf("%s", e->callback.state.s);
                if (e->callback.attempts.set)
                        printf(" after %" PRIi64 " attempt%s", e->callback.attempts.value,
                               e->callback.attempts.value == 1 ? "" : "s");
                printf(" to ");
                fputs_escaped(stdout, e->callback.url.s, e->callback.url.len, false);
                if (e->callback.last_error.s) {
                        printf(" (");
                        fputs_escaped(stdout, e->callback.last_error.s, e->callback.last_error.len, false);
                        printf(")");
                }
                printf("\n");
        }
        print_string_field("Message", &e->error_message);
        if (e->network)
                print_network_section(e->network);

        print_output_section("stdout", &e->out, &e->stdout_bytes, &e->stdout_lines, e->stdout_truncated);
        print_output_section("stderr", &e->err, &e->stderr_bytes, &e->stderr_lines, e->stderr_truncated);

        return flush_stdout();
}
