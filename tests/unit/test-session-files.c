/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "api/api.h"
#include "delivery/session-files.h"
#include "util.h"

typedef struct PathRow {
        const char *path;
        bool dir_ok;
        int want;                       /* 0 root, 1 a path, -EINVAL */
        const char *norm;               /* want 1: the path it becomes */
} PathRow;

static const PathRow path_rows[] = {
        { "",                  true,  0,       NULL },
        { "",                  false, 0,       NULL },
        { "a",                 false, 1,       "a" },
        { "a/b/c.txt",         false, 1,       "a/b/c.txt" },
        { "dir/",              true,  1,       "dir" },
        { "dir//",             true,  1,       "dir" },
        { "dir/",              false, -EINVAL, NULL },      /* a file's path has no trailing '/' */
        { "/",                 true,  -EINVAL, NULL },
        { "/etc/passwd",       false, -EINVAL, NULL },
        { "../x",              false, -EINVAL, NULL },
        { "a/../../x",         false, -EINVAL, NULL },
        { "..",                true,  -EINVAL, NULL },
        { "./x",               false, -EINVAL, NULL },
        { "a//b",              false, -EINVAL, NULL },
        { "a\\b",              false, -EINVAL, NULL },
        { "a\nb",              false, -EINVAL, NULL },
        { "a\x7f",             false, -EINVAL, NULL },
        { ".hidden",           false, 1,       ".hidden" },
        { "...",               false, 1,       "..." },
        { "d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/x", false, -EINVAL, NULL },   /* 17 deep */
        { "d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/x",   false, 1, "d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/x" },
};

static void test_path_rows(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(path_rows); i++) {
                const PathRow *row = path_rows + i;
                _cleanup_free_ char *norm = NULL;
                const char *why = NULL;
                int r = session_file_path_parse(row->path, row->dir_ok, &norm, &why);

                if (r != row->want)
                        fail_msg("row %zu '%s': got %d, want %d", i, row->path, r, row->want);
                if (r == 1)
                        assert_string_equal(norm, row->norm);
                else
                        assert_null(norm);
                if (r == -EINVAL)
                        assert_non_null(why);
        }
}

static void test_path_too_long(_unused_ void **state) {
        char buf[300];
        _cleanup_free_ char *norm = NULL;
        const char *why = NULL;

        memset(buf, 'x', sizeof(buf) - 1);
        buf[sizeof(buf) - 1] = 0;
        assert_int_equal(session_file_path_parse(buf, false, &norm, &why), -EINVAL);
        assert_string_equal(why, "is too long");
}

static const struct {
        int r;
        ApiError want;
} error_rows[] = {
        { -ENOENT, API_ERROR_NOT_FOUND },
        { -ENOTDIR, API_ERROR_NOT_FOUND },
        { -ELOOP, API_ERROR_FORBIDDEN },
        { -EMLINK, API_ERROR_FORBIDDEN },
        { -EPERM, API_ERROR_FORBIDDEN },
        { -EXDEV, API_ERROR_FORBIDDEN },
        { -EISDIR, API_ERROR_CONFLICT },
        { -ENOTEMPTY, API_ERROR_CONFLICT },
        { -EFBIG, API_ERROR_TOO_LARGE },
        { -ENOSPC, API_ERROR_TOO_LARGE },
        { -EDQUOT, API_ERROR_TOO_LARGE },
        { -ENOSYS, API_ERROR_INTERNAL },
        { -EIO, API_ERROR_INTERNAL },
};

static void test_error_rows(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(error_rows); i++) {
                const char *msg = NULL;

                assert_int_equal(session_file_error(error_rows[i].r, &msg), error_rows[i].want);
                assert_non_null(msg);
        }
}

typedef struct RouteRow {
        const char *method, *path;
        ApiRouteId want;
        const char *session_id, *arg;   /* API_ROUTE_SESSION_FILES */
} RouteRow;

static const RouteRow route_rows[] = {
        { "GET",    "/v1/sessions/s1/files",          API_ROUTE_SESSION_FILES, "s1", "" },
        { "GET",    "/v1/sessions/s1/files/",         API_ROUTE_SESSION_FILES, "s1", "" },
        { "GET",    "/v1/sessions/s1/files/a/b.txt",  API_ROUTE_SESSION_FILES, "s1", "a/b.txt" },
        { "PUT",    "/v1/sessions/s1/files/x",        API_ROUTE_SESSION_FILES, "s1", "x" },
        { "DELETE", "/v1/sessions/s1/files/x",        API_ROUTE_SESSION_FILES, "s1", "x" },
        { "GET",    "/v1/sessions/s1/files/../x",     API_ROUTE_SESSION_FILES, "s1", "../x" },  /* the handler refuses */
        { "POST",   "/v1/sessions/s1/files/x",        API_ROUTE_METHOD_NOT_ALLOWED, NULL, NULL },
        { "GET",    "/v1/sessions/s1/filesx",         API_ROUTE_NOT_FOUND, NULL, NULL },
        { "GET",    "/v1/sessions/s1/other",          API_ROUTE_NOT_FOUND, NULL, NULL },
        { "GET",    "/v1/sessions//files/x",          API_ROUTE_NO_SESSION, NULL, NULL },
        { "GET",    "/v1/sessions/s1",                API_ROUTE_SESSION_GET, NULL, NULL },
        { "DELETE", "/v1/sessions/s1",                API_ROUTE_SESSION_DELETE, NULL, NULL },
        { "GET",    "/v1/sessions",                   API_ROUTE_SESSION_LIST, NULL, NULL },
};

static void test_route_rows(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(route_rows); i++) {
                const RouteRow *row = route_rows + i;
                ApiRoute r;

                api_route_match(row->method, row->path, &r);
                if (r.id != row->want)
                        fail_msg("row %zu %s %s: got %d, want %d", i, row->method, row->path, r.id, row->want);
                if (row->want == API_ROUTE_SESSION_FILES) {
                        assert_string_equal(r.session_id, row->session_id);
                        assert_string_equal(r.arg, row->arg);
                }
        }
        {
                char path[128];
                ApiRoute r;

                /* An id longer than REQUEST_ID_MAX never reaches the handler. */
                snprintf(path, sizeof(path), "/v1/sessions/%065d/files/x", 0);
                api_route_match("GET", path, &r);
                assert_int_equal(r.id, API_ROUTE_NO_SESSION);
        }
}

/* Which routes are refused while the store is far behind: every one that reads or writes it, none of
 * those answered without it (health and metrics above all: they say the store is behind). */
static void test_route_needs_store(_unused_ void **state) {
        static const struct {
                ApiRouteId id;
                bool needs;
        } rows[] = {
                { API_ROUTE_SUBMIT, true },
                { API_ROUTE_LIST, true },
                { API_ROUTE_GET, true },
                { API_ROUTE_ARTIFACTS_LIST, true },
                { API_ROUTE_ARTIFACT_GET, true },
                { API_ROUTE_CANCEL, true },
                { API_ROUTE_EVENTS, true },
                { API_ROUTE_SESSION_LIST, true },
                { API_ROUTE_SESSION_GET, true },
                { API_ROUTE_SESSION_DELETE, true },
                { API_ROUTE_SESSION_FILES, false },
                { API_ROUTE_LANGUAGES, false },
                { API_ROUTE_HEALTH, false },
                { API_ROUTE_METRICS, false },
                { API_ROUTE_MCP, true },
                { API_ROUTE_PISTON_RUNTIMES, false },
                { API_ROUTE_PISTON_EXECUTE, true },
                { API_ROUTE_NO_EXECUTION, false },
                { API_ROUTE_NO_SESSION, false },
                { API_ROUTE_METHOD_NOT_ALLOWED, false },
                { API_ROUTE_NOT_FOUND, false },
        };

        assert_int_equal(ELEMENTSOF(rows), _API_ROUTE_MAX);
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                assert_int_equal(rows[i].id, i);
                if (api_route_needs_store(rows[i].id) != rows[i].needs)
                        fail_msg("route %d: needs the store %d, want %d", rows[i].id,
                                 api_route_needs_store(rows[i].id), rows[i].needs);
        }
}

/* The fd part on a real directory below the build directory: links are listed, never followed. */
static void test_workspace(_unused_ void **state) {
        char root[] = UNIT_TEST_BUILD_DIR "/session-files-XXXXXX", outside[PATH_MAX / 2], buf[64];
        _cleanup_close_ int ws = -EBADF, fd = -EBADF;
        json_object *o = NULL, *entries = NULL, *truncated = NULL;
        struct stat st;
        ssize_t n;

        assert_non_null(mkdtemp(root));
        snprintf(outside, sizeof(outside), "%s/outside", root);
        assert_int_equal(mkdir(outside, 0755), 0);
        {
                char p[PATH_MAX];

                snprintf(p, sizeof(p), "%s/workspace", root);
                assert_int_equal(mkdir(p, 0755), 0);
        }
        ws = session_files_open_workspace(root);
        assert_true(ws >= 0);
        assert_int_equal(mkdirat(ws, "sub", 0755), 0);
        assert_int_equal(symlinkat(outside, ws, "d"), 0);
        assert_int_equal(symlinkat("/etc/passwd", ws, "leak"), 0);

        assert_int_equal(session_file_write(ws, "sub/a.txt", "hello", 5), 0);
        assert_int_equal(session_file_open(ws, "sub/a.txt", &fd, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal((st.st_mode & 07777), 0644);
        n = read(fd, buf, sizeof(buf));
        assert_int_equal(n, 5);
        assert_memory_equal(buf, "hello", 5);
        fd = safe_close(fd);

        assert_int_equal(session_file_open(ws, "leak", &fd, &st), -ELOOP);
        assert_int_equal(session_file_open(ws, "d/x", &fd, &st), -ELOOP);
        assert_int_equal(session_file_write(ws, "d/x", "x", 1), -ELOOP);
        assert_int_equal(faccessat(AT_FDCWD, outside, F_OK, 0), 0);
        {
                char p[PATH_MAX];

                snprintf(p, sizeof(p), "%s/x", outside);
                assert_int_equal(access(p, F_OK), -1);
        }
        assert_int_equal(session_file_remove(ws, "d/x"), -ELOOP);
        assert_int_equal(session_file_write(ws, "nodir/x", "x", 1), -ENOENT);
        assert_int_equal(session_file_write(ws, "sub", "x", 1), -EISDIR);
        assert_int_equal(session_file_remove(ws, "sub"), -ENOTEMPTY);
        assert_int_equal(linkat(ws, "sub/a.txt", ws, "hard", 0), 0);
        assert_int_equal(session_file_open(ws, "hard", &fd, &st), -EMLINK);
        assert_int_equal(session_file_remove(ws, "hard"), 0);

        assert_int_equal(session_file_open(ws, NULL, &fd, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(session_file_list(fd, NULL, &o), 0);
        fd = safe_close(fd);
        assert_true(json_object_object_get_ex(o, "entries", &entries));
        assert_int_equal(json_object_array_length(entries), 3);   /* d, leak, sub: sorted */
        assert_string_equal(json_object_get_string(json_object_object_get(json_object_array_get_idx(entries, 0), "name")), "d");
        assert_string_equal(json_object_get_string(json_object_object_get(json_object_array_get_idx(entries, 0), "type")), "symlink");
        assert_string_equal(json_object_get_string(json_object_object_get(json_object_array_get_idx(entries, 2), "type")), "directory");
        assert_true(json_object_object_get_ex(o, "truncated", &truncated));
        assert_false(json_object_get_boolean(truncated));
        json_object_put(o);

        /* Replacing a symlink replaces the name, never its target. */
        assert_int_equal(session_file_write(ws, "leak", "mine", 4), 0);
        assert_int_equal(fstatat(ws, "leak", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(session_file_remove(ws, "d"), 0);
        assert_int_equal(faccessat(AT_FDCWD, outside, F_OK, 0), 0);

        assert_int_equal(session_file_remove(ws, "leak"), 0);
        assert_int_equal(session_file_remove(ws, "sub/a.txt"), 0);
        assert_int_equal(session_file_remove(ws, "sub"), 0);
        assert_int_equal(session_file_remove(ws, "sub"), -ENOENT);
        {
                char p[PATH_MAX];

                snprintf(p, sizeof(p), "%s/workspace", root);
                assert_int_equal(rmdir(p), 0);
        }
        assert_int_equal(rmdir(outside), 0);
        assert_int_equal(rmdir(root), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_path_rows),
                cmocka_unit_test(test_path_too_long),
                cmocka_unit_test(test_error_rows),
                cmocka_unit_test(test_route_rows),
                cmocka_unit_test(test_route_needs_store),
                cmocka_unit_test(test_workspace),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
