"""The stack profile: what one environment needs, read from ``stacks/Pulumi.<stack>.yaml``.

Every setting is a Pulumi project config key in the project's namespace (``egress-matrix:<key>``) and is
declared with its type in ``Pulumi.yaml``; a test keeps the two in step. Pulumi project config supports only
string, boolean, integer and array types, so the role -> source CIDRs map is one array key per role.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import InitErrorDetails

from .addresses import AddressError, parse_cidr, parse_domain, parse_fqdn, parse_hostname, parse_ip, parse_no_proxy_entry
from .errors import ProfileError
from .ibm_endpoints import master_hosts_and_ports
from .infra_endpoints import bmc_endpoint, hosts_and_ports, openstack_endpoint
from .pem import bundle_as_deployed, check_certificates_only, check_no_private_key
from .profile_messages import explain
from .spellings import azure_location, openshift_platform, split_no_proxy
from .reasons import Reason
from .url_hosts import check_url_host
from .redact import HIDDEN, refuse_credentials
from .models import AzureCloudName, CloudVariant, DatadogSite, Level, NodeOs, OpenShiftPlatform, Role
from .own_settings import GROUP_NAME, StackEntry, check_groups, parse_catalog_ref
from .registry_spec import ContainerRegistry, check_registry_list
from .runs_on import Place, as_places, check_places
from .stack_file import read_stack_file
from .stack_rules import SettingProblem, check_key, parse_setting, secret_meant
from .suggest import closest, did_you_mean

PROJECT = "egress-matrix"
# A Squid image pinned by digest (tests/data/squid_image.yaml says where the digest was published).
DEFAULT_SQUID_IMAGE = "ubuntu/squid@sha256:6a097f68bae708cedbabd6188d68c7e2e7a38cedd05a176e1cc0ba29e3bbe029"
# The probe Job's minimal Python image, pinned by digest as Mend Renovate keeps it in GoogleCloudPlatform/microservices-demo
# (src/shoppingassistantservice/Dockerfile, Renovate's commit 621462daf4b475e4362181dfa3afcbb55a6cf789 of 2026-07-08, still
# so at 34ffea9175946982c3088ed84994fe6019ad6e92). Renovate pins a tag's manifest-list digest (renovate 24.28.2, #8428: "accept
# manifest lists for digests"), and that Dockerfile pulls it for whatever --platform=$BUILDPLATFORM the builder has. Read
# there, not pulled here. The agent needs the standard library only. Override with probeImage.
DEFAULT_PROBE_IMAGE = "python:3.14.6-slim@sha256:b877e50bd90de10af8d82c57a022fc2e0dc731c5320d762a27986facfc3355c1"

ROLE_SOURCE_KEYS = {
    "nodes": "nodeSources",
    "control-plane": "controlPlaneSources",
    "seed": "seedSources",
    "bastion": "bastionSources",
    "workstation": "workstationSources",
}


# Every name a target derives from it stays valid: Azure (80, letters, digits, _.-), AWS rule groups (128, letters,
# digits, -), security group names and Kubernetes DNS labels (63, lower case).
CLUSTER_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$"
_DCE = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?\.[a-z0-9]+-[0-9]+")
_KEY_VAULT_NAME = re.compile(r"[a-z][a-z0-9-]{1,22}[a-z0-9]")
# re patterns are used with fullmatch (Python's '$' also matches before a final newline); pydantic's pattern= is a Rust
# regex, where '$' is the end of the text. '[^/\s]' keeps white space out of resource ids.
_POLICY_ID = r"^/subscriptions/[^/\s]+/resourceGroups/[^/\s]+/providers/Microsoft\.Network/firewallPolicies/[^/\s]+$"
_AWS_POLICY_ARN = r"^arn:aws(-cn|-us-gov)?:network-firewall:[a-z]{2}(-[a-z]+)+-\d:\d{12}:firewall-policy/[A-Za-z0-9-]{1,128}$"
_IP_GROUP_ID = re.compile(r"/subscriptions/[^/\s]+/resourceGroups/[^/\s]+/providers/Microsoft\.Network/ipGroups/[^/\s]+")


def _cidr_list(values: tuple[str, ...]) -> tuple[str, ...]:
    for value in values:
        parse_cidr(value)
    return values


class Profile(BaseModel):
    """A stack's settings. Field descriptions are the documentation shown in Pulumi.yaml."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    _stack: str = PrivateAttr("")  # the stack the settings come from (not a setting: Pulumi knows it)
    _secrets: frozenset = PrivateAttr(frozenset())  # SECRET_KEYS the stack sets (their values never enter the Profile)
    _lines: dict = PrivateAttr(default_factory=dict)  # setting -> its line in the stack file, for later checks' errors

    platforms: tuple[str, ...] = Field(alias="platforms", min_length=1, description="Platforms this stack runs (matrix/<platform>.yaml).")
    cloud: Optional[CloudVariant] = Field(None, alias="cloud", description="Azure cloud for AKS: azure-public, azure-china or azure-usgov.")
    location: Optional[str] = Field(None, alias="location", description="Azure location of the AKS cluster, e.g. westeurope.")
    aws_region: Optional[str] = Field(None, alias="awsRegion", pattern=r"^[a-z]{2}(-[a-z]+)+-\d$", description="AWS region the KKP seed manages, e.g. eu-central-1.")
    ibm_region: Optional[str] = Field(None, alias="ibmRegion", pattern=r"^[a-z]{2}-[a-z]+$", description="IBM Cloud region of the cluster, e.g. us-south.")
    ibm_registry_regions: tuple[str, ...] = Field((), alias="ibmRegistryRegions", description="IBM Cloud Container Registry regions the workstations use (global, us-south, ...).")
    ibm_master_ip: Optional[str] = Field(None, alias="ibmMasterIp", description="IP of the IBM cluster master URL (for calicoctl).")
    ibm_etcd_port: Optional[int] = Field(None, alias="ibmEtcdPort", ge=1, le=65535, description="etcd port of the IBM cluster master (kubectl get cm -n kube-system cluster-info).")
    ibm_master_endpoints: tuple[str, ...] = Field((), alias="ibmMasterEndpoints", examples=["https://c100.us-south.containers.cloud.ibm.com:31234"],
                                                  description="The IBM cluster master's service endpoint URLs with their port, as 'ibmcloud ks cluster get' prints them "
                                                              "(Public / Private Service Endpoint URL): kubectl then reaches this master only, not every master of the region on 30000-32767.")
    ibm_public_gateway_ips: tuple[str, ...] = Field((), alias="ibmPublicGatewayIps", description="Floating IPs of the public gateways on the cluster's VPC subnets (exported for other teams' allowlists).")
    ibm_control_plane_cidrs: tuple[str, ...] = Field((), alias="ibmControlPlaneCidrs", description="IBM control plane CIDRs of the cluster's region (IBM-Cloud/kube-samples iam-firewall-ips; bare IPs as /32).")
    # The sites Datadog's "Getting Started with Datadog Sites" lists (matrix/sources.yaml datadog-sites), by site parameter.
    datadog_site: Optional[DatadogSite] = Field(
        None, alias="datadogSite",
        description="Datadog site the Datadog Agent sends to (platform datadog), as its site parameter: datadoghq.com (US1), us3.datadoghq.com, "
                    "us5.datadoghq.com, datadoghq.eu (EU1), ap1.datadoghq.com, ap2.datadoghq.com or ddog-gov.com (US1-FED).")
    features: tuple[str, ...] = Field((), alias="features", description="Enabled features and add-ons (see docs/MATRIX.md).")
    node_os: tuple[NodeOs, ...] = Field(("ubuntu",), alias="nodeOs", description="Node operating systems in the cluster.")
    private_cluster: bool = Field(False, alias="privateCluster", description="The API server is reachable only privately.")
    konnectivity: bool = Field(True, alias="konnectivity", description="Nodes reach the control plane through konnectivity (AKS default).")
    pods_use_api_server_fqdn: bool = Field(False, alias="podsUseApiServerFqdn",
                                           description="AKS: pods that call the API server carry the annotation kubernetes.azure.com/set-kube-service-host-fqdn, "
                                                       "so they reach it by FQDN (with SNI) and a layer-7 rule can allow them; else the API server IP is needed.")
    offline_registry: Optional[str] = Field(None, alias="offlineRegistry", description="host:port of the private registry mirror that replaces the public registries (KKP offline mode).")
    custom_dns_ips: tuple[str, ...] = Field((), alias="customDnsIps", description="Custom DNS server IPs the nodes use.")
    api_server_ip: Optional[str] = Field(None, alias="apiServerIp", description="Public IP of the API server, when known.")
    region_cidrs: tuple[str, ...] = Field((), alias="regionCidrs", description="The Azure region's CIDRs, if you prefer them to the AzureCloud service tag.")
    cluster_name: Optional[str] = Field(None, alias="clusterName", pattern=CLUSTER_NAME_PATTERN,
                                        description="Cluster name: the OpenShift api-int host, and the name Azure rule collection groups and IP Groups "
                                                    "carry so several clusters share one hub policy (default: the stack name).")
    base_domain: Optional[str] = Field(None, alias="baseDomain", description="Cluster base domain (OpenShift).")
    service_cidrs: tuple[str, ...] = Field((), alias="serviceCidrs", description="Service network CIDRs.")
    pod_cidrs: tuple[str, ...] = Field((), alias="podCidrs", description="Pod (cluster) network CIDRs.")
    machine_cidrs: tuple[str, ...] = Field((), alias="machineCidrs", description="Machine (node) network CIDRs.")
    vsphere_endpoints: tuple[str, ...] = Field((), alias="vsphereEndpoints", description="vCenter API hosts: those the KKP seed manages, or OpenShift on vSphere's vCenter (install-config platform.vsphere.vcenters[].server).")
    # OpenShift's infrastructure APIs (egress/infra_endpoints.py parses them; matrix/openshift.yaml cites who calls them).
    nutanix_prism_central: Optional[str] = Field(None, alias="nutanixPrismCentral", examples=["prism-central.example.com:9440"],
                                                 description="OpenShift on Nutanix: Prism Central as host:port (install-config platform.nutanix.prismCentral endpoint address and port, usually 9440).")
    openstack_auth_url: Optional[str] = Field(None, alias="openstackAuthUrl", examples=["https://keystone.example.com:5000/v3"],
                                              description="OpenShift on OpenStack: the Keystone auth_url of the cloud in clouds.yaml (https).")
    openstack_endpoints: tuple[str, ...] = Field((), alias="openstackEndpoints", examples=["https://overcloud.example.com:13774"],
                                                 description="OpenShift on OpenStack: the Keystone catalog's endpoint URLs (https) the cluster calls: compute, network, "
                                                             "block storage, image, load balancer, object storage (openstack catalog list); the interface clouds.yaml selects.")
    bmc_addresses: tuple[str, ...] = Field((), alias="bmcAddresses", examples=["redfish-virtualmedia://192.0.2.10/redfish/v1/Systems/1"],
                                           description="OpenShift on bare metal: the hosts' BMC addresses as install-config hosts[].bmc.address writes them "
                                                       "(Redfish schemes over HTTPS, ipmi://, or a bare host for IPMI).")
    openshift_platform: Optional[OpenShiftPlatform] = Field(None, alias="openshiftPlatform", description="OpenShift infrastructure platform type (AWS, Azure, GCP, OpenStack, VSphere, BareMetal, None, ...).")
    hypershift: bool = Field(False, alias="hypershift", description="OpenShift with hosted control planes (HyperShift).")
    no_proxy: tuple[str, ...] = Field((), alias="noProxy", description="Extra no-proxy entries for the cluster-wide proxy (OpenShift Proxy spec.noProxy).")
    apps_domain: Optional[str] = Field(None, alias="appsDomain", description="OpenShift ingress (apps) domain; default apps.<clusterName>.<baseDomain>.")
    azure_cloud_name: Optional[AzureCloudName] = Field(None, alias="azureCloudName",
                                                       description="OpenShift on Azure: platformStatus.azure.cloudName (default: from cloud; empty when cloud is unset).")
    azure_arm_endpoint: Optional[str] = Field(None, alias="azureArmEndpoint", pattern=r"^https://[^\s/]+(/\S*)?$",
                                              description="OpenShift on Azure Stack Hub: platformStatus.azure.armEndpoint, e.g. https://management.<region>.<domain>.")
    azure_monitor_dces: tuple[str, ...] = Field((), alias="azureMonitorDataCollectionEndpoints",
                                                description="The cluster's Azure Monitor data collection endpoints, as the part of their endpoint URLs before "
                                                            "'.ingest.' / '.metrics.ingest.' (e.g. mydce-a1b2.westeurope-1): only those ingestion hosts are allowed.")
    azure_key_vault_names: tuple[str, ...] = Field((), alias="azureKeyVaultNames",
                                                   description="Key Vaults the Secrets Store CSI driver reads: only <name>.vault.<cloud suffix> is allowed, not every vault.")
    targets: tuple[Literal["azure", "aws", "kubernetes"], ...] = Field(
        (), alias="targets",
        description="Enforcement targets the program deploys: azure, aws, kubernetes (omit the setting for a matrix-only stack; an empty "
                    "list is refused: it would delete what the stack deployed). azure and aws need clusterName.")
    allow_firewall_replacement: bool = Field(
        False, alias="allowFirewallReplacement",
        description="A planned migration only: firewall resources (policies, rule collection groups, rule groups, security groups, the "
                    "proxy and API-server Services) are registered without protect, so pulumi up may replace or delete them, and egress "
                    "diff reports such changes without failing. Remove it once the migration is applied.")
    aws_roles: tuple[Role, ...] = Field(("nodes",), alias="awsRoles", description="Roles whose egress the AWS Network Firewall and security groups enforce (and every source group's).")
    aws_platforms: tuple[str, ...] = Field((), alias="awsPlatforms",
                                           description="Platforms whose requirements the AWS target enforces (default: all the stack's platforms). "
                                                       "The stack's own catalogs (stack, registries, those it lists) stay enforced unless some "
                                                       "are named here too: then only those.")
    aws_network_firewall_rules: Literal["domain-list", "suricata"] = Field(
        "domain-list", alias="awsNetworkFirewallRules",
        description="domain-list: stateful domain-list rule groups (any port, '.x' also opens the apex; the broadening is listed); "
                    "suricata: exact Suricata rules (required ports, subdomains-only wildcards).")
    aws_capacity_headroom: int = Field(20, alias="awsCapacityHeadroom", ge=0, le=1000,
                                       description="Spare capacity (percent of its rules) a rule group should keep: a group's capacity is the "
                                                   "smallest 1-2-5 step holding its rules (fixed at creation; outgrowing it is a replacement), "
                                                   "and a group with less spare gets a warning to plan that replacement.")
    aws_security_groups_per_eni: int = Field(5, alias="awsSecurityGroupsPerEni", ge=1, le=16,
                                             description="Security groups a network interface may carry (AWS default 5, adjustable to 16).")
    aws_security_group_counts: tuple[str, ...] = Field(
        (), alias="awsSecurityGroupCounts", examples=["nodes=2"],
        description="role=N (or group=N for a source group): security groups the stack creates for it (egress-<clusterName>-<role>-0 .. N-1; default 1). A new group "
                    "starts empty: attach it to the role's network interfaces, then raise awsSecurityGroupsAttached.")
    aws_security_groups_attached: tuple[str, ...] = Field(
        (), alias="awsSecurityGroupsAttached", examples=["nodes=2"],
        description="role=N (or group=N): how many of its groups (from -0) its network interfaces carry (default 1). Rules are placed only in "
                    "these; when they cannot hold the rules the update fails closed, and no rule ever moves to a group not attached.")
    aws_rule_group_capacities: tuple[str, ...] = Field(
        (), alias="awsRuleGroupCapacities", examples=["egress-kkp-nodes-rules=100"],
        description="name=N: keep a rule group at capacity N (its deployed capacity) instead of the smallest 1-2-5 step that holds its "
                    "rules: a group whose rules shrank below a step keeps its capacity and is updated in place, not replaced.")
    aws_priority_base: int = Field(100, alias="awsPriorityBase", ge=1, le=60000,
                                   description="Lowest strict-order priority of the rule groups. Each group has a fixed slot, base + 100 x (10 x kind + "
                                               "role) (kind 0 rules/addresses, 1 tls-sni, 2 http-host; role 0 nodes, 1 control-plane, 2 seed, "
                                               "3 bastion, 4 workstation; the source groups' one group: base + 900), so a new group moves no "
                                               "other; at most base + 2900 (AWS: 65535).")
    aws_name_addresses: tuple[str, ...] = Field((), alias="awsNameAddresses",
                                                description="Addresses of hosts a non-HTTP/TLS requirement names (e.g. NTP servers), as host=CIDR[,CIDR]: "
                                                            "AWS cannot match such flows by name, so these addresses are allowed instead.")
    aws_vpc_id: Optional[str] = Field(None, alias="awsVpcId", pattern=r"^vpc-[0-9a-f]{8}([0-9a-f]{9})?$", examples=["vpc-0a1b2c3d4e5f60718"],
                                      description="VPC of the nodes: the egress security groups are created in it.")
    aws_firewall_policy: bool = Field(False, alias="awsFirewallPolicy",
                                      description="Create a STRICT_ORDER firewall policy referencing the rule groups (aws:drop_established + "
                                                  "aws:alert_established, stream exception REJECT, HOME_NET from the roles' sources).")
    aws_firewall_policy_arn: Optional[str] = Field(None, alias="awsFirewallPolicyArn", pattern=_AWS_POLICY_ARN,
                                                   examples=["arn:aws:network-firewall:eu-west-1:123456789012:firewall-policy/hub"],
                                                   description="An existing STRICT_ORDER firewall policy that references the rule groups: it is read and "
                                                               "checked, and the references it lacks are exported (awsRuleGroupReferences).")
    cluster_proxy: tuple[Literal["openshift", "kkp", "aks", "kubeadm"], ...] = Field(
        (), alias="clusterProxy",
        description="Kubernetes: the cluster-wide proxy settings to produce: openshift (Proxy 'cluster' + user-ca-bundle), kkp (the Seed "
                    "datacenter's node proxy settings), aks (httpProxyConfig, exported), kubeadm (a ConfigMap of HTTP(S)_PROXY/NO_PROXY).")
    http_proxy: Optional[str] = Field(None, alias="httpProxy", examples=["http://proxy.example.com:3128"],
                                      description="Proxy URL for plain HTTP (scheme http), without credentials (they go in the secret proxyCredentials). "
                                                  "Default with egressProxy: the egress proxy's fixed ClusterIP.")
    https_proxy: Optional[str] = Field(None, alias="httpsProxy", examples=["http://proxy.example.com:3128"],
                                       description="Proxy URL for HTTPS (scheme http or https), without credentials. Default: httpProxy.")
    proxy_readiness_endpoints: tuple[str, ...] = Field((), alias="proxyReadinessEndpoints",
                                                       description="OpenShift Proxy readinessEndpoints: URLs the operator probes through the proxy.")
    proxy_trusted_ca: Optional[str] = Field(None, alias="proxyTrustedCa",
                                            description="PEM CA bundle that signs the proxy's (or its TLS inspection's) certificates: OpenShift "
                                                        "user-ca-bundle, AKS trustedCa. Certificates only (public material).")
    proxy_inspects_tls: bool = Field(False, alias="proxyInspectsTls",
                                     description="The corporate proxy (httpProxy/httpsProxy) decrypts and inspects TLS, re-signing with the CA in "
                                                 "proxyTrustedCa: egress export --for proxy then offers URL paths and lists the hosts to exempt.")
    kkp_seed: Optional[str] = Field(None, alias="kkpSeed", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                                    description="KKP: name of the Seed object (namespace kubermatic) whose datacenter gets the node proxy settings.")
    kkp_datacenter: Optional[str] = Field(None, alias="kkpDatacenter", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                                          description="KKP: the Seed datacenter (spec.datacenters key) whose worker nodes use the proxy.")
    kkp_domain: Optional[str] = Field(None, alias="kkpDomain", description="KKP: the KKP domain (KubermaticConfiguration spec.ingress.domain), kept off the proxy.")
    node_local_dns_ip: str = Field("169.254.20.10", alias="nodeLocalDnsIp", description="NodeLocal DNS cache address kept off the proxy (KKP default 169.254.20.10).")
    egress_proxy: bool = Field(False, alias="egressProxy",
                               description="Kubernetes: deploy the allowlisting Squid egress proxy for the roles in egressProxyRoles.")
    egress_proxy_roles: tuple[Role, ...] = Field(("nodes",), alias="egressProxyRoles", description="Roles whose HTTP/HTTPS egress the egress proxy allows.")
    egress_proxy_namespace: str = Field("egress-proxy", alias="egressProxyNamespace", pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
                                        description="Namespace of the egress proxy (created).")
    egress_proxy_image: str = Field(DEFAULT_SQUID_IMAGE, alias="egressProxyImage", pattern=r"^[^\s@]+@sha256:[0-9a-f]{64}$",
                                    examples=[DEFAULT_SQUID_IMAGE], description="Squid image of the egress proxy, pinned by digest.")
    egress_proxy_replicas: int = Field(2, alias="egressProxyReplicas", ge=2, le=20, description="Egress proxy replicas (a PodDisruptionBudget keeps one up).")
    egress_proxy_port: int = Field(3128, alias="egressProxyPort", ge=1024, le=65535, description="Port of the egress proxy's Service and container.")
    egress_proxy_cluster_ip: Optional[str] = Field(None, alias="egressProxyClusterIp",
                                                   description="Fixed ClusterIP of the egress proxy inside serviceCidrs: nodes cannot resolve .svc names, so "
                                                               "node-level clients (container runtime, OpenShift Proxy, KKP node settings) use this address.")
    egress_proxy_node_port: Optional[int] = Field(None, alias="egressProxyNodePort", ge=30000, le=32767,
                                                  description="Also expose the egress proxy on this NodePort (for node clients that cannot reach ClusterIPs).")
    probe_job: bool = Field(False, alias="probeJob", description="Kubernetes: render the egress probe as a Job per role in probeRoles (a "
                                                                  "ConfigMap with the agent and its plan, and the Job that runs it).")
    probe_roles: tuple[Role, ...] = Field(("nodes",), alias="probeRoles", min_length=1,
                                          description="Roles the probe Job checks from inside the cluster: nodes (host network), control-plane, seed.")
    probe_namespace: str = Field("egress-probe", alias="probeNamespace", pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
                                 description="Namespace of the probe Jobs (created; privileged Pod Security level when the nodes role is probed, "
                                             "which needs the host network).")
    probe_image: str = Field(DEFAULT_PROBE_IMAGE, alias="probeImage", pattern=r"^[^\s@]+@sha256:[0-9a-f]{64}$", examples=[DEFAULT_PROBE_IMAGE],
                             description="Minimal Python 3 image of the probe Job, pinned by digest (the agent needs the standard library only).")
    probe_deploy: bool = Field(False, alias="probeDeploy", description="Kubernetes: the program also deploys the probe Jobs probeJob renders, "
                                                                        "after the firewall resources; not awaited (a failing probe never fails "
                                                                        "the update): read kubectl logs job/egress-probe-<role>-<hash8> (the probeJobs output; a changed firewall or plan is a new Job).")
    api_server_allowlist: Optional[Literal["kkp", "generic"]] = Field(
        None, alias="apiServerAllowlist",
        description="Kubernetes: restrict who reaches the API server: kkp (the user Cluster's spec.apiServerAllowedIPRanges) or generic "
                    "(a LoadBalancer Service with spec.loadBalancerSourceRanges).")
    api_server_allowed_cidrs: tuple[str, ...] = Field((), alias="apiServerAllowedCidrs", description="Client CIDRs allowed to reach the API server (IPv4 or IPv6).")
    api_server_allow_all: bool = Field(False, alias="apiServerAllowAll", description="Permit an API-server allowlist covering more than maxPublicShare of public "
                                                                                                     "space, e.g. 0.0.0.0/0, ::/0 or their halves (refused otherwise).")
    api_server_allowlist_missing: Literal["warn", "error"] = Field(
        "warn", alias="apiServerAllowlistMissing",
        description="What happens when the nodes' egress CIDRs or the seed's node / pod CIDRs are not allowed to reach the API server.")
    node_egress_cidrs: tuple[str, ...] = Field((), alias="nodeEgressCidrs", description="Addresses the nodes' traffic to the API server comes from (NAT / public IPs).")
    kkp_cluster_id: Optional[str] = Field(None, alias="kkpClusterId", pattern=r"^[a-z0-9]{10}$", examples=["s8kkvfxhrn"],
                                          description="KKP: the user cluster's id (name of its kubermatic.k8c.io/v1 Cluster).")
    kkp_expose_strategy: Literal["LoadBalancer", "NodePort", "Tunneling"] = Field("LoadBalancer", alias="kkpExposeStrategy",
                                                                                 description="KKP: the user cluster's expose strategy.")
    kkp_seed_default_api_server_ranges: tuple[str, ...] = Field((), alias="kkpSeedDefaultApiServerAllowedIpRanges",
                                                                description="KKP: the Seed's spec.defaultAPIServerAllowedIPRanges.")
    kkp_seed_nodeport_proxy_source_ranges: tuple[str, ...] = Field((), alias="kkpSeedNodeportProxySourceRanges",
                                                                    description="KKP: the Seed's spec.nodeportProxy.envoy.loadBalancerService.sourceRanges.")
    kkp_seed_pod_cidrs: tuple[str, ...] = Field((), alias="kkpSeedPodCidrs", description="KKP: the seed cluster's pod CIDRs (needed on the allowlist since Kubernetes 1.25).")
    kkp_seed_cloud: Optional[Literal["aws", "azure", "gcp", "openstack", "vsphere", "other"]] = Field(
        None, alias="kkpSeedCloud", description="KKP: the seed's cloud, for its load balancer's caveats.")
    api_server_namespace: str = Field("kube-system", alias="apiServerNamespace", pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
                                      description="Generic: namespace of the API server pods the Service selects.")
    api_server_selector: tuple[str, ...] = Field(("component=kube-apiserver",), alias="apiServerSelector",
                                                 description="Generic: label=value pairs selecting the API server pods.")
    api_server_port: int = Field(6443, alias="apiServerPort", ge=1, le=65535, description="Generic: the API server's port.")
    azure_roles: tuple[Role, ...] = Field(("nodes",), alias="azureRoles", description="Roles whose egress the Azure Firewall enforces (and every source group's).")
    azure_policy_id: Optional[str] = Field(None, alias="azurePolicyId", pattern=_POLICY_ID,
                                           description="Attach to this existing Firewall Policy (resource id) instead of creating one.")
    azure_resource_group: Optional[str] = Field(None, alias="azureResourceGroup", pattern=r"^[-\w._()]{1,90}$", description="Resource group for the Firewall Policy, rule collection groups and IP Groups.")
    azure_dns_proxy: bool = Field(False, alias="azureDnsProxy", description="The policy's DNS proxy is on, so network rules may use FQDNs (no wildcards).")
    azure_fqdn_tag: bool = Field(False, alias="azureFqdnTag", description="Allow core AKS through the AzureKubernetesService FQDN tag (add-on endpoints stay explicit).")
    azure_priority_base: int = Field(1000, alias="azurePriorityBase", ge=400, le=64000, description="Priority of the first rule collection group; each platform band adds 100.")
    azure_existing_priorities: tuple[int, ...] = Field((), alias="azureExistingPriorities", description="Priorities of rule collection groups already on the policy (must not clash).")
    # What the stack knows of the existing policy (azurePolicyId), judged offline where the policy cannot be read (egress/hub_facts.py).
    azure_hub_dns_proxy: Optional[bool] = Field(None, alias="azureHubDnsProxy",
                                                description="With azurePolicyId: the existing policy's DNS proxy (dnsSettings.enableProxy) as the hub team has it; "
                                                            "offline previews judge it, online the policy as read wins (a disagreement is warned).")
    azure_hub_base_policy_id: Optional[str] = Field(None, alias="azureHubBasePolicyId", pattern=f"^(?:{_POLICY_ID[1:-1]}|none)$",
                                                    description="With azurePolicyId: the existing policy's base (parent) policy, its resource id, or none.")
    azure_hub_groups: Optional[tuple[str, ...]] = Field(None, alias="azureHubGroups", examples=["hub-platform=100"],
                                                        description="With azurePolicyId: the rule collection groups already on the existing policy, as "
                                                                    "name=priority ([] when there are none).")
    azure_hub_exports: tuple[str, ...] = Field((), alias="azureHubExports", examples=["hub/fwp-hub.json"],
                                               description="With azurePolicyId: JSON files (relative to the project root) the hub team exported: `az network firewall "
                                                           "policy show` of the policy, `az network firewall policy rule-collection-group list` of the policy and of "
                                                           "its base policy; offline previews judge what they hold.")
    azure_ip_groups: bool = Field(True, alias="azureIpGroups", description="Create one IP Group per role and source group and use it as the rule source (else source CIDRs inline).")
    azure_ip_group_ids: tuple[str, ...] = Field((), alias="azureIpGroupIds", description="Existing IP Groups to use as a role's or source group's source, as role=<IP Group resource id> or group=<id> (that one's IP Group is then not created).")
    azure_firewall_tier: Literal["Standard", "Premium"] = Field("Standard", alias="azureFirewallTier",
                                                             description="Tier of the Firewall Policy the component creates (Basic has no DNS proxy, so it is not offered).")
    azure_threat_intel_mode: Literal["Alert", "Deny", "Off"] = Field("Deny", alias="azureThreatIntelMode",
                                                                     description="Threat intelligence mode of the policy the component creates (default Deny, as mspnp/aks-baseline).")
    azure_idps_mode: Optional[Literal["Alert", "Deny", "Off"]] = Field(None, alias="azureIdpsMode",
                                                                       description="IDPS mode of the policy the component creates; Premium only (default Deny on Premium).")
    azure_base_policy_id: Optional[str] = Field(None, alias="azureBasePolicyId", pattern=_POLICY_ID,
                                                description="Parent (base) Firewall Policy of the policy the component creates: its rules run first.")
    azure_firewall_id: Optional[str] = Field(None, alias="azureFirewallId", pattern=r"^/subscriptions/[^/\s]+/resourceGroups/[^/\s]+/providers/Microsoft\.Network/azureFirewalls/[^/\s]+$",
                                             description="The Azure Firewall that enforces the policy (resource id): its diagnostic settings send the AZFW* logs to azureLogAnalyticsWorkspaceId.")
    azure_firewall_private_ip: Optional[str] = Field(None, alias="azureFirewallPrivateIp",
                                                     description="The firewall's private IP: with azureDnsProxy the spoke VNets' DNS servers must be this address (exported as azureVnetDnsServers).")
    azure_log_analytics_workspace_id: Optional[str] = Field(None, alias="azureLogAnalyticsWorkspaceId",
                                                            pattern=r"^/subscriptions/[^/\s]+/resourceGroups/[^/\s]+/providers/Microsoft\.OperationalInsights/workspaces/[^/\s]+$",
                                                            description="Log Analytics workspace (resource id) for the firewall's resource-specific AZFW* tables.")
    azure_subscription_id: Optional[str] = Field(None, alias="azureSubscriptionId", pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
                                                 description="Subscription of the resource group: the program checks the azure-native provider deploys to it, and rules name the IP Groups it creates by resource ids built with it (known at a first preview; offline render writes them too).")
    levels: tuple[Level, ...] = Field(("required", "recommended"), alias="levels", min_length=1, description="Requirement levels to include.")
    node_sources: tuple[str, ...] = Field((), alias="nodeSources", description="Source CIDRs of the role 'nodes'.")
    control_plane_sources: tuple[str, ...] = Field((), alias="controlPlaneSources", description="Source CIDRs of the role 'control-plane'.")
    seed_sources: tuple[str, ...] = Field((), alias="seedSources", description="Source CIDRs of the role 'seed'.")
    bastion_sources: tuple[str, ...] = Field((), alias="bastionSources", description="Source CIDRs of the role 'bastion'.")
    workstation_sources: tuple[str, ...] = Field((), alias="workstationSources", description="Source CIDRs of the role 'workstation'.")
    max_public_share: int = Field(1, alias="maxPublicShare", ge=0, le=100,
                                  description="Breadth limit: the percent of public IPv4 or IPv6 space (special-purpose ranges excluded) that the "
                                              "destinations on one port, a role's sources, a noProxy or the API-server allowlist may cover, "
                                              "counted after collapsing them (0.0.0.0/1 + 128.0.0.0/1 is 100%).")
    max_port_span: int = Field(1024, alias="maxPortSpan", ge=1, le=65535,
                               description="Breadth limit: how many ports one destination may be allowed on.")
    catalogs: tuple[str, ...] = Field((), alias="catalogs", examples=["teams/payments.yaml"],
                                      description="Own catalogs the stack adds to the vendor matrix, in the matrix's schema: files or folders "
                                                  "relative to the project root (org/egress, teams/payments.yaml), or package:<name> for a "
                                                  "catalog an installed package ships (entry point group egress_matrix.catalogs). Append new "
                                                  "ones: their Azure priority bands follow this order.")
    source_groups: dict[str, tuple[str, ...]] = Field(
        {}, alias="sourceGroups", json_schema_extra={"structured": True}, examples=[{"payments": ["10.50.32.0/24"]}],
        description="Source groups beyond the five roles: name -> source CIDRs (e.g. a node pool's subnet). Own entries name a group "
                    "as their role; every target enforces it on its own (an IP Group, a security group, a squid src ACL).")
    entries: tuple[StackEntry, ...] = Field(
        (), alias="entries", json_schema_extra={"structured": True},
        description="One-off own entries: id, destination, protocol, ports, role (a role or a source group), purpose, owner, "
                    "reference, optional expires (YYYY-MM-DD), as in the matrix's schema. Their ids become stack/<id>.")
    container_registries: tuple[ContainerRegistry, ...] = Field(
        (), alias="containerRegistries", json_schema_extra={"structured": True},
        description="The stack's private container registries: each expands to the hosts a pull touches (matrix/registry-kinds.yaml, "
                    "cited): type acr (name, regions, dataEndpoints), ecr (account, region), gar (location), ghcr, or generic (host, "
                    "redirectHosts); with owner, reference, optional expires and role (a role or a source group; default nodes).")
    runs_on: dict[str, tuple[Place, ...]] = Field(
        {}, alias="runsOn", json_schema_extra={"structured": True},
        examples=[{"seed": {"cloud": "aws", "region": "eu-central-1"}, "nodes": [{"cloud": "aws", "region": "eu-west-1"}, {"cloud": "vsphere"}]}],
        description="Where each role's (or source group's) machines run: a place {cloud, region}, or a list of places when they run in "
                    "several; clouds aws, azure, gcp, ibmcloud, alibabacloud, openstack, vsphere, nutanix, kubevirt, baremetal, other "
                    "(the region is required on aws, azure, gcp). Rows that depend on the client's place follow it (Ubuntu's regional "
                    "mirror on EC2, registry.k8s.io's S3 copy in the client's AWS region).")
    allow_broad_egress: Optional[Reason] = Field(None, alias="allowBroadEgress",
                                              description="Accept egress beyond maxPublicShare / maxPortSpan for this stack (destinations, "
                                                          "role sources, noProxy): the reason, e.g. 'lab cluster without a firewall, ticket OPS-42'.")

    @field_validator("service_cidrs", "pod_cidrs", "machine_cidrs", "region_cidrs", "node_egress_cidrs", "kkp_seed_pod_cidrs",
                     "api_server_allowed_cidrs", "kkp_seed_default_api_server_ranges", "kkp_seed_nodeport_proxy_source_ranges", "ibm_control_plane_cidrs", "node_sources",
                     "control_plane_sources", "seed_sources", "bastion_sources", "workstation_sources")
    @classmethod
    def _cidrs(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        return _cidr_list(values)

    @field_validator("catalogs")
    @classmethod
    def _catalogs(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            parse_catalog_ref(value)
        if len(set(values)) != len(values):
            twice = next(v for v in values if values.count(v) > 1)
            raise AddressError(f"'{twice}' is listed twice", "list each catalog once")
        return values

    @field_validator("container_registries")
    @classmethod
    def _registries(cls, values: tuple[ContainerRegistry, ...]) -> tuple[ContainerRegistry, ...]:
        return check_registry_list(values)

    @field_validator("runs_on", mode="before")
    @classmethod
    def _places(cls, value: object) -> object:
        return as_places(value)

    @field_validator("source_groups")
    @classmethod
    def _groups(cls, values: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        return check_groups(values)

    @field_validator("custom_dns_ips", "ibm_public_gateway_ips")
    @classmethod
    def _ips(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            parse_ip(value)
        return values

    @field_validator("api_server_ip", "ibm_master_ip", "azure_firewall_private_ip", "egress_proxy_cluster_ip", "node_local_dns_ip")
    @classmethod
    def _ip(cls, value: Optional[str]) -> Optional[str]:
        if value is not None:
            parse_ip(value)
        return value

    @field_validator("azure_key_vault_names")
    @classmethod
    def _key_vault_names(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            if not _KEY_VAULT_NAME.fullmatch(value) or "--" in value:
                raise AddressError(f"'{value}' is not a Key Vault name",
                                   "write the vault's name in lower case: 3-24 letters, digits and single '-', starting with a letter")
        return values

    @field_validator("azure_monitor_dces")
    @classmethod
    def _dces(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            if not _DCE.fullmatch(value):
                raise AddressError(f"'{value}' is not a data collection endpoint prefix",
                                   "write the part of the DCE's logs ingestion URL before '.ingest.', in lower case, "
                                   "e.g. 'mydce-a1b2.westeurope-1' for https://mydce-a1b2.westeurope-1.ingest.monitor.azure.com")
        return values

    @field_validator("apps_domain", "kkp_domain")
    @classmethod
    def _domain(cls, value: Optional[str]) -> Optional[str]:
        return None if value is None else parse_fqdn(value)

    @field_validator("base_domain")
    @classmethod
    def _base_domain(cls, value: Optional[str]) -> Optional[str]:
        return None if value is None else parse_domain(value)  # OpenShift takes a single label too (its own tests use 'com')

    @field_validator("no_proxy")
    @classmethod
    def _no_proxy_entries(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            parse_no_proxy_entry(value)
        return values

    @field_validator("http_proxy", "https_proxy", "proxy_readiness_endpoints", "openstack_auth_url", "openstack_endpoints", "bmc_addresses")
    @classmethod
    def _url_hosts(cls, value: Any, info: ValidationInfo) -> Any:
        for url in (value if isinstance(value, tuple) else (value,)):
            if url is not None:  # every URL-valued setting (and azureArmEndpoint below): its host is one host (egress/url_hosts.py)
                check_url_host(url, bare=info.field_name == "bmc_addresses")
        return value

    @field_validator("azure_arm_endpoint")
    @classmethod
    def _arm_endpoint(cls, value: Optional[str]) -> Optional[str]:
        # OpenShift puts the endpoint in status.noProxy, a ','-joined list
        if value is not None and "," in value:
            raise AddressError("the URL holds a ',', which would start another noProxy entry", "give the one ARM endpoint URL")
        if value is not None:
            check_url_host(value)
        return value

    @field_validator("azure_ip_group_ids")
    @classmethod
    def _ip_group_ids(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            role, sep, resource_id = value.partition("=")
            if not sep or not re.fullmatch(GROUP_NAME, role) or not _IP_GROUP_ID.fullmatch(resource_id):  # a role or a source group
                raise AddressError(f"'{value}' is not role=<IP Group resource id> (or group=<id>)",
                                   "write e.g. 'nodes=/subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Network/ipGroups/<name>'")
        return values

    @field_validator("azure_hub_groups")
    @classmethod
    def _hub_groups(cls, values: Optional[tuple[str, ...]]) -> Optional[tuple[str, ...]]:
        names = set()
        for value in values or ():
            name, sep, priority = value.partition("=")
            if not sep or not re.fullmatch(r"[A-Za-z0-9][-\w.]{0,79}", name) or not re.fullmatch(r"[1-9][0-9]{2,4}", priority) or not 100 <= int(priority) <= 65000:
                raise AddressError(f"'{value}' is not <rule collection group name>=<priority>",
                                   "write e.g. 'hub-platform=100': a group on the policy and its priority, 100-65000")
            if name in names:
                raise AddressError(f"rule collection group '{name}' is given twice", "give each group once")
            names.add(name)
        return values

    @field_validator("aws_rule_group_capacities")
    @classmethod
    def _rule_group_capacities(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        names = set()
        for value in values:
            name, sep, capacity = value.partition("=")
            if not sep or not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,127}", name) or not re.fullmatch(r"[1-9][0-9]{0,4}", capacity) or int(capacity) > 30_000:
                raise AddressError(f"'{value}' is not <rule group name>=N",
                                   "write e.g. 'egress-kkp-nodes-rules=100': the group's logical name (egress diff names it) and its "
                                   "capacity, 1-30000")
            if name in names:
                raise AddressError(f"rule group '{name}' is given twice", "give each group once")
            names.add(name)
        return values

    @field_validator("aws_security_group_counts", "aws_security_groups_attached")
    @classmethod
    def _role_counts(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        roles = set()
        for value in values:
            role, sep, count = value.partition("=")  # a role or a source group (_counted_groups_exist checks which)
            if not sep or not re.fullmatch(GROUP_NAME, role) or not re.fullmatch(r"[1-9][0-9]?", count) or int(count) > 16:
                raise AddressError(f"'{value}' is not role=N", f"write e.g. 'nodes=2': a role ({', '.join(ROLE_SOURCE_KEYS)}) or a "
                                                                "source group, and 1-16")
            if role in roles:
                raise AddressError(f"role '{role}' is given twice", "give each role once")
            roles.add(role)
        return values

    @model_validator(mode="after")
    def _counted_groups_exist(self) -> "Profile":
        # Source groups are known only once sourceGroups is read (it comes later in the model): checked here, as the field.
        for name in self.runs_on:
            try:
                check_places({name: self.runs_on[name]}, (*ROLE_SOURCE_KEYS, *sorted(self.source_groups)))
            except AddressError as problem:
                raise ValidationError.from_exception_data("Profile", [InitErrorDetails(
                    type="value_error", loc=("runsOn", name), input=name, ctx={"error": problem})]) from None
        for field in ("aws_security_group_counts", "aws_security_groups_attached"):
            for index, value in enumerate(getattr(self, field)):
                name = value.partition("=")[0]
                if name not in ROLE_SOURCE_KEYS and name not in self.source_groups:
                    known = ", ".join(sorted(self.source_groups)) or "none"
                    problem = AddressError(f"'{name}' is neither a role nor a source group of the stack",
                                           f"use a role ({', '.join(ROLE_SOURCE_KEYS)}) or a group egress-matrix:sourceGroups names "
                                           f"(the stack's: {known})")
                    raise ValidationError.from_exception_data("Profile", [InitErrorDetails(
                        type="value_error", loc=(Profile.model_fields[field].alias or field, index), input=value, ctx={"error": problem})])
        return self

    @field_validator("targets")
    @classmethod
    def _cloud_targets_name_the_cluster(cls, values: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        # Cloud resources carry the cluster's name; falling back to the stack name would make a stack rename replace them all.
        if not values:  # omitted is a matrix-only stack; an explicit empty list reads like 'remove everything'
            raise AddressError("an empty list deploys nothing, so pulumi up would delete every firewall resource the stack deployed",
                               "list the targets the stack keeps (azure, aws, kubernetes), or remove the setting for a matrix-only stack")
        clouds = [name for name in values if name in ("azure", "aws")]
        if clouds and "cluster_name" in info.data and not info.data["cluster_name"]:
            raise AddressError(f"target{'s' if len(clouds) > 1 else ''} {' and '.join(clouds)} need{'' if len(clouds) > 1 else 's'} "
                               "egress-matrix:clusterName (the name its firewall resources carry; it no longer defaults to the stack name, "
                               "so renaming a stack cannot replace them)",
                               "set egress-matrix:clusterName: to keep what an earlier update deployed, use the name its resources carry "
                               "(egress-<clusterName>-..., the stack name if it was unset)")
        return values

    @field_validator("aws_name_addresses")
    @classmethod
    def _name_addresses(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            host, sep, cidrs = value.partition("=")
            if not sep or not cidrs:
                raise AddressError(f"'{value}' is not host=CIDR[,CIDR]", "write e.g. '0.rhel.pool.ntp.org=203.0.113.10/32,198.51.100.7/32'")
            parse_fqdn(host)
            for cidr in cidrs.split(","):
                parse_cidr(cidr)
        return values

    def aws_addresses_of(self) -> dict[str, tuple[str, ...]]:
        """host -> the CIDRs the stack gives for it (awsNameAddresses)."""
        return {host: tuple(cidrs.split(",")) for host, _, cidrs in (v.partition("=") for v in self.aws_name_addresses)}

    def aws_security_group_count(self, role: str) -> int:
        """Security groups the stack creates for ``role`` (awsSecurityGroupCounts, default 1)."""
        return _role_count(self.aws_security_group_counts, role)

    def aws_security_groups_attached_count(self, role: str) -> int:
        """How many of ``role``'s groups its network interfaces carry (awsSecurityGroupsAttached, default 1)."""
        return _role_count(self.aws_security_groups_attached, role)

    def azure_existing_ip_groups(self) -> dict[str, str]:
        return dict(value.split("=", 1) for value in self.azure_ip_group_ids)

    @field_validator("vsphere_endpoints")
    @classmethod
    def _hosts(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            _parse_host(value)
        return values

    @field_validator("nutanix_prism_central")
    @classmethod
    def _host_port(cls, value: Optional[str]) -> Optional[str]:
        if value is not None:
            _split_host_port(value)
        return value

    @field_validator("openstack_auth_url")
    @classmethod
    def _openstack_auth(cls, value: Optional[str]) -> Optional[str]:
        if value is not None:
            openstack_endpoint(value)
        return value

    @field_validator("openstack_endpoints")
    @classmethod
    def _openstack_endpoints(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        hosts_and_ports((openstack_endpoint(value) for value in values), "openstackEndpoints")
        return values

    @field_validator("bmc_addresses")
    @classmethod
    def _bmc_addresses(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        parsed = [bmc_endpoint(value) for value in values]
        for protocol in ("redfish", "ipmi"):
            hosts_and_ports(((host, port) for kind, host, port in parsed if kind == protocol), f"bmcAddresses ({protocol})")
        return values

    @field_validator("ibm_master_endpoints")
    @classmethod
    def _ibm_master_endpoints(cls, values: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        master_hosts_and_ports(values, info.data.get("ibm_region"))
        return values

    @field_validator("offline_registry")
    @classmethod
    def _registry(cls, value: Optional[str]) -> Optional[str]:
        if value is not None:
            _split_host_port(value)
        return value

    @field_validator("*", mode="before")
    @classmethod
    def _no_credentials(cls, value: Any, info: ValidationInfo) -> Any:
        # before any other check, so no later error quotes them; only the secret proxyCredentials carries credentials
        if info.field_name != "proxy_trusted_ca":
            check_no_private_key(value)  # a key pasted where no PEM belongs: refused with the same warning as in proxyTrustedCa
        return refuse_credentials(info.field_name, value)

    @field_validator("proxy_inspects_tls")
    @classmethod
    def _inspection_needs_ca(cls, value: bool, info: ValidationInfo) -> bool:
        # A proxy that re-signs TLS breaks every client that does not trust its CA: the cluster must get that CA.
        if value and "proxy_trusted_ca" in info.data and not info.data["proxy_trusted_ca"]:
            raise AddressError("a TLS-inspecting proxy re-signs every server certificate, which the cluster's clients refuse without its CA",
                               "set egress-matrix:proxyTrustedCa to the PEM CA certificate the proxy signs with")
        return value

    @field_validator("probe_job")
    @classmethod
    def _probe_job_needs_kubernetes(cls, value: bool, info: ValidationInfo) -> bool:
        # Only the kubernetes target renders (and with probeDeploy deploys) the Jobs: elsewhere the setting did nothing.
        targets = info.data.get("targets")
        if value and targets is not None and "kubernetes" not in targets:
            raise AddressError(f"the probe Jobs are rendered by the kubernetes target, and targets is [{', '.join(targets)}]",
                               "add kubernetes to egress-matrix:targets (it then renders only the probe unless egressProxy, "
                               "clusterProxy or apiServerAllowlist is set), or remove probeJob and run 'egress probe --stack "
                               "<stack> --role <role>' from a machine of that role")
        return value

    @field_validator("probe_deploy")
    @classmethod
    def _probe_deploy_needs_job(cls, value: bool, info: ValidationInfo) -> bool:
        if value and not info.data.get("probe_job"):
            raise AddressError("probeDeploy deploys the probe Jobs that probeJob renders, and probeJob is not on",
                               "set egress-matrix:probeJob: true as well, or remove probeDeploy")
        return value

    @field_validator("probe_namespace")
    @classmethod
    def _probe_namespace_not_the_proxy_s(cls, value: str, info: ValidationInfo) -> str:
        # Both render (and the program registers) a Namespace object of that name: two owners of one object.
        if info.data.get("probe_job") and info.data.get("egress_proxy") and value == info.data.get("egress_proxy_namespace"):
            raise AddressError(f"the egress proxy's namespace is '{value}' too, and each renders its own Namespace object of that name",
                               "give probeNamespace another name (default egress-probe)")
        return value

    @field_validator("probe_roles")
    @classmethod
    def _probe_roles_in_cluster(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        outside = [v for v in values if v in ("bastion", "workstation")]
        if outside:
            raise AddressError(f"'{outside[0]}' does not run inside the cluster, so a Job cannot probe from where it runs",
                               f"run 'egress probe --role {outside[0]}' on the {outside[0]} itself, and keep probeRoles to nodes, control-plane, seed")
        return values

    @field_validator("location", mode="before")
    @classmethod
    def _azure_location(cls, value: Any) -> Any:
        return azure_location(value)  # 'West Europe' (a display name) is westeurope, as Azure reads it

    @field_validator("openshift_platform", mode="before")
    @classmethod
    def _install_config_platform(cls, value: Any) -> Any:
        return openshift_platform(value)  # install-config's 'vsphere' is the Infrastructure's VSphere

    @field_validator("no_proxy", mode="before")
    @classmethod
    def _comma_no_proxy(cls, value: Any) -> Any:
        return split_no_proxy(value)  # an item 'a,b,c' (OpenShift's own noProxy string) is three entries

    @field_validator("proxy_trusted_ca")
    @classmethod
    def _certificates_only(cls, value: Optional[str]) -> Optional[str]:
        if value is not None:
            check_certificates_only(value)  # a CA's private key pasted with its certificate: refused, never quoted
            return bundle_as_deployed(value)  # comment lines between blocks are never deployed (egress/pem.py)
        return value

    # -- derived values -------------------------------------------------------------------------
    def role_sources(self, role: str) -> tuple[str, ...]:
        """The source CIDRs of a role or of a source group."""
        if role in self.source_groups:
            return self.source_groups[role]
        return getattr(self, attribute_for_key(ROLE_SOURCE_KEYS[role]))

    def places(self, role: str) -> tuple[Place, ...]:
        """Where a role's (or group's) machines run, as the stack says (runsOn); () when it does not."""
        return self.runs_on.get(role, ())

    def enforced(self, roles: Iterable[str]) -> tuple[str, ...]:
        """What a target enforces: the roles its setting lists (azureRoles, awsRoles, egressProxyRoles), and every source group."""
        return (*roles, *sorted(self.source_groups))

    @staticmethod
    def source_setting(role: str) -> str:
        """The stack key that holds a role's or group's sources, for error messages."""
        return ROLE_SOURCE_KEYS.get(role) or f"sourceGroups.{role}"

    @property
    def stack(self) -> str:
        return self._stack

    def has_secret(self, key: str) -> bool:
        return key in self._secrets

    def with_secrets(self, keys) -> "Profile":
        """A copy that knows which secret settings the stack sets (the Pulumi program reads their values itself)."""
        copy = self.model_copy()
        copy._stack, copy._secrets = self._stack, frozenset(keys)
        return copy

    @property
    def cluster(self) -> str:
        """The name this cluster's resources carry on shared infrastructure: clusterName, else the stack name (only for
        targets that name nothing after it: the cloud targets require clusterName)."""
        if self.cluster_name:
            return self.cluster_name
        if not re.fullmatch(CLUSTER_NAME_PATTERN, self._stack):
            raise ProfileError(f"stack '{self._stack}'", "", f"config.{PROJECT}:clusterName", None,
                               f"unset, and the stack name '{self._stack}' is not a valid cluster name for every target's resource names "
                               "(lower-case letters, digits and '-', 1-40 characters, starting and ending with a letter or digit)",
                               "set egress-matrix:clusterName")
        return self._stack

    @property
    def effective_apps_domain(self) -> Optional[str]:
        if self.apps_domain:
            return self.apps_domain
        if self.cluster_name and self.base_domain:
            return f"apps.{self.cluster_name}.{self.base_domain}"
        return None

    @property
    def offline(self) -> bool:
        return self.offline_registry is not None

    @property
    def custom_dns(self) -> bool:
        return bool(self.custom_dns_ips)

    @property
    def offline_registry_host(self) -> Optional[str]:
        return _split_host_port(self.offline_registry)[0] if self.offline_registry else None

    @property
    def offline_registry_port(self) -> Optional[int]:
        return _split_host_port(self.offline_registry)[1] if self.offline_registry else None


def _role_count(values: tuple[str, ...], role: str) -> int:
    return next((int(v.partition("=")[2]) for v in values if v.partition("=")[0] == role), 1)


def _parse_host(value: str) -> str:
    try:
        parse_ip(value)
        return value
    except AddressError:
        return parse_fqdn(value)


def _split_host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise AddressError(f"'{value}' is not host:port", "write e.g. '172.20.0.2:5000' or 'registry.example.com:443'")
    number = int(port)
    if not 1 <= number <= 65535:
        raise AddressError(f"port {number} is outside 1-65535", "write a port between 1 and 65535")
    _parse_host(host)
    return host, number


# Settings that are Pulumi secrets: only ever set with `pulumi config set --secret`, read by the program with
# get_secret, never held by the Profile (so never in plain output).
SECRET_KEYS = {
    "proxyCredentials": "user:password for the proxy (OpenShift Proxy, KKP node and kubeadm settings carry them in their URLs). "
                        "Secret: pulumi config set --secret egress-matrix:proxyCredentials 'user:password'.",
}


def config_keys() -> dict[str, dict[str, Any]]:
    """Key -> Pulumi project config declaration (type, description, items), from the model and SECRET_KEYS."""
    declarations: dict[str, dict[str, Any]] = {key: {"type": "string", "secret": True, "description": text} for key, text in SECRET_KEYS.items()}
    for name, field in Profile.model_fields.items():
        if _structured(field):
            continue
        annotation = str(field.annotation)
        if "tuple" in annotation:
            item = "integer" if "tuple[int" in annotation else "string"
            decl: dict[str, Any] = {"type": "array", "items": {"type": item}}
        elif "bool" in annotation:
            decl = {"type": "boolean"}
        elif "int" in annotation:
            decl = {"type": "integer"}
        else:
            decl = {"type": "string"}
        decl["description"] = field.description
        declarations[field.alias or name] = decl
    return declarations


def _structured(field: Any) -> bool:
    return bool((field.json_schema_extra or {}).get("structured"))


def structured_keys() -> dict[str, dict[str, Any]]:
    """Settings that hold objects: Pulumi.yaml cannot declare them (its types are string, integer, boolean and arrays of
    them), so the CLI passes them on unchecked, as JSON text, and they are checked here (egress/own_settings.py)."""
    return {field.alias: {"type": "object", "description": field.description}
            for field in Profile.model_fields.values() if _structured(field)}


def declared_settings() -> dict[str, dict[str, Any]]:
    """Every setting of ours: Pulumi.yaml's declarations and the structured settings."""
    return {**config_keys(), **structured_keys()}


def attribute_for_key(key: str) -> str:
    """The Profile attribute behind a stack key (``nodeSources`` -> ``node_sources``)."""
    for name, field in Profile.model_fields.items():
        if field.alias == key:
            return name
    raise KeyError(key)


def profile_from_config(values: Mapping[str, Any], file: str | Path, stack: str, lines: Optional[Mapping[str, int]] = None,
                        problems: Iterable[ProfileError] = (), broken: Iterable[str] = ()) -> Profile:
    """Build a Profile from ``{key: value}`` (keys without the project namespace). Errors name the file (and line); all
    of them come at once (``problems``: those found reading the file; ``broken``: settings they concern, whose values
    are missing here and whose follow-on errors are not reported)."""
    known = declared_settings()
    found = list(problems)
    secrets = {key for key in values if key in SECRET_KEYS}
    values = {key: value for key, value in values.items() if key not in SECRET_KEYS}
    skip = set(broken)
    for key, value in values.items():
        if key not in known:
            # never shown: an unknown key's meaning (a secret?) is unknown, and its value does not help fix the key
            meant = secret_meant(key, SECRET_KEYS)
            fix = (f"remove it and run: pulumi config set --secret {PROJECT}:{meant} '<value>' (and rotate the value if it was in plain "
                   "text)" if meant else did_you_mean(key, known, listing="settings"))
            found.append(_error(file, stack, lines, key, HIDDEN, "unknown setting", fix))
            skip.add(closest(key, known) or key)
    values = {key: value for key, value in values.items() if key in known}
    for key in skip & set(known):
        values.setdefault(key, _UNREADABLE)  # fails the field, so validators that depend on it skip it (pydantic's info.data)
    try:
        profile = Profile.model_validate(dict(values))
    except ValidationError as exc:
        for error in exc.errors():
            key = str(error["loc"][0]) if error["loc"] else "?"
            if key not in skip:
                found.append(_validation_error(file, stack, key, error, values.get(key, error.get("input")), lines))
        raise ProfileError.of(found) from None
    if found:
        raise ProfileError.of(found)
    profile._stack = stack
    profile._secrets = frozenset(secrets)
    profile._lines = dict(lines or {})
    return profile


class _Unreadable:
    """Stands in for a setting the file reader already refused: no field accepts it."""


_UNREADABLE = _Unreadable()


def _error(file: str | Path, stack: str, lines: Optional[Mapping[str, int]], path: str, value: Any, problem: str, fix: str) -> ProfileError:
    line = _deepest_line(lines or {}, path)
    return ProfileError(file, f"stack '{stack}', line {line}" if line else f"stack '{stack}'", f"config.{PROJECT}:{path}", value, problem, fix)


def _validation_error(file: str | Path, stack: str, key: str, error: dict[str, Any], value: Any,
                      lines: Optional[Mapping[str, int]]) -> ProfileError:
    """One pydantic error as a ProfileError in our words (egress/profile_messages.py), naming the item or field."""
    field = next((f for f in Profile.model_fields.values() if f.alias == key), None)
    description = (field.description or "") if field else ""
    if key in structured_keys():
        path = (key + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"][1:])).replace(".[", "[")
        nested = {"entries": StackEntry, "containerRegistries": ContainerRegistry, "runsOn": Place}.get(key)
        names = sorted(f.alias or n for n, f in nested.model_fields.items()) if nested else None
        problem, fix = explain(key, error, description=description, fields=names, item=True)
        if error["type"] == "string_type":
            fix = (f"quote it in the stack file, or set it with pulumi config set --path '{PROJECT}:{path}' '<value>' --type string "
                   "(--path stores a number otherwise)")
        return _error(file, stack, lines, path, error.get("input"), problem, fix)
    problem, fix = explain(key, error, description=description, metadata=field.metadata if field else (),
                           examples=field.examples if field else None)
    if len(error["loc"]) > 1:
        problem = f"item {error['loc'][1]}: {problem}"
    return _error(file, stack, lines, key, value, problem, fix)


def _deepest_line(lines: Mapping[str, int], path: str) -> Optional[int]:
    while path:
        if path in lines:
            return lines[path]
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""
    return None


def load_profile(stack_file: Path, stack: str) -> Profile:
    """Read ``stacks/Pulumi.<stack>.yaml`` strictly (egress/stack_file.py) and return its validated Profile: the text
    the CLI would hand the program, read by the program's rules."""
    parsed = read_stack_file(stack_file, stack, project=PROJECT, declared=declared_settings())
    return _profile_from_text(parsed.settings.get, stack_file, stack, parsed.secret_settings, parsed.lines, parsed.problems, parsed.broken)


def profile_from_pulumi_config(get_raw: Any, stack: str, keys: Optional[Iterable[str]] = None) -> Profile:
    """Build the Profile inside a Pulumi program. ``get_raw(key)`` returns the CLI's text or None; ``keys``, if given,
    are all the config keys the engine handed over (``namespace:name``): misspelt ones of ours are refused."""
    where = f"Pulumi config of stack '{stack}'"
    misspelt = []
    for full_key in sorted(keys or ()):
        try:
            check_key(full_key, PROJECT, declared_settings())
        except SettingProblem as exc:
            misspelt.append(ProfileError(where, f"stack '{stack}'", f"config.{full_key}", "(not shown)", exc.problem, exc.fix))
    if misspelt:
        raise ProfileError.of(misspelt)
    secrets = {key for key in SECRET_KEYS if get_raw(key) is not None}  # the program reads their values with get_secret
    return _profile_from_text(lambda key: None if key in SECRET_KEYS else get_raw(key), where, stack, secrets)


def _profile_from_text(get_raw: Any, file: str | Path, stack: str, secrets: Iterable[str], lines: Optional[Mapping[str, int]] = None,
                       problems: Iterable[ProfileError] = (), broken: Iterable[str] = ()) -> Profile:
    """The Profile from each setting's text as the CLI hands it to a program (stack_rules.parse_setting)."""
    values: dict[str, Any] = {}
    found, unreadable = list(problems), set(broken)
    for key, decl in declared_settings().items():
        raw = get_raw(key)
        if raw is None:
            continue
        try:
            values[key] = parse_setting(raw, decl)
        except SettingProblem as exc:
            found.append(_error(file, stack, lines, key, raw, exc.problem, exc.fix))
            unreadable.add(key)
    return profile_from_config({**values, **{key: None for key in secrets}}, file, stack, lines, found, unreadable)
