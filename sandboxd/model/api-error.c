/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stddef.h>

#include "api-error.h"
#include "util.h"

#define HTTP API_TRANSPORT_HTTP
#define BUS API_TRANSPORT_BUS
#define BOTH (API_TRANSPORT_HTTP | API_TRANSPORT_BUS)
#define NAME(x) API_ERROR_BUS_PREFIX x

static const ApiErrorInfo table[_API_ERROR_MAX] = {
        [API_ERROR_INVALID_JSON] = { BOTH, 400, "invalid_json", NAME("InvalidRequest") },
        [API_ERROR_INVALID_REQUEST] = { BOTH, 400, "invalid_request", NAME("InvalidRequest") },
        /* D-Bus callers are identified by the bus and authorized by polkit, never by an API key. */
        [API_ERROR_UNAUTHORIZED] = { HTTP, 401, "unauthorized", NULL },
        [API_ERROR_FORBIDDEN] = { BOTH, 403, "forbidden", NAME("Forbidden") },
        [API_ERROR_NOT_FOUND] = { BOTH, 404, "not_found", NAME("NotFound") },
        /* Routes and media types are HTTP's; D-Bus has methods with signatures. */
        [API_ERROR_METHOD_NOT_ALLOWED] = { HTTP, 405, "method_not_allowed", NULL },
        [API_ERROR_CONFLICT] = { BOTH, 409, "conflict", NAME("Conflict") },
        [API_ERROR_TOO_LARGE] = { BOTH, 413, "too_large", NAME("TooLarge") },
        [API_ERROR_UNSUPPORTED_MEDIA_TYPE] = { HTTP, 415, "unsupported_media_type", NULL },
        [API_ERROR_UNSUPPORTED] = { BOTH, 422, "unsupported", NAME("Unsupported") },
        [API_ERROR_QUEUE_FULL] = { BOTH, 429, "queue_full", NAME("QueueFull") },
        [API_ERROR_CALLER_QUEUE_FULL] = { BOTH, 429, "caller_queue_full", NAME("CallerQueueFull") },
        [API_ERROR_TOO_MANY_CALLBACKS] = { BOTH, 429, "too_many_callbacks", NAME("TooManyCallbacks") },
        [API_ERROR_STORAGE_QUOTA_EXCEEDED] = { BOTH, 429, "storage_quota_exceeded",
                NAME("StorageQuotaExceeded") },
        [API_ERROR_TOO_MANY_SESSIONS] = { BOTH, 429, "too_many_sessions", NAME("TooManySessions") },
        [API_ERROR_SESSION_DISK_QUOTA_EXCEEDED] = { BOTH, 429, "session_disk_quota_exceeded",
                NAME("SessionDiskQuotaExceeded") },
        [API_ERROR_SESSION_DISK_FULL] = { BOTH, 429, "session_disk_full", NAME("SessionDiskFull") },
        [API_ERROR_INTERNAL] = { BOTH, 500, "internal", NAME("Internal") },
        [API_ERROR_STORE] = { BOTH, 503, "store_error", NAME("StoreError") },
        [API_ERROR_STORE_FULL] = { BOTH, 507, "store_error", NAME("StoreError") },
        [API_ERROR_SHUTTING_DOWN] = { BOTH, 503, "shutting_down", NAME("ShuttingDown") },
        /* Reload is a D-Bus method only (over HTTP there is none: systemctl reload sends SIGHUP). */
        [API_ERROR_INVALID_CONFIGURATION] = { BUS, 0, NULL, NAME("InvalidConfiguration") },
        /* polkit's interactive authentication is D-Bus's (HTTP callers present keys or SO_PEERCRED). */
        [API_ERROR_INTERACTIVE_AUTH_TIMED_OUT] = { BUS, 0, NULL, NAME("InteractiveAuthorizationTimedOut") },
        [API_ERROR_TOO_MANY_INTERACTIVE_AUTHS] = { BUS, 0, NULL, NAME("TooManyInteractiveAuthorizations") },
};

const ApiErrorInfo *api_error_info(ApiError e) {
        if (e < 0 || e >= _API_ERROR_MAX)
                return NULL;
        return &table[e];
}

static const ApiErrorInfo *http_row(ApiError e) {
        const ApiErrorInfo *i = api_error_info(e);

        return i && (i->transports & API_TRANSPORT_HTTP) ? i : &table[API_ERROR_INTERNAL];
}

unsigned api_error_http_status(ApiError e) {
        return http_row(e)->http_status;
}

const char *api_error_code(ApiError e) {
        return http_row(e)->code;
}

const char *api_error_bus_name(ApiError e) {
        const ApiErrorInfo *i = api_error_info(e);

        return (i && (i->transports & API_TRANSPORT_BUS) ? i : &table[API_ERROR_INTERNAL])->bus_name;
}
