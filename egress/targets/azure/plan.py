"""The Azure Firewall plan: what the compiler decides, in the shape of Azure's rule collection groups (pure)."""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from ...errors import EgressError
from ...models import Strict
from ..options import Choice, LeftOut

# One rule collection group per platform or own catalog, at azurePriorityBase + BAND_WIDTH x its band; its network and
# application collections sit inside the group (Azure orders collections within a group by their own priorities).
BAND_WIDTH = 100
MAX_PRIORITY = 65000  # a rule collection group's priority: 100-65000 (REST model)
NETWORK_COLLECTION_PRIORITY = 100
APPLICATION_COLLECTION_PRIORITY = 200
MAX_RCG_BYTES = 2 * 1024 * 1024
MAX_RCGS_PER_POLICY = 50
MAX_IP_GROUPS = 200  # IP Groups per firewall (includes/firewall-limits.md)
MAX_IP_GROUP_ADDRESSES = 5000  # IPs/prefixes per IP Group (same page)
MAX_APP_RULE_PORT = 64000  # FirewallPolicyRuleApplicationProtocol.port maximum in the REST model
FQDN_TAG = "AzureKubernetesService"
# Azure's REST model sets no maximum for a rule's description; ours keeps it readable whole in the portal and in
# AZFW* log tooling. A (platform, feature) holds few enough entries that its ids stay well under this (tested).
MAX_DESCRIPTION = 1024
MAX_NAME = 80  # rule collection group and IP Group names: 1-80 characters (REST model)
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,78}[A-Za-z0-9_]$"


class AzureCompileError(EgressError):
    """The stack's requirements cannot be expressed on Azure Firewall as configured."""


class ApplicationRule(Strict):
    """One rule per (platform, feature, role, protocol/ports): its name says which, its description the entry ids."""

    name: str
    role: str  # a role or a source group
    protocols: tuple[tuple[Literal["Http", "Https"], int], ...]
    target_fqdns: tuple[str, ...] = ()
    fqdn_tags: tuple[str, ...] = ()
    description: str = ""


class NetworkRule(Strict):
    name: str
    role: str
    ip_protocols: tuple[Literal["TCP", "UDP"], ...]
    destination_ports: tuple[str, ...]
    destination_addresses: tuple[str, ...] = ()
    destination_fqdns: tuple[str, ...] = ()
    description: str = ""


class RuleCollection(Strict):
    name: str
    priority: int
    rule_type: Literal["NetworkRule", "ApplicationRule"]
    rules: tuple[ApplicationRule | NetworkRule, ...]


class RuleCollectionGroup(Strict):
    name: str
    platform: str
    priority: int
    collections: tuple[RuleCollection, ...]

    @property
    def rule_count(self) -> int:
        return sum(len(c.rules) for c in self.collections)


class PolicyPlan(Strict):
    """The Firewall Policy the groups land on: an existing one (``existing_id``, read and checked at deploy time), or
    the one the component creates with these settings."""

    existing_id: Optional[str] = None
    subscription_id: Optional[str] = None  # an existing policy's subscription: an explicit provider targets it
    resource_group: Optional[str] = None  # an existing policy's resource group and name
    name: Optional[str] = None
    foreign_subscription: bool = False  # the existing policy is not in the stack's azureSubscriptionId (or that is unset)
    tier: Literal["Standard", "Premium"] = "Standard"
    threat_intel_mode: Literal["Alert", "Deny", "Off"] = "Deny"
    idps_mode: Optional[Literal["Alert", "Deny", "Off"]] = None
    dns_proxy: bool = False
    dns_servers: tuple[str, ...] = ()  # where the DNS proxy forwards (the stack's customDnsIps); empty = Azure DNS
    base_policy_id: Optional[str] = None
    firewall_id: Optional[str] = None  # diagnostic settings go on the firewall, not the policy
    log_analytics_workspace_id: Optional[str] = None
    firewall_private_ip: Optional[str] = None  # what spoke VNets must use as DNS server when the DNS proxy is on


class AzurePlan(Strict):
    cluster: str  # carried by every group and IP Group name, so clusters share one hub policy and resource group
    groups: tuple[RuleCollectionGroup, ...]
    ip_groups: dict[str, tuple[str, ...]]  # role or source group -> CIDRs of the IP Groups the component creates
    existing_ip_groups: dict[str, str] = {}  # role or source group -> resource id of an IP Group the stack already has
    role_sources: dict[str, tuple[str, ...]]
    dns_proxy: bool
    policy: PolicyPlan = PolicyPlan()
    choices: tuple[Choice, ...] = ()
    left_out: tuple[LeftOut, ...] = ()  # recommended/optional requirements Azure cannot express (render: azure/left-out.txt)
    minimum_rules: int = Field(0, description="One rule per (platform, feature, role, protocol/ports, destination family): the minimum for this layout")
    subscription_id: Optional[str] = None  # where the component creates IP Groups (offline render writes their ids with it)
    resource_group: Optional[str] = None

    def ip_group_name(self, role: str) -> str:
        return ip_group_name(self.cluster, role)


def group_name(cluster: str, platform: str) -> str:
    return f"egress-{cluster}-{platform}"


def ip_group_name(cluster: str, role: str) -> str:
    return f"egress-{cluster}-{role}"


def ip_group_id(subscription: str, resource_group: str, name: str) -> str:
    return f"/subscriptions/{subscription}/resourceGroups/{resource_group}/providers/Microsoft.Network/ipGroups/{name}"


