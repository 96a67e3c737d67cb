"""Compile a stack's requirements into an Azure Firewall Policy plan (pure; facts: reference/azure-firewall.md).

Layout: one rule collection group (RCG) per platform or own catalog, named ``egress-<cluster>-<platform>``, each with a
network collection (priority 100, evaluated first by Azure anyway) and an application collection (priority 200). One
rule per (platform, feature, role or source group, protocol/ports [, destination family]), named after them
(``aks-core-https``, ``aks-azure-monitor-tcp-443``, ``kkp-kubeone-bastion-https``, ``stack-core-payments-https``) with
the entry ids in its description, so a firewall log line names the requirement, and turning a feature on (or adding a
source group) adds its own rules and leaves the others byte-identical. Every list is sorted, because each RCG is
written as one PUT and order churn means a rewrite. Sources: sources.py (an IP Group per role and source group).

Destination choice per requirement: the narrowest alternative Azure can express.
- HTTP/HTTPS to an FQDN or a left-most ``*.`` wildcard -> application rule (never terminateTLS).
- IP / CIDR / service tag / ``*``, and every TCP/UDP requirement -> network rule.
- FQDNs in network rules only with the policy's DNS proxy on, never wildcards.
"""
from __future__ import annotations

import json
import re
from typing import Iterable, Optional

from ...addresses import format_ports
from ...catalog.vendor import AZURE_VENDOR_BANDS
from ...models import Catalog, Requirement, ResolvedAlternative
from ...profile import Profile
from .plan import (
    APPLICATION_COLLECTION_PRIORITY, FQDN_TAG, MAX_APP_RULE_PORT, MAX_DESCRIPTION, MAX_RCG_BYTES, MAX_RCGS_PER_POLICY,
    BAND_WIDTH, MAX_PRIORITY, NETWORK_COLLECTION_PRIORITY, ApplicationRule, AzureCompileError, AzurePlan, NetworkRule, RuleCollection,
    RuleCollectionGroup, group_name,
)
from ..naming import feature_parts, rule_stem
from ..options import Choice, LeftOut, choose, left_out, requirement_label, unexpressible
from .policy import policy_plan
from .sources import chain_order, checked_name, created_ip_groups, existing_ip_groups, is_ipv6, sources_of, what
from .render import rcg_body


def _app_wildcard_ok(destination: str) -> bool:
    """Application rules take '*' only as the whole left-most label ('*.x.com'); 'md-*.x' is not expressible."""
    first = destination.split(".", 1)[0]
    return "*" not in destination or first == "*"


def _azure_form(option: ResolvedAlternative, dns_proxy: bool) -> tuple[Optional[str], str]:
    """('application' | 'network-address' | 'network-fqdn', '') or (None, why Azure cannot express this option, and the fix)."""
    single_ports = all(p.start == p.end for p in option.ports)
    if option.protocol in ("http", "https") and option.kind in ("fqdn", "wildcard"):
        if not all(_app_wildcard_ok(d) for d in option.destinations):
            return None, ("Azure application rules take '*' only as the whole left-most label. Fix: add a supported alternative "
                          "to the matrix entry")
        if single_ports and all(p.end <= MAX_APP_RULE_PORT for p in option.ports):
            return "application", ""
        if option.kind == "fqdn" and dns_proxy:
            return "network-fqdn", ""  # a port range: a TCP network rule to the FQDN keeps the whole range
        return None, (f"Azure application rules take single ports (up to {MAX_APP_RULE_PORT}), not {format_ports(option.ports)}, and "
                      "network rules take no wildcard FQDNs. Fix: give the exact host in the matrix or stack (with "
                      "egress-matrix:azureDnsProxy: true a network rule can carry the range), or allow its address")
    if option.kind in ("ip", "cidr") and any(is_ipv6(d) for d in option.destinations):
        return None, ("this target emits IPv4 rules only: Azure Firewall IP Groups and application rules do not take IPv6 "
                      "(firewall-known-issues.md). Fix: give the destination's IPv4 address in the stack")
    if option.kind in ("ip", "cidr", "service-tag", "any"):
        return "network-address", ""
    if option.kind == "fqdn" and dns_proxy:
        return "network-fqdn", ""
    return None, ("network rules take FQDNs only with the policy's DNS proxy on. Fix: set egress-matrix:azureDnsProxy: true, "
                  "or give the destination as an IP/CIDR in the stack")


_VIA_ENTRY = re.compile(r"\(for ([^)]+)\)$")


def _tag_covers(req: Requirement, platform: str, feature: Optional[str], entry_ids: Iterable[str]) -> bool:
    """The AzureKubernetesService tag stands for the FQDNs of AKS's own outbound-rules article ('automatically
    updated'), HTTPS 443: a host an AKS core entry names itself. Add-ons, the Ubuntu/Windows update hosts on HTTP 80
    and hosts only a pull implies (``via``) are not in it."""
    implied_for = {m.group(1) for v in req.via if (m := _VIA_ENTRY.search(v))}
    return (platform == "aks" and feature is None and req.protocol == "https" and req.kind in ("fqdn", "wildcard")
            and tuple((p.start, p.end) for p in req.ports) == ((443, 443),) and any(i not in implied_for for i in entry_ids))


def left_out_of_azure(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement]) -> tuple[LeftOut, ...]:
    """The recommended and optional requirements of the enforced roles Azure cannot express (and the AzureKubernetesService
    tag does not stand for): left out of the plan and of ``enforced``, each with why."""
    entries = {entry.id: entry for entry in catalog.entries}
    roles = set(profile.enforced(profile.azure_roles))
    form_of = lambda o: _azure_form(o, profile.azure_dns_proxy)  # noqa: E731
    return tuple(note for req in requirements if req.role in roles
                 and not (profile.azure_fqdn_tag and any(_tag_covers(req, p, f, ids) for (p, f), ids in feature_parts(req, entries).items()))
                 and (note := left_out(req, form_of)) is not None)


def azure_band(catalog: Catalog, platform: str) -> int:
    """A platform's or own catalog's priority band: a vendor platform's comes from its file (0-19), own catalogs follow
    in the stack's order (its entries, its registries, then egress-matrix:catalogs as listed: append, never reorder)."""
    if platform in catalog.azure_bands:  # a vendor platform's, or an own catalog's pinned band
        return catalog.azure_bands[platform]
    if platform in catalog.own:
        pinned = {band for band in catalog.azure_bands.values() if band >= AZURE_VENDOR_BANDS}
        band = AZURE_VENDOR_BANDS
        for name in (n for n in catalog.own if n not in catalog.azure_bands):
            while band in pinned:
                band += 1
            if name == platform:
                return band
            band += 1
    raise AzureCompileError(f"platform {platform} has no Azure priority band. Fix: give matrix/{platform}.yaml an unused "
                            f"'azure_band:' (0-{AZURE_VENDOR_BANDS - 1})")


def _app_suffix(protocols: tuple[tuple[str, int], ...]) -> str:
    default = {"Http": 80, "Https": 443}
    if len(protocols) == 1 and protocols[0][1] == default[protocols[0][0]]:
        return protocols[0][0].lower()
    return f"{protocols[0][0].lower()}-{'_'.join(str(port) for _, port in protocols)}"


def _description(entry_ids: Iterable[str]) -> str:
    return f"egress-matrix entries: {', '.join(sorted(set(entry_ids)))}"


def _describe(rule_name: str, entry_ids: Iterable[str]) -> str:
    text = _description(entry_ids)
    if len(text) > MAX_DESCRIPTION:
        raise AzureCompileError(f"rule {rule_name}: its entry ids make a {len(text)}-character description, over {MAX_DESCRIPTION}. "
                                "Fix: split the feature in the matrix (in an own catalog: merge the entries that name the same destination)")
    return text


def compile_azure(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement], source: str = "") -> AzurePlan:
    """The Azure Firewall plan for the requirements of the roles the stack enforces on Azure (azureRoles) and of its source groups.
    ``source`` (e.g. "stacks/Pulumi.dev.yaml: stack 'dev'") prefixes error messages."""
    try:
        return _compile(catalog, profile, requirements)
    except AzureCompileError as exc:
        raise AzureCompileError(f"{source}: {exc}" if source else str(exc)) from None


# A bucket becomes one rule: (platform, feature, role, form, protocol/ports[, transport]) -> (destination -> the entry ids
# behind it, all its entry ids).
_Key = tuple[str, Optional[str], str, str, tuple]
_Bucket = tuple[dict[str, set[str]], set[str]]


def _bucket_key(platform: str, feature: Optional[str], req: Requirement, option: ResolvedAlternative, form: str) -> _Key:
    if form == "application":
        return (platform, feature, req.role, "application", tuple(sorted((option.protocol.capitalize(), p.start) for p in option.ports)))
    transport = "UDP" if option.protocol == "udp" else "TCP"
    family = "fqdns" if form == "network-fqdn" else "addresses"
    return (platform, feature, req.role, family, (transport, tuple(str(p) for p in option.ports)))


def _rules(key: _Key, bucket: _Bucket, own: bool) -> list[ApplicationRule | NetworkRule]:
    """A bucket's rule. An own catalog may hold hundreds of entries for one group, more ids than one description takes:
    its bucket is split, by destination in sorted order, into parts (the first keeps the name, then '-part-2', ...), each
    naming its own entries. A vendor (platform, feature) never is: the matrix is split by feature instead."""
    owners, entry_ids = bucket
    if not own or not owners or len(_description(entry_ids)) <= MAX_DESCRIPTION:
        return [_rule(key, set(owners), entry_ids)]
    parts: list[tuple[set[str], set[str]]] = [(set(), set())]
    for destination in sorted(owners):
        if parts[-1][0] and len(_description(parts[-1][1] | owners[destination])) > MAX_DESCRIPTION:
            parts.append((set(), set()))
        parts[-1][0].add(destination)
        parts[-1][1].update(owners[destination])
    return [_rule(key, destinations, ids, number) for number, (destinations, ids) in enumerate(parts, 1)]


def _rule(key: _Key, destinations: set[str], entry_ids: set[str], part: int = 1) -> ApplicationRule | NetworkRule:
    platform, feature, role, form, spec = key
    stem = rule_stem(platform, feature, role)
    suffix = f"-part-{part}" if part > 1 else ""
    if form == "tag":
        name = f"{stem}-https-fqdn-tag"
        return ApplicationRule(name=name, role=role, protocols=(("Https", 443),), fqdn_tags=(FQDN_TAG,), description=_describe(name, entry_ids))
    if form == "application":
        name = f"{stem}-{_app_suffix(spec)}{suffix}"
        return ApplicationRule(name=name, role=role, protocols=spec, target_fqdns=tuple(sorted(destinations)), description=_describe(name, entry_ids))
    transport, ports = spec
    name = f"{stem}-{transport.lower()}-{'_'.join(ports)}" + ("-fqdns" if form == "fqdns" else "") + suffix
    destination = {"destination_fqdns" if form == "fqdns" else "destination_addresses": tuple(sorted(destinations))}
    return NetworkRule(name=name, role=role, ip_protocols=(transport,), destination_ports=ports, description=_describe(name, entry_ids), **destination)


def _compile(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement]) -> AzurePlan:
    entries = {entry.id: entry for entry in catalog.entries}
    enforced = set(profile.enforced(profile.azure_roles))
    buckets: dict[_Key, _Bucket] = {}
    choices: list[Choice] = []
    requirements = list(requirements)
    notes = left_out_of_azure(catalog, profile, requirements)
    leave_out = {note.requirement for note in notes}
    form_of = lambda o: _azure_form(o, profile.azure_dns_proxy)  # noqa: E731
    for req in requirements:
        if req.role not in enforced or requirement_label(req) in leave_out:
            continue
        parts = feature_parts(req, entries)
        chosen: Optional[tuple[ResolvedAlternative, str]] = None
        for (platform, feature), entry_ids in sorted(parts.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
            azure_band(catalog, platform)
            if profile.azure_fqdn_tag and _tag_covers(req, platform, feature, entry_ids):
                key: _Key = (platform, feature, req.role, "tag", ())
                destinations: tuple[str, ...] = ()
            elif req.level != "required" and unexpressible(req, form_of):
                continue  # the tag stands for it in another of its parts; this part cannot add it
            else:
                chosen = chosen or choose(req, form_of, "Azure Firewall", AzureCompileError, choices)
                key, destinations = _bucket_key(platform, feature, req, *chosen), chosen[0].destinations
            bucket = buckets.setdefault(key, ({}, set()))
            for destination in destinations:
                bucket[0].setdefault(destination, set()).update(entry_ids)
            bucket[1].update(entry_ids)

    groups = []
    # An own catalog whose entries have all expired keeps its (empty) group: deleting it would be refused by protection,
    # blocking every later update of the stack; removing the entries from the stack is the deliberate deletion.
    expired = {entry_id.partition("/")[0] for entry_id in catalog.expired} & set(catalog.own)
    for platform in sorted({key[0] for key in buckets} | expired, key=lambda p: azure_band(catalog, p)):
        rules = [rule for key, bucket in buckets.items() if key[0] == platform for rule in _rules(key, bucket, platform in catalog.own)]
        _check_unique_names(platform, rules)
        network = sorted((r for r in rules if isinstance(r, NetworkRule)), key=lambda r: r.name)
        application = sorted((r for r in rules if isinstance(r, ApplicationRule)), key=lambda r: r.name)
        collections = []
        if network:
            collections.append(RuleCollection(name=f"{platform}-network", priority=NETWORK_COLLECTION_PRIORITY, rule_type="NetworkRule", rules=tuple(network)))
        if application:
            collections.append(RuleCollection(name=f"{platform}-application", priority=APPLICATION_COLLECTION_PRIORITY, rule_type="ApplicationRule",
                                              rules=tuple(application)))
        groups.append(RuleCollectionGroup(name=checked_name(group_name(profile.cluster, platform), "rule collection group", platform if platform in catalog.own else ""), platform=platform,
                                          priority=profile.azure_priority_base + BAND_WIDTH * azure_band(catalog, platform), collections=tuple(collections)))

    role_sources = {role: sources_of(profile, role) for role in sorted({r.role for g in groups for c in g.collections for r in c.rules}, key=chain_order)}
    existing = existing_ip_groups(profile, role_sources)
    created = created_ip_groups(profile, role_sources, existing)
    plan = AzurePlan(
        cluster=profile.cluster, groups=tuple(groups), ip_groups=created, existing_ip_groups=existing, role_sources=role_sources,
        dns_proxy=profile.azure_dns_proxy, policy=policy_plan(profile), choices=tuple(choices), left_out=notes, minimum_rules=len(buckets),
        subscription_id=profile.azure_subscription_id, resource_group=profile.azure_resource_group,
    )
    _check_limits(plan, profile)
    return plan


def _check_unique_names(platform: str, rules: list[ApplicationRule | NetworkRule]) -> None:
    """Names are platform-feature-role-ports: a feature and a source group can run together into another's name (an own
    catalog's feature 'core-payments' for nodes, its unfeatured entries for the group 'payments'); Azure refuses the PUT."""
    seen: dict[str, ApplicationRule | NetworkRule] = {}
    for rule in rules:
        other = seen.setdefault(rule.name, rule)
        if other is not rule:
            raise AzureCompileError(f"two rules of {platform} would both be named {rule.name}: one for {what(other.role)} "
                                    f"({other.description}), one for {what(rule.role)} ({rule.description}). Fix: rename the feature or "
                                    "the source group so their names do not run together")


def _check_limits(plan: AzurePlan, profile: Profile) -> None:
    if len(plan.groups) + len(profile.azure_existing_priorities) > MAX_RCGS_PER_POLICY:
        raise AzureCompileError(f"{len(plan.groups)} rule collection groups plus {len(profile.azure_existing_priorities)} existing exceed "
                                f"{MAX_RCGS_PER_POLICY} per policy. Fix: use a separate policy for some platforms")
    for group in plan.groups:
        if group.priority > MAX_PRIORITY:
            raise AzureCompileError(f"rule collection group {group.name}: priority {group.priority} is over Azure's maximum {MAX_PRIORITY} "
                                    f"(azurePriorityBase {profile.azure_priority_base} + {BAND_WIDTH} x its band). Fix: lower egress-matrix:azurePriorityBase")
        if group.priority in profile.azure_existing_priorities:
            raise AzureCompileError(f"rule collection group {group.name}: priority {group.priority} clashes with a group already on the "
                                    "policy (egress-matrix:azureExistingPriorities). Fix: move egress-matrix:azurePriorityBase to a free band")
        size = len(json.dumps(rcg_body(group, plan, _size_probe_ids(plan)), separators=(",", ":")).encode())
        if size > MAX_RCG_BYTES:
            raise AzureCompileError(f"rule collection group {group.name} is {size:,} bytes, over Azure's 2 MB limit. "
                                    "Fix: enable the AzureKubernetesService FQDN tag (azureFqdnTag), or split the platform's features across stacks")


def _size_probe_ids(plan: AzurePlan) -> dict[str, str]:
    # A realistic-length resource id per role, so the size check holds for the real body.
    return {role: "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/" + "r" * 90 +
            f"/providers/Microsoft.Network/ipGroups/{plan.ip_group_name(role)}" for role in plan.ip_groups}


def fqdn_tag_members(catalog: Catalog, requirements: Iterable[Requirement]) -> dict[str, set[str]]:
    """What the AzureKubernetesService tag is taken to stand for: the core AKS HTTPS FQDN requirements (Microsoft
    maintains it as 'all the FQDNs listed in outbound network and FQDN rules for AKS clusters'; add-ons are not in it,
    and no member list is published, so the evaluator reports this as an assumption)."""
    entries = {entry.id: entry for entry in catalog.entries}
    return {FQDN_TAG: {r.destination for r in requirements
                       if any(_tag_covers(r, platform, feature, ids) for (platform, feature), ids in feature_parts(r, entries).items())}}


def check_deploy_settings(profile: Profile) -> None:
    """What deploying (not just compiling) needs from the stack."""
    if not profile.azure_resource_group:
        raise AzureCompileError("target 'azure' needs egress-matrix:azureResourceGroup (where the policy, its rule collection groups "
                                "and the IP Groups live). Fix: set it in the stack")
    if not profile.location:
        raise AzureCompileError("target 'azure' needs egress-matrix:location. Fix: set it in the stack")
