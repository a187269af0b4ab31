/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The event loop's side of the artifact budgets (artifacts.h has the collectors' side): the store-wide
 * account, and one account per caller while a collection of that caller's runs. Each account's
 * committed part is what the execution store says the recorded artifacts are charged (its usage
 * tables: one lookup, never a sum over rows), read at start, when a caller's first collection
 * begins, after every collection is recorded and after every purge; the reserved part is what
 * collections still running have copied. So a budget holds across concurrent collections and
 * restarts, and a purge by RetentionSec= gives the space back. */

#include "artifacts.h"
#include "model/context.h"

typedef struct ArtifactAccounts ArtifactAccounts;
typedef struct ArtifactCallerWait ArtifactCallerWait;
struct StoreCall;

typedef struct ArtifactCallerAccount {
        ArtifactAccount account;
        char *owner;                    /* as the store keeps it: "uid:N", "key:NAME"; "" unknown */
        unsigned n_refs;                /* collections using it (or waiting for it) */
        ArtifactAccounts *accounts;
        bool loading;                   /* its committed part is being read: those asking wait */
        struct StoreCall *read;
        ArtifactCallerWait *waits;
        struct ArtifactCallerAccount *next;
} ArtifactCallerAccount;

/* At start: the accounts, the store-wide one read from the store. */
int artifact_accounts_new(const Context *ctx, ArtifactAccounts **ret);

/* The account of owner (NULL: unknown) for one collection, without waiting for the store: done(userdata,
 * 0, account) with a reference the caller holds until artifact_accounts_settle(), or done(userdata,
 * r, NULL) with the store's error reading the caller's usage (then nothing is collected: a budget is
 * not guessed). Returns 1 when done was called already (the caller has a collection running: its
 * account is current), 0 when the store was asked (*ret: the wait, until done is called;
 * artifact_caller_wait_cancel() drops it, done not called), -ENOMEM (done not called). */
typedef void (*ArtifactCallerFn)(void *userdata, int r, ArtifactCallerAccount *a);
int artifact_accounts_caller_async(ArtifactAccounts *m, const char *owner, ArtifactCallerFn done, void *userdata,
                                   ArtifactCallerWait **ret);
ArtifactCallerWait *artifact_caller_wait_cancel(ArtifactCallerWait *w);

/* The budgets of one collection into lim, with the caller's account a (referenced). */
void artifact_accounts_begin(ArtifactAccounts *m, ArtifactCallerAccount *a, uint64_t disk_mb, ArtifactLimits *lim);

/* The collection is over: recorded (its rows are in the store, so the committed parts are read
 * again, without waiting) or not; either way what it reserved (ArtifactList.charged_bytes; 0 when the
 * collector failed or was cancelled, which gives back its own) goes (once the reads are in), and the
 * reference is dropped. */
void artifact_accounts_settle(ArtifactAccounts *a, ArtifactCallerAccount **caller, uint64_t reserved, bool recorded);

/* After a purge: every account's committed part from the store again. */
void artifact_accounts_refresh(ArtifactAccounts *a);

/* At exit (no collection is left). */
ArtifactAccounts *artifact_accounts_free(ArtifactAccounts *a);
