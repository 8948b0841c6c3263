"""Token rotation as a chaos fault: the simulator's accepted token and the clients' token file.

Every scenario runs the simulator with ``--token`` and gives the controller replicas and the
test's own client a kubeconfig whose user has a ``tokenFile``, as a pod's projected
service-account token is. A rotation does what the kubelet and the API server do when a token
is re-issued, but revokes the old token at the end instead of letting it expire an hour later:

1. the server accepts the new token (the old one still works);
2. the file is replaced atomically (a rename, as the kubelet swaps its projected volume);
3. the old token stops working after ``grace`` seconds (0: at once).

A client that is still sending the old token then gets a 401 and must re-read the file and
retry; nothing else tells it that the token changed.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from pathlib import Path

import yaml

from tests.support.simproc import SimProcess

__all__ = ["TokenRotator"]

_LONG_GRACE = 3600.0


class TokenRotator:
    """Owns the token file and the kubeconfig pointing at it; :meth:`rotate` changes both sides."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="dsctl-chaos-token-"))
        self.token_file = self.dir / "token"
        self.rotations = 0
        self.token = self._new_token()
        self.token_file.write_text(self.token)

    def _new_token(self) -> str:
        return f"chaos-{self.rotations}-{secrets.token_hex(8)}"

    def server_args(self) -> list[str]:
        """Simulator arguments that make it accept only the current token."""
        return ["--token", self.token]

    def kubeconfig(self, sim_kubeconfig: str) -> str:
        """A copy of the simulator's kubeconfig whose user reads the token file."""
        config = yaml.safe_load(Path(sim_kubeconfig).read_text())
        for entry in config.get("users") or []:
            entry["user"] = {"tokenFile": str(self.token_file)}
        path = self.dir / "kubeconfig"
        path.write_text(yaml.safe_dump(config))
        return str(path)

    async def rotate(self, sim: SimProcess, *, grace: float) -> None:
        """Re-issue the token (steps 1-3 of the module docstring)."""
        self.rotations += 1
        new = self._new_token()
        await sim.rotate_token(new, grace_seconds=_LONG_GRACE)
        staged = self.dir / "token.new"
        staged.write_text(new)
        os.replace(staged, self.token_file)
        self.token = new
        await sim.rotate_token(new, grace_seconds=grace)

    def close(self) -> None:
        """Remove the token file and the kubeconfig."""
        shutil.rmtree(self.dir, ignore_errors=True)
