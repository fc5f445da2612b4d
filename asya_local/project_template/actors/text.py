"""The mesh's actors: plain Python functions of the payload. No AWS and no asya imports are needed.

A handler returns the next payload (one envelope on to the next actor), yields several (a fan-out),
returns None (the task ends here) or raises (the actor's resiliency policy decides: retry or fail).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def normalize(payload: dict[str, Any]) -> dict[str, Any]:
    """The text in lower case with its words alone, so that "Hello," and "hello" count as one."""
    words = _WORD.findall(payload["text"].lower())
    if not words:
        raise ValueError("the text has no words")
    return {**payload, "words": words}


def count_words(payload: dict[str, Any]) -> dict[str, Any]:
    """How often each word appears, most frequent first (ties in the order they first appear)."""
    counts = Counter(payload["words"])
    return {"text": payload["text"], "total": len(payload["words"]), "counts": dict(counts.most_common())}
