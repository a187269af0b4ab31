/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The daemon's reader of the egress proxy's event lines (net/proxy-event.h): hostile bytes from a
 * process that parses hostile bytes. The input is split at '\n' as the daemon's line buffer splits
 * it; each line is parsed, and what is accepted must be what the record may show. */

#include <arpa/inet.h>

#include "fuzz.h"
#include "net/allowlist.h"
#include "net/proxy-event.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *p = (const char *) data, *end = p + size;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
                NetLogEntry e;
                const char *why = NULL;
                int r = proxy_event_parse(p, n, &e, &why);

                fuzz_check(r == 0 || r == -EBADMSG || r == -ENOMEM);
                if (r == -EBADMSG)
                        fuzz_check(why && *why);
                if (r == 0) {
                        char name[ALLOWLIST_NAME_MAX + 1];
                        uint8_t a[16];

                        fuzz_check(memchr(e.host, 0, sizeof(e.host)) && memchr(e.method, 0, sizeof(e.method)) &&
                                   memchr(e.reason, 0, sizeof(e.reason)) && memchr(e.address, 0, sizeof(e.address)));
                        fuzz_check(!e.host[0] || allowlist_host_check(e.host, strlen(e.host), name) == ALLOWLIST_OK);
                        fuzz_check(!e.address[0] || inet_pton(AF_INET, e.address, a) == 1 ||
                                   inet_pton(AF_INET6, e.address, a) == 1);
                        fuzz_check(e.decision == NET_DECISION_ALLOWED || e.reason[0]);
                        fuzz_check(!e.reason[0] || proxy_event_reason_is_valid(e.reason));
                }
                p += n + 1;
        }
        return 0;
}
