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
void print_string_field(const char *key, const CtlString *s);

/* Cells are allocated; NULL is a failed allocation, which table_print() reports. */
char *cell_string(const CtlString *s);
char *cell_printf(const char *format, ...) _printf_(1, 2);
char *cell_timestamp(const CtlString *s);
char *cell_duration(const CtlInteger *i);
char *cell_memory(const CtlNumber *n);

typedef struct CtlColumn {
        const char *title;
        bool right;
} CtlColumn;

/* n_rows × n_columns escaped cells, row by row; a cell left NULL is a failed allocation. */
typedef struct CtlTable {
        const CtlColumn *columns;
        size_t n_columns, n_rows;
        char **cells;
} CtlTable;

int table_init(CtlTable *t, const CtlColumn *columns, size_t n_columns, size_t n_rows);
void table_done(CtlTable *t);
char **table_row(CtlTable *t, size_t i);
int table_print(const CtlTable *t);
