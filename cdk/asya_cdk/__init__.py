"""The mesh's CDK app: constructs, the mesh file's model, and the limits checked before synthesis."""

import os

# Set before anything imports `aws_cdk`, whose jsii kernel prints a banner on Node releases past
# jsii's support date at start-up (Node 20 on the machines this runs on); a user may still override it.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
