/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Live output (--live-output): the program's stdout and stderr forwarded to the daemon as they come,
 * in frames on the control channel before the report (exec-protocol.h). Never at the program's
 * expense: a frame is only sent when the socket takes it without blocking; what cannot be sent is
 * kept in a pending buffer of EXEC_FRAME_DATA_MAX bytes per stream, the newest bytes, and what falls
 * out of it is never sent: the next frame's offset says where the stream went on. Within the head cap a chunk is forwarded at
 * once; beyond it at most one frame per stream every EXEC_LIVE_FLUSH_MSEC, so a program writing
 * gigabytes costs the daemon a few hundred KiB per second. Memory is fixed: two pending buffers and
 * one frame being sent. */

#include "sandbox-exec.h"

typedef struct LiveStream {
        uint8_t buf[EXEC_FRAME_DATA_MAX];
        size_t len;              /* buf holds the stream's last len bytes (cap->total_bytes - len on) */
        uint64_t last_flush;     /* mono µs */
        const Capture *cap;
        ExecFrameKind kind;
} LiveStream;

bool live_output;
static bool live_on, live_broken;
static LiveStream live[2] = {
        { .kind = EXEC_FRAME_STDOUT },
        { .kind = EXEC_FRAME_STDERR },
};
/* The frame being sent (a stream socket takes part of it, the rest follows first). */
static uint8_t outbox[EXEC_FRAME_MAX];
static size_t outbox_len, outbox_off;

void live_start(void) {
        live[0].cap = &cap_out;
        live[1].cap = &cap_err;
        live_on = live_output && !live_broken;
}

void live_stop(void) {
        live_on = false;
}

static LiveStream *stream_of(const Capture *c) {
        for (size_t i = 0; i < ELEMENTSOF(live); i++)
                if (live[i].cap == c)
                        return &live[i];
        return NULL;
}

/* false: the socket is full (or gone). */
static bool outbox_send(void) {
        while (outbox_off < outbox_len) {
                ssize_t k = send(control_fd, outbox + outbox_off, outbox_len - outbox_off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                live_on = false, live_broken = true;
                        return false;
                }
                outbox_off += (size_t) k;
        }
        outbox_len = outbox_off = 0;
        return true;
}

static void flush_stream(LiveStream *s, bool force, uint64_t now) {
        bool in_head = s->cap->total_bytes <= s->cap->head_max;

        size_t h;

        if (!live_on || !outbox_send())
                return;
        if (s->len == 0 || (!force && !in_head && now < s->last_flush + EXEC_LIVE_FLUSH_MSEC * 1000ULL))
                return;
        h = exec_frame_header(outbox, s->kind, s->cap->total_bytes - s->len, s->len);
        memcpy(outbox + h, s->buf, s->len);
        outbox_len = h + s->len;
        s->len = 0;
        s->last_flush = now;
        (void) outbox_send();
}

void live_feed(const Capture *c, const uint8_t *p, size_t n) {
        LiveStream *s;

        if (!live_on || n == 0 || !(s = stream_of(c)))
                return;
        /* Only the newest bytes are kept; the offset of the next frame tells what was dropped. */
        if (n >= sizeof(s->buf)) {
                memcpy(s->buf, p + (n - sizeof(s->buf)), sizeof(s->buf));
                s->len = sizeof(s->buf);
        } else {
                if (s->len + n > sizeof(s->buf)) {
                        size_t drop = s->len + n - sizeof(s->buf);
                        memmove(s->buf, s->buf + drop, s->len - drop);
                        s->len -= drop;
                }
                memcpy(s->buf + s->len, p, n);
                s->len += n;
        }
        flush_stream(s, false, mono_usec());
}

void live_flush(bool force) {
        uint64_t now = mono_usec();

        for (size_t i = 0; i < ELEMENTSOF(live); i++)
                flush_stream(&live[i], force, now);
}

int live_timeout_ms(void) {
        uint64_t now = mono_usec(), when = UINT64_MAX;

        if (!live_on)
                return -1;
        if (outbox_len > outbox_off)
                return EXEC_LIVE_FLUSH_MSEC;
        for (size_t i = 0; i < ELEMENTSOF(live); i++)
                if (live[i].len > 0)
                        when = MIN(when, live[i].last_flush + EXEC_LIVE_FLUSH_MSEC * 1000ULL);
        if (when == UINT64_MAX)
                return -1;
        return when <= now ? 1 : (int) usec_to_msec_up(when - now);
}

/* Before the report: the frame in flight must be complete (the report follows it on the same
 * stream); what is still pending is left to the report. */
void live_finish(void) {
        while (outbox_off < outbox_len) {
                ssize_t k = send(control_fd, outbox + outbox_off, outbox_len - outbox_off, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                outbox_off += (size_t) k;
        }
        outbox_len = outbox_off = 0;
        live_on = false;
}
