"""Overlapping fault windows folded into the simulator's single fault configuration.

The simulator has one fault config; a scenario can have a 500 burst, a 409 storm and added
latency open at once, each ending on its own schedule. Each open fault is a named layer;
the config sent is the merge of all layers (error rules concatenated, numbers at their
maximum, per-key maps such as ``resource_latency_ms`` merged key by key at their maximum),
re-sent whenever a layer opens or closes.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.support.simproc import SimProcess

__all__ = ["FaultKnobs"]


class FaultKnobs:
    """Named fault layers over one simulator; ``clear()`` resets everything."""

    def __init__(self, sim: SimProcess) -> None:
        self.sim = sim
        self.layers: dict[str, dict[str, Any]] = {}
        self._lock = asyncio.Lock()

    def merged(self) -> dict[str, Any]:
        """The fault config for the layers open now."""
        config: dict[str, Any] = {"errors": []}
        for knobs in self.layers.values():
            for key, value in knobs.items():
                if key == "errors":
                    config["errors"] = [*config["errors"], *value]
                elif isinstance(value, dict):
                    merged = dict(config.get(key) or {})
                    for name, amount in value.items():
                        merged[name] = max(merged.get(name, 0), amount)
                    config[key] = merged
                else:
                    config[key] = max(config.get(key, 0), value)
        return config

    async def push(self, name: str, **knobs: Any) -> None:
        """Open layer ``name``."""
        async with self._lock:
            self.layers[name] = knobs
            await self.sim.set_faults(**self.merged())

    async def pop(self, name: str) -> None:
        """Close layer ``name``."""
        async with self._lock:
            self.layers.pop(name, None)
            await self.sim.set_faults(**self.merged())

    async def clear(self) -> None:
        """Close every layer: the simulator injects nothing from now on."""
        async with self._lock:
            self.layers.clear()
            await self.sim.set_faults()
