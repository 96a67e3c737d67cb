"""What ``egress init`` asks for each platform and what it leaves commented in the stack file (data, pure).

What a setting means comes from its description in egress/profile.py (the file's comments quote it); this module adds
only what init needs beyond that: which settings a platform cannot resolve without (asked, or one error naming the
flag), where a value comes from on the platform's own tools, and which settings are worth filling later (written as
commented lines). Anything else a platform's rows need is found by resolving the draft (egress/init.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Ask:
    key: str  # the stack setting it fills
    flag: str  # the init option that answers it
    question: str  # asked when stdin is a terminal
    origin: str  # where the value comes from: the file's comment
    default: Optional[str] = None  # used when not answered, and said so in the file
    listed: bool = False  # the setting is a list (an answer may hold several, comma-separated)


@dataclass(frozen=True)
class Later:
    key: str  # a setting worth filling once its value is known: a commented line
    sample: str  # what the commented line shows
    origin: str


CLOUD = Ask("cloud", "--cloud", "Azure cloud (azure-public, azure-china, azure-usgov)",
            "the cloud the cluster runs in: azure-china is Azure operated by 21Vianet, azure-usgov Azure Government",
            default="azure-public")
LOCATION = Ask("location", "--location", "Azure location of the cluster (e.g. westeurope)",
               "az aks show -g <resource group> -n <cluster> --query location (the programmatic name, not 'West Europe')")
AWS_REGION = Ask("awsRegion", "--region", "AWS region (e.g. eu-central-1)", "the region of the cluster's VPC (aws configure get region)")

# Per platform (matrix/<platform>.yaml): what its rows cannot resolve without, and what is worth filling later.
PLATFORM_ASKS: dict[str, tuple[Ask, ...]] = {
    "aks": (CLOUD, LOCATION),
    "openshift": (
        Ask("openshiftPlatform", "--openshift-platform", "OpenShift infrastructure platform (aws, azure, gcp, vsphere, baremetal, none, ...)",
            "install-config.yaml's platform, or: oc get infrastructure cluster -o jsonpath='{.status.platformStatus.type}'"),
        Ask("baseDomain", "--base-domain", "OpenShift base domain (e.g. example.com)", "install-config.yaml baseDomain"),
    ),
    "ibm-vpc": (Ask("ibmRegion", "--region", "IBM Cloud region (e.g. us-south)", "ibmcloud ks cluster get --cluster <name> (its location's region)"),),
    "datadog": (Ask("datadogSite", "--set datadogSite=<site>", "Datadog site (e.g. datadoghq.eu)", "the Agent's site parameter (DD_SITE)"),),
}

# OpenShift calls its infrastructure's APIs: the setting that names them, per platform type (openshiftPlatform).
OPENSHIFT_PLATFORM_ASKS: dict[str, Ask] = {
    "AWS": AWS_REGION,
    "VSphere": Ask("vsphereEndpoints", "--set vsphereEndpoints=<vcenter host>", "vCenter host (e.g. vcenter.example.com)",
                   "install-config.yaml platform.vsphere.vcenters[].server", listed=True),
    "Nutanix": Ask("nutanixPrismCentral", "--set nutanixPrismCentral=<host:port>", "Prism Central host:port (e.g. prism.example.com:9440)",
                   "install-config.yaml platform.nutanix.prismCentral endpoint address and port"),
    "OpenStack": Ask("openstackAuthUrl", "--set openstackAuthUrl=<url>", "Keystone auth URL (e.g. https://keystone.example.com:5000/v3)",
                     "clouds.yaml auth.auth_url"),
}

LATER: dict[str, tuple[Later, ...]] = {
    "aks": (Later("apiServerIp", "<the API server's public IP>", "az aks show --query fqdn, resolved; known once the cluster exists"),),
    "openshift": (
        Later("machineCidrs", "[<machine network CIDR>]", "install-config.yaml networking.machineNetwork[].cidr"),
        Later("serviceCidrs", "[172.30.0.0/16]", "install-config.yaml networking.serviceNetwork"),
        Later("podCidrs", "[10.128.0.0/14]", "install-config.yaml networking.clusterNetwork[].cidr"),
    ),
    "kkp": (
        Later("seedSources", "[<CIDR of the seed cluster's nodes>]", "the seed cluster's node subnet"),
        Later("bastionSources", "[<bastion host>/32]", "the host KubeOne and kubermatic-installer run from"),
        Later("kkpDomain", "<kkp.example.com>", "KubermaticConfiguration spec.ingress.domain"),
    ),
    "ibm-vpc": (
        Later("ibmMasterEndpoints", "[<https://c100.<region>.containers.cloud.ibm.com:<port>>]",
              "ibmcloud ks cluster get (Public / Private Service Endpoint URL)"),
        Later("workstationSources", "[<CIDR of the workstations>]", "the office or VPN range kubectl runs from"),
    ),
}

# Targets: what each needs, and what it is worth filling later.
TARGET_LATER: dict[str, tuple[Later, ...]] = {
    "azure": (Later("azureFirewallId", "<resource id of the Azure Firewall>", "az network firewall show --query id (its logs then go to "
                                                                                "azureLogAnalyticsWorkspaceId)"),),
    "aws": (Later("awsVpcId", "<vpc-...>", "aws ec2 describe-vpcs (the VPC of the nodes)"),
            Later("awsFirewallPolicy", "true", "create a STRICT_ORDER firewall policy referencing the rule groups")),
    "kubernetes": (),
}

# The cluster-wide proxy settings each platform has (clusterProxy); other platforms get kubeadm's ConfigMap.
CLUSTER_PROXY = {"openshift": "openshift", "kkp": "kkp", "aks": "aks"}

# Stack settings init answers with its own options (any other: --set KEY=VALUE).
FLAGS = {
    "platforms": "--platform", "cloud": "--cloud", "location": "--location", "awsRegion": "--region", "ibmRegion": "--region",
    "openshiftPlatform": "--openshift-platform", "baseDomain": "--base-domain", "clusterName": "--cluster-name",
    "targets": "--target", "nodeSources": "--node-sources", "features": "--feature", "httpProxy": "--http-proxy",
    "azurePolicyId": "--azure-policy-id", "azurePriorityBase": "--priority-base", "azureResourceGroup": "--resource-group",
    "azureSubscriptionId": "--subscription-id",
}


def flag_for(key: str) -> str:
    return FLAGS.get(key) or f"--set {key}=<value>"
