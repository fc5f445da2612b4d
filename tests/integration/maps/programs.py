# mypy: ignore-errors
"""A flow that maps (docs/flows.md): read by the flow compiler, never run."""

# ruff: noqa: F821 - the actors are names the compiler reads


def squares(p):
    p["given"] = len(p["items"])
    p = prepare(p)
    p["squares"] = [square(x) for x in p["items"]]
    p["mapped"] = len(p["squares"])
    p = total(p)
    p["done"] = True
    return p
