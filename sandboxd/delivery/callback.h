/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Callback deliveries: when an execution that named a callback_url ends, its result is POSTed
 * there, signed, from the outbox in the store (store.h), by the network worker (net-client.h: the
 * daemon reads only the outcome, never the receiver's answer). At most CallbackMaxConcurrent= attempts are in flight; each has its
 * own timeout, so a slow or dead receiver holds one slot for CallbackTimeoutSec= at most and never
 * an execution. An attempt in flight holds a lease in the store (next_attempt_at is pushed past its
 * timeout), so a crash mid-attempt retries it after the lease, and a clean stop hands it back
 * immediately. The decision table, the delays and the signature are backoff.c's. */

#include <json-c/json.h>

#include "model/context.h"
#include "model/execution.h"
#include "store/store.h"

typedef struct Callbacks Callbacks;

/* Loads (at the default path: generates) the signing key. Logs and fails when it cannot. */
int callbacks_new(Context *ctx, Callbacks **ret);
/* Aborts the attempts in flight; they stay pending and are due at once after the next start. */
Callbacks *callbacks_free(Callbacks *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Callbacks *, callbacks_free);

/* Re-read the key after a reload (CallbackKeyFile= may have changed); on failure the old one stays. */
int callbacks_reload(Callbacks *c);

/* Something was enqueued or the configuration changed: start what is due, re-arm the timer. */
void callbacks_kick(Callbacks *c);

/* The delivery to enqueue with the final record of e (StoreRecord.callback): the body rendered
 * now, a fresh delivery id, due at once. */
int callback_prepare(const Execution *e, const char *url, StoreCallback **ret);

/* The callback_url kept in the stored rest of a request (job.c request_json()), or NULL. */
char *callback_url_from_request_json(const char *json);

/* Add "callback": {url, state, attempts, last_error, delivered_at} to an execution's JSON from its
 * delivery, read (store_callback_get_async()). */
void callback_json_add(json_object *o, const StoreCallback *cb);

/* Read the signing key at path: the checks of secret-file.h for a key itself (a regular file owned
 * by root, 0600: no access for group or others; every directory above it root's and not writable
 * by others), then CALLBACK_KEY_MIN..CALLBACK_KEY_MAX bytes without trailing white space. On
 * failure *ret_error names the file and what to do; -ENOENT if it does not exist, -ENOKEY if too
 * short, -EPERM, -EBADFD, -ELOOP... from secret_file_open(). */
int callback_key_read(const char *path, uint8_t **ret, size_t *ret_len, char **ret_error);

/* The key file's content: what a receiver needs. Generated keys are 64 hex characters. */
#define CALLBACK_KEY_MIN 16
#define CALLBACK_KEY_MAX 4096
