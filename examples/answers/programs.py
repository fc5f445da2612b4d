"""The flow of the answers example, written as Python and compiled by reading it (docs/flows.md): it is
never run. Each call is an actor; each `if` and the loop's condition are decided by the sidecar of the
actor whose output they read, so they cost no hop of their own."""

# ruff: noqa: F821 - the actors, pause and bounded are names the compiler reads


def answer(p):
    p = classify(p)
    if p["confidence"] < 0.6:  # the small model is unsure: ask the stronger one
        p = classify_large(p)
        if p["confidence"] < 0.6:  # both are: a person picks the intent (asya resume ID '{"intent": …}')
            p = pause(p)
    try:
        p = draft(p)
    except ContextTooLongError:  # too long for the drafting model: the fallback drafts from the same input
        p = draft_long(p)
    p = evaluate(p)
    while bounded(p["quality"] < 0.8, max_iterations=3):
        p = refine(p)
        p = evaluate(p)
    return p
