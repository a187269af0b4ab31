/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "artifact-accounts.h"
#include "log.h"
#include "store/store.h"
#include "util.h"

struct ArtifactAccounts {
        const Context *ctx;
        ArtifactAccount store_account;  /* the whole store's */
        ArtifactCallerAccount *callers; /* the callers' that have a collection running */
};

int artifact_accounts_new(const Context *ctx, ArtifactAccounts **ret) {
        _cleanup_free_ ArtifactAccounts *m = calloc(1, sizeof(ArtifactAccounts));
        uint64_t bytes = 0;
        int r;

        if (!m)
                return log_oom();
        m->ctx = ctx;
        r = store_artifact_store_bytes(m->ctx->store, &bytes);
        if (r < 0)
                return log_error_errno(r, "Cannot read the artifact store's usage: %s", store_error_message(m->ctx->store));
        artifact_account_set_committed(&m->store_account, bytes);
        log_info("Artifact store: %" PRIu64 " bytes charged (ArtifactStoreMaxBytes=%" PRIu64 ").", bytes,
                 m->ctx->config->artifact_store_max_bytes);
        *ret = TAKE_PTR(m);
        return 0;
}

static int caller_refresh(ArtifactAccounts *m, ArtifactCallerAccount *a) {
        uint64_t bytes = 0;
        int r;

        r = store_artifact_caller_bytes(m->ctx->store, a->owner, &bytes);
        if (r < 0)
                return r;
        artifact_account_set_committed(&a->account, bytes);
        return 0;
}

static void store_refresh(ArtifactAccounts *m) {
        uint64_t bytes = 0;
        int r;

        /* On failure the last value stays: it was right until this write, which may not have
         * happened either. */
        r = store_artifact_store_bytes(m->ctx->store, &bytes);
        if (r < 0)
                log_warning_errno(r, "Cannot read the artifact store's usage, keeping the last: %s",
                                  store_error_message(m->ctx->store));
        else
                artifact_account_set_committed(&m->store_account, bytes);
}

static int caller_ref(ArtifactAccounts *m, const char *owner, ArtifactCallerAccount **ret) {
        ArtifactCallerAccount *a;
        int r;

        for (a = m->callers; a; a = a->next)
                if (streq(a->owner, owner)) {
                        a->n_refs++;
                        *ret = a;
                        return 0;
                }
        a = calloc(1, sizeof(ArtifactCallerAccount));
        if (!a)
                return -ENOMEM;
        a->owner = strdup(owner);
        if (!a->owner) {
                free(a);
                return -ENOMEM;
        }
        r = caller_refresh(m, a);
        if (r < 0) {
                free(a->owner);
                free(a);
                return r;
        }
        a->n_refs = 1;
        a->next = m->callers;
        m->callers = a;
        *ret = a;
        return 0;
}

static void caller_unref(ArtifactAccounts *m, ArtifactCallerAccount *a) {
        if (!a || --a->n_refs > 0)
                return;
        for (ArtifactCallerAccount **p = &m->callers; *p; p = &(*p)->next)
                if (*p == a) {
                        *p = a->next;
                        break;
                }
        free(a->owner);
        free(a);
}

int artifact_accounts_begin(ArtifactAccounts *m, const char *owner, uint64_t disk_mb, ArtifactLimits *lim,
                            ArtifactCallerAccount **ret_caller) {
        const Config *c = m->ctx->config;
        ArtifactCallerAccount *a = NULL;
        int r;

        r = caller_ref(m, owner ?: "", &a);
        if (r < 0)
                return r;
        /* disk_mb is at most MaxDiskMB (2^20): no overflow. The workspace is a tmpfs of that size, so
         * what a run really leaves fits anyway; the budget still holds should the workspace ever be
         * something else, and bounds a session's output/, which every run collects again. */
        lim->execution_max_bytes = disk_mb << 20;
        lim->caller = &a->account;
        lim->caller_max_bytes = c->artifact_max_bytes_per_caller;
        lim->store = &m->store_account;
        lim->store_max_bytes = c->artifact_store_max_bytes;
        lim->min_free_bytes = c->artifact_min_free.bytes;
        lim->min_free_percent = c->artifact_min_free.percent;
        *ret_caller = a;
        return 0;
}

void artifact_accounts_settle(ArtifactAccounts *m, ArtifactCallerAccount **caller, uint64_t reserved, bool recorded) {
        ArtifactCallerAccount *a = *caller;

        /* The committed parts first, the reservation after: in between the rows count twice, which
         * errs on the side of the budget. */
        if (recorded) {
                store_refresh(m);
                if (a && caller_refresh(m, a) < 0)
                        log_warning("Cannot read the artifact usage of '%s', keeping the last: %s", a->owner,
                                    store_error_message(m->ctx->store));
        }
        artifact_account_release(&m->store_account, reserved);
        if (a)
                artifact_account_release(&a->account, reserved);
        caller_unref(m, a);
        *caller = NULL;
}

void artifact_accounts_refresh(ArtifactAccounts *m) {
        store_refresh(m);
        for (ArtifactCallerAccount *a = m->callers; a; a = a->next)
                (void) caller_refresh(m, a);
}

ArtifactAccounts *artifact_accounts_free(ArtifactAccounts *m) {
        if (!m)
                return NULL;
        while (m->callers) {
                ArtifactCallerAccount *a = m->callers;

                m->callers = a->next;
                free(a->owner);
                free(a);
        }
        free(m);
        return NULL;
}
