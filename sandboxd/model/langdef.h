/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Language definitions as data (issue 17): one file per language, NAME.conf, in the vendor directory
 * (/usr/lib/sandboxd/languages/) and in /etc/sandboxd/languages/, systemd-style ini. The format is
 * docs/sandboxd.languages.5.md. This module only parses and merges text; it is not wired into the
 * daemon yet (the compiled-in table of language.c is what runs). langdef_parse() and langdef_merge()
 * are pure; langdef_read_dir() is the one function that touches the file system. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* Hard caps. A file that breaks one is refused whole. */
#define LANGDEF_FILE_MAX        (64U * 1024U)   /* bytes of one file */
#define LANGDEF_LINE_MAX        (16U * 1024U)   /* bytes of one line (a bootstrap script is one word) */
#define LANGDEF_NAME_MAX        32U             /* a name or alias, and the file name without ".conf" */
#define LANGDEF_ARGV_MAX        64U             /* words of one argv */
#define LANGDEF_ALIASES_MAX     16U
#define LANGDEF_ENV_MAX         32U
#define LANGDEF_COLD_ENV_MAX    64U
#define LANGDEF_SYSCALLS_MAX    64U
#define LANGDEF_PATHS_MAX       32U             /* ReadOnlyPath= and ReadWritePath= each */
#define LANGDEF_PATH_MAX        1024U
#define LANGDEF_REASON_MAX      256U
#define LANGDEF_SYSCALL_NAME_MAX 64U
#define LANGDEF_TIMEOUT_SEC_MAX 3600U
#define LANGDEF_MEMORY_MB_MAX   65536U
#define LANGDEF_FILES_MAX       256U            /* files per directory, and tuples per merge */

/* Run=, Check=, Command=, Warm= and Version= words: this placeholder is the source's path inside the
 * sandbox (SANDBOX_CODE_DIR "/" SourceFile=); "%%" is a literal '%'; any other '%' is an error. */
#define LANGDEF_PLACEHOLDER "%s"

/* Where the source goes inside the sandbox; the same as language.h's SANDBOX_CODE_DIR. */
#define LANGDEF_CODE_DIR "/run/sandbox"

typedef enum LangDefCompileError {
        LANGDEF_COMPILE_ERROR_EXIT_STATUS,   /* Error=exit-status: a non-zero exit of Command= is a compile error */
        LANGDEF_COMPILE_ERROR_SYNTAX_CHECK,  /* Error=syntax-check: Check= exits 1 after a failed run */
} LangDefCompileError;

/* SystemCall=, ReadOnlyPath=, ReadWritePath=: a thing and why the language needs it. */
typedef struct LangDefItem {
        char *what;
        char *reason;
} LangDefItem;

typedef struct LangDef {
        /* [Language] */
        char *name;                 /* Name= */
        char **aliases;             /* Aliases= NULL-terminated, or NULL */
        char *source_file;          /* SourceFile= */
        char *runtime;              /* Runtime= or NULL */
        char **run_argv;            /* Run= placeholder expanded */
        char **env;                 /* Environment= KEY=VALUE, or NULL */
        char **version_argv;        /* Version= or NULL */
        char **warm_argv;           /* Warm= or NULL */
        char **warm_cold_env;       /* ColdEnvironment= or NULL */

        /* [Compile] */
        bool has_compile;
        char **compile_argv;        /* Command= or NULL */
        char **check_argv;          /* Check= or NULL */
        LangDefCompileError compile_error; /* Error= */
        uint64_t compile_timeout_sec;      /* TimeoutSec= 0: not set */
        uint64_t compile_memory_mb;        /* MemoryMB= 0: not set */

        /* [Sandbox] */
        LangDefItem *syscalls;
        size_t n_syscalls;
        LangDefItem *ro_paths;
        size_t n_ro_paths;
        LangDefItem *rw_paths;
        size_t n_rw_paths;
} LangDef;

LangDef *langdef_free(LangDef *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(LangDef *, langdef_free);

const char *langdef_compile_error_to_string(LangDefCompileError e);
LangDefCompileError langdef_compile_error_from_string(const char *s);   /* -EINVAL cast: unknown */

/* Is s a valid language name or alias: [a-z0-9][a-z0-9+_-]*, at most LANGDEF_NAME_MAX bytes? */
bool langdef_name_is_valid(const char *s);

/* One word list in the quoting of ExecStart=: words split at blanks, "..." and '...' group, backslash
 * escapes \\ \" \' \n \t \s (space) and \<blank> inside and outside quotes. -EINVAL: an unterminated
 * quote, an unknown escape, more than max words (*ret_reason says which; static string). */
int langdef_split_words(const char *s, size_t max, char ***ret, const char **ret_reason);

/* Parse one file's text (size bytes, need not be NUL-terminated). filename is its name
 * ("python.conf": Name= must be the part before ".conf"); path is what messages begin with. On
 * refusal returns -EINVAL and *ret_error is "PATH:LINE: reason" (malloc'ed); nothing is returned. */
int langdef_parse(const char *text, size_t size, const char *path, const char *filename,
                  LangDef **ret, char **ret_error);

/* One file found in one directory. rank: higher overrides lower (LANGDEF_RANK_VENDOR, LANGDEF_RANK_ETC). */
enum {
        LANGDEF_RANK_VENDOR = 0,
        LANGDEF_RANK_ETC = 1,
};

typedef struct LangDefSource {
        unsigned rank;
        const char *dir;            /* for messages: "/etc/sandboxd/languages" */
        const char *filename;       /* "python.conf" */
        const char *text;
        size_t size;                /* 0: an empty file, which masks lower ranks */
} LangDefSource;

typedef struct LangDefSet {
        LangDef **defs;             /* sorted by file name */
        size_t n_defs;
        char **errors;              /* "PATH:LINE: reason", NULL-terminated, or NULL */
        size_t n_errors;
} LangDefSet;

LangDefSet *langdef_set_free(LangDefSet *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(LangDefSet *, langdef_set_free);

/* The merge. Per file name the highest rank wins; an empty winner masks the name (no language). Each
 * winner is parsed; a refused one is reported in errors and left out (a lower rank does not come
 * back). Names and aliases are unique: in file name order, a definition one of whose names an earlier
 * one holds is reported naming both files and left out. Bad file names and two tuples of the same
 * rank and name are reported too. -ENOMEM or -E2BIG (more than LANGDEF_FILES_MAX tuples) only. */
int langdef_merge(const LangDefSource *sources, size_t n, LangDefSet **ret);

/* The one non-pure part: read the regular files NAME.conf of directory dir (absent: nothing) into
 * *sources (appended; text malloc'ed, dir and filename too: free with langdef_sources_free()). Not
 * followed: a symlink of the directory's last component, symlinked files; not read: anything but a
 * regular file, files above LANGDEF_FILE_MAX. Such a file is reported in *errors (appended strv) and
 * skipped. */
int langdef_read_dir(const char *dir, unsigned rank, LangDefSource **sources, size_t *n, char ***errors);
void langdef_sources_free(LangDefSource *sources, size_t n);
