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
 * clear error message, never a crash or a misleading exit status. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* sigabbrev_np(), asprintf() */
#endif

#include <assert.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <openssl/evp.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sysexits.h>
#include <time.h>

#include "utf8.h"
#include "util.h"

#define DEFAULT_SOCKET "/run/sandboxd/api.sock"

/* An execution's answer carries at most 2×128 KiB of output per stream plus metadata, so 64 MiB is
 * generous; the bound only exists so that a broken peer cannot make us allocate without limit. */
#define ANSWER_MAX ((size_t) 64 * 1024 * 1024)

/* The daemon refuses much smaller code (MaxCodeBytes=, 1 MiB by default) and says so with its own
 * message; this cap only keeps us from reading a runaway pipe into memory. */
#define CODE_MAX ((size_t) 16 * 1024 * 1024)

/* Requests that do not wait for an execution should be answered at once; do not hang forever on a
 * wedged daemon. Requests that wait (run, status --wait) have no timeout unless asked for. */
#define DEFAULT_CLIENT_TIMEOUT_MS UINT64_C(30000)

/* "list --all" follows next_cursor at most this many times, so that a daemon handing out cursors
 * forever cannot keep us going (and growing) forever. */
#define LIST_PAGES_MAX 100

/* "stats" reads at most this many pages of 1000 executions: a million executions is a window far
 * wider than the statistics of one command should walk. It says so when it stops short. */
#define STATS_PAGES_MAX 1000

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
        EXIT_OOM = 137,
};

static const char *arg_socket = NULL;
static bool arg_json = false;
static bool arg_wait = false;
static bool arg_client_timeout_set = false;
static uint64_t arg_client_timeout_ms = 0;
static const char *arg_language = NULL;
static const char *arg_code = NULL;
static const char *arg_session = NULL;
static const char *arg_id = NULL;
static const char *arg_callback_url = NULL;
static bool arg_timeout_ms_set = false, arg_memory_mb_set = false, arg_disk_mb_set = false,
            arg_cpu_cores_set = false;
static uint64_t arg_timeout_ms = 0, arg_memory_mb = 0, arg_disk_mb = 0;
static double arg_cpu_cores = 0;
static json_object *arg_env = NULL;
static json_object *arg_files = NULL;    /* --input, --input-url: the request's "files" */
static const char *arg_status = NULL;
static const char *arg_error_type = NULL;
static bool arg_failed = false;
static const char *arg_order = NULL;
static bool arg_limit_set = false;
static uint64_t arg_limit = 0;
static const char *arg_cursor = NULL;
static bool arg_all = false;
static const char *arg_get = NULL;
static const char *arg_dest = NULL;
static const char *arg_output = NULL;
static bool arg_once = false;
static uint64_t arg_interval_usec = 1000000;
static uint64_t arg_window_usec = UINT64_C(3600) * 1000000;

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
};
static unsigned arg_option_groups = 0;
static const char *arg_option_group_first[_OPTION_GROUP_MAX] = {};

static inline const char *strempty(const char *s) {
        return s ?: "";
}

static inline void json_object_putp(json_object **j) {
        if (*j)
                json_object_put(*j);
}
static inline void json_tokener_freep(json_tokener **t) {
        if (*t)
                json_tokener_free(*t);
}
static inline void curl_easy_cleanupp(CURL **c) {
        if (*c)
                curl_easy_cleanup(*c);
}
static inline void curl_slist_free_allp(struct curl_slist **l) {
        if (*l)
                curl_slist_free_all(*l);
}

/* Log "sandboxctl: <message>" to stderr, with %m expanding to the error r. Returns r (negative). */
_printf_(2, 3) static int log_error_errno(int r, const char *format, ...) {
        va_list ap;

        errno = r < 0 ? -r : r;
        fputs("sandboxctl: ", stderr);
        va_start(ap, format);
        vfprintf(stderr, format, ap);
        va_end(ap);
        fputc('\n', stderr);
        return r < 0 ? r : -EINVAL;
}
#define log_oom() log_error_errno(-ENOMEM, "Out of memory.")

/* Allocation failures are local system errors; everything else in a phase gets that phase's status. */
static int exit_status_for(int r, int otherwise) {
        return r == -ENOMEM || r == -EIO ? EX_OSERR : otherwise;
}

static int flush_stdout(void) {
        if (fflush(stdout) != 0 || ferror(stdout))
                return log_error_errno(-EIO, "Failed to write to standard output: %s", strerror(errno));
        return 0;
}

/* Program output and daemon strings come from untrusted code: in the human-readable views, show
 * control characters (C0, DEL, and C1 in their UTF-8 form) as escapes instead of letting them drive
 * the terminal. "run" and --json pass everything through unchanged, as they must. */
static void fputs_escaped(FILE *f, const char *s, size_t n, bool multiline) {
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) s[i];

                if (multiline && (c == '\n' || c == '\t'))
                        fputc(c, f);
                else if (c < 0x20 || c == 0x7f)
                        fprintf(f, "\\x%02x", c);
                else if (c == 0xc2 && i + 1 < n && (unsigned char) s[i + 1] >= 0x80 &&
                         (unsigned char) s[i + 1] <= 0x9f) {
                        fprintf(f, "\\u%04x", (unsigned char) s[i + 1]);
                        i++;
                } else
                        fputc(c, f);
        }
}

/* ---- Answers: strict parsing and typed field access ---- */

typedef struct String {
        const char *s; /* NULL: absent or null */
        size_t len;
} String;

typedef struct Integer {
        bool set;
        int64_t value;
} Integer;

typedef struct Number {
        bool set;
        double value;
} Number;

typedef enum FieldType {
        FIELD_STRING,
        FIELD_INTEGER,
        FIELD_NUMBER,
        FIELD_BOOLEAN,
} FieldType;

typedef struct Field {
        const char *name;
        FieldType type;
        size_t offset;
        bool required; /* present and not null */
} Field;

static const char *const field_type_name[] = {
        [FIELD_STRING] = "a string",
        [FIELD_INTEGER] = "an integer",
        [FIELD_NUMBER] = "a number",
        [FIELD_BOOLEAN] = "a boolean",
};

/* Copy the listed fields of the JSON object j into the struct at userdata, checking each type.
 * Unknown keys are ignored: newer daemons may add fields. The String pointers stay valid as long
 * as j does. */
static int json_dispatch(json_object *j, const char *what, const Field *fields, size_t n_fields,
                         void *userdata) {
        if (!json_object_is_type(j, json_type_object))
                return log_error_errno(-EBADMSG, "Malformed answer from sandboxd: %s is not a JSON object.",
                                       what);

        for (size_t i = 0; i < n_fields; i++) {
                const Field *f = fields + i;
                uint8_t *p = (uint8_t *) userdata + f->offset;
                json_object *v = NULL;
                bool ok;

                /* json-c represents a JSON null as a NULL pointer, so absent and null look alike. */
                if (!json_object_object_get_ex(j, f->name, &v) || !v) {
                        if (f->required)
                                return log_error_errno(-EBADMSG,
                                                       "Malformed answer from sandboxd: %s lacks '%s'.",
                                                       what, f->name);
                        continue;
                }

                switch (f->type) {
                case FIELD_STRING:
                        ok = json_object_is_type(v, json_type_string);
                        if (ok) {
                                String *s = (String *) p;
                                int len = json_object_get_string_len(v);

                                s->s = json_object_get_string(v);
                                s->len = len > 0 ? (size_t) len : 0;
                        }
                        break;
                case FIELD_INTEGER:
                        ok = json_object_is_type(v, json_type_int);
                        if (ok)
                                *(Integer *) p = (Integer) { true, json_object_get_int64(v) };
                        break;
                case FIELD_NUMBER:
                        ok = json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
                        if (ok)
                                *(Number *) p = (Number) { true, json_object_get_double(v) };
                        break;
                case FIELD_BOOLEAN:
                        ok = json_object_is_type(v, json_type_boolean);
                        if (ok)
                                *(bool *) p = json_object_get_boolean(v);
                        break;
                default:
                        ok = false;
                }
                if (!ok)
                        return log_error_errno(-EBADMSG,
                                               "Malformed answer from sandboxd: '%s' in %s is not %s.",
                                               f->name, what, field_type_name[f->type]);
        }
        return 0;
}

/* Parse a whole buffer as exactly one JSON value: strict syntax, valid UTF-8, nothing but
 * whitespace after it. */
static int json_parse_strict(const char *data, size_t size, json_object **ret) {
        _cleanup_(json_tokener_freep) json_tokener *tok = NULL;
        enum json_tokener_error e;
        json_object *j;
        size_t end;

        assert(size <= INT_MAX); /* guaranteed by ANSWER_MAX */

        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);

        j = json_tokener_parse_ex(tok, data, (int) size);
        e = json_tokener_get_error(tok);
        if (e != json_tokener_success) {
                if (j)
                        json_object_put(j);
                /* An answer cut short leaves the parser waiting for more. */
                if (e == json_tokener_continue)
                        return log_error_errno(-EBADMSG, "Malformed answer from sandboxd: JSON is incomplete.");
                return log_error_errno(-EBADMSG, "Malformed answer from sandboxd: %s.",
                                       json_tokener_error_desc(e));
        }
        if (!j) /* a bare "null" */
                return log_error_errno(-EBADMSG, "Malformed answer from sandboxd: null.");

        end = json_tokener_get_parse_end(tok);
        for (; end < size; end++)
                if (!strchr(" \t\r\n", data[end])) {
                        json_object_put(j);
                        return log_error_errno(-EBADMSG,
                                               "Malformed answer from sandboxd: "
                                               "trailing data after the JSON value.");
                }

        *ret = j;
        return 0;
}

/* ---- HTTP ---- */

typedef struct Buffer {
        char *data;
        size_t size, allocated;
        bool too_large, oom;
} Buffer;

static void buffer_done(Buffer *b) {
        b->data = mfree(b->data);
}

static size_t buffer_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
        Buffer *b = userdata;
        size_t n = size * nmemb; /* size is always 1 for write callbacks */

        /* Returning less than n makes libcurl abort with CURLE_WRITE_ERROR; the flags say why. */
        if (n > ANSWER_MAX - b->size) {
                b->too_large = true;
                return 0;
        }
        if (b->size + n > b->allocated) {
                size_t a = MIN(MAX(MAX(b->allocated * 2, b->size + n), (size_t) 16384), ANSWER_MAX);
                char *p = realloc(b->data, a);

                if (!p) {
                        b->oom = true;
                        return 0;
                }
                b->data = p;
                b->allocated = a;
        }
        memcpy(b->data + b->size, ptr, n);
        b->size += n;
        return n;
}

static int log_curl_error(CURL *c, CURLcode cc, const Buffer *b, const char *errbuf, uint64_t timeout_ms) {
        long os_errno = 0;

        switch (cc) {
        case CURLE_COULDNT_CONNECT:
                /* libcurl's own text names "localhost port 80", which is meaningless for a socket. */
                (void) curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
                if (os_errno > 0)
                        return log_error_errno(-ECONNREFUSED,
                                               "Failed to connect to sandboxd at %s: %s (is sandboxd running? "
                                               "see --socket=, $SANDBOXD_SOCKET)",
                                               arg_socket, strerror((int) os_errno));
                return log_error_errno(-ECONNREFUSED,
                                       "Failed to connect to sandboxd at %s (is sandboxd running?)",
                                       arg_socket);
        case CURLE_FILESIZE_EXCEEDED:
                return log_error_errno(-EFBIG, "Answer from sandboxd is larger than %zu MiB, refusing it.",
                                       ANSWER_MAX / 1024 / 1024);
        case CURLE_WRITE_ERROR:
                if (b->oom)
                        return log_oom();
                if (b->too_large)
                        return log_error_errno(-EFBIG,
                                               "Answer from sandboxd is larger than %zu MiB, refusing it.",
                                               ANSWER_MAX / 1024 / 1024);
                break;
        case CURLE_OPERATION_TIMEDOUT:
                return log_error_errno(-ETIMEDOUT,
                                       "No answer from sandboxd within %" PRIu64 " ms, giving up "
                                       "(an execution is not cancelled by this).",
                                       timeout_ms);
        case CURLE_OUT_OF_MEMORY:
                return log_oom();
        default:
                break;
        }
        return log_error_errno(-EPROTO, "Failed to talk to sandboxd at %s: %s", arg_socket,
                               !isempty(errbuf) ? errbuf : curl_easy_strerror(cc));
}

static int http_header_append(struct curl_slist **headers, const char *header) {
        struct curl_slist *l = curl_slist_append(*headers, header);

        if (!l)
                return -ENOMEM;
        *headers = l;
        return 0;
}

/* One request. body (optional) is sent as JSON with POST; otherwise GET. waits: the daemon may hold
 * the request until an execution is final, so no client-side timeout unless asked for.
 * On return 0, *ret_status is the HTTP status and *ret_answer the parsed answer: always a JSON
 * value for 2xx, possibly NULL for errors (a body that is not JSON is not worth more than the
 * status then). Connection and protocol failures are logged and returned as negative errno. */
static int http_call(const char *method, const char *path, json_object *body, bool waits, long *ret_status,
                     json_object **ret_answer) {
        _cleanup_(curl_easy_cleanupp) CURL *c = NULL;
        _cleanup_(curl_slist_free_allp) struct curl_slist *headers = NULL;
        _cleanup_(buffer_done) Buffer b = {};
        _cleanup_free_ char *url = NULL;
        char errbuf[CURL_ERROR_SIZE] = "";
        json_object *answer = NULL;
        const char *payload = NULL;
        size_t payload_len = 0;
        uint64_t timeout_ms;
        CURLcode cc;
        long status = 0;
        int r;

        timeout_ms = arg_client_timeout_set ? arg_client_timeout_ms : waits ? 0 : DEFAULT_CLIENT_TIMEOUT_MS;

        if (asprintf(&url, "http://localhost%s", path) < 0) {
                url = NULL;
                return log_oom();
        }

        if (body) {
                payload = json_object_to_json_string_length(
                                body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &payload_len);
                if (!payload)
                        return log_oom();
        }

        c = curl_easy_init();
        if (!c)
                return log_error_errno(-EIO, "Failed to initialize libcurl.");

        /* "Expect:" turns off libcurl's "Expect: 100-continue" for large bodies: the daemon answers
         * 413 before reading a body that is too large anyway, and the round trip only costs time. */
        r = http_header_append(&headers, "Accept: application/json");
        if (r >= 0 && body)
                r = http_header_append(&headers, "Content-Type: application/json");
        if (r >= 0 && body)
                r = http_header_append(&headers, "Expect:");
        if (r < 0)
                return log_oom();

        if (curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, arg_socket) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_URL, url) != CURLE_OK ||
            /* The socket is the only way to the daemon: never route through a proxy from $http_proxy. */
            curl_easy_setopt(c, CURLOPT_PROXY, "") != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http") != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            /* Error answers carry the daemon's message in their body: read every status ourselves. */
            curl_easy_setopt(c, CURLOPT_FAILONERROR, 0L) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_USERAGENT, "sandboxctl/" PACKAGE_VERSION) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, buffer_write) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_WRITEDATA, &b) != CURLE_OK ||
            /* Refuses a too large Content-Length before reading; chunked answers are cut by
             * buffer_write(). */
            curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) ANSWER_MAX) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long) MIN(timeout_ms, (uint64_t) LONG_MAX)) != CURLE_OK)
                return log_error_errno(-EIO, "Failed to configure libcurl.");

        if (body) {
                if (curl_easy_setopt(c, CURLOPT_POST, 1L) != CURLE_OK ||
                    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) payload_len) != CURLE_OK ||
                    curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload) != CURLE_OK)
                        return log_error_errno(-EIO, "Failed to configure libcurl.");
        } else if (streq(method, "DELETE")) {
                if (curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE") != CURLE_OK)
                        return log_error_errno(-EIO, "Failed to configure libcurl.");
        } else if (curl_easy_setopt(c, CURLOPT_HTTPGET, 1L) != CURLE_OK)
                return log_error_errno(-EIO, "Failed to configure libcurl.");
        assert(streq(method, body ? "POST" : "GET") || (streq(method, "DELETE") && !body));

        cc = curl_easy_perform(c);
        if (cc != CURLE_OK)
                return log_curl_error(c, cc, &b, errbuf, timeout_ms);

        if (curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status < 100 || status > 599)
                return log_error_errno(-EPROTO, "Malformed answer from sandboxd: no valid HTTP status.");

        if (status >= 200 && status < 300) {
                r = json_parse_strict(b.data ?: "", b.size, &answer);
                if (r < 0)
                        return r == -ENOMEM ? log_oom() : r;
        } else if (b.size > 0) {
                /* Best effort: an error without a JSON body is still reported by its status. */
                _cleanup_(json_tokener_freep) json_tokener *tok = json_tokener_new();

                if (!tok)
                        return log_oom();
                json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
                answer = json_tokener_parse_ex(tok, b.data, (int) b.size);
        }

        *ret_status = status;
        *ret_answer = answer;
        return 0;
}

/* Report a non-2xx answer as "sandboxctl: <message>" (naming the offending field when the message
 * does not already) and return the exit status for it. */
static int log_http_error(long status, json_object *answer, bool not_found_is_status) {
        struct {
                String code, message, field;
        } e = {};
        static const Field fields[] = {
                { "code", FIELD_STRING, offsetof(typeof(e), code), false },
                { "message", FIELD_STRING, offsetof(typeof(e), message), false },
                { "field", FIELD_STRING, offsetof(typeof(e), field), false },
        };
        json_object *error = NULL;
        int exit_status = not_found_is_status && status == 404 ? EXIT_NOT_FOUND : EX_UNAVAILABLE;

        /* Not json_dispatch(): a malformed error body must not hide the status behind a parse error. */
        if (answer && json_object_is_type(answer, json_type_object) &&
            json_object_object_get_ex(answer, "error", &error) && error &&
            json_object_is_type(error, json_type_object))
                for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                        json_object *v = NULL;

                        if (json_object_object_get_ex(error, fields[i].name, &v) && v &&
                            json_object_is_type(v, json_type_string))
                                *(String *) ((uint8_t *) &e + fields[i].offset) =
                                        (String) { json_object_get_string(v), 0 };
                }

        if (isempty(e.message.s))
                (void) log_error_errno(-EPROTO, "sandboxd answered HTTP %ld%s%s%s.", status,
                                       e.code.s ? " (" : "", strempty(e.code.s), e.code.s ? ")" : "");
        else if (!isempty(e.field.s) && !strstr(e.message.s, e.field.s))
                (void) log_error_errno(-EPROTO, "%s (field: %s)", e.message.s, e.field.s);
        else
                (void) log_error_errno(-EPROTO, "%s", e.message.s);

        return exit_status;
}

static int print_json(json_object *j) {
        const char *s = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                                  JSON_C_TO_STRING_NOSLASHESCAPE);

        if (!s)
                return log_oom();
        fputs(s, stdout);
        fputc('\n', stdout);
        return flush_stdout();
}

/* ---- The execution object ---- */

typedef struct Execution {
        String execution_id, session_id, language, status, error_type, unit, reason, error_message, out, err,
                created_at;
        Integer exit_code, signal, duration_ms, cpu_time_ms, stdout_bytes, stdout_lines, stderr_bytes,
                stderr_lines;
        Number peak_memory_mb;
        bool stdout_truncated, stderr_truncated;
        struct {
                String url, state, last_error;
                Integer attempts;
        } callback;
} Execution;

static int execution_parse(json_object *j, Execution *ret) {
        static const Field fields[] = {
                { "execution_id", FIELD_STRING, offsetof(Execution, execution_id), true },
                { "status", FIELD_STRING, offsetof(Execution, status), true },
                { "session_id", FIELD_STRING, offsetof(Execution, session_id), false },
                { "language", FIELD_STRING, offsetof(Execution, language), false },
                { "error_type", FIELD_STRING, offsetof(Execution, error_type), false },
                { "unit", FIELD_STRING, offsetof(Execution, unit), false },
                { "reason", FIELD_STRING, offsetof(Execution, reason), false },
                { "error_message", FIELD_STRING, offsetof(Execution, error_message), false },
                { "stdout", FIELD_STRING, offsetof(Execution, out), false },
                { "stderr", FIELD_STRING, offsetof(Execution, err), false },
                { "created_at", FIELD_STRING, offsetof(Execution, created_at), false },
                { "exit_code", FIELD_INTEGER, offsetof(Execution, exit_code), false },
                { "signal", FIELD_INTEGER, offsetof(Execution, signal), false },
                { "duration_ms", FIELD_INTEGER, offsetof(Execution, duration_ms), false },
                { "cpu_time_ms", FIELD_INTEGER, offsetof(Execution, cpu_time_ms), false },
                { "stdout_bytes", FIELD_INTEGER, offsetof(Execution, stdout_bytes), false },
                { "stdout_lines", FIELD_INTEGER, offsetof(Execution, stdout_lines), false },
                { "stderr_bytes", FIELD_INTEGER, offsetof(Execution, stderr_bytes), false },
                { "stderr_lines", FIELD_INTEGER, offsetof(Execution, stderr_lines), false },
                { "peak_memory_mb", FIELD_NUMBER, offsetof(Execution, peak_memory_mb), false },
                { "stdout_truncated", FIELD_BOOLEAN, offsetof(Execution, stdout_truncated), false },
                { "stderr_truncated", FIELD_BOOLEAN, offsetof(Execution, stderr_truncated), false },
        };
        static const Field callback_fields[] = {
                { "url", FIELD_STRING, offsetof(Execution, callback.url), true },
                { "state", FIELD_STRING, offsetof(Execution, callback.state), true },
                { "last_error", FIELD_STRING, offsetof(Execution, callback.last_error), false },
                { "attempts", FIELD_INTEGER, offsetof(Execution, callback.attempts), false },
        };
        Execution e = {};
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

        *ret = e;
        return 0;
}

static bool execution_is_final(const Execution *e) {
        return streq_ptr(e->status.s, "success") || streq_ptr(e->status.s, "failed") ||
               streq_ptr(e->status.s, "cancelled");
}

/* The verdict as an exit status, see EXIT STATUS in sandboxctl(1). */
static int execution_exit_status(const Execution *e) {
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

/* ---- Commands ---- */

static bool id_is_valid_for_path(const char *id) {
        /* The API's id syntax, and nothing that could change the meaning of the URL path. */
        return id_is_valid(id, 64);
}

static int read_bounded(const char *path, const char *what, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        const char *name = streq(path, "-") ? "standard input" : path;
        size_t size = 0, allocated = 0;
        int in = STDIN_FILENO;

        if (!streq(path, "-")) {
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0)
                        return log_error_errno(-errno, "Failed to open %s: %m", path);
                in = fd;
        }

        for (;;) {
                ssize_t k;

                if (size == allocated) {
                        /* One byte beyond the cap is enough to know the input is too large. */
                        size_t a = MIN(MAX(allocated * 2, (size_t) 65536), CODE_MAX + 1);
                        char *p = realloc(buf, a);

                        if (!p)
                                return log_oom();
                        buf = p;
                        allocated = a;
                }

                k = read(in, buf + size, allocated - size);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return log_error_errno(-errno, "Failed to read %s: %m", name);
                }
                if (k == 0)
                        break;
                size += (size_t) k;
                if (size > CODE_MAX)
                        return log_error_errno(-EFBIG, "%s: %s is larger than %zu MiB, refusing it.", name,
                                               what, CODE_MAX / 1024 / 1024);
        }

        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

static const char *language_from_path(const char *path) {
        static const struct {
                const char *suffix, *language;
        } table[] = {
                { ".py", "python" },
                { ".js", "node" },
                { ".sh", "bash" },
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

/* Add val to obj under key, taking ownership of val in all cases. */
static int json_add(json_object *obj, const char *key, json_object *val) {
        if (!val)
                return -ENOMEM;
        if (json_object_object_add(obj, key, val) < 0) {
                json_object_put(val);
                return -ENOMEM;
        }
        return 0;
}

static char *base64_encode(const uint8_t *p, size_t len) {
        static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;

        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i += 3) {
                uint32_t w = (uint32_t) p[i] << 16 | (i + 1 < len ? (uint32_t) p[i + 1] << 8 : 0) |
                             (i + 2 < len ? (uint32_t) p[i + 2] : 0);
                *o++ = alphabet[w >> 18 & 63];
                *o++ = alphabet[w >> 12 & 63];
                *o++ = i + 1 < len ? alphabet[w >> 6 & 63] : '=';
                *o++ = i + 2 < len ? alphabet[w & 63] : '=';
        }
        *o = 0;
        return out;
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
static int parse_input(const char *arg) {
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
static int parse_input_url(const char *arg) {
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
        _cleanup_free_ char *code = NULL;
        const char *name;
        size_t size = 0;
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
        if (r < 0)
                return log_oom();

        *ret = TAKE_PTR(req);
        return 0;
}

static int verb_execute(char **args, size_t n_args, bool wait) {
        _cleanup_(json_object_putp) json_object *req = NULL, *answer = NULL;
        Execution e;
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

        r = http_call("POST", wait ? "/v1/executions?wait=true" : "/v1/executions", req, wait, &status,
                      &answer);
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

        /* Byte for byte: this is the program's output, not ours. */
        if (e.out.s && e.out.len > 0)
                fwrite(e.out.s, 1, e.out.len, stdout);
        r = flush_stdout();
        if (r < 0)
                return EX_OSERR;
        if (e.err.s && e.err.len > 0) {
                fwrite(e.err.s, 1, e.err.len, stderr);
                fflush(stderr);
        }

        /* A verdict that is not the program's own doing would otherwise show up as a bare exit
         * status. Tell a human at a terminal why; leave captured stderr exactly the program's. */
        /* The program never ran: nothing of its own is on stderr, and the caller needs to know which
         * input failed, terminal or not. */
        if (streq_ptr(e.error_type.s, "input_error") && e.error_message.s) {
                fprintf(stderr, "sandboxctl: %s: input_error: ", e.execution_id.s);
                fputs_escaped(stderr, e.error_message.s, e.error_message.len, false);
                fputc('\n', stderr);
        } else if (!streq(e.status.s, "success") && !streq_ptr(e.error_type.s, "runtime_error") &&
            !streq_ptr(e.error_type.s, "compile_error") && isatty(STDERR_FILENO)) {
                if ((e.err.len > 0 && e.err.s[e.err.len - 1] != '\n') ||
                    (e.out.len > 0 && e.out.s[e.out.len - 1] != '\n'))
                        fputc('\n', stderr);
                fprintf(stderr, "sandboxctl: %s: %s", e.execution_id.s, e.error_type.s ?: e.status.s);
                if (e.reason.s) {
                        fputs(": ", stderr);
                        fputs_escaped(stderr, e.reason.s, e.reason.len, false);
                }
                fputc('\n', stderr);
        }

        return execution_exit_status(&e);
}

static int verb_run(char **args, size_t n_args) {
        return verb_execute(args, n_args, true);
}

static int verb_submit(char **args, size_t n_args) {
        return verb_execute(args, n_args, false);
}

static void print_key(const char *key) {
        /* Right-aligned like systemctl status; the width of the longest key, "Peak memory". */
        printf("%11s: ", key);
}

static void print_string_field(const char *key, const String *s) {
        if (!s->s)
                return;
        print_key(key);
        fputs_escaped(stdout, s->s, s->len, false);
        fputc('\n', stdout);
}

static void print_duration_field(const char *key, const Integer *i) {
        if (!i->set)
                return;
        print_key(key);
        if (i->value < 1000)
                printf("%" PRIi64 "ms\n", i->value);
        else
                printf("%" PRIi64 ".%03" PRIi64 "s\n", i->value / 1000, i->value % 1000);
}

static void print_output_section(const char *name, const String *s, const Integer *bytes, const Integer *lines,
                                 bool truncated) {
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

static int execution_print(const Execution *e) {
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

        print_output_section("stdout", &e->out, &e->stdout_bytes, &e->stdout_lines, e->stdout_truncated);
        print_output_section("stderr", &e->err, &e->stderr_bytes, &e->stderr_lines, e->stderr_truncated);

        return flush_stdout();
}

static int verb_status(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        _cleanup_free_ char *path = NULL;
        Execution e;
        long status;
        int r;

        if (!id_is_valid_for_path(args[0])) {
                (void) log_error_errno(-EINVAL, "Invalid execution ID '%s'.", args[0]);
                return EX_USAGE;
        }
        if (asprintf(&path, "/v1/executions/%s%s", args[0], arg_wait ? "?wait=true" : "") < 0) {
                path = NULL;
                (void) log_oom();
                return EX_OSERR;
        }

        r = http_call("GET", path, NULL, arg_wait, &status, &answer);
        if (r < 0)
                return exit_status_for(r, EX_UNAVAILABLE);
        if (status < 200 || status >= 300)
                return log_http_error(status, answer, true);

        r = execution_parse(answer, &e);
        if (r < 0)
                return EX_UNAVAILABLE;

        r = arg_json ? print_json(answer) : execution_print(&e);
        return r < 0 ? EX_OSERR : EXIT_SUCCESS;
}

/* ---- list ---- */

/* Append "&key=value" (or "?key=value" first) to *path, the value URL-encoded. */
static int query_append(CURL *c, char **path, const char *key, const char *value) {
        char *escaped, *p;
        int k;

        escaped = curl_easy_escape(c, value, 0);
        if (!escaped)
                return -ENOMEM;
        k = asprintf(&p, "%s%c%s=%s", *path, strchr(*path, '?') ? '&' : '?', key, escaped);
        curl_free(escaped);
        if (k < 0)
                return -ENOMEM;
        free(*path);
        *path = p;
        return 0;
}

static int list_path(const char *cursor, char **ret) {
        _cleanup_(curl_easy_cleanupp) CURL *c = NULL;
        _cleanup_free_ char *path = NULL;
        char limit[32];
        int r = 0;

        c = curl_easy_init(); /* only for curl_easy_escape() */
        path = strdup("/v1/executions");
        if (!c || !path)
                return -ENOMEM;

        if (arg_session)
                r = query_append(c, &path, "session_id", arg_session);
        if (r >= 0 && arg_status)
                r = query_append(c, &path, "status", arg_status);
        if (r >= 0 && arg_error_type)
                r = query_append(c, &path, "error_type", arg_error_type);
        if (r >= 0 && arg_failed)
                r = query_append(c, &path, "failed", "true");
        if (r >= 0 && arg_order)
                r = query_append(c, &path, "order", arg_order);
        if (r >= 0 && arg_limit_set) {
                (void) snprintf(limit, sizeof(limit), "%" PRIu64, arg_limit);
                r = query_append(c, &path, "limit", limit);
        }
        if (r >= 0 && cursor)
                r = query_append(c, &path, "cursor", cursor);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(path);
        return 0;
}

/* GET one page. On success, *ret_answer is the page and *ret_list its "executions" array (owned by
 * the page), *ret_next its next_cursor (NULL when it is the last page). Returns an exit status on
 * failure (logged), 0 on success. */
static int list_fetch_page(const char *cursor, json_object **ret_answer, json_object **ret_list,
                           const char **ret_next) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        _cleanup_free_ char *path = NULL;
        json_object *list = NULL, *next = NULL;
        long status;
        int r;

        r = list_path(cursor, &path);
        if (r < 0) {
                (void) log_oom();
                return EX_OSERR;
        }

        r = http_call("GET", path, NULL, false, &status, &answer);
        if (r < 0)
                return exit_status_for(r, EX_UNAVAILABLE);
        if (status < 200 || status >= 300)
                return log_http_error(status, answer, false);

        if (!json_object_is_type(answer, json_type_object) ||
            !json_object_object_get_ex(answer, "executions", &list) || !list ||
            !json_object_is_type(list, json_type_array)) {
                (void) log_error_errno(-EBADMSG, "Malformed answer from sandboxd: no 'executions' array.");
                return EX_UNAVAILABLE;
        }
        if (json_object_object_get_ex(answer, "next_cursor", &next) && next &&
            (!json_object_is_type(next, json_type_string) || json_object_get_string_len(next) == 0)) {
                (void) log_error_errno(-EBADMSG,
                                       "Malformed answer from sandboxd: 'next_cursor' is not a non-empty string.");
                return EX_UNAVAILABLE;
        }

        *ret_list = list;
        *ret_next = next ? json_object_get_string(next) : NULL;
        *ret_answer = TAKE_PTR(answer);
        return 0;
}

/* Untrusted text as one escaped table cell. */
static char *cell_escaped(const char *s, size_t n) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        fputs_escaped(f, s, n, false);
        if (fclose(f) != 0)
                return mfree(buf);
        return buf;
}

static char *cell_string(const String *s) {
        return s->s && s->len > 0 ? cell_escaped(s->s, s->len) : strdup("-");
}

static char *cell_printf(const char *format, ...) _printf_(1, 2);
static char *cell_printf(const char *format, ...) {
        va_list ap;
        char *p;
        int k;

        va_start(ap, format);
        k = vasprintf(&p, format, ap);
        va_end(ap);
        return k < 0 ? NULL : p;
}

/* RFC 3339 ("2026-11-30T03:20:00.123Z", or with an offset) as µs since the epoch. -EINVAL for
 * anything else. Fractions beyond µs are cut. */
static int parse_timestamp(const String *s, int64_t *ret_usec) {
        struct tm tm = {};
        const char *p;
        long offset = 0;
        int64_t frac = 0, scale = 1000000;
        time_t t;

        if (!s->s || s->len == 0)
                return -EINVAL;

        p = strptime(s->s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!p)
                return -EINVAL;
        if (*p == '.') {
                p++;
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                while (*p >= '0' && *p <= '9') {
                        if (scale > 1) {
                                scale /= 10;
                                frac += (*p - '0') * scale;
                        }
                        p++;
                }
        }
        if (*p == 'Z' || *p == 'z')
                p++;
        else if ((*p == '+' || *p == '-') && p[1] >= '0' && p[1] <= '2' && p[2] >= '0' && p[2] <= '9' &&
                 p[3] == ':' && p[4] >= '0' && p[4] <= '5' && p[5] >= '0' && p[5] <= '9') {
                offset = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600L + ((p[4] - '0') * 10 + (p[5] - '0')) * 60L;
                if (*p == '-')
                        offset = -offset;
                p += 6;
        } else
                return -EINVAL;
        if (*p != '\0' || (size_t) (p - s->s) != s->len)
                return -EINVAL;

        tm.tm_isdst = 0;
        t = timegm(&tm);
        if (t == (time_t) -1)
                return -EINVAL;
        *ret_usec = ((int64_t) t - offset) * 1000000 + frac;
        return 0;
}

/* An RFC 3339 timestamp as local time, to the second. Anything else is shown as it came, escaped. */
static char *cell_timestamp(const String *s) {
        struct tm tm;
        int64_t usec;
        time_t t;
        char buf[64];

        if (!s->s || s->len == 0)
                return strdup("-");
        if (parse_timestamp(s, &usec) < 0)
                goto verbatim;
        t = (time_t) (usec / 1000000);
        if (!localtime_r(&t, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm) == 0)
                goto verbatim;
        return strdup(buf);

verbatim:
        return cell_escaped(s->s, s->len);
}

static char *cell_exit(const Execution *e) {
        const char *name;

        if (e->exit_code.set)
                return cell_printf("%" PRIi64, e->exit_code.value);
        if (e->signal.set) {
                name = sigabbrev_np((int) e->signal.value);
                return name ? cell_printf("SIG%s", name) : cell_printf("signal %" PRIi64, e->signal.value);
        }
        return strdup("-");
}

static char *cell_duration(const Integer *i) {
        if (!i->set)
                return strdup("-");
        if (i->value < 1000)
                return cell_printf("%" PRIi64 "ms", i->value);
        return cell_printf("%" PRIi64 ".%03" PRIi64 "s", i->value / 1000, i->value % 1000);
}

static char *cell_memory(const Number *n) {
        return n->set ? cell_printf("%.1fM", n->value) : strdup("-");
}

/* Terminal columns of an escaped cell: every byte is printable, so count UTF-8 characters. */
static size_t cell_width(const char *s) {
        size_t w = 0;

        for (; *s; s++)
                if (((unsigned char) *s & 0xc0) != 0x80)
                        w++;
        return w;
}

static void print_cell(const char *s, size_t width, bool right, bool last) {
        size_t w = cell_width(s);

        if (right)
                for (size_t i = w; i < width; i++)
                        fputc(' ', stdout);
        fputs(s, stdout);
        if (!right && !last)
                for (size_t i = w; i < width; i++)
                        fputc(' ', stdout);
        if (!last)
                fputc(' ', stdout);
}

typedef struct Column {
        const char *title;
        bool right;
} Column;

/* n_rows × n_columns escaped cells, row by row; a cell left NULL is a failed allocation. */
typedef struct Table {
        const Column *columns;
        size_t n_columns, n_rows;
        char **cells;
} Table;

static int table_init(Table *t, const Column *columns, size_t n_columns, size_t n_rows) {
        *t = (Table) {
                .columns = columns,
                .n_columns = n_columns,
        };
        if (n_rows > 0) {
                t->cells = calloc(n_rows, sizeof(char *) * n_columns);
                if (!t->cells)
                        return log_oom();
        }
        t->n_rows = n_rows;
        return 0;
}

static void table_done(Table *t) {
        if (t->cells)
                for (size_t i = 0; i < t->n_rows * t->n_columns; i++)
                        free(t->cells[i]);
        t->cells = mfree(t->cells);
        t->n_rows = 0;
}

static char **table_row(Table *t, size_t i) {
        return t->cells + i * t->n_columns;
}

/* The header and the rows, each column as wide as its widest cell or title; nothing without rows. */
static int table_print(const Table *t) {
        _cleanup_free_ size_t *width = NULL;

        if (t->n_rows == 0)
                return 0;

        width = calloc(t->n_columns, sizeof(size_t));
        if (!width)
                return log_oom();
        for (size_t c = 0; c < t->n_columns; c++)
                width[c] = cell_width(t->columns[c].title);
        for (size_t i = 0; i < t->n_rows * t->n_columns; i++) {
                if (!t->cells[i])
                        return log_oom();
                width[i % t->n_columns] = MAX(width[i % t->n_columns], cell_width(t->cells[i]));
        }

        for (size_t c = 0; c < t->n_columns; c++)
                print_cell(t->columns[c].title, width[c], t->columns[c].right, c == t->n_columns - 1);
        fputc('\n', stdout);
        for (size_t i = 0; i < t->n_rows; i++) {
                for (size_t c = 0; c < t->n_columns; c++)
                        print_cell(t->cells[i * t->n_columns + c], width[c], t->columns[c].right,
                                   c == t->n_columns - 1);
                fputc('\n', stdout);
        }
        return 0;
}

enum {
        COLUMN_EXECUTION,
        COLUMN_SESSION,
        COLUMN_LANGUAGE,
        COLUMN_STATUS,
        COLUMN_ERROR,
        COLUMN_EXIT,
        COLUMN_DURATION,
        COLUMN_PEAK_MEM,
        COLUMN_CREATED,
        _COLUMN_MAX,
};

static int list_print_table(const Execution *executions, size_t n, const char *next_cursor) {
        static const Column columns[_COLUMN_MAX] = {
                [COLUMN_EXECUTION] = { "EXECUTION", false },
                [COLUMN_SESSION] = { "SESSION", false },
                [COLUMN_LANGUAGE] = { "LANGUAGE", false },
                [COLUMN_STATUS] = { "STATUS", false },
                [COLUMN_ERROR] = { "ERROR", false },
                [COLUMN_EXIT] = { "EXIT", true },
                [COLUMN_DURATION] = { "DURATION", true },
                [COLUMN_PEAK_MEM] = { "PEAK MEM", true },
                [COLUMN_CREATED] = { "CREATED", false },
        };
        _cleanup_(table_done) Table t = {};
        int r;

        r = table_init(&t, columns, _COLUMN_MAX, n);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n; i++) {
                const Execution *e = executions + i;
                char **row = table_row(&t, i);

                row[COLUMN_EXECUTION] = cell_string(&e->execution_id);
                row[COLUMN_SESSION] = cell_string(&e->session_id);
                row[COLUMN_LANGUAGE] = cell_string(&e->language);
                row[COLUMN_STATUS] = cell_string(&e->status);
                row[COLUMN_ERROR] = cell_string(&e->error_type);
                row[COLUMN_EXIT] = cell_exit(e);
                row[COLUMN_DURATION] = cell_duration(&e->duration_ms);
                row[COLUMN_PEAK_MEM] = cell_memory(&e->peak_memory_mb);
                row[COLUMN_CREATED] = cell_timestamp(&e->created_at);
        }

        r = table_print(&t);
        if (r < 0)
                return r;

        if (n > 0)
                fputc('\n', stdout);
        printf("%zu execution%s listed.\n", n, n == 1 ? "" : "s");
        if (next_cursor) {
                fputs("More: --cursor=", stdout);
                fputs_escaped(stdout, next_cursor, strlen(next_cursor), false);
                fputs(arg_all ? "\n" : " or --all\n", stdout);
        }
        return flush_stdout();
}

static int verb_list(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *page = NULL, *all = NULL, *merged = NULL;
        _cleanup_free_ char *cursor = NULL;
        _cleanup_free_ Execution *executions = NULL;
        json_object *list = NULL, *answer;
        const char *next = NULL;
        size_t n;
        int r;

        /* Values are URL-encoded and checked by the daemon; an empty one can only be a mistake. */
        if (arg_session && isempty(arg_session)) {
                (void) log_error_errno(-EINVAL, "--session: empty session ID.");
                return EX_USAGE;
        }

        if (arg_cursor) {
                cursor = strdup(arg_cursor);
                if (!cursor) {
                        (void) log_oom();
                        return EX_OSERR;
                }
        }

        r = list_fetch_page(cursor, &page, &list, &next);
        if (r != 0)
                return r;
        answer = page;

        if (arg_all) {
                /* Every page's executions into one array, which holds its own references, so each page
                 * can go once it is copied. cursor is always the cursor the current page was asked
                 * with, and at the end the one to continue with (NULL when there is no more). */
                all = json_object_new_array();
                if (!all)
                        goto oom;

                for (unsigned pages = 1;; pages++) {
                        n = json_object_array_length(list);
                        for (size_t i = 0; i < n; i++)
                                if (json_object_array_add(all, json_object_get(json_object_array_get_idx(list, i))) < 0)
                                        goto oom;

                        if (!next) {
                                cursor = mfree(cursor);
                                break;
                        }
                        /* A cursor that does not move would fetch the same page until the bound. */
                        if (streq_ptr(next, cursor)) {
                                (void) log_error_errno(-EBADMSG, "Malformed answer from sandboxd: "
                                                       "next_cursor does not advance.");
                                return EX_UNAVAILABLE;
                        }
                        free(cursor);
                        cursor = strdup(next); /* next lives in page */
                        if (!cursor)
                                goto oom;

                        if (pages >= LIST_PAGES_MAX) {
                                /* Not an error: what we have is printed, and where to go on (next_cursor
                                 * with --json, the hint otherwise). */
                                (void) log_error_errno(-E2BIG, "Warning: stopped after %d pages, more executions "
                                                       "remain.", LIST_PAGES_MAX);
                                break;
                        }

                        page = (json_object_put(page), NULL);
                        r = list_fetch_page(cursor, &page, &list, &next);
                        if (r != 0)
                                return r;
                }
                page = (json_object_put(page), NULL);

                /* The same shape as one page: everything, and where to go on if we stopped early. */
                merged = json_object_new_object();
                if (!merged ||
                    json_add(merged, "executions", json_object_get(all)) < 0 ||
                    json_object_object_add(merged, "next_cursor",
                                           cursor ? json_object_new_string(cursor) : NULL) < 0)
                        goto oom;
                if (cursor && !json_object_object_get(merged, "next_cursor"))
                        goto oom;

                list = all;
                next = cursor;
                answer = merged;
        }

        /* Check all of it before printing anything, also with --json. */
        n = json_object_array_length(list);
        executions = calloc(MAX(n, (size_t) 1), sizeof(Execution));
        if (!executions)
                goto oom;
        for (size_t i = 0; i < n; i++) {
                r = execution_parse(json_object_array_get_idx(list, i), executions + i);
                if (r < 0)
                        return exit_status_for(r, EX_UNAVAILABLE);
        }

        r = arg_json ? print_json(answer) : list_print_table(executions, n, next);
        return r < 0 ? EX_OSERR : EXIT_SUCCESS;

oom:
        (void) log_oom();
        return EX_OSERR;
}

static int verb_cancel(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *answer = NULL, *body = NULL;
        _cleanup_free_ char *path = NULL;
        Execution e;
        long status;
        int r;

        if (!id_is_valid_for_path(args[0])) {
                (void) log_error_errno(-EINVAL, "Invalid execution ID '%s'.", args[0]);
                return EX_USAGE;
        }
        if (asprintf(&path, "/v1/executions/%s/cancel", args[0]) < 0) {
                path = NULL;
                (void) log_oom();
                return EX_OSERR;
        }

        /* An empty object rather than no body: the daemon refuses POSTs that are not JSON (415). */
        body = json_object_new_object();
        if (!body) {
                (void) log_oom();
                return EX_OSERR;
        }

        r = http_call("POST", path, body, false, &status, &answer);
        if (r < 0)
                return exit_status_for(r, EX_UNAVAILABLE);
        if (status < 200 || status >= 300)
                return log_http_error(status, answer, true);

        r = execution_parse(answer, &e);
        if (r < 0)
                return EX_UNAVAILABLE;

        /* Like systemctl stop: quiet on success. */
        if (arg_json && print_json(answer) < 0)
                return EX_OSERR;
        return EXIT_SUCCESS;
}

/* ---- artifacts ---- */

typedef struct ArtifactEntry {
        String path, mime_type, sha256, url;
        Integer size;
} ArtifactEntry;

static int artifact_parse(json_object *j, ArtifactEntry *ret) {
        static const Field fields[] = {
                { "path", FIELD_STRING, offsetof(ArtifactEntry, path), true },
                { "size", FIELD_INTEGER, offsetof(ArtifactEntry, size), true },
                { "mime_type", FIELD_STRING, offsetof(ArtifactEntry, mime_type), false },
                { "sha256", FIELD_STRING, offsetof(ArtifactEntry, sha256), true },
                { "url", FIELD_STRING, offsetof(ArtifactEntry, url), false },
        };
        ArtifactEntry a = {};
        int r;

        r = json_dispatch(j, "an artifact", fields, ELEMENTSOF(fields), &a);
        if (r < 0)
                return r;
        if (a.size.value < 0 || a.sha256.len != 64 || !is_lower_hex(a.sha256.s, 64) ||
            strlen(a.path.s) != a.path.len)
                return log_error_errno(-EBADMSG, "Malformed answer from sandboxd: an artifact's size, sha256 or "
                                       "path is invalid.");
        /* The URL is fetched from the same socket: only a path of the daemon's own, nothing that
         * would make libcurl go elsewhere. */
        if (a.url.s && (!startswith(a.url.s, "/v1/executions/") || strlen(a.url.s) != a.url.len ||
                        strpbrk(a.url.s, " \t\r\n#")))
                return log_error_errno(-EBADMSG, "Malformed answer from sandboxd: an artifact's url is invalid.");
        *ret = a;
        return 0;
}

/* A relative path that stays below the destination: no absolute path, no empty, "." or ".."
 * component, no control characters. The daemon only lists such paths; we check anyway. */
static bool artifact_path_is_safe(const char *p) {
        const char *c = p;

        if (isempty(p) || p[0] == '/')
                return false;
        for (const unsigned char *s = (const unsigned char *) p; *s; s++)
                if (*s < 0x20 || *s == 0x7f)
                        return false;
        for (;;) {
                size_t n = strcspn(c, "/");

                if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (!c[n])
                        return true;
                c += n + 1;
        }
}

/* Create path below dir_fd: the directories on the way (0755, never through a symlink), then the file
 * itself with O_EXCL|O_NOFOLLOW (nothing existing is overwritten, no symlink followed). Returns the
 * fd, and in *ret_parent_fd the directory it is in (for unlinking it on failure) and *ret_name its
 * last component. */
static int create_below(int dir_fd, const char *path, int *ret_parent_fd, const char **ret_name) {
        _cleanup_close_ int cur = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
        _cleanup_free_ char *copy = strdup(path);
        char *c, *slash;
        int fd;

        if (cur < 0)
                return -errno;
        if (!copy)
                return -ENOMEM;
        for (c = copy; (slash = strchr(c, '/')); c = slash + 1) {
                int next;

                *slash = 0;
                if (mkdirat(cur, c, 0755) < 0 && errno != EEXIST)
                        return -errno;
                next = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return -errno;
                safe_close(cur);
                cur = next;
        }
        fd = openat(cur, c, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                return -errno;
        *ret_name = path + (c - copy);
        *ret_parent_fd = TAKE_FD(cur);
        return fd;
}

typedef struct Download {
        CURL *curl;
        int fd;
        long status;
        uint64_t bytes, max;
        EVP_MD_CTX *sha;
        Buffer error;            /* the body of a non-200 answer */
        int write_errno;
} Download;

static size_t download_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
        Download *d = userdata;
        size_t n = size * nmemb;

        if (d->status == 0 && curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &d->status) != CURLE_OK)
                return 0;
        if (d->status != 200)
                return n > 65536 - MIN(d->error.size, (size_t) 65536) ? 0 : buffer_write(ptr, size, nmemb, &d->error);
        if (n > d->max - d->bytes) {
                d->write_errno = EFBIG;
                return 0;
        }
        if (loop_write(d->fd, ptr, n) < 0) {
                d->write_errno = errno ?: EIO;
                return 0;
        }
        if (EVP_DigestUpdate(d->sha, ptr, n) != 1) {
                d->write_errno = EIO;
                return 0;
        }
        d->bytes += n;
        return n;
}

/* GET the artifact's signed URL into fd, and check that what came is what the listing promised. */
static int download_artifact(const ArtifactEntry *a, int fd) {
        _cleanup_(curl_easy_cleanupp) CURL *c = NULL;
        _cleanup_free_ char *url = NULL;
        char errbuf[CURL_ERROR_SIZE] = "", hex[65];
        uint8_t md[EVP_MAX_MD_SIZE];
        unsigned md_len = 0;
        Download d = { .fd = fd, .max = (uint64_t) a->size.value };
        CURLcode cc;
        int r = 0;

        if (!a->url.s)
                return log_error_errno(-EBADMSG, "sandboxd gave no URL for '%s'.", a->path.s);
        if (asprintf(&url, "http://localhost%s", a->url.s) < 0) {
                url = NULL;
                return log_oom();
        }
        c = curl_easy_init();
        d.curl = c;
        d.sha = EVP_MD_CTX_new();
        if (!c || !d.sha || EVP_DigestInit_ex(d.sha, EVP_sha256(), NULL) != 1) {
                EVP_MD_CTX_free(d.sha);
                return log_error_errno(-EIO, "Failed to initialize libcurl or SHA-256.");
        }
        if (curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, arg_socket) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_URL, url) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_PROXY, "") != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http") != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_USERAGENT, "sandboxctl/" PACKAGE_VERSION) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, download_write) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_WRITEDATA, &d) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                             (long) MIN(arg_client_timeout_set ? arg_client_timeout_ms : 0, (uint64_t) LONG_MAX)) != CURLE_OK) {
                EVP_MD_CTX_free(d.sha);
                return log_error_errno(-EIO, "Failed to configure libcurl.");
        }
        cc = curl_easy_perform(c);
        if (d.status == 0)
                (void) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &d.status);
        if (d.write_errno == EFBIG)
                r = log_error_errno(-EBADMSG, "'%s': sandboxd sent more than the %" PRIi64 " bytes listed.",
                                    a->path.s, a->size.value);
        else if (d.write_errno)
                r = log_error_errno(-d.write_errno, "'%s': cannot write: %m", a->path.s);
        else if (cc != CURLE_OK)
                r = log_curl_error(c, cc, &d.error, errbuf, 0);
        else if (d.status != 200) {
                _cleanup_(json_object_putp) json_object *answer = NULL;

                _cleanup_(json_tokener_freep) json_tokener *tok = json_tokener_new();

                if (tok && d.error.size > 0)
                        answer = json_tokener_parse_ex(tok, d.error.data, (int) d.error.size);
                (void) log_http_error(d.status, answer, true);
                r = -ENOENT;
        } else if (d.bytes != (uint64_t) a->size.value)
                r = log_error_errno(-EBADMSG, "'%s': got %" PRIu64 " bytes, %" PRIi64 " were listed.", a->path.s,
                                    d.bytes, a->size.value);
        if (r >= 0) {
                if (EVP_DigestFinal_ex(d.sha, md, &md_len) != 1 || md_len != 32)
                        r = log_error_errno(-EIO, "SHA-256 failed.");
                for (unsigned i = 0; r >= 0 && i < 32; i++)
                        sprintf(hex + 2 * i, "%02x", md[i]);
                if (r >= 0 && !streq(hex, a->sha256.s))
                        r = log_error_errno(-EBADMSG, "'%s': the content does not match its sha256.", a->path.s);
        }
        EVP_MD_CTX_free(d.sha);
        buffer_done(&d.error);
        return r;
}

/* Download one artifact to -o FILE ("-": standard output) or below --dest DIR (default: the
 * current directory), at its relative path. Returns the exit status. */
static int artifact_fetch(const ArtifactEntry *a, int dest_fd) {
        _cleanup_close_ int fd = -EBADF, parent_fd = -EBADF;
        const char *name = NULL;
        int r;

        if (!artifact_path_is_safe(a->path.s)) {
                (void) log_error_errno(-EBADMSG, "Refusing artifact path '%s': not a plain relative path.", a->path.s);
                return EX_UNAVAILABLE;
        }
        if (arg_output && streq(arg_output, "-")) {
                r = download_artifact(a, STDOUT_FILENO);
                return r < 0 ? (r == -ENOENT ? EXIT_NOT_FOUND : exit_status_for(r, EX_UNAVAILABLE)) : 0;
        }
        if (arg_output) {
                fd = open(arg_output, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
                if (fd < 0)
                        fd = -errno;
        } else
                fd = create_below(dest_fd, a->path.s, &parent_fd, &name);
        if (fd < 0) {
                (void) log_error_errno(fd, "Cannot create '%s': %m", arg_output ?: a->path.s);
                return EX_CANTCREAT;
        }
        r = download_artifact(a, fd);
        if (r < 0) {
                /* Nothing half-written stays behind. */
                if (arg_output)
                        (void) unlink(arg_output);
                else
                        (void) unlinkat(parent_fd, name, 0);
                return r == -ENOENT ? EXIT_NOT_FOUND : exit_status_for(r, EX_UNAVAILABLE);
        }
        if (fsync(fd) < 0 && errno != EINVAL) {
                (void) log_error_errno(-errno, "Cannot write '%s': %m", arg_output ?: a->path.s);
                return EX_CANTCREAT;
        }
        if (!arg_json && !arg_output)
                fprintf(stderr, "%s\n", a->path.s);
        return 0;
}

static int artifacts_print(json_object *list, json_object *skipped, Integer skipped_total) {
        size_t n = list ? json_object_array_length(list) : 0;

        if (n == 0)
                printf("No artifacts.\n");
        else
                printf("%12s  %-24s  %s\n", "SIZE", "TYPE", "PATH");
        for (size_t i = 0; i < n; i++) {
                ArtifactEntry a;

                if (artifact_parse(json_object_array_get_idx(list, i), &a) < 0)
                        return -EBADMSG;
                printf("%12" PRIi64 "  %-24s  ", a.size.value, a.mime_type.s ?: "-");
                fputs_escaped(stdout, a.path.s, a.path.len, false);
                fputc('\n', stdout);
        }
        if (skipped_total.set && skipped_total.value > 0) {
                size_t k = skipped ? json_object_array_length(skipped) : 0;

                printf("\nSkipped: %" PRIi64 "\n", skipped_total.value);
                for (size_t i = 0; i < k; i++) {
                        struct {
                                String path, reason;
                        } s = {};
                        static const Field fields[] = {
                                { "path", FIELD_STRING, offsetof(typeof(s), path), true },
                                { "reason", FIELD_STRING, offsetof(typeof(s), reason), true },
                        };

                        if (json_dispatch(json_object_array_get_idx(skipped, i), "a skipped artifact", fields,
                                          ELEMENTSOF(fields), &s) < 0)
                                return -EBADMSG;
                        printf("  %-16s  ", s.reason.s);
                        fputs_escaped(stdout, s.path.s, s.path.len, false);
                        fputc('\n', stdout);
                }
                if ((int64_t) k < skipped_total.value)
                        printf("  ... and %" PRIi64 " more\n", skipped_total.value - (int64_t) k);
        }
        return flush_stdout();
}

static int verb_artifacts(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int dest_fd = -EBADF;
        json_object *list = NULL, *skipped = NULL;
        struct {
                String status;
                Integer skipped_total;
        } h = {};
        static const Field fields[] = {
                { "status", FIELD_STRING, offsetof(typeof(h), status), true },
                { "artifacts_skipped_total", FIELD_INTEGER, offsetof(typeof(h), skipped_total), false },
        };
        size_t n, fetched = 0;
        long status;
        int r;

        if (!id_is_valid_for_path(args[0])) {
                (void) log_error_errno(-EINVAL, "Invalid execution ID '%s'.", args[0]);
                return EX_USAGE;
        }
        if ((arg_get || arg_all) && !!arg_get == arg_all) {
                (void) log_error_errno(-EINVAL, "Use either --get=PATH or --all, not both.");
                return EX_USAGE;
        }
        if ((arg_dest || arg_output) && !arg_get && !arg_all) {
                (void) log_error_errno(-EINVAL, "--dest and -o/--output need --get=PATH or --all.");
                return EX_USAGE;
        }
        if (arg_output && (arg_all || arg_dest)) {
                (void) log_error_errno(-EINVAL, "-o/--output takes one artifact (--get=PATH), without --dest.");
                return EX_USAGE;
        }
        if (arg_get && !artifact_path_is_safe(arg_get)) {
                (void) log_error_errno(-EINVAL, "--get: '%s' is not a plain relative path.", arg_get);
                return EX_USAGE;
        }
        if ((arg_get || arg_all) && !arg_output) {
                dest_fd = open(arg_dest ?: ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dest_fd < 0) {
                        (void) log_error_errno(-errno, "Cannot open the destination directory '%s': %m", arg_dest ?: ".");
                        return EX_CANTCREAT;
                }
        }

        if (asprintf(&path, "/v1/executions/%s/artifacts", args[0]) < 0) {
                path = NULL;
                (void) log_oom();
                return EX_OSERR;
        }
        r = http_call("GET", path, NULL, false, &status, &answer);
        if (r < 0)
                return exit_status_for(r, EX_UNAVAILABLE);
        if (status < 200 || status >= 300)
                return log_http_error(status, answer, true);
        r = json_dispatch(answer, "the artifact list", fields, ELEMENTSOF(fields), &h);
        if (r < 0)
                return EX_UNAVAILABLE;
        if ((json_object_object_get_ex(answer, "artifacts", &list) && list &&
             !json_object_is_type(list, json_type_array)) ||
            (json_object_object_get_ex(answer, "artifacts_skipped", &skipped) && skipped &&
             !json_object_is_type(skipped, json_type_array))) {
                (void) log_error_errno(-EBADMSG, "Malformed answer from sandboxd: 'artifacts' is not a list.");
                return EX_UNAVAILABLE;
        }
        if (!list) {
                (void) log_error_errno(-EBUSY, "Execution %s is %s: its artifacts are collected when it is final.",
                                       args[0], h.status.s);
                return EX_TEMPFAIL;
        }

        if (!arg_get && !arg_all) {
                r = arg_json ? print_json(answer) : artifacts_print(list, skipped, h.skipped_total);
                return r < 0 ? (r == -EBADMSG ? EX_UNAVAILABLE : EX_OSERR) : EXIT_SUCCESS;
        }

        n = json_object_array_length(list);
        for (size_t i = 0; i < n; i++) {
                ArtifactEntry a;

                if (artifact_parse(json_object_array_get_idx(list, i), &a) < 0)
                        return EX_UNAVAILABLE;
                if (arg_get && !streq(a.path.s, arg_get))
                        continue;
                r = artifact_fetch(&a, dest_fd);
                if (r != EXIT_SUCCESS)
                        return r;
                fetched++;
        }
        if (arg_get && fetched == 0) {
                (void) log_error_errno(-ENOENT, "Execution %s has no artifact '%s'.", args[0], arg_get);
                return EXIT_NOT_FOUND;
        }
        return EXIT_SUCCESS;
}

/* session show ID | session delete ID | session list */
static int verb_session(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        _cleanup_free_ char *path = NULL;
        struct {
                String session_id, created_at, last_used_at, expires_at, active;
                Integer disk_mb, size_bytes, executions, pending;
        } x = {};
        static const Field fields[] = {
                { "session_id", FIELD_STRING, offsetof(typeof(x), session_id), true },
                { "created_at", FIELD_STRING, offsetof(typeof(x), created_at), false },
                { "last_used_at", FIELD_STRING, offsetof(typeof(x), last_used_at), false },
                { "expires_at", FIELD_STRING, offsetof(typeof(x), expires_at), false },
                { "active", FIELD_STRING, offsetof(typeof(x), active), false },
                { "disk_mb", FIELD_INTEGER, offsetof(typeof(x), disk_mb), false },
                { "size_bytes", FIELD_INTEGER, offsetof(typeof(x), size_bytes), false },
                { "executions", FIELD_INTEGER, offsetof(typeof(x), executions), false },
                { "pending", FIELD_INTEGER, offsetof(typeof(x), pending), false },
        };
        bool show = streq(args[0], "show"), del = streq(args[0], "delete"), list = streq(args[0], "list");
        long status;
        int r;

        if ((!show && !del && !list) || (list != (n_args == 1))) {
                (void) log_error_errno(-EINVAL, "Use 'session show ID', 'session delete ID' or 'session list'.");
                return EX_USAGE;
        }
        if (!list && !id_is_valid_for_path(args[1])) {
                (void) log_error_errno(-EINVAL, "Invalid session ID '%s'.", args[1]);
                return EX_USAGE;
        }
        if (list ? !(path = strdup("/v1/sessions")) : asprintf(&path, "/v1/sessions/%s", args[1]) < 0) {
                path = NULL;
                (void) log_oom();
                return EX_OSERR;
        }
        r = http_call(del ? "DELETE" : "GET", path, NULL, false, &status, &answer);
        if (r < 0)
                return exit_status_for(r, EX_UNAVAILABLE);
        if (status < 200 || status >= 300)
                return log_http_error(status, answer, true);
        if (arg_json || list)
                return print_json(answer) < 0 ? EX_OSERR : EXIT_SUCCESS;
        if (del)
                return EXIT_SUCCESS;    /* like systemctl stop: quiet on success */

        r = json_dispatch(answer, "the session", fields, ELEMENTSOF(fields), &x);
        if (r < 0)
                return EX_UNAVAILABLE;
        print_string_field("Session", &x.session_id);
        if (x.size_bytes.set) {
                print_key("Disk");
                printf("%" PRIi64 " bytes used of %" PRIi64 " MB\n", x.size_bytes.value, x.disk_mb.value);
        }
        print_string_field("Created", &x.created_at);
        print_string_field("Last used", &x.last_used_at);
        print_string_field("Expires", &x.expires_at);
        if (x.executions.set) {
                print_key("Executions");
                printf("%" PRIi64 " finished, %" PRIi64 " queued or running\n", x.executions.value,
                       x.pending.value);
        }
        print_string_field("Running", &x.active);
        return EXIT_SUCCESS;
}

typedef struct Language {
        String name, source;
        bool compiled, available;
        char *aliases; /* comma-separated, owned */
} Language;

static void language_array_free(Language *l, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(l[i].aliases);
        free(l);
}

static int language_parse(json_object *j, Language *ret) {
        static const Field fields[] = {
                { "name", FIELD_STRING, offsetof(Language, name), true },
                { "source", FIELD_STRING, offsetof(Language, source), false },
                { "compiled", FIELD_BOOLEAN, offsetof(Language, compiled), false },
                { "available", FIELD_BOOLEAN, offsetof(Language, available), false },
        };
        json_object *aliases = NULL;
        Language l = {};
        size_t n, len = 0;
        int r;

        r = json_dispatch(j, "a language", fields, ELEMENTSOF(fields), &l);
        if (r < 0)
                return r;

        if (json_object_object_get_ex(j, "aliases", &aliases) && aliases) {
                if (!json_object_is_type(aliases, json_type_array))
                        return log_error_errno(-EBADMSG,
                                               "Malformed answer from sandboxd: 'aliases' is not an array.");
                n = json_object_array_length(aliases);
                for (size_t i = 0; i < n; i++) {
                        json_object *a = json_object_array_get_idx(aliases, i);

                        if (!a || !json_object_is_type(a, json_type_string))
                                return log_error_errno(-EBADMSG, "Malformed answer from sandboxd: "
                                                       "an alias is not a string.");
                        len += (size_t) json_object_get_string_len(a) + 1;
                }
                l.aliases = calloc(1, len + 1);
                if (!l.aliases)
                        return log_oom();
                for (size_t i = 0; i < n; i++) {
                        if (i > 0)
                                strcat(l.aliases, ",");
                        strcat(l.aliases, json_object_get_string(json_object_array_get_idx(aliases, i)));
                }
        }

        *ret = l;
        return 0;
}

static int verb_languages(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        json_object *list = NULL;
        Language *languages = NULL;
        size_t n = 0, w_name = 4, w_aliases = 7, w_source = 6;
        long status;
        int r;

        r = http_call("GET", "/v1/languages", NULL, false, &status, &answer);
        if (r < 0)
                return exit_status_for(r, EX_UNAVAILABLE);
        if (status < 200 || status >= 300)
                return log_http_error(status, answer, false);

        if (!json_object_is_type(answer, json_type_object) ||
            !json_object_object_get_ex(answer, "languages", &list) || !list ||
            !json_object_is_type(list, json_type_array)) {
                (void) log_error_errno(-EBADMSG, "Malformed answer from sandboxd: no 'languages' array.");
                return EX_UNAVAILABLE;
        }

        /* Check all of it before printing anything, also with --json. */
        n = json_object_array_length(list);
        languages = calloc(MAX(n, (size_t) 1), sizeof(Language));
        if (!languages) {
                (void) log_oom();
                return EX_OSERR;
        }
        for (size_t i = 0; i < n; i++) {
                r = language_parse(json_object_array_get_idx(list, i), languages + i);
                if (r < 0) {
                        language_array_free(languages, n);
                        return exit_status_for(r, EX_UNAVAILABLE);
                }
                w_name = MAX(w_name, languages[i].name.len);
                w_aliases = MAX(w_aliases, strlen(strempty(languages[i].aliases)));
                w_source = MAX(w_source, languages[i].source.len);
        }

        if (arg_json)
                r = print_json(answer);
        else {
                printf("%-*s %-*s %-*s %-8s %s\n", (int) w_name, "NAME", (int) w_aliases, "ALIASES",
                       (int) w_source, "SOURCE", "COMPILED", "AVAILABLE");
                for (size_t i = 0; i < n; i++)
                        printf("%-*s %-*s %-*s %-8s %s\n", (int) w_name, languages[i].name.s, (int) w_aliases,
                               strempty(languages[i].aliases), (int) w_source, strempty(languages[i].source.s),
                               languages[i].compiled ? "yes" : "no", languages[i].available ? "yes" : "no");
                r = flush_stdout();
        }
        language_array_free(languages, n);
        return r < 0 ? EX_OSERR : EXIT_SUCCESS;
}

static int verb_health(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        struct {
                String status, version;
                Integer running, queued, slots, queue_max;
        } h = {};
        static const Field fields[] = {
                { "status", FIELD_STRING, offsetof(typeof(h), status), true },
                { "version", FIELD_STRING, offsetof(typeof(h), version), false },
                { "running", FIELD_INTEGER, offsetof(typeof(h), running), false },
                { "queued", FIELD_INTEGER, offsetof(typeof(h), queued), false },
                { "slots", FIELD_INTEGER, offsetof(typeof(h), slots), false },
                { "queue_max", FIELD_INTEGER, offsetof(typeof(h), queue_max), false },
        };
        long status;
        int r;

        r = http_call("GET", "/v1/health", NULL, false, &status, &answer);
        if (r < 0)
                return exit_status_for(r, EX_UNAVAILABLE);
        if (status < 200 || status >= 300)
                return log_http_error(status, answer, false);

        r = json_dispatch(answer, "the health answer", fields, ELEMENTSOF(fields), &h);
        if (r < 0)
                return EX_UNAVAILABLE;

        if (arg_json)
                r = print_json(answer);
        else {
                printf("%7s: ", "Status");
                fputs_escaped(stdout, h.status.s, h.status.len, false);
                fputc('\n', stdout);
                if (h.version.s) {
                        printf("%7s: ", "Version");
                        fputs_escaped(stdout, h.version.s, h.version.len, false);
                        fputc('\n', stdout);
                }
                if (h.running.set) {
                        printf("%7s: %" PRIi64, "Running", h.running.value);
                        if (h.slots.set)
                                printf(" of %" PRIi64 " slots", h.slots.value);
                        fputc('\n', stdout);
                }
                if (h.queued.set) {
                        printf("%7s: %" PRIi64, "Queued", h.queued.value);
                        if (h.queue_max.set)
                                printf(" of at most %" PRIi64, h.queue_max.value);
                        fputc('\n', stdout);
                }
                r = flush_stdout();
        }
        if (r < 0)
                return EX_OSERR;

        /* Usable as a probe: "sandboxctl health && ..." */
        return streq(h.status.s, "ok") ? EXIT_SUCCESS : EX_UNAVAILABLE;
}

/* ---- top ---- */

/* What GET /v1/executions says about a running execution. The API has no live memory or CPU
 * figures (those are read inside the unit, once, at its end), so the view shows the limits and the
 * age; see sandboxctl(1). */
typedef struct TopRow {
        String execution_id, unit, language, created_at, started_at;
        Integer memory_mb, timeout_ms;
        int64_t age_usec;
} TopRow;

static int top_row_parse(json_object *j, TopRow *ret) {
        static const Field fields[] = {
                { "execution_id", FIELD_STRING, offsetof(TopRow, execution_id), true },
                { "unit", FIELD_STRING, offsetof(TopRow, unit), false },
                { "language", FIELD_STRING, offsetof(TopRow, language), false },
                { "created_at", FIELD_STRING, offsetof(TopRow, created_at), false },
                { "started_at", FIELD_STRING, offsetof(TopRow, started_at), false },
        };
        static const Field limit_fields[] = {
                { "memory_mb", FIELD_INTEGER, offsetof(TopRow, memory_mb), false },
                { "timeout_ms", FIELD_INTEGER, offsetof(TopRow, timeout_ms), false },
        };
        json_object *limits = NULL;
        TopRow row = {};
        int r;

        r = json_dispatch(j, "the execution", fields, ELEMENTSOF(fields), &row);
        if (r < 0)
                return r;
        if (json_object_object_get_ex(j, "limits", &limits) && limits) {
                r = json_dispatch(limits, "the execution's limits", limit_fields, ELEMENTSOF(limit_fields), &row);
                if (r < 0)
                        return r;
        }
        *ret = row;
        return 0;
}

static int top_row_compare(const void *a, const void *b) {
        const TopRow *x = a, *y = b;

        /* Longest running first, as systemd-cgtop puts the heaviest first; then by ID, stably. */
        if (x->age_usec != y->age_usec)
                return x->age_usec > y->age_usec ? -1 : 1;
        return strcmp(x->execution_id.s, y->execution_id.s);
}

static int64_t now_realtime_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* "850ms", "12.3s", "4m05s", "2h03m", "3d04h": the two leading units, like systemd's timespans. */
static char *cell_age(int64_t usec) {
        int64_t s;

        if (usec < 0)
                return strdup("-");
        if (usec < 1000000)
                return cell_printf("%" PRIi64 "ms", usec / 1000);
        if (usec < 60 * 1000000)
                return cell_printf("%" PRIi64 ".%" PRIi64 "s", usec / 1000000, usec / 100000 % 10);
        s = usec / 1000000;
        if (s < 3600)
                return cell_printf("%" PRIi64 "m%02" PRIi64 "s", s / 60, s % 60);
        if (s < 86400)
                return cell_printf("%" PRIi64 "h%02" PRIi64 "m", s / 3600, s / 60 % 60);
        return cell_printf("%" PRIi64 "d%02" PRIi64 "h", s / 86400, s / 3600 % 24);
}

enum {
        TOP_COLUMN_EXECUTION,
        TOP_COLUMN_UNIT,
        TOP_COLUMN_LANGUAGE,
        TOP_COLUMN_AGE,
        TOP_COLUMN_MEMORY,
        TOP_COLUMN_TIMEOUT,
        _TOP_COLUMN_MAX,
};

static int top_print_table(TopRow *rows, size_t n) {
        static const Column columns[_TOP_COLUMN_MAX] = {
                [TOP_COLUMN_EXECUTION] = { "EXECUTION", false },
                [TOP_COLUMN_UNIT] = { "UNIT", false },
                [TOP_COLUMN_LANGUAGE] = { "LANGUAGE", false },
                [TOP_COLUMN_AGE] = { "AGE", true },
                [TOP_COLUMN_MEMORY] = { "MEMORY LIMIT", true },
                [TOP_COLUMN_TIMEOUT] = { "TIMEOUT", true },
        };
        _cleanup_(table_done) Table t = {};
        int r;

        if (n == 0) {
                puts("No executions running.");
                return 0;
        }
        r = table_init(&t, columns, _TOP_COLUMN_MAX, n);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n; i++) {
                const TopRow *e = rows + i;
                char **row = table_row(&t, i);

                row[TOP_COLUMN_EXECUTION] = cell_string(&e->execution_id);
                row[TOP_COLUMN_UNIT] = cell_string(&e->unit);
                row[TOP_COLUMN_LANGUAGE] = cell_string(&e->language);
                row[TOP_COLUMN_AGE] = cell_age(e->age_usec);
                row[TOP_COLUMN_MEMORY] = e->memory_mb.set ? cell_printf("%" PRIi64 "M", e->memory_mb.value)
                                                          : strdup("-");
                row[TOP_COLUMN_TIMEOUT] = cell_duration(&e->timeout_ms);
        }

        return table_print(&t);
}

/* One snapshot: the daemon's load and its running executions. Returns an exit status on failure
 * (logged), 0 on success. */
static int top_frame(bool clear) {
        _cleanup_(json_object_putp) json_object *health = NULL, *page = NULL, *out = NULL;
        _cleanup_free_ TopRow *rows = NULL;
        struct {
                String status, version;
                Integer running, queued, slots, queue_max, finished;
        } h = {};
        static const Field fields[] = {
                { "status", FIELD_STRING, offsetof(typeof(h), status), true },
                { "version", FIELD_STRING, offsetof(typeof(h), version), false },
                { "running", FIELD_INTEGER, offsetof(typeof(h), running), false },
                { "queued", FIELD_INTEGER, offsetof(typeof(h), queued), false },
                { "slots", FIELD_INTEGER, offsetof(typeof(h), slots), false },
                { "queue_max", FIELD_INTEGER, offsetof(typeof(h), queue_max), false },
                { "finished", FIELD_INTEGER, offsetof(typeof(h), finished), false },
        };
        json_object *list = NULL;
        const char *next = NULL;
        int64_t now;
        long status;
        size_t n;
        int r;

        r = http_call("GET", "/v1/health", NULL, false, &status, &health);
        if (r < 0)
                return exit_status_for(r, EX_UNAVAILABLE);
        if (status < 200 || status >= 300)
                return log_http_error(status, health, false);
        if (json_dispatch(health, "the health answer", fields, ELEMENTSOF(fields), &h) < 0)
                return EX_UNAVAILABLE;

        /* One page of at most 1000: more than that cannot run at once on any sane MaxConcurrent=. */
        r = list_fetch_page(NULL, &page, &list, &next);
        if (r != 0)
                return r;
        now = now_realtime_usec();

        n = json_object_array_length(list);
        rows = calloc(MAX(n, (size_t) 1), sizeof(TopRow));
        if (!rows) {
                (void) log_oom();
                return EX_OSERR;
        }
        for (size_t i = 0; i < n; i++) {
                int64_t t;

                r = top_row_parse(json_object_array_get_idx(list, i), rows + i);
                if (r < 0)
                        return exit_status_for(r, EX_UNAVAILABLE);
                rows[i].age_usec = parse_timestamp(&rows[i].started_at, &t) >= 0 ||
                                                   parse_timestamp(&rows[i].created_at, &t) >= 0
                                           ? MAX(now - t, (int64_t) 0)
                                           : -1;
        }
        qsort(rows, n, sizeof(TopRow), top_row_compare);

        if (arg_json) {
                out = json_object_new_object();
                if (!out || json_add(out, "health", json_object_get(health)) < 0 ||
                    json_add(out, "executions", json_object_get(list)) < 0 ||
                    json_object_object_add(out, "next_cursor", next ? json_object_new_string(next) : NULL) < 0) {
                        (void) log_oom();
                        return EX_OSERR;
                }
                return print_json(out) < 0 ? EX_OSERR : 0;
        }

        if (clear)
                fputs("\033[H\033[2J", stdout);
        fputs("sandboxd ", stdout);
        fputs_escaped(stdout, strempty(h.version.s), h.version.len, false);
        if (!streq(h.status.s, "ok")) {
                fputs(" (", stdout);
                fputs_escaped(stdout, h.status.s, h.status.len, false);
                fputc(')', stdout);
        }
        printf(": %" PRIi64 " running of %" PRIi64 " slots, %" PRIi64 " queued (at most %" PRIi64 "), %" PRIi64
               " finished\n\n",
               h.running.value, h.slots.value, h.queued.value, h.queue_max.value, h.finished.value);
        r = top_print_table(rows, n);
        if (r < 0)
                return EX_OSERR;
        if (next)
                puts("(more running executions than one page shows)");
        return flush_stdout() < 0 ? EX_OSERR : 0;
}

static volatile sig_atomic_t top_quit = 0;

static void on_top_signal(int sig) {
        top_quit = 1;
}

static int verb_top(char **args, size_t n_args) {
        struct sigaction sa = { .sa_handler = on_top_signal };
        bool tty = isatty(STDOUT_FILENO);
        int r;

        /* The listing top_frame() fetches: running executions, one page of the largest size. */
        arg_status = "running";
        arg_limit = 1000;
        arg_limit_set = true;

        if (arg_once)
                return top_frame(false);

        /* No SA_RESTART: Ctrl-C ends the sleep at once and the loop after the current frame. */
        (void) sigaction(SIGINT, &sa, NULL);
        (void) sigaction(SIGTERM, &sa, NULL);
        for (bool first = true; !top_quit; first = false) {
                struct timespec ts = {
                        .tv_sec = (time_t) (arg_interval_usec / 1000000),
                        .tv_nsec = (long) (arg_interval_usec % 1000000) * 1000,
                };

                /* Frames in place on a terminal; one after the other, separated by an empty line,
                 * into a pipe or file (as systemd-cgtop --batch). */
                if (!tty && !first)
                        fputc('\n', stdout);
                r = top_frame(tty);
                if (r != 0)
                        return r;
                while (!top_quit && nanosleep(&ts, &ts) < 0 && errno == EINTR)
                        ;
        }
        return EXIT_SUCCESS;
}

/* ---- stats ---- */

/* The error types of docs/http-api.md, in its order; anything newer is counted as "other". */
static const char *const stats_error_types[] = {
        "compile_error", "runtime_error", "timeout", "oom", "resource_limit", "internal_error", "input_error",
};
enum {
        STATS_QUEUED,
        STATS_RUNNING,
        STATS_SUCCESS,
        STATS_FAILED,
        STATS_CANCELLED,
        _STATS_STATUS_MAX,
};
static const char *const stats_statuses[_STATS_STATUS_MAX] = {
        [STATS_QUEUED] = "queued",
        [STATS_RUNNING] = "running",
        [STATS_SUCCESS] = "success",
        [STATS_FAILED] = "failed",
        [STATS_CANCELLED] = "cancelled",
};

typedef struct Stats {
        size_t executions, finished;
        size_t statuses[ELEMENTSOF(stats_statuses) + 1];        /* + other */
        size_t error_types[ELEMENTSOF(stats_error_types) + 1];  /* + other */
        double *durations, *peaks;                              /* ms, MiB */
        size_t n_durations, n_peaks;
        bool complete;           /* every page within the window was read */
} Stats;

static void stats_done(Stats *s) {
        free(s->durations);
        free(s->peaks);
}

static int compare_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest value with at least p% of the values at or below it. v is sorted. */
static double percentile(const double *v, size_t n, double p) {
        size_t rank = (size_t) ceil(p / 100.0 * (double) n);

        return v[rank == 0 ? 0 : MIN(rank, n) - 1];
}

static size_t table_index(const char *const *table, size_t n, const String *s) {
        for (size_t i = 0; i < n; i++)
                if (streq_ptr(s->s, table[i]))
                        return i;
        return n;
}

static int stats_add(Stats *s, const Execution *e) {
        size_t i = table_index(stats_statuses, ELEMENTSOF(stats_statuses), &e->status);

        s->executions++;
        s->statuses[i]++;
        if (!execution_is_final(e))
                return 0;
        s->finished++;
        if (e->error_type.s)
                s->error_types[table_index(stats_error_types, ELEMENTSOF(stats_error_types), &e->error_type)]++;
        /* The arrays grow with the count, which stats_collect() bounds. */
        if (e->duration_ms.set) {
                double *p = reallocarray(s->durations, s->n_durations + 1, sizeof(double));
                if (!p)
                        return -ENOMEM;
                s->durations = p;
                s->durations[s->n_durations++] = (double) e->duration_ms.value;
        }
        if (e->peak_memory_mb.set) {
                double *p = reallocarray(s->peaks, s->n_peaks + 1, sizeof(double));
                if (!p)
                        return -ENOMEM;
                s->peaks = p;
                s->peaks[s->n_peaks++] = e->peak_memory_mb.value;
        }
        return 0;
}

/* Read the executions created at or after since (µs), newest first, page by page: the listing is
 * ordered by created_at, so the first one older than the window ends it. Returns an exit status on
 * failure (logged), 0 on success. */
static int stats_collect(int64_t since, Stats *s) {
        _cleanup_free_ char *cursor = NULL;

        arg_limit = 1000;
        arg_limit_set = true;
        s->complete = true;
        for (unsigned pages = 0;; pages++) {
                _cleanup_(json_object_putp) json_object *page = NULL;
                json_object *list = NULL;
                const char *next = NULL;
                size_t n;
                int r;

                if (pages >= STATS_PAGES_MAX) {
                        (void) log_error_errno(-E2BIG, "Warning: stopped after %d pages (%zu executions); the "
                                               "statistics cover the newest of them only.", STATS_PAGES_MAX,
                                               s->executions);
                        s->complete = false;
                        return 0;
                }
                r = list_fetch_page(cursor, &page, &list, &next);
                if (r != 0)
                        return r;
                n = json_object_array_length(list);
                for (size_t i = 0; i < n; i++) {
                        Execution e;
                        int64_t t;

                        r = execution_parse(json_object_array_get_idx(list, i), &e);
                        if (r < 0)
                                return exit_status_for(r, EX_UNAVAILABLE);
                        if (parse_timestamp(&e.created_at, &t) < 0) {
                                (void) log_error_errno(-EBADMSG, "Malformed answer from sandboxd: execution %s has "
                                                       "no valid created_at.", e.execution_id.s);
                                return EX_UNAVAILABLE;
                        }
                        if (t < since)
                                return 0;
                        if (stats_add(s, &e) < 0) {
                                (void) log_oom();
                                return EX_OSERR;
                        }
                }
                if (!next)
                        return 0;
                if (streq_ptr(next, cursor)) {
                        (void) log_error_errno(-EBADMSG, "Malformed answer from sandboxd: next_cursor does not advance.");
                        return EX_UNAVAILABLE;
                }
                free(cursor);
                cursor = strdup(next); /* next lives in page */
                if (!cursor) {
                        (void) log_oom();
                        return EX_OSERR;
                }
        }
}

/* A double with a fixed number of decimals, serialised as written (json-c would print %.17g). */
static json_object *json_fixed(double v, int decimals) {
        char buf[64];

        snprintf(buf, sizeof(buf), "%.*f", decimals, v);
        return json_object_new_double_s(v, buf);
}

static json_object *json_percentiles(const double *v, size_t n, const double *ps, const char *const *names,
                                     size_t n_ps, int decimals) {
        json_object *o = json_object_new_object();

        if (!o || json_add(o, "count", json_object_new_uint64(n)) < 0)
                goto fail;
        for (size_t i = 0; i < n_ps; i++)
                if (json_object_object_add(o, names[i], n > 0 ? json_fixed(percentile(v, n, ps[i]), decimals) : NULL) < 0)
                        goto fail;
        return o;
fail:
        json_object_put(o);
        return NULL;
}

static void format_utc(int64_t usec, char *buf, size_t size) {
        time_t t = (time_t) (usec / 1000000);
        struct tm tm;

        if (!gmtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                snprintf(buf, size, "-");
}

static void format_local(int64_t usec, char *buf, size_t size) {
        time_t t = (time_t) (usec / 1000000);
        struct tm tm;

        if (!localtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm) == 0)
                snprintf(buf, size, "-");
}

static const double duration_ps[] = { 50, 95, 99 };
static const char *const duration_names[] = { "p50", "p95", "p99" };
static const double peak_ps[] = { 50, 95 };
static const char *const peak_names[] = { "p50", "p95" };

static int stats_print_json(const Stats *s, int64_t since, int64_t now) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        json_object *statuses = json_object_new_object(), *errors = json_object_new_object();
        double minutes = (double) (now - since) / 60e6;
        char from[64], to[64];
        int r;

        format_utc(since, from, sizeof(from));
        format_utc(now, to, sizeof(to));
        if (!o || !statuses || !errors) {
                json_object_put(statuses);
                json_object_put(errors);
                return log_oom();
        }
        r = json_add(o, "window_seconds", json_object_new_int64((now - since) / 1000000));
        if (r >= 0)
                r = json_add(o, "from", json_object_new_string(from));
        if (r >= 0)
                r = json_add(o, "to", json_object_new_string(to));
        if (r >= 0)
                r = json_add(o, "executions", json_object_new_uint64(s->executions));
        if (r >= 0)
                r = json_add(o, "finished", json_object_new_uint64(s->finished));
        if (r >= 0)
                r = json_add(o, "rate_per_minute", json_fixed((double) s->executions / minutes, 3));
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(stats_statuses); i++)
                r = json_add(statuses, stats_statuses[i], json_object_new_uint64(s->statuses[i]));
        if (r >= 0 && s->statuses[ELEMENTSOF(stats_statuses)] > 0)
                r = json_add(statuses, "other", json_object_new_uint64(s->statuses[ELEMENTSOF(stats_statuses)]));
        if (r >= 0)
                r = json_add(o, "statuses", TAKE_PTR(statuses));
        if (r >= 0)
                r = json_object_object_add(o, "success_rate",
                                           s->finished > 0 ? json_fixed((double) s->statuses[STATS_SUCCESS] / (double) s->finished, 4)
                                                           : NULL);
        if (r >= 0)
                r = json_add(o, "duration_ms", json_percentiles(s->durations, s->n_durations, duration_ps,
                                                                duration_names, ELEMENTSOF(duration_ps), 0));
        if (r >= 0)
                r = json_add(o, "peak_memory_mb", json_percentiles(s->peaks, s->n_peaks, peak_ps, peak_names,
                                                                   ELEMENTSOF(peak_ps), 1));
        /* Every error type, with its share of the finished executions; "other" only if it occurred. */
        for (size_t i = 0; r >= 0 && i <= ELEMENTSOF(stats_error_types); i++) {
                json_object *e;

                if (i == ELEMENTSOF(stats_error_types) && s->error_types[i] == 0)
                        break;
                e = json_object_new_object();
                r = e ? 0 : -ENOMEM;
                if (r >= 0)
                        r = json_add(e, "count", json_object_new_uint64(s->error_types[i]));
                if (r >= 0)
                        r = json_object_object_add(e, "share",
                                                   s->finished > 0 ? json_fixed((double) s->error_types[i] /
                                                                                        (double) s->finished, 4)
                                                                   : NULL);
                if (r >= 0)
                        r = json_add(errors, i < ELEMENTSOF(stats_error_types) ? stats_error_types[i] : "other",
                                     TAKE_PTR(e));
                json_object_put(e);
        }
        if (r >= 0)
                r = json_add(o, "error_types", TAKE_PTR(errors));
        if (r >= 0)
                r = json_add(o, "complete", json_object_new_boolean(s->complete));
        json_object_put(statuses);
        json_object_put(errors);
        if (r < 0)
                return log_oom();
        return print_json(o);
}

static int stats_print(const Stats *s, int64_t since, int64_t now) {
        double minutes = (double) (now - since) / 60e6;
        char from[64], to[64];
        bool any = false;

        format_local(since, from, sizeof(from));
        format_local(now, to, sizeof(to));
        printf("%12s: %s to %s%s\n", "Window", from, to, s->complete ? "" : " (incomplete: too many executions)");
        printf("%12s: %zu (%.2f/min), %zu finished, %zu running, %zu queued\n", "Executions", s->executions,
               (double) s->executions / minutes, s->finished, s->statuses[STATS_RUNNING], s->statuses[STATS_QUEUED]);
        if (s->finished > 0)
                printf("%12s: %.1f%% (%zu of %zu finished; %zu failed, %zu cancelled)\n", "Success", 100.0 *
                       (double) s->statuses[STATS_SUCCESS] / (double) s->finished, s->statuses[STATS_SUCCESS], s->finished, s->statuses[STATS_FAILED],
                       s->statuses[STATS_CANCELLED]);
        if (s->n_durations > 0)
                printf("%12s: p50 %.0fms, p95 %.0fms, p99 %.0fms (%zu executions)\n", "Duration",
                       percentile(s->durations, s->n_durations, 50), percentile(s->durations, s->n_durations, 95),
                       percentile(s->durations, s->n_durations, 99), s->n_durations);
        if (s->n_peaks > 0)
                printf("%12s: p50 %.1fM, p95 %.1fM (%zu executions)\n", "Peak memory",
                       percentile(s->peaks, s->n_peaks, 50), percentile(s->peaks, s->n_peaks, 95), s->n_peaks);
        for (size_t i = 0; i <= ELEMENTSOF(stats_error_types); i++) {
                if (s->error_types[i] == 0)
                        continue;
                printf(any ? ", " : "%12s: ", "Errors");
                printf("%s %zu (%.1f%%)", i < ELEMENTSOF(stats_error_types) ? stats_error_types[i] : "other",
                       s->error_types[i], 100.0 * (double) s->error_types[i] / (double) s->finished);
                any = true;
        }
        if (any)
                fputc('\n', stdout);
        return flush_stdout();
}

static int verb_stats(char **args, size_t n_args) {
        _cleanup_(stats_done) Stats s = {};
        int64_t now = now_realtime_usec(), since = now - (int64_t) arg_window_usec;
        int r;

        r = stats_collect(since, &s);
        if (r != 0)
                return r;
        qsort(s.durations, s.n_durations, sizeof(double), compare_double);
        qsort(s.peaks, s.n_peaks, sizeof(double), compare_double);

        r = arg_json ? stats_print_json(&s, since, now) : stats_print(&s, since, now);
        return r < 0 ? exit_status_for(r, EX_OSERR) : EXIT_SUCCESS;
}

/* ---- Command line ---- */

typedef struct Verb {
        const char *name;
        size_t min_args, max_args;
        unsigned option_groups; /* which command-specific options it takes */
        int (*dispatch)(char **args, size_t n_args);
} Verb;

#define G(g) (1U << (g))
static const Verb verbs[] = {
        { "run", 0, 1, G(OPTION_GROUP_EXECUTE) | G(OPTION_GROUP_SESSION), verb_run },
        { "submit", 0, 1, G(OPTION_GROUP_EXECUTE) | G(OPTION_GROUP_SESSION), verb_submit },
        { "status", 1, 1, G(OPTION_GROUP_WAIT), verb_status },
        /* "status" already shows the whole record, output included: "show" is the same command
         * under the name systemctl users reach for. */
        { "show", 1, 1, G(OPTION_GROUP_WAIT), verb_status },
        { "list", 0, 0, G(OPTION_GROUP_LIST) | G(OPTION_GROUP_SESSION) | G(OPTION_GROUP_ALL), verb_list },
        { "cancel", 1, 1, 0, verb_cancel },
        { "artifacts", 1, 1, G(OPTION_GROUP_ARTIFACTS) | G(OPTION_GROUP_ALL), verb_artifacts },
        { "session", 1, 2, 0, verb_session },
        { "languages", 0, 0, 0, verb_languages },
        { "health", 0, 0, 0, verb_health },
        { "top", 0, 0, G(OPTION_GROUP_TOP), verb_top },
        { "stats", 0, 0, G(OPTION_GROUP_STATS), verb_stats },
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
               "  artifacts ID              List an execution's artifacts, or download them\n"
               "  session show|delete ID    Show or delete a session (its workspace goes)\n"
               "  session list              List the sessions\n"
               "  languages                 List the languages sandboxd runs\n"
               "  health                    Show whether sandboxd is up, and its load\n"
               "  top                       Show the running executions, refreshed in place\n"
               "  stats                     Rates, percentiles and error shares over a window\n"
               "\n"
               "Options:\n"
               "  -h --help                 Show this help\n"
               "     --version              Show package version\n"
               "     --socket=PATH          sandboxd's API socket (default: $SANDBOXD_SOCKET,\n"
               "                            else %2$s)\n"
               "     --json                 Print the daemon's JSON answer\n"
               "     --client-timeout-ms=N  Give up waiting for an answer after N ms (default:\n"
               "                            none for run and status --wait, else 30000)\n"
               "\n"
               "Options for run and submit:\n"
               "  -c --code=CODE            The code itself instead of FILE\n"
               "  -l --language=LANG        Language (default: from FILE's extension: .py python,\n"
               "                            .js node, .sh bash; otherwise python)\n"
               "     --timeout-ms=N         Wall clock limit\n"
               "     --memory-mb=N          Memory limit\n"
               "     --cpu-cores=F          CPU limit, in cores\n"
               "     --disk-mb=N            Size limit of the writable file system\n"
               "     --env=NAME=VALUE       Set an environment variable (repeatable)\n"
               "     --input=FILE[=PATH]    Send FILE along as /workspace/input/PATH (default\n"
               "                            PATH: FILE's name; repeatable)\n"
               "     --input-url=URL=PATH   Have sandboxd download URL to /workspace/input/PATH\n"
               "                            (repeatable)\n"
               "     --session=ID           Session ID to record\n"
               "     --session=ID           Run in this session: its /workspace persists across runs\n"
               "     --id=ID                Execution ID (an idempotency key)\n"
               "     --callback-url=URL     POST the signed result to this http(s) URL when the\n"
               "                            execution ends\n"
               "\n"
               "Options for status and show:\n"
               "     --wait                 Wait until the execution is final\n"
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

/* Returns < 0 on error (logged), 0 to exit successfully (--help, --version), > 0 to go on. */
static int parse_argv(int argc, char *argv[], const Verb **ret_verb, char ***ret_args, size_t *ret_n_args) {
        enum {
                ARG_VERSION = 0x100,
                ARG_SOCKET,
                ARG_JSON,
                ARG_CLIENT_TIMEOUT_MS,
                ARG_TIMEOUT_MS,
                ARG_MEMORY_MB,
                ARG_CPU_CORES,
                ARG_DISK_MB,
                ARG_ENV,
                ARG_INPUT,
                ARG_INPUT_URL,
                ARG_SESSION,
                ARG_ID,
                ARG_CALLBACK_URL,
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
                { "json", no_argument, NULL, ARG_JSON },
                { "client-timeout-ms", required_argument, NULL, ARG_CLIENT_TIMEOUT_MS },
                { "code", required_argument, NULL, 'c' },
                { "language", required_argument, NULL, 'l' },
                { "timeout-ms", required_argument, NULL, ARG_TIMEOUT_MS },
                { "memory-mb", required_argument, NULL, ARG_MEMORY_MB },
                { "cpu-cores", required_argument, NULL, ARG_CPU_CORES },
                { "disk-mb", required_argument, NULL, ARG_DISK_MB },
                { "env", required_argument, NULL, ARG_ENV },
                { "input", required_argument, NULL, ARG_INPUT },
                { "input-url", required_argument, NULL, ARG_INPUT_URL },
                { "session", required_argument, NULL, ARG_SESSION },
                { "id", required_argument, NULL, ARG_ID },
                { "callback-url", required_argument, NULL, ARG_CALLBACK_URL },
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
                {}
        };
        const Verb *verb = NULL;
        const char *eq;
        char *end;
        int c, r;

        /* GNU getopt permutes: options may come before or after the command and its arguments,
         * as with systemctl. */
        while ((c = getopt_long(argc, argv, "hc:l:o:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("sandboxctl %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_SOCKET:
                        if (isempty(optarg))
                                return log_error_errno(-EINVAL, "--socket: empty path.");
                        arg_socket = optarg;
                        break;
                case ARG_JSON:
                        arg_json = true;
                        break;
                case ARG_CLIENT_TIMEOUT_MS:
                        r = parse_u64("--client-timeout-ms", optarg, &arg_client_timeout_ms);
                        if (r < 0)
                                return r;
                        arg_client_timeout_set = true;
                        break;
                case 'c':
                        arg_code = optarg;
                        note_option_group(OPTION_GROUP_EXECUTE, "-c/--code");
                        break;
                case 'l':
                        if (isempty(optarg))
                                return log_error_errno(-EINVAL, "--language: empty language name.");
                        arg_language = optarg;
                        note_option_group(OPTION_GROUP_EXECUTE, "-l/--language");
                        break;
                case ARG_TIMEOUT_MS:
                        r = parse_u64("--timeout-ms", optarg, &arg_timeout_ms);
                        if (r < 0)
                                return r;
                        arg_timeout_ms_set = true;
                        note_option_group(OPTION_GROUP_EXECUTE, "--timeout-ms");
                        break;
                case ARG_MEMORY_MB:
                        r = parse_u64("--memory-mb", optarg, &arg_memory_mb);
                        if (r < 0)
                                return r;
                        arg_memory_mb_set = true;
                        note_option_group(OPTION_GROUP_EXECUTE, "--memory-mb");
                        break;
                case ARG_DISK_MB:
                        r = parse_u64("--disk-mb", optarg, &arg_disk_mb);
                        if (r < 0)
                                return r;
                        arg_disk_mb_set = true;
                        note_option_group(OPTION_GROUP_EXECUTE, "--disk-mb");
                        break;
                case ARG_CPU_CORES:
                        /* Range checks are the daemon's (it knows the ceilings); only refuse what JSON
                         * cannot carry or what is not a number at all. */
                        errno = 0;
                        arg_cpu_cores = strtod(optarg, &end);
                        if (isempty(optarg) || *end || errno != 0 || !isfinite(arg_cpu_cores))
                                return log_error_errno(-EINVAL, "--cpu-cores: '%s' is not a valid number.",
                                                       optarg);
                        arg_cpu_cores_set = true;
                        note_option_group(OPTION_GROUP_EXECUTE, "--cpu-cores");
                        break;
                case ARG_ENV: {
                        _cleanup_free_ char *name = NULL;

                        eq = strchr(optarg, '=');
                        if (!eq || eq == optarg)
                                return log_error_errno(-EINVAL, "--env: expected NAME=VALUE, got '%s'.",
                                                       optarg);
                        name = strndup(optarg, (size_t) (eq - optarg));
                        if (!name)
                                return log_oom();
                        if (!utf8_is_valid(optarg, strlen(optarg)))
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
                        note_option_group(OPTION_GROUP_EXECUTE, "--env");
                        break;
                }
                case ARG_INPUT:
                        r = parse_input(optarg);
                        if (r < 0)
                                return r;
                        note_option_group(OPTION_GROUP_EXECUTE, "--input");
                        break;
                case ARG_INPUT_URL:
                        r = parse_input_url(optarg);
                        if (r < 0)
                                return r;
                        note_option_group(OPTION_GROUP_EXECUTE, "--input-url");
                        break;
                case ARG_SESSION:
                        arg_session = optarg;
                        note_option_group(OPTION_GROUP_SESSION, "--session");
                        break;
                case ARG_ID:
                        arg_id = optarg;
                        note_option_group(OPTION_GROUP_EXECUTE, "--id");
                        break;
                case ARG_CALLBACK_URL:
                        /* The daemon checks it and names what is wrong; only the obvious here. */
                        if (isempty(optarg))
                                return log_error_errno(-EINVAL, "--callback-url: empty URL.");
                        arg_callback_url = optarg;
                        note_option_group(OPTION_GROUP_EXECUTE, "--callback-url");
                        break;
                case ARG_WAIT:
                        arg_wait = true;
                        note_option_group(OPTION_GROUP_WAIT, "--wait");
                        break;
                case ARG_STATUS:
                        if (isempty(optarg))
                                return log_error_errno(-EINVAL, "--status: empty status.");
                        arg_status = optarg;
                        note_option_group(OPTION_GROUP_LIST, "--status");
                        break;
                case ARG_ERROR_TYPE:
                        if (isempty(optarg))
                                return log_error_errno(-EINVAL, "--error-type: empty error type.");
                        arg_error_type = optarg;
                        note_option_group(OPTION_GROUP_LIST, "--error-type");
                        break;
                case ARG_FAILED:
                        arg_failed = true;
                        note_option_group(OPTION_GROUP_LIST, "--failed");
                        break;
                case ARG_ORDER:
                        /* The two orders of docs/http-api.md; anything else is a typo, not a value a
                         * newer daemon might know. */
                        if (!streq(optarg, "created_at") && !streq(optarg, "duration_ms"))
                                return log_error_errno(-EINVAL,
                                                       "--order: expected 'created_at' or 'duration_ms', got '%s'.",
                                                       optarg);
                        arg_order = optarg;
                        note_option_group(OPTION_GROUP_LIST, "--order");
                        break;
                case ARG_LIMIT:
                        /* The range (1..1000) is the daemon's to check, like the execution limits. */
                        r = parse_u64("--limit", optarg, &arg_limit);
                        if (r < 0)
                                return r;
                        arg_limit_set = true;
                        note_option_group(OPTION_GROUP_LIST, "--limit");
                        break;
                case ARG_CURSOR:
                        if (isempty(optarg))
                                return log_error_errno(-EINVAL, "--cursor: empty cursor.");
                        arg_cursor = optarg;
                        note_option_group(OPTION_GROUP_LIST, "--cursor");
                        break;
                case ARG_ALL:
                        arg_all = true;
                        note_option_group(OPTION_GROUP_ALL, "--all");
                        break;
                case ARG_ONCE:
                        arg_once = true;
                        note_option_group(OPTION_GROUP_TOP, "--once");
                        break;
                case ARG_INTERVAL: {
                        double v;

                        /* At least 0.1 s: faster would only load the daemon and the store. */
                        errno = 0;
                        v = strtod(optarg, &end);
                        if (isempty(optarg) || *end || errno != 0 || !isfinite(v) || v < 0.1 || v > 86400)
                                return log_error_errno(-EINVAL, "--interval: '%s' is not a number of seconds "
                                                       "between 0.1 and 86400.", optarg);
                        arg_interval_usec = (uint64_t) (v * 1e6);
                        note_option_group(OPTION_GROUP_TOP, "--interval");
                        break;
                }
                case ARG_WINDOW:
                        r = parse_span("--window", optarg, &arg_window_usec);
                        if (r < 0)
                                return r;
                        note_option_group(OPTION_GROUP_STATS, "--window");
                        break;
                case ARG_GET:
                        arg_get = optarg;
                        note_option_group(OPTION_GROUP_ARTIFACTS, "--get");
                        break;
                case ARG_DEST:
                        if (isempty(optarg))
                                return log_error_errno(-EINVAL, "--dest: empty path.");
                        arg_dest = optarg;
                        note_option_group(OPTION_GROUP_ARTIFACTS, "--dest");
                        break;
                case 'o':
                        if (isempty(optarg))
                                return log_error_errno(-EINVAL, "-o/--output: empty path.");
                        arg_output = optarg;
                        note_option_group(OPTION_GROUP_ARTIFACTS, "-o/--output");
                        break;
                case '?':
                        return -EINVAL; /* getopt_long() said why */
                default:
                        return log_error_errno(-EINVAL, "Unhandled option %d.", c);
                }

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

        *ret_n_args = (size_t) (argc - optind - 1);
        if (*ret_n_args < verb->min_args)
                return log_error_errno(-EINVAL, "Too few arguments for '%s'.", verb->name);
        if (*ret_n_args > verb->max_args)
                return log_error_errno(-EINVAL, "Too many arguments for '%s'.", verb->name);

        for (unsigned g = 0; g < _OPTION_GROUP_MAX; g++)
                if ((arg_option_groups & (1U << g)) && !(verb->option_groups & (1U << g)))
                        return log_error_errno(-EINVAL, "Option %s only applies to %s.",
                                               arg_option_group_first[g], option_group_commands[g]);

        *ret_verb = verb;
        *ret_args = argv + optind + 1;
        return 1;
}

int main(int argc, char *argv[]) {
        const Verb *verb = NULL;
        char **args = NULL;
        size_t n_args = 0;
        int r;

        r = parse_argv(argc, argv, &verb, &args, &n_args);
        if (r <= 0) {
                json_object_put(arg_env);
                json_object_put(arg_files);
                return r < 0 ? exit_status_for(r, EX_USAGE) : EXIT_SUCCESS;
        }

        if (!arg_socket)
                arg_socket = getenv("SANDBOXD_SOCKET");
        if (isempty(arg_socket))
                arg_socket = DEFAULT_SOCKET;
        if (strlen(arg_socket) >= sizeof(((struct sockaddr_un *) NULL)->sun_path)) {
                json_object_put(arg_env);
                json_object_put(arg_files);
                (void) log_error_errno(-EINVAL, "Socket path '%s' is too long for a unix socket.", arg_socket);
                return EX_USAGE;
        }

        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                json_object_put(arg_env);
                json_object_put(arg_files);
                (void) log_error_errno(-EIO, "Failed to initialize libcurl.");
                return EX_OSERR;
        }

        r = verb->dispatch(args, n_args);

        curl_global_cleanup();
        json_object_put(arg_env);
        json_object_put(arg_files);
        return r;
}
