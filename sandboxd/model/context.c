/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "context.h"

/* The filters live in the rows: compiled when the table is loaded (manager.c). */
const SeccompFilter *context_seccomp_filter(const Context *c, const Language *l) {
        return l && l->filter.bpf ? &l->filter : NULL;
}

const SeccompFilter *context_seccomp_filter_net(const Context *c, const Language *l) {
        return l && l->net_filter.bpf ? &l->net_filter : NULL;
}
