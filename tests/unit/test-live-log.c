/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api/events.h"
#include "exec-protocol.h"
#include "run/live-log.h"
#include "util.h"

/* Live output: the frames sandbox-exec sends (exec-protocol.h), the daemon's backlog of events
 * (live-log.h) and the event ids of GET .../events (events.h). */

/* ---- frames, row by row ---- */

static void test_frame_rows(_unused_ void **state) {
        static const struct {
                const char *name;
                const char *bytes;
                size_t n;
                int want;               /* exec_frame_parse()'s return */
                char kind;
                size_t payload_len;
                uint64_t count;
        } rows[] = {
                { "empty", "", 0, 0, 0, 0, 0 },
                { "report text", "phase=run\n", 10, -ENOMSG, 0, 0, 0 },
                { "header cut", "\x1eo\x00", 3, 0, 0, 0, 0 },
                { "payload cut", "\x1eo\x00\x03" "ab", 6, 0, 0, 0, 0 },
                { "stdout 3", "\x1eo\x00\x03" "abc", 7, 7, 'o', 3, 0 },
                { "stderr 1 and more", "\x1e" "e\x00\x01" "zphase", 10, 5, 'e', 1, 0 },
                { "zero length data", "\x1eo\x00\x00", 4, -EBADMSG, 0, 0, 0 },
                { "over the cap", "\x1eo\x40\x01", 4, -EBADMSG, 0, 0, 0 },
                { "unknown kind", "\x1ex\x00\x01" "a", 5, -EBADMSG, 0, 0, 0 },
                { "elided count", "\x1eO\x00\x08\x00\x00\x00\x00\x00\x01\x00\x02", 12, 12, 'O', 8, 0x10002 },
                { "elided bad length", "\x1e" "E\x00\x04\x00\x00\x00\x01", 8, -EBADMSG, 0, 0, 0 },
                { "elided max", "\x1e" "E\x00\x08\xff\xff\xff\xff\xff\xff\xff\xff", 12, 12, 'E', 8, UINT64_MAX },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                ExecFrameKind kind = 0;
                const uint8_t *payload = NULL;
                size_t plen = 0;
                uint64_t count = 0;
                int k = exec_frame_parse((const uint8_t *) rows[i].bytes, rows[i].n, &kind, &payload, &plen, &count);

                print_message("# %s\n", rows[i].name);
                assert_int_equal(k, rows[i].want);
                if (k > 0) {
                        assert_int_equal(kind, rows[i].kind);
                        assert_int_equal(plen, rows[i].payload_len);
                        assert_true(count == rows[i].count);
                        assert_ptr_equal(payload, (const uint8_t *) rows[i].bytes + EXEC_FRAME_HEADER);
                }
        }
}

static void test_frame_header_round_trip(_unused_ void **state) {
        uint8_t buf[EXEC_FRAME_HEADER + EXEC_FRAME_DATA_MAX];
        ExecFrameKind kind;
        const uint8_t *payload;
        size_t plen;
        uint64_t count;

        exec_frame_header(buf, EXEC_FRAME_STDERR, EXEC_FRAME_DATA_MAX);
        memset(buf + EXEC_FRAME_HEADER, 'q', EXEC_FRAME_DATA_MAX);
        assert_int_equal(exec_frame_parse(buf, sizeof(buf), &kind, &payload, &plen, &count), (int) sizeof(buf));
        assert_int_equal(kind, EXEC_FRAME_STDERR);
        assert_int_equal(plen, EXEC_FRAME_DATA_MAX);
        assert_int_equal(exec_frame_parse(buf, sizeof(buf) - 1, &kind, &payload, &plen, &count), 0);
}

/* ---- the live log ---- */

static void test_log_utf8_across_frames(_unused_ void **state) {
        LiveLog *l = live_log_new();
        uint64_t pos[2] = {};
        const LiveEvent *e;

        assert_non_null(l);
        /* "€" (e2 82 ac) cut between two frames comes whole in the second event. */
        assert_int_equal(live_log_data(l, LIVE_STDOUT, (const uint8_t *) "a\xe2\x82", 3), 0);
        assert_int_equal(live_log_data(l, LIVE_STDOUT, (const uint8_t *) "\xac" "b", 2), 0);
        /* Invalid bytes and a NUL become U+FFFD. */
        assert_int_equal(live_log_data(l, LIVE_STDERR, (const uint8_t *) "\xff\x00x", 3), 0);
        e = live_log_next(l, pos);
        assert_non_null(e);
        assert_string_equal(e->text, "a");
        assert_true(e->end[LIVE_STDOUT] == 1 && e->end[LIVE_STDERR] == 0);
        memcpy(pos, e->end, sizeof(pos));
        e = live_log_next(l, pos);
        assert_string_equal(e->text, "\xe2\x82\xac" "b");
        assert_true(e->start[LIVE_STDOUT] == 1 && e->end[LIVE_STDOUT] == 5);
        memcpy(pos, e->end, sizeof(pos));
        e = live_log_next(l, pos);
        assert_int_equal(e->stream, LIVE_STDERR);
        assert_string_equal(e->text, "\xef\xbf\xbd\xef\xbf\xbdx");
        memcpy(pos, e->end, sizeof(pos));
        assert_null(live_log_next(l, pos));
        live_log_unref(l);
}

static void test_log_elided_and_resume(_unused_ void **state) {
        LiveLog *l = live_log_new();
        uint64_t pos[2] = {}, mid[2];
        const LiveEvent *e;

        assert_int_equal(live_log_data(l, LIVE_STDOUT, (const uint8_t *) "abc\xe2", 4), 0);
        /* The cut character goes with the gap: 10 + 1 bytes elided. */
        assert_int_equal(live_log_elided(l, LIVE_STDOUT, 10), 0);
        assert_int_equal(live_log_data(l, LIVE_STDERR, (const uint8_t *) "E", 1), 0);
        e = live_log_next(l, pos);
        memcpy(mid, e->end, sizeof(mid));
        e = live_log_next(l, mid);
        assert_true(e->elided);
        assert_true(e->elided_bytes == 11 && e->end[LIVE_STDOUT] == 14);
        /* A reader at the second event's end gets the third, not the first two again. */
        e = live_log_next(l, e->end);
        assert_string_equal(e->text, "E");
        /* A reader ahead of everything gets nothing. */
        assert_null(live_log_next(l, (uint64_t[]) { 100, 100 }));
        live_log_unref(l);
}

static void test_log_bounded(_unused_ void **state) {
        LiveLog *l = live_log_new();
        uint8_t chunk[EXEC_FRAME_DATA_MAX];
        uint64_t zero[2] = {};
        const LiveEvent *e;

        memset(chunk, 'x', sizeof(chunk));
        /* Far more than the backlog holds, in bytes and in events. */
        for (unsigned i = 0; i < 200; i++)
                assert_int_equal(live_log_data(l, LIVE_STDOUT, chunk, sizeof(chunk)), 0);
        assert_true(l->bytes <= LIVE_LOG_BYTES);
        for (unsigned i = 0; i < 3 * LIVE_LOG_EVENTS; i++)
                assert_int_equal(live_log_data(l, LIVE_STDERR, (const uint8_t *) "y", 1), 0);
        assert_true(l->next_seq - l->first_seq <= LIVE_LOG_EVENTS);
        assert_true(l->bytes <= LIVE_LOG_BYTES);
        /* A reader from the start finds the oldest kept event, whose start says what it missed. */
        e = live_log_next(l, zero);
        assert_non_null(e);
        assert_true(e->start[LIVE_STDOUT] == 200ULL * sizeof(chunk));
        assert_true(e->start[LIVE_STDERR] > 0);
        live_log_unref(l);
}

static int n_woken;
static void wake(void *userdata) {
        n_woken++;
}

static void test_log_watchers(_unused_ void **state) {
        LiveLog *l = live_log_new();
        LiveWatcher a = { .wake = wake }, b = { .wake = wake };

        live_log_watch(l, &a);
        live_log_watch(l, &b);
        n_woken = 0;
        live_log_set_running(l);
        assert_int_equal(n_woken, 2);
        live_log_unwatch(l, &a);
        (void) live_log_data(l, LIVE_STDOUT, (const uint8_t *) "z", 1);
        assert_int_equal(n_woken, 3);
        live_log_end(l);
        assert_int_equal(n_woken, 4);
        /* Nothing is taken after the end. */
        (void) live_log_data(l, LIVE_STDOUT, (const uint8_t *) "z", 1);
        assert_int_equal(n_woken, 4);
        live_log_unwatch(l, &b);
        live_log_unref(l);
}

/* ---- event ids ---- */

static void test_event_id_rows(_unused_ void **state) {
        static const struct {
                const char *id;
                int want;
                unsigned stage;
                uint64_t out, err;
        } rows[] = {
                { "0.0.0", 0, 0, 0, 0 },
                { "2.13.9", 0, 2, 13, 9 },
                { "3.18446744073709551615.0", 0, 3, UINT64_MAX, 0 },
                { "3.18446744073709551616.0", -EINVAL, 0, 0, 0 },
                { "4.0.0", -EINVAL, 0, 0, 0 },
                { "2.1", -EINVAL, 0, 0, 0 },
                { "2.1.2.3", -EINVAL, 0, 0, 0 },
                { "2.-1.0", -EINVAL, 0, 0, 0 },
                { " 2.1.0", -EINVAL, 0, 0, 0 },
                { "", -EINVAL, 0, 0, 0 },
                { "a.b.c", -EINVAL, 0, 0, 0 },
        };

        assert_int_equal(events_parse_id(NULL, &(unsigned) {0}, &(uint64_t) {0}, &(uint64_t) {0}), -EINVAL);
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                unsigned stage = 99;
                uint64_t out = 99, err = 99;

                print_message("# id '%s'\n", rows[i].id);
                assert_int_equal(events_parse_id(rows[i].id, &stage, &out, &err), rows[i].want);
                if (rows[i].want == 0) {
                        assert_int_equal(stage, rows[i].stage);
                        assert_true(out == rows[i].out && err == rows[i].err);
                }
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_frame_rows),
                cmocka_unit_test(test_frame_header_round_trip),
                cmocka_unit_test(test_log_utf8_across_frames),
                cmocka_unit_test(test_log_elided_and_resume),
                cmocka_unit_test(test_log_bounded),
                cmocka_unit_test(test_log_watchers),
                cmocka_unit_test(test_event_id_rows),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
