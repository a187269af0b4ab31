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

#define OFF0 "\x00\x00\x00\x00\x00\x00\x00\x00"

static void test_frame_rows(_unused_ void **state) {
        static const struct {
                const char *name;
                const char *bytes;
                size_t n;
                int want;               /* exec_frame_parse()'s return */
                char kind;
                uint64_t offset;
                size_t data_len;
        } rows[] = {
                { "empty", "", 0, 0, 0, 0, 0 },
                { "report text", "phase=run\n", 10, -ENOMSG, 0, 0, 0 },
                { "magic only", "\x1e", 1, 0, 0, 0, 0 },
                { "unknown kind at once", "\x1ex", 2, -EBADMSG, 0, 0, 0 },
                { "header cut", "\x1eo\x00", 3, 0, 0, 0, 0 },
                { "payload cut", "\x1eo\x00\x0b" OFF0 "ab", 14, 0, 0, 0, 0 },
                { "stdout 3 at 0", "\x1eo\x00\x0b" OFF0 "abc", 15, 15, 'o', 0, 3 },
                { "stderr 1 at 258, more after", "\x1e" "e\x00\x09\x00\x00\x00\x00\x00\x00\x01\x02" "zphase", 18, 13,
                  'e', 258, 1 },
                { "no data", "\x1eo\x00\x08" OFF0, 12, -EBADMSG, 0, 0, 0 },
                { "short of the offset", "\x1eo\x00\x04\x00\x00\x00\x00", 8, -EBADMSG, 0, 0, 0 },
                { "over the cap", "\x1eo\x40\x09", 4, -EBADMSG, 0, 0, 0 },
                { "offset wraps", "\x1eo\x00\x0a\xff\xff\xff\xff\xff\xff\xff\xff" "ab", 14, -EBADMSG, 0, 0, 0 },
                { "offset at the end", "\x1eo\x00\x09\xff\xff\xff\xff\xff\xff\xff\xfe" "a", 13, 13, 'o',
                  UINT64_MAX - 1, 1 },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                ExecFrameKind kind = 0;
                const uint8_t *data = NULL;
                size_t len = 0;
                uint64_t offset = 0;
                int k = exec_frame_parse((const uint8_t *) rows[i].bytes, rows[i].n, &kind, &offset, &data, &len);

                print_message("# %s\n", rows[i].name);
                assert_int_equal(k, rows[i].want);
                if (k > 0) {
                        assert_int_equal(kind, rows[i].kind);
                        assert_true(offset == rows[i].offset);
                        assert_int_equal(len, rows[i].data_len);
                        assert_ptr_equal(data, (const uint8_t *) rows[i].bytes + EXEC_FRAME_HEADER + EXEC_FRAME_OFFSET);
                }
        }
}

static void test_frame_header_round_trip(_unused_ void **state) {
        uint8_t buf[EXEC_FRAME_MAX];
        ExecFrameKind kind;
        const uint8_t *data;
        size_t len, h;
        uint64_t offset;

        h = exec_frame_header(buf, EXEC_FRAME_STDERR, UINT64_C(1) << 40, EXEC_FRAME_DATA_MAX);
        assert_int_equal(h, EXEC_FRAME_HEADER + EXEC_FRAME_OFFSET);
        memset(buf + h, 'q', EXEC_FRAME_DATA_MAX);
        assert_int_equal(exec_frame_parse(buf, sizeof(buf), &kind, &offset, &data, &len), (int) sizeof(buf));
        assert_int_equal(kind, EXEC_FRAME_STDERR);
        assert_true(offset == UINT64_C(1) << 40);
        assert_int_equal(len, EXEC_FRAME_DATA_MAX);
        assert_int_equal(exec_frame_parse(buf, sizeof(buf) - 1, &kind, &offset, &data, &len), 0);
}

/* ---- the live log ---- */

static void test_log_utf8_across_frames(_unused_ void **state) {
        LiveLog *l = live_log_new();
        uint64_t pos[2] = {};
        const LiveEvent *e;

        assert_non_null(l);
        /* "€" (e2 82 ac) cut between two frames comes whole in the second event. */
        assert_int_equal(live_log_data(l, LIVE_STDOUT, 0, (const uint8_t *) "a\xe2\x82", 3), 0);
        assert_int_equal(live_log_data(l, LIVE_STDOUT, 3, (const uint8_t *) "\xac" "b", 2), 0);
        /* Invalid bytes and a NUL become U+FFFD. */
        assert_int_equal(live_log_data(l, LIVE_STDERR, 0, (const uint8_t *) "\xff\x00x", 3), 0);
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

        assert_int_equal(live_log_data(l, LIVE_STDOUT, 0, (const uint8_t *) "abc\xe2", 4), 0);
        /* The next frame starts 10 bytes on: 10 not forwarded, and the character cut before them. */
        assert_int_equal(live_log_data(l, LIVE_STDOUT, 14, (const uint8_t *) "xy", 2), 0);
        /* A repeat of bytes it had, and a frame half over them: only the new part counts. */
        assert_int_equal(live_log_data(l, LIVE_STDOUT, 14, (const uint8_t *) "xy", 2), 0);
        assert_int_equal(live_log_data(l, LIVE_STDOUT, 15, (const uint8_t *) "yz", 2), 0);
        assert_int_equal(live_log_data(l, LIVE_STDERR, 0, (const uint8_t *) "E", 1), 0);
        e = live_log_next(l, pos);
        assert_string_equal(e->text, "abc");
        memcpy(mid, e->end, sizeof(mid));
        e = live_log_next(l, mid);
        assert_true(e->elided);
        assert_true(e->elided_bytes == 11 && e->end[LIVE_STDOUT] == 14);
        e = live_log_next(l, e->end);
        assert_string_equal(e->text, "xy");
        e = live_log_next(l, e->end);
        assert_string_equal(e->text, "z");
        assert_true(e->end[LIVE_STDOUT] == 17);
        /* A reader at an event's end gets the next one, not those it had. */
        e = live_log_next(l, e->end);
        assert_string_equal(e->text, "E");
        assert_null(live_log_next(l, e->end));
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
                assert_int_equal(live_log_data(l, LIVE_STDOUT, (uint64_t) i * sizeof(chunk), chunk, sizeof(chunk)), 0);
        assert_true(l->bytes <= LIVE_LOG_BYTES);
        for (unsigned i = 0; i < 3 * LIVE_LOG_EVENTS; i++)
                assert_int_equal(live_log_data(l, LIVE_STDERR, i, (const uint8_t *) "y", 1), 0);
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
        (void) live_log_data(l, LIVE_STDOUT, 0, (const uint8_t *) "z", 1);
        assert_int_equal(n_woken, 3);
        live_log_end(l);
        assert_int_equal(n_woken, 4);
        /* Nothing is taken after the end. */
        (void) live_log_data(l, LIVE_STDOUT, 1, (const uint8_t *) "z", 1);
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
