"""The console's graph drawn outside a web page: the same template (`templates/_graph.html`) the
console's pages draw it with, rendered to an SVG file that stands alone (its styles inside it, both
colour schemes, no links), for `asya flow show`."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape

from asya_local.console.graph import NODE_HEIGHT, NODE_WIDTH, Layout

HERE = Path(__file__).resolve().parent
# the page's own font and background, which a file opened alone does not inherit from the page
STANDALONE = "svg { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; background: var(--bg); }"


def graph_svg(graph: Layout, label: str) -> str:
    """The SVG document of `graph`, titled `label`."""
    environment = Environment(
        loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True), trim_blocks=True
    )
    environment.globals.update(node_width=NODE_WIDTH, node_height=NODE_HEIGHT, actor_link=lambda _name: None)
    template = environment.from_string(
        '{% from "_graph.html" import graph_svg %}{{ graph_svg(graph, none, label, none, style) }}'
    )
    style = (HERE / "static" / "console.css").read_text() + "\n" + STANDALONE
    drawn = template.render(graph=graph, label=label, style=style)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + drawn.strip() + "\n"
