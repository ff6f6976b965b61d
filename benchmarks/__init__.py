"""Benchmark scripts that print their figures (run as files; tests import a few of their helpers)."""
