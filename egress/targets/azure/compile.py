"""Compile a stack's requirements into an Azure Firewall Policy plan (pure; facts: reference/azure-firewall.md).

Layout: one rule collection group (RCG) per platform band, each with a network collection (priority 100,
evaluated first by Azure anyway) and an application collection (priority 200). Rules are merged by
(source role, protocol/ports [, destination family]) so each group holds the fewest rules; every list is
sorted, because each RCG is written as one PUT and order churn means a rewrite.

Destination choice per requirement: the narrowest alternative Azure can express.
- HTTP/HTTPS to an FQDN or a left-most ``*.`` wildcard -> application rule (never terminateTLS).
- IP / CIDR / service tag / ``*``, and every TCP/UDP requirement -> network rule.
- FQDNs in network rules only with the policy's DNS proxy on, never wildcards.
"""
from __future__ import annotations

import ipaddress
import json
from typing import Any, Iterable, Optional

from ...addresses import format_ports
from ...models import Catalog, Requirement, ResolvedAlternative
from ...profile import ROLE_SOURCE_KEYS, Profile
from .plan import (
    APPLICATION_COLLECTION_PRIORITY, FQDN_TAG, MAX_APP_RULE_PORT, MAX_RCG_BYTES, MAX_RCGS_PER_POLICY, NETWORK_COLLECTION_PRIORITY,
    PLATFORM_BANDS, ApplicationRule, AzureCompileError, AzurePlan, Choice, NetworkRule, RuleCollection, RuleCollectionGroup,
)
from .render import rcg_body


def _requirement_label(req: Requirement) -> str:
    return f"{req.role} -> {req.destination} {req.protocol}/{format_ports(req.ports)} (entries: {', '.join(req.entry_ids)})"


def _app_wildcard_ok(destination: str) -> bool:
    """Application rules take '*' only as the whole left-most label ('*.x.com'); 'md-*.x' is not expressible."""
    first = destination.split(".", 1)[0]
    return "*" not in destination or first == "*"


def _is_ipv6(text: str) -> bool:
    try:
        return ipaddress.ip_network(text, strict=False).version == 6
    except ValueError:
        return False


def _azure_form(option: ResolvedAlternative, dns_proxy: bool) -> tuple[Optional[str], str]:
    """('application' | 'network-address' | 'network-fqdn', '') or (None, why Azure cannot express this option, and the fix)."""
    single_ports = all(p.start == p.end for p in option.ports)
    if option.protocol in ("http", "https") and option.kind in ("fqdn", "wildcard"):
        if not all(_app_wildcard_ok(d) for d in option.destinations):
            return None, ("Azure application rules take '*' only as the whole left-most label. Fix: drop the entry's level from "
                          "egress-matrix:levels or add a supported alternative to the matrix entry")
        if single_ports and all(p.end <= MAX_APP_RULE_PORT for p in option.ports):
            return "application", ""
        if option.kind == "fqdn" and dns_proxy:
            return "network-fqdn", ""  # a port range: a TCP network rule to the FQDN keeps the whole range
        return None, (f"Azure application rules take single ports (up to {MAX_APP_RULE_PORT}), not {format_ports(option.ports)}, and "
                      "network rules take no wildcard FQDNs. Fix: give the exact host in the matrix or stack (with "
                      "egress-matrix:azureDnsProxy: true a network rule can carry the range), or allow its address")
    if option.kind in ("ip", "cidr") and any(_is_ipv6(d) for d in option.destinations):
        return None, ("this target emits IPv4 rules only: Azure Firewall IP Groups and application rules do not take IPv6 "
                      "(firewall-known-issues.md). Fix: give the destination's IPv4 address in the stack")
    if option.kind in ("ip", "cidr", "service-tag", "any"):
        return "network-address", ""
    if option.kind == "fqdn" and dns_proxy:
        return "network-fqdn", ""
    return None, ("network rules take FQDNs only with the policy's DNS proxy on. Fix: set egress-matrix:azureDnsProxy: true, "
                  "or give the destination as an IP/CIDR in the stack")


def _core_aks(req: Requirement, catalog: Catalog) -> bool:
    entries = [catalog.entry(entry_id) for entry_id in req.entry_ids]
    return all(e.platform == "aks" and e.feature is None for e in entries) and not req.via


def _band(platforms: Iterable[str]) -> str:
    known = [p for p in platforms if p in PLATFORM_BANDS]
    if not known:
        raise AzureCompileError(f"platform(s) {', '.join(platforms)} have no Azure priority band. Fix: add them to PLATFORM_BANDS in egress/targets/azure/plan.py")
    return min(known, key=PLATFORM_BANDS.__getitem__)


def _describe(purposes: Iterable[str]) -> str:
    text = "; ".join(sorted(set(purposes)))
    return text if len(text) <= 1024 else text[:1021] + "..."


def compile_azure(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement], source: str = "") -> AzurePlan:
    """The Azure Firewall plan for the requirements of the roles the stack enforces on Azure.
    ``source`` (e.g. "stacks/Pulumi.dev.yaml: stack 'dev'") prefixes error messages."""
    try:
        return _compile(catalog, profile, requirements)
    except AzureCompileError as exc:
        raise AzureCompileError(f"{source}: {exc}" if source else str(exc)) from None


def _compile(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement]) -> AzurePlan:
    roles = profile.azure_roles
    app: dict[tuple[str, str, tuple], dict[str, Any]] = {}
    net: dict[tuple[str, str, tuple, str, str], dict[str, Any]] = {}
    tag: dict[tuple[str, str], dict[str, Any]] = {}
    choices: list[Choice] = []
    for req in requirements:
        if req.role not in roles:
            continue
        band = _band(req.platforms)
        if profile.azure_fqdn_tag and req.protocol in ("http", "https") and req.kind in ("fqdn", "wildcard") and _core_aks(req, catalog):
            bucket = tag.setdefault((band, req.role), {"protocols": set(), "purposes": set()})
            bucket["protocols"].update((req.protocol.capitalize(), p.start) for p in req.ports)
            bucket["purposes"].update(req.purposes)
            continue
        options = req.options()
        forms = [(o, *_azure_form(o, profile.azure_dns_proxy)) for o in options]
        expressible = [(o, form) for o, form, _ in forms if form]
        if not expressible:
            reasons = "; ".join(f"{', '.join(o.destinations)} {o.protocol}/{format_ports(o.ports)}: {why}" for o, _, why in forms)
            raise AzureCompileError(f"requirement {_requirement_label(req)} cannot be expressed on Azure Firewall: {reasons}")
        option, form = expressible[0]
        first = options[0]
        if option != first:
            choices.append(Choice(requirement=_requirement_label(req), used=", ".join(option.destinations),
                                  reason=f"Azure cannot express {', '.join(first.destinations)} ({first.kind}) as configured"))
        if form == "application":
            protocols = tuple(sorted((option.protocol.capitalize(), p.start) for p in option.ports))
            bucket = app.setdefault((band, req.role, protocols), {"fqdns": set(), "purposes": set()})
            bucket["fqdns"].update(option.destinations)
        else:
            ip_protocol = "UDP" if option.protocol == "udp" else "TCP"
            ports = tuple(str(p) for p in option.ports)
            family = "fqdns" if form == "network-fqdn" else "addresses"
            bucket = net.setdefault((band, req.role, ports, ip_protocol, family), {"destinations": set(), "purposes": set()})
            bucket["destinations"].update(option.destinations)
        bucket["purposes"].update(req.purposes)

    groups = []
    for band in sorted({k[0] for k in [*app, *net, *tag]}, key=PLATFORM_BANDS.__getitem__):
        network_rules = [
            NetworkRule(name=f"{role}-{proto.lower()}-{'_'.join(ports)}-{family}", role=role, ip_protocols=(proto,),
                        destination_ports=ports, description=_describe(b["purposes"]),
                        **({"destination_fqdns": tuple(sorted(b["destinations"]))} if family == "fqdns"
                           else {"destination_addresses": tuple(sorted(b["destinations"]))}))
            for (b_band, role, ports, proto, family), b in net.items() if b_band == band
        ]
        application_rules = [
            ApplicationRule(name=f"{role}-{'_'.join(f'{p.lower()}-{n}' for p, n in protocols)}", role=role, protocols=protocols,
                            target_fqdns=tuple(sorted(b["fqdns"])), description=_describe(b["purposes"]))
            for (b_band, role, protocols), b in app.items() if b_band == band
        ]
        application_rules += [
            ApplicationRule(name=f"{role}-fqdn-tag-{FQDN_TAG.lower()}", role=role, protocols=tuple(sorted(b["protocols"])),
                            fqdn_tags=(FQDN_TAG,), description=_describe(b["purposes"]))
            for (b_band, role), b in tag.items() if b_band == band
        ]
        collections = []
        if network_rules:
            collections.append(RuleCollection(name=f"{band}-network", priority=NETWORK_COLLECTION_PRIORITY, rule_type="NetworkRule",
                                              rules=tuple(sorted(network_rules, key=lambda r: r.name))))
        if application_rules:
            collections.append(RuleCollection(name=f"{band}-application", priority=APPLICATION_COLLECTION_PRIORITY, rule_type="ApplicationRule",
                                              rules=tuple(sorted(application_rules, key=lambda r: r.name))))
        priority = profile.azure_priority_base + 100 * PLATFORM_BANDS[band]
        groups.append(RuleCollectionGroup(name=f"egress-{band}", platform=band, priority=priority, collections=tuple(collections)))

    used_roles = sorted({r.role for g in groups for c in g.collections for r in c.rules})
    role_sources = {}
    for role in used_roles:
        sources = profile.role_sources(role)
        ipv6 = [cidr for cidr in sources if _is_ipv6(cidr)]
        if ipv6:
            raise AzureCompileError(f"role '{role}' has IPv6 sources ({', '.join(ipv6)}): Azure Firewall IP Groups and application rules "
                                    f"take IPv4 only (firewall-known-issues.md). Fix: list only the role's IPv4 CIDRs in "
                                    f"egress-matrix:{ROLE_SOURCE_KEYS[role]} for this target")
        if not sources:
            raise AzureCompileError(f"role '{role}' has rules but no source CIDRs. Fix: set egress-matrix:{ROLE_SOURCE_KEYS[role]} in the stack")
        role_sources[role] = sources
    existing = {role: rid for role, rid in profile.azure_existing_ip_groups().items() if role in role_sources}
    created = {role: cidrs for role, cidrs in role_sources.items() if profile.azure_ip_groups and role not in existing}
    plan = AzurePlan(
        groups=tuple(groups), ip_groups=created, existing_ip_groups=existing, role_sources=role_sources,
        dns_proxy=profile.azure_dns_proxy, choices=tuple(choices),
        minimum_rules=len(app) + len(net) + len(tag),
        subscription_id=profile.azure_subscription_id, resource_group=profile.azure_resource_group,
    )
    _check_limits(plan, profile)
    return plan


def _check_limits(plan: AzurePlan, profile: Profile) -> None:
    if len(plan.groups) + len(profile.azure_existing_priorities) > MAX_RCGS_PER_POLICY:
        raise AzureCompileError(f"{len(plan.groups)} rule collection groups plus {len(profile.azure_existing_priorities)} existing exceed "
                                f"{MAX_RCGS_PER_POLICY} per policy. Fix: use a separate policy for some platforms")
    for group in plan.groups:
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
            f"/providers/Microsoft.Network/ipGroups/egress-{role}" for role in plan.ip_groups}


def fqdn_tag_members(catalog: Catalog, requirements: Iterable[Requirement]) -> dict[str, set[str]]:
    """What the AzureKubernetesService tag stands for: the core AKS FQDN requirements (Microsoft maintains the tag
    as 'all the FQDNs listed in outbound network and FQDN rules for AKS clusters'; add-ons are not in it)."""
    return {FQDN_TAG: {r.destination for r in requirements
                       if r.protocol in ("http", "https") and r.kind in ("fqdn", "wildcard") and _core_aks(r, catalog)}}


def check_deploy_settings(profile: Profile) -> None:
    """What deploying (not just compiling) needs from the stack."""
    if not profile.azure_resource_group:
        raise AzureCompileError("target 'azure' needs egress-matrix:azureResourceGroup (where the policy, its rule collection groups "
                                "and the IP Groups live). Fix: set it in the stack")
    if not profile.location:
        raise AzureCompileError("target 'azure' needs egress-matrix:location. Fix: set it in the stack")
