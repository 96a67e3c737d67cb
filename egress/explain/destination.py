"""``explain_destination``: which requirements need a destination, and which rule of each target decides it.

Each target is asked with its own semantics (``azure``, ``aws``, ``kubernetes`` here reuse the evaluators): for every
flow a matching requirement implies (its role's sources, its protocol, the port asked or its ports), or, when
nothing requires the destination, the flows a log line most likely shows (443 HTTPS, 80 HTTP, else the protocol the
same destination is required on, else TCP) for the roles the target enforces.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable, Mapping, Optional

from ..addresses import PortRange, format_ports, ports_contain
from ..models import Catalog, Requirement
from ..profile import Profile
from ..targets import TARGETS, target
from ..targets.guard import own_entry_origin
from . import aws, azure, kubernetes
from .model import ALLOWED, DENIED, NOT_ENFORCED, Decision, Explanation, ExplainError, Need, Outcome, Probe
from .query import check_port, check_role, how_needed, kind_of, nearest, needs, parse_destination_arg

JUDGES = {azure.NAME: azure.Judge, aws.NAME: aws.Judge, kubernetes.NAME: kubernetes.Judge}
_NAMES = ("fqdn", "wildcard", "url")


def judges(catalog: Catalog, profile: Optional[Profile], requirements: list[Requirement],
           artefacts_by_target: Mapping[str, Mapping[str, str]]) -> list[tuple[str, object, list[Requirement]]]:
    """(target, judge, the requirements it enforces) in the registry's order; without a profile, all of them."""
    for name in artefacts_by_target:
        target(name)  # an unknown target is an error naming the known ones
    out = []
    for name in TARGETS:
        if name in artefacts_by_target:
            enforced = TARGETS[name].enforced(catalog, profile, requirements) if profile is not None else requirements
            out.append((name, JUDGES[name](artefacts_by_target[name], catalog, enforced), enforced))
    return out


def origins(catalog: Catalog, profile: Optional[Profile]) -> Optional[Callable[[str], str]]:
    """Where an own entry is written (the stack key, or the catalog the stack lists), for explanations."""
    return None if profile is None else (lambda entry_id: own_entry_origin(catalog, profile, entry_id))


def _guesses(port: Optional[int], kind: str, same: list[Requirement]) -> list[tuple[str, PortRange]]:
    """(protocol, ports) to ask about a destination nothing requires as asked."""
    if port is not None:
        by_port = {443: "https", 80: "http"}.get(port) if kind in _NAMES else None
        protocols = [by_port] if by_port else sorted({r.protocol for r in same}) or ["tcp"]
        return [(p, PortRange(port, port)) for p in protocols]
    if same:
        return sorted({(r.protocol, rng) for r in same for rng in r.ports})
    return [("https", PortRange(443, 443)), ("http", PortRange(80, 80))] if kind in _NAMES else []


def _summary(outcome: Outcome) -> str:
    what = ", ".join(r.describe() for r in outcome.rules) or outcome.reason
    return f"{'allowed' if outcome.allowed else 'denied'}: {what}"


def _decide(judge, probe: Probe) -> Outcome:
    """The outcome for every source of the role: one, when they agree; else the first refusal, each source noted."""
    per_source = [(source, judge.decide(probe, source)) for source in probe.sources]
    first = per_source[0][1]
    if all(outcome == first for _, outcome in per_source):
        return first
    worst = next(outcome for _, outcome in per_source if not outcome.allowed)
    return Outcome(False, worst.rules, worst.reason, worst.notes + tuple(f"from {s}: {_summary(o)}" for s, o in per_source), worst.carried)


def _alternative(judge, req: Requirement, probe: Probe) -> Optional[tuple[Probe, Outcome]]:
    """The first other destination option of ``req`` the target allows (it may enforce an alternative, e.g. addresses)."""
    for option in req.options():
        for destination in option.destinations:
            if destination == probe.destination:
                continue
            ports = probe.ports if any(r.start <= probe.ports.start and probe.ports.end <= r.end for r in option.ports) else option.ports[0]
            other = Probe(probe.role, probe.sources, option.kind, destination, option.protocol, ports)
            outcome = _decide(judge, other)
            if outcome.allowed:
                return other, outcome
    return None


def _decision(name: str, judge, probe: Probe, req: Optional[Requirement], enforced_keys: set, roles: list[str]) -> Decision:
    enforced = req is None or req.key in enforced_keys

    def decided(outcome: Outcome, asked: Probe, notes: tuple[str, ...] = ()) -> Decision:
        verdict = ALLOWED if outcome.allowed else DENIED if outcome.carried else NOT_ENFORCED
        return Decision(name, asked.role, asked.destination, asked.protocol, str(asked.ports), verdict, req is not None, outcome.rules,
                        outcome.reason, notes + outcome.notes, enforced)

    base = Decision(name, probe.role, probe.destination, probe.protocol, str(probe.ports), NOT_ENFORCED, req is not None, enforced=False)
    if judge.missing:
        return replace(base, reason=judge.missing)
    if probe.role not in roles:
        held = f" (it enforces: {', '.join(roles)})" if roles else " (it enforces no requirement of this stack)"
        return replace(base, reason=f"{name} does not enforce role {probe.role} for this stack{held}")
    if not probe.sources:
        return replace(base, reason=f"role {probe.role} has no source CIDRs in the stack")
    notes: tuple[str, ...] = ()
    if not enforced:
        why = "its platforms, roles or protocols leave it out"
        if req.level != "required":  # a recommended/optional row the target cannot express is left out of it, with a note
            why += f", or it cannot express this {req.level} row ({name}/left-out.txt in the render says)"
        notes = (f"{name} does not enforce this requirement for this stack ({why})",)
    outcome = _decide(judge, probe)
    if not outcome.allowed and req is not None and outcome.carried:
        found = _alternative(judge, req, probe)
        if found:
            other, allowed = found
            return decided(allowed, other, notes + (f"{name} allows the alternative {other.destination} {other.protocol}/{other.ports} the "
                                                   f"matrix offers for {probe.destination}; {probe.destination} itself: {_summary(outcome)}",))
    return decided(outcome, probe, notes)


def _cluster_proxy_path(catalog: Catalog, profile: Profile, kind: str, destination: str, port: Optional[int],
                        matched: Iterable[Requirement] = ()) -> list[str]:
    """For a cluster whose proxy settings (clusterProxy) point at a proxy the stack does not deploy: per cluster proxy, does
    the destination go through it, direct because of an entry of the noProxy the distribution applies (Go clients'
    matching), or is it not reachable (egress/proxy_path.py decides, for explain and export alike)?"""
    from ..proxy_path import explain_lines, no_inspection_of, setups

    if not profile.cluster_proxy or not (profile.http_proxy or profile.https_proxy) or kind not in ("fqdn", "ip", "wildcard", "cidr", "url"):
        return []
    matched = list(matched)
    protocols = sorted({r.protocol for r in matched}) or [None]
    inspection = next((n for n in (no_inspection_of(catalog, r) for r in matched) if n is not None), None)
    lines = [line for protocol in protocols for line in explain_lines(catalog, profile, destination, kind, protocol, port, inspection)]
    users = {role for s in setups(catalog, profile) for role in s.roles} | set(profile.source_groups)
    for role in sorted({r.role for r in matched} - users):
        lines.append(f"role {role} does not use the cluster proxy (clusterProxy {', '.join(profile.cluster_proxy)}): its {destination} "
                     "goes direct, the firewall must allow it")
    return list(dict.fromkeys(lines))


def explain_destination(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement],
                        artefacts_by_target: Mapping[str, Mapping[str, str]], destination: str, port: Optional[int] = None,
                        role: Optional[str] = None) -> Explanation:
    """Which requirements need ``destination`` (``DESTINATION[:PORT]`` is accepted too) and what each target's rules do
    with it. ``artefacts_by_target``: target name -> what ``TARGETS[name].render(plan)`` (or ``.deployed``) returns."""
    requirements = list(requirements)
    destination, written = parse_destination_arg(destination)
    if port is not None:
        port = check_port(port, destination)
        if written is not None and written != port:
            raise ExplainError(f"destination '{destination}:{written}' and port {port} disagree. Fix: give the port once")
    port = port if port is not None else written
    role = check_role(role, profile.source_groups)
    kind = kind_of(destination)
    matched = needs(requirements, kind, destination, port, role)
    same = [req for req in requirements if how_needed(req, kind, destination)]
    guesses = _guesses(port, kind, same)

    def sources(of_role: str) -> tuple[str, ...]:
        return next((r.sources for r in requirements if r.role == of_role and r.sources), ()) or profile.role_sources(of_role)

    decisions: list[Decision] = []
    for name, judge, enforced in judges(catalog, profile, requirements, artefacts_by_target):
        roles = sorted({r.role for r in enforced})
        if matched:
            flows = {(req.role, req.protocol, rng): req for req, _ in matched
                     for rng in ([PortRange(port, port)] if port is not None else req.ports)}
        else:
            flows = {(r, protocol, rng): None for r in ([role] if role else roles) for protocol, rng in guesses}
        keys = {r.key for r in enforced}
        for (of_role, protocol, rng), req in sorted(flows.items(), key=lambda item: (item[0][0], item[0][1], item[0][2])):
            probe = Probe(of_role, sources(of_role), kind, destination, protocol, rng)
            decisions.append(_decision(name, judge, probe, req, keys, roles))
    notes = []
    if not matched and not guesses:
        notes.append("no port given and nothing requires this address: give DESTINATION:PORT to see which rule decides it")
    if kind in ("ip", "cidr"):
        tags = sorted({f"{r.destination} ({r.protocol}/{format_ports(r.ports)})" for r in requirements if r.kind == "service-tag"
                       and (port is None or ports_contain(r.ports, port)) and (role is None or r.role == role)})
        if tags:
            notes.append(f"whether {destination} belongs to service tag {', '.join(tags)} cannot be known offline")
    notes += _cluster_proxy_path(catalog, profile, kind, destination, port, [req for req, _ in matched])
    for expansion in catalog.expansions:
        if not expansion.contacted and expansion.host == destination.lower():
            implied = ", ".join(dict.fromkeys(i.destination for i in expansion.implies))
            notes.append(f"{destination} is only a name: no client connects to it; a pull of {destination}/... goes to the hosts it "
                         f"implies ({implied}; matrix/expansions.yaml): explain one of those")
    written = origins(catalog, profile)
    return Explanation(stack=profile.stack, destination=destination, kind=kind, port=port, role=role,
                       requirements=tuple(Need.of(req, how, written) for req, how in matched),
                       nearest=() if matched else tuple(nearest(requirements, kind, destination, port, role, written)),
                       decisions=tuple(decisions), notes=tuple(notes))
