"""A small mesh with a route flow and a program flow (a loop inside a try, then a decision), written
into a test's folder: what the tests of seeing a program (`asya flow show`, the console's graphs) read."""

from __future__ import annotations

from pathlib import Path

MESH = """\
namespace: shown
actors:
  draft: {handler: actors.draft}
  refine: {handler: actors.refine}
  evaluate: {handler: actors.evaluate}
  fallback: {handler: actors.fallback}
  publish: {handler: actors.publish}
flows:
  straight: {route: [draft, publish]}
  refining: {program: programs.refining}
"""
PROGRAMS = """\
def refining(p):
    p = draft(p)
    try:
        while bounded(p["score"] < 0.8, max_iterations=3):
            p = refine(p)
            p = evaluate(p)
    except ValueError:
        p = fallback(p)
        return p
    if p.get("publish", True):
        p = publish(p)
    return p
"""


def program_mesh(folder: Path) -> Path:
    """The mesh file, its program and its (empty) actors' module in `folder`."""
    (folder / "programs.py").write_text(PROGRAMS)
    (folder / "actors.py").write_text("")
    mesh = folder / "mesh.yaml"
    mesh.write_text(MESH)
    return mesh
