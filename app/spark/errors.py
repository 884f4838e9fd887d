"""The Spark side's errors.

```
CEPError (engine.errors)
└─ SparkError
   ├─ SparkRunError: the runner cannot run a plan (no pyspark, no input, a failed job)
   └─ SparkPlanError: a node cannot drive a plan on Spark
```
"""

from __future__ import annotations

from engine.errors import CEPError


class SparkError(CEPError):
    """Running a plan on Spark failed; the message says what to change."""


class SparkRunError(SparkError):
    """The Spark runner cannot run a plan (no pyspark, no input, a failed Spark job)."""


class SparkPlanError(SparkError):
    """A plan with `distributed_mode = "spark"` cannot be driven from this node (its checkpoint
    directory is another driver's, Spark cannot start, ...); the message says what to change."""
