"""The Dockerfile and .dockerignore, read as text: pinned base, lean non-root final stage.

These tests pin the properties of the build by parsing the instructions; tests/image builds
the image for real and checks the same properties in it where a builder exists.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field

import pytest

from dsctl import __version__
from tests.manifests.conftest import MANIFESTS, REPO, Obj, find, load_yaml

DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
_PINNED_PYTHON = re.compile(r"^python:3\.\d+\.\d+-slim(-[a-z]+)?(@sha256:[0-9a-f]{64})?$")


@dataclass
class Stage:
    """One build stage: its base image, its name, and its instructions in order."""

    image: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args_of(self, keyword: str) -> list[str]:
        """The argument text of every instruction with this keyword."""
        return [args for key, args in self.instructions if key == keyword]


def instructions(text: str) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) pairs, with comments dropped and continuation lines joined."""
    result: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, args = (pending + line).partition(" ")
        result.append((keyword.upper(), args.strip()))
        pending = ""
    return result


def parse() -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults and the build stages of the repository's Dockerfile."""
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for keyword, args in instructions(DOCKERFILE.read_text(encoding="utf-8")):
        if keyword == "FROM":
            parts = args.split()
            image = re.sub(r"\$\{(\w+)\}", lambda m: global_args[m.group(1)], parts[0])
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else None
            stages.append(Stage(image=image, name=name))
        elif not stages:
            assert keyword == "ARG", f"{keyword} before the first FROM"
            key, _, default = args.partition("=")
            global_args[key] = default
        else:
            stages[-1].instructions.append((keyword, args))
    return global_args, stages


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    """The parsed build stages."""
    return parse()[1]


@pytest.fixture(scope="module")
def final(stages: list[Stage]) -> Stage:
    """The stage that becomes the image."""
    return stages[-1]


def test_every_stage_uses_a_pinned_slim_python(stages: list[Stage]) -> None:
    """All stages start from python:3.X.Y-slim-<debian>, a patch release, optionally by digest."""
    assert len(stages) >= 2, "multi-stage build expected"
    for stage in stages:
        assert _PINNED_PYTHON.match(stage.image), stage.image


def test_builder_refuses_source_builds_of_dependencies(stages: list[Stage]) -> None:
    """The builder installs dependencies from wheels only, so no compiler is ever needed."""
    runs = " ".join(arg for stage in stages[:-1] for arg in stage.args_of("RUN"))
    assert "--only-binary=:all:" in runs
    assert "/opt/venv" in runs


def test_final_stage_user_is_numeric_and_matches_the_deployment(final: Stage) -> None:
    """The image runs as a numeric non-root UID, the same one the Deployment asks for."""
    [user] = final.args_of("USER")
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0 and (not gid or gid.isdigit())
    deployment = load_yaml(MANIFESTS / "controller" / "deployment.yaml")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["securityContext"]["runAsUser"] == int(uid)
    keywords = [key for key, _ in final.instructions]
    assert "RUN" not in keywords[keywords.index("USER"):], "nothing runs as root after USER"


@pytest.mark.parametrize(
    "tool",
    [
        pytest.param("apt-get", id="apt-get"),
        pytest.param("apk", id="apk"),
        pytest.param("gcc", id="gcc"),
        pytest.param("g++", id="gxx"),
        pytest.param("build-essential", id="build-essential"),
        pytest.param("make", id="make"),
        pytest.param("curl", id="curl"),
        pytest.param("wget", id="wget"),
    ],
)
def test_final_stage_installs_no_build_tools(final: Stage, tool: str) -> None:
    """No RUN in the final stage calls a package manager, compiler or downloader."""
    for run in final.args_of("RUN"):
        assert tool not in shlex.split(run), run


def test_final_stage_only_removes_python_packages(final: Stage) -> None:
    """pip appears in the final stage only to uninstall itself; nothing is installed or built there."""
    for run in final.args_of("RUN"):
        words = shlex.split(run)
        assert "install" not in words, run
        if "pip" in words:
            assert words[words.index("pip") + 1] == "uninstall", run


def test_final_stage_copies_only_the_venv(final: Stage) -> None:
    """The only thing the final stage takes from the builder is the virtualenv."""
    assert final.args_of("COPY") == ["--from=builder /opt/venv /opt/venv"]
    assert "ADD" not in [key for key, _ in final.instructions]


def test_entrypoint_runs_the_controller(final: Stage) -> None:
    """ENTRYPOINT is the exec form of `dsctl run`; no CMD adds arguments behind it."""
    [entrypoint] = final.args_of("ENTRYPOINT")
    assert json.loads(entrypoint) == ["dsctl", "run"]
    assert final.args_of("CMD") == []


def test_exposes_the_metrics_and_health_ports(final: Stage) -> None:
    """The image documents ports 8080 (metrics) and 8081 (health)."""
    assert " ".join(final.args_of("EXPOSE")).split() == ["8080", "8081"]


@pytest.mark.parametrize(
    "label",
    [
        pytest.param("org.opencontainers.image.title", id="title"),
        pytest.param("org.opencontainers.image.version", id="version"),
        pytest.param("org.opencontainers.image.licenses", id="licenses"),
        pytest.param("org.opencontainers.image.description", id="description"),
    ],
)
def test_oci_labels(final: Stage, label: str) -> None:
    """The image carries the standard OCI annotations."""
    assert any(f"{label}=" in args for args in final.args_of("LABEL"))


def test_versions_agree(final: Stage, base_objects: list[Obj]) -> None:
    """The image's version label default and the manifests' image tag are the package version."""
    [version_arg] = [a for a in final.args_of("ARG") if a.startswith("VERSION=")]
    assert version_arg == f"VERSION={__version__}"
    deployment = find(base_objects, "Deployment", "dsctl")
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.rsplit(":", 1)[1] == __version__


def test_measured_size_is_stated() -> None:
    """The performance page states the image's measured size, unpacked and compressed, and the
    Dockerfile points there."""
    assert "docs/performance.md" in DOCKERFILE.read_text(encoding="utf-8")
    performance = (DOCKERFILE.parent / "docs" / "performance.md").read_text(encoding="utf-8")
    assert re.search(r"[\d.]+ MB unpacked, [\d.]+ MB compressed", performance)


def dockerignore_patterns() -> list[str]:
    """The .dockerignore patterns, comments and blank lines dropped."""
    lines = DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_dockerignore_admits_exactly_what_the_build_copies(stages: list[Stage]) -> None:
    """The context is an allow-list: everything is ignored except the sources COPY needs."""
    patterns = dockerignore_patterns()
    assert patterns[0] == "*"
    allowed = {p[1:].rstrip("/") for p in patterns if p.startswith("!")}
    sources = set()
    for stage in stages:
        for args in stage.args_of("COPY"):
            if "--from=" not in args:
                sources.update(args.split()[:-1])
    assert sources == allowed
    for secret_or_bulky in (".git", ".venv", "tests", "benchmarks"):
        assert secret_or_bulky not in allowed


def test_dockerignore_keeps_the_simulator_out() -> None:
    """The context admits the controller and dsctl-api, never the simulator's distribution."""
    patterns = dockerignore_patterns()
    assert patterns[0] == "*" and {"!dsctl/", "!dsctl-api/"} <= set(patterns)
    assert not [p for p in patterns if p.startswith("!") and "sim" in p]


def test_builder_installs_the_controller_and_its_shared_helpers(stages: list[Stage]) -> None:
    """The builder installs the dsctl and dsctl-api wheels without dependencies, then dsctl's others."""
    runs = " ".join(arg for stage in stages[:-1] for arg in stage.args_of("RUN"))
    assert "--no-deps /wheels/dsctl-*.whl /wheels/dsctl_api-*.whl" in runs
    assert "not r.startswith('dsctl-api')" in runs
