/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "context.h"

const SeccompFilter *context_seccomp_filter(const Context *c, const Language *l) {
        for (size_t i = 0; i < c->n_filters; i++)
                if (language_get(i) == l)
                        return c->filters + i;
        return NULL;
}

const SeccompFilter *context_seccomp_filter_net(const Context *c, const Language *l) {
        if (!c->net_filters)
                return NULL;
        for (size_t i = 0; i < c->n_filters; i++)
                if (language_get(i) == l)
                        return c->net_filters + i;
        return NULL;
}
