/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Test tool for tests/unit/test-sandbox-exec.sh: feeds sandbox-exec exactly what the daemon would.
 *   dump-seccomp-bpf                  the seccomp_policy_build() output, raw, on stdout: the
 *                                     common allow-list only
 *   dump-seccomp-bpf --filter NAME    the same for language NAME: its row's extra_syscalls added,
 *                                     as the daemon compiles it
 *   dump-seccomp-bpf --language NAME  the row of language NAME as NUL-terminated "key", "value"
 *                                     pairs (source, compile, run, check, env; all but source repeat
 *                                     once per argument), so the tests run the real
 *                                     bootstraps from language.c rather than copies. */

#include "model/language.h"
#include "unit/seccomp-policy.h"
#include "util.h"

static int put(const char *key, const char *value) {
        int r = loop_write(STDOUT_FILENO, key, strlen(key) + 1);
        if (r < 0)
                return r;
        return loop_write(STDOUT_FILENO, value, strlen(value) + 1);
}

static int put_strv(const char *key, const char *const *v) {
        for (; v && *v; v++) {
                int r = put(key, *v);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int dump_language(const char *name) {
        const Language *l = language_find(name);
        int r;

        if (!l) {
                fprintf(stderr, "Unknown language: %s\n", name);
                return -ENOENT;
        }
        r = put("source", l->source_name);
        if (r >= 0)
                r = put_strv("compile", l->compile_argv);
        if (r >= 0)
                r = put_strv("run", l->run_argv);
        if (r >= 0)
                r = put_strv("check", l->check_argv);
        if (r >= 0)
                r = put_strv("env", l->env);
        return r;
}

int main(int argc, char *argv[]) {
        _cleanup_free_ uint8_t *bpf = NULL;
        const char *const *extra = NULL;
        size_t len = 0;
        int r;

        if (argc == 3 && streq(argv[1], "--language"))
                return dump_language(argv[2]) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (argc == 3 && streq(argv[1], "--filter")) {
                const Language *l = language_find(argv[2]);

                if (!l) {
                        fprintf(stderr, "Unknown language: %s\n", argv[2]);
                        return EXIT_FAILURE;
                }
                extra = l->extra_syscalls;
        } else if (argc != 1) {
                fprintf(stderr, "Usage: %s [--language NAME | --filter NAME]\n", argv[0]);
                return EXIT_FAILURE;
        }

        r = seccomp_policy_build(extra, &bpf, &len);
        if (r < 0) {
                fprintf(stderr, "seccomp_policy_build: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        r = loop_write(STDOUT_FILENO, bpf, len);
        if (r < 0) {
                fprintf(stderr, "write: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}
