/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>

#include "signed-url.h"
#include "util.h"

static bool unreserved(unsigned char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
               c == '.' || c == '_' || c == '~';
}

char *url_path_encode(const char *s) {
        static const char hex[] = "0123456789ABCDEF";
        size_t n = strlen(s);
        char *ret, *p;

        if (n > SIZE_MAX / 3 - 1)
                return NULL;
        ret = p = malloc(n * 3 + 1);
        if (!ret)
                return NULL;
        for (const unsigned char *c = (const unsigned char *) s; *c; c++) {
                if (unreserved(*c) || *c == '/')
                        *p++ = (char) *c;
                else {
                        *p++ = '%';
                        *p++ = hex[*c >> 4];
                        *p++ = hex[*c & 15];
                }
        }
        *p = 0;
        return ret;
}

int url_path_decode(const char *s, char **ret) {
        _cleanup_free_ char *out = malloc(strlen(s) + 1);
        char *p = out;

        if (!out)
                return -ENOMEM;
        for (; *s; s++) {
                int a, b;

                if (*s != '%') {
                        *p++ = *s;
                        continue;
                }
                a = unhexchar(s[1]);
                if (a < 0)
                        return -EINVAL;
                b = unhexchar(s[2]);
                if (b < 0)
                        return -EINVAL;
                if (a == 0 && b == 0)
                        return -EINVAL;
                *p++ = (char) (a << 4 | b);
                s += 2;
        }
        *p = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

char *artifact_url_path(const char *execution_id, const char *artifact_path) {
        _cleanup_free_ char *enc = url_path_encode(artifact_path);
        char *ret;

        if (!enc || asprintf(&ret, "/v1/executions/%s/artifacts/%s", execution_id, enc) < 0)
                return NULL;
        return ret;
}

static int hmac_hex(const uint8_t *key, size_t key_len, const char *method, const char *path, const char *expires,
                    char ret_hex[static SIGNED_URL_SIGNATURE_HEX + 1]) {
        _cleanup_free_ char *msg = NULL;
        uint8_t mac[EVP_MAX_MD_SIZE];
        unsigned mac_len = 0;
        int n;

        if (!key || key_len < SIGNED_URL_KEY_MIN || key_len > SIGNED_URL_KEY_MAX)
                return -EINVAL;
        if (isempty(method) || strchr(method, '\n') || !path || strlen(path) > SIGNED_URL_PATH_MAX ||
            strchr(path, '\n'))
                return -EINVAL;
        n = asprintf(&msg, "%s\n%s\n%s", method, path, expires);
        if (n < 0) {
                msg = NULL;
                return -ENOMEM;
        }
        if (!HMAC(EVP_sha256(), key, (int) key_len, (const unsigned char *) msg, (size_t) n, mac, &mac_len) ||
            mac_len != SIGNED_URL_SIGNATURE_HEX / 2)
                return -EIO;
        hexmem(mac, mac_len, ret_hex);
        return 0;
}

int signed_url_sign(const uint8_t *key, size_t key_len, const char *method, const char *canonical_path,
                    uint64_t expires, char ret_hex[static SIGNED_URL_SIGNATURE_HEX + 1]) {
        char e[SIGNED_URL_EXPIRES_MAX + 1];

        snprintf(e, sizeof(e), "%" PRIu64, expires);
        return hmac_hex(key, key_len, method, canonical_path, e, ret_hex);
}

int artifact_url_build(const uint8_t *key, size_t key_len, const char *execution_id, const char *artifact_path,
                       uint64_t expires, char **ret) {
        _cleanup_free_ char *path = artifact_url_path(execution_id, artifact_path);
        char sig[SIGNED_URL_SIGNATURE_HEX + 1];
        int r;

        if (!path)
                return -ENOMEM;
        r = signed_url_sign(key, key_len, "GET", path, expires, sig);
        if (r < 0)
                return r;
        if (asprintf(ret, "%s?expires=%" PRIu64 "&signature=%s", path, expires, sig) < 0)
                return -ENOMEM;
        return 0;
}

int signed_url_verify(const uint8_t *key, size_t key_len, const char *method, const char *canonical_path,
                      const char *expires, const char *signature, uint64_t now_sec) {
        char want[SIGNED_URL_SIGNATURE_HEX + 1];
        uint64_t e;
        size_t n;
        int r;

        if (!expires || !signature)
                return -EBADMSG;
        /* Digits only, no sign, no spaces, no leading zero (one spelling per expiry). */
        n = strlen(expires);
        if (n == 0 || n > SIGNED_URL_EXPIRES_MAX || strspn(expires, "0123456789") != n ||
            (n > 1 && expires[0] == '0') || safe_atou64(expires, &e) < 0)
                return -EBADMSG;
        if (strlen(signature) != SIGNED_URL_SIGNATURE_HEX ||
            !is_lower_hex(signature, SIGNED_URL_SIGNATURE_HEX))
                return -EBADMSG;
        r = hmac_hex(key, key_len, method, canonical_path, expires, want);
        if (r < 0)
                return r == -ENOMEM ? r : -EBADMSG;
        if (CRYPTO_memcmp(want, signature, SIGNED_URL_SIGNATURE_HEX) != 0)
                return -EACCES;
        if (e < now_sec)
                return -ETIME;
        return 0;
}
