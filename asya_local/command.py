"""The `asya` command's entry point: the one module of the command that imports nothing it may lack.

`pip install asya-aws` alone installs what an actor imports at run time; the command's own libraries
(the CDK, moto, Rich, ...) come with the `local` extra. Without them the command says so in one line,
not with a traceback, and still tells its version.
"""

from __future__ import annotations

import sys
from importlib.metadata import version

from asya.names import DISTRIBUTION

OWN_PACKAGES = frozenset(
    {"asya", "asya_cdk", "asya_crew", "asya_gateway", "asya_local", "asya_spark", "asya_spark_job"}
)


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments == ["--version"]:
        print(f"asya {version(DISTRIBUTION)}")
        return 0
    try:
        from asya_local.commands import main as run
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if not missing or missing in OWN_PACKAGES:
            raise
        print(
            f"asya: the command needs the local tools ({missing} is missing): pip install '{DISTRIBUTION}[local]'",
            file=sys.stderr,
        )
        return 2
    return run(arguments)


if __name__ == "__main__":
    sys.exit(main())
