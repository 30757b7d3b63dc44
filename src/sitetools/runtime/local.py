"""Run a tool folder on this machine, outside any job: the same sandboxed process and egress
proxy, with questions answered by a function. For tool authors (``sitetools tools test``) and
the tests under each tool's ``test/``."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from sitetools.jobs.questions import QuestionError, normalize_questions
from sitetools.runtime.egress import AllowList, EgressPolicy
from sitetools.runtime.proxy import EgressProxy
from sitetools.runtime.sandbox import Limits, ToolProcess
from sitetools.tools.package import ToolPackage
from sitetools.tools.sites import parse_site

__all__ = ["LocalRun", "run_locally"]

Answer = Callable[[dict[str, Any]], Any]


@dataclass
class LocalRun:
    status: str  # succeeded | failed
    output: Any = None
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    questions: list[dict[str, Any]] = field(default_factory=list)
    log: str = ""


async def run_locally(
    tool: ToolPackage,
    tool_input: dict[str, Any],
    *,
    site_url: str,
    answer: Answer,
    egress_allow: str = "",
    chromium: str = "/usr/lib/chromium/chromium",
    seconds: float | None = None,
) -> LocalRun:
    """Run ``tool`` once; every question goes to ``answer(question)``."""
    workdir = Path(tempfile.mkdtemp(prefix="sitetools-local-"))
    policy = EgressPolicy(parse_site(site_url, "site_url").domain, AllowList.parse(egress_allow))
    proxy = EgressProxy(policy)
    process: ToolProcess | None = None
    try:
        for name, content in tool.files.items():
            path = workdir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
        await proxy.start()
        process = await ToolProcess.start(workdir, Limits())
        await process.send(
            {
                "op": "start",
                "input": tool_input,
                "entrypoint": tool.entrypoint,
                "site_url": site_url,
                "proxy_url": proxy.url,
                "chromium": chromium,
                "login_fields": tool.login_fields,
            }
        )
        run = LocalRun(status="failed")
        return await asyncio.wait_for(
            _converse(process, tool, answer, run), seconds or tool.budget_seconds
        )
    except TimeoutError:
        return LocalRun(status="failed", error="execution_budget_exhausted")
    finally:
        if process is not None:
            process.kill()
            await process.wait(5)
        await proxy.close()
        shutil.rmtree(workdir, ignore_errors=True)


async def _converse(
    process: ToolProcess, tool: ToolPackage, answer: Answer, run: LocalRun
) -> LocalRun:
    while True:
        message = await process.receive()
        if message is None:
            run.error, run.log = "execution_failed", process.log_tail()
            return run
        if message["op"] == "ask":
            try:
                questions = normalize_questions(message.get("questions"))
            except QuestionError as error:
                run.error, run.details = "execution_failed", {"reason": str(error)}
                return run
            run.questions.extend(questions)
            answers = {q["id"]: answer(q) for q in questions}
            await process.send({"op": "answers", "answers": answers})
        elif message["op"] == "result":
            output = message.get("output")
            if list(Draft202012Validator(tool.output_schema).iter_errors(output)):
                run.error = "invalid_output"
                return run
            run.status, run.output = "succeeded", output
            return run
        elif message["op"] == "error":
            run.error = str(message.get("code"))
            run.details = {k: v for k, v in message.items() if k not in ("op", "code")}
            run.log = process.log_tail()
            return run
