/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* HTTP as far as it is ours (libmicrohttpd parses the wire; what it hands over is fuzzed here). The
 * input is a request head and a key file:
 *
 *     METHOD PATH[?QUERY]
 *     Header: value
 *     ...
 *     <empty line>
 *     the text of an APIKeysFile=
 *
 * The route table (api_route_match(), api_route_is_public()), the signed artifact URL of an artifact
 * route (artifact_url_path(), signed_url_verify() with the query's expires= and signature=), the
 * bearer token (auth_bearer_token(), auth_check() against a fixed table and against the input's key
 * file, auth_parse_text()), and the body plan from Content-Length: and Expect:
 * (http_body_plan()). */

#include <strings.h>

#include "api/api.h"
#include "api/auth.h"
#include "api/http.h"
#include "fuzz.h"
#include "model/signed-url.h"
#include "util.h"

#define MAX_BODY (1024 * 1024)
#define HEADERS_MAX 16

static AuthTable *keys;
static const uint8_t url_key[SIGNED_URL_KEY_MIN] = "fuzz-http artifact URL key 0123";

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        /* Their keys: "fuzz-key-admin-0123456789abcdef0123456789" and
         * "fuzz-key-user-0123456789abcdef01234567890" (tests/fuzz/corpus/http/ uses them). */
        static const char text[] =
                "# two keys\n"
                "admin sha256:ac3cb8226492dc0982517997624886170e1e6103459f4a4dac1dcb3cca35af65 admin\n"
                "user sha256:64c43347d4bdd2780c72ca447a1852b50696ed214533e8c29cf8edccd57b7eb9\n";

        fuzz_quiet();
        if (auth_parse_text(text, "fuzz.keys", &keys, NULL) < 0 || auth_table_size(keys) != 2)
                abort();
        return 0;
}

static const char *query_value(char *query, const char *key, char *buf, size_t size) {
        size_t k = strlen(key);

        for (char *p = query; p && *p; ) {
                char *amp = strchr(p, '&');
                size_t n = amp ? (size_t) (amp - p) : strlen(p);

                if (n > k && strncmp(p, key, k) == 0 && p[k] == '=') {
                        snprintf(buf, size, "%.*s", (int) (n - k - 1), p + k + 1);
                        return buf;
                }
                p = amp ? amp + 1 : NULL;
        }
        return NULL;
}

static void fuzz_route(const char *method, char *path) {
        char *query = strchr(path, '?'), expires_buf[64], signature_buf[128];
        ApiRoute route;
        bool public;

        if (query)
                *query++ = 0;
        api_route_match(method, path, &route);
        public = api_route_is_public(method, path);
        fuzz_check(route.id < _API_ROUTE_MAX);
        /* A public route is an artifact route (or no route at all, for an id too long); every artifact
         * route with a path is public. */
        fuzz_check(!public || route.id == API_ROUTE_ARTIFACT_GET || route.id == API_ROUTE_NO_EXECUTION);
        fuzz_check(public || route.id != API_ROUTE_ARTIFACT_GET || isempty(route.arg));
        fuzz_check(route.id != API_ROUTE_METHOD_NOT_ALLOWED || route.allow);
        fuzz_check(strlen(route.execution_id) <= REQUEST_ID_MAX);

        if (route.id == API_ROUTE_ARTIFACT_GET && id_is_valid(route.execution_id, REQUEST_ID_MAX) &&
            !isempty(route.arg) && strlen(route.arg) <= SIGNED_URL_PATH_MAX) {
                _cleanup_free_ char *canonical = artifact_url_path(route.execution_id, route.arg);
                int r;

                if (!canonical)
                        abort();
                r = signed_url_verify(url_key, sizeof(url_key), method, canonical,
                                      query_value(query, "expires", expires_buf, sizeof(expires_buf)),
                                      query_value(query, "signature", signature_buf, sizeof(signature_buf)),
                                      1700000000);
                fuzz_check(r == 0 || r == -EBADMSG || r == -EACCES || r == -ETIME || r == -EINVAL);
        }
}

static void fuzz_authorization(const char *value, const AuthTable *t) {
        const char *token = auth_bearer_token(value), *name = NULL;
        bool admin = false;
        int r;

        if (!token)
                return;
        r = auth_check(keys, token, &name, &admin);
        fuzz_check(r == 0 ? name != NULL : (r == -EINVAL || r == -E2BIG || r == -EACCES));
        if (t)
                (void) auth_check(t, token, &name, &admin);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(auth_table_freep) AuthTable *t = NULL;
        _cleanup_free_ char *text = fuzz_text(data, size), *error = NULL;
        const char *content_length = NULL, *authorization = NULL;
        char *line, *next, *sp, *body = NULL;
        unsigned n_headers = 0;

        line = text;
        next = strchr(line, '\n');
        if (next)
                *next++ = 0;
        sp = strchr(line, ' ');
        if (sp) {
                *sp = 0;
                fuzz_route(line, sp + 1);
        }

        /* The headers, up to the empty line. */
        for (line = next; line; line = next) {
                char *colon, *value;

                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                if (!*line) {
                        body = next;
                        break;
                }
                if (++n_headers > HEADERS_MAX)
                        break;
                colon = strchr(line, ':');
                if (!colon)
                        continue;
                *colon = 0;
                value = colon + 1;
                while (*value == ' ' || *value == '\t')
                        value++;
                if (strcasecmp(line, "Authorization") == 0)
                        authorization = value;
                else if (strcasecmp(line, "Content-Length") == 0)
                        content_length = value;
        }

        if (body) {
                int r = auth_parse_text(body, "fuzz.keys", &t, &error);

                fuzz_check(r == 0 ? t != NULL : (r == -ENOMEM || (r == -EINVAL && error)));
        }
        fuzz_authorization(authorization, t);

        switch (http_body_plan(content_length, MAX_BODY)) {
        case HTTP_BODY_READ: {
                uint64_t n;

                fuzz_check(!content_length || (safe_atou64(content_length, &n) >= 0 && n <= MAX_BODY));
                break;
        }
        case HTTP_BODY_REFUSE:
                fuzz_check(content_length);
                break;
        default:
                fuzz_check(false);
        }
        return 0;
}
