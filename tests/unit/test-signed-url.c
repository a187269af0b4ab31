/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cmocka.h>

#include "model/signed-url.h"
#include "util.h"

/* Signed artifact URLs (signed-url.c): the encoding of paths, and verification row by row: every
 * way a URL can be altered is refused, and only the unaltered one at a time before its expiry passes. */

static const uint8_t key[32] = "0123456789abcdef0123456789abcde";   /* 31 chars + NUL = 32 bytes */
static const uint8_t key2[32] = "fedcba9876543210fedcba987654321";

#define ID "exec-1"
#define NOW 1700000000ULL
#define EXPIRES 1700000900ULL

/* ---- encoding ---- */

typedef struct EncodeRow {
        const char *name, *in, *out;
} EncodeRow;

static const EncodeRow encode_rows[] = {
        { "encode plain", "plot.png", "plot.png" },
        { "encode subdir", "a/b/c.csv", "a/b/c.csv" },
        { "encode unreserved", "A-z_0.9~", "A-z_0.9~" },
        { "encode space", "a b", "a%20b" },
        { "encode percent", "100%", "100%25" },
        { "encode query chars", "a?b#c&d=e", "a%3Fb%23c%26d%3De" },
        { "encode plus", "a+b", "a%2Bb" },
        { "encode utf-8", "\xc3\xa9t\xc3\xa9.txt", "%C3%A9t%C3%A9.txt" },
        { "encode backslash quote", "a\\\"b'", "a%5C%22b%27" },
        { "encode empty", "", "" },
};

static void test_encode_row(void **state) {
        const EncodeRow *row = *state;
        _cleanup_free_ char *e = url_path_encode(row->in), *d = NULL;

        assert_non_null(e);
        assert_string_equal(e, row->out);
        /* Decoding gives the original back. */
        assert_int_equal(url_path_decode(e, &d), 0);
        assert_string_equal(d, row->in);
}

typedef struct DecodeRow {
        const char *name, *in, *out;     /* out NULL: -EINVAL */
} DecodeRow;

static const DecodeRow decode_rows[] = {
        { "decode lower hex", "%c3%a9", "\xc3\xa9" },
        { "decode upper hex", "%C3%A9", "\xc3\xa9" },
        { "decode plus stays", "a+b", "a+b" },
        { "decode plain", "x/y", "x/y" },
        { "decode truncated escape", "a%4", NULL },
        { "decode lone percent", "a%", NULL },
        { "decode bad hex", "a%zz", NULL },
        { "decode half bad hex", "a%4g", NULL },
        { "decode NUL byte", "a%00b", NULL },
};

static void test_decode_row(void **state) {
        const DecodeRow *row = *state;
        _cleanup_free_ char *d = NULL;
        int r = url_path_decode(row->in, &d);

        if (!row->out) {
                assert_int_equal(r, -EINVAL);
                assert_null(d);
                return;
        }
        assert_int_equal(r, 0);
        assert_string_equal(d, row->out);
}

/* ---- signing ---- */

static void test_sign_matches_hmac(_unused_ void **state) {
        const char *msg = "GET\n/v1/executions/exec-1/artifacts/plot.png\n1700000900";
        uint8_t mac[32];
        unsigned ml = 0;
        char want[65], got[65];

        assert_non_null(HMAC(EVP_sha256(), key, sizeof(key), (const unsigned char *) msg, strlen(msg), mac, &ml));
        assert_int_equal(ml, 32);
        for (unsigned i = 0; i < 32; i++)
                sprintf(want + 2 * i, "%02x", mac[i]);
        assert_int_equal(signed_url_sign(key, sizeof(key), "GET", "/v1/executions/exec-1/artifacts/plot.png",
                                         EXPIRES, got), 0);
        assert_string_equal(got, want);
}

static void test_build(_unused_ void **state) {
        _cleanup_free_ char *url = NULL, *path = artifact_url_path(ID, "out dir/r\xc3\xa9sult.csv");
        char sig[65];

        assert_non_null(path);
        assert_string_equal(path, "/v1/executions/exec-1/artifacts/out%20dir/r%C3%A9sult.csv");
        assert_int_equal(artifact_url_build(key, sizeof(key), ID, "out dir/r\xc3\xa9sult.csv", EXPIRES, &url), 0);
        assert_int_equal(signed_url_sign(key, sizeof(key), "GET", path, EXPIRES, sig), 0);
        assert_true(startswith(url, path));
        assert_true(endswith(url, sig));
        assert_non_null(strstr(url, "?expires=1700000900&signature="));
}

static void test_key_length(_unused_ void **state) {
        char sig[65];
        _cleanup_free_ char *url = NULL;

        assert_int_equal(signed_url_sign(key, 31, "GET", "/p", EXPIRES, sig), -EINVAL);
        assert_int_equal(signed_url_sign(NULL, 32, "GET", "/p", EXPIRES, sig), -EINVAL);
        assert_int_equal(artifact_url_build(key, 16, ID, "a", EXPIRES, &url), -EINVAL);
        assert_null(url);
}

/* ---- verifying: the valid URL, then every alteration ---- */

typedef struct VerifyRow {
        const char *name;
        const uint8_t *key;               /* NULL: key */
        const char *method;               /* NULL: "GET" */
        const char *path;                 /* NULL: the signed path */
        const char *expires;              /* NULL: "1700000900" */
        const char *signature;            /* NULL: the right one */
        int flip;                         /* != 0: flip this hex digit (1-based) of the right signature */
        bool drop_expires, drop_signature;
        uint64_t now;                     /* 0: NOW */
        int want;
} VerifyRow;

#define SIGNED_PATH "/v1/executions/exec-1/artifacts/data/plot.png"

static const VerifyRow verify_rows[] = {
        { "verify valid", .want = 0 },
        { "verify valid at the last second", .now = EXPIRES, .want = 0 },
        { "verify expired one second later", .now = EXPIRES + 1, .want = -ETIME },
        { "verify expired long ago", .now = EXPIRES + 86400, .want = -ETIME },
        { "verify wrong key", .key = key2, .want = -EACCES },
        { "verify tampered method", .method = "HEAD", .want = -EACCES },
        { "verify tampered path", .path = "/v1/executions/exec-1/artifacts/data/plot.pnG", .want = -EACCES },
        { "verify other execution", .path = "/v1/executions/exec-2/artifacts/data/plot.png", .want = -EACCES },
        { "verify path prefix", .path = "/v1/executions/exec-1/artifacts/data", .want = -EACCES },
        { "verify tampered expiry", .expires = "1700000901", .want = -EACCES },
        { "verify expiry leading zero", .expires = "01700000900", .want = -EBADMSG },
        { "verify expiry signed", .expires = "+1700000900", .want = -EBADMSG },
        { "verify expiry spaces", .expires = " 1700000900", .want = -EBADMSG },
        { "verify expiry not a number", .expires = "tomorrow", .want = -EBADMSG },
        { "verify expiry empty", .expires = "", .want = -EBADMSG },
        { "verify expiry overlong", .expires = "184467440737095516160", .want = -EBADMSG },
        { "verify expiry out of range", .expires = "99999999999999999999", .want = -EBADMSG },
        { "verify expiry missing", .drop_expires = true, .want = -EBADMSG },
        { "verify signature missing", .drop_signature = true, .want = -EBADMSG },
        { "verify signature flipped first", .flip = 1, .want = -EACCES },
        { "verify signature flipped last", .flip = 64, .want = -EACCES },
        { "verify signature upper-case", .signature = "UPPER", .want = -EBADMSG },
        { "verify signature bad hex",
          .signature = "zz00000000000000000000000000000000000000000000000000000000000000", .want = -EBADMSG },
        { "verify signature short",
          .signature = "000000000000000000000000000000000000000000000000000000000000000", .want = -EBADMSG },
        { "verify signature overlong",
          .signature = "00000000000000000000000000000000000000000000000000000000000000000", .want = -EBADMSG },
        { "verify signature empty", .signature = "", .want = -EBADMSG },
        { "verify all zeros", .signature = "0000000000000000000000000000000000000000000000000000000000000000",
          .want = -EACCES },
};

static void test_verify_row(void **state) {
        const VerifyRow *row = *state;
        char sig[65], upper[65];
        const char *signature = sig;

        assert_int_equal(signed_url_sign(key, sizeof(key), "GET", SIGNED_PATH, EXPIRES, sig), 0);
        if (row->flip) {
                char *c = &sig[row->flip - 1];
                *c = *c == '0' ? '1' : '0';
        }
        if (row->signature && streq(row->signature, "UPPER")) {
                strcpy(upper, sig);
                for (char *c = upper; *c; c++)
                        if (*c >= 'a' && *c <= 'f')
                                *c = (char) (*c - 'a' + 'A');
                /* A signature without letters would not change; astronomically unlikely, but say so. */
                assert_string_not_equal(upper, sig);
                signature = upper;
        } else if (row->signature)
                signature = row->signature;

        assert_int_equal(signed_url_verify(row->key ?: key, sizeof(key), row->method ?: "GET", row->path ?: SIGNED_PATH,
                                           row->drop_expires ? NULL : row->expires ?: "1700000900",
                                           row->drop_signature ? NULL : signature, row->now ?: NOW),
                         row->want);
}

static void test_verify_overlong_path(_unused_ void **state) {
        _cleanup_free_ char *p = malloc(SIGNED_URL_PATH_MAX + 2);
        char sig[65] = "0000000000000000000000000000000000000000000000000000000000000000";

        assert_non_null(p);
        memset(p, 'a', SIGNED_URL_PATH_MAX + 1);
        p[SIGNED_URL_PATH_MAX + 1] = 0;
        assert_int_equal(signed_url_sign(key, sizeof(key), "GET", p, EXPIRES, sig), -EINVAL);
        assert_int_equal(signed_url_verify(key, sizeof(key), "GET", p, "1700000900", sig, NOW), -EBADMSG);
}

/* Two spellings of the same name verify alike once the server re-encodes the decoded path. */
static void test_verify_canonical(_unused_ void **state) {
        _cleanup_free_ char *url = NULL, *decoded = NULL, *canonical = NULL;
        char sig[65];

        assert_int_equal(artifact_url_build(key, sizeof(key), ID, "r\xc3\xa9sult 1.csv", EXPIRES, &url), 0);
        assert_non_null(strstr(url, "r%C3%A9sult%201.csv"));
        /* A client that sent lower-case escapes: decode, re-encode, verify. */
        assert_int_equal(url_path_decode("r%c3%a9sult%201.csv", &decoded), 0);
        canonical = artifact_url_path(ID, decoded);
        assert_non_null(canonical);
        assert_int_equal(signed_url_sign(key, sizeof(key), "GET", canonical, EXPIRES, sig), 0);
        assert_non_null(strstr(url, sig));
        assert_int_equal(signed_url_verify(key, sizeof(key), "GET", canonical, "1700000900", sig, NOW), 0);
}

int main(void) {
        size_t n = ELEMENTSOF(encode_rows) + ELEMENTSOF(decode_rows) + ELEMENTSOF(verify_rows) + 5, i = 0;
        _cleanup_free_ struct CMUnitTest *tests = calloc(n, sizeof(struct CMUnitTest));

        if (!tests)
                return EXIT_FAILURE;
        for (size_t k = 0; k < ELEMENTSOF(encode_rows); k++)
                tests[i++] = (struct CMUnitTest) { encode_rows[k].name, test_encode_row, NULL, NULL,
                                                   (void *) &encode_rows[k] };
        for (size_t k = 0; k < ELEMENTSOF(decode_rows); k++)
                tests[i++] = (struct CMUnitTest) { decode_rows[k].name, test_decode_row, NULL, NULL,
                                                   (void *) &decode_rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_sign_matches_hmac);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_build);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_key_length);
        for (size_t k = 0; k < ELEMENTSOF(verify_rows); k++)
                tests[i++] = (struct CMUnitTest) { verify_rows[k].name, test_verify_row, NULL, NULL,
                                                   (void *) &verify_rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_verify_overlong_path);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_verify_canonical);
        assert_true(i <= n);
        return _cmocka_run_group_tests("signed-url", tests, i, NULL, NULL);
}
