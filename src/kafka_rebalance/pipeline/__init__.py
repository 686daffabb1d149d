"""The Spark pipeline: strategy sweeps through the simulator (``lab``), broker-log analysis
(``logs``) and their reports. Importing ``kafka_rebalance`` does not import this package or
pyspark; the CLI commands import it when they run."""
