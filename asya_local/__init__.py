"""Developer tooling for asya: Lambda-shaped events and contexts, and meshes run on this machine.

Nothing here ships to AWS: the sidecar layer is `sidecar_layer/asya` alone.
"""
