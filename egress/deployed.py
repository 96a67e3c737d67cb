"""What will really be deployed: resources as the Pulumi engine presents them to a policy pack, in plain Python.

The policy pack and ``egress preview`` both judge these, never the program's plan (DESIGN.md, "Data flow"): each
target rebuilds its rendered artefacts from them (``<target>/deployed.py``) and judges those with its own evaluator.
Plain here means what JSON holds: the engine's containers become dicts and lists, and its numbers (always floats on
the wire) become ints where they are whole.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional


# The firewall resources the program registers with ``protect`` (the stack's allowFirewallReplacement lifts it): a
# replacement or deletion of one breaks or opens the network it guards (README, "Protection and migrations").
PROTECTED_TYPES = (
    "azure-native:network:FirewallPolicy",
    "azure-native:network:FirewallPolicyRuleCollectionGroup",
    "aws:networkfirewall/ruleGroup:RuleGroup",
    "aws:networkfirewall/firewallPolicy:FirewallPolicy",
    "aws:ec2/securityGroup:SecurityGroup",
    "kubernetes:core/v1:Service",  # the egress proxy's fixed ClusterIP, the API server's load balancer
    # Patches of platform-owned objects: deleting one gives up its fields (the API-server allowlist, the proxy settings).
    "kubernetes:kubermatic.k8c.io/v1:ClusterPatch",
    "kubernetes:config.openshift.io/v1:ProxyPatch",
    "kubernetes:kubermatic.k8c.io/v1:SeedPatch",
)


@dataclass(frozen=True)
class DeployedResource:
    """One resource: its type token, logical name, URN, properties (engine names: camelCase), parent URN and the URNs
    it depends on. ``secret_paths``: where the properties hold Pulumi secrets (dotted paths), when the presenter knows
    (the offline preview does; the engine hands packs secrets unwrapped)."""

    type: str
    name: str
    urn: str
    props: dict[str, Any]
    parent: Optional[str] = None
    dependencies: tuple[str, ...] = ()
    secret_paths: tuple[str, ...] = field(default=())
    additional_secret_outputs: tuple[str, ...] = ()
    # Resource options the engine acts on before any policy runs: protect refuses replacement and deletion,
    # replaceOnChanges turns an in-place update into a replacement, aliases carry earlier logical names.
    protect: bool = False
    replace_on_changes: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    deleted_with: Optional[str] = None  # the URN whose deletion deletes this one (the engine then skips deleting it)
    # What a preview cannot know yet (engine preview: read-only outputs, ids of resources not created): the dotted paths
    # whose value is UNKNOWN, and per top-level property the URNs its value came from (the engine's propertyDependencies).
    unknowns: tuple[str, ...] = ()
    property_dependencies: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def depends_through(self, prop: str) -> tuple[str, ...]:
        """The URNs the engine says property ``prop`` was computed from."""
        return next((urns for key, urns in self.property_dependencies if key == prop), ())

    def unknown_under(self, *prefixes: str) -> list[str]:
        """The unknown paths at or under any of ``prefixes`` (``a``, ``a.b``, ``a[0]``), or above one (``a`` unknown as a
        whole hides ``a.b``)."""
        return [p for p in self.unknowns if any(p == x or p.startswith((f"{x}.", f"{x}[")) or x.startswith((f"{p}.", f"{p}["))
                                                for x in prefixes)]

    @property
    def kind(self) -> str:
        """The Kubernetes kind of a ``kubernetes:`` resource (patches included), else ''."""
        return str(self.props.get("kind", "")) if self.type.startswith("kubernetes:") else ""

    @property
    def is_patch(self) -> bool:
        return self.type.startswith("kubernetes:") and self.type.endswith("Patch")

    def label(self) -> str:
        """How violations name the resource: type and logical name, the way `pulumi preview` lists it."""
        return f"{self.type} '{self.name}'"


# What stands in for a value a preview cannot know (the engine's unknown sentinels, whatever their type). A plain string,
# so artefacts stay JSON; whoever judges a resource first asks ``unknown_under`` for the fields it needs.
UNKNOWN = "(unknown until the update creates it)"


def plain(value: Any) -> Any:
    """The engine's proxies (Mapping / Sequence) as dicts and lists, whole floats as ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [plain(v) for v in value]
    return value


def of_type(resources: Iterable[DeployedResource], *types: str) -> list[DeployedResource]:
    return [r for r in resources if r.type in types]


def resources_from_json(documents: Iterable[Mapping[str, Any]]) -> list[DeployedResource]:
    """``resources.json`` (written by ``egress preview``) back into resources."""
    return [DeployedResource(type=d["type"], name=d["name"], urn=d["urn"], props=plain(d.get("props", {})), parent=d.get("parent") or None,
                             dependencies=tuple(d.get("dependencies", ())), secret_paths=tuple(d.get("secretPaths", ())),
                             additional_secret_outputs=tuple(d.get("additionalSecretOutputs", ())), protect=bool(d.get("protect", False)),
                             replace_on_changes=tuple(d.get("replaceOnChanges", ())), aliases=tuple(d.get("aliases", ())),
                             deleted_with=d.get("deletedWith") or None, unknowns=tuple(d.get("unknowns", ())),
                             property_dependencies=tuple((k, tuple(v)) for k, v in sorted((d.get("propertyDependencies") or {}).items())))
            for d in documents]


def resource_json(resource: DeployedResource) -> dict[str, Any]:
    return {"type": resource.type, "name": resource.name, "urn": resource.urn, "parent": resource.parent,
            "dependencies": list(resource.dependencies), "secretPaths": list(resource.secret_paths),
            "additionalSecretOutputs": list(resource.additional_secret_outputs), "protect": resource.protect,
            "replaceOnChanges": list(resource.replace_on_changes), "aliases": list(resource.aliases), "deletedWith": resource.deleted_with,
            **({"unknowns": list(resource.unknowns)} if resource.unknowns else {}),
            "props": resource.props}
