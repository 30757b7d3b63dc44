"""Questions a tool asks and the answers they accept (spec: "invalid_answer" reasons).

A tool's ``ask`` is checked here before it becomes an input request; answers are checked
against the pending request, each failure naming the question and one of the spec's reasons.
"""

from __future__ import annotations

from typing import Any

from sitetools.core.errors import ServiceError

__all__ = [
    "DEFAULT_MAX_LENGTH",
    "QuestionError",
    "check_answers",
    "is_secret",
    "normalize_questions",
]

DEFAULT_MAX_LENGTH = 2000
SECRET_KINDS = ("login", "password", "code")
_TYPES = ("text", "choice", "confirm", "secret")


class QuestionError(ValueError):
    """A tool asked a malformed question (the run fails with ``execution_failed``)."""


def is_secret(question: dict[str, Any]) -> bool:
    return bool(question.get("type") == "secret")


def _options(raw: Any) -> list[dict[str, str]]:
    if not isinstance(raw, list) or not raw:
        raise QuestionError("a choice question needs a non-empty list of options")
    options = []
    for item in raw:
        if isinstance(item, str):
            options.append({"value": item, "label": item})
        elif isinstance(item, dict) and isinstance(item.get("value"), str):
            options.append({"value": item["value"], "label": str(item.get("label", item["value"]))})
        else:
            raise QuestionError("each option is a string or {value, label}")
    if len({o["value"] for o in options}) != len(options):
        raise QuestionError("option values must differ")
    return options


def normalize_questions(raw: Any) -> list[dict[str, Any]]:
    """The stored form of a tool's questions; ``QuestionError`` for a malformed one."""
    if not isinstance(raw, list) or not raw or len(raw) > 20:
        raise QuestionError("ask takes 1 to 20 questions")
    questions: list[dict[str, Any]] = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise QuestionError("each question is an object")
        kind = item.get("type", "text")
        if kind not in _TYPES:
            raise QuestionError(f"unknown question type {kind!r}")
        prompt = item.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip() or len(prompt) > 2000:
            raise QuestionError("a question needs a prompt of 1 to 2000 characters")
        question: dict[str, Any] = {
            "id": str(item.get("id") or f"q{index + 1}"),
            "type": kind,
            "prompt": prompt,
        }
        if kind == "text":
            question["max_length"] = int(item.get("max_length") or DEFAULT_MAX_LENGTH)
        elif kind == "choice":
            question["options"] = _options(item.get("options"))
            multiple = bool(item.get("multiple", False))
            question["multiple"] = multiple
            question["allow_other"] = bool(item.get("allow_other", False))
            count = len(question["options"]) + (1 if question["allow_other"] else 0)
            low = int(item.get("min_selections", 1))
            high = int(item.get("max_selections", count if multiple else 1))
            if not 0 <= low <= high or (not multiple and high != 1):
                raise QuestionError("selection bounds do not fit")
            question["min_selections"], question["max_selections"] = low, high
        elif kind == "secret":
            secret = item.get("secret", "password")
            if secret not in SECRET_KINDS:
                raise QuestionError(f"unknown secret kind {secret!r}")
            question["secret"] = secret
            if secret == "login":
                fields = item.get("fields") or ["username", "password"]
                question["fields"] = [str(f) for f in fields]
            if secret == "code":
                question["method"] = str(item.get("method", "totp"))
        questions.append(question)
    if len({q["id"] for q in questions}) != len(questions):
        raise QuestionError("question ids must differ")
    return questions


def _refuse(question_id: str, reason: str) -> ServiceError:
    return ServiceError("invalid_answer", question_id=question_id, reason=reason)


def _check_choice(question: dict[str, Any], value: Any) -> Any:
    qid = question["id"]
    values = value if question["multiple"] else [value]
    if not isinstance(values, list):
        raise _refuse(qid, "malformed")
    offered = {o["value"] for o in question["options"]}
    chosen: list[Any] = []
    for item in values:
        if isinstance(item, dict) and set(item) == {"other"}:
            if not question["allow_other"]:
                raise _refuse(qid, "other_not_allowed")
            if not isinstance(item["other"], str) or not item["other"].strip():
                raise _refuse(qid, "malformed")
            if len(item["other"]) > DEFAULT_MAX_LENGTH:
                raise _refuse(qid, "too_long")
            chosen.append({"other": item["other"]})
        elif isinstance(item, str):
            if item not in offered:
                raise _refuse(qid, "unoffered_option")
            chosen.append(item)
        else:
            raise _refuse(qid, "malformed")
    if not question["min_selections"] <= len(chosen) <= question["max_selections"]:
        raise _refuse(qid, "selection_bounds")
    return chosen if question["multiple"] else chosen[0]


def _check_secret(question: dict[str, Any], value: Any) -> Any:
    qid = question["id"]
    if question["secret"] == "login":
        if not isinstance(value, dict):
            raise _refuse(qid, "malformed")
        allowed = set(question["fields"])
        for name, item in value.items():
            if name not in allowed:
                reason = "username_not_allowed" if name == "username" else "unexpected_answer"
                raise _refuse(qid, reason)
            if not isinstance(item, str) or len(item) > 1000:
                raise _refuse(qid, "malformed")
        if "password" in allowed and not value.get("password"):
            raise _refuse(qid, "password_required")
        for name in allowed - {"password"}:
            if not str(value.get(name, "")).strip():
                raise _refuse(qid, "missing_answer")
        return {name: value[name] for name in question["fields"] if name in value}
    if not isinstance(value, str):
        raise _refuse(qid, "malformed")
    if not value.strip():
        raise _refuse(
            qid, "password_required" if question["secret"] == "password" else "missing_answer"
        )
    if len(value) > 1000:
        raise _refuse(qid, "too_long")
    return value.strip() if question["secret"] == "code" else value


def check_answers(questions: list[dict[str, Any]], answers: Any) -> dict[str, Any]:
    """The answers, cleaned, if they fit; else ``invalid_answer`` naming the first misfit."""
    if not isinstance(answers, dict):
        raise ServiceError("invalid_answer", question_id=None, reason="malformed")
    known = {q["id"] for q in questions}
    for question_id in answers:
        if question_id not in known:
            raise _refuse(question_id, "unexpected_answer")
    cleaned: dict[str, Any] = {}
    for question in questions:
        qid = question["id"]
        if qid not in answers or answers[qid] is None:
            raise _refuse(qid, "missing_answer")
        value = answers[qid]
        kind = question["type"]
        if kind == "text":
            if not isinstance(value, str):
                raise _refuse(qid, "malformed")
            if len(value) > question["max_length"]:
                raise _refuse(qid, "too_long")
            cleaned[qid] = value
        elif kind == "confirm":
            if not isinstance(value, bool):
                raise _refuse(qid, "malformed")
            cleaned[qid] = value
        elif kind == "choice":
            cleaned[qid] = _check_choice(question, value)
        else:
            cleaned[qid] = _check_secret(question, value)
    return cleaned
