"""The tool process: started by the worker, never inside it, with a stripped environment and
resource limits; killed with its whole process tree (browser included).

Limits: CPU seconds, open files, file size and no core dumps by ``setrlimit``; memory (PSS,
summed over the process tree) and process count by a watchdog the runner polls, because
Chromium reserves far more address space than it uses and ``RLIMIT_AS`` would break it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import resource
import shutil
import signal
import socket
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sitetools.runtime.protocol import MAX_MESSAGE, encode, read_message

__all__ = ["ForkServer", "Limits", "ToolProcess", "process_tree"]

_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 2048
    processes: int = 64
    open_files: int = 1024
    cpu_seconds: int = 600
    file_size_mb: int = 256


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: fields follow the last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def process_tree(root: int) -> list[int]:
    """``root`` and all its descendants alive now."""
    children = _children_map()
    tree, stack = [], [root]
    while stack:
        pid = stack.pop()
        tree.append(pid)
        stack.extend(children.get(pid, []))
    return tree


def _memory_bytes(pids: list[int]) -> int:
    """Proportional set size summed over ``pids``: shared pages (Chromium's many processes
    share most of theirs) count once in total, not once per process as RSS would."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
                    break
        except (OSError, ValueError, IndexError):
            with contextlib.suppress(OSError, ValueError, IndexError):
                total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
    return total


def _stripped_env(home: Path) -> dict[str, str]:
    """Nothing of the service's configuration, keys or database path."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }


def _apply_limits(pid: int, limits: Limits) -> None:
    """Set from the worker once the process exists (no ``preexec_fn``: Python can then start
    it with ``vfork``, which does not copy the worker's memory map or block its event loop).
    The process runs no tool code before its ``start`` message, sent after this."""
    for limit, value in (
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_FSIZE, limits.file_size_mb * 1024 * 1024),
        (resource.RLIMIT_CORE, 0),
    ):
        with contextlib.suppress(ValueError, OSError):
            resource.prlimit(pid, limit, (value, value))


class ToolProcess:
    """One run's process: the protocol over its stdin/stdout, its stderr into a log file."""

    def __init__(
        self, process: asyncio.subprocess.Process | _Forked, workdir: Path, limits: Limits
    ):
        self._process = process
        self.workdir = workdir
        self.log_path = workdir / "process.log"
        self.limits = limits

    @property
    def pid(self) -> int:
        return self._process.pid

    @classmethod
    async def start(cls, workdir: Path, limits: Limits) -> ToolProcess:
        """Started before its run is known (see ``spares``): the run's files, input and
        (by its ``start`` message) job ID come later."""
        (workdir / "tmp").mkdir(exist_ok=True)
        env = _stripped_env(workdir)
        log_path = workdir / "process.log"
        with log_path.open("wb") as log:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                "-m",
                "sitetools.runtime.child",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                cwd=workdir,
                env=env,
                start_new_session=True,
                limit=MAX_MESSAGE,
            )
        _apply_limits(process.pid, limits)
        return cls(process, workdir, limits)

    async def send(self, message: dict[str, Any]) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(encode(message))
        with contextlib.suppress(ConnectionError):
            await self._process.stdin.drain()

    async def receive(self) -> dict[str, Any] | None:
        assert self._process.stdout is not None
        return await read_message(self._process.stdout)

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    def limit_cpu(self, seconds: int) -> None:
        """The run's CPU limit, set once the run is known."""
        with contextlib.suppress(OSError, ValueError):
            resource.prlimit(self.pid, resource.RLIMIT_CPU, (seconds, seconds))

    def breach(self) -> str | None:
        """``memory_limit`` or ``process_limit`` when the tree is over a limit, else None."""
        tree = process_tree(self.pid)
        if len(tree) > self.limits.processes:
            return "process_limit"
        if _memory_bytes(tree) > self.limits.memory_mb * 1024 * 1024:
            return "memory_limit"
        return None

    def kill(self) -> None:
        """SIGKILL the whole tree now (a browser the tool started included)."""
        for _ in range(3):
            tree = process_tree(self.pid) if self._process.returncode is None else []
            for pid in reversed(tree):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if not tree:
                break
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    async def wait(self, seconds: float = 5) -> int | None:
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(self._process.wait(), seconds)
        return None

    def log_tail(self, limit: int = 4000) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_bytes()[-limit:].decode("utf-8", "replace")
        return ""


class _Forked:
    """A tool process forked by the zygote: not the worker's child, so its end is seen as the
    end of its stdout pipe and its PID leaving ``/proc`` (the zygote's kernel reaps it)."""

    def __init__(self, pid: int, stdin: asyncio.StreamWriter, stdout: asyncio.StreamReader):
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout

    @property
    def returncode(self) -> int | None:
        """None while it lives; -1 once it is gone (its exit status went to the zygote)."""
        try:
            state = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return -1
        return -1 if state[state.rfind(")") + 2 :].startswith(("Z", "X")) else None

    async def wait(self) -> int:
        # Not our child, so no SIGCHLD: look at /proc until it is gone.
        while self.returncode is None:  # noqa: ASYNC110 - nothing to wait on but /proc
            await asyncio.sleep(0.01)
        return -1


class ForkServer:
    """The worker's zygote (``runtime/zygote.py``): tool processes by ``fork`` of a process
    that has already started Python and imported the SDK."""

    def __init__(self, process: asyncio.subprocess.Process, control: socket.socket, home: Path):
        self._process = process
        self._control = control
        self._home = home
        self._lock = asyncio.Lock()

    @classmethod
    async def start(cls, limits: Limits) -> ForkServer:
        home = Path(tempfile.mkdtemp(prefix="sitetools-zygote-"))
        (home / "tmp").mkdir()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with (home / "zygote.log").open("wb") as log:
                process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-I",
                    "-m",
                    "sitetools.runtime.zygote",
                    stdin=theirs.fileno(),
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=log,
                    cwd=home,
                    env=_stripped_env(home),
                    start_new_session=True,
                )
        finally:
            theirs.close()
        # Inherited by every tool process it forks (the CPU limit is set per process).
        _apply_limits(process.pid, dataclasses.replace(limits, cpu_seconds=-1))
        ours.setblocking(False)
        return cls(process, ours, home)

    @property
    def alive(self) -> bool:
        return self._process.returncode is None

    async def spawn(self, workdir: Path, limits: Limits) -> ToolProcess:
        (workdir / "tmp").mkdir(exist_ok=True)
        loop = asyncio.get_running_loop()
        child_in, to_child = os.pipe()
        from_child, child_out = os.pipe()
        log = os.open(workdir / "process.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            async with self._lock:
                message = f"spawn {workdir}\n".encode()
                socket.send_fds(self._control, [message], [child_in, child_out, log])
                answer = b""
                while not answer.endswith(b"\n"):
                    chunk = await asyncio.wait_for(loop.sock_recv(self._control, 64), 10)
                    if not chunk:
                        raise OSError("the fork server stopped")
                    answer += chunk
            pid = int(answer)
            if pid <= 0:
                raise OSError("the fork server could not fork")
        except BaseException:
            os.close(to_child)
            os.close(from_child)
            raise
        finally:
            for fd in (child_in, child_out, log):
                os.close(fd)
        reader = asyncio.StreamReader(limit=MAX_MESSAGE)
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(from_child, "rb", 0)
        )
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(to_child, "wb", 0)
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        resource.prlimit(pid, resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds))
        return ToolProcess(_Forked(pid, writer, reader), workdir, limits)

    async def close(self) -> None:
        with contextlib.suppress(OSError):
            self._control.close()
        with contextlib.suppress(ProcessLookupError):
            self._process.kill()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._process.wait(), 5)
        shutil.rmtree(self._home, ignore_errors=True)
