"""`asya console`: the mesh, its queues and its tasks, live, in a browser (docs/console.md).

`local_console` builds it for a local stack (started in this process by `asya up`, or running beside
it: found through `.asya/local.json`), `deployed_console` for a stack deployed on AWS, reached with the
caller's AWS credentials; `serve` runs it on loopback.
"""
