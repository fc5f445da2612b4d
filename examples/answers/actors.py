"""The actors of the answers example: stand-ins for models, deterministic and quick so the demo and the
tests run anywhere. Plain Python: none of them knows the flow, decides where a message goes next, or
imports asya; each returns the payload enriched with what it computed."""

from __future__ import annotations

import re
from typing import Any

_WORD = re.compile(r"[a-z']+")
# the small model's vocabulary: a word of an intent is a vote for it
SMALL_LEXICON = {
    "billing": frozenset({"charged", "charge", "refund", "invoice", "payment"}),
    "shipping": frozenset({"parcel", "delivery", "delivered", "tracking", "shipped"}),
    "account": frozenset({"password", "login", "account"}),
}
# the stronger model knows more words for each intent
LARGE_LEXICON = {
    "billing": SMALL_LEXICON["billing"] | {"money", "bill", "paid", "twice", "card"},
    "shipping": SMALL_LEXICON["shipping"] | {"box", "arrived", "showed", "package", "courier"},
    "account": SMALL_LEXICON["account"] | {"locked", "sign", "email", "username"},
}
CONTEXT_WORDS = 40  # the drafting model's context: a longer message is refused
# what a good reply to each intent must tell the customer (the judge's "answer" check)
FACTS = {
    "billing": "Your refund is on its way and shows on your statement within 5 days.",
    "shipping": "Here is your tracking link; the courier delivers within 2 days.",
    "account": "We have sent you a reset link for your password.",
}
NEXT_STEP = "Reply to this email if anything is still unclear."
SIGNATURE = "- The support team"
CHECKS = ("greeting", "answer", "next_step", "signature")  # the judge's checklist, in the order refine fixes


class ContextTooLongError(ValueError):
    """The message does not fit the drafting model's context: retrying cannot help, a bigger model can."""


def _intent(message: str, lexicon: dict[str, frozenset[str]], prior: float) -> dict[str, Any]:
    """The intent with the most votes and a confidence that grows with them; `prior` is how much a
    model trusts a single vote (the stronger model trusts it more)."""
    words = _WORD.findall(message.lower())
    votes = {intent: sum(word in vocabulary for word in words) for intent, vocabulary in lexicon.items()}
    intent = max(votes, key=lambda name: votes[name])
    total = sum(votes.values())
    confidence = round(votes[intent] / (total + prior), 2) if total else 0.0
    return {"intent": intent if total else "unknown", "confidence": confidence}


def classify(payload: dict[str, Any]) -> dict[str, Any]:
    """The small intent model: one matching word alone leaves it unsure (confidence 0.5)."""
    return {**payload, **_intent(payload["message"], SMALL_LEXICON, prior=1.0), "classified_by": "classify"}


def classify_large(payload: dict[str, Any]) -> dict[str, Any]:
    """The stronger intent model: a larger vocabulary, and surer of what it recognises."""
    return {**payload, **_intent(payload["message"], LARGE_LEXICON, prior=0.25), "classified_by": "classify-large"}


def _greeting(payload: dict[str, Any]) -> str:
    return f"Hi {payload.get('customer') or 'there'}."


def draft(payload: dict[str, Any]) -> dict[str, Any]:
    """The drafting model: a greeting and the answer; for account questions also the next step."""
    words = len(payload["message"].split())
    if words > CONTEXT_WORDS:
        raise ContextTooLongError(f"the message has {words} words; the drafting model reads {CONTEXT_WORDS}")
    parts = [_greeting(payload), FACTS.get(payload["intent"], "")]
    if payload["intent"] == "account":
        parts.append(NEXT_STEP)
    return {**payload, "reply": " ".join(part for part in parts if part), "drafted_by": "draft"}


def draft_long(payload: dict[str, Any]) -> dict[str, Any]:
    """The fallback model: reads any length, writes only the answer."""
    return {**payload, "reply": FACTS.get(payload["intent"], ""), "drafted_by": "draft-long"}


def _passed(payload: dict[str, Any], reply: str) -> dict[str, bool]:
    return {
        "greeting": reply.startswith(_greeting(payload)),
        "answer": FACTS.get(payload["intent"], "\0") in reply,
        "next_step": NEXT_STEP in reply,
        "signature": reply.endswith(SIGNATURE),
    }


def evaluate(payload: dict[str, Any]) -> dict[str, Any]:
    """The judge: the share of the checklist the draft passes, and what it misses, for refine to fix."""
    passed = _passed(payload, payload["reply"])
    missing = [check for check in CHECKS if not passed[check]]
    quality = round(1 - len(missing) / len(CHECKS), 2)
    return {**payload, "quality": quality, "missing": missing, "evaluations": payload.get("evaluations", 0) + 1}


def refine(payload: dict[str, Any]) -> dict[str, Any]:
    """One round of revision: fixes the first check the judge found missing. The answer it cannot write
    (the drafting models know no facts of an intent a person named outside theirs): the draft stays as
    it was, and the flow's loop bound ends the task rather than let it go round for ever."""
    reply: str = payload["reply"]
    first = payload["missing"][0] if payload["missing"] else None
    if first == "greeting":
        reply = f"{_greeting(payload)} {reply}"
    elif first == "next_step":
        reply = f"{reply} {NEXT_STEP}"
    elif first == "signature":
        reply = f"{reply} {SIGNATURE}"
    return {**payload, "reply": reply, "rounds": payload.get("rounds", 0) + 1}
