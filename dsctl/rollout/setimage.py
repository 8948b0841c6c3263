"""``dsctl set image DAEMONSET CONTAINER=IMAGE...``: kubectl's ``set image``, in both modes.

``kubectl set image`` builds its patch from compiled-in Go types, so it cannot change a custom
kind (``dds/x`` fails with "no kind is registered"). This command takes kubectl's arguments
(``ds/NAME`` or ``dds/NAME``, or ``TYPE NAME``; ``*`` for every container) and changes the
named containers and init containers:

- apps/v1 gets a strategic merge patch keyed by container name, as kubectl sends it.
- A custom resource accepts no strategic merge patch (kube-apiserver answers 415), and a merge
  patch replaces whole lists, so it gets the containers lists with the images changed, fenced by
  the resourceVersion they were read at; a concurrent write (409) is read again and retried.

Unlike kubectl, a container name that matches nothing fails the whole command before any write.
Nothing to change prints nothing and exits 0, as kubectl does. Also ``kubectl dsctl set image``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from dsctl import __version__
from dsctl.kube import errors
from dsctl.kube.client import KubeClient, PatchType
from dsctl.rollout.cli import _context_namespace
from dsctl.rollout.target import Target, TargetError, parse_target
from dsctl_api.objects import as_map

__all__ = ["ImageError", "image_patch", "parse_images", "register", "split_arguments"]

_LISTS = ("initContainers", "containers")
_CONFLICT_RETRIES = 5


class ImageError(ValueError):
    """Arguments or a template that the update cannot apply to."""


def split_arguments(words: Sequence[str]) -> tuple[str, list[str]]:
    """(the DaemonSet argument, the CONTAINER=IMAGE pairs), accepting kubectl's ``TYPE NAME`` form."""
    if not words:
        raise ImageError("a DaemonSet is required: set image ds/NAME CONTAINER=IMAGE")
    first, rest = words[0], list(words[1:])
    if "/" not in first and rest and "=" not in rest[0]:
        return f"{first}/{rest[0]}", rest[1:]
    return first, rest


def parse_images(pairs: Sequence[str]) -> dict[str, str]:
    """``["agent=img:2"]`` as ``{"agent": "img:2"}``; ``*`` stands for every container."""
    if not pairs:
        raise ImageError("at least one image update is required")
    images: dict[str, str] = {}
    for pair in pairs:
        name, sep, image = pair.partition("=")
        if not sep or not name or not image:
            raise ImageError(f"invalid image update {pair!r}: use CONTAINER=IMAGE")
        images[name] = image
    if "*" in images and len(images) > 1:
        raise ImageError("all containers are already specified by *, but saw more than one "
                         "container_name=container_image pairs")
    return images


@dataclass(frozen=True, slots=True)
class ImagePatch:
    """A patch that sets the images, its type, and the containers it changes."""

    body: Any
    patch_type: PatchType
    changed: tuple[str, ...]


def _containers(pod_spec: Mapping[str, Any], field: str) -> list[dict[str, Any]]:
    return [dict(c) for c in pod_spec.get(field) or [] if isinstance(c, Mapping)]


def image_patch(target: Target, ds: Mapping[str, Any], images: Mapping[str, str]) -> ImagePatch | None:
    """The patch giving ``ds``'s named containers their new images; None when nothing changes."""
    pod_spec = as_map(as_map(as_map(ds.get("spec")).get("template")).get("spec"))
    lists = {field: _containers(pod_spec, field) for field in _LISTS}
    missing = [n for n in images if n != "*" and not any(c.get("name") == n for f in _LISTS for c in lists[f])]
    if missing:
        raise ImageError(f'unable to find container named "{missing[0]}"')
    changed: dict[str, list[dict[str, Any]]] = {}
    for field, containers in lists.items():
        for container in containers:
            image = images.get("*", images.get(str(container.get("name"))))
            if image is not None and container.get("image") != image:
                container["image"] = image
                changed.setdefault(field, []).append(container)
    if not changed:
        return None
    names = tuple(str(c.get("name")) for field in _LISTS for c in changed.get(field, []))
    if not target.crd:
        template = {f: [{"name": c["name"], "image": c["image"]} for c in cs] for f, cs in changed.items()}
        return ImagePatch({"spec": {"template": {"spec": template}}}, "strategic", names)
    version = as_map(ds.get("metadata")).get("resourceVersion")
    body = {"metadata": {"resourceVersion": version},
            "spec": {"template": {"spec": {f: lists[f] for f in changed}}}}
    return ImagePatch(body, "merge", names)


async def set_image(client: KubeClient, target: Target, images: Mapping[str, str], out: TextIO) -> None:
    """Read, patch, and say so as kubectl does; a custom resource's 409 is read again and retried."""
    for attempt in range(_CONFLICT_RETRIES):
        ds = await client.get(target.resource, target.name, namespace=target.namespace)
        patch = image_patch(target, ds, images)
        if patch is None:
            return
        try:
            await client.patch(target.resource, target.name, patch.body, namespace=target.namespace,
                               patch_type=patch.patch_type)
        except errors.Conflict:
            if attempt + 1 == _CONFLICT_RETRIES:
                raise
            continue
        print(f"{target.ref} image updated", file=out)
        return


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add ``set image``."""
    verbs = subparsers.add_parser(
        "set", help="set a DaemonSet's container images (both modes; also 'kubectl dsctl set image')",
        description="kubectl set for dsctl's DaemonSets: apps/v1 (ds/NAME) and dsctl.io/v1 (dds/NAME).",
        allow_abbrev=False,
    ).add_subparsers(dest="set_verb", metavar="VERB", required=True)
    p = verbs.add_parser(
        "image", help="change container images, starting a rollout",
        description="Set the image of the named containers (and init containers) of one DaemonSet; "
        "'*' names every container. Example: dsctl set image dds/agent agent=registry.example/agent:2",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter, allow_abbrev=False,
    )
    p.add_argument("daemonset", metavar="DAEMONSET",
                   help="ds/NAME (apps/v1), dds/NAME (dsctl.io/v1), TYPE NAME, or NAME")
    p.add_argument("images", nargs="*", metavar="CONTAINER=IMAGE", help="one or more; '*' names every container")
    p.add_argument("-n", "--namespace", default="", help="namespace (default: the context's, else 'default')")
    p.add_argument("--kubeconfig", default="", help="path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config)")
    p.add_argument("--context", default="", help="kubeconfig context (default: the current one)")
    p.add_argument("--resource", default="apps/v1", choices=["apps/v1", "dsctl.io/v1"],
                   help="the DaemonSet kind a bare NAME means")
    p.set_defaults(handler=_main)


def _main(args: argparse.Namespace) -> int:
    namespace = args.namespace or _context_namespace(args.kubeconfig, args.context) or "default"
    try:
        daemonset, pairs = split_arguments([args.daemonset, *args.images])
        images = parse_images(pairs)
        target = parse_target(daemonset, namespace=namespace, resource=args.resource)
    except (ImageError, TargetError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return asyncio.run(_run(args, target, images))


async def _run(args: argparse.Namespace, target: Target, images: Mapping[str, str]) -> int:
    try:
        client = await KubeClient.from_config(kubeconfig=args.kubeconfig or None, context=args.context or None,
                                              user_agent=f"dsctl-set/{__version__}")
    except errors.KubeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    async with client:
        try:
            await set_image(client, target, images, sys.stdout)
        except ImageError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except errors.ApiError as exc:
            print(f"Error from server ({exc.reason or exc.status}): {exc.message}", file=sys.stderr)
            return 1
        except errors.KubeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    return 0
