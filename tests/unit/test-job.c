/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The job and the runner (queue, slots, adoption) driven through their states on a fake systemd
 * (fake-sysd.c): the real run/, workspace/, delivery/, store/ (SQLite in a private tmpfs), unit/ and
 * model/ code, the real control channel with this test in sandbox-exec's place (the exec protocol's
 * header read, a report written with helper_report_format()), and a systemd that answers from the
 * loop. Needs a mount namespace of its own (the workspaces are real tmpfs mounts): as root, or through
 * an unprivileged user namespace; else it skips (77) and says why. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "capture.h"
#include "delivery/artifact-accounts.h"
#include "exec-protocol.h"
#include "fake-sysd.h"
#include "log.h"
#include "model/context.h"
#include "run/job.h"
#include "run/runner.h"
#include "run/session.h"
#include "store/store.h"
#include "unit/seccomp-policy.h"
#include "workspace/workspace.h"

static char base[] = "/tmp/test-job.XXXXXX";
static sd_event *loop;

typedef struct Daemon {
        Context ctx;
        Sessions *sessions;
        Runner *runner;
} Daemon;

static void on_session_ready(void *userdata, Session *s) {
        runner_dispatch(((Daemon *) userdata)->runner);
}

static void on_session_failed(void *userdata, Session *s, const char *why) {
        runner_fail_session(((Daemon *) userdata)->runner, s, why);
}

static void on_session_removed(void *userdata) {
}

static const SessionEvents session_events = {
        .ready = on_session_ready,
        .failed = on_session_failed,
        .removed = on_session_removed,
};

/* A daemon's parts as manager.c builds them, on the fake systemd; slots: MaxConcurrent=; db: its
 * store's file name (each test its own; the same one again is a restart). */
static Daemon *daemon_new_db(uint64_t slots, const char *db) {
        Daemon *d = calloc(1, sizeof(Daemon));
        char path[256];
        char *error = NULL;

        assert_non_null(d);
        d->ctx.config = config_new();
        assert_non_null(d->ctx.config);
        d->ctx.config->max_concurrent = slots;
        d->ctx.config->workspace_pool = 0;
        d->ctx.metrics = metrics_new();
        d->ctx.event = loop;
        assert_int_equal(fake_sysd_new(d->ctx.event, &d->ctx.sysd), 0);
        snprintf(path, sizeof(path), "%s/%s.db", base, db);
        assert_int_equal(store_open_sqlite(path, &d->ctx.store, &error), 0);
        snprintf(path, sizeof(path), "%s/artifacts", base);
        (void) mkdir(path, 0700);
        d->ctx.artifacts_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(d->ctx.artifacts_fd >= 0);
        assert_int_equal(asprintf(&d->ctx.workspaces_dir, "%s/workspaces", base) > 0, 1);
        (void) mkdir(d->ctx.workspaces_dir, 0755);
        d->ctx.helper = "/usr/libexec/sandboxd/sandbox-exec";
        d->ctx.usr_layer = strdup("/var/lib/sandboxd/usr-layers/test");
        /* The filters live in the rows of the current table (languages-fixture.c), as the daemon's do:
         * built once, kept for the daemons that follow. */
        for (size_t i = 0; i < language_count(); i++) {
                Language *l = language_table_row(language_table_current(), i);

                if (!l->filter.bpf)
                        assert_int_equal(seccomp_policy_build(l->extra_syscalls, &l->filter.bpf, &l->filter.bpf_len), 0);
        }
        assert_int_equal(artifact_accounts_new(&d->ctx, &d->ctx.accounts), 0);
        assert_int_equal(workspace_pool_new(&d->ctx, &d->ctx.pool), 0);
        assert_int_equal(sessions_new(&d->ctx, &session_events, d, &d->sessions), 0);
        assert_int_equal(runner_new(&d->ctx, d->sessions, &d->runner), 0);
        return d;
}

#define daemon_new(slots) daemon_new_db((slots), __func__)

/* The daemon goes (SIGKILL or stop: nothing of it is told to systemd), the fake systemd and the
 * store stay when keep is set, for the next daemon_new() to adopt from. */
static void daemon_free(Daemon *d, Sysd **keep_sysd) {
        d->runner = runner_free(d->runner);
        d->ctx.accounts = artifact_accounts_free(d->ctx.accounts);
        d->sessions = sessions_free(d->sessions);
        d->ctx.pool = workspace_pool_free(d->ctx.pool);
        if (keep_sysd)
                *keep_sysd = d->ctx.sysd;
        else
                fake_sysd_free(d->ctx.sysd);
        store_close(d->ctx.store);
        safe_close(d->ctx.artifacts_fd);
        free(d->ctx.usr_layer);
        free(d->ctx.workspaces_dir);
        metrics_free(d->ctx.metrics);
        config_free(d->ctx.config);
        free(d);
}

static Job *submit(Daemon *d, const char *owner, const char *id) {
        char body[256];
        ExecRequest *req = NULL;
        RequestError err;
        Job *j = NULL;

        snprintf(body, sizeof(body),
                 "{\"language\":\"python\",\"code\":\"print('hello')\",\"execution_id\":\"%s\"}", id);
        assert_int_equal(exec_request_parse(body, strlen(body), d->ctx.config, &req, &err), 0);
        assert_int_equal(runner_submit(d->runner, req, owner, &j), 0);
        assert_int_equal(job_persist(j), 0);
        runner_dispatch(d->runner);
        return j;
}

typedef bool (*cond_t)(void *userdata);

/* Run the loop until cond holds (at most 5 s); false if it never did. */
static bool run_until(sd_event *e, cond_t cond, void *userdata) {
        for (int i = 0; i < 500; i++) {
                if (cond(userdata))
                        return true;
                assert_true(sd_event_run(e, 10 * 1000) >= 0);
        }
        return cond(userdata);
}

/* Run the loop a while: for checking that something does NOT happen. */
static void run_idle(sd_event *e) {
        for (int i = 0; i < 20; i++)
                assert_true(sd_event_run(e, 5 * 1000) >= 0);
}

typedef struct StateWait {
        Job *job;
        JobState state;
} StateWait;

static bool job_in_state(void *userdata) {
        StateWait *w = userdata;

        return w->job->state == w->state;
}

static void wait_state(Daemon *d, Job *j, JobState s) {
        StateWait w = { j, s };

        if (!run_until(d->ctx.event, job_in_state, &w))
                fail_msg("%s: state %d, expected %d", j->exec->id, (int) j->state, (int) s);
}

/* sandbox-exec's side: read what sandboxd sends (header, filter, code) up to its shutdown. */
typedef struct Helper {
        FakeUnit *unit;
        char buf[256 * 1024];
        size_t len;
        bool eof;
} Helper;

static bool helper_read(void *userdata) {
        Helper *h = userdata;

        while (!h->eof) {
                ssize_t n = recv(h->unit->ctl_fd, h->buf + h->len, sizeof(h->buf) - h->len, MSG_DONTWAIT);

                if (n > 0)
                        h->len += (size_t) n;
                else if (n == 0)
                        h->eof = true;
                else
                        return false;
        }
        return true;
}

static void helper_consume(Daemon *d, FakeUnit *u) {
        Helper *h = calloc(1, sizeof(Helper));
        uint64_t bpf_len = 0, code_len = 0, stdin_len = 4711;
        char *nl;

        assert_non_null(h);
        h->unit = u;
        assert_true(run_until(d->ctx.event, helper_read, h));
        /* The header, then exactly what it announced. */
        nl = memchr(h->buf, '\n', h->len);
        assert_non_null(nl);
        assert_int_equal(exec_header_parse(h->buf, (size_t) (nl - h->buf), &bpf_len, &code_len, &stdin_len), 0);
        assert_true(bpf_len > 0);
        assert_int_equal(stdin_len, 0);
        assert_int_equal(code_len, strlen("print('hello')"));
        assert_int_equal(h->len, (size_t) (nl - h->buf) + 1 + bpf_len + code_len);
        assert_memory_equal(h->buf + h->len - code_len, "print('hello')", code_len);
        free(h);
}

/* The report sandbox-exec sends at the end, with stdout, and the socket closed. */
static void helper_report(FakeUnit *u, int exit_code, bool cancelled, const char *out) {
        HelperReport r = {
                .phase = PHASE_RUN,
                .exit_code = exit_code,
                .cancelled = cancelled,
                .signal = cancelled ? SIGKILL : 0,
                .run_usec = 1000,
        };
        char text[HELPER_REPORT_MAX];
        int n;

        if (cancelled)
                r.exit_code = -1;
        r.out.bytes = r.out.head = strlen(out);
        r.out.lines = 1;
        n = helper_report_format(&r, text, sizeof(text));
        assert_true(n > 0);
        assert_int_equal(send(u->ctl_fd, text, (size_t) n, MSG_NOSIGNAL), n);
        assert_int_equal(send(u->ctl_fd, out, strlen(out), MSG_NOSIGNAL), (ssize_t) strlen(out));
        u->ctl_fd = safe_close(u->ctl_fd);
}

static const SysdServiceProps props_exited = {
        .result = "success",
        .exec_main_code = CLD_EXITED,
        .exec_main_status = 0,
        .cpu_usage_nsec = UINT64_MAX,
};

static FakeUnit *unit_of(Daemon *d, Job *j) {
        FakeUnit *u = fake_sysd_unit(d->ctx.sysd, j->unit_name);

        assert_non_null(u);
        return u;
}

static void check_stored(Daemon *d, Job *j, ExecStatus status, const char *stdout_text) {
        _cleanup_(store_record_freep) StoreRecord *rec = NULL;

        assert_int_equal(store_get(d->ctx.store, j->exec->id, &rec), 0);
        assert_int_equal(rec->exec->status, status);
        if (stdout_text) {
                assert_non_null(rec->exec->out.text);
                assert_string_equal(rec->exec->out.text, stdout_text);
        }
}

/* queued → preparing → starting → running → finishing → done, each step waiting for systemd. */
static void test_lifecycle(void **state) {
        Daemon *d = daemon_new(4);
        FakeSysdConfig *cfg = fake_sysd_config(d->ctx.sysd);
        RunnerCounts n;
        FakeUnit *u;
        Job *j;

        cfg->hold_mounts = cfg->hold_starts = true;
        j = submit(d, "uid:1000", "life");
        /* Started at once (a slot was free): the workspace mount was asked for, nothing else. */
        assert_int_equal(j->state, JOB_PREPARING);
        assert_non_null(fake_sysd_unit(d->ctx.sysd, j->mount_name));
        run_idle(d->ctx.event);
        assert_int_equal(j->state, JOB_PREPARING);
        assert_int_equal(fake_sysd_n_services(d->ctx.sysd), 0);

        fake_sysd_job_removed(d->ctx.sysd, j->mount_name, "done");
        wait_state(d, j, JOB_STARTING);
        u = unit_of(d, j);
        assert_true(u->service);
        run_idle(d->ctx.event);
        assert_int_equal(j->state, JOB_STARTING);       /* until the start job ends */

        fake_sysd_job_removed(d->ctx.sysd, j->unit_name, "done");
        wait_state(d, j, JOB_RUNNING);
        assert_int_equal(j->exec->status, EXEC_RUNNING);
        runner_counts(d->runner, &n);
        assert_int_equal(n.running, 1);
        check_stored(d, j, EXEC_RUNNING, NULL);

        helper_consume(d, u);
        helper_report(u, 0, false, "hello\n");
        run_idle(d->ctx.event);
        /* The report alone does not end it: the unit has not gone yet. */
        assert_int_equal(j->state, JOB_RUNNING);

        fake_sysd_unit_ended(d->ctx.sysd, j->unit_name, "inactive", &props_exited);
        wait_state(d, j, JOB_DONE);
        assert_int_equal(j->exec->status, EXEC_SUCCESS);
        assert_int_equal(j->exec->error_type, ERROR_NONE);
        check_stored(d, j, EXEC_SUCCESS, "hello\n");
        runner_counts(d->runner, &n);
        assert_int_equal(n.running, 0);
        assert_int_equal(n.finished_total, 1);
        /* The workspace mount was stopped after the run. */
        assert_true(fake_sysd_unit(d->ctx.sysd, j->mount_name)->stopped);
        daemon_free(d, NULL);
}

/* The unit's end (and its result) before the report: the job waits in finishing for the report. */
static void test_unit_gone_before_report(void **state) {
        Daemon *d = daemon_new(4);
        SysdServiceProps p = props_exited;
        FakeUnit *u;
        Job *j;

        j = submit(d, "uid:1000", "gone-first");
        wait_state(d, j, JOB_RUNNING);
        u = unit_of(d, j);
        helper_consume(d, u);
        p.exec_main_status = 3;
        fake_sysd_unit_ended(d->ctx.sysd, j->unit_name, "inactive", &p);
        wait_state(d, j, JOB_FINISHING);
        run_idle(d->ctx.event);
        assert_int_equal(j->state, JOB_FINISHING);
        helper_report(u, 3, false, "partial\n");
        wait_state(d, j, JOB_DONE);
        assert_int_equal(j->exec->status, EXEC_FAILED);
        assert_int_equal(j->exec->error_type, ERROR_RUNTIME);
        check_stored(d, j, EXEC_FAILED, "partial\n");
        daemon_free(d, NULL);
}

/* A cancel in each state. */
static void test_cancel_queued(void **state) {
        Daemon *d = daemon_new(1);
        Job *a, *b;

        a = submit(d, "uid:1000", "busy");
        b = submit(d, "uid:1000", "waiting");
        assert_int_equal(b->state, JOB_QUEUED);
        assert_int_equal(job_cancel(b), 0);
        assert_int_equal(b->state, JOB_DONE);
        assert_int_equal(b->exec->status, EXEC_CANCELLED);
        check_stored(d, b, EXEC_CANCELLED, NULL);
        assert_int_equal(job_cancel(b), -EALREADY);
        /* It never reached systemd. */
        assert_null(fake_sysd_unit(d->ctx.sysd, b->unit_name));
        assert_true(a->state != JOB_QUEUED);
        daemon_free(d, NULL);
}

static void test_cancel_preparing(void **state) {
        Daemon *d = daemon_new(1);
        Job *j;

        fake_sysd_config(d->ctx.sysd)->hold_mounts = true;
        j = submit(d, "uid:1000", "prep");
        assert_int_equal(j->state, JOB_PREPARING);
        assert_int_equal(job_cancel(j), 0);
        /* Acted upon when the mount's job ends: the service never starts. */
        fake_sysd_job_removed(d->ctx.sysd, j->mount_name, "done");
        wait_state(d, j, JOB_DONE);
        assert_int_equal(j->exec->status, EXEC_CANCELLED);
        assert_null(fake_sysd_unit(d->ctx.sysd, j->unit_name));
        daemon_free(d, NULL);
}

static void test_cancel_starting(void **state) {
        Daemon *d = daemon_new(1);
        FakeUnit *u;
        Job *j;

        fake_sysd_config(d->ctx.sysd)->hold_starts = true;
        j = submit(d, "uid:1000", "starting");
        wait_state(d, j, JOB_STARTING);
        u = unit_of(d, j);
        assert_int_equal(job_cancel(j), 0);
        run_idle(d->ctx.event);
        assert_int_equal(u->n_kill_main_usr1, 0);        /* nobody to tell before the start job ends */
        check_stored(d, j, EXEC_QUEUED, NULL);
        fake_sysd_job_removed(d->ctx.sysd, j->unit_name, "done");
        wait_state(d, j, JOB_RUNNING);
        run_idle(d->ctx.event);
        assert_int_equal(u->n_kill_main_usr1, 1);        /* SIGUSR1 to sandbox-exec alone */
        helper_consume(d, u);
        helper_report(u, -1, true, "");
        fake_sysd_unit_ended(d->ctx.sysd, j->unit_name, "inactive", &props_exited);
        wait_state(d, j, JOB_DONE);
        assert_int_equal(j->exec->status, EXEC_CANCELLED);
        daemon_free(d, NULL);
}

static void test_cancel_running(void **state) {
        Daemon *d = daemon_new(1);
        _cleanup_(store_record_freep) StoreRecord *rec = NULL;
        FakeUnit *u;
        Job *j;

        j = submit(d, "uid:1000", "running");
        wait_state(d, j, JOB_RUNNING);
        u = unit_of(d, j);
        helper_consume(d, u);
        assert_int_equal(job_cancel(j), 0);
        /* On record before the signal goes out: a restart still knows. */
        assert_int_equal(store_get(d->ctx.store, j->exec->id, &rec), 0);
        assert_true(rec->exec->cancel_requested);
        run_idle(d->ctx.event);
        assert_int_equal(u->n_kill_main_usr1, 1);
        /* The report does not decide "cancelled" (the program could forge it); the request does,
         * and here the helper's report says it ran to the end. */
        helper_report(u, 0, false, "done anyway\n");
        fake_sysd_unit_ended(d->ctx.sysd, j->unit_name, "inactive", &props_exited);
        wait_state(d, j, JOB_DONE);
        assert_int_equal(j->exec->status, EXEC_CANCELLED);
        assert_int_equal(job_cancel(j), -EALREADY);
        daemon_free(d, NULL);
}

/* The start job fails: the job ends with an internal error, its slot is free again. */
static void test_start_failed(void **state) {
        Daemon *d = daemon_new(1);
        RunnerCounts n;
        Job *j;

        fake_sysd_config(d->ctx.sysd)->fail_starts = true;
        j = submit(d, "uid:1000", "nostart");
        wait_state(d, j, JOB_DONE);
        assert_int_equal(j->exec->status, EXEC_FAILED);
        assert_int_equal(j->exec->error_type, ERROR_INTERNAL);
        runner_counts(d->runner, &n);
        assert_int_equal(n.running, 0);
        daemon_free(d, NULL);
}

static void finish(Daemon *d, Job *j) {
        FakeUnit *u;

        wait_state(d, j, JOB_RUNNING);
        u = unit_of(d, j);
        helper_consume(d, u);
        helper_report(u, 0, false, "x\n");
        fake_sysd_unit_ended(d->ctx.sysd, j->unit_name, "inactive", &props_exited);
        wait_state(d, j, JOB_DONE);
}

/* The queue through the runner: one slot, two owners taking turns. Alice's first run takes the slot
 * at once; then her second (queued first), then bob's, then her third, though it came before bob's. */
static void test_queue_round_robin(void **state) {
        Daemon *d = daemon_new(1);
        RunnerCounts n;
        Job *a1, *a2, *a3, *b1;

        a1 = submit(d, "uid:1000", "a1");
        a2 = submit(d, "uid:1000", "a2");
        a3 = submit(d, "uid:1000", "a3");
        b1 = submit(d, "uid:2000", "b1");
        runner_counts(d->runner, &n);
        assert_int_equal(n.running, 1);
        assert_int_equal(n.queued, 3);
        assert_int_equal(a1->state, JOB_PREPARING);
        assert_ptr_equal(runner_find(d->runner, "b1"), b1);
        assert_int_equal(runner_queue_owner(d->runner, "uid:1000")->n_waiting, 2);
        assert_int_equal(runner_queue_owner(d->runner, "uid:2000")->n_waiting, 1);

        finish(d, a1);
        assert_true(a2->state != JOB_QUEUED);
        finish(d, a2);
        /* Bob's turn, though alice's third came first. */
        assert_true(b1->state != JOB_QUEUED);
        assert_int_equal(a3->state, JOB_QUEUED);
        finish(d, b1);
        finish(d, a3);
        assert_int_equal(unit_of(d, a1)->start_order, 1);
        assert_int_equal(unit_of(d, a2)->start_order, 2);
        assert_int_equal(unit_of(d, b1)->start_order, 3);
        assert_int_equal(unit_of(d, a3)->start_order, 4);
        runner_counts(d->runner, &n);
        assert_int_equal(n.finished_total, 4);
        assert_int_equal(n.queued + n.running, 0);
        daemon_free(d, NULL);
}

/* KeepFinished=: the oldest final jobs leave memory (their records stay in the store). */
static void test_evict_finished(void **state) {
        Daemon *d = daemon_new(1);
        RunnerCounts n;
        Job *a, *b;

        d->ctx.config->keep_finished = 1;
        a = submit(d, "uid:1000", "old");
        finish(d, a);
        b = submit(d, "uid:1000", "new");
        finish(d, b);
        assert_null(runner_find(d->runner, "old"));
        assert_ptr_equal(runner_find(d->runner, "new"), b);
        runner_counts(d->runner, &n);
        assert_int_equal(n.jobs, 1);
        {
                _cleanup_(store_record_freep) StoreRecord *rec = NULL;

                assert_int_equal(store_get(d->ctx.store, "old", &rec), 0);
                assert_int_equal(rec->exec->status, EXEC_SUCCESS);
        }
        daemon_free(d, NULL);
}

/* Adoption after a restart: sandboxd dies with one execution running and one queued. The next
 * instance watches the running one again (its unit still runs; no control socket came back, so its
 * verdict comes from the unit alone), requeues the queued one, and starts it once the slot is free. */
static void test_adoption(void **state) {
        Daemon *d = daemon_new(1);
        Sysd *sysd = NULL;
        RunnerCounts n;
        Job *a, *b;

        a = submit(d, "uid:1000", "adopt-run");
        b = submit(d, "uid:1000", "adopt-queued");
        wait_state(d, a, JOB_RUNNING);
        assert_int_equal(b->state, JOB_QUEUED);
        helper_consume(d, unit_of(d, a));
        daemon_free(d, &sysd);

        /* The next instance: the same systemd and store. */
        d = daemon_new_db(1, __func__);
        fake_sysd_free(d->ctx.sysd);
        d->ctx.sysd = sysd;
        assert_int_equal(runner_adopt(d->runner), 0);
        assert_true(runner_has_adopted(d->runner));
        a = runner_find(d->runner, "adopt-run");
        b = runner_find(d->runner, "adopt-queued");
        assert_non_null(a);
        assert_non_null(b);
        assert_true(a->adopted);
        assert_int_equal(a->state, JOB_RUNNING);
        assert_int_equal(b->state, JOB_QUEUED);
        runner_counts(d->runner, &n);
        assert_int_equal(n.running, 1);
        assert_int_equal(n.queued, 1);
        runner_dispatch(d->runner);
        run_idle(d->ctx.event);
        assert_int_equal(a->state, JOB_RUNNING);        /* systemd said: still active */
        assert_int_equal(b->state, JOB_QUEUED);          /* the slot is still the adopted one's */

        fake_sysd_unit_ended(d->ctx.sysd, a->unit_name, "inactive", &props_exited);
        wait_state(d, a, JOB_DONE);
        assert_false(runner_has_adopted(d->runner));
        assert_true(a->exec->status == EXEC_SUCCESS || a->exec->status == EXEC_FAILED);
        check_stored(d, a, a->exec->status, NULL);
        /* The queued one runs now, in this instance. */
        finish(d, b);
        assert_int_equal(b->exec->status, EXEC_SUCCESS);
        daemon_free(d, NULL);
}

static int setup_namespace(void) {
        uid_t uid = getuid();
        gid_t gid = getgid();

        if (unshare(CLONE_NEWNS) < 0) {
                char map[64];
                int fd;

                if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
                        return -errno;
                fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
                if (fd >= 0) {
                        if (write(fd, "deny", 4) < 0) {}
                        close(fd);
                }
                snprintf(map, sizeof(map), "0 %u 1", (unsigned) uid);
                fd = open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, map, strlen(map)) < 0)
                        return -errno;
                close(fd);
                snprintf(map, sizeof(map), "0 %u 1", (unsigned) gid);
                fd = open("/proc/self/gid_map", O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, map, strlen(map)) < 0)
                        return -errno;
                close(fd);
        }
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return -errno;
        /* Everything of the test in a tmpfs of its own: nothing reaches the host's /tmp. */
        if (mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64m") < 0)
                return -errno;
        return 0;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lifecycle),
                cmocka_unit_test(test_unit_gone_before_report),
                cmocka_unit_test(test_cancel_queued),
                cmocka_unit_test(test_cancel_preparing),
                cmocka_unit_test(test_cancel_starting),
                cmocka_unit_test(test_cancel_running),
                cmocka_unit_test(test_start_failed),
                cmocka_unit_test(test_queue_round_robin),
                cmocka_unit_test(test_evict_finished),
                cmocka_unit_test(test_adoption),
        };
        int r;

        if (!mkdtemp(base)) {
                fprintf(stderr, "mkdtemp: %m\n");
                return 1;
        }
        r = setup_namespace();
        if (r < 0) {
                printf("1..0 # SKIP no mount namespace of our own (%s): neither root nor user namespaces\n",
                       strerror(-r));
                (void) rmdir(base);
                return 77;
        }
        log_set_max_level(getenv("TEST_JOB_DEBUG") ? LOG_DEBUG : LOG_ERR);
        if (sd_event_new(&loop) < 0)
                return 1;
        r = cmocka_run_group_tests(tests, NULL, NULL);
        sd_event_unref(loop);
        (void) umount2(base, MNT_DETACH);
        (void) rmdir(base);
        return r;
}
