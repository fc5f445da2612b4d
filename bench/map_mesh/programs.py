# mypy: ignore-errors
"""The bench's map (`bench.cost_per_hop`): read by the flow compiler, never run."""

# ruff: noqa: F821 - the actors are names the compiler reads


def squares(p):
    p = prepare(p)
    p["squares"] = [square(x) for x in p["items"]]
    p = total(p)
    return p  # noqa: RET504 - a program calls each actor as `p = actor(p)`
