"""``python -m kafka_rebalance.cli``: the same as the ``kafka-rebalance`` script."""

from kafka_rebalance.cli.app import main

main()
