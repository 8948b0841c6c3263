"""Carry out one chaos scenario against ``dsctl sim serve`` and the real controller process.

``run_scenario`` owns every process it starts (simulator, controller replicas) and stops them
in ``finally``. The phases:

1. **setup**: the seeded simulator, node labels (``pool=blue``) and the infra taint, the
   DaemonSets at template version 1, then the controller; wait until every DaemonSet is settled.
2. **faults**: the checker starts observing; each step runs as its own task at its offset in
   the window (a timed pause: that is the scenario, not a wait for a result). Steps on one
   DaemonSet are serialised by a lock, so a template change never races its re-creation. Calls
   to the simulator's admin API are serialised by another, which an apiserver restart holds
   until the server is back (the admin API goes down with it).
3. **faults stop**: every fault knob reset, killed replicas replaced; the clock starts.
4. **convergence**: poll the settled-state recount until it holds, within ``bound`` seconds.
5. **verdict**: checker violations, late pods, controller deaths and logged errors, the
   **budget** invariant (:mod:`tests.chaos.budgets`: no budget status ever allows more than
   ``maxDisruptions``, and each settles at ``desired - maxDisruptions``), and with two replicas
   the invariant **one writer** over the simulator's request log (:mod:`tests.support.onewriter`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import aiohttp

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, LEASES, NODES, PODS
from dsctl_api.pods import controller_ref
from tests.chaos import actions
from tests.chaos.budgets import BudgetWatch
from tests.chaos.checker import ChaosChecker
from tests.chaos.faultknobs import FaultKnobs
from tests.chaos.ledger import DeletionLedger
from tests.chaos.recount import settle_problems
from tests.chaos.replicas import Replicas
from tests.chaos.scenario import NODE_MONITOR_GRACE, Scenario, Step, hits_leases
from tests.chaos.tokens import TokenRotator
from tests.support.clusterview import target_of
from tests.support.onewriter import lease_history, one_writer_violations
from tests.support.poll import eventually
from tests.support.requestaudit import read_all_requests
from tests.support.simproc import SimProcess

__all__ = ["CONVERGENCE_BOUND", "ScenarioResult", "run_scenario"]

CONVERGENCE_BOUND = 30.0
"""Seconds from "faults stop" to the settled state (invariant c), on top of the scenario's ideal
rollout time (``Scenario.rollout_seconds``: a few seconds for the CI list, up to ~45 s for a
30-node fleet updated one node at a time with minReadySeconds)."""
SETUP_BOUND = 45.0
LEADERSHIP_BOUND = 15.0
"""Seconds after settling for a running replica to hold and renew the Lease: an expired lease
(3 s) is taken on the next retry, a restarted replica needs a few seconds to sync its caches."""


@dataclass
class ScenarioResult:
    """What one run found; ``violations`` empty means every invariant held."""

    scenario: Scenario
    violations: list[str] = field(default_factory=list)
    convergence_seconds: float | None = None
    duration_seconds: float = 0.0
    injected_errors: int = 0
    """Requests the simulator failed on purpose (500, 429, 409)."""
    raced_creates: int = 0
    """Pods whose create was in flight when their DaemonSet was deleted (then garbage-collected)."""
    bound_seconds: float = 0.0
    """The convergence bound this run was held to."""
    log_file: str = ""
    """Every controller log line of a failed run, kept for the post-mortem."""
    notes: list[str] = field(default_factory=list)

    def report(self, *, long: bool = False) -> str:
        """The failure message: replay line, scenario, violations, what the schedule did."""
        lines = [f"replay: {self.scenario.replay(long=long)}", self.scenario.describe(), "violations:"]
        lines += [f"  {v}" for v in self.violations[:40]]
        lines += ["schedule log:", *(f"  {n}" for n in self.notes[-40:])]
        if self.log_file:
            lines.append(f"controller logs: {self.log_file}")
        return "\n".join(lines)


class _Run:
    """The state of one run: clients, replicas, checker, and the image version of each DaemonSet."""

    def __init__(self, scenario: Scenario, *, sim: SimProcess, client: KubeClient, replicas: Replicas,
                 checker: ChaosChecker, result: ScenarioResult, tokens: TokenRotator) -> None:
        self.scenario = scenario
        self.tokens = tokens
        self.sim = sim
        self.client = client
        self.replicas = replicas
        self.checker = checker
        self.result = result
        self.knobs = FaultKnobs(sim)
        self.admin = asyncio.Lock()
        """Held around every call to the simulator's admin API, and for the whole of an apiserver
        restart, when that API is down with the rest of the server."""
        self.versions = {d.name: 1 for d in scenario.daemonsets}
        self.history = {d.name: [1] for d in scenario.daemonsets}
        self.strategies = {d.name: d.strategy for d in scenario.daemonsets}
        self.locks = {d.name: asyncio.Lock() for d in scenario.daemonsets}
        self.specs = {d.name: d for d in scenario.daemonsets}
        self.started = time.monotonic()

    def note(self, text: str) -> None:
        self.result.notes.append(f"[{time.monotonic() - self.started:6.2f}s] {text}")

    async def bump(self, name: str, version: int) -> None:
        self.versions[name] = version
        self.history[name].append(version)
        await actions.set_image(self.client, name, version)

    async def step(self, step: Step, t0: float) -> None:
        await asyncio.sleep(max(0.0, t0 + step.at - time.monotonic()))  # the schedule's own timing
        self.note(f"start {step}")
        handler: Callable[[Step], Any] = getattr(self, f"_do_{step.kind}")
        await handler(step)

    # -- faults on the API ----------------------------------------------------------------

    async def _do_rollout(self, step: Step) -> None:
        async with self.locks[step.target]:
            await self.bump(step.target, self.versions[step.target] + 1)

    async def _do_drop_watches(self, step: Step) -> None:
        async with self.admin:
            self.note(f"dropped {await self.sim.drop_watches()} watches")

    async def _layer(self, step: Step, **knobs: Any) -> None:
        name = f"{step.kind}@{step.at}"
        async with self.admin:
            await self.knobs.push(name, **knobs)
        await asyncio.sleep(float(step.params["duration"]))  # how long the fault lasts
        async with self.admin:
            await self.knobs.pop(name)
        self.note(f"end {step.kind}")

    async def _do_watch_drop_interval(self, step: Step) -> None:
        await self._layer(step, watch_drop_seconds=step.params["seconds"])

    async def _do_errors_500(self, step: Step) -> None:
        self._count_lease_rules(step)
        await self._layer(step, errors=step.params["rules"])

    async def _do_errors_429(self, step: Step) -> None:
        self._count_lease_rules(step)
        await self._layer(step, errors=step.params["rules"], retry_after_seconds=step.params["retry_after"])

    async def _do_conflicts_409(self, step: Step) -> None:
        self._count_lease_rules(step)
        await self._layer(step, errors=step.params["rules"])

    def _count_lease_rules(self, step: Step) -> None:
        """Rules that also fail Lease requests are a Lease fault: a leader that cannot renew
        within its deadline steps down and exits 1, as kube-controller-manager does, and is
        restarted like a pod would be."""
        if hits_leases(step.params["rules"]):
            self.replicas.lease_faults += 1

    async def _do_latency(self, step: Step) -> None:
        await self._layer(step, latency_ms=step.params["latency_ms"],
                          watch_event_latency_ms=step.params["watch_event_latency_ms"])

    # -- faults on the leader-election Lease (two replicas) ------------------------------

    async def restart_lost(self) -> None:
        """While the schedule runs: restart replicas that exited after losing the Lease."""
        while True:
            await asyncio.sleep(0.5)  # a restart policy's pace, not a wait for a result
            for note in await self.replicas.restart_lost():
                self.note(note)

    async def _do_lease_500(self, step: Step) -> None:
        self.replicas.lease_faults += 1
        await self._layer(step, errors=step.params["rules"])

    async def _do_lease_429(self, step: Step) -> None:
        self.replicas.lease_faults += 1
        await self._layer(step, errors=step.params["rules"])

    async def _do_lease_latency(self, step: Step) -> None:
        self.replicas.lease_faults += 1
        await self._layer(step, resource_latency_ms={"leases": step.params["latency_ms"]})

    async def _do_compaction(self, step: Step) -> None:
        async with self.admin:
            self.note(f"compacted at rv {await self.sim.compact(expire_watches=True)}")

    async def _do_forced_relist(self, step: Step) -> None:
        pages = int(step.params["expired_pages"])
        async with self.admin:
            # One write first, so the compaction lands past every resourceVersion the controller
            # has seen. Otherwise a controller whose watches were down (an apiserver restart
            # just ended) re-watches from the compaction point itself, which is valid, and never
            # relists (seed 53063). A node annotation is read by no planner.
            listed = await actions.retrying(partial(self.client.list, NODES))
            node = str(listed["items"][0]["metadata"]["name"])
            await actions.retrying(partial(self.client.patch, NODES, node,
                                           {"metadata": {"annotations": {"chaos.dsctl.io/relist": str(step.at)}}}))
            await self.sim.patch_faults(compact_before_continue=pages)
            rv = await self.sim.compact(expire_watches=True)
        self.note(f"forced relist at rv {rv}: watches ended with 410, next {pages} continue tokens expire")

        async def expired_all() -> bool:
            async with self.admin:
                return int((await self.sim.faults()).get("compact_before_continue", 0)) == 0

        # The relist must have run into the expired tokens (and started over), or the step proved nothing.
        await eventually(expired_all, timeout=30, interval=0.2, message="the controller's relist to hit expired tokens")
        self.note("end forced_relist")

    async def _do_apiserver_restart(self, step: Step) -> None:
        seconds = float(step.params["seconds"])
        async with self.admin:
            before = int((await self.sim.stats())["restarts"])
            self.note(f"apiserver restart ({seconds}s refused) during {self.progress()}")
            status, body = await self.sim.request("POST", "/sim/restart", params={"seconds": str(seconds)},
                                                  headers=self.sim.bearer())
            if status != 202:
                raise RuntimeError(f"restart refused: {status} {body}")
            await eventually(lambda: _restarted(self.sim, before + 1), timeout=seconds + 30, interval=0.1,
                             message="the apiserver back after its restart")
        self.note("end apiserver_restart")

    async def _do_token_rotation(self, step: Step) -> None:
        # An admin call like the others: under the lock, so it never lands inside a restart's
        # refused window (seed 50011 drew a rotation 1.2 s into a 1.6 s restart).
        async with self.admin:
            await self.tokens.rotate(self.sim, grace=float(step.params["grace"]))
        self.note(f"token rotated (#{self.tokens.rotations}), old token revoked after {step.params['grace']}s")

    # -- the controller process -----------------------------------------------------------

    def progress(self) -> str:
        """Per DaemonSet: nodes with a current-revision pod / desired nodes, as the observers see it."""
        parts = []
        for name in self.versions:
            obs = self.checker.observer(name)
            if obs is not None:
                parts.append(f"{name} {len(obs.nodes_with_hash(obs.current_hash) & obs.desired)}/{len(obs.desired)}")
        return "rollout progress " + ", ".join(parts)

    async def _do_kill(self, step: Step) -> None:
        self.note(f"kill -9 during {self.progress()}")
        self.note(await self.replicas.kill(pause=float(step.params["pause"])))

    async def _do_failover(self, step: Step) -> None:
        self.note(f"kill -9 of the leader during {self.progress()}")
        self.note(await self.replicas.kill(pause=float(step.params["pause"]), leader_only=True))

    # -- nodes ----------------------------------------------------------------------------

    async def _do_node_join(self, step: Step) -> None:
        self.checker.exclude(step.target)
        await actions.join_node(self.client, step.target, blue=bool(step.params["blue"]))

    async def _do_tainted_join(self, step: Step) -> None:
        self.checker.exclude(step.target)
        await actions.join_node(self.client, step.target, blue=bool(step.params["blue"]),
                                taints=[actions.READINESS_TAINT])

    async def _do_node_delete(self, step: Step) -> None:
        self.checker.exclude(step.target)
        await actions.retrying(lambda: self.client.delete(NODES, step.target))

    async def _do_taint_flap(self, step: Step) -> None:
        self.checker.exclude(step.target)
        await actions.set_taint(self.client, step.target, str(step.params["effect"]))
        await asyncio.sleep(float(step.params["duration"]))  # how long the flap lasts
        await actions.set_taint(self.client, step.target, None)
        self.note(f"end taint_flap {step.target}")

    async def _do_label_flap(self, step: Step) -> None:
        self.checker.exclude(step.target)
        before = "blue" if step.target in self.scenario.blue_nodes else None
        await actions.set_label(self.client, step.target, "pool", None if before else "blue")
        await asyncio.sleep(float(step.params["duration"]))  # how long the flap lasts
        await actions.set_label(self.client, step.target, "pool", before)
        self.note(f"end label_flap {step.target}")

    async def _do_kubelet_stop(self, step: Step) -> None:
        self.checker.exclude(step.target)
        async with self.admin:
            await self.sim.set_kubelet(step.target, running=False)
        await asyncio.sleep(float(step.params["duration"]))  # how long the kubelet stays down
        async with self.admin:
            await self.sim.set_kubelet(step.target, running=True)
        self.note(f"end kubelet_stop {step.target}")

    async def _do_node_shutdown(self, step: Step) -> None:
        self.checker.exclude(step.target)
        async with self.admin:
            await self.sim.shutdown_node(step.target, grace_seconds=float(step.params["grace"]),
                                         critical_grace_seconds=float(step.params["critical"]))
        await asyncio.sleep(float(step.params["pause"]))  # the shutdown runs, then the node stays down
        if step.params["then"] == "delete":
            with contextlib.suppress(errors.NotFound):
                await actions.retrying(lambda: self.client.delete(NODES, step.target))
        else:
            async with self.admin:
                await self.sim.set_kubelet(step.target, running=True)
        self.note(f"end node_shutdown {step.target} ({step.params['then']})")

    async def _do_departing_taint(self, step: Step) -> None:
        self.checker.exclude(step.target)
        taint = actions.departing_taint(str(step.params["taint"]))
        await actions.add_departing_taint(self.client, step.target, taint)
        await asyncio.sleep(float(step.params["duration"]))  # how long the node looks departing
        await actions.remove_taint(self.client, step.target, str(taint["key"]))
        self.note(f"end departing_taint {step.target}")

    async def _do_finalizer_delete(self, step: Step) -> None:
        self.checker.exclude(step.target)
        await actions.delete_with_finalizer(self.client, step.target)
        await asyncio.sleep(float(step.params["duration"]))  # the node stays in deletion this long
        await actions.remove_finalizer(self.client, step.target)
        self.note(f"end finalizer_delete {step.target}")

    async def _do_evictions(self, step: Step) -> None:
        # VPA's updater evicts pods one POST at a time and comes back to those refused with 429.
        # Each evicted node leaves the rollout budget's account (invariant b): an eviction is a
        # disruption the budget answers for, not the rolling update.
        rng = random.Random(int(step.params["pick"]))
        until = time.monotonic() + float(step.params["duration"])
        allowed = refused = 0
        while time.monotonic() < until:
            with contextlib.suppress(errors.ApiError, aiohttp.ClientError):
                pods = sorted((p for p in (await self.client.list(PODS, namespace="default",
                                                                  label_selector=f"app={step.target}"))["items"]
                               if not p["metadata"].get("deletionTimestamp")), key=lambda p: p["metadata"]["name"])
                if pods:
                    pod = rng.choice(pods)
                    self.checker.exclude(target_of(pod))
                    name = pod["metadata"]["name"]
                    body = {"apiVersion": "policy/v1", "kind": "Eviction",
                            "metadata": {"name": name, "namespace": "default"}}
                    status, _ = await self.sim.request(
                        "POST", f"/api/v1/namespaces/default/pods/{name}/eviction", json=body,
                        headers={"Authorization": f"Bearer {self.tokens.token}"})
                    allowed += status == 201
                    refused += status == 429
            await asyncio.sleep(float(step.params["interval"]))  # the evicter's own pace
        self.note(f"end evictions {step.target}: {allowed} allowed, {refused} refused")

    async def _do_notready_flap(self, step: Step) -> None:
        self.checker.exclude(step.target)
        await actions.set_node_ready(self.client, step.target, False)
        await asyncio.sleep(float(step.params["duration"]))  # how long the flap lasts
        await actions.set_node_ready(self.client, step.target, True)
        self.note(f"end notready_flap {step.target}")

    # -- DaemonSets -----------------------------------------------------------------------

    async def _do_template_change(self, step: Step) -> None:
        async with self.locks[step.target]:
            await self.bump(step.target, max(*self.history[step.target], self.versions[step.target]) + 1)

    async def _do_rollback(self, step: Step) -> None:
        async with self.locks[step.target]:
            previous = self.history[step.target][-2] if len(self.history[step.target]) > 1 else 1
            await self.bump(step.target, previous)

    async def _switch(self, name: str, strategy: dict[str, Any]) -> None:
        if _has_surge(self.strategies[name]) and not _has_surge(strategy):
            self.checker.relax_surge(name)
        self.strategies[name] = strategy
        await self.checker.unobserve(name)
        updated = await actions.set_strategy(self.client, name, strategy)
        await self.checker.observe_when_seen(name, generation=int(updated["metadata"]["generation"]))

    async def _do_strategy_switch(self, step: Step) -> None:
        async with self.locks[step.target]:
            original = self.strategies[step.target]
            await self._switch(step.target, step.params["strategy"])
        await asyncio.sleep(float(step.params["back_after"]))  # how long the other strategy stays
        async with self.locks[step.target]:
            await self._switch(step.target, original)
        self.note(f"end strategy_switch {step.target}")

    async def _do_recreate(self, step: Step) -> None:
        name = step.target
        async with self.locks[name]:
            await self.checker.unobserve(name)
            await actions.retrying(lambda: self.client.delete(DAEMONSETS, name, namespace="default"))
            await eventually(lambda: self._gone(name), timeout=20, interval=0.05, message=f"ds/{name} deleted")
            await asyncio.sleep(float(step.params["pause"]))  # time without the DaemonSet
            spec = self.specs[name]
            body = actions.ds_body(spec, version=self.versions[name])
            body["spec"]["updateStrategy"] = self.strategies[name]
            await actions.retrying(lambda: self.client.create(DAEMONSETS, body, namespace="default"))
            await self.checker.observe(name)
        self.note(f"end recreate {name}")

    async def _gone(self, name: str) -> bool:
        try:
            await self.client.get(DAEMONSETS, name, namespace="default")
        except errors.NotFound:
            return True
        except errors.ApiError:
            return False
        return False


async def _restarted(sim: SimProcess, count: int) -> bool:
    """True once ``count`` restarts have gone down and come back up."""
    try:
        status, body = await sim.request("GET", "/sim/restarts", headers=sim.bearer())
    except aiohttp.ClientError:
        return False  # still down: connection refused
    outages = (body.get("items") or []) if status == 200 else []
    return len(outages) >= count and all(o["up"] for o in outages)


def _has_surge(strategy: dict[str, Any]) -> bool:
    surge = (strategy.get("rollingUpdate") or {}).get("maxSurge")
    return strategy.get("type") == "RollingUpdate" and surge not in (None, 0, "0", "0%")


async def _setup(scenario: Scenario, client: KubeClient) -> None:
    for name in scenario.blue_nodes:
        await actions.set_label(client, name, "pool", "blue")
    for name in scenario.infra_nodes:
        await actions.retrying(partial(client.patch, NODES, name, {"spec": {"taints": [actions.INFRA_TAINT]}}))
    for spec in scenario.daemonsets:
        await client.create(DAEMONSETS, actions.ds_body(spec, version=1), namespace="default")


async def run_scenario(scenario: Scenario, *, bound: float | None = None,
                       log: Callable[[str], None] = print) -> ScenarioResult:
    """Run ``scenario`` end to end; never raises for a violation, returns them instead.

    ``bound`` defaults to ``CONVERGENCE_BOUND`` plus the scenario's ideal rollout time.
    """
    result = ScenarioResult(scenario)
    if bound is None:
        bound = CONVERGENCE_BOUND + scenario.rollout_seconds()
    result.bound_seconds = bound
    began = time.monotonic()
    log(f"chaos {scenario.id} seed={scenario.seed}: replay with `{scenario.replay()}`")
    args = ["--pod-startup-seconds", str(scenario.pod_startup), "--seed", str(scenario.seed),
            "--bookmark-seconds", "1", "--node-monitor-grace-seconds", str(NODE_MONITOR_GRACE)]
    names = [d.name for d in scenario.daemonsets]
    # Every scenario authenticates with a token file, so a rotation can happen in any of them.
    tokens = TokenRotator()
    async with SimProcess(nodes=scenario.nodes, args=[*args, *tokens.server_args()]) as sim:
        kubeconfig = tokens.kubeconfig(sim.kubeconfig)
        client = await KubeClient.from_config(kubeconfig=kubeconfig, qps=1000, burst=2000)
        try:
            # Nodes are labelled and tainted before any controller starts: a controller whose node
            # cache lagged behind the infra taint would rightly keep a pod it placed there
            # (NoSchedule does not evict), which is not the settled state this suite asks for.
            await _setup(scenario, client)
            limits = {d.name: d.max_disruptions for d in scenario.daemonsets if d.max_disruptions is not None}
            async with Replicas(kubeconfig, count=scenario.replicas, args=list(scenario.controller_args)) as replicas, \
                    ChaosChecker(client) as checker, BudgetWatch(client, limits) as budgets:
                run = _Run(scenario, sim=sim, client=client, replicas=replicas, checker=checker, result=result,
                           tokens=tokens)
                await eventually(lambda: _settled(client, names), timeout=SETUP_BOUND, interval=0.2,
                                 message="initial rollout settled")
                for name in names:
                    await checker.observe(name)
                gating = [d.name for d in scenario.daemonsets if d.gating]
                if gating:
                    await checker.watch_gate(str(actions.READINESS_TAINT["key"]), gating)
                run.note("faults start")
                t0 = time.monotonic()
                restarter = asyncio.create_task(run.restart_lost(), name="chaos-restart-lost")
                try:
                    await asyncio.gather(*(run.step(s, t0) for s in scenario.steps))
                finally:
                    restarter.cancel()
                    await asyncio.gather(restarter, return_exceptions=True)
                async with run.admin:
                    await run.knobs.clear()
                await replicas.ensure_running()
                stopped = time.monotonic()
                run.note("faults stop")
                try:
                    await eventually(lambda: _settled(client, names, checker.ledger), timeout=bound, interval=0.2,
                                     message=f"settled within {bound:.0f}s after the faults stopped")
                    result.convergence_seconds = round(time.monotonic() - stopped, 3)
                except AssertionError as exc:
                    result.violations.append(f"convergence: {exc}")
                run.note(f"settled after {result.convergence_seconds}s")
                result.injected_errors = int((await sim.stats()).get("injectedFaults") or 0)
                raced = checker.ledger.raced()
                result.raced_creates = len(raced)
                if raced:
                    run.note(f"creates in flight when their DaemonSet was deleted (garbage-collected): {raced}")
                run.note(f"injected errors {result.injected_errors}, kills {replicas.kills}, "
                         f"observer watch errors {checker.observer_errors}, ledger relists {checker.ledger.relists}")
                for name in names:
                    await checker.unobserve(name)
                await checker.finish_gate()
                if checker.gate is not None:
                    run.note(f"readiness taints removed {len(checker.gate.removals)}, judged {checker.gate.judged}, "
                             f"watch gaps {checker.gate_gaps}")
                result.violations += checker.problems()
                result.violations += budgets.violations
                if result.convergence_seconds is not None:
                    try:
                        await eventually(lambda: _no_problems(budgets), timeout=10, interval=0.2,
                                         message="each budget at desired - maxDisruptions")
                    except AssertionError as exc:
                        result.violations.append(f"budget: {exc}")
                run.note(f"budget statuses checked {budgets.statuses}, budget watch errors {budgets.errors}")
                result.violations += replicas.problems()
                if scenario.replicas > 1:
                    try:
                        await _leadership_recovered(client, replicas)
                    except AssertionError as exc:
                        result.violations.append(f"leadership: {exc}")
                    records, _ = await read_all_requests(sim)
                    result.violations += one_writer_violations(records)
                    handovers = lease_history(records)
                    run.note(f"lease holders: {len(handovers)} ({len(handovers) - 1} handovers), "
                             f"leadership lost under Lease faults: {replicas.lost_leases()}")
                if result.violations:
                    result.log_file = _keep_logs(scenario, replicas, result)
        finally:
            await client.close()
            tokens.close()
    result.duration_seconds = round(time.monotonic() - began, 2)
    return result


async def _no_problems(budgets: BudgetWatch) -> _Settled:
    return _Settled(await budgets.settled_problems())


async def _leadership_recovered(client: KubeClient, replicas: Replicas) -> None:
    """After the faults: a running replica holds the Lease and renews it (its elector survived)."""
    first = (await client.get(LEASES, "dsctl", namespace="default"))["spec"]

    async def renewing() -> str | None:
        spec = (await client.get(LEASES, "dsctl", namespace="default"))["spec"]
        holder = str(spec.get("holderIdentity") or "")
        fresh = spec.get("renewTime") != first.get("renewTime")
        return holder if fresh and holder in replicas.running_identities() else None

    await eventually(renewing, timeout=LEADERSHIP_BOUND, interval=0.2,
                     message="a running replica renewing the Lease after the faults")


def _keep_logs(scenario: Scenario, replicas: Replicas, result: ScenarioResult) -> str:
    """Write every replica's log and the schedule notes to a file that outlives the run."""
    fd, path = tempfile.mkstemp(prefix=f"dsctl-chaos-{scenario.id}-{scenario.seed}-", suffix=".log")
    with os.fdopen(fd, "w") as out:
        out.write(scenario.describe() + "\n" + "\n".join(result.notes) + "\n")
        for index, proc in enumerate(replicas.processes):
            out.write(f"=== replica #{index}\n" + "\n".join(proc.raw) + "\n")
    return path


class _Settled:
    """Truthy when nothing is left; its repr lists what is, for the timeout message."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems

    def __bool__(self) -> bool:
        return not self.problems

    def __repr__(self) -> str:
        return "; ".join(self.problems)


async def _settled(client: KubeClient, names: list[str], ledger: DeletionLedger | None = None) -> _Settled:
    problems = await settle_problems(client, names)
    if ledger is not None and ledger.deleted_rv:
        # Pods whose create raced their DaemonSet's deletion must be garbage-collected.
        pods = (await client.list(PODS, namespace="default"))["items"]
        problems += [f"pod {p['metadata']['name']} of deleted ds uid {(controller_ref(p) or {}).get('uid')} remains"
                     for p in pods if (controller_ref(p) or {}).get("uid") in ledger.deleted_rv]
    return _Settled(problems)
