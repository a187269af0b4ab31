/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The egress proxy's request-head parser (issue 16, not wired yet) over what a sandboxed client can
 * send: http_head_parse() under the default caps and under small ones (so that every cap is reached
 * by short inputs), with the invariants a proxy relies on: a complete head ends in CRLF CRLF within
 * the cap and the buffer, its spans point into the buffer, its host passes allowlist_host_check()
 * again unchanged, its port is not 0; a head is complete exactly at head_len (one byte fewer is
 * "more"); a refusal has a reason. The input's text up to its first NUL is also an allowlist entry:
 * what allowlist_entry_parse() accepts parses again into the same entry and allows itself. */

#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "net/allowlist.h"
#include "net/http-head.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet();
        return 0;
}

static bool inside(HttpSpan s, const char *buf, size_t n) {
        return s.n == 0 || (s.p >= buf && s.p + s.n <= buf + n);
}

static void check_head(const char *buf, size_t n, const HttpHeadLimits *l) {
        static HttpHead h, again;
        char name[ALLOWLIST_NAME_MAX + 1];
        HttpHeadError e = { _HTTP_HEAD_REASON_MAX, _ALLOWLIST_REASON_MAX };
        int r = http_head_parse(buf, n, l, &h, &e);

        fuzz_check(r == 1 || r == 0 || r == -EBADMSG);
        if (r == -EBADMSG) {
                fuzz_check(e.reason > HTTP_HEAD_OK && e.reason < _HTTP_HEAD_REASON_MAX);
                fuzz_check(e.host < _ALLOWLIST_REASON_MAX);
                fuzz_check((e.host != ALLOWLIST_OK) ==
                           (e.reason == HTTP_HEAD_BAD_HOST || e.reason == HTTP_HEAD_BAD_HOST_HEADER));
                return;
        }
        fuzz_check(e.reason == _HTTP_HEAD_REASON_MAX);
        if (r == 0)
                return;
        fuzz_check(h.head_len >= 4 && h.head_len <= n && h.head_len <= l->max_head);
        fuzz_check(memcmp(buf + h.head_len - 4, "\r\n\r\n", 4) == 0);
        fuzz_check(!memchr(buf, 0, h.head_len));
        fuzz_check(h.n_headers <= l->max_headers && h.version_minor <= 1 && h.port != 0);
        fuzz_check(inside(h.method, buf, h.head_len) && inside(h.target, buf, h.head_len) &&
                   inside(h.path, buf, h.head_len) && inside(h.query, buf, h.head_len));
        fuzz_check(h.path.n == 0 || h.path.p[0] == '/');
        for (size_t i = 0; i < h.n_headers; i++)
                fuzz_check(h.headers[i].name.n > 0 && inside(h.headers[i].name, buf, h.head_len) &&
                           inside(h.headers[i].value, buf, h.head_len));
        fuzz_check(allowlist_host_check(h.host, strlen(h.host), name) == ALLOWLIST_OK && streq(name, h.host));
        fuzz_check(!(h.chunked && h.has_content_length));
        /* Complete exactly at head_len: the bytes after it do not matter, one byte fewer is "more". */
        fuzz_check(http_head_parse(buf, h.head_len, l, &again, NULL) == 1 && again.head_len == h.head_len);
        fuzz_check(http_head_parse(buf, h.head_len - 1, l, &again, NULL) == 0);
}

static void check_entry(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = fuzz_text(data, MIN(size, (size_t) 512));
        char again_text[ALLOWLIST_NAME_MAX + 16];
        AllowlistEntry e, again;

        if (allowlist_entry_parse(text, &e) != ALLOWLIST_OK)
                return;
        snprintf(again_text, sizeof(again_text), "%s%s:%u", e.wildcard ? "*." : "", e.name,
                 e.port != 0 ? e.port : 443);
        fuzz_check(allowlist_entry_parse(again_text, &again) == ALLOWLIST_OK);
        fuzz_check(streq(again.name, e.name) && again.wildcard == e.wildcard);
        if (!e.wildcard)
                fuzz_check(allowlist_entry_match(&e, e.name, e.port != 0 ? e.port : 80));
        else
                fuzz_check(!allowlist_entry_match(&e, e.name, e.port != 0 ? e.port : 80));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const HttpHeadLimits wide = { .max_head = 65536, .max_headers = HTTP_HEAD_HEADERS_MAX,
                                             .max_line = 8192 };
        static const HttpHeadLimits narrow = { .max_head = 96, .max_headers = 3, .max_line = 40 };

        check_head((const char *) data, size, &wide);
        check_head((const char *) data, size, &narrow);
        check_entry(data, size);
        return 0;
}
