"""Helpers shared by the test suites: processes, polling, object builders, invariants, clocks."""
