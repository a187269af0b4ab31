/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <limits.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "callback.h"
#include "log.h"
#include "model/backoff.h"
#include "model/result.h"
#include "net/net-client.h"
#include "secret-file.h"
#include "time-util.h"

/* What the worker reads of a receiver's answer: it is discarded, and a receiver that keeps talking is
 * cut off. */
#define RESPONSE_MAX (64 * 1024)
/* How long past its timeout an attempt in flight keeps its lease (see callback.h). */
#define LEASE_SLACK_USEC (30 * USEC_PER_SEC)
/* After a failed store write (or a delivery found still in flight), when to look again. */
#define STORE_RETRY_USEC (5 * USEC_PER_SEC)
#define LAST_ERROR_MAX 256

/* A delivery this node works on, from its claim until the outcome is written. Every store call is
 * made without waiting (issue 22): the loop never blocks on the outbox. */
typedef enum DeliveryState {
        DELIVERY_CLAIMING,       /* the lease's update is on its way to the store */
        DELIVERY_SENDING,        /* the network worker makes the attempt */
        DELIVERY_SAVING,         /* its outcome is on its way to the store */
} DeliveryState;

typedef struct Delivery Delivery;
struct Delivery {
        Callbacks *owner;
        Delivery *prev, *next;
        DeliveryState state;
        StoreCallback *cb;
        NetCall *call;           /* DELIVERY_SENDING */
        StoreCall *store_call;   /* DELIVERY_CLAIMING, DELIVERY_SAVING */
        uint64_t retry_after;
};

struct Callbacks {
        Context *ctx;
        sd_event_source *timer;
        Delivery *deliveries;
        unsigned n_deliveries;
        StoreCall *read;         /* the read of what is due, under way */
        size_t read_want;        /* how many it asked for */
        bool read_again;         /* kicked while it was: read once more after it */
        uint8_t *key;
        size_t key_len;
};

static void dispatch(Callbacks *c);
static void arm_timer(Callbacks *c, uint64_t when);

static uint64_t random_u64(void) {
        uint64_t v;

        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t) sizeof(v))
                v = now_usec(CLOCK_MONOTONIC) * 6364136223846793005ULL;
        return v;
}

/* ---- the key ---- */

static int key_generate(const char *path) {
        _cleanup_close_ int fd = -EBADF;
        uint8_t raw[32];
        char hex[sizeof(raw) * 2 + 2];
        int r;

        if (getrandom(raw, sizeof(raw), 0) != (ssize_t) sizeof(raw))
                return -errno;
        for (size_t i = 0; i < sizeof(raw); i++)
                snprintf(hex + 2 * i, 3, "%02x", raw[i]);
        hex[sizeof(raw) * 2] = '\n';
        hex[sizeof(raw) * 2 + 1] = 0;
        /* O_EXCL|O_NOFOLLOW: never through a link, never over a file someone put there first. */
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        r = loop_write(fd, hex, strlen(hex));
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(path);
        return r;
}

int callback_key_read(const char *path, uint8_t **ret, size_t *ret_len, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ uint8_t *buf = NULL;
        struct stat st;
        ssize_t n;

        fd = secret_file_open(path, geteuid(), SECRET_OWNER_ONLY, "callback signing key (CallbackKeyFile=)", &st,
                              ret_error);
        if (fd < 0)
                return fd;
        if (st.st_size > CALLBACK_KEY_MAX + 16) {
                (void) error_set(ret_error, "%s: the callback signing key is larger than %d bytes", path,
                                 CALLBACK_KEY_MAX);
                return -EFBIG;
        }
        buf = malloc(CALLBACK_KEY_MAX + 17);
        if (!buf)
                return -ENOMEM;
        n = loop_read(fd, buf, CALLBACK_KEY_MAX + 16);
        if (n < 0) {
                (void) error_set(ret_error, "%s: cannot read the callback signing key: %s", path, strerror((int) -n));
                return (int) n;
        }
        /* The key is the file's text without trailing white space (the newline an editor adds). */
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
                n--;
        if (n < CALLBACK_KEY_MIN) {
                (void) error_set(ret_error, "%s: the callback signing key is shorter than %d bytes", path,
                                 CALLBACK_KEY_MIN);
                return -ENOKEY;
        }
        if (n > CALLBACK_KEY_MAX) {
                (void) error_set(ret_error, "%s: the callback signing key is larger than %d bytes", path,
                                 CALLBACK_KEY_MAX);
                return -EFBIG;
        }
        *ret = TAKE_PTR(buf);
        *ret_len = (size_t) n;
        return 0;
}

/* At start a key that cannot be read fails the start; at reload the previous key stays. */
static int key_load(Callbacks *c, bool reload) {
        const Config *cfg = c->ctx->config;
        _cleanup_free_ char *def = NULL, *error = NULL;
        _cleanup_free_ uint8_t *key = NULL;
        const char *path = cfg->callback_key_file;
        size_t len = 0;
        int r;

        if (!path) {
                if (asprintf(&def, "%s/callback.key", cfg->state_dir) < 0)
                        return log_oom();
                path = def;
        }
        r = callback_key_read(path, &key, &len, &error);
        if (r == -ENOENT && !cfg->callback_key_file) {
                r = key_generate(path);
                if (r < 0 && r != -EEXIST)
                        return log_error_errno(r, "Cannot create the callback signing key %s: %m", path);
                if (r >= 0)
                        log_info("Generated the callback signing key %s.", path);
                r = callback_key_read(path, &key, &len, &error);
        }
        if (r < 0 && reload)
                return log_warning_errno(r, "%s; keeping the previous callback signing key.", error ?: "out of memory");
        if (r < 0)
                return log_error_errno(r, "%s", error ?: "out of memory");
        if (c->key)
                explicit_bzero(c->key, c->key_len);
        free(c->key);
        c->key = TAKE_PTR(key);
        c->key_len = len;
        return 0;
}

/* ---- one attempt ---- */

static Delivery *delivery_free(Delivery *d) {
        Callbacks *c;

        if (!d)
                return NULL;
        c = d->owner;
        if (c) {
                if (d->prev)
                        d->prev->next = d->next;
                else
                        c->deliveries = d->next;
                if (d->next)
                        d->next->prev = d->prev;
                c->n_deliveries--;
        }
        net_call_cancel(d->call);
        (void) store_call_cancel(d->store_call);        /* a write queued is still made */
        store_callback_free(d->cb);
        return mfree(d);
}

static void set_last_error(StoreCallback *cb, const char *fmt, ...) _printf_(2, 3);
static void set_last_error(StoreCallback *cb, const char *fmt, ...) {
        char buf[LAST_ERROR_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        (void) free_and_strdup(&cb->last_error, buf);
}

static void log_save_failed(Callbacks *c, const StoreCallback *cb, int r) {
        log_error_errno(r, "%s: cannot update the callback delivery: %s", cb->execution_id,
                        store_error_message(c->ctx->store));
}

static void on_saved(void *userdata, int r, StoreRecord *rec) {
        Delivery *d = userdata;
        Callbacks *c = d->owner;

        d->store_call = NULL;
        if (r < 0)
                log_save_failed(c, d->cb, r);
        delivery_free(d);
        dispatch(c);
}

/* Write d's outcome, then let it go (its slot is free once the store has it). */
static void save(Delivery *d) {
        Callbacks *c = d->owner;
        int r;

        d->state = DELIVERY_SAVING;
        r = store_callback_update_async(c->ctx->store, d->cb, on_saved, d, &d->store_call);
        if (r < 0)
                on_saved(d, r, NULL);
}

/* The attempt ended with transport t (and, for TRANSPORT_OK, HTTP status): record what it means.
 * The record (last_error, which the caller reads) gets the class only; detail (libcurl's text, the
 * refused address) goes to the journal, for the operator. */
static void attempt_done(Delivery *d, TransportResult t, long status, const char *detail) {
        Callbacks *c = d->owner;
        const Config *cfg = c->ctx->config;
        StoreCallback *cb = d->cb;
        uint64_t now = now_usec(CLOCK_REALTIME);
        char what[LAST_ERROR_MAX], why[LAST_ERROR_MAX + NET_ERROR_MAX + NET_ADDRESS_MAX + 64],
                url[CALLBACK_URL_LOG_MAX];

        (void) callback_url_for_log(cb->url, url);
        if (t == TRANSPORT_OK)
                snprintf(what, sizeof(what), "HTTP %ld", status);
        else
                snprintf(what, sizeof(what), "%s", transport_result_to_string(t));
        if (t != TRANSPORT_OK && !isempty(detail))
                snprintf(why, sizeof(why), "%s: %s", what, detail);
        else
                snprintf(why, sizeof(why), "%s", what);

        switch (delivery_outcome(t, status)) {
        case DELIVERY_DELIVERED:
                cb->state = CALLBACK_DELIVERED;
                cb->delivered_usec = now;
                cb->last_error = mfree(cb->last_error);
                log_info("%s: callback delivered to %s (attempt %" PRIu64 ", %s).", cb->execution_id, url,
                         cb->attempts, why);
                break;
        case DELIVERY_FAILED:
                cb->state = CALLBACK_FAILED;
                set_last_error(cb, "%s", what);
                log_warning("%s: callback to %s failed (%s), not retrying (attempt %" PRIu64 ").",
                            cb->execution_id, url, why, cb->attempts);
                break;
        case DELIVERY_RETRY: {
                BackoffPolicy p = {
                        .base_usec = cfg->callback_backoff_base_ms * USEC_PER_MSEC,
                        .max_usec = cfg->callback_backoff_max_sec * USEC_PER_SEC,
                        .retry_after_max_usec = cfg->callback_backoff_max_sec * USEC_PER_SEC,
                };
                uint64_t delay = backoff_delay_usec(&p, (unsigned) MIN(cb->attempts, (uint64_t) UINT_MAX),
                                                    random_u64(), d->retry_after);
                uint64_t deadline = cb->created_usec + cfg->callback_max_age_sec * USEC_PER_SEC;

                if (cb->attempts >= cfg->callback_max_attempts) {
                        cb->state = CALLBACK_FAILED;
                        set_last_error(cb, "%s (gave up after %" PRIu64 " attempts)", what, cb->attempts);
                } else if (now + delay > deadline) {
                        cb->state = CALLBACK_FAILED;
                        set_last_error(cb, "%s (gave up: CallbackMaxAgeSec=%" PRIu64 " reached)", what,
                                       cfg->callback_max_age_sec);
                } else {
                        cb->next_attempt_usec = now + delay;
                        set_last_error(cb, "%s", what);
                        /* One line for the first failure; the retries after it only at debug level:
                         * the outcome (delivered or failed) is logged once, with the attempt count. */
                        log_full(cb->attempts == 1 ? LOG_INFO : LOG_DEBUG,
                                 "%s: callback attempt %" PRIu64 " to %s failed (%s), retrying in %" PRIu64 " ms.",
                                 cb->execution_id, cb->attempts, url, why, delay / USEC_PER_MSEC);
                        break;
                }
                log_warning("%s: callback to %s failed: %s (%s)", cb->execution_id, url, cb->last_error, why);
                break;
        }
        }
}

static void on_done(NetCall *call, const NetDone *done, void *userdata) {
        Delivery *d = userdata;
        TransportResult t = done->transport;
        char detail[NET_ERROR_MAX + NET_ADDRESS_MAX + 64];
        long status = done->http_status;

        d->call = NULL;         /* freed by the client when this returns */
        d->retry_after = done->retry_after_sec;
        /* A receiver that answered and then kept talking: its status decides. */
        if (t == TRANSPORT_TOO_LARGE && (done->flags & NET_DONE_TOO_LARGE) && status > 0)
                t = TRANSPORT_OK;
        if (t == TRANSPORT_REFUSED && (done->flags & NET_DONE_REFUSED))
                snprintf(detail, sizeof(detail), "%s (CallbackAllowInternalAddresses=no)", done->refused_address);
        else
                snprintf(detail, sizeof(detail), "%s", done->error);
        attempt_done(d, t, status, detail);
        save(d);
}

/* The worker sets libcurl up as this module did: a POST of the body with these headers, http and
 * https only, no redirect, CallbackTimeoutSec= for connecting and for the whole attempt, a fresh
 * connection each attempt (one kept alive would skip the guard, and a reload that sets
 * CallbackAllowInternalAddresses=no applies to the next attempt), no proxy, the address guard, at
 * most RESPONSE_MAX bytes of the answer read, Retry-After reported. */
static int attempt_setup(Delivery *d) {
        const Config *cfg = d->owner->ctx->config;
        StoreCallback *cb = d->cb;
        char sig[CALLBACK_SIGNATURE_MAX], lines[4][CALLBACK_SIGNATURE_MAX + 128];
        NetRequest q;
        int r;

        r = callback_signature(d->owner->key, d->owner->key_len, now_usec(CLOCK_REALTIME) / USEC_PER_SEC, cb->body,
                               strlen(cb->body), sig);
        if (r < 0)
                return r;
        snprintf(lines[0], sizeof(lines[0]), "Sandboxd-Signature: %s", sig);
        snprintf(lines[1], sizeof(lines[1]), "Sandboxd-Delivery-Id: %s", cb->delivery_id);
        /* The caller's own id, as in the body: what the receiver chose and knows. */
        snprintf(lines[2], sizeof(lines[2]), "Sandboxd-Execution-Id: %s", cb->client_id ?: cb->execution_id);
        snprintf(lines[3], sizeof(lines[3]), "Sandboxd-Attempt: %" PRIu64, cb->attempts);
        q = (NetRequest) {
                .kind = NET_REQUEST_POST,
                .allow_internal = cfg->callback_allow_internal,
                .connect_timeout_sec = (uint32_t) MIN(cfg->callback_timeout_sec, (uint64_t) UINT32_MAX),
                .timeout_sec = (uint32_t) MIN(cfg->callback_timeout_sec, (uint64_t) UINT32_MAX),
                .max_response_bytes = RESPONSE_MAX,
                .body_len = strlen(cb->body),
                .url = cb->url,
                .headers = { "Content-Type: application/json", "Expect:", lines[0], lines[1], lines[2], lines[3] },
                .n_headers = 6,
        };
        return net_call_start(d->owner->ctx->net, &q, cb->body, NULL, on_done, d, &d->call);
}

/* The lease's answer: ours, start the attempt; another node's, let it go. */
static void on_claimed(void *userdata, int r, StoreRecord *rec) {
        Delivery *d = userdata;
        Callbacks *c = d->owner;
        StoreCallback *cb = d->cb;

        d->store_call = NULL;
        if (r == -ESTALE) {
                log_debug("%s: callback attempt %" PRIu64 " taken by another node.", cb->execution_id, cb->attempts);
                delivery_free(d);
                dispatch(c);
                return;
        }
        if (r < 0) {
                log_error_errno(r, "%s: cannot record the callback attempt, not attempting: %s", cb->execution_id,
                                store_error_message(c->ctx->store));
                delivery_free(d);
                /* It stays due: look again later, not at once. */
                arm_timer(c, now_usec(CLOCK_REALTIME) + STORE_RETRY_USEC);
                return;
        }

        d->state = DELIVERY_SENDING;
        r = attempt_setup(d);
        if (r < 0) {
                /* Counted as an attempt that failed on our side: retried like a network error. */
                attempt_done(d, TRANSPORT_OTHER, 0, strerror(-r));
                save(d);
                return;
        }
        log_debug("%s: callback attempt %" PRIu64 " to %s.", cb->execution_id, cb->attempts,
                  callback_url_for_log(cb->url, (char[CALLBACK_URL_LOG_MAX]) {}));
}

/* Take the lease, then (on_claimed()) start the attempt. Consumes cb. -errno if the store refused
 * the call (then nothing was attempted). */
static int attempt_start(Callbacks *c, StoreCallback *cb, uint64_t now) {
        const Config *cfg = c->ctx->config;
        Delivery *d;
        int r;

        d = calloc(1, sizeof(Delivery));
        if (!d) {
                store_callback_free(cb);
                return log_oom();
        }
        d->cb = cb;
        d->owner = c;
        d->next = c->deliveries;
        if (c->deliveries)
                c->deliveries->prev = d;
        c->deliveries = d;
        c->n_deliveries++;

        if (cb->attempts >= cfg->callback_max_attempts ||
            now >= cb->created_usec + cfg->callback_max_age_sec * USEC_PER_SEC) {
                /* Limits lowered by a reload, or a daemon that was down longer than the age. */
                cb->state = CALLBACK_FAILED;
                if (cb->attempts >= cfg->callback_max_attempts)
                        set_last_error(cb, "%s (gave up after %" PRIu64 " attempts)", strna(cb->last_error),
                                       cb->attempts);
                else
                        set_last_error(cb, "%s (gave up: CallbackMaxAgeSec=%" PRIu64 " reached)",
                                       cb->last_error ?: "never attempted", cfg->callback_max_age_sec);
                log_warning("%s: callback to %s failed: %s", cb->execution_id,
                            callback_url_for_log(cb->url, (char[CALLBACK_URL_LOG_MAX]) {}), cb->last_error);
                save(d);
                return 0;
        }

        /* The lease is a claim: nodes sharing the outbox read the same due rows, and only the one whose
         * update finds the attempts it read makes this attempt. */
        d->state = DELIVERY_CLAIMING;
        cb->claim = true;
        cb->claim_attempts = cb->attempts;
        cb->attempts++;
        cb->next_attempt_usec = now + cfg->callback_timeout_sec * USEC_PER_SEC + LEASE_SLACK_USEC;
        r = store_callback_update_async(c->ctx->store, cb, on_claimed, d, &d->store_call);
        cb->claim = false;
        if (r < 0) {
                log_error_errno(r, "%s: cannot record the callback attempt, not attempting: %s", cb->execution_id,
                                store_error_message(c->ctx->store));
                delivery_free(d);
                return r;
        }
        return 0;
}

/* ---- scheduling ---- */

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        dispatch(userdata);
        return 0;
}

static void arm_timer(Callbacks *c, uint64_t when) {
        int r;

        r = sd_event_source_set_time(c->timer, when);
        if (r >= 0)
                r = sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
        if (r < 0)
                log_error_errno(r, "Cannot arm the callback timer: %m");
}

static bool in_flight(Callbacks *c, const char *id) {
        for (Delivery *d = c->deliveries; d; d = d->next)
                if (streq(d->cb->execution_id, id))
                        return true;
        return false;
}

/* What is pending, earliest first: start those due, and arm the timer for the first that is not. */
static void on_due(void *userdata, int r, StoreCallback **l, size_t n) {
        Callbacks *c = userdata;
        Context *ctx = c->ctx;
        uint64_t now = now_usec(CLOCK_REALTIME), next = 0;
        bool store_failed = false, skipped = false, again = c->read_again;
        size_t started = 0, want = c->read_want;

        c->read = NULL;
        c->read_again = false;
        if (r < 0) {
                log_error_errno(r, "Cannot read the callback outbox: %s", store_error_message(ctx->store));
                arm_timer(c, now + STORE_RETRY_USEC);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                StoreCallback *cb = TAKE_PTR(l[i]);

                if (store_failed || next > 0 || ctx->stopping)
                        store_callback_free(cb);
                else if (cb->next_attempt_usec > now) {
                        next = cb->next_attempt_usec;           /* the first not due: the rest are later */
                        store_callback_free(cb);
                } else if (in_flight(c, cb->execution_id)) {
                        /* An attempt that outlived its lease (a stalled loop): never two at once. */
                        store_callback_free(cb);
                        skipped = true;
                } else if (c->n_deliveries >= ctx->config->callback_max_concurrent)
                        store_callback_free(cb);                /* a kick filled the slots meanwhile */
                else if (attempt_start(c, cb, now) < 0)
                        store_failed = true;   /* it would stay due: do not spin on it */
                else
                        started++;
        }
        free(l);
        if (ctx->stopping)
                return;
        if (store_failed || skipped) {
                arm_timer(c, now + STORE_RETRY_USEC);
                return;
        }
        /* Every row due and a slot left: there may be more, read on. Kicked meanwhile: a row may
         * have come after the read. */
        if (again || (next == 0 && started > 0 && n == want && c->n_deliveries < ctx->config->callback_max_concurrent)) {
                dispatch(c);
                return;
        }
        if (next > 0)
                arm_timer(c, MAX(next, now + 1));
        /* Nothing pending: the next final record with a callback kicks. */
}

static void dispatch(Callbacks *c) {
        Context *ctx = c->ctx;
        unsigned want;
        int r;

        if (!c->timer)
                return;
        (void) sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
        if (ctx->stopping)
                return;
        if (c->read) {
                c->read_again = true;
                return;
        }
        /* Every slot taken: the next completion dispatches again. */
        if (c->n_deliveries >= ctx->config->callback_max_concurrent)
                return;
        want = (unsigned) MIN(ctx->config->callback_max_concurrent - c->n_deliveries, 64U);
        c->read_want = want;
        /* The earliest pending, due or not (the first not due says when to look again): one read. */
        r = store_callback_due_async(ctx->store, UINT64_MAX, want, on_due, c, &c->read);
        if (r < 0) {
                log_error_errno(r, "Cannot read the callback outbox: %s", store_error_message(ctx->store));
                arm_timer(c, now_usec(CLOCK_REALTIME) + STORE_RETRY_USEC);
        }
}

void callbacks_kick(Callbacks *c) {
        if (c)
                dispatch(c);
}

int callbacks_new(Context *ctx, Callbacks **ret) {
        _cleanup_(callbacks_freep) Callbacks *c = calloc(1, sizeof(Callbacks));
        int r;

        if (!c)
                return log_oom();
        c->ctx = ctx;
        r = key_load(c, false);
        if (r < 0)
                return r;
        r = sd_event_add_time(ctx->event, &c->timer, CLOCK_REALTIME, UINT64_MAX, 10 * USEC_PER_MSEC, on_timer,
                              c);
        if (r < 0)
                return log_error_errno(r, "Cannot add the callback timer: %m");
        (void) sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
        (void) sd_event_source_set_description(c->timer, "callback-timer");
        *ret = TAKE_PTR(c);
        return 0;
}

int callbacks_reload(Callbacks *c) {
        int r = key_load(c, true);

        dispatch(c);
        return r;
}

Callbacks *callbacks_free(Callbacks *c) {
        uint64_t now = now_usec(CLOCK_REALTIME);

        if (!c)
                return NULL;
        c->read = store_call_cancel(c->read);
        while (c->deliveries) {
                Delivery *d = c->deliveries;

                /* An attempt under way is aborted, not failed: due again at once after the next
                 * start. A claim still on its way is left as it lands (ours, the lease expires; or
                 * another node's, which must not be overwritten); an outcome on its way is written. */
                if (d->state == DELIVERY_SENDING) {
                        int r;

                        d->cb->next_attempt_usec = now;
                        r = store_callback_update(c->ctx->store, d->cb);
                        if (r < 0)
                                log_save_failed(c, d->cb, r);
                }
                delivery_free(d);
        }
        sd_event_source_disable_unref(c->timer);
        if (c->key)
                explicit_bzero(c->key, c->key_len);
        free(c->key);
        return mfree(c);
}

/* ---- the record ---- */

int callback_prepare(const Execution *e, const char *url, StoreCallback **ret) {
        _cleanup_(store_callback_freep) StoreCallback *cb = calloc(1, sizeof(StoreCallback));
        json_object *o;
        char id[64];
        int r;

        if (!cb)
                return -ENOMEM;
        r = id_generate(id, sizeof(id), "dlv");
        if (r < 0)
                return r;
        o = execution_to_json(e);
        if (!o)
                return -ENOMEM;
        cb->body = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_object_put(o);
        cb->execution_id = strdup(e->id);
        cb->url = strdup(url);
        cb->delivery_id = strdup(id);
        if (!cb->body || !cb->execution_id || !cb->url || !cb->delivery_id)
                return -ENOMEM;
        if (e->client_id && !(cb->client_id = strdup(e->client_id)))
                return -ENOMEM;
        cb->state = CALLBACK_PENDING;
        cb->created_usec = now_usec(CLOCK_REALTIME);
        cb->next_attempt_usec = cb->created_usec;
        *ret = TAKE_PTR(cb);
        return 0;
}

char *callback_url_from_request_json(const char *json) {
        json_object *o, *v;
        char *url = NULL;

        if (!json)
                return NULL;
        o = json_tokener_parse(json);
        if (o && json_object_object_get_ex(o, "callback_url", &v) && json_object_is_type(v, json_type_string) &&
            callback_url_is_valid(json_object_get_string(v), NULL))
                url = strdup(json_object_get_string(v));
        json_object_put(o);
        return url;
}

void callback_json_add(json_object *o, const StoreCallback *cb) {
        json_object *c;
        char buf[64];

        if (!o || !cb)
                return;
        c = json_object_new_object();
        if (!c)
                return;
        json_object_object_add(c, "url", json_object_new_string(cb->url));
        json_object_object_add(c, "delivery_id", json_object_new_string(cb->delivery_id));
        json_object_object_add(c, "state", json_object_new_string(callback_state_to_string(cb->state)));
        json_object_object_add(c, "attempts", json_object_new_uint64(cb->attempts));
        json_object_object_add(c, "last_error", cb->last_error ? json_object_new_string(cb->last_error) : NULL);
        if (cb->delivered_usec > 0) {
                format_timestamp(cb->delivered_usec, buf, sizeof(buf));
                json_object_object_add(c, "delivered_at", json_object_new_string(buf));
        } else
                json_object_object_add(c, "delivered_at", NULL);
        if (cb->state == CALLBACK_PENDING && cb->next_attempt_usec > 0) {
                format_timestamp(cb->next_attempt_usec, buf, sizeof(buf));
                json_object_object_add(c, "next_attempt_at", json_object_new_string(buf));
        }
        json_object_object_add(o, "callback", c);
}
