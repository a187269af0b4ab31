/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Live output from the control channel: bytes a sandbox controls. The input's first byte picks how
 * the rest arrives (in pieces of 1..256 bytes, as recv() may cut it); the rest is what sandboxd reads
 * from sandbox-exec before the report: live frames (exec-protocol.h) into a live log (live-log.h),
 * as job-control.c does. Invariants: every event's text is valid UTF-8 without NUL and within the
 * bound, positions never go back and each event starts where the previous one of its stream ended
 * or later, the backlog stays within its caps, and a reader walking from the start sees every
 * event once in order. */

#include "exec-protocol.h"
#include "fuzz.h"
#include "run/live-log.h"
#include "utf8.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t buf[2 * EXEC_FRAME_MAX];
        size_t piece, have = 0, i = 1;
        uint64_t pos[_LIVE_STREAM_MAX] = {}, last_seq = 0;
        bool report = false, first = true;
        LiveLog *l;

        if (size < 1)
                return 0;
        piece = (size_t) data[0] + 1;
        l = live_log_new();
        if (!l)
                return 0;

        while (i < size && !report) {
                size_t n = MIN(piece, size - i), off;
                int r = 0;

                n = MIN(n, sizeof(buf) - have);
                memcpy(buf + have, data + i, n);
                have += n;
                i += n;
                off = live_log_consume(l, buf, have, &r);
                fuzz_check(off <= have);
                if (r < 0)
                        report = true;
                memmove(buf, buf + off, have - off);
                have -= off;
                /* Never more than one frame waits. */
                fuzz_check(report || have < EXEC_FRAME_MAX);
        }

        fuzz_check(l->next_seq - l->first_seq <= LIVE_LOG_EVENTS);
        fuzz_check(l->bytes <= LIVE_LOG_BYTES);
        for (;;) {
                const LiveEvent *e = live_log_next(l, pos);

                if (!e)
                        break;
                fuzz_check(first || e->seq > last_seq);
                first = false;
                last_seq = e->seq;
                for (LiveStreamId s = 0; s < _LIVE_STREAM_MAX; s++) {
                        fuzz_check(e->end[s] >= e->start[s]);
                        fuzz_check(e->end[s] >= pos[s]);
                        fuzz_check(s == e->stream || e->end[s] == e->start[s]);
                }
                fuzz_check(e->end[e->stream] > e->start[e->stream]);
                if (e->elided)
                        fuzz_check(e->len == 0 && e->elided_bytes == e->end[e->stream] - e->start[e->stream]);
                else {
                        fuzz_check(utf8_is_valid(e->text, e->len));
                        fuzz_check(strlen(e->text) == e->len);
                        fuzz_check(e->len <= 3 * (e->end[e->stream] - e->start[e->stream]));
                }
                memcpy(pos, e->end, sizeof(pos));
        }
        live_log_end(l);
        live_log_unref(l);
        return 0;
}
