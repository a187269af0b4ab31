/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the files of the PostgreSQL backend (store-pg*.c) share. Nothing outside them includes this. */

#include "store-internal.h"

/* store-pg-schema.c: pg_migrations[i] takes the schema from version i to i + 1, numbered like the
 * SQLite store's; STORE_SCHEMA_VERSION of them. */
extern const char *const pg_migrations[];
