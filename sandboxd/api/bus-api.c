/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>

#include "bus-api.h"
#include "bus-budget.h"
#include "log.h"
#include "model/result.h"
#include "polkit.h"
#include "run/job.h"
#include "run/runner.h"
#include "submit.h"
#include "time-util.h"

#define ACTION_EXECUTE "io.sandboxd.sandbox1.execute"
#define ACTION_EXECUTE_NETWORK "io.sandboxd.sandbox1.execute-network"
#define ACTION_READ_OTHERS "io.sandboxd.sandbox1.read-others"
#define ACTION_CANCEL_OTHERS "io.sandboxd.sandbox1.cancel-others"
#define ACTION_MANAGE "io.sandboxd.sandbox1.manage"

/* Calls being identified, authorized, or (Execute) waiting for their execution, all callers
 * together. Each holds a reference on its message; the bus daemon bounds replies pending per
 * connection (max_replies_per_connection), this bounds them all. */
#define BUS_CALLS_MAX 4096U
/* The daemon's own calls pending on its bus connection count against the bus daemon's
 * max_replies_per_connection (128 by default), and the calls to systemd that start executions need
 * some of them: at most this many questions to the bus daemon and polkitd are in flight at once,
 * the others wait in FIFO order. Interactive polkit checks are not among them: they may wait for a
 * human for InteractiveAuthorizationTimeoutSec=, and have a budget of their own
 * (MaxInteractiveAuthorizations=, at most 32, MaxInteractiveAuthorizationsPerUser=). */
#define BUS_ASKING_MAX 32U
/* Of those, one uid's (root's are not counted): a user with many connections cannot take them all.
 * One connection's are counted from the call's arrival, before the uid is known
 * (MaxPendingCallsPerConnection=). */
#define BUS_CALLS_PER_UID_MAX 256U
/* ExecutionFinished signals still to send, all callers together (one per Submit/Execute of an
 * unfinished execution). Beyond this the execution runs, unsignalled; GetExecution still answers. */
#define BUS_WATCHES_MAX 16384U

typedef struct BusCall BusCall;
typedef void (*BusStep)(BusCall *c);

typedef enum BusAsk {
        BUS_ASK_NONE,
        BUS_ASK_IDENTIFY,        /* GetConnectionUnixUser */
        BUS_ASK_POLKIT,          /* CheckAuthorization */
} BusAsk;

struct BusCall {
        BusApi *api;
        BusCall *prev, *next;
        sd_bus_message *msg;     /* the method call; answered exactly once, then c is freed */
        sd_bus_slot *slot;       /* the pending GetConnectionUnixUser or CheckAuthorization */
        BusAsk ask;              /* what it asks or waits to ask the bus */
        bool asking;             /* slot is pending (counted in n_asking) */
        bool interactive;        /* slot is an interactive check (counted in n_interactive) */
        BusInteractiveAdmit over_budget;        /* interactive wanted, but checked without: why */
        BusCall *ask_next;       /* in the queue of calls waiting to ask */
        BusStep step, authorized;
        const char *action;      /* being authorized */
        const char *arg;         /* the string argument, inside msg */
        uid_t uid;
        bool identified;
        bool network_authorized; /* a request with "network": execute-network was granted too */
        char owner[32];          /* "uid:N": the same owner as the HTTP API's unix socket */
        bool admin;              /* root: sees everything, as on the HTTP API */
        Job *job;                /* Execute: waiting for it */
        JobWaiter *waiter;
        Submission *submission;  /* Submit, Execute: while the store answers */
        StoreCall *store_call;   /* ListExecutions: the page */
        CancelOp *cancel;        /* Cancel: until the cancel is on record */
        RecordRender *render;    /* the answer, while the store is read for it */
        FindLookup *find;        /* GetExecution, Cancel: the execution looked for in the store */
        void (*found)(struct BusCall *c, Job *j, StoreRecord *rec);     /* ... then this (rec taken) */
        bool wait;               /* Execute */
};

/* An ExecutionFinished signal to send to the connection that submitted an execution. */
typedef struct BusWatch {
        BusApi *api;
        struct BusWatch *prev, *next;
        Job *job;
        JobWaiter *waiter;
        char *destination;
} BusWatch;

struct BusApi {
        ApiContext *ac;
        sd_bus_slot *object_slot, *name_slot;
        BusCall *calls;
        unsigned n_calls;
        BusCall *ask_head, *ask_tail;    /* waiting for one of the BUS_ASKING_MAX */
        unsigned n_asking;
        unsigned n_interactive;
        BusWatch *watches;
        unsigned n_watches;
};

/* ---- calls ------------------------------------------------------------------------------------- */

static BusCall *bus_call_free(BusCall *c) {
        if (!c)
                return NULL;
        if (c->prev)
                c->prev->next = c->next;
        else
                c->api->calls = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->api->n_calls--;
        if (c->asking)
                c->api->n_asking--;
        if (c->interactive)
                c->api->n_interactive--;
        for (BusCall **p = &c->api->ask_head, *prev = NULL; *p; prev = *p, p = &(*p)->ask_next)
                if (*p == c) {
                        *p = c->ask_next;
                        if (c->api->ask_tail == c)
                                c->api->ask_tail = prev;
                        break;
                }
        if (c->waiter)
                job_remove_waiter(c->job, c->waiter);
        (void) submission_abandon(c->submission);
        (void) store_call_cancel(c->store_call);
        (void) cancel_op_free(c->cancel);
        (void) record_render_cancel(c->render);
        (void) find_lookup_cancel(c->find);
        sd_bus_slot_unref(c->slot);
        sd_bus_message_unref(c->msg);
        free(c);
        return NULL;
}

/* The reply, or an error: the caller may be gone by now (its Execute outlived its connection),
 * which the bus daemon handles by dropping the message. */
_printf_(3, 0) static void bus_call_reply_errorv(BusCall *c, const char *name, const char *fmt, va_list ap) {
        _cleanup_free_ char *text = NULL;

        if (vasprintf(&text, fmt, ap) < 0)
                text = NULL;
        (void) sd_bus_reply_method_errorf(c->msg, name, "%s", text ?: "out of memory");
        bus_call_free(c);
}

/* With one of the bus's own names (SD_BUS_ERROR_*). */
_printf_(3, 4) static void bus_call_reply_error(BusCall *c, const char *name, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        bus_call_reply_errorv(c, name, fmt, ap);
        va_end(ap);
}

/* With the name api-error.c gives the error. */
_printf_(3, 4) static void bus_call_reply_api_error(BusCall *c, ApiError error, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        bus_call_reply_errorv(c, api_error_bus_name(error), fmt, ap);
        va_end(ap);
}

static void bus_call_reply_request_error(BusCall *c, const RequestError *err) {
        bus_call_reply_api_error(c, err->error, "%s", err->message);
}

static void bus_call_reply_string(BusCall *c, const char *s) {
        (void) sd_bus_reply_method_return(c->msg, "s", s);
        bus_call_free(c);
}

/* Takes o. */
static void bus_call_reply_json(BusCall *c, json_object *o) {
        const char *s = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : NULL;

        if (!s)
                bus_call_reply_api_error(c, API_ERROR_INTERNAL, "out of memory");
        else
                bus_call_reply_string(c, s);
        json_object_put(o);
}

static void on_rendered(void *userdata, json_object *o, const RequestError *err) {
        BusCall *c = userdata;

        c->render = NULL;
        if (o)
                bus_call_reply_json(c, o);
        else
                bus_call_reply_request_error(c, err);
}

/* A job as the answer (a final one read back from the store, without waiting), or why it cannot be
 * read. */
static void bus_call_reply_job(BusCall *c, Job *j) {
        RecordRender *x = NULL;
        int r;

        r = job_record_json_async(c->api->ac, j, on_rendered, c, &x);
        if (r < 0)
                bus_call_reply_api_error(c, API_ERROR_INTERNAL, "out of memory");
        else if (r == 0)
                c->render = x;
}

/* A stored record as the answer (rec is taken). */
static void bus_call_reply_record(BusCall *c, StoreRecord *rec) {
        RecordRender *x = NULL;
        int r;

        r = stored_record_json_async(c->api->ac, rec, on_rendered, c, &x);
        if (r < 0)
                bus_call_reply_api_error(c, API_ERROR_INTERNAL, "out of memory");
        else if (r == 0)
                c->render = x;
}

static int on_unix_user(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error);
static void on_polkit(int r, PolkitVerdict verdict, void *userdata);

/* Send c's question now; on failure c is answered with an error and freed. */
static void bus_call_send(BusCall *c) {
        BusApi *a = c->api;
        sd_bus *bus = sd_bus_message_get_bus(c->msg);
        int r;

        if (c->ask == BUS_ASK_IDENTIFY) {
                r = sd_bus_call_method_async(bus, &c->slot, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                             "org.freedesktop.DBus", "GetConnectionUnixUser", on_unix_user, c, "s",
                                             sd_bus_message_get_sender(c->msg));
                if (r < 0) {
                        bus_call_reply_error(c, SD_BUS_ERROR_ACCESS_DENIED, "cannot identify the caller: %s",
                                             strerror(-r));
                        return;
                }
        } else {
                r = polkit_check_async(bus, c->msg, c->uid, c->action, 0, on_polkit, c, &c->slot);
                if (r < 0) {
                        on_polkit(r, POLKIT_DENIED, c);
                        return;
                }
                if (r > 0) {            /* root: allowed without asking */
                        c->authorized(c);
                        return;
                }
        }
        c->asking = true;
        a->n_asking++;
}

/* Let the calls waiting to ask the bus ask, while there is room. */
static void bus_ask_dispatch(BusApi *a) {
        while (a->ask_head && a->n_asking < BUS_ASKING_MAX) {
                BusCall *c = a->ask_head;

                a->ask_head = c->ask_next;
                if (!a->ask_head)
                        a->ask_tail = NULL;
                c->ask_next = NULL;
                bus_call_send(c);
        }
}

static void bus_call_ask(BusCall *c, BusAsk ask) {
        BusApi *a = c->api;

        c->ask = ask;
        if (a->n_asking < BUS_ASKING_MAX && !a->ask_head) {
                bus_call_send(c);
                return;
        }
        if (a->ask_tail)
                a->ask_tail->ask_next = c;
        else
                a->ask_head = c;
        a->ask_tail = c;
}

/* The answer to c's question is in: its slot is free for the next. */
static void bus_call_answered(BusCall *c) {
        c->slot = sd_bus_slot_unref(c->slot);
        c->asking = false;
        c->api->n_asking--;
}

static void on_polkit(int r, PolkitVerdict verdict, void *userdata) {
        BusCall *c = userdata;
        BusApi *a = c->api;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

        if (c->asking)
                bus_call_answered(c);
        if (c->interactive) {
                c->slot = sd_bus_slot_unref(c->slot);
                c->interactive = false;
                a->n_interactive--;
        }
        if (r >= 0 && verdict == POLKIT_ALLOWED)
                c->authorized(c);
        else if (r >= 0 && verdict == POLKIT_CHALLENGE && c->over_budget != BUS_INTERACTIVE_ADMIT) {
                /* It needs a password, which the call allowed asking for, but the budget of such
                 * checks has no room: not InteractiveAuthorizationRequired (calling again allowing
                 * interaction would not help), but the budget, so that the caller retries later. */
                const Config *cfg = a->ac->ctx->config;

                if (c->over_budget == BUS_INTERACTIVE_USER_FULL)
                        bus_call_reply_api_error(c, API_ERROR_TOO_MANY_INTERACTIVE_AUTHS,
                                                 "%s needs authentication, and uid %u has %" PRIu64 " interactive "
                                                 "authorizations pending (MaxInteractiveAuthorizationsPerUser=); "
                                                 "retry later", c->action, (unsigned) c->uid,
                                                 cfg->bus_max_interactive_per_user);
                else
                        bus_call_reply_api_error(c, API_ERROR_TOO_MANY_INTERACTIVE_AUTHS,
                                                 "%s needs authentication, and %" PRIu64 " interactive "
                                                 "authorizations are pending (MaxInteractiveAuthorizations=); "
                                                 "retry later", c->action, cfg->bus_max_interactive);
        } else {
                (void) polkit_verdict_to_error(r, verdict, c->action, &error);
                log_debug("D-Bus: %s from uid %u: %s", sd_bus_message_get_member(c->msg), (unsigned) c->uid,
                          error.message);
                (void) sd_bus_reply_method_error(c->msg, &error);
                bus_call_free(c);
        }
        bus_ask_dispatch(a);
}

/* A check that may wait for a human at an authentication agent: outside the shared FIFO (it would
 * hold one of BUS_ASKING_MAX for as long as the human takes), in a budget of its own, for at most
 * InteractiveAuthorizationTimeoutSec=. Over the budget the call is checked without interaction at
 * once, so that it does not wait behind the others either: allowed when polkit needs no password,
 * else refused (on_polkit()). */
static void bus_call_authorize_interactive(BusCall *c) {
        BusApi *a = c->api;
        const Config *cfg = a->ac->ctx->config;
        unsigned n_user = 0;
        int r;

        for (BusCall *i = a->calls; i; i = i->next)
                n_user += i->interactive && i->uid == c->uid;
        c->over_budget = bus_interactive_admit(a->n_interactive, (unsigned) cfg->bus_max_interactive, n_user,
                                               (unsigned) cfg->bus_max_interactive_per_user);
        if (c->over_budget != BUS_INTERACTIVE_ADMIT) {
                bus_call_ask(c, BUS_ASK_POLKIT);
                return;
        }
        r = polkit_check_async(sd_bus_message_get_bus(c->msg), c->msg, c->uid, c->action,
                               cfg->bus_interactive_timeout_sec * USEC_PER_SEC, on_polkit, c, &c->slot);
        if (r < 0) {
                on_polkit(r, POLKIT_DENIED, c);
                return;
        }
        c->interactive = true;
        a->n_interactive++;
}

/* Run next once polkit allows action (at once for root, as systemd does). */
static void bus_call_authorize(BusCall *c, const char *action, BusStep next) {
        c->action = action;
        c->authorized = next;
        if (c->uid == 0) {
                next(c);
                return;
        }
        if (sd_bus_message_get_allow_interactive_authorization(c->msg) > 0) {
                bus_call_authorize_interactive(c);
                return;
        }
        bus_call_ask(c, BUS_ASK_POLKIT);
}

static int on_unix_user(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        BusCall *c = userdata;
        BusApi *a = c->api;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        uint32_t uid;
        int r;

        bus_call_answered(c);
        r = e ? -sd_bus_error_get_errno(e) : sd_bus_message_read(reply, "u", &uid);
        if (r < 0) {
                bus_call_reply_error(c, SD_BUS_ERROR_ACCESS_DENIED, "cannot identify the caller");
                bus_ask_dispatch(a);
                return 0;
        }
        if (uid != 0) {
                unsigned n = 0;

                for (BusCall *i = a->calls; i; i = i->next)
                        n += i->identified && i->uid == uid;
                if (n >= BUS_CALLS_PER_UID_MAX) {
                        bus_call_reply_error(c, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                             "uid %u has %u D-Bus calls pending; retry later", (unsigned) uid, n);
                        bus_ask_dispatch(a);
                        return 0;
                }
        }
        c->uid = (uid_t) uid;
        c->identified = true;
        c->admin = uid == 0;
        (void) snprintf(c->owner, sizeof(c->owner), "uid:%u", (unsigned) uid);
        c->step(c);
        bus_ask_dispatch(a);
        return 0;
}

static void reload_identified(BusCall *c);

/* Hold the call, learn who sent it (from the bus daemon, which has it from SO_PEERCRED), then run
 * step. Asynchronous like every other wait of the daemon. */
static int bus_call_start(BusApi *a, sd_bus_message *msg, const char *arg, BusStep step, sd_bus_error *error) {
        const char *sender = sd_bus_message_get_sender(msg);
        uint64_t sender_max = a->ac->ctx->config->bus_max_calls_per_connection;   /* ≤ BUS_CALLS_MAX */
        unsigned n_sender = 0;
        BusCall *c;

        if (!sender)
                return sd_bus_error_set(error, SD_BUS_ERROR_ACCESS_DENIED, "cannot identify the caller");
        /* Unique names are never reused on a bus: the sender is the connection. A scan, as for the
         * uid: the calls held are at most BUS_CALLS_MAX. */
        for (BusCall *i = a->calls; i; i = i->next)
                n_sender += streq_ptr(sd_bus_message_get_sender(i->msg), sender);
        switch (bus_call_admit(a->n_calls, BUS_CALLS_MAX, n_sender, (unsigned) sender_max)) {
        case BUS_CALL_ALL_FULL:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "%u D-Bus calls pending; retry later", a->n_calls);
        case BUS_CALL_SENDER_FULL:
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "connection %s has %u D-Bus calls pending (MaxPendingCallsPerConnection=); "
                                         "retry later", sender, n_sender);
        case BUS_CALL_ADMIT:
                break;
        }
        /* The store takes every call (store.h): what a caller may add to its queue stops here while it
         * is far behind. Every method but Reload reads or writes it. */
        if (step != reload_identified && store_is_behind(a->ac->ctx->store))
                return sd_bus_error_setf(error, api_error_bus_name(API_ERROR_STORE),
                                         "the store is far behind (%zu calls waiting for it); retry later",
                                         store_async_pending(a->ac->ctx->store));
        c = calloc(1, sizeof(BusCall));
        if (!c)
                return -ENOMEM;
        c->api = a;
        c->msg = sd_bus_message_ref(msg);
        c->arg = arg;
        c->step = step;
        c->next = a->calls;
        if (a->calls)
                a->calls->prev = c;
        a->calls = c;
        a->n_calls++;
        bus_call_ask(c, BUS_ASK_IDENTIFY);
        return 1;
}

/* ---- ExecutionFinished ------------------------------------------------------------------------- */

static BusWatch *bus_watch_free(BusWatch *w) {
        if (!w)
                return NULL;
        if (w->prev)
                w->prev->next = w->next;
        else
                w->api->watches = w->next;
        if (w->next)
                w->next->prev = w->prev;
        w->api->n_watches--;
        if (w->waiter)
                job_remove_waiter(w->job, w->waiter);
        free(w->destination);
        free(w);
        return NULL;
}

static void on_watch_done(Job *j, void *userdata) {
        BusWatch *w = userdata;
        ApiContext *ac = w->api->ac;
        int r;

        w->waiter = NULL;       /* the job frees it after this call */
        /* At shutdown the waiters are answered unfinished: no signal for what did not finish. */
        if (job_is_final(j)) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *sig = NULL;

                /* Unicast to the submitter: an execution's id and status are its owner's business,
                 * not every system bus client's (HTTP hides them from other owners, too). */
                r = sd_bus_message_new_signal(ac->ctx->bus, &sig, BUS_API_PATH, BUS_API_INTERFACE, "ExecutionFinished");
                if (r >= 0)
                        r = sd_bus_message_set_destination(sig, w->destination);
                if (r >= 0)
                        r = sd_bus_message_append(sig, "ss", execution_public_id(j->exec),
                                                  exec_status_to_string(j->exec->status));
                if (r >= 0)
                        r = sd_bus_send(ac->ctx->bus, sig, NULL);
                if (r < 0)
                        log_debug("%s: cannot send ExecutionFinished to %s: %s", j->exec->id, w->destination,
                                  strerror(-r));
        }
        bus_watch_free(w);
}

static void bus_watch_add(BusApi *a, Job *j, const char *destination) {
        BusWatch *w;

        if (job_is_final(j) || a->n_watches >= BUS_WATCHES_MAX)
                return;
        w = calloc(1, sizeof(BusWatch));
        if (!w || !(w->destination = strdup(destination))) {
                free(w);
                return;
        }
        w->api = a;
        w->job = j;
        w->next = a->watches;
        if (a->watches)
                a->watches->prev = w;
        a->watches = w;
        a->n_watches++;
        if (job_add_waiter(j, on_watch_done, w, &w->waiter) < 0)
                bus_watch_free(w);
}

/* ---- Submit, Execute --------------------------------------------------------------------------- */

static void on_execute_done(Job *j, void *userdata) {
        BusCall *c = userdata;
        ApiContext *ac = c->api->ac;

        c->waiter = NULL;       /* the job frees it after this call */
        if (!job_is_final(j) && ac->ctx->stopping)
                bus_call_reply_api_error(c, API_ERROR_SHUTTING_DOWN,
                                     "sandboxd is stopping; execution %s did not finish", j->exec->id);
        else
                bus_call_reply_job(c, j);
}

static void on_submitted(void *userdata, int r, SubmitResult *res, const RequestError *err) {
        _cleanup_(store_record_freep) StoreRecord *rec = NULL;
        BusCall *c = userdata;

        c->submission = NULL;
        if (r < 0) {
                bus_call_reply_request_error(c, err);
                return;
        }
        if (res->outcome == SUBMIT_EXISTING_RECORD) {
                rec = res->record;
                if (c->wait)
                        bus_call_reply_record(c, TAKE_PTR(rec));
                else
                        bus_call_reply_string(c, execution_public_id(rec->exec));
                return;
        }
        if (res->outcome == SUBMIT_CREATED)
                log_info("%s: submitted over D-Bus by %s (%s)", res->job->exec->id, c->owner,
                         sd_bus_message_get_sender(c->msg));
        bus_watch_add(c->api, res->job, sd_bus_message_get_sender(c->msg));
        if (!c->wait) {
                bus_call_reply_string(c, execution_public_id(res->job->exec));
                return;
        }
        c->job = res->job;
        /* When the job is already final the callback runs (and frees c) before this returns. */
        r = job_add_waiter(res->job, on_execute_done, c, &c->waiter);
        if (r < 0)
                bus_call_reply_api_error(c, API_ERROR_INTERNAL, "out of memory");
}

static void submit_authorized(BusCall *c, bool wait) {
        ApiContext *ac = c->api->ac;
        size_t len = strlen(c->arg);
        Submission *sub = NULL;

        /* The request is the HTTP body, checked by the same code: the same limits, the same
         * messages. The bus daemon caps a message at 32 MiB (max_message_size); this is ours. */
        if (len > ac->ctx->config->max_request_bytes) {
                bus_call_reply_api_error(c, API_ERROR_TOO_LARGE, "request body exceeds MaxRequestBytes=%" PRIu64,
                                     ac->ctx->config->max_request_bytes);
                return;
        }
        c->wait = wait;
        /* Answered (and c freed) at once when the store is not needed; else from the store's answer. */
        if (submit_execution_async(ac, c->arg, len, c->owner, c->admin, on_submitted, c, &sub) == 0)
                c->submission = sub;
}

/* Does the request ask for network (a top-level "network")? Only a hint for the polkit check: a body
 * that is not JSON is refused by submit_execution() with its reason, whatever this says. */
static bool request_asks_network(const char *body) {
        json_object *o = json_tokener_parse(body);
        bool yes = o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, "network", NULL);

        json_object_put(o);
        return yes;
}

static void execute_network_authorized(BusCall *c) {
        c->network_authorized = true;
        submit_authorized(c, true);
}

static void submit_network_authorized(BusCall *c) {
        c->network_authorized = true;
        submit_authorized(c, false);
}

/* execute, then for a request with network execute-network as well (polkit/README.md). */
static void execute_authorized(BusCall *c) {
        if (!c->network_authorized && request_asks_network(c->arg)) {
                bus_call_authorize(c, ACTION_EXECUTE_NETWORK, execute_network_authorized);
                return;
        }
        submit_authorized(c, true);
}

static void submit_only_authorized(BusCall *c) {
        if (!c->network_authorized && request_asks_network(c->arg)) {
                bus_call_authorize(c, ACTION_EXECUTE_NETWORK, submit_network_authorized);
                return;
        }
        submit_authorized(c, false);
}

static void execute_identified(BusCall *c) {
        bus_call_authorize(c, ACTION_EXECUTE, execute_authorized);
}

static void submit_identified(BusCall *c) {
        bus_call_authorize(c, ACTION_EXECUTE, submit_only_authorized);
}

static int method_execute(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        const char *request;
        int r;

        r = sd_bus_message_read(msg, "s", &request);
        if (r < 0)
                return r;
        return bus_call_start(userdata, msg, request, execute_identified, error);
}

static int method_submit(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        const char *request;
        int r;

        r = sd_bus_message_read(msg, "s", &request);
        if (r < 0)
                return r;
        return bus_call_start(userdata, msg, request, submit_identified, error);
}

/* ---- GetExecution, Cancel ---------------------------------------------------------------------- */

/* The caller's own execution, or (admin) anyone's (submit.h): the live job, else its record. 0 if
 * there is none the caller may see. */
static void on_found(void *userdata, Job *j, StoreRecord *rec) {
        BusCall *c = userdata;

        c->find = NULL;
        c->found(c, j, rec);
}

/* The execution c names, as the caller sees it (find_execution_async(): the store without waiting),
 * then found(c, job, rec): both NULL when there is none; rec found's to free. */
static void find_execution_for(BusCall *c, void (*found)(BusCall *c, Job *j, StoreRecord *rec)) {
        FindLookup *f = NULL;
        int r;

        c->found = found;
        r = find_execution_async(c->api->ac, c->owner, c->admin, c->arg, on_found, c, &f);
        if (r < 0)
                bus_call_reply_api_error(c, API_ERROR_INTERNAL, "out of memory");
        else if (r == 0)
                c->find = f;
}

static void get_found(BusCall *c, Job *j, StoreRecord *rec) {
        if (j)
                bus_call_reply_job(c, j);
        else if (rec)
                bus_call_reply_record(c, rec);
        else
                bus_call_reply_api_error(c, API_ERROR_NOT_FOUND, "no execution '%.64s'", c->arg);
}

static void get_authorized(BusCall *c) {
        c->admin = true;        /* polkit allowed reading others' executions */
        find_execution_for(c, get_found);
}

static void get_identified_found(BusCall *c, Job *j, StoreRecord *rec) {
        /* Not the caller's own (or no such execution): polkit decides whether it may read others'.
         * The answer is the same for an id that does not exist, so nothing is revealed before. */
        if (!j && !rec) {
                bus_call_authorize(c, ACTION_READ_OTHERS, get_authorized);
                return;
        }
        get_found(c, j, rec);
}

static void get_identified(BusCall *c) {
        find_execution_for(c, get_identified_found);
}

static void cancel_reply_error(BusCall *c, int r) {
        if (r == -EALREADY)
                bus_call_reply_api_error(c, API_ERROR_CONFLICT, "execution '%s' has already finished", c->arg);
        else
                bus_call_reply_api_error(c, API_ERROR_STORE, "%s", store_error_public(r));
}

static void cancel_refound(BusCall *c, Job *j, StoreRecord *rec) {
        if (!j && !rec)
                bus_call_reply_api_error(c, API_ERROR_NOT_FOUND, "no execution '%.64s' (purged)", c->arg);
        else if (j && j->state == JOB_QUEUED && !j->cancel_requested)
                /* A queued job's claim, which the cancel needed, failed: it is not cancelled. */
                cancel_reply_error(c, -EIO);
        else
                get_found(c, j, rec);
}

/* The cancel is on record: the answer, with the execution as it is now (cancelled here: looked for
 * again, it may have ended and left memory meanwhile). */
static void on_cancel_done(void *userdata, int r, StoreRecord *rec) {
        BusCall *c = userdata;

        c->cancel = NULL;
        if (r < 0)
                cancel_reply_error(c, r);
        else if (rec)
                bus_call_reply_record(c, rec);
        else
                find_execution_for(c, cancel_refound);
}

static void cancel_found(BusCall *c, Job *j, StoreRecord *rec) {
        int r;

        if (!j && !rec) {
                bus_call_reply_api_error(c, API_ERROR_NOT_FOUND, "no execution '%.64s'", c->arg);
                return;
        }
        if (j)
                log_info("%s: cancel requested over D-Bus by %s", j->exec->id, c->owner);
        /* Here, or (several nodes) on the node that runs it. */
        r = cancel_execution_async(c->api->ac, j, rec, on_cancel_done, c, &c->cancel);
        if (r < 0)
                cancel_reply_error(c, r);
        else if (r > 0)
                bus_call_reply_job(c, j);
}

static void cancel_authorized(BusCall *c) {
        c->admin = true;        /* polkit allowed cancelling others' executions */
        find_execution_for(c, cancel_found);
}

static void cancel_identified_found(BusCall *c, Job *j, StoreRecord *rec) {
        if (!j && !rec) {
                bus_call_authorize(c, ACTION_CANCEL_OTHERS, cancel_authorized);
                return;
        }
        cancel_found(c, j, rec);
}

static void cancel_identified(BusCall *c) {
        find_execution_for(c, cancel_identified_found);
}

static int method_get_execution(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        const char *id;
        int r;

        r = sd_bus_message_read(msg, "s", &id);
        if (r < 0)
                return r;
        return bus_call_start(userdata, msg, id, get_identified, error);
}

static int method_cancel(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        const char *id;
        int r;

        r = sd_bus_message_read(msg, "s", &id);
        if (r < 0)
                return r;
        return bus_call_start(userdata, msg, id, cancel_identified, error);
}

/* ---- ListExecutions ---------------------------------------------------------------------------- */

static void on_listed(void *userdata, int r, StoreRecord **records, size_t n, char *next) {
        BusCall *c = userdata;
        RequestError err;
        json_object *page;

        c->store_call = NULL;
        if (r < 0) {
                (void) list_error(c->api->ac, r, &err);
                bus_call_reply_request_error(c, &err);
        } else if (!(page = list_page_json(records, n, next)))
                bus_call_reply_api_error(c, API_ERROR_INTERNAL, "out of memory");
        else
                bus_call_reply_json(c, page);
        store_records_free(records, n);
        free(next);
}

static void list_identified(BusCall *c) {
        StoreQuery q = STORE_QUERY_INIT;
        ListQueryJson l;
        RequestError err;
        int r;

        r = list_query_json_parse(c->arg, strlen(c->arg), &l, &err);
        if (r == -ENOMEM) {
                bus_call_reply_api_error(c, API_ERROR_INTERNAL, "out of memory");
                return;
        }
        if (r < 0) {
                bus_call_reply_request_error(c, &err);
                return;
        }
        /* Everyone lists their own executions; root everyone's, as on the HTTP API. */
        if (!c->admin)
                q.owner = c->owner;
        /* The same filters and the same page as GET /v1/executions. */
        r = list_query_parse(list_query_json_get, &l, &q, &err);
        if (r >= 0) {
                r = store_list_async(c->api->ac->ctx->store, &q, on_listed, c, &c->store_call);
                if (r < 0)
                        (void) list_error(c->api->ac, r, &err);
        }
        list_query_json_done(&l);
        if (r < 0)
                bus_call_reply_request_error(c, &err);
}

static int method_list_executions(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        const char *query;
        int r;

        r = sd_bus_message_read(msg, "s", &query);
        if (r < 0)
                return r;
        return bus_call_start(userdata, msg, query, list_identified, error);
}

/* ---- Reload ------------------------------------------------------------------------------------ */

static void reload_authorized(BusCall *c) {
        int r;

        log_info("Reloading the configuration, as %s asked over D-Bus.", c->owner);
        r = c->api->ac->ops->reload(c->api->ac->ops_data);
        if (r < 0) {
                bus_call_reply_api_error(c, API_ERROR_INVALID_CONFIGURATION,
                                     "the configuration did not load (see the journal); the old one stays");
                return;
        }
        (void) sd_bus_reply_method_return(c->msg, NULL);
        bus_call_free(c);
}

static void reload_identified(BusCall *c) {
        bus_call_authorize(c, ACTION_MANAGE, reload_authorized);
}

static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return bus_call_start(userdata, msg, NULL, reload_identified, error);
}

/* ---- the object -------------------------------------------------------------------------------- */

static int property_get(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        BusApi *a = userdata;
        RunnerCounts n;

        if (streq(property, "Version"))
                return sd_bus_message_append(reply, "s", PACKAGE_VERSION);
        runner_counts(a->ac->runner, &n);
        if (streq(property, "Running"))
                return sd_bus_message_append(reply, "u", n.running);
        return sd_bus_message_append(reply, "u", n.queued);
}

static const sd_bus_vtable object_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", property_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Running", "u", property_get, 0, 0),
        SD_BUS_PROPERTY("Queued", "u", property_get, 0, 0),
        SD_BUS_METHOD_WITH_NAMES("Execute", "s", SD_BUS_PARAM(request), "s", SD_BUS_PARAM(execution),
                                 method_execute, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Submit", "s", SD_BUS_PARAM(request), "s", SD_BUS_PARAM(execution_id),
                                 method_submit, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("GetExecution", "s", SD_BUS_PARAM(execution_id), "s", SD_BUS_PARAM(execution),
                                 method_get_execution, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Cancel", "s", SD_BUS_PARAM(execution_id), "s", SD_BUS_PARAM(execution),
                                 method_cancel, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListExecutions", "s", SD_BUS_PARAM(query), "s", SD_BUS_PARAM(page),
                                 method_list_executions, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Reload", NULL, NULL, method_reload, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_NAMES("ExecutionFinished", "ss", SD_BUS_PARAM(execution_id) SD_BUS_PARAM(status), 0),
        SD_BUS_VTABLE_END,
};

static int on_request_name(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (e)
                log_notice("D-Bus API off: cannot own %s on the system bus (%s); is %s.conf installed in "
                           "/usr/share/dbus-1/system.d?", BUS_API_NAME, strna(e->message), BUS_API_NAME);
        else
                log_info("D-Bus API on the system bus as %s.", BUS_API_NAME);
        return 0;
}

int bus_api_new(ApiContext *ac, BusApi **ret) {
        _cleanup_(bus_api_freep) BusApi *a = NULL;
        int r;

        a = calloc(1, sizeof(BusApi));
        if (!a)
                return log_oom();
        a->ac = ac;
        r = sd_bus_add_object_vtable(ac->ctx->bus, &a->object_slot, BUS_API_PATH, BUS_API_INTERFACE, object_vtable, a);
        if (r >= 0)
                r = sd_bus_request_name_async(ac->ctx->bus, &a->name_slot, BUS_API_NAME, 0, on_request_name, a);
        if (r < 0)
                return log_error_errno(r, "Failed to publish the D-Bus API: %m");
        *ret = TAKE_PTR(a);
        return 0;
}

BusApi *bus_api_free(BusApi *a) {
        if (!a)
                return NULL;
        while (a->calls)
                bus_call_free(a->calls);
        while (a->watches)
                bus_watch_free(a->watches);
        sd_bus_slot_unref(a->name_slot);
        sd_bus_slot_unref(a->object_slot);
        free(a);
        return NULL;
}
