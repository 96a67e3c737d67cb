"""egress export --for proxy: what a corporate proxy must allow after noProxy, what goes direct, what it must not inspect;
judged by the real Squid (tests/squid_engine.py) for the openshift stack and the TLS-inspecting aks-proxy stack."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from egress.project import open_project
from egress.proxy_export import Row, proxy_export, to_csv
from egress.no_proxy_match import bypass
from egress.proxy_export_pac import pac_file
from egress.proxy_export_squid import squid_fragment
from squid_engine import needs_squid, parse_config, running_squid

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ("127.0.0.0/8",)  # the harness's requests come from loopback: every role's sources, for the engine runs
UDP = "UDP cannot traverse a forward proxy: HTTP CONNECT carries TCP only"


def export(name: str):
    catalog, profile, reqs = open_project(ROOT).requirements(name)
    return catalog, profile, proxy_export(catalog, profile, reqs, f"stacks/Pulumi.{name}.yaml")


def lines(rows) -> list[str]:
    return [f"{r.role} {r.destination} {r.protocol}/{r.ports}: {r.why}" for r in rows]


# -- the lists, exactly --------------------------------------------------------------------------------------------------

def test_openshift_direct_and_no_inspection_lists():
    *_, out = export("openshift")
    assert lines(out.direct) == [
        "control-plane vcenter.example.com https/443: noProxy entry 'vcenter.example.com': vcenter.example.com is noProxy domain vcenter.example.com",
        f"nodes 1.rhel.pool.ntp.org udp/123: {UDP}",
        f"nodes 2.rhel.pool.ntp.org udp/123: {UDP}",
        f"nodes 3.rhel.pool.ntp.org udp/123: {UDP}",
    ]
    assert out.no_inspection == ()  # Red Hat's firewall guide names no host a TLS-inspecting proxy must leave alone
    assert len(out.traverse) == 25  # 23 requirements of the nodes + the two readiness endpoints of the control plane
    readiness = [r for r in out.traverse if r.entry_ids == ("proxyReadinessEndpoints",)]
    assert [(r.role, r.destination, r.protocol, r.ports, r.proxy) for r in readiness] == [
        ("control-plane", "www.redhat.com", "http", "80", "http://proxy.corp.example.com:3128"),
        ("control-plane", "www.redhat.com", "https", "443", "http://proxy.corp.example.com:3128")]


def test_aks_proxy_direct_and_no_inspection_lists():
    *_, out = export("aks-proxy")
    hcp = ("noProxy entry '*.hcp.westeurope.azmk8s.io': AKS adds the cluster's API server host, <its name>.hcp.westeurope.azmk8s.io, "
           "which *.hcp.westeurope.azmk8s.io stands for")
    assert lines(out.direct) == [f"nodes ntp.ubuntu.com udp/123: {UDP}", f"nodes *.hcp.westeurope.azmk8s.io https/443: {hcp}"]
    assert [(r.destination, r.route, r.entry_ids, r.tls_inspection, r.citations) for r in out.no_inspection] == [
        ("*.hcp.westeurope.azmk8s.io", "direct", ("aks-public-hcp",),
         "exempt: the API server tunnel (konnectivity): its clients trust only the cluster CA (AKS supports no custom CA for API server "
         "communication) and konnectivity needs its ALPN extension intact (the outbound rules page, this row)",
         ("https://github.com/MicrosoftDocs/azure-aks-docs/blob/f9be3faa3436b5bd5fb2cda4d33b5771538031f7/articles/aks/outbound-rules-control-egress.md"
          " § Azure Global required FQDN / application rules",))]
    assert out.inspects_tls is True
    assert sorted(r.destination for r in out.traverse) == [
        "*.data.mcr.microsoft.com", "acs-mirror.azureedge.net", "azure.archive.ubuntu.com", "changelogs.ubuntu.com", "login.microsoftonline.com",
        "management.azure.com", "mcr-0001.mcr-msedge.net", "mcr.microsoft.com", "md-*.blob.storage.azure.net", "packages.aks.azure.com",
        "packages.microsoft.com", "security.ubuntu.com", "snapshot.ubuntu.com", "umsa*.blob.core.windows.net"]


def test_kkp_paths_and_the_roles_without_the_proxy():
    *_, out = export("kkp")
    github = next(r for r in out.traverse if r.destination == "github.com")
    assert github.paths == ("/containernetworking/plugins/releases/", "/kubernetes-sigs/cri-tools/releases")
    assert "seed" not in {r.role for r in out.traverse} and "bastion" not in {r.role for r in out.traverse}
    assert next(r for r in out.direct if r.role == "seed").why == "role seed does not use the cluster proxy (clusterProxy kkp (nodes))"
    rows = to_csv(out).splitlines()
    assert rows[0] == ("list,route,role,destination,kind,protocol,ports,paths,paths_enforceable,tls_inspection,why,proxy,entry_ids,citation")
    # HTTPS paths without TLS inspection: listed, not enforceable
    assert any(row.startswith("traverse,proxy,nodes,github.com,fqdn,https,443,/containernetworking/plugins/releases/ "
                              "/kubernetes-sigs/cri-tools/releases,no,allowed,,http://proxy.corp.example.com:3128,") for row in rows)
    assert any(row.startswith("direct,direct,seed,github.com,") for row in rows) is False  # the seed does not need github.com in kkp
    assert any(row.startswith("direct,direct,bastion,github.com,fqdn,https,443,/kubermatic/kubeone/releases,no,") for row in rows)


def test_cli_json_and_csv(run_cli):
    code, out, err = run_cli("export", "--for", "proxy", "--stack", "aks-proxy", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["proxies"][0]["kind"] == "aks" and data["proxies"][0]["httpsProxy"] == "http://proxy.corp.example.com:8080"
    assert [r["destination"] for r in data["noInspection"]] == ["*.hcp.westeurope.azmk8s.io"]
    assert [r["destination"] for r in data["direct"]] == ["ntp.ubuntu.com", "*.hcp.westeurope.azmk8s.io"]
    code, out, err = run_cli("export", "--for", "proxy", "--stack", "openshift", "--format", "csv")
    assert code == 0, err
    assert out.count("\ndirect,") == 4 and out.count("\nno-inspection,") == 0
    code, out, err = run_cli("export", "--for", "allowlists", "--stack", "ibm-vpc")
    assert code == 0, err
    assert json.loads(out)[0]["allowlist"]


PASSWORD = "Pa55-w0rd-never-shown"
CIPHERTEXT = "AAABADLpCX5nG7XJLLG0g4DQ6hu2p4nFwYq2k1tDBb4="


def test_credentials_never_appear(run_cli, project_copy):
    """Credentials reach the export only as a Pulumi secret (never read offline) or, wrongly, inside a URL: the secret
    changes nothing in any form, and a URL with credentials is refused without echoing them."""
    path = project_copy / "stacks" / "Pulumi.openshift.yaml"
    plain = path.read_text()
    before = {}
    for fmt in ("squid", "pac", "csv", "json"):
        code, before[fmt], err = run_cli("export", "--for", "proxy", "--stack", "openshift", "--format", fmt, "--project", str(project_copy))
        assert code == 0, err
    path.write_text(plain + f"  egress-matrix:proxyCredentials:\n    secure: {CIPHERTEXT}\n")
    for fmt in ("squid", "pac", "csv", "json"):
        code, out, err = run_cli("export", "--for", "proxy", "--stack", "openshift", "--format", fmt, "--project", str(project_copy))
        assert code == 0, err
        assert out == before[fmt] and CIPHERTEXT not in out + err, fmt  # nothing derived from the secret, not even a placeholder
    for setting, value in (("httpProxy", f"http://alice:{PASSWORD}@proxy.corp.example.com:3128"),
                           ("proxyReadinessEndpoints", f"[http://alice:{PASSWORD}@www.redhat.com]"),
                           ("noProxy", f"[.corp.example.com, http://alice:{PASSWORD}@git.corp.example.com]")):
        text = re.sub(rf"^  egress-matrix:{setting}: .*$", f"  egress-matrix:{setting}: {value}", plain, count=1, flags=re.M)
        assert text != plain
        path.write_text(text)
        for fmt in ("squid", "pac", "csv", "json"):
            code, out, err = run_cli("export", "--for", "proxy", "--stack", "openshift", "--format", fmt, "--project", str(project_copy))
            assert code == 1 and out == "" and setting in err, (setting, fmt, err)
            assert PASSWORD not in err and "alice" not in err, (setting, err)


# -- PAC -------------------------------------------------------------------------------------------------------------------

NODE = shutil.which("node")
PAC_HELPERS = """
function dnsDomainIs(host, domain) { return host.length >= domain.length && host.substring(host.length - domain.length) == domain; }
function isInNet(host, pattern, mask) {
  function n(a) { var p = a.split("."); return ((+p[0] << 24) >>> 0) + (+p[1] << 16) + (+p[2] << 8) + (+p[3]); }
  return ((n(host) & n(mask)) >>> 0) == ((n(pattern) & n(mask)) >>> 0);
}
"""


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_pac_routes_as_the_cluster_does(tmp_path):
    *_, out = export("aks-proxy")
    asks = {"https://mcr.microsoft.com/v2/": "PROXY proxy.corp.example.com:8080",
            "https://x.data.mcr.microsoft.com/": "PROXY proxy.corp.example.com:8080",
            "https://abc-123.hcp.westeurope.azmk8s.io/": "DIRECT",  # AKS's own noProxy entry
            "https://git.corp.example.com/": "DIRECT", "http://10.50.1.2/": "DIRECT", "http://localhost:8080/": "DIRECT"}
    unlisted = ["http://10.51.0.1/", "https://corp.example.com/",  # '.corp.example.com': subdomains only
                "https://example.org/"]
    for default, final in (("proxy", "PROXY proxy.corp.example.com:8080"), ("direct", "DIRECT")):
        script = PAC_HELPERS + pac_file(out, default) + "".join(
            f"console.log(JSON.stringify([{json.dumps(u)}, FindProxyForURL({json.dumps(u)}, {json.dumps(u.split('/')[2].split(':')[0])})]));\n"
            for u in [*asks, *unlisted])
        (tmp_path / "pac.js").write_text(script)
        got = dict(json.loads(line) for line in subprocess.run([NODE, str(tmp_path / "pac.js")], capture_output=True, text=True,
                                                                 check=True).stdout.splitlines())
        want = dict(asks, **{u: final for u in unlisted})  # the reviewer's final line decides what nothing names
        assert got == want, default


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_pac_sends_only_loopback_addresses_direct_not_names_that_start_with_127(tmp_path):
    """Go skips the proxy for 'localhost' and loopback addresses only (no_proxy_match.bypass): a host named
    '127.example.com' goes through the proxy like any other name (review 21 item 8)."""
    *_, out = export("aks-proxy")
    asks = {"https://127.example.com/": "PROXY proxy.corp.example.com:8080", "https://127.0.0.1/": "DIRECT",
            "http://127.10.0.1:8080/": "DIRECT", "http://localhost/": "DIRECT"}
    script = PAC_HELPERS + pac_file(out, "proxy") + "".join(
        f"console.log(JSON.stringify([{json.dumps(u)}, FindProxyForURL({json.dumps(u)}, {json.dumps(u.split('/')[2].split(':')[0])})]));\n"
        for u in asks)
    (tmp_path / "pac.js").write_text(script)
    got = dict(json.loads(line) for line in subprocess.run([NODE, str(tmp_path / "pac.js")], capture_output=True, text=True,
                                                             check=True).stdout.splitlines())
    assert got == asks
    assert bypass("", "127.example.com", 443) is None and bypass("", "127.0.0.1", 443) is not None  # Go's own reading agrees


@pytest.mark.parametrize("name", ["aks-proxy", "openshift", "kkp"])
def test_each_path_is_listed_once_per_list_and_the_preview_counts_the_export(name):
    """Review 21 item F: '*.hcp.westeurope.azmk8s.io https/443 twice' on aks-proxy is the same path in two lists (direct,
    and no-inspection: the CSV's first column names the list), not a duplicate; the preview's counts are the export's."""
    from egress_preview.preview import _corporate_proxy

    catalog, profile, out = export(name)
    for rows in (out.traverse, out.direct, out.no_inspection):
        keys = [(r.kind, r.role, r.destination, r.protocol, r.ports) for r in rows]
        assert len(keys) == len(set(keys)), keys
    text = "\n".join(_corporate_proxy(open_project(ROOT).requirements(name)))
    readiness = sum(1 for r in out.traverse if r.entry_ids == ("proxyReadinessEndpoints",))
    assert len(out.proxies) == 1  # one corporate proxy: the preview's lines are about it alone
    assert f"  {len(out.traverse) - readiness - sum(1 for r in out.traverse if r.route == 'unreachable')} requirement path(s)" in text
    assert f"  {sum(1 for r in out.direct if r.kind)} go direct" in text, text


# -- the real Squid --------------------------------------------------------------------------------------------------------

def _fragment(name: str) -> tuple[str, object]:
    catalog, profile, out = export(name)
    return squid_fragment(out, catalog, {role: CLIENT for role in {r.role for r in out.traverse}}), out


@needs_squid
@pytest.mark.engine
@pytest.mark.parametrize("name", ["openshift", "aks-proxy"])
def test_squid_parses_the_fragment(name, tmp_path):
    text, _ = _fragment(name)
    result = parse_config(text, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]


def _sample(destination: str) -> str:
    return "egress-sample." + destination[2:] if destination.startswith("*.") else destination


@needs_squid
@pytest.mark.engine
@pytest.mark.parametrize("name,denied", [
    ("openshift", ["vcenter.example.com", "git.corp.example.com", "example.org"]),
    ("aks-proxy", ["abc-123.hcp.westeurope.azmk8s.io", "git.corp.example.com", "example.org", "microsoft.com"]),
])
def test_squid_allows_exactly_what_traverses(name, denied, tmp_path):
    text, out = _fragment(name)
    text += "\n# the proxy team's own rules follow\nhttp_access deny all\n"
    matchable = [r for r in out.traverse if "*" not in r.destination[1:]]
    https = sorted({_sample(r.destination) for r in matchable if r.protocol == "https"})
    http = sorted({_sample(r.destination) for r in matchable if r.protocol == "http"})
    assert https and http  # both kinds are proved
    wrong = []
    with running_squid(text, [*https, *http, *denied], tmp_path) as squid:
        for host in https:
            if (got := squid.connect(host, 443)) != 200:
                wrong.append(f"CONNECT {host}:443 -> {got}, want 200")
        for host in http:  # a plain-HTTP GET with a path: no path restriction where the matrix lists none
            if (got := squid.get(host, 80, "/ubuntu/dists/noble/InRelease")) != 200:
                wrong.append(f"GET http://{host}/ubuntu/... -> {got}, want 200")
        for host in denied:  # noProxy sends them direct (the proxy must not carry them), or nothing requires them
            if (got := squid.connect(host, 443)) != 403:
                wrong.append(f"CONNECT {host}:443 -> {got}, want 403")
        for host in https[:1]:
            if (got := squid.connect(host, 8443)) != 403:  # the right host on another port
                wrong.append(f"CONNECT {host}:8443 -> {got}, want 403")
        if http and (got := squid.connect(http[0], 80)) != 403:  # plain HTTP hosts are not tunnelled
            wrong.append(f"CONNECT {http[0]}:80 -> {got}, want 403")
    assert not wrong, "\n".join(wrong)


@needs_squid
@pytest.mark.engine
def test_squid_enforces_plain_http_paths(tmp_path):
    catalog, profile, out = export("aks-proxy")
    row = Row(kind="aks", role="nodes", destination="downloads.example.net", destination_kind="fqdn", protocol="http", ports="80",
              route="proxy", entry_ids=("aks-public-mcr",), citations=(), paths=("/pub/tools/", "/v1.2/index.json"))
    from dataclasses import replace

    text = squid_fragment(replace(out, traverse=(*out.traverse, row)), catalog, {"nodes": CLIENT})
    assert "acl egress-aks-proxy-paths-1-nodes-url urlpath_regex ^/pub/tools/ ^/v1\\.2/index\\.json(/|\\?|$)" in text
    text += "\nhttp_access deny all\n"
    with running_squid(text, ["downloads.example.net"], tmp_path) as squid:
        assert squid.get("downloads.example.net", 80, "/pub/tools/kubectl") == 200
        assert squid.get("downloads.example.net", 80, "/v1.2/index.json") == 200
        assert squid.get("downloads.example.net", 80, "/v1x2/index.json") == 403  # the '.' is literal
        assert squid.get("downloads.example.net", 80, "/private/") == 403
