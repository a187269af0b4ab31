/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "admission/queue.h"
#include "util.h"

/* The fair queue row by row: a scenario is a list of submissions ("A1" is owner A's first, "A1@s"
 * one in session lane s), a number of slots and a per-owner running cap; the simulation starts
 * what queue_pick() offers while slots are free, then finishes the oldest active entry, until
 * everything has run. The row says in which order they must start. A lane is ready when none of
 * its runs is active (a session's runs are serialized), as in session_may_run(). */

#define SIM_MAX 64

typedef struct SimEntry {
        QueueEntry q;
        char name[16];
        char owner[8];
        int lane;                       /* index into lanes, -1: none */
        bool started, finished;
        unsigned start_order;
} SimEntry;

typedef struct Sim {
        Queue queue;
        SimEntry entries[SIM_MAX];
        size_t n;
        QueueLane lanes[26];
        unsigned lane_active[26];
        unsigned max_owner_active;      /* the most one owner ever had active */
        unsigned lane_calls;            /* how often the predicate was asked */
} Sim;

static bool lane_ready(QueueLane *l, void *userdata) {
        Sim *s = userdata;

        s->lane_calls++;
        return s->lane_active[l - s->lanes] == 0;
}

static SimEntry *sim_entry(Sim *s, QueueEntry *e) {
        return (SimEntry *) ((uint8_t *) e - offsetof(SimEntry, q));
}

static void sim_push(Sim *s, const char *token) {
        SimEntry *x = &s->entries[s->n++];
        const char *at = strchr(token, '@');

        assert_true(s->n <= SIM_MAX);
        *x = (SimEntry) { .lane = -1 };
        snprintf(x->name, sizeof(x->name), "%.*s", at ? (int) (at - token) : (int) strlen(token), token);
        snprintf(x->owner, sizeof(x->owner), "%c", token[0]);
        if (at)
                x->lane = at[1] - 'a';
        assert_int_equal(queue_push(&s->queue, &x->q, x->owner, x->lane >= 0 ? &s->lanes[x->lane] : NULL, false), 0);
}

/* Start everything that may start now; returns how many started. */
static unsigned sim_fill(Sim *s, unsigned slots, unsigned cap, char *order, size_t size, unsigned *n_started) {
        unsigned started = 0;

        while (s->queue.n_active < slots) {
                QueueEntry *e = queue_pick(&s->queue, cap, lane_ready, s);
                SimEntry *x;

                if (!e)
                        break;
                x = sim_entry(s, e);
                queue_start(&s->queue, e);
                x->started = true;
                x->start_order = (*n_started)++;
                if (x->lane >= 0)
                        s->lane_active[x->lane]++;
                s->max_owner_active = MAX(s->max_owner_active, queue_owner_find(&s->queue, x->owner)->n_active);
                if (*order)
                        strncat(order, " ", size - strlen(order) - 1);
                strncat(order, x->name, size - strlen(order) - 1);
                started++;
        }
        return started;
}

static void sim_run(Sim *s, unsigned slots, unsigned cap, char *order, size_t size) {
        unsigned n_started = 0;

        *order = 0;
        for (;;) {
                SimEntry *oldest = NULL;

                (void) sim_fill(s, slots, cap, order, size, &n_started);
                for (size_t i = 0; i < s->n; i++)
                        if (s->entries[i].started && !s->entries[i].finished &&
                            (!oldest || s->entries[i].start_order < oldest->start_order))
                                oldest = &s->entries[i];
                if (!oldest)
                        break;
                oldest->finished = true;
                if (oldest->lane >= 0)
                        s->lane_active[oldest->lane]--;
                queue_drop(&s->queue, &oldest->q);
        }
}

typedef struct Row {
        const char *name;
        const char *pushes;
        unsigned slots, cap;
        const char *want;
} Row;

static const Row rows[] = {
        { "one owner is FIFO", "A1 A2 A3", 1, 99, "A1 A2 A3" },
        { "a second owner's one job comes right after the first start", "A1 A2 A3 A4 A5 B1", 1, 99,
          "A1 B1 A2 A3 A4 A5" },
        { "three owners take turns", "A1 A2 A3 B1 B2 C1", 1, 99, "A1 B1 C1 A2 B2 A3" },
        { "arrival order between owners does not matter, turns do", "B1 A1 A2 A3 C1", 1, 99, "B1 A1 C1 A2 A3" },
        { "two slots", "A1 A2 A3 A4 B1", 2, 99, "A1 B1 A2 A3 A4" },
        { "running cap per owner: a free slot stays free rather than a third", "A1 A2 A3 B1 B2", 3, 1,
          "A1 B1 A2 B2 A3" },
        { "running cap 2 of 4 slots", "A1 A2 A3 A4 A5 B1", 4, 2, "A1 B1 A2 A3 A4 A5" },
        { "a session's runs are serialized, the owner's other work passes", "A1@s A2@s A3 A4", 2, 99,
          "A1 A3 A2 A4" },
        { "a busy session does not block another owner", "A1@s A2@s A3@s B1", 2, 99, "A1 B1 A2 A3" },
        { "two sessions of one owner run side by side", "A1@s A2@s A3@t A4@t", 2, 99, "A1 A3 A2 A4" },
        { "oldest first among the owner's ready candidates", "A1@s A2 A3@s A4", 1, 99, "A1 A2 A3 A4" },
        { "only sessions, all busy but one", "A1@s A2@s A3@s", 3, 99, "A1 A2 A3" },
};

static void test_rows(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_free_ char *copy = strdup(rows[i].pushes);
                char order[512], *save = NULL;
                Sim *s = calloc(1, sizeof(Sim));

                assert_non_null(s);
                queue_init(&s->queue);
                for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save))
                        sim_push(s, w);
                sim_run(s, rows[i].slots, rows[i].cap, order, sizeof(order));
                if (!streq(order, rows[i].want)) {
                        print_error("row '%s': started %s, want %s\n", rows[i].name, order, rows[i].want);
                        fail();
                }
                assert_true(s->max_owner_active <= rows[i].cap);
                /* Everything ran and left: no owner is remembered, nothing is counted. */
                assert_int_equal(s->queue.n_waiting, 0);
                assert_int_equal(s->queue.n_active, 0);
                assert_int_equal(s->queue.n_owners, 0);
                assert_null(s->queue.cursor);
                queue_done(&s->queue);
                free(s);
        }
}

/* 300 waiting behind a busy session: a pick looks at each owner once and asks about each lane once,
 * whatever the number of entries behind it. */
static void test_pick_cost(_unused_ void **state) {
        Sim *s = calloc(1, sizeof(Sim));
        static QueueEntry many[300];
        QueueLane *lane;
        QueueEntry *e;
        char order[64] = "";
        unsigned n_started = 0;

        assert_non_null(s);
        queue_init(&s->queue);
        sim_push(s, "A0@s");
        lane = &s->lanes['s' - 'a'];
        for (size_t i = 0; i < ELEMENTSOF(many); i++) {
                many[i] = (QueueEntry) {};
                assert_int_equal(queue_push(&s->queue, &many[i], "A", lane, false), 0);
        }
        assert_int_equal(sim_fill(s, 8, 8, order, sizeof(order), &n_started), 1);
        assert_string_equal(order, "A0");
        assert_int_equal(s->queue.n_waiting, ELEMENTSOF(many));

        s->lane_calls = 0;
        assert_null(queue_pick(&s->queue, 8, lane_ready, s));
        assert_int_equal(s->lane_calls, 1);

        sim_push(s, "C1");
        s->lane_calls = 0;
        e = queue_pick(&s->queue, 8, lane_ready, s);
        assert_non_null(e);
        assert_string_equal(sim_entry(s, e)->name, "C1");
        assert_true(s->lane_calls <= 1);

        /* The session's run ends: the next of the 300 is offered, the oldest. */
        s->lane_active['s' - 'a'] = 0;
        queue_drop(&s->queue, &s->entries[0].q);
        s->lane_calls = 0;
        e = queue_pick(&s->queue, 8, lane_ready, s);
        assert_ptr_equal(e, &many[0]);
        assert_true(s->lane_calls <= 1);
        queue_done(&s->queue);
        free(s);
}

/* Someone who starts waiting joins at the end of the current round, not at its front. */
static void test_newcomer_waits_one_round(_unused_ void **state) {
        Sim *s = calloc(1, sizeof(Sim));
        char order[256] = "";
        unsigned n = 0;
        QueueEntry *e;

        assert_non_null(s);
        queue_init(&s->queue);
        sim_push(s, "A1");
        sim_push(s, "A2");
        sim_push(s, "B1");
        sim_push(s, "B2");
        assert_int_equal(sim_fill(s, 1, 99, order, sizeof(order), &n), 1);      /* A1; B's turn now */
        sim_push(s, "C1");                                                      /* after B and A */
        queue_drop(&s->queue, &s->entries[0].q);
        assert_int_equal(sim_fill(s, 1, 99, order, sizeof(order), &n), 1);
        queue_drop(&s->queue, &s->entries[2].q);
        assert_int_equal(sim_fill(s, 1, 99, order, sizeof(order), &n), 1);
        assert_string_equal(order, "A1 B1 A2");
        e = queue_pick(&s->queue, 99, lane_ready, s);
        assert_string_equal(sim_entry(s, e)->name, "C1");
        queue_done(&s->queue);
        free(s);
}

static void test_counters_and_errors(_unused_ void **state) {
        Queue q;
        QueueEntry a = {}, b = {}, c = {}, d = {};
        QueueLane lane = {};
        const QueueOwner *o;

        queue_init(&q);
        assert_null(queue_owner_find(&q, "uid:0"));
        assert_int_equal(queue_push(&q, &a, "uid:0", NULL, true), 0);
        assert_int_equal(queue_push(&q, &a, "uid:0", NULL, true), -EBUSY);
        assert_int_equal(queue_push(&q, &b, "uid:0", &lane, false), 0);
        /* A lane is one owner's (a session belongs to its creator). */
        assert_int_equal(queue_push(&q, &c, "key:other", &lane, false), -EINVAL);
        assert_int_equal(c.state, QUEUE_ENTRY_NONE);
        assert_null(queue_owner_find(&q, "key:other"));
        /* Adopted after a restart: active at once, never waiting. */
        assert_int_equal(queue_push_active(&q, &c, "key:other", true), 0);
        assert_int_equal(queue_push(&q, &d, NULL, NULL, false), 0);

        o = queue_owner_find(&q, "uid:0");
        assert_non_null(o);
        assert_int_equal(o->n_waiting, 2);
        assert_int_equal(o->n_active, 0);
        assert_int_equal(o->n_callbacks, 1);
        o = queue_owner_find(&q, "key:other");
        assert_int_equal(o->n_active, 1);
        assert_int_equal(o->n_callbacks, 1);
        assert_false(o->in_ring);
        assert_non_null(queue_owner_find(&q, ""));
        assert_int_equal(q.n_waiting, 3);
        assert_int_equal(q.n_active, 1);
        assert_int_equal(q.n_owners, 3);
        assert_int_equal(q.n_ring, 2);

        /* Cancelled while waiting, in the middle of a lane-less FIFO and from a lane. */
        queue_drop(&q, &a);
        assert_int_equal(a.state, QUEUE_ENTRY_NONE);
        assert_int_equal(queue_owner_find(&q, "uid:0")->n_callbacks, 0);
        queue_drop(&q, &a);                     /* twice: nothing happens */
        queue_drop(&q, &b);
        assert_null(queue_owner_find(&q, "uid:0"));
        assert_null(lane.head);
        assert_null(lane.owner);
        queue_start(&q, &d);
        assert_int_equal(q.n_ring, 0);
        assert_null(q.cursor);
        queue_start(&q, &d);                    /* not waiting: nothing happens */
        assert_int_equal(q.n_active, 2);
        queue_drop(&q, &c);
        queue_drop(&q, &d);
        assert_int_equal(q.n_owners, 0);
        assert_int_equal(q.n_active, 0);
        assert_null(queue_pick(&q, 1, NULL, NULL));
        queue_done(&q);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows),
                cmocka_unit_test(test_pick_cost),
                cmocka_unit_test(test_newcomer_waits_one_round),
                cmocka_unit_test(test_counters_and_errors),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
