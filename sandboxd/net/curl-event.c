/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "curl-event.h"
#include "log.h"
#include "netaddr.h"
#include "time-util.h"

typedef struct Transfer Transfer;
struct Transfer {
        Transfer *prev, *next;
        CURL *easy;
        curl_event_done_t cb;
        void *userdata;
};

struct CurlEvent {
        sd_event *event;
        CURLM *multi;
        sd_event_source *timer;
        Transfer *transfers;
        unsigned n_transfers;
};

static void transfer_unlink(CurlEvent *c, Transfer *t) {
        if (t->prev)
                t->prev->next = t->next;
        else
                c->transfers = t->next;
        if (t->next)
                t->next->prev = t->prev;
        c->n_transfers--;
}

/* Hand every finished transfer to its owner. */
static void check_done(CurlEvent *c) {
        CURLMsg *msg;
        int left;

        while ((msg = curl_multi_info_read(c->multi, &left))) {
                Transfer *t = NULL;
                CURL *easy = msg->easy_handle;
                CURLcode result = msg->data.result;

                if (msg->msg != CURLMSG_DONE)
                        continue;
                (void) curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **) &t);
                (void) curl_multi_remove_handle(c->multi, easy);
                (void) curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
                if (!t)
                        continue;
                transfer_unlink(c, t);
                curl_event_done_t cb = t->cb;
                void *userdata = t->userdata;
                free(t);
                cb(easy, result, userdata);
        }
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        CurlEvent *c = userdata;
        int action = 0, running;

        if (revents & EPOLLIN)
                action |= CURL_CSELECT_IN;
        if (revents & EPOLLOUT)
                action |= CURL_CSELECT_OUT;
        if (revents & (EPOLLERR | EPOLLHUP))
                action |= CURL_CSELECT_ERR;
        (void) curl_multi_socket_action(c->multi, fd, action, &running);
        check_done(c);
        return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        CurlEvent *c = userdata;
        int running;

        (void) curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        check_done(c);
        return 0;
}

/* CURLMOPT_SOCKETFUNCTION: watch, re-watch or forget one socket. socketp is its sd_event_source. */
static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
        CurlEvent *c = userp;
        sd_event_source *src = socketp;
        uint32_t events = 0;
        int r;

        if (what == CURL_POLL_REMOVE) {
                if (src) {
                        (void) curl_multi_assign(c->multi, fd, NULL);
                        sd_event_source_disable_unref(src);
                }
                return 0;
        }
        if (what & CURL_POLL_IN)
                events |= EPOLLIN;
        if (what & CURL_POLL_OUT)
                events |= EPOLLOUT;
        if (src)
                r = sd_event_source_set_io_events(src, events);
        else {
                r = sd_event_add_io(c->event, &src, fd, events, on_io, c);
                if (r >= 0) {
                        (void) sd_event_source_set_description(src, "curl-socket");
                        if (curl_multi_assign(c->multi, fd, src) != CURLM_OK) {
                                sd_event_source_disable_unref(src);
                                r = -ENOMEM;
                        }
                }
        }
        if (r < 0) {
                log_error("curl: cannot watch socket %d: %s", fd, strerror(-r));
                return -1;      /* curl fails this transfer */
        }
        return 0;
}

/* CURLMOPT_TIMERFUNCTION: -1 stops the timer, else it fires in timeout_ms (0: on the next
 * iteration; curl must not be called back from inside this function). */
static int timer_cb(CURLM *multi, long timeout_ms, void *userp) {
        CurlEvent *c = userp;
        int r;

        if (timeout_ms < 0)
                return sd_event_source_set_enabled(c->timer, SD_EVENT_OFF) < 0 ? -1 : 0;
        r = sd_event_source_set_time_relative(c->timer, (uint64_t) timeout_ms * USEC_PER_MSEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
        if (r < 0) {
                log_error("curl: cannot arm the timer: %s", strerror(-r));
                return -1;
        }
        return 0;
}

int curl_event_new(sd_event *event, CurlEvent **ret) {
        static bool global_done = false;
        CurlEvent *c;
        int r;

        if (!global_done) {
                if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                        return -EIO;
                global_done = true;
        }
        c = calloc(1, sizeof(CurlEvent));
        if (!c)
                return -ENOMEM;
        c->event = sd_event_ref(event);
        c->multi = curl_multi_init();
        if (!c->multi) {
                curl_event_free(c);
                return -ENOMEM;
        }
        /* Armed by timer_cb(); created disabled (a time of 0 would fire at once if enabled). */
        r = sd_event_add_time(event, &c->timer, CLOCK_MONOTONIC, 0, USEC_PER_MSEC, on_timer, c);
        if (r < 0) {
                curl_event_free(c);
                return r;
        }
        r = sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
        if (r < 0) {
                curl_event_free(c);
                return r;
        }
        (void) sd_event_source_set_description(c->timer, "curl-timer");
        if (curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, socket_cb) != CURLM_OK ||
            curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c) != CURLM_OK ||
            curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb) != CURLM_OK ||
            curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c) != CURLM_OK) {
                curl_event_free(c);
                return -EIO;
        }
        *ret = c;
        return 0;
}

CurlEvent *curl_event_free(CurlEvent *c) {
        if (!c)
                return NULL;
        while (c->transfers)
                curl_event_remove(c, c->transfers->easy);
        if (c->multi)
                (void) curl_multi_cleanup(c->multi);   /* REMOVE for every socket: their sources go */
        sd_event_source_disable_unref(c->timer);
        sd_event_unref(c->event);
        free(c);
        return NULL;
}

int curl_event_add(CurlEvent *c, CURL *easy, curl_event_done_t cb, void *userdata) {
        Transfer *t;

        if (!c || !easy || !cb)
                return -EINVAL;
        t = calloc(1, sizeof(Transfer));
        if (!t)
                return -ENOMEM;
        t->easy = easy;
        t->cb = cb;
        t->userdata = userdata;
        if (curl_easy_setopt(easy, CURLOPT_PRIVATE, (char *) t) != CURLE_OK) {
                free(t);
                return -EINVAL;
        }
        if (curl_multi_add_handle(c->multi, easy) != CURLM_OK) {
                (void) curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
                free(t);
                return -EINVAL;
        }
        t->next = c->transfers;
        if (t->next)
                t->next->prev = t;
        c->transfers = t;
        c->n_transfers++;
        return 0;
}

void curl_event_remove(CurlEvent *c, CURL *easy) {
        Transfer *t = NULL;

        if (!c || !easy)
                return;
        (void) curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **) &t);
        if (!t)
                return;
        (void) curl_multi_remove_handle(c->multi, easy);
        (void) curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
        transfer_unlink(c, t);
        free(t);
}

unsigned curl_event_running(CurlEvent *c) {
        return c ? c->n_transfers : 0;
}

static curl_socket_t guard_open_socket(void *userdata, curlsocktype purpose, struct curl_sockaddr *a) {
        CurlGuard *g = userdata;
        int fd;

        if (!g->allow_internal && netaddr_is_internal(&a->addr, a->addrlen)) {
                const void *raw = a->family == AF_INET6
                                          ? (const void *) &((struct sockaddr_in6 *) &a->addr)->sin6_addr
                                          : (const void *) &((struct sockaddr_in *) &a->addr)->sin_addr;

                g->refused++;
                if ((a->family != AF_INET && a->family != AF_INET6) ||
                    !inet_ntop(a->family, raw, g->refused_address, sizeof(g->refused_address)))
                        snprintf(g->refused_address, sizeof(g->refused_address), "(family %d)", a->family);
                return CURL_SOCKET_BAD;
        }
        fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
        return fd < 0 ? CURL_SOCKET_BAD : fd;
}

int curl_guard_apply(CURL *easy, CurlGuard *g) {
        /* CURLOPT_PROXY "" alone turns the proxy off; CURLOPT_NOPROXY "*" says the same to any
         * code path that still looks at the environment's no_proxy. */
        if (curl_easy_setopt(easy, CURLOPT_PROXY, "") != CURLE_OK ||
            curl_easy_setopt(easy, CURLOPT_NOPROXY, "*") != CURLE_OK ||
            curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, guard_open_socket) != CURLE_OK ||
            curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, g) != CURLE_OK)
                return -EIO;
        return 0;
}

TransportResult curl_transport_result(CURL *easy, CURLcode result, const CurlGuard *g) {
        curl_off_t connect_usec = 0;

        switch (result) {
        case CURLE_OK:
        case CURLE_HTTP_RETURNED_ERROR:          /* CURLOPT_FAILONERROR: the status decides */
                return TRANSPORT_OK;
        case CURLE_OPERATION_TIMEDOUT:
                /* A connection attempt nobody answers (a firewall that drops, a full backlog) fails
                 * like a refused one. Once connected, it is the receiver that is slow. */
                if (curl_easy_getinfo(easy, CURLINFO_CONNECT_TIME_T, &connect_usec) == CURLE_OK &&
                    connect_usec > 0)
                        return TRANSPORT_TIMEOUT;
                _fallthrough_;
        case CURLE_COULDNT_CONNECT:
                /* Every address the guard refused fails with CURLE_COULDNT_CONNECT; if there were
                 * others too, that an internal one was among them is the answer. */
                return g && g->refused > 0 ? TRANSPORT_REFUSED : TRANSPORT_CONNECT;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
                return TRANSPORT_DNS;
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
                return TRANSPORT_RESET;
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_ISSUER_ERROR:
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        case CURLE_SSL_INVALIDCERTSTATUS:
                return TRANSPORT_TLS;
        case CURLE_UNSUPPORTED_PROTOCOL:         /* also an HTTP/0.9 answer: not an HTTP server */
        case CURLE_WEIRD_SERVER_REPLY:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
        case CURLE_BAD_CONTENT_ENCODING:
        case CURLE_TOO_MANY_REDIRECTS:
                return TRANSPORT_PROTOCOL;
        case CURLE_WRITE_ERROR:
        case CURLE_FILESIZE_EXCEEDED:
                return TRANSPORT_TOO_LARGE;
        default:
                return TRANSPORT_OTHER;
        }
}
