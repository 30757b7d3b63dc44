"""Inside the tool process: load the tool, run ``run(ctx, input)``, report over the pipe.

The protocol uses the process's original stdin and stdout; the tool's own prints go to stderr
(the run's log), so nothing a tool prints can forge a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import importlib.util
import inspect
import json
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import IO, Any

from sitetools.sdk.context import Context
from sitetools.sdk.errors import CredentialsRejected, InputRejected, ToolError

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15


def die_with_parent() -> None:
    """Killed when the worker that started this process dies, so a worker killed with SIGKILL
    leaves no tool running. (Dying before this line closes the pipe instead: the wait for
    the ``start`` message ends at once.)"""
    parent = os.getppid()
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _pipes() -> tuple[IO[bytes], IO[bytes]]:
    reader = os.fdopen(os.dup(0), "rb", buffering=0)
    writer = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # print() now goes to the log
    sys.stdout = sys.stderr
    return reader, writer


def _load(entrypoint: str) -> Any:
    file, _, function = entrypoint.partition(":")
    path = Path.cwd() / file
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location("tool_main", path)
    if spec is None or spec.loader is None:
        raise ToolError("The tool's code could not be loaded.")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, function)


def _failure(error: BaseException) -> dict[str, Any]:
    if isinstance(error, InputRejected):
        return {
            "op": "error",
            "code": "input_rejected",
            "reason": error.reason,
            "field": error.field,
            "possible_commit": error.possible_commit,
        }
    if isinstance(error, CredentialsRejected):
        return {
            "op": "error",
            "code": "credentials_rejected",
            "field": error.field,
            "possible_commit": error.possible_commit,
        }
    if isinstance(error, ToolError):
        return {"op": "error", "code": "execution_failed", "message": error.customer_message}
    return {"op": "error", "code": "execution_failed", "message": None}


def _name(label: str) -> None:
    """The process's name (``ps``, ``/proc/PID/comm``) becomes the job's ID (its first 15
    characters), so an operator can tell which process runs which job."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).prctl(_PR_SET_NAME, label.encode()[:15] + b"\0", 0, 0, 0)


async def _main(reader: IO[bytes], writer: IO[bytes]) -> None:
    # A spare process waits here, SDK imported, until its run is known.
    line = reader.readline()
    if not line:
        return  # the worker closed the pipe (it stopped, or died) before any run
    start = json.loads(line)
    _name(str(start.get("label") or "sitetools-tool"))
    ctx = Context(start, reader, writer)
    try:
        run = _load(start["entrypoint"])
        output = run(ctx, start["input"])
        if inspect.isawaitable(output):
            output = await output
        ctx.send({"op": "result", "output": output})
    except Exception as error:
        traceback.print_exc()
        ctx.send(_failure(error))
    finally:
        with contextlib.suppress(Exception):
            await ctx.aclose()


def main() -> None:
    die_with_parent()
    reader, writer = _pipes()
    asyncio.run(_main(reader, writer))


if __name__ == "__main__":
    main()
