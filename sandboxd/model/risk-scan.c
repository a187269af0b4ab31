/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "risk-scan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "string-table.h"
#include "util.h"

static const char *const risk_class_table[_RISK_CLASS_MAX] = {
        [RISK_PROCESSES] = "processes",
        [RISK_FFI] = "ffi",
        [RISK_MEMORY] = "memory",
        [RISK_DYNAMIC] = "dynamic",
        [RISK_ASM] = "asm",
        [RISK_SYSCALL] = "syscall",
};
DEFINE_STRING_TABLE_LOOKUP(risk_class, RiskClass);

static const char *const isolation_policy_table[_ISOLATION_POLICY_MAX] = {
        [ISOLATION_POLICY_AUTO] = "auto",
        [ISOLATION_POLICY_ALWAYS] = "always",
        [ISOLATION_POLICY_NEVER] = "never",
};
DEFINE_STRING_TABLE_LOOKUP(isolation_policy, IsolationPolicy);

/* A rule: the pattern, found in the source as written, and what it stands for. Where the pattern
 * begins (ends) with a letter, digit or '_', the source must not continue the word there
 * ("subprocess" is not found in "my_subprocesses"); a trailing '*' matches the rest of a word
 * ("os.exec*": os.execv, os.execlp). `also`, when set, must be found too (anywhere). */
typedef struct RiskRule {
        const char *pattern;
        RiskClass class;
        const char *also;
} RiskRule;

typedef struct RiskRuleSet {
        const char *name;
        const char *const *languages;   /* the language names and aliases it is for */
        bool always;                    /* every program of these spawns processes (a shell) */
        const RiskRule *rules;
        size_t n_rules;
} RiskRuleSet;

#define R(p, c) { .pattern = (p), .class = (c) }
#define R2(p, c, a) { .pattern = (p), .class = (c), .also = (a) }

static const RiskRule python_rules[] = {
        R("subprocess", RISK_PROCESSES),
        R("os.system", RISK_PROCESSES),
        R("os.popen", RISK_PROCESSES),
        R("os.exec*", RISK_PROCESSES),
        R("os.spawn*", RISK_PROCESSES),
        R("os.posix_spawn*", RISK_PROCESSES),
        R("os.fork*", RISK_PROCESSES),
        R("pty", RISK_PROCESSES),
        R("multiprocessing", RISK_PROCESSES),
        R("ProcessPoolExecutor", RISK_PROCESSES),
        R("ctypes", RISK_FFI),
        R("_ctypes", RISK_FFI),
        R("cffi", RISK_FFI),
        R("/proc/self/mem", RISK_MEMORY),
        R("mmap", RISK_MEMORY),
        R("__import__", RISK_DYNAMIC),
        R("importlib", RISK_DYNAMIC),
        R("__builtins__", RISK_DYNAMIC),
        R("__subclasses__", RISK_DYNAMIC),
        R("__globals__", RISK_DYNAMIC),
        R("syscall", RISK_SYSCALL),
};

static const RiskRule node_rules[] = {
        R("child_process", RISK_PROCESSES),
        R("cluster", RISK_PROCESSES),
        R("process.binding", RISK_FFI),
        R("process._linkedBinding", RISK_FFI),
        R("process.dlopen", RISK_FFI),
        R("ffi-napi", RISK_FFI),
        R("node-ffi", RISK_FFI),
        R("/proc/self/mem", RISK_MEMORY),
        R2("worker_threads", RISK_DYNAMIC, "eval"),
        R("vm.runIn*", RISK_DYNAMIC),
        R("Function(", RISK_DYNAMIC),
};

/* C and C++: the libc calls that start programs, dlopen, assembly, raw system calls. */
static const RiskRule c_rules[] = {
        R("fork", RISK_PROCESSES),
        R("vfork", RISK_PROCESSES),
        R("clone", RISK_PROCESSES),
        R("clone3", RISK_PROCESSES),
        R("execl", RISK_PROCESSES),
        R("execlp", RISK_PROCESSES),
        R("execle", RISK_PROCESSES),
        R("execv", RISK_PROCESSES),
        R("execvp", RISK_PROCESSES),
        R("execvpe", RISK_PROCESSES),
        R("execve", RISK_PROCESSES),
        R("execveat", RISK_PROCESSES),
        R("fexecve", RISK_PROCESSES),
        R("system", RISK_PROCESSES),
        R("popen", RISK_PROCESSES),
        R("posix_spawn*", RISK_PROCESSES),
        R("dlopen", RISK_FFI),
        R("/proc/self/mem", RISK_MEMORY),
        R("asm", RISK_ASM),
        R("__asm*", RISK_ASM),
        R("syscall", RISK_SYSCALL),
        R("SYS_*", RISK_SYSCALL),
        R("__NR_*", RISK_SYSCALL),
};

static const RiskRule go_rules[] = {
        R("os/exec", RISK_PROCESSES),
        R("syscall.ForkExec", RISK_PROCESSES),
        R("syscall.Exec", RISK_PROCESSES),
        R("os.StartProcess", RISK_PROCESSES),
        R("\"C\"", RISK_FFI),
        R("unsafe", RISK_MEMORY),
        R("/proc/self/mem", RISK_MEMORY),
        R("syscall.Syscall*", RISK_SYSCALL),
        R("syscall.RawSyscall*", RISK_SYSCALL),
        R("golang.org/x/sys/unix", RISK_SYSCALL),
};

static const RiskRule rust_rules[] = {
        R("process::Command", RISK_PROCESSES),
        R("Command::new", RISK_PROCESSES),
        R("fork", RISK_PROCESSES),
        R("extern \"C\"", RISK_FFI),
        R("libloading", RISK_FFI),
        R("/proc/self/mem", RISK_MEMORY),
        R("asm!", RISK_ASM),
        R("global_asm!", RISK_ASM),
        R("naked_asm!", RISK_ASM),
        R("syscall", RISK_SYSCALL),
};

static const RiskRule java_rules[] = {
        R("ProcessBuilder", RISK_PROCESSES),
        R("Runtime.getRuntime", RISK_PROCESSES),
        R("ProcessHandle", RISK_PROCESSES),
        R("System.loadLibrary", RISK_FFI),
        R("System.load", RISK_FFI),
        R("native", RISK_FFI),
        R("java.lang.foreign", RISK_FFI),
        R("sun.misc.Unsafe", RISK_MEMORY),
        R("/proc/self/mem", RISK_MEMORY),
        R("MethodHandles", RISK_DYNAMIC),
};

static const RiskRule ruby_rules[] = {
        R("system", RISK_PROCESSES),
        R("exec", RISK_PROCESSES),
        R("spawn", RISK_PROCESSES),
        R("fork", RISK_PROCESSES),
        R("`", RISK_PROCESSES),
        R("%x", RISK_PROCESSES),
        R("popen*", RISK_PROCESSES),
        R("Open3", RISK_PROCESSES),
        R("PTY", RISK_PROCESSES),
        R("Fiddle", RISK_FFI),
        R("ffi", RISK_FFI),
        R("/proc/self/mem", RISK_MEMORY),
        R("syscall", RISK_SYSCALL),
};

static const RiskRule perl_rules[] = {
        R("system", RISK_PROCESSES),
        R("exec", RISK_PROCESSES),
        R("fork", RISK_PROCESSES),
        R("`", RISK_PROCESSES),
        R("qx", RISK_PROCESSES),
        R("open2", RISK_PROCESSES),
        R("open3", RISK_PROCESSES),
        R("|-", RISK_PROCESSES),
        R("-|", RISK_PROCESSES),
        R("DynaLoader", RISK_FFI),
        R("XSLoader", RISK_FFI),
        R("/proc/self/mem", RISK_MEMORY),
        R("syscall", RISK_SYSCALL),
};

static const RiskRule php_rules[] = {
        R("exec", RISK_PROCESSES),
        R("shell_exec", RISK_PROCESSES),
        R("system", RISK_PROCESSES),
        R("passthru", RISK_PROCESSES),
        R("proc_open", RISK_PROCESSES),
        R("popen", RISK_PROCESSES),
        R("pcntl_*", RISK_PROCESSES),
        R("`", RISK_PROCESSES),
        R("FFI", RISK_FFI),
        R("dl", RISK_FFI),
        R("/proc/self/mem", RISK_MEMORY),
};

static const RiskRule lua_rules[] = {
        R("os.execute", RISK_PROCESSES),
        R("io.popen", RISK_PROCESSES),
        R("package.loadlib", RISK_FFI),
        R("ffi", RISK_FFI),
        R("/proc/self/mem", RISK_MEMORY),
        R("load", RISK_DYNAMIC),
};

static const RiskRule r_rules[] = {
        R("system", RISK_PROCESSES),
        R("system2", RISK_PROCESSES),
        R("pipe", RISK_PROCESSES),
        R("processx", RISK_PROCESSES),
        R("mcparallel", RISK_PROCESSES),
        R("mclapply", RISK_PROCESSES),
        R("dyn.load", RISK_FFI),
        R(".C", RISK_FFI),
        R(".Call", RISK_FFI),
        R(".External", RISK_FFI),
        R("Rcpp", RISK_FFI),
        R("/proc/self/mem", RISK_MEMORY),
};

/* sqlite3's shell: its dot commands that run programs, and loadable extensions. */
static const RiskRule sql_rules[] = {
        R(".shell", RISK_PROCESSES),
        R(".system", RISK_PROCESSES),
        R(".once", RISK_PROCESSES),
        R(".output", RISK_PROCESSES),
        R("edit", RISK_PROCESSES),
        R("load_extension", RISK_FFI),
        R(".load", RISK_FFI),
};

#define SET(n, a, r) { .name = (n), .languages = (const char *const[]) { a, NULL }, .rules = (r), \
                       .n_rules = ELEMENTSOF(r) }

static const RiskRuleSet rule_sets[] = {
        SET("python", "python", python_rules),
        { .name = "node", .languages = (const char *const[]) { "node", "javascript", "js", "typescript", "ts", NULL },
          .rules = node_rules, .n_rules = ELEMENTSOF(node_rules) },
        { .name = "bash", .languages = (const char *const[]) { "bash", "sh", "shell", NULL }, .always = true },
        { .name = "c", .languages = (const char *const[]) { "c", "cpp", "c++", NULL },
          .rules = c_rules, .n_rules = ELEMENTSOF(c_rules) },
        SET("go", "go", go_rules),
        SET("rust", "rust", rust_rules),
        { .name = "java", .languages = (const char *const[]) { "java", "kotlin", NULL },
          .rules = java_rules, .n_rules = ELEMENTSOF(java_rules) },
        SET("ruby", "ruby", ruby_rules),
        SET("perl", "perl", perl_rules),
        SET("php", "php", php_rules),
        SET("lua", "lua", lua_rules),
        SET("r", "r", r_rules),
        { .name = "sql", .languages = (const char *const[]) { "sql", "sqlite", "sqlite3", NULL },
          .rules = sql_rules, .n_rules = ELEMENTSOF(sql_rules) },
};

static const RiskRuleSet *find_set(const char *name) {
        for (size_t i = 0; name && i < ELEMENTSOF(rule_sets); i++)
                if (streq(rule_sets[i].name, name))
                        return &rule_sets[i];
        return NULL;
}

const char *risk_ruleset(const char *language, const char *const *aliases) {
        for (size_t i = 0; i < ELEMENTSOF(rule_sets); i++)
                for (const char *const *l = rule_sets[i].languages; *l; l++) {
                        if (language && streq(*l, language))
                                return rule_sets[i].name;
                        for (const char *const *a = aliases; a && *a; a++)
                                if (streq(*l, *a))
                                        return rule_sets[i].name;
                }
        return NULL;
}

/* Is pattern (see RiskRule) found in code[0..len)? */
static bool pattern_found(const char *code, size_t len, const char *pattern) {
        size_t n = strlen(pattern);
        bool prefix = n > 1 && pattern[n - 1] == '*';

        return memmem_token(code, len, pattern, prefix ? n - 1 : n, prefix);
}

size_t risk_scan(const char *ruleset, unsigned classes, const char *code, size_t len, RiskScan *ret) {
        const RiskRuleSet *s = find_set(ruleset);

        *ret = (RiskScan) {};
        if (!s)
                return 0;
        if (s->always && (classes & (1u << RISK_PROCESSES)))
                ret->hits[ret->n++] = (RiskHit) { RISK_PROCESSES, "shell" };
        for (size_t i = 0; i < s->n_rules && ret->n < RISK_HITS_MAX; i++)
                if ((classes & (1u << s->rules[i].class)) && pattern_found(code, len, s->rules[i].pattern) &&
                    (!s->rules[i].also || pattern_found(code, len, s->rules[i].also)))
                        ret->hits[ret->n++] = (RiskHit) { s->rules[i].class, s->rules[i].pattern };
        return ret->n;
}

int isolation_choose(const IsolationSettings *s, const char *language, const char *const *aliases,
                     const char *code, size_t len, uint64_t timeout_ms, bool caller_strong,
                     IsolationChoice *ret) {
        *ret = (IsolationChoice) { .timeout_ms = timeout_ms, .long_run_ms = s->long_run_ms };

        if (s->policy == ISOLATION_POLICY_NEVER)
                return caller_strong ? -EPERM : 0;

        ret->by_policy = s->policy == ISOLATION_POLICY_ALWAYS;
        ret->by_caller = caller_strong;
        ret->by_long_run = s->long_run_ms > 0 && timeout_ms > s->long_run_ms;

        /* Only the classes the administrator counts. */
        risk_scan(risk_ruleset(language, aliases), s->classes, code, len, &ret->scan);

        ret->strong = ret->by_policy || ret->by_caller || ret->by_long_run || ret->scan.n > 0;
        return 0;
}

static int add_string(json_object *a, const char *s) {
        json_object *v = json_object_new_string(s);

        if (!v || json_object_array_add(a, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static int add_reasons(json_object *reasons, const IsolationChoice *c) {
        char buf[128];

        if (!c->strong)
                return 0;
        if (c->by_policy && add_string(reasons, "policy: always") < 0)
                return -ENOMEM;
        if (c->by_caller && add_string(reasons, "caller") < 0)
                return -ENOMEM;
        if (c->by_long_run) {
                snprintf(buf, sizeof(buf), "timeout: %" PRIu64 " ms > %" PRIu64 " ms", c->timeout_ms, c->long_run_ms);
                if (add_string(reasons, buf) < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < c->scan.n; i++) {
                snprintf(buf, sizeof(buf), "%s: %s", risk_class_to_string(c->scan.hits[i].class), c->scan.hits[i].what);
                if (add_string(reasons, buf) < 0)
                        return -ENOMEM;
        }
        return 0;
}

json_object *isolation_to_json(const IsolationChoice *c) {
        json_object *o = json_object_new_object(), *reasons = json_object_new_array(),
                    *tier = json_object_new_string(c->strong ? "strong" : "standard");

        if (!o || !reasons || !tier || add_reasons(reasons, c) < 0 ||
            json_object_object_add(o, "tier", tier) < 0) {
                json_object_put(tier);
                json_object_put(reasons);
                json_object_put(o);
                return NULL;
        }
        if (json_object_object_add(o, "reasons", reasons) < 0) {
                json_object_put(reasons);
                json_object_put(o);
                return NULL;
        }
        return o;
}

static const struct {
        const char *path;
        const char *forbids;            /* the value that forbids it */
        const char *why;
} userns_sysctls[] = {
        { "/proc/sys/kernel/unprivileged_userns_clone", "0",
          "kernel.unprivileged_userns_clone=0: unprivileged user namespaces are off, and runsc --rootless needs one" },
        { "/proc/sys/user/max_user_namespaces", "0",
          "user.max_user_namespaces=0: no user namespaces, and runsc --rootless needs one" },
        { "/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1",
          "kernel.apparmor_restrict_unprivileged_userns=1: AppArmor keeps runsc --rootless out of user namespaces" },
};

const char *isolation_userns_problem(const char *(*read)(const char *path, void *userdata), void *userdata) {
        for (size_t i = 0; i < ELEMENTSOF(userns_sysctls); i++) {
                const char *v = read(userns_sysctls[i].path, userdata);

                if (v && streq(v, userns_sysctls[i].forbids))
                        return userns_sysctls[i].why;
        }
        return NULL;
}
