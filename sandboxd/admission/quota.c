/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "quota.h"

uint64_t quota_max_queued_per_caller(const Config *c) {
        return MIN(c->max_queued_per_caller, c->max_queued);
}

uint64_t quota_max_running_per_caller(const Config *c) {
        return MAX(MIN(c->max_running_per_caller, c->max_concurrent), (uint64_t) 1);
}

uint64_t quota_queue_limit(const Config *c, bool admin) {
        /* The reserve keeps root (and admin keys) able to queue when everyone else has filled the
         * queue: to look into a problem, or to run what cannot wait. */
        if (admin)
                return c->max_queued;
        return c->max_queued - MIN(c->admin_queue_reserve, c->max_queued);
}

static uint64_t share_mb(uint64_t phys_bytes, unsigned percent) {
        if (phys_bytes == 0)
                return UINT64_MAX;
        return MAX(phys_bytes / (1024 * 1024) * percent / 100, (uint64_t) 1);
}

uint64_t quota_sessions_disk_mb(const Config *c, uint64_t phys_bytes) {
        return c->max_sessions_disk_mb ?: share_mb(phys_bytes, QUOTA_SESSIONS_DISK_PERCENT);
}

uint64_t quota_sessions_disk_mb_per_caller(const Config *c, uint64_t phys_bytes) {
        uint64_t v = c->max_sessions_disk_mb_per_caller ?: share_mb(phys_bytes, QUOTA_SESSIONS_DISK_PER_CALLER_PERCENT);

        return MIN(v, quota_sessions_disk_mb(c, phys_bytes));
}

#define refuse(err, r, error, field, ...) request_error((err), (r), (error), (field), __VA_ARGS__)

int quota_check_execution(const Config *c, const QuotaUsage *u, RequestError *err) {
        uint64_t running_cap = quota_max_running_per_caller(c), queued_cap = quota_max_queued_per_caller(c);
        uint64_t limit = quota_queue_limit(c, u->admin);
        /* It would start at once: no queue place is taken. */
        bool starts_now = u->running < c->max_concurrent && u->caller_running < running_cap;

        /* The caller's stored records and callbacks first: waiting for others does not help with
         * those. A full queue is queue_full as it always was, whoever filled it; the caller's own
         * cap is named when there is room for others but not for this caller. */
        if (u->caller_stored_bytes >= c->max_stored_bytes_per_caller)
                return refuse(err, -EDQUOT, API_ERROR_STORAGE_QUOTA_EXCEEDED, NULL,
                              "your execution records take %" PRIu64 " bytes in the store (MaxStoredBytesPerCaller=%"
                              PRIu64 "); they are purged RetentionSec=%" PRIu64 " s after they finished",
                              u->caller_stored_bytes, c->max_stored_bytes_per_caller, c->retention_sec);
        if (u->callback && u->caller_callbacks >= c->callback_max_pending_per_caller)
                return refuse(err, -EAGAIN, API_ERROR_TOO_MANY_CALLBACKS, "callback_url",
                              "callback_url: %" PRIu64 " of your callback deliveries are pending or still to come "
                              "(CallbackMaxPendingPerCaller=%" PRIu64 "); retry when some are delivered or given up",
                              u->caller_callbacks, c->callback_max_pending_per_caller);
        if (!starts_now && u->queued >= limit) {
                if (limit < c->max_queued)
                        return refuse(err, -EAGAIN, API_ERROR_QUEUE_FULL, NULL,
                                      "%" PRIu64 " executions queued (MaxQueued=%" PRIu64 ", of which "
                                      "AdminQueueReserve=%" PRIu64 " only for administrators); retry later",
                                      u->queued, c->max_queued,
                                      c->max_queued - limit);
                return refuse(err, -EAGAIN, API_ERROR_QUEUE_FULL, NULL,
                              "%" PRIu64 " executions queued (MaxQueued=%" PRIu64 "); retry later", u->queued,
                              c->max_queued);
        }
        if (!starts_now && u->caller_queued >= queued_cap)
                return refuse(err, -EAGAIN, API_ERROR_CALLER_QUEUE_FULL, NULL,
                              "%" PRIu64 " of your executions are queued (MaxQueuedPerCaller=%" PRIu64 "); retry when "
                              "some have started", u->caller_queued, queued_cap);
        return 0;
}

int quota_check_session(const Config *c, uint64_t phys_bytes, const QuotaUsage *u, RequestError *err) {
        uint64_t total = quota_sessions_disk_mb(c, phys_bytes), mine = quota_sessions_disk_mb_per_caller(c, phys_bytes);
        uint64_t want = u->new_session_disk_mb;

        /* Overflow-safe: want ≤ MaxDiskMB ≤ 2^20, the sums are of such values. */
        if (u->caller_sessions_disk_mb + want > mine)
                return refuse(err, -EDQUOT, API_ERROR_SESSION_DISK_QUOTA_EXCEEDED, "limits.disk_mb",
                              "limits.disk_mb: your sessions hold %" PRIu64 " MB of disk_mb, a new one of %" PRIu64
                              " would exceed MaxSessionsDiskMBPerCaller=%" PRIu64 "; delete a session or ask for less",
                              u->caller_sessions_disk_mb, want, mine);
        if (u->sessions_disk_mb + want > total)
                return refuse(err, -EAGAIN, API_ERROR_SESSION_DISK_FULL, "limits.disk_mb",
                              "limits.disk_mb: sessions hold %" PRIu64 " MB of disk_mb, a new one of %" PRIu64
                              " would exceed MaxSessionsDiskMB=%" PRIu64 "; retry later or ask for less",
                              u->sessions_disk_mb, want, total);
        return 0;
}
