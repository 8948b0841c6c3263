"""Which proxy, if any, a request to the API server goes through: Go's environment rules.

client-go takes its proxy from ``net/http.ProxyFromEnvironment``, which is
``golang.org/x/net/http/httpproxy``; this module makes the same decision as a pure function of
the URL and the environment, so that a controller configured for Go tools behaves the same.
``urllib.request.proxy_bypass`` does not: it ignores CIDR entries (``NO_PROXY=10.0.0.0/8``),
which sends in-cluster traffic to a corporate proxy.

The rules, as Go applies them:

- ``HTTPS_PROXY`` for ``https`` URLs, ``HTTP_PROXY`` for ``http`` ones; the upper-case name wins
  over the lower-case one when both are set and non-empty. A value without a scheme
  (``proxy:3128``) means ``http://``. With ``REQUEST_METHOD`` set (a CGI process),
  ``HTTP_PROXY`` is ignored, since a client can set it through the ``Proxy`` request header.
- ``localhost`` and loopback addresses never use a proxy.
- ``NO_PROXY`` is a comma-separated list, matched case-insensitively: ``*`` (nothing is
  proxied); an IP address or a CIDR prefix, v4 or v6 (``10.0.0.0/8``, ``fd00::/8``); a domain,
  which matches itself and its subdomains (``example.com``); a domain with a leading ``.`` or
  ``*.``, which matches subdomains only. An IP or domain entry may carry a port
  (``10.1.2.3:6443``, ``[fd00::1]:6443``, ``example.com:443``), which then must match the
  request's port (443 for ``https`` and 80 for ``http`` when the URL has none). Malformed
  entries are skipped, as Go skips them.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["ProxyDecision", "decide_proxy"]

_IP = ipaddress.IPv4Address | ipaddress.IPv6Address
_DEFAULT_PORTS = {"http": "80", "https": "443", "socks5": "1080"}
_PROXY_SCHEMES = frozenset({"http", "https", "socks5", "socks5h"})


@dataclass(frozen=True)
class ProxyDecision:
    """The outcome for one URL: ``proxy`` is the proxy URL, or None for a direct connection.

    ``reason`` says why, for logs (``no proxy configured``, ``NO_PROXY entry 10.0.0.0/8``...).
    """

    proxy: str | None
    reason: str

    @property
    def direct(self) -> bool:
        """True when the request connects to the server itself."""
        return self.proxy is None


def _env(environ: Mapping[str, str], *names: str) -> str:
    for name in names:
        value = environ.get(name, "")
        if value:
            return value
    return ""


def _parse_proxy(value: str) -> str | None:
    """The proxy URL with a scheme (``http://`` assumed when absent), or None when empty."""
    value = value.strip()
    if not value:
        return None
    scheme = urllib.parse.urlsplit(value).scheme.lower() if "://" in value else ""
    return value if scheme in _PROXY_SCHEMES else "http://" + value


def _ip(text: str) -> _IP | None:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped  # Go compares ::ffff:a.b.c.d and a.b.c.d as equal
    return address


def _split_host_port(entry: str) -> tuple[str, str] | None:
    """Go's ``net.SplitHostPort`` for ``host:port`` and ``[v6]:port``; None when there is no port."""
    if entry.startswith("["):
        end = entry.find("]")
        if end < 0 or not entry[end + 1:].startswith(":"):
            return None
        return entry[1:end], entry[end + 2:]
    host, sep, port = entry.rpartition(":")
    if not sep or ":" in host:
        return None  # no port, or a bare IPv6 address
    return host, port


def _matches(entry: str, host: str, port: str, ip: _IP | None) -> bool:
    """Whether one lower-cased, stripped, non-empty ``NO_PROXY`` entry exempts ``host:port``."""
    if "/" in entry:
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return False
        return ip is not None and ip.version == network.version and ip in network
    split = _split_host_port(entry)
    entry_host, entry_port = split if split is not None else (entry, "")
    if split is not None and not entry_host:
        return False  # ":443": no host part, malformed
    entry_ip = _ip(entry_host)
    if entry_ip is not None:
        return ip is not None and entry_ip == ip and entry_port in ("", port)
    if not entry_host:
        return False
    if entry_host.startswith("*."):
        entry_host = entry_host[1:]
    exact = not entry_host.startswith(".")
    suffix = "." + entry_host if exact else entry_host
    if host.endswith(suffix) or (exact and host == entry_host):
        return entry_port in ("", port)
    return False


def decide_proxy(url: str, *, environ: Mapping[str, str]) -> ProxyDecision:
    """The proxy for a request to ``url`` under ``environ`` (see the module docstring).

    Pure: reads only its arguments, resolves no names and opens no connection.
    """
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "https":
        proxy = _parse_proxy(_env(environ, "HTTPS_PROXY", "https_proxy"))
    elif scheme == "http":
        proxy = _parse_proxy(_env(environ, "HTTP_PROXY", "http_proxy"))
        if proxy is not None and environ.get("REQUEST_METHOD"):
            return ProxyDecision(None, "HTTP_PROXY ignored in a CGI environment (REQUEST_METHOD set)")
    else:
        return ProxyDecision(None, f"no proxy for scheme {scheme!r}")
    if proxy is None:
        return ProxyDecision(None, "no proxy configured")
    host = (parts.hostname or "").strip().lower()
    if not host:
        return ProxyDecision(proxy, "no host in the URL")
    try:
        port = str(parts.port) if parts.port is not None else _DEFAULT_PORTS.get(scheme, "")
    except ValueError:
        port = ""
    ip = _ip(host)
    if host == "localhost" or (ip is not None and ip.is_loopback):
        return ProxyDecision(None, "loopback host")
    for raw in _env(environ, "NO_PROXY", "no_proxy").split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return ProxyDecision(None, "NO_PROXY is *")
        if _matches(entry, host, port, ip):
            return ProxyDecision(None, f"NO_PROXY entry {entry}")
    return ProxyDecision(proxy, "proxy from the environment")
