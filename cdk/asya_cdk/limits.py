"""AWS's limits that a mesh file can run into, in one place (`asya_cdk.longest` holds the longest value
of every name AWS generates, against them)."""

from __future__ import annotations

LAMBDA_ENVIRONMENT_MAX_BYTES = 4 * 1024  # keys and values, UTF-8 (Lambda's "4 KB" for all variables)
LAMBDA_FUNCTION_NAME_MAX = 64
LAMBDA_MAX_TIMEOUT = 900.0
EMR_APPLICATION_NAME_MAX = 64
SQS_MAX_RETENTION = 14 * 86_400.0
SUMP_RETENTION = SQS_MAX_RETENTION  # x-sump and its DLQ keep messages as long as SQS allows
SQS_MAX_CONCURRENCY_RANGE = (2, 1000)  # an SQS event source's MaximumConcurrency

BUCKET_NAME_MAX = 63
ROLE_NAME_MAX = 64
EMR_APPLICATION_ID_MAX = 64
LONGEST_PARTITION = "aws-us-gov"
ACCOUNT_DIGITS = 12
ASSET_HASH_LENGTH = 64
LONGEST_REGION = "ap-southeast-5"
# A secret CloudFormation names: `<logical id, at most 255>-<12 random>`, then the ARN's `-<6 random>`
GENERATED_SECRET_NAME_MAX = 255 + 1 + 12
COGNITO_POOL_ID_MAX = 55  # Cognito's API: a user pool id, `<region>_<id>`
COGNITO_CLIENT_ID_MAX = 128  # ... and an app client id
COGNITO_DOMAIN_PREFIX_MAX = 63  # ... and a prefix domain's prefix
