/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The administrator's [Network] section made usable (issue 16): AllowDomains= as an allowlist (the
 * ceiling of every request's network.allow), PermitAddresses= as CIDR blocks, and HostsFile= read
 * into NAME=ADDRESS pairs for the proxy's --host=. Built at every load and reload of the
 * configuration; an entry that is not one, or a bad line of the hosts file, is a configuration error
 * that names it. The checks are pure; only net_policy_load() reads a file. */

#include <stddef.h>

#include "allowlist.h"
#include "cidr.h"
#include "model/conf.h"

/* hosts(5) names the proxy takes (--host=, at most 1024), and the file's size. */
#define NET_POLICY_HOSTS_MAX 1024
#define NET_POLICY_HOSTS_FILE_MAX (1024 * 1024)

typedef struct NetPolicy {
        Allowlist *ceiling;      /* AllowDomains=; no entries: every request with network is refused */
        char **allow_domains;    /* the same as written, for messages */
        Cidr *permit;            /* PermitAddresses= */
        size_t n_permit;
        char **permit_strings;   /* the same in text, for --permit= */
        char **hosts;            /* "NAME=ADDRESS", one per name and address, in file order */
        size_t n_hosts;
} NetPolicy;

NetPolicy *net_policy_free(NetPolicy *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(NetPolicy *, net_policy_free);

/* From c's [Network] (reading HostsFile=): 0 and *ret; -EINVAL with *ret_error "WHERE: message";
 * -ENOMEM. */
int net_policy_load(const Config *c, NetPolicy **ret, char **ret_error);

/* The text of a hosts file (path for messages): each line "ADDRESS NAME [NAME...]" with '#' comments;
 * ADDRESS numeric IPv4 or IPv6, names checked by allowlist_host_check(), at most
 * NET_POLICY_HOSTS_MAX names in all. Appends "name=address" to *hosts. -EINVAL with "PATH:LINE:
 * message" in *ret_error. */
int net_policy_parse_hosts(const char *text, const char *path, char ***hosts, size_t *n_hosts, char **ret_error);

/* Is a request's network.allow within the ceiling? 0; -EINVAL with the index of the entry at fault
 * (SIZE_MAX: the list as a whole) and a message naming it in msg; -ENOMEM. */
int net_policy_check_request(const NetPolicy *p, char *const *allow, size_t n, size_t *ret_index, char *msg,
                             size_t msg_size);
