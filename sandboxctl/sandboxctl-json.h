/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Answers: strict parsing and typed field access. An answer is parsed as exactly one JSON value
 * (json_parse_strict()), and the fields a command uses are copied out by a table of name, type and
 * offset (json_dispatch()), each type checked, so a peer that sends something else gets a clear
 * "Malformed answer" instead of a crash. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct String {
        const char *s; /* NULL: absent or null */
        size_t len;
} String;

typedef struct Integer {
        bool set;
        int64_t value;
} Integer;

typedef struct Number {
        bool set;
        double value;
} Number;

typedef enum FieldType {
        FIELD_STRING,
        FIELD_INTEGER,
        FIELD_NUMBER,
        FIELD_BOOLEAN,
} FieldType;

typedef struct Field {
        const char *name;
        FieldType type;
        size_t offset;
        bool required; /* present and not null */
} Field;

static inline void json_object_putp(json_object **j) {
        if (*j)
                json_object_put(*j);
}
static inline void json_tokener_freep(json_tokener **t) {
        if (*t)
                json_tokener_free(*t);
}

int json_dispatch(json_object *j, const char *what, const Field *fields, size_t n_fields, void *userdata);
int json_parse_strict(const char *data, size_t size, json_object **ret);
int json_add(json_object *obj, const char *key, json_object *val);
int print_json(json_object *j);
