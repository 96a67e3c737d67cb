"""egress probe through the real Squid (issue 21 item 2): the openshift stack's nodes go through its corporate proxy (here
Squid on 127.0.0.1, tests/squid_engine.py) with CONNECT; the upstreams present a certificate from a test CA the stack gives
as proxyTrustedCa (Squid inspects nothing: it tunnels). The probe reports exactly the requirements the test blocked, by
entry id, and fails when Squid lets a near miss through."""
from __future__ import annotations

import ssl
import tempfile
from pathlib import Path

import pytest

import squid_engine
from egress.probe.agent import failed_entries, run_plan
from egress.probe.plan import build_plan
from egress.targets.kubernetes.egress_proxy import compile_egress_proxy

from aws_stacks import stack
from probe_servers import DEAD, issue_certificates
from squid_engine import needs_squid, running_squid

pytestmark = [needs_squid, pytest.mark.engine]


def _ca_context(names, monkeypatch) -> str:
    """The harness's TLS upstreams serve a certificate for ``names`` from a fresh test CA; returns the CA (PEM)."""
    ca_pem, cert_pem, key_pem = issue_certificates(names)
    directory = Path(tempfile.mkdtemp(prefix="egress-probe-squid-"))
    (directory / "cert.pem").write_bytes(cert_pem)
    (directory / "key.pem").write_bytes(key_pem)

    def context(workdir):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(directory / "cert.pem", directory / "key.pem")
        return ctx

    monkeypatch.setattr(squid_engine, "_tls_context", context)
    return ca_pem


def _setup(monkeypatch, port: int = 3128):
    catalog, profile, reqs = stack("openshift")
    names = {c["host"] for c in build_plan(catalog, profile, reqs, "nodes")["checks"]}
    ca = _ca_context(names, monkeypatch)
    return names, ca


def _plan(ca: str, squid_port: int) -> tuple[dict, str]:
    catalog, profile, reqs = stack("openshift", http_proxy=f"http://127.0.0.1:{squid_port}", proxy_trusted_ca=ca)
    plan = build_plan(catalog, profile, reqs, "nodes")
    # The allowlist Squid enforces: the stack's own egress-proxy allowlist for its nodes, the test's client as their source.
    allow = compile_egress_proxy(catalog, profile.model_copy(update={"egress_proxy": True, "node_sources": ("127.0.0.0/8",),
                                                                     "pod_cidrs": ()}), reqs).allowlist
    return plan, allow


def test_through_squid_reports_exactly_the_blocked_requirements(monkeypatch, tmp_path):
    names, ca = _setup(monkeypatch)
    blocked = {"quay.io", "mirror.openshift.com"}
    plan, allow = _plan(ca, 3128)  # the port is only known once Squid runs; the allowlist does not depend on it
    deny = f"acl blocked dstdomain {' '.join(sorted(blocked))}\nhttp_access deny blocked\n"  # the proxy team forgot these two
    with running_squid(deny + allow, names, tmp_path) as squid:
        plan, _ = _plan(ca, squid.port)
        pins = {c["host"]: DEAD for c in plan["checks"] if c["via"] == "direct"}  # NTP goes direct: not this test's subject
        report = run_plan(plan, hosts=pins, timeout=5, total_timeout=120)
    proxied = [r for r in report["results"] if r["via"] == "proxy"]
    assert len(proxied) == 27 and {r["status"] for r in proxied if r["host"] not in blocked} == {"ok"}
    _, _, reqs = stack("openshift")
    expected = sorted({e for r in reqs if r.role == "nodes" and (r.destination in blocked or r.protocol == "udp") for e in r.entry_ids})
    assert failed_entries(report) == expected
    quay = next(r for r in proxied if r["host"] == "quay.io")
    assert quay["detail"] == "proxy answered 403 to CONNECT quay.io:443 (ERR_ACCESS_DENIED 0)"
    good = next(r for r in proxied if r["host"] == "registry.redhat.io")
    assert [(s["step"], s["ok"]) for s in good["steps"]] == [("tcp", True), ("proxy", True), ("tls", True)]
    assert good["steps"][1]["detail"] == "CONNECT registry.redhat.io:443: 200"
    misses = {(r["host"], r["port"]): (r["status"], r["detail"]) for r in report["results"] if r["expect"] == "deny"}
    assert misses == {("egress-probe-near-miss.redhat.com", 443): ("ok", "denied (proxy answered 403 to CONNECT egress-probe-near-miss.redhat.com:443 (ERR_ACCESS_DENIED 0))"),
                      ("access.redhat.com", 8443): ("ok", "denied (proxy answered 403 to CONNECT access.redhat.com:8443 (ERR_ACCESS_DENIED 0))"),
                      ("example.com", 443): ("ok", "denied (proxy answered 403 to CONNECT example.com:443 (ERR_ACCESS_DENIED 0))"),
                      ("example.com", 80): ("ok", "denied (the proxy answered 403 to GET http://example.com/ (ERR_ACCESS_DENIED 0))")}
    assert report["enforcement"] == "proven"


def test_a_near_miss_squid_lets_through_fails_the_probe(monkeypatch, tmp_path):
    names, ca = _setup(monkeypatch)
    _, allow = _plan(ca, 3128)
    leak = "acl CONNECT method CONNECT\nacl leak dstdomain example.com\nhttp_access allow CONNECT leak\n"
    with running_squid(leak + allow.replace("acl CONNECT method CONNECT\n", ""), names, tmp_path) as squid:
        plan, _ = _plan(ca, squid.port)
        plan["checks"] = [c for c in plan["checks"] if c["via"] == "proxy"]
        report = run_plan(plan, timeout=5, total_timeout=120)
    assert not report["ok"] and failed_entries(report) == []
    [leaked] = [r for r in report["results"] if r["status"] == "failed"]
    assert (leaked["host"], leaked["port"], leaked["expect"]) == ("example.com", 443, "deny")
    assert leaked["detail"] == "got through, but must be denied (a server answered): the firewall is not enforcing"


def test_a_wide_open_squid_never_proves_enforcement(monkeypatch, tmp_path):
    """The reviewer's repro (http_access allow all): the sibling never resolves and nothing listens on the other port, so
    Squid answers 503 (ERR_DNS_FAIL, ERR_CONNECT_FAIL); example.com is not served here either. Before: all three near
    misses 'denied' and the probe passed; now inconclusive and 'enforcement NOT proven'."""
    names, ca = _setup(monkeypatch)
    served = names - {"egress-probe-near-miss.redhat.com", "example.com"}
    with running_squid("acl CONNECT method CONNECT\nhttp_access allow all\n", served, tmp_path) as squid:
        plan, _ = _plan(ca, squid.port)
        plan["checks"] = [c for c in plan["checks"] if c["via"] == "proxy"]
        report = run_plan(plan, timeout=5, total_timeout=120)
    misses = {(r["host"], r["port"]): r["status"] for r in report["results"] if r["expect"] == "deny"}
    assert set(misses.values()) == {"inconclusive"}, misses
    assert (report["ok"], report["enforcement"]) == (False, "not proven")
