"""Acceptance of the egress proxy (issue 9): the generated squid.conf, judged by the real Squid 5.

Every generated squid.conf passes ``squid -k parse``. Then Squid runs on the generated allowlist (tests/squid_engine.py)
and answers, probe by probe, a CONNECT for every required HTTPS host:port and a proxied GET for every required HTTP
host:port, and near misses around each: a sibling, the parent of an exact host, the apex of a ``*.x`` wildcard and a
name two labels under it, prefix and suffix attacks, upper case, a port the matrix does not give, the other protocol,
IP literals, and names only another role needs.

Expected verdicts come from the requirements and Squid's documented semantics, not from the compiler: a probe is
allowed iff a requirement of a role whose sources hold the client (127.0.0.1: the stack's nodes are given
127.0.0.0/8 here, the seed keeps its own CIDR) asks for that protocol and port and the name is exact or below a
required ``*.x`` at any depth (never ``x`` itself); names are case-insensitive.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from egress.targets.kubernetes.egress_proxy import compile_egress_proxy
from egress.targets.kubernetes.squid import proxied_option

from aws_stacks import stack
from squid_engine import needs_squid, parse_config, running_squid

CLIENT_SOURCES = ("127.0.0.0/8",)
STACKS = {"dev": dict(egress_proxy_roles=("nodes", "seed")), "kkp": dict(egress_proxy_roles=("nodes", "seed", "bastion"))}
UNGIVEN = {"https": 8443, "http": 8080}

pytestmark = [needs_squid, pytest.mark.engine]


@dataclass(frozen=True)
class Need:
    role: str
    protocol: str
    name: str  # lower case host, or '*.x'
    ports: tuple

    def covers(self, host: str) -> bool:
        host = host.lower()
        return host.endswith(self.name[1:]) if self.name.startswith("*.") else host == self.name

    def on_port(self, port: int) -> bool:
        return any(r.contains(port) for r in self.ports)


def _needs(requirements, roles) -> list[Need]:
    needs = []
    for req in requirements:
        if req.role not in roles:
            continue
        option, _ = proxied_option(req)
        if option is not None:
            needs += [Need(req.role, option.protocol, d.lower(), option.ports) for d in option.destinations]
    return needs


def _probes(needs: list[Need]) -> set[tuple[str, str, int]]:
    """(protocol, host, port): the required ones and the near misses around each."""
    probes = set()
    for need in needs:
        port = need.ports[0].start
        other = "http" if need.protocol == "https" else "https"
        if need.name.startswith("*."):
            apex = need.name[2:]
            hosts = [f"probe.{apex}", f"a.b.{apex}", apex, f"x{apex}", f"probe.{apex}.evil.test", f"PROBE.{apex.upper()}"]
        else:
            parent = need.name.split(".", 1)[1] if need.name.count(".") > 1 else None
            hosts = [need.name, f"x{need.name}", f"{need.name}.evil.test", f"child.{need.name}", f"sibling-zz.{need.name.split('.', 1)[-1]}",
                     need.name.upper(), *([parent] if parent else [])]
        for host in hosts:
            probes.add((need.protocol, host, port))
        probes.add((need.protocol, hosts[0], UNGIVEN[need.protocol]))
        probes.add((other, hosts[0], 443 if other == "https" else 80))
    for literal in ("127.0.0.1", "::1"):
        probes |= {("https", literal, 443), ("http", literal, 80)}
    return probes


def _expected(needs: list[Need], probe: tuple[str, str, int]) -> int:
    protocol, host, port = probe
    allowed = any(n.role == "nodes" and n.protocol == protocol and n.on_port(port) and n.covers(host) for n in needs)
    return 200 if allowed else 403


def _plan(name: str):
    catalog, profile, requirements = stack(name, **STACKS[name])
    return catalog, profile, requirements, compile_egress_proxy(catalog, profile, requirements)


@pytest.mark.parametrize("name", sorted(STACKS))
def test_generated_squid_conf_passes_squid_parse(name, tmp_path):
    *_, plan = _plan(name)
    result = parse_config(plan.squid_conf, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.parametrize("name", sorted(STACKS))
def test_squid_allows_exactly_the_required_hosts(name, tmp_path):
    catalog, profile, requirements = stack(name, **STACKS[name])
    profile = profile.model_copy(update={"node_sources": CLIENT_SOURCES, "pod_cidrs": ()})
    plan = compile_egress_proxy(catalog, profile, requirements)
    needs = _needs(requirements, profile.egress_proxy_roles)
    assert any(n.role != "nodes" for n in needs), "the stack must have another role's hosts as near misses"
    probes = sorted(_probes(needs))
    tls_ports = sorted({n.ports[0].start for n in needs if n.protocol == "https"})
    http_ports = sorted({n.ports[0].start for n in needs if n.protocol == "http"} - set(tls_ports))
    hosts = {host for _, host, _ in probes if ":" not in host and not host.replace(".", "").isdigit()}
    wrong = []
    with running_squid(plan.allowlist, hosts, tmp_path, tls_ports=tls_ports, http_ports=http_ports) as squid:
        for probe in probes:
            protocol, host, port = probe
            got = squid.connect(host, port) if protocol == "https" else squid.get(host, port)
            if got != _expected(needs, probe):
                wrong.append(f"{protocol} {host}:{port} -> {got}, want {_expected(needs, probe)}")
        # a 200 is a tunnel to the harness's upstream, with the client's SNI
        first = next(p for p in probes if p[0] == "https" and _expected(needs, p) == 200)
        assert squid.tls_get(first[1], first[2]).startswith(f"sni={first[1]} ")
        log = squid.cache_log()
    assert not wrong, f"{len(wrong)} of {len(probes)} probes:\n" + "\n".join(wrong[:40])
    allowed = sum(_expected(needs, p) == 200 for p in probes)
    assert allowed and len(probes) - allowed > allowed, (allowed, len(probes))
    assert "ERROR" not in log, log[-2000:]
