"""Benchmarks: deterministic generated vaults and measured figures (never timed unit tests)."""
