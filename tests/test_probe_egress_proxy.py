"""egress probe on a stack whose roles use the stack's own egress proxy (issue 21 item 2): `proxy-only` (kubeadm's proxy
environment points the nodes at the egress proxy's ClusterIP) and `dev` (OpenShift's Proxy and KKP's node proxy point
at it; the seed is served by it without a cluster proxy setting). The nodes' HTTP and HTTPS checks go through
egressProxyClusterIp:egressProxyPort as their clients do; other protocols go direct. Through the real Squid running the
allowlist the stack renders: allowed hosts pass, blocked ones are reported by entry id, near misses are denied."""
from __future__ import annotations

import pytest

import squid_engine
from egress.probe.agent import failed_entries, run_plan
from egress.probe.plan import build_plan, egress_proxy_url
from egress.targets.kubernetes import compile_kubernetes

from aws_stacks import stack
from squid_engine import needs_squid, running_squid
from test_probe_squid import _ca_context


def test_proxy_only_nodes_go_through_the_egress_proxy_cluster_ip():
    catalog, profile, reqs = stack("proxy-only")
    plan = build_plan(catalog, profile, reqs, "nodes")
    url = compile_kubernetes(catalog, profile, reqs).egress_proxy.url
    assert url == egress_proxy_url(profile) == "http://10.96.0.53:3128"
    assert {(c["via"], c.get("proxy")) for c in plan["checks"]} == {("proxy", url)}
    assert {c["protocol"] for c in plan["checks"]} == {"http", "https"}
    assert plan["proxy"] == {"credentials_env": None, "inspects_tls": False}
    # every HTTP(S) requirement of the nodes with a host is checked through it; the near misses too
    assert sorted((c["host"], c["port"]) for c in plan["checks"] if c["expect"] == "deny") == [
        ("asia-east1-docker.pkg.dev", 8443), ("egress-probe-near-miss.pkg.dev", 443), ("example.com", 80), ("example.com", 443)]


def test_a_tcp_requirement_goes_direct_and_a_noproxy_route_is_honoured():
    """kubeadm's NO_PROXY (the cluster's networks and the stack's noProxy) sends a host direct, as it sends the nodes' clients."""
    catalog, profile, reqs = stack("proxy-only", no_proxy=("github.com",))
    checks = {c["host"]: c for c in build_plan(catalog, profile, reqs, "nodes")["checks"] if c["expect"] == "allow"}
    assert checks["github.com"]["via"] == "direct" and "proxy" not in checks["github.com"]
    assert checks["quay.io"]["via"] == "proxy"


def test_dev_roles_the_egress_proxy_serves():
    catalog, profile, reqs = stack("dev")
    for role in ("nodes", "seed"):  # nodes: OpenShift's Proxy / KKP's node proxy point at it; seed: egressProxyRoles alone
        checks = build_plan(catalog, profile, reqs, role)["checks"]
        assert {c.get("proxy") for c in checks if c["protocol"] in ("http", "https")} == {"http://172.30.0.10:3128"}
        assert all(c["via"] == "direct" for c in checks if c["protocol"] not in ("http", "https"))


def test_a_corporate_proxy_still_wins_over_the_egress_proxy():
    catalog, profile, reqs = stack("proxy-only", http_proxy="http://proxy.corp.example.com:3128")
    checks = build_plan(catalog, profile, reqs, "nodes")["checks"]
    assert {c.get("proxy") for c in checks} == {"http://proxy.corp.example.com:3128"}


def test_without_a_cluster_ip_nothing_points_at_the_egress_proxy():
    catalog, profile, reqs = stack("proxy-only", cluster_proxy=(), egress_proxy_cluster_ip=None)
    assert egress_proxy_url(profile) is None
    assert {c["via"] for c in build_plan(catalog, profile, reqs, "nodes")["checks"]} == {"direct"}


@needs_squid
@pytest.mark.engine
def test_proxy_only_through_its_own_rendered_squid(monkeypatch, tmp_path):
    catalog, profile, reqs = stack("proxy-only")
    plan = build_plan(catalog, profile, reqs, "nodes")
    names = {c["host"] for c in plan["checks"]}
    ca = _ca_context(names, monkeypatch)
    # The allowlist the stack renders, with the test's client (127.0.0.1) as the nodes' source.
    local = profile.model_copy(update={"node_sources": ("127.0.0.0/8",), "pod_cidrs": ()})
    allow = compile_kubernetes(catalog, local, reqs).egress_proxy.allowlist
    blocked = {"quay.io", "archive.ubuntu.com"}  # one HTTPS, one plain-HTTP requirement
    deny = f"acl blocked dstdomain {' '.join(sorted(blocked))}\nhttp_access deny blocked\n"
    with running_squid(deny + allow, names, tmp_path) as squid:
        for check in plan["checks"]:  # Squid on loopback stands in for the ClusterIP 10.96.0.53:3128
            assert check["proxy"] == "http://10.96.0.53:3128"
            check["proxy"] = f"http://127.0.0.1:{squid.port}"
        plan["ca_bundle"] = ca
        report = run_plan(plan, timeout=5, total_timeout=180)
    expected = sorted({e for r in reqs if r.role == "nodes" and r.destination in blocked for e in r.entry_ids})
    assert expected and failed_entries(report) == expected
    assert {r["status"] for r in report["results"] if r["expect"] == "allow" and r["host"] not in blocked} == {"ok"}
    quay = next(r for r in report["results"] if r["host"] == "quay.io")
    assert quay["detail"] == "proxy answered 403 to CONNECT quay.io:443 (ERR_ACCESS_DENIED 0)"
    misses = {(r["host"], r["port"]): r["status"] for r in report["results"] if r["expect"] == "deny"}
    assert misses == {("egress-probe-near-miss.pkg.dev", 443): "ok", ("asia-east1-docker.pkg.dev", 8443): "ok", ("example.com", 443): "ok",
                      ("example.com", 80): "ok"}
    assert not report["ok"]
