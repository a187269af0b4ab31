/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Connection bookkeeping for http.c, without libmicrohttpd: counts of connections by who holds
 * them (ConnTable: a TCP client's address or a uid, for MaxConnectionsPerAddress= and
 * MaxConnectionsPerUser=), and the lingering close (LingerSet: sockets kept open after the HTTP
 * server let go of them, write side shut, drained within a byte and a time budget, so that closing
 * with unread input does not make the kernel reset the connection under the client's unread
 * answer). */

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#define CONN_KEY_SIZE 16
#define CONN_BUCKETS 256

typedef struct ConnCount ConnCount;

/* Chained buckets with a random seed: the keys (addresses) are the clients' to choose. */
typedef struct ConnTable {
        ConnCount *buckets[CONN_BUCKETS];
        uint64_t seed;
} ConnTable;

void conn_table_init(ConnTable *t);
unsigned conn_table_get(const ConnTable *t, const uint8_t key[static CONN_KEY_SIZE]);
/* One more for key; -ENOMEM. */
int conn_table_add(ConnTable *t, const uint8_t key[static CONN_KEY_SIZE]);
/* One less for key (the entry goes at zero). */
void conn_table_remove(ConnTable *t, const uint8_t key[static CONN_KEY_SIZE]);
void conn_table_clear(ConnTable *t);

/* The key of a TCP client: its IPv4 address (IPv4-mapped IPv6 ones too), or the /64 of its IPv6
 * address (what one IPv6 host is given). False for other families. */
bool conn_key_address(const struct sockaddr *sa, uint8_t key[static CONN_KEY_SIZE]);
/* The key of a uid on the unix socket (tagged: never equal to an address's). */
void conn_key_uid(uid_t uid, uint8_t key[static CONN_KEY_SIZE]);

typedef struct Linger Linger;

typedef struct LingerSet {
        sd_event *event;         /* not a reference: the owner's loop outlives the set */
        unsigned max;            /* sockets lingering at once; beyond: closed as they are */
        unsigned n;
        Linger *head;
} LingerSet;

/* Linger on a dup of fd (fd itself stays the caller's, who may close it right away): shut its
 * write side, read and drop at most bytes for at most usec, or until EOF or an error, then close.
 * Nothing happens (fd is closed as usual by its owner) when the set is full or on failure. */
void linger_start(LingerSet *s, int fd, uint64_t bytes, uint64_t usec);
/* Close every lingering socket now. */
void linger_set_clear(LingerSet *s);
