"""Azure Firewall: which rule of the rule collection groups decides a flow, and every rule with the entries it names.

The evaluator's own reading is reused (``targets/azure/evaluate.py``): the rules in Azure's processing order (network
rules first, then application rules, each by group, collection and rule order; a parent policy's before the child's),
and the first one that matches decides. A rule is named as the AZFW* log tables name it: rule collection group,
rule collection, rule.
"""
from __future__ import annotations

import json
from typing import Callable, Iterable, Mapping

from ..models import Catalog, Requirement
from ..targets.azure.compile import fqdn_tag_members
from ..targets.azure.evaluate import _covers, _first_match, _Rule, _rules
from ..targets.azure.matching import requirement_target
from ..targets.sets import AddressSet, parse_interval
from .model import Listed, Outcome, Probe, RuleRef

NAME = "azure"
DEFAULT_DENY = "no rule matches it: Azure Firewall's default deny"


def _load(artefacts: Mapping[str, str]) -> tuple[list[dict], list[dict], dict[str, list[str]]]:
    """(RCG bodies, a parent policy's RCG bodies, IP Group id -> addresses), read as ``evaluate`` reads them."""
    bodies, parents, ip_groups = [], [], {}
    for path, text in sorted(artefacts.items()):
        parts = path.split("/")
        if parts[0] != "azure" or not path.endswith(".json"):
            continue
        if len(parts) == 3 and parts[1] == "ip-groups":
            document = json.loads(text)
            ip_groups[document["id"]] = list(document["properties"]["ipAddresses"])
        elif len(parts) == 3 and parts[1] == "parent":
            parents.append(json.loads(text))
        elif len(parts) == 2:
            bodies.append(json.loads(text))
    return bodies, parents, ip_groups


def entry_ids(description: str) -> tuple[str, ...]:
    """The ids of ``egress-matrix entries: a, b, c``."""
    _, marker, listed = (description or "").partition("entries:")
    return tuple(i.strip() for i in listed.split(",") if i.strip()) if marker else ()


def rule_ref(rule: _Rule) -> RuleRef:
    parent = rule.label.startswith("parent/")
    group, collection, name = rule.label.removeprefix("parent/").split("/", 2)
    where = ((("parent policy " if parent else "") + "rule collection group", group), ("collection", collection), ("rule", name))
    return RuleRef(NAME, "network rule" if rule.network else "application rule", name, where, "allow" if rule.allow else "deny",
                   entry_ids(rule.body.get("description", "")))


class Judge:
    """The rendered (or deployed) rule collection groups, ready to decide flows."""

    name = NAME

    def __init__(self, artefacts: Mapping[str, str], catalog: Catalog, enforced: Iterable[Requirement]):
        bodies, parents, ip_groups = _load(artefacts)
        self.rules = _rules(parents, bodies, ip_groups)
        self.tag_members = fqdn_tag_members(catalog, list(enforced))
        self.missing = "" if bodies else "no rule collection group (azure/<group>.json) among the artefacts"

    def decide(self, probe: Probe, source: str) -> Outcome:
        interval = parse_interval(source)
        if interval is None:
            return Outcome(False, reason=f"source '{source}' is not an address")
        target = requirement_target(probe.kind, probe.destination)
        rule, (how, what) = _first_match(self.rules, interval, target, probe.protocol, probe.ports, self.tag_members)
        if rule is None:
            return Outcome(False, reason=DEFAULT_DENY)
        notes = ()
        if how == "fqdn":
            notes = (f"a network rule FQDN: Azure allows {what} by the address it resolves to (DNS proxy)",)
        elif how == "tag":
            notes = (f"by the FQDN tag {what}, taken to hold {probe.destination}: Microsoft publishes no member list",)
        return Outcome(rule.allow, (rule_ref(rule),), notes=notes)

    def inventory(self, requirements: list[Requirement]) -> list[Listed]:
        """Every rule, answering to its name, collection/rule, group/collection/rule, and its collection's and group's."""
        out = []
        for rule in self.rules:
            ref = rule_ref(rule)
            group, collection, name = (value for _, value in ref.where)
            out.append(Listed(ref, (name, f"{collection}/{name}", f"{group}/{collection}/{name}", collection, group), self._carried_by(rule)))
        return out

    def _carried_by(self, rule: _Rule) -> Callable[[Requirement], bool]:
        def carries(req: Requirement) -> bool:
            sources = AddressSet.parse(req.sources)
            return rule.allow and any(_covers(rule, sources, requirement_target(option.kind, d), option.protocol, rng, self.tag_members)
                                      for option in req.options() for d in option.destinations for rng in option.ports)
        return carries
