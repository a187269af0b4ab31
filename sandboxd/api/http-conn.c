/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http-conn.h"
#include "time-util.h"
#include "util.h"

/* Keys are tagged ('4', '6', 'u') so the kinds never meet. */
struct ConnCount {
        uint8_t key[CONN_KEY_SIZE];
        unsigned n;
        struct ConnCount *next;
};

/* A closed connection's socket (a dup of it), write side shut, read and dropped until the budgets
 * are spent. */
struct Linger {
        LingerSet *set;
        int fd;
        uint64_t left;           /* bytes still to discard */
        sd_event_source *io, *timer;
        struct Linger *prev, *next;
};

void conn_table_init(ConnTable *t) {
        *t = (ConnTable) {};
        if (getrandom(&t->seed, sizeof(t->seed), GRND_NONBLOCK) != sizeof(t->seed))
                t->seed = (uint64_t) time(NULL) ^ ((uint64_t) getpid() << 32);
}

static size_t conn_table_hash(const ConnTable *t, const uint8_t key[static CONN_KEY_SIZE]) {
        uint64_t x = t->seed ^ UINT64_C(0xcbf29ce484222325);

        for (size_t i = 0; i < CONN_KEY_SIZE; i++) {
                x ^= key[i];
                x *= UINT64_C(0x100000001b3);
        }
        x ^= x >> 32;
        x *= UINT64_C(0x9e3779b97f4a7c15);
        return (size_t) (x >> 56) % CONN_BUCKETS;
}

static ConnCount *conn_table_find(const ConnTable *t, const uint8_t key[static CONN_KEY_SIZE]) {
        for (ConnCount *e = t->buckets[conn_table_hash(t, key)]; e; e = e->next)
                if (memcmp(e->key, key, CONN_KEY_SIZE) == 0)
                        return e;
        return NULL;
}

unsigned conn_table_get(const ConnTable *t, const uint8_t key[static CONN_KEY_SIZE]) {
        ConnCount *e = conn_table_find(t, key);

        return e ? e->n : 0;
}

int conn_table_add(ConnTable *t, const uint8_t key[static CONN_KEY_SIZE]) {
        ConnCount *e = conn_table_find(t, key);
        size_t b;

        if (e) {
                e->n++;
                return 0;
        }
        e = calloc(1, sizeof(ConnCount));
        if (!e)
                return -ENOMEM;
        memcpy(e->key, key, CONN_KEY_SIZE);
        e->n = 1;
        b = conn_table_hash(t, key);
        e->next = t->buckets[b];
        t->buckets[b] = e;
        return 0;
}

void conn_table_remove(ConnTable *t, const uint8_t key[static CONN_KEY_SIZE]) {
        for (ConnCount **p = &t->buckets[conn_table_hash(t, key)]; *p; p = &(*p)->next) {
                ConnCount *e = *p;

                if (memcmp(e->key, key, CONN_KEY_SIZE) != 0)
                        continue;
                if (--e->n == 0) {
                        *p = e->next;
                        free(e);
                }
                return;
        }
}

void conn_table_clear(ConnTable *t) {
        for (size_t i = 0; i < CONN_BUCKETS; i++)
                while (t->buckets[i]) {
                        ConnCount *e = t->buckets[i];

                        t->buckets[i] = e->next;
                        free(e);
                }
}

bool conn_key_address(const struct sockaddr *sa, uint8_t key[static CONN_KEY_SIZE]) {
        memset(key, 0, CONN_KEY_SIZE);
        if (!sa)
                return false;
        if (sa->sa_family == AF_INET) {
                key[0] = '4';
                memcpy(key + 1, &((const struct sockaddr_in *) sa)->sin_addr, 4);
                return true;
        }
        if (sa->sa_family == AF_INET6) {
                const struct in6_addr *a = &((const struct sockaddr_in6 *) sa)->sin6_addr;

                if (IN6_IS_ADDR_V4MAPPED(a)) {
                        key[0] = '4';
                        memcpy(key + 1, a->s6_addr + 12, 4);
                } else {
                        key[0] = '6';
                        memcpy(key + 1, a->s6_addr, 8);
                }
                return true;
        }
        return false;
}

void conn_key_uid(uid_t uid, uint8_t key[static CONN_KEY_SIZE]) {
        memset(key, 0, CONN_KEY_SIZE);
        key[0] = 'u';
        memcpy(key + 1, &uid, sizeof(uid));
}

static void linger_free(Linger *g) {
        LingerSet *s = g->set;

        if (g->prev)
                g->prev->next = g->next;
        else
                s->head = g->next;
        if (g->next)
                g->next->prev = g->prev;
        s->n--;
        sd_event_source_disable_unref(g->io);
        sd_event_source_disable_unref(g->timer);
        safe_close(g->fd);
        free(g);
}

static int on_linger_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Linger *g = userdata;
        char buf[16384];

        /* At most 16 reads per wakeup (the loop serves everyone else too); level-triggered, so the
         * rest comes on the next iteration. */
        for (unsigned i = 0; i < 16; i++) {
                ssize_t n = recv(fd, buf, (size_t) MIN((uint64_t) sizeof(buf), g->left), MSG_DONTWAIT);

                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return 0;
                if (n <= 0 || (uint64_t) n >= g->left) {
                        /* EOF (the client read its answer and closed), an error, or the budget spent
                         * (closing now may reset: the client sends more than it was ever allowed). */
                        linger_free(g);
                        return 0;
                }
                g->left -= (uint64_t) n;
        }
        return 0;
}

static int on_linger_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        linger_free(userdata);
        return 0;
}

/* libmicrohttpd 0.9.75, whose sockets these are (http.c), sets no SO_LINGER (which would reset on
 * close by itself); it shuts the write side when it marks a connection closed (after the answer),
 * and removes the fd from its epoll set before close(), so the socket our dup keeps alive sends it
 * no events. */
void linger_start(LingerSet *s, int fd, uint64_t bytes, uint64_t usec) {
        Linger *g;
        int r;

        if (s->n >= s->max || bytes == 0)
                return;
        g = calloc(1, sizeof(Linger));
        if (!g)
                return;
        g->set = s;
        g->left = bytes;
        g->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (g->fd < 0) {
                free(g);
                return;
        }
        g->next = s->head;
        if (g->next)
                g->next->prev = g;
        s->head = g;
        s->n++;

        /* Shut by the server already (after the answer), as a rule; again, in case it was not. */
        (void) shutdown(g->fd, SHUT_WR);
        r = sd_event_add_io(s->event, &g->io, g->fd, EPOLLIN | EPOLLRDHUP, on_linger_io, g);
        if (r >= 0)
                r = sd_event_add_time_relative(s->event, &g->timer, CLOCK_MONOTONIC, usec, USEC_PER_SEC / 10,
                                               on_linger_timer, g);
        if (r < 0)
                linger_free(g);
}

void linger_set_clear(LingerSet *s) {
        while (s->head)
                linger_free(s->head);
}
