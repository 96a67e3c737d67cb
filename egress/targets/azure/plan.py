"""The Azure Firewall plan: what the compiler decides, in the shape of Azure's rule collection groups (pure)."""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from ...errors import EgressError
from ...models import Strict

PLATFORM_BANDS = {"aks": 0, "kkp": 1, "openshift": 2, "ibm-vpc": 3}
NETWORK_COLLECTION_PRIORITY = 100
APPLICATION_COLLECTION_PRIORITY = 200
MAX_RCG_BYTES = 2 * 1024 * 1024
MAX_RCGS_PER_POLICY = 50
MAX_APP_RULE_PORT = 64000  # FirewallPolicyRuleApplicationProtocol.port maximum in the REST model
FQDN_TAG = "AzureKubernetesService"


class AzureCompileError(EgressError):
    """The stack's requirements cannot be expressed on Azure Firewall as configured."""


class ApplicationRule(Strict):
    name: str
    role: str
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


class Choice(Strict):
    """Which destination Azure uses for a requirement, when it is not the resolver's first choice."""

    requirement: str
    used: str
    reason: str


class AzurePlan(Strict):
    groups: tuple[RuleCollectionGroup, ...]
    ip_groups: dict[str, tuple[str, ...]]  # role -> CIDRs of the IP Groups the component creates
    existing_ip_groups: dict[str, str] = {}  # role -> resource id of an IP Group the stack already has
    role_sources: dict[str, tuple[str, ...]]
    dns_proxy: bool
    choices: tuple[Choice, ...] = ()
    minimum_rules: int = Field(0, description="Rules after merging, the theoretical minimum for this layout")
    subscription_id: Optional[str] = None  # where the component creates IP Groups (offline render writes their ids with it)
    resource_group: Optional[str] = None


def ip_group_name(role: str) -> str:
    return f"egress-{role}"


def ip_group_id(subscription: str, resource_group: str, role: str) -> str:
    return f"/subscriptions/{subscription}/resourceGroups/{resource_group}/providers/Microsoft.Network/ipGroups/{ip_group_name(role)}"


