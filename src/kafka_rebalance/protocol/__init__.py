"""The classic consumer-group protocol as sans-I/O state machines."""
