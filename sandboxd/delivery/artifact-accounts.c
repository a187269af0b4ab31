/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "artifact-accounts.h"
#include "log.h"
#include "store/store.h"
#include "util.h"

typedef struct ArtifactSettle ArtifactSettle;

struct ArtifactAccounts {
        const Context *ctx;
        ArtifactAccount store_account;  /* the whole store's */
        ArtifactCallerAccount *callers; /* the callers' that have a collection running (or starting) */
        ArtifactSettle *settles;        /* recorded collections whose committed parts are being read */
        StoreCall *refresh;             /* artifact_accounts_refresh()'s read of the store's part */
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

/* ---- reads without waiting (issue 22) ----
 *
 * A caller's account is made when its first collection asks for it, and read from the store then:
 * those asking meanwhile wait for that read (ArtifactCallerWait). After a recorded collection both
 * committed parts are read again (ArtifactSettle): the collection's reservation is given back only
 * once they are in, so that its bytes count twice for a moment rather than not at all. */

struct ArtifactCallerWait {
        ArtifactAccounts *m;
        ArtifactCallerAccount *a;
        ArtifactCallerWait *next;        /* a->waits */
        ArtifactCallerFn done;
        void *userdata;
        bool *called;                    /* while artifact_accounts_caller_async() runs: done was called */
};

struct ArtifactSettle {
        ArtifactAccounts *m;
        ArtifactSettle *prev, *next;     /* m->settles */
        ArtifactCallerAccount *a;        /* referenced until the end, or NULL */
        uint64_t reserved;
        unsigned pending;                /* reads not answered, and the one issuing them */
        StoreCall *store_call, *caller_call;
};

static void caller_unref(ArtifactAccounts *m, ArtifactCallerAccount *a);

static void on_caller_bytes(void *userdata, int r, uint64_t bytes) {
        ArtifactCallerAccount *a = userdata;
        ArtifactAccounts *m = a->accounts;

        a->read = NULL;
        a->loading = false;
        if (r < 0)
                log_warning_errno(r, "Cannot read the artifact usage of '%s': %s", a->owner,
                                  store_error_message(m->ctx->store));
        else
                artifact_account_set_committed(&a->account, bytes);
        /* Each waiter gets the account (its reference), or the error (and its reference goes). Held
         * meanwhile: a waiter may cancel another. */
        a->n_refs++;
        while (a->waits) {
                ArtifactCallerWait *w = a->waits;
                ArtifactCallerFn done = w->done;
                void *ud = w->userdata;

                a->waits = w->next;
                if (w->called)
                        *w->called = true;
                free(w);
                if (r < 0) {
                        caller_unref(m, a);
                        done(ud, r, NULL);
                } else
                        done(ud, 0, a);
        }
        caller_unref(m, a);
}

int artifact_accounts_caller_async(ArtifactAccounts *m, const char *owner, ArtifactCallerFn done, void *userdata,
                                   ArtifactCallerWait **ret) {
        ArtifactCallerAccount *a;
        ArtifactCallerWait *w;
        bool created = false, called = false;
        int r;

        *ret = NULL;
        if (!owner)
                owner = "";
        for (a = m->callers; a; a = a->next)
                if (streq(a->owner, owner))
                        break;
        if (a && !a->loading) {
                /* A collection of the caller's runs: its account is current. */
                a->n_refs++;
                done(userdata, 0, a);
                return 1;
        }
        w = calloc(1, sizeof(ArtifactCallerWait));
        if (!w)
                return -ENOMEM;
        if (!a) {
                a = calloc(1, sizeof(ArtifactCallerAccount));
                if (!a || !(a->owner = strdup(owner))) {
                        free(a);
                        free(w);
                        return -ENOMEM;
                }
                a->accounts = m;
                a->loading = true;
                a->next = m->callers;
                m->callers = a;
                created = true;
        }
        /* The waiter (and its reference) first: without an event loop the answer comes at once. */
        a->n_refs++;
        *w = (ArtifactCallerWait) { .m = m, .a = a, .done = done, .userdata = userdata, .next = a->waits,
                                    .called = &called };
        a->waits = w;
        if (created) {
                r = store_artifact_caller_bytes_async(m->ctx->store, a->owner, on_caller_bytes, a, &a->read);
                if (called)
                        return 1;       /* answered (w and maybe a are gone) */
                if (r < 0) {
                        /* Refused (out of memory): nobody waits. */
                        a->waits = w->next;
                        free(w);
                        caller_unref(m, a);
                        return r;
                }
        }
        w->called = NULL;
        *ret = w;
        return 0;
}

ArtifactCallerWait *artifact_caller_wait_cancel(ArtifactCallerWait *w) {
        if (!w)
                return NULL;
        for (ArtifactCallerWait **p = &w->a->waits; *p; p = &(*p)->next)
                if (*p == w) {
                        *p = w->next;
                        break;
                }
        caller_unref(w->m, w->a);
        free(w);
        return NULL;
}

static void settle_free(ArtifactSettle *x) {
        ArtifactAccounts *m = x->m;

        if (x->prev)
                x->prev->next = x->next;
        else
                m->settles = x->next;
        if (x->next)
                x->next->prev = x->prev;
        (void) store_call_cancel(x->store_call);
        (void) store_call_cancel(x->caller_call);
        free(x);
}

/* Both committed parts are in: the reservation goes. */
static void settle_maybe_end(ArtifactSettle *x) {
        ArtifactAccounts *m = x->m;

        if (x->pending > 0)
                return;
        artifact_account_release(&m->store_account, x->reserved);
        if (x->a)
                artifact_account_release(&x->a->account, x->reserved);
        caller_unref(m, x->a);
        settle_free(x);
}

static void on_settle_store_bytes(void *userdata, int r, uint64_t bytes) {
        ArtifactSettle *x = userdata;

        x->store_call = NULL;
        x->pending--;
        /* On failure the last value stays: it was right until this write, which may not have
         * happened either. */
        if (r < 0)
                log_warning_errno(r, "Cannot read the artifact store's usage, keeping the last: %s",
                                  store_error_message(x->m->ctx->store));
        else
                artifact_account_set_committed(&x->m->store_account, bytes);
        settle_maybe_end(x);
}

static void on_settle_caller_bytes(void *userdata, int r, uint64_t bytes) {
        ArtifactSettle *x = userdata;

        x->caller_call = NULL;
        x->pending--;
        if (r < 0)
                log_warning_errno(r, "Cannot read the artifact usage of '%s', keeping the last: %s", x->a->owner,
                                  store_error_message(x->m->ctx->store));
        else
                artifact_account_set_committed(&x->a->account, bytes);
        settle_maybe_end(x);
}

static void caller_unref(ArtifactAccounts *m, ArtifactCallerAccount *a) {
        if (!a || --a->n_refs > 0)
                return;
        for (ArtifactCallerAccount **p = &m->callers; *p; p = &(*p)->next)
                if (*p == a) {
                        *p = a->next;
                        break;
                }
        (void) store_call_cancel(a->read);
        free(a->owner);
        free(a);
}

void artifact_accounts_begin(ArtifactAccounts *m, ArtifactCallerAccount *a, uint64_t disk_mb, ArtifactLimits *lim) {
        const Config *c = m->ctx->config;

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
}

void artifact_accounts_settle(ArtifactAccounts *m, ArtifactCallerAccount **caller, uint64_t reserved, bool recorded) {
        ArtifactCallerAccount *a = *caller;
        ArtifactSettle *x;

        *caller = NULL;
        /* The committed parts first, the reservation after: in between the rows count twice, which
         * errs on the side of the budget. */
        if (recorded && (x = calloc(1, sizeof(ArtifactSettle)))) {
                /* pending: the two reads and this, which issues them (without an event loop they are
                 * answered at once). */
                *x = (ArtifactSettle) { .m = m, .a = a, .reserved = reserved, .pending = 1, .next = m->settles };
                if (m->settles)
                        m->settles->prev = x;
                m->settles = x;
                /* A read refused (out of memory) keeps the last value, as a failed one does. */
                x->pending++;
                if (store_artifact_store_bytes_async(m->ctx->store, on_settle_store_bytes, x, &x->store_call) < 0)
                        x->pending--;
                if (a) {
                        x->pending++;
                        if (store_artifact_caller_bytes_async(m->ctx->store, a->owner, on_settle_caller_bytes, x,
                                                              &x->caller_call) < 0)
                                x->pending--;
                }
                x->pending--;
                settle_maybe_end(x);
                return;
        }
        /* Not recorded, or out of memory: the committed parts as they were. */
        artifact_account_release(&m->store_account, reserved);
        if (a)
                artifact_account_release(&a->account, reserved);
        caller_unref(m, a);
}

static void on_refresh_store_bytes(void *userdata, int r, uint64_t bytes) {
        ArtifactAccounts *m = userdata;

        m->refresh = NULL;
        if (r < 0)
                log_warning_errno(r, "Cannot read the artifact store's usage, keeping the last: %s",
                                  store_error_message(m->ctx->store));
        else
                artifact_account_set_committed(&m->store_account, bytes);
}

/* Without waiting: the store's part, and each caller's as when it is first read (a collection asking
 * meanwhile waits for it, on_caller_bytes()). */
void artifact_accounts_refresh(ArtifactAccounts *m) {
        /* A read refused (out of memory) keeps the last value, as a failed one does. */
        if (!m->refresh)
                (void) store_artifact_store_bytes_async(m->ctx->store, on_refresh_store_bytes, m, &m->refresh);
        for (ArtifactCallerAccount *a = m->callers; a; a = a->next) {
                if (a->loading)
                        continue;
                a->loading = true;
                if (store_artifact_caller_bytes_async(m->ctx->store, a->owner, on_caller_bytes, a, &a->read) < 0)
                        a->loading = false;
        }
}

ArtifactAccounts *artifact_accounts_free(ArtifactAccounts *m) {
        if (!m)
                return NULL;
        m->refresh = store_call_cancel(m->refresh);
        while (m->settles)
                settle_free(m->settles);
        while (m->callers) {
                ArtifactCallerAccount *a = m->callers;

                m->callers = a->next;
                (void) store_call_cancel(a->read);
                while (a->waits) {
                        ArtifactCallerWait *w = a->waits;

                        a->waits = w->next;
                        free(w);
                }
                free(a->owner);
                free(a);
        }
        free(m);
        return NULL;
}
