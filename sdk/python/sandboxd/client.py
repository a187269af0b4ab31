# SPDX-License-Identifier: LGPL-2.1-or-later
"""The synchronous client of sandboxd's HTTP API (docs/http-api.md), standard library only."""
from __future__ import annotations

import http.client
import json
import os
import random
import secrets
import select
import socket
import threading
import time
import urllib.parse
from typing import (IO, Any, BinaryIO, Dict, Iterable, Iterator, List, Mapping, Optional,
                    Sequence, Tuple, Union)

from .errors import APIError, sandbox_error_for
from .models import (Artifact, DirectoryListing, Event, Execution, ExecutionPage, FileEntry, Health,
                     Language, Limits, Session, SSEParser)

__all__ = ["Client", "DEFAULT_ENDPOINT", "new_execution_id", "inline_file", "url_file"]

DEFAULT_ENDPOINT = "unix:///run/sandboxd/api.sock"
USER_AGENT = "sandboxd-python/0.1"
# Statuses after which the daemon did nothing with the request and says to come back: retried for
# every method. 502/504 come from a proxy in front of a TCP listener, never from sandboxd itself.
RETRY_STATUSES = (429, 502, 503, 504)
_CHUNK = 64 * 1024
_UNSET: Any = object()

PathLike = Union[str, "os.PathLike[str]"]


def new_execution_id() -> str:
    """A fresh random execution id (``[A-Za-z0-9_.-]{1,64}``), as the SDK gives every execute()
    and submit() that does not bring its own: it makes the request safe to send again."""
    return "py-" + secrets.token_hex(16)


def inline_file(path: str, data: Union[bytes, str]) -> Dict[str, str]:
    """An entry of ``files`` with the content inline (base64), put at /workspace/input/PATH."""
    import base64
    if isinstance(data, str):
        data = data.encode("utf-8")
    return {"path": path, "content_base64": base64.b64encode(data).decode("ascii")}


def url_file(path: str, url: str) -> Dict[str, str]:
    """An entry of ``files`` that sandboxd downloads from URL to /workspace/input/PATH."""
    return {"path": path, "url": url}


class _UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 over an AF_UNIX stream socket."""

    def __init__(self, path: str, timeout: Optional[float]) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(self.timeout)
            s.connect(self.unix_path)
        except BaseException:
            s.close()
            raise
        self.sock = s


class _Pooled:
    __slots__ = ("conn", "idle_since")

    def __init__(self, conn: http.client.HTTPConnection) -> None:
        self.conn = conn
        self.idle_since = 0.0


def _retry_after(value: Optional[str]) -> Optional[float]:
    if not value:
        return None
    try:
        return max(0.0, float(value.strip()))
    except ValueError:
        return None


def _api_error(status: int, headers: http.client.HTTPMessage, data: bytes) -> APIError:
    body: Any = None
    code, message, fld = "http_%d" % status, http.client.responses.get(status, "error"), None
    try:
        body = json.loads(data) if data else None
    except ValueError:
        body = data.decode("utf-8", "replace")
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        code = str(err.get("code") or code)
        message = str(err.get("message") or message)
        fld = err.get("field")
    return APIError(status, code, message, fld, body, _retry_after(headers.get("Retry-After")))


def _quote_id(value: str) -> str:
    if not value:
        raise ValueError("an id must not be empty")
    return urllib.parse.quote(value, safe="")


def _quote_path(path: str) -> str:
    return urllib.parse.quote(path, safe="/")


class Client:
    """A client of one sandboxd endpoint.

    ``endpoint``: ``unix:///run/sandboxd/api.sock`` (the default; also taken from the environment
    variable ``SANDBOXD_ENDPOINT``), or ``http://host:port`` / ``https://host:port`` of a TCP
    listener, which needs ``api_key`` (sent as ``Authorization: Bearer KEY``; default from
    ``SANDBOXD_API_KEY``).

    ``timeout``: seconds a socket operation of an ordinary request may take (connect, send, each
    read). Calls that wait for a result (``execute``, ``wait``) hold the connection until the run is
    final and are bounded by their own ``timeout=`` argument instead (default: no bound).

    ``max_retries``: how many times a request is sent again after a lost connection or a
    429/502/503/504 answer, with exponential backoff and jitter (``backoff_base`` doubling up to
    ``backoff_max`` seconds; a ``Retry-After`` is honoured up to ``backoff_max``). Only what is safe
    is retried after the request may have reached the daemon: GETs, and executions, which always
    carry an ``execution_id`` (the SDK makes one when the caller does not), so a second POST
    returns the same execution instead of running it twice. Other 4xx answers are never retried.

    Connections are kept alive and reused (up to ``pool_size`` idle ones); the client is safe to
    share between threads. Use it as a context manager, or call :meth:`close`.
    """

    def __init__(self, endpoint: Optional[str] = None, api_key: Optional[str] = None,
                 timeout: float = 30.0, max_retries: int = 3, *, backoff_base: float = 0.25,
                 backoff_max: float = 8.0, pool_size: int = 8, idle_timeout: float = 5.0,
                 user_agent: str = USER_AGENT) -> None:
        endpoint = endpoint or os.environ.get("SANDBOXD_ENDPOINT") or DEFAULT_ENDPOINT
        if api_key is None:
            api_key = os.environ.get("SANDBOXD_API_KEY") or None
        u = urllib.parse.urlsplit(endpoint)
        self._unix_path: Optional[str] = None
        self._prefix = ""
        if u.scheme == "unix":
            path = u.path if not u.netloc else "/" + u.netloc + u.path
            if not path:
                raise ValueError(f"endpoint {endpoint!r}: no socket path")
            self._unix_path = urllib.parse.unquote(path)
            self._host = "localhost"
        elif u.scheme in ("http", "https"):
            if not u.hostname:
                raise ValueError(f"endpoint {endpoint!r}: no host")
            self._scheme = u.scheme
            self._host = u.hostname
            self._port = u.port
            self._prefix = u.path.rstrip("/")
        else:
            raise ValueError(f"endpoint {endpoint!r}: use unix:///PATH, http://HOST:PORT or https://HOST:PORT")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.endpoint = endpoint
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.pool_size = pool_size
        self.idle_timeout = idle_timeout
        self.user_agent = user_agent
        self._idle: List[_Pooled] = []
        self._lock = threading.Lock()
        self._closed = False

    # ---- connections ----------------------------------------------------------------------------

    def _new_conn(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self._unix_path is not None:
            return _UnixHTTPConnection(self._unix_path, timeout)
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    @staticmethod
    def _dropped(conn: http.client.HTTPConnection) -> bool:
        """The peer closed an idle connection (or sent something unasked): not reusable."""
        sock = conn.sock
        if sock is None:
            return True
        try:
            r, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(r)

    def _take(self, timeout: Optional[float]) -> Tuple[http.client.HTTPConnection, bool]:
        if self._closed:
            raise RuntimeError("the client is closed")
        now = time.monotonic()
        while True:
            with self._lock:
                p = self._idle.pop() if self._idle else None
            if p is None:
                # Connecting is bounded by the client's timeout even for a call without a bound
                # of its own (the long polls): a host that does not answer is not waited for.
                return self._new_conn(self.timeout), False
            # The daemon closes a keep-alive connection whose next request does not come within
            # RequestHeaderTimeoutSec= (10 s by default): do not race it.
            if now - p.idle_since > self.idle_timeout or self._dropped(p.conn):
                p.conn.close()
                continue
            p.conn.timeout = timeout
            if p.conn.sock is not None:
                p.conn.sock.settimeout(timeout)
            return p.conn, True

    def _give_back(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> None:
        if resp.will_close or self._closed or conn.sock is None:
            conn.close()
            return
        p = _Pooled(conn)
        p.idle_since = time.monotonic()
        with self._lock:
            if len(self._idle) < self.pool_size:
                self._idle.append(p)
                return
        conn.close()

    def close(self) -> None:
        """Close every idle connection; the client cannot be used afterwards."""
        self._closed = True
        with self._lock:
            idle, self._idle = self._idle, []
        for p in idle:
            p.conn.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- requests -------------------------------------------------------------------------------

    def _delay(self, attempt: int, retry_after: Optional[float]) -> float:
        d = min(self.backoff_max, self.backoff_base * (2 ** attempt))
        d = random.uniform(d / 2, d)  # jitter: callers that failed together come back apart
        if retry_after is not None:
            d = max(d, min(retry_after, self.backoff_max))
        return d

    def _send(self, method: str, path: str, *, body: Any = None, json_body: Any = _UNSET,
              headers: Optional[Mapping[str, str]] = None, idempotent: bool = True,
              timeout: Any = _UNSET, ok: Sequence[int] = (200,)
              ) -> Tuple[http.client.HTTPResponse, http.client.HTTPConnection]:
        """Send a request with the retry policy; returns the response (status in ``ok``) and its
        connection, which the caller reads and hands to _give_back (or closes). Raises APIError
        for an error answer, the transport's exception when the retries are used up."""
        t = self.timeout if timeout is _UNSET else timeout
        h = {"User-Agent": self.user_agent}
        if self.api_key:
            h["Authorization"] = "Bearer " + self.api_key
        if json_body is not _UNSET:
            body = json.dumps(json_body, ensure_ascii=False, allow_nan=False).encode("utf-8")
            h["Content-Type"] = "application/json"
        if headers:
            h.update(headers)
        seek_to: Optional[int] = None
        resendable = body is None or isinstance(body, (bytes, bytearray, memoryview))
        if not resendable:
            try:
                seek_to = body.tell() if body.seekable() else None
            except (AttributeError, OSError):
                seek_to = None
            resendable = seek_to is not None  # a stream read once cannot be sent again
        url = self._prefix + path
        attempt = 0
        while True:
            conn, reused = self._take(t)
            phase = "connect"
            try:
                if conn.sock is None:
                    conn.connect()
                    conn.timeout = t
                    conn.sock.settimeout(t)
                phase = "send"
                if seek_to is not None:
                    body.seek(seek_to)
                conn.request(method, url, body=body, headers=h)
                phase = "response"
                resp = conn.getresponse()
            except socket.timeout:
                conn.close()
                raise  # the caller's bound: never retried
            except (OSError, http.client.HTTPException):
                conn.close()
                # Before the connection stood nothing was sent: always safe to try again. After,
                # the daemon may have acted on it: only idempotent requests are sent again.
                can = resendable and (phase == "connect" or idempotent)
                if can and reused:
                    continue  # a stale keep-alive connection: a fresh one, not counted as an attempt
                if not can or attempt >= self.max_retries:
                    raise
                time.sleep(self._delay(attempt, None))
                attempt += 1
                continue
            if resp.status in ok:
                return resp, conn
            try:
                data = resp.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                data = b""
            else:
                self._give_back(conn, resp)
            err = _api_error(resp.status, resp.headers, data)
            # 429/503: the daemon did nothing with the request (a full queue, a stop under way).
            if resp.status in RETRY_STATUSES and resendable and attempt < self.max_retries:
                time.sleep(self._delay(attempt, err.retry_after))
                attempt += 1
                continue
            raise err

    def _json(self, method: str, path: str, *, ok: Sequence[int] = (200,), **kw: Any) -> Any:
        resp, conn = self._send(method, path, ok=ok, **kw)
        try:
            data = resp.read()
        except BaseException:
            conn.close()
            raise
        self._give_back(conn, resp)
        if not data:
            return None
        return json.loads(data)

    # ---- executions -----------------------------------------------------------------------------

    @staticmethod
    def _request_body(language: str, code: str, execution_id: Optional[str], fields: Dict[str, Any]) -> Dict[str, Any]:
        body: Dict[str, Any] = {"execution_id": execution_id or new_execution_id(),
                                "language": language, "code": code}
        for k, v in fields.items():
            if v is None:
                continue
            if k == "limits" and isinstance(v, Limits):
                v = v.to_dict()
            body[k] = v
        return body

    def execute(self, language: str, code: str, *, execution_id: Optional[str] = None,
                session_id: Optional[str] = None, limits: Union[Limits, Mapping[str, Any], None] = None,
                env: Optional[Mapping[str, str]] = None, args: Optional[Sequence[str]] = None,
                stdin: Optional[str] = None, files: Optional[Iterable[Mapping[str, str]]] = None,
                seed: Optional[int] = None, environment: Optional[str] = None,
                network: Optional[Mapping[str, Any]] = None, start: Optional[str] = None,
                isolation: Optional[str] = None,
                callback_url: Optional[str] = None, check: bool = True,
                timeout: Optional[float] = None, extra: Optional[Mapping[str, Any]] = None) -> Execution:
        """Run a program and wait for its result (``POST /v1/executions?wait=true``).

        With ``check=True`` (the default) a program that did not succeed raises the
        :class:`~sandboxd.SandboxError` subclass of its verdict, the result in ``.result``; with
        ``check=False`` the result is returned whatever the verdict. ``timeout`` bounds the wait
        in seconds (``TimeoutError`` / ``socket.timeout``; the run goes on: :meth:`cancel` stops
        it). ``isolation="strong"`` runs the program under gVisor whatever the daemon's risk scan
        says (``execution.isolation`` tells which tier ran and why). ``extra``: further request
        fields, sent as given."""
        fields: Dict[str, Any] = dict(session_id=session_id, limits=limits, env=env,
                                      args=list(args) if args is not None else None, stdin=stdin,
                                      files=list(files) if files is not None else None, seed=seed,
                                      environment=environment, network=network, start=start,
                                      isolation=isolation, callback_url=callback_url)
        fields.update(extra or {})
        body = self._request_body(language, code, execution_id, fields)
        doc = self._json("POST", "/v1/executions?wait=true", json_body=body, timeout=timeout,
                         idempotent=True, ok=(200,))
        ex = Execution.from_dict(doc)
        if check:
            ex.check()
        return ex

    def submit(self, language: str, code: str, *, execution_id: Optional[str] = None,
               session_id: Optional[str] = None, limits: Union[Limits, Mapping[str, Any], None] = None,
               env: Optional[Mapping[str, str]] = None, args: Optional[Sequence[str]] = None,
               stdin: Optional[str] = None, files: Optional[Iterable[Mapping[str, str]]] = None,
               seed: Optional[int] = None, environment: Optional[str] = None,
               network: Optional[Mapping[str, Any]] = None, start: Optional[str] = None,
               isolation: Optional[str] = None, callback_url: Optional[str] = None, extra: Optional[Mapping[str, Any]] = None) -> str:
        """Queue a program and return its execution id at once (``POST /v1/executions``). Poll
        with :meth:`get`, block with :meth:`wait`, follow with :meth:`events`, or let sandboxd POST
        the result to ``callback_url``. Submitting the same ``execution_id`` again returns the same
        execution (never a second run)."""
        fields: Dict[str, Any] = dict(session_id=session_id, limits=limits, env=env,
                                      args=list(args) if args is not None else None, stdin=stdin,
                                      files=list(files) if files is not None else None, seed=seed,
                                      environment=environment, network=network, start=start,
                                      isolation=isolation, callback_url=callback_url)
        fields.update(extra or {})
        body = self._request_body(language, code, execution_id, fields)
        doc = self._json("POST", "/v1/executions", json_body=body, idempotent=True, ok=(200, 202))
        return str(doc["execution_id"])

    def get(self, execution_id: str) -> Execution:
        """The execution as it is now (``GET /v1/executions/{id}``)."""
        return Execution.from_dict(self._json("GET", f"/v1/executions/{_quote_id(execution_id)}"))

    def wait(self, execution_id: str, *, timeout: Optional[float] = None, check: bool = False) -> Execution:
        """Block until the execution is final (``GET /v1/executions/{id}?wait=true``) and return it;
        ``check=True`` raises its SandboxError like :meth:`execute`. ``timeout`` in seconds bounds
        the wait (``TimeoutError`` / ``socket.timeout``); default no bound."""
        doc = self._json("GET", f"/v1/executions/{_quote_id(execution_id)}?wait=true", timeout=timeout)
        ex = Execution.from_dict(doc)
        if check:
            ex.check()
        return ex

    def cancel(self, execution_id: str) -> Execution:
        """Ask sandboxd to stop the execution (``POST /v1/executions/{id}/cancel``); returns the
        execution as it is then. Its final status becomes ``cancelled`` (use :meth:`wait`). A
        finished execution raises APIError 409 ``conflict``."""
        doc = self._json("POST", f"/v1/executions/{_quote_id(execution_id)}/cancel", json_body={},
                         idempotent=False, ok=(200, 202))
        return Execution.from_dict(doc)

    def list(self, *, session_id: Optional[str] = None, status: Optional[str] = None,
             error_type: Optional[str] = None, failed: Optional[bool] = None,
             order: Optional[str] = None, limit: Optional[int] = None,
             cursor: Optional[str] = None) -> ExecutionPage:
        """One page of the caller's executions (``GET /v1/executions``), newest first (or
        ``order="duration_ms"``). Listed executions carry no stdout/stderr/artifacts. Pass the
        page's ``next_cursor`` as ``cursor`` for the next one, or use :meth:`iter_executions`."""
        q: List[Tuple[str, str]] = []
        for k, v in (("session_id", session_id), ("status", status), ("error_type", error_type),
                     ("order", order), ("limit", limit), ("cursor", cursor)):
            if v is not None:
                q.append((k, str(v)))
        if failed:
            q.append(("failed", "true"))
        path = "/v1/executions" + ("?" + urllib.parse.urlencode(q) if q else "")
        doc = self._json("GET", path)
        return ExecutionPage([Execution.from_dict(e) for e in doc.get("executions") or []],
                             doc.get("next_cursor"))

    def iter_executions(self, **filters: Any) -> Iterator[Execution]:
        """Every execution matching the filters of :meth:`list`, page after page."""
        cursor = filters.pop("cursor", None)
        while True:
            page = self.list(cursor=cursor, **filters)
            for e in page.executions:
                yield e
            if not page.next_cursor or not page.executions:
                return
            cursor = page.next_cursor

    # ---- artifacts ------------------------------------------------------------------------------

    def artifacts(self, execution_id: str) -> Optional[List[Artifact]]:
        """The execution's artifacts with freshly signed URLs (None until it is final)."""
        doc = self._json("GET", f"/v1/executions/{_quote_id(execution_id)}/artifacts")
        arts = doc.get("artifacts")
        return None if arts is None else [Artifact.from_dict(a) for a in arts]

    def download_artifact(self, artifact: Union[Artifact, str], dest: Union[PathLike, BinaryIO, None] = None
                          ) -> Union[bytes, int]:
        """Download an artifact (an :class:`Artifact` of a result, or its signed ``url``). Streamed
        into ``dest`` -- a path (written whole or not at all) or a binary file object -- returning
        the number of bytes; without ``dest`` the bytes are returned. An expired or unknown link is
        APIError 404 (fetch the execution again for fresh URLs)."""
        url = artifact.url if isinstance(artifact, Artifact) else artifact
        if not url:
            raise ValueError("the artifact has no url")
        if "://" in url:
            url = urllib.parse.urlsplit(url)._replace(scheme="", netloc="").geturl()
        return self._download(url, dest)

    def _download(self, path: str, dest: Union[PathLike, BinaryIO, None]) -> Union[bytes, int]:
        resp, conn = self._send("GET", path)
        try:
            if dest is None:
                data = resp.read()
                self._give_back(conn, resp)
                return data
            if hasattr(dest, "write"):
                n = self._copy(resp, dest)  # type: ignore[arg-type]
            else:
                target = os.fspath(dest)  # type: ignore[arg-type]
                tmp = f"{target}.part-{secrets.token_hex(4)}"
                try:
                    with open(tmp, "wb") as f:
                        n = self._copy(resp, f)
                    os.replace(tmp, target)
                except BaseException:
                    try:
                        os.unlink(tmp)
                    except OSError:
                        pass
                    raise
        except BaseException:
            conn.close()
            raise
        self._give_back(conn, resp)
        return n

    @staticmethod
    def _copy(resp: http.client.HTTPResponse, f: IO[bytes]) -> int:
        n = 0
        while True:
            chunk = resp.read(_CHUNK)
            if not chunk:
                return n
            f.write(chunk)
            n += len(chunk)

    # ---- sessions -------------------------------------------------------------------------------

    def get_session(self, session_id: str) -> Session:
        return Session.from_dict(self._json("GET", f"/v1/sessions/{_quote_id(session_id)}"))

    def list_sessions(self) -> List[Session]:
        doc = self._json("GET", "/v1/sessions")
        return [Session.from_dict(s) for s in doc.get("sessions") or []]

    def delete_session(self, session_id: str) -> Dict[str, Any]:
        """Remove the session and its files now (409 while a run of it is queued or running)."""
        return self._json("DELETE", f"/v1/sessions/{_quote_id(session_id)}", idempotent=False)

    def _file_path(self, session_id: str, path: str) -> str:
        return f"/v1/sessions/{_quote_id(session_id)}/files/{_quote_path(path.lstrip('/'))}"

    def put_file(self, session_id: str, path: str, data: Union[bytes, str, BinaryIO]) -> Dict[str, Any]:
        """Create or replace ``/workspace/PATH`` of a session between its runs (its directory must
        exist). ``data``: bytes, text (UTF-8) or a binary file object (streamed)."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        headers = {"Content-Type": "application/octet-stream"}
        if not isinstance(data, (bytes, bytearray, memoryview)):
            try:
                size = os.fstat(data.fileno()).st_size - data.tell()
            except (AttributeError, OSError, ValueError):
                raise ValueError("put_file: a file object must be a real file (fileno); pass bytes otherwise")
            headers["Content-Length"] = str(size)
        return self._json("PUT", self._file_path(session_id, path), body=data, headers=headers,
                          idempotent=True, ok=(200, 201))

    def get_file(self, session_id: str, path: str, dest: Union[PathLike, BinaryIO, None] = None
                 ) -> Union[bytes, int]:
        """A file of a session's workspace: its bytes, or streamed into ``dest`` (a path or a
        binary file object; returns the byte count)."""
        return self._download(self._file_path(session_id, path), dest)

    def list_files(self, session_id: str, path: str = "") -> DirectoryListing:
        """A directory of a session's workspace (``""``: /workspace itself)."""
        p = path.strip("/")
        doc = self._json("GET", self._file_path(session_id, p + "/" if p else ""))
        return DirectoryListing(doc.get("path", p),
                                [FileEntry(e["name"], e["type"], e.get("size", 0), e) for e in doc.get("entries") or []],
                                bool(doc.get("truncated")))

    def delete_file(self, session_id: str, path: str) -> Dict[str, Any]:
        """Remove a file, a symlink or an empty directory of a session's workspace."""
        return self._json("DELETE", self._file_path(session_id, path), idempotent=False)

    # ---- live output ----------------------------------------------------------------------------

    def events(self, execution_id: str, *, last_event_id: Optional[str] = None,
               read_timeout: Optional[float] = 60.0) -> "EventStream":
        """Follow an execution's live output (``GET /v1/executions/{id}/events``): an iterator of
        :class:`~sandboxd.Event` (status, stdout, stderr, elided, and last the result), ending
        after the result. A lost connection is resumed with ``Last-Event-ID`` (nothing repeated,
        nothing lost), up to ``max_retries`` times in a row. ``read_timeout``: seconds without a
        byte (the daemon sends a keepalive every 15 s) before the stream counts as lost."""
        return EventStream(self, execution_id, last_event_id, read_timeout)

    # ---- the daemon -----------------------------------------------------------------------------

    def languages(self) -> List[Language]:
        doc = self._json("GET", "/v1/languages")
        return [Language.from_dict(x) for x in doc.get("languages") or []]

    def health(self) -> Health:
        return Health.from_dict(self._json("GET", "/v1/health"))


class EventStream(Iterator[Event]):
    """The iterator :meth:`Client.events` returns; also a context manager (closes its connection).
    ``last_event_id`` is the id of the last event read (for resuming elsewhere)."""

    def __init__(self, client: Client, execution_id: str, last_event_id: Optional[str],
                 read_timeout: Optional[float]) -> None:
        self._client = client
        self._path = f"/v1/executions/{_quote_id(execution_id)}/events"
        self.last_event_id = last_event_id
        self._timeout = read_timeout
        self._resp: Optional[http.client.HTTPResponse] = None
        self._conn: Optional[http.client.HTTPConnection] = None
        self._parser = SSEParser()
        self._failures = 0
        self._done = False

    def _open(self) -> None:
        h = {"Accept": "text/event-stream"}
        if self.last_event_id:
            h["Last-Event-ID"] = self.last_event_id
        self._resp, self._conn = self._client._send("GET", self._path, headers=h, timeout=self._timeout)
        self._parser = SSEParser()
        self._parser.last_id = self.last_event_id

    def __iter__(self) -> "EventStream":
        return self

    def __next__(self) -> Event:
        while not self._done:
            try:
                if self._resp is None:
                    self._open()
                assert self._resp is not None
                line = self._resp.readline()
            except APIError:
                self.close()
                raise
            except (OSError, http.client.HTTPException):
                self._drop()
                self._failures += 1
                if self._failures > self._client.max_retries:
                    self._done = True
                    raise
                time.sleep(self._client._delay(self._failures - 1, None))
                continue
            if not line:
                # The stream ended without its result: resumed where it stopped.
                self._drop()
                self._failures += 1
                if self._failures > self._client.max_retries:
                    self._done = True
                    raise ConnectionError("the event stream ended before the result")
                continue
            ev = self._parser.feed_line(line)
            if ev is None:
                continue
            self._failures = 0
            self.last_event_id = ev.id
            if ev.event == "result":
                self.close()
            return ev
        raise StopIteration

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = self._resp = None

    def close(self) -> None:
        self._done = True
        self._drop()

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
