"""The fork server: one process per worker that has imported the SDK and forks tool processes.

Starting Python and importing the SDK costs ~250 ms of CPU; a fork of a process that already
did costs a few. The zygote runs no tool code and knows no job: it starts with the same
stripped environment as a tool process and dies with its worker. For each request it receives
the new process's stdin, stdout and log file descriptors (``SCM_RIGHTS``) and its folder; the
child starts a new session, takes those as 0, 1 and 2, and becomes an ordinary tool process
(``child.main``) waiting for its ``start`` message. The zygote answers the child's PID.

Protocol on the control socket (the zygote's fd 0), one line each way per request:
``spawn <folder>\\n`` with three descriptors → ``<pid>\\n``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket

from sitetools.runtime import child

__all__ = ["main"]


def _spawn(folder: str, fds: list[int], keep_closed: tuple[int, ...]) -> int:
    pid = os.fork()
    if pid:
        return pid
    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in (*fds, *keep_closed):
            if fd > 2:
                with contextlib.suppress(OSError):
                    os.close(fd)
        os.chdir(folder)
        os.environ["HOME"] = folder
        os.environ["TMPDIR"] = os.path.join(folder, "tmp")
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        child.main()
    except BaseException:
        os._exit(70)
    os._exit(0)


def main() -> None:
    child.die_with_parent()
    # Children are reaped by the kernel (their exit is seen by the worker as the pipe's end).
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    control = socket.socket(fileno=os.dup(0))
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    while True:
        try:
            message, fds, _flags, _address = socket.recv_fds(control, 4096, 3)
        except OSError:
            return
        if not message:
            return  # the worker closed the control socket
        folder = message.decode().removeprefix("spawn ").strip()
        try:
            pid = _spawn(folder, fds, (control.fileno(), devnull)) if len(fds) == 3 else 0
        finally:
            for fd in fds:
                os.close(fd)
        control.sendall(f"{pid}\n".encode())


if __name__ == "__main__":
    main()
