/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/net-policy.h"
#include "strv.h"
#include "util.h"

/* [Network] made usable (net-policy.h), row by row: hosts files (what a line gives, and every bad
 * line refused naming PATH:LINE), the ceiling and the CIDR blocks from a Config, and a request's
 * network.allow judged against the ceiling with the entry named. */

typedef struct HostsRow {
        const char *name;
        const char *text;
        const char *error;               /* NULL: accepted */
        const char *first;               /* accepted: the first "name=address" */
        size_t n;
} HostsRow;

static const HostsRow hosts_rows[] = {
        { "one line", "198.18.0.1 pypi.test\n", NULL, "pypi.test=198.18.0.1", 1 },
        { "several names, comments, blanks", "# mirror\n\n198.18.0.1  Pypi.Test files.test # both\n\t::1 six.test\n",
          NULL, "pypi.test=198.18.0.1", 3 },
        { "crlf", "198.18.0.1 a.test\r\n", NULL, "a.test=198.18.0.1", 1 },
        { "no final newline", "2001:db8::1 v6.test", NULL, "v6.test=2001:db8::1", 1 },
        { "empty file", "", NULL, NULL, 0 },
        { "address a name", "pypi.org pypi.test\n", "h:1: 'pypi.org' is not a numeric IPv4 or IPv6 address", NULL, 0 },
        { "short ipv4", "# c\n127.1 short.test\n", "h:2: '127.1' is not a numeric IPv4 or IPv6 address", NULL, 0 },
        { "address with zone", "fe80::1%eth0 z.test\n", "h:1: 'fe80::1%eth0' is not a numeric IPv4 or IPv6 address", NULL,
          0 },
        { "address without a name", "198.18.0.1\n", "h:1: an address without a name", NULL, 0 },
        { "name an IP", "198.18.0.1 10.0.0.1\n", "h:1: '10.0.0.1' is not a host name: ", NULL, 0 },
        { "name with underscore", "198.18.0.1 a_b.test\n", "h:1: 'a_b.test' is not a host name: ", NULL, 0 },
        { "wildcard name", "198.18.0.1 *.test\n", "h:1: '*.test' is not a host name: ", NULL, 0 },
        { "control character", "198.18.0.1 a.test\x01\n", "h:1: control character", NULL, 0 },
};

static void test_hosts_row(void **state) {
        const HostsRow *row = *state;
        _cleanup_strv_free_ char **hosts = NULL;
        _cleanup_free_ char *error = NULL;
        size_t n = 0;
        int r = net_policy_parse_hosts(row->text, "h", &hosts, &n, &error);

        if (row->error) {
                assert_int_equal(r, -EINVAL);
                assert_non_null(error);
                if (strncmp(error, row->error, strlen(row->error)) != 0)
                        print_error("%s: error '%s', want '%s...'\n", row->name, error, row->error);
                assert_true(strncmp(error, row->error, strlen(row->error)) == 0);
                return;
        }
        if (r != 0)
                print_error("%s: %s\n", row->name, error);
        assert_int_equal(r, 0);
        assert_int_equal(n, row->n);
        if (row->first)
                assert_string_equal(hosts[0], row->first);
}

static void test_hosts_cap(_unused_ void **state) {
        _cleanup_strv_free_ char **hosts = NULL;
        _cleanup_free_ char *text = NULL, *error = NULL;
        size_t n = 0, len = 0;

        text = malloc((NET_POLICY_HOSTS_MAX + 1) * 32);
        assert_non_null(text);
        for (int i = 0; i <= NET_POLICY_HOSTS_MAX; i++)
                len += (size_t) sprintf(text + len, "198.18.0.1 h%d.test\n", i);
        assert_int_equal(net_policy_parse_hosts(text, "h", &hosts, &n, &error), -EINVAL);
        assert_string_equal(error, "h:1025: more than 1024 names");
}

static Config *config_with(const char *text) {
        Config *c = config_new();
        char *error = NULL;

        assert_non_null(c);
        if (config_parse_text(c, text, "x.conf", &error) < 0)
                print_error("%s\n", error);
        free(error);
        return c;
}

typedef struct LoadRow {
        const char *name;
        const char *conf;
        const char *error;               /* NULL: loads */
} LoadRow;

static const LoadRow load_rows[] = {
        { "defaults", "", NULL },
        { "entries", "[Network]\nAllowDomains=pypi.org *.pythonhosted.org api.github.com:443\n"
                     "PermitAddresses=198.18.0.0/30 fd00::/8 10.1.2.3\n", NULL },
        { "ip literal", "[Network]\nAllowDomains=pypi.org 10.0.0.1\n",
          "AllowDomains= in [Network]: '10.0.0.1' is not an allowlist entry: " },
        { "bare wildcard", "[Network]\nAllowDomains=*\n", "AllowDomains= in [Network]: '*' is not an allowlist entry: " },
        { "too broad", "[Network]\nAllowDomains=*.com\n", "AllowDomains= in [Network]: '*.com' is not an allowlist entry: " },
        { "host bits", "[Network]\nPermitAddresses=198.18.0.1/30\n",
          "PermitAddresses= in [Network]: '198.18.0.1/30' is not a CIDR block: " },
        { "cidr a name", "[Network]\nPermitAddresses=mirror.local\n",
          "PermitAddresses= in [Network]: 'mirror.local' is not a CIDR block: " },
        { "missing hosts file", "[Network]\nHostsFile=/nonexistent/sandboxd-hosts\n",
          "HostsFile=/nonexistent/sandboxd-hosts: cannot read: " },
        { "hosts file a directory", "[Network]\nHostsFile=/\n", "HostsFile=/: not a regular file" },
};

static void test_load_row(void **state) {
        const LoadRow *row = *state;
        _cleanup_(config_freep) Config *c = config_with(row->conf);
        _cleanup_(net_policy_freep) NetPolicy *p = NULL;
        _cleanup_free_ char *error = NULL;
        int r = net_policy_load(c, &p, &error);

        if (!row->error) {
                if (r != 0)
                        print_error("%s: %s\n", row->name, error);
                assert_int_equal(r, 0);
                assert_non_null(p);
                return;
        }
        assert_int_equal(r, -EINVAL);
        assert_null(p);
        if (strncmp(error, row->error, strlen(row->error)) != 0)
                print_error("%s: error '%s', want '%s...'\n", row->name, error, row->error);
        assert_true(strncmp(error, row->error, strlen(row->error)) == 0);
}

static void test_load_values(_unused_ void **state) {
        _cleanup_(config_freep) Config *c = config_with("[Network]\nAllowDomains=pypi.org\n"
                                                        "PermitAddresses=198.18.0.0/30 10.1.2.3 fd00::/8\n");
        _cleanup_(net_policy_freep) NetPolicy *p = NULL;
        _cleanup_free_ char *error = NULL;

        assert_int_equal(net_policy_load(c, &p, &error), 0);
        assert_int_equal(p->ceiling->n_entries, 1);
        assert_int_equal(p->n_permit, 3);
        assert_string_equal(p->permit_strings[0], "198.18.0.0/30");
        assert_string_equal(p->permit_strings[1], "10.1.2.3/32");
        assert_string_equal(p->permit_strings[2], "fd00::/8");
        assert_int_equal(p->n_hosts, 0);
}

typedef struct CheckRow {
        const char *name;
        const char *ceiling;             /* AllowDomains= */
        const char *const allow[4];
        size_t index;                    /* SIZE_MAX and message NULL: accepted */
        const char *message;
} CheckRow;

static const CheckRow check_rows[] = {
        { "exact host", "pypi.org", { "pypi.org" }, SIZE_MAX, NULL },
        { "host case and dot", "pypi.org", { "PyPI.org." }, SIZE_MAX, NULL },
        { "host under wildcard", "*.pythonhosted.org", { "files.pythonhosted.org" }, SIZE_MAX, NULL },
        { "narrower wildcard", "*.github.com", { "*.api.github.com", "api.github.com:443" }, SIZE_MAX, NULL },
        { "port within default", "pypi.org", { "pypi.org:443" }, SIZE_MAX, NULL },
        { "disabled", "", { "pypi.org" }, SIZE_MAX, "network is disabled on this server (AllowDomains= is empty)" },
        { "outside", "pypi.org", { "pypi.org", "evil.com" }, 1,
          "network.allow[1]: 'evil.com' is outside what this server allows (AllowDomains=)" },
        { "apex not under wildcard", "*.github.com", { "github.com" }, 0,
          "network.allow[0]: 'github.com' is outside what this server allows (AllowDomains=)" },
        { "wildcard not under host", "api.github.com", { "*.api.github.com" }, 0,
          "network.allow[0]: '*.api.github.com' is outside what this server allows (AllowDomains=)" },
        { "other port", "pypi.org", { "pypi.org:8080" }, 0,
          "network.allow[0]: 'pypi.org:8080' is outside what this server allows (AllowDomains=)" },
        { "ip literal", "pypi.org", { "127.0.0.1" }, 0, "network.allow[0]: '127.0.0.1' is not an allowlist entry: " },
        { "bad port", "pypi.org", { "pypi.org:0" }, 0, "network.allow[0]: 'pypi.org:0' is not an allowlist entry: " },
        { "bare star", "*.pythonhosted.org", { "*" }, 0, "network.allow[0]: '*' is not an allowlist entry: " },
};

static void test_check_row(void **state) {
        const CheckRow *row = *state;
        _cleanup_free_ char *conf = NULL, *error = NULL;
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_(net_policy_freep) NetPolicy *p = NULL;
        char msg[384];
        size_t n = 0, index = 42;
        int r;

        assert_true(asprintf(&conf, "[Network]\nAllowDomains=%s\n", row->ceiling) > 0);
        c = config_with(conf);
        assert_int_equal(net_policy_load(c, &p, &error), 0);
        while (n < ELEMENTSOF(row->allow) && row->allow[n])
                n++;
        r = net_policy_check_request(p, (char *const *) row->allow, n, &index, msg, sizeof(msg));
        if (!row->message) {
                if (r != 0)
                        print_error("%s: %s\n", row->name, msg);
                assert_int_equal(r, 0);
                return;
        }
        assert_int_equal(r, -EINVAL);
        assert_int_equal(index, row->index);
        if (strncmp(msg, row->message, strlen(row->message)) != 0)
                print_error("%s: '%s', want '%s...'\n", row->name, msg, row->message);
        assert_true(strncmp(msg, row->message, strlen(row->message)) == 0);
}

int main(void) {
        struct CMUnitTest tests[ELEMENTSOF(hosts_rows) + ELEMENTSOF(load_rows) + ELEMENTSOF(check_rows) + 2];
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(hosts_rows); i++)
                tests[n++] = (struct CMUnitTest) { hosts_rows[i].name, test_hosts_row, NULL, NULL, (void *) &hosts_rows[i] };
        for (size_t i = 0; i < ELEMENTSOF(load_rows); i++)
                tests[n++] = (struct CMUnitTest) { load_rows[i].name, test_load_row, NULL, NULL, (void *) &load_rows[i] };
        for (size_t i = 0; i < ELEMENTSOF(check_rows); i++)
                tests[n++] = (struct CMUnitTest) { check_rows[i].name, test_check_row, NULL, NULL, (void *) &check_rows[i] };
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_hosts_cap);
        tests[n++] = (struct CMUnitTest) cmocka_unit_test(test_load_values);
        return _cmocka_run_group_tests("net-policy", tests, n, NULL, NULL);
}
