"""A team's own CDK app with an asya mesh added to it: uploads to the team's bucket start a flow.

upload to the team's bucket → EventBridge rule (wraps the S3 event in an envelope)
  → inspect (reads what S3 says about the object) → label (names the object's kind)
"""
