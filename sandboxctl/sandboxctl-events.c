/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* logs ID [-f], and the events stream run follows; see sandboxctl-events.h. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "sandboxctl.h"
#include "sandboxctl-events.h"
#include "sandboxctl-execution.h"
#include "sandboxctl-http.h"
#include "sandboxctl-json.h"
#include "sandboxctl-util.h"

/* One SSE line: our daemon's are at most a result (bounded like any answer). */
typedef struct EventStream {
        CURL *curl;
        long status;
        CtlBuffer line;          /* the line being read */
        CtlBuffer error;         /* a non-200 answer's body */
        char event[32];
        char id[64], last_id[64];   /* the event being read's id; the last complete event's */
        json_object *data;
        json_object *record;     /* the result */
        bool write_failed, bad;
} EventStream;

static void print_text(FILE *f, const char *s, size_t n) {
        if (n > 0)
                fwrite(s, 1, n, f);
        fflush(f);
}

static void dispatch(EventStream *s) {
        json_object *v = NULL;
        const char *stream;

        if (!s->data)
                return;
        if (streq(s->event, "stdout") || streq(s->event, "stderr")) {
                if (json_object_object_get_ex(s->data, "text", &v) && json_object_is_type(v, json_type_string))
                        print_text(streq(s->event, "stdout") ? stdout : stderr, json_object_get_string(v),
                                   (size_t) json_object_get_string_len(v));
        } else if (streq(s->event, "elided")) {
                json_object *b = NULL;

                if (json_object_object_get_ex(s->data, "stream", &v) && json_object_object_get_ex(s->data, "bytes", &b) &&
                    (stream = json_object_get_string(v))) {
                        FILE *f = streq(stream, "stderr") ? stderr : stdout;
                        fprintf(f, CAPTURE_MARKER_PREFIX "%" PRIu64 CAPTURE_MARKER_SUFFIX,
                                (uint64_t) json_object_get_uint64(b));
                        fflush(f);
                }
        } else if (streq(s->event, "result")) {
                json_object_put(s->record);
                s->record = json_object_get(s->data);
        }
}

static void handle_line(EventStream *s, char *line, size_t n) {
        if (n == 0) {
                dispatch(s);
                if (s->id[0])
                        memcpy(s->last_id, s->id, sizeof(s->id));
                s->id[0] = 0;
                json_object_put(s->data);
                s->data = NULL;
                s->event[0] = 0;
                return;
        }
        line[n] = 0;
        if (startswith(line, "event: "))
                snprintf(s->event, sizeof(s->event), "%s", line + strlen("event: "));
        else if (startswith(line, "id: ") && n - strlen("id: ") < sizeof(s->id) &&
                 strspn(line + strlen("id: "), "0123456789.") == n - strlen("id: "))
                snprintf(s->id, sizeof(s->id), "%s", line + strlen("id: "));
        else if (startswith(line, "data: ")) {
                json_object_put(s->data);
                s->data = NULL;
                if (json_parse_strict(line + strlen("data: "), n - strlen("data: "), &s->data) < 0)
                        s->bad = true;
        }
        /* "id:" and comments: nothing to do. */
}

static size_t stream_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
        EventStream *s = userdata;
        size_t n = size * nmemb;

        if (s->status == 0)
                (void) curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
        if (s->status != 200)
                return buffer_write(ptr, size, nmemb, &s->error);

        for (size_t i = 0; i < n; i++) {
                if (ptr[i] == '\n') {
                        /* Room for the NUL handle_line() puts in. */
                        if (buffer_write((char *) "", 1, 1, &s->line) != 1) {
                                s->write_failed = true;
                                return 0;
                        }
                        handle_line(s, s->line.data, s->line.size - 1);
                        s->line.size = 0;
                        continue;
                }
                if (buffer_write(ptr + i, 1, 1, &s->line) != 1) {
                        s->write_failed = true;
                        return 0;
                }
        }
        return n;
}

/* A stream cut short (sandboxd restarted, or stopping) is resumed from its last event this often,
 * every FOLLOW_RETRY_USEC, before giving up. */
#define FOLLOW_RETRIES 60U
#define FOLLOW_RETRY_USEC (500U * 1000U)

/* One request. *ret_retry: it ended early in a way a later request may get past (the caller has
 * had events: the execution exists, and the daemon was there); nothing was logged then. */
static int follow_once(const char *url, const char *id, bool may_fall_back, char last_id[static 64],
                       json_object **ret_record, bool *ret_retry) {
        _cleanup_(curl_easy_cleanupp) CURL *c = NULL;
        _cleanup_(curl_slist_free_allp) struct curl_slist *headers = NULL;
        _cleanup_free_ char *resume = NULL;
        char errbuf[CURL_ERROR_SIZE] = "";
        EventStream s = {};
        bool resuming = last_id[0] != 0;
        CURLcode cc;
        int r;

        *ret_retry = false;
        memcpy(s.last_id, last_id, sizeof(s.last_id));
        c = curl_easy_init();
        headers = curl_slist_append(NULL, "Accept: text/event-stream");
        if (resuming && asprintf(&resume, "Last-Event-ID: %s", last_id) < 0)
                resume = NULL;
        if (!c || !headers || (resuming && (!resume || !curl_slist_append(headers, resume)))) {
                (void) log_oom();
                return EX_OSERR;
        }
        s.curl = c;
        if (http_setup(c, url, &headers, stream_write, &s, errbuf, arg_client_timeout_set ? arg_client_timeout_ms : 0) < 0) {
                (void) log_error_errno(-EIO, "Failed to configure libcurl.");
                return EX_OSERR;
        }

        cc = curl_easy_perform(c);
        buffer_done(&s.line);
        json_object_put(s.data);
        memcpy(last_id, s.last_id, sizeof(s.last_id));
        if (!s.record && last_id[0] &&
            ((cc != CURLE_OK && cc != CURLE_OPERATION_TIMEDOUT && !s.write_failed && s.status != 404) ||
             (cc == CURLE_OK && (s.status == 200 || s.status == 503)))) {
                buffer_done(&s.error);
                *ret_retry = true;
                return EX_UNAVAILABLE;
        }
        if (cc != CURLE_OK && !(cc == CURLE_WRITE_ERROR && s.status != 200)) {
                json_object_put(s.record);
                r = log_curl_error(c, cc, s.write_failed ? &s.line : &s.error, errbuf, arg_client_timeout_ms);
                buffer_done(&s.error);
                return exit_status_for(r, EX_UNAVAILABLE);
        }
        if (s.status != 200) {
                _cleanup_(json_object_putp) json_object *answer = NULL;

                if (s.error.size > 0)
                        (void) json_parse_strict(s.error.data, s.error.size, &answer);
                buffer_done(&s.error);
                /* For an execution that exists (run just made it), 404 or 405 can only mean an older
                 * sandboxd without this route: the caller does without. */
                if (may_fall_back && !resuming && (s.status == 404 || s.status == 405))
                        return 1;
                return log_http_error(s.status, answer, !may_fall_back);
        }
        buffer_done(&s.error);
        if (!s.record) {
                (void) log_error_errno(-EPROTO, "The events of %s ended without a result%s.", id,
                                       s.bad ? " (and some were malformed)" : "");
                return EX_UNAVAILABLE;
        }
        *ret_record = s.record;
        return 0;
}

int follow_events(const char *id, bool may_fall_back, json_object **ret_record) {
        _cleanup_free_ char *url = NULL;
        char last_id[64] = "";
        bool retry;
        int r;

        if (!id_is_valid_for_path(id)) {
                (void) log_error_errno(-EINVAL, "Invalid execution ID '%s'.", id);
                return EX_USAGE;
        }
        {
                _cleanup_free_ char *path = NULL;

                if (asprintf(&path, "/v1/executions/%s/events", id) < 0 || !(url = http_url(path))) {
                        (void) log_oom();
                        return EX_OSERR;
                }
        }
        for (unsigned attempt = 0;; attempt++) {
                r = follow_once(url, id, may_fall_back, last_id, ret_record, &retry);
                if (!retry)
                        return r;
                if (attempt >= FOLLOW_RETRIES) {
                        (void) log_error_errno(-EPROTO, "The events of %s ended without a result, and could not "
                                               "be resumed (after event %s).", id, last_id);
                        return EX_UNAVAILABLE;
                }
                /* sandboxd restarting: it adopts the execution, and the events go on after the last
                 * one printed (Last-Event-ID), nothing twice. */
                (void) usleep(FOLLOW_RETRY_USEC);
        }
}

int verb_logs(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        _cleanup_free_ char *path = NULL;
        CtlExecution e;
        int r;

        if (arg_follow) {
                r = follow_events(args[0], false, &answer);
                if (r != 0)
                        return r;
                if (execution_parse(answer, &e) < 0)
                        return EX_UNAVAILABLE;
                return execution_exit_status(&e);
        }

        if (!id_is_valid_for_path(args[0])) {
                (void) log_error_errno(-EINVAL, "Invalid execution ID '%s'.", args[0]);
                return EX_USAGE;
        }
        if (asprintf(&path, "/v1/executions/%s", args[0]) < 0) {
                path = NULL;
                (void) log_oom();
                return EX_OSERR;
        }
        r = http_call_ok("GET", path, NULL, false, true, &answer);
        if (r != 0)
                return r;
        if (execution_parse(answer, &e) < 0)
                return EX_UNAVAILABLE;
        if (!execution_is_final(&e)) {
                (void) log_error_errno(-EAGAIN, "Execution %s is %s: no output stored yet (use -f to follow it).",
                                       e.execution_id.s, e.status.s);
                return EXIT_SUCCESS;
        }
        print_text(stdout, e.out.s, e.out.len);
        print_text(stderr, e.err.s, e.err.len);
        return EXIT_SUCCESS;
}
