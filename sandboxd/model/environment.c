/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <json-c/json.h>
#include <sys/stat.h>

#include "environment.h"
#include "log.h"
#include "strv.h"

bool environment_name_is_valid(const char *s, size_t n) {
        if (!s || n == 0 || n > ENVIRONMENT_NAME_MAX)
                return false;
        if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];

                if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
                        return false;
        }
        return true;
}

static bool is_ident_start(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool is_ident_char(char c) {
        return is_ident_start(c) || (c >= '0' && c <= '9');
}

bool python_module_name_is_valid(const char *s, size_t n) {
        bool start = true;

        if (!s || n == 0 || n > PYTHON_MODULE_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                if (start) {
                        if (!is_ident_start(s[i]))
                                return false;
                        start = false;
                } else if (s[i] == '.')
                        start = true;
                else if (!is_ident_char(s[i]))
                        return false;
        }
        return !start;
}

void environment_done(Environment *e) {
        if (!e)
                return;
        free(e->name);
        free(e->language);
        free(e->description);
        free(e->usr_dir);
        for (size_t i = 0; i < e->n_packages; i++) {
                free(e->packages[i].name);
                free(e->packages[i].version);
        }
        free(e->packages);
        strv_free_n(e->modules, e->n_modules);
        strv_free_n(e->env, e->n_env);
        strv_free_n(e->preload, e->n_preload);
        *e = (Environment) {};
}

/* A manifest value: printable ASCII or UTF-8, no control characters (it goes into JSON and logs). */
static bool value_is_clean(const char *s) {
        for (; *s; s++)
                if ((unsigned char) *s < 0x20 || *s == 0x7f)
                        return false;
        return true;
}

static bool token_is_clean(const char *s, size_t n) {
        if (n == 0 || n > 256)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] <= 0x20 || (unsigned char) s[i] >= 0x7f)
                        return false;
        return true;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int environment_parse_manifest(const char *name, const char *text, size_t len, Environment *ret, char **ret_error) {
        _cleanup_(environment_done) Environment e = {};
        size_t line = 0, allocated = 0;
        const char *p = text, *end = text + len;
        bool have_name = false;

        if (!environment_name_is_valid(name, strlen(name)))
                return error_set(ret_error, "invalid environment name '%.64s'", name);
        if (len > ENVIRONMENT_MANIFEST_MAX)
                return error_set(ret_error, "manifest larger than %d bytes", ENVIRONMENT_MANIFEST_MAX);
        if (memchr(text, 0, len))
                return error_set(ret_error, "manifest contains a NUL byte");

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
                _cleanup_free_ char *l = NULL;
                char *eq, *key, *value;

                line++;
                if (n > ENVIRONMENT_LINE_MAX)
                        return error_set(ret_error, "line %zu: longer than %d bytes", line, ENVIRONMENT_LINE_MAX);
                l = strndup(p, n);
                if (!l)
                        return -ENOMEM;
                p += n + (nl ? 1 : 0);
                if (n > 0 && l[n - 1] == '\r')
                        l[n - 1] = '\0';
                if (l[0] == '\0' || l[0] == '#' || l[0] == ';')
                        continue;
                eq = strchr(l, '=');
                if (!eq)
                        return error_set(ret_error, "line %zu: expected KEY=VALUE", line);
                *eq = '\0';
                key = l;
                value = eq + 1;
                if (!value_is_clean(value))
                        return error_set(ret_error, "line %zu: control character in the value", line);

                if (streq(key, "Name")) {
                        if (!streq(value, name))
                                return error_set(ret_error, "line %zu: Name=%.64s, but the directory is '%s'", line,
                                                 value, name);
                        have_name = true;
                } else if (streq(key, "Language")) {
                        if (!environment_name_is_valid(value, strlen(value)))
                                return error_set(ret_error, "line %zu: invalid Language=", line);
                        if (free_and_strdup(&e.language, value) < 0)
                                return -ENOMEM;
                } else if (streq(key, "Description")) {
                        if (free_and_strdup(&e.description, value) < 0)
                                return -ENOMEM;
                } else if (streq(key, "Package")) {
                        char *sp = strchr(value, ' ');

                        if (!sp || !token_is_clean(value, (size_t) (sp - value)) ||
                            !token_is_clean(sp + 1, strlen(sp + 1)))
                                return error_set(ret_error, "line %zu: expected Package=NAME VERSION", line);
                        if (e.n_packages >= ENVIRONMENT_PACKAGES_MAX)
                                return error_set(ret_error, "line %zu: more than %d packages", line,
                                                 ENVIRONMENT_PACKAGES_MAX);
                        if (e.n_packages >= allocated) {
                                size_t na = allocated ? allocated * 2 : 32;
                                EnvironmentPackage *np = realloc(e.packages, na * sizeof(EnvironmentPackage));

                                if (!np)
                                        return -ENOMEM;
                                e.packages = np;
                                allocated = na;
                        }
                        e.packages[e.n_packages].name = strndup(value, (size_t) (sp - value));
                        e.packages[e.n_packages].version = strdup(sp + 1);
                        e.n_packages++;
                        if (!e.packages[e.n_packages - 1].name || !e.packages[e.n_packages - 1].version)
                                return -ENOMEM;
                } else if (streq(key, "Module")) {
                        if (!python_module_name_is_valid(value, strlen(value)) || strchr(value, '.'))
                                return error_set(ret_error, "line %zu: invalid Module=", line);
                        if (e.n_modules >= ENVIRONMENT_MODULES_MAX)
                                return error_set(ret_error, "line %zu: more than %d modules", line,
                                                 ENVIRONMENT_MODULES_MAX);
                        if (!strv_contains(e.modules, value) && strv_extend(&e.modules, &e.n_modules, value) < 0)
                                return -ENOMEM;
                } else if (streq(key, "Preload")) {
                        /* Imported by a warm unit's runtime before its claim (a dotted name: it goes
                         * to __import__(), comma-separated on the runtime's command line). */
                        if (!python_module_name_is_valid(value, strlen(value)))
                                return error_set(ret_error, "line %zu: invalid Preload=", line);
                        if (e.n_preload >= ENVIRONMENT_PRELOAD_MAX)
                                return error_set(ret_error, "line %zu: more than %d Preload= modules", line,
                                                 ENVIRONMENT_PRELOAD_MAX);
                        if (!strv_contains(e.preload, value) && strv_extend(&e.preload, &e.n_preload, value) < 0)
                                return -ENOMEM;
                } else if (streq(key, "Environment")) {
                        const char *veq = strchr(value, '=');
                        _cleanup_free_ char *vname = veq ? strndup(value, (size_t) (veq - value)) : NULL;

                        if (!veq || veq == value)
                                return error_set(ret_error, "line %zu: expected Environment=NAME=VALUE", line);
                        if (!vname)
                                return -ENOMEM;
                        for (const char *q = vname; *q; q++)
                                if (!is_ident_char(*q))
                                        return error_set(ret_error, "line %zu: invalid variable name", line);
                        if (e.n_env >= ENVIRONMENT_ENV_MAX)
                                return error_set(ret_error, "line %zu: more than %d variables", line,
                                                 ENVIRONMENT_ENV_MAX);
                        if (strv_extend(&e.env, &e.n_env, value) < 0)
                                return -ENOMEM;
                } else
                        return error_set(ret_error, "line %zu: unknown key '%.64s'", line, key);
        }
        if (!have_name)
                return error_set(ret_error, "no Name=");
        if (!e.language)
                return error_set(ret_error, "no Language=");
        if (e.n_modules > 1)
                qsort(e.modules, e.n_modules, sizeof(char *), cmp_str);
        e.name = strdup(name);
        if (!e.name)
                return -ENOMEM;
        *ret = e;
        e = (Environment) {};
        return 0;
}

static int read_bounded(int dfd, const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = openat(dfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        ssize_t n;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADF;
        if ((uint64_t) st.st_size > max)
                return -EFBIG;
        buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        n = loop_read(fd, buf, (size_t) st.st_size);
        if (n < 0)
                return (int) n;
        buf[n] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = (size_t) n;
        return 0;
}

static int cmp_env(const void *a, const void *b) {
        return strcmp(((const Environment *) a)->name, ((const Environment *) b)->name);
}

int environments_load(const char *dir, Environments **ret) {
        _cleanup_(environments_freep) Environments *es = calloc(1, sizeof(Environments));
        _cleanup_close_ int dfd = -EBADF;
        DIR *d;
        struct dirent *de;

        if (!es)
                return -ENOMEM;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                if (errno != ENOENT)
                        log_warning_errno(-errno, "Cannot open the environments directory '%s', ignoring: %m", dir);
                *ret = TAKE_PTR(es);
                return 0;
        }
        d = fdopendir(fcntl(dfd, F_DUPFD_CLOEXEC, 3));
        if (!d) {
                log_warning_errno(-errno, "Cannot read the environments directory '%s', ignoring: %m", dir);
                *ret = TAKE_PTR(es);
                return 0;
        }
        es->envs = calloc(ENVIRONMENTS_MAX, sizeof(Environment));
        if (!es->envs) {
                closedir(d);
                return -ENOMEM;
        }
        while ((de = readdir(d))) {
                _cleanup_free_ char *path = NULL, *text = NULL, *error = NULL;
                _cleanup_close_ int efd = -EBADF, ufd = -EBADF;
                Environment e = {};
                size_t len = 0;
                int r;

                if (de->d_name[0] == '.')
                        continue;   /* ".", "..", and tools/build-environment's trees in the making */
                if (!environment_name_is_valid(de->d_name, strlen(de->d_name))) {
                        log_warning("%s/%s: not a valid environment name, ignoring.", dir, de->d_name);
                        continue;
                }
                efd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (efd < 0)
                        continue;
                ufd = openat(efd, "usr", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (ufd < 0) {
                        log_warning("%s/%s: no usr/ directory, ignoring.", dir, de->d_name);
                        continue;
                }
                /* What it holds becomes part of /usr for its units: only root may have put it there
                 * (the overlay is nosuid and nodev in any case). */
                {
                        struct stat est, ust;

                        if (fstat(efd, &est) < 0 || fstat(ufd, &ust) < 0 || est.st_uid != 0 || ust.st_uid != 0 ||
                            (est.st_mode & 0022) || (ust.st_mode & 0022)) {
                                log_warning("%s/%s: not root's, or writable by others: ignoring.", dir, de->d_name);
                                continue;
                        }
                }
                r = read_bounded(efd, "manifest", ENVIRONMENT_MANIFEST_MAX, &text, &len);
                if (r == -ENOMEM) {
                        closedir(d);
                        return r;
                }
                if (r < 0) {
                        log_warning_errno(r, "%s/%s/manifest: cannot read, ignoring: %m", dir, de->d_name);
                        continue;
                }
                r = environment_parse_manifest(de->d_name, text, len, &e, &error);
                if (r == -ENOMEM) {
                        closedir(d);
                        return r;
                }
                if (r < 0) {
                        log_warning("%s/%s/manifest: %s, ignoring.", dir, de->d_name, error ?: "invalid");
                        continue;
                }
                if (es->n >= ENVIRONMENTS_MAX) {
                        log_warning("%s: more than %d environments, ignoring '%s'.", dir, ENVIRONMENTS_MAX, de->d_name);
                        environment_done(&e);
                        continue;
                }
                if (asprintf(&path, "%s/%s/usr", dir, de->d_name) < 0) {
                        environment_done(&e);
                        closedir(d);
                        return -ENOMEM;
                }
                /* The path goes into a BindReadOnlyPaths= and into overlayfs' lowerdir= (inside the
                 * unit, at a fixed name): it only has to be a path systemd accepts. */
                e.usr_dir = TAKE_PTR(path);
                es->envs[es->n++] = e;
        }
        closedir(d);
        if (es->n > 1)
                qsort(es->envs, es->n, sizeof(Environment), cmp_env);
        for (size_t i = 0; i < es->n; i++)
                log_info("Environment '%s' (language %s): %zu packages, %zu modules.", es->envs[i].name,
                         es->envs[i].language, es->envs[i].n_packages, es->envs[i].n_modules);
        *ret = TAKE_PTR(es);
        return 0;
}

Environments *environments_free(Environments *e) {
        if (!e)
                return NULL;
        for (size_t i = 0; i < e->n; i++)
                environment_done(e->envs + i);
        free(e->envs);
        free(e);
        return NULL;
}

const Environment *environments_find(const Environments *e, const char *name) {
        for (size_t i = 0; e && name && i < e->n; i++)
                if (streq(e->envs[i].name, name))
                        return e->envs + i;
        return NULL;
}

static bool env_has_name(char *const *l, size_t n, const char *kv) {
        size_t k = strcspn(kv, "=");

        for (size_t i = 0; i < n; i++)
                if (strncmp(l[i], kv, k) == 0 && l[i][k] == '=')
                        return true;
        return false;
}

static int cmp_env_name(const void *a, const void *b) {
        const char *x = *(char *const *) a, *y = *(char *const *) b;
        size_t kx = strcspn(x, "="), ky = strcspn(y, "=");
        int c = strncmp(x, y, MIN(kx, ky));

        return c != 0 ? c : kx < ky ? -1 : kx > ky ? 1 : 0;
}

int environment_merge_env(const Environment *e, char *const *user, size_t n_user, char ***ret, size_t *ret_n) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;

        for (size_t i = 0; i < n_user; i++)
                if (strv_extend(&l, &n, user[i]) < 0)
                        return -ENOMEM;
        for (size_t i = 0; e && i < e->n_env; i++)
                if (!env_has_name(user, n_user, e->env[i]) && strv_extend(&l, &n, e->env[i]) < 0)
                        return -ENOMEM;
        if (n > 1)
                qsort(l, n, sizeof(char *), cmp_env_name);
        *ret = TAKE_PTR(l);
        *ret_n = n;
        return 0;
}

bool environment_has_module(const Environment *e, const char *module) {
        const char *dot = strchr(module, '.');
        size_t n = dot ? (size_t) (dot - module) : strlen(module);
        size_t lo = 0, hi = e->n_modules;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strncmp(e->modules[mid], module, n);

                if (c == 0 && e->modules[mid][n] != '\0')
                        c = 1;
                if (c == 0)
                        return true;
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return false;
}

struct json_object *environments_json_for_language(const Environments *e, const char *language) {
        json_object *a = json_object_new_array();

        if (!a)
                return NULL;
        for (size_t i = 0; e && i < e->n; i++) {
                const Environment *x = e->envs + i;
                json_object *o, *pk;

                if (!streq(x->language, language))
                        continue;
                o = json_object_new_object();
                pk = json_object_new_array();
                if (!o || !pk) {
                        json_object_put(o);
                        json_object_put(pk);
                        json_object_put(a);
                        return NULL;
                }
                json_object_object_add(o, "name", json_object_new_string(x->name));
                json_object_object_add(o, "description", x->description ? json_object_new_string(x->description) : NULL);
                for (size_t k = 0; k < x->n_packages; k++) {
                        json_object *p = json_object_new_object();

                        json_object_object_add(p, "name", json_object_new_string(x->packages[k].name));
                        json_object_object_add(p, "version", json_object_new_string(x->packages[k].version));
                        json_object_array_add(pk, p);
                }
                json_object_object_add(o, "packages", pk);
                json_object_array_add(a, o);
        }
        return a;
}

int missing_module_from_stderr(const char *err, size_t len, char *buf, size_t n) {
        static const char marker[] = "ModuleNotFoundError: No module named '";
        const size_t m = sizeof(marker) - 1;
        int found = 0;

        if (!err || n < PYTHON_MODULE_NAME_MAX + 1)
                return 0;
        /* Every occurrence; the last valid one wins (the traceback's final line is the error). */
        for (size_t i = 0; i + m <= len;) {
                const char *hit = memmem(err + i, len - i, marker, m);
                const char *name, *q;
                size_t k;

                if (!hit)
                        break;
                name = hit + m;
                k = (size_t) (err + len - name);
                q = memchr(name, '\'', MIN(k, (size_t) PYTHON_MODULE_NAME_MAX + 1));
                if (q && python_module_name_is_valid(name, (size_t) (q - name))) {
                        memcpy(buf, name, (size_t) (q - name));
                        buf[q - name] = '\0';
                        found = 1;
                }
                i = (size_t) (name - err);
        }
        return found;
}

char *missing_module_message(const Environments *e, const char *language, const char *env_name, const char *module,
                             bool network) {
        _cleanup_free_ char *where = NULL, *have = NULL, *msg = NULL;
        size_t n_have = 0;
        char top[PYTHON_MODULE_NAME_MAX + 1];
        const char *dot = strchr(module, '.');
        size_t k = MIN(dot ? (size_t) (dot - module) : strlen(module), sizeof(top) - 1);
        int r;

        memcpy(top, module, k);
        top[k] = '\0';
        if (env_name)
                r = asprintf(&where, "environment '%s'", env_name);
        else
                r = asprintf(&where, "the %s base (no environment)", language);
        if (r < 0)
                return NULL;

        for (size_t i = 0; e && i < e->n; i++) {
                const Environment *x = e->envs + i;
                char *s;

                if (!streq(x->language, language) || streq_ptr(x->name, env_name) || !environment_has_module(x, module))
                        continue;
                if (n_have >= 4)
                        break;
                if (asprintf(&s, "%s%s\"%s\"", have ?: "", have ? " or " : "", x->name) < 0)
                        return NULL;
                free(have);
                have = s;
                n_have++;
        }

        if (have && network)
                r = asprintf(&msg,
                             "No module named '%s' in %s: run it with \"environment\": %s, which has it, or install "
                             "it into the workspace with pip install %s (network is allowed)",
                             module, where, have, top);
        else if (have)
                r = asprintf(&msg, "No module named '%s' in %s: run it with \"environment\": %s, which has it", module,
                             where, have);
        else if (network)
                r = asprintf(&msg,
                             "No module named '%s' in %s: install it into the workspace with pip install %s "
                             "(network is allowed; it goes to /workspace/" ".pkgs, which python imports from)",
                             module, where, top);
        else
                r = asprintf(&msg,
                             "No module named '%s' in %s, nor in any environment of %s (GET /v1/languages lists "
                             "them): allow network with a package index in \"network\" and pip install %s "
                             "into the workspace",
                             module, where, language, top);
        if (r < 0)
                return NULL;
        return TAKE_PTR(msg);
}
