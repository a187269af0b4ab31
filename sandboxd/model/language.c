/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The LanguageRunner table, built from language definition files (langdef.c parses and merges them).
 * A row says where the code goes, what runs it and how a syntax error is told apart from a runtime
 * failure; sandbox-exec runs these argvs inside the unit, as the program's user, with the workspace as
 * the working directory; the source is SANDBOX_CODE_DIR/<source_name>. The built-in languages are the
 * files of languages/ in the source tree. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "language.h"
#include "strv.h"
#include "utf8.h"
#include "util.h"

struct LanguageTable {
        unsigned n_ref;
        Language *rows;
        size_t n;
        /* What the table was built from, for language_table_same_sources(): each tuple as
         * "rank\0dir\0filename\0size\0" and its text, in the order given. */
        char *fingerprint;
        size_t fingerprint_len;
};

static LanguageTable *current;

static void row_done(Language *l) {
        free(l->filter.bpf);
        free(l->net_filter.bpf);
        free(l->refused);
        free(l->version);
        free(l->syscall_names);
        langdef_free(l->def);
}

static LanguageTable *table_free(LanguageTable *t) {
        for (size_t i = 0; i < t->n; i++)
                row_done(t->rows + i);
        free(t->rows);
        free(t->fingerprint);
        return mfree(t);
}

LanguageTable *language_table_ref(LanguageTable *t) {
        if (t)
                t->n_ref++;
        return t;
}

LanguageTable *language_table_unref(LanguageTable *t) {
        if (t && --t->n_ref == 0)
                table_free(t);
        return NULL;
}

size_t language_table_count(const LanguageTable *t) {
        return t ? t->n : 0;
}

Language *language_table_row(const LanguageTable *t, size_t i) {
        return t && i < t->n ? t->rows + i : NULL;
}

const Language *language_table_find(const LanguageTable *t, const char *name) {
        if (!t || isempty(name))
                return NULL;
        for (size_t i = 0; i < t->n; i++) {
                const Language *l = t->rows + i;

                if (streq(l->name, name))
                        return l;
                for (const char *const *a = l->aliases; a && *a; a++)
                        if (streq(*a, name))
                                return l;
        }
        return NULL;
}

bool language_table_same_sources(const LanguageTable *a, const LanguageTable *b) {
        if (!a || !b)
                return a == b;
        return a->fingerprint_len == b->fingerprint_len &&
               (a->fingerprint_len == 0 || memcmp(a->fingerprint, b->fingerprint, a->fingerprint_len) == 0);
}

static int fingerprint(const LangDefSource *sources, size_t n, char **ret, size_t *ret_len) {
        size_t len = 0, at = 0;
        char *f;

        for (size_t i = 0; i < n; i++)
                len += 64 + strlen(sources[i].dir) + strlen(sources[i].filename) + sources[i].size;
        f = malloc(len + 1);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                int k = snprintf(f + at, len + 1 - at, "%u%c%s%c%s%c%zu%c", sources[i].rank, 0, sources[i].dir, 0,
                                 sources[i].filename, 0, sources[i].size, 0);

                at += (size_t) k;
                if (sources[i].size > 0)
                        memcpy(f + at, sources[i].text, sources[i].size);
                at += sources[i].size;
        }
        *ret = f;
        *ret_len = at;
        return 0;
}

static int row_from_def(Language *l, LangDef *d) {
        char **names = NULL;

        if (d->n_syscalls > 0) {
                names = calloc(d->n_syscalls + 1, sizeof(char *));
                if (!names) {
                        langdef_free(d);
                        return -ENOMEM;
                }
                for (size_t i = 0; i < d->n_syscalls; i++)
                        names[i] = d->syscalls[i].what;   /* borrowed from d */
        }
        *l = (Language) {
                .name = d->name,
                .aliases = (const char *const *) d->aliases,
                .source_name = d->source_file,
                .runtime = d->runtime,
                .compile_argv = (const char *const *) d->compile_argv,
                .run_argv = (const char *const *) d->run_argv,
                .check_argv = (const char *const *) d->check_argv,
                .env = (const char *const *) d->env,
                .warm_argv = (const char *const *) d->warm_argv,
                .warm_cold_env = (const char *const *) d->warm_cold_env,
                .version_argv = (const char *const *) d->version_argv,
                .compiles = d->has_compile,
                .compile_timeout_ms = d->compile_timeout_sec * 1000,
                .compile_memory_mb = d->compile_memory_mb,
                .ro_paths = d->ro_paths,
                .n_ro_paths = d->n_ro_paths,
                .rw_paths = d->rw_paths,
                .n_rw_paths = d->n_rw_paths,
                .def = d,
                .syscall_names = names,
                .extra_syscalls = (const char *const *) names,
        };
        return 0;
}

int language_table_from_sources(const LangDefSource *sources, size_t n, LanguageTable **ret, char ***ret_errors) {
        _cleanup_(langdef_set_freep) LangDefSet *set = NULL;
        LanguageTable *t;
        int r;

        r = langdef_merge(sources, n, &set);
        if (r < 0)
                return r;
        t = calloc(1, sizeof(LanguageTable));
        if (!t)
                return -ENOMEM;
        t->n_ref = 1;
        r = fingerprint(sources, n, &t->fingerprint, &t->fingerprint_len);
        if (r >= 0 && set->n_defs > 0) {
                t->rows = calloc(set->n_defs, sizeof(Language));
                if (!t->rows)
                        r = -ENOMEM;
        }
        if (r < 0) {
                table_free(t);
                return r;
        }
        /* The definitions move into the rows. */
        for (size_t i = 0; i < set->n_defs; i++) {
                Language *l = t->rows + t->n;

                r = row_from_def(l, TAKE_PTR(set->defs[i]));
                if (r < 0) {
                        table_free(t);
                        return r;
                }
                l->table = t;
                t->n++;
                for (size_t k = 0; k < l->n_ro_paths && !l->refused; k++)
                        if (!language_ro_path_allowed(l->ro_paths[k].what) &&
                            asprintf(&l->refused, "ReadOnlyPath=%s is not allowed: the sandbox's own "
                                     "directories cannot be bound over", l->ro_paths[k].what) < 0) {
                                l->refused = NULL;      /* asprintf() leaves it undefined on failure */
                                table_free(t);
                                return -ENOMEM;
                        }
        }
        if (ret_errors)
                *ret_errors = TAKE_PTR(set->errors);
        *ret = t;
        return 0;
}

bool language_ro_path_allowed(const char *p) {
        /* The sandbox's own tree (its tmpfs, the /usr overlay and the synthetic /etc, what systemd
         * and sandbox-exec mount or detach there), and the root itself and /var (which holds two). */
        static const char *const own[] = {
                "/run", "/var/lib", "/var/tmp", "/tmp", "/workspace", "/usr", "/etc", "/proc", "/sys",
                "/dev", "/bin", "/sbin", "/lib", "/lib64",
        };

        if (!p || streq(p, "/") || streq(p, "/var"))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(own); i++) {
                const char *r = startswith(p, own[i]);

                if (r && (*r == 0 || *r == '/'))
                        return false;
        }
        return true;
}

int language_table_load(const char *const *dirs, size_t n_dirs, LanguageTable **ret, char ***ret_errors) {
        _cleanup_strv_free_ char **errors = NULL;
        LangDefSource *sources = NULL;
        size_t n = 0;
        int r = 0;

        for (size_t i = 0; i < n_dirs && r >= 0; i++)
                if (dirs[i]) {
                        r = langdef_read_dir(dirs[i], (unsigned) i, &sources, &n, &errors);
                        if (r < 0 && r != -ENOMEM && r != -E2BIG) {
                                char *msg;

                                /* An unreadable directory (a symlink, not a directory) is one problem
                                 * of its own: the others are still read. */
                                if (asprintf(&msg, "%s: cannot read: %s, ignoring", dirs[i], strerror(-r)) < 0)
                                        r = -ENOMEM;
                                else {
                                        r = strv_extend(&errors, NULL, msg);
                                        free(msg);
                                }
                        }
                }
        if (r >= 0) {
                _cleanup_strv_free_ char **more = NULL;

                r = language_table_from_sources(sources, n, ret, &more);
                for (char **e = more; r >= 0 && e && *e; e++)
                        r = strv_extend(&errors, NULL, *e);
        }
        langdef_sources_free(sources, n);
        if (r >= 0 && ret_errors)
                *ret_errors = TAKE_PTR(errors);
        return r;
}

char *language_version_from_output(const char *out, size_t len) {
        char buf[LANGUAGE_VERSION_MAX + 1];
        size_t n = 0, i = 0;

        if (!out)
                return NULL;
        /* The first line with something on it. */
        for (;;) {
                while (i < len && (out[i] == '\n' || out[i] == '\r' || out[i] == ' ' || out[i] == '\t'))
                        i++;
                if (i >= len)
                        return NULL;
                break;
        }
        for (; i < len && out[i] != '\n' && out[i] != '\r' && n < LANGUAGE_VERSION_MAX; i++) {
                unsigned char c = (unsigned char) out[i];

                if (c < 0x20 || c == 0x7f)
                        c = ' ';
                buf[n++] = (char) c;
        }
        while (n > 0 && buf[n - 1] == ' ')
                n--;
        buf[n] = 0;
        /* Cut back to valid UTF-8 (a sequence cut at the cap, or bytes that are not text). */
        while (n > 0 && !utf8_is_valid(buf, n))
                buf[--n] = 0;
        return n > 0 ? strdup(buf) : NULL;
}

int language_set_version(Language *l, const char *out, size_t len) {
        char *v = language_version_from_output(out, len);

        if (!v && len > 0 && errno == ENOMEM)
                return -ENOMEM;
        free(l->version);
        l->version = v;
        return 0;
}

void language_table_set_current(LanguageTable *t) {
        LanguageTable *old = current;

        current = language_table_ref(t);
        language_table_unref(old);
}

LanguageTable *language_table_current(void) {
        return current;
}

const Language *language_find(const char *name) {
        return language_table_find(current, name);
}

const Language *language_get(size_t i) {
        return language_table_row(current, i);
}

size_t language_count(void) {
        return language_table_count(current);
}

const Language *language_ref(const Language *l) {
        if (l)
                language_table_ref(l->table);
        return l;
}

const Language *language_unref(const Language *l) {
        if (l)
                language_table_unref(l->table);
        return NULL;
}

/* Paths that only exist inside the sandbox: a compiled program's binary. */
static bool below(const char *p, const char *dir) {
        const char *r = startswith(p, dir);

        return r && *r == '/';
}

static bool inside_only(const char *p) {
        return below(p, "/tmp") || below(p, "/var/tmp") || below(p, "/workspace") || below(p, SANDBOX_CODE_DIR);
}

const char *language_unavailable_reason(const Language *l, char *buf, size_t size) {
        if (!l) {
                snprintf(buf, size, "no such language");
                return buf;
        }
        if (l->refused) {
                snprintf(buf, size, "%s", l->refused);
                return buf;
        }
        if (l->runtime && access(l->runtime, X_OK) < 0) {
                snprintf(buf, size, "the runtime %s is not installed", l->runtime);
                return buf;
        }
        /* The argvs' programs may differ from the runtime (a compiler driver, say). */
        if (l->compile_argv && access(l->compile_argv[0], X_OK) < 0) {
                snprintf(buf, size, "the compiler %s is not installed", l->compile_argv[0]);
                return buf;
        }
        if (!inside_only(l->run_argv[0]) && access(l->run_argv[0], X_OK) < 0) {
                snprintf(buf, size, "%s is not installed", l->run_argv[0]);
                return buf;
        }
        return NULL;
}

bool language_available(const Language *l) {
        char buf[LANGUAGE_REASON_MAX];

        return l && !language_unavailable_reason(l, buf, sizeof(buf));
}
