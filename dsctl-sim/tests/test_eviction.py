"""The ``pods/eviction`` subresource over HTTP, against PDB statuses written by hand.

No control plane runs here: each test writes the budget's status itself, as the disruption
controller would, so every branch of kube-apiserver's eviction handler is reached on purpose.
"""

from __future__ import annotations

from typing import Any

import pytest

from simapi import Api

PODS = "/api/v1/namespaces/default/pods"
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"


async def running_pod(api: Api, name: str, *, phase: str = "Running", ready: bool = True,
                      labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A bound pod whose status says ``phase`` and Ready=``ready``."""
    created = await api.ok("POST", PODS, {
        "metadata": {"name": name, "labels": labels or {"app": "web"}},
        "spec": {"nodeName": "node-0", "containers": [{"name": "c", "image": "busybox"}]}})
    status = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    out: dict[str, Any] = await api.ok("PUT", f"{PODS}/{name}/status", {**created, "status": status})
    return out


async def budget(api: Api, name: str = "web", *, allowed: int, healthy: int = 2, desired: int = 1,
                 observed: bool = True, policy: str | None = None) -> dict[str, Any]:
    """A PDB over ``app=web`` with the given status, as the disruption controller would write it."""
    spec: dict[str, Any] = {"minAvailable": desired, "selector": {"matchLabels": {"app": "web"}}}
    if policy:
        spec["unhealthyPodEvictionPolicy"] = policy
    created = await api.ok("POST", PDBS, {"metadata": {"name": name}, "spec": spec})
    status = {"observedGeneration": 1 if observed else 0, "disruptionsAllowed": allowed, "currentHealthy": healthy,
              "desiredHealthy": desired, "expectedPods": healthy}
    out: dict[str, Any] = await api.ok("PUT", f"{PDBS}/{name}/status", {**created, "status": status})
    return out


def eviction(name: str, **delete_options: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name},
            **({"deleteOptions": delete_options} if delete_options else {})}


async def test_eviction_without_budget_marks_and_deletes_gracefully(api: Api) -> None:
    """No PDB: 201, the pod is terminating and carries the DisruptionTarget condition."""
    await running_pod(api, "a")
    status, body = await api.call("POST", f"{PODS}/a/eviction", eviction("a"))
    assert (status, body["status"]) == (201, "Success")
    pod = await api.ok("GET", f"{PODS}/a")
    assert pod["metadata"].get("deletionTimestamp")
    target = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert [(c["status"], c["reason"]) for c in target] == [("True", "EvictionByEvictionAPI")]


async def test_granted_eviction_spends_the_budget_and_records_the_pod(api: Api) -> None:
    """disruptionsAllowed 1: 201; the PDB now allows 0 and lists the pod in disruptedPods."""
    await running_pod(api, "a")
    await budget(api, allowed=1)
    status, _ = await api.call("POST", f"{PODS}/a/eviction", eviction("a"))
    assert status == 201
    pdb = await api.ok("GET", f"{PDBS}/web")
    assert pdb["status"]["disruptionsAllowed"] == 0 and set(pdb["status"]["disruptedPods"]) == {"a"}
    allowed = [c for c in pdb["status"]["conditions"] if c["type"] == "DisruptionAllowed"]
    assert [(c["status"], c["reason"]) for c in allowed] == [("False", "InsufficientPods")]


@pytest.mark.parametrize(
    ("observed", "cause", "retry_after"),
    [
        pytest.param(True, "The disruption budget web needs 1 healthy pods and has 2 currently", None, id="exhausted"),
        pytest.param(False, "The disruption budget web is still being processed by the server.", "10",
                     id="not-observed"),
    ],
)
async def test_refused_eviction_is_429_with_a_disruption_budget_cause(
    api: Api, observed: bool, cause: str, retry_after: str | None
) -> None:
    """A budget with nothing to spend, or not yet observed, answers 429 and leaves the pod alone."""
    await running_pod(api, "a")
    await budget(api, allowed=0, observed=observed)
    async with api.http.post(f"{api.url}{PODS}/a/eviction", json=eviction("a")) as resp:
        body = await resp.json()
        assert resp.status == 429 and resp.headers.get("Retry-After") == retry_after
    assert body["reason"] == "TooManyRequests"
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"]["causes"] == [{"reason": "DisruptionBudget", "message": cause}]
    assert not (await api.ok("GET", f"{PODS}/a"))["metadata"].get("deletionTimestamp")


@pytest.mark.parametrize(
    ("phase", "ready", "policy", "desired", "healthy", "code"),
    [
        pytest.param("Pending", False, None, 2, 2, 201, id="pending-ignores-budget"),
        pytest.param("Succeeded", False, None, 2, 2, 201, id="finished-ignores-budget"),
        pytest.param("Running", False, "AlwaysAllow", 2, 1, 201, id="unready-always-allow"),
        pytest.param("Running", False, None, 1, 1, 201, id="unready-budget-met"),
        pytest.param("Running", False, None, 2, 1, 429, id="unready-budget-short"),
        pytest.param("Running", True, "AlwaysAllow", 2, 2, 429, id="ready-always-allow-still-guarded"),
    ],
)
async def test_budget_exemptions(  # noqa: PLR0917
    api: Api, phase: str, ready: bool, policy: str | None, desired: int, healthy: int, code: int
) -> None:
    """Pending and finished pods skip the budget; unready pods follow unhealthyPodEvictionPolicy."""
    await running_pod(api, "a", phase=phase, ready=ready)
    await budget(api, allowed=0, healthy=healthy, desired=desired, policy=policy)
    status, _ = await api.call("POST", f"{PODS}/a/eviction", eviction("a"))
    assert status == code
    assert (await api.ok("GET", f"{PDBS}/web"))["status"]["disruptionsAllowed"] == 0


@pytest.mark.parametrize(
    ("path", "body", "code"),
    [
        pytest.param(f"{PODS}/a/eviction", eviction("b"), 400, id="name-mismatch"),
        pytest.param(f"{PODS}/zz/eviction", eviction("zz"), 404, id="no-such-pod"),
    ],
)
async def test_bad_evictions(api: Api, path: str, body: dict[str, Any], code: int) -> None:
    """An Eviction naming another pod is 400; evicting a missing pod is 404."""
    await running_pod(api, "a")
    status, _ = await api.call("POST", path, body)
    assert status == code


async def test_two_budgets_over_one_pod_are_refused(api: Api) -> None:
    """Upstream does not choose between two matching PDBs: 500, and the pod stays."""
    await running_pod(api, "a")
    await budget(api, "one", allowed=1)
    await budget(api, "two", allowed=1)
    status, body = await api.call("POST", f"{PODS}/a/eviction", eviction("a"))
    assert status == 500 and "more than one PodDisruptionBudget" in body["message"]


async def test_dry_run_eviction_checks_but_changes_nothing(api: Api) -> None:
    """dryRun=All: 201, but the budget is not spent and the pod not deleted."""
    await running_pod(api, "a")
    before = await budget(api, allowed=1)
    status, _ = await api.call("POST", f"{PODS}/a/eviction?dryRun=All", eviction("a"))
    assert status == 201
    assert (await api.ok("GET", f"{PDBS}/web"))["status"] == before["status"]
    assert not (await api.ok("GET", f"{PODS}/a"))["metadata"].get("deletionTimestamp")


async def test_eviction_accepts_only_create(api: Api) -> None:
    """GET on pods/eviction is 405, as only create is served."""
    await running_pod(api, "a")
    status, _ = await api.call("GET", f"{PODS}/a/eviction")
    assert status == 405


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param({"minAvailable": 1, "maxUnavailable": 1}, "spec", id="both-set"),
        pytest.param({"minAvailable": "150%"}, "spec.minAvailable", id="over-100-percent"),
        pytest.param({"maxUnavailable": -1}, "spec.maxUnavailable", id="negative"),
        pytest.param({"minAvailable": 1, "unhealthyPodEvictionPolicy": "Never"}, "spec.unhealthyPodEvictionPolicy",
                     id="unknown-policy"),
        pytest.param({"minAvailable": 1, "selector": {"matchExpressions": [{"key": "a", "operator": "Is"}]}},
                     "spec.selector", id="bad-selector"),
    ],
)
async def test_invalid_budgets_are_422(api: Api, spec: dict[str, Any], field: str) -> None:
    """kube-apiserver's PDB spec rules: 422 naming the field."""
    status, body = await api.call("POST", PDBS, {"metadata": {"name": "bad"}, "spec": spec})
    assert status == 422, body
    assert [c["field"] for c in body["details"]["causes"]] == [field]


async def test_budget_status_is_reset_on_create_and_generation_follows_spec(api: Api) -> None:
    """A created PDB allows nothing until observed; a spec change bumps generation, a status write does not."""
    created = await api.ok("POST", PDBS, {"metadata": {"name": "web"},
                                          "spec": {"minAvailable": 1, "selector": {}},
                                          "status": {"disruptionsAllowed": 5}})
    assert created["status"]["disruptionsAllowed"] == 0 and created["metadata"]["generation"] == 1
    updated = await api.ok("PUT", f"{PDBS}/web", {**created, "spec": {"minAvailable": 2, "selector": {}}})
    assert updated["metadata"]["generation"] == 2
