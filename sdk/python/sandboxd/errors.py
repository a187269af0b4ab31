# SPDX-License-Identifier: LGPL-2.1-or-later
"""Exceptions of the sandboxd SDK.

Three kinds, kept apart:

* :class:`SandboxError` -- the program ran (or was meant to) and did not succeed: a verdict of the
  daemon (``compile_error``, ``runtime_error``, ``timeout``, ``oom``, ``resource_limit``,
  ``internal_error``, ``input_error``, or ``cancelled``). The whole result is in ``.result``.
* :class:`APIError` -- the daemon refused or failed the request itself (an HTTP 4xx/5xx with the
  ``{"error": {"code", "message", "field"}}`` body).
* Transport errors -- the standard library's own (``OSError`` and its subclasses such as
  ``ConnectionError``, ``TimeoutError``/``socket.timeout``, and ``http.client.HTTPException``),
  passed through unchanged once the retries are used up.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional, Type

if TYPE_CHECKING:  # pragma: no cover
    from .models import Execution


class SandboxdError(Exception):
    """Base class of the SDK's own exceptions (not of transport errors)."""


class APIError(SandboxdError):
    """An HTTP error answer of the API: ``status`` (e.g. 400), ``code`` (e.g. ``invalid_request``),
    ``field`` (the request member it names, or None) and ``message``."""

    def __init__(self, status: int, code: str, message: str, field: Optional[str] = None,
                 body: Any = None, retry_after: Optional[float] = None) -> None:
        super().__init__(f"HTTP {status} {code}: {message}" + (f" (field {field})" if field else ""))
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.body = body
        self.retry_after = retry_after


class SandboxError(SandboxdError):
    """A program that did not succeed. ``type`` is the execution's ``error_type`` (or
    ``"cancelled"`` for a cancelled one); ``result`` the full :class:`~sandboxd.Execution`."""

    type: str = "failed"

    def __init__(self, result: "Execution") -> None:
        first = (result.summary or "").split("\n", 1)[0] or (result.reason or "")
        super().__init__(f"execution {result.execution_id}: {self._type_of(result)}: {first}")
        self.result = result
        self.type = self._type_of(result)

    @staticmethod
    def _type_of(result: "Execution") -> str:
        if result.status in ("cancelled", "orphaned"):
            return result.status
        return result.error_type or "failed"

    @property
    def execution_id(self) -> str:
        return self.result.execution_id


class CompileError(SandboxError):
    type = "compile_error"


class ProgramError(SandboxError):
    """``runtime_error``: the program exited non-zero or was killed by a signal."""
    type = "runtime_error"


class ExecutionTimeout(SandboxError):
    type = "timeout"


class OutOfMemory(SandboxError):
    type = "oom"


class ResourceLimitExceeded(SandboxError):
    type = "resource_limit"


class InternalError(SandboxError):
    """sandboxd could not run the program; not the program's fault (retrying may help)."""
    type = "internal_error"


class InputError(SandboxError):
    """An input file could not be fetched or written; the program did not run."""
    type = "input_error"


class Cancelled(SandboxError):
    type = "cancelled"


_BY_TYPE: Dict[str, Type[SandboxError]] = {c.type: c for c in (
    CompileError, ProgramError, ExecutionTimeout, OutOfMemory, ResourceLimitExceeded,
    InternalError, InputError, Cancelled)}


def sandbox_error_for(result: "Execution") -> SandboxError:
    """The exception for a result that is final and not a success."""
    cls = _BY_TYPE.get(SandboxError._type_of(result), SandboxError)
    return cls(result)
