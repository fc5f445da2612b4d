"""What every `asya` command line shares: a parser whose refusal of a mistake is one line, each
subcommand's help with a description and an example, and the types of arguments that several
commands take (JSON inline or `@file`, a count), each refusing a wrong value by saying what to give.

argparse (the standard library) parses; only its error output is changed: its default prints the
whole usage before the error, which for `asya send` is longer than the mistake it reports.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, NoReturn

from asya_local.moments import moment


class Parser(argparse.ArgumentParser):
    """An `asya` parser: a mistake is one line naming the command, the argument and what to do."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (`{self.prog} --help` shows how)\n")


def command(commands: Any, name: str, summary: str, *examples: str) -> Parser:
    """A subcommand whose `--help` says what it does (`summary`) and shows how it is used."""
    epilog = "examples:\n" + "\n".join(f"  {example}" for example in examples) if examples else None
    parser: Parser = commands.add_parser(
        name, help=summary, description=summary, epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    return parser


def command_group(commands: Any, name: str, summary: str, example: str) -> Any:
    """A subcommand of subcommands (`asya secrets set`, `asya flow show`): the action chosen is in
    `<name>_command`; returns where to add each action with `command`."""
    group = command(commands, name, summary, example)
    return group.add_subparsers(dest=f"{name}_command", required=True, metavar="ACTION")


def json_value(text: str) -> Any:
    """A JSON value given inline, or `@file` naming a file that holds one."""
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text()
        except OSError as exc:
            raise argparse.ArgumentTypeError(f"cannot read {text[1:]}: {exc.strerror}") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc}); give JSON inline or @file.json") from None


def json_file(path: str) -> Any:
    """The JSON value a file holds."""
    return json_value(f"@{path}")


def json_object(text: str) -> dict[str, Any]:
    """A JSON object (inline or `@file`): what a person gives a paused task, field by field."""
    value = json_value(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f'a JSON object is wanted ({{"field": value}}), got {type(value).__name__}')
    return value


def each_input(value: Any, what: str) -> list[Any]:
    """The inputs of a JSON list, each one task's payload (as an example's `inputs.json` holds them);
    `what` names where the value came from when it is not such a list."""
    if not isinstance(value, list) or not value:
        got = "an empty list" if value == [] else "not a list"
        raise argparse.ArgumentTypeError(f"{what} is {got}: give a JSON list of inputs, one task each")
    return value


def some_id(text: str) -> str:
    """A task's or envelope's id, whole or its first characters; empty names nothing (as a prefix it
    would match every one)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty id names nothing: give the id, or its first characters")
    return text


def positive_int(text: str) -> int:
    """A count of at least one."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} is not a count: give 1 or more")
    return number


def moment_argument(text: str) -> str:
    """A time to narrow a listing by (`asya_local.moments`), as the RFC 3339 UTC time the gateway takes."""
    try:
        return moment(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def page_size(text: str) -> int:
    """How many a page of a listing holds: 1 to 100, as the gateway allows."""
    number = positive_int(text)
    if number > 100:
        raise argparse.ArgumentTypeError(f"{number} is more than a page holds: give 1 to 100")
    return number
