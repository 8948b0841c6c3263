"""The ``kube_sim`` fixture's marker: a mistake is one line naming it, never a library traceback."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

VALID = ("nodes, pod_startup_seconds, control_plane, seed, token, host, node_monitor_grace_seconds, args, "
         "startup_timeout, stop_timeout")


@pytest.mark.parametrize(
    ("marker", "line"),
    [
        pytest.param("kube_sim(node=5)", f"@pytest.mark.kube_sim: unknown argument 'node'; valid ones: {VALID}",
                     id="unknown-keyword"),
        pytest.param("kube_sim(5)", f"@pytest.mark.kube_sim takes keyword arguments only ({VALID}), not 5",
                     id="positional"),
        pytest.param("kube_sim(host='10.0.0.1')",
                     "@pytest.mark.kube_sim: the simulated cluster listens on loopback only, not '10.0.0.1'",
                     id="not-loopback"),
    ],
)
def test_a_bad_marker_fails_the_test_in_one_line(pytester: pytest.Pytester, marker: str, line: str) -> None:
    """The test errors at setup with the argument and the valid ones named, and no traceback."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.{marker}
        def test_operator(kube_sim):
            pass
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert line in output.splitlines(), output
    assert "TypeError" not in output and "Traceback" not in output and "During handling" not in output
