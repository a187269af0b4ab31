/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "capture.h"
#include "utf8.h"
#include "util.h"

#define ELIDED_MARKER_FMT "\n[... sandboxd: %" PRIu64 " bytes elided ...]\n"

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

int capture_render(const Capture *c, char **ret) {
        _cleanup_free_ uint8_t *raw = NULL;
        char marker[80];
        uint64_t elided = capture_elided(c);
        size_t marker_len = 0, start, n;
        uint8_t *q;
        char *s;

        if (elided > 0) {
                int k = snprintf(marker, sizeof(marker), ELIDED_MARKER_FMT, elided);
                if (k < 0 || (size_t) k >= sizeof(marker))
                        return -EINVAL;
                marker_len = (size_t) k;
        }

        /* Sanitize head, marker and tail in one piece: when nothing was elided the head and tail
         * are contiguous output, and a character split across them must survive. */
        n = c->head_len + marker_len + c->tail_len;
        raw = malloc(n ?: 1);
        if (!raw)
                return -ENOMEM;

        /* The buffers are NULL when their size is 0; memcpy() must not see them even for 0 bytes. */
        q = raw;
        if (c->head_len > 0) {
                memcpy(q, c->head, c->head_len);
                q += c->head_len;
        }
        if (marker_len > 0) {
                memcpy(q, marker, marker_len);
                q += marker_len;
        }
        if (c->tail_len > 0) {
                /* Oldest byte: at tail_pos once the ring has wrapped, at 0 before. */
                start = c->tail_len == c->tail_max ? c->tail_pos : 0;
                memcpy(q, c->tail + start, c->tail_len - start);
                memcpy(q + (c->tail_len - start), c->tail, start);
        }

        s = utf8_sanitize(raw, n, NULL);
        if (!s)
                return -ENOMEM;
        *ret = s;
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
