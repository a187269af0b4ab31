/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <inttypes.h>

#include "capture.h"
#include "utf8.h"
#include "util.h"

#define ELIDED_MARKER_FMT CAPTURE_MARKER_PREFIX "%" PRIu64 CAPTURE_MARKER_SUFFIX

/* 20 digits: UINT64_MAX. */
static_assert(CAPTURE_MARKER_MAX == sizeof(CAPTURE_MARKER_PREFIX) - 1 + 20 + sizeof(CAPTURE_MARKER_SUFFIX) - 1,
              "CAPTURE_MARKER_MAX");

int capture_init(Capture *c, size_t head_max, size_t tail_max) {
        _cleanup_free_ uint8_t *head = NULL, *tail = NULL;

        /* malloc(0) may return NULL or a unique pointer; keep "no buffer" as NULL either way. */
        if (head_max > 0) {
                head = malloc(head_max);
                if (!head)
                        return -ENOMEM;
        }
        if (tail_max > 0) {
                tail = malloc(tail_max);
                if (!tail)
                        return -ENOMEM;
        }

        *c = (Capture) {
                .head = TAKE_PTR(head),
                .head_max = head_max,
                .tail = TAKE_PTR(tail),
                .tail_max = tail_max,
        };
        return 0;
}

void capture_done(Capture *c) {
        free(c->head);
        free(c->tail);
        *c = (Capture) {};
}

static uint64_t count_newlines(const uint8_t *p, size_t n) {
        const uint8_t *end = p + n;
        uint64_t lines = 0;

        while (p < end) {
                const uint8_t *nl = memchr(p, '\n', (size_t) (end - p));
                if (!nl)
                        break;
                lines++;
                p = nl + 1;
        }
        return lines;
}

static void tail_push(Capture *c, const uint8_t *p, size_t n) {
        size_t first;

        if (c->tail_max == 0)
                return;

        /* Only the last tail_max bytes can survive; skipping the rest up front keeps a huge single
         * append to one copy of at most tail_max bytes. */
        if (n >= c->tail_max) {
                memcpy(c->tail, p + (n - c->tail_max), c->tail_max);
                c->tail_pos = 0;
                c->tail_len = c->tail_max;
                return;
        }

        first = MIN(n, c->tail_max - c->tail_pos);
        memcpy(c->tail + c->tail_pos, p, first);
        memcpy(c->tail, p + first, n - first);
        c->tail_pos = (c->tail_pos + n) % c->tail_max;
        c->tail_len = MIN(c->tail_len + n, c->tail_max);
}

void capture_append(Capture *c, const void *data, size_t n) {
        const uint8_t *p = data;
        uint64_t newlines;
        size_t h;

        if (n == 0)
                return;

        /* total_lines carries a +1 for an unterminated last line; take it off before counting and
         * decide afresh from the new last byte. */
        newlines = count_newlines(p, n);
        if (c->total_bytes > 0 && !c->last_newline)
                c->total_lines--;
        c->total_lines += newlines;
        c->last_newline = p[n - 1] == '\n';
        if (!c->last_newline)
                c->total_lines++;
        c->total_bytes += n;

        h = MIN(n, c->head_max - c->head_len);
        if (h > 0) {
                memcpy(c->head + c->head_len, p, h);
                c->head_len += h;
        }
        tail_push(c, p + h, n - h);
}

uint64_t capture_elided(const Capture *c) {
        return c->total_bytes - c->head_len - c->tail_len;
}

int capture_render(const Capture *c, char **ret, uint64_t *ret_elided) {
        _cleanup_free_ uint8_t *raw = NULL;
        char marker[CAPTURE_MARKER_MAX + 1];
        size_t n = c->head_len + c->tail_len, head_end, tail_start, marker_len = 0, head_out, tail_out;
        uint64_t elided;
        char *s, *q;

        /* Head and tail in one piece, oldest byte first. The buffers are NULL when their size is 0;
         * memcpy() must not see them even for 0 bytes. */
        raw = malloc(n ?: 1);
        if (!raw)
                return -ENOMEM;
        if (c->head_len > 0)
                memcpy(raw, c->head, c->head_len);
        (void) capture_tail_copy(c, raw + c->head_len);

        /* What is kept is bounded in bytes of the program's output, but what is delivered is text: an
         * invalid byte becomes U+FFFD (3 bytes), a control character \u00XX in JSON (6). So the head
         * and the tail are each cut, at a character boundary, to what fits their size once rendered
         * (utf8.h: the weight), and the marker counts every byte of output not shown. */
        if (capture_elided(c) == 0 && utf8_fit_prefix(raw, n, c->head_max + c->tail_max, NULL) == n)
                /* All of it: head and tail are contiguous output, a character split across them
                 * survives. */
                head_end = tail_start = n;
        else if (capture_elided(c) == 0) {
                /* All of it kept, but too heavy rendered: the middle goes. */
                head_end = utf8_fit_prefix(raw, n, c->head_max, NULL);
                tail_start = head_end + utf8_fit_suffix(raw + head_end, n - head_end, c->tail_max, NULL);
        } else {
                size_t skip = 0;

                /* A character cut by the elision at the end of the head or the start of the tail
                 * goes with the elided bytes instead of showing as U+FFFD. */
                head_end = utf8_fit_prefix(raw, c->head_len - utf8_cut_suffix(raw, c->head_len), c->head_max,
                                           NULL);
                while (skip < 3 && skip < c->tail_len && (raw[c->head_len + skip] & 0xc0) == 0x80)
                        skip++;
                tail_start = c->head_len + skip;
                tail_start += utf8_fit_suffix(raw + tail_start, n - tail_start, c->tail_max, NULL);
        }
        elided = c->total_bytes - head_end - (n - tail_start);

        if (elided > 0) {
                int k = snprintf(marker, sizeof(marker), ELIDED_MARKER_FMT, elided);
                if (k < 0 || (size_t) k >= sizeof(marker))
                        return -EINVAL;
                marker_len = (size_t) k;
        }

        head_out = utf8_sanitize_to(raw, head_end, NULL);
        tail_out = utf8_sanitize_to(raw + tail_start, n - tail_start, NULL);
        s = malloc(head_out + marker_len + tail_out + 1);
        if (!s)
                return -ENOMEM;
        q = s + utf8_sanitize_to(raw, head_end, s);
        memcpy(q, marker, marker_len);
        q += marker_len;
        q += utf8_sanitize_to(raw + tail_start, n - tail_start, q);
        *q = 0;

        *ret = s;
        if (ret_elided)
                *ret_elided = elided;
        return 0;
}

size_t capture_tail_copy(const Capture *c, uint8_t *buf) {
        size_t start;

        if (c->tail_len == 0)
                return 0;
        start = c->tail_len == c->tail_max ? c->tail_pos : 0;
        memcpy(buf, c->tail + start, c->tail_len - start);
        memcpy(buf + (c->tail_len - start), c->tail, start);
        return c->tail_len;
}

int capture_restore(Capture *c, const void *head, size_t head_len, const void *tail, size_t tail_len,
                    uint64_t total_bytes, uint64_t total_lines) {
        if (head_len > c->head_max || tail_len > c->tail_max || total_bytes < (uint64_t) head_len + tail_len ||
            (total_bytes > (uint64_t) head_len + tail_len && head_len < c->head_max) ||
            total_lines > total_bytes)
                return -EINVAL;

        if (head_len > 0)
                memcpy(c->head, head, head_len);
        c->head_len = head_len;
        if (tail_len > 0)
                memcpy(c->tail, tail, tail_len);
        c->tail_len = tail_len;
        c->tail_pos = c->tail_max > 0 ? tail_len % c->tail_max : 0;
        c->total_bytes = total_bytes;
        c->total_lines = total_lines;
        c->last_newline = false;
        if (tail_len > 0)
                c->last_newline = ((const uint8_t *) tail)[tail_len - 1] == '\n';
        else if (head_len > 0)
                c->last_newline = ((const uint8_t *) head)[head_len - 1] == '\n';
        return 0;
}
