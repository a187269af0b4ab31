/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "environment.h"
#include "summary.h"
#include "utf8.h"
#include "util.h"

/* What the sentence of a row is given: the one fact it names. */
typedef enum SummaryArg {
        ARG_NONE,
        ARG_TIMEOUT_MS,
        ARG_MEMORY_MB,
        ARG_DISK_MB,
        ARG_TASKS,
        ARG_EXIT_CODE,
        ARG_SIGNAL,
        ARG_REASON,              /* the record's reason */
        ARG_DETAIL,              /* error_message, else reason */
} SummaryArg;

typedef struct SummaryRow {
        ExecStatus status;
        ErrorType error_type;
        bool (*match)(const Execution *e);   /* NULL: any of that status and error type */
        const char *template;                /* one %s: the argument */
        SummaryArg arg;
} SummaryRow;

static bool match_signal(const Execution *e) {
        return e->signal > 0;
}

static bool match_sigsys(const Execution *e) {
        return e->signal == SIGSYS;
}

static bool match_sigxfsz(const Execution *e) {
        return e->signal == SIGXFSZ;
}

static bool match_sigxcpu(const Execution *e) {
        return e->signal == SIGXCPU;
}

/* The verdict's reasons (verdict/verdict.c) tell the resource limits apart. */
static bool match_tasks(const Execution *e) {
        return e->reason && strstr(e->reason, "task limit");
}

static bool match_disk(const Execution *e) {
        return e->reason && strstr(e->reason, "disk limit");
}

/* First match wins. Every status and error type sandboxd produces has a row (the unit test checks). */
static const SummaryRow summary_rows[] = {
        { EXEC_SUCCESS, ERROR_NONE, NULL,
          "The program succeeded (exit code 0).", ARG_NONE },
        { EXEC_CANCELLED, ERROR_NONE, NULL,
          "The execution was cancelled by the caller before it finished.", ARG_NONE },
        { EXEC_ORPHANED, ERROR_NONE, NULL,
          "The node running the execution was lost before it finished; what it did is unknown.", ARG_NONE },
        { EXEC_FAILED, ERROR_TIMEOUT, NULL,
          "The program timed out after %s ms (timeout_ms).", ARG_TIMEOUT_MS },
        { EXEC_FAILED, ERROR_OOM, NULL,
          "The program was killed at the memory limit of %s MiB (memory_mb).", ARG_MEMORY_MB },
        { EXEC_FAILED, ERROR_RESOURCE_LIMIT, match_tasks,
          "A fork failed at the task limit of %s tasks (tasks).", ARG_TASKS },
        { EXEC_FAILED, ERROR_RESOURCE_LIMIT, match_disk,
          "A write failed: the disk limit of %s MiB (disk_mb) is full.", ARG_DISK_MB },
        { EXEC_FAILED, ERROR_RESOURCE_LIMIT, match_sigxfsz,
          "The program was killed by SIGXFSZ: a file grew past the file size limit (disk_mb %s MiB).", ARG_DISK_MB },
        { EXEC_FAILED, ERROR_RESOURCE_LIMIT, match_sigxcpu,
          "The program was killed by SIGXCPU: the CPU time limit was used up (%s).", ARG_REASON },
        { EXEC_FAILED, ERROR_RESOURCE_LIMIT, NULL,
          "The program stopped at a resource limit: %s.", ARG_REASON },
        { EXEC_FAILED, ERROR_COMPILE, NULL,
          "The program failed to compile (compile error) and did not run.", ARG_NONE },
        { EXEC_FAILED, ERROR_RUNTIME, match_sigsys,
          "The program was killed by SIGSYS: it made a system call the sandbox forbids.", ARG_NONE },
        { EXEC_FAILED, ERROR_RUNTIME, match_signal,
          "The program was killed by signal %s.", ARG_SIGNAL },
        { EXEC_FAILED, ERROR_RUNTIME, NULL,
          "The program exited with code %s.", ARG_EXIT_CODE },
        { EXEC_FAILED, ERROR_INPUT, NULL,
          "An input file could not be fetched or written, so the program did not run: %s.", ARG_DETAIL },
        { EXEC_FAILED, ERROR_INTERNAL, NULL,
          "sandboxd could not run the program (internal error, not the program's fault; retrying may help): %s.",
          ARG_REASON },
        /* A failure without an error type is not one sandboxd makes; say what is known. */
        { EXEC_FAILED, ERROR_NONE, NULL,
          "The execution failed: %s.", ARG_REASON },
};

static const SummaryRow *summary_row(const Execution *e) {
        for (size_t i = 0; i < ELEMENTSOF(summary_rows); i++) {
                const SummaryRow *r = summary_rows + i;

                if (r->status == e->status && (r->status != EXEC_FAILED || r->error_type == e->error_type) &&
                    (!r->match || r->match(e)))
                        return r;
        }
        return NULL;
}

const char *summary_verdict_template(const Execution *e) {
        const SummaryRow *r;

        if (!exec_status_is_final(e->status))
                return NULL;
        r = summary_row(e);
        return r ? r->template : NULL;
}

/* ---- a bounded buffer ---- */

typedef struct Sb {
        char buf[SUMMARY_MAX + 1];
        size_t len;
} Sb;

/* How much of s (n bytes, valid UTF-8 as the record keeps its texts) fits in max bytes, ending where a
 * character ends. */
static size_t fit(const char *s, size_t n, size_t max) {
        if (n <= max)
                return n;
        while (max > 0 && ((unsigned char) s[max] & 0xC0) == 0x80)
                max--;
        return max;
}

static size_t room(const Sb *b) {
        return SUMMARY_MAX - b->len;
}

/* Appends what fits of n bytes of hostile text: C0 control characters other than \n and \t and DEL
 * are left out (a terminal escape is nothing a model reads), a cut falls between characters. Returns
 * the bytes of s consumed. */
static size_t sb_add_text(Sb *b, const char *s, size_t n, size_t max) {
        size_t i = 0, limit = MIN(max, room(b)), used = 0;

        while (i < n) {
                unsigned char c = (unsigned char) s[i];
                size_t k = 1;

                if (c >= 0x80) {
                        k = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
                        if (i + k > n)
                                break;
                } else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) {
                        i++;
                        continue;
                }
                if (used + k > limit)
                        break;
                memcpy(b->buf + b->len, s + i, k);
                b->len += k;
                used += k;
                i += k;
        }
        b->buf[b->len] = '\0';
        return i;
}

_printf_(2, 3) static void sb_printf(Sb *b, const char *fmt, ...) {
        char tmp[SUMMARY_MAX + 1];
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vsnprintf(tmp, sizeof(tmp), fmt, ap);
        va_end(ap);
        if (k < 0)
                return;
        (void) sb_add_text(b, tmp, MIN((size_t) k, sizeof(tmp) - 1), SIZE_MAX);
}

static void sb_newline(Sb *b) {
        if (b->len > 0 && b->buf[b->len - 1] != '\n')
                sb_printf(b, "\n");
}

/* ---- what stderr shows ---- */

static bool node_module_name_is_valid(const char *s, size_t n) {
        if (n == 0 || n > SUMMARY_MODULE_MAX || s[0] == '.' || s[0] == '/')
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];

                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '@' ||
                      c == '/' || c == '.' || c == '_' || c == '-'))
                        return false;
        }
        return !memmem(s, n, "..", 2);
}

static int node_missing_module(const char *err, size_t len, char *buf) {
        static const char *const markers[] = { "Cannot find module '", "Cannot find package '" };
        int found = 0;

        for (size_t m = 0; m < ELEMENTSOF(markers) && !found; m++) {
                size_t ml = strlen(markers[m]);

                for (size_t i = 0; i + ml <= len;) {
                        const char *hit = memmem(err + i, len - i, markers[m], ml), *name, *q;

                        if (!hit)
                                break;
                        name = hit + ml;
                        q = memchr(name, '\'', MIN((size_t) (err + len - name), (size_t) SUMMARY_MODULE_MAX + 1));
                        if (q && node_module_name_is_valid(name, (size_t) (q - name))) {
                                memcpy(buf, name, (size_t) (q - name));
                                buf[q - name] = '\0';
                                found = 1;
                                break;   /* the first: node's own error line precedes what a program prints */
                        }
                        i = (size_t) (name - err);
                }
        }
        return found;
}

int summary_missing_module(const char *err, size_t len, char *buf, size_t n) {
        if (!err || !buf || n < SUMMARY_MODULE_MAX + 1)
                return 0;
        if (missing_module_from_stderr(err, len, buf, n) > 0)
                return 1;
        return node_missing_module(err, len, buf);
}

bool summary_network_error(const char *err, size_t len) {
        static const char *const patterns[] = {
                "Network is unreachable",
                "ENETUNREACH",
                "Temporary failure in name resolution",
                "Name or service not known",
                "EAI_AGAIN",
                "getaddrinfo ENOTFOUND",
                "Could not resolve host",
                "Connection refused",
                "ECONNREFUSED",
                /* A run without network may not even make an inet socket (RestrictAddressFamilies=). */
                "Address family not supported by protocol",
                "EAFNOSUPPORT",
        };

        if (!err)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(patterns); i++)
                if (memmem(err, len, patterns[i], strlen(patterns[i])))
                        return true;
        return false;
}

/* ---- the parts ---- */

static void format_arg(const Execution *e, SummaryArg a, char *buf, size_t size) {
        const char *name;

        switch (a) {
        case ARG_TIMEOUT_MS:
                snprintf(buf, size, "%" PRIu64, e->limits.timeout_ms);
                break;
        case ARG_MEMORY_MB:
                snprintf(buf, size, "%" PRIu64, e->limits.memory_mb);
                break;
        case ARG_DISK_MB:
                snprintf(buf, size, "%" PRIu64, e->limits.disk_mb);
                break;
        case ARG_TASKS:
                snprintf(buf, size, "%" PRIu64, e->limits.tasks);
                break;
        case ARG_EXIT_CODE:
                if (e->exit_code >= 0)
                        snprintf(buf, size, "%d", e->exit_code);
                else
                        snprintf(buf, size, "unknown");
                break;
        case ARG_SIGNAL:
                name = sigabbrev_np(e->signal);
                if (name)
                        snprintf(buf, size, "%d (SIG%s)", e->signal, name);
                else
                        snprintf(buf, size, "%d", e->signal);
                break;
        case ARG_DETAIL:
                snprintf(buf, size, "%s", e->error_message ?: e->reason ?: "no details");
                break;
        case ARG_REASON:
                snprintf(buf, size, "%s", e->reason ?: "no reason recorded");
                break;
        case ARG_NONE:
        default:
                buf[0] = '\0';
        }
        /* A reason or message is a sentence of its own at times: the template ends it. */
        if ((a == ARG_DETAIL || a == ARG_REASON) && size > 0) {
                size_t n = strlen(buf);

                if (n > 0 && buf[n - 1] == '.')
                        buf[n - 1] = '\0';
        }
}

static void add_verdict(Sb *b, const Execution *e, const SummaryRow *row) {
        char arg[1024];

        format_arg(e, row->arg, arg, sizeof(arg));
        /* The template has at most one %s, the argument. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        sb_printf(b, row->template, arg);
#pragma GCC diagnostic pop
        sb_printf(b, "\n");
}

static void add_hints(Sb *b, const Execution *e) {
        const char *err = e->err.text ?: "";
        size_t n = strlen(err);
        char module[SUMMARY_MODULE_MAX + 1];

        if (e->error_type != ERROR_RUNTIME)
                return;
        if (summary_missing_module(err, n, module, sizeof(module)) > 0) {
                if (e->environment)
                        sb_printf(b, "module '%s' is not installed in environment '%s'.\n", module, e->environment);
                else
                        sb_printf(b, "module '%s' is not installed in the default environment of language '%s'.\n",
                                  module, strna(e->language));
        }
        if (!e->network && summary_network_error(err, n))
                sb_printf(b, "network is disabled for this run: the sandbox has no network (a request asks for it "
                             "with \"network\").\n");
}

static void add_exit(Sb *b, const Execution *e) {
        char arg[64];

        if (e->signal > 0) {
                format_arg(e, ARG_SIGNAL, arg, sizeof(arg));
                sb_printf(b, "signal: %s\n", arg);
        } else if (e->exit_code >= 0)
                sb_printf(b, "exit code: %d\n", e->exit_code);
        else
                sb_printf(b, "exit code: none (the program did not exit by itself)\n");
}

/* The first SUMMARY_STDOUT_LINES lines of stdout within max bytes, then what was left out. */
static void add_stdout(Sb *b, const Execution *e, size_t max) {
        const char *s = e->out.text ?: "";
        size_t n = strlen(s), end = 0, shown = 0, used;

        if (n == 0) {
                sb_printf(b, "stdout: (empty)\n");
                return;
        }
        sb_printf(b, "stdout (%" PRIu64 " lines, %" PRIu64 " bytes):\n", e->out.lines, e->out.bytes);
        while (end < n && shown < SUMMARY_STDOUT_LINES) {
                const char *nl = memchr(s + end, '\n', n - end);

                end = nl ? (size_t) (nl - s) + 1 : n;
                shown++;
        }
        used = sb_add_text(b, s, end, max);
        sb_newline(b);
        if (used < end)
                sb_printf(b, "(stdout cut at %zu bytes)\n", used);
        if (e->out.lines > shown)
                sb_printf(b, "(%" PRIu64 " more lines)\n", e->out.lines - shown);
}

static void add_artifacts(Sb *b, const Execution *e) {
        const ExecArtifacts *a = e->artifacts;
        size_t listed = 0;

        if (!a || a->n_items == 0) {
                sb_printf(b, "artifacts: none\n");
        } else {
                sb_printf(b, "artifacts (%zu):\n", a->n_items);
                for (; listed < a->n_items; listed++) {
                        const ExecArtifact *x = a->items + listed;
                        char line[5120];
                        int k = snprintf(line, sizeof(line), "- %s (%s, %" PRIu64 " bytes)\n", x->path,
                                         strna(x->mime_type), x->size);

                        /* Room kept for the note of those not listed. */
                        if (k < 0 || (size_t) k >= sizeof(line) || (size_t) k + 96 > room(b))
                                break;
                        sb_printf(b, "%s", line);
                }
                if (listed < a->n_items)
                        sb_printf(b, "(%zu more artifacts: see \"artifacts\")\n", a->n_items - listed);
        }
        if (a && a->n_skipped_total > 0)
                sb_printf(b, "(%" PRIu64 " files of output/ were not collected: see \"artifacts_skipped\")\n",
                          a->n_skipped_total);
}

/* stderr within max bytes: its head and its tail, with a line saying how much is left out between. */
static void add_stderr(Sb *b, const Execution *e, size_t max) {
        const char *s = e->err.text ?: "";
        size_t n = strlen(s), head, tail = 0;
        char marker[96];

        if (n == 0) {
                sb_printf(b, "stderr: (empty)\n");
                return;
        }
        sb_printf(b, "stderr (%" PRIu64 " bytes, %" PRIu64 " lines%s):\n", e->err.bytes, e->err.lines,
                  e->err.truncated ? ", head and tail kept by the capture" : "");
        max = MIN(max, room(b));
        if (n <= max) {
                (void) sb_add_text(b, s, n, max);
                sb_newline(b);
                return;
        }
        max = max > sizeof(marker) ? max - sizeof(marker) : 0;
        head = fit(s, n, max / 2);
        {
                size_t start = n - max / 2;

                while (start < n && ((unsigned char) s[start] & 0xC0) == 0x80)
                        start++;
                tail = n - start;
        }
        (void) sb_add_text(b, s, head, head);
        sb_newline(b);
        snprintf(marker, sizeof(marker), "... %zu bytes elided ...\n", n - head - tail);
        sb_printf(b, "%s", marker);
        (void) sb_add_text(b, s + n - tail, tail, tail);
        sb_newline(b);
}

char *summary_build(const Execution *e) {
        _cleanup_free_ Sb *b = NULL;
        const SummaryRow *row;

        if (!e || !exec_status_is_final(e->status))
                return NULL;
        row = summary_row(e);
        if (!row)
                return NULL;
        b = calloc(1, sizeof(Sb));
        if (!b)
                return NULL;
        add_verdict(b, e, row);
        if (e->status == EXEC_SUCCESS) {
                add_stdout(b, e, SUMMARY_STDOUT_MAX);
                add_artifacts(b, e);
        } else {
                add_hints(b, e);
                add_exit(b, e);
                if (e->error_message && row->arg != ARG_DETAIL) {
                        sb_printf(b, "details: ");
                        (void) sb_add_text(b, e->error_message, strlen(e->error_message), 1024);
                        sb_newline(b);
                }
                /* stderr gets what is left but room for the first lines of stdout. */
                add_stderr(b, e, room(b) > 1536 ? room(b) - 1024 : room(b) / 2);
                if (e->out.text && e->out.text[0])
                        add_stdout(b, e, room(b) > 128 ? room(b) - 128 : 0);
        }
        /* sb_add_text() keeps whole characters, but a record's texts are not re-checked here. */
        if (!utf8_is_valid(b->buf, b->len)) {
                _cleanup_free_ char *s = utf8_sanitize(b->buf, b->len, NULL);

                if (!s)
                        return NULL;
                b->len = 0;
                (void) sb_add_text(b, s, strlen(s), SUMMARY_MAX);
        }
        return strndup(b->buf, b->len);
}
