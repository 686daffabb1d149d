"""Real clients: drop-in assignors for kafka-python (``clients.kafka_python``) and aiokafka
(``clients.aiokafka``) that run our assignors at the group leader, and a live view of groups
on a broker (``clients.describe``). Needs the ``kafka`` extra; imported only by the CLI."""
