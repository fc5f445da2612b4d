"""`docs/configuration.md` lists every `ASYA_*` variable exactly as `asya.variables` declares it: in the
table of the first component that reads it, with its default, the other components that read it and
its meaning. A variable added, renamed or changed in one place and not the other fails here, with the
row the document should have."""

from __future__ import annotations

import re
from pathlib import Path

from asya import variables
from asya.variables import Component, Variable

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
SECTION = re.compile(r"^## .*\(`(\w+)`\)$")


def expected_row(variable: Variable[object]) -> str:
    others = ", ".join(component.value for component in variable.components[1:]) or "-"
    return f"| `{variable.name}` | {variable.default_text} | {others} | {variable.meaning} |"


def documented() -> dict[str, dict[str, str]]:
    """Rows of each component's table, by variable name."""
    tables: dict[str, dict[str, str]] = {}
    component = ""
    for line in DOC.read_text().splitlines():
        heading = SECTION.match(line)
        if heading:
            component = heading.group(1)
            tables[component] = {}
        match = re.match(r"^\| `(ASYA_\w+)` \|", line)
        if match:
            assert component, f"{match.group(1)} is documented outside a component's table"
            tables[component][match.group(1)] = line
    return tables


def test_every_variable_is_documented_as_declared() -> None:
    tables = documented()
    for variable in variables.ALL:
        table = tables.get(variable.components[0].value, {})
        assert table.get(variable.name) == expected_row(variable), (
            f"docs/configuration.md, table ({variable.components[0].value}), should have:\n{expected_row(variable)}"
        )


def test_nothing_else_is_documented() -> None:
    declared = {(variable.components[0].value, variable.name) for variable in variables.ALL}
    found = {(component, name) for component, rows in documented().items() for name in rows}
    assert found == declared
    assert set(documented()) == {component.value for component in Component}


def test_every_declared_variable_is_in_the_catalogue() -> None:
    declared = [value for value in vars(variables).values() if isinstance(value, Variable)]
    assert sorted(variable.name for variable in declared) == sorted(variable.name for variable in variables.ALL)
    assert all(variable.name.startswith(variables.PREFIX) for variable in variables.ALL)
