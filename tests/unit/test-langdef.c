/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Language definition files (model/langdef.c): the three compiled-in languages written as files parse
 * to what language.c holds; every refusal with its line; the caps; the quoting; the vendor//etc merge;
 * the directory reader. */

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "model/langdef.h"
#include "model/language.h"
#include "strv.h"
#include "util.h"

#ifndef UNIT_TEST_BUILD_DIR
#error "UNIT_TEST_BUILD_DIR must name the build directory (tests/unit/meson.build)"
#endif

/* ---- helpers ---- */

static void append(char **buf, const char *fmt, ...) _printf_(2, 3);
static void append(char **buf, const char *fmt, ...) {
        _cleanup_free_ char *add = NULL;
        char *n;
        va_list ap;

        va_start(ap, fmt);
        assert_true(vasprintf(&add, fmt, ap) >= 0);
        va_end(ap);
        assert_true(asprintf(&n, "%s%s", *buf ?: "", add) >= 0);
        free(*buf);
        *buf = n;
}

/* One argv word as a file would spell it: double quotes, backslash escapes, '%' doubled, and the
 * source path as the placeholder. */
static void append_word(char **buf, const char *w, const char *source_path) {
        if (streq(w, source_path)) {
                append(buf, " %%s");
                return;
        }
        append(buf, " \"");
        for (const char *c = w; *c; c++)
                switch (*c) {
                case '\\': append(buf, "\\\\"); break;
                case '"':  append(buf, "\\\""); break;
                case '\n': append(buf, "\\n"); break;
                case '\t': append(buf, "\\t"); break;
                case '%':  append(buf, "%%%%"); break;
                default:   append(buf, "%c", *c);
                }
        append(buf, "\"");
}

static void append_argv(char **buf, const char *key, const char *const *argv, const char *source_path) {
        append(buf, "%s=", key);
        for (const char *const *a = argv; *a; a++)
                append_word(buf, *a, source_path);
        append(buf, "\n");
}

static LangDef *parse_ok(const char *filename, const char *text) {
        _cleanup_free_ char *error = NULL;
        LangDef *d = NULL;
        int r;

        r = langdef_parse(text, strlen(text), filename, filename, &d, &error);
        if (r < 0)
                fail_msg("%s: unexpected refusal: %s", filename, strna(error));
        assert_null(error);
        assert_non_null(d);
        return d;
}

static void parse_refused(const char *filename, const char *text, size_t size, const char *expected) {
        _cleanup_free_ char *error = NULL;
        LangDef *d = NULL;
        int r;

        r = langdef_parse(text, size, filename, filename, &d, &error);
        if (r != -EINVAL)
                fail_msg("accepted (r=%d), expected '%s'", r, expected);
        assert_null(d);
        assert_non_null(error);
        if (!streq(error, expected))
                fail_msg("got      '%s'\nexpected '%s'", error, expected);
}

static void assert_strv_eq(char *const *got, const char *const *want) {
        if (!strv_equal(got, (char *const *) want)) {
                for (size_t i = 0; got && got[i]; i++)
                        print_message("got[%zu]  = '%s'\n", i, got[i]);
                for (size_t i = 0; want && want[i]; i++)
                        print_message("want[%zu] = '%s'\n", i, want[i]);
                fail_msg("word lists differ");
        }
}

/* ---- the compiled-in languages as files ---- */

static const char BASH_CONF[] =
        "# bash, as language.c has it\n"
        "[Language]\n"
        "Name=bash\n"
        "Aliases=sh\n"
        "SourceFile=main.sh\n"
        "Runtime=/bin/bash\n"
        "Run=/bin/bash %s\n"
        "Version=/bin/bash --version\n"
        "\n"
        "[Compile]\n"
        "; bash -n parses the whole file without running it\n"
        "Command=/bin/bash -n %s\n"
        "Error=exit-status\n"
        "TimeoutSec=10\n"
        "MemoryMB=64\n";

static void assert_same_as_language(const LangDef *d, const Language *l) {
        assert_string_equal(d->name, l->name);
        assert_strv_eq(d->aliases, l->aliases);
        assert_string_equal(d->source_file, l->source_name);
        assert_string_equal(d->runtime, l->runtime);
        assert_strv_eq(d->run_argv, l->run_argv);
        assert_strv_eq(d->compile_argv, l->compile_argv);
        assert_strv_eq(d->check_argv, l->check_argv);
        assert_strv_eq(d->env, l->env);
        assert_strv_eq(d->warm_argv, l->warm_argv);
        assert_strv_eq(d->warm_cold_env, l->warm_cold_env);
        assert_int_equal(d->n_syscalls, strv_length((char *const *) l->extra_syscalls));
        for (size_t i = 0; i < d->n_syscalls; i++) {
                assert_string_equal(d->syscalls[i].what, l->extra_syscalls[i]);
                assert_true(strlen(d->syscalls[i].reason) > 0);
        }
}

static void test_bash(void **state) {
        _cleanup_(langdef_freep) LangDef *d = parse_ok("bash.conf", BASH_CONF);

        assert_same_as_language(d, language_find("bash"));
        assert_true(d->has_compile);
        assert_int_equal(d->compile_error, LANGDEF_COMPILE_ERROR_EXIT_STATUS);
        assert_int_equal(d->compile_timeout_sec, 10);
        assert_int_equal(d->compile_memory_mb, 64);
        assert_strv_eq(d->version_argv, (const char *const[]) { "/bin/bash", "--version", NULL });
}

/* python and node carry their bootstraps (language.c's scripts) as one quoted word each: the file is
 * written from the table's words with the quoting a person would use, so the comparison checks the
 * quoting, the placeholder and every field. */
static char *file_of(const Language *l, const char *check_key) {
        _cleanup_free_ char *source_path = NULL;
        char *buf = NULL;

        assert_true(asprintf(&source_path, "%s/%s", SANDBOX_CODE_DIR, l->source_name) >= 0);
        append(&buf, "[Language]\nName=%s\nAliases=", l->name);
        for (const char *const *a = l->aliases; *a; a++)
                append(&buf, " %s", *a);
        append(&buf, "\nSourceFile=%s\nRuntime=%s\n", l->source_name, l->runtime);
        append_argv(&buf, "Run", l->run_argv, source_path);
        for (const char *const *e = l->env; e && *e; e++)
                append(&buf, "Environment=%s\n", *e);
        if (l->warm_argv)
                append_argv(&buf, "Warm", l->warm_argv, source_path);
        for (const char *const *e = l->warm_cold_env; e && *e; e++)
                append(&buf, "ColdEnvironment=%s\n", *e);
        append(&buf, "[Compile]\nError=syntax-check\n");
        append_argv(&buf, check_key, l->check_argv, source_path);
        if (l->extra_syscalls) {
                append(&buf, "[Sandbox]\n");
                for (const char *const *s = l->extra_syscalls; *s; s++)
                        append(&buf, "SystemCall=%s V8 write-protects its JIT code with memory protection keys\n", *s);
        }
        return buf;
}

static void test_python_node(void **state) {
        const char *names[] = { "python", "node" };

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                const Language *l = language_find(names[i]);
                _cleanup_free_ char *text = file_of(l, "Check"), *fn = NULL;
                _cleanup_(langdef_freep) LangDef *d = NULL;

                assert_true(asprintf(&fn, "%s.conf", names[i]) >= 0);
                assert_true(strlen(text) <= LANGDEF_FILE_MAX);
                d = parse_ok(fn, text);
                assert_same_as_language(d, l);
                assert_true(d->has_compile);
                assert_int_equal(d->compile_error, LANGDEF_COMPILE_ERROR_SYNTAX_CHECK);
                assert_null(d->compile_argv);
        }
}

static void test_node_literal(void **state) {
        /* A hand-written file with a short script: the quoting as a person writes it. */
        _cleanup_(langdef_freep) LangDef *d = parse_ok("node.conf",
                "[Language]\n"
                "Name = node\n"
                "Aliases = javascript js nodejs\n"
                "SourceFile = main.js\n"
                "Run = /usr/bin/node -e \"console.log(\\\"hi\\\")\\nprocess.exit(0)\" %s\n"
                "Environment = NODE_PATH=/workspace/node_modules \"A=two words\"\n"
                "Environment = B='%s' C=100%%\n"
                "[Sandbox]\n"
                "SystemCall = pkey_alloc   V8 code space,   with pkeys\n"
                "ReadOnlyPath = /usr/lib/node_modules global modules\n"
                "ReadWritePath = /var/cache/node a cache\n");

        assert_strv_eq(d->run_argv, (const char *const[]) { "/usr/bin/node", "-e",
                        "console.log(\"hi\")\nprocess.exit(0)", "/run/sandbox/main.js", NULL });
        /* Environment= is not expanded: only argvs carry the placeholder. */
        assert_strv_eq(d->env, (const char *const[]) { "NODE_PATH=/workspace/node_modules", "A=two words",
                        "B=%s", "C=100%%", NULL });
        assert_int_equal(d->n_syscalls, 1);
        assert_string_equal(d->syscalls[0].what, "pkey_alloc");
        assert_string_equal(d->syscalls[0].reason, "V8 code space,   with pkeys");
        assert_int_equal(d->n_ro_paths, 1);
        assert_string_equal(d->ro_paths[0].what, "/usr/lib/node_modules");
        assert_string_equal(d->ro_paths[0].reason, "global modules");
        assert_int_equal(d->n_rw_paths, 1);
        assert_string_equal(d->rw_paths[0].what, "/var/cache/node");
        assert_false(d->has_compile);
        assert_null(d->runtime);
}

/* ---- refusals ---- */

#define HEAD "[Language]\nName=t\nSourceFile=main.t\nRun=/bin/t %s\n"       /* lines 1-4 */

static const struct {
        const char *filename;
        const char *text;
        const char *error;
} refusals[] = {
        { "t.conf", HEAD "Foo=1\n", "t.conf:5: unknown key 'Foo' in section [Language]" },
        { "t.conf", HEAD "[Compile]\nRun=/bin/t\n", "t.conf:6: unknown key 'Run' in section [Compile]" },
        { "t.conf", HEAD "[Nope]\n", "t.conf:5: unknown section [Nope]" },
        { "t.conf", HEAD "[Language]\n", "t.conf:5: section [Language] given twice (first on line 1)" },
        { "t.conf", HEAD "[Sandbox\n", "t.conf:5: invalid section header '[Sandbox'" },
        { "t.conf", HEAD "[]\n", "t.conf:5: invalid section header '[]'" },
        { "t.conf", "Name=t\n", "t.conf:1: assignment 'Name=' outside of a section" },
        { "t.conf", HEAD "garbage\n", "t.conf:5: expected KEY=VALUE, got 'garbage'" },
        { "t.conf", HEAD "Aliases=\n", "t.conf:5: Aliases= is empty" },
        { "t.conf", HEAD "Run=/bin/u\n", "t.conf:5: Run= given twice (first on line 4)" },
        { "t.conf", HEAD "\n\nName=t\n", "t.conf:7: Name= given twice (first on line 2)" },
        { "x.conf", HEAD, "x.conf:2: Name= 't' does not match the file name 'x.conf'" },
        { "tt.conf", HEAD, "tt.conf:2: Name= 't' does not match the file name 'tt.conf'" },
        { "t.txt", HEAD, "t.txt:1: file name 't.txt' does not end in .conf" },
        { "T.conf", "[Language]\nName=T\n",
          "T.conf:2: Name= 'T' is not a valid name ([a-z0-9][a-z0-9+_-]*, at most 32 bytes)" },
        { "t.conf", HEAD "Aliases=t\n", "t.conf:5: Aliases= 't' is the language's own name" },
        { "t.conf", HEAD "Aliases=a b a\n", "t.conf:5: Aliases= 'a' given twice" },
        { "t.conf", HEAD "Aliases=A\n", "t.conf:5: Aliases= 'A' is not a valid name" },
        { "t.conf", "[Language]\nName=t\nSourceFile=../x\n", "t.conf:3: SourceFile= '../x' is not a plain file name" },
        { "t.conf", "[Language]\nName=t\nSourceFile=a/b\n", "t.conf:3: SourceFile= 'a/b' is not a plain file name" },
        { "t.conf", "[Language]\nName=t\nSourceFile=.x\n", "t.conf:3: SourceFile= '.x' is not a plain file name" },
        { "t.conf", HEAD "Runtime=/usr/../bin/t\n", "t.conf:5: Runtime= '/usr/../bin/t' is not an absolute normalized path" },
        { "t.conf", HEAD "Runtime=usr/bin/t\n", "t.conf:5: Runtime= 'usr/bin/t' is not an absolute normalized path" },
        { "t.conf", HEAD "Version=t --version\n", "t.conf:5: Version= program 't' is not an absolute normalized path" },
        { "t.conf", HEAD "Version=/bin/t \"--version\n", "t.conf:5: Version=: unterminated quote" },
        { "t.conf", HEAD "Version=/bin/t '--version\n", "t.conf:5: Version=: unterminated quote" },
        { "t.conf", HEAD "Version=/bin/t \\q\n", "t.conf:5: Version=: unknown backslash escape" },
        { "t.conf", HEAD "Version=/bin/t \\\n", "t.conf:5: Version=: backslash at the end of the line" },
        { "t.conf", HEAD "Version=/bin/t %d\n", "t.conf:5: Version=: unknown '%' specifier (only %s and %% are known)" },
        { "t.conf", HEAD "Version=/bin/t 100%\n", "t.conf:5: Version=: unknown '%' specifier (only %s and %% are known)" },
        { "t.conf", HEAD "Version=\"\"\n", "t.conf:5: Version= program '' is not an absolute normalized path" },
        { "t.conf", HEAD "Version=\"   \"x\n", "t.conf:5: Version= program '   x' is not an absolute normalized path" },
        { "t.conf", HEAD "Environment=FOO\n", "t.conf:5: Environment= 'FOO' is not NAME=VALUE" },
        { "t.conf", HEAD "Environment==x\n", "t.conf:5: Environment= '=x' is not NAME=VALUE" },
        { "t.conf", HEAD "Environment=A-B=x\n", "t.conf:5: Environment= 'A-B=x' is not NAME=VALUE" },
        { "t.conf", HEAD "Environment=A=1\nEnvironment=A=2\n", "t.conf:6: Environment= 'A' given twice" },
        { "t.conf", HEAD "ColdEnvironment=X*\n", "t.conf:5: ColdEnvironment= without Warm=" },
        { "t.conf", HEAD "ColdEnvironment=1X\n", "t.conf:5: ColdEnvironment= '1X' is not a name or a prefix ending in '*'" },
        { "t.conf", HEAD "ColdEnvironment=*\n", "t.conf:5: ColdEnvironment= '*' is not a name or a prefix ending in '*'" },
        { "t.conf", "[Language]\nName=t\nRun=/bin/t\n", "t.conf:1: [Language] has no SourceFile=" },
        { "t.conf", "\n[Language]\nName=t\nSourceFile=main.t\n", "t.conf:2: [Language] has no Run=" },
        { "t.conf", "[Language]\nSourceFile=main.t\nRun=/bin/t\n", "t.conf:1: [Language] has no Name=" },
        { "t.conf", "", "t.conf:1: no [Language] section" },
        { "t.conf", "# only\n[Sandbox]\n", "t.conf:1: no [Language] section" },
        { "t.conf", HEAD "[Compile]\nTimeoutSec=10\n", "t.conf:5: [Compile] has neither Command= nor Check=" },
        { "t.conf", HEAD "[Compile]\nCheck=/bin/t -c %s\n", "t.conf:5: Error=exit-status needs Command=" },
        { "t.conf", HEAD "[Compile]\nCommand=/bin/c\nCheck=/bin/t\n", "t.conf:7: Check= is only used with Error=syntax-check" },
        { "t.conf", HEAD "[Compile]\nCommand=/bin/c\nError=syntax-check\n", "t.conf:5: Error=syntax-check needs Check=" },
        { "t.conf", HEAD "[Compile]\nCommand=/bin/c\nError=maybe\n",
          "t.conf:7: Error= 'maybe' is neither 'exit-status' nor 'syntax-check'" },
        { "t.conf", HEAD "[Compile]\nCommand=/bin/c\nTimeoutSec=0\n", "t.conf:7: TimeoutSec= '0' is not a number in 1..3600" },
        { "t.conf", HEAD "[Compile]\nCommand=/bin/c\nTimeoutSec=3601\n", "t.conf:7: TimeoutSec= '3601' is not a number in 1..3600" },
        { "t.conf", HEAD "[Compile]\nCommand=/bin/c\nTimeoutSec=5s\n", "t.conf:7: TimeoutSec= '5s' is not a number in 1..3600" },
        { "t.conf", HEAD "[Compile]\nCommand=/bin/c\nMemoryMB=65537\n", "t.conf:7: MemoryMB= '65537' is not a number in 1..65536" },
        { "t.conf", HEAD "[Sandbox]\nSystemCall=pkey_alloc\n",
          "t.conf:6: SystemCall= 'pkey_alloc' has no reason (\"SystemCall= NAME REASON...\")" },
        { "t.conf", HEAD "[Sandbox]\nSystemCall=Open why\n", "t.conf:6: SystemCall= 'Open' is not a system call name ([a-z0-9_]+)" },
        { "t.conf", HEAD "[Sandbox]\nSystemCall=open() why\n", "t.conf:6: SystemCall= 'open()' is not a system call name ([a-z0-9_]+)" },
        { "t.conf", HEAD "[Sandbox]\nSystemCall=a x\nSystemCall=a y\n", "t.conf:7: SystemCall= 'a' given twice" },
        { "t.conf", HEAD "[Sandbox]\nReadOnlyPath=/usr/ why\n", "t.conf:6: ReadOnlyPath= '/usr/' is not an absolute normalized path" },
        { "t.conf", HEAD "[Sandbox]\nReadWritePath=/a//b why\n", "t.conf:6: ReadWritePath= '/a//b' is not an absolute normalized path" },
        { "t.conf", HEAD "[Sandbox]\nReadOnlyPath=/a/./b why\n", "t.conf:6: ReadOnlyPath= '/a/./b' is not an absolute normalized path" },
        { "t.conf", HEAD "[Sandbox]\nReadOnlyPath=/a/.. why\n", "t.conf:6: ReadOnlyPath= '/a/..' is not an absolute normalized path" },
        { "t.conf", HEAD "[Sandbox]\nReadOnlyPath=a why\n", "t.conf:6: ReadOnlyPath= 'a' is not an absolute normalized path" },
        { "t.conf", HEAD "[Sandbox]\nReadWritePath=/a\n", "t.conf:6: ReadWritePath= '/a' has no reason (\"ReadWritePath= PATH REASON...\")" },
        { "t.conf", HEAD "[Sandbox]\nReadWritePath=/a x\nReadWritePath=/a y\n", "t.conf:7: ReadWritePath= '/a' given twice" },
        { "t.conf", HEAD "Version=/bin/t\001\n", "t.conf:5: control character 0x01" },
        { "t.conf", HEAD "Version=/bin/t\r\r\n", "t.conf:5: control character 0x0d" },
        { "t.conf", HEAD "\xff\n", "t.conf:1: file is not valid UTF-8" },
};

static void test_refusals(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(refusals); i++) {
                parse_refused(refusals[i].filename, refusals[i].text, strlen(refusals[i].text), refusals[i].error);
        }
        /* A NUL byte anywhere, even past what strlen() would see. */
        parse_refused("t.conf", HEAD "\0x", sizeof(HEAD) + 1, "t.conf:1: file contains a NUL byte");
        /* CRLF line ends are accepted. */
        langdef_free(parse_ok("t.conf", "[Language]\r\nName=t\r\nSourceFile=main.t\r\nRun=/bin/t %s\r\n"));
        /* A good HEAD with a comment and blanks is accepted. */
        langdef_free(parse_ok("t.conf", "  # x\n;y\n\n" HEAD "  \n"));
}

/* ---- caps ---- */

/* prefix, then n items "HEAD<i>TAIL" (or "HEAD" alone, numbered false), then suffix. */
static char *repeat(const char *prefix, const char *head, bool numbered, const char *tail, size_t n,
                    const char *suffix) {
        char *buf = NULL;

        append(&buf, "%s", prefix);
        for (size_t i = 0; i < n; i++) {
                if (numbered)
                        append(&buf, "%s%zu%s", head, i, tail);
                else
                        append(&buf, "%s", head);
        }
        append(&buf, "%s", suffix);
        return buf;
}

static void cap_row(const char *text, const char *error) {
        if (error)
                parse_refused("t.conf", text, strlen(text), error);
        else
                langdef_free(parse_ok("t.conf", text));
}

static void test_caps(void **state) {
        _cleanup_free_ char *big = NULL, *line = NULL, *t = NULL;

        /* The file. */
        big = malloc(LANGDEF_FILE_MAX + 2);
        assert_non_null(big);
        memset(big, '#', LANGDEF_FILE_MAX + 1);
        big[LANGDEF_FILE_MAX + 1] = 0;
        parse_refused("t.conf", big, LANGDEF_FILE_MAX + 1, "t.conf:1: file larger than 65536 bytes");

        /* A line: exactly the cap passes, one more does not. */
        line = malloc(LANGDEF_LINE_MAX + 2);
        assert_non_null(line);
        memset(line, 'x', LANGDEF_LINE_MAX + 1);
        line[LANGDEF_LINE_MAX + 1] = 0;
        memcpy(line, "Version=/bin/t ", 15);
        assert_true(asprintf(&t, "%s%s\n", HEAD, line) >= 0);
        cap_row(t, "t.conf:5: line longer than 16384 bytes");
        t = mfree(t);
        line[LANGDEF_LINE_MAX] = 0;
        assert_true(asprintf(&t, "%s%s\n", HEAD, line) >= 0);
        cap_row(t, NULL);

#define CAP(prefix, head, numbered, tail, n, suffix, error) do {       \
                _cleanup_free_ char *_t = repeat(prefix, head, numbered, tail, n, suffix); \
                cap_row(_t, error);                                     \
        } while (0)

        CAP(HEAD "Version=/bin/t", " w", true, "", LANGDEF_ARGV_MAX - 1, "\n", NULL);
        CAP(HEAD "Version=/bin/t", " w", true, "", LANGDEF_ARGV_MAX, "\n", "t.conf:5: Version=: too many words");
        CAP(HEAD "Aliases=", " a", true, "", LANGDEF_ALIASES_MAX, "\n", NULL);
        CAP(HEAD "Aliases=", " a", true, "", LANGDEF_ALIASES_MAX + 1, "\n", "t.conf:5: Aliases=: too many words");
        CAP(HEAD, "Environment=E", true, "=1\n", LANGDEF_ENV_MAX, "", NULL);
        CAP(HEAD, "Environment=E", true, "=1\n", LANGDEF_ENV_MAX + 1, "", "t.conf:37: more than 32 Environment= entries");
        CAP(HEAD "[Sandbox]\n", "SystemCall=s", true, " why\n", LANGDEF_SYSCALLS_MAX, "", NULL);
        CAP(HEAD "[Sandbox]\n", "SystemCall=s", true, " why\n", LANGDEF_SYSCALLS_MAX + 1, "",
            "t.conf:70: more than 64 SystemCall= entries");
        CAP(HEAD "[Sandbox]\n", "ReadOnlyPath=/p", true, " why\n", LANGDEF_PATHS_MAX + 1, "",
            "t.conf:38: more than 32 ReadOnlyPath= entries");
        CAP(HEAD "[Sandbox]\n", "ReadWritePath=/p", true, " why\n", LANGDEF_PATHS_MAX + 1, "",
            "t.conf:38: more than 32 ReadWritePath= entries");
        CAP(HEAD "[Sandbox]\nSystemCall=a ", "r", false, "", LANGDEF_REASON_MAX, "\n", NULL);
        CAP(HEAD "[Sandbox]\nSystemCall=a ", "r", false, "", LANGDEF_REASON_MAX + 1, "\n",
            "t.conf:6: SystemCall= reason longer than 256 bytes");
        CAP("[Language]\nName=", "a", false, "", LANGDEF_NAME_MAX + 1, "\n",
            "t.conf:2: Name= 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' is not a valid name ([a-z0-9][a-z0-9+_-]*, at most 32 bytes)");
}

/* ---- quoting ---- */

static const struct {
        const char *in;
        const char *out[5];
} words_ok[] = {
        { "", { NULL } },
        { "  \t ", { NULL } },
        { "a b", { "a", "b", NULL } },
        { "a\t\tb ", { "a", "b", NULL } },
        { "\"a b\" c", { "a b", "c", NULL } },
        { "'x\"y'", { "x\"y", NULL } },
        { "\"it's\"", { "it's", NULL } },
        { "a\\ b", { "a b", NULL } },
        { "\"a\\nb\\tc\"", { "a\nb\tc", NULL } },
        { "\"\" ''", { "", "", NULL } },
        { "a\"b c\"d", { "ab cd", NULL } },
        { "\\s\\\\\\\"\\'", { " \\\"'", NULL } },
        { "'\\n'", { "\n", NULL } },
};

static const struct {
        const char *in;
        const char *reason;
} words_bad[] = {
        { "\"a", "unterminated quote" },
        { "'a\"", "unterminated quote" },
        { "a\\", "backslash at the end of the line" },
        { "\\x41", "unknown backslash escape" },
        { "\\0", "unknown backslash escape" },
        { "a b c d", "too many words" },
};

static void test_quoting(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(words_ok); i++) {
                _cleanup_strv_free_ char **w = NULL;

                assert_int_equal(langdef_split_words(words_ok[i].in, 8, &w, NULL), 0);
                if (!words_ok[i].out[0])
                        assert_int_equal(strv_length(w), 0);
                else
                        assert_strv_eq(w, words_ok[i].out);
        }
        for (size_t i = 0; i < ELEMENTSOF(words_bad); i++) {
                char **w = NULL;
                const char *reason = NULL;

                assert_int_equal(langdef_split_words(words_bad[i].in, 3, &w, &reason), -EINVAL);
                assert_null(w);
                assert_string_equal(reason, words_bad[i].reason);
        }
}

/* ---- the merge ---- */

#define FILE_OF(name, extra) "[Language]\nName=" name "\nSourceFile=main.x\nRun=/bin/" name " %s\n" extra

static const LangDef *set_find(const LangDefSet *s, const char *name) {
        for (size_t i = 0; i < s->n_defs; i++)
                if (streq(s->defs[i]->name, name))
                        return s->defs[i];
        return NULL;
}

#define SRC(rank, name, text) { rank, rank == LANGDEF_RANK_ETC ? "E" : "V", name, text, sizeof(text) - 1 }

static void test_merge(void **state) {
        const LangDefSource sources[] = {
                SRC(LANGDEF_RANK_ETC, "python.conf", FILE_OF("python", "Runtime=/opt/python\n")),
                SRC(LANGDEF_RANK_VENDOR, "python.conf", FILE_OF("python", "Runtime=/usr/bin/python3\n")),
                SRC(LANGDEF_RANK_VENDOR, "node.conf", FILE_OF("node", "")),
                SRC(LANGDEF_RANK_ETC, "node.conf", ""),                         /* masks */
                SRC(LANGDEF_RANK_ETC, "gone.conf", ""),                         /* masks nothing */
                SRC(LANGDEF_RANK_VENDOR, "a.conf", FILE_OF("a", "Aliases=x y\n")),
                SRC(LANGDEF_RANK_VENDOR, "b.conf", FILE_OF("b", "Aliases=y\n")),   /* clash with a */
                SRC(LANGDEF_RANK_VENDOR, "x.conf", FILE_OF("x", "")),           /* clash with a's alias */
                SRC(LANGDEF_RANK_VENDOR, "bad.conf", FILE_OF("bad", "Oops=1\n")),
                SRC(LANGDEF_RANK_VENDOR, "ruby.conf", FILE_OF("ruby", "")),
                SRC(LANGDEF_RANK_ETC, "ruby.conf", FILE_OF("ruby", "Nope=1\n")),  /* refused: vendor does not return */
                SRC(LANGDEF_RANK_VENDOR, "c.conf", FILE_OF("c", "")),
                SRC(LANGDEF_RANK_VENDOR, "c.conf", FILE_OF("c", "")),           /* same rank twice */
                SRC(LANGDEF_RANK_VENDOR, "d.txt", FILE_OF("d", "")),
                SRC(LANGDEF_RANK_VENDOR, ".conf", FILE_OF("d", "")),
                SRC(LANGDEF_RANK_VENDOR, "zz.conf", FILE_OF("zz", "Aliases=bash\n")),
                SRC(LANGDEF_RANK_VENDOR, "bash.conf", FILE_OF("bash", "")),     /* bash < zz: zz clashes */
        };
        const char *expected_errors[] = {
                "V/.conf: not a file name NAME.conf, ignoring",
                "V/b.conf: name 'y' is already taken by V/a.conf, ignoring",
                "V/bad.conf:5: unknown key 'Oops' in section [Language]",
                "V/c.conf: given twice in the same rank, ignoring the second",
                "V/d.txt: not a file name NAME.conf, ignoring",
                "E/ruby.conf:5: unknown key 'Nope' in section [Language]",
                "V/x.conf: name 'x' is already taken by V/a.conf, ignoring",
                "V/zz.conf: name 'bash' is already taken by V/bash.conf, ignoring",
                NULL,
        };
        _cleanup_(langdef_set_freep) LangDefSet *s = NULL;
        const char *const want[] = { "a", "bash", "c", "python", NULL };

        assert_int_equal(langdef_merge(sources, ELEMENTSOF(sources), &s), 0);
        for (size_t i = 0; i < s->n_errors; i++)
                print_message("error: %s\n", s->errors[i]);
        assert_strv_eq(s->errors, expected_errors);
        assert_int_equal(s->n_defs, strv_length((char *const *) want));
        for (size_t i = 0; want[i]; i++)
                assert_string_equal(s->defs[i]->name, want[i]);
        assert_string_equal(set_find(s, "python")->runtime, "/opt/python");
        assert_null(set_find(s, "node"));
        assert_null(set_find(s, "ruby"));

        /* Nothing at all, and the cap on tuples. */
        langdef_set_free(TAKE_PTR(s));
        assert_int_equal(langdef_merge(NULL, 0, &s), 0);
        assert_int_equal(s->n_defs, 0);
        assert_null(s->errors);
        langdef_set_free(TAKE_PTR(s));
        assert_int_equal(langdef_merge(sources, LANGDEF_FILES_MAX + 1, &s), -E2BIG);
        assert_null(s);
}

/* ---- the directory reader ---- */

static void write_at(int dfd, const char *name, const char *text) {
        _cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, text, strlen(text)), 0);
}

static int source_by_name(const void *a, const void *b) {
        return strcmp(((const LangDefSource *) a)->filename, ((const LangDefSource *) b)->filename);
}

static void test_read_dir(void **state) {
        char dir[] = UNIT_TEST_BUILD_DIR "/test-langdef.XXXXXX";
        _cleanup_free_ char *big = NULL, *sub = NULL, *link = NULL;
        _cleanup_strv_free_ char **errors = NULL;
        _cleanup_close_ int dfd = -EBADF;
        LangDefSource *sources = NULL;
        size_t n = 0;

        assert_non_null(mkdtemp(dir));
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        write_at(dfd, "bash.conf", BASH_CONF);
        write_at(dfd, "empty.conf", "");
        write_at(dfd, "notes.txt", "not read");
        write_at(dfd, ".hidden.conf", "not read");
        big = malloc(LANGDEF_FILE_MAX + 2);
        assert_non_null(big);
        memset(big, '#', LANGDEF_FILE_MAX + 1);
        big[LANGDEF_FILE_MAX + 1] = 0;
        write_at(dfd, "big.conf", big);
        assert_int_equal(symlinkat("bash.conf", dfd, "link.conf"), 0);
        assert_int_equal(mkdirat(dfd, "sub.conf", 0755), 0);

        assert_int_equal(langdef_read_dir(dir, LANGDEF_RANK_ETC, &sources, &n, &errors), 0);
        qsort(sources, n, sizeof(LangDefSource), source_by_name);
        assert_int_equal(n, 2);
        assert_string_equal(sources[0].filename, "bash.conf");
        assert_int_equal(sources[0].size, strlen(BASH_CONF));
        assert_memory_equal(sources[0].text, BASH_CONF, sources[0].size);
        assert_int_equal(sources[0].rank, LANGDEF_RANK_ETC);
        assert_string_equal(sources[0].dir, dir);
        assert_string_equal(sources[1].filename, "empty.conf");
        assert_int_equal(sources[1].size, 0);
        assert_int_equal(strv_length(errors), 3);
        strv_sort(errors);
        assert_true(endswith(errors[0], "/big.conf: larger than 64 KiB, ignoring"));
        assert_true(endswith(errors[1], "/link.conf: a symbolic link, ignoring"));
        assert_true(endswith(errors[2], "/sub.conf: not a regular file, ignoring"));

        /* An absent directory is no files; a symlinked directory is not followed. */
        assert_true(asprintf(&sub, "%s/absent", dir) >= 0);
        assert_int_equal(langdef_read_dir(sub, LANGDEF_RANK_VENDOR, &sources, &n, &errors), 0);
        assert_int_equal(n, 2);
        assert_int_equal(symlinkat(dir, dfd, "dirlink"), 0);
        assert_true(asprintf(&link, "%s/dirlink", dir) >= 0);
        assert_true(langdef_read_dir(link, LANGDEF_RANK_VENDOR, &sources, &n, &errors) < 0);
        assert_int_equal(n, 2);

        langdef_sources_free(sources, n);
        (void) unlinkat(dfd, "dirlink", 0);
        (void) unlinkat(dfd, "sub.conf", AT_REMOVEDIR);
        for (const char *const *f = (const char *const[]) { "bash.conf", "empty.conf", "notes.txt", ".hidden.conf",
                                                           "big.conf", "link.conf", NULL }; *f; f++)
                (void) unlinkat(dfd, *f, 0);
        (void) rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bash),
                cmocka_unit_test(test_python_node),
                cmocka_unit_test(test_node_literal),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_caps),
                cmocka_unit_test(test_quoting),
                cmocka_unit_test(test_merge),
                cmocka_unit_test(test_read_dir),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
