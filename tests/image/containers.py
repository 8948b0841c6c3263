"""Run commands in the built controller image, with whichever builder built it.

buildah runs a working container with chroot isolation, which shares the host's network, so a
process in it reaches a server on the host's loopback; docker runs with ``--network host`` for
the same reason. The image is reused across test sessions: its tag is a hash of its inputs,
and a file lock stops parallel test workers from building it twice.
"""

from __future__ import annotations

import fcntl
import json
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tools import image_build
from tools.image_build import Builder

TEST_REPOSITORY = "localhost/dsctl-test"


def _run(argv: Sequence[str], *, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(argv[:6])} failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return result


@dataclass(frozen=True)
class BuiltImage:
    """The image under test: its builder, tag, base and whether this session built it."""

    builder: Builder
    tag: str
    base: str
    built_now: bool

    def config(self) -> dict[str, object]:
        """The image's OCI config (User, Entrypoint, Env, ...)."""
        if self.builder.kind == "docker":
            out = _run(self.builder.command("image", "inspect", "--format", "{{json .Config}}", self.tag)).stdout
        else:
            out = _run(self.builder.command("inspect", "--type", "image", self.tag)).stdout
            out = json.dumps(json.loads(out)["OCIv1"]["config"])
        config: dict[str, object] = json.loads(out)
        return config

    def entrypoint(self) -> list[str]:
        """The image's ENTRYPOINT, as a list."""
        value = self.config().get("Entrypoint")
        assert isinstance(value, list), value
        return [str(word) for word in value]


def ensure_image(builder: Builder, *, lock_dir: Path) -> BuiltImage:
    """The image for the current inputs, built once whichever worker asks first."""
    default = image_build.dockerfile_default_base(image_build.REPO / "Dockerfile")
    with _locked(lock_dir / "dsctl-image-test.lock"):
        base = image_build.choose_base(builder, base="auto", default=default)
        base_id = image_build.image_id(builder, base) or base
        tag = f"{TEST_REPOSITORY}:{image_build.inputs_digest(image_build.REPO, base=base_id)}"
        if image_build.image_id(builder, tag):
            return BuiltImage(builder, tag, base, built_now=False)
        image_build.build(tag=tag, base_image=base, builder=builder)
        _prune_older(builder, keep=tag)
        return BuiltImage(builder, tag, base, built_now=True)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _prune_older(builder: Builder, *, keep: str) -> None:
    """Remove test images of earlier inputs: each is a full copy of the root filesystem under vfs."""
    field = "{{.Name}}:{{.Tag}}" if builder.kind == "buildah" else "{{.Repository}}:{{.Tag}}"
    listing = subprocess.run(builder.command("images", "--format", field),
                             capture_output=True, text=True, timeout=60, check=False).stdout.split()
    for name in listing:
        if name.startswith(TEST_REPOSITORY + ":") and name != keep:
            subprocess.run(builder.command("rmi", name), capture_output=True, timeout=300, check=False)


class Container:
    """A container of the test image in which commands run, as the image's user."""

    def __init__(self, image: BuiltImage) -> None:
        self.image = image
        self.name = ""

    def __enter__(self) -> Container:
        if self.image.builder.kind == "buildah":
            self.name = _run(self.image.builder.command("from", "--pull=false", self.image.tag)).stdout.strip()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.name:
            subprocess.run(self.image.builder.command("rm", self.name), capture_output=True, timeout=120, check=False)

    def command(self, argv: Sequence[str], *, volumes: Sequence[tuple[Path, str]] = ()) -> list[str]:
        """The host command line that runs ``argv`` in this container, with read-only volumes."""
        mounts = [f"--volume={host}:{inside}:ro" for host, inside in volumes]
        builder = self.image.builder
        if builder.kind == "buildah":
            return builder.command("run", "--isolation=chroot", *mounts, self.name, "--", *argv)
        return builder.command("run", "--rm", "--network=host", *mounts, f"--entrypoint={argv[0]}",
                               self.image.tag, *argv[1:])

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> str:
        """Run ``argv`` to completion; its stdout (fails the test on a non-zero exit)."""
        return _run(self.command(argv), timeout=timeout).stdout

    def paths(self) -> list[str]:
        """Every path in the container's root filesystem, absolute."""
        builder = self.image.builder
        if builder.kind == "buildah":
            root = Path(_run(builder.command("mount", self.name)).stdout.strip())
            try:
                return ["/" + str(path.relative_to(root)) for path in root.rglob("*")]
            finally:
                subprocess.run(builder.command("umount", self.name), capture_output=True, timeout=60, check=False)
        with tempfile.TemporaryDirectory() as scratch:
            created = _run(builder.command("create", self.image.tag)).stdout.strip()
            try:
                tar = Path(scratch) / "rootfs.tar"
                _run(builder.command("export", "--output", str(tar), created), timeout=600)
                with tarfile.open(tar) as archive:
                    return ["/" + name.removeprefix("./").lstrip("/") for name in archive.getnames()]
            finally:
                subprocess.run(builder.command("rm", created), capture_output=True, timeout=60, check=False)
