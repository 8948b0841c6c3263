"""Chaos suite: seeded fault schedules against the simulator while the real controller works."""
