"""A tool's test cases (``test/cases.json``): inputs, scripted answers, expected outcomes.

Each case: ``name``, ``input``, optional ``answers`` (question id → value; a string starting
with ``$`` is resolved by the caller, e.g. ``$totp:alice`` to a current code), and ``expect``:
``status``, and optionally ``error`` (code), ``details`` (a subset), ``output`` (equal),
``output_contains`` (a subset: objects by key, arrays element-wise in any order) and
``output_has`` (top-level keys).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sitetools.runtime.local import LocalRun
from sitetools.tools.package import ToolPackage

__all__ = ["answerer", "check_case", "contains", "load_cases"]


def load_cases(tool: ToolPackage) -> list[dict[str, Any]]:
    text = tool.files.get("test/cases.json")
    if text is None:
        return []
    cases: list[dict[str, Any]] = json.loads(text)
    return cases


def contains(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` holds everything ``expected`` says (a structural subset)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and contains(value, actual[key]) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return isinstance(actual, list) and all(
            any(contains(item, candidate) for candidate in actual) for item in expected
        )
    return bool(expected == actual)


def answerer(
    case: dict[str, Any], resolve: Callable[[str], Any]
) -> Callable[[dict[str, Any]], Any]:
    answers = case.get("answers", {})

    def answer(question: dict[str, Any]) -> Any:
        if question["id"] not in answers:
            raise AssertionError(f"case {case['name']!r} has no answer for {question['id']!r}")
        value = answers[question["id"]]
        return resolve(value) if isinstance(value, str) and value.startswith("$") else value

    return answer


def check_case(case: dict[str, Any], run: LocalRun) -> list[str]:
    """What differs from the case's expectations (empty when it passes)."""
    expect, problems = case["expect"], []
    if run.status != expect["status"]:
        problems.append(f"status {run.status} ({run.error}), expected {expect['status']}")
        return problems
    if "error" in expect and run.error != expect["error"]:
        problems.append(f"error {run.error}, expected {expect['error']}")
    if "details" in expect and not contains(expect["details"], run.details):
        problems.append(f"details {run.details} lack {expect['details']}")
    if "output" in expect and run.output != expect["output"]:
        problems.append(f"output {run.output!r} differs")
    if "output_contains" in expect and not contains(expect["output_contains"], run.output):
        problems.append(f"output {run.output!r} lacks {expect['output_contains']!r}")
    for key in expect.get("output_has", []):
        if not isinstance(run.output, dict) or key not in run.output:
            problems.append(f"output has no {key!r}")
    return problems
