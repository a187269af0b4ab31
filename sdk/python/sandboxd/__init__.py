# SPDX-License-Identifier: LGPL-2.1-or-later
"""Python client of sandboxd's HTTP API. See README.md.

    from sandboxd import Client
    with Client() as c:
        print(c.execute("python", "print('hello')").stdout)
"""
from .aio import AsyncClient, AsyncEventStream
from .client import DEFAULT_ENDPOINT, Client, EventStream, inline_file, new_execution_id, url_file
from .errors import (APIError, Cancelled, CompileError, ExecutionTimeout, InputError, InternalError,
                     OutOfMemory, ProgramError, ResourceLimitExceeded, SandboxdError, SandboxError,
                     sandbox_error_for)
from .models import (Artifact, DirectoryListing, Event, Execution, ExecutionPage, FileEntry, Health,
                     Language, Limits, Session, SSEParser)

__version__ = "0.1.0"

__all__ = [
    "Client", "EventStream", "AsyncClient", "AsyncEventStream", "DEFAULT_ENDPOINT", "new_execution_id", "inline_file", "url_file",
    "SandboxdError", "APIError", "SandboxError", "CompileError", "ProgramError", "ExecutionTimeout",
    "OutOfMemory", "ResourceLimitExceeded", "InternalError", "InputError", "Cancelled",
    "sandbox_error_for",
    "Artifact", "DirectoryListing", "Event", "Execution", "ExecutionPage", "FileEntry", "Health",
    "Language", "Limits", "Session", "SSEParser",
]
