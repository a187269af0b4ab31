# SPDX-License-Identifier: LGPL-2.1-or-later
"""Unit tests of the Python SDK against real HTTP servers of the standard library, started here on
loopback TCP and on a unix socket (no daemon): retries, idempotency, error mapping, SSE, timeouts,
keep-alive. Run: python3 -m unittest discover -s sdk/python/tests -p 'test_client.py'"""
import http.server
import io
import json
import os
import socket
import socketserver
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.environ.get("SANDBOXD_SDK_PATH") or os.path.join(os.path.dirname(__file__), ".."))
import sandboxd  # noqa: E402
from sandboxd import APIError, Client, Execution, SSEParser  # noqa: E402


def execution_doc(eid="e1", status="success", error_type=None, **kw):
    d = {"execution_id": eid, "record_id": eid, "status": status, "error_type": error_type,
         "exit_code": 0 if status == "success" else None, "stdout": "hi\n", "stderr": "",
         "summary": "The program succeeded (exit code 0).\n", "limits": {"timeout_ms": 1000},
         "artifacts": [], "some_future_field": 1}
    d.update(kw)
    return d


class Request:
    def __init__(self, h, body):
        self.method, self.path, self.headers, self.body = h.command, h.path, h.headers, body
        self.conn_id = id(h.connection)

    def json(self):
        return json.loads(self.body)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        req = Request(self, body)
        srv = self.server
        with srv.lock:
            srv.requests.append(req)
        spec = srv.route(req)
        if spec == "drop":  # hang up without an answer
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if callable(spec):
            spec(self)
            return
        status, body = spec[0], spec[1]
        headers = spec[2] if len(spec) > 2 else {}
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = _any


class TCPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True


class UnixServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True


def start(server_cls, addr, route):
    srv = server_cls(addr, Handler)
    srv.lock = threading.Lock()
    srv.requests = []
    srv.route = route
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return srv


def error(status, code, message="m", field=None):
    return (status, {"error": {"code": code, "message": message, "field": field}})


class Base(unittest.TestCase):
    def serve(self, route, **client_kw):
        self.srv = start(TCPServer, ("127.0.0.1", 0), route)
        self.addCleanup(self.srv.server_close)
        self.addCleanup(self.srv.shutdown)
        kw = dict(timeout=5, max_retries=3, backoff_base=0.01, backoff_max=0.05)
        kw.update(client_kw)
        self.client = Client(f"http://127.0.0.1:{self.srv.server_address[1]}", **kw)
        self.addCleanup(self.client.close)
        return self.client

    def script(self, *specs):
        """A route answering the specs in turn (the last one again once they are used up)."""
        specs = list(specs)

        def route(req):
            return specs.pop(0) if len(specs) > 1 else specs[0]
        return route


class TestRetries(Base):
    def test_503_then_429_then_success_same_execution_id(self):
        c = self.serve(self.script(error(503, "shutting_down"), (429, {"error": {"code": "queue_full"}},
                                                                 {"Retry-After": "0"}),
                                   (200, execution_doc())))
        r = c.execute("python", "print('hi')")
        self.assertEqual(r.stdout, "hi\n")
        self.assertEqual(len(self.srv.requests), 3)
        ids = {q.json()["execution_id"] for q in self.srv.requests}
        self.assertEqual(len(ids), 1, ids)
        eid = ids.pop()
        self.assertRegex(eid, r"^[A-Za-z0-9_.-]{1,64}$")
        self.assertEqual(self.srv.requests[0].path, "/v1/executions?wait=true")

    def test_each_call_gets_its_own_id(self):
        c = self.serve(self.script((202, {"execution_id": "x", "status": "queued"})))
        c.submit("python", "1")
        c.submit("python", "1")
        a, b = (q.json()["execution_id"] for q in self.srv.requests)
        self.assertNotEqual(a, b)

    def test_callers_id_kept(self):
        c = self.serve(self.script(error(503, "store_error"), (202, {"execution_id": "mine-1", "status": "queued"})))
        self.assertEqual(c.submit("python", "1", execution_id="mine-1", callback_url="https://h.example/x"), "mine-1")
        self.assertEqual([q.json()["execution_id"] for q in self.srv.requests], ["mine-1", "mine-1"])
        self.assertEqual(self.srv.requests[0].json()["callback_url"], "https://h.example/x")

    def test_no_retry_on_400(self):
        c = self.serve(self.script(error(400, "invalid_request", "limits.memory_mb: too big", "limits.memory_mb")))
        with self.assertRaises(APIError) as cm:
            c.execute("python", "1", limits={"memory_mb": 99999})
        e = cm.exception
        self.assertEqual((e.status, e.code, e.field, e.message),
                         (400, "invalid_request", "limits.memory_mb", "limits.memory_mb: too big"))
        self.assertEqual(len(self.srv.requests), 1)

    def test_no_retry_on_409(self):
        c = self.serve(self.script(error(409, "conflict")))
        with self.assertRaises(APIError) as cm:
            c.cancel("e1")
        self.assertEqual(cm.exception.code, "conflict")
        self.assertEqual(len(self.srv.requests), 1)

    def test_bound(self):
        c = self.serve(self.script(error(503, "shutting_down")), max_retries=2)
        with self.assertRaises(APIError) as cm:
            c.get("e1")
        self.assertEqual(cm.exception.status, 503)
        self.assertEqual(len(self.srv.requests), 3)  # 1 + max_retries

    def test_no_retries(self):
        c = self.serve(self.script(error(503, "shutting_down")), max_retries=0)
        with self.assertRaises(APIError):
            c.health()
        self.assertEqual(len(self.srv.requests), 1)

    def test_lost_connection_retried_for_execute(self):
        c = self.serve(self.script("drop", (200, execution_doc())))
        c.execute("python", "1")
        self.assertEqual(len(self.srv.requests), 2)
        a, b = (q.json()["execution_id"] for q in self.srv.requests)
        self.assertEqual(a, b)

    def test_lost_connection_not_retried_for_cancel(self):
        c = self.serve(self.script("drop", (202, execution_doc(status="running"))))
        with self.assertRaises((ConnectionError, OSError)):
            c.cancel("e1")
        self.assertEqual(len(self.srv.requests), 1)

    def test_connection_refused_is_transport_error(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        c = Client(f"http://127.0.0.1:{port}", max_retries=1, backoff_base=0.01)
        with self.assertRaises(ConnectionRefusedError):
            c.health()

    def test_backoff_grows_with_jitter(self):
        c = Client("http://127.0.0.1:1", backoff_base=1, backoff_max=8)
        ds = [c._delay(a, None) for a in range(5) for _ in range(20)]
        for a in range(5):
            chunk = ds[a * 20:(a + 1) * 20]
            cap = min(8, 2 ** a)
            self.assertTrue(all(cap / 2 <= d <= cap for d in chunk), (a, chunk))
            self.assertGreater(len(set(chunk)), 1)
        self.assertEqual(c._delay(0, 5.0), 5.0)   # Retry-After honoured
        self.assertEqual(c._delay(0, 100.0), 8)   # up to backoff_max


class TestErrors(Base):
    CASES = {"compile_error": sandboxd.CompileError, "runtime_error": sandboxd.ProgramError,
             "timeout": sandboxd.ExecutionTimeout, "oom": sandboxd.OutOfMemory,
             "resource_limit": sandboxd.ResourceLimitExceeded, "internal_error": sandboxd.InternalError,
             "input_error": sandboxd.InputError}

    def test_verdicts_raise_typed(self):
        for et, cls in self.CASES.items():
            with self.subTest(et):
                c = self.serve(self.script((200, execution_doc(status="failed", error_type=et, peak_memory_mb=64.0))))
                with self.assertRaises(cls) as cm:
                    c.execute("python", "1")
                e = cm.exception
                self.assertIsInstance(e, sandboxd.SandboxError)
                self.assertEqual(e.type, et)
                self.assertEqual(e.result.error_type, et)
                self.assertEqual(e.result.peak_memory_mb, 64.0)
                self.assertEqual(e.result.raw["some_future_field"], 1)
                r = c.execute("python", "1", check=False)
                self.assertEqual(r.status, "failed")

    def test_cancelled(self):
        c = self.serve(self.script((200, execution_doc(status="cancelled"))))
        with self.assertRaises(sandboxd.Cancelled) as cm:
            c.wait("e1", check=True)
        self.assertEqual(cm.exception.type, "cancelled")
        self.assertEqual(c.wait("e1").status, "cancelled")  # check=False is wait()'s default

    def test_success_does_not_raise(self):
        c = self.serve(self.script((200, execution_doc())))
        r = c.execute("python", "1")
        self.assertTrue(r.ok and r.done)
        self.assertEqual(r.limits.timeout_ms, 1000)

    def test_error_body_not_json(self):
        c = self.serve(self.script((413, b"too big", {"Content-Type": "text/plain"})))
        with self.assertRaises(APIError) as cm:
            c.health()
        self.assertEqual((cm.exception.status, cm.exception.code), (413, "http_413"))

    def test_api_key_sent(self):
        c = self.serve(self.script((200, {"status": "ok"})), api_key="k" * 40)
        c.health()
        self.assertEqual(self.srv.requests[0].headers["Authorization"], "Bearer " + "k" * 40)


class TestTimeouts(Base):
    def test_read_timeout_raises_and_is_not_retried(self):
        def slow(h):
            time.sleep(1.5)
        c = self.serve(lambda req: slow, timeout=0.3)
        t0 = time.monotonic()
        with self.assertRaises(socket.timeout):  # TimeoutError from Python 3.10 on
            c.get("e1")
        self.assertLess(time.monotonic() - t0, 1.2)
        self.assertEqual(len(self.srv.requests), 1)

    def test_wait_timeout_argument(self):
        def slow(h):
            time.sleep(1.5)
        c = self.serve(lambda req: slow, timeout=30)
        with self.assertRaises(socket.timeout):
            c.wait("e1", timeout=0.3)
        self.assertEqual(self.srv.requests[0].path, "/v1/executions/e1?wait=true")


    def test_long_poll_not_bounded_by_client_timeout(self):
        def slow_then_answer(h):
            time.sleep(0.8)
            body = json.dumps(execution_doc()).encode()
            h.send_response(200)
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)
        c = self.serve(lambda req: slow_then_answer, timeout=0.3, max_retries=0)
        self.assertEqual(c.wait("e1").status, "success")           # no bound of its own
        self.assertEqual(c.execute("python", "1").status, "success")
        with self.assertRaises(socket.timeout):                       # the client's timeout
            c.get("e1")
        self.assertEqual(self.srv.requests[0].headers["Host"], f"127.0.0.1:{self.srv.server_address[1]}")


class TestKeepAlive(Base):
    def test_connection_reused(self):
        c = self.serve(self.script((200, {"status": "ok"})))
        for _ in range(5):
            c.health()
        self.assertEqual(len({q.conn_id for q in self.srv.requests}), 1)

    def test_peer_closed_idle_connection(self):
        # The server closes the connection after its answer (without saying so): the next request
        # finds it dropped and opens another instead of failing.
        def answer_then_close(h):
            body = json.dumps(execution_doc()).encode()
            h.send_response(200)
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)
            h.wfile.flush()
            h.close_connection = True
        c = self.serve(lambda req: answer_then_close, max_retries=0)
        c.health()
        time.sleep(0.2)
        c.cancel("e1")  # not idempotent: sent on a dropped connection, it would fail
        self.assertEqual(len(self.srv.requests), 2)

    def test_context_manager_closes(self):
        c = self.serve(self.script((200, {"status": "ok"})))
        with c:
            c.health()
            self.assertEqual(len(c._idle), 1)
        self.assertEqual(len(c._idle), 0)
        with self.assertRaises(RuntimeError):
            c.health()


class TestUnixSocket(unittest.TestCase):
    def test_unix_endpoint(self):
        d = tempfile.mkdtemp()
        path = os.path.join(d, "api.sock")
        srv = start(UnixServer, path, lambda req: (200, {"status": "ok", "version": "0.1", "slots": 8}))
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        with Client("unix://" + path) as c:
            h = c.health()
            self.assertEqual((h.status, h.slots), ("ok", 8))
            c.health()
        self.assertEqual(srv.requests[0].path, "/v1/health")
        self.assertNotIn("Authorization", srv.requests[0].headers)

    def test_missing_socket(self):
        c = Client("unix:///nonexistent/sandboxd.sock", max_retries=1, backoff_base=0.01)
        with self.assertRaises(FileNotFoundError):
            c.health()

    def test_bad_endpoint(self):
        for e in ("ftp://x", "unix://", "http://"):
            with self.assertRaises(ValueError, msg=e):
                Client(e)


class TestListAndFiles(Base):
    def test_iter_pages(self):
        def route(req):
            if "cursor=c2" in req.path:
                return (200, {"executions": [execution_doc("c")], "next_cursor": None})
            return (200, {"executions": [execution_doc("a"), execution_doc("b")], "next_cursor": "c2"})
        c = self.serve(route)
        ids = [e.execution_id for e in c.iter_executions(session_id="s 1", failed=True, limit=2)]
        self.assertEqual(ids, ["a", "b", "c"])
        self.assertEqual(self.srv.requests[0].path, "/v1/executions?session_id=s+1&limit=2&failed=true")

    def test_download_and_put(self):
        blob = os.urandom(300000)

        def route(req):
            if req.method == "PUT":
                return (201, {"path": "in/a b.bin", "size": len(req.body)})
            return (200, blob, {"Content-Type": "application/octet-stream"})
        c = self.serve(route)
        d = tempfile.mkdtemp()
        art = sandboxd.Artifact(path="x.txt", url="/v1/executions/e1/artifacts/x.txt?expires=1&signature=ab")
        self.assertEqual(c.download_artifact(art, os.path.join(d, "x")), len(blob))
        with open(os.path.join(d, "x"), "rb") as f:
            self.assertEqual(f.read(), blob)
        buf = io.BytesIO()
        c.download_artifact(art.url, buf)
        self.assertEqual(buf.getvalue(), blob)
        self.assertEqual(c.get_file("s1", "out/r.txt"), blob)
        self.assertEqual(c.put_file("s1", "in/a b.bin", b"123")["size"], 3)
        with open(os.path.join(d, "x"), "rb") as f:
            self.assertEqual(c.put_file("s1", "in/a b.bin", f)["size"], len(blob))
        paths = [q.path for q in self.srv.requests]
        self.assertEqual(paths[0], art.url)
        self.assertEqual(paths[2], "/v1/sessions/s1/files/out/r.txt")
        self.assertEqual(paths[3], "/v1/sessions/s1/files/in/a%20b.bin")
        self.assertEqual(self.srv.requests[4].body, blob)
        self.assertEqual(os.listdir(d), ["x"])  # no .part file left


def sse_body(events):
    out = []
    for ev_id, name, data in events:
        out.append(f"id: {ev_id}\nevent: {name}\ndata: {json.dumps(data)}\n\n")
    return out


class TestEvents(Base):
    def test_parser(self):
        p = SSEParser()
        got = []
        for line in [b": keepalive\n", b"\n", b"id: 1.0.0\r\n", b"event: status\n",
                     b'data: {"status":\n', b'data: "queued"}\n', b"\n", b"data:plain\n", b"\n",
                     b"retry: 10\n", b"\n"]:
            ev = p.feed_line(line)
            if ev:
                got.append(ev)
        self.assertEqual(len(got), 2)
        self.assertEqual((got[0].id, got[0].event, got[0].status), ("1.0.0", "status", "queued"))
        self.assertEqual((got[1].id, got[1].event, got[1].data), ("1.0.0", "message", "plain"))

    def _stream(self, chunks, drop_after=None):
        def send(h):
            h.send_response(200)
            h.send_header("Content-Type", "text/event-stream; charset=utf-8")
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            for i, c in enumerate(chunks):
                if drop_after is not None and i == drop_after:
                    h.wfile.flush()
                    h.close_connection = True
                    h.connection.shutdown(socket.SHUT_RDWR)
                    return
                b = c.encode()
                h.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
                h.wfile.flush()
                time.sleep(0.05)
            h.wfile.write(b"0\r\n\r\n")
        return send

    EVENTS = [("1.0.0", "status", {"status": "queued"}),
              ("2.0.0", "status", {"status": "running", "start": "cold"}),
              ("2.6.0", "stdout", {"text": "first\n"}),
              ("2.6.4", "stderr", {"text": "err\n"}),
              ("2.13.4", "stdout", {"text": "second\n"}),
              ("3.13.4", "result", execution_doc(stdout="first\nsecond\n"))]

    def test_events_live(self):
        chunks = sse_body(self.EVENTS)
        chunks.insert(3, ": keepalive\n\n")
        c = self.serve(lambda req: self._stream(chunks))
        evs = list(c.events("e1"))
        self.assertEqual([e.event for e in evs], ["status", "status", "stdout", "stderr", "stdout", "result"])
        self.assertEqual("".join(e.text for e in evs if e.event == "stdout"), "first\nsecond\n")
        self.assertIsInstance(evs[-1].result, Execution)
        self.assertEqual(evs[-1].result.stdout, "first\nsecond\n")
        self.assertEqual(self.srv.requests[0].headers["Accept"], "text/event-stream")

    def test_events_resume_with_last_event_id(self):
        def route(req):
            last = req.headers.get("Last-Event-ID")
            if last is None:
                return self._stream(sse_body(self.EVENTS), drop_after=3)
            n = [e[0] for e in self.EVENTS].index(last) + 1
            return self._stream(sse_body(self.EVENTS[n:]))
        c = self.serve(route)
        evs = list(c.events("e1"))
        self.assertEqual([e.id for e in evs], [e[0] for e in self.EVENTS])
        self.assertEqual([q.headers.get("Last-Event-ID") for q in self.srv.requests], [None, "2.6.0"])

    def test_events_404(self):
        c = self.serve(self.script(error(404, "not_found")))
        with self.assertRaises(APIError) as cm:
            next(iter(c.events("nope")))
        self.assertEqual(cm.exception.status, 404)
        self.assertEqual(len(self.srv.requests), 1)


class TestAsync(Base):
    def test_async_execute_and_events(self):
        import asyncio
        chunks = sse_body(TestEvents.EVENTS)

        def route(req):
            if req.path.endswith("/events"):
                return TestEvents._stream(None, chunks)
            return (200, execution_doc(req.json()["execution_id"]))
        self.serve(route)
        url = f"http://127.0.0.1:{self.srv.server_address[1]}"

        async def main():
            async with sandboxd.AsyncClient(url, timeout=5) as ac:
                rs = await asyncio.gather(*(ac.execute("python", str(i)) for i in range(4)))
                evs = [e.event async for e in ac.events("e1")]
                return rs, evs
        rs, evs = asyncio.run(main())
        self.assertEqual(len({r.execution_id for r in rs}), 4)
        self.assertEqual(evs, ["status", "status", "stdout", "stderr", "stdout", "result"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
