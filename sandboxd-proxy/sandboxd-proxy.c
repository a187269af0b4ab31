/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandboxd-proxy: the egress proxy of one network-enabled execution (issue 16; docs/ARCHITECTURE.md,
 * "The egress proxy"). systemd hands it the listening socket 127.0.0.1:3128 of the execution's
 * network namespace (fd 3, socket activation, Accept=no) while the proxy itself runs in the host's
 * namespace. Each client connection is one request: CONNECT host:port (a tunnel) or an absolute-form
 * http:// request, judged by the allowlist, the name resolved (the --host table, then DNS through
 * c-ares), every address judged by netaddr.h and the --permit blocks, then relayed both ways. One
 * event line per connection on stdout (proxy-log.h), a log line on stderr. One sd-event loop,
 * non-blocking sockets, no threads; hard caps on everything a client controls. SIGTERM ends every
 * connection (each gets its line) and exits 0. */
#include <ares.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "net/allowlist.h"
#include "net/cidr.h"
#include "net/http-head.h"
#include "net/netaddr.h"
#include "net/proxy-log.h"
#include "time-util.h"
#include "util.h"

/* The request head's caps: a client that honours HTTP_PROXY sends a few hundred bytes. */
#define HEAD_MAX (16U * 1024U)
#define HEAD_HEADERS_MAX 64
#define HEAD_LINE_MAX (8U * 1024U)
/* Bytes in flight per direction of one relay. A buffer starts small and doubles, up to RELAY_BUF_MAX,
 * each time a read fills it (a bulk transfer: a loopback download through 128 KiB buffers ran at 0.64
 * of curl's direct rate, through 512 KiB ones at 0.85), as long as all buffers together stay within
 * RELAY_MEMORY_MAX; beyond it they stay as they are. */
#define RELAY_BUF_MIN PROXY_RELAY_BUF_MIN
#define RELAY_BUF_MAX PROXY_RELAY_BUF_MAX
#define RELAY_MEMORY_MAX PROXY_RELAY_MEMORY_MAX
/* Addresses tried for one name. */
#define ADDRS_MAX 16
/* The argv caps of the contract, and the most connections any configuration may ask for (each holds
 * two relay buffers and two fds). */
#define HOSTS_MAX 1024
#define CONNECTIONS_MAX 1024
#define TIMEOUT_MS_MAX (24U * 3600U * 1000U)
/* Event lines queued for a daemon that does not read: beyond this they are dropped and counted. */
#define OUT_QUEUE_MAX (1024U * 1024U)
/* What a refusal reads of a client's unread bytes before closing, so that close() does not turn
 * the response into a reset. */
#define DRAIN_MAX (64U * 1024U)

static const char connect_established[] = "HTTP/1.1 200 Connection established\r\n\r\n";

typedef struct Proxy Proxy;
typedef struct Conn Conn;

typedef struct HostEntry {
        char name[ALLOWLIST_NAME_MAX + 1];
        struct sockaddr_storage address;
        socklen_t address_len;
} HostEntry;

typedef struct DnsWatch {
        Proxy *p;
        ares_socket_t fd;
        sd_event_source *source;
        struct DnsWatch *next;
} DnsWatch;

/* One ares_getaddrinfo() in flight; outlives its connection (c-ares cannot cancel one query). */
typedef struct DnsQuery {
        Conn *conn;
} DnsQuery;

typedef enum ConnState {
        CONN_HEAD,
        CONN_RESOLVING,
        CONN_CONNECTING,
        CONN_RELAY,
} ConnState;

typedef struct RelayBuf {
        uint8_t *data;
        size_t size;
        size_t start, end;
        bool eof;                        /* the reading side is done */
        bool shut;                       /* the writing side was shut down */
} RelayBuf;

struct Conn {
        Proxy *p;
        Conn *prev, *next;
        ConnState state;
        int client_fd, server_fd;
        sd_event_source *client_source, *server_source, *timer;
        uint32_t client_events, server_events;
        uint64_t started_at, started_mono, last_activity;

        char head[HEAD_MAX];
        size_t head_len;
        HttpHead *parsed;

        char host[ALLOWLIST_NAME_MAX + 1];
        uint16_t port;
        char method[PROXY_METHOD_MAX + 1];
        bool connect;
        bool allowed;
        ProxyReason reason;
        HttpHeadReason detail;           /* of PROXY_REASON_BAD_REQUEST */

        DnsQuery *query;
        struct sockaddr_storage addrs[ADDRS_MAX];
        socklen_t addr_lens[ADDRS_MAX];
        size_t n_addrs, next_addr, n_tried;
        bool last_timed_out;
        char address[INET6_ADDRSTRLEN];

        RelayBuf up, down;
        bool up_limited;                 /* absolute form: only the body's bytes go up */
        uint64_t up_remaining;
        uint64_t bytes_up, bytes_down;
};

struct Proxy {
        sd_event *event;
        const char *execution_id;
        Allowlist *allow;
        Cidr permits[CIDR_LIST_MAX];
        size_t n_permits;
        HostEntry *hosts;
        size_t n_hosts;
        uint64_t max_bytes, bytes_total;
        size_t relay_memory;             /* the relay buffers' bytes, all connections */
        unsigned max_connections, n_open;
        uint64_t connect_timeout, idle_timeout, head_timeout;   /* µs */

        int listen_fd;
        sd_event_source *accept_retry;
        sd_event_source *listen_source, *sigterm, *sigint, *out_source;
        ares_channel ares;
        bool ares_ready;
        DnsWatch *dns_watches;
        sd_event_source *dns_timer;
        Conn *conns;

        char *out;
        size_t out_len;
        uint64_t out_dropped;
        bool terminating;
};

/* ---- stdout: the event lines ------------------------------------------------------------------ */

static int out_flush(Proxy *p) {
        while (p->out_len > 0) {
                ssize_t k = write(STDOUT_FILENO, p->out, p->out_len);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                break;
                        /* The daemon is gone: nobody reads the lines; stderr still has them. */
                        p->out_len = 0;
                        return -errno;
                }
                memmove(p->out, p->out + k, p->out_len - (size_t) k);
                p->out_len -= (size_t) k;
        }
        if (p->out_source)
                (void) sd_event_source_set_enabled(p->out_source, p->out_len > 0 ? SD_EVENT_ON : SD_EVENT_OFF);
        return 0;
}

static int on_stdout(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        (void) out_flush(userdata);
        return 0;
}

static void out_line(Proxy *p, const char *line, size_t n) {
        if (p->out_len + n > OUT_QUEUE_MAX) {
                p->out_dropped++;
                fprintf(stderr, "sandboxd-proxy: execution %s: event line queue full, line dropped (%" PRIu64
                        " so far)\n", p->execution_id, p->out_dropped);
                return;
        }
        if (!p->out) {
                p->out = malloc(OUT_QUEUE_MAX);
                if (!p->out) {
                        p->out_dropped++;
                        return;
                }
        }
        memcpy(p->out + p->out_len, line, n);
        p->out_len += n;
        (void) out_flush(p);
}

/* ---- connections ------------------------------------------------------------------------------ */

static void conn_log(Conn *c) {
        Proxy *p = c->p;
        char line[PROXY_EVENT_MAX + 1], reason[256] = "";
        HttpHeadReason detail = c->detail;
        ProxyEvent e;
        ssize_t n;

        e = (ProxyEvent) {
                .host = c->host,
                .port = c->port,
                .method = c->method,
                .allowed = c->allowed,
                .reason = c->reason,
                .bad_request = detail,
                .address = c->address,
                .bytes_up = c->bytes_up,
                .bytes_down = c->bytes_down,
                .started_at = c->started_at,
                .duration_ms = (now_usec(CLOCK_MONOTONIC) - c->started_mono) / USEC_PER_MSEC,
        };
        n = proxy_event_format(&e, line);
        if (n < 0) {
                fprintf(stderr, "sandboxd-proxy: execution %s: cannot format the event line: %s\n",
                        p->execution_id, strerror((int) -n));
                return;
        }
        out_line(p, line, (size_t) n);
        if (c->reason != PROXY_REASON_NONE)
                (void) proxy_reason_format(c->reason, detail, reason, sizeof(reason));
        fprintf(stderr, "sandboxd-proxy: execution %s: %s %s:%u %s%s%s%s%s up=%" PRIu64 " down=%" PRIu64 "\n",
                p->execution_id, isempty(c->method) ? "-" : c->method, isempty(c->host) ? "-" : c->host,
                (unsigned) e.port, c->allowed ? "allowed" : "denied", *reason ? ": " : "", reason,
                *c->address ? " via " : "", c->address, c->bytes_up, c->bytes_down);
}

static Conn *conn_free(Conn *c) {
        Proxy *p;

        if (!c)
                return NULL;
        p = c->p;
        if (c->query)
                c->query->conn = NULL;
        sd_event_source_disable_unref(c->client_source);
        sd_event_source_disable_unref(c->server_source);
        sd_event_source_disable_unref(c->timer);
        safe_close(c->client_fd);
        safe_close(c->server_fd);
        p->relay_memory -= c->up.size + c->down.size;
        free(c->up.data);
        free(c->down.data);
        free(c->parsed);
        if (c->prev)
                c->prev->next = c->next;
        else if (p->conns == c)
                p->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        p->n_open--;
        free(c);
        return NULL;
}

/* The end of a connection: its line, then everything it holds. */
static void conn_end(Conn *c) {
        conn_log(c);
        conn_free(c);
}

/* Best effort: the response in one non-blocking send (it is far smaller than a socket buffer), then
 * the client's unread bytes, so that close() sends a FIN after the response rather than a reset. */
static void send_refusal(int fd, ProxyReason r, HttpHeadReason detail, const char *host, uint16_t port) {
        char resp[PROXY_RESPONSE_MAX], scratch[4096];
        size_t drained = 0;
        ssize_t n;

        n = proxy_response_format(r, detail, host, port, resp);
        if (n > 0)
                (void) send(fd, resp, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void) shutdown(fd, SHUT_WR);
        while (drained < DRAIN_MAX) {
                ssize_t k = recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);
                if (k <= 0)
                        break;
                drained += (size_t) k;
        }
}

static void conn_refuse(Conn *c, ProxyReason r, HttpHeadReason detail) {
        c->allowed = false;
        c->reason = r;
        c->detail = detail;
        if (r == PROXY_REASON_BAD_REQUEST || r == PROXY_REASON_HEAD_TIMEOUT) {
                /* No head, or one refused: nothing in it is reported as the client's request. */
                c->host[0] = 0;
                c->method[0] = 0;
                c->port = 0;
        }
        if (c->client_fd >= 0)
                send_refusal(c->client_fd, r, detail, c->host, c->port);
        conn_end(c);
}

/* A cut-off of an allowed connection (byte cap, idle timeout) or its error: no response. */
static void conn_cut(Conn *c, ProxyReason r) {
        c->reason = r;
        conn_end(c);
}

static int conn_set_timer(Conn *c, uint64_t usec);
static int on_client(sd_event_source *s, int fd, uint32_t revents, void *userdata);
static int on_server(sd_event_source *s, int fd, uint32_t revents, void *userdata);

static void set_events(sd_event_source *s, uint32_t *have, uint32_t want) {
        if (!s || *have == want)
                return;
        if (want == 0)
                (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
        else {
                (void) sd_event_source_set_io_events(s, want);
                if (*have == 0)
                        (void) sd_event_source_set_enabled(s, SD_EVENT_ON);
        }
        *have = want;
}

static uint64_t budget(Proxy *p) {
        if (p->max_bytes == 0)
                return UINT64_MAX;
        return p->bytes_total >= p->max_bytes ? 0 : p->max_bytes - p->bytes_total;
}

/* Which events each side waits for, from the state and the buffers. */
static void conn_update(Conn *c) {
        uint32_t cl = 0, sv = 0;

        switch (c->state) {
        case CONN_HEAD:
                cl = EPOLLIN;
                break;
        case CONN_RESOLVING:
                break;
        case CONN_CONNECTING:
                sv = EPOLLOUT;
                break;
        case CONN_RELAY:
                if (!c->up.eof && (c->up.end < c->up.size || c->up.start > 0) &&
                    (!c->up_limited || c->up_remaining > 0))
                        cl |= EPOLLIN;
                if (c->down.end > c->down.start)
                        cl |= EPOLLOUT;
                if (!c->down.eof && (c->down.end < c->down.size || c->down.start > 0))
                        sv |= EPOLLIN;
                if (c->up.end > c->up.start)
                        sv |= EPOLLOUT;
                break;
        }
        set_events(c->client_source, &c->client_events, cl);
        set_events(c->server_source, &c->server_events, sv);
}

/* ---- relaying --------------------------------------------------------------------------------- */

/* Read from fd into b, at most max bytes (the byte cap's budget). 1: read *ret_n bytes, 0: would block
 * or b is full, 2: EOF, <0: error. With no budget left, a peek tells a peer that has more (*ret_cap)
 * from one that is done. */
static int relay_read(Conn *c, int fd, RelayBuf *b, uint64_t max, size_t *ret_n, bool *ret_cap) {
        size_t room;
        ssize_t k;

        *ret_cap = false;
        *ret_n = 0;
        if (b->end == b->start)
                b->start = b->end = 0;
        if (b->end == b->size && b->start > 0) {
                memmove(b->data, b->data + b->start, b->end - b->start);
                b->end -= b->start;
                b->start = 0;
        }
        room = b->size - b->end;
        if (room == 0)
                return 0;
        if (max == 0) {
                char byte;

                k = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
                if (k == 0)
                        return 2;
                if (k < 0)
                        return errno == EAGAIN || errno == EINTR ? 0 : -errno;
                *ret_cap = true;
                return 0;
        }
        if (max < room)
                room = (size_t) max;
        k = recv(fd, b->data + b->end, room, MSG_DONTWAIT);
        if (k == 0)
                return 2;
        if (k < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        b->end += (size_t) k;
        c->p->bytes_total += (uint64_t) k;
        *ret_n = (size_t) k;
        if (b->end == b->size && b->size < RELAY_BUF_MAX && c->p->relay_memory + b->size <= RELAY_MEMORY_MAX) {
                uint8_t *bigger = realloc(b->data, b->size * 2);

                if (bigger) {
                        c->p->relay_memory += b->size;
                        b->data = bigger;
                        b->size *= 2;
                }
        }
        return 1;
}

/* Write b's bytes to fd. 1: wrote something, 0: would block, <0: error. */
static int relay_write(int fd, RelayBuf *b, uint64_t *counter) {
        ssize_t k;

        if (b->end == b->start)
                return 0;
        k = send(fd, b->data + b->start, b->end - b->start, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        b->start += (size_t) k;
        *counter += (uint64_t) k;
        if (b->start == b->end)
                b->start = b->end = 0;
        return 1;
}

/* After the buffers moved: shut down a side whose source is done and drained; is the relay over? */
static bool relay_done(Conn *c) {
        if (c->up.eof && c->up.start == c->up.end && !c->up.shut) {
                (void) shutdown(c->server_fd, SHUT_WR);
                c->up.shut = true;
        }
        if (c->down.eof && c->down.start == c->down.end && !c->down.shut) {
                (void) shutdown(c->client_fd, SHUT_WR);
                c->down.shut = true;
        }
        /* One request per connection: once the server's response is through, the connection is over,
         * whatever the client still sends. A tunnel ends when both directions have. */
        if (!c->connect)
                return c->down.shut;
        return c->up.shut && c->down.shut;
}

static void relay_step(Conn *c, bool client_side, uint32_t revents) {
        Proxy *p = c->p;
        bool cap = false, moved = false;
        size_t n;
        int r;

        /* A socket error: nothing more moves either way (and a level-triggered EPOLLERR would fire
         * again and again). */
        if (revents & EPOLLERR)
                return conn_end(c);
        if (client_side) {
                /* The absolute form reads the body's bytes and no more (one request per connection). */
                if ((revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c->up.eof &&
                    (!c->up_limited || c->up_remaining > 0)) {
                        uint64_t max = budget(p);

                        if (c->up_limited)
                                max = MIN(max, c->up_remaining);
                        r = relay_read(c, c->client_fd, &c->up, max, &n, &cap);
                        if (r < 0)
                                return conn_end(c);
                        if (r == 2)
                                c->up.eof = true;
                        if (r == 1) {
                                moved = true;
                                if (c->up_limited)
                                        c->up_remaining -= n;
                        }
                        if (cap)
                                return conn_cut(c, PROXY_REASON_BYTE_CAP);
                }
                if (revents & EPOLLOUT) {
                        r = relay_write(c->client_fd, &c->down, &c->bytes_down);
                        if (r < 0)
                                return conn_end(c);
                        moved = moved || r > 0;
                }
        } else {
                if ((revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c->down.eof) {
                        r = relay_read(c, c->server_fd, &c->down, budget(p), &n, &cap);
                        if (r < 0)
                                return conn_end(c);
                        if (r == 2)
                                c->down.eof = true;
                        moved = moved || r == 1;
                        if (cap)
                                return conn_cut(c, PROXY_REASON_BYTE_CAP);
                }
                if (revents & EPOLLOUT) {
                        r = relay_write(c->server_fd, &c->up, &c->bytes_up);
                        if (r < 0)
                                return conn_end(c);
                        moved = moved || r > 0;
                }
        }
        /* Move what just arrived on at once, without another trip through epoll. */
        if (moved) {
                c->last_activity = now_usec(CLOCK_MONOTONIC);
                if (relay_write(c->server_fd, &c->up, &c->bytes_up) < 0 ||
                    relay_write(c->client_fd, &c->down, &c->bytes_down) < 0)
                        return conn_end(c);
        }
        if (relay_done(c))
                return conn_end(c);
        conn_update(c);
}

/* The up direction's first bytes for the absolute form: the request in origin form, the client's
 * headers minus the hop-by-hop ones (RFC 9110 §7.6.1: Connection and those it names, Keep-Alive,
 * TE, Trailer, Transfer-Encoding, Upgrade) and every Proxy-* header, with Connection: close. */
static bool header_is_hop(const HttpHead *h, const HttpSpan *name) {
        static const char *const hop[] = {
                "connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade",
        };
        const HttpHeader *conn;

        if (name->n >= 6 && strncasecmp(name->p, "proxy-", 6) == 0)
                return true;
        for (size_t i = 0; i < ELEMENTSOF(hop); i++)
                if (name->n == strlen(hop[i]) && strncasecmp(name->p, hop[i], name->n) == 0)
                        return true;
        /* Every Connection header's comma-separated names. */
        for (size_t i = 0; i < h->n_headers; i++) {
                const char *v, *end;

                conn = h->headers + i;
                if (conn->name.n != 10 || strncasecmp(conn->name.p, "connection", 10) != 0)
                        continue;
                v = conn->value.p;
                end = v + conn->value.n;
                while (v < end) {
                        const char *tok, *comma = memchr(v, ',', (size_t) (end - v));
                        const char *stop = comma ? comma : end;

                        while (v < stop && (*v == ' ' || *v == '\t'))
                                v++;
                        tok = v;
                        while (stop > tok && (stop[-1] == ' ' || stop[-1] == '\t'))
                                stop--;
                        if ((size_t) (stop - tok) == name->n && strncasecmp(tok, name->p, name->n) == 0)
                                return true;
                        v = comma ? comma + 1 : end;
                }
        }
        return false;
}

static bool buf_put(RelayBuf *b, const void *p, size_t n) {
        if (n > b->size - b->end)
                return false;
        memcpy(b->data + b->end, p, n);
        b->end += n;
        return true;
}

static bool buf_puts(RelayBuf *b, const char *s) {
        return buf_put(b, s, strlen(s));
}

static bool build_forward_head(Conn *c) {
        const HttpHead *h = c->parsed;
        RelayBuf *b = &c->up;
        char line[64];

        if (!buf_put(b, h->method.p, h->method.n) || !buf_puts(b, " "))
                return false;
        if (h->path.n > 0) {
                if (!buf_put(b, h->path.p, h->path.n))
                        return false;
        } else if (!buf_puts(b, "/"))
                return false;
        if (h->has_query && (!buf_puts(b, "?") || !buf_put(b, h->query.p, h->query.n)))
                return false;
        if (!buf_puts(b, " HTTP/1.1\r\n"))
                return false;
        if (!http_head_header(h, "host")) {
                if (c->port == 80)
                        snprintf(line, sizeof(line), "\r\n");
                else
                        snprintf(line, sizeof(line), ":%u\r\n", (unsigned) c->port);
                if (!buf_puts(b, "Host: ") || !buf_puts(b, c->host) || !buf_puts(b, line))
                        return false;
        }
        for (size_t i = 0; i < h->n_headers; i++) {
                const HttpHeader *hd = h->headers + i;

                if (header_is_hop(h, &hd->name))
                        continue;
                if (!buf_put(b, hd->name.p, hd->name.n) || !buf_puts(b, ": ") ||
                    !buf_put(b, hd->value.p, hd->value.n) || !buf_puts(b, "\r\n"))
                        return false;
        }
        return buf_puts(b, "Connection: close\r\n\r\n");
}

static void conn_start_relay(Conn *c) {
        Proxy *p = c->p;
        size_t extra = c->head_len - c->parsed->head_len;

        /* The first buffers are not subject to RELAY_MEMORY_MAX: CONNECTIONS_MAX bounds them. */
        c->up.data = malloc(RELAY_BUF_MIN);
        c->down.data = malloc(RELAY_BUF_MIN);
        if (!c->up.data || !c->down.data)
                return conn_refuse(c, PROXY_REASON_CONNECT_FAILED, HTTP_HEAD_OK);
        c->up.size = c->down.size = RELAY_BUF_MIN;
        p->relay_memory += 2 * RELAY_BUF_MIN;
        if (!c->connect && !build_forward_head(c))
                return conn_refuse(c, PROXY_REASON_BAD_REQUEST, HTTP_HEAD_TOO_LARGE);
        c->state = CONN_RELAY;
        c->allowed = true;
        c->last_activity = now_usec(CLOCK_MONOTONIC);

        if (c->connect) {
                /* The client may have sent its first tunnel bytes (a TLS ClientHello) behind the head. */
                if (send(c->client_fd, connect_established, sizeof(connect_established) - 1,
                         MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t) (sizeof(connect_established) - 1))
                        return conn_end(c);
                if (extra > budget(p))
                        return conn_cut(c, PROXY_REASON_BYTE_CAP);
                buf_put(&c->up, c->head + c->parsed->head_len, extra);
                p->bytes_total += extra;
        } else {
                size_t head_n = c->up.end;

                if (head_n > budget(p))
                        return conn_cut(c, PROXY_REASON_BYTE_CAP);
                p->bytes_total += head_n;
                c->up_limited = true;
                c->up_remaining = c->parsed->has_content_length ? c->parsed->content_length : 0;
                extra = (size_t) MIN((uint64_t) extra, c->up_remaining);
                if (extra > budget(p))
                        return conn_cut(c, PROXY_REASON_BYTE_CAP);
                buf_put(&c->up, c->head + c->parsed->head_len, extra);
                p->bytes_total += extra;
                c->up_remaining -= extra;
        }
        (void) conn_set_timer(c, c->last_activity + p->idle_timeout);
        if (relay_write(c->server_fd, &c->up, &c->bytes_up) < 0)
                return conn_end(c);
        conn_update(c);
}

/* ---- connecting ------------------------------------------------------------------------------- */

static void conn_connect_next(Conn *c);

static void conn_connect_failed(Conn *c, bool timed_out) {
        c->last_timed_out = timed_out;
        c->server_source = sd_event_source_disable_unref(c->server_source);
        c->server_events = 0;
        c->server_fd = safe_close(c->server_fd);
        c->address[0] = 0;
        conn_connect_next(c);
}

static void conn_connect_next(Conn *c) {
        Proxy *p = c->p;
        int r;

        while (c->next_addr < c->n_addrs) {
                const struct sockaddr *sa = (const struct sockaddr *) &c->addrs[c->next_addr];
                socklen_t len = c->addr_lens[c->next_addr];
                const void *a;

                c->next_addr++;
                if (netaddr_is_internal(sa, len) && !cidr_list_match_sockaddr(p->permits, p->n_permits, sa, len)) {
                        continue;
                }
                a = sa->sa_family == AF_INET ? (const void *) &((const struct sockaddr_in *) sa)->sin_addr
                                             : (const void *) &((const struct sockaddr_in6 *) sa)->sin6_addr;
                if (!inet_ntop(sa->sa_family, a, c->address, sizeof(c->address)))
                        c->address[0] = 0;

                c->n_tried++;
                c->last_timed_out = false;
                c->server_fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
                if (c->server_fd < 0) {
                        c->address[0] = 0;
                        continue;
                }
                r = connect(c->server_fd, sa, len);
                if (r < 0 && errno != EINPROGRESS) {
                        c->server_fd = safe_close(c->server_fd);
                        c->address[0] = 0;
                        continue;
                }
                r = sd_event_add_io(p->event, &c->server_source, c->server_fd, EPOLLOUT, on_server, c);
                if (r < 0) {
                        c->server_fd = safe_close(c->server_fd);
                        c->address[0] = 0;
                        continue;
                }
                c->server_events = EPOLLOUT;
                c->state = CONN_CONNECTING;
                (void) conn_set_timer(c, now_usec(CLOCK_MONOTONIC) + p->connect_timeout);
                conn_update(c);
                return;
        }
        /* Only internal addresses: refused as such. Some tried: the last one's failure. */
        if (c->n_tried == 0)
                return conn_refuse(c, PROXY_REASON_INTERNAL_ADDRESS, HTTP_HEAD_OK);
        conn_refuse(c, c->last_timed_out ? PROXY_REASON_CONNECT_TIMEOUT : PROXY_REASON_CONNECT_FAILED, HTTP_HEAD_OK);
}

static void conn_connected(Conn *c) {
        int err = 0;
        socklen_t len = sizeof(err);

        if (getsockopt(c->server_fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                err = errno;
        if (err != 0)
                return conn_connect_failed(c, false);
        (void) setsockopt(c->server_fd, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int));
        conn_start_relay(c);
}

/* The addresses are known (from the table or DNS): judge and connect. */
static void conn_resolved(Conn *c) {
        if (c->n_addrs == 0)
                return conn_refuse(c, PROXY_REASON_NOT_RESOLVED, HTTP_HEAD_OK);
        if (budget(c->p) == 0)
                return conn_refuse(c, PROXY_REASON_BYTE_CAP, HTTP_HEAD_OK);
        /* A list made only of internal addresses is refused as such; a mixed list connects to the
         * public (or permitted) ones. */
        conn_connect_next(c);
}

static void add_address(Conn *c, const struct sockaddr *sa, size_t len) {
        if (c->n_addrs >= ADDRS_MAX || len > sizeof(struct sockaddr_storage))
                return;
        if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
                return;
        memcpy(&c->addrs[c->n_addrs], sa, len);
        if (sa->sa_family == AF_INET)
                ((struct sockaddr_in *) &c->addrs[c->n_addrs])->sin_port = htons(c->port);
        else
                ((struct sockaddr_in6 *) &c->addrs[c->n_addrs])->sin6_port = htons(c->port);
        c->addr_lens[c->n_addrs++] = (socklen_t) len;
}

static void on_addrinfo(void *arg, int status, int timeouts, struct ares_addrinfo *res) {
        DnsQuery *q = arg;
        Conn *c = q->conn;

        free(q);
        if (c) {
                c->query = NULL;
                if (status == ARES_SUCCESS && res)
                        for (struct ares_addrinfo_node *n = res->nodes; n; n = n->ai_next)
                                add_address(c, n->ai_addr, (size_t) n->ai_addrlen);
        }
        if (res)
                ares_freeaddrinfo(res);
        if (c && c->state == CONN_RESOLVING)
                conn_resolved(c);
}

static void dns_rearm(Proxy *p);

static void conn_resolve(Conn *c) {
        Proxy *p = c->p;
        struct ares_addrinfo_hints hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                                             .ai_flags = ARES_AI_NOSORT };
        bool in_table = false;

        for (size_t i = 0; i < p->n_hosts; i++)
                if (streq(p->hosts[i].name, c->host)) {
                        in_table = true;
                        add_address(c, (struct sockaddr *) &p->hosts[i].address, p->hosts[i].address_len);
                }
        if (in_table || !p->ares_ready)
                return conn_resolved(c);

        c->query = calloc(1, sizeof(DnsQuery));
        if (!c->query)
                return conn_refuse(c, PROXY_REASON_NOT_RESOLVED, HTTP_HEAD_OK);
        c->query->conn = c;
        c->state = CONN_RESOLVING;
        (void) sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);   /* c-ares has its own timeouts */
        conn_update(c);
        /* The callback may run before this returns (a name c-ares refuses at once): it then finds the
         * connection in CONN_RESOLVING and carries on from there; nothing here touches c after. */
        ares_getaddrinfo(p->ares, c->host, NULL, &hints, on_addrinfo, c->query);
        dns_rearm(p);
}

/* ---- the request head ------------------------------------------------------------------------- */

static void conn_head(Conn *c) {
        Proxy *p = c->p;
        static const HttpHeadLimits limits = { HEAD_MAX, HEAD_HEADERS_MAX, HEAD_LINE_MAX };
        HttpHeadError error;
        AllowlistVerdict v;
        int r;

        r = http_head_parse(c->head, c->head_len, &limits, c->parsed, &error);
        if (r == 0) {
                if (c->head_len >= HEAD_MAX)   /* the parser refuses a full buffer; never wait on one */
                        return conn_refuse(c, PROXY_REASON_BAD_REQUEST, HTTP_HEAD_TOO_LARGE);
                return conn_update(c);
        }
        if (r < 0)
                return conn_refuse(c, PROXY_REASON_BAD_REQUEST,
                                   r == -EBADMSG ? error.reason : HTTP_HEAD_BAD_REQUEST_LINE);

        memcpy(c->host, c->parsed->host, sizeof(c->host));
        c->port = c->parsed->port;
        c->connect = c->parsed->connect;
        memcpy(c->method, c->parsed->method.p, MIN(c->parsed->method.n, (size_t) PROXY_METHOD_MAX));
        c->method[MIN(c->parsed->method.n, (size_t) PROXY_METHOD_MAX)] = 0;

        v = allowlist_judge(p->allow, c->host, c->port);
        if (v == ALLOWLIST_HOST_DENIED)
                return conn_refuse(c, PROXY_REASON_NOT_ALLOWED, HTTP_HEAD_OK);
        if (v == ALLOWLIST_PORT_DENIED)
                return conn_refuse(c, PROXY_REASON_PORT_NOT_ALLOWED, HTTP_HEAD_OK);
        if (!c->connect && c->parsed->chunked)
                return conn_refuse(c, PROXY_REASON_CHUNKED_BODY, HTTP_HEAD_OK);
        conn_resolve(c);
}

static void head_read(Conn *c) {
        ssize_t k;

        k = recv(c->client_fd, c->head + c->head_len, HEAD_MAX - c->head_len, MSG_DONTWAIT);
        if (k < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return;
                return conn_refuse(c, PROXY_REASON_BAD_REQUEST, HTTP_HEAD_BAD_REQUEST_LINE);
        }
        if (k == 0)
                /* The client closed before its head was complete: a request that is not one. */
                return conn_refuse(c, PROXY_REASON_BAD_REQUEST, HTTP_HEAD_BAD_REQUEST_LINE);
        c->head_len += (size_t) k;
        conn_head(c);
}

/* ---- event sources ---------------------------------------------------------------------------- */

static int on_client(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Conn *c = userdata;

        if (c->state == CONN_HEAD)
                head_read(c);
        else if (c->state == CONN_RELAY)
                relay_step(c, true, revents);
        return 0;
}

static int on_server(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Conn *c = userdata;

        if (c->state == CONN_CONNECTING)
                conn_connected(c);
        else if (c->state == CONN_RELAY)
                relay_step(c, false, revents);
        return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Conn *c = userdata;
        Proxy *p = c->p;

        switch (c->state) {
        case CONN_HEAD:
                conn_refuse(c, PROXY_REASON_HEAD_TIMEOUT, HTTP_HEAD_OK);
                break;
        case CONN_CONNECTING:
                conn_connect_failed(c, true);
                break;
        case CONN_RELAY:
                if (now_usec(CLOCK_MONOTONIC) < c->last_activity + p->idle_timeout)
                        (void) conn_set_timer(c, c->last_activity + p->idle_timeout);
                else
                        conn_cut(c, PROXY_REASON_IDLE_TIMEOUT);
                break;
        case CONN_RESOLVING:
                break;
        }
        return 0;
}

static int conn_set_timer(Conn *c, uint64_t usec) {
        int r;

        r = sd_event_source_set_time(c->timer, usec);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
}

static int on_accept_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        Proxy *p = userdata;

        if (p->listen_source)
                (void) sd_event_source_set_enabled(p->listen_source, SD_EVENT_ON);
        return 0;
}

static int on_listen(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Proxy *p = userdata;

        /* A few per wakeup, so that a flood of connections does not starve the relays. */
        for (unsigned i = 0; i < 16; i++) {
                _cleanup_close_ int cfd = -EBADF;
                Conn *c;
                int r;

                cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (cfd < 0) {
                        if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
                                return 0;
                        /* Out of fds or memory: the connection stays in the backlog, and the listening
                         * socket would wake the loop at once again. Pause accepting for 100 ms. */
                        fprintf(stderr, "sandboxd-proxy: execution %s: accept: %s, pausing\n",
                                p->execution_id, strerror(errno));
                        (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                        if (p->accept_retry) {
                                (void) sd_event_source_set_time(p->accept_retry,
                                                                now_usec(CLOCK_MONOTONIC) + 100 * USEC_PER_MSEC);
                                (void) sd_event_source_set_enabled(p->accept_retry, SD_EVENT_ONESHOT);
                        } else
                                (void) sd_event_add_time(p->event, &p->accept_retry, CLOCK_MONOTONIC,
                                                         now_usec(CLOCK_MONOTONIC) + 100 * USEC_PER_MSEC, 0,
                                                         on_accept_retry, p);
                        return 0;
                }
                c = calloc(1, sizeof(Conn));
                if (!c) {
                        send_refusal(cfd, PROXY_REASON_CONNECTION_CAP, HTTP_HEAD_OK, "", 0);
                        continue;
                }
                c->p = p;
                c->client_fd = TAKE_FD(cfd);
                c->server_fd = -EBADF;
                c->started_at = now_usec(CLOCK_REALTIME);
                c->started_mono = now_usec(CLOCK_MONOTONIC);
                c->next = p->conns;
                if (p->conns)
                        p->conns->prev = c;
                p->conns = c;
                p->n_open++;

                if (p->n_open > p->max_connections) {
                        conn_refuse(c, PROXY_REASON_CONNECTION_CAP, HTTP_HEAD_OK);
                        continue;
                }
                c->parsed = malloc(sizeof(HttpHead));
                r = c->parsed ? sd_event_add_io(p->event, &c->client_source, c->client_fd, EPOLLIN, on_client, c)
                              : -ENOMEM;
                if (r >= 0)
                        r = sd_event_add_time(p->event, &c->timer, CLOCK_MONOTONIC,
                                              c->started_mono + p->head_timeout, 0, on_timer, c);
                if (r < 0) {
                        fprintf(stderr, "sandboxd-proxy: execution %s: cannot watch a connection: %s\n",
                                p->execution_id, strerror(-r));
                        conn_refuse(c, PROXY_REASON_CONNECTION_CAP, HTTP_HEAD_OK);
                        continue;
                }
                c->client_events = EPOLLIN;
                c->state = CONN_HEAD;
        }
        return 0;
}

/* ---- c-ares on sd-event ----------------------------------------------------------------------- */

static int on_dns_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        DnsWatch *w = userdata;
        Proxy *p = w->p;

        ares_process_fd(p->ares, revents & (EPOLLIN | EPOLLHUP | EPOLLERR) ? fd : ARES_SOCKET_BAD,
                        revents & EPOLLOUT ? fd : ARES_SOCKET_BAD);
        dns_rearm(p);
        return 0;
}

static int on_dns_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Proxy *p = userdata;

        ares_process_fd(p->ares, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
        dns_rearm(p);
        return 0;
}

static void dns_rearm(Proxy *p) {
        struct timeval tv, *t;

        if (!p->ares_ready || !p->dns_timer)
                return;
        t = ares_timeout(p->ares, NULL, &tv);
        if (!t) {
                (void) sd_event_source_set_enabled(p->dns_timer, SD_EVENT_OFF);
                return;
        }
        (void) sd_event_source_set_time(p->dns_timer, now_usec(CLOCK_MONOTONIC) + timeval_to_usec(t));
        (void) sd_event_source_set_enabled(p->dns_timer, SD_EVENT_ONESHOT);
}

static void dns_sock_state(void *data, ares_socket_t fd, int readable, int writable) {
        Proxy *p = data;
        DnsWatch **pw, *w;
        uint32_t events = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);

        for (pw = &p->dns_watches; *pw; pw = &(*pw)->next)
                if ((*pw)->fd == fd)
                        break;
        w = *pw;
        if (events == 0) {
                if (w) {
                        *pw = w->next;
                        sd_event_source_disable_unref(w->source);
                        free(w);
                }
                return;
        }
        if (w) {
                (void) sd_event_source_set_io_events(w->source, events);
                return;
        }
        w = calloc(1, sizeof(DnsWatch));
        if (!w)
                return;
        w->p = p;
        w->fd = fd;
        if (sd_event_add_io(p->event, &w->source, fd, events, on_dns_io, w) < 0) {
                free(w);
                return;
        }
        w->next = p->dns_watches;
        p->dns_watches = w;
}

static int dns_setup(Proxy *p) {
        struct ares_options o = {
                .flags = ARES_FLAG_NOSEARCH,          /* a name is looked up as the client gave it */
                .timeout = 2000,                      /* ms per try */
                .tries = 2,
                .lookups = (char *) "b",              /* DNS only: never the host's /etc/hosts */
                .sock_state_cb = dns_sock_state,
                .sock_state_cb_data = p,
        };
        int r;

        r = ares_library_init(ARES_LIB_INIT_ALL);
        if (r != ARES_SUCCESS)
                return -ENOMEM;
        r = ares_init_options(&p->ares, &o, ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES |
                              ARES_OPT_LOOKUPS | ARES_OPT_SOCK_STATE_CB);
        if (r != ARES_SUCCESS) {
                fprintf(stderr, "sandboxd-proxy: execution %s: c-ares: %s; names outside the --host table "
                        "will not resolve\n", p->execution_id, ares_strerror(r));
                ares_library_cleanup();
                return 0;
        }
        p->ares_ready = true;
        return sd_event_add_time(p->event, &p->dns_timer, CLOCK_MONOTONIC, 0, 0, on_dns_timer, p) < 0 ? -ENOMEM :
               sd_event_source_set_enabled(p->dns_timer, SD_EVENT_OFF);
}

/* ---- the end ---------------------------------------------------------------------------------- */

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Proxy *p = userdata;

        p->terminating = true;
        p->listen_source = sd_event_source_disable_unref(p->listen_source);
        while (p->conns) {
                Conn *c = p->conns;

                switch (c->state) {
                case CONN_HEAD:
                        conn_refuse(c, PROXY_REASON_BAD_REQUEST, HTTP_HEAD_BAD_REQUEST_LINE);
                        break;
                case CONN_RESOLVING:
                        conn_refuse(c, PROXY_REASON_NOT_RESOLVED, HTTP_HEAD_OK);
                        break;
                case CONN_CONNECTING:
                        conn_refuse(c, PROXY_REASON_CONNECT_FAILED, HTTP_HEAD_OK);
                        break;
                case CONN_RELAY:
                        conn_end(c);
                        break;
                }
        }
        fprintf(stderr, "sandboxd-proxy: execution %s: signal %u, exiting\n", p->execution_id, si->ssi_signo);
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void proxy_done(Proxy *p) {
        while (p->conns)
                conn_end(p->conns);
        if (p->ares_ready) {
                /* Calls the pending queries' callbacks with ARES_EDESTRUCTION: they free themselves. */
                ares_destroy(p->ares);
                ares_library_cleanup();
                p->ares_ready = false;
        }
        while (p->dns_watches) {
                DnsWatch *w = p->dns_watches;
                p->dns_watches = w->next;
                sd_event_source_disable_unref(w->source);
                free(w);
        }
        sd_event_source_disable_unref(p->dns_timer);
        sd_event_source_disable_unref(p->accept_retry);
        sd_event_source_disable_unref(p->listen_source);
        sd_event_source_disable_unref(p->sigterm);
        sd_event_source_disable_unref(p->sigint);
        sd_event_source_disable_unref(p->out_source);
        p->out_source = NULL;
        /* The last lines: block until the daemon has them (it reads until EOF). */
        if (p->out_len > 0) {
                int fl = fcntl(STDOUT_FILENO, F_GETFL);
                if (fl >= 0)
                        (void) fcntl(STDOUT_FILENO, F_SETFL, fl & ~O_NONBLOCK);
                (void) out_flush(p);
        }
        free(p->out);
        free(p->hosts);
        allowlist_free(p->allow);
        sd_event_unref(p->event);
        safe_close(p->listen_fd);
}

/* ---- arguments -------------------------------------------------------------------------------- */

static int parse_u64(const char *s, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;

        if (!s || !*s || (s[0] == '0' && s[1]))
                return -EINVAL;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -EINVAL;
                if (v > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*s - '0');
        }
        if (v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

static int parse_host(Proxy *p, const char *arg) {
        const char *eq = strchr(arg, '=');
        struct sockaddr_storage ss = {};
        HostEntry *e;
        socklen_t len;

        if (!eq || p->n_hosts >= HOSTS_MAX)
                return -EINVAL;
        e = p->hosts + p->n_hosts;
        if (allowlist_host_check(arg, (size_t) (eq - arg), e->name) != ALLOWLIST_OK)
                return -EINVAL;
        if (inet_pton(AF_INET, eq + 1, &((struct sockaddr_in *) &ss)->sin_addr) == 1) {
                ss.ss_family = AF_INET;
                len = sizeof(struct sockaddr_in);
        } else if (inet_pton(AF_INET6, eq + 1, &((struct sockaddr_in6 *) &ss)->sin6_addr) == 1) {
                ss.ss_family = AF_INET6;
                len = sizeof(struct sockaddr_in6);
        } else
                return -EINVAL;
        e->address = ss;
        e->address_len = len;
        p->n_hosts++;
        return 0;
}

static int usage_error(const char *arg, const char *why) {
        fprintf(stderr, "sandboxd-proxy: %s: '%s'\n", why, arg);
        return -EINVAL;
}

static int parse_argv(Proxy *p, int argc, char **argv) {
        const char *allow[ALLOWLIST_MAX_ENTRIES];
        size_t n_allow = 0, bad_index = 0;
        AllowlistReason bad = ALLOWLIST_OK;
        uint64_t v;
        int r;

        p->hosts = calloc(HOSTS_MAX, sizeof(HostEntry));
        if (!p->hosts)
                return -ENOMEM;
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i], *val;

                if ((val = startswith(a, "--execution-id="))) {
                        if (!id_is_valid(val, 128))
                                return usage_error(a, "bad execution id");
                        p->execution_id = val;
                } else if ((val = startswith(a, "--allow="))) {
                        if (n_allow >= ALLOWLIST_MAX_ENTRIES)
                                return usage_error(a, "more than " STRINGIFY(ALLOWLIST_MAX_ENTRIES) " --allow=");
                        allow[n_allow++] = val;
                } else if ((val = startswith(a, "--permit="))) {
                        CidrReason cr;

                        if (p->n_permits >= CIDR_LIST_MAX)
                                return usage_error(a, "more than " STRINGIFY(CIDR_LIST_MAX) " --permit=");
                        cr = cidr_parse(val, p->permits + p->n_permits);
                        if (cr != CIDR_OK)
                                return usage_error(a, cidr_reason_to_string(cr));
                        p->n_permits++;
                } else if ((val = startswith(a, "--host="))) {
                        if (p->n_hosts >= HOSTS_MAX)
                                return usage_error(a, "more than " STRINGIFY(HOSTS_MAX) " --host=");
                        if (parse_host(p, val) < 0)
                                return usage_error(a, "not NAME=ADDRESS");
                } else if ((val = startswith(a, "--max-bytes="))) {
                        if (parse_u64(val, UINT64_MAX / 2, &p->max_bytes) < 0)
                                return usage_error(a, "not a byte count");
                } else if ((val = startswith(a, "--max-connections="))) {
                        if (parse_u64(val, CONNECTIONS_MAX, &v) < 0 || v == 0)
                                return usage_error(a, "not 1-" STRINGIFY(CONNECTIONS_MAX));
                        p->max_connections = (unsigned) v;
                } else if ((val = startswith(a, "--connect-timeout-ms="))) {
                        if (parse_u64(val, TIMEOUT_MS_MAX, &v) < 0 || v == 0)
                                return usage_error(a, "not a timeout in ms");
                        p->connect_timeout = v * USEC_PER_MSEC;
                } else if ((val = startswith(a, "--idle-timeout-ms="))) {
                        if (parse_u64(val, TIMEOUT_MS_MAX, &v) < 0 || v == 0)
                                return usage_error(a, "not a timeout in ms");
                        p->idle_timeout = v * USEC_PER_MSEC;
                } else if ((val = startswith(a, "--head-timeout-ms="))) {
                        if (parse_u64(val, TIMEOUT_MS_MAX, &v) < 0 || v == 0)
                                return usage_error(a, "not a timeout in ms");
                        p->head_timeout = v * USEC_PER_MSEC;
                } else
                        return usage_error(a, "unknown argument");
        }
        if (!p->execution_id)
                return usage_error("", "--execution-id= is required");
        r = allowlist_parse(allow, n_allow, &p->allow, &bad_index, &bad);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return usage_error(allow[bad_index], allowlist_reason_to_string(bad));
        return 0;
}

int main(int argc, char **argv) {
        Proxy p = {
                .listen_fd = -EBADF,
                .max_connections = 32,
                .connect_timeout = 10 * USEC_PER_SEC,
                .idle_timeout = 60 * USEC_PER_SEC,
                .head_timeout = 10 * USEC_PER_SEC,
        };
        sigset_t mask;
        int r, fl;

        r = parse_argv(&p, argc, argv);
        if (r < 0) {
                if (r == -ENOMEM)
                        fprintf(stderr, "sandboxd-proxy: out of memory\n");
                p.execution_id = p.execution_id ?: "-";
                proxy_done(&p);
                return 2;
        }

        r = sd_listen_fds(true);
        if (r != 1) {
                fprintf(stderr, "sandboxd-proxy: execution %s: expected exactly one listening socket, got %d\n",
                        p.execution_id, r);
                proxy_done(&p);
                return 1;
        }
        p.listen_fd = SD_LISTEN_FDS_START;
        fl = fcntl(p.listen_fd, F_GETFL);
        if (fl < 0 || fcntl(p.listen_fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
            fcntl(p.listen_fd, F_SETFD, FD_CLOEXEC) < 0) {
                fprintf(stderr, "sandboxd-proxy: execution %s: listening socket: %s\n", p.execution_id,
                        strerror(errno));
                proxy_done(&p);
                return 1;
        }
        /* stdout: lines queued when the daemon reads slowly, never a blocked loop. */
        fl = fcntl(STDOUT_FILENO, F_GETFL);
        if (fl >= 0)
                (void) fcntl(STDOUT_FILENO, F_SETFL, fl | O_NONBLOCK);
        (void) signal(SIGPIPE, SIG_IGN);

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        r = sigprocmask(SIG_BLOCK, &mask, NULL) < 0 ? -errno : 0;
        if (r >= 0)
                r = sd_event_new(&p.event);
        if (r >= 0)
                r = sd_event_add_signal(p.event, &p.sigterm, SIGTERM, on_signal, &p);
        if (r >= 0)
                r = sd_event_add_signal(p.event, &p.sigint, SIGINT, on_signal, &p);
        if (r >= 0)
                r = sd_event_add_io(p.event, &p.listen_source, p.listen_fd, EPOLLIN, on_listen, &p);
        if (r >= 0) {
                r = sd_event_add_io(p.event, &p.out_source, STDOUT_FILENO, EPOLLOUT, on_stdout, &p);
                if (r >= 0)
                        r = sd_event_source_set_enabled(p.out_source, SD_EVENT_OFF);
                else if (r == -EPERM) {
                        /* stdout is a regular file (a test's): writes never block, nothing to watch. */
                        p.out_source = NULL;
                        r = 0;
                }
        }
        if (r >= 0)
                r = dns_setup(&p);
        if (r < 0) {
                fprintf(stderr, "sandboxd-proxy: execution %s: setup: %s\n", p.execution_id, strerror(-r));
                proxy_done(&p);
                return 1;
        }
        fprintf(stderr, "sandboxd-proxy: execution %s: serving, %zu allowlist entries, %zu permits, %zu hosts\n",
                p.execution_id, p.allow->n_entries, p.n_permits, p.n_hosts);

        r = sd_event_loop(p.event);
        proxy_done(&p);
        if (r < 0) {
                fprintf(stderr, "sandboxd-proxy: event loop: %s\n", strerror(-r));
                return 1;
        }
        return 0;
}
