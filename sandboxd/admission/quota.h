/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Budgets: whether one more execution (or session) fits what its caller and everyone together may
 * hold, and the values of the budget keys in force. Pure: the caller gathers the usage (the queue's
 * counters, the store's record_usage row, the sessions' sizes) and the physical memory; every
 * refusal is a 429 whose code says which budget is full (docs/http-api.md):
 *
 *   queue_full                   MaxQueued= (less AdminQueueReserve= for anyone but an admin)
 *   caller_queue_full            MaxQueuedPerCaller=
 *   too_many_callbacks           CallbackMaxPendingPerCaller=
 *   storage_quota_exceeded       MaxStoredBytesPerCaller=
 *   session_disk_full            MaxSessionsDiskMB=
 *   session_disk_quota_exceeded  MaxSessionsDiskMBPerCaller=
 *
 * A queue budget only refuses what cannot start at once: with a slot free (and the caller below
 * MaxRunningPerCaller=) the execution never waits, so it takes no queue place. */

#include <stdbool.h>
#include <stdint.h>

#include "model/conf.h"
#include "model/request.h"

/* Shares of physical memory the session budgets default to. sandboxd.slice may use 80% of it
 * (MemoryMax=); sessions' tmpfs pages stay charged to the slice after their runs, so at most half of
 * the memory may be pinned by sessions, leaving the rest of the slice's to the running executions;
 * one caller may pin half of that. */
#define QUOTA_SESSIONS_DISK_PERCENT 50
#define QUOTA_SESSIONS_DISK_PER_CALLER_PERCENT 25

typedef struct QuotaUsage {
        bool admin;                     /* root on the socket, an admin key on TCP */
        uint64_t queued, running;       /* everyone's executions waiting, holding a slot */
        uint64_t caller_queued, caller_running;
        bool callback;                  /* the request has a callback_url */
        uint64_t caller_callbacks;      /* deliveries pending, and executions to be delivered when final */
        uint64_t caller_stored_bytes;   /* StoreUsage.bytes */
        uint64_t new_session_disk_mb;   /* the session this request creates; 0: none */
        uint64_t sessions_disk_mb;      /* the sum of every session's disk_mb */
        uint64_t caller_sessions_disk_mb;
} QuotaUsage;

/* The values in force: a per-caller key never exceeds its global one, an unset one follows it. */
uint64_t quota_max_queued_per_caller(const Config *c);
uint64_t quota_max_running_per_caller(const Config *c);
/* How many may wait before this caller is refused queue_full. */
uint64_t quota_queue_limit(const Config *c, bool admin);
/* In MB; phys_bytes is the host's memory (0: unknown, then no budget applies unless configured). */
uint64_t quota_sessions_disk_mb(const Config *c, uint64_t phys_bytes);
uint64_t quota_sessions_disk_mb_per_caller(const Config *c, uint64_t phys_bytes);

/* May a new execution be admitted? 0, or a negative errno with *err filled (429 and the code). */
int quota_check_execution(const Config *c, const QuotaUsage *u, RequestError *err);
/* May a session of u->new_session_disk_mb be created? 0, or negative with *err filled. */
int quota_check_session(const Config *c, uint64_t phys_bytes, const QuotaUsage *u, RequestError *err);
