# SPDX-License-Identifier: LGPL-2.1-or-later
"""Typed views of the API's JSON documents. Each keeps the document it was made from in ``raw``, so a
field this version of the SDK does not know yet is still reachable."""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Type, TypeVar

T = TypeVar("T")

FINAL_STATUSES = ("success", "failed", "cancelled", "orphaned")


def _build(cls: Type[T], doc: Dict[str, Any]) -> T:
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    kw = {k: v for k, v in doc.items() if k in names and k != "raw"}
    obj = cls(**kw)  # type: ignore[call-arg]
    obj.raw = doc  # type: ignore[attr-defined]
    return obj


@dataclass
class Limits:
    timeout_ms: Optional[int] = None
    memory_mb: Optional[int] = None
    cpu_cores: Optional[float] = None
    disk_mb: Optional[int] = None
    tasks: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


@dataclass
class Artifact:
    """A file the program left below /workspace/output. ``url`` is signed and relative to the API;
    download it with :meth:`Client.download_artifact`."""
    path: str
    size: int = 0
    mime_type: str = "application/octet-stream"
    sha256: str = ""
    url: Optional[str] = None
    url_expires_at: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, doc: Dict[str, Any]) -> "Artifact":
        return _build(cls, doc)


@dataclass
class Execution:
    """The execution object (docs/http-api.md, "The execution object"). Fields not known yet
    (queued, running) are None; ``stdout``/``stderr``/``artifacts`` are None in listings."""
    execution_id: str
    status: str
    record_id: Optional[str] = None
    session_id: Optional[str] = None
    language: Optional[str] = None
    error_type: Optional[str] = None
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    stdout: Optional[str] = None
    stderr: Optional[str] = None
    stdout_bytes: Optional[int] = None
    stdout_lines: Optional[int] = None
    stdout_truncated: Optional[bool] = None
    stderr_bytes: Optional[int] = None
    stderr_lines: Optional[int] = None
    stderr_truncated: Optional[bool] = None
    duration_ms: Optional[int] = None
    cpu_time_ms: Optional[int] = None
    peak_memory_mb: Optional[float] = None
    created_at: Optional[str] = None
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    limits: Optional[Limits] = None
    unit: Optional[str] = None
    # Several nodes: the node that holds it, and 2 once it ran again after its node was lost.
    node: Optional[str] = None
    attempt: Optional[int] = None
    start: Optional[str] = None
    reason: Optional[str] = None
    error_message: Optional[str] = None
    artifacts: Optional[List[Artifact]] = None
    artifacts_skipped: Optional[List[Dict[str, Any]]] = None
    artifacts_skipped_total: Optional[int] = None
    network: Optional[Dict[str, Any]] = None
    environment: Optional[str] = None
    # {"tier": "standard" | "strong", "reasons": [...]}: the tier the program ran in and why.
    isolation: Optional[Dict[str, Any]] = None
    summary: Optional[str] = None
    callback: Optional[Dict[str, Any]] = None
    args: Optional[List[str]] = None
    stdin_bytes: Optional[int] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, doc: Dict[str, Any]) -> "Execution":
        ex = _build(cls, doc)
        if isinstance(doc.get("limits"), dict):
            ex.limits = _build(Limits, doc["limits"])
        if isinstance(doc.get("artifacts"), list):
            ex.artifacts = [Artifact.from_dict(a) for a in doc["artifacts"]]
        return ex

    @property
    def done(self) -> bool:
        """True once the execution is final (success, failed, cancelled or orphaned)."""
        return self.status in FINAL_STATUSES

    @property
    def ok(self) -> bool:
        return self.status == "success"

    def check(self) -> "Execution":
        """Raise the :class:`~sandboxd.SandboxError` subclass for a final result that is not a
        success; return self otherwise (also while not final)."""
        if self.done and not self.ok:
            from .errors import sandbox_error_for
            raise sandbox_error_for(self)
        return self


@dataclass
class ExecutionPage:
    """One page of ``GET /v1/executions``; ``next_cursor`` is None on the last page."""
    executions: List[Execution]
    next_cursor: Optional[str] = None


@dataclass
class Session:
    session_id: str
    record_id: Optional[str] = None
    disk_mb: Optional[int] = None
    size_bytes: Optional[int] = None
    created_at: Optional[str] = None
    last_used_at: Optional[str] = None
    expires_at: Optional[str] = None
    executions: Optional[int] = None
    active: Optional[str] = None
    pending: Optional[int] = None
    recent_executions: Optional[List[str]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, doc: Dict[str, Any]) -> "Session":
        return _build(cls, doc)


@dataclass
class FileEntry:
    name: str
    type: str  # file, directory, symlink, other
    size: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class DirectoryListing:
    path: str
    entries: List[FileEntry]
    truncated: bool = False


@dataclass
class Language:
    name: str
    aliases: List[str] = field(default_factory=list)
    source: Optional[str] = None
    compiled: bool = False
    version: Optional[str] = None
    available: bool = True
    reason: Optional[str] = None
    environments: List[Dict[str, Any]] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, doc: Dict[str, Any]) -> "Language":
        return _build(cls, doc)


@dataclass
class Health:
    status: str
    version: Optional[str] = None
    running: int = 0
    queued: int = 0
    slots: int = 0
    queue_max: int = 0
    finished: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, doc: Dict[str, Any]) -> "Health":
        return _build(cls, doc)


@dataclass
class Event:
    """One Server-Sent Event of ``GET /v1/executions/{id}/events``.

    ``event`` is ``status``, ``stdout``, ``stderr``, ``elided`` or ``result``; ``id`` the
    ``STAGE.OUT.ERR`` position (pass it as ``last_event_id`` to resume); ``data`` the decoded JSON.
    Shortcuts: ``text`` (stdout/stderr), ``status`` (status events), ``result`` (the final
    :class:`Execution` of the result event)."""
    event: str
    id: Optional[str]
    data: Any

    @property
    def text(self) -> Optional[str]:
        if self.event in ("stdout", "stderr") and isinstance(self.data, dict):
            return self.data.get("text")
        return None

    @property
    def status(self) -> Optional[str]:
        if isinstance(self.data, dict):
            if self.event == "status" or self.event == "result":
                return self.data.get("status")
        return None

    @property
    def result(self) -> Optional[Execution]:
        if self.event == "result" and isinstance(self.data, dict):
            return Execution.from_dict(self.data)
        return None


class SSEParser:
    """An incremental parser of the text/event-stream format (the WHATWG rules that the daemon's
    streams use): ``field: value`` lines, a blank line ends an event, ``:`` lines are comments,
    several ``data`` lines are joined with newlines, ``id`` is kept across events. Feed it lines
    (bytes, with or without the line end); it returns an Event when one is complete."""

    def __init__(self) -> None:
        self.last_id: Optional[str] = None
        self._event = ""
        self._data: List[str] = []
        self._have = False

    def feed_line(self, raw: bytes) -> Optional[Event]:
        line = raw.decode("utf-8", "replace")
        if line.endswith("\n"):
            line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
        if line == "":
            if not self._have:
                return None
            ev_name = self._event or "message"
            text = "\n".join(self._data)
            self._event, self._data, self._have = "", [], False
            try:
                data: Any = json.loads(text) if text else None
            except ValueError:
                data = text
            return Event(event=ev_name, id=self.last_id, data=data)
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
            self._have = True
        elif name == "data":
            self._data.append(value)
            self._have = True
        elif name == "id":
            if "\0" not in value:
                self.last_id = value
            self._have = True
        # "retry" and unknown fields are ignored
        return None
