/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* session show ID | session delete ID | session list, and a session's files: session cp | ls | rm */

#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandboxctl.h"
#include "sandboxctl-http.h"
#include "sandboxctl-json.h"
#include "sandboxctl-session.h"
#include "sandboxctl-table.h"
#include "sandboxctl-util.h"

/* session show ID | session delete ID | session list */
int verb_session(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        _cleanup_free_ char *path = NULL;
        struct {
                CtlString session_id, created_at, last_used_at, expires_at, active;
                CtlInteger disk_mb, size_bytes, executions, pending;
        } x = {};
        static const CtlField fields[] = {
                { "session_id", FIELD_STRING, offsetof(typeof(x), session_id), true },
                { "created_at", FIELD_STRING, offsetof(typeof(x), created_at), false },
                { "last_used_at", FIELD_STRING, offsetof(typeof(x), last_used_at), false },
                { "expires_at", FIELD_STRING, offsetof(typeof(x), expires_at), false },
                { "active", FIELD_STRING, offsetof(typeof(x), active), false },
                { "disk_mb", FIELD_INTEGER, offsetof(typeof(x), disk_mb), false },
                { "size_bytes", FIELD_INTEGER, offsetof(typeof(x), size_bytes), false },
                { "executions", FIELD_INTEGER, offsetof(typeof(x), executions), false },
                { "pending", FIELD_INTEGER, offsetof(typeof(x), pending), false },
        };
        bool show = streq(args[0], "show"), del = streq(args[0], "delete"), list = streq(args[0], "list");
        int r;

        if (streq(args[0], "cp") || streq(args[0], "ls") || streq(args[0], "rm"))
                return verb_session_files(args, n_args);
        if (n_args > 2) {
                (void) log_error_errno(-EINVAL, "Use 'session show ID', 'session delete ID' or 'session list'.");
                return EX_USAGE;
        }

        if ((!show && !del && !list) || (list != (n_args == 1))) {
                (void) log_error_errno(-EINVAL, "Use 'session show ID', 'session delete ID' or 'session list'.");
                return EX_USAGE;
        }
        if (!list && !id_is_valid_for_path(args[1])) {
                (void) log_error_errno(-EINVAL, "Invalid session ID '%s'.", args[1]);
                return EX_USAGE;
        }
        if (list ? !(path = strdup("/v1/sessions")) : asprintf(&path, "/v1/sessions/%s", args[1]) < 0) {
                path = NULL;
                (void) log_oom();
                return EX_OSERR;
        }
        r = http_call_ok(del ? "DELETE" : "GET", path, NULL, false, true, &answer);
        if (r != 0)
                return r;
        if (arg_json || list)
                return print_json(answer) < 0 ? EX_OSERR : EXIT_SUCCESS;
        if (del)
                return EXIT_SUCCESS;    /* like systemctl stop: quiet on success */

        r = json_dispatch(answer, "the session", fields, ELEMENTSOF(fields), &x);
        if (r < 0)
                return EX_UNAVAILABLE;
        print_string_field("Session", &x.session_id);
        if (x.size_bytes.set) {
                print_key("Disk");
                printf("%" PRIi64 " bytes used of %" PRIi64 " MB\n", x.size_bytes.value, x.disk_mb.value);
        }
        print_string_field("Created", &x.created_at);
        print_string_field("Last used", &x.last_used_at);
        print_string_field("Expires", &x.expires_at);
        if (x.executions.set) {
                print_key("Executions");
                printf("%" PRIi64 " finished, %" PRIi64 " queued or running\n", x.executions.value,
                       x.pending.value);
        }
        print_string_field("Running", &x.active);
        return EXIT_SUCCESS;
}

/* SESSION:PATH → "/v1/sessions/SESSION/files/PATH", every byte of PATH but [A-Za-z0-9._~/-]
 * percent-encoded (the daemon judges the decoded path: nothing here makes a path acceptable). */
static int files_url(const char *spec, bool need_path, char **ret) {
        _cleanup_free_ char *id = NULL, *url = NULL;
        const char *colon = strchr(spec, ':'), *p = colon ? colon + 1 : "";
        size_t n = 0;

        id = colon ? strndup(spec, (size_t) (colon - spec)) : strdup(spec);
        if (!id) {
                (void) log_oom();
                return EX_OSERR;
        }
        if (!id_is_valid_for_path(id)) {
                (void) log_error_errno(-EINVAL, "Invalid session ID '%s' (use SESSION:PATH).", id);
                return EX_USAGE;
        }
        if (need_path && isempty(p)) {
                (void) log_error_errno(-EINVAL, "'%s': a path in the session is needed (SESSION:PATH).", spec);
                return EX_USAGE;
        }
        url = malloc(strlen("/v1/sessions//files/") + strlen(id) + 3 * strlen(p) + 1);
        if (!url) {
                (void) log_oom();
                return EX_OSERR;
        }
        n = (size_t) sprintf(url, "/v1/sessions/%s/files/", id);
        for (const unsigned char *c = (const unsigned char *) p; *c; c++)
                if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                    strchr("._~/-", *c))
                        url[n++] = (char) *c;
                else
                        n += (size_t) sprintf(url + n, "%%%02X", *c);
        url[n] = 0;
        *ret = TAKE_PTR(url);
        return 0;
}

typedef struct CtlFileGet {
        CURL *curl;
        int fd;
        long status;
        CtlBuffer error;         /* the body of a non-200 answer */
        int write_errno;
} CtlFileGet;

static size_t file_get_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
        CtlFileGet *d = userdata;
        size_t n = size * nmemb;

        if (d->status == 0 && curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &d->status) != CURLE_OK)
                return 0;
        if (d->status != 200)
                return n > 65536 - MIN(d->error.size, (size_t) 65536) ? 0 : buffer_write(ptr, size, nmemb, &d->error);
        if (loop_write(d->fd, ptr, n) < 0) {
                d->write_errno = errno ?: EIO;
                return 0;
        }
        return n;
}

static size_t file_put_read(char *ptr, size_t size, size_t nmemb, void *userdata) {
        ssize_t n = read(*(int *) userdata, ptr, size * nmemb);

        return n < 0 ? CURL_READFUNC_ABORT : (size_t) n;
}

/* One GET (into fd) or PUT (from fd, its size) of a files URL; the exit status. */
static int files_transfer_one(const char *path, bool upload, int fd, uint64_t size) {
        _cleanup_(curl_easy_cleanupp) CURL *c = NULL;
        _cleanup_(curl_slist_free_allp) struct curl_slist *headers = NULL;
        _cleanup_free_ char *url = NULL;
        char errbuf[CURL_ERROR_SIZE] = "";
        CtlFileGet d = { .fd = upload ? -EBADF : fd };
        int in_fd = fd, r = 0;
        CURLcode cc;

        url = http_url(path);
        if (!url)
                return log_oom();
        c = curl_easy_init();
        d.curl = c;
        if (!c) {
                (void) log_error_errno(-EIO, "Failed to initialize libcurl.");
                return EX_OSERR;
        }
        if (upload) {
                /* The upload's answer is JSON, read as an error body unless the status is 201. */
                headers = curl_slist_append(NULL, "Expect:");
                if (!headers)
                        return log_oom();
        }
        if (http_setup(c, url, &headers, file_get_write, &d, errbuf,
                       arg_client_timeout_set ? arg_client_timeout_ms : 0) < 0 ||
            (upload && (curl_easy_setopt(c, CURLOPT_UPLOAD, 1L) != CURLE_OK ||
                        curl_easy_setopt(c, CURLOPT_READFUNCTION, file_put_read) != CURLE_OK ||
                        curl_easy_setopt(c, CURLOPT_READDATA, &in_fd) != CURLE_OK ||
                        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t) size) != CURLE_OK))) {
                (void) log_error_errno(-EIO, "Failed to configure libcurl.");
                return EX_OSERR;
        }
        cc = curl_easy_perform(c);
        if (d.status == 0)
                (void) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &d.status);
        if (upload && d.status == 201) {
                buffer_done(&d.error);
                return EXIT_SUCCESS;
        }
        if (d.write_errno)
        {
                (void) log_error_errno(-d.write_errno, "Cannot write: %m");
                r = EX_IOERR;
        }
        else if (cc != CURLE_OK && d.status == 0)
                r = log_curl_error(c, cc, &d.error, errbuf, 0);
        else if (d.status != 200 || upload) {
                _cleanup_(json_object_putp) json_object *answer = NULL;
                _cleanup_(json_tokener_freep) json_tokener *tok = json_tokener_new();

                if (tok && d.error.size > 0)
                        answer = json_tokener_parse_ex(tok, d.error.data, (int) d.error.size);
                r = log_http_error(d.status, answer, true);
        } else if (cc != CURLE_OK)
                r = log_curl_error(c, cc, &d.error, errbuf, 0);
        buffer_done(&d.error);
        return r;
}

/* files_transfer_one()'s negative errnos (out of memory, the transport) as exit statuses. */
static int files_transfer(const char *path, bool upload, int fd, uint64_t size) {
        int r = files_transfer_one(path, upload, fd, size);

        return r < 0 ? exit_status_for(r, EX_UNAVAILABLE) : r;
}

/* SESSION:PATH has a ':' before any '/'; a local name may hold a ':' only after one ("./a:b"). */
static bool is_session_spec(const char *a) {
        const char *colon = strchr(a, ':'), *slash = strchr(a, '/');

        return colon && (!slash || colon < slash);
}

static int session_cp(const char *from, const char *to) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        bool upload = !is_session_spec(from);
        struct stat st;
        int r;

        r = files_url(upload ? to : from, true, &path);
        if (r != 0)
                return r;
        if (upload) {
                fd = open(from, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0 || fstat(fd, &st) < 0) {
                        (void) log_error_errno(-errno, "Cannot open '%s': %m", from);
                        return EX_NOINPUT;
                }
                if (!S_ISREG(st.st_mode)) {
                        (void) log_error_errno(-EINVAL, "'%s' is not a regular file.", from);
                        return EX_USAGE;
                }
                return files_transfer(path, true, fd, (uint64_t) st.st_size);
        }
        if (streq(to, "-"))
                return files_transfer(path, false, STDOUT_FILENO, 0);
        fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0) {
                (void) log_error_errno(-errno, "Cannot create '%s': %m", to);
                return EX_CANTCREAT;
        }
        r = files_transfer(path, false, fd, 0);
        if (r != 0)
                (void) unlink(to);
        return r;
}

static int session_ls(const char *spec) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        _cleanup_free_ char *path = NULL;
        json_object *entries = NULL, *truncated = NULL;
        int r;

        r = files_url(spec, false, &path);
        if (r != 0)
                return r;
        r = http_call_ok("GET", path, NULL, false, true, &answer);
        if (r != 0)
                return r;
        if (arg_json)
                return print_json(answer) < 0 ? EX_OSERR : EXIT_SUCCESS;
        if (!json_object_object_get_ex(answer, "entries", &entries) ||
            !json_object_is_type(entries, json_type_array)) {
                (void) log_error_errno(-EBADMSG, "'%s' is a file, not a directory (use 'session cp').", spec);
                return EX_USAGE;
        }
        for (size_t i = 0; i < json_object_array_length(entries); i++) {
                json_object *e = json_object_array_get_idx(entries, i), *name = NULL, *type = NULL, *size = NULL;

                json_object_object_get_ex(e, "name", &name);
                json_object_object_get_ex(e, "type", &type);
                json_object_object_get_ex(e, "size", &size);
                printf("%-9s %12" PRIu64 " %s\n", strna(json_object_get_string(type)),
                       (uint64_t) json_object_get_int64(size), strna(json_object_get_string(name)));
        }
        if (json_object_object_get_ex(answer, "truncated", &truncated) && json_object_get_boolean(truncated))
                printf("... (more entries not listed)\n");
        return EXIT_SUCCESS;
}

static int session_rm(const char *spec) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        _cleanup_free_ char *path = NULL;
        int r;

        r = files_url(spec, true, &path);
        if (r != 0)
                return r;
        return http_call_ok("DELETE", path, NULL, false, true, &answer);
}

int verb_session_files(char **args, size_t n_args) {
        if (streq(args[0], "cp") && n_args == 3)
                return session_cp(args[1], args[2]);
        if (streq(args[0], "ls") && n_args == 2)
                return session_ls(args[1]);
        if (streq(args[0], "rm") && n_args == 2)
                return session_rm(args[1]);
        (void) log_error_errno(-EINVAL, "Use 'session cp LOCAL SESSION:PATH', 'session cp SESSION:PATH LOCAL|-', "
                                        "'session ls SESSION[:PATH]' or 'session rm SESSION:PATH'.");
        return EX_USAGE;
}
