"""A flow of the integration-test mesh written as a program (docs/flows.md): read by the flow compiler,
never run, so its names are the mesh's actors and not Python's."""

# mypy: ignore-errors
# ruff: noqa: F821 - actors and bounded are names the compiler reads


def polishing(p):
    p = prep(p)
    while bounded(p.get("rounds", 0) < 2, max_iterations=3):
        p = infer(polish(p))
    if p.get("rounds", 0) > 5:
        p = boom(p)
    return post(p)
