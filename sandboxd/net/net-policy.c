/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <ctype.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "net-policy.h"
#include "strv.h"

NetPolicy *net_policy_free(NetPolicy *p) {
        if (!p)
                return NULL;
        allowlist_free(p->ceiling);
        strv_free(p->allow_domains);
        free(p->permit);
        strv_free(p->permit_strings);
        strv_free(p->hosts);
        free(p);
        return NULL;
}

int net_policy_parse_hosts(const char *text, const char *path, char ***hosts, size_t *n_hosts, char **ret_error) {
        _cleanup_free_ char *copy = strdup(text);
        unsigned line = 0;

        if (!copy)
                return -ENOMEM;
        for (char *p = copy; p;) {
                char *l = p, *save = NULL, *address, *name;
                struct in6_addr a6;
                struct in_addr a4;
                size_t names = 0;

                p = strchr(p, '\n');
                if (p)
                        *p++ = 0;
                line++;
                l[strcspn(l, "#")] = 0;
                for (char *q = l; *q; q++)
                        if ((unsigned char) *q < 0x20 && *q != '\t' && *q != '\r')
                                return error_set(ret_error, "%s:%u: control character", path, line);
                address = strtok_r(l, " \t\r", &save);
                if (!address)
                        continue;
                if (inet_pton(AF_INET, address, &a4) != 1 && inet_pton(AF_INET6, address, &a6) != 1)
                        return error_set(ret_error, "%s:%u: '%.64s' is not a numeric IPv4 or IPv6 address", path,
                                         line, address);
                while ((name = strtok_r(NULL, " \t\r", &save))) {
                        char lower[ALLOWLIST_NAME_MAX + 1];
                        AllowlistReason why = allowlist_host_check(name, strlen(name), lower);
                        _cleanup_free_ char *pair = NULL;

                        if (why != ALLOWLIST_OK)
                                return error_set(ret_error, "%s:%u: '%.64s' is not a host name: %s", path, line, name,
                                                 allowlist_reason_to_string(why));
                        if (*n_hosts >= NET_POLICY_HOSTS_MAX)
                                return error_set(ret_error, "%s:%u: more than %d names", path, line,
                                                 NET_POLICY_HOSTS_MAX);
                        if (asprintf(&pair, "%s=%s", lower, address) < 0)
                                return -ENOMEM;
                        if (!strv_contains(*hosts, pair) && strv_extend(hosts, n_hosts, pair) < 0)
                                return -ENOMEM;
                        names++;
                }
                if (names == 0)
                        return error_set(ret_error, "%s:%u: an address without a name", path, line);
        }
        return 0;
}

static int read_hosts_file(const char *path, char **ret, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        ssize_t n;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || fstat(fd, &st) < 0) {
                int r = -errno;

                (void) error_set(ret_error, "HostsFile=%s: cannot read: %s", path, strerror(-r));
                return -EINVAL;
        }
        if (!S_ISREG(st.st_mode) || st.st_size > NET_POLICY_HOSTS_FILE_MAX)
                return error_set(ret_error, "HostsFile=%s: not a regular file of at most %d bytes", path,
                                 NET_POLICY_HOSTS_FILE_MAX);
        buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        n = loop_read(fd, buf, (size_t) st.st_size);
        if (n < 0)
                return error_set(ret_error, "HostsFile=%s: cannot read: %s", path, strerror((int) -n));
        buf[n] = 0;
        if (strlen(buf) != (size_t) n)
                return error_set(ret_error, "HostsFile=%s: contains a NUL byte", path);
        *ret = TAKE_PTR(buf);
        return 0;
}

int net_policy_load(const Config *c, NetPolicy **ret, char **ret_error) {
        _cleanup_(net_policy_freep) NetPolicy *p = calloc(1, sizeof(NetPolicy));
        size_t n = strv_length(c->net_allow_domains), index = 0, np = 0;
        AllowlistReason why = ALLOWLIST_OK;
        int r;

        if (!p)
                return -ENOMEM;
        r = allowlist_parse((const char *const *) c->net_allow_domains, n, &p->ceiling, &index, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return error_set(ret_error, "AllowDomains= in [Network]: '%.80s' is not an allowlist entry: %s",
                                 index < n ? c->net_allow_domains[index] : "", allowlist_reason_to_string(why));
        for (size_t i = 0; i < n; i++)
                if (strv_extend(&p->allow_domains, &np, c->net_allow_domains[i]) < 0)
                        return -ENOMEM;

        n = strv_length(c->net_permit_addresses);
        if (n > CIDR_LIST_MAX)
                return error_set(ret_error, "PermitAddresses= in [Network]: at most %d blocks", CIDR_LIST_MAX);
        p->permit = calloc(n + 1, sizeof(Cidr));
        if (!p->permit)
                return -ENOMEM;
        np = 0;
        for (size_t i = 0; i < n; i++) {
                char buf[CIDR_STRLEN_MAX + 1];
                CidrReason cr = cidr_parse(c->net_permit_addresses[i], p->permit + i);

                if (cr != CIDR_OK)
                        return error_set(ret_error, "PermitAddresses= in [Network]: '%.80s' is not a CIDR block: %s",
                                         c->net_permit_addresses[i], cidr_reason_to_string(cr));
                if (strv_extend(&p->permit_strings, &np, cidr_to_string(p->permit + i, buf)) < 0)
                        return -ENOMEM;
        }
        p->n_permit = n;

        if (c->net_hosts_file) {
                _cleanup_free_ char *text = NULL;

                r = read_hosts_file(c->net_hosts_file, &text, ret_error);
                if (r < 0)
                        return r;
                r = net_policy_parse_hosts(text, c->net_hosts_file, &p->hosts, &p->n_hosts, ret_error);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(p);
        return 0;
}

static void entry_to_string(const AllowlistEntry *e, char *buf, size_t size) {
        char port[8] = "";

        if (e->port)
                snprintf(port, sizeof(port), ":%u", e->port);
        snprintf(buf, size, "%s%s%s", e->wildcard ? "*." : "", e->name, port);
}

int net_policy_check_request(const NetPolicy *p, char *const *allow, size_t n, size_t *ret_index, char *msg,
                             size_t msg_size) {
        *ret_index = SIZE_MAX;
        if (!p || !p->ceiling || p->ceiling->n_entries == 0) {
                snprintf(msg, msg_size, "network is disabled on this server (AllowDomains= is empty)");
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                AllowlistEntry e;
                AllowlistReason why = allowlist_entry_parse(allow[i], &e);
                char field[48];

                snprintf(field, sizeof(field), "network.allow[%zu]", i);
                *ret_index = i;
                if (why != ALLOWLIST_OK) {
                        snprintf(msg, msg_size, "%s: '%.80s' is not an allowlist entry: %s", field, allow[i],
                                 allowlist_reason_to_string(why));
                        return -EINVAL;
                }
                if (!allowlist_within(p->ceiling, &e)) {
                        char shown[ALLOWLIST_NAME_MAX + 16];

                        entry_to_string(&e, shown, sizeof(shown));
                        snprintf(msg, msg_size, "%s: '%.80s' is outside what this server allows (AllowDomains=)",
                                 field, shown);
                        return -EINVAL;
                }
        }
        *ret_index = SIZE_MAX;
        return 0;
}
