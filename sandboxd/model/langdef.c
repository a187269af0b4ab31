/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Language definition files: a strict line parser (no partial acceptance: the first error refuses the
 * whole file), ExecStart=-style word quoting, and the vendor//etc merge over text tuples. */

#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "langdef.h"
#include "strv.h"
#include "utf8.h"
#include "util.h"

static void items_free(LangDefItem *items, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(items[i].what);
                free(items[i].reason);
        }
        free(items);
}

LangDef *langdef_free(LangDef *d) {
        if (!d)
                return NULL;
        free(d->name);
        strv_free(d->aliases);
        free(d->source_file);
        free(d->runtime);
        strv_free(d->run_argv);
        strv_free(d->env);
        strv_free(d->version_argv);
        strv_free(d->warm_argv);
        strv_free(d->warm_cold_env);
        strv_free(d->compile_argv);
        strv_free(d->check_argv);
        items_free(d->syscalls, d->n_syscalls);
        items_free(d->ro_paths, d->n_ro_paths);
        items_free(d->rw_paths, d->n_rw_paths);
        return mfree(d);
}

static const char *const compile_error_table[] = {
        [LANGDEF_COMPILE_ERROR_EXIT_STATUS] = "exit-status",
        [LANGDEF_COMPILE_ERROR_SYNTAX_CHECK] = "syntax-check",
};

const char *langdef_compile_error_to_string(LangDefCompileError e) {
        return (unsigned) e < ELEMENTSOF(compile_error_table) ? compile_error_table[e] : NULL;
}

LangDefCompileError langdef_compile_error_from_string(const char *s) {
        for (size_t i = 0; s && i < ELEMENTSOF(compile_error_table); i++)
                if (streq(compile_error_table[i], s))
                        return (LangDefCompileError) i;
        return (LangDefCompileError) -EINVAL;
}

bool langdef_name_is_valid(const char *s) {
        size_t n;

        if (isempty(s))
                return false;
        n = strlen(s);
        if (n > LANGDEF_NAME_MAX)
                return false;
        if (!islower((unsigned char) s[0]) && !isdigit((unsigned char) s[0]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789+_-", s[i]))
                        return false;
        return true;
}

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

int langdef_split_words(const char *s, size_t max, char ***ret, const char **ret_reason) {
        _cleanup_strv_free_ char **words = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t n_words = 0;
        const char *reason = NULL;

        buf = malloc(strlen(s) + 1);
        if (!buf)
                return -ENOMEM;

        for (const char *p = s;;) {
                size_t len = 0;
                char quote = 0;

                while (is_blank(*p))
                        p++;
                if (!*p)
                        break;

                for (;;) {
                        char c = *p;

                        if (!c) {
                                if (quote) {
                                        reason = "unterminated quote";
                                        goto fail;
                                }
                                break;
                        }
                        if (!quote && is_blank(c))
                                break;
                        p++;
                        if (c == '\\') {
                                char e = *p;

                                if (!e) {
                                        reason = "backslash at the end of the line";
                                        goto fail;
                                }
                                p++;
                                switch (e) {
                                case '\\': case '"': case '\'': case ' ': case '\t':
                                        buf[len++] = e;
                                        break;
                                case 'n':
                                        buf[len++] = '\n';
                                        break;
                                case 't':
                                        buf[len++] = '\t';
                                        break;
                                case 's':
                                        buf[len++] = ' ';
                                        break;
                                default:
                                        reason = "unknown backslash escape";
                                        goto fail;
                                }
                                continue;
                        }
                        if (!quote && (c == '"' || c == '\'')) {
                                quote = c;
                                continue;
                        }
                        if (quote && c == quote) {
                                quote = 0;
                                continue;
                        }
                        buf[len++] = c;
                }

                if (n_words >= max) {
                        reason = "too many words";
                        goto fail;
                }
                buf[len] = 0;
                if (strv_extend(&words, &n_words, buf) < 0)
                        return -ENOMEM;
        }

        *ret = TAKE_PTR(words);
        return 0;

fail:
        if (ret_reason)
                *ret_reason = reason;
        return -EINVAL;
}

/* An absolute, normalized path: no empty, "." or ".." component, no trailing slash (but "/"). */
static bool path_is_normalized_absolute(const char *p) {
        size_t n = strlen(p);

        if (n == 0 || n > LANGDEF_PATH_MAX || p[0] != '/')
                return false;
        if (n == 1)
                return true;
        if (p[n - 1] == '/')
                return false;
        for (const char *c = p; c && *c; ) {
                const char *next;
                size_t len;

                c++;                    /* past '/' */
                next = strchr(c, '/');
                len = next ? (size_t) (next - c) : strlen(c);
                if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                c = next;
        }
        return true;
}

static bool filename_is_plain(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > LANGDEF_NAME_MAX * 2 || streq(s, ".") || streq(s, "..") || s[0] == '.')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) s[i]) && !strchr("._+-", s[i]))
                        return false;
        return true;
}

static bool env_name_is_valid(const char *s, size_t n) {
        if (n == 0 || n > 128 || isdigit((unsigned char) s[0]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) s[i]) && s[i] != '_')
                        return false;
        return true;
}

/* ColdEnvironment=: a name, or a prefix ending in '*'. */
static bool env_pattern_is_valid(const char *s) {
        size_t n = strlen(s);

        if (n > 0 && s[n - 1] == '*')
                n--;
        return env_name_is_valid(s, n);
}

typedef enum Section {
        SECTION_NONE,
        SECTION_LANGUAGE,
        SECTION_COMPILE,
        SECTION_SANDBOX,
        _SECTION_MAX,
} Section;

static const char *const section_names[_SECTION_MAX] = {
        [SECTION_LANGUAGE] = "Language",
        [SECTION_COMPILE] = "Compile",
        [SECTION_SANDBOX] = "Sandbox",
};

typedef enum KeyType {
        KEY_NAME,
        KEY_ALIASES,
        KEY_SOURCE_FILE,
        KEY_RUNTIME,
        KEY_ARGV,
        KEY_ENV,
        KEY_COLD_ENV,
        KEY_SECONDS,
        KEY_MEGABYTES,
        KEY_ERROR,
        KEY_SYSCALL,
        KEY_PATH,
} KeyType;

typedef struct Key {
        Section section;
        const char *key;
        KeyType type;
        bool repeatable;
        size_t offset;              /* of the field in LangDef */
        size_t count_offset;        /* KEY_SYSCALL, KEY_PATH: of the count */
} Key;

#define F(f) offsetof(LangDef, f)

static const Key keys[] = {
        { SECTION_LANGUAGE, "Name",            KEY_NAME,        false, F(name),            0 },
        { SECTION_LANGUAGE, "Aliases",         KEY_ALIASES,     false, F(aliases),         0 },
        { SECTION_LANGUAGE, "SourceFile",      KEY_SOURCE_FILE, false, F(source_file),     0 },
        { SECTION_LANGUAGE, "Runtime",         KEY_RUNTIME,     false, F(runtime),         0 },
        { SECTION_LANGUAGE, "Run",             KEY_ARGV,        false, F(run_argv),        0 },
        { SECTION_LANGUAGE, "Environment",     KEY_ENV,         true,  F(env),             0 },
        { SECTION_LANGUAGE, "Version",         KEY_ARGV,        false, F(version_argv),    0 },
        { SECTION_LANGUAGE, "Warm",            KEY_ARGV,        false, F(warm_argv),       0 },
        { SECTION_LANGUAGE, "ColdEnvironment", KEY_COLD_ENV,    true,  F(warm_cold_env),   0 },
        { SECTION_COMPILE,  "Command",         KEY_ARGV,        false, F(compile_argv),    0 },
        { SECTION_COMPILE,  "Check",           KEY_ARGV,        false, F(check_argv),      0 },
        { SECTION_COMPILE,  "TimeoutSec",      KEY_SECONDS,     false, F(compile_timeout_sec), 0 },
        { SECTION_COMPILE,  "MemoryMB",        KEY_MEGABYTES,   false, F(compile_memory_mb),   0 },
        { SECTION_COMPILE,  "Error",           KEY_ERROR,       false, F(compile_error),   0 },
        { SECTION_SANDBOX,  "SystemCall",      KEY_SYSCALL,     true,  F(syscalls),        F(n_syscalls) },
        { SECTION_SANDBOX,  "ReadOnlyPath",    KEY_PATH,        true,  F(ro_paths),        F(n_ro_paths) },
        { SECTION_SANDBOX,  "ReadWritePath",   KEY_PATH,        true,  F(rw_paths),        F(n_rw_paths) },
};

typedef struct Parser {
        const char *path;
        unsigned line;
        char **error;
        unsigned seen[ELEMENTSOF(keys)];        /* line of the first assignment, 0: none */
        unsigned section_line[_SECTION_MAX];
} Parser;

static int fail(Parser *p, unsigned line, const char *fmt, ...) _printf_(3, 4);
static int fail(Parser *p, unsigned line, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        if (error_set(p->error, "%s:%u: %s", p->path, line, msg) < 0 && p->error && !*p->error)
                return -ENOMEM;
        return -EINVAL;
}

/* Every '%' of an argv word is "%s" or "%%". */
static const char *placeholder_check(char *const *argv) {
        for (char *const *a = argv; *a; a++)
                for (const char *c = *a; (c = strchr(c, '%')); c += 2)
                        if (c[1] != 's' && c[1] != '%')
                                return "unknown '%' specifier (only %s and %% are known)";
        return NULL;
}

static int placeholder_expand(char **argv, const char *source_path) {
        for (char **a = argv; a && *a; a++) {
                size_t n = 0, sp = strlen(source_path);
                char *out, *o;

                for (const char *c = *a; *c; c++)
                        n += (c[0] == '%' && c[1] == 's') ? sp : 1;
                o = out = malloc(n + 1);
                if (!out)
                        return -ENOMEM;
                for (const char *c = *a; *c; c++) {
                        if (c[0] == '%' && c[1] == 's') {
                                memcpy(o, source_path, sp);
                                o += sp;
                                c++;
                        } else if (c[0] == '%' && c[1] == '%') {
                                *o++ = '%';
                                c++;
                        } else
                                *o++ = *c;
                }
                *o = 0;
                free(*a);
                *a = out;
        }
        return 0;
}

static int item_add(LangDefItem **items, size_t *n, const char *what, size_t what_len, const char *reason) {
        LangDefItem *a;
        char *w, *r;

        a = reallocarray(*items, *n + 1, sizeof(LangDefItem));
        if (!a)
                return -ENOMEM;
        *items = a;
        w = strndup(what, what_len);
        r = strdup(reason);
        if (!w || !r) {
                free(w);
                free(r);
                return -ENOMEM;
        }
        a[(*n)++] = (LangDefItem) { .what = w, .reason = r };
        return 0;
}

static int assign(Parser *p, LangDef *d, const Key *k, const char *value) {
        void *field = (uint8_t *) d + k->offset;
        _cleanup_strv_free_ char **words = NULL;
        const char *reason = NULL;
        uint64_t u;
        int r;

        switch (k->type) {
        case KEY_NAME:
                if (!langdef_name_is_valid(value))
                        return fail(p, p->line, "Name= '%s' is not a valid name ([a-z0-9][a-z0-9+_-]*, at most %u bytes)",
                                    value, LANGDEF_NAME_MAX);
                return free_and_strdup((char **) field, value) < 0 ? -ENOMEM : 0;

        case KEY_SOURCE_FILE:
                if (!filename_is_plain(value))
                        return fail(p, p->line, "SourceFile= '%s' is not a plain file name", value);
                return free_and_strdup((char **) field, value) < 0 ? -ENOMEM : 0;

        case KEY_RUNTIME:
                if (!path_is_normalized_absolute(value))
                        return fail(p, p->line, "Runtime= '%s' is not an absolute normalized path", value);
                return free_and_strdup((char **) field, value) < 0 ? -ENOMEM : 0;

        case KEY_SECONDS:
        case KEY_MEGABYTES: {
                uint64_t max = k->type == KEY_SECONDS ? LANGDEF_TIMEOUT_SEC_MAX : LANGDEF_MEMORY_MB_MAX;

                if (safe_atou64(value, &u) < 0 || u == 0 || u > max)
                        return fail(p, p->line, "%s= '%s' is not a number in 1..%" PRIu64, k->key, value, max);
                *(uint64_t *) field = u;
                return 0;
        }

        case KEY_ERROR: {
                LangDefCompileError e = langdef_compile_error_from_string(value);

                if ((int) e < 0)
                        return fail(p, p->line, "Error= '%s' is neither 'exit-status' nor 'syntax-check'", value);
                *(LangDefCompileError *) field = e;
                return 0;
        }

        case KEY_SYSCALL:
        case KEY_PATH: {
                LangDefItem **items = field;
                size_t *count = (size_t *) ((uint8_t *) d + k->count_offset);
                size_t len = strcspn(value, " \t");
                const char *rest = value + len;
                size_t max = k->type == KEY_SYSCALL ? LANGDEF_SYSCALLS_MAX : LANGDEF_PATHS_MAX;
                _cleanup_free_ char *what = strndup(value, len);

                if (!what)
                        return -ENOMEM;
                while (is_blank(*rest))
                        rest++;
                if (k->type == KEY_SYSCALL) {
                        if (len == 0 || len > LANGDEF_SYSCALL_NAME_MAX || strspn(what, "abcdefghijklmnopqrstuvwxyz0123456789_") != len)
                                return fail(p, p->line, "SystemCall= '%s' is not a system call name ([a-z0-9_]+)", what);
                } else if (!path_is_normalized_absolute(what))
                        return fail(p, p->line, "%s= '%s' is not an absolute normalized path", k->key, what);
                if (!*rest)
                        return fail(p, p->line, "%s= '%s' has no reason (\"%s= %s REASON...\")", k->key, what, k->key,
                                    k->type == KEY_SYSCALL ? "NAME" : "PATH");
                if (strlen(rest) > LANGDEF_REASON_MAX)
                        return fail(p, p->line, "%s= reason longer than %u bytes", k->key, LANGDEF_REASON_MAX);
                for (size_t i = 0; i < *count; i++)
                        if (streq((*items)[i].what, what))
                                return fail(p, p->line, "%s= '%s' given twice", k->key, what);
                if (*count >= max)
                        return fail(p, p->line, "more than %zu %s= entries", max, k->key);
                return item_add(items, count, value, len, rest);
        }

        default:
                break;
        }

        /* The word lists. */
        r = langdef_split_words(value, k->type == KEY_ARGV ? LANGDEF_ARGV_MAX :
                                       k->type == KEY_ALIASES ? LANGDEF_ALIASES_MAX :
                                       k->type == KEY_ENV ? LANGDEF_ENV_MAX : LANGDEF_COLD_ENV_MAX,
                                &words, &reason);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return fail(p, p->line, "%s=: %s", k->key, reason);
        if (strv_length(words) == 0)
                return fail(p, p->line, "%s= has no words", k->key);

        switch (k->type) {
        case KEY_ARGV:
                if (!path_is_normalized_absolute(words[0]))
                        return fail(p, p->line, "%s= program '%s' is not an absolute normalized path", k->key, words[0]);
                reason = placeholder_check(words);
                if (reason)
                        return fail(p, p->line, "%s=: %s", k->key, reason);
                *(char ***) field = TAKE_PTR(words);
                return 0;

        case KEY_ALIASES:
                for (size_t i = 0; words[i]; i++) {
                        if (!langdef_name_is_valid(words[i]))
                                return fail(p, p->line, "Aliases= '%s' is not a valid name", words[i]);
                        for (size_t j = 0; j < i; j++)
                                if (streq(words[i], words[j]))
                                        return fail(p, p->line, "Aliases= '%s' given twice", words[i]);
                }
                *(char ***) field = TAKE_PTR(words);
                return 0;

        case KEY_ENV:
        case KEY_COLD_ENV: {
                char ***list = field;
                size_t n = strv_length(*list);
                size_t max = k->type == KEY_ENV ? LANGDEF_ENV_MAX : LANGDEF_COLD_ENV_MAX;

                for (size_t i = 0; words[i]; i++) {
                        const char *eq = strchr(words[i], '=');
                        size_t klen = eq ? (size_t) (eq - words[i]) : 0;

                        if (k->type == KEY_ENV && (!eq || !env_name_is_valid(words[i], klen)))
                                return fail(p, p->line, "Environment= '%s' is not NAME=VALUE", words[i]);
                        if (k->type == KEY_COLD_ENV && !env_pattern_is_valid(words[i]))
                                return fail(p, p->line, "ColdEnvironment= '%s' is not a name or a prefix ending in '*'",
                                            words[i]);
                        for (size_t j = 0; j < n; j++)
                                if (k->type == KEY_ENV ? strncmp((*list)[j], words[i], klen + 1) == 0
                                                       : streq((*list)[j], words[i]))
                                        return fail(p, p->line, "%s= '%.*s' given twice", k->key,
                                                    (int) (k->type == KEY_ENV ? klen : strlen(words[i])), words[i]);
                        if (n >= max)
                                return fail(p, p->line, "more than %zu %s= entries", max, k->key);
                        if (strv_extend(list, &n, words[i]) < 0)
                                return -ENOMEM;
                }
                return 0;
        }

        default:
                assert(false);
                return -EINVAL;
        }
}

static char *strip(char *s) {
        char *e;

        while (is_blank(*s))
                s++;
        e = s + strlen(s);
        while (e > s && (is_blank(e[-1]) || e[-1] == '\r'))
                *--e = 0;
        return s;
}

/* The line of the first assignment of a key, 0: none. */
static unsigned seen_line(const Parser *p, Section section, const char *key) {
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                if (keys[i].section == section && streq(keys[i].key, key))
                        return p->seen[i];
        assert(false);
        return 0;
}

static int check_whole(Parser *p, LangDef *d) {
        unsigned lang_line = p->section_line[SECTION_LANGUAGE];
        unsigned compile_line = p->section_line[SECTION_COMPILE];
        _cleanup_free_ char *source_path = NULL;
        int r;

        if (!lang_line)
                return fail(p, 1, "no [Language] section");
        if (!d->name)
                return fail(p, lang_line, "[Language] has no Name=");
        if (!d->source_file)
                return fail(p, lang_line, "[Language] has no SourceFile=");
        if (!d->run_argv)
                return fail(p, lang_line, "[Language] has no Run=");
        for (char **a = d->aliases; a && *a; a++)
                if (streq(*a, d->name))
                        return fail(p, seen_line(p, SECTION_LANGUAGE, "Aliases"), "Aliases= '%s' is the language's own name", *a);
        if (d->warm_cold_env && !d->warm_argv)
                return fail(p, seen_line(p, SECTION_LANGUAGE, "ColdEnvironment"), "ColdEnvironment= without Warm=");

        if (compile_line) {
                d->has_compile = true;
                if (!d->compile_argv && !d->check_argv)
                        return fail(p, compile_line, "[Compile] has neither Command= nor Check=");
                if (d->compile_error == LANGDEF_COMPILE_ERROR_EXIT_STATUS && !d->compile_argv)
                        return fail(p, compile_line, "Error=exit-status needs Command=");
                if (d->compile_error == LANGDEF_COMPILE_ERROR_SYNTAX_CHECK && !d->check_argv)
                        return fail(p, compile_line, "Error=syntax-check needs Check=");
                if (d->compile_error == LANGDEF_COMPILE_ERROR_EXIT_STATUS && d->check_argv)
                        return fail(p, seen_line(p, SECTION_COMPILE, "Check"), "Check= is only used with Error=syntax-check");
        }

        if (asprintf(&source_path, "%s/%s", LANGDEF_CODE_DIR, d->source_file) < 0)
                return -ENOMEM;
        r = placeholder_expand(d->run_argv, source_path);
        if (r >= 0)
                r = placeholder_expand(d->version_argv, source_path);
        if (r >= 0)
                r = placeholder_expand(d->warm_argv, source_path);
        if (r >= 0)
                r = placeholder_expand(d->compile_argv, source_path);
        if (r >= 0)
                r = placeholder_expand(d->check_argv, source_path);
        return r;
}

int langdef_parse(const char *text, size_t size, const char *path, const char *filename,
                  LangDef **ret, char **ret_error) {
        _cleanup_(langdef_freep) LangDef *d = NULL;
        _cleanup_free_ char *copy = NULL;
        Parser p = { .path = path, .error = ret_error };
        Section section = SECTION_NONE;
        const char *suffix;
        int r;

        assert(text || size == 0);
        assert(ret);

        if (size > LANGDEF_FILE_MAX)
                return fail(&p, 1, "file larger than %u bytes", LANGDEF_FILE_MAX);
        if (memchr(text, 0, size))
                return fail(&p, 1, "file contains a NUL byte");
        if (!utf8_is_valid(text, size))
                return fail(&p, 1, "file is not valid UTF-8");

        suffix = filename ? strrchr(filename, '.') : NULL;
        if (!suffix || !streq(suffix, ".conf"))
                return fail(&p, 1, "file name '%s' does not end in .conf", strna(filename));

        d = calloc(1, sizeof(LangDef));
        copy = strndup(text, size);
        if (!d || !copy)
                return -ENOMEM;

        for (char *next = copy; next; ) {
                char *l = next, *eq, *key, *value;
                const Key *k = NULL;
                size_t ki = 0;

                next = strchr(next, '\n');
                if (next)
                        *next++ = 0;
                p.line++;

                if (strlen(l) > LANGDEF_LINE_MAX)
                        return fail(&p, p.line, "line longer than %u bytes", LANGDEF_LINE_MAX);
                for (const char *c = l; *c; c++)
                        if ((unsigned char) *c < 0x20 && *c != '\t' && !(*c == '\r' && c[1] == 0))
                                return fail(&p, p.line, "control character 0x%02x", (unsigned) (unsigned char) *c);

                l = strip(l);
                if (!*l || *l == '#' || *l == ';')
                        continue;

                if (*l == '[') {
                        size_t n = strlen(l);
                        Section s = SECTION_NONE;

                        if (n < 3 || l[n - 1] != ']')
                                return fail(&p, p.line, "invalid section header '%s'", l);
                        l[n - 1] = 0;
                        for (Section i = SECTION_LANGUAGE; i < _SECTION_MAX; i++)
                                if (streq(section_names[i], l + 1))
                                        s = i;
                        if (s == SECTION_NONE)
                                return fail(&p, p.line, "unknown section [%s]", l + 1);
                        if (p.section_line[s])
                                return fail(&p, p.line, "section [%s] given twice (first on line %u)", l + 1,
                                            p.section_line[s]);
                        p.section_line[s] = p.line;
                        section = s;
                        continue;
                }

                eq = strchr(l, '=');
                if (!eq)
                        return fail(&p, p.line, "expected KEY=VALUE, got '%s'", l);
                *eq = 0;
                key = strip(l);
                value = strip(eq + 1);
                if (section == SECTION_NONE)
                        return fail(&p, p.line, "assignment '%s=' outside of a section", key);
                for (ki = 0; ki < ELEMENTSOF(keys); ki++)
                        if (keys[ki].section == section && streq(keys[ki].key, key)) {
                                k = &keys[ki];
                                break;
                        }
                if (!k)
                        return fail(&p, p.line, "unknown key '%s' in section [%s]", key, section_names[section]);
                if (!*value)
                        return fail(&p, p.line, "%s= is empty", key);
                if (p.seen[ki] && !k->repeatable)
                        return fail(&p, p.line, "%s= given twice (first on line %u)", key, p.seen[ki]);
                if (!p.seen[ki])
                        p.seen[ki] = p.line;

                r = assign(&p, d, k, value);
                if (r < 0)
                        return r;
        }

        if (d->name && (strlen(filename) != strlen(d->name) + strlen(".conf") ||
                        strncmp(filename, d->name, strlen(d->name)) != 0))
                return fail(&p, seen_line(&p, SECTION_LANGUAGE, "Name"), "Name= '%s' does not match the file name '%s'", d->name, filename);

        r = check_whole(&p, d);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(d);
        return 0;
}

LangDefSet *langdef_set_free(LangDefSet *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_defs; i++)
                langdef_free(s->defs[i]);
        free(s->defs);
        strv_free(s->errors);
        return mfree(s);
}

static int set_error(LangDefSet *s, const char *fmt, ...) _printf_(2, 3);
static int set_error(LangDefSet *s, const char *fmt, ...) {
        va_list ap;
        char *msg;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        r = strv_extend(&s->errors, &s->n_errors, msg);
        free(msg);
        return r;
}

static int source_cmp(const void *a, const void *b) {
        const LangDefSource *x = *(const LangDefSource *const *) a, *y = *(const LangDefSource *const *) b;
        int c = strcmp(x->filename, y->filename);

        if (c != 0)
                return c;
        return x->rank < y->rank ? 1 : x->rank > y->rank ? -1 : 0;      /* highest rank first */
}

/* Which earlier definition holds one of d's names? */
static const char *name_holder(const LangDefSet *s, char *const *paths, const LangDef *d, const char **ret_name) {
        for (size_t i = 0; i < s->n_defs; i++) {
                const LangDef *o = s->defs[i];

                for (size_t a = 0; a <= strv_length(d->aliases); a++) {
                        const char *n = a == 0 ? d->name : d->aliases[a - 1];

                        if (streq(o->name, n) || strv_contains(o->aliases, n)) {
                                *ret_name = n;
                                return paths[i];
                        }
                }
        }
        return NULL;
}

int langdef_merge(const LangDefSource *sources, size_t n, LangDefSet **ret) {
        _cleanup_(langdef_set_freep) LangDefSet *s = NULL;
        _cleanup_free_ const LangDefSource **sorted = NULL;
        _cleanup_strv_free_ char **paths = NULL;       /* the path of each of s->defs */
        size_t n_paths = 0;
        int r;

        assert(sources || n == 0);
        assert(ret);

        if (n > LANGDEF_FILES_MAX)
                return -E2BIG;
        s = calloc(1, sizeof(LangDefSet));
        sorted = calloc(n + 1, sizeof(LangDefSource *));
        if (!s || !sorted)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                sorted[i] = sources + i;
        qsort(sorted, n, sizeof(sorted[0]), source_cmp);

        for (size_t i = 0; i < n; ) {
                const LangDefSource *w = sorted[i];
                _cleanup_free_ char *path = NULL, *error = NULL;
                _cleanup_(langdef_freep) LangDef *d = NULL;
                const char *holder, *clash = NULL, *suffix = strrchr(w->filename, '.');
                size_t j;

                if (asprintf(&path, "%s/%s", w->dir, w->filename) < 0)
                        return -ENOMEM;

                /* The other tuples of this name: lower ranks are overridden, the same rank is an error. */
                for (j = i + 1; j < n && streq(sorted[j]->filename, w->filename); j++)
                        if (sorted[j]->rank == w->rank && set_error(s, "%s: given twice in the same rank, ignoring the second", path) < 0)
                                return -ENOMEM;
                i = j;

                if (!suffix || !streq(suffix, ".conf") || suffix == w->filename ||
                    (size_t) (suffix - w->filename) > LANGDEF_NAME_MAX) {
                        if (set_error(s, "%s: not a file name NAME.conf, ignoring", path) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (w->size == 0)       /* masked */
                        continue;

                r = langdef_parse(w->text, w->size, path, w->filename, &d, &error);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        if (strv_extend(&s->errors, &s->n_errors, error ?: path) < 0)
                                return -ENOMEM;
                        continue;
                }

                holder = name_holder(s, paths, d, &clash);
                if (holder) {
                        if (set_error(s, "%s: name '%s' is already taken by %s, ignoring", path, clash, holder) < 0)
                                return -ENOMEM;
                        continue;
                }

                LangDef **a = reallocarray(s->defs, s->n_defs + 1, sizeof(LangDef *));
                if (!a)
                        return -ENOMEM;
                s->defs = a;
                if (strv_extend(&paths, &n_paths, path) < 0)
                        return -ENOMEM;
                s->defs[s->n_defs++] = TAKE_PTR(d);
        }

        *ret = TAKE_PTR(s);
        return 0;
}

void langdef_sources_free(LangDefSource *sources, size_t n) {
        for (size_t i = 0; sources && i < n; i++) {
                free((char *) sources[i].dir);
                free((char *) sources[i].filename);
                free((char *) sources[i].text);
        }
        free(sources);
}

static int read_one(int dir_fd, const char *name, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        ssize_t k;

        fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if (st.st_size > LANGDEF_FILE_MAX)
                return -EFBIG;
        /* One byte more than the cap: a file that grew since fstat() is still caught. */
        buf = malloc(LANGDEF_FILE_MAX + 2);
        if (!buf)
                return -ENOMEM;
        k = loop_read(fd, buf, LANGDEF_FILE_MAX + 1);
        if (k < 0)
                return (int) k;
        if ((size_t) k > LANGDEF_FILE_MAX)
                return -EFBIG;
        buf[k] = 0;
        *ret = TAKE_PTR(buf);
        *ret_size = (size_t) k;
        return 0;
}

int langdef_read_dir(const char *dir, unsigned rank, LangDefSource **sources, size_t *n, char ***errors) {
        _cleanup_close_ int fd = -EBADF;
        DIR *d;
        int r = 0;

        assert(dir && sources && n && errors);

        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        TAKE_FD(fd);

        for (struct dirent *de; (errno = 0, de = readdir(d)); ) {
                _cleanup_free_ char *text = NULL;
                size_t size = 0;
                LangDefSource *a;
                int k;

                if (de->d_name[0] == '.' || !endswith(de->d_name, ".conf"))
                        continue;
                if (*n >= LANGDEF_FILES_MAX) {
                        r = -E2BIG;
                        break;
                }
                k = read_one(dirfd(d), de->d_name, &text, &size);
                if (k == -ENOMEM) {
                        r = k;
                        break;
                }
                if (k < 0) {
                        char *msg;

                        if (asprintf(&msg, "%s/%s: %s, ignoring", dir, de->d_name,
                                     k == -EFBIG ? "larger than 64 KiB" :
                                     k == -EBADFD ? "not a regular file" :
                                     k == -ELOOP ? "a symbolic link" : strerror(-k)) < 0) {
                                r = -ENOMEM;
                                break;
                        }
                        k = strv_extend(errors, NULL, msg);
                        free(msg);
                        if (k < 0) {
                                r = k;
                                break;
                        }
                        continue;
                }
                a = reallocarray(*sources, *n + 1, sizeof(LangDefSource));
                if (!a) {
                        r = -ENOMEM;
                        break;
                }
                *sources = a;
                a[*n] = (LangDefSource) {
                        .rank = rank,
                        .dir = strdup(dir),
                        .filename = strdup(de->d_name),
                        .text = text,
                        .size = size,
                };
                if (!a[*n].dir || !a[*n].filename) {
                        free((char *) a[*n].dir);
                        free((char *) a[*n].filename);
                        r = -ENOMEM;
                        break;
                }
                TAKE_PTR(text);
                (*n)++;
        }
        if (r == 0 && errno != 0)
                r = -errno;
        closedir(d);
        return r;
}
