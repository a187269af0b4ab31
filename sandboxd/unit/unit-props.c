/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <openssl/evp.h>

#include "unit-props.h"

#include "sandbox-root.h"
#include "strv.h"
#include "time-util.h"

static UnitProp *add(UnitProps *p, const char *name, PropKind kind, const char *reason) {
        UnitProp *x;

        if (p->n >= p->allocated) {
                size_t na = p->allocated ? p->allocated * 2 : 64;
                UnitProp *np = realloc(p->props, na * sizeof(UnitProp));
                if (!np)
                        return NULL;
                p->props = np;
                p->allocated = na;
        }
        x = &p->props[p->n++];
        *x = (UnitProp) { .name = name, .kind = kind, .reason = reason, .fd = -1 };
        return x;
}

#define ADD_OR_OOM(x, ...)                      \
        do {                                    \
                x = add(__VA_ARGS__);           \
                if (!x)                         \
                        return -ENOMEM;         \
        } while (0)

static int add_bool(UnitProps *p, const char *name, bool b, const char *reason) {
        UnitProp *x;
        ADD_OR_OOM(x, p, name, PK_BOOL, reason);
        x->b = b;
        return 0;
}

static int add_u64(UnitProps *p, const char *name, uint64_t u, const char *reason) {
        UnitProp *x;
        ADD_OR_OOM(x, p, name, PK_U64, reason);
        x->u = u;
        return 0;
}

static int add_u32(UnitProps *p, const char *name, uint32_t u, const char *reason) {
        UnitProp *x;
        ADD_OR_OOM(x, p, name, PK_U32, reason);
        x->u = u;
        return 0;
}

static int add_i32(UnitProps *p, const char *name, int32_t i, const char *reason) {
        UnitProp *x;
        ADD_OR_OOM(x, p, name, PK_I32, reason);
        x->i = i;
        return 0;
}

static int add_string(UnitProps *p, const char *name, const char *s, const char *reason) {
        UnitProp *x;
        ADD_OR_OOM(x, p, name, PK_STRING, reason);
        x->s = strdup(s);
        return x->s ? 0 : -ENOMEM;
}

static int add_fd(UnitProps *p, const char *name, int fd, const char *reason) {
        UnitProp *x;
        ADD_OR_OOM(x, p, name, PK_FD, reason);
        x->fd = fd;
        return 0;
}

/* (bas): an allow-list (b true) or deny-list of names. */
static int add_bstrv(UnitProps *p, const char *name, bool b, const char *const *items, const char *reason) {
        UnitProp *x;
        ADD_OR_OOM(x, p, name, PK_BSTRV, reason);
        x->b = b;
        for (const char *const *i = items; *i; i++)
                if (strv_extend(&x->strv, &x->n, *i) < 0)
                        return -ENOMEM;
        return 0;
}

static int add_strv(UnitProps *p, const char *name, const char *const *items, const char *reason) {
        UnitProp *x;
        ADD_OR_OOM(x, p, name, PK_STRV, reason);
        for (const char *const *i = items; *i; i++)
                if (strv_extend(&x->strv, &x->n, *i) < 0)
                        return -ENOMEM;
        return 0;
}

static int bind_push(UnitProp *x, const char *src, const char *dst, bool ignore_missing) {
        if (strv_extend(&x->strv, &x->n, src) < 0 || strv_extend(&x->strv, &x->n, dst) < 0 ||
            strv_extend(&x->strv, &x->n, ignore_missing ? "-" : "") < 0)
                return -ENOMEM;
        return 0;
}

int cgroup_binds_build(const CgroupRoot *roots, size_t n, const char *unit, CgroupBind *ret) {
        if (n > CGROUP_ROOTS_MAX)
                return -E2BIG;
        for (size_t i = 0; i < n; i++) {
                char *path = NULL;

                if (asprintf(&path, "%s/%s", roots[i].slice_dir, unit) < 0) {
                        cgroup_binds_done(ret, i);
                        return -ENOMEM;
                }
                ret[i] = (CgroupBind) { .source = path, .name = roots[i].name };
        }
        return 0;
}

void cgroup_binds_done(CgroupBind *cg, size_t n) {
        for (size_t i = 0; i < n; i++)
                cg[i].source = mfree((char *) cg[i].source);
}

char *execution_unit_name(const char *execution_id) {
        char *s;

        if (asprintf(&s, "sandboxd-%s.service", execution_id) < 0)
                return NULL;
        return s;
}

/* Set KEY=VALUE, replacing an earlier assignment of KEY: systemd refuses duplicate names. */
static int env_set(char ***l, size_t *n, const char *assignment) {
        size_t k = strcspn(assignment, "=");

        for (size_t i = 0; i < *n; i++)
                if (strncmp((*l)[i], assignment, k + 1) == 0) {
                        char *c = strdup(assignment);
                        if (!c)
                                return -ENOMEM;
                        free((*l)[i]);
                        (*l)[i] = c;
                        return 0;
                }
        return strv_extend(l, n, assignment);
}

int sandbox_environment(const UnitPlan *plan, char ***ret, size_t *ret_n) {
        _cleanup_strv_free_ char **env = NULL;
        char seed[64];
        size_t n = 0;
        /* Reproducibility: the same request sees the same environment, in the same order. */
        static const char *const fixed[] = {
                "PATH=/usr/bin:/bin",
                "HOME=" SANDBOX_WORKSPACE,
                "PWD=" SANDBOX_WORKSPACE,
                "TMPDIR=/tmp",
                "USER=sandbox",
                "LOGNAME=sandbox",
                "TZ=UTC",
                "LANG=C.UTF-8",
                "LC_ALL=C.UTF-8",
                "PYTHONHASHSEED=0",
        };

        for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
                if (strv_extend(&env, &n, fixed[i]) < 0)
                        return -ENOMEM;
        snprintf(seed, sizeof(seed), "SANDBOX_SEED=%" PRIu64, plan->seed);
        if (strv_extend(&env, &n, seed) < 0)
                return -ENOMEM;
        for (const char *const *e = plan->language->env; e && *e; e++)
                if (env_set(&env, &n, *e) < 0)
                        return -ENOMEM;
        for (size_t i = 0; i < plan->n_user_env; i++)
                if (env_set(&env, &n, plan->user_env[i]) < 0)
                        return -ENOMEM;
        /* Last: the way out of a run with network is the proxy, whatever env said. */
        for (size_t i = 0; plan->proxy_socket && sandbox_network_env(i); i++)
                if (env_set(&env, &n, sandbox_network_env(i)) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(env);
        *ret_n = n;
        return 0;
}

int sandbox_environment_block(const UnitPlan *plan, char **ret, size_t *ret_len) {
        _cleanup_strv_free_ char **env = NULL;
        _cleanup_free_ char *block = NULL;
        size_t n = 0, len = 0, off = 0;
        int r;

        r = sandbox_environment(plan, &env, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                len += strlen(env[i]) + 1;
        block = malloc(len + 1);
        if (!block)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                size_t k = strlen(env[i]) + 1;

                memcpy(block + off, env[i], k);
                off += k;
        }
        *ret = TAKE_PTR(block);
        *ret_len = len;
        return 0;
}

char *warm_unit_name_generate(void) {
        uint8_t b[16];
        char *s;

        if (getrandom(b, sizeof(b), 0) != (ssize_t) sizeof(b))
                return NULL;
        if (asprintf(&s, "sandboxd-warm-%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x.service",
                     b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                     b[15]) < 0)
                return NULL;
        return s;
}

int control_fd_name(const char *execution_id, const char *unit, char *buf, size_t n) {
        int k;

        if (unit && startswith(unit, "sandboxd-warm-") && endswith(unit, ".service"))
                k = snprintf(buf, n, "ctl-%.*s", (int) (strlen(unit) - strlen(".service")), unit);
        else
                k = snprintf(buf, n, "ctl-%s", execution_id);
        return k < 0 || (size_t) k >= n ? -ENAMETOOLONG : 0;
}

/* s with every '$' doubled (systemd's literal '$' in an ExecStart= word), or NULL: no memory. */
static char *dollar_escape(const char *s) {
        size_t n = strlen(s) + 1;
        char *out, *o;

        for (const char *c = s; *c; c++)
                n += *c == '$';
        o = out = malloc(n);
        if (!out)
                return NULL;
        for (const char *c = s; *c; c++) {
                if (*c == '$')
                        *o++ = '$';
                *o++ = *c;
        }
        *o = 0;
        return out;
}

static int add_exec(UnitProps *p, const UnitPlan *plan) {
        const Language *l = plan->language;
        UnitProp *x;
        char buf[64];
        int r = 0;

        /* "!" (no-setuid): systemd allocates the dynamic user but starts the helper as root, with
         * the bounding set below; the helper runs the program as the dynamic user, so the program
         * cannot signal, stop or ptrace its supervisor (sandbox-exec.c). */
        ADD_OR_OOM(x, p, "ExecStartEx", PK_EXEC_EX,
                   "sandbox-exec, as root (ExecStart=!): a supervisor the program cannot reach; it runs the "
                   "program as the dynamic user, enforces the deadline, reports");
        x->flag = "no-setuid";
        x->s = strdup(SANDBOX_HELPER);
        if (!x->s)
                return -ENOMEM;
        r |= strv_extend(&x->strv, &x->n, SANDBOX_HELPER);
        r |= strv_extend(&x->strv, &x->n, "--source");
        r |= strv_extend(&x->strv, &x->n, l->source_name);
        snprintf(buf, sizeof(buf), "--max-source=%" PRIu64, plan->max_code_bytes);
        r |= strv_extend(&x->strv, &x->n, buf);
        r |= strv_extend(&x->strv, &x->n, "--cgroup-dir=" SANDBOX_CGROUP_DIR);
        r |= strv_extend(&x->strv, &x->n, "--tidy-mounts");
        r |= strv_extend(&x->strv, &x->n, "--live-output");
        if (plan->runsc) {
                _cleanup_free_ char *a = NULL, *b = NULL;

                if (asprintf(&a, "--strong=%s", plan->runsc) < 0 ||
                    asprintf(&b, "--runsc-platform=%s", plan->runsc_platform ?: "ptrace") < 0)
                        return -ENOMEM;
                r |= strv_extend(&x->strv, &x->n, a);
                r |= strv_extend(&x->strv, &x->n, b);
                snprintf(buf, sizeof(buf), "--tasks=%" PRIu64, plan->limits.tasks);
                r |= strv_extend(&x->strv, &x->n, buf);
                /* The total memory gVisor reports: the program's own limit, not the host's (strong.c). */
                snprintf(buf, sizeof(buf), "--memory-mb=%" PRIu64, plan->limits.memory_mb);
                r |= strv_extend(&x->strv, &x->n, buf);
        }
        if (plan->proxy_socket)
                r |= strv_extend(&x->strv, &x->n, "--pkgs-dir");
        if (plan->usr_layer)
                r |= strv_extend(&x->strv, &x->n, "--usr-layer=" SANDBOX_USR_LAYER);
        if (plan->usr_layer && plan->environment_layer)
                r |= strv_extend(&x->strv, &x->n, "--env-layer=" SANDBOX_ENV_LAYER);
        snprintf(buf, sizeof(buf), "--rlimit-nofile=%" PRIu64, plan->nofile);
        r |= strv_extend(&x->strv, &x->n, buf);
        /* No single file may be larger than the whole workspace. */
        snprintf(buf, sizeof(buf), "--rlimit-fsize=%" PRIu64, plan->limits.disk_mb * 1024 * 1024);
        r |= strv_extend(&x->strv, &x->n, buf);
        /* sandbox-exec enforces the deadline itself, so the output captured so far survives it. A warm
         * unit's comes with its claim. */
        if (plan->warm) {
                r |= strv_extend(&x->strv, &x->n, "--warm");
                /* A strong unit starts its runtime after the claim, under gVisor. */
                if (l->warm_argv && !plan->runsc)
                        r |= strv_extend(&x->strv, &x->n, "--warm-preload");
        } else {
                snprintf(buf, sizeof(buf), "--timeout-ms=%" PRIu64, plan->limits.timeout_ms);
                r |= strv_extend(&x->strv, &x->n, buf);
        }
        snprintf(buf, sizeof(buf), "--head-bytes=%" PRIu64, plan->head_bytes);
        r |= strv_extend(&x->strv, &x->n, buf);
        snprintf(buf, sizeof(buf), "--tail-bytes=%" PRIu64, plan->tail_bytes);
        r |= strv_extend(&x->strv, &x->n, buf);
        for (size_t i = 0; i < plan->n_inputs; i++) {
                _cleanup_free_ char *arg = NULL;
                if (asprintf(&arg, "--input=%s", plan->inputs[i].path) < 0)
                        return -ENOMEM;
                r |= strv_extend(&x->strv, &x->n, arg);
        }
        if (l->compile_argv && l->compile_timeout_ms > 0) {
                snprintf(buf, sizeof(buf), "--compile-timeout-ms=%" PRIu64, l->compile_timeout_ms);
                r |= strv_extend(&x->strv, &x->n, buf);
        }
        if (l->compile_argv && l->compile_memory_mb > 0) {
                snprintf(buf, sizeof(buf), "--compile-memory-mb=%" PRIu64, l->compile_memory_mb);
                r |= strv_extend(&x->strv, &x->n, buf);
        }
        for (const char *const *a = l->compile_argv; a && *a; a++) {
                _cleanup_free_ char *arg = NULL;
                if (asprintf(&arg, "--compile-arg=%s", *a) < 0)
                        return -ENOMEM;
                r |= strv_extend(&x->strv, &x->n, arg);
        }
        for (const char *const *a = l->check_argv; a && *a; a++) {
                _cleanup_free_ char *arg = NULL;
                if (asprintf(&arg, "--check-arg=%s", *a) < 0)
                        return -ENOMEM;
                r |= strv_extend(&x->strv, &x->n, arg);
        }
        r |= strv_extend(&x->strv, &x->n, "--");
        if (plan->warm && l->warm_argv && !plan->runsc) {
                for (const char *const *a = l->warm_argv; *a; a++)
                        r |= strv_extend(&x->strv, &x->n, *a);
                r |= strv_extend(&x->strv, &x->n, plan->warm_preload ?: "");
        } else {
                for (const char *const *a = l->run_argv; *a; a++)
                        r |= strv_extend(&x->strv, &x->n, *a);
                /* systemd expands $NAME and ${NAME} in ExecStart= words as it starts the command
                 * (not specifiers: those are a unit file's): "$$" is its literal '$'. */
                for (size_t i = 0; !plan->warm && i < plan->n_args; i++) {
                        _cleanup_free_ char *arg = dollar_escape(plan->args[i]);
                        if (!arg)
                                return -ENOMEM;
                        r |= strv_extend(&x->strv, &x->n, arg);
                }
        }
        return r < 0 ? -ENOMEM : 0;
}

/* MemoryMax= and TasksMax= of a unit (cold, or a warm one as claimed): the strong tier's add gVisor's
 * room beyond the program's (unit-props.h). */
static uint64_t unit_memory_max(const Limits *l, bool strong) {
        return (l->memory_mb + (strong ? STRONG_MEMORY_OVERHEAD_MB : 0)) * 1024 * 1024;
}

static uint64_t unit_tasks_max(const Limits *l, bool strong) {
        return strong ? STRONG_TASKS_PER_PROCESS * l->tasks + STRONG_TASKS_OVERHEAD : l->tasks;
}

uint64_t sandbox_shm_bytes(const Limits *l) {
        return MIN(l->disk_mb * 1024 * 1024 / 8, 64ULL * 1024 * 1024);
}

uint64_t sandbox_workspace_bytes(const Limits *l) {
        return l->disk_mb * 1024 * 1024 - sandbox_shm_bytes(l);
}

static int add_binds(UnitProps *p, const UnitPlan *plan) {
        _cleanup_free_ char *ws = NULL, *tmp = NULL, *sys = NULL, *shm_opts = NULL, *run_opts = NULL;
        UnitProp *ro, *rw, *t;
        int r = 0;

        if (asprintf(&ws, "%s/workspace", plan->workspace) < 0 || asprintf(&tmp, "%s/tmp", plan->workspace) < 0 ||
            asprintf(&sys, "%s/sys", plan->workspace) < 0 ||
            asprintf(&shm_opts, "mode=1777,nosuid,nodev,noexec,size=%" PRIu64, sandbox_shm_bytes(&plan->limits)) < 0 ||
            /* Room for the source and the two account files, nothing more. */
            asprintf(&run_opts, "mode=0755,nosuid,nodev,noexec,size=%" PRIu64, plan->max_code_bytes + 1024 * 1024) < 0)
                return -ENOMEM;

        ADD_OR_OOM(ro, p, "BindReadOnlyPaths", PK_BINDS,
                   "the runtime's files, read-only; the rest of the host tree does not exist in the sandbox");
        r |= bind_push(ro, "/usr", "/usr", false);
        /* An empty /sys: MountAPIVFS= would show the host's devices and every other sandbox's cgroup.
         * A bind mount outranks systemd's own /sys mount. The root's own empty directory. */
        r |= bind_push(ro, sys, "/sys", false);
        r |= bind_push(ro, plan->helper, SANDBOX_HELPER, false);
        if (plan->usr_layer)
                /* sandbox-exec mounts it over /usr, then detaches this bind. */
                r |= bind_push(ro, plan->usr_layer, SANDBOX_USR_LAYER, false);
        /* The language's own paths ([Sandbox] ReadOnlyPath=, each with its reason in its file): only
         * this language's units see them. */
        for (size_t i = 0; i < plan->language->n_ro_paths; i++)
                r |= bind_push(ro, plan->language->ro_paths[i].what, plan->language->ro_paths[i].what, true);
        if (plan->usr_layer && plan->environment_layer)
                /* Only this environment's units see its libraries: another lower layer, likewise. */
                r |= bind_push(ro, plan->environment_layer, SANDBOX_ENV_LAYER, false);
        for (size_t i = 0; i < plan->n_cgroups; i++) {
                _cleanup_free_ char *dst = NULL;
                if (asprintf(&dst, SANDBOX_CGROUP_DIR "/%s", plan->cgroups[i].name) < 0)
                        return -ENOMEM;
                /* The unit's own counters, opened by sandbox-exec before it detaches the bind (the
                 * cgroup disappears with the unit: only something inside can read them). */
                r |= bind_push(ro, plan->cgroups[i].source, dst, true);
        }

        /* One tmpfs of size disk_mb holds everything the sandbox can write: a bind mount outranks the
         * PrivateTmp= that DynamicUser= implies (which would put /tmp on the host's disk). */
        ADD_OR_OOM(rw, p, "BindPaths", PK_BINDS,
                   "workspace, /tmp and /var/tmp all live on the execution's size-bounded tmpfs");
        r |= bind_push(rw, ws, SANDBOX_WORKSPACE, false);
        r |= bind_push(rw, tmp, "/tmp", false);
        r |= bind_push(rw, tmp, "/var/tmp", false);

        /* PrivateDevices= would bind the host's /dev/shm: a tmpfs of its own, sized from disk_mb. */
        ADD_OR_OOM(t, p, "TemporaryFileSystem", PK_TMPFS,
                   "a private, size-bounded /dev/shm; a /run only sandbox-exec (root) can write");
        r |= strv_extend(&t->strv, &t->n, "/dev/shm");
        r |= strv_extend(&t->strv, &t->n, shm_opts);
        /* With RootDirectory= systemd would mount a tmpfs on /run anyway: this one is sized, and root's. */
        r |= strv_extend(&t->strv, &t->n, "/run");
        r |= strv_extend(&t->strv, &t->n, run_opts);
        if (plan->session_state_dir) {
                /* With RootDirectory= systemd binds each StateDirectory= at /var/lib/<dir> inside the
                 * root, creating the mount point: on an empty tmpfs, which sandbox-exec detaches with
                 * the binds (their paths name sandboxd and the session). */
                r |= strv_extend(&t->strv, &t->n, "/var/lib");
                r |= strv_extend(&t->strv, &t->n, "mode=0755,nosuid,nodev,noexec,size=1m");
        }
        if (r < 0)
                return -ENOMEM;

        if (plan->session_state_dir) {
                _cleanup_free_ char *sws = NULL, *stmp = NULL;
                UnitProp *sd;

                if (asprintf(&sws, "%s/workspace", plan->session_state_dir) < 0 ||
                    asprintf(&stmp, "%s/tmp", plan->session_state_dir) < 0)
                        return -ENOMEM;
                /* The session's directories outlive the run while the next run gets another dynamic
                 * UID: systemd (v252 setup_exec_directory → path_chown_recursive) re-owns the tree
                 * to the new UID before the unit starts, without following symlinks (O_PATH,
                 * O_NOFOLLOW, AT_EMPTY_PATH) and dropping suid/sgid bits. sandboxd never does. */
                ADD_OR_OOM(sd, p, "StateDirectory", PK_STRV,
                           "a session's workspace and /tmp: systemd re-owns them to this run's dynamic user");
                r |= strv_extend(&sd->strv, &sd->n, sws);
                r |= strv_extend(&sd->strv, &sd->n, stmp);
                if (r < 0 || add_u32(p, "StateDirectoryMode", 0700, "only the session's runs can enter its directories") < 0)
                        return -ENOMEM;
        }
        return r < 0 ? -ENOMEM : 0;
}

/* systemd's protections of the kernel, which cover sandbox-exec too (it runs before our own filter is
 * loaded, in the program's process only). Each one's start-up cost is measured by bench/. */
static int add_kernel_protection(UnitProps *p, bool network, bool strong) {
        static const char *const families[] = { "AF_UNIX", NULL };
        static const char *const net_families[] = { "AF_UNIX", "AF_INET", "AF_INET6", NULL };
        static const char *const native[] = { "native", NULL };
        int r = 0;

        if (strong)
                r |= add_u64(p, "RestrictNamespaces",
                             CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUSER | CLONE_NEWUTS,
                             "strong tier: runsc makes the sandbox's namespaces (user first, as the dynamic user); "
                             "no cgroup namespace");
        else
                r |= add_u64(p, "RestrictNamespaces", 0, "no namespace of any kind can be created or joined");
        r |= add_bool(p, "LockPersonality", true, "the execution domain cannot be changed");
        r |= add_bool(p, "RestrictRealtime", true, "no realtime scheduling: the host's CPU stays fair");
        if (network)
                r |= add_bstrv(p, "RestrictAddressFamilies", true, net_families,
                               "AF_INET/AF_INET6 for the egress proxy on lo, AF_UNIX; no netlink, packet, ...");
        else
                r |= add_bstrv(p, "RestrictAddressFamilies", true, families,
                               "sockets: AF_UNIX only (network is off anyway)");
        r |= add_strv(p, "SystemCallArchitectures", native, "no 32-bit or x32 system call entry points");
        /* Not ProtectKernelTunables=: what it makes read-only is not there (ProcSubset=pid leaves no
         * /proc/sys, /proc/sysrq-trigger, ...; /sys is an empty directory), and its read-only remounts
         * cost 17-19 ms at every unit start (bench/run --hardening), a third of a start. */
        r |= add_bool(p, "ProtectKernelModules", true, "no module loading, /usr/lib/modules hidden");
        r |= add_bool(p, "ProtectKernelLogs", true, "no kernel log (syslog(2), /dev/kmsg)");
        r |= add_bool(p, "ProtectClock", true, "the clock cannot be set");
        r |= add_bool(p, "ProtectControlGroups", true, "cgroupfs is read-only");
        return r < 0 ? -ENOMEM : 0;
}

int unit_props_build(const UnitPlan *plan, UnitProps *ret) {
        _cleanup_free_ char *desc = NULL;
        UnitProps p = {};
        const Limits *l = &plan->limits;
        char **env = NULL;
        size_t n_env = 0;
        UnitProp *x;
        int r;

        if (asprintf(&desc, "sandboxd execution %s (%s)", plan->execution_id, plan->language->name) < 0)
                return -ENOMEM;

#define TRY(expr)                       \
        do {                            \
                r = (expr);             \
                if (r < 0)              \
                        goto fail;      \
        } while (0)

        TRY(add_string(&p, "Description", desc, "what systemctl status shows"));
        TRY(add_string(&p, "Slice", "sandboxd.slice", "all executions share one slice: one place to see and cap them"));
        TRY(add_bool(&p, "AddRef", true, "the unit is not collected until sandboxd has read its result"));
        TRY(add_string(&p, "CollectMode", "inactive", "a failed unit keeps its Result= until sandboxd (perhaps restarted) has read it"));
        TRY(add_string(&p, "Type", "simple", "nothing to wait for: the start job completes at fork"));
        TRY(add_exec(&p, plan));
        TRY(add_fd(&p, "StandardInputFileDescriptor", plan->stdin_fd, "the control channel: code in, report and output out"));
        TRY(add_string(&p, "StandardOutput", "null", "program output goes to sandbox-exec's capture, never the journal"));
        TRY(add_string(&p, "StandardError", "null", "likewise: a forged journal line is impossible"));

        TRY(sandbox_environment(plan, &env, &n_env));
        x = add(&p, "Environment", PK_STRV, "a fixed environment: nothing of the daemon's reaches the sandbox");
        if (!x) {
                strv_free(env);
                r = -ENOMEM;
                goto fail;
        }
        x->strv = env;
        x->n = n_env;
        TRY(add_string(&p, "WorkingDirectory", SANDBOX_WORKSPACE, "a fixed working directory"));
        TRY(add_u32(&p, "UMask", 0022, "a fixed umask"));
        TRY(add_bool(&p, "IgnoreSIGPIPE", false, "programs see SIGPIPE as in a shell"));

        /* Identity and privileges. */
        TRY(add_bool(&p, "DynamicUser", true, "a fresh UID per execution: no two sandboxes can signal or ptrace each other"));
        TRY(add_bool(&p, "NoNewPrivileges", true, "setuid binaries and file capabilities grant nothing"));
        TRY(add_u64(&p, "CapabilityBoundingSet", SANDBOX_HELPER_CAPABILITIES,
                    "what sandbox-exec needs as the program's supervisor; its children drop all of it"));
        TRY(add_u64(&p, "AmbientCapabilities", 0, "nothing is passed on across exec"));
        TRY(add_bool(&p, "RestrictSUIDSGID", true, "cannot create setuid/setgid files"));

        /* The file system: a minimal root. ProtectSystem=strict alone leaves the host tree readable. */
        TRY(add_string(&p, "RootDirectory", plan->workspace,
                       "the execution's own tmpfs as /: the host tree is absent, no inode of / is shared"));
        TRY(add_bool(&p, "MountAPIVFS", true, "a /proc and /dev of the sandbox's own"));
        TRY(add_binds(&p, plan));
        TRY(add_string(&p, "ProtectProc", "invisible", "other users' processes (the host, other sandboxes) are invisible"));
        if (plan->runsc)
                /* runsc reads /proc/sys/vm/mmap_min_addr and more as it starts (its Sentry panics
                 * without): the program itself sees gVisor's /proc, never this one. */
                TRY(add_bool(&p, "ProtectKernelTunables", true,
                             "strong tier: /proc/sys and /sys read-only for runsc (ProcSubset=pid would hide what it "
                             "reads); the program sees gVisor's /proc"));
        else
                TRY(add_string(&p, "ProcSubset", "pid", "no system-wide /proc files (host memory, cpu, kernel details)"));
        TRY(add_bool(&p, "PrivateDevices", true, "only null, zero, random, urandom, tty; no device nodes of the host"));
        TRY(add_bool(&p, "PrivateIPC", true, "SysV IPC and POSIX message queues are not shared with the host"));
        TRY(add_bool(&p, "PrivateNetwork", true, "no network: only a loopback device of its own"));
        TRY(add_bool(&p, "ProtectHostname", true, "cannot change the host name"));
        if (!plan->no_kernel_protection)
                TRY(add_kernel_protection(&p, plan->proxy_socket != NULL, plan->runsc != NULL));
        if (plan->proxy_socket) {
                const char *const units[] = { plan->proxy_socket, NULL };

                TRY(add_strv(&p, "JoinsNamespaceOf", units,
                             "the proxy socket's network namespace: lo with the proxy listening on " PROXY_LISTEN_ADDRESS
                             ", no route anywhere else"));
                TRY(add_strv(&p, "After", units, "the namespace and the listening socket exist before the program"));
        }

        /* Limits. */
        TRY(add_bool(&p, "MemoryAccounting", true, "peak memory is measured"));
        if (plan->runsc)
                TRY(add_u64(&p, "MemoryMax", unit_memory_max(l, true),
                            "strong tier: memory_mb for the program plus gVisor's own (STRONG_MEMORY_OVERHEAD_MB)"));
        else
                TRY(add_u64(&p, "MemoryMax", unit_memory_max(l, false), "memory_mb: the OOM killer ends the program at the limit"));
        TRY(add_u64(&p, "MemorySwapMax", 0, "no swap: a memory bomb cannot slow the host by swapping (cgroup v2)"));
        TRY(add_bool(&p, "CPUAccounting", true, "cpu time is measured"));
        TRY(add_u64(&p, "CPUQuotaPerSecUSec", (uint64_t) llround(l->cpu_cores * (double) USEC_PER_SEC),
                    "cpu_cores: a fractional share of CPU time"));
        TRY(add_bool(&p, "TasksAccounting", true, "task count is measured"));
        if (plan->runsc)
                /* runsc itself crashes (output lost) when the cgroup's limit stops its own threads:
                 * the program's limit is RLIMIT_NPROC inside gVisor, this one is gVisor's room. */
                TRY(add_u64(&p, "TasksMax", unit_tasks_max(l, true),
                            "strong tier: tasks is RLIMIT_NPROC inside gVisor; each of its processes costs gVisor "
                            "2 or more host tasks (a stub and its tracer thread), plus its own"));
        else
                TRY(add_u64(&p, "TasksMax", unit_tasks_max(l, false), "a fork bomb stops at the task limit"));
        TRY(add_u64(&p, "RuntimeMaxUSec", l->timeout_ms * USEC_PER_MSEC + 2 * USEC_PER_SEC,
                    "backstop 2 s after timeout_ms, where sandbox-exec kills the program and reports"));
        TRY(add_string(&p, "OOMPolicy", "continue", "an OOM kill ends the program, not sandbox-exec, which reports it"));
        TRY(add_string(&p, "KillMode", "control-group", "every process of the execution dies with it"));
        TRY(add_i32(&p, "KillSignal", SIGKILL, "the deadline is hard: a program that ignores SIGTERM dies anyway"));
        TRY(add_bool(&p, "SendSIGKILL", true, "belt and braces"));
        TRY(add_u64(&p, "TimeoutStopUSec", USEC_PER_SEC, "never the 90 s default"));
        TRY(add_u64(&p, "LimitCORE", 0, "no core dumps"));
        TRY(add_u64(&p, "LimitCORESoft", 0, "no core dumps"));
        TRY(add_u64(&p, "LimitNOFILE", plan->nofile, "bounded file descriptors"));
        TRY(add_u64(&p, "LimitNOFILESoft", plan->nofile, "bounded file descriptors"));
        TRY(add_i32(&p, "OOMScoreAdjust", 500, "on global memory pressure, sandboxes die before host services"));
#undef TRY

        *ret = p;
        return 0;
fail:
        unit_props_done(&p);
        return r;
}

int unit_props_claim_limits(const Limits *l, bool strong, UnitProps *ret) {
        UnitProps p = {};
        int r = 0;

        r |= add_u64(&p, "MemoryMax", unit_memory_max(l, strong), "memory_mb of the claim");
        r |= add_u64(&p, "CPUQuotaPerSecUSec", (uint64_t) llround(l->cpu_cores * (double) USEC_PER_SEC),
                     "cpu_cores of the claim");
        r |= add_u64(&p, "TasksMax", unit_tasks_max(l, strong), "tasks of the claim");
        if (r < 0) {
                unit_props_done(&p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

void unit_props_done(UnitProps *p) {
        for (size_t i = 0; i < p->n; i++) {
                UnitProp *x = &p->props[i];
                free(x->s);
                strv_free(x->strv);
        }
        free(p->props);
        *p = (UnitProps) {};
}

const UnitProp *unit_props_find(const UnitProps *p, const char *name) {
        for (size_t i = 0; i < p->n; i++)
                if (streq(p->props[i].name, name))
                        return &p->props[i];
        return NULL;
}

static const char *const network_env[] = {
        "http_proxy=" PROXY_URL,
        "HTTP_PROXY=" PROXY_URL,
        "https_proxy=" PROXY_URL,
        "HTTPS_PROXY=" PROXY_URL,
        "no_proxy=localhost,127.0.0.1,::1",
        "NO_PROXY=localhost,127.0.0.1,::1",
        "PIP_TARGET=" SANDBOX_WORKSPACE "/" SANDBOX_PKGS_DIR,
        "PYTHONPATH=" SANDBOX_WORKSPACE "/" SANDBOX_PKGS_DIR,
        "npm_config_cache=/tmp/.npm",
};

const char *sandbox_network_env(size_t i) {
        return i < ELEMENTSOF(network_env) ? network_env[i] : NULL;
}

char *proxy_unit_name(const char *execution_id, const char *suffix) {
        uint8_t md[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        char hex[33], *s;

        if (EVP_Digest(execution_id, strlen(execution_id), md, &len, EVP_sha256(), NULL) != 1 || len < 16)
                return NULL;
        for (size_t i = 0; i < 16; i++)
                snprintf(hex + 2 * i, 3, "%02x", md[i]);
        if (asprintf(&s, "sandboxd-proxy-%s%s", hex, suffix) < 0)
                return NULL;
        return s;
}

int proxy_fd_name(const char *execution_id, char *buf, size_t n) {
        _cleanup_free_ char *unit = proxy_unit_name(execution_id, "");
        int k;

        if (!unit)
                return -ENOMEM;
        k = snprintf(buf, n, "proxy-%s", unit + strlen("sandboxd-proxy-"));
        return k < 0 || (size_t) k >= n ? -ENAMETOOLONG : 0;
}

int unit_props_proxy_socket(const ProxyPlan *plan, UnitProps *ret) {
        _cleanup_free_ char *desc = NULL;
        UnitProps p = {};
        UnitProp *x;
        int r = 0;

        if (asprintf(&desc, "sandboxd egress proxy socket of %s", plan->execution_id) < 0)
                return -ENOMEM;
        r |= add_string(&p, "Description", desc, "what systemctl status shows");
        x = add(&p, "Listen", PK_TMPFS, "bound by systemd inside the namespace the execution joins");
        if (!x || strv_extend(&x->strv, &x->n, "Stream") < 0 || strv_extend(&x->strv, &x->n, PROXY_LISTEN_ADDRESS) < 0)
                r = -ENOMEM;
        r |= add_bool(&p, "Accept", false, "one proxy per execution gets the listening socket (Accept=yes does "
                                            "not work for transient units on systemd 252)");
        r |= add_bool(&p, "PrivateNetwork", true,
                      "a fresh network namespace, owned by this unit's runtime, that the execution unit joins");
        r |= add_string(&p, "CollectMode", "inactive-or-failed", "nothing of it stays once stopped");
        if (r < 0) {
                unit_props_done(&p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

static int add_arg(UnitProp *x, const char *key, const char *value) {
        _cleanup_free_ char *a = NULL;

        if (asprintf(&a, "--%s=%s", key, value) < 0)
                return -ENOMEM;
        return strv_extend(&x->strv, &x->n, a);
}

static int add_arg_u64(UnitProp *x, const char *key, uint64_t v) {
        char buf[32];

        snprintf(buf, sizeof(buf), "%" PRIu64, v);
        return add_arg(x, key, buf);
}

/* The proxy parses hostile bytes: an unprivileged process with no file system, no capabilities, its
 * own system call filter, sockets of the inet families only. */
int unit_props_proxy_service(const ProxyPlan *plan, UnitProps *ret) {
        static const char *const families[] = { "AF_INET", "AF_INET6", NULL };
        static const char *const syscalls[] = { "@system-service", NULL };
        static const char *const native[] = { "native", NULL };
        _cleanup_free_ char *desc = NULL;
        UnitProps p = {};
        UnitProp *x;
        int r = 0;

        if (asprintf(&desc, "sandboxd egress proxy of %s", plan->execution_id) < 0)
                return -ENOMEM;
        r |= add_string(&p, "Description", desc, "what systemctl status shows");
        x = add(&p, "ExecStart", PK_EXEC, "sandboxd-proxy with the execution's allowlist and the caps");
        if (!x || !(x->s = strdup(plan->proxy)) || strv_extend(&x->strv, &x->n, plan->proxy) < 0 ||
            add_arg(x, "execution-id", plan->execution_id) < 0)
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && x && i < plan->n_allow; i++)
                r = add_arg(x, "allow", plan->allow[i]);
        for (size_t i = 0; r >= 0 && x && i < plan->n_permit; i++)
                r = add_arg(x, "permit", plan->permit[i]);
        for (size_t i = 0; r >= 0 && x && i < plan->n_hosts; i++)
                r = add_arg(x, "host", plan->hosts[i]);
        if (r >= 0 && x)
                r = add_arg_u64(x, "max-bytes", plan->max_bytes) < 0 ||
                    add_arg_u64(x, "max-connections", plan->max_connections) < 0 ||
                    add_arg_u64(x, "connect-timeout-ms", plan->connect_timeout_ms) < 0 ||
                    add_arg_u64(x, "idle-timeout-ms", plan->idle_timeout_ms) < 0 ||
                    add_arg_u64(x, "head-timeout-ms", plan->head_timeout_ms) < 0 ? -ENOMEM : 0;
        r |= add_string(&p, "Type", "simple", "nothing to wait for");
        if (plan->socket_unit) {
                const char *const units[] = { plan->socket_unit, NULL };

                r |= add_strv(&p, "Requires", units, "its listening socket is started first, and stops with it");
                r |= add_strv(&p, "After", units, "the socket is bound (in its namespace) before the proxy runs");
        }
        r |= add_string(&p, "Slice", "sandboxd.slice", "with the executions it serves");
        r |= add_string(&p, "CollectMode", "inactive-or-failed", "nothing of it stays once stopped");
        r |= add_fd(&p, "StandardOutputFileDescriptor", plan->stdout_fd,
                    "the event lines, one per connection, to sandboxd (the record and the journal)");
        /* With a descriptor for stdout, systemd 252 gives stderr the same one unless it has its own
         * (StandardError=journal is not enough): the diagnostics would be read as event lines. */
        if (plan->stderr_fd >= 0)
                r |= add_fd(&p, "StandardErrorFileDescriptor", plan->stderr_fd,
                            "its own diagnostics, each naming the execution, to the journal (a stream of ours)");
        else
                r |= add_string(&p, "StandardError", "journal", "its own diagnostics, each naming the execution");
        r |= add_bool(&p, "DynamicUser", true, "an unprivileged UID of its own, never root, never the program's");
        /* No file system: an empty root (read-only: DynamicUser= implies ProtectSystem=strict) with
         * what the loader, c-ares and the proxy itself read. The host's /run (its sockets), /etc,
         * /var, /home do not exist for it. (systemd 252 ignores TemporaryFileSystem=/.) */
        r |= add_string(&p, "RootDirectory", plan->root,
                        "an empty directory as /: the host's tree, /run's sockets included, does not exist for it");
        x = add(&p, "BindReadOnlyPaths", PK_BINDS, "the binary, its libraries and the resolver's configuration, read-only");
        if (!x || bind_push(x, "/usr", "/usr", false) < 0 ||
            /* The ELF interpreter's path; the host's /lib64 may be a link to /usr/lib64 (or absent). */
            bind_push(x, "/lib64", "/lib64", true) < 0 || bind_push(x, "/lib", "/lib", true) < 0 ||
            bind_push(x, "/etc/resolv.conf", "/etc/resolv.conf", true) < 0 ||
            /* An empty /sys: MountAPIVFS= would show the host's devices (a bind outranks its sysfs). */
            bind_push(x, plan->empty, "/sys", false) < 0 ||
            (strncmp(plan->proxy, "/usr/", 5) != 0 && bind_push(x, plan->proxy, plan->proxy, false) < 0))
                r = -ENOMEM;
        r |= add_bool(&p, "MountAPIVFS", true, "a /proc of its own (only its own processes: ProcSubset=, ProtectProc=) and /dev");
        r |= add_string(&p, "ProcSubset", "pid", "no system-wide /proc files");
        r |= add_bool(&p, "PrivateDevices", true, "no device nodes");
        r |= add_bool(&p, "PrivateIPC", true, "no SysV IPC or POSIX message queues of the host");
        r |= add_string(&p, "ProtectProc", "invisible", "other processes invisible");
        /* Not ProtectKernelTunables= nor ProtectControlGroups=: what they make read-only is not there
         * (ProcSubset=pid leaves no /proc/sys; /sys is empty, without the cgroupfs the latter wants). */
        r |= add_bool(&p, "ProtectKernelModules", true, "no module loading");
        r |= add_bool(&p, "ProtectKernelLogs", true, "no kernel log");
        r |= add_bool(&p, "ProtectClock", true, "the clock cannot be set");
        r |= add_bool(&p, "ProtectHostname", true, "the host name cannot be changed");
        r |= add_bool(&p, "NoNewPrivileges", true, "setuid binaries and file capabilities grant nothing");
        r |= add_u64(&p, "CapabilityBoundingSet", 0, "no capability at all");
        r |= add_u64(&p, "AmbientCapabilities", 0, "nothing passed on");
        r |= add_bool(&p, "RestrictSUIDSGID", true, "cannot create setuid/setgid files");
        r |= add_u64(&p, "RestrictNamespaces", 0, "no namespace can be created or joined");
        r |= add_bool(&p, "LockPersonality", true, "the execution domain cannot be changed");
        r |= add_bool(&p, "MemoryDenyWriteExecute", true, "no writable and executable memory: no injected code");
        r |= add_bool(&p, "RestrictRealtime", true, "no realtime scheduling");
        r |= add_bstrv(&p, "RestrictAddressFamilies", true, families,
                       "TCP to servers over IPv4/IPv6 (DNS too); no unix sockets (its stderr is passed in), netlink, packet, ...");
        r |= add_bstrv(&p, "SystemCallFilter", true, syscalls, "systemd's allow-list for ordinary services");
        r |= add_strv(&p, "SystemCallArchitectures", native, "no 32-bit or x32 system call entry points");
        r |= add_bool(&p, "MemoryAccounting", true, "its memory is measured");
        r |= add_u64(&p, "MemoryMax", plan->memory_max, "its relay buffers at their largest and the rest (proxy_memory_max())");
        r |= add_u64(&p, "TasksMax", 16, "one thread, and c-ares");
        r |= add_u64(&p, "LimitNOFILE", 2 * plan->max_connections + 64,
                     "two sockets per connection (client, server), DNS and the journal");
        r |= add_u64(&p, "LimitNOFILESoft", 2 * plan->max_connections + 64, "the same");
        r |= add_u64(&p, "LimitCORE", 0, "no core dumps (they would hold the execution's traffic)");
        r |= add_u64(&p, "TimeoutStopUSec", 3 * USEC_PER_SEC, "SIGTERM ends every connection at once; then SIGKILL");
        if (r < 0) {
                unit_props_done(&p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}
