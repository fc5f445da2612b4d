"""The console's "not found" pages, styled as its others: what was not found, the closest name when
one is close (a typo in a URL typed or kept), and where to go instead; never Werkzeug's bare page."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from flask import Flask, render_template, request, url_for
from werkzeug.exceptions import NotFound


def register(app: Flask) -> None:
    """Every 404 of the console's pages answered by `page_not_found`."""
    app.register_error_handler(NotFound, page_not_found)


def unknown_actor(name: str, actors: Sequence[str]) -> tuple[str, int]:
    """`/actors/<name>` for a name the mesh has no actor of: the closest of its actors, and all of them."""
    links = [(actor, url_for("actors.actor", name=actor)) for actor in actors]
    return _page(f"The mesh has no actor {name!r}.", name, links, "Its actors")


def page_not_found(error: NotFound) -> tuple[str, int]:
    """Any other URL the console has no page at (a task's whole id it does not know: no such task)."""
    links = [
        ("the mesh", url_for("console.mesh")),
        ("tasks", url_for("console.tasks")),
        ("x-sump", url_for("console.sump")),
    ]
    said = error.description if error.description != NotFound.description else None
    return _page(said or f"The console has no page at {request.path}.", None, links, "Its pages")


def _page(message: str, typed: str | None, links: list[tuple[str, str]], label: str) -> tuple[str, int]:
    close = difflib.get_close_matches(typed, [name for name, _ in links], n=1) if typed else []
    suggested = next((link for link in links if link[0] in close), None)
    return render_template("not_found.html", message=message, suggested=suggested, links=links, label=label), 404
