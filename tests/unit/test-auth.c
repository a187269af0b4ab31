/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "api/auth.h"
#include "model/conf.h"
#include "util.h"

/* The key file (auth.c) row by row, the constant-time check, and the two config keys of the
 * network API (Listen=, APIKeysFile=). */

#define KEY_A "tok_alpha_0123456789abcdef0123456789abcdef"
#define KEY_B "tok_beta_fedcba9876543210fedcba9876543210"

/* "sha256:<hex>" of s, as `printf %s "$KEY" | sha256sum` prints it. */
static char *hash_of(const char *s, size_t len) {
        uint8_t d[32];
        unsigned dl = 0;
        char *out = malloc(7 + 64 + 1);

        assert_non_null(out);
        assert_int_equal(EVP_Digest(s, len, d, &dl, EVP_sha256(), NULL), 1);
        assert_int_equal(dl, 32);
        strcpy(out, "sha256:");
        for (size_t i = 0; i < 32; i++)
                sprintf(out + 7 + 2 * i, "%02x", d[i]);
        return out;
}

static char *two_keys_text(void) {
        _cleanup_free_ char *a = hash_of(KEY_A, strlen(KEY_A)), *b = hash_of(KEY_B, strlen(KEY_B));
        char *t = NULL;

        assert_true(asprintf(&t,
                             "# sandboxd API keys\n"
                             "\n"
                             "ci %s\n"
                             "   # indented comment\n"
                             "ops.team-1\t%s   admin  \n",
                             a, b) > 0);
        return t;
}

/* ---- parsing ---- */

static void test_parse_good(_unused_ void **state) {
        _cleanup_(auth_table_freep) AuthTable *t = NULL;
        _cleanup_free_ char *text = two_keys_text(), *error = NULL;
        const char *name = NULL;
        bool admin = true;

        assert_int_equal(auth_parse_text(text, "keys", &t, &error), 0);
        assert_null(error);
        assert_int_equal(auth_table_size(t), 2);

        assert_int_equal(auth_check(t, KEY_A, &name, &admin), 0);
        assert_string_equal(name, "ci");
        assert_false(admin);
        assert_int_equal(auth_check(t, KEY_B, &name, &admin), 0);
        assert_string_equal(name, "ops.team-1");
        assert_true(admin);
}

static void test_parse_empty(_unused_ void **state) {
        _cleanup_(auth_table_freep) AuthTable *t = NULL;
        _cleanup_free_ char *error = NULL;

        /* An empty file is valid: no key is accepted. */
        assert_int_equal(auth_parse_text("# nothing yet\n\n", "keys", &t, &error), 0);
        assert_int_equal(auth_table_size(t), 0);
        assert_int_equal(auth_check(t, KEY_A, NULL, NULL), -EACCES);
        assert_null(auth_table_free(NULL));
}

typedef struct ErrorRow {
        const char *name;
        const char *text;        /* "%s" is replaced by the hash of KEY_A, "%t" by that of KEY_B */
        const char *expect;      /* prefix of the error, after "keys:" */
} ErrorRow;

static const ErrorRow error_rows[] = {
        { "error: one field",            "# c\nci\n",                    "2: expected 'NAME sha256:HASH [admin]'" },
        { "error: four fields",          "ci %s admin extra\n",          "1: expected 'NAME sha256:HASH [admin]'" },
        { "error: name with a slash",    "\n\nc/i %s\n",                 "3: invalid key name 'c/i'" },
        { "error: name with a colon",    "key:ci %s\n",                  "1: invalid key name 'key:ci'" },
        { "error: name too long",
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa %s\n",
          "1: invalid key name" },
        { "error: plaintext key",        "ci " KEY_A "\n",               "1: key 'ci': the hash must be" },
        { "error: other algorithm",      "ci md5:0123456789abcdef0123456789abcdef\n", "1: key 'ci': the hash must be" },
        { "error: short hash",           "ci sha256:abcdef\n",           "1: key 'ci': the hash must be" },
        { "error: non-hex hash",
          "ci sha256:zz23456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
          "1: key 'ci': the hash must be" },
        { "error: unknown flag",         "ci %s root\n",                 "1: key 'ci': unknown flag 'root'" },
        { "error: duplicate name",       "ci %s\nci %t\n",               "2: key name 'ci' already used at line 1" },
        { "error: duplicate hash",       "ci %s\n# x\nops %s admin\n",   "3: key 'ops' has the same hash as 'ci' (line 1)" },
};

static char *expand(const char *tmpl) {
        _cleanup_free_ char *a = hash_of(KEY_A, strlen(KEY_A)), *b = hash_of(KEY_B, strlen(KEY_B));
        char *out = calloc(1, strlen(tmpl) * 40 + 1), *o = out;

        assert_non_null(out);
        for (const char *p = tmpl; *p; p++) {
                if (p[0] == '%' && (p[1] == 's' || p[1] == 't')) {
                        o = stpcpy(o, p[1] == 's' ? a : b);
                        p++;
                } else
                        *o++ = *p;
        }
        *o = 0;
        return out;
}

static void test_error_row(void **state) {
        const ErrorRow *row = *state;
        _cleanup_(auth_table_freep) AuthTable *t = NULL;
        _cleanup_free_ char *text = expand(row->text), *error = NULL, *expect = NULL;

        assert_int_equal(auth_parse_text(text, "keys", &t, &error), -EINVAL);
        assert_null(t);
        assert_non_null(error);
        assert_true(asprintf(&expect, "keys:%s", row->expect) > 0);
        if (!startswith(error, expect))
                fail_msg("error '%s' does not start with '%s'", error, expect);
        /* A plaintext key pasted by mistake is never echoed into the logs. */
        assert_null(strstr(error, KEY_A));
}

/* ---- loading: mode and ownership ---- */

static char *write_key_file(const char *dir, const char *name, const char *text, mode_t mode) {
        char *p = NULL;
        _cleanup_close_ int fd = -EBADF;

        assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, text, strlen(text)), 0);
        assert_int_equal(fchmod(fd, mode), 0);
        return p;
}

static void test_load(_unused_ void **state) {
        char dir[] = UNIT_TEST_BUILD_DIR "/test-auth.XXXXXX";
        _cleanup_free_ char *text = two_keys_text(), *error = NULL, *p600 = NULL, *p640 = NULL, *p644 = NULL,
                            *p602 = NULL, *p660 = NULL, *p620 = NULL, *missing = NULL, *link = NULL;
        AuthTable *t = NULL;
        const char *name;
        bool admin;

        assert_non_null(mkdtemp(dir));
        p600 = write_key_file(dir, "k600", text, 0600);
        p640 = write_key_file(dir, "k640", text, 0640);
        p644 = write_key_file(dir, "k644", text, 0644);
        p602 = write_key_file(dir, "k602", text, 0602);
        p660 = write_key_file(dir, "k660", text, 0660);
        p620 = write_key_file(dir, "k620", text, 0620);

        assert_int_equal(auth_load(p600, &t, &error), 0);
        assert_int_equal(auth_table_size(t), 2);
        assert_int_equal(auth_check(t, KEY_B, &name, &admin), 0);
        assert_string_equal(name, "ops.team-1");
        assert_true(admin);
        t = auth_table_free(t);

        /* Group-readable is fine (root:sandboxd 0640). */
        assert_int_equal(auth_load(p640, &t, &error), 0);
        t = auth_table_free(t);

        /* World-readable: refused, and the message says why and what to do. */
        assert_int_equal(auth_load(p644, &t, &error), -EPERM);
        assert_null(t);
        assert_non_null(error);
        assert_non_null(startswith(error, p644));
        assert_non_null(strstr(error, "others can read"));
        assert_non_null(strstr(error, "0644"));
        assert_non_null(strstr(error, "chmod o-rwx"));

        /* World-writable: anyone could add an admin key. */
        assert_int_equal(auth_load(p602, &t, &error), -EPERM);
        assert_non_null(strstr(error, "others can write"));

        /* Group-writable: the group may read the hashes, but not add an admin key. */
        assert_int_equal(auth_load(p660, &t, &error), -EPERM);
        assert_null(t);
        assert_non_null(startswith(error, p660));
        assert_non_null(strstr(error, "refusing the API key file: its group can write it (mode 0660)"));
        assert_non_null(strstr(error, "chmod g-w"));
        assert_int_equal(auth_load(p620, &t, &error), -EPERM);
        assert_non_null(strstr(error, "its group can write it (mode 0620)"));

        /* A good file in a directory its group (or anyone) can write: it could be replaced. */
        assert_int_equal(chmod(dir, 0770), 0);
        assert_int_equal(auth_load(p600, &t, &error), -EPERM);
        assert_null(t);
        assert_non_null(startswith(error, p600));
        assert_non_null(strstr(error, "its group can write its directory"));
        assert_non_null(strstr(error, dir));
        assert_int_equal(chmod(dir, 0777), 0);
        assert_int_equal(auth_load(p600, &t, &error), -EPERM);
        assert_non_null(strstr(error, "others can write its directory"));
        assert_int_equal(chmod(dir, 0700), 0);

        /* Never through a symbolic link. */
        assert_true(asprintf(&link, "%s/link", dir) > 0);
        assert_int_equal(symlink("k600", link), 0);
        assert_int_equal(auth_load(link, &t, &error), -ELOOP);
        assert_non_null(strstr(error, "symbolic link"));

        assert_true(asprintf(&missing, "%s/none", dir) > 0);
        assert_int_equal(auth_load(missing, &t, &error), -ENOENT);
        assert_non_null(startswith(error, missing));

        /* A directory is not a key file. */
        assert_int_equal(auth_load(dir, &t, &error), -EBADFD);

        /* Parse errors name the file and line. */
        unlink(p600);
        free(p600);
        p600 = write_key_file(dir, "k600", "# one\nci sha256:00\n", 0600);
        assert_int_equal(auth_load(p600, &t, &error), -EINVAL);
        {
                _cleanup_free_ char *expect = NULL;
                assert_true(asprintf(&expect, "%s:2: key 'ci'", p600) > 0);
                assert_non_null(startswith(error, expect));
        }

        unlink(p600);
        unlink(p640);
        unlink(p644);
        unlink(p602);
        unlink(p660);
        unlink(p620);
        unlink(link);
        assert_int_equal(rmdir(dir), 0);
}

/* ---- checking ---- */

static void test_check(_unused_ void **state) {
        _cleanup_(auth_table_freep) AuthTable *t = NULL;
        _cleanup_free_ char *text = two_keys_text(), *error = NULL, *long_text = NULL, *long_hash = NULL;
        char longest[AUTH_TOKEN_MAX + 2];
        const char *name = "untouched";
        bool admin = false;

        assert_int_equal(auth_parse_text(text, "keys", &t, &error), 0);

        /* Wrong keys, and nothing is returned. */
        assert_int_equal(auth_check(t, "tok_alpha_0123456789abcdef0123456789abcdeX", &name, &admin), -EACCES);
        assert_int_equal(auth_check(t, KEY_A "x", &name, &admin), -EACCES);
        assert_int_equal(auth_check(t, "ci", &name, &admin), -EACCES);   /* the name is not the key */
        assert_string_equal(name, "untouched");
        assert_false(admin);

        /* Empty, absent, and no table at all. */
        assert_int_equal(auth_check(t, "", &name, &admin), -EINVAL);
        assert_int_equal(auth_check(t, NULL, &name, &admin), -EINVAL);
        assert_int_equal(auth_check(NULL, KEY_A, &name, &admin), -EACCES);

        /* The longest token looked at works; one byte more is refused before hashing, even if
         * its hash were in the table. */
        memset(longest, 'k', sizeof(longest) - 1);
        longest[AUTH_TOKEN_MAX] = 0;
        long_hash = hash_of(longest, AUTH_TOKEN_MAX);
        auth_table_free(TAKE_PTR(t));
        assert_true(asprintf(&long_text, "%s\nlong %s\n", text, long_hash) > 0);
        assert_int_equal(auth_parse_text(long_text, "keys", &t, &error), 0);
        assert_int_equal(auth_check(t, longest, &name, &admin), 0);
        assert_string_equal(name, "long");
        assert_false(admin);
        longest[AUTH_TOKEN_MAX] = 'k';
        longest[AUTH_TOKEN_MAX + 1] = 0;
        assert_int_equal(auth_check(t, longest, &name, &admin), -E2BIG);

        /* The other keys still work, whatever their position. */
        assert_int_equal(auth_check(t, KEY_A, &name, &admin), 0);
        assert_string_equal(name, "ci");
        assert_int_equal(auth_check(t, KEY_B, &name, &admin), 0);
        assert_string_equal(name, "ops.team-1");
        assert_true(admin);
}

/* ---- the length a key needs ---- */

typedef struct StrengthRow {
        const char *name;
        const char *key;
        size_t min;              /* auth_key_min_length() */
} StrengthRow;

static const StrengthRow strength_rows[] = {
        { "strength: decimal",              "0123456789",                                39 },
        { "strength: hex, lower",           "0123456789abcdef",                          32 },
        { "strength: hex, upper",           "DEADBEEF",                                  32 },
        { "strength: base64url",            "abc-_XYZ",                                  22 },
        { "strength: base64",               "ab+/cd==",                                  22 },
        { "strength: other characters",     "p@ss w0rd!",                                22 },
        { "strength: token_urlsafe(32)",    "Cg2xCw3p1vXy6rJtR1Lj8b4yS4b8Pj3F1cQ4Yb1xG1w", 22 },
        { "strength: openssl rand -hex 32",
          "5c8e2b6f1d3a9e0c7b4f2a8d6e1c3b5a9f0e2d4c6b8a1f3e5d7c9b0a2e4f6d8c",            32 },
        { "strength: empty",                "",                                          39 },
};

static void test_strength_row(void **state) {
        const StrengthRow *row = *state;

        assert_int_equal(auth_key_min_length(row->key, strlen(row->key)), row->min);
}

/* A key in the file but too short for its alphabet is refused when presented, with its name for
 * the log; one just long enough works; a short key that is not in the file is simply unknown. */
static void test_check_weak(_unused_ void **state) {
        static const struct {
                const char *key;
                int ret;
        } rows[] = {
                { "0123456789012345678901234567890123456789",  0 },             /* 40 decimal digits */
                { "01234567890123456789012345678901234567",    -EKEYREJECTED }, /* 38 */
                { "0123456789abcdef0123456789abcdef",          0 },             /* 32 hex digits */
                { "0123456789abcdef0123456789abcde",           -EKEYREJECTED }, /* 31 */
                { "abcdefghijklmnopqrstuv",                    0 },             /* 22 base64url */
                { "abcdefghijklmnopqrstu",                     -EKEYREJECTED }, /* 21 */
                { "hunter2",                                   -EKEYREJECTED },
        };
        _cleanup_free_ char *text = NULL, *error = NULL;
        _cleanup_(auth_table_freep) AuthTable *t = NULL;
        size_t off = 0;

        text = calloc(ELEMENTSOF(rows), 100);
        assert_non_null(text);
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_free_ char *h = hash_of(rows[i].key, strlen(rows[i].key));

                off += (size_t) sprintf(text + off, "k%zu %s%s\n", i, h, i == 1 ? " admin" : "");
        }
        assert_int_equal(auth_parse_text(text, "keys", &t, &error), 0);
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const char *name = NULL;
                char want[16];
                bool admin = false;

                snprintf(want, sizeof(want), "k%zu", i);
                if (auth_check(t, rows[i].key, &name, &admin) != rows[i].ret)
                        fail_msg("'%s': want %d", rows[i].key, rows[i].ret);
                assert_non_null(name);
                assert_string_equal(name, want);
                assert_true(admin == (i == 1));
        }
        /* Short and unknown: -EACCES, nothing named. */
        {
                const char *name = NULL;

                assert_int_equal(auth_check(t, "hunter3", &name, NULL), -EACCES);
                assert_null(name);
        }
}

static void test_bearer(_unused_ void **state) {
        assert_string_equal(auth_bearer_token("Bearer abc"), "abc");
        assert_string_equal(auth_bearer_token("bearer  abc"), "abc");
        assert_string_equal(auth_bearer_token("BEARER\tabc"), "abc");
        assert_string_equal(auth_bearer_token("Bearer "), "");            /* then auth_check: -EINVAL */
        assert_null(auth_bearer_token("Bearer"));
        assert_null(auth_bearer_token("Bearerabc"));
        assert_null(auth_bearer_token("Basic YWxhZGRpbjpvcGVuc2VzYW1l"));
        assert_null(auth_bearer_token(""));
        assert_null(auth_bearer_token(NULL));
}

/* ---- the config keys ---- */

static void test_config_keys(_unused_ void **state) {
        _cleanup_(config_freep) Config *c = config_new();
        _cleanup_free_ char *error = NULL;

        assert_non_null(c);
        assert_null(c->listen);                                   /* off by default */
        assert_string_equal(c->api_keys_file, SYSCONFDIR "/sandboxd/api-keys");

        assert_int_equal(config_parse_text(c, "[Daemon]\nListen=127.0.0.1:8080  [::1]:8080\n"
                                              "APIKeysFile=/etc/k\n", "a.conf", &error), 0);
        assert_non_null(c->listen);
        assert_string_equal(c->listen[0], "127.0.0.1:8080");
        assert_string_equal(c->listen[1], "[::1]:8080");
        assert_null(c->listen[2]);
        assert_string_equal(c->api_keys_file, "/etc/k");

        /* A later assignment replaces the list; an empty one turns TCP off. */
        assert_int_equal(config_parse_text(c, "[Daemon]\nListen=0.0.0.0:9000\n", "b.conf", &error), 0);
        assert_string_equal(c->listen[0], "0.0.0.0:9000");
        assert_null(c->listen[1]);
        /* ... which validation refuses: not loopback (test-conf has the rows). */
        assert_int_equal(config_validate(c, &error), -EINVAL);
        assert_non_null(startswith(error, "b.conf:2: Listen=0.0.0.0:9000 is not a loopback address"));
        assert_int_equal(config_parse_text(c, "[Daemon]\nListen=\n", "c.conf", &error), 0);
        assert_null(c->listen);
}

typedef struct ListenErrorRow {
        const char *name;
        const char *value;
} ListenErrorRow;

static const ListenErrorRow listen_error_rows[] = {
        { "Listen: no port",          "127.0.0.1" },
        { "Listen: port 0",           "127.0.0.1:0" },
        { "Listen: port too big",     "127.0.0.1:65536" },
        { "Listen: signed port",      "127.0.0.1:+80" },
        { "Listen: host name",        "localhost:8080" },
        { "Listen: bare IPv6",        "::1:8080" },
        { "Listen: unclosed bracket", "[::1:8080" },
        { "Listen: empty host",       ":8080" },
        { "Listen: IPv4 in brackets", "[127.0.0.1]:8080" },
        { "Listen: twice",            "127.0.0.1:8080 127.0.0.1:8080" },
        { "Listen: nine addresses",   "127.0.0.1:1 127.0.0.1:2 127.0.0.1:3 127.0.0.1:4 127.0.0.1:5 "
                                      "127.0.0.1:6 127.0.0.1:7 127.0.0.1:8 127.0.0.1:9" },
};

static void test_listen_error_row(void **state) {
        const ListenErrorRow *row = *state;
        _cleanup_(config_freep) Config *c = config_new();
        _cleanup_free_ char *error = NULL, *text = NULL;

        assert_true(asprintf(&text, "[Daemon]\n\nListen=%s\n", row->value) > 0);
        assert_int_equal(config_parse_text(c, text, "x.conf", &error), -EINVAL);
        assert_non_null(error);
        if (!startswith(error, "x.conf:3: Listen="))
                fail_msg("unexpected error '%s'", error);
        assert_null(c->listen);
}

static void test_listen_address_parse(_unused_ void **state) {
        struct sockaddr_storage ss;
        socklen_t sl;
        char buf[INET6_ADDRSTRLEN];

        assert_int_equal(listen_address_parse("127.0.0.1:8080", &ss, &sl), 0);
        assert_int_equal(ss.ss_family, AF_INET);
        assert_int_equal(sl, sizeof(struct sockaddr_in));
        assert_int_equal(ntohs(((struct sockaddr_in *) &ss)->sin_port), 8080);

        assert_int_equal(listen_address_parse("[::1]:65535", &ss, &sl), 0);
        assert_int_equal(ss.ss_family, AF_INET6);
        assert_int_equal(sl, sizeof(struct sockaddr_in6));
        assert_int_equal(ntohs(((struct sockaddr_in6 *) &ss)->sin6_port), 65535);
        assert_non_null(inet_ntop(AF_INET6, &((struct sockaddr_in6 *) &ss)->sin6_addr, buf, sizeof(buf)));
        assert_string_equal(buf, "::1");

        assert_int_equal(listen_address_parse("", &ss, &sl), -EINVAL);
        assert_int_equal(listen_address_parse(NULL, &ss, &sl), -EINVAL);
}

int main(void) {
        size_t n = 2 + ELEMENTSOF(error_rows) + 2 + ELEMENTSOF(strength_rows) + 3 + ELEMENTSOF(listen_error_rows) + 1,
               i = 0;
        _cleanup_free_ struct CMUnitTest *tests = calloc(n, sizeof(struct CMUnitTest));

        if (!tests)
                return EXIT_FAILURE;

        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_parse_good);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_parse_empty);
        for (size_t k = 0; k < ELEMENTSOF(error_rows); k++)
                tests[i++] = (struct CMUnitTest) { error_rows[k].name, test_error_row, NULL, NULL,
                                                   (void *) &error_rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_load);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_check);
        for (size_t k = 0; k < ELEMENTSOF(strength_rows); k++)
                tests[i++] = (struct CMUnitTest) { strength_rows[k].name, test_strength_row, NULL, NULL,
                                                   (void *) &strength_rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_check_weak);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_bearer);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_config_keys);
        for (size_t k = 0; k < ELEMENTSOF(listen_error_rows); k++)
                tests[i++] = (struct CMUnitTest) { listen_error_rows[k].name, test_listen_error_row, NULL, NULL,
                                                   (void *) &listen_error_rows[k] };
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_listen_address_parse);
        assert_true(i <= n);

        return _cmocka_run_group_tests("auth", tests, i, NULL, NULL);
}
