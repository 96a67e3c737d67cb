"""Rules that change firewall resource in one update, where the write order may open a gap (``egress diff``; pure).

A rule is paired by what it allows, never by its text: a Network Firewall pass rule by its protocol, names or addresses
and ports (not its source variable, msg, metadata or SID, which all change when an entry gains a source group's
``role``); an Azure flow by its destination and transport port (an application rule's Https:443 is a network rule's
TCP:443); a security-group rule by its protocol, ports and CIDR. Its sources pair it across roles: a copy one resource
lost pairs with a copy another gained when their sources overlap (a source group inside the role it leaves), and none
pairs when a copy that stays on both sides, or the gaining resource's own old copy (replaced in the same write), already
covers those sources: the flow is allowed throughout (a role's addresses changing moves nothing).

- Network Firewall: into a rule group created in this change the move always opens a gap: the old group is rewritten
  without the rule while the new group is created, and only then is the policy this stack creates updated to reference
  it (a policy named in awsFirewallPolicyArn does not reference it at all).
- Azure Firewall: a flow leaving one rule collection group for another written later in the chain (the component writes
  a policy's groups one at a time in priority order, 3-5 minutes each): the removal lands first.
- Azure Firewall: a group taking the priority another group leaves in the same update (a policy's priorities are unique).
- Security groups: a rule leaving one group for another (into a group created in this change, no interface carries it).
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Iterable, Optional

RULE_GROUP = "aws:networkfirewall/ruleGroup:RuleGroup"
AWS_POLICY = "aws:networkfirewall/firewallPolicy:FirewallPolicy"
RCG = "azure-native:network:FirewallPolicyRuleCollectionGroup"
IP_GROUP = "azure-native:network:IpGroup"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SECURITY_GROUP_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
_RULE = re.compile(r"^(\w+)\s+(\S+)\s+(\S+|\[[^\]]*\])\s+(\S+)\s+(->|<>)\s+(\S+|\[[^\]]*\])\s+(\S+|\[[^\]]*\])\s*\((.*)\)\s*$")
_WHO = {"msg", "metadata", "sid", "rev"}  # options that name a rule, not what it allows
_APP_TRANSPORT = {"https": "TCP", "http": "TCP", "mssql": "TCP"}
_EVERYWHERE = ("*", "any", "0.0.0.0/0", "::/0")


@dataclass(frozen=True)
class Held:
    """One copy of a rule in one resource: what it allows, from which sources, and how to name it."""

    place: str
    what: str
    sources: frozenset[str]
    label: str


@dataclass(frozen=True)
class Moved:
    """Rules of one kind leaving ``old`` for ``new``."""

    type: str
    old: str
    new: str
    rules: tuple[str, ...]  # what moved: 'sid 123' (or 'sid 1 -> 2 (host)' when it changes), or an Azure flow


@dataclass(frozen=True)
class RuleMove:
    role: str
    rule: str
    old_group: str
    new_group: str
    new_role: str = ""  # the role or source group of the new group (another than ``role`` when the rule changes role)

    def line(self) -> str:
        role = self.role if self.new_role in ("", self.role) else f"{self.role} -> {self.new_role}"
        return f"{role} rule {self.rule}: {self.old_group} -> {self.new_group}"


# -- sources --------------------------------------------------------------------------------------------------------------

def _networks(sources: Iterable[str]) -> tuple[list, set[str]]:
    """(IP networks, the sources that are none: a tag, an unresolved name), '*' as every address."""
    nets, other = [], set()
    for source in sources:
        if source.lower() in _EVERYWHERE:
            nets += [ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")]
            continue
        try:
            nets.append(ipaddress.ip_network(source, strict=False))
        except ValueError:
            other.add(source)
    return nets, other


def _common(first: frozenset[str], second: frozenset[str]) -> tuple[list, set[str]]:
    """The sources both hold (CIDRs nest or are apart, so each nested pair gives its smaller)."""
    (a, a_other), (b, b_other) = _networks(first), _networks(second)
    nets = [x if x.subnet_of(y) else y for x in a for y in b if x.version == y.version and (x.subnet_of(y) or y.subnet_of(x))]
    return nets, a_other & b_other


def _covered(sources: tuple[list, set[str]], by: Iterable[frozenset[str]]) -> bool:
    nets, other = sources
    union_nets, union_other = [], set()
    for held in by:
        found, names = _networks(held)
        union_nets += found
        union_other |= names
    merged = [n for version in (4, 6) for n in ipaddress.collapse_addresses(x for x in union_nets if x.version == version)]
    return other <= union_other and all(any(n.version == m.version and n.subnet_of(m) for m in merged) for n in nets)


def _rank(old: Held, new: Held) -> tuple:
    """The lost copy a gained one pairs with first: the same sources, then sources holding the new ones, then any overlap."""
    nets, _ = _networks(new.sources)
    holds = _covered(_networks(new.sources), [old.sources]) and bool(nets or new.sources)
    return (old.sources != new.sources, not holds, old.place)


def pairs(before: Iterable[Held], after: Iterable[Held]) -> list[tuple[Held, Held]]:
    """(copy lost, copy gained) of each rule that changes resource for some sources; a copy staying on both sides that
    covers those sources leaves nothing to move."""
    grouped: dict[str, tuple[list[Held], list[Held]]] = {}
    for side, held in ((0, before), (1, after)):
        for copy in held:
            grouped.setdefault(copy.what, ([], []))[side].append(copy)
    out = []
    for what in sorted(grouped):
        old, new = grouped[what]
        old_keys, new_keys = {(h.place, h.sources) for h in old}, {(h.place, h.sources) for h in new}
        stay = [h.sources for h in old if (h.place, h.sources) in new_keys]
        lost = [h for h in old if (h.place, h.sources) not in new_keys]
        for gained in sorted((h for h in new if (h.place, h.sources) not in old_keys), key=lambda h: (h.place, sorted(h.sources))):
            # what its own resource held before covers too: the old copy is replaced by the new in one write
            cover = stay + [h.sources for h in lost if h.place == gained.place]
            found = [(lose, _common(lose.sources, gained.sources)) for lose in lost if lose.place != gained.place]
            found = [(lose, common) for lose, common in found if (common[0] or common[1]) and not _covered(common, cover)]
            if found:
                out.append((min(found, key=lambda f: _rank(f[0], gained))[0], gained))
    return out


def _moved(typ: str, found: list[tuple[Held, Held]], label=lambda old, new: old.label) -> list[Moved]:
    merged: dict[tuple[str, str], list[str]] = {}
    for old, new in found:
        merged.setdefault((old.place, new.place), []).append(label(old, new))
    return [Moved(typ, old, new, tuple(sorted(set(rules)))) for (old, new), rules in sorted(merged.items())]


# -- Network Firewall -----------------------------------------------------------------------------------------------------

def _variables(props: dict) -> dict[str, list[str]]:
    sets = (((props.get("ruleGroup") or {}).get("ruleVariables") or {}).get("ipSets")) or ()
    return {f"${s.get('key')}": list((s.get("ipSet") or {}).get("definitions") or ()) for s in sets if isinstance(s, dict)}


def _pass_rules(resource: dict, policy_variables: dict[str, list[str]]) -> list[Held]:
    props = resource.get("props") or {}
    text = (((props.get("ruleGroup") or {}).get("rulesSource") or {}).get("rulesString")) or ""
    variables = {**policy_variables, **_variables(props)}
    out = []
    for line in text.splitlines() if isinstance(text, str) else ():
        parsed = _RULE.match(line.strip())
        if parsed is None or parsed.group(1) != "pass":
            continue
        _, proto, source, source_port, direction, target, port, options = parsed.groups()
        kept = [o.strip() for o in options.split(";") if o.strip() and o.split(":", 1)[0].strip() not in _WHO]
        sid = re.search(r"\bsid:\s*(\d+)", options)
        names = re.findall(r'content:\s*"([^"]*)"', options)
        items = [s.strip() for s in source.strip("[]").split(",")]
        sources = [d for s in items for d in (variables.get(s, [s]) if s.startswith("$") else [s])]
        out.append(Held(resource["name"], f"pass {proto} {source_port} {direction} {target} {port} ({'; '.join(kept)})",
                        frozenset(sources), f"sid {sid.group(1) if sid else '?'}|{', '.join(names) or target}"))
    return out


def _nf_rules(snapshot: dict) -> list[Held]:
    policy = next((r for r in snapshot["resources"] if r["type"] == AWS_POLICY), None)
    sets = ((((policy or {}).get("props") or {}).get("firewallPolicy") or {}).get("policyVariables") or {}).get("ruleVariables") or ()
    variables = {f"${s.get('key')}": list((s.get("ipSet") or {}).get("definitions") or ()) for s in sets if isinstance(s, dict)}
    return [held for r in snapshot["resources"] if r["type"] == RULE_GROUP for held in _pass_rules(r, variables)]


def _sid_label(old: Held, new: Held) -> str:
    (was, what), now = old.label.split("|", 1), new.label.split("|", 1)[0]
    return was if was == now else f"{was} -> {now.removeprefix('sid ')} ({what})"


def sid_moves(base: dict, head: dict) -> list[Moved]:
    """Network Firewall pass rules that change rule group (by what they allow, for sources that overlap)."""
    return _moved(RULE_GROUP, pairs(_nf_rules(base), _nf_rules(head)), _sid_label)


# -- Azure Firewall -------------------------------------------------------------------------------------------------------

def _ip_groups(snapshot: dict) -> dict[str, list[str]]:
    """An IP Group's id or name (lower case) -> its addresses."""
    out: dict[str, list[str]] = {}
    for resource in snapshot["resources"]:
        props = resource.get("props") or {}
        if resource["type"] == IP_GROUP:
            for key in (props.get("id"), props.get("ipGroupsName"), props.get("name")):
                if key:
                    out[str(key).lower()] = list(props.get("ipAddresses") or ())
    return out


def _flows(resource: dict, ip_groups: Optional[dict[str, list[str]]] = None) -> list[Held]:
    """An Azure rule collection group's allowed flows, one per rule, destination and transport port."""
    ip_groups = ip_groups or {}
    out = []
    for collection in (resource.get("props") or {}).get("ruleCollections") or ():
        if str((collection.get("action") or {}).get("type", "Allow")).lower() != "allow":
            continue
        for rule in collection.get("rules") or ():
            groups = list(rule.get("sourceIpGroups") or ())
            sources = [a for g in groups for a in ip_groups.get(g.lower(), ip_groups.get(g.rsplit("/", 1)[-1].lower(), [g]))]
            sources += list(rule.get("sourceAddresses") or ())
            shown = ",".join([g.rsplit("/", 1)[-1] for g in groups] + list(rule.get("sourceAddresses") or ()))
            targets = [*(rule.get("targetFqdns") or ()), *(f"tag {t}" for t in rule.get("fqdnTags") or ()),
                       *(rule.get("destinationAddresses") or ()), *(rule.get("destinationFqdns") or ()),
                       *(g.rsplit("/", 1)[-1] for g in rule.get("destinationIpGroups") or ())]
            ports = [(str(p.get("protocolType")), str(p.get("port"))) for p in rule.get("protocols") or ()] or \
                    [(str(proto), str(port)) for proto in rule.get("ipProtocols") or () for port in rule.get("destinationPorts") or ()]
            for target in targets:
                for proto, port in ports:
                    transport = _APP_TRANSPORT.get(proto.lower(), proto.upper())
                    out.append(Held(resource["name"], f"{target} {transport}:{port}", frozenset(sources),
                                    f"{rule.get('ruleType')} {shown} -> {target} {proto}:{port}"))
    return out


def _rcgs(snapshot: dict) -> dict[str, dict]:
    return {r["name"]: r for r in snapshot["resources"] if r["type"] == RCG}


def _priority(resource: dict) -> int:
    value = (resource.get("props") or {}).get("priority")
    return value if isinstance(value, int) else 0


def _all_flows(snapshot: dict) -> list[Held]:
    ip_groups = _ip_groups(snapshot)
    return [held for resource in _rcgs(snapshot).values() for held in _flows(resource, ip_groups)]


def rcg_gaps(base: dict, head: dict) -> list[Moved]:
    """Flows leaving an Azure rule collection group for one the chain writes after it (the removal lands first)."""
    after = _rcgs(head)
    moves = _moved(RCG, pairs(_all_flows(base), _all_flows(head)))
    # the chain runs in the head's priority order; a group the head no longer has is deleted after every write
    return [m for m in moves if m.old in after and _priority(after[m.old]) < _priority(after[m.new])]


def priority_handovers(base: dict, head: dict) -> list[tuple[str, str, int]]:
    """(group taking a priority, group that held it, the priority): the taker is written while the other still holds it,
    when the holder comes later in the chain or is deleted at the end of the update."""
    before, after = _rcgs(base), _rcgs(head)
    held = {_priority(r): name for name, r in before.items()}
    out = []
    for name, resource in sorted(after.items()):
        priority = _priority(resource)
        holder = held.get(priority)
        if holder and holder != name and (holder not in after or _priority(after[holder]) > priority):
            out.append((name, holder, priority))
    return out


# -- security groups ------------------------------------------------------------------------------------------------------

def _role_sources(*snapshots: dict) -> dict[str, frozenset[str]]:
    """A role's or source group's sources, as the requirements give them (either side's: a role may lose its last one)."""
    out: dict[str, set[str]] = {}
    for snapshot in snapshots:
        for req in snapshot.get("requirements") or ():
            out.setdefault(req["role"], set()).update(req.get("sources") or ())
    return {role: frozenset(sources) for role, sources in out.items()}


def _sg_rules(snapshot: dict, sources: dict[str, frozenset[str]]) -> list[Held]:
    groups = {r["urn"]: r for r in snapshot["resources"] if r["type"] == SECURITY_GROUP}
    out = []
    for rule in snapshot["resources"]:
        group = groups.get(rule.get("parent") or "")
        if rule["type"] != SECURITY_GROUP_RULE or group is None:
            continue
        role = str((group["props"].get("tags") or {}).get("egress-matrix:role", ""))
        # a role the requirements do not name pairs only with itself
        out.append(Held(group["name"], rule["name"].removeprefix(group["name"] + "-"), sources.get(role) or frozenset({f"role {role}"}), role))
    return out


def rule_moves(base: dict, head: dict) -> list[RuleMove]:
    """Security-group rules that leave one group for another: the same protocol, ports and CIDR (the rule's name without
    its group's), in the same role's groups or in a source group's whose sources the old role's hold."""
    sources = _role_sources(base, head)
    return [RuleMove(old.label, old.what, old.place, new.place, new_role=new.label)
            for old, new in pairs(_sg_rules(base, sources), _sg_rules(head, sources))]
