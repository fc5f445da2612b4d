"""The local AWS endpoint: moto's server, the fixes it needs to behave as AWS does, and the Spark
runner standing in for EMR Serverless's compute, all in one process of their own (`server`).

The fixes (`moto_*` modules) patch moto's internals in place, so they hold for one moto release only,
the one pinned in pyproject.toml; each module's docstring names what it patches, which is what to
re-check before moving the pin."""

import moto

MOTO_PINNED = "5.2.5"

if moto.__version__ != MOTO_PINNED:
    raise RuntimeError(
        f"asya_local.endpoint patches moto {MOTO_PINNED} internals, found moto {moto.__version__}: re-check "
        "what each asya_local/endpoint/moto_*.py patches (its docstring says) and update the pin in pyproject.toml"
    )
