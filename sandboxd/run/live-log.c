/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "exec-protocol.h"
#include "live-log.h"
#include "utf8.h"
#include "util.h"

LiveLog *live_log_new(void) {
        LiveLog *l = calloc(1, sizeof(LiveLog));

        if (l)
                l->n_ref = 1;
        return l;
}

LiveLog *live_log_ref(LiveLog *l) {
        if (l)
                l->n_ref++;
        return l;
}

LiveLog *live_log_unref(LiveLog *l) {
        if (!l || --l->n_ref > 0)
                return NULL;
        for (uint64_t s = l->first_seq; s < l->next_seq; s++)
                free(l->ring[s % LIVE_LOG_EVENTS]);
        free(l->ring);
        free(l);
        return NULL;
}

static void wake_all(LiveLog *l) {
        for (LiveWatcher *w = l->watchers, *next; w; w = next) {
                next = w->next;
                w->wake(w->userdata);
        }
}

static void drop_oldest(LiveLog *l) {
        LiveEvent **slot = &l->ring[l->first_seq % LIVE_LOG_EVENTS];

        l->bytes -= (*slot)->len;
        *slot = mfree(*slot);
        l->first_seq++;
}

static int push(LiveLog *l, LiveStreamId s, bool elided, uint64_t count, const char *text, size_t len) {
        LiveEvent *e;

        if (len > LIVE_LOG_BYTES)
                return -EINVAL;
        /* Queued and silent executions cost no ring. */
        if (!l->ring) {
                l->ring = calloc(LIVE_LOG_EVENTS, sizeof(LiveEvent *));
                if (!l->ring)
                        return -ENOMEM;
        }
        e = malloc(sizeof(LiveEvent) + len + 1);
        if (!e)
                return -ENOMEM;
        *e = (LiveEvent) {
                .seq = l->next_seq,
                .stream = s,
                .elided = elided,
                .len = len,
                .elided_bytes = elided ? count : 0,
        };
        memcpy(e->start, l->pos, sizeof(l->pos));
        l->pos[s] += count;
        memcpy(e->end, l->pos, sizeof(l->pos));
        if (len > 0)
                memcpy(e->text, text, len);
        e->text[len] = 0;

        while (l->next_seq - l->first_seq >= LIVE_LOG_EVENTS || (l->next_seq > l->first_seq && l->bytes + len > LIVE_LOG_BYTES))
                drop_oldest(l);
        l->ring[l->next_seq % LIVE_LOG_EVENTS] = e;
        l->next_seq++;
        l->bytes += len;
        wake_all(l);
        return 0;
}

int live_log_data(LiveLog *l, LiveStreamId s, uint64_t offset, const uint8_t *p, size_t n) {
        uint8_t raw[4 + EXEC_FRAME_DATA_MAX];
        _cleanup_free_ char *text = NULL;
        size_t m, cut, len;
        int r;

        if (!l || l->ended || n == 0 || offset > UINT64_MAX - n)
                return 0;
        /* What the log has had already (a repeat, or a lie): dropped. */
        if (offset < l->received[s]) {
                uint64_t skip = l->received[s] - offset;
                if (skip >= n)
                        return 0;
                p += skip;
                n -= (size_t) skip;
                offset = l->received[s];
        }
        /* A gap: what sandbox-exec did not forward, and the character cut before it. */
        if (offset > l->received[s]) {
                r = live_log_elided(l, s, offset - l->received[s]);
                if (r < 0)
                        return r;
        }
        if (n > EXEC_FRAME_DATA_MAX)
                return live_log_elided(l, s, n);
        l->received[s] += n;
        memcpy(raw, l->carry[s], l->carry_len[s]);
        memcpy(raw + l->carry_len[s], p, n);
        m = l->carry_len[s] + n;
        /* A character the frame cuts off waits for the next frame (at most 3 bytes). */
        cut = utf8_cut_suffix(raw, m);
        memcpy(l->carry[s], raw + m - cut, cut);
        l->carry_len[s] = cut;
        if (m == cut)
                return 0;
        text = utf8_sanitize(raw, m - cut, &len);
        if (!text) {
                l->carry_len[s] = 0;
                return live_log_elided(l, s, m);
        }
        r = push(l, s, false, m - cut, text, len);
        if (r < 0)
                l->pos[s] += m - cut;   /* lost: the next event's start says so */
        return r;
}

int live_log_elided(LiveLog *l, LiveStreamId s, uint64_t n) {
        if (!l || l->ended)
                return 0;
        /* A character cut before the gap is lost with it. */
        if (n > UINT64_MAX - l->received[s])
                return -EINVAL;
        l->received[s] += n;
        n += l->carry_len[s];
        l->carry_len[s] = 0;
        if (n == 0)
                return 0;
        if (push(l, s, true, n, NULL, 0) < 0) {
                l->pos[s] += n;
                return -ENOMEM;
        }
        return 0;
}

size_t live_log_consume(LiveLog *l, const uint8_t *buf, size_t n, int *ret_report) {
        size_t off = 0;

        *ret_report = 0;
        while (off < n) {
                ExecFrameKind kind;
                const uint8_t *data;
                size_t len;
                uint64_t offset;
                int k = exec_frame_parse(buf + off, n - off, &kind, &offset, &data, &len);

                if (k == 0)
                        break;
                if (k < 0) {
                        *ret_report = k;
                        break;
                }
                (void) live_log_data(l, kind == EXEC_FRAME_STDOUT ? LIVE_STDOUT : LIVE_STDERR, offset, data, len);
                off += (size_t) k;
        }
        return off;
}

void live_log_set_running(LiveLog *l) {
        if (!l || l->running)
                return;
        l->running = true;
        wake_all(l);
}

void live_log_end(LiveLog *l) {
        if (!l || l->ended)
                return;
        l->ended = true;
        wake_all(l);
}

const LiveEvent *live_log_next(const LiveLog *l, const uint64_t pos[static _LIVE_STREAM_MAX]) {
        /* Positions only grow, so the events a reader has had are a prefix: search for its end. */
        uint64_t lo = l->first_seq, hi = l->next_seq;

        while (lo < hi) {
                uint64_t mid = lo + (hi - lo) / 2;
                const LiveEvent *e = l->ring[mid % LIVE_LOG_EVENTS];

                if (e->end[LIVE_STDOUT] <= pos[LIVE_STDOUT] && e->end[LIVE_STDERR] <= pos[LIVE_STDERR])
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < l->next_seq ? l->ring[lo % LIVE_LOG_EVENTS] : NULL;
}

void live_log_watch(LiveLog *l, LiveWatcher *w) {
        w->prev = NULL;
        w->next = l->watchers;
        if (l->watchers)
                l->watchers->prev = w;
        l->watchers = w;
}

void live_log_unwatch(LiveLog *l, LiveWatcher *w) {
        if (w->prev)
                w->prev->next = w->next;
        else if (l->watchers == w)
                l->watchers = w->next;
        if (w->next)
                w->next->prev = w->prev;
        w->prev = w->next = NULL;
}
