"""`pip install` for users: the wheel `python -m build` makes installs into a clean venv and runs.

The repository builds three distributions: dsctl, the dsctl-api helpers it depends on, and
dsctl-sim. They are built into one wheelhouse, which pip is pointed at with ``--find-links``
(dsctl-api is not on a public index); other dependencies come from the package index this
machine's pip is configured with. Nothing from the repository
is on the venv's path: PYTHONPATH is dropped and the commands run outside the repository.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from dsctl import __version__
from tests.manifests.conftest import REPO

pytestmark = pytest.mark.slow


def _run(argv: list[str], *, cwd: Path, timeout: float) -> str:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert result.returncode == 0, f"{' '.join(argv[:4])} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return result.stdout


DISTRIBUTIONS = {"dsctl": REPO, "dsctl_api": REPO / "dsctl-api", "dsctl_sim": REPO / "dsctl-sim"}


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdists and wheels `python -m build` makes of the repository's three distributions."""
    out = tmp_path_factory.mktemp("dist")
    for source in DISTRIBUTIONS.values():
        _run([sys.executable, "-m", "build", "--outdir", str(out), str(source)], cwd=out, timeout=300)
    return out


def test_build_makes_an_sdist_and_a_pure_wheel_of_each(dist: Path) -> None:
    """python -m build gives <name>-<version>.tar.gz and a py3-none-any wheel per distribution."""
    names = sorted(path.name for path in dist.iterdir())
    assert names == sorted(f"{name}-{__version__}{suffix}" for name in DISTRIBUTIONS
                           for suffix in ("-py3-none-any.whl", ".tar.gz"))


def test_controller_wheel_carries_no_simulator(dist: Path) -> None:
    """The dsctl wheel holds no dsctl_sim package and requires neither dsctl-sim nor jsonpatch."""
    [wheel] = dist.glob(f"dsctl-{__version__}-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        metadata = Parser().parsestr(archive.read(f"dsctl-{__version__}.dist-info/METADATA").decode())
        files = archive.namelist()
    requires = [r for r in metadata.get_all("Requires-Dist") or [] if "extra ==" not in r]
    assert not [r for r in requires if r.startswith(("dsctl-sim", "jsonpatch"))], requires
    assert not [f for f in files if f.startswith("dsctl_sim/") or f.startswith("dsctl/sim/")]


def test_wheel_metadata_is_complete(dist: Path) -> None:
    """License expression and file, classifiers, Python floor, summary, readme; no placeholder URLs."""
    [wheel] = dist.glob(f"dsctl-{__version__}-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        metadata = Parser().parsestr(archive.read(f"dsctl-{__version__}.dist-info/METADATA").decode())
        files = archive.namelist()
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["License-File"] == "LICENSE"
    assert f"dsctl-{__version__}.dist-info/licenses/LICENSE" in files
    classifiers = metadata.get_all("Classifier") or []
    assert "Programming Language :: Python :: 3.11" in classifiers and "Typing :: Typed" in classifiers
    assert metadata["Requires-Python"] == ">=3.11"
    assert metadata["Summary"] and metadata["Description-Content-Type"] == "text/markdown"
    for url in metadata.get_all("Project-URL") or []:
        assert "example" not in url and "invalid" not in url, url
    assert "dsctl/py.typed" in files


def test_wheel_installs_into_a_clean_venv_and_runs(dist: Path, tmp_path: Path) -> None:
    """pip install dist/dsctl-*.whl in a fresh venv, then dsctl --version prints the version."""
    [wheel] = dist.glob(f"dsctl-{__version__}-*.whl")
    venv = tmp_path / "venv"
    # The test's own pip installs into the venv (--python): the same resolver a user's pip runs,
    # without a minute of ensurepip and bytecode compilation (kubernetes_asyncio is 48 MB).
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path, timeout=120)
    _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet", "--no-compile",
          "--find-links", str(dist), str(wheel)], cwd=tmp_path, timeout=300)
    assert _run([str(venv / "bin" / "dsctl"), "--version"], cwd=tmp_path, timeout=60).strip() == f"dsctl {__version__}"
    where = _run([str(venv / "bin" / "python"), "-c", "import dsctl; print(dsctl.__file__)"], cwd=tmp_path, timeout=60)
    assert Path(where.strip()).is_relative_to(venv), where
