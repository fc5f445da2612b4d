# mypy: ignore-errors
"""Flows written as programs (docs/flows.md): read by the flow compiler, never run."""

# ruff: noqa: F821, RET504 - the actors, pause, parallel and bounded are names the compiler reads; p = actor(p) then return p is how a flow reads


def branching(p):
    p = classify(p)
    if p["confidence"] < 0.5:
        p = escalate(p)
    elif p.get("urgent", False):
        return p
    else:
        p = accept(p)
    return p


def refining(p):
    p = draft(p)
    while bounded(p["score"] < 0.8, max_iterations=3):
        p = refine(p)
        p = evaluate(p)
    return p


def guarded(p):
    try:
        p = draft(p)
        p = refine(p)
        p = evaluate(p)
    except ValueError:
        p = fallback(p)
    return accept(p)


def nested(p):
    p = draft(p)
    try:
        while bounded(p["score"] < 0.8, max_iterations=4):
            p = refine(p)
            if p["rounds"] % 2 == 0:
                p = evaluate(p)
            else:
                continue
    except ValueError:
        p = fallback(p)
        return p
    return accept(p)


def side_by_side(p):
    p = classify(p)
    p = pick(parallel(model_a(p), escalate(model_b(p))))
    return p


def reviewed(p):
    p = draft(p)
    if p["score"] < 0.5:
        p = pause(p)
    if p.get("approved"):
        p = accept(p)
    return p


def retried(p):
    try:
        p = flaky(draft(p))
    except PolicyExhausted:
        return accept(fallback(p))
    return accept(p)


def long_loop(p):
    p = draft(p)
    while bounded(p["rounds"] < p["goal"], max_iterations=100):
        p = refine(p)
    return p
