/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The live output of one execution (GET /v1/executions/{id}/events): what sandbox-exec forwards in
 * live frames (exec-protocol.h), turned into events of valid UTF-8 (utf8.h's replacement rule; a
 * character cut between two frames is completed by the next) and kept in a bounded backlog:
 * at most LIVE_LOG_EVENTS events and LIVE_LOG_BYTES bytes of text, the oldest dropped first. Readers
 * hold a position, not a copy: a reader behind the backlog learns what it missed as an elided count.
 *
 * Positions: every event carries the position of both streams after it (out_end, err_end): bytes
 * of the program's stream delivered or announced as elided so far. These make the event ids of
 * the events route ("<stage>.<stdout>.<stderr>"), and a reader resumes after an event by skipping
 * every event whose positions are both at or below it. Pure bookkeeping: no I/O, no loop. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LIVE_LOG_EVENTS 1024U
#define LIVE_LOG_BYTES (256U * 1024U)

typedef enum LiveStreamId {
        LIVE_STDOUT,
        LIVE_STDERR,
        _LIVE_STREAM_MAX,
} LiveStreamId;

typedef struct LiveEvent {
        uint64_t seq;
        LiveStreamId stream;
        bool elided;             /* no text: len bytes of the stream were not forwarded */
        uint64_t start[_LIVE_STREAM_MAX], end[_LIVE_STREAM_MAX];   /* positions before and after */
        size_t len;              /* text bytes, or the elided count's... see elided_bytes */
        uint64_t elided_bytes;
        char text[];             /* NUL-terminated, len bytes */
} LiveEvent;

typedef struct LiveWatcher LiveWatcher;
struct LiveWatcher {
        void (*wake)(void *userdata);
        void *userdata;
        LiveWatcher *prev, *next;
};

typedef struct LiveLog {
        unsigned n_ref;
        LiveEvent **ring;                      /* LIVE_LOG_EVENTS slots, from the first event on */
        uint64_t first_seq, next_seq;          /* ring holds [first_seq, next_seq) */
        size_t bytes;                          /* text in the ring */
        uint64_t pos[_LIVE_STREAM_MAX];        /* after the last event */
        uint64_t received[_LIVE_STREAM_MAX];   /* pos + carry_len: the offset the next frame should have */
        uint8_t carry[_LIVE_STREAM_MAX][4];    /* the start of a character the last frame cut */
        size_t carry_len[_LIVE_STREAM_MAX];
        bool running;                          /* the program has started */
        bool ended;                            /* the execution is final (or the log is abandoned) */
        LiveWatcher *watchers;
} LiveLog;

/* The functions that feed a log take NULL (a final job has none) and do nothing. */
LiveLog *live_log_new(void);
LiveLog *live_log_ref(LiveLog *l);
LiveLog *live_log_unref(LiveLog *l);

/* n raw bytes of a stream (at most EXEC_FRAME_DATA_MAX) at offset in it (the sandbox's word): a
 * gap since the last bytes becomes an elided event; bytes at or before what was had are dropped.
 * 0 or -ENOMEM (the bytes are then lost, and the next event's start says so). */
int live_log_data(LiveLog *l, LiveStreamId s, uint64_t offset, const uint8_t *p, size_t n);
/* n bytes of a stream not forwarded, from where the log is. */
int live_log_elided(LiveLog *l, LiveStreamId s, uint64_t n);
/* The live frames at the start of buf (n bytes from the control channel, the sandbox's word) into
 * l: returns how many bytes they take (a frame cut short waits for more). *ret_report is set once
 * buf holds something that is not a frame (the report has begun, -ENOMSG) or a malformed frame
 * (-EBADMSG); from then on everything is the report's. */
size_t live_log_consume(LiveLog *l, const uint8_t *buf, size_t n, int *ret_report);
void live_log_set_running(LiveLog *l);
void live_log_end(LiveLog *l);

/* The first event after positions pos (an event with both end positions at or below pos is one a
 * reader at pos has had), or NULL if there is none yet. */
const LiveEvent *live_log_next(const LiveLog *l, const uint64_t pos[static _LIVE_STREAM_MAX]);

void live_log_watch(LiveLog *l, LiveWatcher *w);
void live_log_unwatch(LiveLog *l, LiveWatcher *w);
