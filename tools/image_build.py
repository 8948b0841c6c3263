"""Build the controller image with whatever builder this machine has (``make image``).

Owns three decisions, each a pure function with its effects kept in ``main``:

- **Which builder.** ``docker build`` when a Docker *engine* answers (the ``docker`` client
  alone is not enough: ``docker info`` must reach a daemon); otherwise buildah, which builds
  without a daemon (``--isolation chroot --storage-driver vfs``).
- **Which base.** The Dockerfile's ``PYTHON_IMAGE`` when it is present locally or can be
  pulled; otherwise a base bootstrapped from the Debian archive with mmdebstrap, imported
  into the builder's storage and passed in through the same ``PYTHON_IMAGE`` argument.
- **Which package index.** The build machine's own pip configuration (``pip config list``,
  environment included) becomes a pip.conf handed to the build as the secret ``pipconf``.
  Local paths it names (``file://`` indexes, ``find-links`` directories, the CA bundle) are
  mounted read-only into the build with buildah; docker build cannot mount host paths, so
  there they are left out with a warning.

Nothing here names an index or a registry host: they come from the machine's configuration.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TAG = "dsctl:0.1.0"
# buildah runs rootful or rootless without a daemon; vfs needs no kernel overlay support and
# chroot isolation no user namespaces, so the build works inside an unprivileged container.
BUILDAH_STORAGE = ("--storage-driver", "vfs")
DEBIAN_SUITE = "bookworm"
DEBIAN_PACKAGES = ("python3", "python3-venv", "python3-pip", "python-is-python3")
DEBIAN_BASE_TAG = f"localhost/dsctl-python-base:{DEBIAN_SUITE}"
_BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# pip settings that decide where packages come from, in the pip.conf spelling.
_INDEX_KEYS = ("index-url", "extra-index-url", "find-links", "trusted-host", "no-index", "cert")
# Later wins: pip applies the [global] section, then the command's own section, then PIP_*.
_SECTION_RANK = {"global": 0, "wheel": 1, "install": 1, ":env:": 2}
_URL_KEYS = ("index-url", "extra-index-url", "find-links")

BuilderKind = Literal["docker", "buildah"]


@dataclass(frozen=True)
class Builder:
    """A container image builder found on this machine."""

    kind: BuilderKind
    path: str

    def command(self, *args: str) -> list[str]:
        """A command line of this builder; buildah's always names its storage driver."""
        if self.kind == "buildah":
            return [self.path, *BUILDAH_STORAGE, *args]
        return [self.path, *args]


def choose_builder(*, docker: str | None, docker_engine: bool, buildah: str | None) -> Builder | None:
    """docker when its engine answers, else buildah when installed, else nothing."""
    if docker is not None and docker_engine:
        return Builder("docker", docker)
    if buildah is not None:
        return Builder("buildah", buildah)
    return None


def no_builder_reason(*, docker: str | None, buildah: str | None) -> str:
    """Why no image can be built here, in one line."""
    docker_part = "no Docker engine answers `docker info`" if docker else "no docker client"
    return (f"{docker_part} and buildah is not installed (apt-get install buildah mmdebstrap, or "
            "`make test DSCTL_IMAGE_TEST=1` to have .ci/ensure-buildah install them)")


@dataclass(frozen=True)
class PipIndex:
    """The build machine's package-index settings, ready for a pip.conf."""

    settings: dict[str, str] = field(default_factory=dict)

    def pip_conf(self) -> str:
        """The settings as a pip.conf ``[global]`` section (empty when pip uses its defaults)."""
        if not self.settings:
            return ""
        lines = ["[global]", *(f"{key} = {value}" for key, value in self.settings.items())]
        return "\n".join(lines) + "\n"

    def local_paths(self) -> list[str]:
        """Host paths the settings point at, which the build must see at the same place.

        A local index is mounted from its parent directory: a PEP 503 ``simple/`` tree links
        to its files by relative paths, conventionally beside it (``../files/``).
        """
        paths: list[str] = []
        for key, value in self.settings.items():
            if key == "cert":
                paths.append(value)
            elif key in _URL_KEYS:
                for word in value.split():
                    path = local_path(word)
                    if path is None:
                        continue
                    if key != "find-links":
                        path = os.path.dirname(path.rstrip("/")) or "/"
                    paths.append(path)
        return list(dict.fromkeys(paths))

    def without_local_paths(self) -> PipIndex:
        """The same settings with every host-path entry dropped (for builders that cannot mount)."""
        kept: dict[str, str] = {}
        for key, value in self.settings.items():
            if key == "cert":
                continue
            if key in _URL_KEYS:
                remote = " ".join(word for word in value.split() if local_path(word) is None)
                if remote:
                    kept[key] = remote
                continue
            kept[key] = value
        return PipIndex(kept)


def local_path(location: str) -> str | None:
    """The host path an index or find-links location names, or None for a network URL."""
    if location.startswith("file://"):
        return location.removeprefix("file://") or None
    if "://" in location:
        return None
    return location


def pip_index(listing: str) -> PipIndex:
    """Parse ``pip config list`` output into the effective index settings.

    Each line reads ``section.key='value'``; the ``:env:`` section holds ``PIP_*`` variables.
    """
    chosen: dict[str, tuple[int, str]] = {}
    for raw in listing.splitlines():
        name, sep, quoted = raw.strip().partition("=")
        section, dot, key = name.rpartition(".")
        if not sep or not dot or key not in _INDEX_KEYS or section not in _SECTION_RANK:
            continue
        value = quoted.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        rank = _SECTION_RANK[section]
        if key not in chosen or rank >= chosen[key][0]:
            chosen[key] = (rank, " ".join(value.split()))
    ordered = {key: chosen[key][1] for key in _INDEX_KEYS if key in chosen}
    return PipIndex(ordered)


def build_command(
    builder: Builder,
    *,
    tag: str,
    context: Path,
    pip_conf: Path,
    mounts: Sequence[str],
    build_args: dict[str, str],
) -> list[str]:
    """The one command that builds the image."""
    common = [f"--secret=id=pipconf,src={pip_conf}"]
    common += [f"--build-arg={key}={value}" for key, value in build_args.items()]
    common += ["--tag", tag]
    if builder.kind == "docker":
        return builder.command("build", *common, str(context))
    volumes = [f"--volume={path}:{path}:ro" for path in mounts]
    return builder.command("build", "--isolation=chroot", *volumes, *common, str(context))


def context_files(repo: Path) -> list[Path]:
    """The files whose content decides what the image does: the recipe, the metadata, the code.

    README.md is in the build context too, but only as the package's long description; it
    is left out here so that a README edit does not cost the image test a cold build.
    """
    files = [repo / "Dockerfile", repo / ".dockerignore", repo / "pyproject.toml"]
    for path in sorted(p for top in ("dsctl", "dsctl-api") for p in (repo / top).rglob("*")):
        relative = path.relative_to(repo).parts
        if not path.is_file() or "__pycache__" in relative:
            continue
        if path.suffix in (".pyc", ".kubeconfig"):
            continue
        files.append(path)
    return files


def inputs_digest(repo: Path, *, base: str) -> str:
    """A short hash of everything that decides the image: its context files and its base."""
    digest = hashlib.sha256(base.encode())
    for path in context_files(repo):
        content = path.read_bytes()
        if path.name in ("Dockerfile", ".dockerignore"):
            # Comments change nothing in the image (a `#` inside an instruction is kept).
            content = b"\n".join(line for line in content.splitlines() if not line.lstrip().startswith(b"#"))
        digest.update(str(path.relative_to(repo)).encode() + b"\0")
        digest.update(content + b"\0")
    return digest.hexdigest()[:16]


def _run(argv: Sequence[str], *, timeout: float, quiet: bool = False) -> subprocess.CompletedProcess[str]:
    output = subprocess.PIPE if quiet else None
    return subprocess.run(list(argv), stdout=output, stderr=output, text=True, timeout=timeout, check=False)


def docker_engine_reachable(docker: str | None) -> bool:
    """True when the docker client reaches an engine (the binary alone proves nothing)."""
    if docker is None:
        return False
    try:
        return _run([docker, "info", "--format", "{{.ServerVersion}}"], timeout=20, quiet=True).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def find_builder() -> Builder | None:
    """The builder this machine offers, by ``choose_builder``'s rule."""
    docker = shutil.which("docker")
    return choose_builder(docker=docker, docker_engine=docker_engine_reachable(docker), buildah=shutil.which("buildah"))


def image_id(builder: Builder, image: str) -> str | None:
    """The local image's ID, or None when it is not in the builder's storage."""
    argv = builder.command("inspect", "--type", "image", "--format", "{{.FromImageID}}", image)
    if builder.kind == "docker":
        argv = builder.command("image", "inspect", "--format", "{{.Id}}", image)
    result = _run(argv, timeout=60, quiet=True)
    return result.stdout.strip() or None if result.returncode == 0 else None


def pull(builder: Builder, image: str) -> bool:
    """Try to pull an image; False (quickly, where no registry resolves) when that fails."""
    try:
        return _run(builder.command("pull", "--quiet", image), timeout=600, quiet=True).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def debian_base(builder: Builder) -> str:
    """Bootstrap a Python base from the Debian archive once, and return its tag."""
    if image_id(builder, DEBIAN_BASE_TAG):
        return DEBIAN_BASE_TAG
    mmdebstrap = shutil.which("mmdebstrap")
    if mmdebstrap is None:
        raise SystemExit("image: no base image can be pulled and mmdebstrap is not installed "
                         "(apt-get install mmdebstrap)")
    with tempfile.TemporaryDirectory(prefix="dsctl-base-") as scratch:
        tarball = Path(scratch) / "rootfs.tar"
        print(f"image: bootstrapping {DEBIAN_SUITE} with {', '.join(DEBIAN_PACKAGES)}", file=sys.stderr)
        bootstrap = [mmdebstrap, "--variant=minbase", "--include=" + ",".join(DEBIAN_PACKAGES),
                     DEBIAN_SUITE, str(tarball)]
        _check(_run(bootstrap, timeout=1200, quiet=True), bootstrap)
        if builder.kind == "docker":
            steps = [builder.command("import", "--change", f"ENV PATH={_BASE_PATH}", "--change", "ENV LANG=C.UTF-8",
                                     "--change", 'CMD ["python3"]', str(tarball), DEBIAN_BASE_TAG)]
            for step in steps:
                _check(_run(step, timeout=600, quiet=True), step)
            return DEBIAN_BASE_TAG
        new = builder.command("from", "scratch")
        created = _run(new, timeout=60, quiet=True)
        _check(created, new)
        container = created.stdout.strip()
        try:
            for step in (
                builder.command("add", container, str(tarball), "/"),
                builder.command("config", f"--env=PATH={_BASE_PATH}", "--env=LANG=C.UTF-8", "--cmd=python3", container),
                builder.command("commit", "--quiet", container, DEBIAN_BASE_TAG),
            ):
                _check(_run(step, timeout=900, quiet=True), step)
        finally:
            _run(builder.command("rm", container), timeout=120, quiet=True)
    return DEBIAN_BASE_TAG


def _check(result: subprocess.CompletedProcess[str], argv: Sequence[str]) -> None:
    if result.returncode != 0:
        detail = (result.stderr or result.stdout or "").strip().splitlines()[-5:]
        raise SystemExit(f"image: {' '.join(argv[:4])} ... failed ({result.returncode}): " + " | ".join(detail))


def dockerfile_default_base(dockerfile: Path) -> str:
    """The ``PYTHON_IMAGE`` default the Dockerfile declares."""
    for line in dockerfile.read_text(encoding="utf-8").splitlines():
        if line.startswith("ARG PYTHON_IMAGE="):
            return line.partition("=")[2].strip()
    raise SystemExit(f"image: {dockerfile.name} declares no ARG PYTHON_IMAGE default")


def choose_base(builder: Builder, *, base: str, default: str) -> str:
    """``upstream`` and ``debian`` force a base; ``auto`` takes the upstream one when it can be had."""
    if base == "debian":
        return debian_base(builder)
    if base == "upstream" or image_id(builder, default) or pull(builder, default):
        return default
    print(f"image: {default} cannot be pulled here; using a base bootstrapped from the Debian archive", file=sys.stderr)
    return debian_base(builder)


def host_pip_index(python: str) -> PipIndex:
    """The effective index settings of this machine's pip (empty when pip is not there)."""
    try:
        result = _run([python, "-m", "pip", "config", "list"], timeout=60, quiet=True)
    except OSError:
        return PipIndex()
    return pip_index(result.stdout) if result.returncode == 0 else PipIndex()


@dataclass(frozen=True)
class Built:
    """An image in the builder's storage, and the base it was built on."""

    builder: Builder
    tag: str
    base: str


def build(
    *, tag: str, base: str = "auto", base_image: str | None = None, python: str = sys.executable,
    repo: Path = REPO, builder: Builder | None = None,
) -> Built:
    """Build the image on ``base_image``, or on the base ``choose_base`` picks by ``base``."""
    builder = builder or find_builder()
    if builder is None:
        raise SystemExit("image: " + no_builder_reason(docker=shutil.which("docker"), buildah=shutil.which("buildah")))
    if base_image is None:
        base_image = choose_base(builder, base=base, default=dockerfile_default_base(repo / "Dockerfile"))
    index = host_pip_index(python)
    mounts = [path for path in index.local_paths() if os.path.exists(path)]
    if builder.kind == "docker" and index.local_paths():
        print("image: docker build cannot mount host paths; leaving out of the build's pip index: "
              + ", ".join(index.local_paths()), file=sys.stderr)
        index, mounts = index.without_local_paths(), []
    with tempfile.TemporaryDirectory(prefix="dsctl-image-") as scratch:
        pip_conf = Path(scratch) / "pip.conf"
        pip_conf.write_text(index.pip_conf(), encoding="utf-8")
        argv = build_command(builder, tag=tag, context=repo, pip_conf=pip_conf, mounts=mounts,
                             build_args={"PYTHON_IMAGE": base_image})
        print("image: " + " ".join(argv), file=sys.stderr)
        env = {**os.environ, "DOCKER_BUILDKIT": "1"}
        result = subprocess.run(argv, env=env, timeout=3600, check=False)
    if result.returncode != 0:
        raise SystemExit(f"image: the build failed ({result.returncode})")
    return Built(builder, tag, base_image)


def _parse(argv: Iterable[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="image_build", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tag", default=DEFAULT_TAG, help="image name and tag")
    parser.add_argument("--base", choices=("auto", "upstream", "debian"), default="auto",
                        help="upstream: the Dockerfile's PYTHON_IMAGE; debian: bootstrap one with mmdebstrap; "
                        "auto: upstream when it can be pulled")
    parser.add_argument("--python", default=sys.executable, help="whose pip configuration the build uses")
    return parser.parse_args(list(argv))


def main(argv: Iterable[str] | None = None) -> int:
    """``make image``: build, then print the builder and the tag."""
    args = _parse(sys.argv[1:] if argv is None else argv)
    built = build(tag=args.tag, base=args.base, python=args.python)
    print(f"image: built {built.tag} with {built.builder.kind} on {built.base}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
