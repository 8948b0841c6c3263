"""Failed-pod backoff keys: what the domain names, and the planners read through ``BackoffView``."""

from __future__ import annotations

from dsctl.daemonset.backoffview import backoff_key

from .objects import make_ds


def test_key_format() -> None:
    """Keys are '<uid>/<observedGeneration>/<node>', so a new generation starts over."""
    assert backoff_key(make_ds(observed_generation=4), "node-0") == "ds-uid-1/4/node-0"
    assert backoff_key({}, "n") == "/0/n"
