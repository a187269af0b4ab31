/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The errors both APIs answer with, one table: per error the HTTP API's code and status
 * (docs/http-api.md, "Errors") and the D-Bus API's error name (docs/dbus-api.md, "Errors"). Modules
 * say which error (an ApiError in RequestError, request.h); http.c and bus-api.c render it from here,
 * so adding an error is one row, and test-api-error checks every row and both documents against it.
 * The codes, statuses and names are a contract: never change one. Pure, no I/O. */

#include <errno.h>
#include <stdbool.h>

typedef enum ApiError {
        API_ERROR_INVALID_JSON,                 /* 400 invalid_json */
        API_ERROR_INVALID_REQUEST,              /* 400 invalid_request */
        API_ERROR_UNAUTHORIZED,                 /* 401 unauthorized (HTTP only: API keys) */
        API_ERROR_FORBIDDEN,                    /* 403 forbidden */
        API_ERROR_NOT_FOUND,                    /* 404 not_found */
        API_ERROR_METHOD_NOT_ALLOWED,           /* 405 method_not_allowed (HTTP only) */
        API_ERROR_CONFLICT,                     /* 409 conflict */
        API_ERROR_TOO_LARGE,                    /* 413 too_large */
        API_ERROR_UNSUPPORTED_MEDIA_TYPE,       /* 415 unsupported_media_type (HTTP only) */
        API_ERROR_UNSUPPORTED,                  /* 422 unsupported (reserved) */
        API_ERROR_QUEUE_FULL,                   /* 429 queue_full */
        API_ERROR_CALLER_QUEUE_FULL,            /* 429 caller_queue_full */
        API_ERROR_TOO_MANY_CALLBACKS,           /* 429 too_many_callbacks */
        API_ERROR_STORAGE_QUOTA_EXCEEDED,       /* 429 storage_quota_exceeded */
        API_ERROR_TOO_MANY_SESSIONS,            /* 429 too_many_sessions */
        API_ERROR_SESSION_DISK_QUOTA_EXCEEDED,  /* 429 session_disk_quota_exceeded */
        API_ERROR_SESSION_DISK_FULL,            /* 429 session_disk_full */
        API_ERROR_INTERNAL,                     /* 500 internal */
        API_ERROR_STORE,                        /* 503 store_error */
        API_ERROR_STORE_FULL,                   /* 507 store_error: the store's disk is full */
        API_ERROR_SHUTTING_DOWN,                /* 503 shutting_down */
        API_ERROR_INVALID_CONFIGURATION,        /* D-Bus only: Reload's configuration did not load */
        API_ERROR_INTERACTIVE_AUTH_TIMED_OUT,   /* D-Bus only: no answer at the authentication agent in time */
        API_ERROR_TOO_MANY_INTERACTIVE_AUTHS,   /* D-Bus only: a password needed over the interactive budget */
        _API_ERROR_MAX,
        _API_ERROR_INVALID = -EINVAL,
} ApiError;

/* Which API answers with an error: some exist on one side only (API keys, routes and media types are
 * HTTP's, Reload is D-Bus's). */
typedef enum ApiTransport {
        API_TRANSPORT_HTTP = 1 << 0,
        API_TRANSPORT_BUS = 1 << 1,
} ApiTransport;

typedef struct ApiErrorInfo {
        unsigned transports;     /* ApiTransport bits */
        unsigned http_status;    /* with API_TRANSPORT_HTTP, else 0 */
        const char *code;        /* with API_TRANSPORT_HTTP: "error.code" of the answer, else NULL */
        const char *bus_name;    /* with API_TRANSPORT_BUS: the D-Bus error name, else NULL */
} ApiErrorInfo;

#define API_ERROR_BUS_PREFIX "io.sandboxd.Sandbox1.Error."

/* The row, or NULL for a value outside the table. */
const ApiErrorInfo *api_error_info(ApiError e);

/* For the HTTP API: the status and code (500 "internal" for a value the HTTP API has no row for). */
unsigned api_error_http_status(ApiError e);
const char *api_error_code(ApiError e);
/* For the D-Bus API: the error name (…Error.Internal for a value the D-Bus API has no row for). */
const char *api_error_bus_name(ApiError e);
