"""The EMR Serverless entry point of every Spark actor (`jobDriver.sparkSubmit.entryPoint`).

The actor's code, the `asya` core and this folder's `asya_spark_job` arrive with `--py-files`; their
dependencies with `--archives` (see `asya_cdk.spark`). Locally the same module runs with `--master`.
"""

from __future__ import annotations

import sys

from asya_spark_job.job import main

if __name__ == "__main__":
    sys.exit(main())
