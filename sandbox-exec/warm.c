/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* A unit of the warm pool (--warm). systemd started it before any request existed, with the full
 * profile; sandbox-exec has done everything that does not depend on the request (the mount table, the
 * capabilities, its own directories, the capture) and, with --warm-preload, started the run step
 * already: the language's warm bootstrap, as the program's user, under the filter and the rlimits,
 * which imports what its environment preloads and then waits on fd 3. Then it says EXEC_READY_LINE
 * on the control channel and waits for the claim (exec-protocol.h): the deadline, the source and the
 * request's environment. What a claim changes in the unit (its memory, CPU and task limits) the daemon
 * sets with SetUnitProperties before it sends the claim.
 *
 * The runtime's channel is a socketpair: it writes one byte when its imports are done, and reads
 * the environment block until EOF, which it applies before it runs the program as __main__. Nothing
 * of the program runs before the claim, and a unit runs one program: it ends like any other. */

#include "sandbox-exec.h"

/* Wait for the runtime's "ready" byte, keeping its output pipes drained (what it prints while it
 * imports is dropped at the claim). Its death first is a setup failure. */
static void await_runtime(pid_t pid, int fd) {
        for (;;) {
                struct pollfd p[3] = {
                        { .fd = fd, .events = POLLIN },
                        { .fd = out_pipe[0], .events = POLLIN },
                        { .fd = err_pipe_[0], .events = POLLIN },
                };
                int status;
                char c;

                if (poll(p, ELEMENTSOF(p), 100) < 0 && errno != EINTR)
                        fail_setup("poll failed: %s", strerror(errno));
                if (p[1].revents)
                        (void) pump(out_pipe[0], &cap_out, false);
                if (p[2].revents)
                        (void) pump(err_pipe_[0], &cap_err, false);
                if (p[0].revents) {
                        ssize_t k = read(fd, &c, 1);

                        if (k == 1 && c == 'R')
                                return;
                        if (k < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        fail_setup("The warm runtime ended its channel before it was ready");
                }
                if (waitpid(pid, &status, WNOHANG) == pid)
                        fail_setup("The warm runtime ended before it was ready (status %d)", status);
        }
}

/* The runtime's imports may leave threads busy for a while (OpenBLAS' workers spin before they sleep):
 * CPU time the claim's program would be charged for and that its CPU quota would lose. Wait, at most
 * QUIET_MAX_USEC, until the unit's CPU counter grows by less than QUIET_BUDGET_USEC over QUIET_STEP_USEC. */
#define QUIET_STEP_USEC (20 * USEC_PER_MSEC)
#define QUIET_BUDGET_USEC (1 * USEC_PER_MSEC)
#define QUIET_MAX_USEC (2 * USEC_PER_SEC)

static uint64_t runtime_cpu(pid_t pid) {
        uint64_t v;

        return cgroup_cpu_usec(&v) ? v : proc_cpu_usec(pid);
}

static void await_quiet(pid_t pid) {
        uint64_t start = mono_usec(), last = runtime_cpu(pid);

        while (mono_usec() - start < QUIET_MAX_USEC) {
                uint64_t now;

                (void) usleep(QUIET_STEP_USEC);
                now = runtime_cpu(pid);
                /* A counter in clock ticks (/proc) moves by 10 ms at a time: no move is quiet. */
                if (now - last < QUIET_BUDGET_USEC)
                        break;
                last = now;
        }
}

pid_t warm_start_runtime(const Options *o, char **argv, const uint8_t *bpf, size_t bpf_len, int *ret_fd) {
        _cleanup_close_pair_ int sp[2] = { -EBADF, -EBADF };
        pid_t pid;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
                fail_setup("Cannot create the warm channel: %s", strerror(errno));
        pid = spawn_child(o, argv, bpf, bpf_len, CHILD_PROGRAM, sp[1]);
        sp[1] = safe_close(sp[1]);
        await_runtime(pid, sp[0]);
        await_quiet(pid);
        *ret_fd = TAKE_FD(sp[0]);
        return pid;
}

static void read_line_or_fail(int fd, char *line, size_t max, size_t *ret_n, const char *what) {
        size_t n = 0;

        /* One byte at a time: not a byte of what follows is consumed. */
        for (;;) {
                ssize_t k;

                if (n >= max)
                        fail_setup("%s too long", what);
                k = read(fd, line + n, 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        fail_setup("Cannot read %s: %s", what, strerror(errno));
                }
                if (k == 0)
                        fail_setup("Control channel closed before the %s", what);
                if (line[n] == '\n')
                        break;
                n++;
        }
        line[n] = '\0';
        *ret_n = n;
}

/* Until the claim's first byte: a preloaded runtime that dies meanwhile (killed, out of memory) ends
 * the unit as a setup failure, so the pool replaces it, instead of a claim finding it dead and
 * reporting the runtime's end as the program's. Output it prints meanwhile is drained (and dropped
 * at the claim). */
static void await_claim_start(pid_t runtime) {
        for (;;) {
                struct pollfd p[4] = {
                        { .fd = control_fd, .events = POLLIN },
                        { .fd = signal_fd, .events = POLLIN },
                        { .fd = out_pipe[0], .events = POLLIN },
                        { .fd = err_pipe_[0], .events = POLLIN },
                };
                int status;

                if (poll(p, ELEMENTSOF(p), -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        fail_setup("poll failed: %s", strerror(errno));
                }
                if (p[2].revents)
                        (void) pump(out_pipe[0], &cap_out, false);
                if (p[3].revents)
                        (void) pump(err_pipe_[0], &cap_err, false);
                if (p[1].revents) {
                        struct signalfd_siginfo si;

                        /* SIGCHLD (and a stray SIGUSR1: there is nothing to cancel yet). */
                        while (read(signal_fd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                                ;
                        if (runtime > 0 && waitpid(runtime, &status, WNOHANG) == runtime)
                                fail_setup("The warm runtime ended before its claim (status %d)", status);
                }
                if (p[0].revents)
                        return;
        }
}

/* Say ready, then wait (as long as the unit may live) for the claim; write its source, return its
 * environment block. */
char *warm_await_claim(Options *o, int code_fd, pid_t runtime, size_t *ret_env_len) {
        char line[EXEC_CLAIM_MAX + 1];
        uint64_t timeout_ms, code_len, env_len;
        _cleanup_free_ char *env = NULL;
        ssize_t k;
        size_t n;

        if (loop_write(control_fd, EXEC_READY_LINE, strlen(EXEC_READY_LINE)) < 0)
                fail_setup("Cannot say ready: %s", strerror(errno));
        await_claim_start(runtime);

        read_line_or_fail(control_fd, line, EXEC_CLAIM_MAX, &n, "claim");
        if (exec_claim_parse(line, n, &timeout_ms, &code_len, &env_len) < 0)
                fail_setup("Malformed claim");
        if (code_len > o->max_source)
                fail_setup("Source too large (%" PRIu64 " bytes, at most %" PRIu64 ")", code_len, o->max_source);
        if (env_len > EXEC_ENV_MAX)
                fail_setup("Environment too large (%" PRIu64 " bytes)", env_len);
        o->timeout_ms = timeout_ms;

        if (o->source)
                write_source(code_fd, o->source, control_fd, code_len);
        else if (code_len > 0)
                fail_setup("Source sent but no --source file name given");

        env = malloc((size_t) env_len + 1);
        if (!env)
                fail_setup("Out of memory");
        k = loop_read(control_fd, env, (size_t) env_len);
        if (k < 0 || (uint64_t) k != env_len)
                fail_setup("Short read of the claim's environment");
        if (exec_env_block_check(env, (size_t) env_len) < 0)
                fail_setup("Malformed environment in the claim");
        *ret_env_len = (size_t) env_len;
        return TAKE_PTR(env);
}

/* A warm unit without a preloaded runtime: the claim's environment becomes ours, so every child
 * (compile, run, check) starts with it, exactly as a cold unit's Environment= would give it. */
void warm_apply_env(const char *block, size_t n) {
        for (size_t i = 0; i < n; ) {
                const char *e = block + i, *eq = strchr(e, '=');
                _cleanup_free_ char *key = strndup(e, (size_t) (eq - e));

                if (!key || setenv(key, eq + 1, 1) < 0)
                        fail_setup("Cannot set the environment: %s", strerror(errno));
                i += strlen(e) + 1;
        }
}
