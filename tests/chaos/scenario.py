"""Chaos scenarios as data: a seed decides the cluster, the DaemonSets and the fault schedule.

A :class:`Scenario` is pure data, built by :func:`generate` from ``(seed, theme)`` alone, so a
failing run is replayed exactly by its seed: the same node count, the same strategies, the
same faults at the same offsets (the timing of the cluster's reactions still varies, which is
the point of running many seeds). The engine (``tests.chaos.engine``) carries a scenario out.

Every scenario opens its fault window with a template change on each DaemonSet, so every fault
lands during a rollout. The *theme* names the fault the scenario is about; a seeded number of
other faults is mixed in. Faults with a duration (error storms, latency, flaps) end inside the
window plus their duration; the engine then clears every fault and measures convergence.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "CI_THEMES",
    "FAULT_KINDS",
    "GATING_STARTUP",
    "LEASE_KINDS",
    "THEMES",
    "TWO_REPLICA_KINDS",
    "DaemonSetSpec",
    "Scenario",
    "Step",
    "generate",
    "hits_leases",
]

_FIRST_THEMES = (
    "watch-drop", "server-errors", "throttle", "conflicts", "latency", "compaction", "kill", "failover",
    "node-join", "node-delete", "taint-flap", "label-flap", "notready-flap", "template-churn", "rollback",
    "strategy-switch", "recreate", "token-rotation", "mixed",
)
_NODE_LIFE_THEMES = ("kubelet-stop", "node-shutdown", "departing", "evictions")
_GATE_THEMES = ("readiness-gate",)
THEMES = (*_FIRST_THEMES, "apiserver-restart", "lease-faults", "forced-relist", *_NODE_LIFE_THEMES, *_GATE_THEMES)
"""Every theme; ``mixed`` draws several faults of any kind."""

CI_THEMES = (*_FIRST_THEMES, "kill", "mixed", "apiserver-restart", "lease-faults", "forced-relist",
             *_NODE_LIFE_THEMES, *_GATE_THEMES)
"""The CI-sized run: every theme once, plus a second kill and a second mix (28 scenarios). Themes
added later go last, so the earlier scenarios keep their index and seed."""

FAULT_KINDS = (
    "drop_watches", "watch_drop_interval", "errors_500", "errors_429", "conflicts_409", "latency", "compaction",
    "kill", "failover", "node_join", "node_delete", "taint_flap", "label_flap", "notready_flap",
    "template_change", "rollback", "strategy_switch", "recreate", "token_rotation", "apiserver_restart",
    "lease_500", "lease_429", "lease_latency", "forced_relist",
    "kubelet_stop", "node_shutdown", "departing_taint", "finalizer_delete", "evictions",
    "tainted_join",
)
"""Step kinds that count as injected faults (``rollout`` steps start the rollouts, not counted)."""

LEASE_KINDS = ("lease_500", "lease_429", "lease_latency")
"""Faults on the leader-election Lease alone. They need two replicas from the start, and a
leader may rightly lose its Lease under them (it exits 1, as it would in a Deployment)."""
TWO_REPLICA_KINDS = ("failover", *LEASE_KINDS)

_THEME_KINDS: dict[str, tuple[str, ...]] = {
    "watch-drop": ("drop_watches", "watch_drop_interval"),
    "server-errors": ("errors_500",),
    "throttle": ("errors_429",),
    "conflicts": ("conflicts_409",),
    "latency": ("latency",),
    "compaction": ("compaction",),
    "kill": ("kill",),
    "failover": ("failover",),
    "node-join": ("node_join",),
    "node-delete": ("node_delete",),
    "taint-flap": ("taint_flap",),
    "label-flap": ("label_flap",),
    "notready-flap": ("notready_flap",),
    "template-churn": ("template_change",),
    "rollback": ("rollback",),
    "strategy-switch": ("strategy_switch",),
    "recreate": ("recreate",),
    "token-rotation": ("token_rotation",),
    "apiserver-restart": ("apiserver_restart",),
    "lease-faults": LEASE_KINDS,
    "forced-relist": ("forced_relist",),
    "kubelet-stop": ("kubelet_stop",),
    "node-shutdown": ("node_shutdown",),
    "departing": ("departing_taint", "finalizer_delete"),
    "evictions": ("evictions",),
    "readiness-gate": ("tainted_join",),
}
_NODE_LIFE_KINDS = ("kubelet_stop", "node_shutdown", "departing_taint", "finalizer_delete", "evictions")
_GATE_KINDS = ("tainted_join",)
"""Nodes that join carrying the readiness taint, in the ``readiness-gate`` theme only (ADR 0171)."""
# Extras mixed into any scenario: everything but the kinds that need two replicas from the start.
# The CI list draws from the kinds it had before the apiserver restart, so its scenarios stay as
# they were; the soak draws from all of them but the Lease faults (which need two replicas).
# The node-lifecycle kinds are drawn only by their own themes: mixing them in would change the
# scenario of every seed (the replayed soak failures included).
_EXTRA_KINDS = tuple(k for k in FAULT_KINDS
                     if k not in ("apiserver_restart", "forced_relist", *TWO_REPLICA_KINDS, *_NODE_LIFE_KINDS,
                                  *_GATE_KINDS))
_LONG_EXTRA_KINDS = (*_EXTRA_KINDS, "apiserver_restart", "forced_relist")
NODE_MONITOR_GRACE = 1.0
"""The chaos simulator's ``--node-monitor-grace-seconds``: a stopped kubelet's node turns Unknown
within the fault window."""
RELIST_PAGE_SIZE = 4
"""``--list-page-size`` of the controllers in a scenario with a forced relist: chaos clusters hold
tens of objects, so only small pages make a list span pages and a continue token expire."""
LEASE_DURATION = 3.0
"""The chaos replicas' lease duration (``tests.chaos.replicas.LEADER_ARGS``)."""
# Writes the controller makes; error rules target these, not leases: a leader that cannot renew
# is meant to step down and exit, which the Lease steps test. An ``errors_429`` rule on every
# resource (``*``) hits the Lease as well; ``hits_leases`` lets the engine count it as a Lease fault.
_WRITE_TARGETS = (("create", "pods"), ("delete", "pods"), ("patch", "pods"), ("update", "daemonsets/status"),
                  ("create", "controllerrevisions"), ("*", "pods"), ("*", "daemonsets"), ("list", "*"))
_CONFLICT_TARGETS = (("update", "daemonsets/status"), ("create", "pods"), ("patch", "pods"),
                     ("delete", "pods"), ("update", "controllerrevisions"), ("patch", "controllerrevisions"))


@dataclass(frozen=True)
class Step:
    """One scheduled action: ``at`` seconds after the fault window opens."""

    at: float
    kind: str
    target: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        extra = " ".join(f"{k}={v}" for k, v in sorted(self.params.items()) if k != "rules")
        rules = self.params.get("rules")
        if rules:
            extra += " rules=" + ",".join(f"{r['verb']}:{r['resource']}:{r['code']}@{r['rate']}" for r in rules)
        return f"t+{self.at:.2f}s {self.kind}{' ' + self.target if self.target else ''}{' ' + extra if extra else ''}"


@dataclass(frozen=True)
class DaemonSetSpec:
    """A DaemonSet the scenario creates: strategy, placement and pod timing."""

    name: str
    strategy: dict[str, Any]
    node_selector: dict[str, str] | None = None
    tolerate_infra: bool = False
    min_ready_seconds: int = 0
    grace_seconds: int = 0
    max_disruptions: int | None = None
    """``dsctl.io/max-disruptions``: the first DaemonSet of every scenario keeps a budget of 1
    (no draw from the seed, so every scenario keeps the faults it always had)."""
    gating: bool = False
    """The DaemonSet gates its nodes (``dsctl.io/node-readiness-gate``)."""
    startup_seconds: float | None = None
    """Its pods' simulated start-up (``sim.dsctl.io/startup-seconds``); None: the scenario's."""


GATING_STARTUP = 1.0
"""Start-up of the gating DaemonSet's pods in the ``readiness-gate`` theme: slower than the others,
so a tainted node waits on its gating pod while the faults run."""


@dataclass(frozen=True)
class Scenario:
    """Everything a run needs, derived from ``seed`` and ``theme``."""

    id: str
    seed: int
    theme: str
    nodes: int
    pod_startup: float
    replicas: int
    window: float
    daemonsets: tuple[DaemonSetSpec, ...]
    steps: tuple[Step, ...]
    blue_nodes: tuple[str, ...] = ()
    infra_nodes: tuple[str, ...] = ()
    controller_args: tuple[str, ...] = ()
    """Extra ``dsctl run`` flags for this scenario's controllers."""

    def replay(self, *, long: bool = False) -> str:
        """The one-line command that runs this scenario again."""
        return f"pytest tests/chaos -k {self.id} --chaos-seed {self.seed}{' --long' if long else ''}"

    def rollout_seconds(self) -> float:
        """A full rollout of the slowest DaemonSet at its ideal pace: waves × (startup + grace + minReady + 1 s).

        A wave replaces as many nodes as the budget (or the surge) allows; the extra second is
        the controller's requeue slack after ``minReadySeconds``. This is the part of the
        convergence bound that grows with the cluster: a 30-node fleet updated one node at a
        time cannot settle within a fixed 30 s.
        """
        desired = self.nodes + sum(1 for s in self.steps if s.kind in ("node_join", "tainted_join"))
        slowest = 0.0
        for spec in self.daemonsets:
            rolling = spec.strategy.get("rollingUpdate") or {}
            width = max(_scaled(rolling.get("maxUnavailable"), desired), _scaled(rolling.get("maxSurge"), desired), 1)
            slack = 1.0 if spec.min_ready_seconds else 0.0
            startup = self.pod_startup if spec.startup_seconds is None else spec.startup_seconds
            wave = startup + spec.grace_seconds + spec.min_ready_seconds + slack
            slowest = max(slowest, -(-desired // width) * wave)
        return round(slowest, 1)

    def fault_counts(self) -> dict[str, int]:
        """Injected faults by kind."""
        counts: dict[str, int] = {}
        for step in self.steps:
            if step.kind in FAULT_KINDS:
                counts[step.kind] = counts.get(step.kind, 0) + 1
        return counts

    def describe(self) -> str:
        """A multi-line summary for failure messages and the soak log."""
        lines = [f"scenario {self.id} seed={self.seed} theme={self.theme} nodes={self.nodes} "
                 f"startup={self.pod_startup}s replicas={self.replicas} window={self.window}s"]
        lines += [f"  ds {d.name}: {d.strategy} selector={d.node_selector} infra={d.tolerate_infra} "
                  f"minReady={d.min_ready_seconds} grace={d.grace_seconds}"
                  + (f" gating startup={d.startup_seconds}s" if d.gating else "") for d in self.daemonsets]
        lines += [f"  {s}" for s in self.steps]
        return "\n".join(lines)


def _scaled(value: Any, total: int) -> int:
    """An int-or-percent budget against ``total``, rounded up (0 when absent)."""
    if isinstance(value, str) and value.endswith("%"):
        return -(-int(value[:-1]) * total // 100)
    return int(value or 0)


IN_PLACE = "inPlace"
"""Strategy key (not sent as such): the DaemonSet carries ``dsctl.io/rolling-update-type: InPlaceIfPossible``."""


def _strategy(rng: random.Random, *, allow_on_delete: bool) -> dict[str, Any]:
    pick = rng.choice(["int", "percent", "surge", "surge-mu", *(["ondelete"] if allow_on_delete else [])])
    if pick == "int":
        return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": rng.randint(2, 4), "maxSurge": 0}}
    if pick == "percent":
        share = rng.choice(["20%", "25%", "34%"])
        # 25 % also patches image changes in place: no extra draw, so every seed keeps its scenario.
        return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": share, "maxSurge": 0},
                **({IN_PLACE: True} if share == "25%" else {})}
    if pick == "surge":
        return {"type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 0, "maxSurge": rng.choice([2, 3, "20%", "30%"])}}
    if pick == "surge-mu":
        # Both non-zero is refused by kube-apiserver (and now by the simulator); the draw is kept so
        # that every other seed still generates the scenario it always did.
        return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": rng.choice([1, 2])}}
    return {"type": "OnDelete"}


class _Builder:
    """Draws steps while keeping them compatible (one disturbance per node, a node deleted once)."""

    def __init__(self, rng: random.Random, scenario_nodes: int, daemonsets: list[DaemonSetSpec], window: float,
                 blue: list[str]) -> None:
        self.rng = rng
        self.window = window
        self.daemonsets = daemonsets
        self.blue = blue
        self.free_nodes = [f"node-{i}" for i in range(scenario_nodes)]
        rng.shuffle(self.free_nodes)
        self.joined = 0
        self.tainted_joins = 0
        self.steps: list[Step] = []
        self.recreated: set[str] = set()
        self.lease_free_at = 0.0
        """Lease faults run one after the other: a latency window would hide a 500 storm under it."""

    def lease_step(self, kind: str, duration: float, **params: Any) -> None:
        start = round(max(self.at(0.0, 0.3), self.lease_free_at), 2)
        self.lease_free_at = start + duration + 0.5
        self.steps.append(Step(start, kind, params={**params, "duration": duration}))

    def at(self, low: float = 0.1, high: float = 0.85) -> float:
        return round(self.rng.uniform(low, high) * self.window, 2)

    def node(self, *, prefer_blue: bool = False) -> str | None:
        pool = [n for n in self.free_nodes if n in self.blue] if prefer_blue else []
        pool = pool or self.free_nodes
        if not pool:
            return None
        chosen = self.rng.choice(pool)
        self.free_nodes.remove(chosen)
        return chosen

    def rules(self, targets: tuple[tuple[str, str], ...], code: int, low: float, high: float) -> list[dict[str, Any]]:
        count = self.rng.randint(1, 3)
        picked = self.rng.sample(targets, count)
        return [{"verb": v, "resource": r, "code": code, "rate": round(self.rng.uniform(low, high), 2)}
                for v, r in picked]

    def add(self, kind: str) -> None:
        rng, steps = self.rng, self.steps
        duration = round(rng.uniform(0.8, 2.0), 2)
        ds = rng.choice(self.daemonsets).name
        if kind == "drop_watches":
            for _ in range(rng.randint(1, 3)):
                steps.append(Step(self.at(), kind))
        elif kind == "watch_drop_interval":
            steps.append(Step(self.at(0.0, 0.5), kind, params={"seconds": rng.choice([0.5, 1.0]),
                                                                 "duration": duration}))
        elif kind == "errors_500":
            steps.append(Step(self.at(), kind, params={"rules": self.rules(_WRITE_TARGETS, 500, 0.3, 0.8),
                                                         "duration": duration}))
        elif kind == "errors_429":
            rules = [{"verb": "*", "resource": rng.choice(["pods", "daemonsets", "*"]), "code": 429,
                      "rate": round(rng.uniform(0.3, 0.7), 2)}]
            steps.append(Step(self.at(), kind, params={"rules": rules, "duration": duration,
                                                         "retry_after": rng.choice([0, 1])}))
        elif kind == "conflicts_409":
            steps.append(Step(self.at(), kind, params={"rules": self.rules(_CONFLICT_TARGETS, 409, 0.3, 0.7),
                                                         "duration": duration}))
        elif kind == "latency":
            steps.append(Step(self.at(0.0, 0.5), kind, params={
                "latency_ms": rng.choice([20, 50, 120]), "watch_event_latency_ms": rng.choice([0, 50, 200]),
                "duration": duration}))
        elif kind == "compaction":
            steps.append(Step(self.at(), kind))
        elif kind == "forced_relist":
            # Every watch ends with 410 and the next continue requests find their token expired.
            steps.append(Step(self.at(), kind, params={"expired_pages": rng.randint(1, 3)}))
        elif kind in ("kill", "failover"):
            # Early in the window, while the opening rollout is still under way.
            steps.append(Step(self.at(0.02, 0.4), kind, params={"pause": round(rng.uniform(0.0, 1.0), 2)}))
        elif kind == "node_join":
            for _ in range(rng.randint(1, 2)):
                steps.append(Step(self.at(), kind, target=f"node-x{self.joined}",
                                  params={"blue": rng.random() < 0.5}))
                self.joined += 1
        elif kind == "tainted_join":
            # Nodes registering with the readiness taint, as a kubelet with --register-with-taints does.
            for _ in range(rng.randint(1, 3)):
                steps.append(Step(self.at(0.05, 0.7), kind, target=f"node-g{self.tainted_joins}",
                                  params={"blue": rng.random() < 0.5}))
                self.tainted_joins += 1
        elif kind == "node_delete":
            name = self.node()
            if name:
                steps.append(Step(self.at(), kind, target=name))
        elif kind in ("taint_flap", "label_flap", "notready_flap"):
            name = self.node(prefer_blue=kind == "label_flap")
            if name:
                params: dict[str, Any] = {"duration": duration}
                if kind == "taint_flap":
                    params["effect"] = rng.choice(["NoSchedule", "NoExecute"])
                steps.append(Step(self.at(), kind, target=name, params=params))
        elif kind == "kubelet_stop":
            name = self.node()
            if name:
                # Longer than the node-monitor grace, so the node turns Unknown and its pods not Ready.
                steps.append(Step(self.at(0.05, 0.6), kind, target=name,
                                  params={"duration": round(rng.uniform(0.5, 2.5), 2)}))
        elif kind == "node_shutdown":
            name = self.node()
            if name:
                grace = rng.choice([1.0, 2.0])
                steps.append(Step(self.at(0.05, 0.6), kind, target=name, params={
                    "grace": grace, "critical": rng.choice([0.0, 0.5]), "then": rng.choice(["restart", "delete"]),
                    "pause": round(grace + rng.uniform(0.2, 1.5), 2)}))
        elif kind == "departing_taint":
            name = self.node()
            if name:
                steps.append(Step(self.at(), kind, target=name, params={
                    "taint": rng.choice(["autoscaler", "karpenter"]), "duration": duration}))
        elif kind == "evictions":
            # VPA's updater: evictions of the budgeted DaemonSet's pods, each 429 retried later.
            steps.append(Step(self.at(0.05, 0.5), kind, target=self.daemonsets[0].name, params={
                "duration": round(rng.uniform(1.0, 2.5), 2), "interval": rng.choice([0.1, 0.2, 0.3]),
                "pick": rng.randint(0, 1_000_000)}))
        elif kind == "finalizer_delete":
            name = self.node()
            if name:
                steps.append(Step(self.at(), kind, target=name, params={"duration": duration}))
        elif kind == "template_change":
            base = self.at(0.05, 0.5)
            for index in range(rng.randint(2, 3)):
                steps.append(Step(round(base + index * rng.uniform(0.1, 0.5), 2), kind, target=ds))
        elif kind == "rollback":
            steps.append(Step(self.at(0.1, 0.6), kind, target=ds))
        elif kind == "strategy_switch":
            steps.append(Step(self.at(0.1, 0.6), kind, target=ds,
                              params={"strategy": _strategy(rng, allow_on_delete=True),
                                      "back_after": round(rng.uniform(0.3, 1.2), 2)}))
        elif kind == "apiserver_restart":
            # Connections refused for 1-3 s, early enough that the rollout is still under way.
            steps.append(Step(self.at(0.05, 0.5), kind, params={"seconds": round(rng.uniform(1.0, 3.0), 1)}))
        elif kind == "lease_500":
            rules = [{"verb": "*", "resource": "leases", "code": 500, "rate": rng.choice([0.5, 1.0])}]
            self.lease_step(kind, round(rng.uniform(0.8, 2.5), 2), rules=rules)
        elif kind == "lease_429":
            # Retry-After far beyond the lease: a client that waited it out would lose the Lease.
            rules = [{"verb": "*", "resource": "leases", "code": 429, "rate": rng.choice([0.5, 1.0]),
                      "retry_after": rng.choice([30, 60])}]
            self.lease_step(kind, round(rng.uniform(0.8, 2.5), 2), rules=rules)
        elif kind == "lease_latency":
            # Every Lease request answered later than the lease lasts: the leader must step down.
            latency = round(rng.uniform(1.1, 1.5) * LEASE_DURATION * 1000)
            self.lease_step(kind, round(rng.uniform(1.0, 1.4) * LEASE_DURATION, 2), latency_ms=latency)
        elif kind == "recreate":
            if ds not in self.recreated:
                self.recreated.add(ds)
                steps.append(Step(self.at(0.1, 0.6), kind, target=ds, params={"pause": rng.choice([0.0, 0.3])}))
        elif kind == "token_rotation":
            for _ in range(rng.randint(1, 2)):
                steps.append(Step(self.at(), kind, params={"grace": rng.choice([0.0, 0.0, 0.5])}))
        else:  # pragma: no cover - guarded by FAULT_KINDS
            raise ValueError(kind)


def generate(seed: int, *, theme: str, index: int = 0, long: bool = False) -> Scenario:
    """The scenario for ``seed`` and ``theme``: small and quick for CI, larger with ``long``."""
    if theme not in THEMES:
        raise ValueError(f"unknown theme {theme!r}")
    rng = random.Random(f"{theme}:{seed}")
    nodes = rng.randint(10, 30) if long else rng.randint(10, 14)
    window = round(rng.uniform(3.0, 8.0), 1) if long else 2.5
    count = rng.randint(1, 3) if long else rng.choice([1, 2, 2])
    names = ["ds-a", "ds-b", "ds-c"][:count]
    blue = [f"node-{i}" for i in range(nodes) if i % 2 == 0]
    infra = [f"node-{nodes - 1}"]
    specs = []
    for position, name in enumerate(names):
        selector = {"pool": "blue"} if position == 1 or (long and rng.random() < 0.2) else None
        specs.append(DaemonSetSpec(
            name=name, strategy=_strategy(rng, allow_on_delete=long and position > 0),
            node_selector=selector, tolerate_infra=rng.random() < 0.5,
            min_ready_seconds=rng.choice([0, 0, 1]) if long else 0, grace_seconds=rng.choice([0, 0, 1]),
            max_disruptions=1 if position == 0 else None,
        ))
    if theme in _GATE_THEMES:
        # The first DaemonSet gates, with slower pods; no draw, so the rest of the scenario is as drawn.
        specs[0] = replace(specs[0], gating=True, startup_seconds=GATING_STARTUP)
    builder = _Builder(rng, nodes, specs, window, blue)
    extra_kinds = _LONG_EXTRA_KINDS if long else _EXTRA_KINDS
    if theme == "mixed":
        kinds = rng.sample(extra_kinds, rng.randint(3, 5))
    else:
        extras = rng.randint(2, 4) if long else rng.randint(0, 1)
        pool = [k for k in extra_kinds if k not in _THEME_KINDS[theme]]
        kinds = [*_THEME_KINDS[theme], *rng.sample(pool, extras)]
    for kind in kinds:
        builder.add(kind)
    if any(s.kind in TWO_REPLICA_KINDS for s in builder.steps):
        # A replica killed by a separate ``kill`` step would blur which replica leads; an
        # apiserver outage longer than the chaos lease rightly ends the leader (exit 1).
        builder.steps = [s for s in builder.steps if s.kind not in ("kill", "apiserver_restart")]
    rollouts = [Step(0.0, "rollout", target=d.name) for d in specs]
    steps = tuple(sorted([*rollouts, *builder.steps], key=lambda s: s.at))
    replicas = 2 if any(s.kind in TWO_REPLICA_KINDS for s in steps) else 1
    relist = any(s.kind == "forced_relist" for s in steps)
    return Scenario(
        id=f"s{index:03d}-{theme}", seed=seed, theme=theme, nodes=nodes,
        pod_startup=rng.choice([0.1, 0.2, 0.3]), replicas=replicas, window=window,
        daemonsets=tuple(specs), steps=steps, blue_nodes=tuple(blue), infra_nodes=tuple(infra),
        controller_args=("--list-page-size", str(RELIST_PAGE_SIZE)) if relist else (),
    )


_LEASE_VERBS = ("*", "get", "update", "create")


def hits_leases(rules: list[dict[str, Any]]) -> bool:
    """Whether an error rule can fail the requests of leader election (get, update, create leases)."""
    return any(r.get("resource") in ("*", "leases") and r.get("verb") in _LEASE_VERBS for r in rules)
