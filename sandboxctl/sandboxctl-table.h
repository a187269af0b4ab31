/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The human-readable views: "Key: value" lines (status, session) and tables of escaped cells, each
 * column as wide as its widest cell (list, top). Every cell is escaped text: what the daemon sends
 * comes from untrusted code and must not drive the terminal. */

#include <stdbool.h>
#include <stddef.h>

#include "sandboxctl-json.h"
#include "util.h"

void print_key(const char *key);
void print_string_field(const char *key, const String *s);

/* Cells are allocated; NULL is a failed allocation, which table_print() reports. */
char *cell_string(const String *s);
char *cell_printf(const char *format, ...) _printf_(1, 2);
char *cell_timestamp(const String *s);
char *cell_duration(const Integer *i);
char *cell_memory(const Number *n);

typedef struct Column {
        const char *title;
        bool right;
} Column;

/* n_rows × n_columns escaped cells, row by row; a cell left NULL is a failed allocation. */
typedef struct Table {
        const Column *columns;
        size_t n_columns, n_rows;
        char **cells;
} Table;

int table_init(Table *t, const Column *columns, size_t n_columns, size_t n_rows);
void table_done(Table *t);
char **table_row(Table *t, size_t i);
int table_print(const Table *t);
