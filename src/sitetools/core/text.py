"""One definition of whitespace for every text rule and every documented pattern.

``\\s`` and ``str.strip()`` each mean a different set in ECMA-262 (how JSON Schema reads our
document), Python and Rust (pydantic); spelling the set out makes all of them agree.
"""

from __future__ import annotations

__all__ = ["SPACE_CHARS", "SPACE_CLASS"]

SPACE_CHARS = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
# The same set inside a regex character class (escapes every engine reads alike).
SPACE_CLASS = r"\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
