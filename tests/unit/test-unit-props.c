/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model/language.h"
#include "unit/sandbox-root.h"
#include "strv.h"
#include "unit/unit-props.h"
#include "util.h"

/* Each row of each table runs as its own cmocka test, named after the row, so a failure in the TAP
 * output says which rule broke. The property rows all look at one plan, built once (group setup)
 * with a secret in the test process's own environment that must not reach the sandbox. */

#define MiB (UINT64_C(1024) * 1024)

#define USR_LAYER "/var/lib/sandboxd/usr-layers/layer_1"
#define HELPER_HOST "/usr/libexec/sandboxd/sandbox-exec"
#define WORKSPACE "/run/sandboxd/workspaces/exec_1"
#define CG_MEMORY "/sys/fs/cgroup/memory/sandboxd.slice/sandboxd-exec_1.service"
#define CG_PIDS "/sys/fs/cgroup/pids/sandboxd.slice/sandboxd-exec_1.service"

static char env_a[] = "A=1";
static char env_my[] = "MY_VAR=hello world";
static char *const user_env[] = { env_a, env_my };

static const CgroupBind cgroups[] = {
        { CG_MEMORY, "memory" },
        { CG_PIDS,   "pids" },
};

static UnitPlan make_plan(const Language *l) {
        return (UnitPlan) {
                .execution_id = "exec_1",
                .language = l,
                .limits = { .timeout_ms = 30000, .memory_mb = 512, .cpu_cores = 0.5, .disk_mb = 1024, .tasks = 128 },
                .user_env = user_env,
                .n_user_env = ELEMENTSOF(user_env),
                .seed = 1234,
                .usr_layer = USR_LAYER,
                .helper = HELPER_HOST,
                .workspace = WORKSPACE,
                .cgroups = cgroups,
                .n_cgroups = ELEMENTSOF(cgroups),
                .nofile = 1000,
                .max_code_bytes = 1048576,
                .stdin_fd = 3,
                .head_bytes = 65536,
                .tail_bytes = 32768,
        };
}

static UnitProps props;

static int setup_props(_unused_ void **state) {
        UnitPlan plan = make_plan(language_find("python"));

        if (!plan.language)
                return -1;
        if (setenv("SECRET_TEST_TOKEN", "hunter2", 1) < 0)
                return -1;
        return unit_props_build(&plan, &props);
}

static int teardown_props(_unused_ void **state) {
        unit_props_done(&props);
        return 0;
}

static const UnitProp *need(const UnitProps *p, const char *name) {
        const UnitProp *x = unit_props_find(p, name);

        if (!x) {
                print_error("property %s missing\n", name);
                fail();
        }
        return x;
}

/* ---- scalar properties ---- */

typedef struct PropRow {
        const char *name;
        PropKind kind;
        bool b;
        uint64_t u;
        int32_t i;
        const char *s;
} PropRow;

#define P_BOOL(n, v)   { n, PK_BOOL, .b = v }
#define P_U64(n, v)    { n, PK_U64, .u = v }
#define P_U32(n, v)    { n, PK_U32, .u = v }
#define P_I32(n, v)    { n, PK_I32, .i = v }
#define P_STR(n, v)    { n, PK_STRING, .s = v }
#define P_FD(n, v)     { n, PK_FD, .i = v }

static const PropRow prop_rows[] = {
        /* identity and privileges */
        P_BOOL("DynamicUser", true),
        P_BOOL("NoNewPrivileges", true),
        /* sandbox-exec's: kill, setgid, setuid, setpcap, sys_admin; its children drop them all */
        P_U64("CapabilityBoundingSet", (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 21)),
        P_U64("AmbientCapabilities", 0),
        P_BOOL("RestrictSUIDSGID", true),
        /* systemd's protections of the kernel (they cover sandbox-exec too) */
        P_U64("RestrictNamespaces", 0),
        P_BOOL("LockPersonality", true),
        P_BOOL("RestrictRealtime", true),
        P_BOOL("ProtectKernelModules", true),
        P_BOOL("ProtectKernelLogs", true),
        P_BOOL("ProtectClock", true),
        P_BOOL("ProtectControlGroups", true),
        /* file system and namespaces: the execution's own tmpfs is the root */
        P_STR("RootDirectory", WORKSPACE),
        P_BOOL("MountAPIVFS", true),
        P_STR("ProtectProc", "invisible"),
        P_STR("ProcSubset", "pid"),
        P_BOOL("PrivateDevices", true),
        P_BOOL("PrivateIPC", true),
        P_BOOL("PrivateNetwork", true),
        P_BOOL("ProtectHostname", true),
        P_STR("WorkingDirectory", "/workspace"),
        P_U32("UMask", 0022),
        /* limits of the plan: 512 MB, 0.5 cores, 128 tasks, 30 s */
        P_BOOL("MemoryAccounting", true),
        P_U64("MemoryMax", 512 * MiB),
        P_U64("MemorySwapMax", 0),
        P_BOOL("CPUAccounting", true),
        P_U64("CPUQuotaPerSecUSec", 500000),
        P_BOOL("TasksAccounting", true),
        P_U64("TasksMax", 128),
        P_U64("RuntimeMaxUSec", 32000000),
        P_STR("OOMPolicy", "continue"),
        P_U64("LimitCORE", 0),
        P_U64("LimitCORESoft", 0),
        P_U64("LimitNOFILE", 1000),
        P_U64("LimitNOFILESoft", 1000),
        /* how it dies */
        P_I32("KillSignal", SIGKILL),
        P_STR("KillMode", "control-group"),
        P_BOOL("SendSIGKILL", true),
        P_I32("OOMScoreAdjust", 500),
        /* the unit itself */
        P_STR("Slice", "sandboxd.slice"),
        P_BOOL("AddRef", true),
        P_STR("CollectMode", "inactive"),
        P_STR("Type", "simple"),
        P_STR("Description", "sandboxd execution exec_1 (python)"),
        P_FD("StandardInputFileDescriptor", 3),
        P_STR("StandardOutput", "null"),
        P_STR("StandardError", "null"),
};

static void test_prop_row(void **state) {
        const PropRow *row = *state;
        const UnitProp *x = need(&props, row->name);

        assert_int_equal(x->kind, row->kind);
        switch (row->kind) {
        case PK_BOOL:
                assert_int_equal(x->b, row->b);
                break;
        case PK_U64:
        case PK_U32:
                assert_int_equal(x->u, row->u);
                break;
        case PK_I32:
                assert_int_equal(x->i, row->i);
                break;
        case PK_STRING:
                assert_non_null(x->s);
                assert_string_equal(x->s, row->s);
                break;
        case PK_FD:
                assert_int_equal(x->fd, row->i);
                break;
        default:
                fail();
        }
}

static void test_timeout_stop(_unused_ void **state) {
        const UnitProp *x = need(&props, "TimeoutStopUSec");

        assert_int_equal(x->kind, PK_U64);
        assert_true(x->u > 0);
        assert_true(x->u <= 1000000);
}

/* Every property: a reason, a unique name, a well-formed payload. */
static void test_all_props_well_formed(_unused_ void **state) {
        assert_true(props.n > 30);
        for (size_t i = 0; i < props.n; i++) {
                const UnitProp *x = &props.props[i];

                assert_non_null(x->name);
                assert_true(strlen(x->name) > 0);
                if (isempty(x->reason)) {
                        print_error("property %s has no reason\n", x->name);
                        fail();
                }
                for (size_t j = 0; j < i; j++)
                        if (streq(props.props[j].name, x->name)) {
                                print_error("property %s appears twice\n", x->name);
                                fail();
                        }
                switch (x->kind) {
                case PK_STRING:
                        assert_non_null(x->s);
                        break;
                case PK_STRV:
                case PK_EXEC:
                case PK_EXEC_EX:
                case PK_BSTRV:
                        assert_non_null(x->strv);
                        assert_null(x->strv[x->n]);
                        break;
                case PK_BINDS:
                        assert_int_equal(x->n % 3, 0);
                        assert_null(x->strv[x->n]);
                        for (size_t k = 0; k < x->n; k += 3) {
                                assert_true(x->strv[k][0] == '/');
                                assert_true(x->strv[k + 1][0] == '/');
                                assert_true(streq(x->strv[k + 2], "-") || streq(x->strv[k + 2], ""));
                        }
                        break;
                case PK_TMPFS:
                        assert_int_equal(x->n % 2, 0);
                        assert_null(x->strv[x->n]);
                        break;
                default:
                        break;
                }
        }
        assert_null(unit_props_find(&props, "NoSuchProperty"));
        assert_null(unit_props_find(&props, "dynamicuser"));
}

/* ---- limits ---- */

typedef struct LimitsRow {
        const char *name;
        Limits limits;
        uint64_t cpu_quota;      /* CPUQuotaPerSecUSec */
} LimitsRow;

static const LimitsRow limits_rows[] = {
        { "limits 0.5 cores", { 30000, 512, 0.5, 1024, 128 }, 500000 },
        { "limits 1 core", { 100, 16, 1.0, 1, 4 }, 1000000 },
        { "limits 2 cores", { 600000, 8192, 2.0, 8192, 1024 }, 2000000 },
        { "limits 0.01 cores", { 1000, 64, 0.01, 10, 8 }, 10000 },
        { "limits 0.333 cores", { 1234, 100, 0.333, 7, 5 }, 333000 },
        { "limits 1.1 cores (rounded, not truncated)", { 1234, 100, 1.1, 7, 5 }, 1100000 },
        { "limits 0.29 cores (rounded, not truncated)", { 1234, 100, 0.29, 7, 5 }, 290000 },
};

static void test_limits_row(void **state) {
        const LimitsRow *row = *state;
        UnitPlan plan = make_plan(language_find("python"));
        UnitProps p = {};
        const UnitProp *x;
        char fsize[64];
        bool found = false;

        plan.limits = row->limits;
        assert_int_equal(unit_props_build(&plan, &p), 0);

        assert_int_equal(need(&p, "MemoryMax")->u, row->limits.memory_mb * MiB);
        assert_int_equal(need(&p, "MemorySwapMax")->u, 0);
        assert_int_equal(need(&p, "CPUQuotaPerSecUSec")->u, row->cpu_quota);
        assert_int_equal(need(&p, "TasksMax")->u, row->limits.tasks);
        assert_int_equal(need(&p, "RuntimeMaxUSec")->u, row->limits.timeout_ms * 1000 + 2000000);

        /* No single file larger than the whole disk allowance. */
        snprintf(fsize, sizeof(fsize), "--rlimit-fsize=%" PRIu64, row->limits.disk_mb * MiB);
        x = need(&p, "ExecStartEx");
        for (size_t i = 0; i < x->n; i++)
                if (streq(x->strv[i], fsize))
                        found = true;
        assert_true(found);

        unit_props_done(&p);
        assert_int_equal(p.n, 0);
        assert_null(p.props);
}

/* ---- disk: /dev/shm and the workspace share disk_mb ---- */

static void test_disk_split(_unused_ void **state) {
        static const uint64_t disks[] = { 1, 2, 3, 7, 8, 100, 511, 512, 513, 1000, 1024, 8192, 1 << 20 };

        for (size_t i = 0; i < ELEMENTSOF(disks); i++) {
                Limits l = { .disk_mb = disks[i] };
                uint64_t shm = sandbox_shm_bytes(&l), ws = sandbox_workspace_bytes(&l);

                if (shm + ws != disks[i] * MiB || shm == 0 || ws == 0 || shm > 64 * MiB || shm > disks[i] * MiB / 8) {
                        print_error("disk_mb=%" PRIu64 ": shm=%" PRIu64 " workspace=%" PRIu64 "\n", disks[i], shm, ws);
                        fail();
                }
                assert_true(ws >= shm);
        }
        /* The cap: beyond 512 MB, /dev/shm stays at 64 MiB. */
        assert_int_equal(sandbox_shm_bytes(&(Limits) { .disk_mb = 8192 }), 64 * MiB);
        assert_int_equal(sandbox_shm_bytes(&(Limits) { .disk_mb = 512 }), 64 * MiB);
        assert_int_equal(sandbox_shm_bytes(&(Limits) { .disk_mb = 8 }), 1 * MiB);
}

static void test_tmpfs_shm(_unused_ void **state) {
        static const uint64_t disks[] = { 1, 64, 1024, 8192 };

        for (size_t i = 0; i < ELEMENTSOF(disks); i++) {
                UnitPlan plan = make_plan(language_find("python"));
                _cleanup_free_ char *size = NULL;
                UnitProps p = {};
                const UnitProp *x;
                const char *opt;

                plan.limits.disk_mb = disks[i];
                assert_int_equal(unit_props_build(&plan, &p), 0);
                x = need(&p, "TemporaryFileSystem");
                assert_int_equal(x->kind, PK_TMPFS);
                assert_int_equal(x->n % 2, 0);
                opt = NULL;
                for (size_t k = 0; k < x->n; k += 2) {
                        /* Each tmpfs once, none over the writable places. */
                        assert_false(streq(x->strv[k], "/workspace") || streq(x->strv[k], "/tmp"));
                        if (streq(x->strv[k], "/dev/shm")) {
                                assert_null(opt);
                                opt = x->strv[k + 1];
                        }
                }
                assert_non_null(opt);
                assert_non_null(strstr(opt, "nosuid"));
                assert_non_null(strstr(opt, "nodev"));

                /* size= is there exactly once and equals sandbox_shm_bytes(). */
                assert_true(asprintf(&size, "size=%" PRIu64, sandbox_shm_bytes(&plan.limits)) > 0);
                opt = strstr(opt, "size=");
                assert_non_null(opt);
                assert_null(strstr(opt + 1, "size="));
                assert_true(strncmp(opt, size, strlen(size)) == 0);
                assert_true(opt[strlen(size)] == 0 || opt[strlen(size)] == ',');
                unit_props_done(&p);
        }
}

/* ---- bind mounts ---- */

static bool has_bind(const UnitProp *x, const char *src, const char *dst, const char *flag) {
        for (size_t i = 0; i + 2 < x->n; i += 3)
                if (streq(x->strv[i], src) && streq(x->strv[i + 1], dst) && streq(x->strv[i + 2], flag))
                        return true;
        return false;
}

static bool path_is_or_under(const char *p, const char *dir) {
        const char *rest = startswith(p, dir);

        return rest && (*rest == 0 || *rest == '/');
}

static void test_bind_read_only(_unused_ void **state) {
        static const char *const never[] = { "/etc", "/root", "/home", "/run/dbus", "/run/systemd", "/var/lib/sandboxd",
                                             "/proc", "/dev", "/run/sandboxd" };
        const UnitProp *x = need(&props, "BindReadOnlyPaths");

        assert_int_equal(x->kind, PK_BINDS);
        assert_true(has_bind(x, "/usr", "/usr", ""));
        assert_true(has_bind(x, WORKSPACE "/sys", "/sys", ""));
        assert_true(has_bind(x, HELPER_HOST, SANDBOX_HELPER, ""));
        assert_true(has_bind(x, USR_LAYER, SANDBOX_USR_LAYER, ""));
        assert_true(has_bind(x, CG_MEMORY, SANDBOX_CGROUP_DIR "/memory", "-"));
        assert_true(has_bind(x, CG_PIDS, SANDBOX_CGROUP_DIR "/pids", "-"));

        for (size_t i = 0; i < x->n; i += 3) {
                const char *src = x->strv[i], *dst = x->strv[i + 1];

                /* Never the root, never a whole tree of secrets, nothing of the host's /etc (the
                 * sandbox's /etc is written into its own root). */
                assert_false(streq(src, "/"));
                assert_false(streq(dst, "/"));
                for (size_t k = 0; k < ELEMENTSOF(never); k++)
                        if ((path_is_or_under(src, never[k]) && !streq(src, USR_LAYER) &&
                             !path_is_or_under(src, WORKSPACE)) ||
                            path_is_or_under(dst, never[k])) {
                                print_error("read-only bind %s -> %s exposes %s\n", src, dst, never[k]);
                                fail();
                        }
                /* Whatever is bound for sandbox-exec alone lands below /run, which it empties. */
                if (!streq(dst, "/usr") && !streq(dst, "/sys"))
                        assert_true(path_is_or_under(dst, "/run"));
                /* Nothing is mounted over the writable places. */
                assert_false(path_is_or_under(dst, "/workspace"));
                assert_false(path_is_or_under(dst, "/tmp"));
        }
}

/* Without a layer there is no overlay to ask for, and no bind for it. */
static void test_no_usr_layer(_unused_ void **state) {
        UnitPlan plan = make_plan(language_find("python"));
        UnitProps p = {};
        const UnitProp *x;

        plan.usr_layer = NULL;
        assert_int_equal(unit_props_build(&plan, &p), 0);
        x = need(&p, "BindReadOnlyPaths");
        for (size_t i = 0; i < x->n; i += 3)
                assert_false(streq(x->strv[i + 1], SANDBOX_USR_LAYER));
        x = need(&p, "ExecStartEx");
        for (size_t i = 0; i < x->n; i++)
                assert_null(startswith(x->strv[i], "--usr-layer"));
        unit_props_done(&p);
}

/* The bench's ablation: the same plan without systemd's kernel protections has none of them, and
 * nothing else differs. */
static void test_kernel_protection_ablation(_unused_ void **state) {
        static const char *const names[] = { "RestrictNamespaces", "LockPersonality", "RestrictRealtime",
                                             "RestrictAddressFamilies", "SystemCallArchitectures",
                                             "ProtectKernelModules", "ProtectKernelLogs",
                                             "ProtectClock", "ProtectControlGroups" };
        UnitPlan plan = make_plan(language_find("python"));
        UnitProps p = {};
        const UnitProp *x;

        x = need(&props, "RestrictAddressFamilies");
        assert_int_equal(x->kind, PK_BSTRV);
        assert_true(x->b);
        assert_int_equal(x->n, 1);
        assert_string_equal(x->strv[0], "AF_UNIX");
        x = need(&props, "SystemCallArchitectures");
        assert_int_equal(x->kind, PK_STRV);
        assert_int_equal(x->n, 1);
        assert_string_equal(x->strv[0], "native");

        plan.no_kernel_protection = true;
        assert_int_equal(unit_props_build(&plan, &p), 0);
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                assert_non_null(unit_props_find(&props, names[i]));
                assert_null(unit_props_find(&p, names[i]));
        }
        assert_int_equal(p.n + ELEMENTSOF(names), props.n);
        unit_props_done(&p);
}

/* /run is sandbox-exec's: writable by root only, room for the largest source. */
static void test_run_tmpfs(_unused_ void **state) {
        const UnitProp *x = need(&props, "TemporaryFileSystem");
        const char *opt = NULL;
        _cleanup_free_ char *size = NULL;

        for (size_t k = 0; k < x->n; k += 2)
                if (streq(x->strv[k], "/run"))
                        opt = x->strv[k + 1];
        assert_non_null(opt);
        assert_non_null(strstr(opt, "mode=0755"));
        assert_non_null(strstr(opt, "noexec"));
        assert_null(strstr(opt, "ro,"));
        assert_true(asprintf(&size, "size=%" PRIu64, UINT64_C(1048576) + 1024 * 1024) > 0);
        assert_non_null(strstr(opt, size));
}

static void test_bind_writable(_unused_ void **state) {
        const UnitProp *x = need(&props, "BindPaths");

        assert_int_equal(x->kind, PK_BINDS);
        /* Exactly these three, nothing else writable. */
        assert_int_equal(x->n, 9);
        assert_true(has_bind(x, WORKSPACE "/workspace", "/workspace", ""));
        assert_true(has_bind(x, WORKSPACE "/tmp", "/tmp", ""));
        assert_true(has_bind(x, WORKSPACE "/tmp", "/var/tmp", ""));
}

/* A session's run: its workspace and /tmp are StateDirectory= (systemd re-owns them to the run's
 * dynamic UID), mode 0700, under an empty /var/lib tmpfs; a single-use run has none of that. */
static void test_session_state_dirs(_unused_ void **state) {
        UnitPlan plan = make_plan(language_find("python"));
        UnitProps p = {};
        const UnitProp *x;
        bool var_lib = false;

        assert_int_equal(unit_props_build(&plan, &p), 0);
        assert_null(unit_props_find(&p, "StateDirectory"));
        assert_null(unit_props_find(&p, "StateDirectoryMode"));
        x = need(&p, "TemporaryFileSystem");
        for (size_t k = 0; k < x->n; k += 2)
                assert_false(streq(x->strv[k], "/var/lib"));
        unit_props_done(&p);

        plan.workspace = "/var/lib/private/sandboxd/sessions/sess_x";
        plan.session_state_dir = "sandboxd/sessions/sess_x";
        assert_int_equal(unit_props_build(&plan, &p), 0);
        x = need(&p, "StateDirectory");
        assert_int_equal(x->kind, PK_STRV);
        assert_int_equal(x->n, 2);
        assert_string_equal(x->strv[0], "sandboxd/sessions/sess_x/workspace");
        assert_string_equal(x->strv[1], "sandboxd/sessions/sess_x/tmp");
        x = need(&p, "StateDirectoryMode");
        assert_int_equal(x->kind, PK_U32);
        assert_int_equal(x->u, 0700);
        x = need(&p, "TemporaryFileSystem");
        for (size_t k = 0; k < x->n; k += 2)
                if (streq(x->strv[k], "/var/lib")) {
                        var_lib = true;
                        assert_null(strstr(x->strv[k + 1], "ro"));      /* systemd makes mount points in it */
                }
        assert_true(var_lib);
        /* The binds come from the session's mount, as for any workspace. */
        x = need(&p, "BindPaths");
        assert_string_equal(x->strv[0], "/var/lib/private/sandboxd/sessions/sess_x/workspace");
        assert_string_equal(x->strv[1], "/workspace");
        unit_props_done(&p);
}

static void test_no_cgroups(_unused_ void **state) {
        UnitPlan plan = make_plan(language_find("python"));
        UnitProps p = {};
        const UnitProp *x;

        plan.cgroups = NULL;
        plan.n_cgroups = 0;
        assert_int_equal(unit_props_build(&plan, &p), 0);
        x = need(&p, "BindReadOnlyPaths");
        for (size_t i = 0; i < x->n; i += 3)
                assert_false(path_is_or_under(x->strv[i + 1], SANDBOX_CGROUP_DIR));
        unit_props_done(&p);
}

/* ---- ExecStart ---- */

static ssize_t argv_index(const UnitProp *x, const char *arg) {
        for (size_t i = 0; i < x->n; i++)
                if (streq(x->strv[i], arg))
                        return (ssize_t) i;
        return -1;
}

static void check_exec(const UnitProp *x, const Language *l, const UnitPlan *plan) {
        _cleanup_free_ char *max_source = NULL, *nofile = NULL;
        size_t n_run = 0, n_compile = 0, n_compile_args = 0;
        ssize_t dashes;

        assert_int_equal(x->kind, PK_EXEC_EX);
        assert_string_equal(x->flag, "no-setuid");   /* ExecStart=!: root, the dynamic user allocated */
        assert_string_equal(x->s, SANDBOX_HELPER);
        assert_true(x->n >= 5);
        assert_string_equal(x->strv[0], SANDBOX_HELPER);
        assert_string_equal(x->strv[1], "--source");
        assert_string_equal(x->strv[2], l->source_name);

        assert_true(asprintf(&max_source, "--max-source=%" PRIu64, plan->max_code_bytes) > 0);
        assert_true(asprintf(&nofile, "--rlimit-nofile=%" PRIu64, plan->nofile) > 0);
        dashes = argv_index(x, "--");
        assert_true(dashes > 2);
        assert_true(argv_index(x, max_source) > 2 && argv_index(x, max_source) < dashes);
        assert_true(argv_index(x, nofile) > 2 && argv_index(x, nofile) < dashes);
        assert_true(argv_index(x, "--cgroup-dir=" SANDBOX_CGROUP_DIR) > 2);
        assert_true(argv_index(x, "--cgroup-dir=" SANDBOX_CGROUP_DIR) < dashes);

        assert_true(argv_index(x, "--tidy-mounts") > 2 && argv_index(x, "--tidy-mounts") < dashes);
        assert_true(argv_index(x, "--usr-layer=" SANDBOX_USR_LAYER) > 2 &&
                    argv_index(x, "--usr-layer=" SANDBOX_USR_LAYER) < dashes);
        assert_int_equal(argv_index(x, "--syntax-fd"), -1);

        /* The syntax checker, argument by argument and in order, before "--". */
        {
                size_t n_check = 0, n_check_args = 0;

                for (const char *const *a = l->check_argv; a && *a; a++)
                        n_check++;
                for (ssize_t i = 0; i < dashes; i++) {
                        const char *v = startswith(x->strv[i], "--check-arg=");
                        if (!v)
                                continue;
                        assert_true(n_check_args < n_check);
                        assert_string_equal(v, l->check_argv[n_check_args]);
                        n_check_args++;
                }
                assert_int_equal(n_check_args, n_check);
        }

        /* The compile step, argument by argument and in order, before "--". */
        for (const char *const *a = l->compile_argv; a && *a; a++)
                n_compile++;
        for (ssize_t i = 0; i < dashes; i++) {
                const char *v = startswith(x->strv[i], "--compile-arg=");
                if (!v)
                        continue;
                assert_true(n_compile_args < n_compile);
                assert_string_equal(v, l->compile_argv[n_compile_args]);
                n_compile_args++;
        }
        assert_int_equal(n_compile_args, n_compile);

        /* The run argv is the whole tail after "--". */
        for (const char *const *a = l->run_argv; *a; a++)
                n_run++;
        assert_int_equal(x->n, (size_t) dashes + 1 + n_run);
        for (size_t i = 0; i < n_run; i++)
                assert_string_equal(x->strv[dashes + 1 + i], l->run_argv[i]);
}

static void test_exec_python(_unused_ void **state) {
        const Language *l = language_find("python");
        UnitPlan plan = make_plan(l);
        const UnitProp *x = need(&props, "ExecStartEx");

        check_exec(x, l, &plan);
        assert_string_equal(x->strv[2], "main.py");
        assert_true(argv_index(x, "--check-arg=-I") > 0);
        assert_string_equal(x->strv[x->n - 1], SANDBOX_CODE_DIR "/main.py");
        assert_null(unit_props_find(&props, "ExecStart"));
}

static void test_exec_bash(_unused_ void **state) {
        const Language *l = language_find("bash");
        UnitPlan plan = make_plan(l);
        UnitProps p = {};
        const UnitProp *x;
        ssize_t a, b, c;

        assert_int_equal(unit_props_build(&plan, &p), 0);
        x = need(&p, "ExecStartEx");
        check_exec(x, l, &plan);
        a = argv_index(x, "--compile-arg=/bin/bash");
        b = argv_index(x, "--compile-arg=-n");
        c = argv_index(x, "--compile-arg=" SANDBOX_CODE_DIR "/main.sh");
        assert_true(a > 0 && a < b && b < c && c < argv_index(x, "--"));
        assert_string_equal(x->strv[x->n - 2], "/bin/bash");
        assert_string_equal(x->strv[x->n - 1], SANDBOX_CODE_DIR "/main.sh");
        unit_props_done(&p);
}

static void test_exec_args(_unused_ void **state) {
        /* After the run command, in order, each '$' doubled (systemd's literal '$' in an ExecStart=
         * word: it expands $NAME and ${NAME} there); '%' as given (specifiers are a unit file's). */
        static char *const args[] = { "a b", "", "$HOME", "${X}$", "%n", NULL };
        static const char *const want[] = { "a b", "", "$$HOME", "$${X}$$", "%n" };
        const Language *l = language_find("bash");
        UnitPlan plan = make_plan(l);
        UnitProps p = {};
        const UnitProp *x;

        plan.args = args;
        plan.n_args = ELEMENTSOF(want);
        assert_int_equal(unit_props_build(&plan, &p), 0);
        x = need(&p, "ExecStartEx");
        assert_true(x->n > ELEMENTSOF(want) + 2);
        assert_string_equal(x->strv[x->n - ELEMENTSOF(want) - 2], "/bin/bash");
        assert_string_equal(x->strv[x->n - ELEMENTSOF(want) - 1], SANDBOX_CODE_DIR "/main.sh");
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                assert_string_equal(x->strv[x->n - ELEMENTSOF(want) + i], want[i]);
        unit_props_done(&p);

        /* A warm unit's command line never has them (warm-policy.h sends such runs cold). */
        plan.warm = true;
        assert_int_equal(unit_props_build(&plan, &p), 0);
        x = need(&p, "ExecStartEx");
        assert_string_equal(x->strv[x->n - 1], SANDBOX_CODE_DIR "/main.sh");
        unit_props_done(&p);
}

static void test_exec_every_language(_unused_ void **state) {
        for (size_t i = 0; i < language_count(); i++) {
                const Language *l = language_get(i);
                UnitPlan plan = make_plan(l);
                UnitProps p = {};

                assert_int_equal(unit_props_build(&plan, &p), 0);
                check_exec(need(&p, "ExecStartEx"), l, &plan);
                unit_props_done(&p);
        }
        assert_null(language_get(language_count()));
}

/* ---- Environment ---- */

static size_t key_len(const char *assignment) {
        return strcspn(assignment, "=");
}

static void check_unique_keys(char *const *env, size_t n) {
        for (size_t i = 0; i < n; i++) {
                assert_non_null(strchr(env[i], '='));
                for (size_t j = 0; j < i; j++)
                        if (key_len(env[i]) == key_len(env[j]) && strncmp(env[i], env[j], key_len(env[i])) == 0) {
                                print_error("duplicate key: '%s' and '%s'\n", env[j], env[i]);
                                fail();
                        }
        }
}

static ssize_t env_index(char *const *env, size_t n, const char *assignment) {
        for (size_t i = 0; i < n; i++)
                if (streq(env[i], assignment))
                        return (ssize_t) i;
        return -1;
}

static void test_environment(_unused_ void **state) {
        static const char *const expect[] = {
                "PATH=/usr/bin:/bin",
                "HOME=/workspace",
                "PWD=/workspace",
                "TMPDIR=/tmp",
                "USER=sandbox",
                "LOGNAME=sandbox",
                "TZ=UTC",
                "LANG=C.UTF-8",
                "LC_ALL=C.UTF-8",
                "PYTHONHASHSEED=0",
                "SANDBOX_SEED=1234",
                "PYTHONDONTWRITEBYTECODE=1",
                "A=1",
                "MY_VAR=hello world",
        };
        const UnitProp *x = need(&props, "Environment");

        assert_int_equal(x->kind, PK_STRV);
        assert_non_null(getenv("SECRET_TEST_TOKEN"));

        /* The required ones are there... */
        assert_true(env_index(x->strv, x->n, "TZ=UTC") >= 0);
        assert_true(env_index(x->strv, x->n, "LANG=C.UTF-8") >= 0);
        assert_true(env_index(x->strv, x->n, "PYTHONHASHSEED=0") >= 0);
        assert_true(env_index(x->strv, x->n, "SANDBOX_SEED=1234") >= 0);
        assert_true(env_index(x->strv, x->n, "HOME=/workspace") >= 0);
        /* ... the user's come after all the fixed ones ... */
        assert_true(env_index(x->strv, x->n, "A=1") > env_index(x->strv, x->n, "SANDBOX_SEED=1234"));
        assert_true(env_index(x->strv, x->n, "MY_VAR=hello world") > env_index(x->strv, x->n, "A=1"));
        /* ... and nothing else: in particular nothing of this process's own environment. */
        for (size_t i = 0; i < x->n; i++)
                assert_null(strstr(x->strv[i], "SECRET_TEST_TOKEN"));
        assert_int_equal(x->n, ELEMENTSOF(expect));
        for (size_t i = 0; i < ELEMENTSOF(expect); i++)
                assert_string_equal(x->strv[i], expect[i]);
        check_unique_keys(x->strv, x->n);
}

static void test_environment_dedupe(_unused_ void **state) {
        static const char *const lang_env[] = { "TZ=Europe/Berlin", "HOME=/tmp", "FOO=1", "FOO=2", "BAR=x", NULL };
        static char foo[] = "FOO=3", zed[] = "ZED=z";
        static char *const uenv[] = { foo, zed };
        Language l = *language_find("python");
        UnitPlan plan = make_plan(&l);
        char **env = NULL;
        size_t n = 0;
        ssize_t tz;

        l.env = lang_env;
        plan.user_env = uenv;
        plan.n_user_env = ELEMENTSOF(uenv);
        plan.seed = 0;
        assert_int_equal(sandbox_environment(&plan, &env, &n), 0);
        assert_null(env[n]);

        check_unique_keys(env, n);
        /* A later assignment replaces an earlier one in place: the fixed order stays. */
        tz = env_index(env, n, "TZ=Europe/Berlin");
        assert_int_equal(tz, 6);
        assert_int_equal(env_index(env, n, "HOME=/tmp"), 1);
        assert_true(env_index(env, n, "FOO=3") >= 0);
        assert_true(env_index(env, n, "BAR=x") >= 0);
        assert_true(env_index(env, n, "ZED=z") > env_index(env, n, "BAR=x"));
        assert_true(env_index(env, n, "SANDBOX_SEED=0") >= 0);
        assert_int_equal(env_index(env, n, "TZ=UTC"), -1);
        assert_int_equal(env_index(env, n, "FOO=1"), -1);
        assert_int_equal(env_index(env, n, "FOO=2"), -1);
        /* A prefix of another name is a different name. */
        assert_true(env_index(env, n, "PATH=/usr/bin:/bin") >= 0);
        strv_free(env);

        /* The same through unit_props_build. */
        UnitProps p = {};
        assert_int_equal(unit_props_build(&plan, &p), 0);
        check_unique_keys(need(&p, "Environment")->strv, need(&p, "Environment")->n);
        unit_props_done(&p);
}

static void test_environment_prefix_names(_unused_ void **state) {
        /* "PATHX" and "PAT" are not "PATH": no replacement. */
        static char a[] = "PATHX=1", b[] = "PAT=2", c[] = "HOME_DIR=3";
        static char *const uenv[] = { b, a, c };
        UnitPlan plan = make_plan(language_find("node"));
        char **env = NULL;
        size_t n = 0;

        plan.user_env = uenv;
        plan.n_user_env = ELEMENTSOF(uenv);
        assert_int_equal(sandbox_environment(&plan, &env, &n), 0);
        assert_true(env_index(env, n, "PATH=/usr/bin:/bin") >= 0);
        assert_true(env_index(env, n, "HOME=/workspace") >= 0);
        assert_true(env_index(env, n, "PATHX=1") >= 0);
        assert_true(env_index(env, n, "PAT=2") >= 0);
        assert_true(env_index(env, n, "HOME_DIR=3") >= 0);
        check_unique_keys(env, n);
        /* node's language env is NODE_PATH: 11 fixed + 1 + 3 */
        assert_true(env_index(env, n, "NODE_PATH=/workspace/node_modules") >= 0);
        assert_int_equal(n, 15);
        strv_free(env);
}

/* ---- unit names ---- */

static void test_execution_unit_name(_unused_ void **state) {
        _cleanup_free_ char *a = execution_unit_name("exec_1"), *b = execution_unit_name("exec_20261130_0a1b");

        assert_string_equal(a, "sandboxd-exec_1.service");
        assert_string_equal(b, "sandboxd-exec_20261130_0a1b.service");
}

static void test_control_fd_name(_unused_ void **state) {
        char b[CONTROL_FD_NAME_MAX], small[12];

        /* A cold execution's: by its id, whatever unit it has. */
        assert_int_equal(control_fd_name("exec_1", NULL, b, sizeof(b)), 0);
        assert_string_equal(b, "ctl-exec_1");
        assert_int_equal(control_fd_name("exec_1", "sandboxd-exec_1.service", b, sizeof(b)), 0);
        assert_string_equal(b, "ctl-exec_1");
        /* A warm unit's: by the unit, known before any execution id. */
        assert_int_equal(control_fd_name(NULL, "sandboxd-warm-0123456789abcdef0123456789abcdef.service", b, sizeof(b)),
                         0);
        assert_string_equal(b, "ctl-sandboxd-warm-0123456789abcdef0123456789abcdef");
        assert_int_equal(control_fd_name("exec_2", "sandboxd-warm-ab.service", b, sizeof(b)), 0);
        assert_string_equal(b, "ctl-sandboxd-warm-ab");
        /* Not a warm unit's name (no .service): the id's. */
        assert_int_equal(control_fd_name("exec_3", "sandboxd-warm-ab.mount", b, sizeof(b)), 0);
        assert_string_equal(b, "ctl-exec_3");
        /* Too long for the buffer: refused, not cut. */
        assert_int_equal(control_fd_name("exec_20261201_0123", NULL, small, sizeof(small)), -ENAMETOOLONG);
        /* The longest is well inside the fd store's 255. */
        {
                _cleanup_free_ char *u = warm_unit_name_generate();

                assert_non_null(u);
                assert_int_equal(control_fd_name(NULL, u, b, sizeof(b)), 0);
                assert_int_equal(strlen(b), strlen("ctl-sandboxd-warm-") + 32);
        }
}


/* ---- the egress proxy of a run with network (issue 16) ---- */

static char *const proxy_allow[] = { "pypi.org", "*.pythonhosted.org" };
static char *const proxy_permit[] = { "198.18.0.0/30" };
static char *const proxy_hosts[] = { "mirror.test=198.18.0.1" };

static ProxyPlan make_proxy_plan(void) {
        return (ProxyPlan) {
                .execution_id = "exec_1",
                .socket_unit = "sandboxd-proxy-00.socket",
                .proxy = "/usr/libexec/sandboxd/sandboxd-proxy",
                .root = "/run/sandboxd/proxy-root",
                .empty = "/run/sandboxd/proxy-empty",
                .allow = proxy_allow, .n_allow = ELEMENTSOF(proxy_allow),
                .permit = proxy_permit, .n_permit = ELEMENTSOF(proxy_permit),
                .hosts = proxy_hosts, .n_hosts = ELEMENTSOF(proxy_hosts),
                .max_bytes = 1 << 20, .max_connections = 32, .memory_max = 77 * MiB,
                .connect_timeout_ms = 10000, .idle_timeout_ms = 60000, .head_timeout_ms = 10000,
                .stdout_fd = 7, .stderr_fd = 8,
        };
}

/* The service's hardening, row by row (each property's reason is checked below). */
static const PropRow proxy_rows[] = {
        P_BOOL("DynamicUser", true),
        P_BOOL("MountAPIVFS", true),
        P_STR("ProcSubset", "pid"),
        P_STR("ProtectProc", "invisible"),
        P_BOOL("PrivateDevices", true),
        P_BOOL("ProtectKernelModules", true),
        P_BOOL("ProtectKernelLogs", true),
        P_BOOL("NoNewPrivileges", true),
        P_U64("CapabilityBoundingSet", 0),
        P_U64("AmbientCapabilities", 0),
        P_U64("RestrictNamespaces", 0),
        P_BOOL("MemoryDenyWriteExecute", true),
        P_U64("MemoryMax", 77 * MiB),
        P_U64("TasksMax", 16),
        P_U64("LimitNOFILE", 2 * 32 + 64),
        P_U64("LimitCORE", 0),
        P_STR("Type", "simple"),
        P_STR("CollectMode", "inactive-or-failed"),
        P_FD("StandardOutputFileDescriptor", 7),
        P_FD("StandardErrorFileDescriptor", 8),
};

static void check_prop(const UnitProps *p, const PropRow *row) {
        const UnitProp *x = need(p, row->name);

        assert_int_equal(x->kind, row->kind);
        switch (row->kind) {
        case PK_BOOL:
                assert_int_equal(x->b, row->b);
                break;
        case PK_U64:
        case PK_U32:
                assert_int_equal(x->u, row->u);
                break;
        case PK_STRING:
                assert_string_equal(x->s, row->s);
                break;
        case PK_FD:
                assert_int_equal(x->fd, row->i);
                break;
        default:
                fail();
        }
}

static void check_reasons(const UnitProps *p) {
        for (size_t i = 0; i < p->n; i++) {
                if (isempty(p->props[i].reason)) {
                        print_error("property %s has no reason\n", p->props[i].name);
                        fail();
                }
                for (size_t j = 0; j < i; j++)
                        assert_false(streq(p->props[j].name, p->props[i].name));
        }
}

static bool strv_has(const UnitProp *x, const char *s) {
        for (size_t i = 0; i < x->n; i++)
                if (streq(x->strv[i], s))
                        return true;
        return false;
}

static void test_proxy_service_row(void **state) {
        const PropRow *row = *state;
        ProxyPlan plan = make_proxy_plan();
        UnitProps p = {};

        assert_int_equal(unit_props_proxy_service(&plan, &p), 0);
        check_prop(&p, row);
        unit_props_done(&p);
}

static void test_proxy_service(_unused_ void **state) {
        ProxyPlan plan = make_proxy_plan();
        const UnitProp *x;
        UnitProps p = {};

        assert_int_equal(unit_props_proxy_service(&plan, &p), 0);
        check_reasons(&p);
        x = need(&p, "ExecStart");
        assert_string_equal(x->s, "/usr/libexec/sandboxd/sandboxd-proxy");
        assert_string_equal(x->strv[0], "/usr/libexec/sandboxd/sandboxd-proxy");
        assert_true(strv_has(x, "--execution-id=exec_1"));
        assert_true(strv_has(x, "--allow=pypi.org"));
        assert_true(strv_has(x, "--allow=*.pythonhosted.org"));
        assert_true(strv_has(x, "--permit=198.18.0.0/30"));
        assert_true(strv_has(x, "--host=mirror.test=198.18.0.1"));
        assert_true(strv_has(x, "--max-bytes=1048576"));
        assert_true(strv_has(x, "--max-connections=32"));
        assert_true(strv_has(x, "--connect-timeout-ms=10000"));
        assert_true(strv_has(x, "--idle-timeout-ms=60000"));
        assert_true(strv_has(x, "--head-timeout-ms=10000"));
        assert_null(x->strv[x->n]);
        x = need(&p, "RestrictAddressFamilies");
        assert_true(x->b);
        assert_int_equal(x->n, 2);
        assert_true(strv_has(x, "AF_INET") && strv_has(x, "AF_INET6") && !strv_has(x, "AF_UNIX"));
        /* No file system: an empty root, an empty /sys, then the few read-only binds. */
        assert_string_equal(need(&p, "RootDirectory")->s, "/run/sandboxd/proxy-root");
        assert_null(unit_props_find(&p, "TemporaryFileSystem"));
        /* Their read-only targets do not exist there (an empty /sys, /proc with subset=pid). */
        assert_null(unit_props_find(&p, "ProtectControlGroups"));
        assert_null(unit_props_find(&p, "ProtectKernelTunables"));
        x = need(&p, "BindReadOnlyPaths");
        /* (source, destination, "-" if it may be missing) triples; the binary is under /usr. */
        assert_int_equal(x->n, 5 * 3);
        assert_string_equal(x->strv[4 * 3], "/run/sandboxd/proxy-empty");
        assert_string_equal(x->strv[4 * 3 + 1], "/sys");
        assert_true(strv_has(x, "/usr") && strv_has(x, "/lib64") && strv_has(x, "/etc/resolv.conf"));
        assert_false(strv_has(x, "/etc") || strv_has(x, "/run") || strv_has(x, "/var") || strv_has(x, "/home"));
        assert_null(unit_props_find(&p, "BindPaths"));
        x = need(&p, "SystemCallFilter");
        assert_true(x->b);
        assert_true(strv_has(x, "@system-service"));
        assert_true(strv_has(need(&p, "Requires"), "sandboxd-proxy-00.socket"));
        assert_true(strv_has(need(&p, "After"), "sandboxd-proxy-00.socket"));
        /* In the host's network namespace: never PrivateNetwork= (the socket has it). */
        assert_null(unit_props_find(&p, "PrivateNetwork"));
        assert_null(unit_props_find(&p, "StandardError"));
        unit_props_done(&p);

        /* A binary outside /usr (a build tree) is bound on its own, at its own path, read-only. */
        plan.proxy = "/work/build/sandboxd-proxy/sandboxd-proxy";
        assert_int_equal(unit_props_proxy_service(&plan, &p), 0);
        x = need(&p, "BindReadOnlyPaths");
        assert_int_equal(x->n, 6 * 3);
        assert_string_equal(x->strv[5 * 3], plan.proxy);
        assert_string_equal(x->strv[5 * 3 + 1], plan.proxy);
        assert_string_equal(x->strv[5 * 3 + 2], "");
        unit_props_done(&p);

        /* Without a stream of ours, the journal. */
        plan.stderr_fd = -1;
        assert_int_equal(unit_props_proxy_service(&plan, &p), 0);
        assert_string_equal(need(&p, "StandardError")->s, "journal");
        assert_null(unit_props_find(&p, "StandardErrorFileDescriptor"));
        unit_props_done(&p);
}

static void test_proxy_socket(_unused_ void **state) {
        ProxyPlan plan = make_proxy_plan();
        const UnitProp *x;
        UnitProps p = {};

        assert_int_equal(unit_props_proxy_socket(&plan, &p), 0);
        check_reasons(&p);
        x = need(&p, "Listen");
        assert_int_equal(x->n, 2);
        assert_string_equal(x->strv[0], "Stream");
        assert_string_equal(x->strv[1], "127.0.0.1:3128");
        assert_true(need(&p, "PrivateNetwork")->b);
        assert_false(need(&p, "Accept")->b);
        unit_props_done(&p);
}

static void test_proxy_unit_name(_unused_ void **state) {
        _cleanup_free_ char *a = proxy_unit_name("exec_1", ".socket"), *b = proxy_unit_name("exec_1", ".service"),
                            *c = proxy_unit_name("exec_2", ".socket");

        assert_non_null(a);
        assert_non_null(b);
        assert_non_null(c);
        assert_true(startswith(a, "sandboxd-proxy-"));
        assert_int_equal(strlen(a), strlen("sandboxd-proxy-") + 32 + strlen(".socket"));
        assert_int_equal(strspn(a + strlen("sandboxd-proxy-"), "0123456789abcdef"), 32);
        /* The same hex for both units of one execution, another for another: found again after a
         * restart from the record id alone. */
        assert_memory_equal(a, b, strlen("sandboxd-proxy-") + 32);
        assert_string_not_equal(a, c);
}

/* The execution unit of a run with network: the socket's namespace, inet sockets, the variables. */
static void test_network_execution_unit(_unused_ void **state) {
        UnitPlan plan = make_plan(language_find("python"));
        const UnitProp *x;
        UnitProps p = {};

        plan.proxy_socket = "sandboxd-proxy-00.socket";
        assert_int_equal(unit_props_build(&plan, &p), 0);
        check_reasons(&p);
        assert_true(strv_has(need(&p, "JoinsNamespaceOf"), "sandboxd-proxy-00.socket"));
        assert_true(strv_has(need(&p, "After"), "sandboxd-proxy-00.socket"));
        assert_true(need(&p, "PrivateNetwork")->b);
        x = need(&p, "RestrictAddressFamilies");
        assert_true(strv_has(x, "AF_INET") && strv_has(x, "AF_INET6") && strv_has(x, "AF_UNIX"));
        x = need(&p, "Environment");
        assert_true(strv_has(x, "HTTP_PROXY=http://127.0.0.1:3128"));
        assert_true(strv_has(x, "https_proxy=http://127.0.0.1:3128"));
        assert_true(strv_has(x, "NO_PROXY=localhost,127.0.0.1,::1"));
        assert_true(strv_has(x, "PIP_TARGET=/workspace/.pkgs"));
        assert_true(strv_has(x, "PYTHONPATH=/workspace/.pkgs"));
        assert_true(strv_has(x, "npm_config_cache=/tmp/.npm"));
        assert_true(strv_has(need(&p, "ExecStartEx"), "--pkgs-dir"));
        unit_props_done(&p);

        /* Without network: none of it. */
        plan.proxy_socket = NULL;
        assert_int_equal(unit_props_build(&plan, &p), 0);
        assert_null(unit_props_find(&p, "JoinsNamespaceOf"));
        assert_null(unit_props_find(&p, "After"));
        x = need(&p, "RestrictAddressFamilies");
        assert_int_equal(x->n, 1);
        assert_false(strv_has(need(&p, "Environment"), "HTTP_PROXY=http://127.0.0.1:3128"));
        assert_false(strv_has(need(&p, "ExecStartEx"), "--pkgs-dir"));
        unit_props_done(&p);
}

/* The strong tier's unit: the standard profile but for the properties runsc needs, each listed
 * here; sandbox-exec is told to run runsc. Every other property is the standard one's. */
static void test_strong_unit(_unused_ void **state) {
        static const char *const differ[] = { "RestrictNamespaces", "ProcSubset", "ProtectKernelTunables",
                                              "MemoryMax", "TasksMax", "ExecStartEx", NULL };
        UnitPlan plan = make_plan(language_find("python"));
        UnitProps std = {}, p = {};
        const UnitProp *x;

        assert_int_equal(unit_props_build(&plan, &std), 0);
        plan.runsc = "/usr/bin/runsc";
        plan.runsc_platform = "ptrace";
        assert_int_equal(unit_props_build(&plan, &p), 0);
        check_reasons(&p);

        assert_int_equal(need(&p, "RestrictNamespaces")->u,
                         CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUSER | CLONE_NEWUTS);
        assert_false(need(&p, "RestrictNamespaces")->u & CLONE_NEWCGROUP);
        assert_null(unit_props_find(&p, "ProcSubset"));
        assert_true(need(&p, "ProtectKernelTunables")->b);
        assert_int_equal(need(&p, "MemoryMax")->u, (512 + STRONG_MEMORY_OVERHEAD_MB) * MiB);
        assert_int_equal(need(&p, "TasksMax")->u, STRONG_TASKS_PER_PROCESS * 128 + STRONG_TASKS_OVERHEAD);
        x = need(&p, "ExecStartEx");
        assert_true(strv_has(x, "--strong=/usr/bin/runsc"));
        assert_true(strv_has(x, "--runsc-platform=ptrace"));
        assert_true(strv_has(x, "--tasks=128"));
        assert_true(strv_has(x, "--memory-mb=512"));
        assert_false(strv_has(need(&std, "ExecStartEx"), "--strong=/usr/bin/runsc"));

        /* Nothing else differs: same names, same kinds, same scalar values. */
        for (size_t i = 0; i < std.n; i++) {
                const UnitProp *a = &std.props[i], *b = unit_props_find(&p, a->name);

                if (strv_contains((char **) differ, a->name))
                        continue;
                if (!b || b->kind != a->kind || b->b != a->b || b->u != a->u || b->i != a->i ||
                    !streq_ptr(b->s, a->s) || b->n != a->n) {
                        print_error("%s differs in the strong tier\n", a->name);
                        fail();
                }
        }
        for (size_t i = 0; i < p.n; i++)
                if (!unit_props_find(&std, p.props[i].name) && !strv_contains((char **) differ, p.props[i].name)) {
                        print_error("%s is only in the strong tier\n", p.props[i].name);
                        fail();
                }
        unit_props_done(&std);
        unit_props_done(&p);
}

/* A unit of the warm pool's strong kind: the strong tier's profile, --warm without --warm-preload,
 * and the language's plain run command (its runtime starts under gVisor after the claim), never the
 * warm bootstrap; a claim sets the strong tier's memory and tasks. */
static void test_strong_warm_unit(_unused_ void **state) {
        UnitPlan plan = make_plan(language_find("python"));
        UnitProps p = {}, claim = {};
        const UnitProp *x;
        Limits l = plan.limits;

        plan.warm = true;
        plan.warm_preload = "numpy";
        plan.runsc = "/usr/bin/runsc";
        plan.runsc_platform = "ptrace";
        assert_int_equal(unit_props_build(&plan, &p), 0);
        check_reasons(&p);
        x = need(&p, "ExecStartEx");
        assert_true(strv_has(x, "--warm"));
        assert_false(strv_has(x, "--warm-preload"));
        assert_false(strv_has(x, "numpy"));
        assert_true(strv_has(x, "--strong=/usr/bin/runsc"));
        assert_string_equal(x->strv[x->n - 1], SANDBOX_CODE_DIR "/main.py");
        for (size_t i = 0; i < x->n; i++)
                assert_null(strstr(x->strv[i], "_sandboxd_wait"));
        assert_int_equal(need(&p, "MemoryMax")->u, (512 + STRONG_MEMORY_OVERHEAD_MB) * MiB);
        unit_props_done(&p);

        /* The standard pool's python unit starts the bootstrap (the difference above is real). */
        plan.runsc = NULL;
        assert_int_equal(unit_props_build(&plan, &p), 0);
        assert_true(strv_has(need(&p, "ExecStartEx"), "--warm-preload"));
        unit_props_done(&p);

        l.memory_mb = 256;
        l.tasks = 32;
        assert_int_equal(unit_props_claim_limits(&l, true, &claim), 0);
        assert_int_equal(need(&claim, "MemoryMax")->u, (256 + STRONG_MEMORY_OVERHEAD_MB) * MiB);
        assert_int_equal(need(&claim, "TasksMax")->u, STRONG_TASKS_PER_PROCESS * 32 + STRONG_TASKS_OVERHEAD);
        unit_props_done(&claim);
        assert_int_equal(unit_props_claim_limits(&l, false, &claim), 0);
        assert_int_equal(need(&claim, "MemoryMax")->u, 256 * MiB);
        assert_int_equal(need(&claim, "TasksMax")->u, 32);
        unit_props_done(&claim);
}

int main(void) {
        size_t n = ELEMENTSOF(prop_rows) + ELEMENTSOF(limits_rows) + ELEMENTSOF(proxy_rows) + 40, i = 0;
        _cleanup_free_ struct CMUnitTest *tests = calloc(n, sizeof(struct CMUnitTest));

        if (!tests)
                return EXIT_FAILURE;

        for (size_t k = 0; k < ELEMENTSOF(prop_rows); k++)
                tests[i++] = (struct CMUnitTest) { prop_rows[k].name, test_prop_row, NULL, NULL, (void *) &prop_rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_timeout_stop);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_all_props_well_formed);
        for (size_t k = 0; k < ELEMENTSOF(limits_rows); k++)
                tests[i++] = (struct CMUnitTest) { limits_rows[k].name, test_limits_row, NULL, NULL,
                                                   (void *) &limits_rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_disk_split);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_tmpfs_shm);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_bind_read_only);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_bind_writable);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_no_usr_layer);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_kernel_protection_ablation);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_run_tmpfs);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_no_cgroups);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_session_state_dirs);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_exec_python);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_exec_bash);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_exec_args);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_exec_every_language);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_environment);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_environment_dedupe);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_environment_prefix_names);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_execution_unit_name);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_control_fd_name);
        for (size_t k = 0; k < ELEMENTSOF(proxy_rows); k++)
                tests[i++] = (struct CMUnitTest) { proxy_rows[k].name, test_proxy_service_row, NULL, NULL,
                                                   (void *) &proxy_rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_proxy_service);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_proxy_socket);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_proxy_unit_name);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_network_execution_unit);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_strong_unit);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_strong_warm_unit);
        if (i > n)
                abort();

        return _cmocka_run_group_tests("unit-props", tests, i, setup_props, teardown_props);
}
