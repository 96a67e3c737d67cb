"""AWS: which Network Firewall rule (rule group, SID) and which security-group rule decide a flow, and every rule with
the entries it names.

The evaluator's own reading is reused (``targets/aws/evaluate.py``, ``rules.py``): a flow leaves through a
security-group egress rule of its role, then the firewall's rules run in strict order (groups by priority, rules in
file order) and the first pass that covers it or drop that overlaps it decides; no rule: the policy's default action.
"""
from __future__ import annotations

import json
import re
from typing import Callable, Iterable, Mapping, Optional

from ..models import Requirement
from ..targets.aws.evaluate import (DROPPING_DEFAULTS, POLICY_FILE, RULES_FILE, SECURITY_GROUPS_FILE, Flow, SecurityGroupRule, _flows,
                                    _security_groups, _sg_allows, covers, overlaps)
from ..targets.aws.rules import Rule, parse_rules
from ..targets.sets import IPV4_ALL, parse_interval
from .model import Listed, Outcome, Probe, RuleRef

NAME = "aws"
_ENTRY = re.compile(r"egress_entry\s+([a-z0-9/-]+)")  # an own entry's id holds its catalog: stack/stripe
_SID = re.compile(r"^(?:sid[:\s]*)?(\d+)$", re.IGNORECASE)
_PULUMI_SUFFIX = re.compile(r"-[0-9a-f]{7}$")  # Pulumi's auto-naming: the logical name plus '-' and 7 hex digits


def firewall_ref(rule: Rule) -> RuleRef:
    where = (("rule group", rule.group), ("sid", str(rule.sid))) + ((("msg", rule.msg),) if rule.msg else ())
    return RuleRef(NAME, "suricata rule", f"sid:{rule.sid}", where, "allow" if rule.allows else "deny" if rule.blocks else rule.action,
                   tuple(dict.fromkeys(_ENTRY.findall(rule.text))), rule.text)


def security_group_ref(rule: SecurityGroupRule) -> RuleRef:
    listed = rule.description.removeprefix("egress-matrix ")
    ids = tuple(i.strip() for i in re.sub(r"\s*\+\d+ more$", "", listed).split(",") if i.strip()) if rule.description.startswith("egress-matrix ") else ()
    return RuleRef(NAME, "security group rule", rule.group,
                   (("security group", rule.group), ("egress", f"{rule.protocol}/{rule.ports} to {rule.cidr_text}")), "allow", ids)


def probe_flow(probe: Probe, source: str) -> Optional[Flow]:
    """The evaluator's flow for a probe (``_flows``), or None when AWS cannot see the destination (a service tag)."""
    interval = parse_interval(source)
    if interval is None or probe.kind == "service-tag":
        return None
    transport = "udp" if probe.protocol == "udp" else "tcp"
    app = {"https": "tls", "http": "http"}.get(probe.protocol)
    if probe.kind in ("ip", "cidr"):
        return Flow(interval, transport, app, probe.ports, address=parse_interval(probe.destination))
    if probe.kind == "any":
        return Flow(interval, transport, app, probe.ports, address=IPV4_ALL)
    if probe.kind == "wildcard" and probe.destination.startswith("*."):
        return Flow(interval, transport, app, probe.ports, subdomains_of=probe.destination[2:].lower())
    return Flow(interval, transport, app, probe.ports, name=probe.destination.lower())


class Judge:
    """The rules file the engine runs and the security groups, ready to decide flows."""

    name = NAME

    def __init__(self, artefacts: Mapping[str, str], catalog: object = None, enforced: Iterable[Requirement] = ()):
        self.rules = parse_rules(artefacts[RULES_FILE]) if RULES_FILE in artefacts else None
        self.sg_rules = _security_groups(json.loads(artefacts[SECURITY_GROUPS_FILE])) if SECURITY_GROUPS_FILE in artefacts else []
        defaults = json.loads(artefacts[POLICY_FILE])["FirewallPolicy"].get("StatefulDefaultActions", ()) if POLICY_FILE in artefacts else None
        self.default_passes = defaults is not None and not set(defaults) & DROPPING_DEFAULTS
        self.default = (f"the firewall policy's default actions {', '.join(defaults)}" if defaults is not None
                        else "the default action aws:drop_established of the STRICT_ORDER policy the groups are meant for (assumed)")
        self.missing = "" if self.rules is not None or SECURITY_GROUPS_FILE in artefacts else \
            f"neither {RULES_FILE} nor {SECURITY_GROUPS_FILE} among the artefacts"

    def decide(self, probe: Probe, source: str) -> Outcome:
        flow = probe_flow(probe, source)
        if flow is None and probe.kind == "service-tag":
            return Outcome(False, reason="an Azure service tag means nothing on AWS", carried=False)
        if flow is None:
            return Outcome(False, reason=f"source '{source}' is not an address")
        through = next((r for r in self.sg_rules if r.role == probe.role and _sg_allows(r, flow)), None)
        if through is None:
            whose = f"of role {probe.role}" if probe.role else f"for source {source} (in none of the stack's roles)"
            return Outcome(False, reason=f"no security-group egress rule {whose} allows {flow.describe()} (security groups deny what "
                                         "no rule allows)")
        sg = security_group_ref(through)
        if self.rules is None:
            return Outcome(True, (sg,), notes=("no Network Firewall rules among the artefacts: the security group decides alone",))
        for rule in self.rules:
            if rule.allows and covers(rule, flow):
                return Outcome(True, (firewall_ref(rule), sg))
            if rule.blocks and overlaps(rule, flow):
                return Outcome(False, (firewall_ref(rule),))
        if self.default_passes:
            return Outcome(True, (sg,), reason=f"no rule matches it; {self.default} pass it")
        return Outcome(False, reason=f"no rule passes it: {self.default} drop it")

    def inventory(self, requirements: list[Requirement]) -> list[Listed]:
        out = []
        for rule in self.rules or ():
            ref = firewall_ref(rule)
            names = [f"sid:{rule.sid}", str(rule.sid), rule.group, rule.msg]
            if rule.msg and " " in rule.msg:
                names.append(rule.msg.split(" ", 1)[0])  # the Suricata form's 'kkp-core-https mcr.microsoft.com'
            note = "" if ref.entry_ids or not rule.allows else "a domain-list rule names no entries: the requirements it passes, found by matching"
            out.append(Listed(ref, tuple(n for n in names if n), _carried_by_rule(rule), note))
        for sg in self.sg_rules:
            ref = security_group_ref(sg)
            truncated = sg.description.rstrip().endswith("more")
            out.append(Listed(ref, (sg.group,), _carried_by_group(sg),
                              "its description is cut at 255 characters: the requirements it lets out, found by matching" if truncated else "",
                              ids_complete=not truncated))
        return out


def _carried_by_rule(rule: Rule) -> Callable[[Requirement], bool]:
    def carries(req: Requirement) -> bool:
        return rule.allows and any(covers(rule, f) for option in req.options() for f in _flows(req, option))
    return carries


def _carried_by_group(sg: SecurityGroupRule) -> Callable[[Requirement], bool]:
    def carries(req: Requirement) -> bool:
        return req.role == sg.role and any(_sg_allows(sg, f) for option in req.options() for f in _flows(req, option))
    return carries


def lookup_names(name: str) -> tuple[str, ...]:
    """What a name from a log may stand for: itself, a SID ('sid:5', 'sid 5', '5'), a rule group's ARN or its
    auto-named physical name (the logical name plus Pulumi's suffix)."""
    out = [name]
    sid = _SID.match(name.strip())
    if sid:
        out.append(f"sid:{int(sid.group(1))}")
    tail = name.rsplit("/", 1)[-1] if name.startswith("arn:") else name
    out += [tail, _PULUMI_SUFFIX.sub("", tail)]
    return tuple(dict.fromkeys(out))
