"""egress probe, direct (issue 21 item 2): a stack's probe against local HTTPS, HTTP and NTP servers on a loopback address
with a hosts mapping and a test CA reports exactly the requirements the test blocked, by entry id, and fails when a
near miss that must be denied gets through."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from egress.probe import agent
from egress.probe.agent import failed_entries, run_plan
from egress.probe.markdown import markdown
from egress.probe.plan import ProbePlanError, build_plan, parse_samples

from aws_stacks import stack
from probe_servers import DEAD, serving

AGENT = Path(agent.__file__)


DIRECT = {"kkp": {"cluster_proxy": ()}}  # kkp's nodes use its corporate proxy: here they go direct (test_probe_squid goes through one)


def _plan(name: str, role: str = "nodes", ca: str | None = None, **kwargs) -> dict:
    catalog, profile, reqs = stack(name, **DIRECT.get(name, {}), **({"proxy_trusted_ca": ca} if ca else {}))
    return build_plan(catalog, profile, reqs, role, **kwargs)


def _entries(name: str, role: str, hosts: set[str]) -> list[str]:
    """The entry ids behind the role's requirements for ``hosts``, from the resolved requirements (not from the plan)."""
    _, _, reqs = stack(name)
    return sorted({e for r in reqs if r.role == role and r.destination in hosts for e in r.entry_ids})


def _pins(plan: dict, address: str, blocked: set[str] = frozenset(), through: set[str] = frozenset()) -> dict:
    """Every host of the plan pinned to ``address``; blocked hosts and near misses (but ``through``) to an address nobody serves."""
    allowed = {c["host"] for c in plan["checks"] if c["expect"] == "allow"}  # a near miss on another port of an allowed host
    return {c["host"]: address if c["host"] not in blocked and (c["host"] in allowed or c["host"] in through) else DEAD for c in plan["checks"]}


def test_reports_exactly_the_blocked_requirements():
    names = {c["host"] for c in _plan("kkp")["checks"]}
    blocked = {"quay.io", "security.ubuntu.com", "download.docker.com"}  # https, http, https with a path
    with serving(names - blocked) as servers:
        plan = _plan("kkp", ca=servers.ca_pem)
        pins = _pins(plan, servers.address, blocked)
        report = run_plan(plan, hosts=pins, timeout=3, total_timeout=60)
    assert failed_entries(report) == _entries("kkp", "nodes", blocked)
    assert not report["ok"] and report["counts"]["failed"] == 3
    by_host = {r["host"]: r for r in report["results"] if r["expect"] == "allow"}
    assert by_host["quay.io"]["detail"] == f"TCP {DEAD}:443: connection refused"
    assert [s["step"] for s in by_host["registry.k8s.io"]["steps"]] == ["dns", "tcp", "tls"]
    assert [s["step"] for s in by_host["github.com"]["steps"]] == ["dns", "tcp", "tls", "http"]
    assert [s["step"] for s in by_host["archive.ubuntu.com"]["steps"]] == ["dns", "tcp", "http"]
    # Every TLS handshake named its host (SNI), and the paths the matrix knows were asked for.
    tls = {(sni, path) for scheme, sni, _, path in servers.seen if scheme == "https"}
    assert ("github.com", "/containernetworking/plugins/releases/") in tls and ("dl.k8s.io", "/") in tls
    assert {sni for scheme, sni, _, _ in servers.seen if scheme == "https"} == {"github.com", "dl.k8s.io"}
    assert ("http", None, "archive.ubuntu.com", "/") in servers.seen
    # Near misses direct: only example.com on 443 and 80 (a host known to answer); refused while requirements got through
    # on those ports in the same run, so denied.
    misses = {(r["host"], r["port"]): (r["status"], r["detail"]) for r in report["results"] if r["expect"] == "deny"}
    assert misses == {("example.com", 443): ("ok", f"denied (TCP {DEAD}:443: connection refused), while https asia-east1-docker.pkg.dev:443 "
                                                   f"({servers.address}) over IPv4 got through on the same port in this run"),
                      ("example.com", 80): ("ok", f"denied (TCP {DEAD}:80: connection refused), while http archive.ubuntu.com:80 "
                                                  f"({servers.address}) over IPv4 got through on the same port in this run")}
    assert report["enforcement"] == "proven"


def test_all_reachable_passes_and_a_near_miss_getting_through_fails():
    names = {c["host"] for c in _plan("kkp")["checks"]}
    with serving(names) as servers:
        plan = _plan("kkp", ca=servers.ca_pem)
        good = run_plan(plan, hosts=_pins(plan, servers.address), timeout=3, total_timeout=60)
        leaky = run_plan(plan, hosts=_pins(plan, servers.address, through={"example.com"}), timeout=3, total_timeout=60)
    assert good["ok"] and good["counts"] == {"ok": 50, "failed": 0, "inconclusive": 0, "not-probed": 0}
    assert not leaky["ok"] and failed_entries(leaky) == [] and leaky["enforcement"] == "failed"
    assert [(r["host"], r["port"], r["expect"]) for r in leaky["results"] if r["status"] == "failed"] == [("example.com", 443, "deny"), ("example.com", 80, "deny")]
    leak = next(r for r in leaky["results"] if r["status"] == "failed")
    assert leak["detail"] == "got through, but must be denied (a server answered): the firewall is not enforcing"
    assert "Near misses that got through (the firewall is not enforcing)" in markdown(leaky)


def test_tls_verifies_against_the_plan_ca_and_the_sni():
    """Without the stack's CA bundle the handshake does not verify; a host the certificate does not name fails too."""
    names = {c["host"] for c in _plan("kkp")["checks"]}
    with serving(names - {"quay.io"}) as servers:
        no_ca = _plan("kkp")
        report = run_plan(no_ca, hosts=_pins(no_ca, servers.address), timeout=3, total_timeout=60)
        with_ca = _plan("kkp", ca=servers.ca_pem)
        wrong_name = run_plan(with_ca, hosts=_pins(with_ca, servers.address), timeout=3, total_timeout=60)
    assert report["counts"]["failed"] == 46  # every https check; the two http ones pass
    assert "the certificate does not verify (unable to get local issuer certificate)" in next(
        r["detail"] for r in report["results"] if r["host"] == "registry.k8s.io")
    assert failed_entries(wrong_name) == _entries("kkp", "nodes", {"quay.io"})
    assert "Hostname mismatch, certificate is not valid for 'quay.io'" in next(r["detail"] for r in wrong_name["results"] if r["host"] == "quay.io")


def test_ntp_is_a_real_client_query():
    with serving({"x.test"}) as servers:
        plan = _plan("openshift")
        ntp = [c for c in plan["checks"] if c["protocol"] == "ntp"]
        plan["checks"] = ntp
        pins = {c["host"]: servers.address for c in ntp} | {"3.rhel.pool.ntp.org": DEAD}
        report = run_plan(plan, hosts=pins, timeout=1, total_timeout=20)
    assert failed_entries(report) == ["openshift-ntp-3"]
    assert len(servers.ntp_seen) == 2
    ok = next(r for r in report["results"] if r["host"] == "1.rhel.pool.ntp.org")
    assert ok["status"] == "ok" and ok["steps"][-1]["detail"].startswith(f"{servers.address}:123: stratum 2, offset ")


def test_wildcards_tags_and_other_udp_are_not_probed_unless_sampled():
    plan = _plan("dev")
    skipped = {(n["destination"], n["reason"]) for n in plan["not_probed"]}
    assert ("AzureMonitor", "a service-tag destination names no host to connect to") in skipped
    assert ("*.data.mcr.microsoft.com", "a wildcard names no host; give one with --sample '*.data.mcr.microsoft.com=<host>'") in skipped
    sampled = _plan("dev", samples=parse_samples(["*.data.mcr.microsoft.com=westeurope.data.mcr.microsoft.com"]))
    assert ("https", "westeurope.data.mcr.microsoft.com", 443) in {(c["protocol"], c["host"], c["port"]) for c in sampled["checks"]}
    with pytest.raises(ProbePlanError, match=r"not a name under \*\.data\.mcr\.microsoft\.com"):
        _plan("dev", samples=parse_samples(["*.data.mcr.microsoft.com=mcr.microsoft.com"]))
    aks = _plan("aks-public")
    assert ("10.10.0.4", "UDP other than NTP (port 123) has no generic client to probe it with") in {
        (n["destination"], n["reason"]) for n in aks["not_probed"]}


def test_near_misses_are_never_what_the_role_may_reach():
    """A near miss covered by a requirement of the role (a wildcard over a sibling, a service tag on the port) is left out."""
    plan = _plan("dev")
    misses = [(c["host"], c["port"], c["why"]) for c in plan["checks"] if c["expect"] == "deny"]
    _, _, reqs = stack("dev")
    for host, port, _ in misses:
        for r in reqs:
            if r.role == "nodes" and any(p.contains(port) for p in r.ports):
                assert host != r.destination and not (r.kind == "wildcard" and host.endswith(r.destination[1:]))
    assert [c["why"] for c in _plan("kkp")["checks"] if c["expect"] == "deny"][-1] == "a host no entry allows"


def test_a_service_tag_on_443_no_longer_hides_every_near_miss():
    """aks-public's nodes reach the AzureMonitor service tag on 443 (review finding 1): example.com stays a near miss on 443
    and 80, its 'why' saying the tag might hold its addresses; no near miss on a port nothing may listen on (8443 direct)."""
    misses = [(c["host"], c["port"], c["protocol"], c["via"], c["why"]) for c in _plan("aks-public")["checks"] if c["expect"] == "deny"]
    assert misses == [("example.com", 443, "https", "direct", "a host no entry allows; the role's service-tag AzureMonitor on port 443 might "
                       "hold its addresses (unknowable offline): if it gets through, check that first"),
                      ("example.com", 80, "http", "direct", "a host no entry allows")]


def test_report_json_shape_is_pinned():
    with serving({"registry.k8s.io"}) as servers:
        plan = {"version": 1, "stack": "s", "role": "nodes", "ca_bundle": servers.ca_pem, "hosts": {"registry.k8s.io": servers.address},
                "checks": [{"host": "registry.k8s.io", "port": 443, "protocol": "https", "entries": ["e1"]}],
                "not_probed": [{"check": "https *.x.io:443", "destination": "*.x.io", "protocol": "https", "port": 443, "entries": ["e2"],
                                "reason": "a wildcard names no host"}]}
        report = run_plan(plan, timeout=3, total_timeout=10)
    for row in report["results"]:
        for step in row["steps"]:
            step.pop("ms", None)
    # No near miss in this plan: every requirement reachable, but enforcement not proven, so not ok.
    assert report == {"version": 1, "stack": "s", "role": "nodes", "ok": False, "enforcement": "not proven",
                      "counts": {"ok": 1, "failed": 0, "inconclusive": 0, "not-probed": 1},
                      "results": [{"check": "https registry.k8s.io:443", "entries": ["e1"], "host": "registry.k8s.io", "port": 443,
                                   "protocol": "https", "via": "direct", "expect": "allow", "why": "", "status": "ok", "detail": "reachable",
                                   "steps": [{"step": "dns", "ok": True, "detail": f"{servers.address} (pinned)"},
                                             {"step": "tcp", "ok": True, "detail": f"{servers.address}:443", "address": servers.address},
                                             {"step": "tls", "ok": True, "detail": "SNI registry.k8s.io, TLSv1.3"}]},
                                  {"check": "https *.x.io:443", "entries": ["e2"], "host": "*.x.io", "port": 443, "protocol": "https",
                                   "via": "", "expect": "allow", "why": "", "status": "not-probed", "detail": "a wildcard names no host",
                                   "steps": []}]}


def test_agent_imports_only_the_standard_library():
    tree = ast.parse(AGENT.read_text())
    modules = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    modules |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 0}
    assert not any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(tree))  # no relative import
    assert modules - set(sys.stdlib_module_names) == {"__future__"} - set(sys.stdlib_module_names)
    assert "json" in modules and "ssl" in modules


def test_agent_runs_alone_as_a_script(tmp_path):
    """python3 -I agent.py plan.json, outside the project's environment (no site-packages): the Job's way to run it."""
    with serving({"registry.k8s.io"}) as servers:
        plan = {"version": 1, "stack": "s", "role": "nodes", "ca_bundle": servers.ca_pem, "timeout": 3, "total_timeout": 10,
                "checks": [{"host": "registry.k8s.io", "port": 443, "protocol": "https", "entries": ["e1"]},
                           {"host": "quay.io", "port": 443, "protocol": "https", "entries": ["e2"]}]}
        (tmp_path / "plan.json").write_text(json.dumps(plan))
        done = subprocess.run(["/usr/bin/python3", "-I", str(AGENT), str(tmp_path / "plan.json"), "--format", "json",
                               "--resolve", f"registry.k8s.io={servers.address}", "--resolve", f"quay.io={DEAD}"],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert failed_entries(json.loads(done.stdout)) == ["e2"]
    bad = subprocess.run(["/usr/bin/python3", "-I", str(AGENT), str(tmp_path / "plan.json"), "--resolve", "quay.io"],
                         capture_output=True, text=True, timeout=60)
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr == "error: --resolve 'quay.io': not host=ip. Fix: write e.g. --resolve registry.k8s.io=192.0.2.10\n"


def test_cli_probe_table_and_markdown(run_cli, project_copy):
    names = {c["host"] for c in _plan("kkp")["checks"]}
    with serving(names - {"quay.io"}) as servers:
        ca = "".join(f"    {line}\n" for line in servers.ca_pem.splitlines())
        stack_file = project_copy / "stacks" / "Pulumi.kkp.yaml"
        text = stack_file.read_text().replace("  egress-matrix:clusterProxy: [kkp]\n", "")
        stack_file.write_text(text + f"  egress-matrix:proxyTrustedCa: |\n{ca}")
        plan = _plan("kkp")
        resolve = [f"--resolve={h}={ip}" for h, ip in _pins(plan, servers.address, {"quay.io"}).items()]
        code, out, err = run_cli("probe", "--stack", "kkp", "--timeout", "3", "--format", "md", *resolve, "--project", str(project_copy))
        table_code, table_out, _ = run_cli("probe", "--stack", "kkp", "--timeout", "3", *resolve, "--project", str(project_copy))
    assert (code, table_code) == (1, 1)
    assert " ".join(err.split()) == "EgressError: stack 'kkp' role 'nodes': 1 check(s) failed (listed above)"
    assert out.startswith("### egress probe: `kkp` role `nodes`: FAIL\n\n**Checks** 49 ok · 1 failed · 0 inconclusive · 0 not probed\n\n"
                          "#### :x: Requirements not reachable\n\n| Check | Via | Entries | What failed |\n|---|---|---|---|\n"
                          "| `https quay.io:443` | direct | kkp-images-quay-io-canal, ")
    assert table_out.splitlines()[0].split() == ["STATUS", "CHECK", "VIA", "ENTRIES", "DETAIL"]
    assert table_out.endswith("egress probe of stack 'kkp' role 'nodes': FAIL (49 ok, 1 failed, 0 inconclusive, 0 not probed); "
                              "enforcement proven (a near miss was denied)\n")
    assert "\nEnforcement proven: 2 of 2 near misses denied.\n" in out


def test_cli_plan_only_prints_the_plan(run_cli):
    code, out, err = run_cli("probe", "--stack", "openshift", "--plan-only", "--resolve", "quay.io=192.0.2.7", "--timeout", "2")
    assert code == 0, err
    plan = json.loads(out)
    assert (plan["role"], plan["timeout"], plan["hosts"]) == ("nodes", 2.0, {"quay.io": "192.0.2.7"})
    assert plan == _plan("openshift", hosts={"quay.io": "192.0.2.7"}, timeout=2.0)


def test_tls_is_not_stricter_than_the_clusters_go_clients(monkeypatch):
    """The pinned image runs Python 3.14, whose default context adds VERIFY_X509_STRICT (3.13+); Go clients apply no such
    checks, so the probe clears it: a corporate CA the nodes accept must not fail only in the probe."""
    import ssl

    real = ssl.create_default_context

    def strict_default(*args, **kwargs):
        context = real(*args, **kwargs)
        context.verify_flags |= ssl.VERIFY_X509_STRICT  # what 3.13+ does by default
        return context

    monkeypatch.setattr(agent.ssl, "create_default_context", strict_default)
    probe = agent.Probe({"checks": [], "near_misses": [], "proxy": None}, {}, 1.0, 1.0)
    context = probe.context()
    assert not context.verify_flags & ssl.VERIFY_X509_STRICT
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
