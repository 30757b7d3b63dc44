"""Words for catalog search: lowercased, split, lightly stemmed (so "products" finds "product")."""

from __future__ import annotations

import re

__all__ = ["search_words", "stems"]

_WORD = re.compile(r"[a-z0-9]+")


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    return word


def stems(text: str) -> list[str]:
    return [_stem(word) for word in _WORD.findall(text.lower().replace("_", " "))]


def search_words(name: str, description: str, mcp_name: str) -> tuple[str, str]:
    """The two stored search columns: the name's words, and the MCP name's and description's."""
    names = dict.fromkeys(stems(name))
    rest = dict.fromkeys(w for w in [*stems(mcp_name), *stems(description)] if w not in names)
    return " " + " ".join(names) + " ", " " + " ".join(rest) + " "
