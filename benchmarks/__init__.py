"""Benchmark scripts (not tests): ``python3 benchmarks/run.py`` prints the performance table."""
