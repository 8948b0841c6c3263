"""The one-writer invariant over hand-written request logs: the handover window is exact."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.onewriter import lease_history, one_writer_violations

A, B = "dsctl/0.1.0 (a_0000000a)", "dsctl/0.1.0 (b_0000000b)"
KUBECTL = "kubectl/v1.36.0 (linux/amd64)"


def rec(seq: int, agent: str, verb: str, resource: str, *, code: int = 200, name: str = "x",
        subresource: str = "") -> dict[str, Any]:
    return {"seq": seq, "user_agent": agent, "verb": verb, "resource": resource, "code": code, "name": name,
            "subresource": subresource}


def lease(seq: int, agent: str, *, verb: str = "update", code: int = 200) -> dict[str, Any]:
    return rec(seq, agent, verb, "leases", code=code, name="" if verb == "create" else "dsctl")


CASES = [
    pytest.param([lease(1, A, verb="create"), rec(2, A, "create", "pods"), rec(3, A, "update", "daemonsets",
                                                                             subresource="status")],
                 0, id="holder-writes"),
    pytest.param([rec(1, A, "create", "pods"), lease(2, A, verb="create")], 1, id="write-before-any-lease"),
    pytest.param([lease(1, A, verb="create"), rec(2, B, "delete", "pods")], 1, id="standby-writes"),
    pytest.param([lease(1, A, verb="create"), lease(2, B), rec(3, A, "create", "controllerrevisions")], 1,
                 id="old-holder-after-handover"),
    pytest.param([lease(1, A, verb="create"), rec(2, A, "patch", "pods"), lease(3, B), rec(4, B, "patch", "pods")],
                 0, id="clean-handover"),
    pytest.param([lease(1, A, verb="create"), lease(2, B, code=409), rec(3, B, "create", "pods")], 1,
                 id="failed-lease-update-is-no-acquisition"),
    pytest.param([lease(1, A, verb="create"), rec(2, B, "create", "pods", code=500)], 1,
                 id="refused-write-still-counts"),
    pytest.param([lease(1, A, verb="create"), rec(2, B, "get", "pods"), rec(3, B, "create", "events"),
                  rec(4, KUBECTL, "delete", "pods")], 0, id="reads-events-and-others-ignored"),
    pytest.param([rec(3, A, "create", "pods"), lease(1, A, verb="create"), lease(2, B)], 1,
                 id="ordered-by-seq-not-by-list-position"),
]


@pytest.mark.parametrize(("records", "violations"), CASES)
def test_one_writer(records: list[dict[str, Any]], violations: int) -> None:
    """Only the agent of the latest successful Lease write may write pods, DaemonSets and revisions."""
    assert len(one_writer_violations(records)) == violations


def test_lease_history_lists_changes_of_holder_only() -> None:
    """Renewals by the same holder are not handovers; a second holder is."""
    history = lease_history([lease(1, A, verb="create"), lease(2, A), lease(3, B), lease(4, B)])
    assert [(h.seq, h.previous, h.holder) for h in history] == [(1, "", A), (3, A, B)]
