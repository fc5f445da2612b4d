"""The three actors of the review-triage example. Plain Python: no AWS, no asya imports needed."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

_WORD = re.compile(r"[a-z']+")


def split(payload: dict[str, Any]) -> Iterator[Any]:
    """One envelope per review; each carries the product so later actors need nothing else."""
    if not payload.get("reviews"):
        return
    yield ("SET", ".headers.product", payload["product"])
    for number, text in enumerate(payload["reviews"], start=1):
        yield {"product": payload["product"], "review": number, "text": text}


class SentimentModel:
    """A tiny lexicon model standing in for a real one: loaded once, reused for every envelope."""

    POSITIVE = frozenset({"great", "love", "excellent", "perfect", "fast", "good", "sturdy", "recommend"})
    NEGATIVE = frozenset({"broken", "bad", "slow", "refund", "terrible", "awful", "late", "never", "worst"})

    def __init__(self) -> None:
        self.weights = dict.fromkeys(self.POSITIVE, 1) | dict.fromkeys(self.NEGATIVE, -1)

    def score(self, payload: dict[str, Any]) -> dict[str, Any]:
        if not payload["text"].strip():
            raise ValueError(f"review {payload['review']} of {payload['product']} has no text to score")
        words = _WORD.findall(payload["text"].lower())
        total = sum(self.weights.get(word, 0) for word in words)
        sentiment = "positive" if total > 0 else "negative" if total < 0 else "neutral"
        return {**payload, "score": total, "sentiment": sentiment}


def triage(payload: dict[str, Any]) -> Iterator[Any]:
    """Angry reviews get a human: the route grows an `escalate` step for them only."""
    action = "escalate" if payload["score"] <= -2 else "reply" if payload["score"] < 0 else "archive"
    if action == "escalate":
        yield ("SET", ".route.next[:0]", ["escalate"])
        yield ("SET", ".headers.priority", "high")
    yield {**payload, "action": action}


def escalate(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "ticket": f"SUP-{payload['product']}-{payload['review']}"}


def summarise(reviews: list[dict[str, Any]]) -> dict[str, Any]:
    """A join: every scored review of one product, in the order `split` yielded them, as one list (a
    review whose scoring failed is left out, up to the mesh's `tolerate`). No reviews: an empty list."""
    if not reviews:
        return {"reviews": 0}
    worst = min(reviews, key=lambda review: review["score"])
    return {
        "product": reviews[0]["product"],
        "reviews": len(reviews),
        "average": round(sum(review["score"] for review in reviews) / len(reviews), 2),
        "sentiment": dict(Counter(review["sentiment"] for review in reviews)),
        "worst": {"review": worst["review"], "text": worst["text"]},
    }
