"""``egress diff``: the rules inside a firewall resource as rule lines, and the rest of its inputs for the field walk
(pure).

A rule line names a rule (Azure collection/rule, a domain-list target, a Suricata sid, a squid.conf ``acl`` or
``http_access`` line) with its hosts, or a changed rule's words. Exactly those parts are left out of the field walk
(``residual``), nothing else: a collection's action and priority, a rule's sources, ports and protocols, a rule group's
type, target types and HOME_NET, and every other squid.conf line (``cache_peer``, ``never_direct``) still show as
fields. Rules whose order decides (squid.conf lines, Suricata rules) are compared as sequences: a copy more is a change,
and a new order of the rules both sides have is said first, whatever else changed (``diff_order``). Two rules with one
name (an Azure rule name twice in a collection, a sid twice) are the name and 'the name (copy 2)', each compared.
"""
from __future__ import annotations

import copy
from collections import Counter
from typing import Any, Optional

from .diff_delta import delta, lead, word_delta
from .diff_order import OrderChange, directive, order_change, squid_orders
from .diff_own import RuleGroups

AZURE_RCG = "azure-native:network:FirewallPolicyRuleCollectionGroup"
NFW_GROUP = "aws:networkfirewall/ruleGroup:RuleGroup"
HOST_KEYS = ("targetFqdns", "destinationFqdns", "destinationAddresses", "fqdnTags")
SQUID_RULES = ("acl", "http_access")


def _squid_rule(line: str) -> bool:
    return directive(line) in SQUID_RULES  # squid splits on any whitespace: 'http_access\tallow all' is an access line


def _squid_conf(props: dict) -> Optional[str]:
    data = props.get("data") if isinstance(props.get("data"), dict) else {}
    conf = data.get("squid.conf")
    return conf if isinstance(conf, str) else None


def _source(props: dict) -> dict:
    group = props.get("ruleGroup") if isinstance(props.get("ruleGroup"), dict) else {}
    source = group.get("rulesSource")
    return source if isinstance(source, dict) else {}


def _sid(line: str) -> str:
    return f"sid {line.split('sid:')[1].split(';')[0]}"


def rule_list(resource: dict) -> list[tuple[str, Any]]:
    """The named rules of a resource, in order, duplicates kept: (name, rule)."""
    props, typ = resource["props"], resource["type"]
    if typ == AZURE_RCG:
        return _copies([(f"{c.get('name')}/{r.get('name')}", r) for c in props.get("ruleCollections") or [] if isinstance(c, dict)
                        for r in c.get("rules") or [] if isinstance(r, dict)])
    if typ == NFW_GROUP:
        source = _source(props)
        if isinstance(source.get("rulesSourceList"), dict):
            return [(f"target {t}", t) for t in source["rulesSourceList"].get("targets") or []]
        return _copies([(_sid(line), line) for line in str(source.get("rulesString") or "").splitlines() if "sid:" in line])
    conf = _squid_conf(props)
    return [(line, line) for line in (conf or "").splitlines() if _squid_rule(line)]


def _copies(named: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """A name a second time is 'name (copy 2)': each copy is compared with the other side's copy of that number (a squid
    line is its own name, so its copies are equal and counted instead)."""
    seen: Counter = Counter()
    out = []
    for name, rule in named:
        seen[name] += 1
        out.append((name if seen[name] == 1 else f"{name} (copy {seen[name]})", rule))
    return out


def rules(resource: dict) -> dict[str, Any]:
    """The named rules of a resource by name (identical squid lines: the first)."""
    out: dict[str, Any] = {}
    for name, rule in rule_list(resource):
        out.setdefault(name, rule)
    return out


def rule_orders(old: dict, new: dict) -> list[OrderChange]:
    """A new order of the rules both sides have, independent of the rules added, removed or changed: squid's acl and
    http_access lines (directive by directive), a Suricata group's rules (dangerous in STRICT_ORDER, where the first
    match decides; in action order the action decides first)."""
    if _squid_conf(new["props"]) is not None and _squid_conf(old["props"]) is not None:
        return squid_orders([n for n, _ in rule_list(old)], [n for n, _ in rule_list(new)])
    if new["type"] != NFW_GROUP or "rulesString" not in _source(new["props"]) or "rulesString" not in _source(old["props"]):
        return []
    strict = "STRICT_ORDER" in (_rule_order(old), _rule_order(new))
    change = order_change([n for n, _ in rule_list(old)], [n for n, _ in rule_list(new)], "rule order", strict,
                          "STRICT_ORDER: the first match decides" if strict else "action order: the action decides first, then this order")
    return [change] if change is not None else []


def _rule_order(resource: dict) -> str:
    group = resource["props"].get("ruleGroup") if isinstance(resource["props"].get("ruleGroup"), dict) else {}
    options = group.get("statefulRuleOptions") if isinstance(group.get("statefulRuleOptions"), dict) else {}
    return str(options.get("ruleOrder") or "DEFAULT_ACTION_ORDER")


def hosts(rule: Any) -> list[str]:
    if not isinstance(rule, dict):
        return []
    return sorted({*rule.get("targetFqdns", []), *rule.get("destinationFqdns", []), *rule.get("destinationAddresses", []), *rule.get("fqdnTags", [])})


def _extra(names: list[str], other: Counter) -> list[str]:
    """The names beyond the copies ``other`` counts, in order (a multiset difference, linear)."""
    seen: Counter = Counter()
    out = []
    for name in names:
        seen[name] += 1
        if seen[name] > other[name]:
            out.append(name)
    return out


def _acl_pairs(added: list[str], removed: list[str]) -> list[tuple[str, str]]:
    """(removed, added) squid acl lines of one ACL and type, one of each: printed as the words that changed."""
    def key(line: str) -> str:
        return " ".join(line.split()[:3])
    one_added = Counter(key(a) for a in added if directive(a) == "acl")
    by_key: dict[str, list[str]] = {}
    for line in removed:
        if directive(line) == "acl":
            by_key.setdefault(key(line), []).append(line)
    return [(by_key[key(line)][0], line) for line in added
            if directive(line) == "acl" and one_added[key(line)] == 1 and len(by_key.get(key(line), ())) == 1]


def rule_lines(old: dict, new: dict, groups: Optional[RuleGroups] = None) -> list[str]:
    """The rule lines of a resource present on both sides: rules added, removed and changed, and a new order."""
    groups = groups or RuleGroups()
    old_headers, new_headers = groups.squid_headers(old), groups.squid_headers(new)
    before_list, after_list = rule_list(old), rule_list(new)
    before, after = rules(old), rules(new)
    names_before, names_after = [n for n, _ in before_list], [n for n, _ in after_list]
    added = _extra(names_after, Counter(names_before))
    removed = _extra(names_before, Counter(names_after))
    lines: list[str] = []
    paired = _acl_pairs(added, removed) if _squid_conf(new["props"]) is not None else []
    added, removed = _extra(added, Counter(now for _, now in paired)), _extra(removed, Counter(was for was, _ in paired))
    for was, now in paired:
        lines.append(f"~ {lead(was, now)}: {word_delta(' '.join(was.split()[3:]), ' '.join(now.split()[3:]))}"
                     + groups.suffix(now, new_headers))
    for name in sorted(added):
        found = hosts(after[name])
        lines.append(f"+ {name}" + (f" ({len(found)}: {', '.join(found[:8])}{', ...' if len(found) > 8 else ''})" if found else "")
                     + groups.suffix(after[name], new_headers))
    for name in sorted(removed):
        lines.append(f"- {name}" + groups.old.suffix(before[name], old_headers))
    for name in sorted(set(before) & set(after)):
        if before[name] != after[name]:
            was, now = before[name], after[name]
            if isinstance(was, str) and isinstance(now, str):  # a Suricata rule: its words
                detail = word_delta(was, now) if len(was.split()) > 1 and len(now.split()) > 1 else delta(was, now)
            else:
                more, gone = sorted(set(hosts(now)) - set(hosts(was))), sorted(set(hosts(was)) - set(hosts(now)))
                detail = "; ".join(filter(None, [f"+{', '.join(more)}" if more else "", f"-{', '.join(gone)}" if gone else ""]))
            lines.append(f"~ {name}" + (f" ({detail})" if detail else "") + groups.suffix(now, new_headers))
    return [change.line() for change in rule_orders(old, new)] + lines


def residual(old: dict, new: dict) -> tuple[dict, dict]:
    """Both sides' inputs without the parts rule lines show: every rule's hosts (Azure), the rules a side has and the
    other has not (their lines say so), the targets of a domain list, the sid lines of a Suricata group and the acl and
    http_access lines of a squid.conf."""
    return _residual(old, set(rules(new))), _residual(new, None)


def _residual(resource: dict, other_names: Optional[set[str]]) -> dict:
    """``other_names``: on the base side, the head's rule names (a rule the head no longer has is on its '-' line)."""
    props, typ = copy.deepcopy(resource["props"]), resource["type"]
    if typ == AZURE_RCG:
        seen: Counter = Counter()  # names as rule_list gives them (a second copy is 'name (copy 2)')
        for collection in props.get("ruleCollections") or []:
            if isinstance(collection, dict) and isinstance(collection.get("rules"), list):
                kept = []
                for rule in collection["rules"]:
                    if not isinstance(rule, dict):
                        kept.append(rule)
                        continue
                    name = f"{collection.get('name')}/{rule.get('name')}"
                    seen[name] += 1
                    if seen[name] > 1:
                        name = f"{name} (copy {seen[name]})"
                    if other_names is not None and name not in other_names:
                        continue  # removed: its '-' line says so; an added rule's sources and ports are still walked
                    kept.append({k: v for k, v in rule.items() if k not in HOST_KEYS})
                collection["rules"] = kept
        return props
    if typ == NFW_GROUP:
        source = _source(props)
        if isinstance(source.get("rulesSourceList"), dict):
            source["rulesSourceList"].pop("targets", None)
        elif isinstance(source.get("rulesString"), str):
            source["rulesString"] = "\n".join(line for line in source["rulesString"].splitlines() if "sid:" not in line)
        return props
    conf = _squid_conf(props)
    if conf is not None:
        props["data"]["squid.conf"] = "\n".join(line for line in conf.splitlines() if not _squid_rule(line))
    return props
