/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The risk scan (docs/isolation.md): which requests run in the strong tier (gVisor) instead of the
 * standard one. A table of rules per language, each a pattern in the source and the class of risk
 * it stands for (spawns processes, reaches native code, ...), plus the request's own timeout and
 * what the caller and the administrator asked for. Advisory in one direction only: a rule can send
 * a program to the strong tier, nothing here ever takes one out of it. Not a security boundary of
 * its own: a program can hide what it calls from any text scan (getattr(os, 'sys' + 'tem')), which
 * is why StrongIsolation=always exists. Pure: no I/O. */

#include <errno.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum RiskClass {
        RISK_PROCESSES,         /* "processes": starts other programs (subprocess, fork, exec, system) */
        RISK_FFI,               /* "ffi": calls native code the runtime does not vet (ctypes, dlopen) */
        RISK_MEMORY,            /* "memory": reaches raw memory (/proc/self/mem, mmap) */
        RISK_DYNAMIC,           /* "dynamic": hides what it imports or runs (__import__, eval in a worker) */
        RISK_ASM,               /* "asm": inline assembly */
        RISK_SYSCALL,           /* "syscall": raw system calls, past the runtime's own wrappers */
        _RISK_CLASS_MAX,
        _RISK_CLASS_INVALID = -EINVAL,
} RiskClass;

/* Every class: the default of StrongIsolationRules=. */
#define RISK_CLASSES_ALL ((1u << _RISK_CLASS_MAX) - 1)

const char *risk_class_to_string(RiskClass c);
RiskClass risk_class_from_string(const char *s);

/* At most this many matched rules are kept for one program (the first ones, in table order). */
#define RISK_HITS_MAX 8

typedef struct RiskHit {
        RiskClass class;
        const char *what;       /* the rule's pattern as written in the table ("os.system"): static */
} RiskHit;

typedef struct RiskScan {
        RiskHit hits[RISK_HITS_MAX];
        size_t n;
} RiskScan;

/* The rule set a language is scanned with: its own name or one of its aliases when the table has
 * rules for it ("python", "node", "typescript", "bash", "c", "cpp", "go", "rust", "java", ...),
 * else NULL (an administrator's own language: only the timeout and the caller count). */
const char *risk_ruleset(const char *language, const char *const *aliases);

/* Scans len bytes of code (NULs included) with the rule set (risk_ruleset()'s name; NULL: no rules),
 * its rules of the classes in the mask (1 << RiskClass) only. Each rule matches at most once; a rule
 * set whose language always spawns processes (bash) matches without looking. Returns the number of
 * hits, 0..RISK_HITS_MAX (the first ones, in table order). */
size_t risk_scan(const char *ruleset, unsigned classes, const char *code, size_t len, RiskScan *ret);

typedef enum IsolationPolicy {
        ISOLATION_POLICY_AUTO,          /* the scan, the timeout and the caller decide */
        ISOLATION_POLICY_ALWAYS,        /* every program runs in the strong tier */
        ISOLATION_POLICY_NEVER,         /* the strong tier is off: a request that asks for it is refused */
        _ISOLATION_POLICY_MAX,
        _ISOLATION_POLICY_INVALID = -EINVAL,
} IsolationPolicy;

const char *isolation_policy_to_string(IsolationPolicy p);
IsolationPolicy isolation_policy_from_string(const char *s);

/* The strong tier's runsc --rootless makes a user namespace as the program's (unprivileged) user:
 * why the kernel would refuse it, from the sysctls that can forbid it, or NULL. read(path) gives a
 * sysctl file's first line (NULL: not there, which forbids nothing). */
const char *isolation_userns_problem(const char *(*read)(const char *path, void *userdata), void *userdata);

/* What the administrator set ([Isolation] of sandboxd.conf(5)). */
typedef struct IsolationSettings {
        IsolationPolicy policy;
        unsigned classes;               /* StrongIsolationRules= the classes that count (RISK_CLASSES_ALL) */
        uint64_t long_run_ms;           /* StrongIsolationTimeoutSec= x 1000: a longer timeout_ms counts; 0: never */
} IsolationSettings;

/* Which tier a request runs in, and why. */
typedef struct IsolationChoice {
        bool strong;
        bool by_policy;                 /* StrongIsolation=always */
        bool by_caller;                 /* "isolation": "strong" */
        bool by_long_run;               /* timeout_ms over the threshold */
        uint64_t timeout_ms, long_run_ms;
        RiskScan scan;                  /* the rules that matched and count */
} IsolationChoice;

/* Decides for a request of language (and aliases) with code (len bytes), its timeout_ms and whether
 * the caller asked for the strong tier. 0, or -EPERM: the caller asked for the strong tier and the
 * policy is never (the request is refused, never run in the standard tier instead). */
int isolation_choose(const IsolationSettings *s, const char *language, const char *const *aliases,
                     const char *code, size_t len, uint64_t timeout_ms, bool caller_strong,
                     IsolationChoice *ret);

/* The most isolation_to_json()'s text takes (RISK_HITS_MAX reasons of at most 64 bytes, 3 more). */
#define ISOLATION_JSON_MAX 1024

/* The record's "isolation": {"tier": "standard"|"strong", "reasons": ["processes: subprocess",
 * "timeout: 60000 ms > 30000 ms", "caller", "policy: always", ...]}: reasons name why the strong tier
 * (empty in the standard one). NULL on OOM. */
json_object *isolation_to_json(const IsolationChoice *c);
