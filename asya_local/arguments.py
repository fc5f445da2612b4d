"""What every `asya` command line shares: a parser whose refusal of a mistake is one line, each
subcommand's help with a description and an example, and the types of arguments that several
commands take (JSON inline or `@file`, a count), each refusing a wrong value by saying what to give.

argparse (the standard library) parses; only its error output is changed: its default prints the
whole usage before the error, which for `asya send` is longer than the mistake it reports.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from difflib import get_close_matches
from pathlib import Path
from typing import Any, NoReturn

from asya_local.moments import Moment, moment


class Parser(argparse.ArgumentParser):
    """An `asya` parser: a mistake is one line naming the command, the argument and what to do. A
    mistyped command, choice or option gets the likely one (`did you mean`): argparse has that from
    Python 3.14 only. An option the command does not have is named, rather than what its absence
    caused (`--flows` leaves `--flow` missing), and refused by the command it was given to, whose
    `--help` shows how."""

    given: Sequence[str] = ()

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self.given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self._chosen(parsed).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def error(self, message: str) -> NoReturn:
        unknown = [_unknown_option(self, given) for given in self._unknown_options()]
        said = "; ".join(unknown) if unknown else _with_choices(self, _with_likely_choice(message))
        self.exit(2, f"{self.prog}: {said} (`{self.prog} --help` shows how)\n")

    def _chosen(self, parsed: argparse.Namespace) -> Parser:
        """The (sub)command the arguments chose, which refuses what it does not take."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(str(getattr(parsed, action.dest, "")))
                if isinstance(chosen, Parser):
                    return chosen._chosen(parsed)
        return self

    def _unknown_options(self) -> list[str]:
        """The options given that this command has not, even as an abbreviation (before a `--`)."""
        known = list(self._option_string_actions)
        given = self.given[: self.given.index("--")] if "--" in self.given else self.given
        return [
            option
            for option in (text.split("=", 1)[0] for text in given)
            if option.startswith("-") and not _NUMBER.match(option) and not any(k.startswith(option) for k in known)
        ]


_NUMBER = re.compile(r"^-\d")  # a negative number given as a value, not an option


def _unknown_option(parser: Parser, option: str) -> str:
    """An option `parser` has not: the likely one, or, when it names a positional argument, that this
    one is given without an option."""
    name = option.lstrip("-").replace("-", "_")
    positional = next((action for action in parser._actions if not action.option_strings and action.dest == name), None)
    if positional is not None:
        return f"no option {option}: give the {name} as is, without {option}"
    options = [known for known in parser._option_string_actions if known.startswith("--")]
    return f"no option {option}{likely(option, options)}"


def _with_choices(parser: Parser, message: str) -> str:
    """argparse's "expected one argument" for an option given no value, with the values it takes."""
    missing = re.match(r"argument (\S+): expected one argument$", message)
    action = parser._option_string_actions.get(missing.group(1).split("/")[-1]) if missing else None
    if action is None or not action.choices:
        return message
    return f"{message}: give one of {', '.join(map(str, action.choices))}"


def _with_likely_choice(message: str) -> str:
    """argparse's refusal of a choice, with the likely one ahead of the list of them."""
    refused = re.match(r"(.*invalid choice: '([^']*)')( \(choose from (.*)\))$", message, re.DOTALL)
    if refused is None:
        return message
    return refused.group(1) + likely(refused.group(2), re.findall(r"'([^']*)'", refused.group(4))) + refused.group(3)


def likely(given: str, known: Iterable[str]) -> str:
    """`; did you mean `x`?` naming the one of `known` closest to `given` (the only one it begins, as a
    flow's short name begins `triage-reviews`), or nothing when none is close."""
    names = list(known)
    begun = [name for name in names if name.startswith(given)] if given else []
    close = begun if len(begun) == 1 else get_close_matches(given, names, n=1, cutoff=0.6)
    return f"; did you mean `{close[0]}`?" if close else ""


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
        quotes = '; JSON wants double quotes ("field"), not single ones' if "'" in text else ""
        raise argparse.ArgumentTypeError(f"not JSON ({exc}){quotes}; give JSON inline or @file.json") from None


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


def moment_argument(text: str) -> Moment:
    """A time to narrow a listing by (`asya_local.moments`), as the RFC 3339 UTC time the gateway takes."""
    try:
        return Moment(moment(text), text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def page_size(text: str) -> int:
    """How many a page of a listing holds: 1 to 100, as the gateway allows."""
    number = positive_int(text)
    if number > 100:
        raise argparse.ArgumentTypeError(f"{number} is more than a page holds: give 1 to 100")
    return number
