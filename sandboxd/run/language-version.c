/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "language-version.h"
#include "log.h"
#include "util.h"

extern char **environ;

typedef struct Probe Probe;

struct Probe {
        LanguageVersions *owner;
        Probe *next, *prev;
        LanguageTable *table;    /* referenced: the row lives while the probe runs */
        Language *row;
        pid_t pid;
        int pidfd, out_fd;
        sd_event_source *child, *out, *timer;
        char buf[LANGUAGE_VERSION_OUTPUT_MAX];
        size_t len;
        bool exited;
        int status;
};

struct LanguageVersions {
        sd_event *event;
        Probe *probes;
        unsigned n;
};

static void probe_free(Probe *p) {
        if (!p)
                return;
        if (p->pid > 0) {
                (void) kill(p->pid, SIGKILL);
                (void) waitpid(p->pid, NULL, 0);
        }
        sd_event_source_disable_unref(p->child);
        sd_event_source_disable_unref(p->out);
        sd_event_source_disable_unref(p->timer);
        safe_close(p->pidfd);
        safe_close(p->out_fd);
        if (p->prev)
                p->prev->next = p->next;
        else if (p->owner)
                p->owner->probes = p->next;
        if (p->next)
                p->next->prev = p->prev;
        if (p->owner)
                p->owner->n--;
        language_table_unref(p->table);
        free(p);
}

/* Both the exit and the end of the output are in: the verdict. */
static void probe_maybe_done(Probe *p) {
        if (!p->exited || p->out)
                return;
        if (WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0) {
                if (language_set_version(p->row, p->buf, p->len) < 0)
                        log_oom();
                if (p->row->version)
                        log_debug("Language '%s': %s", p->row->name, p->row->version);
                else
                        log_warning("Language '%s': its version command printed nothing usable.", p->row->name);
        } else
                log_warning("Language '%s': its version command %s %d; no version is reported.", p->row->name,
                            WIFEXITED(p->status) ? "exited with status" : "was killed by signal",
                            WIFEXITED(p->status) ? WEXITSTATUS(p->status) : WTERMSIG(p->status));
        probe_free(p);
}

static int on_out(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Probe *p = userdata;
        char discard[512];
        ssize_t k;

        if (p->len < sizeof(p->buf))
                k = read(fd, p->buf + p->len, sizeof(p->buf) - p->len);
        else
                k = read(fd, discard, sizeof(discard));   /* beyond the cap: drained, not kept */
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (k > 0) {
                if (p->len < sizeof(p->buf))
                        p->len += (size_t) k;
                return 0;
        }
        p->out = sd_event_source_disable_unref(p->out);
        p->out_fd = safe_close(p->out_fd);
        probe_maybe_done(p);
        return 0;
}

static int on_child(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Probe *p = userdata;
        siginfo_t si = {};

        if (waitid(P_PID, (id_t) p->pid, &si, WEXITED | WNOHANG) < 0 || si.si_pid != p->pid)
                return 0;
        p->pid = 0;
        p->exited = true;
        p->status = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0) : si.si_status;
        p->child = sd_event_source_disable_unref(p->child);
        p->pidfd = safe_close(p->pidfd);
        probe_maybe_done(p);
        return 0;
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Probe *p = userdata;

        log_warning("Language '%s': its version command did not finish within %u s; killed.", p->row->name,
                    (unsigned) (LANGUAGE_VERSION_TIMEOUT_USEC / 1000000U));
        probe_free(p);
        return 0;
}

static int probe_start(LanguageVersions *v, LanguageTable *t, Language *row) {
        _cleanup_close_pair_ int pipefd[2] = { -EBADF, -EBADF };
        _cleanup_free_ char **argv = NULL;
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t none, all;
        size_t n = 0;
        Probe *p;
        pid_t pid;
        int r;

        for (const char *const *a = row->version_argv; *a; a++)
                n++;
        argv = calloc(n + 7, sizeof(char *));
        if (!argv)
                return -ENOMEM;
        /* nobody, no groups, no capabilities of any kind, and no way back up. */
        argv[0] = (char *) LANGUAGE_VERSION_SETPRIV;
        argv[1] = (char *) "--reuid=65534";
        argv[2] = (char *) "--regid=65534";
        argv[3] = (char *) "--clear-groups";
        argv[4] = (char *) "--no-new-privs";
        argv[5] = (char *) "--";
        for (size_t i = 0; i < n; i++)
                argv[6 + i] = (char *) row->version_argv[i];

        if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        sigemptyset(&none);
        sigfillset(&all);
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        r = posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        if (r == 0)
                r = posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
        if (r == 0)
                r = posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDERR_FILENO);
        if (r == 0)
                r = posix_spawn_file_actions_addchdir_np(&fa, "/");
        if (r == 0)
                r = posix_spawnattr_setsigmask(&attr, &none);
        if (r == 0)
                r = posix_spawnattr_setsigdefault(&attr, &all);
        if (r == 0)
                r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        if (r == 0)
                r = posix_spawn(&pid, argv[0], &fa, &attr, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        if (r != 0)
                return -r;

        p = calloc(1, sizeof(Probe));
        if (!p) {
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                return -ENOMEM;
        }
        p->pid = pid;
        p->row = row;
        p->table = language_table_ref(t);
        p->out_fd = TAKE_FD(pipefd[0]);
        p->owner = v;
        p->next = v->probes;
        if (v->probes)
                v->probes->prev = p;
        v->probes = p;
        v->n++;
        p->pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (p->pidfd < 0) {
                r = -errno;
                probe_free(p);
                return r;
        }
        r = sd_event_add_io(v->event, &p->child, p->pidfd, EPOLLIN, on_child, p);
        if (r >= 0)
                r = sd_event_add_io(v->event, &p->out, p->out_fd, EPOLLIN, on_out, p);
        if (r >= 0)
                r = sd_event_add_time_relative(v->event, &p->timer, CLOCK_MONOTONIC, LANGUAGE_VERSION_TIMEOUT_USEC,
                                               0, on_timeout, p);
        if (r < 0) {
                probe_free(p);
                return r;
        }
        (void) sd_event_source_set_description(p->child, "version-probe-pid");
        (void) sd_event_source_set_description(p->out, "version-probe");
        return 0;
}

int language_versions_new(sd_event *event, LanguageVersions **ret) {
        LanguageVersions *v = calloc(1, sizeof(LanguageVersions));

        if (!v)
                return -ENOMEM;
        v->event = sd_event_ref(event);
        *ret = v;
        return 0;
}

LanguageVersions *language_versions_free(LanguageVersions *v) {
        if (!v)
                return NULL;
        while (v->probes)
                probe_free(v->probes);
        sd_event_unref(v->event);
        return mfree(v);
}

void language_versions_probe(LanguageVersions *v, LanguageTable *t) {
        if (!v)
                return;
        for (size_t i = 0; i < language_table_count(t); i++) {
                Language *l = language_table_row(t, i);
                char reason[LANGUAGE_REASON_MAX];
                int r;

                /* A runtime that is not there has no version to tell. */
                if (!l->version_argv || language_unavailable_reason(l, reason, sizeof(reason)))
                        continue;
                r = probe_start(v, t, l);
                if (r < 0)
                        log_warning_errno(r, "Language '%s': cannot run its version command: %m", l->name);
        }
}

unsigned language_versions_running(const LanguageVersions *v) {
        return v ? v->n : 0;
}
