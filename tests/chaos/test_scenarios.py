"""The seeded chaos scenarios: every invariant holds under each fault schedule.

Each case prints its seed and a one-line replay command; a failure message starts with it,
then lists the scenario, the violations and what the schedule did when.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.chaos.engine import run_scenario
from tests.chaos.scenario import generate, hits_leases


async def test_chaos_scenario(chaos_case: tuple[int, str, int, bool], record_property: Any) -> None:
    """Under the scenario's faults, invariants (a)-(e) hold and the cluster settles within the bound."""
    index, theme, seed, long = chaos_case
    scenario = generate(seed, theme=theme, index=index, long=long)
    result = await run_scenario(scenario)
    record_property("chaos_seed", seed)
    record_property("convergence_seconds", result.convergence_seconds)
    record_property("faults", result.scenario.fault_counts())
    assert not result.violations, result.report(long=long)


@pytest.mark.parametrize(
    ("rule", "hits"),
    [
        ({"verb": "*", "resource": "*"}, True),
        ({"verb": "*", "resource": "leases"}, True),
        ({"verb": "update", "resource": "*"}, True),
        ({"verb": "list", "resource": "*"}, False),
        ({"verb": "*", "resource": "pods"}, False),
        ({"verb": "create", "resource": "daemonsets"}, False),
    ],
)
def test_error_rules_that_reach_the_lease_are_lease_faults(rule: dict[str, str], hits: bool) -> None:
    """A leader that cannot renew steps down and exits 1; the engine then expects it (and
    restarts the replica) only if the schedule could have failed its Lease requests."""
    assert hits_leases([{**rule, "code": 429, "rate": 0.5}]) is hits
