"""The chaos mesh's flow program (flow `program`): read by the flow compiler, never run. Each of the
three branches `split` makes goes on through the program: judge's failure of a doomed branch is taken
by the except (the branch succeeds), `post` runs in a loop until it has run twice, and the first part
passes `flaky` a second time."""

# ruff: noqa: F821 - the actors and bounded are names the flow compiler reads


def checked(p):
    p = split(p)
    try:
        p = judge(flaky(p))
    except ValueError:
        p = post(p)
    while bounded(p.get("rounds", 0) < 2, max_iterations=3):
        p = post(p)
    if p["part"] == 0:
        p = flaky(p)
    return p
