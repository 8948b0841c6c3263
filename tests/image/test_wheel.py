"""`pip install` for users: the wheel `python -m build` makes installs into a clean venv and runs.

The venv is made from the interpreter running the tests, with its own pip; dependencies come
from the package index this machine's pip is configured with. Nothing from the repository
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


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and wheel `python -m build` makes from the repository."""
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)], cwd=out, timeout=300)
    return out


def test_build_makes_an_sdist_and_a_pure_wheel(dist: Path) -> None:
    """python -m build gives dsctl-<version>.tar.gz and a py3-none-any wheel."""
    names = sorted(path.name for path in dist.iterdir())
    assert names == [f"dsctl-{__version__}-py3-none-any.whl", f"dsctl-{__version__}.tar.gz"]


def test_wheel_metadata_is_complete(dist: Path) -> None:
    """License expression and file, classifiers, Python floor, summary, readme; no placeholder URLs."""
    [wheel] = dist.glob("*.whl")
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
    [wheel] = dist.glob("*.whl")
    venv = tmp_path / "venv"
    # The test's own pip installs into the venv (--python): the same resolver a user's pip runs,
    # without a minute of ensurepip and bytecode compilation (kubernetes_asyncio is 48 MB).
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path, timeout=120)
    _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet", "--no-compile",
          str(wheel)], cwd=tmp_path, timeout=300)
    assert _run([str(venv / "bin" / "dsctl"), "--version"], cwd=tmp_path, timeout=60).strip() == f"dsctl {__version__}"
    where = _run([str(venv / "bin" / "python"), "-c", "import dsctl; print(dsctl.__file__)"], cwd=tmp_path, timeout=60)
    assert Path(where.strip()).is_relative_to(venv), where
