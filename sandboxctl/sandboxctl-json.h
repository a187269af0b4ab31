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

typedef struct CtlString {
        const char *s; /* NULL: absent or null */
        size_t len;
} CtlString;

typedef struct CtlInteger {
        bool set;
        int64_t value;
} CtlInteger;

typedef struct CtlNumber {
        bool set;
        double value;
} CtlNumber;

typedef enum CtlFieldType {
        FIELD_STRING,
        FIELD_INTEGER,
        FIELD_NUMBER,
        FIELD_BOOLEAN,
} CtlFieldType;

typedef struct CtlField {
        const char *name;
        CtlFieldType type;
        size_t offset;
        bool required; /* present and not null */
} CtlField;

static inline void json_object_putp(json_object **j) {
        if (*j)
                json_object_put(*j);
}
static inline void json_tokener_freep(json_tokener **t) {
        if (*t)
                json_tokener_free(*t);
}

int json_dispatch(json_object *j, const char *what, const CtlField *fields, size_t n_fields, void *userdata);
int json_parse_strict(const char *data, size_t size, json_object **ret);
int json_add(json_object *obj, const char *key, json_object *val);
int print_json(json_object *j);
