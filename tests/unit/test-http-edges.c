/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "api/http.h"
#include "time-util.h"
#include "util.h"

/* http.c at its edges (issue 14), with the real http.c, the real libmicrohttpd and real sockets:
 * the unix socket in a scratch directory below the build directory, TCP on 127.0.0.1. The loop is
 * driven here, with sd_event_run(), while the clients (non-blocking sockets in this process, or a
 * forked child for another uid) misbehave: trickled headers and bodies (absolute deadlines), too
 * many connections (per address on TCP, per uid and root's reserve on the unix socket), and bodies
 * over the cap (stopped at the cap, answered 413, and closed with a lingering close so that the
 * client reads the 413). Waits are bounded generously; nothing asserts that something was fast. */

#define MAX_BODY 16384

static char scratch[PATH_MAX], sock_path[PATH_MAX + 16], keys_path[PATH_MAX + 16], listen_addr[64];
static char *listen_list[2] = { listen_addr, NULL };
static sd_event *ev;
static Http *http;

/* ---- the server ---- */

static bool all_public(const char *method, const char *path) {
        return true;            /* no API keys needed on TCP: the limits come before any key anyway */
}

static HttpRequest *waiting;

static void waiting_gone(HttpRequest *req, void *userdata) {
        waiting = NULL;
}

static int on_wait_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        if (waiting) {
                HttpRequest *req = waiting;

                waiting = NULL;
                http_request_set_gone_cb(req, NULL, NULL);
                http_respond_json(req, 200, json_tokener_parse("{\"ok\":true,\"waited\":true}"));
        }
        return 0;
}

/* ---- streamed bodies: HttpSettings.begin and http_request_stream_body() ---- */

#define STREAM_MAX (4 * MAX_BODY)
static struct {
        uint64_t bytes;
        unsigned frees;
        uint64_t fail_after;     /* a write past this many bytes fails with ENOSPC */
} sink;

static int sink_write(void *userdata, const void *data, size_t n) {
        if (sink.bytes + n > sink.fail_after)
                return -ENOSPC;
        sink.bytes += n;
        return 0;
}

static void sink_free(void *userdata) {
        sink.frees++;
}

/* /v1/refuse is refused before its body; /v1/stream streams its body to the sink. */
static void stream_begin(HttpRequest *req, void *userdata) {
        if (streq(http_request_path(req), "/v1/refuse"))
                http_respond_error(req, API_ERROR_FORBIDDEN, NULL, "refused before the body");
        else if (streq(http_request_path(req), "/v1/stream"))
                http_request_stream_body(req, &(const HttpBodySink) {
                        .write = sink_write, .free = sink_free, .userdata = &sink, .max = STREAM_MAX });
}

/* /v1/wait suspends and answers 2 s later (a long poll); a streamed body is answered with what its
 * sink got; everything else answers at once. */
static void handler(HttpRequest *req, void *userdata) {
        uint64_t streamed = 0;
        int werr = 0;

        if (http_request_streamed(req, &streamed, &werr) && !http_request_too_large(req)) {
                size_t held = 0;
                char text[128];

                /* What the HTTP layer kept of the body in memory: nothing. */
                (void) http_request_body(req, &held);
                snprintf(text, sizeof(text), "{\"streamed\":%" PRIu64 ",\"error\":%d,\"body\":%zu}", streamed, werr,
                         held);
                http_respond_json(req, 200, json_tokener_parse(text));
                return;
        }
        if (http_request_too_large(req)) {
                http_respond_error(req, API_ERROR_TOO_LARGE, NULL, "request body too large");
                return;
        }
        if (streq(http_request_path(req), "/v1/wait")) {
                assert_null(waiting);
                waiting = req;
                http_request_set_gone_cb(req, waiting_gone, NULL);
                http_request_suspend(req);
                /* Floating: the loop owns it. */
                assert_int_equal(sd_event_add_time_relative(ev, NULL, CLOCK_MONOTONIC, 2 * USEC_PER_SEC, 0,
                                                            on_wait_timer, NULL), 0);
                return;
        }
        http_respond_json(req, 200, json_tokener_parse("{\"ok\":true}"));
}

static HttpSettings base_settings(void) {
        return (HttpSettings) {
                .socket_path = sock_path,
                .socket_mode = 0666,
                .socket_gid = (gid_t) -1,
                .max_body = MAX_BODY,
                .max_connections = 64,
                .header_timeout_usec = USEC_PER_SEC,
                .body_timeout_usec = USEC_PER_SEC,
                .max_connections_per_address = 16,
                .max_connections_per_user = 32,
                .listen = listen_list,
                .api_keys_file = keys_path,
                .public_route = all_public,
        };
}

static uint16_t free_port(void) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t sl = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *) &sa, &sl), 0);
        close(fd);
        return ntohs(sa.sin_port);
}

static void server_start(const HttpSettings *s) {
        int r = -EADDRINUSE;

        assert_int_equal(sd_event_new(&ev), 0);
        /* The port is found free, then bound: someone else may take it in between, rarely. */
        for (unsigned i = 0; i < 5 && r < 0; i++) {
                snprintf(listen_addr, sizeof(listen_addr), "127.0.0.1:%u", (unsigned) free_port());
                r = http_new(ev, s, handler, NULL, &http);
        }
        assert_int_equal(r, 0);
}

static void server_stop(void) {
        http = http_free(http);
        ev = sd_event_unref(ev);
}

static uint64_t mono(void) {
        return now_usec(CLOCK_MONOTONIC);
}

/* Run the loop for about usec. */
static void pump(uint64_t usec) {
        uint64_t end = mono() + usec;

        for (uint64_t t = mono(); t < end; t = mono())
                (void) sd_event_run(ev, MIN(end - t, 20 * USEC_PER_MSEC));
}

/* ---- clients ---- */

static int nonblocking(int fd) {
        assert_true(fd >= 0);
        assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
        return fd;
}

static int client_unix(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        strcpy(sa.sun_path, sock_path);
        assert_int_equal(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        return nonblocking(fd);
}

/* From source address from (127.0.0.1 if NULL) to the TCP listener. */
static int client_tcp_from(const char *from) {
        struct sockaddr_in sa = { .sin_family = AF_INET }, src = { .sin_family = AF_INET };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        unsigned port;

        assert_true(fd >= 0);
        assert_int_equal(sscanf(listen_addr, "127.0.0.1:%u", &port), 1);
        sa.sin_port = htons((uint16_t) port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (from) {
                assert_int_equal(inet_pton(AF_INET, from, &src.sin_addr), 1);
                assert_int_equal(bind(fd, (struct sockaddr *) &src, sizeof(src)), 0);
        }
        /* On loopback the kernel completes the handshake from the backlog: this does not block. */
        assert_int_equal(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        return nonblocking(fd);
}

static int client_tcp(void) {
        return client_tcp_from(NULL);
}

typedef int (*client_fn)(void);

/* Send all of buf, running the loop while the socket is full. 0, or the -errno of the send that
 * failed (EPIPE, ECONNRESET), or -ETIMEDOUT. */
static int send_all(int fd, const void *buf, size_t len, uint64_t timeout_usec) {
        uint64_t end = mono() + timeout_usec;
        size_t done = 0;

        while (done < len) {
                ssize_t n = send(fd, (const char *) buf + done, len - done, MSG_NOSIGNAL);

                if (n > 0) {
                        done += (size_t) n;
                        continue;
                }
                if (n < 0 && errno != EAGAIN && errno != EINTR)
                        return -errno;
                if (mono() > end)
                        return -ETIMEDOUT;
                (void) sd_event_run(ev, 10 * USEC_PER_MSEC);
        }
        return 0;
}

/* Whether buf holds one whole response (headers and Content-Length bytes of body). */
static bool response_complete(const char *buf, size_t len) {
        const char *e = memmem(buf, len, "\r\n\r\n", 4), *cl;
        size_t head;

        if (!e)
                return false;
        head = (size_t) (e - buf) + 4;
        cl = strcasestr(buf, "\r\nContent-Length:");
        if (!cl || cl > e)
                return true;
        return len >= head + strtoul(cl + strlen("\r\nContent-Length:"), NULL, 10);
}

/* Read into buf (NUL-terminated) until one response is complete (until_eof: until EOF), running
 * the loop meanwhile. 0 on EOF, 1 with a complete response (not until_eof), -errno on an error
 * (ECONNRESET), -ETIMEDOUT. */
static int recv_response(int fd, char *buf, size_t size, size_t *len, bool until_eof, uint64_t timeout_usec) {
        uint64_t end = mono() + timeout_usec;

        *len = 0;
        buf[0] = 0;
        for (;;) {
                ssize_t n;

                if (!until_eof && response_complete(buf, *len))
                        return 1;
                if (*len + 1 >= size)
                        return -ENOBUFS;
                n = recv(fd, buf + *len, size - 1 - *len, 0);
                if (n == 0)
                        return 0;
                if (n > 0) {
                        *len += (size_t) n;
                        buf[*len] = 0;
                        continue;
                }
                if (errno != EAGAIN && errno != EINTR)
                        return -errno;
                if (mono() > end)
                        return -ETIMEDOUT;
                (void) sd_event_run(ev, 10 * USEC_PER_MSEC);
        }
}

static int status_of(const char *buf) {
        unsigned s;

        return sscanf(buf, "HTTP/1.1 %u ", &s) == 1 ? (int) s : 0;
}

#define HEALTH "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"

/* One GET on fd: the status, 0 when closed without an answer, -errno. */
static int request_status(int fd) {
        char buf[4096];
        size_t len;
        int r;

        r = send_all(fd, HEALTH, strlen(HEALTH), 5 * USEC_PER_SEC);
        if (r < 0 && r != -EPIPE && r != -ECONNRESET)
                return r;
        r = recv_response(fd, buf, sizeof(buf), &len, false, 5 * USEC_PER_SEC);
        if (r == -ETIMEDOUT)
                return r;
        return status_of(buf);
}

/* Whether the server closed fd (EOF or reset) within timeout_usec. Whatever arrives before is
 * kept in buf. */
static bool closed_within(int fd, char *buf, size_t size, uint64_t timeout_usec) {
        size_t len;
        int r = recv_response(fd, buf, size, &len, true, timeout_usec);

        return r == 0 || r == -ECONNRESET || r == -EPIPE;
}

/* ---- setup ---- */

static int setup(void **state) {
        const char *d = getenv("SANDBOXD_TEST_SCRATCH");
        FILE *f;

        /* Below the build directory (meson passes it), never /tmp. */
        snprintf(scratch, sizeof(scratch), "%s/test-http-edges.XXXXXX", d ?: ".");
        if (!mkdtemp(scratch) || chmod(scratch, 0755) < 0)
                return -1;
        snprintf(sock_path, sizeof(sock_path), "%s/api.sock", scratch);
        snprintf(keys_path, sizeof(keys_path), "%s/api-keys", scratch);
        f = fopen(keys_path, "we");
        if (!f)
                return -1;
        fprintf(f, "t sha256:%064d\n", 0);
        fclose(f);
        return chmod(keys_path, 0600);
}

static int teardown(void **state) {
        (void) unlink(sock_path);
        (void) unlink(keys_path);
        (void) rmdir(scratch);
        return 0;
}

/* ---- a) deadlines ---- */

/* Old code: MHD's timeout is an idle timeout (120 s), which a byte every 200 ms resets forever: the
 * connection is still open after 5 s and closed_within() fails. */
static void trickle_headers(client_fn client, bool after_a_request) {
        HttpSettings s = base_settings();
        const char *head = "GET /v1/health HTTP/1.1\r\n", *rest = "Host: x\r\nX-Trickle: 0123456789012345678901234567890123456789\r\n\r\n";
        uint64_t end;
        bool closed = false;
        char buf[4096];
        int fd;

        server_start(&s);
        fd = client();
        /* On a keep-alive connection the deadline runs from the end of the previous answer. */
        if (after_a_request)
                assert_int_equal(request_status(fd), 200);
        assert_int_equal(send_all(fd, head, strlen(head), USEC_PER_SEC), 0);
        end = mono() + 5 * USEC_PER_SEC;
        for (const char *p = rest; *p && !closed && mono() < end; p++) {
                ssize_t n;

                (void) send(fd, p, 1, MSG_NOSIGNAL);
                pump(200 * USEC_PER_MSEC);
                n = recv(fd, buf, sizeof(buf), 0);
                closed = n == 0 || (n < 0 && errno != EAGAIN);
        }
        if (!closed)
                closed = closed_within(fd, buf, sizeof(buf), end > mono() ? end - mono() : 0);
        assert_true(closed);
        close(fd);

        /* Nobody else is hurt: a normal request right after gets its answer. */
        fd = client();
        assert_int_equal(request_status(fd), 200);
        close(fd);
        server_stop();
}

static void test_trickle_headers_unix(void **state) {
        trickle_headers(client_unix, false);
}

static void test_trickle_headers_tcp(void **state) {
        trickle_headers(client_tcp, false);
}

static void test_trickle_headers_keepalive(void **state) {
        trickle_headers(client_unix, true);
}

/* Old code: a body of 100 bytes at one byte per 200 ms takes 20 s and every byte resets MHD's idle
 * timeout: not closed within 5 s. */
static void trickle_body(client_fn client) {
        HttpSettings s = base_settings();
        const char *head = "POST /v1/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n";
        uint64_t end;
        bool closed = false;
        char buf[4096] = "";
        size_t got = 0;
        int fd;

        server_start(&s);
        fd = client();
        assert_int_equal(send_all(fd, head, strlen(head), USEC_PER_SEC), 0);
        end = mono() + 5 * USEC_PER_SEC;
        for (unsigned i = 0; i < 100 && !closed && mono() < end; i++) {
                ssize_t n;

                (void) send(fd, " ", 1, MSG_NOSIGNAL);
                pump(200 * USEC_PER_MSEC);
                n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
                if (n > 0) {
                        got += (size_t) n;
                        buf[got] = 0;
                        continue;
                }
                closed = n == 0 || errno != EAGAIN;
        }
        if (!closed)
                closed = closed_within(fd, buf + got, sizeof(buf) - got, end > mono() ? end - mono() : 0);
        assert_true(closed);
        /* Best effort: the 408, if it got through before the close (never a 200). */
        if (buf[0])
                assert_int_equal(status_of(buf), 408);
        close(fd);

        fd = client();
        assert_int_equal(request_status(fd), 200);
        close(fd);
        server_stop();
}

static void test_trickle_body_unix(void **state) {
        trickle_body(client_unix);
}

static void test_trickle_body_tcp(void **state) {
        trickle_body(client_tcp);
}

/* ---- b) long polls are not cut ---- */

/* A guard for the deadlines, not a bug of the old code (which had none): a suspended request
 * answered after 2 s, past both 1 s deadlines, gets its answer, and the connection serves the next
 * request (its header deadline runs from that answer). */
static void test_long_poll(void **state) {
        HttpSettings s = base_settings();
        const char *get = "GET /v1/wait HTTP/1.1\r\nHost: x\r\n\r\n",
                   *post = "POST /v1/wait HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        char buf[4096];
        size_t len;
        int fd;

        server_start(&s);
        fd = client_unix();
        assert_int_equal(send_all(fd, get, strlen(get), USEC_PER_SEC), 0);
        assert_int_equal(recv_response(fd, buf, sizeof(buf), &len, false, 6 * USEC_PER_SEC), 1);
        assert_int_equal(status_of(buf), 200);
        assert_non_null(strstr(buf, "\"waited\":true"));
        assert_int_equal(send_all(fd, post, strlen(post), USEC_PER_SEC), 0);
        assert_int_equal(recv_response(fd, buf, sizeof(buf), &len, false, 6 * USEC_PER_SEC), 1);
        assert_int_equal(status_of(buf), 200);
        assert_non_null(strstr(buf, "\"waited\":true"));
        assert_int_equal(request_status(fd), 200);
        close(fd);

        /* The same on TCP. */
        fd = client_tcp();
        assert_int_equal(send_all(fd, get, strlen(get), USEC_PER_SEC), 0);
        assert_int_equal(recv_response(fd, buf, sizeof(buf), &len, false, 6 * USEC_PER_SEC), 1);
        assert_int_equal(status_of(buf), 200);
        close(fd);
        server_stop();
}

/* ---- c) per address on TCP ---- */

/* Old code: no such limit, the 4th connection from 127.0.0.1 gets its 200. */
static void test_per_address(void **state) {
        HttpSettings s = base_settings();
        int fds[3], fd;
        char buf[4096];

        s.max_connections_per_address = 3;
        server_start(&s);
        for (unsigned i = 0; i < 3; i++) {
                fds[i] = client_tcp();
                assert_int_equal(request_status(fds[i]), 200);
        }
        fd = client_tcp();
        assert_int_not_equal(request_status(fd), 200);
        assert_true(closed_within(fd, buf, sizeof(buf), 5 * USEC_PER_SEC));
        close(fd);

        /* Another address is another client. */
        fd = client_tcp_from("127.0.0.2");
        assert_int_equal(request_status(fd), 200);
        close(fd);

        /* A place given back can be taken again. */
        close(fds[0]);
        pump(200 * USEC_PER_MSEC);
        fds[0] = client_tcp();
        assert_int_equal(request_status(fds[0]), 200);
        for (unsigned i = 0; i < 3; i++)
                close(fds[i]);
        server_stop();
}

/* ---- d) per uid and root's reserve on the unix socket ---- */

#define CHILD_MAX 32

typedef struct ChildResult {
        int n;
        int status[CHILD_MAX];
} ChildResult;

/* A child that becomes uid (and gid) 65534, waits for the server, opens n connections one after
 * the other, each with one GET (blocking, 10 s at most each), keeps them open, reports the
 * statuses (0: closed without an answer) and waits to be told to exit. */
static pid_t child_start(int n, int *ret_result_fd, int *ret_go_fd, int *ret_exit_fd) {
        int result[2], go[2], ex[2];
        pid_t pid;

        assert_int_equal(pipe2(result, O_CLOEXEC), 0);
        assert_int_equal(pipe2(go, O_CLOEXEC), 0);
        assert_int_equal(pipe2(ex, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                ChildResult res = { .n = n };
                int fds[CHILD_MAX];
                char c;

                close(result[0]);
                close(go[1]);
                close(ex[1]);
                if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                        _exit(2);
                if (read(go[0], &c, 1) != 1)
                        _exit(3);
                for (int i = 0; i < n; i++) {
                        struct sockaddr_un sa = { .sun_family = AF_UNIX };
                        struct timeval tv = { .tv_sec = 10 };
                        char buf[4096];
                        size_t len = 0;

                        fds[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                        strcpy(sa.sun_path, sock_path);
                        if (fds[i] < 0 || connect(fds[i], (struct sockaddr *) &sa, sizeof(sa)) < 0)
                                _exit(4);
                        (void) setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
                        (void) send(fds[i], HEALTH, strlen(HEALTH), MSG_NOSIGNAL);
                        buf[0] = 0;
                        while (!response_complete(buf, len) && len + 1 < sizeof(buf)) {
                                ssize_t k = recv(fds[i], buf + len, sizeof(buf) - 1 - len, 0);

                                if (k <= 0)
                                        break;
                                len += (size_t) k;
                                buf[len] = 0;
                        }
                        res.status[i] = status_of(buf);
                }
                if (write(result[1], &res, sizeof(res)) != sizeof(res))
                        _exit(5);
                _exit(read(ex[0], &c, 1) < 0 ? 6 : 0);
        }
        close(result[1]);
        close(go[0]);
        close(ex[0]);
        *ret_result_fd = result[0];
        *ret_go_fd = go[1];
        *ret_exit_fd = ex[1];
        return pid;
}

/* Run the loop until the child reports (30 s at most). */
static void child_wait_result(int fd, ChildResult *res) {
        uint64_t end = mono() + 30 * USEC_PER_SEC;

        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };

                if (poll(&p, 1, 0) == 1)
                        break;
                assert_true(mono() < end);
                (void) sd_event_run(ev, 10 * USEC_PER_MSEC);
        }
        assert_int_equal(read(fd, res, sizeof(*res)), sizeof(*res));
}

static void child_finish(pid_t pid, int result_fd, int exit_fd) {
        uint64_t end = mono() + 10 * USEC_PER_SEC;
        int st = 0;

        close(exit_fd);
        close(result_fd);
        while (waitpid(pid, &st, WNOHANG) == 0) {
                assert_true(mono() < end);
                (void) sd_event_run(ev, 10 * USEC_PER_MSEC);
        }
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
}

/* Old code: no per-uid limit, the child's 4th connection gets its 200. */
static void test_per_user(void **state) {
        HttpSettings s = base_settings();
        int result_fd, go_fd, exit_fd, fd;
        ChildResult res;
        pid_t pid;

        if (geteuid() != 0)
                skip();
        /* Forked before the server exists: the child holds nothing of it. */
        pid = child_start(4, &result_fd, &go_fd, &exit_fd);
        s.max_connections_per_user = 3;
        server_start(&s);
        assert_int_equal(write(go_fd, "x", 1), 1);
        close(go_fd);
        child_wait_result(result_fd, &res);
        for (int i = 0; i < 3; i++)
                assert_int_equal(res.status[i], 200);
        assert_int_equal(res.status[3], 429);

        /* Root has no per-uid limit. */
        fd = client_unix();
        assert_int_equal(request_status(fd), 200);
        close(fd);
        child_finish(pid, result_fd, exit_fd);
        server_stop();
}

/* MaxConnections=16: uids other than root may hold 16 - 8 together. Old code: the child gets all
 * 16 (16 answers of 200), and root's connections wait in the backlog unanswered. */
static void test_root_reserve(void **state) {
        HttpSettings s = base_settings();
        int result_fd, go_fd, exit_fd, fds[HTTP_ROOT_RESERVE];
        ChildResult res;
        pid_t pid;
        int ok = 0;

        if (geteuid() != 0)
                skip();
        pid = child_start(16, &result_fd, &go_fd, &exit_fd);
        s.max_connections = 16;
        s.max_connections_per_user = 32;
        server_start(&s);
        assert_int_equal(write(go_fd, "x", 1), 1);
        close(go_fd);
        child_wait_result(result_fd, &res);
        for (int i = 0; i < 16; i++) {
                if (res.status[i] == 200)
                        ok++;
                else
                        assert_int_equal(res.status[i], 503);
        }
        assert_int_equal(ok, 16 - HTTP_ROOT_RESERVE);

        /* Root still gets in, with all the non-root connections held. */
        pump(100 * USEC_PER_MSEC);
        for (int i = 0; i < HTTP_ROOT_RESERVE; i++) {
                fds[i] = client_unix();
                assert_int_equal(request_status(fds[i]), 200);
        }
        for (int i = 0; i < HTTP_ROOT_RESERVE; i++)
                close(fds[i]);
        child_finish(pid, result_fd, exit_fd);
        server_stop();
}

/* ---- e, f) bodies over the cap ---- */

static const char chunked_head[] =
        "POST /v1/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";

static char *make_chunk(size_t *ret_len) {
        char *c = malloc(16 + MAX_BODY + 2);
        int n;

        assert_non_null(c);
        n = sprintf(c, "%x\r\n", (unsigned) MAX_BODY);
        memset(c + n, 'a', MAX_BODY);
        memcpy(c + n + MAX_BODY, "\r\n", 2);
        *ret_len = (size_t) n + MAX_BODY + 2;
        return c;
}

/* A chunked body that does not end (64 MiB offered): the server stops reading at the cap plus the
 * discard budget. Old code: it reads and drops all of it (the client sends the 64 MiB), then answers. */
static void test_chunked_flood(void **state) {
        HttpSettings s = base_settings();
        const uint64_t offered = 64ULL << 20;
        uint64_t sent = 0, end;
        size_t chunk_len, got = 0;
        char *chunk = make_chunk(&chunk_len), buf[4096] = "";
        bool closed = false;
        int fd;

        /* No deadline to help: only the cap stops this. */
        s.body_timeout_usec = 60 * USEC_PER_SEC;
        server_start(&s);
        fd = client_unix();
        assert_int_equal(send_all(fd, chunked_head, strlen(chunked_head), USEC_PER_SEC), 0);
        end = mono() + 30 * USEC_PER_SEC;
        while (!closed && sent < offered && mono() < end) {
                /* From where the last send stopped: the stream stays well-formed chunks. */
                size_t off = (size_t) (sent % chunk_len);
                ssize_t n = send(fd, chunk + off, chunk_len - off, MSG_NOSIGNAL);

                if (n > 0)
                        sent += (uint64_t) n;
                else if (n < 0 && errno != EAGAIN && errno != EINTR)
                        closed = true;          /* EPIPE, ECONNRESET: the server let go */
                else
                        (void) sd_event_run(ev, 10 * USEC_PER_MSEC);
                if (got + 1 < sizeof(buf)) {
                        n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
                        if (n > 0) {
                                got += (size_t) n;
                                buf[got] = 0;
                        } else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                                closed = true;
                }
        }
        if (!closed)
                closed = closed_within(fd, buf + got, sizeof(buf) - got, 5 * USEC_PER_SEC);
        assert_true(closed);
        /* The cap (16 KiB), the discard budget (1 MiB) and the kernel's buffers: far below 8 MiB. */
        assert_true(sent < 8ULL << 20);
        assert_int_equal(status_of(buf), 413);
        assert_non_null(strstr(buf, "\"code\":\"too_large\""));
        close(fd);
        free(chunk);

        fd = client_unix();
        assert_int_equal(request_status(fd), 200);
        close(fd);
        server_stop();
}

/* A chunked body of 10 x the cap, sent whole, then read: 413, and the connection closed (cleanly,
 * EOF). Old code: reads it all, answers 413 via the handler and keeps the connection open (no EOF
 * within 10 s). */
static void test_chunked_10x(void **state) {
        HttpSettings s = base_settings();
        size_t chunk_len, len;
        char *chunk = make_chunk(&chunk_len), buf[4096];

        server_start(&s);
        int fd = client_unix();
        assert_int_equal(send_all(fd, chunked_head, strlen(chunked_head), USEC_PER_SEC), 0);
        for (unsigned i = 0; i < 10; i++)
                assert_int_equal(send_all(fd, chunk, chunk_len, 5 * USEC_PER_SEC), 0);
        assert_int_equal(send_all(fd, "0\r\n\r\n", 5, 5 * USEC_PER_SEC), 0);
        assert_int_equal(recv_response(fd, buf, sizeof(buf), &len, true, 10 * USEC_PER_SEC), 0);
        assert_int_equal(status_of(buf), 413);
        close(fd);
        free(chunk);
        server_stop();
}

/* Content-Length: 32 x the cap, no Expect, the client writes it all before it reads (as
 * http.client, requests and most SDKs do). Every write must succeed, and the read must give the 413
 * and then a clean EOF. Old code: the 413 at once and the connection closed with the body unread:
 * the kernel resets it (TCP) or errors it (unix), the client's writes fail with EPIPE/ECONNRESET. */
static void oversized_body(client_fn client) {
        HttpSettings s = base_settings();
        const size_t body_len = 32 * MAX_BODY;
        char head[256], buf[4096];
        _cleanup_free_ char *body = malloc(body_len);
        size_t len;
        int fd;

        assert_non_null(body);
        memset(body, ' ', body_len);
        snprintf(head, sizeof(head),
                 "POST /v1/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", body_len);
        server_start(&s);
        fd = client();
        /* A small send buffer (no autotuning): the body cannot hide in the kernel's buffers before
         * the server has answered, the writes are still going on when it closes. */
        assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int) { 16384 }, sizeof(int)), 0);
        assert_int_equal(send_all(fd, head, strlen(head), 5 * USEC_PER_SEC), 0);
        assert_int_equal(send_all(fd, body, body_len, 10 * USEC_PER_SEC), 0);
        assert_int_equal(recv_response(fd, buf, sizeof(buf), &len, true, 10 * USEC_PER_SEC), 0);
        assert_int_equal(status_of(buf), 413);
        assert_non_null(strstr(buf, "\"code\":\"too_large\""));
        close(fd);

        fd = client();
        assert_int_equal(request_status(fd), 200);
        close(fd);
        server_stop();
}

static void test_oversized_body_tcp(void **state) {
        oversized_body(client_tcp);
}

static void test_oversized_body_unix(void **state) {
        oversized_body(client_unix);
}

/* A body taken as a stream: each byte reaches the sink once, none is kept by the HTTP layer, its
 * cap is the sink's (not max_body), the sink is freed once however the request ends, a route may
 * refuse before the body, and a write error reaches the handler. */
static int stream_request(const char *path, const char *head_extra, const char *body, size_t body_len, char *buf,
                          size_t size) {
        char head[256];
        size_t len;
        int fd = client_unix();

        snprintf(head, sizeof(head), "POST %s HTTP/1.1\r\nHost: x\r\n%s\r\n", path, head_extra);
        assert_int_equal(send_all(fd, head, strlen(head), 5 * USEC_PER_SEC), 0);
        if (body_len > 0)
                (void) send_all(fd, body, body_len, 10 * USEC_PER_SEC);
        assert_true(recv_response(fd, buf, size, &len, true, 10 * USEC_PER_SEC) >= 0 || len > 0);
        close(fd);
        pump(100 * USEC_PER_MSEC);
        return status_of(buf);
}

static void test_stream_body(void **state) {
        HttpSettings s = base_settings();
        const size_t n = 3 * MAX_BODY;
        _cleanup_free_ char *body = malloc(8 * MAX_BODY);
        char extra[128], buf[4096];
        size_t chunk_len;
        _cleanup_free_ char *chunk = make_chunk(&chunk_len);
        int fd;

        assert_non_null(body);
        memset(body, 'b', 8 * MAX_BODY);
        s.begin = stream_begin;
        server_start(&s);

        /* Three times max_body, announced: all of it to the sink, nothing in memory. */
        sink = (typeof(sink)) { .fail_after = UINT64_MAX };
        snprintf(extra, sizeof(extra), "Content-Length: %zu\r\n", n);
        assert_int_equal(stream_request("/v1/stream", extra, body, n, buf, sizeof(buf)), 200);
        assert_non_null(strstr(buf, "\"streamed\":49152,\"error\":0,\"body\":0"));
        assert_int_equal(sink.bytes, n);
        assert_int_equal(sink.frees, 1);

        /* Over the sink's cap, announced: 413 before a byte is read. */
        sink = (typeof(sink)) { .fail_after = UINT64_MAX };
        snprintf(extra, sizeof(extra), "Content-Length: %u\r\n", STREAM_MAX + 1);
        assert_int_equal(stream_request("/v1/stream", extra, body, STREAM_MAX + 1, buf, sizeof(buf)), 413);
        assert_int_equal(sink.bytes, 0);
        assert_int_equal(sink.frees, 1);

        /* Over the cap, chunked: 413 where it passes it, the sink had at most the cap. */
        sink = (typeof(sink)) { .fail_after = UINT64_MAX };
        fd = client_unix();
        assert_int_equal(send_all(fd, "POST /v1/stream HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                                  strlen("POST /v1/stream HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"),
                                  USEC_PER_SEC), 0);
        for (unsigned i = 0; i < 10; i++)
                if (send_all(fd, chunk, chunk_len, 5 * USEC_PER_SEC) < 0)
                        break;
        assert_true(closed_within(fd, buf, sizeof(buf), 10 * USEC_PER_SEC));
        assert_int_equal(status_of(buf), 413);
        close(fd);
        pump(100 * USEC_PER_MSEC);
        assert_true(sink.bytes > 0 && sink.bytes <= STREAM_MAX);
        assert_int_equal(sink.frees, 1);

        /* Refused before the body: its bytes are never read, no sink. */
        sink = (typeof(sink)) { .fail_after = UINT64_MAX };
        snprintf(extra, sizeof(extra), "Content-Length: %zu\r\n", n);
        assert_int_equal(stream_request("/v1/refuse", extra, body, n, buf, sizeof(buf)), 403);
        assert_int_equal(sink.frees, 0);

        /* The sink fails (a full disk): the rest is read and dropped, the handler is told. */
        sink = (typeof(sink)) { .fail_after = MAX_BODY };
        snprintf(extra, sizeof(extra), "Content-Length: %zu\r\n", n);
        assert_int_equal(stream_request("/v1/stream", extra, body, n, buf, sizeof(buf)), 200);
        assert_non_null(strstr(buf, "\"streamed\":49152,\"error\":-28"));
        assert_true(sink.bytes <= MAX_BODY);
        assert_int_equal(sink.frees, 1);

        /* Other routes keep max_body. */
        assert_int_equal(stream_request("/v1/x", extra, body, n, buf, sizeof(buf)), 413);
        server_stop();
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_stream_body, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trickle_headers_unix, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trickle_headers_tcp, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trickle_headers_keepalive, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trickle_body_unix, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trickle_body_tcp, setup, teardown),
                cmocka_unit_test_setup_teardown(test_long_poll, setup, teardown),
                cmocka_unit_test_setup_teardown(test_per_address, setup, teardown),
                cmocka_unit_test_setup_teardown(test_per_user, setup, teardown),
                cmocka_unit_test_setup_teardown(test_root_reserve, setup, teardown),
                cmocka_unit_test_setup_teardown(test_chunked_flood, setup, teardown),
                cmocka_unit_test_setup_teardown(test_chunked_10x, setup, teardown),
                cmocka_unit_test_setup_teardown(test_oversized_body_tcp, setup, teardown),
                cmocka_unit_test_setup_teardown(test_oversized_body_unix, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
