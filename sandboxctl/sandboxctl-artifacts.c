/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* artifacts ID [--get=PATH [--dest=DIR | -o FILE] | --all [--dest=DIR]] */

#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandboxctl.h"
#include "sandboxctl-artifacts.h"
#include "sandboxctl-http.h"
#include "sandboxctl-json.h"
#include "sandboxctl-util.h"

typedef struct CtlArtifact {
        CtlString path, mime_type, sha256, url;
        CtlInteger size;
} CtlArtifact;

static int artifact_parse(json_object *j, CtlArtifact *ret) {
        static const CtlField fields[] = {
                { "path", FIELD_STRING, offsetof(CtlArtifact, path), true },
                { "size", FIELD_INTEGER, offsetof(CtlArtifact, size), true },
                { "mime_type", FIELD_STRING, offsetof(CtlArtifact, mime_type), false },
                { "sha256", FIELD_STRING, offsetof(CtlArtifact, sha256), true },
                { "url", FIELD_STRING, offsetof(CtlArtifact, url), false },
        };
        CtlArtifact a = {};
        int r;

        r = json_dispatch(j, "an artifact", fields, ELEMENTSOF(fields), &a);
        if (r < 0)
                return r;
        if (a.size.value < 0 || a.sha256.len != 64 || !is_lower_hex(a.sha256.s, 64) ||
            strlen(a.path.s) != a.path.len)
                return log_error_errno(-EBADMSG, "Malformed answer from sandboxd: an artifact's size, sha256 or "
                                       "path is invalid.");
        /* The URL is fetched from the same socket: only a path of the daemon's own, nothing that
         * would make libcurl go elsewhere. */
        if (a.url.s && (!startswith(a.url.s, "/v1/executions/") || strlen(a.url.s) != a.url.len ||
                        strpbrk(a.url.s, " \t\r\n#")))
                return log_error_errno(-EBADMSG, "Malformed answer from sandboxd: an artifact's url is invalid.");
        *ret = a;
        return 0;
}

/* A relative path that stays below the destination: no absolute path, no empty, "." or ".."
 * component, no control characters. The daemon only lists such paths; we check anyway. */
static bool artifact_path_is_safe(const char *p) {
        const char *c = p;

        if (isempty(p) || p[0] == '/')
                return false;
        for (const unsigned char *s = (const unsigned char *) p; *s; s++)
                if (*s < 0x20 || *s == 0x7f)
                        return false;
        for (;;) {
                size_t n = strcspn(c, "/");

                if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (!c[n])
                        return true;
                c += n + 1;
        }
}

/* Create path below dir_fd: the directories on the way (0755, never through a symlink), then the file
 * itself with O_EXCL|O_NOFOLLOW (nothing existing is overwritten, no symlink followed). Returns the
 * fd, and in *ret_parent_fd the directory it is in (for unlinking it on failure) and *ret_name its
 * last component. */
static int create_below(int dir_fd, const char *path, int *ret_parent_fd, const char **ret_name) {
        _cleanup_close_ int cur = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
        _cleanup_free_ char *copy = strdup(path);
        char *c, *slash;
        int fd;

        if (cur < 0)
                return -errno;
        if (!copy)
                return -ENOMEM;
        for (c = copy; (slash = strchr(c, '/')); c = slash + 1) {
                int next;

                *slash = 0;
                if (mkdirat(cur, c, 0755) < 0 && errno != EEXIST)
                        return -errno;
                next = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return -errno;
                safe_close(cur);
                cur = next;
        }
        fd = openat(cur, c, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                return -errno;
        *ret_name = path + (c - copy);
        *ret_parent_fd = TAKE_FD(cur);
        return fd;
}

typedef struct CtlDownload {
        CURL *curl;
        int fd;
        long status;
        uint64_t bytes, max;
        EVP_MD_CTX *sha;
        CtlBuffer error;         /* the body of a non-200 answer */
        int write_errno;
} CtlDownload;

static size_t download_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
        CtlDownload *d = userdata;
        size_t n = size * nmemb;

        if (d->status == 0 && curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &d->status) != CURLE_OK)
                return 0;
        if (d->status != 200)
                return n > 65536 - MIN(d->error.size, (size_t) 65536) ? 0 : buffer_write(ptr, size, nmemb, &d->error);
        if (n > d->max - d->bytes) {
                d->write_errno = EFBIG;
                return 0;
        }
        if (loop_write(d->fd, ptr, n) < 0) {
                d->write_errno = errno ?: EIO;
                return 0;
        }
        if (EVP_DigestUpdate(d->sha, ptr, n) != 1) {
                d->write_errno = EIO;
                return 0;
        }
        d->bytes += n;
        return n;
}

/* GET the artifact's signed URL into fd, and check that what came is what the listing promised. */
static int download_artifact(const CtlArtifact *a, int fd) {
        _cleanup_(curl_easy_cleanupp) CURL *c = NULL;
        _cleanup_free_ char *url = NULL;
        char errbuf[CURL_ERROR_SIZE] = "", hex[65];
        uint8_t md[EVP_MAX_MD_SIZE];
        unsigned md_len = 0;
        CtlDownload d = { .fd = fd, .max = (uint64_t) a->size.value };
        _cleanup_(curl_slist_free_allp) struct curl_slist *headers = NULL;
        CURLcode cc;
        int r = 0;

        if (!a->url.s)
                return log_error_errno(-EBADMSG, "sandboxd gave no URL for '%s'.", a->path.s);
        url = http_url(a->url.s);
        if (!url)
                return log_oom();
        c = curl_easy_init();
        d.curl = c;
        d.sha = EVP_MD_CTX_new();
        if (!c || !d.sha || EVP_DigestInit_ex(d.sha, EVP_sha256(), NULL) != 1) {
                EVP_MD_CTX_free(d.sha);
                return log_error_errno(-EIO, "Failed to initialize libcurl or SHA-256.");
        }
        if (http_setup(c, url, &headers, download_write, &d, errbuf, arg_client_timeout_set ? arg_client_timeout_ms : 0) < 0) {
                EVP_MD_CTX_free(d.sha);
                return log_error_errno(-EIO, "Failed to configure libcurl.");
        }
        cc = curl_easy_perform(c);
        if (d.status == 0)
                (void) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &d.status);
        if (d.write_errno == EFBIG)
                r = log_error_errno(-EBADMSG, "'%s': sandboxd sent more than the %" PRIi64 " bytes listed.",
                                    a->path.s, a->size.value);
        else if (d.write_errno)
                r = log_error_errno(-d.write_errno, "'%s': cannot write: %m", a->path.s);
        else if (cc != CURLE_OK)
                r = log_curl_error(c, cc, &d.error, errbuf, 0);
        else if (d.status != 200) {
                _cleanup_(json_object_putp) json_object *answer = NULL;

                _cleanup_(json_tokener_freep) json_tokener *tok = json_tokener_new();

                if (tok && d.error.size > 0)
                        answer = json_tokener_parse_ex(tok, d.error.data, (int) d.error.size);
                (void) log_http_error(d.status, answer, true);
                r = -ENOENT;
        } else if (d.bytes != (uint64_t) a->size.value)
                r = log_error_errno(-EBADMSG, "'%s': got %" PRIu64 " bytes, %" PRIi64 " were listed.", a->path.s,
                                    d.bytes, a->size.value);
        if (r >= 0) {
                if (EVP_DigestFinal_ex(d.sha, md, &md_len) != 1 || md_len != 32)
                        r = log_error_errno(-EIO, "SHA-256 failed.");
                for (unsigned i = 0; r >= 0 && i < 32; i++)
                        sprintf(hex + 2 * i, "%02x", md[i]);
                if (r >= 0 && !streq(hex, a->sha256.s))
                        r = log_error_errno(-EBADMSG, "'%s': the content does not match its sha256.", a->path.s);
        }
        EVP_MD_CTX_free(d.sha);
        buffer_done(&d.error);
        return r;
}

/* Download one artifact to -o FILE ("-": standard output) or below --dest DIR (default: the
 * current directory), at its relative path. Returns the exit status. */
static int artifact_fetch(const CtlArtifact *a, int dest_fd) {
        _cleanup_close_ int fd = -EBADF, parent_fd = -EBADF;
        const char *name = NULL;
        int r;

        if (!artifact_path_is_safe(a->path.s)) {
                (void) log_error_errno(-EBADMSG, "Refusing artifact path '%s': not a plain relative path.", a->path.s);
                return EX_UNAVAILABLE;
        }
        if (arg_output && streq(arg_output, "-")) {
                r = download_artifact(a, STDOUT_FILENO);
                return r < 0 ? (r == -ENOENT ? EXIT_NOT_FOUND : exit_status_for(r, EX_UNAVAILABLE)) : 0;
        }
        if (arg_output) {
                fd = open(arg_output, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
                if (fd < 0)
                        fd = -errno;
        } else
                fd = create_below(dest_fd, a->path.s, &parent_fd, &name);
        if (fd < 0) {
                (void) log_error_errno(fd, "Cannot create '%s': %m", arg_output ?: a->path.s);
                return EX_CANTCREAT;
        }
        r = download_artifact(a, fd);
        if (r < 0) {
                /* Nothing half-written stays behind. */
                if (arg_output)
                        (void) unlink(arg_output);
                else
                        (void) unlinkat(parent_fd, name, 0);
                return r == -ENOENT ? EXIT_NOT_FOUND : exit_status_for(r, EX_UNAVAILABLE);
        }
        if (fsync(fd) < 0 && errno != EINVAL) {
                (void) log_error_errno(-errno, "Cannot write '%s': %m", arg_output ?: a->path.s);
                return EX_CANTCREAT;
        }
        if (!arg_json && !arg_output)
                fprintf(stderr, "%s\n", a->path.s);
        return 0;
}

static int artifacts_print(json_object *list, json_object *skipped, CtlInteger skipped_total) {
        size_t n = list ? json_object_array_length(list) : 0;

        if (n == 0)
                printf("No artifacts.\n");
        else
                printf("%12s  %-24s  %s\n", "SIZE", "TYPE", "PATH");
        for (size_t i = 0; i < n; i++) {
                CtlArtifact a;

                if (artifact_parse(json_object_array_get_idx(list, i), &a) < 0)
                        return -EBADMSG;
                printf("%12" PRIi64 "  %-24s  ", a.size.value, a.mime_type.s ?: "-");
                fputs_escaped(stdout, a.path.s, a.path.len, false);
                fputc('\n', stdout);
        }
        if (skipped_total.set && skipped_total.value > 0) {
                size_t k = skipped ? json_object_array_length(skipped) : 0;

                printf("\nSkipped: %" PRIi64 "\n", skipped_total.value);
                for (size_t i = 0; i < k; i++) {
                        struct {
                                CtlString path, reason;
                        } s = {};
                        static const CtlField fields[] = {
                                { "path", FIELD_STRING, offsetof(typeof(s), path), true },
                                { "reason", FIELD_STRING, offsetof(typeof(s), reason), true },
                        };

                        if (json_dispatch(json_object_array_get_idx(skipped, i), "a skipped artifact", fields,
                                          ELEMENTSOF(fields), &s) < 0)
                                return -EBADMSG;
                        printf("  %-16s  ", s.reason.s);
                        fputs_escaped(stdout, s.path.s, s.path.len, false);
                        fputc('\n', stdout);
                }
                if ((int64_t) k < skipped_total.value)
                        printf("  ... and %" PRIi64 " more\n", skipped_total.value - (int64_t) k);
        }
        return flush_stdout();
}

int verb_artifacts(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int dest_fd = -EBADF;
        json_object *list = NULL, *skipped = NULL;
        struct {
                CtlString status;
                CtlInteger skipped_total;
        } h = {};
        static const CtlField fields[] = {
                { "status", FIELD_STRING, offsetof(typeof(h), status), true },
                { "artifacts_skipped_total", FIELD_INTEGER, offsetof(typeof(h), skipped_total), false },
        };
        size_t n, fetched = 0;
        int r;

        if (!id_is_valid_for_path(args[0])) {
                (void) log_error_errno(-EINVAL, "Invalid execution ID '%s'.", args[0]);
                return EX_USAGE;
        }
        if ((arg_get || arg_all) && !!arg_get == arg_all) {
                (void) log_error_errno(-EINVAL, "Use either --get=PATH or --all, not both.");
                return EX_USAGE;
        }
        if ((arg_dest || arg_output) && !arg_get && !arg_all) {
                (void) log_error_errno(-EINVAL, "--dest and -o/--output need --get=PATH or --all.");
                return EX_USAGE;
        }
        if (arg_output && (arg_all || arg_dest)) {
                (void) log_error_errno(-EINVAL, "-o/--output takes one artifact (--get=PATH), without --dest.");
                return EX_USAGE;
        }
        if (arg_get && !artifact_path_is_safe(arg_get)) {
                (void) log_error_errno(-EINVAL, "--get: '%s' is not a plain relative path.", arg_get);
                return EX_USAGE;
        }
        if ((arg_get || arg_all) && !arg_output) {
                dest_fd = open(arg_dest ?: ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dest_fd < 0) {
                        (void) log_error_errno(-errno, "Cannot open the destination directory '%s': %m", arg_dest ?: ".");
                        return EX_CANTCREAT;
                }
        }

        if (asprintf(&path, "/v1/executions/%s/artifacts", args[0]) < 0) {
                path = NULL;
                (void) log_oom();
                return EX_OSERR;
        }
        r = http_call_ok("GET", path, NULL, false, true, &answer);
        if (r != 0)
                return r;
        r = json_dispatch(answer, "the artifact list", fields, ELEMENTSOF(fields), &h);
        if (r < 0)
                return EX_UNAVAILABLE;
        if ((json_object_object_get_ex(answer, "artifacts", &list) && list &&
             !json_object_is_type(list, json_type_array)) ||
            (json_object_object_get_ex(answer, "artifacts_skipped", &skipped) && skipped &&
             !json_object_is_type(skipped, json_type_array))) {
                (void) log_error_errno(-EBADMSG, "Malformed answer from sandboxd: 'artifacts' is not a list.");
                return EX_UNAVAILABLE;
        }
        if (!list) {
                (void) log_error_errno(-EBUSY, "Execution %s is %s: its artifacts are collected when it is final.",
                                       args[0], h.status.s);
                return EX_TEMPFAIL;
        }

        if (!arg_get && !arg_all) {
                r = arg_json ? print_json(answer) : artifacts_print(list, skipped, h.skipped_total);
                return r < 0 ? (r == -EBADMSG ? EX_UNAVAILABLE : EX_OSERR) : EXIT_SUCCESS;
        }

        n = json_object_array_length(list);
        for (size_t i = 0; i < n; i++) {
                CtlArtifact a;

                if (artifact_parse(json_object_array_get_idx(list, i), &a) < 0)
                        return EX_UNAVAILABLE;
                if (arg_get && !streq(a.path.s, arg_get))
                        continue;
                r = artifact_fetch(&a, dest_fd);
                if (r != EXIT_SUCCESS)
                        return r;
                fetched++;
        }
        if (arg_get && fetched == 0) {
                (void) log_error_errno(-ENOENT, "Execution %s has no artifact '%s'.", args[0], arg_get);
                return EXIT_NOT_FOUND;
        }
        return EXIT_SUCCESS;
}
