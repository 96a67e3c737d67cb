"""Judge what AWS runs: the Network Firewall's rules file and the security groups (rendered artefacts).

A flow is (one source CIDR of the requirement's role, destination, transport, the TLS/HTTP layer when the protocol is
https/http, one port range). A requirement is allowed when, for one of its options, every flow
- leaves through a security group of its role: an egress rule whose protocol and port range cover it and whose CIDR
  covers the destination (a name may resolve anywhere: only 0.0.0.0/0 covers it), and
- is passed by the firewall (``aws/rules.suricata``, when there is one): rules in strict order (groups by priority,
  rules in file order), the first rule that matches decides. A pass matches what it fully covers (source inside its
  sources, port range inside its ports, a name every ``tls.sni``/``http.host`` content matches, an address inside its
  destinations; ``$EXTERNAL_NET``/``any`` cover any destination); a drop or reject matches whatever it overlaps. No
  rule: the policy's default action, ``aws:drop_established`` (``aws/firewall-policy.json`` says so when the stack
  has a policy; otherwise it is assumed).
``extra``: what a pass rule or a security-group rule opens that no judged requirement needs: a domain list's apex,
its every-port match, names that only end the same way, addresses or ports nobody asks for.

Bounded time: a role may have thousands of sources and every rule repeats them. Only the firewall's rules depend on
the source, so each (port, destination) is walked through the rules once for all of a role's sources at a time
(``SourcePieces``: a bit per source), and the first failing flow is the one the per-source order would have met first.
A stack may have thousands of exact rules (source groups' own entries): a flow meets only the rules that can match it
(``RuleIndex``), in file order.
"""
from __future__ import annotations

import heapq
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable, Mapping, Optional

from ...models import Requirement
from ..options import requirement_label
from ..sets import SourcePieces, lowest
from ..verdict import Verdict
from .extra import extra_rules, extra_security_groups
from .matching import (NO_SOURCE, Flow, SecurityGroupRule, _covers_destination, _destination_flows, _flows, _overlaps_destination,
                       _security_groups, _sg_allows, _source_intervals, covers, overlaps)
from .rules import Rule, parse_rules

RULES_FILE = "aws/rules.suricata"
SECURITY_GROUPS_FILE = "aws/security-groups.json"
POLICY_FILE = "aws/firewall-policy.json"
DROPPING_DEFAULTS = {"aws:drop_established", "aws:drop_strict"}
DEFAULT_DROP = "no rule passes it (the policy's default action aws:drop_established)"


def _exact_name(rule: Rule) -> Optional[str]:
    """The one host a rule's names match (one ``startswith; endswith`` content, in the case the engine compares), or None."""
    if len(rule.names) != 1 or rule.opaque:
        return None
    match = rule.names[0]
    text = match.text.lower() if match.nocase else match.text
    if not (match.startswith and match.endswith) or (match.dotprefix and not text.startswith(".")):
        return None
    return text[1:] if match.dotprefix else text


@dataclass(frozen=True)
class RuleIndex:
    """The rules file in strict order, with the rules a flow can meet found without walking them all: a rule matching one
    exact host can cover or overlap only a flow to that host (or, as a drop, a flow to addresses, which its names do
    not rule out; or a wildcard flow, which gets every rule). Thousands of a source group's exact rules stay cheap."""

    rules: tuple[Rule, ...]
    general: tuple[int, ...]  # positions of the rules any flow may meet
    exact_blocks: tuple[int, ...]  # positions of the exact-host drops (they overlap a flow to addresses)
    by_name: dict[str, tuple[int, ...]]  # exact host -> positions of the rules matching only it

    @classmethod
    def of(cls, rules: Iterable[Rule]) -> "RuleIndex":
        rules = tuple(rules)
        general, blocks, by_name = [], [], {}
        for position, rule in enumerate(rules):
            if rule.to_client:
                continue  # matches no flow to a server
            host = _exact_name(rule)
            if host is None:
                general.append(position)
                continue
            by_name.setdefault(host, []).append(position)
            if rule.blocks:
                blocks.append(position)
        return cls(rules, tuple(general), tuple(blocks), {host: tuple(found) for host, found in by_name.items()})

    def meeting(self, flow: Flow) -> Iterable[Rule]:
        """The rules that may cover or overlap ``flow``, in file order."""
        if flow.subdomains_of:
            return self.rules
        others = self.by_name.get(flow.name, ()) if flow.name else self.exact_blocks
        return (self.rules[i] for i in heapq.merge(self.general, others))


def _firewall_failure(rules: RuleIndex, flow: Flow, pieces: SourcePieces) -> Optional[tuple[int, str]]:
    """Strict order for every source of ``pieces`` at once (``flow``'s own source is ignored): per source, the first pass
    that covers it or drop that overlaps it decides. The first source (index) not passed and why; None: all passed."""
    undecided, first = pieces.all, None
    for rule in rules.meeting(flow):
        if rule.allows:
            if _covers_destination(rule, flow):
                undecided &= ~pieces.covered_by(rule.sources)
        elif rule.blocks and _overlaps_destination(rule, flow):
            hits = undecided & pieces.overlapped_by(rule.sources)
            if hits:
                if first is None or lowest(hits) < first[0]:
                    first = (lowest(hits), f"denied by {rule.label}")
                undecided &= ~hits
        if not undecided:
            break
    if undecided and (first is None or lowest(undecided) < first[0]):
        first = (lowest(undecided), DEFAULT_DROP)
    return first


@lru_cache(maxsize=4)
def rules_of(text: str) -> tuple[Rule, ...]:
    """The rules file parsed once per content: the evaluator, the breadth check (allows.py) and a preview's coverage
    read the same file, which repeats a role's sources in every rule (megabytes with thousands of sources)."""
    return tuple(parse_rules(text))


def evaluate(artefacts: Mapping[str, str], requirements: Iterable[Requirement]) -> Verdict:
    rules = list(rules_of(artefacts[RULES_FILE])) if RULES_FILE in artefacts else None
    sg_rules = _security_groups(json.loads(artefacts[SECURITY_GROUPS_FILE])) if SECURITY_GROUPS_FILE in artefacts else []
    assumed = [f"{rule.label} is not judged ({rule.opaque}): as a pass it allows nothing here, as a drop it stops all it could"
               for rule in rules or () if rule.opaque]
    extra: list[str] = []
    if rules is not None:
        if POLICY_FILE in artefacts:
            policy = json.loads(artefacts[POLICY_FILE])["FirewallPolicy"]
            defaults = set(policy.get("StatefulDefaultActions", ()))
            if not defaults & DROPPING_DEFAULTS:
                extra.append(f"the firewall policy's default actions {sorted(defaults)} pass every flow no rule drops")
        else:
            assumed.append("the firewall policy that references these rule groups is STRICT_ORDER with the default action "
                           "aws:drop_established (the stack creates no policy)")
    requirements = list(requirements)
    pieces = _pieces_of()
    missing = []
    index = RuleIndex.of(rules) if rules is not None else None
    by_role: dict[str, list[SecurityGroupRule]] = {}
    for sg_rule in sg_rules:
        by_role.setdefault(sg_rule.role, []).append(sg_rule)
    for req in requirements:
        reasons = []
        role_groups = by_role.get(req.role, [])
        for option in req.options():
            flows = _destination_flows(option) if len(pieces(req)) else []
            why = _first_failure(req.role, flows, pieces(req), role_groups, index)
            if flows and not why:
                break
            reasons.append(why or "the role has no source CIDRs")
        else:
            missing.append(f"{requirement_label(req)}: {reasons[0]}")
    extra += extra_rules(rules or [], requirements, pieces) + extra_security_groups(sg_rules, requirements, rules is not None, pieces)
    return Verdict(missing=tuple(missing), extra=tuple(extra), rules_checked=len(rules or ()) + len(sg_rules), assumed=tuple(assumed))


def _pieces_of() -> Callable[[Requirement], SourcePieces]:
    """A requirement's parsed sources as ``SourcePieces``, one per distinct source list (its masks shared by all)."""
    by_value: dict[tuple[str, ...], SourcePieces] = {}
    by_id: dict[int, tuple[tuple[str, ...], SourcePieces]] = {}  # hashing thousands of sources per call costs more

    def pieces(req: Requirement) -> SourcePieces:
        known = by_id.get(id(req.sources))
        if known is None or known[0] is not req.sources:
            found = by_value.get(req.sources)
            if found is None:
                found = by_value[req.sources] = SourcePieces(_source_intervals(req.sources))
            known = by_id[id(req.sources)] = (req.sources, found)
        return known[1]

    return pieces


def _first_failure(role: str, flows: list[Flow], pieces: SourcePieces, role_groups: list[SecurityGroupRule],
                   rules: Optional[RuleIndex]) -> str:
    """Why the first flow that is not allowed fails, in the order sources, then ports and destinations (``flows``);
    '' when all are allowed. The security groups do not look at the source: one that fails fails the first source."""
    first: Optional[tuple[int, int, str]] = None  # (source index, flow index, why)
    for position, flow in enumerate(flows):
        if first is not None and first[0] == 0:
            break  # nothing later in the order comes before it
        if not any(_sg_allows(r, flow) for r in role_groups):
            found = (0, position, f"no security-group egress rule of role {role} allows {flow.describe()}")
        elif rules is not None and (failure := _firewall_failure(rules, flow, pieces)) is not None:
            found = (failure[0], position, f"{flow.describe()}: {failure[1]}")
        else:
            continue
        if first is None or found[:2] < first[:2]:
            first = found
    return first[2] if first else ""


__all__ = ["DROPPING_DEFAULTS", "NO_SOURCE", "POLICY_FILE", "RULES_FILE", "SECURITY_GROUPS_FILE", "Flow", "SecurityGroupRule", "_flows",
           "_security_groups", "_sg_allows", "covers", "evaluate", "overlaps", "rules_of"]
