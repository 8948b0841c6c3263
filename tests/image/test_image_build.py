"""make image's decisions, as pure functions: which builder, which pip index, which command."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.image_build import Builder, PipIndex, build_command, choose_builder, inputs_digest, local_path, pip_index


@pytest.mark.parametrize(
    ("docker", "engine", "buildah", "expected"),
    [
        pytest.param("/usr/bin/docker", True, "/usr/bin/buildah", Builder("docker", "/usr/bin/docker"), id="engine"),
        pytest.param("/usr/bin/docker", False, "/usr/bin/buildah", Builder("buildah", "/usr/bin/buildah"),
                     id="client-without-engine"),
        pytest.param(None, False, "/usr/bin/buildah", Builder("buildah", "/usr/bin/buildah"), id="buildah-only"),
        pytest.param("/usr/bin/docker", False, None, None, id="client-only"),
        pytest.param(None, False, None, None, id="nothing"),
    ],
)
def test_choose_builder(docker: str | None, engine: bool, buildah: str | None, expected: Builder | None) -> None:
    """docker only when its engine answers; a docker client alone falls through to buildah."""
    assert choose_builder(docker=docker, docker_engine=engine, buildah=buildah) == expected


_LISTING = """\
:env:.cert='/etc/ssl/certs/ca.crt'
:env:.default-timeout='180'
:env:.find-links='/srv/wheels'
global.constraint='/etc/pip/constraints.txt'
global.extra-index-url='file:///srv/pypi/simple https://mirror.invalid/simple'
global.find-links='/elsewhere'
global.index-url='https://index.invalid/simple'
install.index-url='https://install.invalid/simple'
"""


@pytest.mark.parametrize(
    ("listing", "expected"),
    [
        pytest.param("", {}, id="defaults"),
        pytest.param(_LISTING, {
            "index-url": "https://install.invalid/simple",
            "extra-index-url": "file:///srv/pypi/simple https://mirror.invalid/simple",
            "find-links": "/srv/wheels",
            "cert": "/etc/ssl/certs/ca.crt",
        }, id="env-beats-command-beats-global"),
        pytest.param(":env:.index-url='https://env.invalid/simple'\nglobal.index-url='https://g.invalid/simple'\n",
                     {"index-url": "https://env.invalid/simple"}, id="env-first-in-listing"),
        pytest.param("global.no-index='true'\nglobal.timeout='5'\n", {"no-index": "true"}, id="only-index-keys"),
    ],
)
def test_pip_index_takes_the_effective_index_settings(listing: str, expected: dict[str, str]) -> None:
    """pip config list becomes the settings pip would apply: PIP_* over [install]/[wheel] over [global]."""
    assert pip_index(listing).settings == expected


def test_pip_conf_and_local_paths() -> None:
    """The pip.conf is a [global] section; local indexes mount from their parent, find-links as is."""
    index = pip_index(_LISTING)
    assert index.pip_conf().splitlines()[0] == "[global]"
    assert "cert = /etc/ssl/certs/ca.crt" in index.pip_conf()
    assert index.local_paths() == ["/srv/pypi", "/srv/wheels", "/etc/ssl/certs/ca.crt"]
    assert index.without_local_paths().settings == {
        "index-url": "https://install.invalid/simple",
        "extra-index-url": "https://mirror.invalid/simple",
    }
    assert PipIndex().pip_conf() == ""


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        pytest.param("file:///srv/pypi/simple", "/srv/pypi/simple", id="file-url"),
        pytest.param("/srv/wheels", "/srv/wheels", id="bare-path"),
        pytest.param("https://index.invalid/simple", None, id="https"),
        pytest.param("http://127.0.0.1:3141/root/pypi", None, id="http"),
    ],
)
def test_local_path(location: str, expected: str | None) -> None:
    """file:// URLs and bare paths are host paths; network URLs are not."""
    assert local_path(location) == expected


@pytest.mark.parametrize(
    ("builder", "present", "absent"),
    [
        pytest.param(Builder("buildah", "buildah"),
                     ["--storage-driver", "vfs", "--isolation=chroot", "--volume=/srv:/srv:ro"], [], id="buildah"),
        pytest.param(Builder("docker", "docker"), [],
                     ["--storage-driver", "--isolation=chroot", "--volume=/srv:/srv:ro"],
                     id="docker"),
    ],
)
def test_build_command(builder: Builder, present: list[str], absent: list[str]) -> None:
    """Both builders get the pip.conf secret, the base and the tag; only buildah mounts and uses vfs."""
    argv = build_command(builder, tag="dsctl:t", context=Path("/src"), pip_conf=Path("/tmp/p.conf"),
                         mounts=["/srv"], build_args={"PYTHON_IMAGE": "localhost/base:1"})
    assert argv[0] == builder.path and argv[-1] == "/src"
    for word in ["build", "--secret=id=pipconf,src=/tmp/p.conf", "--build-arg=PYTHON_IMAGE=localhost/base:1",
                 "--tag", "dsctl:t", *present]:
        assert word in argv
    for word in absent:
        assert word not in argv


def test_inputs_digest_follows_the_context_not_the_simulator(tmp_path: Path) -> None:
    """The cache key follows the code, the recipe and the base; not dsctl-sim, README or comments."""
    for name in ("Dockerfile", ".dockerignore", "pyproject.toml", "README.md", "dsctl/cli.py",
                 "dsctl-api/dsctl_api/labels.py", "dsctl-sim/dsctl_sim/x.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    first = inputs_digest(tmp_path, base="sha256:a")
    (tmp_path / "dsctl-sim/dsctl_sim/x.py").write_text("changed")
    (tmp_path / "README.md").write_text("changed")
    (tmp_path / "Dockerfile").write_text("# a comment\nDockerfile")
    assert inputs_digest(tmp_path, base="sha256:a") == first
    (tmp_path / "Dockerfile").write_text("Dockerfile\nUSER 0")
    assert inputs_digest(tmp_path, base="sha256:a") != first
    (tmp_path / "Dockerfile").write_text("Dockerfile")
    assert inputs_digest(tmp_path, base="sha256:b") != first
    (tmp_path / "dsctl/cli.py").write_text("changed")
    assert inputs_digest(tmp_path, base="sha256:a") != first
    (tmp_path / "dsctl/cli.py").write_text("dsctl/cli.py")
    (tmp_path / "dsctl-api/dsctl_api/labels.py").write_text("changed")
    assert inputs_digest(tmp_path, base="sha256:a") != first
