"""Acceptance of the AWS target (issue 8): what the compiled rules pass through the real Suricata 7, probe by probe.

For each stack and form, one pcap (tests/suricata_replay.py) holds a TLS ClientHello per required SNI and an HTTP
request per required Host, from inside the role's source CIDR, on each required port, plus near misses generated per
requirement: a sibling, a wildcard's apex and the apex's parent, prefix and suffix attacks (``xmcr.microsoft.com``,
``mcr.microsoft.com.evil.test``), upper case, a port the matrix does not give; and for a sample of the requirements, a
child of an exact host, the other protocol, another role's source and a source outside every role. It is replayed
under AWS's default drop, in one Suricata run per (stack, form).

The expected verdicts come from the requirements and the documented semantics, not from the compiler:
- suricata form: a probe passes iff it is a required (name, port) for its source's role, the name exact or below a
  required ``*.x`` at any depth (never ``x`` itself). Names match case-insensitively: ``tls.sni`` rules are ``nocase``,
  and Suricata lower-cases ``http.host`` (tests/test_suricata_replay.py).
- domain-list form: a probe passes iff its name is required for its role and protocol, or is the apex of a required
  wildcard (a target ``.x`` matches ``x``), on any port (reference/aws-egress.md §2.5).
What the domain-list form passes beyond the requirements must be exactly what ``plan.broadening`` lists.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, replace
from typing import Callable, Optional

import pytest

from egress.addresses import PortRange
from egress.models import ResolvedAlternative
from egress.targets.aws.compile import compile_aws, enforced
from egress.targets.aws.plan import AwsPlan
from egress.targets.aws.render import render

from aws_stacks import FORMS, dev, stack
from suricata_engine import needs_suricata
from suricata_replay import Probe, replay

OUTSIDE = "192.168.77.5"  # in the policy's HOME_NET (RFC 1918), in no role's source CIDR
DESTINATION = ipaddress.ip_address(Probe("tls", "x").destination)
APP = {"https": "tls", "http": "http"}
OTHER_APP = {"tls": "http", "http": "tls"}
DEFAULT_PORT = {"tls": 443, "http": 80}
UNGIVEN_PORTS = {"tls": (8443, 9443, 10443), "http": (8080, 8081, 8082)}  # the first one a requirement does not give
TARGET_TYPE = {"tls": "TLS_SNI", "http": "HTTP_HOST"}
STACKS: dict[str, Callable] = {"dev": dev, "kkp": lambda form: stack("kkp", aws_network_firewall_rules=form)}
CASES = [(name, form) for name in STACKS for form in FORMS]
SAMPLE = 8


@dataclass(frozen=True)
class Need:
    """One destination of the option a requirement is enforced with, as the matrix states it."""

    role: str
    sources: tuple  # ip networks
    ports: tuple[PortRange, ...]
    app: Optional[str] = None  # tls | http: a name; None: addresses
    name: str = ""  # lower case: a host, or '*.x'
    transport: str = "tcp"  # addresses
    network: Optional[ipaddress.IPv4Network | ipaddress.IPv6Network] = None  # addresses; None with no name: any address

    @property
    def apex(self) -> str:
        return self.name[2:] if self.name.startswith("*.") else ""

    @property
    def target(self) -> str:
        """The domain-list target: '.x' for '*.x'."""
        return self.name[1:] if self.apex else self.name

    def covers_name(self, host: str) -> bool:
        return host.endswith("." + self.apex) if self.apex else host == self.name

    def on_port(self, port: int) -> bool:
        return any(r.contains(port) for r in self.ports)

    def from_source(self, source: str) -> bool:
        address = ipaddress.ip_address(source)
        return any(address in network for network in self.sources)


def _expressible(option: ResolvedAlternative) -> bool:
    """AWS expresses names for HTTP/TLS ('*.x' only as a whole first label) and addresses; the compiler takes the first."""
    if option.protocol in APP and option.kind in ("fqdn", "wildcard"):
        return all("*" not in d or (d.startswith("*.") and d.count("*") == 1) for d in option.destinations)
    return option.kind in ("ip", "cidr", "any")


def needs(catalog, profile, requirements) -> list[Need]:
    out = []
    for req in enforced(catalog, profile, requirements):
        option = next(o for o in req.options() if _expressible(o))
        sources = tuple(ipaddress.ip_network(s, strict=False) for s in req.sources)
        for destination in option.destinations:
            if option.kind in ("fqdn", "wildcard"):
                out.append(Need(req.role, sources, option.ports, app=APP[option.protocol], name=destination.lower()))
            else:
                network = None if option.kind == "any" else ipaddress.ip_network(destination, strict=False)
                out.append(Need(req.role, sources, option.ports, transport="udp" if option.protocol == "udp" else "tcp", network=network))
    return out


def _address_passes(need: Need, probe: Probe) -> bool:
    """A 5-tuple pass: any name, on its transport, to its addresses and ports."""
    return need.transport == "tcp" and (need.network is None or DESTINATION in need.network) and need.on_port(probe.port)


def required(all_needs: list[Need], probe: Probe) -> bool:
    """The matrix asks for this probe: its role needs this name (or a wildcard above it) over this protocol and port."""
    host = probe.host.lower()
    return any(n.from_source(probe.source) and (n.covers_name(host) and n.app == probe.protocol and n.on_port(probe.port)
                                                if n.app else _address_passes(n, probe)) for n in all_needs)


def expected(form: str, all_needs: list[Need], probe: Probe) -> str:
    if required(all_needs, probe):
        return "pass"
    if form == "suricata":
        return "drop"
    host = probe.host.lower()
    listed = any(n.app == probe.protocol and n.from_source(probe.source) and (n.covers_name(host) or host == n.apex) for n in all_needs)
    return "pass" if listed else "drop"


def _inside(sources: tuple) -> str:
    network = next(n for n in sources if n.version == 4)  # scapy's probes are IPv4
    return str(network.network_address + 5) if network.num_addresses > 8 else str(network.network_address)


def _sibling(host: str) -> str:
    return "zz." + host.split(".", 1)[1] if "." in host else "zz" + host


def _sampled(all_needs: list[Need]) -> set[int]:
    """The needs that also get the near misses whose outcome depends on the list or the role, not on the name: the
    first of each (role, protocol, exact or wildcard), and every SAMPLE-th (the pcap costs ~6 ms a probe)."""
    first: dict[tuple, int] = {}
    for i, need in enumerate(all_needs):
        if need.app:
            first.setdefault((need.role, need.app, bool(need.apex)), i)
    return set(first.values()) | {i for i, need in enumerate(all_needs) if need.app and i % SAMPLE == 0}


def probes(all_needs: list[Need]) -> dict[Probe, str]:
    """Every probe, with why it is there (the first reason, when two generate the same probe)."""
    out: dict[Probe, str] = {}
    role_source = {n.role: _inside(n.sources) for n in all_needs}
    sampled = _sampled(all_needs)
    for i, need in enumerate(all_needs):
        if not need.app:
            continue
        app, source = need.app, role_source[need.role]
        ports = list(dict.fromkeys(p for r in need.ports for p in (r.start, r.end)))
        hosts = [f"a.{need.apex}", f"a.b.{need.apex}"] if need.apex else [need.name]
        host, port = hosts[0], ports[0]
        ungiven = next((p for p in UNGIVEN_PORTS[app] if not need.on_port(p)), None)

        def add(why: str, name: str, on: int = port, protocol: str = app, src: str = source) -> None:
            out.setdefault(Probe(protocol, name, on, src), why)

        for name in hosts:
            for p in ports:
                add("required", name, p)
        if need.apex:
            add("apex of the wildcard", need.apex)
            if need.apex.count(".") >= 2:
                add("parent of the wildcard", need.apex.split(".", 1)[1])
            add("sibling", f"a.{_sibling(need.apex)}")
            add("prefix attack", "x" + need.apex)
            if ungiven is not None:
                add("apex on a port the matrix does not give", need.apex, ungiven)
        else:
            add("sibling", _sibling(host))
            add("prefix attack", "x" + host)
        add("suffix attack", host + ".evil.test")
        add("upper case", host.upper())
        if ungiven is not None:
            add("port the matrix does not give", host, ungiven)
        if i in sampled:
            if not need.apex:
                add("child of an exact host", "a." + host)
            add("other protocol", host, DEFAULT_PORT[OTHER_APP[app]], OTHER_APP[app])
            for role, other in role_source.items():
                if role != need.role:
                    add("another role's source", host, src=other)
            add("source outside every role", host, src=OUTSIDE)
    return out


@dataclass
class Case:
    form: str
    plan: AwsPlan
    needs: list[Need]
    probes: dict[Probe, str]
    verdicts: dict[Probe, str]


@pytest.fixture(scope="module", params=CASES, ids=[f"{name}-{form}" for name, form in CASES])
def case(request, tmp_path_factory) -> Case:
    """One replay per (stack, form), shared by the tests below."""
    name, form = request.param
    catalog, profile, requirements = STACKS[name](form)
    plan = compile_aws(catalog, profile, requirements)
    all_needs = needs(catalog, profile, requirements)
    generated = probes(all_needs)
    verdicts = replay(render(plan)["aws/rules.suricata"], list(generated), tmp_path_factory.mktemp(f"{name}-{form}"))
    return Case(form, plan, all_needs, generated, verdicts)


def _kinds(allows: str) -> set[str]:
    """'the apex x; every port, not only 443' -> {'apex', 'port'}."""
    kinds = {"apex" if part.startswith("the apex ") else "port" if part.startswith("every port") else part for part in allows.split("; ")}
    assert kinds <= {"apex", "port"}, f"a broadening this test does not know: {allows}"
    return kinds


def _describe(probe: Probe) -> str:
    return f"{probe.protocol} {probe.host}:{probe.port} from {probe.source}"


@pytest.mark.engine
@needs_suricata
def test_replay_passes_exactly_what_the_form_promises(case):
    want = {probe: expected(case.form, case.needs, probe) for probe in case.probes}
    wrong = [f"  {why}: {_describe(p)}: expected {want[p]}, got {case.verdicts[p]}" for p, why in case.probes.items() if case.verdicts[p] != want[p]]
    assert not wrong, f"{len(wrong)} of {len(want)} probes ({case.form}):\n" + "\n".join(wrong)
    reasons = set(case.probes.values())
    assert {"required", "sibling", "prefix attack", "suffix attack", "upper case", "port the matrix does not give", "other protocol",
            "source outside every role"} <= reasons
    if any(n.apex for n in case.needs):
        assert {"apex of the wildcard", "parent of the wildcard", "apex on a port the matrix does not give"} <= reasons
    if len({n.role for n in case.needs}) > 1:
        assert "another role's source" in reasons
    near_misses = [want[p] for p, why in case.probes.items() if why != "required"]
    assert "pass" in near_misses and "drop" in near_misses  # some collide with required names (a wildcard's parent)


@pytest.mark.engine
@needs_suricata
def test_required_hosts_from_outside_every_role_drop(case):
    outside = {p: v for p, v in case.verdicts.items() if p.source == OUTSIDE}
    assert outside and all(any(required(case.needs, replace(p, source=_inside(n.sources))) for n in case.needs) for p in outside)
    assert set(outside.values()) == {"drop"}, [_describe(p) for p, v in outside.items() if v == "pass"]


@pytest.mark.engine
@needs_suricata
def test_what_passes_beyond_the_requirements_is_exactly_the_broadening(case):
    """Each extra pass is a broadening entry of its target (the apex, every port), and each entry is seen in the replay."""
    extras = [p for p, v in case.verdicts.items() if v == "pass" and not required(case.needs, p)]
    listed = {(b.role, b.target_type, b.target.lower()): _kinds(b.allows) for b in case.plan.broadening if b.allows}
    if case.form == "suricata":
        assert not extras and not listed, ([_describe(p) for p in extras], listed)
        return
    seen, unexplained = set(), []
    for probe in extras:
        host = probe.host.lower()
        mine = [n for n in case.needs if n.app == probe.protocol and n.from_source(probe.source)]
        # A required name on a port its requirements do not give: 'every port' of a target that covers the name.
        # Otherwise the apex of a required wildcard: 'the apex', and 'every port' too when off the wildcard's ports.
        candidates = [n for n in mine if n.covers_name(host)]
        kinds = {"port"}
        if not candidates:
            candidates = [n for n in mine if host == n.apex]
            kinds = {"apex"} | ({"port"} if not any(n.on_port(probe.port) for n in candidates) else set())
        for kind in sorted(kinds):
            targets = {(n.role, TARGET_TYPE[n.app], n.target) for n in candidates}
            explained = {(*target, kind) for target in targets if kind in listed.get(target, ())}
            if not explained:
                unexplained.append(f"  {case.probes[probe]}: {_describe(probe)}: no '{kind}' entry for any of {sorted(n.target for n in candidates)}")
            seen |= explained
    assert not unexplained, "passes beyond the requirements that plan.broadening does not list:\n" + "\n".join(unexplained)
    unseen = sorted((*target, kind) for target, kinds in listed.items() for kind in kinds if (*target, kind) not in seen)
    assert not unseen, f"broadening no probe exercised: {unseen}"
