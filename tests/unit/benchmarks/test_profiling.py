"""Profiles summarized: py-spy's collapsed stacks ranked by own and inclusive share, idle left out."""

from __future__ import annotations

from benchmarks.harness.profiling import summarize_folded, top_costs

FOLDED = "\n".join([
    "<module> (a/__main__.py:1);BaseEventLoop._run_once (asyncio/base_events.py:10);"
    "Handle._run (asyncio/events.py:80);_create (x/dsctl_sim/handlers.py:5);admit (x/dsctl_sim/semantics.py:9) 30",
    "<module> (a/__main__.py:1);BaseEventLoop._run_once (asyncio/base_events.py:10);"
    "Handle._run (asyncio/events.py:80);_create (x/dsctl_sim/handlers.py:5) 10",
    "<module> (a/__main__.py:1);BaseEventLoop._run_once (asyncio/base_events.py:10);"
    "Handle._run (asyncio/events.py:80);Kubelet.sync (x/dsctl_sim/controllers/kubelet.py:3) 60",
    "<module> (a/__main__.py:1);BaseEventLoop._run_once (asyncio/base_events.py:10);"
    "EpollSelector.select (selectors.py:4) 400",
    "torn frame without a count",
])


def test_idle_samples_are_counted_apart() -> None:
    """Samples waiting in epoll are idle: counted, but not part of any share."""
    summary = summarize_folded(FOLDED)
    assert (summary["samples"], summary["idle_samples"]) == (100, 400)
    assert summary["top_self_percent"][0] == ["Kubelet.sync (dsctl_sim/controllers/kubelet.py)", 60.0]


def test_top_costs_skip_the_event_loop_frames() -> None:
    """The top costs start below the event loop, which includes everything."""
    assert top_costs(summarize_folded(FOLDED), count=3) == [
        ["Kubelet.sync (dsctl_sim/controllers/kubelet.py)", 60.0],
        ["_create (dsctl_sim/handlers.py)", 40.0],
        ["admit (dsctl_sim/semantics.py)", 30.0],
    ]
