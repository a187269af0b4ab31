/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net/allowlist.h"
#include "util.h"

/* The network allowlist (issue 16), row by row, each row its own cmocka test named after it:
 *  - entries: what parses, into what (lower case, no trailing dot, the wildcard's suffix, the port),
 *    and every refusal with its reason — the spellings of 127.0.0.1 a resolver or URL parser accepts,
 *    IPv6 with and without brackets, wildcards too broad or misplaced, ports with a sign or a leading
 *    zero, names and labels one byte over their caps;
 *  - host names as the proxy's parser hands them over (spans that may hold a NUL);
 *  - matching a list: strict subdomains only, ports, case and the trailing dot, hosts that are no
 *    host names;
 *  - the ceiling (AllowDomains=): which entries are within it;
 *  - lists: the first bad entry's index, the count cap. */

/* ---- entries ---------------------------------------------------------------------------------- */

typedef struct EntryRow {
        const char *name;                /* the test's name; also the input unless input is set */
        const char *input;
        AllowlistReason reason;
        const char *stored;              /* ALLOWLIST_OK: the name kept */
        bool wildcard;
        uint16_t port;
} EntryRow;

#define OK(in, st, wc, p) { "ok " in, in, ALLOWLIST_OK, st, wc, p }
#define NO(in, r) { #r " " in, in, ALLOWLIST_##r, NULL, false, 0 }

/* Names built at start: a label of 63 and 64 bytes, names of 253 and 254 bytes, and an entry longer
 * than any valid one. */
static char label63[64], label64[65], name253[254], name253_dot[255], name254[255], entry300[301],
        wild253[254];

static EntryRow entry_rows[] = {
        OK("pypi.org", "pypi.org", false, 0),
        OK("PyPI.ORG", "pypi.org", false, 0),
        OK("pypi.org.", "pypi.org", false, 0),
        OK("api.github.com:443", "api.github.com", false, 443),
        OK("a.example:1", "a.example", false, 1),
        OK("a.example:65535", "a.example", false, 65535),
        OK("*.github.com", "github.com", true, 0),
        OK("*.GitHub.Com.:8443", "github.com", true, 8443),
        OK("*.a.b", "a.b", true, 0),
        OK("*.x.github.com:443", "x.github.com", true, 443),
        /* Punycode is LDH: the ASCII form of an IDN is a host name like any other. */
        OK("xn--bcher-kva.example", "xn--bcher-kva.example", false, 0),
        OK("*.xn--80ak6aa92e.com", "xn--80ak6aa92e.com", true, 0),
        OK("a-b.c--d.example", "a-b.c--d.example", false, 0),
        OK("1a.example", "1a.example", false, 0),
        OK("123.example", "123.example", false, 0),
        OK("example.1a", "example.1a", false, 0),
        OK("0xg.example.0xg", "0xg.example.0xg", false, 0),
        /* One label: a name like any other here; the proxy's address check refuses what it resolves to. */
        OK("localhost", "localhost", false, 0),
        { "ok a label of 63 bytes", label63, ALLOWLIST_OK, label63, false, 0 },
        { "ok a name of 253 bytes", name253, ALLOWLIST_OK, name253, false, 0 },
        { "ok a name of 253 bytes and its trailing dot", name253_dot, ALLOWLIST_OK, name253, false, 0 },
        { "ok a wildcard of 253 bytes", wild253, ALLOWLIST_OK, wild253 + 2, true, 0 },

        NO("", EMPTY),
        NO(":443", EMPTY),
        NO(".", EMPTY),
        NO(".:80", EMPTY),
        { "NAME_TOO_LONG a name of 254 bytes", name254, ALLOWLIST_NAME_TOO_LONG, NULL, false, 0 },
        { "NAME_TOO_LONG an entry of 300 bytes", entry300, ALLOWLIST_NAME_TOO_LONG, NULL, false, 0 },
        { "LABEL_TOO_LONG a label of 64 bytes", label64, ALLOWLIST_LABEL_TOO_LONG, NULL, false, 0 },
        NO("a..b", EMPTY_LABEL),
        NO(".a.example", EMPTY_LABEL),
        NO("a.example..", EMPTY_LABEL),
        NO("*..github.com", EMPTY_LABEL),
        NO("a_b.example", BAD_CHARACTER),
        NO("%61pi.github.com", BAD_CHARACTER),
        NO("api.github.com%2e", BAD_CHARACTER),
        NO("a b.example", BAD_CHARACTER),
        NO(" a.example", BAD_CHARACTER),
        NO("a.example/", BAD_CHARACTER),
        NO("user@a.example", BAD_CHARACTER),
        NO("b\xc3\xbc" "cher.example", BAD_CHARACTER),
        NO("a:b:c", BAD_CHARACTER),
        NO("fe80::1%eth0", BAD_CHARACTER),
        NO("-a.example", BAD_HYPHEN),
        NO("a-.example", BAD_HYPHEN),
        NO("a.-example", BAD_HYPHEN),
        NO("*.github-.com", BAD_HYPHEN),
        NO("127.0.0.1", IP_LITERAL),
        NO("127.0.0.1.", IP_LITERAL),
        NO("127.0.0.1:443", IP_LITERAL),
        NO("127.1", IP_LITERAL),
        NO("0x7f.1", IP_LITERAL),
        NO("0x7f.0x0.0x0.0x1", IP_LITERAL),
        NO("0X7F000001", IP_LITERAL),
        NO("2130706433", IP_LITERAL),
        NO("0177.0.0.1", IP_LITERAL),
        NO("169.254.169.254:80", IP_LITERAL),
        NO("1.2.3.4.5", IP_LITERAL),
        NO("example.123", IP_LITERAL),
        NO("example.0x", IP_LITERAL),
        NO("*.10.0.0", IP_LITERAL),
        NO("[::1]", IP_LITERAL),
        NO("[::1]:443", IP_LITERAL),
        NO("[api.github.com]", IP_LITERAL),
        NO("::1", IP_LITERAL),
        NO("fe80::1", IP_LITERAL),
        NO("::ffff:127.0.0.1", IP_LITERAL),
        NO("::ffff:127.0.0.1:443", IP_LITERAL),
        NO("*", BARE_WILDCARD),
        NO("*.", BARE_WILDCARD),
        NO("*:443", BARE_WILDCARD),
        NO("*.com", WILDCARD_TOO_BROAD),
        NO("*.com.", WILDCARD_TOO_BROAD),
        NO("*.co:443", WILDCARD_TOO_BROAD),
        NO("*github.com", BAD_WILDCARD),
        NO("**.github.com", BAD_WILDCARD),
        NO("a*.github.com", BAD_WILDCARD),
        NO("api.*.github.com", BAD_WILDCARD),
        NO("*.*.github.com", BAD_WILDCARD),
        NO("github.*", BAD_WILDCARD),
        NO("a.example:0", BAD_PORT),
        NO("a.example:080", BAD_PORT),
        NO("a.example:00443", BAD_PORT),
        NO("a.example:65536", BAD_PORT),
        NO("a.example:99999", BAD_PORT),
        NO("a.example:123456", BAD_PORT),
        NO("a.example:+443", BAD_PORT),
        NO("a.example:-1", BAD_PORT),
        NO("a.example:", BAD_PORT),
        NO("a.example: 443", BAD_PORT),
        NO("a.example:443x", BAD_PORT),
        NO("a.example:0x1bb", BAD_PORT),
        NO("*.github.com:0", BAD_PORT),
};

static void make_names(void) {
        /* "aaa...a" (63), then labels of 63 and a dot: 4 × 63 + 3 dots = 255, cut to size. */
        memset(label63, 'a', 63);
        memset(label64, 'b', 64);
        for (size_t i = 0; i < 253; i++)
                name253[i] = i % 64 == 63 ? '.' : 'c';
        memcpy(name254, name253, 253);
        name254[253] = 'c';
        memcpy(name253_dot, name253, 253);
        name253_dot[253] = '.';
        memset(entry300, 'd', 300);
        memcpy(wild253, name253, 253);
        wild253[0] = '*';
        wild253[1] = '.';
}

static void test_entry_row(void **state) {
        const EntryRow *row = *state;
        AllowlistEntry e, untouched;
        AllowlistReason r;

        memset(&e, 0x5a, sizeof(e));
        untouched = e;
        r = allowlist_entry_parse(row->input, &e);
        if (r != row->reason) {
                print_error("'%s': %s, expected %s\n", row->input, allowlist_reason_to_string(r),
                            allowlist_reason_to_string(row->reason));
                fail();
        }
        if (r != ALLOWLIST_OK) {
                assert_memory_equal(&e, &untouched, sizeof(e));
                return;
        }
        assert_string_equal(e.name, row->stored);
        assert_int_equal(e.wildcard, row->wildcard);
        assert_int_equal(e.port, row->port);
}

/* The IPv4 rows above are real addresses to libc: inet_aton() reads each as one (so refusing them is
 * not a matter of taste), and reads none of the names that are accepted. */
static void test_ip_rows_are_addresses(_unused_ void **state) {
        static const char *const v4[] = { "127.0.0.1", "127.1", "0x7f.1", "0x7f.0x0.0x0.0x1", "0X7F000001",
                                          "2130706433", "0177.0.0.1" };
        struct in_addr a;

        for (size_t i = 0; i < ELEMENTSOF(v4); i++) {
                assert_int_equal(inet_aton(v4[i], &a), 1);
                assert_int_equal(ntohl(a.s_addr) >> 24, 127);
        }
        for (size_t i = 0; i < ELEMENTSOF(entry_rows); i++)
                if (entry_rows[i].reason == ALLOWLIST_OK && strlen(entry_rows[i].input) < 64)
                        assert_int_equal(inet_aton(entry_rows[i].input, &a), 0);
}

/* ---- host names (the proxy's parser) ---------------------------------------------------------- */

typedef struct HostRow {
        const char *name;
        const char *input;
        size_t len;
        AllowlistReason reason;
        const char *stored;
} HostRow;

#define H(n, in, r, st) { n, in, sizeof(in) - 1, ALLOWLIST_##r, st }

static const HostRow host_rows[] = {
        H("host api.github.com", "api.github.com", OK, "api.github.com"),
        H("host API.GitHub.com. lower-cased, dot stripped", "API.GitHub.com.", OK, "api.github.com"),
        H("host xn-- label", "xn--bcher-kva.example", OK, "xn--bcher-kva.example"),
        H("host a span that stops before the port", "api.github.com:443", OK, "api.github.com"),
        H("host empty", "", EMPTY, NULL),
        H("host with a port is no host", "api.github.com:443", BAD_CHARACTER, NULL),
        H("host embedded NUL", "api.github.com\0.evil.example", BAD_CHARACTER, NULL),
        H("host trailing NUL", "api.github.com\0", BAD_CHARACTER, NULL),
        H("host with a space", "api.github.com evil.example", BAD_CHARACTER, NULL),
        H("host wildcard", "*.github.com", BAD_WILDCARD, NULL),
        H("host bare *", "*", BARE_WILDCARD, NULL),
        H("host 127.0.0.1", "127.0.0.1", IP_LITERAL, NULL),
        H("host [::1]", "[::1]", IP_LITERAL, NULL),
        H("host ::1", "::1", IP_LITERAL, NULL),
        H("host percent-encoded", "%61pi.github.com", BAD_CHARACTER, NULL),
};

static void test_host_row(void **state) {
        const HostRow *row = *state;
        char name[ALLOWLIST_NAME_MAX + 1];
        size_t len = row->len;
        AllowlistReason r;

        /* "a span that stops before the port": the first 14 bytes only. */
        if (strstr(row->name, "span that stops"))
                len = 14;
        memset(name, 'X', sizeof(name));
        r = allowlist_host_check(row->input, len, name);
        if (r != row->reason) {
                print_error("%s: %s\n", row->name, allowlist_reason_to_string(r));
                fail();
        }
        if (r == ALLOWLIST_OK)
                assert_string_equal(name, row->stored);
        else
                assert_int_equal(name[0], 'X');
}

/* ---- matching --------------------------------------------------------------------------------- */

static const char *const match_list[] = {
        "pypi.org", "*.pythonhosted.org", "api.github.com:443", "*.example.com:8080", "Files.Example.NET.",
};

typedef struct MatchRow {
        const char *name;
        const char *host;
        uint16_t port;
        bool match;
} MatchRow;

static const MatchRow match_rows[] = {
        { "match pypi.org:443", "pypi.org", 443, true },
        { "match pypi.org:80", "pypi.org", 80, true },
        { "match pypi.org:8080 (not a default port)", "pypi.org", 8080, false },
        { "match PYPI.ORG.:443 (case, trailing dot)", "PYPI.ORG.", 443, true },
        { "match www.pypi.org (exact entry, no subdomains)", "www.pypi.org", 443, false },
        { "match files.pythonhosted.org", "files.pythonhosted.org", 443, true },
        { "match a.b.pythonhosted.org:80", "a.b.pythonhosted.org", 80, true },
        { "match pythonhosted.org (the apex is not a subdomain)", "pythonhosted.org", 443, false },
        { "match evilpythonhosted.org", "evilpythonhosted.org", 443, false },
        { "match pythonhosted.org.evil.example", "pythonhosted.org.evil.example", 443, false },
        { "match a..pythonhosted.org (no host name)", "a..pythonhosted.org", 443, false },
        { "match .pythonhosted.org (no host name)", ".pythonhosted.org", 443, false },
        { "match api.github.com:443", "api.github.com", 443, true },
        { "match api.github.com:80 (entry names 443)", "api.github.com", 80, false },
        { "match x.example.com:8080", "x.example.com", 8080, true },
        { "match x.example.com:443 (entry names 8080)", "x.example.com", 443, false },
        { "match example.com:8080 (apex)", "example.com", 8080, false },
        { "match files.example.net (entry stored lower-case)", "files.example.net", 443, true },
        { "match port 0", "pypi.org", 0, false },
        { "match pypi.org.. (two dots)", "pypi.org..", 443, false },
        { "match pypi.org:443 as a host", "pypi.org:443", 443, false },
        { "match empty host", "", 443, false },
        { "match 127.0.0.1", "127.0.0.1", 443, false },
        { "match *.pythonhosted.org as a host", "*.pythonhosted.org", 443, false },
};

static Allowlist *match_allowlist;

static void test_match_row(void **state) {
        const MatchRow *row = *state;
        bool any = false;

        if (allowlist_match(match_allowlist, row->host, row->port) != row->match) {
                print_error("%s:%u: expected %s\n", row->host, row->port, row->match ? "a match" : "none");
                fail();
        }
        /* The list is its entries: one of them matches exactly when the list does. */
        for (size_t i = 0; i < match_allowlist->n_entries; i++)
                any = any || allowlist_entry_match(match_allowlist->entries + i, row->host, row->port);
        assert_int_equal(any, row->match);
        /* The judgement allows exactly what the match does. */
        assert_int_equal(allowlist_judge(match_allowlist, row->host, row->port) == ALLOWLIST_ALLOWED, row->match);
}

/* ---- the judgement: host denied or port denied ------------------------------------------------ */

typedef struct JudgeRow {
        const char *name;
        const char *host;
        uint16_t port;
        AllowlistVerdict verdict;
} JudgeRow;

#define JUDGE(h, p, v) { "judge " h ":" #p " " #v, h, p, ALLOWLIST_##v }

static const JudgeRow judge_rows[] = {
        JUDGE("pypi.org", 443, ALLOWED),
        JUDGE("pypi.org", 80, ALLOWED),
        JUDGE("pypi.org", 8080, PORT_DENIED),
        JUDGE("pypi.org", 22, PORT_DENIED),
        JUDGE("pypi.org", 0, PORT_DENIED),
        JUDGE("PyPI.org.", 8080, PORT_DENIED),
        JUDGE("www.pypi.org", 8080, HOST_DENIED),
        JUDGE("www.pypi.org", 443, HOST_DENIED),
        JUDGE("api.github.com", 443, ALLOWED),
        JUDGE("api.github.com", 80, PORT_DENIED),
        JUDGE("x.example.com", 8080, ALLOWED),
        JUDGE("x.example.com", 443, PORT_DENIED),
        JUDGE("example.com", 443, HOST_DENIED),
        JUDGE("example.com", 8080, HOST_DENIED),
        JUDGE("a.files.pythonhosted.org", 8443, PORT_DENIED),
        JUDGE("pythonhosted.org", 443, HOST_DENIED),
        JUDGE("evilpythonhosted.org", 8443, HOST_DENIED),
        JUDGE("", 443, HOST_DENIED),
        JUDGE("127.0.0.1", 443, HOST_DENIED),
        JUDGE("pypi.org:443", 443, HOST_DENIED),
};

static void test_judge_row(void **state) {
        const JudgeRow *row = *state;

        assert_string_equal(allowlist_verdict_to_string(allowlist_judge(match_allowlist, row->host, row->port)),
                            allowlist_verdict_to_string(row->verdict));
}

static void test_judge_null(_unused_ void **state) {
        assert_int_equal(allowlist_judge(NULL, "pypi.org", 443), ALLOWLIST_HOST_DENIED);
        assert_int_equal(allowlist_judge(match_allowlist, NULL, 443), ALLOWLIST_HOST_DENIED);
        assert_null(allowlist_verdict_to_string(_ALLOWLIST_VERDICT_MAX));
}

/* ---- the ceiling ------------------------------------------------------------------------------ */

static const char *const ceiling_list[] = {
        "*.github.com", "pypi.org", "files.pythonhosted.org:443", "*.npmjs.org:443",
        "mirror.internal.example:80", "mirror.internal.example:443", "api.gitlab.com",
};

typedef struct WithinRow {
        const char *name;
        const char *entry;
        bool within;
} WithinRow;

static const WithinRow within_rows[] = {
        { "within api.github.com (covered by the wildcard)", "api.github.com", true },
        { "within a.b.github.com:443", "a.b.github.com:443", true },
        { "within api.github.com:8080 (port)", "api.github.com:8080", false },
        { "within github.com (the apex)", "github.com", false },
        { "within *.github.com (the same wildcard)", "*.github.com", true },
        { "within *.x.github.com (a narrower wildcard)", "*.x.github.com", true },
        { "within *.github.com:443", "*.github.com:443", true },
        { "within *.github.com:22 (port)", "*.github.com:22", false },
        { "within *.com.github.com", "*.com.github.com", true },
        { "within *.evilgithub.com", "*.evilgithub.com", false },
        { "within pypi.org", "pypi.org", true },
        { "within PyPI.org.:443", "PyPI.org.:443", true },
        { "within pypi.org:8080", "pypi.org:8080", false },
        { "within *.pypi.org (an exact host covers no wildcard)", "*.pypi.org", false },
        { "within *.gitlab.com (api.gitlab.com does not cover it)", "*.gitlab.com", false },
        { "within api.gitlab.com", "api.gitlab.com", true },
        { "within files.pythonhosted.org (80 is not in the ceiling)", "files.pythonhosted.org", false },
        { "within files.pythonhosted.org:443", "files.pythonhosted.org:443", true },
        { "within *.npmjs.org (80 is not in the ceiling)", "*.npmjs.org", false },
        { "within *.npmjs.org:443", "*.npmjs.org:443", true },
        { "within registry.npmjs.org:443", "registry.npmjs.org:443", true },
        { "within mirror.internal.example (80 and 443 by two entries)", "mirror.internal.example", true },
        { "within mirror.internal.example:8080", "mirror.internal.example:8080", false },
        { "within example.org", "example.org", false },
};

static Allowlist *ceiling;

static void test_within_row(void **state) {
        const WithinRow *row = *state;
        AllowlistEntry e;

        assert_int_equal(allowlist_entry_parse(row->entry, &e), ALLOWLIST_OK);
        if (allowlist_within(ceiling, &e) != row->within) {
                print_error("'%s': expected %s the ceiling\n", row->entry,
                            row->within ? "within" : "outside");
                fail();
        }
}

/* ---- lists ------------------------------------------------------------------------------------ */

static void test_list_parse(_unused_ void **state) {
        static const char *const good[] = { "pypi.org", "*.github.com:443", "a.example:8080" };
        static const char *const bad[] = { "pypi.org", "*.github.com", "*.com", "127.0.0.1" };
        const char *with_null[] = { "pypi.org", NULL };
        _cleanup_allowlist_free_ Allowlist *l = NULL;
        Allowlist *untouched = (Allowlist *) 0x1;
        AllowlistReason reason = ALLOWLIST_OK;
        size_t index = 99;

        assert_int_equal(allowlist_parse(good, ELEMENTSOF(good), &l, &index, &reason), 0);
        assert_int_equal(l->n_entries, 3);
        assert_string_equal(l->entries[1].name, "github.com");
        assert_true(l->entries[1].wildcard);
        assert_int_equal(l->entries[2].port, 8080);
        assert_int_equal(index, 99);
        l = allowlist_free(l);

        /* The first bad entry, by index and reason; *ret untouched. */
        assert_int_equal(allowlist_parse(bad, ELEMENTSOF(bad), &untouched, &index, &reason), -EINVAL);
        assert_int_equal(index, 2);
        assert_int_equal(reason, ALLOWLIST_WILDCARD_TOO_BROAD);
        assert_ptr_equal(untouched, (Allowlist *) 0x1);
        assert_int_equal(allowlist_parse(with_null, 2, &untouched, &index, NULL), -EINVAL);
        assert_int_equal(index, 1);
        assert_int_equal(allowlist_parse(with_null, 2, &untouched, NULL, &reason), -EINVAL);
        assert_int_equal(reason, ALLOWLIST_EMPTY);
        assert_ptr_equal(untouched, (Allowlist *) 0x1);

        /* Empty: a list that allows nothing. */
        assert_int_equal(allowlist_parse(NULL, 0, &l, NULL, NULL), 0);
        assert_int_equal(l->n_entries, 0);
        assert_false(allowlist_match(l, "pypi.org", 443));
        assert_false(allowlist_within(l, &(AllowlistEntry) { .name = "pypi.org" }));
        /* NULL lists and entries allow nothing. */
        assert_false(allowlist_match(NULL, "pypi.org", 443));
        assert_false(allowlist_match(l, NULL, 443));
        assert_false(allowlist_within(NULL, &(AllowlistEntry) { .name = "pypi.org" }));
        assert_false(allowlist_entry_match(NULL, "pypi.org", 443));
}

static void test_list_cap(_unused_ void **state) {
        const char *entries[ALLOWLIST_MAX_ENTRIES + 1];
        _cleanup_allowlist_free_ Allowlist *l = NULL;
        AllowlistReason reason = ALLOWLIST_OK;
        size_t index = 0;

        for (size_t i = 0; i < ELEMENTSOF(entries); i++)
                entries[i] = "pypi.org";
        /* One over: refused before any entry is read (so even a bad one among them says "too many"). */
        entries[3] = "*";
        assert_int_equal(allowlist_parse(entries, ALLOWLIST_MAX_ENTRIES + 1, &l, &index, &reason), -E2BIG);
        assert_null(l);
        assert_int_equal(index, ALLOWLIST_MAX_ENTRIES);
        assert_int_equal(reason, ALLOWLIST_TOO_MANY_ENTRIES);
        entries[3] = "pypi.org";
        assert_int_equal(allowlist_parse(entries, ALLOWLIST_MAX_ENTRIES, &l, &index, &reason), 0);
        assert_int_equal(l->n_entries, ALLOWLIST_MAX_ENTRIES);
}

/* Every reason is reached by a row above, and has a name. */
static void test_reasons(_unused_ void **state) {
        bool seen[_ALLOWLIST_REASON_MAX] = {};

        for (size_t i = 0; i < ELEMENTSOF(entry_rows); i++)
                seen[entry_rows[i].reason] = true;
        seen[ALLOWLIST_TOO_MANY_ENTRIES] = true;     /* test_list_cap */
        for (AllowlistReason r = 0; r < _ALLOWLIST_REASON_MAX; r++) {
                assert_non_null(allowlist_reason_to_string(r));
                if (!seen[r]) {
                        print_error("no row reaches %s\n", allowlist_reason_to_string(r));
                        fail();
                }
        }
        assert_string_equal(allowlist_reason_to_string(ALLOWLIST_NAME_TOO_LONG), "host name longer than 253 bytes");
        assert_string_equal(allowlist_reason_to_string(ALLOWLIST_TOO_MANY_ENTRIES), "more than 64 entries");
        assert_null(allowlist_reason_to_string(_ALLOWLIST_REASON_MAX));
        assert_null(allowlist_reason_to_string(-1));
}

static int setup_lists(_unused_ void **state) {
        if (allowlist_parse(match_list, ELEMENTSOF(match_list), &match_allowlist, NULL, NULL) < 0)
                return -1;
        if (allowlist_parse(ceiling_list, ELEMENTSOF(ceiling_list), &ceiling, NULL, NULL) < 0)
                return -1;
        return 0;
}

static int teardown_lists(_unused_ void **state) {
        match_allowlist = allowlist_free(match_allowlist);
        ceiling = allowlist_free(ceiling);
        return 0;
}

#define ROWS(tests, i, table, fn)                                                                    \
        for (size_t k = 0; k < ELEMENTSOF(table); k++)                                               \
                tests[i++] = (struct CMUnitTest) { table[k].name, fn, NULL, NULL, (void *) &table[k] }

int main(void) {
        size_t n = ELEMENTSOF(entry_rows) + ELEMENTSOF(host_rows) + ELEMENTSOF(match_rows) +
                   ELEMENTSOF(within_rows) + ELEMENTSOF(judge_rows) + 9, i = 0;
        _cleanup_free_ struct CMUnitTest *tests = calloc(n, sizeof(struct CMUnitTest));

        if (!tests)
                return EXIT_FAILURE;
        make_names();
        ROWS(tests, i, entry_rows, test_entry_row);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_ip_rows_are_addresses);
        ROWS(tests, i, host_rows, test_host_row);
        ROWS(tests, i, match_rows, test_match_row);
        ROWS(tests, i, judge_rows, test_judge_row);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_judge_null);
        ROWS(tests, i, within_rows, test_within_row);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_list_parse);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_list_cap);
        tests[i++] = (struct CMUnitTest) cmocka_unit_test(test_reasons);
        if (i > n)
                abort();
        return _cmocka_run_group_tests("allowlist", tests, i, setup_lists, teardown_lists);
}
