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

typedef struct ArtifactCallerAccount {
        ArtifactAccount account;
        char *owner;                    /* as the store keeps it: "uid:N", "key:NAME"; "" unknown */
        unsigned n_refs;                /* collections using it */
        struct ArtifactCallerAccount *next;
} ArtifactCallerAccount;

typedef struct ArtifactAccounts ArtifactAccounts;

/* At start: the accounts, the store-wide one read from the store. */
int artifact_accounts_new(const Context *ctx, ArtifactAccounts **ret);

/* The budgets of one collection of an execution owned by owner (NULL: unknown), into lim, with a
 * reference to the caller's account in *ret_caller (the caller of this function holds it until
 * artifact_accounts_settle()). -ENOMEM, or the store's error reading the caller's usage (then
 * nothing is collected: a budget is not guessed). */
int artifact_accounts_begin(ArtifactAccounts *a, const char *owner, uint64_t disk_mb, ArtifactLimits *lim,
                            ArtifactCallerAccount **ret_caller);

/* The collection is over: recorded (its rows are in the store, so the committed parts are read
 * again) or not; either way what it reserved (ArtifactList.charged_bytes; 0 when the collector
 * failed or was cancelled, which gives back its own) goes, and the reference is dropped. */
void artifact_accounts_settle(ArtifactAccounts *a, ArtifactCallerAccount **caller, uint64_t reserved, bool recorded);

/* After a purge: every account's committed part from the store again. */
void artifact_accounts_refresh(ArtifactAccounts *a);

/* At exit (no collection is left). */
ArtifactAccounts *artifact_accounts_free(ArtifactAccounts *a);
