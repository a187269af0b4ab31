/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <stdio.h>
#include <strings.h>

#include "backoff.h"
#include "string-table.h"
#include "time-util.h"

static const char *const transport_result_table[_TRANSPORT_MAX] = {
        [TRANSPORT_OK] = "ok",
        [TRANSPORT_TIMEOUT] = "timeout",
        [TRANSPORT_CONNECT] = "connection failed",
        [TRANSPORT_DNS] = "name resolution failed",
        [TRANSPORT_RESET] = "connection closed",
        [TRANSPORT_TLS] = "tls error",
        [TRANSPORT_TOO_LARGE] = "response too large",
        [TRANSPORT_OTHER] = "transfer failed",
        [TRANSPORT_REFUSED] = "refused: internal address",
        [TRANSPORT_PROTOCOL] = "invalid response",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(transport_result, TransportResult);

DeliveryOutcome delivery_outcome(TransportResult t, long http_status) {
        if (t == TRANSPORT_REFUSED)
                return DELIVERY_FAILED;
        if (t != TRANSPORT_OK)
                /* Nothing the receiver decided: the network, a hung or restarting receiver. A
                 * response larger than we read still came from a receiver that answered, so the
                 * status decides if it arrived (callback.c passes TRANSPORT_OK then). */
                return DELIVERY_RETRY;
        if (http_status >= 200 && http_status <= 299)
                return DELIVERY_DELIVERED;
        if (http_status == 408 || http_status == 429 || (http_status >= 500 && http_status <= 599))
                return DELIVERY_RETRY;
        return DELIVERY_FAILED;
}

uint64_t backoff_delay_usec(const BackoffPolicy *p, unsigned attempts, uint64_t random, uint64_t retry_after_sec) {
        uint64_t cap = p->base_usec, delay;

        for (unsigned i = 1; i < attempts && cap < p->max_usec; i++)
                cap = cap > UINT64_MAX / 2 ? UINT64_MAX : cap * 2;
        cap = MIN(cap, p->max_usec);
        delay = cap / 2 + (cap / 2 == UINT64_MAX ? random : random % (cap / 2 + 1));

        if (retry_after_sec > 0) {
                uint64_t ra = retry_after_sec > UINT64_MAX / USEC_PER_SEC ? UINT64_MAX : retry_after_sec * USEC_PER_SEC;

                ra = MIN(ra, p->retry_after_max_usec);
                delay = MAX(delay, ra);
        }
        return delay;
}

uint64_t retry_after_parse(const char *value) {
        uint64_t v = 0;

        if (isempty(value))
                return 0;
        while (*value == ' ' || *value == '\t')
                value++;
        if (*value < '0' || *value > '9')
                return 0;
        for (; *value >= '0' && *value <= '9'; value++) {
                if (v > (UINT64_MAX - 9) / 10)
                        return UINT64_MAX;
                v = v * 10 + (uint64_t) (*value - '0');
        }
        while (*value == ' ' || *value == '\t' || *value == '\r' || *value == '\n')
                value++;
        return *value ? 0 : v;
}

int callback_signature(const void *key, size_t key_len, uint64_t unix_time, const char *body, size_t body_len,
                       char ret[static CALLBACK_SIGNATURE_MAX]) {
        OSSL_PARAM params[] = {
                OSSL_PARAM_construct_utf8_string("digest", (char *) "SHA256", 0),
                OSSL_PARAM_construct_end(),
        };
        uint8_t mac[EVP_MAX_MD_SIZE];
        size_t mac_len = 0;
        char prefix[32];
        EVP_MAC_CTX *ctx = NULL;
        EVP_MAC *hmac;
        int n, k;

        if (!key || key_len == 0 || (!body && body_len > 0))
                return -EINVAL;
        n = snprintf(prefix, sizeof(prefix), "%" PRIu64 ".", unix_time);
        hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
        if (hmac)
                ctx = EVP_MAC_CTX_new(hmac);
        k = ctx && EVP_MAC_init(ctx, key, key_len, params) == 1 &&
            EVP_MAC_update(ctx, (const unsigned char *) prefix, (size_t) n) == 1 &&
            EVP_MAC_update(ctx, (const unsigned char *) (body ?: ""), body_len) == 1 &&
            EVP_MAC_final(ctx, mac, &mac_len, sizeof(mac)) == 1;
        EVP_MAC_CTX_free(ctx);
        EVP_MAC_free(hmac);
        if (!k || mac_len != 32)
                return -EIO;

        n = snprintf(ret, CALLBACK_SIGNATURE_MAX, "t=%" PRIu64 ",v1=", unix_time);
        for (size_t i = 0; i < mac_len; i++)
                n += snprintf(ret + n, CALLBACK_SIGNATURE_MAX - (size_t) n, "%02x", mac[i]);
        return 0;
}

static bool is_digits(const char *s, size_t n) {
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (s[i] < '0' || s[i] > '9')
                        return false;
        return true;
}

bool callback_url_is_valid(const char *url, const char **ret_why) {
        const char *why = NULL, *rest, *end, *host, *port = NULL;
        size_t n, host_len, port_len = 0;

        if (!url) {
                why = "expected a URL";
                goto bad;
        }
        n = strlen(url);
        if (n > CALLBACK_URL_MAX) {
                why = "longer than 2048 bytes";
                goto bad;
        }
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) url[i] <= 0x20 || (unsigned char) url[i] >= 0x7f) {
                        why = "contains white space, a control character or non-ASCII (percent-encode it)";
                        goto bad;
                }
        if (strncasecmp(url, "http://", 7) == 0)
                rest = url + 7;
        else if (strncasecmp(url, "https://", 8) == 0)
                rest = url + 8;
        else {
                why = "only http:// and https:// URLs are allowed";
                goto bad;
        }
        end = rest + strcspn(rest, "/?#");
        if (memchr(rest, '@', (size_t) (end - rest))) {
                why = "credentials (user@) are not allowed in the URL";
                goto bad;
        }
        host = rest;
        if (*host == '[') {
                const char *close = memchr(host, ']', (size_t) (end - host));

                if (!close || close == host + 1) {
                        why = "invalid IPv6 address";
                        goto bad;
                }
                host_len = (size_t) (close - host + 1);
                if (close + 1 < end) {
                        if (close[1] != ':') {
                                why = "invalid host";
                                goto bad;
                        }
                        port = close + 2;
                        port_len = (size_t) (end - port);
                }
        } else {
                const char *colon = memchr(host, ':', (size_t) (end - host));

                host_len = (size_t) ((colon ?: end) - host);
                if (colon) {
                        port = colon + 1;
                        port_len = (size_t) (end - port);
                }
        }
        if (host_len == 0) {
                why = "a host is required";
                goto bad;
        }
        if (port) {
                uint64_t p = 0;

                if (!is_digits(port, port_len) || port_len > 5) {
                        why = "invalid port";
                        goto bad;
                }
                for (size_t i = 0; i < port_len; i++)
                        p = p * 10 + (uint64_t) (port[i] - '0');
                if (p < 1 || p > 65535) {
                        why = "port outside 1..65535";
                        goto bad;
                }
        }
        if (ret_why)
                *ret_why = NULL;
        return true;
bad:
        if (ret_why)
                *ret_why = why;
        return false;
}

static size_t put_clean(char *out, size_t room, const char *s, size_t n, size_t max) {
        size_t k = MIN(n, max), w = 0;

        for (size_t i = 0; i < k && w + 1 < room; i++)
                out[w++] = (unsigned char) s[i] > 0x20 && (unsigned char) s[i] < 0x7f ? s[i] : '?';
        if (n > max)
                for (const char *dots = "..."; *dots && w + 1 < room; dots++)
                        out[w++] = *dots;
        out[w] = 0;
        return w;
}

const char *callback_url_for_log(const char *url, char ret[static CALLBACK_URL_LOG_MAX]) {
        const char *rest, *auth_end, *path_end;
        size_t w = 0, scheme_len;

        if (!url) {
                snprintf(ret, CALLBACK_URL_LOG_MAX, "(none)");
                return ret;
        }
        rest = strstr(url, "://");
        scheme_len = rest ? (size_t) (rest - url) + 3 : 0;
        rest = rest ? rest + 3 : url;
        auth_end = rest + strcspn(rest, "/?#");
        path_end = auth_end + strcspn(auth_end, "?#");

        w += put_clean(ret + w, CALLBACK_URL_LOG_MAX - w, url, scheme_len, 8);
        w += put_clean(ret + w, CALLBACK_URL_LOG_MAX - w, rest, (size_t) (auth_end - rest), 64);
        w += put_clean(ret + w, CALLBACK_URL_LOG_MAX - w, auth_end, (size_t) (path_end - auth_end), 32);
        if (*path_end)
                (void) put_clean(ret + w, CALLBACK_URL_LOG_MAX - w, "?...", 4, 4);
        return ret;
}
