/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The LanguageRunner table, loaded from language definition files (sandboxd.languages(5), parsed by
 * langdef.c): everything sandboxd knows about a language is one file. A table is immutable once
 * built and reference-counted: a reload builds a new one and makes it current, while requests and
 * warm units that hold a row of the old one keep it alive (language_ref()) until they end. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "langdef.h"

/* Where sandbox-exec writes the program's source inside the sandbox: a directory of its own on the
 * sandbox's private /run, owned by root and only readable by the program, so no earlier run of a
 * session can plant anything at that name and the program cannot rewrite its own source. */
#define SANDBOX_CODE_DIR LANGDEF_CODE_DIR

/* A compiled system call filter (classic BPF, bpf_len / 8 instructions). */
typedef struct SeccompFilter {
        uint8_t *bpf;
        size_t bpf_len;
} SeccompFilter;

typedef struct LanguageTable LanguageTable;

typedef struct Language {
        const char *name;                  /* protocol name: "python" */
        const char *const *aliases;        /* NULL-terminated, may be NULL */
        const char *source_name;           /* file the code is written to, in SANDBOX_CODE_DIR */
        const char *runtime;               /* absolute path that must exist on the host, or NULL */
        const char *const *compile_argv;   /* NULL-terminated, or NULL: no separate compile step */
        const char *const *run_argv;       /* NULL-terminated */
        /* A syntax checker, run by sandbox-exec in a fresh process only after the run step failed
         * with a non-zero exit status (nothing of the program is alive by then): exit status 1 means
         * "the source does not compile" and makes the report phase=compile. The run step prints the
         * error itself; no channel the program's own process could write decides this. */
        const char *const *check_argv;     /* NULL-terminated, or NULL */
        const char *const *env;            /* extra KEY=VALUE pairs for this language, or NULL */
        /* System calls this language needs beyond the common allow-list of seccomp-policy.c
         * (NULL-terminated names, or NULL). Each row gets its own filter (filter below); a name
         * the policy denies makes the language unavailable. The filter is inherited: a program of
         * another language that runs this language's runtime as a subprocess does not get these
         * calls (ENOSYS). */
        const char *const *extra_syscalls;
        /* The run step of a warm unit whose runtime starts before the claim (sandbox-exec
         * --warm-preload), or NULL. See Warm= in sandboxd.languages(5). */
        const char *const *warm_argv;
        /* Environment names this language's runtime reads as it starts (exact names, or prefixes
         * ending in '*'): a request setting one cannot use a preloaded runtime (it starts cold). */
        const char *const *warm_cold_env;
        const char *const *version_argv;   /* prints the runtime's version, or NULL */
        bool compiles;                     /* has a [Compile] step (Command= or Check=) */
        uint64_t compile_timeout_ms;       /* TimeoutSec= of [Compile]; 0: the run's own limit */
        uint64_t compile_memory_mb;        /* MemoryMB= of [Compile]; 0: the run's own limit */
        const LangDefItem *ro_paths;       /* host paths bound read-only at the same place */
        size_t n_ro_paths;
        const LangDefItem *rw_paths;       /* ... and read-write */
        size_t n_rw_paths;

        /* Filled in by the daemon after the load (language_table_set_filter(), _set_version()). */
        SeccompFilter filter;
        SeccompFilter net_filter;          /* the same with AF_INET/AF_INET6 sockets: runs with network */
        char *refused;                     /* why the daemon refused the row (its filter, ...), or NULL */
        char *version;                     /* first line the version command printed, or NULL */

        LanguageTable *table;
        LangDef *def;                      /* owns the strings above */
        char **syscall_names;              /* owns extra_syscalls (the names of def->syscalls) */
} Language;

#define LANGUAGE_VERSION_MAX 128U

/* Read the language files of the directories (vendor first, then the overriding ones: ranks in
 * order), merge them (langdef_merge()) and build a table (one reference). Problems with single files
 * are returned in *ret_errors ("PATH:LINE: reason", NULL-terminated or NULL) and leave those files
 * out; the return value is negative only for -ENOMEM, -E2BIG (too many files) or an unreadable
 * directory. */
int language_table_load(const char *const *dirs, size_t n_dirs, LanguageTable **ret, char ***ret_errors);
/* Build from text tuples (what _load() does after reading), for tests. */
int language_table_from_sources(const LangDefSource *sources, size_t n, LanguageTable **ret, char ***ret_errors);

LanguageTable *language_table_ref(LanguageTable *t);
LanguageTable *language_table_unref(LanguageTable *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(LanguageTable *, language_table_unref);

size_t language_table_count(const LanguageTable *t);
Language *language_table_row(const LanguageTable *t, size_t i);        /* NULL past the end */
const Language *language_table_find(const LanguageTable *t, const char *name);
/* Do two tables come from the same files with the same text? */
bool language_table_same_sources(const LanguageTable *a, const LanguageTable *b);
/* The version text of a probe's output: its first non-empty line, control characters dropped,
 * at most LANGUAGE_VERSION_MAX bytes of valid UTF-8 (malloc'ed; NULL: nothing usable). Pure. */
char *language_version_from_output(const char *out, size_t len);
int language_set_version(Language *l, const char *out, size_t len);

/* The current table (the one requests resolve names in), set at start and at each reload (the
 * table takes one more reference; the previous current one loses one). NULL before the first. */
void language_table_set_current(LanguageTable *t);
LanguageTable *language_table_current(void);

/* In the current table. */
const Language *language_find(const char *name);
const Language *language_get(size_t i);   /* NULL past the end */
size_t language_count(void);

/* A row's table lives while one of its rows is referenced. NULL-safe. */
const Language *language_ref(const Language *l);
const Language *language_unref(const Language *l);

/* May ReadOnlyPath= name p? Not the sandbox's own directories (/run, /tmp, /usr, /etc, /var/lib, ...)
 * or anything below them: systemd, sandbox-exec and the overlay own those. A row with one is not
 * available. Pure. */
bool language_ro_path_allowed(const char *p);

/* Is the runtime present on this host, and its filter built? */
bool language_available(const Language *l);
/* Why not, written to buf (and returned), or NULL when it is available. */
#define LANGUAGE_REASON_MAX 512U
const char *language_unavailable_reason(const Language *l, char *buf, size_t size);
