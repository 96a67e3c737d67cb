"""egress export --for proxy --format squid inside a corporate squid.conf, judged by the real Squid (tests/squid_engine.py):
review of issue 21, items 5 (URL paths: anchored, dot-dot segments denied), 6 (ACL names apart from the corporate
file's), 10a (no 'deny all': other clients reach the rules after the fragment) and 11 (a TLS-inspecting proxy's
decrypted requests are allowed where their CONNECT is)."""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from egress.project import open_project
from egress.proxy_export import ProxyExportError, Row, proxy_export
from egress.proxy_export_squid import squid_fragment
from squid_engine import needs_squid, parse_config, running_squid

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = "127.0.0.2"  # the cluster's sources in these runs; any other loopback address is another client of the proxy
OTHER = "127.0.0.3"

# The access part of Debian's default squid.conf (package squid 5.7-2+deb12u6, /etc/squid/squid.conf, comments dropped),
# with the fragment where Debian includes /etc/squid/conf.d/*.conf, and the example rule Debian ships commented out
# ("http_access allow localnet") switched on, the test's loopback LAN added to localnet. The cluster's nodes are inside
# the corporate LAN, as they usually are: only the fragment's own deny keeps them from 'allow localnet'.
DEBIAN = """\
acl localnet src 0.0.0.1-0.255.255.255
acl localnet src 10.0.0.0/8
acl localnet src 100.64.0.0/10
acl localnet src 169.254.0.0/16
acl localnet src 172.16.0.0/12
acl localnet src 192.168.0.0/16
acl localnet src fc00::/7
acl localnet src fe80::/10
acl localnet src 127.0.0.0/8
acl SSL_ports port 443
acl Safe_ports port 80
acl Safe_ports port 21
acl Safe_ports port 443
acl Safe_ports port 70
acl Safe_ports port 210
acl Safe_ports port 1025-65535
acl Safe_ports port 280
acl Safe_ports port 488
acl Safe_ports port 591
acl Safe_ports port 777
{own_acls}
http_access deny !Safe_ports
http_access deny CONNECT !SSL_ports
http_access allow localhost manager
http_access deny manager
{fragment}
http_access allow localnet
http_access allow localhost
http_access deny all
"""


def _export(name: str, *extra: Row, **changes):
    catalog, profile, reqs = open_project(ROOT).requirements(name)
    out = proxy_export(catalog, profile, reqs, f"stacks/Pulumi.{name}.yaml")
    return catalog, replace(out, traverse=(*out.traverse, *extra), **changes)


def _row(destination: str, protocol: str, paths: tuple[str, ...], ports: str = "") -> Row:
    return Row(kind="aks", role="nodes", destination=destination, destination_kind="fqdn", protocol=protocol,
               ports=ports or {"http": "80", "https": "443"}[protocol], route="proxy", entry_ids=("aks-public-mcr",), citations=(), paths=paths)


def _fragment(name: str, *extra: Row, **changes) -> str:
    catalog, out = _export(name, *extra, **changes)
    return squid_fragment(out, catalog, {role: (f"{CLUSTER}/32",) for role in {r.role for r in out.traverse}})


# -- the text ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["openshift", "aks-proxy", "kkp"])
def test_every_acl_is_the_stacks_own_and_defined_once(name):
    text = _fragment(name, _row("downloads.example.net", "http", ("/repo",)))
    prefix = f"egress-{name}-"
    acls = [line.split()[1:3] for line in text.splitlines() if line.startswith("acl ")]
    assert acls and all(acl.startswith(prefix) for acl, _ in acls), [a for a, _ in acls if not a.startswith(prefix)]
    kinds: dict[str, set] = {}
    for acl, kind in acls:
        kinds.setdefault(acl, set()).add(kind)
    assert all(len(k) == 1 for k in kinds.values())
    # the one-line ACLs (sources, ports, methods) are written once; only long name lists continue over several lines
    one_line = [acl for acl, kind in acls if kind in ("src", "port", "method", "proto")]
    assert len(one_line) == len(set(one_line)), one_line
    for line in text.splitlines():
        if line.startswith("http_access"):
            assert all(word.lstrip("!").startswith(prefix) for word in line.split()[2:]), line


@pytest.mark.parametrize("name", ["openshift", "aks-proxy", "kkp"])
def test_the_fragment_never_denies_everyone(name):
    text = _fragment(name)
    access = [line for line in text.splitlines() if line.startswith("http_access")]
    assert not [line for line in access if re.search(r"\ball\b", line)]
    denies = [line for line in access if line.startswith("http_access deny")]
    roles = ["control-plane", "nodes"] if name == "openshift" else ["nodes"]  # roles by name (source_key)
    assert denies == [f"http_access deny egress-{name}-role-{role}" for role in roles]
    assert access[-len(denies):] == denies  # the denies come last: nothing of the fragment follows them


def test_url_paths_are_anchored_at_a_segment():
    text = _fragment("aks-proxy", _row("downloads.example.net", "http", ("/repo", "/pub/tools/", "/v1.2/index.json")))
    assert "urlpath_regex ^/repo(/|\\?|$) ^/pub/tools/ ^/v1\\.2/index\\.json(/|\\?|$)" in text


@pytest.mark.parametrize("path", ["/repo dir", "repo", '/a"b', "/a#b", "/a\tb"])
def test_a_path_squid_conf_cannot_hold_is_refused(path):
    with pytest.raises(ProxyExportError) as info:
        _fragment("aks-proxy", _row("downloads.example.net", "http", (path,)))
    message = str(info.value)
    assert message.startswith("stacks/Pulumi.aks-proxy.yaml: the URL path") and repr(path) in message and "Fix: percent-encode" in message


def test_a_stack_name_too_long_for_squid_is_one_error():
    catalog, out = _export("aks-proxy", stack="x" * 40)
    with pytest.raises(ProxyExportError, match=r"the fragment's ACL 'egress-x{40}-.*' is \d+ characters; Squid refuses ACL names over 62"):
        squid_fragment(out, catalog, {"nodes": (f"{CLUSTER}/32",)})


# -- the real Squid ------------------------------------------------------------------------------------------------------

# ACLs a corporate squid.conf may well define with the names the fragment used before it was namespaced: one of another
# type is FATAL ("already exists with different type"), one of the same type silently merges with the fragment's.
CLASHING = """\
acl role-nodes myportname 3128
acl role-control-plane srcdomain .corp.example.com
acl http-scheme method GET
acl ports-443 port 443 8443 9443
acl paths-1-nodes dstdomain .corp.example.com
acl CONNECT method CONNECT"""


@needs_squid
@pytest.mark.engine
@pytest.mark.parametrize("name", ["openshift", "aks-proxy", "kkp"])
def test_squid_parses_the_fragment_inside_a_corporate_squid_conf(name, tmp_path):
    text = DEBIAN.format(own_acls=CLASHING, fragment=_fragment(name, _row("downloads.example.net", "http", ("/repo",))))
    result = parse_config(text, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]


@needs_squid
@pytest.mark.engine
def test_squid_with_the_fragment_in_a_corporate_squid_conf(tmp_path):
    # the corporate file's own 'ports-80' would have widened the fragment's plain-HTTP allow to 8080 had the names merged
    fragment = _fragment("aks-proxy", _row("downloads.example.net", "http", ("/repo",)))
    text = DEBIAN.format(own_acls="acl ports-80 port 80 8080\nacl role-nodes src 127.0.0.0/8", fragment=fragment)
    hosts = ["mcr.microsoft.com", "security.ubuntu.com", "downloads.example.net", "example.org"]
    with running_squid(text, hosts, tmp_path, http_ports=(80, 8080)) as squid:
        got = {
            "cluster CONNECT mcr.microsoft.com:443": squid.connect("mcr.microsoft.com", 443, CLUSTER),
            "cluster GET security.ubuntu.com": squid.get("security.ubuntu.com", 80, "/ubuntu/", CLUSTER),
            "cluster GET security.ubuntu.com:8080": squid.get("security.ubuntu.com", 8080, "/ubuntu/", CLUSTER),
            "cluster CONNECT example.org:443": squid.connect("example.org", 443, CLUSTER),
            "cluster GET downloads.example.net/repository-secrets": squid.get("downloads.example.net", 80, "/repository-secrets", CLUSTER),
            # every other client of the corporate proxy reaches the rules after the fragment ('allow localnet' here)
            "other CONNECT example.org:443": squid.connect("example.org", 443, OTHER),
            "other GET security.ubuntu.com:8080": squid.get("security.ubuntu.com", 8080, "/", OTHER),
        }
    assert got == {
        "cluster CONNECT mcr.microsoft.com:443": 200, "cluster GET security.ubuntu.com": 200,
        "cluster GET security.ubuntu.com:8080": 403, "cluster CONNECT example.org:443": 403,
        "cluster GET downloads.example.net/repository-secrets": 403,
        "other CONNECT example.org:443": 200, "other GET security.ubuntu.com:8080": 200}


# Squid passes the request path to urlpath_regex as sent (no '%2e' decoding, no dot-segment removal); the origin server
# resolves them (RFC 3986 5.2.4), so each of these would have reached another path than the listed one.
PATHS = {
    "/repo": 200, "/repo/": 200, "/repo/x/y.tgz": 200, "/repo?x=1": 200, "/pub/tools/a..b": 200, "/v1.2/index.json": 200,
    "/repository-secrets": 403, "/repo-x": 403, "/pub/toolsx": 403, "/v1x2/index.json": 403, "/private/": 403,
    "/repo/../admin": 403, "/repo/..": 403, "/repo/%2e%2e/admin": 403, "/repo/%2E%2e/admin": 403, "/repo/.%2e/admin": 403,
    "/repo/..;/admin": 403, "/repo/..%2fadmin": 403, "/repo%2f../admin": 403, "/pub/tools/../../etc/passwd": 403,
    "/repo/..\\admin": 403, "/repo/..%5cadmin": 403, "/repo/x..": 200, "/REPO/x": 403,  # some servers split at '\\'; paths keep case
}


@needs_squid
@pytest.mark.engine
def test_squid_allows_the_listed_paths_only(tmp_path):
    text = _fragment("aks-proxy", _row("downloads.example.net", "http", ("/repo", "/pub/tools/", "/v1.2/index.json")))
    with running_squid(text + "\nhttp_access deny all\n", ["downloads.example.net"], tmp_path) as squid:
        got = {path: squid.get("downloads.example.net", 80, path, CLUSTER) for path in PATHS}
    assert got == PATHS


def _proxied(squid, url: str, source: str) -> int:
    """A proxied request for an https:// URL: what Squid's http_access sees of a request it decrypted (SslBump) in a
    tunnel: method GET, protocol HTTPS, the host and the path. This Squid (Debian's GnuTLS build) cannot bump itself."""
    status, sock = squid._request(f"GET {url} HTTP/1.1\r\nHost: {url.split('/')[2]}\r\nConnection: close\r\n\r\n", source)
    sock.close()
    return status


@needs_squid
@pytest.mark.engine
def test_squid_allows_the_decrypted_requests_of_a_tls_inspecting_proxy(tmp_path):
    release = _row("releases.example.net", "https", ("/org/repo/releases",))
    text = _fragment("aks-proxy", release)  # aks-proxy: proxyInspectsTls
    plain = _fragment("aks-proxy", release, inspects_tls=False)
    assert "#   releases.example.net: /org/repo/releases" not in text and "#   releases.example.net: /org/repo/releases" in plain
    hosts = ["mcr.microsoft.com", "x.data.mcr.microsoft.com", "releases.example.net", "example.org"]
    with running_squid(text + "\nhttp_access deny all\n", hosts, tmp_path) as squid:
        # allowed: Squid forwards it, and the harness's self-signed upstream is not trusted (502): not denied (403)
        allowed = {url: _proxied(squid, url, CLUSTER) for url in ("https://mcr.microsoft.com/v2/", "https://x.data.mcr.microsoft.com/b",
                                                                  "https://releases.example.net/org/repo/releases/v1.tgz")}
        denied = {url: _proxied(squid, url, CLUSTER) for url in ("https://example.org/", "https://releases.example.net/org/other",
                                                                 "https://releases.example.net/org/repo/releases/../../other",
                                                                 "https://mcr.microsoft.com:8443/v2/")}
        tunnel = squid.connect("releases.example.net", 443, CLUSTER)
    assert set(allowed.values()) == {502}, allowed
    assert set(denied.values()) == {403}, denied
    assert tunnel == 200
