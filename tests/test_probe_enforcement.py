"""egress probe proves enforcement only on positive evidence (review of issue 21, findings 1, 2, 8 and 12).

A near miss counts as denied only on the proxy's or firewall's own refusal, or, direct, on a refused connection while a
requirement on the same port got through in the same run; anything else is inconclusive, and a run where no near miss was
conclusively denied says "enforcement NOT proven" and fails. Inside a TLS-inspecting proxy's tunnel (and on plain HTTP)
the agent sends a request and judges its status. Every server here is a toy on loopback that stops by itself."""
from __future__ import annotations

import base64
import json
import socket
import subprocess
import threading
from pathlib import Path

from egress.probe import agent
from egress.probe.agent import failed_entries, run_plan, table
from egress.probe.markdown import markdown

from probe_servers import DEAD, serving, toy_proxy

AGENT = Path(agent.__file__)


def _plan(checks, ca=None, inspects_tls=False, credentials_env=None):
    proxied = any(c.get("via") == "proxy" for c in checks)
    return {"version": 1, "stack": "s", "role": "nodes", "hosts": {}, "ca_bundle": ca, "not_probed": [], "checks": checks,
            "proxy": {"credentials_env": credentials_env, "inspects_tls": inspects_tls} if proxied else None}


def _misses(report):
    return {(r["host"], r["port"], r["protocol"]): (r["status"], r["detail"]) for r in report["results"] if r["expect"] == "deny"}


def test_a_refusal_without_a_control_on_its_port_is_not_proof(tmp_path):
    """The reviewer's repro: example.com pinned to loopback (nothing listens: refused), no requirement on 443 got through.
    Before: 'ok ... denied (connection refused)' and a passing report saying every near miss is denied."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    port = listener.getsockname()[1]
    threading.Thread(target=lambda: [listener.accept() for _ in range(3)], daemon=True).start()
    plan = _plan([{"host": "127.0.0.1", "port": port, "protocol": "tcp", "expect": "allow", "entries": ["e1"]},
                  {"host": "example.com", "port": 443, "protocol": "https", "expect": "deny"}])
    report = run_plan(plan, hosts={"example.com": DEAD}, timeout=2, total_timeout=20)
    assert (report["ok"], report["enforcement"]) == (False, "not proven")
    assert _misses(report) == {("example.com", 443, "https"): (
        "inconclusive", f"TCP {DEAD}:443: connection refused: no requirement on port 443 over IPv4 got through directly (to an address outside "
                        "the cluster's own ranges) in this run, so this may be a host that does not listen rather than the firewall")}
    md = markdown(report)
    assert "#### :warning: Enforcement NOT proven" in md and "every near miss is denied" not in md
    assert table(report).rstrip().endswith("enforcement NOT proven (no near miss was conclusively denied: the firewall may let anything through)")
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    done = subprocess.run(["/usr/bin/python3", "-I", str(AGENT), str(tmp_path / "plan.json"), "--resolve", f"example.com={DEAD}", "--timeout", "2"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    listener.close()


def test_a_proxy_that_cannot_reach_a_host_or_wants_credentials_proves_nothing():
    """A wide-open proxy answers a name it cannot resolve or a port nothing listens on with 503 (Squid ERR_DNS_FAIL,
    ERR_CONNECT_FAIL); a 407 denies no destination. Before: all three counted 'denied'."""
    for status, detail in (("503 Service Unavailable\r\nX-Squid-Error: ERR_DNS_FAIL 0", "proxy answered 503 to CONNECT x.example.com:443 (ERR_DNS_FAIL 0)"),
                           ("502 Bad Gateway\r\nProxy-Status: corp; error=connection_refused", "proxy answered 502 to CONNECT x.example.com:443 "
                                                                                              "(Proxy-Status: corp; error=connection_refused)"),
                           ("407 Proxy Authentication Required\r\nX-Squid-Error: ERR_CACHE_ACCESS_DENIED 0",
                            "proxy answered 407 to CONNECT x.example.com:443 (ERR_CACHE_ACCESS_DENIED 0) (the proxy wants credentials: set the "
                            "environment variable proxy.credentials_env names)")):
        with toy_proxy(connect_status=status) as proxy:
            report = run_plan(_plan([{"host": "x.example.com", "port": 443, "protocol": "https", "via": "proxy", "proxy": proxy.url,
                                      "expect": "deny"}]), timeout=3, total_timeout=20)
        assert _misses(report) == {("x.example.com", 443, "https"): ("inconclusive", f"{detail}: this proves nothing about the firewall")}
        assert report["enforcement"] == "not proven" and not report["ok"]
    for status in ("403 Forbidden\r\nX-Squid-Error: ERR_ACCESS_DENIED 0", "403 Forbidden\r\nProxy-Status: corp; error=http_request_denied",
                   "403 Forbidden"):
        with toy_proxy(connect_status=status) as proxy:
            report = run_plan(_plan([{"host": "x.example.com", "port": 443, "protocol": "https", "via": "proxy", "proxy": proxy.url,
                                      "expect": "deny"}]), timeout=3, total_timeout=20)
        assert report["enforcement"] == "proven", status


def test_inside_a_tls_inspecting_proxy_the_request_is_judged():
    """A TLS-inspecting proxy opens every tunnel and refuses inside it (reviewer's bump.py). Before: blocked requirements
    'reachable' and the near miss 'got through'. A 404 from upstream is still an answer: reachable."""
    with toy_proxy(blocked={"blocked.example.org", "example.com"}) as proxy:
        checks = [{"host": "blocked.example.org", "port": 443, "protocol": "https", "via": "proxy", "proxy": proxy.url, "expect": "allow", "entries": ["e1"]},
                  {"host": "blocked.example.org", "port": 443, "protocol": "https", "via": "proxy", "proxy": proxy.url, "expect": "allow",
                   "entries": ["e2"], "path": "/v2/"},
                  {"host": "allowed.test", "port": 443, "protocol": "https", "via": "proxy", "proxy": proxy.url, "expect": "allow", "entries": ["e3"]},
                  {"host": "example.com", "port": 443, "protocol": "https", "via": "proxy", "proxy": proxy.url, "expect": "deny"}]
        report = run_plan(_plan(checks, ca=proxy.ca_pem, inspects_tls=True), timeout=3, total_timeout=30)
    assert failed_entries(report) == ["e1", "e2"]
    by = {(r["host"], tuple(r["entries"])): r for r in report["results"]}
    assert by[("blocked.example.org", ("e1",))]["detail"] == "answered 403 to GET / (ERR_ACCESS_DENIED 0)"
    assert [s["step"] for s in by[("allowed.test", ("e3",))]["steps"]] == ["tcp", "proxy", "tls", "http"]
    assert by[("allowed.test", ("e3",))]["steps"][-1]["detail"] == "GET /: 404"
    assert _misses(report) == {("example.com", 443, "https"): ("ok", "denied (answered 403 to GET / (ERR_ACCESS_DENIED 0))")}
    assert report["enforcement"] == "proven"


def test_plain_http_azure_firewall_470_is_a_refusal():
    """Azure Firewall answers a denied plain-HTTP request with 470: a requirement so answered is blocked, a near miss denied.
    Before: every status counted as reachable, and a near miss answered 470 'got through'."""
    with toy_proxy(blocked={"blocked.example.org", "example.com"}) as proxy:
        checks = [{"host": "blocked.example.org", "port": 80, "protocol": "http", "via": "proxy", "proxy": proxy.url, "expect": "allow", "entries": ["e1"]},
                  {"host": "allowed.test", "port": 80, "protocol": "http", "via": "proxy", "proxy": proxy.url, "expect": "allow", "entries": ["e2"]},
                  {"host": "example.com", "port": 80, "protocol": "http", "via": "proxy", "proxy": proxy.url, "expect": "deny"}]
        report = run_plan(_plan(checks), timeout=3, total_timeout=30)
    assert failed_entries(report) == ["e1"]
    assert _misses(report) == {("example.com", 80, "http"): ("ok", "denied (the proxy answered 470 to GET http://example.com/ (Azure Firewall: "
                                                                    "no application rule allows it))")}


def test_every_address_of_a_name_is_tried(monkeypatch):
    """A dual-stack name whose first address does not answer (no IPv6 egress): the next one is tried, and the step says
    which answered. Before: only the first address, so the requirement failed."""
    with serving({"registry.k8s.io"}) as servers:
        real = socket.getaddrinfo

        def fake(host, port, *args, **kwargs):
            if host == "registry.k8s.io":
                return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (DEAD, port)), (socket.AF_INET, socket.SOCK_STREAM, 6, "", (servers.address, port))]
            return real(host, port, *args, **kwargs)

        monkeypatch.setattr(socket, "getaddrinfo", fake)
        report = run_plan(_plan([{"host": "registry.k8s.io", "port": 443, "protocol": "https", "expect": "allow", "entries": ["e1"]}],
                                ca=servers.ca_pem), timeout=3, total_timeout=20)
    [row] = report["results"]
    assert row["status"] == "ok"
    assert [(s["step"], s["detail"]) for s in row["steps"][:2]] == [
        ("dns", f"{DEAD}, {servers.address}"), ("tcp", f"{servers.address}:443 (after {DEAD}:443: connection refused)")]


def test_credentials_are_sent_as_typed(monkeypatch):
    """The Secret's value is user:password as typed (not percent-encoded): the agent sends it as RFC 7617 Basic."""
    secret = "svc-probe:p@ss:w/rd%41"
    monkeypatch.setenv("EGRESS_PROBE_PROXY_CREDENTIALS", secret)
    with toy_proxy(blocked={"example.com"}) as proxy:
        run_plan(_plan([{"host": "example.com", "port": 80, "protocol": "http", "via": "proxy", "proxy": proxy.url, "expect": "deny"}],
                       credentials_env="EGRESS_PROBE_PROXY_CREDENTIALS"), timeout=3, total_timeout=20)
    assert proxy.seen == [("GET", "http://example.com/", "Basic " + base64.b64encode(secret.encode()).decode())]
