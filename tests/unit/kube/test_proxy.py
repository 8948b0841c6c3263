"""The proxy decision, as Go's ``httpproxy`` makes it, tested as a pure function (no traffic)."""

from __future__ import annotations

import pytest

from dsctl.kube.proxy import decide_proxy

PROXY = "http://proxy.corp:3128"


@pytest.mark.parametrize(("url", "environ", "expected"), [
    pytest.param("https://10.1.2.3:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.0.0.0/8"}, None,
                 id="cidr-v4-direct"),
    pytest.param("https://11.1.2.3:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.0.0.0/8"}, PROXY,
                 id="cidr-v4-outside-proxied"),
    pytest.param("https://[fd00::5]:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "fd00::/8"}, None,
                 id="cidr-v6-direct"),
    pytest.param("https://[fe80::5]:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "fd00::/8"}, PROXY,
                 id="cidr-v6-outside-proxied"),
    pytest.param("https://10.1.2.3", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.1.2.3/8"}, None,
                 id="cidr-with-host-bits"),
    pytest.param("https://[::ffff:10.1.2.3]", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.0.0.0/8"}, None,
                 id="v4-mapped-v6-in-v4-cidr"),
    pytest.param("https://10.96.0.1", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.96.0.1"}, None, id="ip"),
    pytest.param("https://10.96.0.2", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.96.0.1"}, PROXY, id="other-ip"),
    pytest.param("https://10.96.0.1", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.96.0.1:443"}, None,
                 id="ip-port-default-https"),
    pytest.param("https://10.96.0.1:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.96.0.1:443"}, PROXY,
                 id="ip-port-mismatch"),
    pytest.param("https://[fd00::1]:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "[fd00::1]:6443"}, None,
                 id="ipv6-port"),
    pytest.param("https://api.example.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": "example.com"}, None,
                 id="domain-matches-subdomain"),
    pytest.param("https://example.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": "example.com"}, None,
                 id="domain-matches-itself"),
    pytest.param("https://badexample.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": "example.com"}, PROXY,
                 id="domain-is-not-a-plain-suffix"),
    pytest.param("https://example.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": ".example.com"}, PROXY,
                 id="leading-dot-subdomains-only"),
    pytest.param("https://a.example.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": ".example.com"}, None,
                 id="leading-dot-subdomain"),
    pytest.param("https://a.example.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": "*.example.com"}, None,
                 id="star-dot-subdomain"),
    pytest.param("https://example.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": "*.example.com"}, PROXY,
                 id="star-dot-not-apex"),
    pytest.param("https://API.Example.COM:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": " Example.com:6443 "}, None,
                 id="case-space-and-port"),
    pytest.param("https://api.example.com:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "example.com:443"}, PROXY,
                 id="domain-port-mismatch"),
    pytest.param("https://anything", {"HTTPS_PROXY": PROXY, "NO_PROXY": "foo,*"}, None, id="star"),
    pytest.param("https://anything", {"HTTPS_PROXY": PROXY, "NO_PROXY": ",, ,:443,[],10.0.0.0/99"}, PROXY,
                 id="malformed-entries-skipped"),
    pytest.param("https://127.0.0.5:6443", {"HTTPS_PROXY": PROXY}, None, id="loopback-v4"),
    pytest.param("https://[::1]:6443", {"HTTPS_PROXY": PROXY}, None, id="loopback-v6"),
    pytest.param("https://localhost:6443", {"HTTPS_PROXY": PROXY}, None, id="localhost"),
    pytest.param("https://10.0.0.1", {}, None, id="no-proxy-configured"),
    pytest.param("https://10.0.0.1", {"HTTP_PROXY": PROXY}, None, id="http-proxy-not-for-https"),
    pytest.param("http://10.0.0.1", {"HTTP_PROXY": PROXY}, PROXY, id="http-proxy-for-http"),
    pytest.param("http://10.0.0.1", {"HTTP_PROXY": PROXY, "REQUEST_METHOD": "GET"}, None, id="cgi-ignores-http-proxy"),
    pytest.param("https://10.0.0.1", {"https_proxy": PROXY}, PROXY, id="lower-case"),
    pytest.param("https://10.0.0.1", {"HTTPS_PROXY": "http://upper:1", "https_proxy": "http://lower:1"},
                 "http://upper:1", id="upper-case-wins"),
    pytest.param("https://10.0.0.1", {"HTTPS_PROXY": "", "https_proxy": "http://lower:1"}, "http://lower:1",
                 id="empty-upper-case-ignored"),
    pytest.param("https://10.0.0.1", {"HTTPS_PROXY": "proxy.corp:3128"}, PROXY, id="scheme-defaults-to-http"),
    pytest.param("https://10.0.0.1", {"HTTPS_PROXY": "socks5://s:1080"}, "socks5://s:1080", id="socks5-kept"),
    pytest.param("https://10.0.0.1", {"HTTPS_PROXY": PROXY, "no_proxy": "10.0.0.0/8"}, None,
                 id="lower-case-no-proxy"),
])
def test_proxy_decision(url: str, environ: dict[str, str], expected: str | None) -> None:
    """The proxy chosen for ``url`` (None: direct) follows Go's HTTPS_PROXY/HTTP_PROXY/NO_PROXY rules."""
    decision = decide_proxy(url, environ=environ)
    assert decision.proxy == expected, decision.reason
    assert decision.direct == (expected is None)
