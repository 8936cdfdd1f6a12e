"""Testing: the loopback fake provider server used by tests and benchmarks."""
