/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Bounded capture of one output stream: the first head_max bytes and the last tail_max bytes are
 * kept, everything between is counted and dropped. Memory use is fixed at init. Pure: no I/O. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CAPTURE_DEFAULT_HEAD (64U * 1024U)
#define CAPTURE_DEFAULT_TAIL (64U * 1024U)

typedef struct Capture {
        uint8_t *head;
        size_t head_max, head_len;
        uint8_t *tail;           /* ring buffer of tail_max bytes */
        size_t tail_max, tail_pos, tail_len;
        uint64_t total_bytes;    /* everything ever appended */
        uint64_t total_lines;    /* '\n' count, plus one for a final unterminated line */
        bool last_newline;       /* last byte appended was '\n' */
} Capture;

/* 0 or -ENOMEM. head_max and tail_max may be 0. */
int capture_init(Capture *c, size_t head_max, size_t tail_max);
void capture_done(Capture *c);

void capture_append(Capture *c, const void *data, size_t n);

/* Bytes not kept (0 when everything fits in head + tail). */
uint64_t capture_elided(const Capture *c);

#define CAPTURE_MARKER_PREFIX "\n[... sandboxd: "
#define CAPTURE_MARKER_SUFFIX " bytes elided ...]\n"
/* The longest marker (N = UINT64_MAX); it has two characters JSON escapes (the newlines). */
#define CAPTURE_MARKER_MAX 55U

/* The kept text as valid UTF-8 (invalid sequences and NULs become U+FFFD): the head, then, if any
 * output is not shown, the marker CAPTURE_MARKER_PREFIX N CAPTURE_MARKER_SUFFIX, then the tail.
 * Bounded by what is delivered, not only by what was kept: the head's text weighs at most head_max
 * and the tail's at most tail_max (utf8.h), each cut at a character boundary; N counts every byte
 * of the stream not shown (*ret_elided, optional, receives it). So the text is at most head_max +
 * tail_max + CAPTURE_MARKER_MAX bytes, and at most 2 * (head_max + tail_max) + CAPTURE_MARKER_MAX + 2
 * bytes as a JSON string (without its quotes). Returns 0 or -ENOMEM; *ret is malloc'ed and
 * NUL-terminated. */
int capture_render(const Capture *c, char **ret, uint64_t *ret_elided);

/* The tail, oldest byte first, into buf (at least tail_len bytes). Returns tail_len. */
size_t capture_tail_copy(const Capture *c, uint8_t *buf);

/* Rebuild a capture from its parts (as sandbox-exec reports them) into an initialised c whose
 * buffers are large enough. -EINVAL if the parts cannot have come from a capture of that size. */
int capture_restore(Capture *c, const void *head, size_t head_len, const void *tail, size_t tail_len,
                    uint64_t total_bytes, uint64_t total_lines);
