/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The daemon's side of the network worker's framing: what a worker that libcurl's parsers let a
 * remote server take over could send. The input is the byte stream from the worker: net_frame_next()
 * frame by frame as the daemon reads it (NET_TO_DAEMON), net_frame_id_check(), net_done_parse() of
 * every DONE frame and the net_done_format() round trip of what it accepts. The first frame is also
 * read as the worker reads the daemon's (NET_TO_WORKER, net_request_parse() and its round trip). */

#include <string.h>

#include "fuzz.h"
#include "net/net-frame.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet();
        return 0;
}

static bool clean(const char *s, size_t size) {
        const char *nul = memchr(s, 0, size);

        if (!nul)
                return false;
        for (; s < nul; s++)
                if ((unsigned char) *s < 0x20 || (unsigned char) *s > 0x7e)
                        return false;
        return true;
}

static void check_done(const NetFrame *f) {
        static uint8_t buf[NET_FRAME_PAYLOAD_MAX];
        NetDone d, again;
        NetFrame g;

        if (net_done_parse(f, &d) < 0)
                return;
        fuzz_check(d.transport < _TRANSPORT_MAX);
        fuzz_check(d.http_status == 0 || (d.http_status >= 100 && d.http_status <= 999));
        fuzz_check((d.flags & ~(uint32_t) _NET_DONE_FLAGS_WIRE) == 0);
        fuzz_check(clean(d.refused_address, sizeof(d.refused_address)) && clean(d.error, sizeof(d.error)));
        g = (NetFrame) { .type = NET_FRAME_DONE, .id = f->id, .payload = buf };
        g.len = net_done_format(&d, buf);
        fuzz_check(g.len == f->len && memcmp(buf, f->payload, f->len) == 0);
        fuzz_check(net_done_parse(&g, &again) == 0 && memcmp(&d, &again, sizeof(d)) == 0);
}

static void check_request(const uint8_t *data, size_t size) {
        static uint8_t buf[NET_FRAME_PAYLOAD_MAX];
        NetRequest q;
        NetFrame f;
        int r = net_frame_next(data, size, NET_TO_WORKER, &f);

        fuzz_check(r <= 0 || (f.type == NET_FRAME_REQUEST || f.type == NET_FRAME_BODY || f.type == NET_FRAME_CANCEL));
        if (r <= 0 || f.type != NET_FRAME_REQUEST || net_request_parse(&f, &q) < 0)
                return;
        fuzz_check(q.kind > 0 && q.kind < _NET_REQUEST_KIND_MAX && q.n_headers <= NET_HEADERS_MAX);
        r = net_request_format(&q, buf, sizeof(buf));
        fuzz_check(r == (int) f.len && memcmp(buf, f.payload, f.len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        size_t at = 0;

        check_request(data, size);
        while (at < size) {
                NetFrame f = {};
                int r = net_frame_next(data + at, size - at, NET_TO_DAEMON, &f);

                fuzz_check(r == 0 || r == -EMSGSIZE || r == -EBADMSG || r >= (int) NET_FRAME_HEADER_SIZE);
                if (r <= 0)
                        break;
                fuzz_check((size_t) r <= size - at && f.len == (size_t) r - NET_FRAME_HEADER_SIZE);
                fuzz_check(f.len <= NET_FRAME_PAYLOAD_MAX && f.id != 0 && f.payload == data + at + NET_FRAME_HEADER_SIZE);
                fuzz_check(f.type == NET_FRAME_DATA || f.type == NET_FRAME_DONE);
                /* The daemon's id check, against a daemon that handed out 16 ids. */
                fuzz_check((net_frame_id_check(f.id, 16) == 0) == (f.id <= 16));
                if (f.type == NET_FRAME_DONE)
                        check_done(&f);
                at += (size_t) r;
        }
        return 0;
}
