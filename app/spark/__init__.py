"""Cepheus on Apache Spark (docs/spark.md): execution groups (`groups`), the task side
(`tasks`), bounded runs (`runner`, `cepheus run --engine spark`), the receivers' hand-off
(`handoff`) and Structured Streaming deployments (`streaming`). pyspark is an optional
extra, imported only where a Spark session is made (`session`)."""
