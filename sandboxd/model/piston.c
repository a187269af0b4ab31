/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "piston.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "util.h"

/* Piston's names for the languages sandboxd ships (the files in languages/), as its public server listed
 * them: the name its clients send, the aliases it accepted, the runtime it named. */
static const struct {
        const char *sandboxd;
        PistonName piston;
} names[] = {
        { "python",     { "python",     (const char *const[]) { "py", "py3", "python3", NULL }, NULL } },
        { "node",       { "javascript", (const char *const[]) { "node-javascript", "node-js", "js", "node", NULL }, "node" } },
        { "typescript", { "typescript", (const char *const[]) { "ts", "node-ts", "tsc", NULL }, NULL } },
        { "bash",       { "bash",       (const char *const[]) { "sh", NULL }, NULL } },
        { "go",         { "go",         (const char *const[]) { "golang", NULL }, NULL } },
        { "rust",       { "rust",       (const char *const[]) { "rs", NULL }, NULL } },
        { "c",          { "c",          (const char *const[]) { "gcc", NULL }, "gcc" } },
        { "cpp",        { "c++",        (const char *const[]) { "cpp", "g++", NULL }, "gcc" } },
        { "java",       { "java",       NULL, NULL } },
        { "ruby",       { "ruby",       (const char *const[]) { "ruby3", "rb", NULL }, NULL } },
        { "php",        { "php",        NULL, NULL } },
        { "perl",       { "perl",       (const char *const[]) { "pl", NULL }, NULL } },
        { "lua",        { "lua",        NULL, NULL } },
        { "r",          { "rscript",    (const char *const[]) { "r", NULL }, NULL } },
        { "sql",        { "sqlite3",    (const char *const[]) { "sqlite", "sql", NULL }, NULL } },
};

void piston_name(const Language *l, PistonName *ret) {
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(l->name, names[i].sandboxd)) {
                        *ret = names[i].piston;
                        return;
                }
        *ret = (PistonName) { .name = l->name, .aliases = l->aliases };
}

void piston_version(const char *line, char ret[static PISTON_VERSION_MAX]) {
        const char *p = line;

        strcpy(ret, "0.0.0");
        for (; p && *p; p++) {
                size_t n = 0;

                if (!isdigit((unsigned char) *p))
                        continue;
                /* digits and dots, ending on a digit: "3.11.2", not "3.11.2." */
                while (isdigit((unsigned char) p[n]) || (p[n] == '.' && isdigit((unsigned char) p[n + 1])))
                        n++;
                if (n >= PISTON_VERSION_MAX)
                        n = PISTON_VERSION_MAX - 1;
                memcpy(ret, p, n);
                ret[n] = 0;
                return;
        }
}

bool piston_version_matches(const char *want, const char *have) {
        if (!want || streq(want, "*") || streq(want, have))
                return true;
        for (;;) {
                size_t nw = strcspn(want, "."), nh = strcspn(have, ".");
                bool wild = (nw == 1 && (*want == 'x' || *want == 'X' || *want == '*'));

                if (nw == 0 || (!wild && (nw != nh || strncmp(want, have, nw) != 0)))
                        return false;
                if (nh == 0)
                        return false;          /* more components asked for than the runtime has */
                want += nw;
                have += nh;
                if (*want == 0)
                        return true;
                if (*have == 0)
                        return false;
                want++;
                have++;
        }
}

/* Piston's compiled languages have a compile stage of their own; sandboxd's syntax check of an
 * interpreted language ([Compile] Check=) is part of the run stage, as Piston's interpreter would
 * report the same error when it ran. */
static bool piston_compiles(const Language *l) {
        return l->compile_argv != NULL;
}

static bool name_in(const char *name, const char *const *list) {
        for (; list && *list; list++)
                if (streq(name, *list))
                        return true;
        return false;
}

const Language *piston_find_language(const Language *const *langs, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++) {
                PistonName p;

                piston_name(langs[i], &p);
                if (streq(name, p.name) || name_in(name, p.aliases))
                        return langs[i];
        }
        for (size_t i = 0; i < n; i++)
                if (streq(name, langs[i]->name) || name_in(name, langs[i]->aliases))
                        return langs[i];
        return NULL;
}

static json_object *strv_json(const char *const *l) {
        json_object *a = json_object_new_array();

        for (; a && l && *l; l++)
                json_object_array_add(a, json_object_new_string(*l));
        return a;
}

json_object *piston_runtimes(const Language *const *langs, size_t n) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; a && i < n; i++) {
                json_object *o = json_object_new_object();
                char version[PISTON_VERSION_MAX];
                PistonName p;

                if (!o) {
                        json_object_put(a);
                        return NULL;
                }
                piston_name(langs[i], &p);
                piston_version(langs[i]->version, version);
                json_object_object_add(o, "language", json_object_new_string(p.name));
                json_object_object_add(o, "version", json_object_new_string(version));
                json_object_object_add(o, "aliases", strv_json(p.aliases));
                if (p.runtime)
                        json_object_object_add(o, "runtime", json_object_new_string(p.runtime));
                json_object_array_add(a, o);
        }
        return a;
}

_printf_(2, 3) static int fail(char msg[static PISTON_MESSAGE_MAX], const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, PISTON_MESSAGE_MAX, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

/* A member that is absent or null: not given. */
static json_object *member(json_object *o, const char *key) {
        json_object *v = NULL;

        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
                return NULL;
        return v;
}

/* A time or memory member: absent or null gives *ret = def (Piston's default), -1 gives 0 ("the
 * configured default", sandboxd's); else a positive number (Piston's clients send integers; a fraction is rounded up). */
static int number(json_object *body, const char *key, int64_t def, int64_t *ret, char msg[static PISTON_MESSAGE_MAX]) {
        json_object *v = member(body, key);
        double d;

        *ret = def;
        if (!v)
                return 0;
        if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
                return fail(msg, "%s must be a number", key);
        d = json_object_get_double(v);
        if (d == -1) {
                *ret = 0;
                return 0;
        }
        if (!(d > 0) || d > 1e18)
                return fail(msg, "%s must be a positive number or -1", key);
        *ret = (int64_t) d + ((double) (int64_t) d < d);
        return 0;
}

/* A file's content as its encoding says ("utf8", the default, and anything Piston does not know;
 * "base64"; "hex"). */
static int decode(const char *s, size_t len, const char *encoding, uint8_t **ret, size_t *ret_len) {
        if (encoding && streq(encoding, "base64"))
                return base64_decode(s, len, ret, ret_len);
        if (encoding && streq(encoding, "hex")) {
                _cleanup_free_ uint8_t *b = NULL;

                if (len % 2 != 0)
                        return -EINVAL;
                b = malloc(len / 2 + 1);
                if (!b)
                        return -ENOMEM;
                if (unhexmem(s, len, b) < 0)
                        return -EINVAL;
                *ret_len = len / 2;
                *ret = TAKE_PTR(b);
                return 0;
        }
        *ret = malloc(len + 1);
        if (!*ret)
                return -ENOMEM;
        memcpy(*ret, s, len);
        (*ret)[len] = 0;
        *ret_len = len;
        return 0;
}

static int add_files(json_object *body, json_object *req, char msg[static PISTON_MESSAGE_MAX]) {
        json_object *files = member(body, "files"), *inputs = NULL;
        size_t n;

        if (!files || !json_object_is_type(files, json_type_array))
                return fail(msg, "files is required as an array");
        n = json_object_array_length(files);
        if (n == 0)
                return fail(msg, "files must name at least one file (the program)");
        if (n > PISTON_FILES_MAX)
                return fail(msg, "files has %zu entries, more than %d", n, PISTON_FILES_MAX);
        for (size_t i = 0; i < n; i++) {
                json_object *f = json_object_array_get_idx(files, i), *content, *name, *encoding;
                _cleanup_free_ uint8_t *data = NULL;
                _cleanup_free_ char *b64 = NULL, *path = NULL;
                json_object *e;
                size_t len = 0;
                int r;

                if (!json_object_is_type(f, json_type_object))
                        return fail(msg, "files[%zu] must be an object", i);
                content = member(f, "content");
                if (!content || !json_object_is_type(content, json_type_string))
                        return fail(msg, "files[%zu].content is required as a string", i);
                name = member(f, "name");
                if (name && !json_object_is_type(name, json_type_string))
                        return fail(msg, "files[%zu].name must be a string", i);
                encoding = member(f, "encoding");
                if (encoding && !json_object_is_type(encoding, json_type_string))
                        return fail(msg, "files[%zu].encoding must be a string", i);
                r = decode(json_object_get_string(content), json_object_get_string_len(content),
                           encoding ? json_object_get_string(encoding) : NULL, &data, &len);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return fail(msg, "files[%zu].content is not valid %s", i, json_object_get_string(encoding));
                if (i == 0) {
                        /* The program: sandboxd writes it to the language's own file name. */
                        if (memchr(data, 0, len))
                                return fail(msg, "files[0].content (the program) contains a NUL byte");
                        json_object_object_add(req, "code", json_object_new_string_len((const char *) data, (int) len));
                        continue;
                }
                /* The others: input files, in /workspace/input/ under their names (Piston's default
                 * name when they have none). */
                if (name && json_object_get_string_len(name) > 0)
                        path = strdup(json_object_get_string(name));
                else if (asprintf(&path, "file%zu.code", i) < 0)
                        path = NULL;
                b64 = base64_encode(data, len);
                if (!path || !b64)
                        return -ENOMEM;
                if (!inputs) {
                        /* Into req at once: a later refusal frees it with req. */
                        inputs = json_object_new_array();
                        if (!inputs)
                                return -ENOMEM;
                        json_object_object_add(req, "files", inputs);
                }
                e = json_object_new_object();
                if (!e)
                        return -ENOMEM;
                json_object_object_add(e, "path", json_object_new_string(path));
                json_object_object_add(e, "content_base64", json_object_new_string(b64));
                json_object_array_add(inputs, e);
        }
        return 0;
}

int piston_request(json_object *body, const Language *const *langs, size_t n, const Config *c,
                   json_object **ret_request, const Language **ret_language, char msg[static PISTON_MESSAGE_MAX]) {
        json_object *req = NULL, *limits = NULL, *v, *language, *version;
        const Language *l;
        char have[PISTON_VERSION_MAX];
        int64_t run_ms, compile_ms, run_mem, compile_mem;
        uint64_t timeout_ms, memory_mb = 0;
        int r;

        *ret_request = NULL;
        *ret_language = NULL;
        msg[0] = 0;
        if (!json_object_is_type(body, json_type_object))
                return fail(msg, "the request must be a JSON object");
        language = member(body, "language");
        if (!language || !json_object_is_type(language, json_type_string) || json_object_get_string_len(language) == 0)
                return fail(msg, "language is required as a string");
        version = member(body, "version");
        if (version && !json_object_is_type(version, json_type_string))
                return fail(msg, "version must be a string");
        l = piston_find_language(langs, n, json_object_get_string(language));
        piston_version(l ? l->version : NULL, have);
        if (!l || !piston_version_matches(version ? json_object_get_string(version) : NULL, have))
                return fail(msg, "%.64s-%.32s runtime is unknown", json_object_get_string(language),
                            version ? json_object_get_string(version) : "*");

        /* One deadline covers the compile step and the run in sandboxd: Piston's two add up. */
        r = number(body, "run_timeout", PISTON_RUN_TIMEOUT_MS, &run_ms, msg);
        if (r >= 0)
                r = number(body, "compile_timeout", PISTON_COMPILE_TIMEOUT_MS, &compile_ms, msg);
        if (r >= 0)
                r = number(body, "run_memory_limit", 0, &run_mem, msg);
        if (r >= 0)
                r = number(body, "compile_memory_limit", 0, &compile_mem, msg);
        if (r < 0)
                return r;
        if (run_ms == 0)
                run_ms = (int64_t) c->defaults.timeout_ms;
        if (piston_compiles(l) && compile_ms == 0)
                compile_ms = (int64_t) (l->compile_timeout_ms ?: c->defaults.timeout_ms);
        timeout_ms = (uint64_t) run_ms + (piston_compiles(l) ? (uint64_t) compile_ms : 0);
        if (timeout_ms > c->ceilings.timeout_ms)
                return fail(msg, "%s cannot exceed the configured limit of %" PRIu64 " ms",
                            piston_compiles(l) ? "compile_timeout + run_timeout" : "run_timeout", c->ceilings.timeout_ms);
        timeout_ms = MAX(timeout_ms, (uint64_t) 100);   /* sandboxd's floor */
        /* Bytes to MiB, rounded up; the larger of the two steps' (one cgroup holds both). -1: the
         * configured default. */
        if (run_mem > 0)
                memory_mb = ((uint64_t) run_mem + (1 << 20) - 1) >> 20;
        if (piston_compiles(l) && compile_mem > 0)
                memory_mb = MAX(memory_mb, ((uint64_t) compile_mem + (1 << 20) - 1) >> 20);
        if (memory_mb > c->ceilings.memory_mb)
                return fail(msg, "run_memory_limit cannot exceed the configured limit of %" PRIu64 " bytes",
                            c->ceilings.memory_mb << 20);
        if (memory_mb > 0)
                memory_mb = MAX(memory_mb, (uint64_t) 16);     /* sandboxd's floor */

        req = json_object_new_object();
        limits = json_object_new_object();
        if (!req || !limits) {
                json_object_put(req);
                json_object_put(limits);
                return -ENOMEM;
        }
        json_object_object_add(req, "language", json_object_new_string(l->name));
        json_object_object_add(limits, "timeout_ms", json_object_new_uint64(timeout_ms));
        if (memory_mb > 0)
                json_object_object_add(limits, "memory_mb", json_object_new_uint64(memory_mb));
        json_object_object_add(req, "limits", limits);

        r = add_files(body, req, msg);
        if (r >= 0 && (v = member(body, "stdin"))) {
                if (!json_object_is_type(v, json_type_string))
                        r = fail(msg, "stdin must be a string");
                else if (json_object_get_string_len(v) > 0)
                        json_object_object_add(req, "stdin", json_object_get(v));
        }
        if (r >= 0 && (v = member(body, "args"))) {
                bool ok = json_object_is_type(v, json_type_array);

                for (size_t i = 0; ok && i < json_object_array_length(v); i++)
                        ok = json_object_is_type(json_object_array_get_idx(v, i), json_type_string);
                if (!ok)
                        r = fail(msg, "args must be an array of strings");
                else if (json_object_array_length(v) > 0)
                        json_object_object_add(req, "args", json_object_get(v));
        }
        if (r < 0) {
                json_object_put(req);
                return r;
        }
        *ret_request = req;
        *ret_language = l;
        return 0;
}

static const char *record_string(json_object *record, const char *key) {
        json_object *v = member(record, key);

        return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static bool record_int(json_object *record, const char *key, int64_t *ret) {
        json_object *v = member(record, key);

        if (!v || !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
                return false;
        *ret = json_object_get_int64(v);
        return true;
}

/* "SIGKILL" for 9; NULL for 0. */
static json_object *signal_json(int64_t sig) {
        char buf[32];
        const char *name = sig > 0 && sig < 65 ? sigabbrev_np((int) sig) : NULL;

        if (sig <= 0)
                return NULL;
        if (name)
                snprintf(buf, sizeof(buf), "SIG%s", name);
        else
                snprintf(buf, sizeof(buf), "SIG%" PRId64, sig);
        return json_object_new_string(buf);
}

/* One stage of the answer. With ran false (the run step after a failed compile): empty, with why. */
static json_object *stage_json(json_object *record, bool ran, const char *status, const char *message,
                               bool with_exit) {
        json_object *o = json_object_new_object();
        const char *out = ran ? record_string(record, "stdout") : NULL, *err = ran ? record_string(record, "stderr") : NULL;
        _cleanup_free_ char *both = NULL;
        int64_t code = 0, sig = 0, ms = 0;
        double mb = 0;
        json_object *v;

        if (!o)
                return NULL;
        out = out ?: "";
        err = err ?: "";
        /* Piston's "output" is both streams as they came; sandboxd keeps them apart, so: stdout,
         * then stderr. */
        if (asprintf(&both, "%s%s", out, err) < 0) {
                json_object_put(o);
                return NULL;
        }
        json_object_object_add(o, "stdout", json_object_new_string(out));
        json_object_object_add(o, "stderr", json_object_new_string(err));
        json_object_object_add(o, "output", json_object_new_string(both));
        json_object_object_add(o, "code", ran && with_exit && record_int(record, "exit_code", &code) ?
                                          json_object_new_int64(code) : NULL);
        json_object_object_add(o, "signal", ran && record_int(record, "signal", &sig) ? signal_json(sig) : NULL);
        json_object_object_add(o, "message", message ? json_object_new_string(message) : NULL);
        json_object_object_add(o, "status", status ? json_object_new_string(status) : NULL);
        json_object_object_add(o, "cpu_time", ran && record_int(record, "cpu_time_ms", &ms) ? json_object_new_int64(ms) : NULL);
        json_object_object_add(o, "wall_time", ran && record_int(record, "duration_ms", &ms) ? json_object_new_int64(ms) : NULL);
        v = ran ? member(record, "peak_memory_mb") : NULL;
        if (v && (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
                mb = json_object_get_double(v);
        json_object_object_add(o, "memory", v ? json_object_new_int64((int64_t) (mb * 1048576.0)) : NULL);
        return o;
}

/* Piston's stage status: "RE" a runtime error, "SG" killed by a signal, "TO" the time limit, "OL"/
 * "EL" output limits (never: sandboxd cuts output, it does not kill for it), "XX" the server's own
 * failure. NULL: success. */
static const char *piston_status(const char *error_type, bool killed) {
        if (!error_type)
                return NULL;
        if (streq(error_type, "timeout"))
                return "TO";
        if (streq(error_type, "internal_error") || streq(error_type, "input_error"))
                return "XX";
        if (streq(error_type, "oom") || killed)
                return "SG";
        /* compile_error of a syntax check, runtime_error, resource_limit */
        return "RE";
}

json_object *piston_response(json_object *record, const Language *l) {
        const char *error_type = record_string(record, "error_type"), *status = record_string(record, "status");
        const char *message = NULL, *st;
        char version[PISTON_VERSION_MAX];
        json_object *o = json_object_new_object(), *run, *compile = NULL;
        int64_t sig = 0;
        bool killed, cancelled = status && streq(status, "cancelled");
        PistonName p;

        if (!o)
                return NULL;
        killed = record_int(record, "signal", &sig) && sig > 0;
        if (error_type || cancelled)
                message = record_string(record, "error_message") ?: record_string(record, "reason") ?:
                          (cancelled ? "cancelled" : NULL);
        st = cancelled ? "XX" : piston_status(error_type, killed);

        if (piston_compiles(l) && error_type && streq(error_type, "compile_error")) {
                compile = stage_json(record, true, "RE", message, true);
                run = stage_json(record, false, NULL, "not run: the compile step failed", false);
        } else {
                if (piston_compiles(l))
                        compile = stage_json(record, false, NULL, NULL, false);
                run = stage_json(record, true, st, message, true);
        }
        if (compile && piston_compiles(l)) {
                /* A compile step that passed exited 0. */
                if (!(error_type && streq(error_type, "compile_error")))
                        json_object_object_add(compile, "code", json_object_new_int(0));
        }
        if (!run || (piston_compiles(l) && !compile)) {
                json_object_put(run);
                json_object_put(compile);
                json_object_put(o);
                return NULL;
        }
        piston_name(l, &p);
        piston_version(l->version, version);
        json_object_object_add(o, "language", json_object_new_string(p.name));
        json_object_object_add(o, "version", json_object_new_string(version));
        json_object_object_add(o, "run", run);
        if (compile)
                json_object_object_add(o, "compile", compile);
        return o;
}
