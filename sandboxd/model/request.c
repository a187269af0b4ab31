/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <json-c/json.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <strings.h>

#include "backoff.h"
#include "base64.h"
#include "json-strict.h"
#include "request.h"
#include "environment.h"
#include "strv.h"
#include "utf8.h"

ExecRequest *exec_request_free(ExecRequest *r) {
        if (!r)
                return NULL;
        language_unref(r->language);
        free(r->execution_id);
        free(r->session_id);
        free(r->record_id);
        free(r->code);
        free(r->callback_url);
        free(r->environment);
        free(r->isolation);
        free(r->route_node);
        strv_free(r->env);
        strv_free(r->args);
        free(r->stdin_data);
        for (size_t i = 0; i < r->n_files; i++) {
                free(r->files[i].path);
                free(r->files[i].url);
                free(r->files[i].content);
        }
        free(r->files);
        strv_free(r->network_allow);
        free(r);
        return NULL;
}

int request_error(RequestError *err, int r, ApiError error, const char *field, const char *fmt, ...) {
        va_list ap;

        *err = (RequestError) { .error = error };
        (void) snprintf(err->field, sizeof(err->field), "%s", field ?: "");
        va_start(ap, fmt);
        (void) vsnprintf(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
        return r;
}

#define fail(err, error, field, ...) request_error((err), -EINVAL, (error), (field), __VA_ARGS__)

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
                return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: expected an integer", field);
        errno = 0;
        i = json_object_get_int64(v);
        if (errno == EINVAL || i < 0 || (uint64_t) i < min || (uint64_t) i > max || i == INT64_MAX)
                return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: %" PRId64 " is outside [%" PRIu64 ", %" PRIu64 "]",
                            field, i, min, max);
        *ret = (uint64_t) i;
        return 0;
}

static int get_id(json_object *v, const char *field, char **ret, RequestError *err) {
        const char *s;

        if (!json_object_is_type(v, json_type_string))
                return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: expected a string", field);
        s = json_object_get_string(v);
        if ((size_t) json_object_get_string_len(v) != strlen(s) || !id_is_valid(s, REQUEST_ID_MAX))
                return fail(err, API_ERROR_INVALID_REQUEST, field,
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
                return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: %" PRIu64 " is below the minimum %" PRIu64, field,
                            u, min);
        if (u > ceiling)
                return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: %" PRIu64 " exceeds the ceiling %" PRIu64, field,
                            u, ceiling);
        *ret = u;
        return 0;
}

static int parse_limits(json_object *limits, const Config *c, Limits *ret, RequestError *err) {
        static const char *const known[] = { "timeout_ms", "memory_mb", "cpu_cores", "disk_mb", "tasks" };
        int r;

        if (limits) {
                if (!json_object_is_type(limits, json_type_object))
                        return fail(err, API_ERROR_INVALID_REQUEST, "limits", "limits: expected an object");
                json_object_object_foreach(limits, key, val) {
                        bool ok = false;
                        (void) val;
                        for (size_t i = 0; i < ELEMENTSOF(known); i++)
                                if (streq(key, known[i]))
                                        ok = true;
                        if (!ok)
                                return fail(err, API_ERROR_INVALID_REQUEST, "limits", "limits: unknown field '%.64s'", key);
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
                        return fail(err, API_ERROR_INVALID_REQUEST, "limits.cpu_cores", "limits.cpu_cores: expected a number");
                d = json_object_get_double(v);
                if (!isfinite(d) || d < 0.01)
                        return fail(err, API_ERROR_INVALID_REQUEST, "limits.cpu_cores",
                                    "limits.cpu_cores: %g is below the minimum 0.01", d);
                if (d > c->ceilings.cpu_cores)
                        return fail(err, API_ERROR_INVALID_REQUEST, "limits.cpu_cores",
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
                return fail(err, API_ERROR_INVALID_REQUEST, "env", "env: expected an object of strings");
        n = (size_t) json_object_object_length(env);
        if (n > REQUEST_ENV_MAX)
                return fail(err, API_ERROR_INVALID_REQUEST, "env", "env: %zu variables, at most %d allowed", n, REQUEST_ENV_MAX);
        req->env = calloc(n + 1, sizeof(char *));
        if (!req->env)
                return -ENOMEM;

        json_object_object_foreach(env, key, val) {
                char field[160];
                const char *s;
                size_t vl;

                snprintf(field, sizeof(field), "env.%.128s", key);
                if (!env_name_is_valid(key))
                        return fail(err, API_ERROR_INVALID_REQUEST, field,
                                    "env: invalid variable name '%.64s' (want [A-Za-z_][A-Za-z0-9_]{0,127})", key);
                if (env_name_is_reserved(key))
                        return fail(err, API_ERROR_INVALID_REQUEST, field, "env: '%.64s' is set by sandboxd and cannot be overridden", key);
                if (!json_object_is_type(val, json_type_string))
                        return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: expected a string", field);
                s = json_object_get_string(val);
                vl = (size_t) json_object_get_string_len(val);
                if (vl != strlen(s))
                        return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: contains a NUL byte", field);
                if (vl > REQUEST_ENV_VALUE_MAX)
                        return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: value longer than %d bytes", field,
                                    REQUEST_ENV_VALUE_MAX);
                total += strlen(key) + 1 + vl;
                if (total > REQUEST_ENV_TOTAL_MAX)
                        return fail(err, API_ERROR_INVALID_REQUEST, "env", "env: more than %d bytes in all", REQUEST_ENV_TOTAL_MAX);
                if (asprintf(&req->env[req->n_env], "%s=%s", key, s) < 0)
                        return -ENOMEM;
                req->n_env++;
        }
        qsort(req->env, req->n_env, sizeof(char *), cmp_env);
        return 0;
}

/* "args": an array of strings, each its own argv word of the program (none may hold a NUL). */
static int parse_args(json_object *args, ExecRequest *req, RequestError *err) {
        size_t total = 0, n;

        if (!json_object_is_type(args, json_type_array))
                return fail(err, API_ERROR_INVALID_REQUEST, "args", "args: expected an array of strings");
        n = json_object_array_length(args);
        if (n > REQUEST_ARGS_MAX)
                return fail(err, API_ERROR_INVALID_REQUEST, "args", "args: %zu arguments, at most %d allowed", n,
                            REQUEST_ARGS_MAX);
        req->args = calloc(n + 1, sizeof(char *));
        if (!req->args)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *a = json_object_array_get_idx(args, i);
                char field[32];
                size_t len;

                snprintf(field, sizeof(field), "args[%zu]", i);
                if (!json_object_is_type(a, json_type_string))
                        return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: expected a string", field);
                len = (size_t) json_object_get_string_len(a);
                if (len != strlen(json_object_get_string(a)))
                        return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: contains a NUL byte", field);
                if (len > REQUEST_ARG_MAX)
                        return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: %zu bytes, at most %d", field, len,
                                    REQUEST_ARG_MAX);
                total += len + 1;
                if (total > REQUEST_ARGS_TOTAL_MAX)
                        return fail(err, API_ERROR_INVALID_REQUEST, "args", "args: more than %d bytes in all",
                                    REQUEST_ARGS_TOTAL_MAX);
                req->args[i] = strdup(json_object_get_string(a));
                if (!req->args[i])
                        return -ENOMEM;
                req->n_args++;
        }
        return 0;
}

/* "stdin": a string of at most MaxStdinBytes= bytes, any of them (a NUL too: it is data, never a
 * name or an argv word). "" is no standard input. */
static int parse_stdin(json_object *v, uint64_t max, ExecRequest *req, RequestError *err) {
        size_t len;

        if (!json_object_is_type(v, json_type_string))
                return fail(err, API_ERROR_INVALID_REQUEST, "stdin", "stdin: expected a string");
        len = (size_t) json_object_get_string_len(v);
        if (len > max)
                return fail(err, API_ERROR_TOO_LARGE, "stdin", "stdin: %zu bytes exceeds MaxStdinBytes=%" PRIu64, len,
                            max);
        if (len == 0)
                return 0;
        req->stdin_data = malloc(len);
        if (!req->stdin_data)
                return -ENOMEM;
        memcpy(req->stdin_data, json_object_get_string(v), len);
        req->stdin_len = len;
        return 0;
}

int request_args_from_json(const char *json, char ***ret, size_t *ret_n, uint64_t *ret_stdin_bytes) {
        _cleanup_(exec_request_freep) ExecRequest *req = calloc(1, sizeof(ExecRequest));
        json_object *o, *a;
        RequestError err;
        int r = 0;

        *ret = NULL;
        *ret_n = 0;
        if (ret_stdin_bytes)
                *ret_stdin_bytes = 0;
        if (!req)
                return -ENOMEM;
        o = json ? json_tokener_parse(json) : NULL;
        if (o && json_object_object_get_ex(o, "args", &a)) {
                r = parse_args(a, req, &err);
                if (r >= 0) {
                        *ret = TAKE_PTR(req->args);
                        *ret_n = req->n_args;
                }
        }
        if (o && ret_stdin_bytes && json_object_object_get_ex(o, "stdin", &a) && json_object_is_type(a, json_type_string))
                *ret_stdin_bytes = (uint64_t) json_object_get_string_len(a);
        json_object_put(o);
        return r == -ENOMEM ? r : 0;
}

int request_stdin_from_json(const char *json, ExecRequest *req) {
        json_object *o = json ? json_tokener_parse(json) : NULL, *v;
        RequestError err;
        int r = 0;

        /* Stored by us, within the cap that held when it was accepted: no cap again (the record must
         * run as it was acknowledged). */
        if (o && json_object_object_get_ex(o, "stdin", &v))
                r = parse_stdin(v, UINT64_MAX, req, &err);
        json_object_put(o);
        return r == -ENOMEM ? r : 0;
}

/* ---- input files ------------------------------------------------------------------------------ */

bool input_path_is_valid(const char *path, size_t len, const char **ret_why) {
        const char *why = NULL;
        size_t depth = 0;

        if (len == 0)
                why = "is empty";
        else if (len > REQUEST_FILE_PATH_MAX)
                why = "is too long";
        else if (path[0] == '/')
                why = "must be relative (below /workspace/input)";
        else
                for (size_t i = 0, start = 0; i <= len; i++) {
                        unsigned char ch = i < len ? (unsigned char) path[i] : '/';

                        if (ch < 0x20 || ch == 0x7f) {
                                why = "contains a control character";
                                break;
                        }
                        /* Not a separator here, but on the systems many callers come from. */
                        if (ch == '\\') {
                                why = "contains a backslash";
                                break;
                        }
                        if (ch != '/')
                                continue;
                        if (i == start)
                                why = "has an empty component";
                        else if ((i - start == 1 && path[start] == '.') ||
                                 (i - start == 2 && path[start] == '.' && path[start + 1] == '.'))
                                why = "has a '.' or '..' component";
                        else if (++depth > REQUEST_FILE_DEPTH_MAX)
                                why = "is too deep";
                        if (why)
                                break;
                        start = i + 1;
                }
        if (ret_why)
                *ret_why = why;
        return !why;
}

bool input_url_is_valid(const char *url, size_t len, const char **ret_why) {
        const char *why = NULL, *host = NULL;
        size_t host_len;

        if (len > REQUEST_FILE_URL_MAX)
                why = "is too long";
        else if (strncasecmp(url, "http://", 7) == 0)
                host = url + 7;
        else if (strncasecmp(url, "https://", 8) == 0)
                host = url + 8;
        else
                why = "must be an http:// or https:// URL";
        if (!why)
                for (size_t i = 0; i < len; i++) {
                        unsigned char ch = (unsigned char) url[i];
                        if (ch <= 0x20 || ch == 0x7f) {
                                why = "contains a space or control character";
                                break;
                        }
                }
        if (!why && host) {
                host_len = strcspn(host, "/?#");
                if (host_len == 0)
                        why = "has no host";
                /* Credentials in a URL would be stored with the request and logged: refused. */
                else if (memchr(host, '@', host_len))
                        why = "must not contain user:password@";
        }
        if (ret_why)
                *ret_why = why;
        return !why;
}

/* Is a a proper prefix directory of b ("data" of "data/x.csv")? */
static bool path_is_below(const char *a, const char *b) {
        size_t n = strlen(a);
        return strncmp(a, b, n) == 0 && b[n] == '/';
}

int request_parse_files(json_object *files, const Config *c, uint64_t disk_mb, ExecRequest *req, RequestError *err) {
        uint64_t inline_total = 0;
        size_t n;

        if (!json_object_is_type(files, json_type_array))
                return fail(err, API_ERROR_INVALID_REQUEST, "files", "files: expected an array of objects");
        n = json_object_array_length(files);
        if (n > c->max_input_files)
                return fail(err, API_ERROR_INVALID_REQUEST, "files", "files: %zu files, at most %" PRIu64 " allowed (MaxInputFiles=)",
                            n, c->max_input_files);
        req->files = calloc(n + 1, sizeof(InputFile));
        if (!req->files)
                return -ENOMEM;

        for (size_t i = 0; i < n; i++) {
                json_object *f = json_object_array_get_idx(files, i), *p, *u, *b;
                InputFile *in = req->files + i;
                char field[64];
                const char *s, *why;
                size_t len;
                bool has_u, has_b;
                int r;

                snprintf(field, sizeof(field), "files[%zu]", i);
                if (!json_object_is_type(f, json_type_object))
                        return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: expected an object", field);
                json_object_object_foreach(f, key, val) {
                        (void) val;
                        if (!streq(key, "path") && !streq(key, "url") && !streq(key, "content_base64"))
                                return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: unknown field '%.64s'", field, key);
                }

                snprintf(field, sizeof(field), "files[%zu].path", i);
                if (!json_object_object_get_ex(f, "path", &p))
                        return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: required", field);
                if (!json_object_is_type(p, json_type_string))
                        return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: expected a string", field);
                s = json_object_get_string(p);
                len = (size_t) json_object_get_string_len(p);
                if (strlen(s) != len)
                        return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: contains a NUL byte", field);
                if (!input_path_is_valid(s, len, &why))
                        return fail(err, API_ERROR_INVALID_REQUEST, field,
                                    "%s: %s (a relative path of at most %d bytes and %d components, no '.' or '..', "
                                    "no control characters)", field, why, REQUEST_FILE_PATH_MAX, REQUEST_FILE_DEPTH_MAX);
                for (size_t k = 0; k < i; k++) {
                        if (streq(req->files[k].path, s))
                                return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: '%s' is also files[%zu].path", field,
                                            s, k);
                        if (path_is_below(req->files[k].path, s) || path_is_below(s, req->files[k].path))
                                return fail(err, API_ERROR_INVALID_REQUEST, field,
                                            "%s: '%s' and files[%zu].path '%s' cannot both be files", field, s, k,
                                            req->files[k].path);
                }
                in->path = strdup(s);
                if (!in->path)
                        return -ENOMEM;
                req->n_files++;

                has_u = json_object_object_get_ex(f, "url", &u);
                has_b = json_object_object_get_ex(f, "content_base64", &b);
                snprintf(field, sizeof(field), "files[%zu]", i);
                if (has_u == has_b)
                        return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: exactly one of 'url' and 'content_base64' is required",
                                    field);

                if (has_u) {
                        snprintf(field, sizeof(field), "files[%zu].url", i);
                        if (!json_object_is_type(u, json_type_string))
                                return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: expected a string", field);
                        s = json_object_get_string(u);
                        len = (size_t) json_object_get_string_len(u);
                        if (strlen(s) != len || !input_url_is_valid(s, len, &why))
                                return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: %s", field,
                                            strlen(s) != len ? "contains a NUL byte" : why);
                        in->url = strdup(s);
                        if (!in->url)
                                return -ENOMEM;
                        continue;
                }

                snprintf(field, sizeof(field), "files[%zu].content_base64", i);
                if (!json_object_is_type(b, json_type_string))
                        return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: expected a string", field);
                len = (size_t) json_object_get_string_len(b);
                /* Checked before decoding: 4 characters make at most 3 bytes. */
                if (len / 4 * 3 > c->max_inline_input_bytes + 2 ||
                    inline_total + len / 4 * 3 > c->max_inline_input_bytes + 2)
                        return fail(err, API_ERROR_TOO_LARGE, field,
                                    "%s: inline files may hold at most %" PRIu64 " bytes in all (MaxInlineInputBytes=)",
                                    field, c->max_inline_input_bytes);
                r = base64_decode(json_object_get_string(b), len, &in->content, &in->content_len);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return fail(err, API_ERROR_INVALID_REQUEST, field,
                                    "%s: not valid base64 (standard alphabet, padded, no whitespace)", field);
                inline_total += in->content_len;
                if (inline_total > c->max_inline_input_bytes)
                        return fail(err, API_ERROR_TOO_LARGE, field,
                                    "%s: inline files may hold at most %" PRIu64 " bytes in all (MaxInlineInputBytes=)",
                                    field, c->max_inline_input_bytes);
                if (inline_total > disk_mb * 1024 * 1024)
                        return fail(err, API_ERROR_INVALID_REQUEST, field,
                                    "%s: inline files of %" PRIu64 " bytes do not fit in limits.disk_mb=%" PRIu64, field,
                                    inline_total, disk_mb);
        }
        return 0;
}

json_object *request_files_to_json(const ExecRequest *req) {
        json_object *a = json_object_new_array();

        if (!a)
                return NULL;
        for (size_t i = 0; i < req->n_files; i++) {
                const InputFile *f = req->files + i;
                json_object *o = json_object_new_object();
                _cleanup_free_ char *b64 = NULL;

                if (!o || json_object_array_add(a, o) < 0) {
                        json_object_put(o);
                        json_object_put(a);
                        return NULL;
                }
                json_object_object_add(o, "path", json_object_new_string(f->path));
                if (f->url)
                        json_object_object_add(o, "url", json_object_new_string(f->url));
                else {
                        b64 = base64_encode(f->content, f->content_len);
                        if (!b64) {
                                json_object_put(a);
                                return NULL;
                        }
                        json_object_object_add(o, "content_base64", json_object_new_string(b64));
                }
        }
        return a;
}

int request_parse_network(json_object *network, ExecRequest *req, RequestError *err) {
        json_object *allow;
        size_t n;

        if (!json_object_is_type(network, json_type_object))
                return fail(err, API_ERROR_INVALID_REQUEST, "network",
                            "network: expected an object {\"allow\": [\"host\", \"*.suffix\", \"host:port\"...]}");
        json_object_object_foreach(network, key, val) {
                (void) val;
                if (!streq(key, "allow"))
                        return fail(err, API_ERROR_INVALID_REQUEST, "network", "network: unknown field '%.64s'", key);
        }
        if (!json_object_object_get_ex(network, "allow", &allow))
                return fail(err, API_ERROR_INVALID_REQUEST, "network.allow", "network.allow: required");
        if (!json_object_is_type(allow, json_type_array))
                return fail(err, API_ERROR_INVALID_REQUEST, "network.allow", "network.allow: expected an array of strings");
        n = json_object_array_length(allow);
        if (n == 0)
                return fail(err, API_ERROR_INVALID_REQUEST, "network.allow",
                            "network.allow: empty (leave \"network\" out for a run without network)");
        if (n > REQUEST_NETWORK_ALLOW_MAX)
                return fail(err, API_ERROR_INVALID_REQUEST, "network.allow", "network.allow: %zu entries, at most %d",
                            n, REQUEST_NETWORK_ALLOW_MAX);
        for (size_t i = 0; i < n; i++) {
                json_object *v = json_object_array_get_idx(allow, i);
                char field[48];
                const char *s;
                size_t len;

                snprintf(field, sizeof(field), "network.allow[%zu]", i);
                if (!json_object_is_type(v, json_type_string))
                        return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: expected a string", field);
                s = json_object_get_string(v);
                len = (size_t) json_object_get_string_len(v);
                if (len != strlen(s))
                        return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: contains a NUL byte", field);
                if (len > REQUEST_NETWORK_ENTRY_MAX)
                        return fail(err, API_ERROR_INVALID_REQUEST, field, "%s: %zu bytes, at most %d", field, len,
                                    REQUEST_NETWORK_ENTRY_MAX);
                if (strv_contains(req->network_allow, s))
                        continue;
                if (strv_extend(&req->network_allow, &req->n_network_allow, s) < 0)
                        return -ENOMEM;
        }
        req->network = true;
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
        /* Only with files, so the fingerprints of requests without stay what they were. */
        for (size_t i = 0; i < req->n_files; i++) {
                const InputFile *f = req->files + i;

                snprintf(buf, sizeof(buf), "file|%zu|%zu|%zu|", strlen(f->path), f->url ? strlen(f->url) : 0,
                         f->content_len);
                EVP_DigestUpdate(ctx, buf, strlen(buf));
                EVP_DigestUpdate(ctx, f->path, strlen(f->path));
                if (f->url)
                        EVP_DigestUpdate(ctx, f->url, strlen(f->url));
                else if (f->content_len > 0)
                        EVP_DigestUpdate(ctx, f->content, f->content_len);
        }
        /* Only with network, so the fingerprints of requests without stay what they were. */
        for (size_t i = 0; req->network && i < req->n_network_allow; i++) {
                EVP_DigestUpdate(ctx, "|net=", strlen("|net="));
                EVP_DigestUpdate(ctx, req->network_allow[i], strlen(req->network_allow[i]));
        }
        /* Likewise only with args: each with its NUL, so ["a b"] and ["a", "b"] differ. */
        if (req->n_args > 0) {
                EVP_DigestUpdate(ctx, "|args=", strlen("|args="));
                for (size_t i = 0; i < req->n_args; i++)
                        EVP_DigestUpdate(ctx, req->args[i], strlen(req->args[i]) + 1);
        }
        /* Likewise only with stdin, its length first so no other field's bytes can stand in for it. */
        if (req->stdin_len > 0) {
                char head[48];

                snprintf(head, sizeof(head), "|stdin=%zu|", req->stdin_len);
                EVP_DigestUpdate(ctx, head, strlen(head));
                EVP_DigestUpdate(ctx, req->stdin_data, req->stdin_len);
        }
        /* Likewise only with an environment. */
        if (req->environment) {
                EVP_DigestUpdate(ctx, "|environment=", strlen("|environment="));
                EVP_DigestUpdate(ctx, req->environment, strlen(req->environment));
        }
        /* Likewise only when the caller asked for the strong tier. */
        if (req->strong)
                EVP_DigestUpdate(ctx, "|isolation=strong", strlen("|isolation=strong"));
        EVP_DigestFinal_ex(ctx, req->fingerprint, &len);
        EVP_MD_CTX_free(ctx);
}

int exec_request_parse(const char *body, size_t len, const Config *c, ExecRequest **ret, RequestError *err) {
        static const char *const known[] = { "execution_id", "session_id", "language", "code", "limits", "env",
                                              "seed", "files", "callback_url", "start", "network",
                                              "environment", "args", "stdin", "isolation", "retry" };
        _cleanup_(exec_request_freep) ExecRequest *req = NULL;
        json_tokener *tok;
        json_object *root, *v;
        enum json_tokener_error jerr;
        JsonStrictError jerr_strict;
        int r;

        memset(err, 0, sizeof(*err));
        if (len > c->max_request_bytes)
                return fail(err, API_ERROR_TOO_LARGE, NULL, "request body of %zu bytes exceeds MaxRequestBytes=%" PRIu64,
                            len, c->max_request_bytes);

        /* json-c's JSON_TOKENER_VALIDATE_UTF8 lets overlong forms, surrogates and code points above
         * U+10FFFF through; systemd would then refuse such an Environment= entry. Check it all. */
        if (!utf8_is_valid(body, len))
                return fail(err, API_ERROR_INVALID_JSON, NULL, "invalid JSON: not valid UTF-8");

        /* One meaning for every parser: no duplicate keys, no NUL in keys, no NaN, no integer json-c
         * would clamp (json-strict.h). */
        r = json_strict_check(body, len, REQUEST_JSON_DEPTH_MAX, &jerr_strict);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return fail(err, API_ERROR_INVALID_JSON, jerr_strict.path[0] ? jerr_strict.path : NULL,
                            "invalid JSON: %s", jerr_strict.message);

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
                return fail(err, API_ERROR_INVALID_JSON, NULL, "invalid JSON: %s", why);
        }
        json_tokener_free(tok);

        if (!json_object_is_type(root, json_type_object)) {
                json_object_put(root);
                return fail(err, API_ERROR_INVALID_REQUEST, NULL, "the request must be a JSON object");
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
                        r = fail(err, API_ERROR_INVALID_REQUEST, key, "unknown field '%.64s'", key);
                        goto finish;
                }
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
                r = fail(err, API_ERROR_INVALID_REQUEST, "language", "language: required");
                goto finish;
        }
        if (!json_object_is_type(v, json_type_string)) {
                r = fail(err, API_ERROR_INVALID_REQUEST, "language", "language: expected a string");
                goto finish;
        }
        {
                const Language *l = language_find(json_object_get_string(v));
                char reason[LANGUAGE_REASON_MAX];

                if ((size_t) json_object_get_string_len(v) != strlen(json_object_get_string(v)))
                        l = NULL;   /* "python\u0000x" is not "python" */
                if (!l) {
                        r = fail(err, API_ERROR_INVALID_REQUEST, "language",
                                 "language: unknown language '%.64s' (see GET /v1/languages)",
                                 json_object_get_string(v));
                        goto finish;
                }
                if (language_unavailable_reason(l, reason, sizeof(reason))) {
                        r = fail(err, API_ERROR_INVALID_REQUEST, "language",
                                 "language: '%s' is not available on this server: %.300s", l->name, reason);
                        goto finish;
                }
                req->language = language_ref(l);
        }

        if (!json_object_object_get_ex(root, "code", &v)) {
                r = fail(err, API_ERROR_INVALID_REQUEST, "code", "code: required");
                goto finish;
        }
        if (!json_object_is_type(v, json_type_string)) {
                r = fail(err, API_ERROR_INVALID_REQUEST, "code", "code: expected a string");
                goto finish;
        }
        req->code_len = (size_t) json_object_get_string_len(v);
        if (req->code_len > c->max_code_bytes) {
                r = fail(err, API_ERROR_TOO_LARGE, "code", "code: %zu bytes exceeds MaxCodeBytes=%" PRIu64, req->code_len,
                         c->max_code_bytes);
                goto finish;
        }
        if (memchr(json_object_get_string(v), 0, req->code_len)) {
                r = fail(err, API_ERROR_INVALID_REQUEST, "code", "code: contains a NUL byte");
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
        req->disk_mb_given = v && json_object_object_get_ex(v, "disk_mb", NULL);

        if (json_object_object_get_ex(root, "env", &v)) {
                r = parse_env(v, req, err);
                if (r < 0)
                        goto finish;
        }

        if (json_object_object_get_ex(root, "args", &v)) {
                r = parse_args(v, req, err);
                if (r < 0)
                        goto finish;
        }

        if (json_object_object_get_ex(root, "stdin", &v)) {
                r = parse_stdin(v, c->max_stdin_bytes, req, err);
                if (r < 0)
                        goto finish;
        }

        if (json_object_object_get_ex(root, "seed", &v)) {
                r = get_u64(v, "seed", 0, INT64_MAX - 1, &req->seed, err);
                if (r < 0)
                        goto finish;
        }

        if (json_object_object_get_ex(root, "start", &v)) {
                const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;

                if (!s || (!streq(s, "auto") && !streq(s, "cold"))) {
                        r = fail(err, API_ERROR_INVALID_REQUEST, "start",
                                 "start: expected \"auto\" (a warm unit when one can serve the request) or "
                                 "\"cold\" (a unit started for this request)");
                        goto finish;
                }
                req->cold = streq(s, "cold");
        }

        if (json_object_object_get_ex(root, "retry", &v)) {
                if (!json_object_is_type(v, json_type_boolean)) {
                        r = fail(err, API_ERROR_INVALID_REQUEST, "retry",
                                 "retry: expected true (run it once more, on another node, should the node "
                                 "running it be lost) or false (the default: it ends \"orphaned\")");
                        goto finish;
                }
                req->retry = json_object_get_boolean(v);
        }

        if (json_object_object_get_ex(root, "isolation", &v)) {
                const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;

                if (!s || (!streq(s, "auto") && !streq(s, "strong"))) {
                        r = fail(err, API_ERROR_INVALID_REQUEST, "isolation",
                                 "isolation: expected \"auto\" (the tier the daemon's policy and scan choose) or "
                                 "\"strong\" (gVisor, whatever they choose)");
                        goto finish;
                }
                req->strong = streq(s, "strong");
        }

        if (json_object_object_get_ex(root, "callback_url", &v)) {
                const char *why = NULL;

                if (!json_object_is_type(v, json_type_string)) {
                        r = fail(err, API_ERROR_INVALID_REQUEST, "callback_url", "callback_url: expected a string");
                        goto finish;
                }
                if ((size_t) json_object_get_string_len(v) != strlen(json_object_get_string(v)) ||
                    !callback_url_is_valid(json_object_get_string(v), &why)) {
                        r = fail(err, API_ERROR_INVALID_REQUEST, "callback_url", "callback_url: %s",
                                 why ?: "contains a NUL byte");
                        goto finish;
                }
                req->callback_url = strdup(json_object_get_string(v));
                if (!req->callback_url) {
                        r = -ENOMEM;
                        goto finish;
                }
        }

        if (json_object_object_get_ex(root, "files", &v)) {
                r = request_parse_files(v, c, req->limits.disk_mb, req, err);
                if (r < 0)
                        goto finish;
        }

        if (json_object_object_get_ex(root, "network", &v)) {
                r = request_parse_network(v, req, err);
                if (r < 0)
                        goto finish;
        }

        if (json_object_object_get_ex(root, "environment", &v) && !json_object_is_type(v, json_type_null)) {
                if (!json_object_is_type(v, json_type_string)) {
                        r = fail(err, API_ERROR_INVALID_REQUEST, "environment", "environment: expected a string");
                        goto finish;
                }
                if (!environment_name_is_valid(json_object_get_string(v), (size_t) json_object_get_string_len(v))) {
                        r = fail(err, API_ERROR_INVALID_REQUEST, "environment",
                                 "environment: not a valid environment name (lower-case letters, digits, '.', '_', "
                                 "'-', at most %d bytes; GET /v1/languages lists them)",
                                 ENVIRONMENT_NAME_MAX);
                        goto finish;
                }
                req->environment = strdup(json_object_get_string(v));
                if (!req->environment) {
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
