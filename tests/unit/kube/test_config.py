"""Configuration discovery order and one-line errors for bad configurations."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from dsctl.kube.config import check_config, load_config
from dsctl.kube.errors import ConfigError
from tests.unit.kube.fakeserver import write_kubeconfig


async def test_explicit_path_wins_over_environment(tmp_path: Path) -> None:
    """An explicit kubeconfig is used even when KUBECONFIG and in-cluster env are set."""
    explicit = write_kubeconfig(tmp_path / "a", "http://127.0.0.1:1111")
    other = write_kubeconfig(tmp_path / "b", "http://127.0.0.1:2222")
    env = {"KUBECONFIG": str(other), "KUBERNETES_SERVICE_HOST": "10.0.0.1",
           "KUBERNETES_SERVICE_PORT": "443"}
    loaded = await load_config(kubeconfig=str(explicit), environ=env, home=tmp_path)
    assert loaded.host == "http://127.0.0.1:1111"
    assert loaded.source == "kubeconfig"
    assert loaded.context == "test"


async def test_kubeconfig_env_merges_first_wins(tmp_path: Path) -> None:
    """KUBECONFIG lists files; missing ones are skipped; the first current-context wins."""
    first = write_kubeconfig(tmp_path / "a", "http://127.0.0.1:1111", context="one")
    second = write_kubeconfig(tmp_path / "b", "http://127.0.0.1:2222", context="two")
    env = {"KUBECONFIG": f"{tmp_path / 'missing'}:{first}:{second}"}
    loaded = await load_config(environ=env, home=tmp_path)
    assert loaded.context == "one"
    assert loaded.files == (str(first), str(second))
    assert loaded.host == "http://127.0.0.1:1111"
    loaded = await load_config(environ=env, home=tmp_path, context="two")
    assert loaded.context == "two"


async def test_in_cluster_before_home(tmp_path: Path) -> None:
    """With service-account env and files, in-cluster config beats ~/.kube/config."""
    (tmp_path / ".kube").mkdir()
    write_kubeconfig(tmp_path / ".kube" / "config", "http://127.0.0.1:1111")
    token = tmp_path / "token"
    token.write_text("sa-token")
    ca = tmp_path / "ca.crt"
    ca.write_text("not-really-a-cert")
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "6443"}
    loaded = await load_config(environ=env, home=tmp_path, token_path=str(token),
                               ca_path=str(ca))
    assert loaded.source == "in-cluster"
    assert loaded.host == "https://10.0.0.1:6443"
    assert loaded.configuration.api_key["BearerToken"] == "Bearer sa-token"


async def test_home_config_is_last_resort(tmp_path: Path) -> None:
    """Without flags, KUBECONFIG or in-cluster env, ~/.kube/config is used."""
    (tmp_path / ".kube").mkdir()
    write_kubeconfig(tmp_path / ".kube" / "config", "http://127.0.0.1:3333")
    loaded = await load_config(environ={}, home=tmp_path)
    assert loaded.host == "http://127.0.0.1:3333"


async def test_token_from_kubeconfig_is_configured(tmp_path: Path) -> None:
    """A user token becomes the bearer token of the configuration."""
    path = write_kubeconfig(tmp_path / "k", "http://127.0.0.1:1", token="abc")
    loaded = await load_config(kubeconfig=str(path), environ={})
    assert loaded.configuration.api_key["BearerToken"] == "Bearer abc"


async def test_exec_plugin_token(tmp_path: Path) -> None:
    """An exec credential plugin's token is used (kubernetes_asyncio runs the plugin)."""
    plugin = tmp_path / "plugin.sh"
    plugin.write_text(
        "#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
        "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"from-exec\"}}'\n"
    )
    plugin.chmod(0o755)
    config = {
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin)}}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "k"
    path.write_text(yaml.safe_dump(config))
    loaded = await load_config(kubeconfig=str(path), environ={})
    assert loaded.configuration.api_key["BearerToken"] == "Bearer from-exec"


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


BAD_KUBECONFIGS = [
    pytest.param(lambda p: str(p / "nope"), None, "file not found", id="missing-file"),
    pytest.param(lambda p: _write(p / "k", "clusters: [\n  - name: x\n bad"), None,
                 "malformed YAML at line", id="malformed-yaml"),
    pytest.param(lambda p: _write(p / "k", "- just\n- a list\n"), None,
                 "not a kubeconfig", id="not-a-mapping"),
    pytest.param(lambda p: str(write_kubeconfig(p / "k", "http://x", extra_contexts=("b",))),
                 "prod", "context 'prod' not found (available: b, test)",
                 id="unknown-context"),
    pytest.param(lambda p: _write(p / "k", "clusters: []\ncontexts: []\n"), None,
                 "no current-context", id="no-current-context"),
    pytest.param(lambda p: _write(p / "k", yaml.safe_dump({
        "contexts": [{"name": "x", "context": {"cluster": "gone"}}],
        "current-context": "x"})), None, "names cluster 'gone'", id="dangling-cluster"),
]


@pytest.mark.parametrize(("setup", "context", "expected"), BAD_KUBECONFIGS)
async def test_bad_kubeconfig_gives_one_line_error(
    tmp_path: Path, setup: object, context: str | None, expected: str
) -> None:
    """Every broken kubeconfig raises ConfigError with one line naming file and problem."""
    path = setup(tmp_path)  # type: ignore[operator]
    with pytest.raises(ConfigError) as info:
        await load_config(kubeconfig=path, context=context, environ={})
    message = str(info.value)
    assert expected in message
    assert "\n" not in message
    assert message.startswith("kubeconfig ")


@pytest.mark.parametrize(("setup", "context", "expected"), BAD_KUBECONFIGS)
async def test_check_config_finds_the_same_mistakes_from_files_alone(
    tmp_path: Path, setup: object, context: str | None, expected: str
) -> None:
    """check_config (run before ports are bound) raises load_config's one line for each broken kubeconfig."""
    path = setup(tmp_path)  # type: ignore[operator]
    with pytest.raises(ConfigError) as checked:
        check_config(kubeconfig=path, context=context, environ={})
    with pytest.raises(ConfigError) as loaded:
        await load_config(kubeconfig=path, context=context, environ={})
    assert str(checked.value) == str(loaded.value)


@pytest.mark.parametrize(
    ("environ", "token", "expected"),
    [
        pytest.param({}, False, "no Kubernetes configuration found", id="nothing"),
        pytest.param({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, False, "cannot read the service-account token",
                     id="in-cluster-without-token"),
        pytest.param({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, True, None, id="in-cluster"),
    ],
)
def test_check_config_without_a_kubeconfig(tmp_path: Path, environ: dict[str, str], token: bool,
                                           expected: str | None) -> None:
    """Without a kubeconfig, in-cluster needs a readable token; nothing at all is the usual error."""
    token_path = tmp_path / "token"
    if token:
        token_path.write_text("t")
    if expected is None:
        check_config(environ=environ, home=tmp_path, token_path=str(token_path))
        return
    with pytest.raises(ConfigError, match=expected):
        check_config(environ=environ, home=tmp_path, token_path=str(token_path))


async def test_no_configuration_anywhere(tmp_path: Path) -> None:
    """With nothing to load, the error lists the places that were tried."""
    with pytest.raises(ConfigError, match="no Kubernetes configuration found"):
        await load_config(environ={}, home=tmp_path)


async def test_kubeconfig_env_with_only_missing_files(tmp_path: Path) -> None:
    """A KUBECONFIG whose files all are missing is an error, not a silent fallback."""
    with pytest.raises(ConfigError, match="none of the listed files exist"):
        await load_config(environ={"KUBECONFIG": str(tmp_path / "x")}, home=tmp_path)


async def test_in_cluster_without_token_file(tmp_path: Path) -> None:
    """In-cluster env without a token file names the missing file."""
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(ConfigError, match=r"in-cluster config: .*token"):
        await load_config(environ=env, home=tmp_path, token_path=str(tmp_path / "t"))


async def test_in_cluster_blank_token_file(tmp_path: Path) -> None:
    """A service-account token file holding only a newline is a one-line error, not 'Bearer '."""
    token = tmp_path / "token"
    token.write_text("\n")
    ca = tmp_path / "ca.crt"
    ca.write_text("not-really-a-cert")
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(ConfigError, match="only whitespace"):
        await load_config(environ=env, home=tmp_path, token_path=str(token), ca_path=str(ca))


async def test_in_cluster_token_trimmed_and_reread_after_401(tmp_path: Path) -> None:
    """The service-account token is sent trimmed, and a rewritten one is read after a 401."""
    token = tmp_path / "token"
    token.write_text("sa-token-1\n")
    ca = tmp_path / "ca.crt"
    ca.write_text("not-really-a-cert")
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "6443"}
    loaded = await load_config(environ=env, home=tmp_path, token_path=str(token), ca_path=str(ca))
    assert loaded.credentials is not None
    assert await loaded.credentials.token() == "sa-token-1"
    token.write_text("sa-token-2\n")
    assert await loaded.credentials.rejected("sa-token-1") == "sa-token-2"


@pytest.mark.parametrize(("user", "kind"), [
    pytest.param({"token": "t"}, "token", id="token"),
    pytest.param({"tokenFile": "tok"}, "tokenFile", id="token-file"),
    pytest.param({"token": "t", "tokenFile": "tok"}, "tokenFile", id="token-file-preferred"),
    pytest.param({"username": "u", "password": "p"}, None, id="basic-auth"),
])
async def test_kubeconfig_credentials_kind(tmp_path: Path, user: dict[str, str], kind: str | None) -> None:
    """Each kubeconfig user gets the credential source client-go would use (tokenFile before token)."""
    (tmp_path / "tok").write_text("from-file")
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "http://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }))
    loaded = await load_config(kubeconfig=path)
    assert (loaded.credentials.kind if loaded.credentials else None) == kind
    if kind == "tokenFile":
        assert loaded.credentials is not None
        assert await loaded.credentials.token() == "from-file"


async def test_relative_exec_command_resolved_against_kubeconfig(tmp_path: Path) -> None:
    """An exec command like ./bin/plugin runs from the kubeconfig's folder, as client-go runs it."""
    (tmp_path / "bin").mkdir()
    plugin = tmp_path / "bin" / "plugin"
    plugin.write_text(
        f"#!{sys.executable}\n"
        "print('{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
        "\"status\":{\"token\":\"relative\"}}')\n"
    )
    plugin.chmod(0o755)
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "http://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": "./bin/plugin"}}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }))
    loaded = await load_config(kubeconfig=path)
    assert loaded.credentials is not None
    assert await loaded.credentials.token() == "relative"
    assert await loaded.credentials.rejected("relative") is None  # the plugin ran again: same token
