/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "queue.h"
#include "util.h"

void queue_init(Queue *q) {
        *q = (Queue) {};
}

static QueueOwner *owner_free(QueueOwner *o) {
        if (!o)
                return NULL;
        free(o->name);
        return mfree(o);
}

void queue_done(Queue *q) {
        while (q->owners) {
                QueueOwner *o = q->owners;

                q->owners = o->next;
                owner_free(o);
        }
        queue_init(q);
}

static QueueOwner *owner_lookup(const Queue *q, const char *name) {
        for (QueueOwner *o = q->owners; o; o = o->next)
                if (streq(o->name, name ?: ""))
                        return o;
        return NULL;
}

const QueueOwner *queue_owner_find(const Queue *q, const char *name) {
        return owner_lookup(q, name);
}

static QueueOwner *owner_get(Queue *q, const char *name) {
        QueueOwner *o = owner_lookup(q, name);

        if (o)
                return o;
        o = calloc(1, sizeof(QueueOwner));
        if (!o)
                return NULL;
        o->name = strdup(name ?: "");
        if (!o->name)
                return owner_free(o);
        o->next = q->owners;
        if (q->owners)
                q->owners->prev = o;
        q->owners = o;
        q->n_owners++;
        return o;
}

/* An owner with nothing waiting or active has no state worth keeping. */
static void owner_maybe_forget(Queue *q, QueueOwner *o) {
        if (o->n_waiting > 0 || o->n_active > 0 || o->in_ring)
                return;
        if (o->prev)
                o->prev->next = o->next;
        else
                q->owners = o->next;
        if (o->next)
                o->next->prev = o->prev;
        q->n_owners--;
        owner_free(o);
}

/* A newcomer joins at the end of the round: just before the owner whose turn it is. */
static void ring_insert(Queue *q, QueueOwner *o) {
        if (!q->cursor) {
                o->ring_next = o->ring_prev = o;
                q->cursor = o;
        } else {
                o->ring_next = q->cursor;
                o->ring_prev = q->cursor->ring_prev;
                o->ring_prev->ring_next = o;
                q->cursor->ring_prev = o;
        }
        o->in_ring = true;
        q->n_ring++;
}

static void ring_remove(Queue *q, QueueOwner *o) {
        if (!o->in_ring)
                return;
        if (q->n_ring == 1)
                q->cursor = NULL;
        else {
                if (q->cursor == o)
                        q->cursor = o->ring_next;
                o->ring_prev->ring_next = o->ring_next;
                o->ring_next->ring_prev = o->ring_prev;
        }
        o->ring_next = o->ring_prev = NULL;
        o->in_ring = false;
        q->n_ring--;
}

static void list_append(QueueEntry **head, QueueEntry **tail, QueueEntry *e) {
        e->next = NULL;
        e->prev = *tail;
        if (*tail)
                (*tail)->next = e;
        else
                *head = e;
        *tail = e;
}

static void list_unlink(QueueEntry **head, QueueEntry **tail, QueueEntry *e) {
        if (e->prev)
                e->prev->next = e->next;
        else
                *head = e->next;
        if (e->next)
                e->next->prev = e->prev;
        else
                *tail = e->prev;
        e->prev = e->next = NULL;
}

static void lane_link(QueueOwner *o, QueueLane *l) {
        l->owner = o;
        l->prev = NULL;
        l->next = o->lanes;
        if (o->lanes)
                o->lanes->prev = l;
        o->lanes = l;
}

static void lane_unlink(QueueOwner *o, QueueLane *l) {
        if (l->prev)
                l->prev->next = l->next;
        else
                o->lanes = l->next;
        if (l->next)
                l->next->prev = l->prev;
        l->prev = l->next = NULL;
        l->owner = NULL;
}

/* A waiting entry leaves its FIFO or lane (a lane left empty leaves its owner's list). */
static void entry_unlink_waiting(Queue *q, QueueEntry *e) {
        QueueOwner *o = e->owner;

        if (e->lane) {
                list_unlink(&e->lane->head, &e->lane->tail, e);
                if (!e->lane->head)
                        lane_unlink(o, e->lane);
        } else
                list_unlink(&o->head, &o->tail, e);
        o->n_waiting--;
        q->n_waiting--;
}

static int push(Queue *q, QueueEntry *e, const char *name, QueueLane *lane, bool callback, bool active) {
        QueueOwner *o;

        if (e->state != QUEUE_ENTRY_NONE)
                return -EBUSY;
        o = owner_get(q, name);
        if (!o)
                return -ENOMEM;
        if (lane && lane->head && lane->owner != o) {
                owner_maybe_forget(q, o);
                return -EINVAL;
        }
        *e = (QueueEntry) {
                .owner = o,
                .lane = active ? NULL : lane,
                .seq = q->next_seq++,
                .state = active ? QUEUE_ENTRY_ACTIVE : QUEUE_ENTRY_WAITING,
                .callback = callback,
        };
        if (callback)
                o->n_callbacks++;
        if (active) {
                o->n_active++;
                q->n_active++;
                return 0;
        }
        if (lane) {
                if (!lane->head)
                        lane_link(o, lane);
                list_append(&lane->head, &lane->tail, e);
        } else
                list_append(&o->head, &o->tail, e);
        o->n_waiting++;
        q->n_waiting++;
        if (!o->in_ring)
                ring_insert(q, o);
        return 0;
}

int queue_push(Queue *q, QueueEntry *e, const char *name, QueueLane *lane, bool callback) {
        return push(q, e, name, lane, callback, false);
}

int queue_push_active(Queue *q, QueueEntry *e, const char *name, bool callback) {
        return push(q, e, name, NULL, callback, true);
}

/* The owner's oldest entry that may start: its FIFO's head or a ready lane's head. */
static QueueEntry *owner_candidate(QueueOwner *o, bool (*lane_ready)(QueueLane *l, void *userdata), void *userdata) {
        QueueEntry *best = o->head;

        for (QueueLane *l = o->lanes; l; l = l->next)
                if (l->head && (!best || l->head->seq < best->seq) && (!lane_ready || lane_ready(l, userdata)))
                        best = l->head;
        return best;
}

QueueEntry *queue_pick(const Queue *q, unsigned max_active_per_owner, bool (*lane_ready)(QueueLane *l, void *userdata),
                       void *userdata) {
        QueueOwner *o = q->cursor;

        for (unsigned i = 0; o && i < q->n_ring; i++, o = o->ring_next) {
                QueueEntry *e;

                if (o->n_active >= max_active_per_owner)
                        continue;
                e = owner_candidate(o, lane_ready, userdata);
                if (e)
                        return e;
        }
        return NULL;
}

void queue_start(Queue *q, QueueEntry *e) {
        QueueOwner *o = e->owner;

        if (e->state != QUEUE_ENTRY_WAITING)
                return;
        entry_unlink_waiting(q, e);
        e->state = QUEUE_ENTRY_ACTIVE;
        o->n_active++;
        q->n_active++;
        /* Its turn is over: the next owner is asked first next time. */
        if (o->in_ring && q->n_ring > 1)
                q->cursor = o->ring_next;
        if (o->n_waiting == 0)
                ring_remove(q, o);
}

void queue_drop(Queue *q, QueueEntry *e) {
        QueueOwner *o = e->owner;

        switch (e->state) {
        case QUEUE_ENTRY_NONE:
                return;
        case QUEUE_ENTRY_WAITING:
                entry_unlink_waiting(q, e);
                break;
        case QUEUE_ENTRY_ACTIVE:
                o->n_active--;
                q->n_active--;
                break;
        }
        if (e->callback)
                o->n_callbacks--;
        *e = (QueueEntry) {};
        if (o->n_waiting == 0)
                ring_remove(q, o);
        owner_maybe_forget(q, o);
}
