"""Options of the chaos suite and the scenario parametrisation.

- ``--chaos-seed N`` runs the selected scenarios with seed ``N`` (the replay line each run
  prints names the scenario with ``-k``); with ``--long``, a seed past the 200 scenarios (a
  soak started with ``--start``) adds its own scenario to the list, so its replay line works;
- ``--long`` swaps the CI-sized list (28 scenarios, one per theme plus repeats) for the soak
  list (200 scenarios over larger clusters and longer fault windows). Without it, the soak
  failures fixed since (``REGRESSIONS``) run too, each with its soak seed and sizes.

Default seeds are fixed per scenario index, so the CI run is the same every time.
"""

from __future__ import annotations

import pytest

from tests.chaos.scenario import CI_THEMES, THEMES

CI_SEED_BASE = 2000
LONG_SEED_BASE = 50_000
LONG_SCENARIOS = 200
REGRESSIONS: tuple[tuple[int, str, int], ...] = (
    # (soak index, theme, seed) of soak failures fixed since, run in CI with the soak's sizes.
    # An in-place rollout held for the whole expectations TTL by an injected 409 on a pod patch.
    (19, "apiserver-restart", 50459),
    # Pods created again and again for a recreated DaemonSet whose deletion a throttled
    # DaemonSet watch had not delivered, though its status writes answered 404.
    (2, "throttle", 50442),
    # A controller restarted during an apiserver restart and a 429 storm gave up at start-up.
    (18, "mixed", 50920),
    # A controller restarted inside an apiserver restart's refused window gave up at start-up
    # (3 of 3 runs before the preflight waited for an unreachable server).
    (3731, "template-churn", 53731),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chaos")
    group.addoption("--chaos-seed", type=int, default=None, help="seed for the selected chaos scenarios")
    group.addoption("--long", action="store_true", default=False, help="run the 200-scenario chaos soak")


def chaos_cases(*, long: bool) -> list[tuple[int, str]]:
    """(index, theme) of every scenario in the CI or the soak list."""
    if long:
        return [(i, THEMES[i % len(THEMES)]) for i in range(LONG_SCENARIOS)]
    return list(enumerate(CI_THEMES))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "chaos_case" not in metafunc.fixturenames:
        return
    long = bool(metafunc.config.getoption("--long", default=False))
    chosen = metafunc.config.getoption("--chaos-seed", default=None)
    base = LONG_SEED_BASE if long else CI_SEED_BASE
    cases = chaos_cases(long=long)
    if long and chosen is not None and int(chosen) - base >= LONG_SCENARIOS:
        # A soak past the 200 (``--start``) prints the replay of its own index: run that one too.
        index = int(chosen) - base
        cases.append((index, THEMES[index % len(THEMES)]))
    params = [pytest.param((index, theme, base + index if chosen is None else int(chosen), long),
                           id=f"s{index:03d}-{theme}") for index, theme in cases]
    if not long and chosen is None:
        params += [pytest.param((index, theme, seed, True), id=f"regression-s{index:03d}-{theme}-{seed}")
                   for index, theme, seed in REGRESSIONS]
    metafunc.parametrize("chaos_case", params)
