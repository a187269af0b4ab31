/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Admitting a new execution: the one path both APIs (HTTP and D-Bus) take, so that validation,
 * idempotency and the queue limit are the same code for both. */

#include <stdbool.h>

#include "api-context.h"
#include "list-query.h"
#include "model/request.h"
#include "run/job.h"
#include "store/store.h"

typedef enum SubmitOutcome {
        SUBMIT_CREATED,          /* a new job, queued (and maybe started already) */
        SUBMIT_EXISTING_JOB,     /* the same execution_id and request again: that job, never a second run */
        SUBMIT_EXISTING_RECORD,  /* the same again, known only from the store (evicted, or an earlier run) */
} SubmitOutcome;

typedef struct SubmitResult {
        SubmitOutcome outcome;
        Job *job;                /* CREATED, EXISTING_JOB */
        StoreRecord *record;     /* EXISTING_RECORD: owned by the caller (store_record_free) */
} SubmitResult;

/* Parse the JSON request body, check it against the configuration, the caller's earlier executions
 * (execution_id) and the queue, record it, and queue it as owner's, without waiting for the store
 * (issue 22: its reads and its write are asynchronous). done(userdata, r, res, err) is called once:
 * r = 0 with *res (the job, or the record done must free), or a negative errno with *err (the
 * ApiError, field and message every API renders). Returns 1 when done was called already (a refusal
 * of the request itself, an execution in memory, a store without event loop), 0 when the store was
 * asked (*ret: the submission until done is called). */
typedef struct Submission Submission;
typedef void (*SubmitDoneFn)(void *userdata, int r, SubmitResult *res, const RequestError *err);
int submit_execution_async(ApiContext *ac, const char *body, size_t len, const char *owner, bool admin,
                           SubmitDoneFn done, void *userdata, Submission **ret);
/* The caller goes away: done is not called; the submission goes on (a job made is queued and runs, as
 * for a caller that left after its 202). Returns NULL. */
Submission *submission_abandon(Submission *s);
/* At a stop, after the APIs: every submission ends unanswered; a record already sent is still written
 * (a queued execution the next start resumes), a job not recorded is dropped. */
void submissions_stop(ApiContext *ac);

/* The execution owner calls id: its own client-chosen execution_id first (the scoped record id,
 * scoped-id.h), then id as a record id (a generated id, or the record_id of a client-chosen one) if
 * the caller may see that record (its own; admin: anyone's); in memory, else in the store without
 * waiting (store_get_async()). done(userdata, job, rec): the live job, else the stored record (done's
 * to free); both NULL if there is none the caller may see: another owner's execution of the same name
 * is not found, and is never revealed. Returns 1 when done was called already (the execution is in
 * memory, or is not to be looked for), 0 when the store was asked (*ret: the lookup, until done is
 * called; find_lookup_cancel() drops it and done is not called), or -ENOMEM (done not called). */
typedef struct FindLookup FindLookup;
typedef void (*FindDoneFn)(void *userdata, Job *j, StoreRecord *rec);
int find_execution_async(ApiContext *ac, const char *owner, bool admin, const char *id, FindDoneFn done,
                         void *userdata, FindLookup **ret);
FindLookup *find_lookup_cancel(FindLookup *f);

/* The cancel of an execution find_execution_async() found, j (held here) or rec (its record, taken),
 * without waiting for the store. A job held here is cancelled (job_cancel()); a run another node
 * holds (also one it claimed from the shared queue meanwhile) is marked in the store and that node
 * told (store_cancel_elsewhere_async()). done(userdata, r, rec) once, from the loop:
 *   0, rec NULL: cancelled here and on record (a SIGKILL now does not undo it): look the execution up
 *                again for the answer;
 *   0, rec:      another node runs it: the cancel is on record there, rec (done's to free) shows it;
 *   -EALREADY:   it has finished (or no node holds it);
 *   another negative errno: the store's (store_error_public()).
 * Returns 0 when done will come (*ret: the cancel until then; cancel_op_free() drops it, done not
 * called), 1 when cancelled here with nothing to wait for (no store: answer now), or a negative errno
 * as done would have had it (done not called). */
typedef struct CancelOp CancelOp;
typedef void (*CancelDoneFn)(void *userdata, int r, StoreRecord *rec);
int cancel_execution_async(ApiContext *ac, Job *j, StoreRecord *rec, CancelDoneFn done, void *userdata,
                           CancelOp **ret);
CancelOp *cancel_op_free(CancelOp *op);

/* GET /v1/executions and ListExecutions: the page of store_list_async() as JSON (NULL on OOM), and a
 * failed list as the error both APIs render (-EINVAL: a cursor of another query). */
json_object *list_page_json(StoreRecord **l, size_t n, const char *next);
int list_error(ApiContext *ac, int r, RequestError *err);

/* An execution as every API shows it: the result (result.c); once final, a freshly signed URL for
 * each artifact in e->artifacts and its callback delivery if it has one. execution_json_base() is
 * what memory has (without the callback's state: for an execution not final, all of it).
 * job_record_json_async() renders a job (a final job's record is read back from the store: the job
 * keeps no output once it is there; or its artifacts alone if the record could not be written),
 * stored_record_json_async() a record read from the store (its artifacts read with it), both without
 * waiting for the store. done(userdata, o, err) is called once: o the JSON (done's), or NULL with *err
 * (API_ERROR_STORE: the record cannot be read; API_ERROR_NOT_FOUND: purged meanwhile). Returns 1
 * when done was called already (what memory has was enough), 0 when the store was asked (*ret: the
 * render until done is called; record_render_cancel() drops it, done not called), -ENOMEM (done not
 * called; rec freed). A job being rendered is not evicted (j->holds). rec is taken. */
json_object *execution_json_base(ApiContext *ac, const Execution *e);
typedef struct RecordRender RecordRender;
typedef void (*RecordJsonDoneFn)(void *userdata, json_object *o, const RequestError *err);
int job_record_json_async(ApiContext *ac, Job *j, RecordJsonDoneFn done, void *userdata, RecordRender **ret);
int stored_record_json_async(ApiContext *ac, StoreRecord *rec, RecordJsonDoneFn done, void *userdata,
                             RecordRender **ret);
RecordRender *record_render_cancel(RecordRender *x);
