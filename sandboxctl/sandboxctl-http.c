/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* One HTTP request to sandboxd over its unix socket or a TCP listener; see sandboxctl-http.h. */

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandboxctl.h"
#include "sandboxctl-http.h"
#include "sandboxctl-json.h"
#include "sandboxctl-util.h"

/* Requests that do not wait for an execution should be answered at once; do not hang forever on a
 * wedged daemon. Requests that wait (run, status --wait) have no timeout unless asked for. */
#define DEFAULT_CLIENT_TIMEOUT_MS UINT64_C(30000)

/* An API key is a token: printable ASCII without spaces, at most this long (a longer line is not
 * one). */
#define API_KEY_MAX 512

static char *api_key;

static bool api_key_is_valid(const char *k) {
        size_t n = strlen(k);

        if (n == 0 || n > API_KEY_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isgraph((unsigned char) k[i]))
                        return false;
        return true;
}

static int read_key_file(const char *path) {
        _cleanup_fclose_ FILE *f = NULL;
        char line[API_KEY_MAX + 2];

        f = fopen(path, "re");
        if (!f)
                return log_error_errno(-errno, "Cannot read the API key file %s: %m", path);
        if (!fgets(line, sizeof(line), f))
                return log_error_errno(-EINVAL, "The API key file %s is empty.", path);
        line[strcspn(line, "\r\n")] = 0;
        if (!api_key_is_valid(line))
                return log_error_errno(-EINVAL, "The first line of %s is not an API key (printable, no spaces, "
                                       "at most %d characters).", path, API_KEY_MAX);
        api_key = strdup(line);
        explicit_bzero(line, sizeof(line));
        return api_key ? 0 : log_oom();
}

int http_target_init(void) {
        const char *rest, *env;

        if (!arg_url) {
                env = getenv("SANDBOXD_URL");
                arg_url = isempty(env) ? NULL : env;
        }
        if (!arg_url)
                return 0;
        rest = startswith(arg_url, "http://") ?: startswith(arg_url, "https://");
        /* A base to which the API's paths are appended: a host (and port), nothing else. */
        if (!rest || *rest == 0 || *rest == '/' || strlen(arg_url) > 2048 ||
            (strchr(rest, '/') && !streq(strchr(rest, '/'), "/")) || strpbrk(rest, "?#@ \t\r\n"))
                return log_error_errno(-EINVAL, "--url=%s: expected http://HOST:PORT or https://HOST:PORT.", arg_url);
        if (arg_api_key_file)
                return read_key_file(arg_api_key_file);
        env = getenv("SANDBOXD_API_KEY");
        if (isempty(env))
                return 0;       /* the daemon says 401, with what to do */
        if (!api_key_is_valid(env))
                return log_error_errno(-EINVAL, "$SANDBOXD_API_KEY is not an API key (printable, no spaces).");
        api_key = strdup(env);
        return api_key ? 0 : log_oom();
}

void http_target_done(void) {
        if (api_key)
                explicit_bzero(api_key, strlen(api_key));
        api_key = mfree(api_key);
}

const char *http_target(void) {
        return arg_url ?: arg_socket;
}

char *http_url(const char *path) {
        const char *base = arg_url ?: "http://localhost";
        size_t n = strlen(base);
        char *url;

        if (n > 0 && base[n - 1] == '/')
                n--;
        if (asprintf(&url, "%.*s%s", (int) n, base, path) < 0)
                return NULL;
        return url;
}

void buffer_done(CtlBuffer *b) {
        b->data = mfree(b->data);
}

size_t buffer_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
        CtlBuffer *b = userdata;
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

int log_curl_error(CURL *c, CURLcode cc, const CtlBuffer *b, const char *errbuf, uint64_t timeout_ms) {
        long os_errno = 0;

        switch (cc) {
        case CURLE_COULDNT_CONNECT:
                /* libcurl's own text names "localhost port 80", which is meaningless for a socket. */
                (void) curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
                if (os_errno > 0)
                        return log_error_errno(-ECONNREFUSED,
                                               "Failed to connect to sandboxd at %s: %s (is sandboxd running? "
                                               "see %s)", http_target(), strerror((int) os_errno),
                                               arg_url ? "--url=, $SANDBOXD_URL" : "--socket=, $SANDBOXD_SOCKET");
                return log_error_errno(-ECONNREFUSED,
                                       "Failed to connect to sandboxd at %s (is sandboxd running?)",
                                       http_target());
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
        return log_error_errno(-EPROTO, "Failed to talk to sandboxd at %s: %s", http_target(),
                               !isempty(errbuf) ? errbuf : curl_easy_strerror(cc));
}

static int http_header_append(struct curl_slist **headers, const char *header) {
        struct curl_slist *l = curl_slist_append(*headers, header);

        if (!l)
                return -ENOMEM;
        *headers = l;
        return 0;
}

int http_setup(CURL *c, const char *url, struct curl_slist **headers, curl_write_callback write_fn, void *write_data,
               char *errbuf, uint64_t timeout_ms) {
        /* Over TCP the key goes along (never on the socket, where the caller is its uid). */
        if (arg_url && api_key) {
                _cleanup_free_ char *h = NULL;

                if (asprintf(&h, "Authorization: Bearer %s", api_key) < 0)
                        return -ENOMEM;
                if (http_header_append(headers, h) < 0) {
                        explicit_bzero(h, strlen(h));
                        return -ENOMEM;
                }
                explicit_bzero(h, strlen(h));
        }
        /* The socket, or the URL, is the only way to the daemon: never a proxy from $http_proxy, never
         * a redirect. Error answers carry the daemon's message in their body: every status is read by
         * the caller. */
        if ((arg_url ? curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https")
                     : curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, arg_socket)) != CURLE_OK ||
            (!arg_url && curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http") != CURLE_OK) ||
            curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_URL, url) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_PROXY, "") != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_FAILONERROR, 0L) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_USERAGENT, "sandboxctl/" PACKAGE_VERSION) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_HTTPHEADER, *headers) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_fn) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_WRITEDATA, write_data) != CURLE_OK ||
            curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long) MIN(timeout_ms, (uint64_t) LONG_MAX)) != CURLE_OK)
                return -EIO;
        return 0;
}

/* One request. body (optional) is sent as JSON with POST; otherwise GET. waits: the daemon may hold
 * the request until an execution is final, so no client-side timeout unless asked for.
 * On return 0, *ret_status is the HTTP status and *ret_answer the parsed answer: always a JSON
 * value for 2xx, possibly NULL for errors (a body that is not JSON is not worth more than the
 * status then). Connection and protocol failures are logged and returned as negative errno. */
int http_call(const char *method, const char *path, json_object *body, bool waits, long *ret_status,
              json_object **ret_answer) {
        _cleanup_(curl_easy_cleanupp) CURL *c = NULL;
        _cleanup_(curl_slist_free_allp) struct curl_slist *headers = NULL;
        _cleanup_(buffer_done) CtlBuffer b = {};
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

        url = http_url(path);
        if (!url)
                return log_oom();

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

        if (http_setup(c, url, &headers, buffer_write, &b, errbuf, timeout_ms) < 0 ||
            /* Refuses a too large Content-Length before reading; chunked answers are cut by
             * buffer_write(). */
            curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) ANSWER_MAX) != CURLE_OK)
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
int log_http_error(long status, json_object *answer, bool not_found_is_status) {
        struct {
                CtlString code, message, field;
        } e = {};
        static const CtlField fields[] = {
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
                                *(CtlString *) ((uint8_t *) &e + fields[i].offset) =
                                        (CtlString) { json_object_get_string(v), 0 };
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

int http_call_ok(const char *method, const char *path, json_object *body, bool waits, bool not_found_is_status,
                 json_object **ret_answer) {
        long status;
        int r;

        r = http_call(method, path, body, waits, &status, ret_answer);
        if (r < 0)
                return exit_status_for(r, EX_UNAVAILABLE);
        if (status < 200 || status >= 300)
                return log_http_error(status, *ret_answer, not_found_is_status);
        return 0;
}
