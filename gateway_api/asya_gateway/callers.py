"""Who is calling the gateway, as the request tells (docs/callers.md): the identity a task created by
the request belongs to, and whether the caller sees every task of the namespace.

A task belongs to its creator's identity: `jwt:<subject>` for a signed-in caller, `iam:<principal ARN>`
for an AWS principal (SigV4), `key:<API key id>` for a holder of the mesh's API key. A task injected
straight into the first actor's queue has no owner, and only admins see it.
"""

from __future__ import annotations

from dataclasses import dataclass

OWNER_ATTRIBUTE = "owner"  # the task record's attribute that names its creator's identity


@dataclass(frozen=True)
class Caller:
    """`owner` is None when the request names nobody (a caller the gateway cannot tell apart)."""

    owner: str | None
    admin: bool = False

    def sees(self, owner: str | None) -> bool:
        """A caller sees its own tasks; an admin sees every task, those that belong to nobody included."""
        return self.admin or (self.owner is not None and owner == self.owner)


# What code runs as when no request is behind it (the local stack's tools, the backstop): everything.
OPERATOR = Caller(owner=None, admin=True)
