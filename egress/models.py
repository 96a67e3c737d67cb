"""Typed, frozen models of the required-endpoint matrix and of what the resolver produces.

Field semantics are in DESIGN.md ("Matrix semantics"); docs/MATRIX.md shows them applied.
"""
from __future__ import annotations

import datetime
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .addresses import DestinationKind, PortRange, format_ports
from .citations import URL_FIX, public_url_problem
from .reasons import Reason
from .runs_on import Cloud

Protocol = Literal["http", "https", "tcp", "udp"]
Level = Literal["required", "recommended", "optional"]
Role = Literal["nodes", "control-plane", "seed", "bastion", "workstation"]
CloudVariant = Literal["azure-public", "azure-china", "azure-usgov"]
# OpenShift's platformStatus.azure.cloudName enum (openshift/api config/v1 types_infrastructure.go, as CNO vendors it).
AzureCloudName = Literal["AzurePublicCloud", "AzureUSGovernmentCloud", "AzureChinaCloud", "AzureGermanCloud", "AzureStackCloud"]
# The Datadog sites an Agent sends to (the stack setting datadogSite; entries' condition datadog_sites).
DatadogSite = Literal["datadoghq.com", "us3.datadoghq.com", "us5.datadoghq.com", "datadoghq.eu", "ap1.datadoghq.com", "ap2.datadoghq.com", "ddog-gov.com"]
NodeOs = Literal["ubuntu", "azurelinux", "flatcar", "windows", "rhel", "rhcos"]

PROTOCOLS: tuple[str, ...] = ("http", "https", "tcp", "udp")
LEVELS: tuple[str, ...] = ("required", "recommended", "optional")
ROLES: tuple[str, ...] = ("nodes", "control-plane", "seed", "bastion", "workstation")
CLOUD_VARIANTS: tuple[str, ...] = ("azure-public", "azure-china", "azure-usgov")
NODE_OSES: tuple[str, ...] = ("ubuntu", "azurelinux", "flatcar", "windows", "rhel", "rhcos")
DEFAULT_PORTS = {"http": 80, "https": 443}

SLUG = r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"
# An own entry's id is namespaced by its catalog ('payments/stripe-api'), so it can never shadow a vendor entry's.
ENTRY_ID = r"^([a-z0-9]([a-z0-9-]*[a-z0-9])?/)?[a-z0-9]([a-z0-9-]*[a-z0-9])?$"
# A role or a source group: a group name is a slug too (checked against the roles where groups are declared).
SOURCE = SLUG
PortItem = Union[int, str]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(Strict):
    """A document entries cite: its public page (``url``) and what was read (``doc``: repository, path, commit or date;
    for a seed, also the copy that was transcribed)."""

    doc: str = Field(min_length=1)
    title: str = Field(min_length=1)
    url: str  # https, a page a reader can open: a docs page, or a github.com address at the commit read

    @field_validator("url")
    @classmethod
    def _public(cls, value: str) -> str:
        problem = public_url_problem(value)
        if problem:
            raise ValueError(f"{problem}; {URL_FIX}")
        return value

    @property
    def cited(self) -> str:
        """How outputs name this document when they cite it: its public address, short enough for a CSV cell, a
        pull-request comment or a squid.conf comment, and one a reader can open (a seed's file name is neither)."""
        return self.url


class Citation(Strict):
    source: str = Field(min_length=1)
    section: str = Field(min_length=1)


OpenShiftPlatform = Literal["AWS", "Azure", "GCP", "OpenStack", "VSphere", "BareMetal", "None", "Nutanix", "oVirt",
                            "IBMCloud", "PowerVS", "KubeVirt", "AlibabaCloud", "External", "EquinixMetal", "Libvirt"]


class Conditions(Strict):
    """When an entry applies. Every field that is set must hold (all-of); unset fields do not constrain."""

    private_cluster: Optional[bool] = None
    konnectivity: Optional[bool] = None
    offline: Optional[bool] = None
    custom_dns: Optional[bool] = None
    node_os: Optional[tuple[NodeOs, ...]] = None  # any of these node OSes is in the stack
    features: tuple[str, ...] = ()  # further features that must all be enabled
    ibm_registry_region: Optional[str] = None
    openshift_platform: Optional[tuple[OpenShiftPlatform, ...]] = None  # the stack's openshiftPlatform is one of these
    aws_regions: Optional[tuple[str, ...]] = None  # the stack's awsRegion is one of these
    not_clouds: Optional[tuple[CloudVariant, ...]] = None  # the stack's Azure cloud (if any) is none of these
    pods_use_api_server_fqdn: Optional[bool] = None  # pods carry kubernetes.azure.com/set-kube-service-host-fqdn (AKS)
    not_features: tuple[str, ...] = ()  # none of these features is enabled (e.g. an add-on that brings its own images)
    datadog_sites: Optional[tuple[DatadogSite, ...]] = None  # the stack's datadogSite is one of these
    # Where the client's machines run (runsOn): the entry's role, or for an implied host the role of the requirement it expands.
    runs_on: Optional[tuple[Cloud, ...]] = None  # the role runs on one of these
    not_runs_on: Optional[tuple[Cloud, ...]] = None  # the role's place is unknown or none of these
    runs_on_regions: Optional[tuple[str, ...]] = None  # the role's region is one of these
    placed: Optional[bool] = None  # the stack says where the role runs (runsOn), or not: a fallback for stacks that do not

    def describe(self) -> list[str]:
        parts: list[str] = []
        for flag in ("private_cluster", "konnectivity", "offline", "custom_dns"):
            value = getattr(self, flag)
            if value is not None:
                parts.append(f"{flag.replace('_', '-')}={'yes' if value else 'no'}")
        if self.node_os:
            parts.append("node-os in " + "/".join(self.node_os))
        for feature in self.features:
            parts.append(f"feature {feature}")
        if self.ibm_registry_region:
            parts.append(f"registry region {self.ibm_registry_region}")
        if self.openshift_platform:
            parts.append("openshift-platform in " + "/".join(self.openshift_platform))
        if self.aws_regions:
            parts.append("aws-region in " + "/".join(self.aws_regions))
        if self.not_clouds:
            parts.append("cloud not " + "/".join(self.not_clouds))
        for feature in self.not_features:
            parts.append(f"feature {feature} off")
        if self.datadog_sites:
            parts.append("datadog-site in " + "/".join(self.datadog_sites))
        if self.runs_on:
            parts.append("runs on " + "/".join(self.runs_on))
        if self.not_runs_on:
            parts.append("runs on none of " + "/".join(self.not_runs_on))
        if self.runs_on_regions:
            parts.append("runs in region " + "/".join(self.runs_on_regions))
        if self.placed is not None:
            parts.append("runsOn " + ("given" if self.placed else "not given"))
        if self.pods_use_api_server_fqdn is not None:
            parts.append(f"pods-use-api-server-fqdn={'yes' if self.pods_use_api_server_fqdn else 'no'}")
        return parts


class Alternative(Strict):
    """An equivalent destination offered by the same row ("... or AzureCloud.<region>:1194 ...")."""

    destination: str = Field(min_length=1)
    kind: Optional[DestinationKind] = None
    protocol: Optional[Protocol] = None
    ports: Optional[tuple[PortItem, ...]] = None
    when: Conditions = Conditions()  # the alternative is an option only where these hold
    note: Optional[str] = None


class DocumentedAs(Strict):
    """What the cited vendor document itself says, where the matrix deliberately writes something else."""

    destination: str = Field(min_length=1)
    protocol: Optional[Protocol] = None  # default: the entry's
    ports: Optional[tuple[PortItem, ...]] = None  # default: the entry's


class FeatureNeeds(Strict):
    """What a feature brings along: features it cannot run without (an add-on built on another), and where that is said."""

    needs: tuple[str, ...] = Field(min_length=1)
    citation: Optional[Citation] = None  # required in the vendor matrix (the catalog loader checks)


class Retirement(Strict):
    """A row the vendor has announced to retire: when, and where it says so."""

    date: datetime.date
    citation: Citation


# One line of text: no control characters (a newline would end a Markdown table in a pull-request comment, or a log line).
LINE = r"^[^\x00-\x1f\x7f]+$"


class Direct(Strict):
    """The cluster must reach the entry's destination directly, not through its cluster-wide proxy: why, and where that is said.
    A stack whose cluster proxy would send it through the proxy is refused (egress/targets/kubernetes/proxy_bypass.py)."""

    because: Reason
    citation: Citation


class Approval(Strict):
    """Who approved an own entry (in place of a vendor citation): an owner, a reference to the decision, an expiry."""

    owner: str = Field(min_length=1, pattern=LINE)
    reference: str = Field(min_length=1, pattern=LINE)  # a ticket id or URL
    expires: Optional[datetime.date] = None  # the entry stops resolving on this date

    def describe(self) -> str:
        return f"owner {self.owner}, reference {self.reference}" + (f", expires {self.expires.isoformat()}" if self.expires else "")


class NoTlsInspection(Strict):
    """The destination must not be TLS-inspected (a pinned certificate, a CA the client alone trusts, mTLS, an ALPN the proxy
    does not speak): why, and where the vendor says so. A proxy that inspects TLS must exempt it."""

    reason: Reason
    citation: Citation


class Entry(Strict):
    id: str = Field(pattern=ENTRY_ID)
    platform: str = Field(pattern=SLUG)  # the vendor platform, or an own catalog's name
    variant: Optional[CloudVariant] = None
    feature: Optional[str] = Field(default=None, pattern=SLUG)
    level: Level
    role: str = Field(pattern=SOURCE)  # a role (ROLES), or a source group of the stack (own entries only)
    destination: str = Field(min_length=1)
    kind: Optional[DestinationKind] = None
    protocol: Protocol
    ports: tuple[PortItem, ...] = ()
    when: Conditions = Conditions()
    alternatives: tuple[Alternative, ...] = ()
    purpose: str = Field(min_length=1)
    citation: Optional[Citation] = None  # required for vendor entries (the catalog loader checks)
    approval: Optional[Approval] = None  # required for own entries, in place of (or besides) a citation
    catalog: Optional[str] = None  # the own catalog it comes from (None: the vendor matrix)
    images: tuple[str, ...] = ()
    note: Optional[str] = None
    documented_as: tuple[DocumentedAs, ...] = ()  # the document's own text, where the matrix deliberately differs
    differs_because: Optional[str] = None  # why it differs (required with documented_as)
    retires: Optional[Retirement] = None
    direct: Optional[Direct] = None  # must bypass the cluster-wide proxy (a vendor document says so)
    # Why the row is broader than a stack's limits (maxPublicShare / maxPortSpan), e.g. a vendor's '*:1194': it is
    # accepted as it is only with a reason (egress/guard.py).
    broad: Optional[Reason] = None
    no_tls_inspection: Optional[NoTlsInspection] = None  # proxies must pass it through uninspected (egress export --for proxy)

    @field_validator("documented_as", mode="before")
    @classmethod
    def _documented_strings(cls, value: object) -> object:
        """``documented_as: [vault.azure.net]`` is short for ``[{destination: vault.azure.net}]``."""
        if isinstance(value, (list, tuple)):
            return [{"destination": item} if isinstance(item, str) else item for item in value]
        return value


class ImpliedHost(Strict):
    destination: str = Field(min_length=1)
    kind: Optional[DestinationKind] = None
    protocol: Protocol = "https"
    ports: tuple[PortItem, ...] = ()
    when: Conditions = Conditions()  # e.g. only for clients in some AWS regions, or in some Azure clouds
    purpose: str = Field(min_length=1)
    citation: Citation
    note: Optional[str] = None


class HostExpansion(Strict):
    """The further hosts a pull from a registry (or a download from a host) really touches."""

    host: str = Field(min_length=1)
    implies: tuple[ImpliedHost, ...] = ()
    note: Optional[str] = None
    citation: Citation
    # False where the key is only a name (docker.io/...: no client connects to docker.io for a pull): a requirement on
    # it is replaced by its implied hosts, which carry its entry, images and citation.
    contacted: bool = True


class AllowlistExport(Strict):
    """A fact other teams need the other way round: an address set of this cluster that *their* allowlist must hold."""

    id: str = Field(pattern=SLUG)
    platform: str = Field(pattern=SLUG)
    values_from: Optional[Literal["ibmPublicGatewayIps", "machineCidrs", "ibmControlPlaneCidrs"]] = None  # a stack setting holds them
    values: tuple[str, ...] = ()  # or the document lists the addresses itself (IPs or CIDRs)
    level: Level = "required"  # exported when the stack's levels include it
    ports: tuple[PortItem, ...] = ()  # the ports the allowlist opens to or from them, where the document names them
    allowlist: str = Field(min_length=1)
    direction: Literal["inbound", "outbound"]
    purpose: str = Field(min_length=1)
    citation: Citation
    note: Optional[str] = None


class NoProxyConditions(Strict):
    platform: Optional[tuple[OpenShiftPlatform, ...]] = None
    aws_region: Optional[str] = None
    not_aws_region: Optional[str] = None
    not_azure_cloud: Optional[str] = None
    azure_cloud: Optional[AzureCloudName] = None
    hypershift: Optional[bool] = None


class NoProxyRule(Strict):
    """One automatic OpenShift no-proxy entry: a literal ``value`` (placeholders allowed) or ``from`` a stack list."""

    id: str = Field(pattern=SLUG)
    value: Optional[str] = None
    from_: Optional[Literal["machineCidrs", "serviceCidrs", "podCidrs"]] = Field(default=None, alias="from")
    when: NoProxyConditions = NoProxyConditions()
    note: Optional[str] = None
    citation: Citation


class AzureLocation(Strict):
    name: str = Field(pattern=r"^[a-z0-9]+$")
    service_tag: Optional[str] = Field(default=None, pattern=r"^[a-z0-9]+$")


class Catalog(Strict):
    """The whole validated matrix, and for a stack its own catalogs too."""

    sources: dict[str, Source]
    features: dict[str, str]
    feature_needs: dict[str, FeatureNeeds] = {}  # feature -> the features it brings along (egress/features.py)
    platforms: dict[str, str]
    entries: tuple[Entry, ...]
    expansions: tuple[HostExpansion, ...]
    azure_locations: dict[str, tuple[AzureLocation, ...]]  # cloud variant -> locations
    azure_locations_citation: tuple[Citation, ...] = ()
    exports: tuple[AllowlistExport, ...] = ()
    noproxy_rules: tuple[NoProxyRule, ...] = ()
    noproxy_removed: tuple[NoProxyRule, ...] = ()
    azure_bands: dict[str, int] = {}  # vendor platform -> its Azure priority band (from its file)
    own: tuple[str, ...] = ()  # the stack's own catalogs, in the order their Azure bands follow the vendor bands
    expired: tuple[str, ...] = ()  # own entries left out because their approval expired
    retired: tuple[str, ...] = ()  # vendor entries left out because their retirement date has passed
    retired_features: tuple[str, ...] = ()  # features the stack turns on whose every row for it has retired
    # vendor rows of this stack: retired (left out) or retiring within the warning window, with their dates
    retirements: tuple[tuple[str, datetime.date], ...] = ()
    origins: dict[str, str] = {}  # own entry id -> where it is written ("teams/payments.yaml: entry 'stripe-api' (line 12)")
    # what a pull from each kind of private registry touches (matrix/registry-kinds.yaml): an egress.registry_kinds.RegistryKinds,
    # typed loosely here because that module builds on these models (importing it here would be circular)
    registry_kinds: Optional[Any] = None

    def entry(self, entry_id: str) -> Entry:
        for entry in self.entries:
            if entry.id == entry_id:
                return entry
        raise KeyError(entry_id)

    def service_tag_region(self, cloud: str, location: str) -> str | None:
        for candidate in self.azure_locations.get(cloud, ()):
            if candidate.name == location:
                return candidate.service_tag or candidate.name
        return None


class ResolvedAlternative(Strict):
    kind: DestinationKind
    destinations: tuple[str, ...]
    protocol: Protocol
    ports: tuple[PortRange, ...]
    note: Optional[str] = None


class ApprovalRef(Strict):
    """An own entry's approval as a requirement carries it."""

    entry_id: str
    owner: str
    reference: str
    expires: Optional[datetime.date] = None


class Requirement(Strict):
    """One concrete flow the stack needs: who opens it, to where, how."""

    role: str  # a role (ROLES) or a source group of the stack
    destination: str
    kind: DestinationKind
    protocol: Protocol
    ports: tuple[PortRange, ...]
    level: Level
    purposes: tuple[str, ...]
    entry_ids: tuple[str, ...]
    citations: tuple[tuple[str, str], ...]  # (doc, section)
    platforms: tuple[str, ...]
    paths: tuple[str, ...] = ()  # for URL entries: the download paths behind this host, for documentation
    images: tuple[str, ...] = ()
    via: tuple[str, ...] = ()  # for implied hosts: "<host> (from <entry id>)"
    alternatives: tuple[ResolvedAlternative, ...] = ()  # every resolvable option, narrowest first
    chosen: Optional[str] = None  # why this destination was picked, when there were alternatives
    sources: tuple[str, ...] = ()  # the role's source CIDRs from the stack
    deviations: tuple[str, ...] = ()  # "<entry id>: documented as <text>: <why>", where the matrix differs from the document
    retires: Optional[datetime.date] = None  # set when every entry behind the requirement is announced to retire (the latest date)
    approvals: tuple[ApprovalRef, ...] = ()  # the own entries behind it, with their owners and references

    def options(self) -> tuple[ResolvedAlternative, ...]:
        """Every destination option, narrowest first: the alternatives, or the requirement itself when it has none."""
        if self.alternatives:
            return self.alternatives
        return (ResolvedAlternative(kind=self.kind, destinations=(self.destination,), protocol=self.protocol, ports=self.ports),)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.role, self.destination, self.protocol, format_ports(self.ports))

