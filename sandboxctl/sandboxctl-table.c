/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* "Key: value" lines and tables of escaped cells; see sandboxctl-table.h. */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sandboxctl-table.h"
#include "sandboxctl-util.h"

void print_key(const char *key) {
        /* Right-aligned like systemctl status; the width of the longest key, "Peak memory". */
        printf("%11s: ", key);
}

void print_string_field(const char *key, const CtlString *s) {
        if (!s->s)
                return;
        print_key(key);
        fputs_escaped(stdout, s->s, s->len, false);
        fputc('\n', stdout);
}

/* Untrusted text as one escaped table cell. */
static char *cell_escaped(const char *s, size_t n) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        fputs_escaped(f, s, n, false);
        if (fclose(f) != 0)
                return mfree(buf);
        return buf;
}

char *cell_string(const CtlString *s) {
        return s->s && s->len > 0 ? cell_escaped(s->s, s->len) : strdup("-");
}

char *cell_printf(const char *format, ...) {
        va_list ap;
        char *p;
        int k;

        va_start(ap, format);
        k = vasprintf(&p, format, ap);
        va_end(ap);
        return k < 0 ? NULL : p;
}

/* An RFC 3339 timestamp as local time, to the second. Anything else is shown as it came, escaped. */
char *cell_timestamp(const CtlString *s) {
        struct tm tm;
        int64_t usec;
        time_t t;
        char buf[64];

        if (!s->s || s->len == 0)
                return strdup("-");
        if (parse_timestamp(s, &usec) < 0)
                goto verbatim;
        t = (time_t) (usec / 1000000);
        if (!localtime_r(&t, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm) == 0)
                goto verbatim;
        return strdup(buf);

verbatim:
        return cell_escaped(s->s, s->len);
}

char *cell_duration(const CtlInteger *i) {
        if (!i->set)
                return strdup("-");
        if (i->value < 1000)
                return cell_printf("%" PRIi64 "ms", i->value);
        return cell_printf("%" PRIi64 ".%03" PRIi64 "s", i->value / 1000, i->value % 1000);
}

char *cell_memory(const CtlNumber *n) {
        return n->set ? cell_printf("%.1fM", n->value) : strdup("-");
}

/* Terminal columns of an escaped cell: every byte is printable, so count UTF-8 characters. */
static size_t cell_width(const char *s) {
        size_t w = 0;

        for (; *s; s++)
                if (((unsigned char) *s & 0xc0) != 0x80)
                        w++;
        return w;
}

static void print_cell(const char *s, size_t width, bool right, bool last) {
        size_t w = cell_width(s);

        if (right)
                for (size_t i = w; i < width; i++)
                        fputc(' ', stdout);
        fputs(s, stdout);
        if (!right && !last)
                for (size_t i = w; i < width; i++)
                        fputc(' ', stdout);
        if (!last)
                fputc(' ', stdout);
}

int table_init(CtlTable *t, const CtlColumn *columns, size_t n_columns, size_t n_rows) {
        *t = (CtlTable) {
                .columns = columns,
                .n_columns = n_columns,
        };
        if (n_rows > 0) {
                t->cells = calloc(n_rows, sizeof(char *) * n_columns);
                if (!t->cells)
                        return log_oom();
        }
        t->n_rows = n_rows;
        return 0;
}

void table_done(CtlTable *t) {
        if (t->cells)
                for (size_t i = 0; i < t->n_rows * t->n_columns; i++)
                        free(t->cells[i]);
        t->cells = mfree(t->cells);
        t->n_rows = 0;
}

char **table_row(CtlTable *t, size_t i) {
        return t->cells + i * t->n_columns;
}

/* The header and the rows, each column as wide as its widest cell or title; nothing without rows. */
int table_print(const CtlTable *t) {
        _cleanup_free_ size_t *width = NULL;

        if (t->n_rows == 0)
                return 0;

        width = calloc(t->n_columns, sizeof(size_t));
        if (!width)
                return log_oom();
        for (size_t c = 0; c < t->n_columns; c++)
                width[c] = cell_width(t->columns[c].title);
        for (size_t i = 0; i < t->n_rows * t->n_columns; i++) {
                if (!t->cells[i])
                        return log_oom();
                width[i % t->n_columns] = MAX(width[i % t->n_columns], cell_width(t->cells[i]));
        }

        for (size_t c = 0; c < t->n_columns; c++)
                print_cell(t->columns[c].title, width[c], t->columns[c].right, c == t->n_columns - 1);
        fputc('\n', stdout);
        for (size_t i = 0; i < t->n_rows; i++) {
                for (size_t c = 0; c < t->n_columns; c++)
                        print_cell(t->cells[i * t->n_columns + c], width[c], t->columns[c].right,
                                   c == t->n_columns - 1);
                fputc('\n', stdout);
        }
        return 0;
}
