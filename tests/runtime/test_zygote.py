"""The fork server: tool processes forked from a process that already imported the SDK, with
the stripped environment, their own folder and session, limits, and death with their parent."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from sitetools.runtime.sandbox import Limits
from sitetools.runtime.spares import SpareProcesses


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2 :].split()[1])


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def _cwd(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/cwd")


def _limit(pid: int, name: str) -> str:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith(name):
            return line
    raise AssertionError(name)


async def test_forked_processes_are_tool_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SITETOOLS_SECRET_MARKER", "must-not-leak")
    spares = SpareProcesses(Limits(open_files=123, cpu_seconds=600), 0)
    try:
        process = await spares.new_process()
        zygote = _parent(process.pid)
        assert zygote != os.getpid()
        assert _parent(zygote) == os.getpid()
        env = _environ(process.pid)
        assert "SITETOOLS_SECRET_MARKER" not in env
        # The child moves into its folder and session right after the fork.
        for _ in range(100):
            if _cwd(process.pid) == str(process.workdir):
                break
            await asyncio.sleep(0.01)
        assert _cwd(process.pid) == str(process.workdir)
        assert os.getsid(process.pid) == process.pid  # its own session: killed as a group
        assert "123" in _limit(process.pid, "Max open files")
        process.limit_cpu(7)
        assert " 7 " in _limit(process.pid, "Max cpu time")
        other = await spares.new_process()
        assert other.workdir != process.workdir
        # Each serves one run: the start message runs a tool and the process ends.
        (process.workdir / "main.py").write_text(
            "import os\n"
            "def run(ctx, input):\n"
            "    return {**input, 'home': os.environ['HOME'], 'tmp': os.environ['TMPDIR']}\n"
        )
        await process.send(
            {
                "op": "start",
                "entrypoint": "main.py:run",
                "input": {"n": 1},
                "label": "job_x",
                "site_url": "https://shop.example",
                "proxy_url": "http://127.0.0.1:9",
                "chromium": "/usr/lib/chromium/chromium",
            }
        )
        message = await process.receive()
        assert message is not None
        assert message["op"] == "result"
        assert message["output"] == {
            "n": 1,
            "home": str(process.workdir),
            "tmp": str(process.workdir / "tmp"),
        }
        assert await process.wait(5) == -1
        # The fork server dies: what it forked dies with it, and the next process comes from a
        # new one.
        os.kill(zygote, signal.SIGKILL)
        for _ in range(200):
            if other.returncode is not None:
                break
            await asyncio.sleep(0.01)
        assert other.returncode is not None
        again = await spares.new_process()
        assert _parent(again.pid) not in (zygote, os.getpid())
        again.kill()
    finally:
        await spares.close()
