"""The error a wrong mesh file is reported with, in a module of its own: the `asya` command catches it
around every command (`asya_local.commands`) without loading the mesh file's models, which only the
commands that read a mesh file need. `asya_cdk.loading` raises it, and exports it as before."""

from __future__ import annotations


class MeshConfigError(ValueError):
    """The mesh file is wrong; the message names the file and the field."""
