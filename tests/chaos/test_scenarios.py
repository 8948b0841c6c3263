"""The seeded chaos scenarios: every invariant holds under each fault schedule.

Each case prints its seed and a one-line replay command; a failure message starts with it,
then lists the scenario, the violations and what the schedule did when.
"""

from __future__ import annotations

from typing import Any

from tests.chaos.engine import run_scenario
from tests.chaos.scenario import generate


async def test_chaos_scenario(chaos_case: tuple[int, str, int, bool], record_property: Any) -> None:
    """Under the scenario's faults, invariants (a)-(e) hold and the cluster settles within the bound."""
    index, theme, seed, long = chaos_case
    scenario = generate(seed, theme=theme, index=index, long=long)
    result = await run_scenario(scenario)
    record_property("chaos_seed", seed)
    record_property("convergence_seconds", result.convergence_seconds)
    record_property("faults", result.scenario.fault_counts())
    assert not result.violations, result.report(long=long)
