/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Artifact path escaping: names from the workspace (the sandbox's) as sandboxd shows and serves
 * them. artifacts_path_render(), the printable form of a skipped name, at a generous and at a small
 * bound; url_path_encode() and url_path_decode(), which must be inverses; artifact_url_path() and
 * artifact_url_build(), whose URL must verify (signed_url_verify()) after the server's decode and
 * re-encode. The input's first byte is the small bound; the rest is the name. */

#include <ctype.h>

#include "delivery/artifacts.h"
#include "fuzz.h"
#include "model/signed-url.h"
#include "utf8.h"
#include "util.h"

#define NOW 1700000000

static const uint8_t url_key[SIGNED_URL_KEY_MIN] = "fuzz-artifact-path URL key 0123";

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet();
        return 0;
}

/* Valid UTF-8 without control characters, and every backslash starts a \xNN. */
static void check_rendered(const char *s, size_t max) {
        size_t n = strlen(s);

        fuzz_check(n <= max);
        fuzz_check(utf8_is_valid(s, n));
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) s[i];

                fuzz_check(c >= 0x20 && c != 0x7f);
                fuzz_check(!(c == 0xc2 && i + 1 < n && (unsigned char) s[i + 1] <= 0x9f));
                if (c == '\\')
                        fuzz_check(s[i + 1] == 'x' && isxdigit((unsigned char) s[i + 2]) &&
                                   isxdigit((unsigned char) s[i + 3]));
        }
}

static void fuzz_render(const char *name, size_t small) {
        _cleanup_free_ char *full = artifacts_path_render(name, 4 * strlen(name));
        _cleanup_free_ char *cut = artifacts_path_render(name, small);

        if (!full || !cut)
                abort();
        check_rendered(full, 4 * strlen(name));
        check_rendered(cut, small);
        /* The cut one is a prefix of the whole. */
        fuzz_check(strncmp(full, cut, strlen(cut)) == 0);
}

static void fuzz_url(const char *name) {
        _cleanup_free_ char *enc = url_path_encode(name), *dec = NULL, *url = NULL, *canonical = NULL,
                            *again = NULL;
        const char *q, *sig;
        char expires[32];
        int r;

        if (!enc)
                abort();
        for (const char *p = enc; *p; p++)
                fuzz_check(isalnum((unsigned char) *p) || strchr("-._~/%", *p));
        fuzz_check(url_path_decode(enc, &dec) == 0);
        fuzz_check(streq(dec, name));

        /* What a client sent, decoded and encoded again, decodes to the same. */
        dec = mfree(dec);
        if (url_path_decode(name, &dec) == 0) {
                _cleanup_free_ char *dec2 = NULL;

                again = url_path_encode(dec);
                if (!again)
                        abort();
                fuzz_check(url_path_decode(again, &dec2) == 0);
                fuzz_check(streq(dec2, dec));
        }

        if (isempty(name) || strlen(name) > SIGNED_URL_PATH_MAX)
                return;
        r = artifact_url_build(url_key, sizeof(url_key), "e_fuzz", name, NOW + 60, &url);
        if (r == -EINVAL)
                return;         /* too long once encoded */
        fuzz_check(r == 0);
        q = strchr(url, '?');
        fuzz_check(q && startswith(q, "?expires="));
        sig = strstr(q, "&signature=");
        fuzz_check(sig);
        snprintf(expires, sizeof(expires), "%.*s", (int) (sig - q - strlen("?expires=")), q + strlen("?expires="));
        canonical = artifact_url_path("e_fuzz", name);
        if (!canonical)
                abort();
        fuzz_check((size_t) (q - url) == strlen(canonical) && strncmp(url, canonical, strlen(canonical)) == 0);
        fuzz_check(signed_url_verify(url_key, sizeof(url_key), "GET", canonical, expires,
                                     sig + strlen("&signature="), NOW) == 0);
        fuzz_check(signed_url_verify(url_key, sizeof(url_key), "GET", canonical, expires,
                                     sig + strlen("&signature="), NOW + 61) == -ETIME);
        fuzz_check(signed_url_verify(url_key, sizeof(url_key), "HEAD", canonical, expires,
                                     sig + strlen("&signature="), NOW) == -EACCES);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *name = NULL;

        if (size < 1)
                return 0;
        name = fuzz_text(data + 1, size - 1);
        fuzz_render(name, data[0] % 64);
        fuzz_url(name);
        return 0;
}
