/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <json-c/json.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdarg.h>

#include "backoff.h"
#include "request.h"
#include "utf8.h"

ExecRequest *exec_request_free(ExecRequest *r) {
        if (!r)
                return NULL;
        free(r->execution_id);
        free(r->session_id);
        free(r->code);
        free(r->callback_url);
        for (size_t i = 0; i < r->n_env; i++)
                free(r->env[i]);
        free(r->env);
        free(r);
        return NULL;
}

_printf_(5, 6) static int fail(RequestError *err, int status, const char *code, const char *field, const char *fmt, ...) {
        va_list ap;

        err->http_status = status;
        err->code = code;
        snprintf(err->field, sizeof(err->field), "%s", field ?: "");
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
        return -EINVAL;
}

bool env_name_is_valid(const char *name) {
        size_t n = strlen(name);

        if (n == 0 || n > REQUEST_ENV_NAME_MAX)
                return false;
        if (!((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'))
                return false;
        for (size_t i = 1; i < n; i++) {
                char c = name[i];
                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
                        return false;
        }
        return true;
}

bool env_name_is_reserved(const char *name) {
        /* What sandboxd sets for reproducibility, and what would change how programs are loaded. */
        static const char *const reserved[] = {
                "PATH", "HOME", "TZ", "LANG", "LANGUAGE", "LC_ALL", "PYTHONHASHSEED", "SANDBOX_SEED", "TMPDIR",
                "USER", "LOGNAME", "PWD", "SHELL", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "PYTHONHOME",
                "PYTHONSTARTUP", "NODE_OPTIONS", "NODE_PATH", "BASH_ENV", "ENV", "INVOCATION_ID",
                "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "NOTIFY_SOCKET",
        };

        if (startswith(name, "LD_") || startswith(name, "LC_") || startswith(name, "SANDBOXD_") ||
            startswith(name, "SYSTEMD_") || startswith(name, "GLIBC_"))
                return true;
        for (size_t i = 0; i < ELEMENTSOF(reserved); i++)
                if (streq(name, reserved[i]))
                        return true;
        return false;
}

static int get_u64(json_object *v, const char *field, uint64_t min, uint64_t max, uint64_t *ret, RequestError *err) {
        int64_t i;

        if (!json_object_is_type(v, json_type_int))
                return fail(err, 400, "invalid_request", field, "%s: expected an integer", field);
        errno = 0;
        i = json_object_get_int64(v);
        if (errno == EINVAL || i < 0 || (uint64_t) i < min || (uint64_t) i > max || i == INT64_MAX)
                return fail(err, 400, "invalid_request", field, "%s: %" PRId64 " is outside [%" PRIu64 ", %" PRIu64 "]",
                            field, i, min, max);
        *ret = (uint64_t) i;
        return 0;
}

static int get_id(json_object *v, const char *field, char **ret, RequestError *err) {
        const char *s;

        if (!json_object_is_type(v, json_type_string))
                return fail(err, 400, "invalid_request", field, "%s: expected a string", field);
        s = json_object_get_string(v);
        if ((size_t) json_object_get_string_len(v) != strlen(s) || !id_is_valid(s, REQUEST_ID_MAX))
                return fail(err, 400, "invalid_request", field,
                            "%s: must be 1-%d characters of [A-Za-z0-9_.-], not starting with '.' or '-'",
                            field, REQUEST_ID_MAX);
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

/* One limit: absent → default; present → must be within [min, ceiling]. */
static int get_limit_u64(json_object *limits, const char *key, uint64_t min, uint64_t def, uint64_t ceiling,
                         uint64_t *ret, RequestError *err) {
        json_object *v;
        char field[64];
        uint64_t u;
        int r;

        if (!limits || !json_object_object_get_ex(limits, key, &v)) {
                *ret = def;
                return 0;
        }
        snprintf(field, sizeof(field), "limits.%s", key);
        r = get_u64(v, field, 0, UINT64_MAX / 2, &u, err);
        if (r < 0)
                return r;
        if (u < min)
                return fail(err, 400, "invalid_request", field, "%s: %" PRIu64 " is below the minimum %" PRIu64, field,
                            u, min);
        if (u > ceiling)
                return fail(err, 400, "invalid_request", field, "%s: %" PRIu64 " exceeds the ceiling %" PRIu64, field,
                            u, ceiling);
        *ret = u;
        return 0;
}

static int parse_limits(json_object *limits, const Config *c, Limits *ret, RequestError *err) {
        static const char *const known[] = { "timeout_ms", "memory_mb", "cpu_cores", "disk_mb", "tasks" };
        int r;

        if (limits) {
                if (!json_object_is_type(limits, json_type_object))
                        return fail(err, 400, "invalid_request", "limits", "limits: expected an object");
                json_object_object_foreach(limits, key, val) {
                        bool ok = false;
                        (void) val;
                        for (size_t i = 0; i < ELEMENTSOF(known); i++)
                                if (streq(key, known[i]))
                                        ok = true;
                        if (!ok)
                                return fail(err, 400, "invalid_request", "limits", "limits: unknown field '%.64s'", key);
                }
        }

        r = get_limit_u64(limits, "timeout_ms", 100, c->defaults.timeout_ms, c->ceilings.timeout_ms, &ret->timeout_ms, err);
        if (r < 0)
                return r;
        r = get_limit_u64(limits, "memory_mb", 16, c->defaults.memory_mb, c->ceilings.memory_mb, &ret->memory_mb, err);
        if (r < 0)
                return r;
        r = get_limit_u64(limits, "disk_mb", 1, c->defaults.disk_mb, c->ceilings.disk_mb, &ret->disk_mb, err);
        if (r < 0)
                return r;
        r = get_limit_u64(limits, "tasks", 4, c->defaults.tasks, c->ceilings.tasks, &ret->tasks, err);
        if (r < 0)
                return r;

        json_object *v;
        ret->cpu_cores = c->defaults.cpu_cores;
        if (limits && json_object_object_get_ex(limits, "cpu_cores", &v)) {
                double d;

                if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
                        return fail(err, 400, "invalid_request", "limits.cpu_cores", "limits.cpu_cores: expected a number");
                d = json_object_get_double(v);
                if (!isfinite(d) || d < 0.01)
                        return fail(err, 400, "invalid_request", "limits.cpu_cores",
                                    "limits.cpu_cores: %g is below the minimum 0.01", d);
                if (d > c->ceilings.cpu_cores)
                        return fail(err, 400, "invalid_request", "limits.cpu_cores",
                                    "limits.cpu_cores: %g exceeds the ceiling %g", d, c->ceilings.cpu_cores);
                ret->cpu_cores = d;
        }
        return 0;
}

static int cmp_env(const void *a, const void *b) {
        const char *x = *(char *const *) a, *y = *(char *const *) b;
        size_t lx = strcspn(x, "="), ly = strcspn(y, "=");
        int r;

        /* By name, not by the whole "KEY=VALUE": '=' sorts after the digits, so strcmp() would put
         * "A1=..." before "A=...". */
        r = strncmp(x, y, MIN(lx, ly));
        if (r != 0)
                return r;
        return (lx > ly) - (lx < ly);
}

static int parse_env(json_object *env, ExecRequest *req, RequestError *err) {
        size_t total = 0, n;

        if (!json_object_is_type(env, json_type_object))
                return fail(err, 400, "invalid_request", "env", "env: expected an object of strings");
        n = (size_t) json_object_object_length(env);
        if (n > REQUEST_ENV_MAX)
                return fail(err, 400, "invalid_request", "env", "env: %zu variables, at most %d allowed", n, REQUEST_ENV_MAX);
        req->env = calloc(n + 1, sizeof(char *));
        if (!req->env)
                return -ENOMEM;

        json_object_object_foreach(env, key, val) {
                char field[160];
                const char *s;
                size_t vl;

                snprintf(field, sizeof(field), "env.%.128s", key);
                if (!env_name_is_valid(key))
                        return fail(err, 400, "invalid_request", field,
                                    "env: invalid variable name '%.64s' (want [A-Za-z_][A-Za-z0-9_]{0,127})", key);
                if (env_name_is_reserved(key))
                        return fail(err, 400, "invalid_request", field, "env: '%.64s' is set by sandboxd and cannot be overridden", key);
                if (!json_object_is_type(val, json_type_string))
                        return fail(err, 400, "invalid_request", field, "%s: expected a string", field);
                s = json_object_get_string(val);
                vl = (size_t) json_object_get_string_len(val);
                if (vl != strlen(s))
                        return fail(err, 400, "invalid_request", field, "%s: contains a NUL byte", field);
                if (vl > REQUEST_ENV_VALUE_MAX)
                        return fail(err, 400, "invalid_request", field, "%s: value longer than %d bytes", field,
                                    REQUEST_ENV_VALUE_MAX);
                total += strlen(key) + 1 + vl;
                if (total > REQUEST_ENV_TOTAL_MAX)
                        return fail(err, 400, "invalid_request", "env", "env: more than %d bytes in all", REQUEST_ENV_TOTAL_MAX);
                if (asprintf(&req->env[req->n_env], "%s=%s", key, s) < 0)
                        return -ENOMEM;
                req->n_env++;
        }
        qsort(req->env, req->n_env, sizeof(char *), cmp_env);
        return 0;
}

static void fingerprint(ExecRequest *req) {
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        unsigned len = 0;
        char buf[256];

        if (!ctx)
                return;
        EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
        snprintf(buf, sizeof(buf), "%s|%s|%zu|%" PRIu64 "|%" PRIu64 "|%.6f|%" PRIu64 "|%" PRIu64 "|%" PRIu64 "|",
                 req->language->name, strna(req->session_id), req->code_len, req->limits.timeout_ms,
                 req->limits.memory_mb, req->limits.cpu_cores, req->limits.disk_mb, req->limits.tasks, req->seed);
        EVP_DigestUpdate(ctx, buf, strlen(buf));
        EVP_DigestUpdate(ctx, req->code, req->code_len);
        for (size_t i = 0; i < req->n_env; i++)
                EVP_DigestUpdate(ctx, req->env[i], strlen(req->env[i]) + 1);
        /* Only when given: the fingerprints of requests without one stay what they were. */
        if (req->callback_url) {
                EVP_DigestUpdate(ctx, "|callback_url=", strlen("|callback_url="));
                EVP_DigestUpdate(ctx, req->callback_url, strlen(req->callback_url));
        }
        EVP_DigestFinal_ex(ctx, req->fingerprint, &len);
        EVP_MD_CTX_free(ctx);
}

int exec_request_parse(const char *body, size_t len, const Config *c, ExecRequest **ret, RequestError *err) {
        static const char *const known[] = { "execution_id", "session_id", "language", "code", "limits", "env",
                                              "seed", "files", "callback_url" };
        _cleanup_(exec_request_freep) ExecRequest *req = NULL;
        json_tokener *tok;
        json_object *root, *v;
        enum json_tokener_error jerr;
        int r;

        memset(err, 0, sizeof(*err));
        if (len > c->max_request_bytes)
                return fail(err, 413, "too_large", NULL, "request body of %zu bytes exceeds MaxRequestBytes=%" PRIu64,
                            len, c->max_request_bytes);

        /* json-c's JSON_TOKENER_VALIDATE_UTF8 lets overlong forms, surrogates and code points above
         * U+10FFFF through; systemd would then refuse such an Environment= entry. Check it all. */
        if (!utf8_is_valid(body, len))
                return fail(err, 400, "invalid_json", NULL, "invalid JSON: not valid UTF-8");

        tok = json_tokener_new_ex(REQUEST_JSON_DEPTH_MAX);
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        root = json_tokener_parse_ex(tok, body, (int) len);
        jerr = json_tokener_get_error(tok);
        if (!root || jerr != json_tokener_success || (size_t) json_tokener_get_parse_end(tok) != len) {
                const char *why = jerr != json_tokener_success ? json_tokener_error_desc(jerr)
                                                                : "trailing data after the JSON value";
                json_object_put(root);
                json_tokener_free(tok);
                return fail(err, 400, "invalid_json", NULL, "invalid JSON: %s", why);
        }
        json_tokener_free(tok);

        if (!json_object_is_type(root, json_type_object)) {
                json_object_put(root);
                return fail(err, 400, "invalid_request", NULL, "the request must be a JSON object");
        }

        req = calloc(1, sizeof(ExecRequest));
        if (!req) {
                json_object_put(root);
                return -ENOMEM;
        }

        r = 0;
        json_object_object_foreach(root, key, val) {
                bool ok = false;
                (void) val;
                for (size_t i = 0; i < ELEMENTSOF(known); i++)
                        if (streq(key, known[i]))
                                ok = true;
                if (!ok) {
                        r = fail(err, 400, "invalid_request", key, "unknown field '%.64s'", key);
                        goto finish;
                }
        }

        if (json_object_object_get_ex(root, "files", &v)) {
                r = fail(err, 422, "unsupported", "files", "files: input files are not supported by this version");
                goto finish;
        }

        if (json_object_object_get_ex(root, "execution_id", &v)) {
                r = get_id(v, "execution_id", &req->execution_id, err);
                if (r < 0)
                        goto finish;
        }
        if (json_object_object_get_ex(root, "session_id", &v)) {
                r = get_id(v, "session_id", &req->session_id, err);
                if (r < 0)
                        goto finish;
        }

        if (!json_object_object_get_ex(root, "language", &v)) {
                r = fail(err, 400, "invalid_request", "language", "language: required");
                goto finish;
        }
        if (!json_object_is_type(v, json_type_string)) {
                r = fail(err, 400, "invalid_request", "language", "language: expected a string");
                goto finish;
        }
        req->language = language_find(json_object_get_string(v));
        if ((size_t) json_object_get_string_len(v) != strlen(json_object_get_string(v)))
                req->language = NULL;   /* "python\u0000x" is not "python" */
        if (!req->language) {
                r = fail(err, 400, "invalid_request", "language", "language: unknown language '%.64s' (see GET /v1/languages)",
                         json_object_get_string(v));
                goto finish;
        }

        if (!json_object_object_get_ex(root, "code", &v)) {
                r = fail(err, 400, "invalid_request", "code", "code: required");
                goto finish;
        }
        if (!json_object_is_type(v, json_type_string)) {
                r = fail(err, 400, "invalid_request", "code", "code: expected a string");
                goto finish;
        }
        req->code_len = (size_t) json_object_get_string_len(v);
        if (req->code_len > c->max_code_bytes) {
                r = fail(err, 413, "too_large", "code", "code: %zu bytes exceeds MaxCodeBytes=%" PRIu64, req->code_len,
                         c->max_code_bytes);
                goto finish;
        }
        if (memchr(json_object_get_string(v), 0, req->code_len)) {
                r = fail(err, 400, "invalid_request", "code", "code: contains a NUL byte");
                goto finish;
        }
        req->code = malloc(req->code_len + 1);
        if (!req->code) {
                r = -ENOMEM;
                goto finish;
        }
        memcpy(req->code, json_object_get_string(v), req->code_len + 1);

        v = NULL;
        (void) json_object_object_get_ex(root, "limits", &v);
        r = parse_limits(v, c, &req->limits, err);
        if (r < 0)
                goto finish;

        if (json_object_object_get_ex(root, "env", &v)) {
                r = parse_env(v, req, err);
                if (r < 0)
                        goto finish;
        }

        if (json_object_object_get_ex(root, "seed", &v)) {
                r = get_u64(v, "seed", 0, INT64_MAX - 1, &req->seed, err);
                if (r < 0)
                        goto finish;
        }

        if (json_object_object_get_ex(root, "callback_url", &v)) {
                const char *why = NULL;

                if (!json_object_is_type(v, json_type_string)) {
                        r = fail(err, 400, "invalid_request", "callback_url", "callback_url: expected a string");
                        goto finish;
                }
                if ((size_t) json_object_get_string_len(v) != strlen(json_object_get_string(v)) ||
                    !callback_url_is_valid(json_object_get_string(v), &why)) {
                        r = fail(err, 400, "invalid_request", "callback_url", "callback_url: %s",
                                 why ?: "contains a NUL byte");
                        goto finish;
                }
                req->callback_url = strdup(json_object_get_string(v));
                if (!req->callback_url) {
                        r = -ENOMEM;
                        goto finish;
                }
        }

        fingerprint(req);
        *ret = TAKE_PTR(req);
        r = 0;
finish:
        json_object_put(root);
        return r;
}
