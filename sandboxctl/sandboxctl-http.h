/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* HTTP to sandboxd over its unix socket (arg_socket), or to a TCP listener (arg_url, with an API
 * key), with libcurl: one request, one bounded answer, parsed strictly when it is a success;
 * failures to connect or to understand the peer are logged with what to check. */

#include <curl/curl.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An execution's answer carries at most 2×128 KiB of output per stream plus metadata, so 64 MiB is
 * generous; the bound only exists so that a broken peer cannot make us allocate without limit. */
#define ANSWER_MAX ((size_t) 64 * 1024 * 1024)

static inline void curl_easy_cleanupp(CURL **c) {
        if (*c)
                curl_easy_cleanup(*c);
}
static inline void curl_slist_free_allp(struct curl_slist **l) {
        if (*l)
                curl_slist_free_all(*l);
}

typedef struct CtlBuffer {
        char *data;
        size_t size, allocated;
        bool too_large, oom;
} CtlBuffer;

void buffer_done(CtlBuffer *b);
size_t buffer_write(char *ptr, size_t size, size_t nmemb, void *userdata);

/* Where the requests go, from the options and the environment: --url= or $SANDBOXD_URL (http:// or
 * https://, a host and maybe a port, nothing after it but "/"), with the key of --api-key-file= (its
 * first line) or $SANDBOXD_API_KEY; else the socket. 0, or a negative errno (logged). */
int http_target_init(void);
void http_target_done(void);
/* The target for messages: the URL or the socket path. */
const char *http_target(void);
/* base + path ("/v1/..."): "http://localhost/v1/..." on the socket. NULL on OOM. */
char *http_url(const char *path);

int log_curl_error(CURL *c, CURLcode cc, const CtlBuffer *b, const char *errbuf, uint64_t timeout_ms);
/* The options of every request to the daemon: over the API socket, or to --url= with its key in
 * an Authorization header appended to *headers (never through a proxy from $http_proxy, never
 * following a redirect), no signals, every status the caller's to read (error answers carry the
 * daemon's message in their body), libcurl's own message in errbuf (CURL_ERROR_SIZE), the answer to
 * write_fn, at most timeout_ms (0: none). *headers may be NULL; the caller frees it after the
 * request. 0, or -EIO (-ENOMEM). */
int http_setup(CURL *c, const char *url, struct curl_slist **headers, curl_write_callback write_fn, void *write_data,
               char *errbuf, uint64_t timeout_ms);
int http_call(const char *method, const char *path, json_object *body, bool waits, long *ret_status,
              json_object **ret_answer);
int log_http_error(long status, json_object *answer, bool not_found_is_status);
/* http_call() that wants a 2xx answer: 0 with *ret_answer, or the exit status to end with (the
 * transport's, or log_http_error()'s for any other status). */
int http_call_ok(const char *method, const char *path, json_object *body, bool waits, bool not_found_is_status,
                 json_object **ret_answer);
