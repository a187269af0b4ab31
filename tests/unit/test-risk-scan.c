/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/risk-scan.h"
#include "util.h"

/* The risk scan (sandboxd/model/risk-scan.c), row by row: which rule set a language gets, what each
 * set finds in a program (and what it must not find), and the choice of tier from the policy, the
 * counted classes, the timeout and the caller, with the record's "isolation" object. */

static const char *strnull(const char *s) {
        return s ?: "(null)";
}

static void test_names(_unused_ void **state) {
        for (int i = 0; i < _RISK_CLASS_MAX; i++)
                assert_int_equal(risk_class_from_string(risk_class_to_string(i)), i);
        assert_int_equal(risk_class_from_string("process"), -EINVAL);
        assert_int_equal(risk_class_from_string(NULL), -EINVAL);
        assert_null(risk_class_to_string(_RISK_CLASS_MAX));
        assert_string_equal(isolation_policy_to_string(ISOLATION_POLICY_NEVER), "never");
        assert_int_equal(isolation_policy_from_string("always"), ISOLATION_POLICY_ALWAYS);
        assert_int_equal(isolation_policy_from_string("Auto"), -EINVAL);
}

static void test_rulesets(_unused_ void **state) {
        static const char *const venv_aliases[] = { "py", "python", NULL }, *const cobol_aliases[] = { "cbl", NULL };
        static const struct {
                const char *language;
                const char *const *aliases;
                const char *want;
        } rows[] = {
                { "python", NULL, "python" },
                { "node", NULL, "node" },
                { "typescript", NULL, "node" },
                { "bash", NULL, "bash" },
                { "c", NULL, "c" },
                { "cpp", NULL, "c" },
                { "go", NULL, "go" },
                { "rust", NULL, "rust" },
                { "java", NULL, "java" },
                { "ruby", NULL, "ruby" },
                { "perl", NULL, "perl" },
                { "php", NULL, "php" },
                { "lua", NULL, "lua" },
                { "r", NULL, "r" },
                { "sql", NULL, "sql" },
                /* An administrator's own language, named by an alias the table knows. */
                { "python3-venv", venv_aliases, "python" },
                { "cobol", NULL, NULL },
                { "cobol", cobol_aliases, NULL },
                { NULL, NULL, NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const char *got = risk_ruleset(rows[i].language, rows[i].aliases);

                if (!rows[i].want ? got != NULL : !got || !streq(got, rows[i].want))
                        fail_msg("row %zu (%s): got %s, want %s", i, strnull(rows[i].language), strnull(got),
                                 strnull(rows[i].want));
        }
}

/* Each row: a rule set, a program, and the hits it must give, as "class: what" joined by ", "
 * ("" none). */
static void test_scan(_unused_ void **state) {
        static const struct {
                const char *set, *code, *want;
        } rows[] = {
                /* python */
                { "python", "print(1)\n", "" },
                { "python", "import subprocess\nsubprocess.run(['ls'])\n", "processes: subprocess" },
                { "python", "from subprocess import run\n", "processes: subprocess" },
                { "python", "import os\nos.system('id')\n", "processes: os.system" },
                { "python", "import os\nos.execv('/bin/sh', ['sh'])\n", "processes: os.exec*" },
                { "python", "os.execlp('sh', 'sh')", "processes: os.exec*" },
                { "python", "os.posix_spawnp('sh', ['sh'], {})", "processes: os.posix_spawn*" },
                { "python", "pid = os.fork()", "processes: os.fork*" },
                { "python", "os.forkpty()", "processes: os.fork*" },
                { "python", "import pty; pty.spawn('/bin/sh')", "processes: pty" },
                { "python", "from multiprocessing import Pool", "processes: multiprocessing" },
                { "python", "from concurrent.futures import ProcessPoolExecutor", "processes: ProcessPoolExecutor" },
                { "python", "import ctypes\nctypes.CDLL(None).syscall(39)\n", "ffi: ctypes, syscall: syscall" },
                { "python", "import _ctypes", "ffi: _ctypes" },
                { "python", "from cffi import FFI", "ffi: cffi" },
                { "python", "open('/proc/self/mem', 'rb+')", "memory: /proc/self/mem" },
                { "python", "import mmap", "memory: mmap" },
                { "python", "m = __import__('o' + 's')", "dynamic: __import__" },
                { "python", "import importlib\nimportlib.import_module('os')", "dynamic: importlib" },
                { "python", "__builtins__.__dict__['ev' + 'al']", "dynamic: __builtins__" },
                { "python", "().__class__.__base__.__subclasses__()", "dynamic: __subclasses__" },
                { "python", "f.__globals__['os']", "dynamic: __globals__" },
                /* Whole words only: names that contain a pattern are not it. */
                { "python", "my_subprocess_count = 1\nsubprocesses = []\n", "" },
                { "python", "empty = 1\nptys = 2\n", "" },
                { "python", "import mmapper\nxctypes = 1\n", "" },
                { "python", "os.system_name = 1\n", "" },
                { "python", "os.exec = 1\n", "processes: os.exec*" },
                /* Every rule at most once; the first RISK_HITS_MAX in table order. */
                { "python", "import subprocess\nimport subprocess\nsubprocess.run([])\n", "processes: subprocess" },
                { "python",
                  "subprocess os.system os.popen os.execv os.spawnl os.posix_spawn os.fork pty multiprocessing "
                  "ProcessPoolExecutor ctypes",
                  "processes: subprocess, processes: os.system, processes: os.popen, processes: os.exec*, "
                  "processes: os.spawn*, processes: os.posix_spawn*, processes: os.fork*, processes: pty" },
                /* node (and typescript) */
                { "node", "console.log(1)", "" },
                { "node", "const cp = require('child_process'); cp.execSync('id')", "processes: child_process" },
                { "node", "import { spawn } from 'node:child_process'", "processes: child_process" },
                { "node", "const cluster = require('cluster')", "processes: cluster" },
                { "node", "process.binding('spawn_sync')", "ffi: process.binding" },
                { "node", "process.dlopen(m, '/x.node')", "ffi: process.dlopen" },
                { "node", "require('ffi-napi')", "ffi: ffi-napi" },
                { "node", "new Worker(src, { eval: true }) // worker_threads", "dynamic: worker_threads" },
                { "node", "const { Worker } = require('worker_threads'); new Worker('./w.js')", "" },
                { "node", "vm.runInNewContext('this.constructor')", "dynamic: vm.runIn*" },
                { "node", "Function('return process')()", "dynamic: Function(" },
                { "node", "const child_processes = 0; const clusters = 1", "" },
                /* bash: every program spawns processes */
                { "bash", "echo hi", "processes: shell" },
                { "bash", "", "processes: shell" },
                /* C and C++ */
                { "c", "#include <stdio.h>\nint main(void) { puts(\"hi\"); }\n", "" },
                { "c", "int main(void) { return system(\"id\"); }", "processes: system" },
                { "c", "if (fork() == 0) execve(\"/bin/sh\", a, e);", "processes: fork, processes: execve" },
                { "c", "execvp(argv[1], argv + 1);", "processes: execvp" },
                { "c", "posix_spawnp(&pid, \"sh\", 0, 0, a, e);", "processes: posix_spawn*" },
                { "c", "void *h = dlopen(\"libc.so.6\", RTLD_NOW);", "ffi: dlopen" },
                { "c", "asm volatile(\"syscall\");", "asm: asm, syscall: syscall" },
                { "c", "__asm__(\"nop\");", "asm: __asm*" },
                { "c", "syscall(SYS_getpid);", "syscall: syscall, syscall: SYS_*" },
                { "c", "long n = __NR_getpid;", "syscall: __NR_*" },
                { "c", "int execute(void); int forked, systems;", "" },
                /* go */
                { "go", "package main\nimport \"fmt\"\nfunc main() { fmt.Println(1) }\n", "" },
                { "go", "import \"os/exec\"\nexec.Command(\"id\").Run()", "processes: os/exec" },
                { "go", "import \"C\"", "ffi: \"C\"" },
                { "go", "import \"unsafe\"", "memory: unsafe" },
                { "go", "syscall.Syscall(39, 0, 0, 0)", "syscall: syscall.Syscall*" },
                { "go", "syscall.RawSyscall6(1, 0, 0, 0, 0, 0, 0)", "syscall: syscall.RawSyscall*" },
                { "go", "import \"golang.org/x/sys/unix\"", "syscall: golang.org/x/sys/unix" },
                /* rust */
                { "rust", "fn main() { println!(\"hi\"); }", "" },
                { "rust", "std::process::Command::new(\"id\").status();", "processes: process::Command, processes: Command::new" },
                { "rust", "unsafe { asm!(\"nop\") }", "asm: asm!" },
                { "rust", "extern \"C\" { fn getpid() -> i32; }", "ffi: extern \"C\"" },
                { "rust", "libc::syscall(39);", "syscall: syscall" },
                /* java */
                { "java", "class Main { public static void main(String[] a) { System.out.println(1); } }", "" },
                { "java", "new ProcessBuilder(\"id\").start();", "processes: ProcessBuilder" },
                { "java", "Runtime.getRuntime().exec(\"id\");", "processes: Runtime.getRuntime" },
                { "java", "System.loadLibrary(\"x\");", "ffi: System.loadLibrary" },
                { "java", "System.load(\"/x.so\");", "ffi: System.load" },
                { "java", "private static native int f();", "ffi: native" },
                { "java", "Field f = sun.misc.Unsafe.class.getDeclaredField(\"theUnsafe\");", "memory: sun.misc.Unsafe" },
                /* the others */
                { "ruby", "puts 1", "" },
                { "ruby", "system('id')", "processes: system" },
                { "ruby", "x = `id`", "processes: `" },
                { "ruby", "IO.popen('id')", "processes: popen*" },
                { "ruby", "require 'fiddle'\nFiddle.dlopen(nil)", "ffi: Fiddle" },
                { "perl", "print 1;", "" },
                { "perl", "my $x = qx(id);", "processes: qx" },
                { "perl", "open(my $fh, '-|', 'id');", "processes: -|" },
                { "php", "<?php echo 1;", "" },
                { "php", "<?php echo shell_exec('id');", "processes: shell_exec" },
                { "php", "<?php pcntl_fork();", "processes: pcntl_*" },
                { "php", "<?php $f = FFI::cdef('int getpid();');", "ffi: FFI" },
                { "lua", "print(1)", "" },
                { "lua", "os.execute('id')", "processes: os.execute" },
                { "lua", "local h = io.popen('id')", "processes: io.popen" },
                { "lua", "package.loadlib('x.so', 'f')", "ffi: package.loadlib" },
                { "r", "print(1)", "" },
                { "r", "system('id')", "processes: system" },
                { "r", "dyn.load('x.so')", "ffi: dyn.load" },
                { "sql", "select 1;", "" },
                { "sql", ".shell id", "processes: .shell" },
                { "sql", "select load_extension('x');", "ffi: load_extension" },
                /* No rule set: nothing found. */
                { NULL, "import subprocess", "" },
                { "cobol", "CALL 'SYSTEM'", "" },
        };
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                RiskScan s;
                char got[512] = "";
                size_t n = risk_scan(rows[i].set, RISK_CLASSES_ALL, rows[i].code, strlen(rows[i].code), &s);

                assert_int_equal(n, s.n);
                assert_true(n <= RISK_HITS_MAX);
                for (size_t k = 0; k < s.n; k++)
                        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s: %s", k ? ", " : "",
                                 risk_class_to_string(s.hits[k].class), s.hits[k].what);
                if (!streq(got, rows[i].want))
                        fail_msg("row %zu (%s: %s): got \"%s\", want \"%s\"", i, strnull(rows[i].set), rows[i].code,
                                 got, rows[i].want);
        }
}

/* A program cut short is scanned as it is (length, not NUL): a pattern past len is not found, and
 * one that ends exactly at len is. */
static void test_scan_length(_unused_ void **state) {
        const char code[] = "import os\nos.system('id')";
        RiskScan s;

        assert_int_equal(risk_scan("python", RISK_CLASSES_ALL, code, strlen("import os\n"), &s), 0);
        assert_int_equal(risk_scan("python", RISK_CLASSES_ALL, code, strlen("import os\nos.system"), &s), 1);
        assert_int_equal(risk_scan("python", RISK_CLASSES_ALL, code, strlen("import os\nos.syste"), &s), 0);
        assert_int_equal(risk_scan("python", RISK_CLASSES_ALL, NULL, 0, &s), 0);
        /* A NUL inside the program does not end the scan. */
        const char nul[] = "x = '\0'\nimport ctypes\n";
        assert_int_equal(risk_scan("python", RISK_CLASSES_ALL, nul, sizeof(nul) - 1, &s), 1);
        assert_string_equal(s.hits[0].what, "ctypes");
}

static const char *json_of(const IsolationChoice *c, char *buf, size_t n) {
        json_object *o = isolation_to_json(c);

        assert_non_null(o);
        snprintf(buf, n, "%s", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        return buf;
}

static void test_choose(_unused_ void **state) {
        static const struct {
                IsolationPolicy policy;
                unsigned classes;
                uint64_t long_run_ms;
                const char *language, *code;
                uint64_t timeout_ms;
                bool caller;
                int ret;
                const char *want;
        } rows[] = {
                /* auto: the scan, the timeout and the caller each send a program to the strong tier */
                { ISOLATION_POLICY_AUTO, RISK_CLASSES_ALL, 30000, "python", "print(1)", 10000, false, 0,
                  "{\"tier\":\"standard\",\"reasons\":[]}" },
                { ISOLATION_POLICY_AUTO, RISK_CLASSES_ALL, 30000, "python", "import subprocess", 10000, false, 0,
                  "{\"tier\":\"strong\",\"reasons\":[\"processes: subprocess\"]}" },
                { ISOLATION_POLICY_AUTO, RISK_CLASSES_ALL, 30000, "python", "print(1)", 30001, false, 0,
                  "{\"tier\":\"strong\",\"reasons\":[\"timeout: 30001 ms > 30000 ms\"]}" },
                { ISOLATION_POLICY_AUTO, RISK_CLASSES_ALL, 30000, "python", "print(1)", 30000, false, 0,
                  "{\"tier\":\"standard\",\"reasons\":[]}" },
                { ISOLATION_POLICY_AUTO, RISK_CLASSES_ALL, 0, "python", "print(1)", 3600000, false, 0,
                  "{\"tier\":\"standard\",\"reasons\":[]}" },
                { ISOLATION_POLICY_AUTO, RISK_CLASSES_ALL, 30000, "python", "print(1)", 1000, true, 0,
                  "{\"tier\":\"strong\",\"reasons\":[\"caller\"]}" },
                { ISOLATION_POLICY_AUTO, RISK_CLASSES_ALL, 30000, "bash", "echo", 60000, true, 0,
                  "{\"tier\":\"strong\",\"reasons\":[\"caller\",\"timeout: 60000 ms > 30000 ms\",\"processes: shell\"]}" },
                /* the classes the administrator counts: the others do not move a program */
                { ISOLATION_POLICY_AUTO, RISK_CLASSES_ALL & ~(1u << RISK_PROCESSES), 30000, "bash", "echo", 1000,
                  false, 0, "{\"tier\":\"standard\",\"reasons\":[]}" },
                { ISOLATION_POLICY_AUTO, 1u << RISK_FFI, 30000, "python", "import subprocess, ctypes", 1000, false, 0,
                  "{\"tier\":\"strong\",\"reasons\":[\"ffi: ctypes\"]}" },
                { ISOLATION_POLICY_AUTO, 0, 30000, "python", "import subprocess, ctypes", 1000, false, 0,
                  "{\"tier\":\"standard\",\"reasons\":[]}" },
                { ISOLATION_POLICY_AUTO, 0, 30000, "python", "import subprocess", 1000, true, 0,
                  "{\"tier\":\"strong\",\"reasons\":[\"caller\"]}" },
                /* the mask applies before the RISK_HITS_MAX cut: eight process rules do not hide ctypes */
                { ISOLATION_POLICY_AUTO, 1u << RISK_FFI, 30000, "python",
                  "subprocess os.system os.popen os.execv os.spawnl os.posix_spawn os.fork pty multiprocessing "
                  "ProcessPoolExecutor ctypes", 1000, false, 0, "{\"tier\":\"strong\",\"reasons\":[\"ffi: ctypes\"]}" },
                /* a language without rules: only the timeout and the caller */
                { ISOLATION_POLICY_AUTO, RISK_CLASSES_ALL, 30000, "cobol", "CALL 'SYSTEM'", 1000, false, 0,
                  "{\"tier\":\"standard\",\"reasons\":[]}" },
                /* always: every program, with whatever else there is */
                { ISOLATION_POLICY_ALWAYS, RISK_CLASSES_ALL, 30000, "python", "print(1)", 1000, false, 0,
                  "{\"tier\":\"strong\",\"reasons\":[\"policy: always\"]}" },
                { ISOLATION_POLICY_ALWAYS, RISK_CLASSES_ALL, 30000, "python", "import pty", 1000, false, 0,
                  "{\"tier\":\"strong\",\"reasons\":[\"policy: always\",\"processes: pty\"]}" },
                /* never: the standard tier, and a caller who asks for the strong one is refused */
                { ISOLATION_POLICY_NEVER, RISK_CLASSES_ALL, 30000, "python", "import subprocess", 60000, false, 0,
                  "{\"tier\":\"standard\",\"reasons\":[]}" },
                { ISOLATION_POLICY_NEVER, RISK_CLASSES_ALL, 30000, "python", "print(1)", 1000, true, -EPERM, NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                IsolationSettings s = { rows[i].policy, rows[i].classes, rows[i].long_run_ms };
                IsolationChoice c;
                char buf[512];
                int r = isolation_choose(&s, rows[i].language, NULL, rows[i].code, strlen(rows[i].code),
                                         rows[i].timeout_ms, rows[i].caller, &c);

                if (r != rows[i].ret)
                        fail_msg("row %zu: returned %d, want %d", i, r, rows[i].ret);
                if (r < 0)
                        continue;
                if (!streq(json_of(&c, buf, sizeof(buf)), rows[i].want))
                        fail_msg("row %zu: got %s, want %s", i, buf, rows[i].want);
                assert_int_equal(c.strong, strstr(rows[i].want, "strong") != NULL);
        }
}

/* A fake /proc/sys: "path=value" lines; a path not listed is not there. */
static const char *fake_sysctl(const char *path, void *userdata) {
        static char buf[64];
        const char *p = userdata;
        size_t n = strlen(path);

        while ((p = strstr(p, path))) {
                if (p[n] == '=') {
                        size_t k = strcspn(p + n + 1, ";");

                        snprintf(buf, sizeof(buf), "%.*s", (int) k, p + n + 1);
                        return buf;
                }
                p += n;
        }
        return NULL;
}

static void test_userns_problem(_unused_ void **state) {
        static const struct {
                const char *sysctls;
                const char *want;       /* a word of the reason, or NULL: no problem */
        } rows[] = {
                { "", NULL },
                { "/proc/sys/kernel/unprivileged_userns_clone=1;/proc/sys/user/max_user_namespaces=94000", NULL },
                { "/proc/sys/kernel/unprivileged_userns_clone=0", "unprivileged_userns_clone=0" },
                { "/proc/sys/kernel/unprivileged_userns_clone=0;/proc/sys/user/max_user_namespaces=0",
                  "unprivileged_userns_clone=0" },
                { "/proc/sys/user/max_user_namespaces=0", "max_user_namespaces=0" },
                { "/proc/sys/user/max_user_namespaces=10", NULL },
                { "/proc/sys/kernel/apparmor_restrict_unprivileged_userns=1", "AppArmor" },
                { "/proc/sys/kernel/apparmor_restrict_unprivileged_userns=0", NULL },
                { "/proc/sys/kernel/unprivileged_userns_clone=", NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const char *why = isolation_userns_problem(fake_sysctl, (void *) rows[i].sysctls);

                if (!rows[i].want ? why != NULL : !why || !strstr(why, rows[i].want))
                        fail_msg("row %zu: got %s, want %s", i, why ?: "(none)", rows[i].want ?: "(none)");
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_rulesets),
                cmocka_unit_test(test_scan),
                cmocka_unit_test(test_scan_length),
                cmocka_unit_test(test_choose),
                cmocka_unit_test(test_userns_problem),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
