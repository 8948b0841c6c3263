"""The controller image's size: unpacked on disk, and compressed as a registry would store it.

- ``unpacked_bytes``: apparent size of the image's root filesystem (``du -sb`` of a mounted
  working container), and of the same for its base, so the difference is what dsctl adds;
- ``compressed_bytes``: the image pushed to an OCI layout with gzip layers, summing the layer
  and config blobs: what a pull downloads;
- ``venv_bytes``: ``/opt/venv`` alone, unpacked.

Usage: ``python -m benchmarks image-size --tag localhost/dsctl:0.1.0 [--base <base image>]``
(buildah; build the image first with ``make image``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.harness.results import environment, log, write_result
from tools.image_build import Builder, find_builder


def _out(argv: list[str], *, timeout: float = 600) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=True).stdout


def _du(path: Path) -> int:
    return int(_out(["du", "-sb", str(path)]).split()[0])


def unpacked(builder: Builder, image: str) -> dict[str, int]:
    """Apparent size of the image's root filesystem, and of its /opt/venv."""
    container = _out(builder.command("from", "--pull=false", image)).strip()
    try:
        root = Path(_out(builder.command("mount", container)).strip())
        venv = root / "opt" / "venv"
        return {"unpacked_bytes": _du(root), "venv_bytes": _du(venv) if venv.exists() else 0}
    finally:
        subprocess.run(builder.command("umount", container), capture_output=True, timeout=60, check=False)
        subprocess.run(builder.command("rm", container), capture_output=True, timeout=120, check=False)


def compressed(builder: Builder, image: str) -> dict[str, Any]:
    """Bytes a pull downloads: the gzip layers plus the config, from an OCI layout."""
    with tempfile.TemporaryDirectory(prefix="dsctl-oci-") as scratch:
        layout = Path(scratch) / "oci"
        _out(builder.command("push", "--quiet", "--format=oci", "--compression-format=gzip", image, f"oci:{layout}"))
        index = json.loads((layout / "index.json").read_text())
        digest = index["manifests"][0]["digest"].split(":", 1)[1]
        manifest = json.loads((layout / "blobs" / "sha256" / digest).read_text())
        layers = [layer["size"] for layer in manifest["layers"]]
        return {"compressed_bytes": sum(layers) + manifest["config"]["size"], "layers": len(layers),
                "layer_bytes": layers}


def main(argv: list[str] | None = None) -> None:
    """Measure the image (and its base) and write benchmarks/results/image_size.json."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks image-size", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tag", required=True)
    parser.add_argument("--base", default="", help="the base image, measured the same way for the difference")
    args = parser.parse_args(argv)
    builder = find_builder()
    if builder is None or builder.kind != "buildah":
        raise SystemExit("image_size: needs buildah")
    result: dict[str, Any] = {"image": args.tag, **unpacked(builder, args.tag), **compressed(builder, args.tag)}
    log("image", **{k: v for k, v in result.items() if k != "layer_bytes"})
    if args.base:
        base = {"image": args.base, **unpacked(builder, args.base), **compressed(builder, args.base)}
        log("base", **{k: v for k, v in base.items() if k != "layer_bytes"})
        result["base"] = base
    result["environment"] = environment()
    write_result("image_size", result)


if __name__ == "__main__":
    main()
