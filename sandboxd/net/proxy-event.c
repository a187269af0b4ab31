/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <json-c/json.h>

#include "allowlist.h"
#include "http-head.h"
#include "model/json-strict.h"
#include "proxy-event.h"

static const char *const reasons[] = {
        "not in the allowlist",
        "port not allowed",
        "internal address",
        "name did not resolve",
        "connect failed",
        "connect timed out",
        "byte cap reached",
        "connection cap reached",
        "idle timeout",
        "head timeout",
        "chunked request body",
};

#define BAD_REQUEST_PREFIX "bad request: "

const char *proxy_event_reason(size_t i) {
        return i < ELEMENTSOF(reasons) ? reasons[i] : NULL;
}

bool proxy_event_reason_is_valid(const char *s) {
        const char *rest;

        for (size_t i = 0; i < ELEMENTSOF(reasons); i++)
                if (streq(s, reasons[i]))
                        return true;
        rest = startswith(s, BAD_REQUEST_PREFIX);
        if (!rest)
                return false;
        for (int i = HTTP_HEAD_OK + 1; i < _HTTP_HEAD_REASON_MAX; i++)
                if (streq_ptr(http_head_reason_to_string((HttpHeadReason) i), rest))
                        return true;
        return false;
}

/* An RFC 9110 token character. */
static bool is_tchar(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               strchr("!#$%&'*+-.^_`|~", c);
}

static bool get_uint(json_object *v, uint64_t max, uint64_t *ret) {
        int64_t i;

        if (!json_object_is_type(v, json_type_int))
                return false;
        errno = 0;
        i = json_object_get_int64(v);
        if (errno != 0 || i < 0 || (uint64_t) i > max)
                return false;
        *ret = (uint64_t) i;
        return true;
}

static const char *get_string(json_object *v, size_t *ret_len) {
        if (!json_object_is_type(v, json_type_string))
                return NULL;
        *ret_len = (size_t) json_object_get_string_len(v);
        if (*ret_len != strlen(json_object_get_string(v)))
                return NULL;    /* a NUL inside */
        return json_object_get_string(v);
}

/* A timestamp after 2000 and before 2200, in microseconds. */
#define STARTED_MIN UINT64_C(946684800000000)
#define STARTED_MAX UINT64_C(7258118400000000)
/* A day: longer than any execution. */
#define DURATION_MAX_MS UINT64_C(86400000)
/* 2^53: what every JSON reader keeps exact. */
#define BYTES_MAX (UINT64_C(1) << 53)

static int check(json_object *root, NetLogEntry *e, const char **why) {
        enum { F_HOST = 1, F_PORT = 2, F_METHOD = 4, F_DECISION = 8, F_STARTED = 16, F_DURATION = 32,
               F_UP = 64, F_DOWN = 128, F_REASON = 256, F_ADDRESS = 512 };
        const unsigned required = F_HOST | F_PORT | F_METHOD | F_DECISION | F_STARTED | F_DURATION | F_UP | F_DOWN;
        unsigned seen = 0;
        uint64_t u;

        if (!json_object_is_type(root, json_type_object))
                return *why = "not a JSON object", -EBADMSG;

        json_object_object_foreach(root, key, v) {
                const char *s;
                size_t n;

                if (streq(key, "host")) {
                        char name[ALLOWLIST_NAME_MAX + 1];

                        if (!(s = get_string(v, &n)))
                                return *why = "host: not a string", -EBADMSG;
                        if (n == 0)
                                e->host[0] = 0;
                        else if (allowlist_host_check(s, n, name) != ALLOWLIST_OK || !streq(name, s))
                                return *why = "host: not a lower-case host name", -EBADMSG;
                        else
                                strcpy(e->host, name);
                        seen |= F_HOST;
                } else if (streq(key, "port")) {
                        if (!get_uint(v, 65535, &u))
                                return *why = "port: not 0-65535", -EBADMSG;
                        e->port = (uint16_t) u;
                        seen |= F_PORT;
                } else if (streq(key, "method")) {
                        if (!(s = get_string(v, &n)) || n > NET_LOG_METHOD_MAX)
                                return *why = "method: not a string of at most 16 bytes", -EBADMSG;
                        for (size_t i = 0; i < n; i++)
                                if (!is_tchar(s[i]))
                                        return *why = "method: not a token", -EBADMSG;
                        memcpy(e->method, s, n + 1);
                        seen |= F_METHOD;
                } else if (streq(key, "decision")) {
                        NetDecision d;

                        if (!(s = get_string(v, &n)) || (d = net_decision_from_string(s)) < 0)
                                return *why = "decision: not \"allowed\" or \"denied\"", -EBADMSG;
                        e->decision = d;
                        seen |= F_DECISION;
                } else if (streq(key, "reason")) {
                        if (!(s = get_string(v, &n)) || n > NET_LOG_REASON_MAX || !proxy_event_reason_is_valid(s))
                                return *why = "reason: not one of the proxy's reasons", -EBADMSG;
                        memcpy(e->reason, s, n + 1);
                        seen |= F_REASON;
                } else if (streq(key, "address")) {
                        struct in6_addr a6;
                        struct in_addr a4;

                        if (!(s = get_string(v, &n)) || n >= sizeof(e->address) ||
                            (inet_pton(AF_INET, s, &a4) != 1 && inet_pton(AF_INET6, s, &a6) != 1))
                                return *why = "address: not a numeric IPv4 or IPv6 address", -EBADMSG;
                        memcpy(e->address, s, n + 1);
                        seen |= F_ADDRESS;
                } else if (streq(key, "bytes_up")) {
                        if (!get_uint(v, BYTES_MAX, &e->bytes_up))
                                return *why = "bytes_up: out of range", -EBADMSG;
                        seen |= F_UP;
                } else if (streq(key, "bytes_down")) {
                        if (!get_uint(v, BYTES_MAX, &e->bytes_down))
                                return *why = "bytes_down: out of range", -EBADMSG;
                        seen |= F_DOWN;
                } else if (streq(key, "started_at")) {
                        if (!get_uint(v, STARTED_MAX, &e->started_usec) || e->started_usec < STARTED_MIN)
                                return *why = "started_at: not a time in microseconds", -EBADMSG;
                        seen |= F_STARTED;
                } else if (streq(key, "duration_ms")) {
                        if (!get_uint(v, DURATION_MAX_MS, &e->duration_ms))
                                return *why = "duration_ms: out of range", -EBADMSG;
                        seen |= F_DURATION;
                } else
                        return *why = "unknown field", -EBADMSG;
        }
        if ((seen & required) != required)
                return *why = "a required field is missing", -EBADMSG;
        if (e->decision == NET_DECISION_DENIED && !(seen & F_REASON))
                return *why = "a denial without a reason", -EBADMSG;
        return 0;
}

int proxy_event_parse(const char *line, size_t n, NetLogEntry *ret, const char **why) {
        JsonStrictError jerr;
        NetLogEntry e = {};
        json_tokener *tok;
        json_object *root;
        int r;

        *why = NULL;
        if (n == 0 || n >= PROXY_EVENT_LINE_MAX)
                return *why = n == 0 ? "empty line" : "line too long", -EBADMSG;
        if (memchr(line, 0, n) || memchr(line, '\n', n))
                return *why = "NUL or newline in the line", -EBADMSG;
        /* Field values are ASCII by the checks below; anything else is refused there. */
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) line[i] >= 0x80)
                        return *why = "not ASCII", -EBADMSG;
        r = json_strict_check(line, n, 2, &jerr);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return *why = "not strict JSON", -EBADMSG;
        tok = json_tokener_new_ex(2);
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        root = json_tokener_parse_ex(tok, line, (int) n);
        if (!root || json_tokener_get_error(tok) != json_tokener_success ||
            (size_t) json_tokener_get_parse_end(tok) != n) {
                json_object_put(root);
                json_tokener_free(tok);
                return *why = "not one JSON value", -EBADMSG;
        }
        json_tokener_free(tok);
        r = check(root, &e, why);
        json_object_put(root);
        if (r < 0)
                return r;
        *ret = e;
        return 0;
}
