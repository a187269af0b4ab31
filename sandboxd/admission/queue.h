/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The queue of executions waiting for a slot, fair between owners.
 *
 * Each owner ("uid:N", "key:NAME") has its own FIFO; the owners with waiting work form a ring, and
 * slots go round it: after an owner got a slot the next one is asked first. So one caller with 500
 * queued executions delays another caller's single one by at most one slot turn, not by 500. An
 * owner at its running cap (QueueLimits.max_active_per_owner: preparing, downloading inputs,
 * running or finishing all count) is skipped, its work waits.
 *
 * The runs of one session form a lane: only the lane's oldest run is a candidate, and only when the
 * caller's predicate says the lane may run (the session's mount is ready and no run of it is
 * active). A busy lane is skipped without holding up its owner's other work (no head-of-line
 * blocking). Picking costs O(owners in the ring + lanes with waiting runs), never O(entries).
 *
 * Pure: no I/O, no clock, no allocation but the owners'. Entries and lanes are embedded in the
 * caller's objects (a Job, a Session) and must stay put while queued or active. */

#include <stdbool.h>
#include <stdint.h>

typedef struct QueueOwner QueueOwner;
typedef struct QueueLane QueueLane;
typedef struct QueueEntry QueueEntry;

typedef enum QueueEntryState {
        QUEUE_ENTRY_NONE,               /* not in the queue (never, or no longer) */
        QUEUE_ENTRY_WAITING,            /* in its owner's FIFO or its lane */
        QUEUE_ENTRY_ACTIVE,             /* holds a slot */
} QueueEntryState;

struct QueueEntry {
        QueueEntry *prev, *next;        /* in the owner's FIFO or the lane's, while waiting */
        QueueOwner *owner;              /* while waiting or active */
        QueueLane *lane;                /* NULL: none */
        uint64_t seq;                   /* arrival order */
        QueueEntryState state;
        bool callback;                  /* counted in its owner's n_callbacks while waiting or active */
};

struct QueueLane {
        QueueEntry *head, *tail;        /* waiting runs, oldest first */
        QueueLane *prev, *next;         /* in the owner's list of lanes with waiting runs */
        QueueOwner *owner;              /* while it has waiting runs */
};

struct QueueOwner {
        char *name;
        QueueOwner *prev, *next;                /* Queue.owners */
        QueueOwner *ring_prev, *ring_next;      /* the ring of owners with waiting entries */
        bool in_ring;
        QueueEntry *head, *tail;                /* waiting entries without a lane, oldest first */
        QueueLane *lanes;                       /* lanes with waiting entries */
        unsigned n_waiting, n_active;
        unsigned n_callbacks;                   /* entries waiting or active with a callback */
};

typedef struct Queue {
        QueueOwner *owners;             /* every owner with an entry waiting or active */
        QueueOwner *cursor;             /* whose turn it is; NULL when the ring is empty */
        unsigned n_owners, n_ring;
        unsigned n_waiting, n_active;
        uint64_t next_seq;
} Queue;

void queue_init(Queue *q);
/* Forget everything; entries still in it are left as they are (NONE is not written back). */
void queue_done(Queue *q);

/* The owner's accounting, or NULL when it has nothing waiting or active. name NULL is "". */
const QueueOwner *queue_owner_find(const Queue *q, const char *name);

/* Append e (state NONE) to name's FIFO, or to the lane's end. callback: count it in n_callbacks.
 * -ENOMEM (the owner's record), -EBUSY if e is already in the queue, -EINVAL if the lane has
 * waiting runs of another owner. */
int queue_push(Queue *q, QueueEntry *e, const char *name, QueueLane *lane, bool callback);
/* Count e (state NONE) as active for name at once, without waiting (an execution adopted after a
 * restart). Same errors. */
int queue_push_active(Queue *q, QueueEntry *e, const char *name, bool callback);

/* The entry to start next, or NULL: round robin from the cursor over owners below max_active,
 * each owner's oldest candidate (its FIFO's head, or the head of a lane lane_ready accepts). */
QueueEntry *queue_pick(const Queue *q, unsigned max_active_per_owner, bool (*lane_ready)(QueueLane *l, void *userdata),
                       void *userdata);
/* A waiting e takes a slot: it leaves its FIFO or lane, its owner's turn is over. */
void queue_start(Queue *q, QueueEntry *e);
/* e leaves the queue from any state (waiting: cancelled; active: done; none: nothing happens). An
 * owner left with nothing is forgotten. */
void queue_drop(Queue *q, QueueEntry *e);
