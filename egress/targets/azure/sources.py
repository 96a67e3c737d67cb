"""Where an Azure rule's traffic comes from (pure): a role's or a source group's CIDRs, and the IP Groups that carry
them (created, one per role or group with rules, named ``egress-<cluster>-<role or group>``, or given by
``azureIpGroupIds``), refused where Azure would refuse them or silently mix them up."""
from __future__ import annotations

import ipaddress
import re

from ...models import ROLES
from ...profile import Profile
from .plan import MAX_IP_GROUP_ADDRESSES, MAX_IP_GROUPS, MAX_NAME, NAME_PATTERN, AzureCompileError, ip_group_name


def is_ipv6(text: str) -> bool:
    try:
        return ipaddress.ip_network(text, strict=False).version == 6
    except ValueError:
        return False


def what(role: str, quoted: bool = True) -> str:
    """"role 'nodes'" or "source group 'payments'", for messages."""
    name = f"'{role}'" if quoted else role
    return f"role {name}" if role in ROLES else f"source group {name}"


def chain_order(role: str) -> tuple[bool, str]:
    """The order IP Groups are written in: the roles as before groups existed (by name), then the groups by name, so adding
    a group never moves a role's IP Group in the chain."""
    return (role not in ROLES, role)


def checked_name(name: str, kind: str, part: str = "") -> str:
    """``part``: the source group or own catalog the name carries besides the cluster's (the fix names it)."""
    if not re.match(NAME_PATTERN, name):
        shorter = ("egress-matrix:clusterName" if not part or part in ROLES else
                   f"egress-matrix:clusterName or the source group name '{part}' (egress-matrix:sourceGroups)" if kind == "IP Group" else
                   f"egress-matrix:clusterName or the catalog name '{part}'")
        raise AzureCompileError(f"{kind} name '{name}' ({len(name)} characters) is not a valid Azure name (1-{MAX_NAME} letters, digits, "
                                f"'_', '.', '-'). Fix: set a shorter {shorter}")
    return name


def sources_of(profile: Profile, role: str) -> tuple[str, ...]:
    """A role's or source group's CIDRs, refused where Azure cannot take them."""
    sources = profile.role_sources(role)
    ipv6 = [cidr for cidr in sources if is_ipv6(cidr)]
    if ipv6:
        raise AzureCompileError(f"{what(role)} has IPv6 sources ({', '.join(ipv6)}): Azure Firewall IP Groups and application rules "
                                f"take IPv4 only (firewall-known-issues.md). Fix: list only its IPv4 CIDRs in "
                                f"egress-matrix:{profile.source_setting(role)} for this target")
    if not sources:
        raise AzureCompileError(f"{what(role)} has rules but no source CIDRs. Fix: set egress-matrix:{profile.source_setting(role)} in the stack")
    return sources


def existing_ip_groups(profile: Profile, role_sources: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """azureIpGroupIds for the roles and groups with rules. A name that is neither a role nor a group of the stack is
    refused: a misspelt group would otherwise get an IP Group created and the given one silently ignored."""
    given = profile.azure_existing_ip_groups()
    unknown = sorted(name for name in given if name not in ROLES and name not in profile.source_groups)
    if unknown:
        raise AzureCompileError(f"egress-matrix:azureIpGroupIds names '{unknown[0]}', which is neither a role ({', '.join(ROLES)}) nor a "
                                f"source group of the stack ({', '.join(sorted(profile.source_groups)) or 'none declared'}). Fix: declare it "
                                "under egress-matrix:sourceGroups, or correct the name before '='")
    return {role: rid for role, rid in given.items() if role in role_sources}


def created_ip_groups(profile: Profile, role_sources: dict[str, tuple[str, ...]], existing: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """The IP Groups the component creates (none with azureIpGroups false), within Azure's limits."""
    if not profile.azure_ip_groups:
        return {}
    created = {role: cidrs for role, cidrs in role_sources.items() if role not in existing}
    for role, cidrs in created.items():
        name = checked_name(ip_group_name(profile.cluster, role), "IP Group", role)
        if len(cidrs) > MAX_IP_GROUP_ADDRESSES:
            raise AzureCompileError(f"IP Group {name} ({what(role)}) would hold {len(cidrs):,} addresses, over Azure's {MAX_IP_GROUP_ADDRESSES:,} "
                                    f"per IP Group. Fix: merge egress-matrix:{profile.source_setting(role)} into fewer, larger prefixes")
    if len(created) > MAX_IP_GROUPS:
        raise AzureCompileError(f"the stack would create {len(created)} IP Groups (one per role and source group with rules), over Azure's "
                                f"{MAX_IP_GROUPS} per firewall. Fix: merge source groups in egress-matrix:sourceGroups, or set "
                                "egress-matrix:azureIpGroups: false to write the sources inline")
    return created
