"""``docs/design/architecture.md`` names only files and functions that exist.

Every ``dsctl/...py`` path on the page must be a file, and every dotted name in backticks
(``Class.method`` or ``module.function``) must resolve in the code: its head is a class or a
module of the ``dsctl`` package, and the rest are attributes. A dotted name whose head is
neither must be a known API field path (``spec.x``, ``status.y``), so a misspelt class or
module fails rather than being taken for a field.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path
from types import ModuleType

import pytest

import dsctl

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "design" / "architecture.md"
PATH = re.compile(r"\b(?:dsctl|tests|docs)/[\w/.-]+\.(?:py|md)\b")
TICKED = re.compile(r"`([^`\s]+)`")
DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
FIELD_HEADS = {"spec", "status", "metadata"}
"""Heads of API field paths, which the page may quote in backticks."""


def _modules() -> list[ModuleType]:
    found = [dsctl]
    for info in pkgutil.walk_packages(dsctl.__path__, "dsctl."):
        if info.name.endswith("__main__"):
            continue
        found.append(importlib.import_module(info.name))
    return found


MODULES = _modules()


def _heads() -> dict[str, list[object]]:
    """Short module names and class names of the package, to what they may mean."""
    heads: dict[str, list[object]] = {}
    for module in MODULES:
        heads.setdefault(module.__name__.rpartition(".")[2], []).append(module)
        for name, value in vars(module).items():
            if inspect.isclass(value) and getattr(value, "__module__", "").startswith("dsctl"):
                heads.setdefault(name, []).append(value)
    return heads


HEADS = _heads()


def _resolves(dotted: str) -> bool:
    head, *rest = dotted.split(".")
    for start in HEADS.get(head, []):
        target: object = start
        for part in rest:
            if not hasattr(target, part):
                try:  # a submodule not imported as an attribute
                    target = importlib.import_module(f"{getattr(target, '__name__', '')}.{part}")
                    continue
                except ImportError:
                    break
            target = getattr(target, part)
        else:
            return True
    return False


def _page() -> str:
    return PAGE.read_text(encoding="utf-8")


def test_the_page_names_files_and_code() -> None:
    """The page exists and names at least the hops' files and functions (the tests below check each)."""
    text = _page()
    assert len(set(PATH.findall(text))) >= 20
    assert len({t for t in TICKED.findall(text) if DOTTED.match(t)}) >= 30


@pytest.mark.parametrize("path", sorted(set(PATH.findall(_page()))))
def test_every_path_exists(path: str) -> None:
    """Each file the page names is in the repository."""
    assert (REPO / path).is_file(), path


@pytest.mark.parametrize("name", sorted({t for t in TICKED.findall(_page()) if DOTTED.match(t)}))
def test_every_dotted_name_resolves(name: str) -> None:
    """Each ``Class.method`` or ``module.function`` is in the code; anything else is an API field path."""
    head = name.partition(".")[0]
    if head in FIELD_HEADS:
        return
    assert head in HEADS, f"{name}: {head} is no module or class of dsctl"
    assert _resolves(name), f"{name} does not exist"
