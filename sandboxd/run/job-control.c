/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The control channel with sandbox-exec: the payload written to it (header, filter, source), the
 * report and output read back, and the report turned into the execution's outcome and streams. */

#include <fcntl.h>
#include <json-c/json.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "delivery/artifact-accounts.h"
#include "exec-protocol.h"
#include "job-internal.h"
#include "log.h"
#include "session.h"
#include "time-util.h"
#include "workspace/workspace.h"

/* Live frames at the start of the buffer (everything before the report), handed to the live log
 * and dropped from the buffer. A malformed frame: the rest is taken as the report (which will then
 * not parse), nothing more is believed live. */
static void consume_frames(Job *j) {
        size_t off;
        int report = 0;

        if (j->report_started)
                return;
        off = live_log_consume(j->live, j->report, j->report_len, &report);
        if (report == -EBADMSG)
                log_warning("%s: malformed live frame from sandbox-exec, live output stops", j->exec->id);
        if (report < 0)
                j->report_started = true;
        if (off > 0) {
                memmove(j->report, j->report + off, j->report_len - off);
                j->report_len -= off;
        }
}

int on_control(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Job *j = userdata;

        if ((revents & EPOLLOUT) && j->ctl_off < j->ctl_len) {
                ssize_t n = send(fd, j->ctl_buf + j->ctl_off, j->ctl_len - j->ctl_off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0) {
                        if (errno != EAGAIN && errno != EINTR) {
                                /* The helper is gone before reading everything: the report will say. */
                                j->ctl_off = j->ctl_len;
                        }
                } else
                        j->ctl_off += (size_t) n;
                if (j->ctl_off >= j->ctl_len) {
                        j->ctl_buf = mfree(j->ctl_buf);
                        (void) shutdown(fd, SHUT_WR);
                        (void) sd_event_source_set_io_events(s, EPOLLIN);
                }
                /* Stopping: the payload is out, perhaps at a clean point now (job_quiesce()). */
                job_try_quiet(j);
                if (j->quiet)
                        return 0;
        }

        if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                size_t want;
                ssize_t n;

                /* Grow as the report arrives, never beyond what a report can be. */
                if (j->report_len == j->report_allocated) {
                        size_t na = MIN(MAX(j->report_allocated * 2, (size_t) 16384), j->report_max);
                        uint8_t *nb;

                        if (na <= j->report_len) {
                                j->report_overflow = true;
                                n = 0;
                                goto eof;
                        }
                        nb = realloc(j->report, na);
                        if (!nb) {
                                log_oom();
                                return 0;
                        }
                        j->report = nb;
                        j->report_allocated = na;
                }
                want = j->report_allocated - j->report_len;
                /* Stopping: no further than the end of the frame begun (job_quiesce()'s clean point). */
                if (j->quiesce && !j->report_started) {
                        size_t rest = exec_frame_missing(j->report, j->report_len);

                        if (j->report_len == 0)
                                rest = EXEC_FRAME_HEADER;
                        if (rest > 0)
                                want = MIN(want, rest);
                }
                n = recv(fd, j->report + j->report_len, want, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return 0;
                        n = 0;
                }
        eof:
                if (n == 0) {
                        (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                        j->waiting &= ~JOB_WAIT_REPORT;
                        job_report_complete(j);
                        return 0;
                }
                j->report_len += (size_t) n;
                consume_frames(j);
                /* Stopping: a frame read to its end may be the clean point (job_quiesce()). */
                job_try_quiet(j);
        }
        return 0;
}

int build_control_payload(Job *j) {
        const SeccompFilter *f = j->request->network ? context_seccomp_filter_net(j->ctx, j->request->language)
                                                     : context_seccomp_filter(j->ctx, j->request->language);
        char header[EXEC_HEADER_MAX + 1];
        int hl;

        if (!f)
                return -EINVAL;
        hl = exec_header_format(header, sizeof(header), f->bpf_len, j->request->code_len, j->request->stdin_len);
        if (hl < 0)
                return hl;
        j->ctl_len = (size_t) hl + f->bpf_len + j->request->code_len + j->request->stdin_len;
        j->ctl_buf = malloc(j->ctl_len);
        if (!j->ctl_buf)
                return -ENOMEM;
        memcpy(j->ctl_buf, header, (size_t) hl);
        memcpy(j->ctl_buf + hl, f->bpf, f->bpf_len);
        memcpy(j->ctl_buf + hl + f->bpf_len, j->request->code, j->request->code_len);
        if (j->request->stdin_len > 0)
                memcpy(j->ctl_buf + hl + f->bpf_len + j->request->code_len, j->request->stdin_data,
                       j->request->stdin_len);
        j->ctl_off = 0;
        return 0;
}

static void fill_stream(OutputStream *o, const Capture *c) {
        uint64_t elided = 0;

        free(o->text);
        o->text = NULL;
        /* Out of memory: no text, and so truncated if there was any output. */
        if (capture_render(c, &o->text, &elided) < 0)
                elided = c->total_bytes;
        o->bytes = c->total_bytes;
        o->lines = c->total_lines;
        o->truncated = elided > 0;
}

/* The report: "key=value\n" text, an empty line, then the stdout head and tail and the stderr
 * head and tail. Everything in it is the sandbox's word: sizes are checked against what was
 * received and against the configured capture sizes before anything is copied. */
void parse_report(Job *j, HelperReport *report) {
        const Config *c = j->ctx->config;
        Capture out, err;
        int r;

        *report = (HelperReport) {};
        if (j->report_len == 0 || j->report_overflow)
                return;
        r = helper_report_receive(j->report, j->report_len, c->output_head_bytes, c->output_tail_bytes, report,
                                  &out, &err);
        if (r == -EINVAL || r == 0)
                return;
        if (r < 0) {
                log_warning("%s: the output in sandbox-exec's report is malformed, dropped", j->exec->id);
                return;
        }
        fill_stream(&j->exec->out, &out);
        fill_stream(&j->exec->err, &err);
        capture_done(&out);
        capture_done(&err);
}
