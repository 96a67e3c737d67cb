"""Placeholders a matrix entry may use, written ``{name}``, and where each gets its value.

A placeholder the stack does not fill is an error when the entry applies, never a silent literal: the
resolver reports it with the stack key to set. ``sample`` is used to validate destinations at load time.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Literal, Optional

from .ibm_endpoints import master_hosts_and_ports

from . import infra_endpoints as infra

if TYPE_CHECKING:
    from .models import Catalog, Conditions
    from .profile import Profile

PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True)
class Placeholder:
    name: str
    kind: Literal["label", "ip", "cidr", "host", "port", "url"]
    stack_key: str  # the egress-matrix:<key> that fills it
    description: str
    sample: str
    values: Callable[["Profile", "Catalog"], tuple[str, ...]]
    derived_from: tuple[str, ...] = ()  # stack keys it is computed from when stack_key itself is unset
    # Filled per client rather than per stack (the role or source group of the entry): values() is then empty.
    for_role: Optional[Callable[["Profile", str, "Conditions"], tuple[str, ...]]] = None

    @property
    def setting(self) -> str:
        """What to set in the stack to fill it, for error messages."""
        keys = f"egress-matrix:{self.stack_key}"
        return keys + (f" (or {' and '.join('egress-matrix:' + k for k in self.derived_from)})" if self.derived_from else "")


def _one(value: object) -> tuple[str, ...]:
    return () if value is None else (str(value),)


def _service_tag_region(profile: "Profile", catalog: "Catalog") -> tuple[str, ...]:
    if profile.cloud is None or profile.location is None:
        return ()
    return _one(catalog.service_tag_region(profile.cloud, profile.location))


def _role_region(profile: "Profile", role: str, when: "Conditions") -> tuple[str, ...]:
    """The regions of the role's places that the row's runs_on / runs_on_regions select."""
    from .runs_on import matching

    return tuple(sorted({p.region for p in matching(profile.places(role), when.runs_on, when.runs_on_regions) if p.region}))


PLACEHOLDERS: dict[str, Placeholder] = {
    p.name: p
    for p in (
        Placeholder("location", "label", "location", "Azure location (region) of the cluster", "westeurope",
                    lambda p, c: _one(p.location)),
        Placeholder("service_tag_region", "label", "location",
                    "the region part of Azure regional service tags (differs from the location for some regions)",
                    "westeurope", _service_tag_region),
        Placeholder("aws_region", "label", "awsRegion", "AWS region", "eu-central-1", lambda p, c: _one(p.aws_region)),
        Placeholder("ibm_region", "label", "ibmRegion", "IBM Cloud region", "us-south", lambda p, c: _one(p.ibm_region)),
        Placeholder("api_server_ip", "ip", "apiServerIp", "public IP of the API server (known after creation)", "192.0.2.1",
                    lambda p, c: _one(p.api_server_ip)),
        Placeholder("region_cidrs", "cidr", "regionCidrs", "the Azure region's CIDRs", "192.0.2.0/24",
                    lambda p, c: p.region_cidrs),
        Placeholder("custom_dns_ip", "ip", "customDnsIps", "custom DNS server IPs", "192.0.2.53",
                    lambda p, c: p.custom_dns_ips),
        Placeholder("cluster_name", "label", "clusterName", "cluster name", "demo", lambda p, c: _one(p.cluster_name)),
        Placeholder("base_domain", "host", "baseDomain", "cluster base domain", "example.com",
                    lambda p, c: _one(p.base_domain)),
        Placeholder("apps_domain", "host", "appsDomain", "OpenShift ingress domain (default apps.<clusterName>.<baseDomain>)",
                    "apps.demo.example.com", lambda p, c: _one(p.effective_apps_domain), derived_from=("clusterName", "baseDomain")),
        Placeholder("azure_arm_endpoint", "url", "azureArmEndpoint", "Azure Stack Hub ARM endpoint URL",
                    "https://management.local.azurestack.external", lambda p, c: _one(p.azure_arm_endpoint)),
        Placeholder("monitor_dce", "label", "azureMonitorDataCollectionEndpoints",
                    "the cluster's Azure Monitor data collection endpoints (<name>-<id>.<region>-1)", "mydce-a1b2.westeurope-1",
                    lambda p, c: p.azure_monitor_dces),
        Placeholder("key_vault_name", "label", "azureKeyVaultNames", "names of the Key Vaults the cluster reads", "kv-demo",
                    lambda p, c: p.azure_key_vault_names),
        Placeholder("vsphere_endpoint", "host", "vsphereEndpoints", "vCenter API hosts", "vcenter.example.com",
                    lambda p, c: p.vsphere_endpoints),
        Placeholder("kkp_domain", "host", "kkpDomain", "the KKP domain (KubermaticConfiguration spec.ingress.domain)", "kkp.example.com",
                    lambda p, c: _one(p.kkp_domain)),
        Placeholder("ibm_master_ip", "ip", "ibmMasterIp", "IP of the IBM cluster master URL", "192.0.2.2",
                    lambda p, c: _one(p.ibm_master_ip)),
        Placeholder("ibm_etcd_port", "port", "ibmEtcdPort", "etcd port of the IBM cluster master", "30001",
                    lambda p, c: _one(p.ibm_etcd_port)),
        Placeholder("ibm_master_host", "host", "ibmMasterEndpoints", "hosts of the IBM cluster master's service endpoint URLs",
                    "c100.us-south.containers.cloud.ibm.com", lambda p, c: master_hosts_and_ports(p.ibm_master_endpoints)[0]),
        Placeholder("ibm_master_port", "port", "ibmMasterEndpoints", "port of the IBM cluster master's service endpoint URLs", "31234",
                    lambda p, c: master_hosts_and_ports(p.ibm_master_endpoints)[1]),
        Placeholder("offline_registry_host", "host", "offlineRegistry", "host of the private registry mirror",
                    "registry.example.com", lambda p, c: _one(p.offline_registry_host)),
        Placeholder("offline_registry_port", "port", "offlineRegistry", "port of the private registry mirror", "5000",
                    lambda p, c: _one(p.offline_registry_port)),
        Placeholder("runs_on_region", "label", "runsOn", "the region where the entry's role runs (runsOn.<role>.region)", "eu-west-1",
                    lambda p, c: (), for_role=_role_region),
        Placeholder("datadog_site", "host", "datadogSite", "the Datadog site the Agent sends to (its site parameter)", "datadoghq.eu",
                    lambda p, c: _one(p.datadog_site)),
        # OpenShift's infrastructure APIs: host and port from one setting each (egress/infra_endpoints.py).
        Placeholder("nutanix_prism_central_host", "host", "nutanixPrismCentral", "host of Nutanix Prism Central", "prism-central.example.com",
                    lambda p, c: infra.prism_central(p.nutanix_prism_central)[0]),
        Placeholder("nutanix_prism_central_port", "port", "nutanixPrismCentral", "port of Nutanix Prism Central", "9440",
                    lambda p, c: infra.prism_central(p.nutanix_prism_central)[1]),
        Placeholder("openstack_auth_host", "host", "openstackAuthUrl", "host of the OpenStack Keystone auth URL", "keystone.example.com",
                    lambda p, c: infra.openstack_auth(p.openstack_auth_url)[0]),
        Placeholder("openstack_auth_port", "port", "openstackAuthUrl", "port of the OpenStack Keystone auth URL", "5000",
                    lambda p, c: infra.openstack_auth(p.openstack_auth_url)[1]),
        Placeholder("openstack_endpoint_host", "host", "openstackEndpoints", "hosts of the OpenStack catalog endpoints the cluster calls",
                    "compute.example.com", lambda p, c: infra.openstack_catalog(p.openstack_endpoints)[0]),
        Placeholder("openstack_endpoint_port", "port", "openstackEndpoints", "ports of the OpenStack catalog endpoints the cluster calls",
                    "8774", lambda p, c: infra.openstack_catalog(p.openstack_endpoints)[1]),
        Placeholder("bmc_redfish_host", "host", "bmcAddresses", "hosts of the BMCs driven over Redfish", "192.0.2.10",
                    lambda p, c: infra.bmcs(p.bmc_addresses, "redfish")[0]),
        Placeholder("bmc_redfish_port", "port", "bmcAddresses", "ports of the BMCs driven over Redfish", "443",
                    lambda p, c: infra.bmcs(p.bmc_addresses, "redfish")[1]),
        Placeholder("bmc_ipmi_host", "host", "bmcAddresses", "hosts of the BMCs driven over IPMI", "192.0.2.11",
                    lambda p, c: infra.bmcs(p.bmc_addresses, "ipmi")[0]),
        Placeholder("bmc_ipmi_port", "port", "bmcAddresses", "ports of the BMCs driven over IPMI", "623",
                    lambda p, c: infra.bmcs(p.bmc_addresses, "ipmi")[1]),
    )
}


def names_in(text: str) -> list[str]:
    return PLACEHOLDER.findall(text)


def substitute(text: str, values: dict[str, str]) -> str:
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


def with_samples(text: str) -> str:
    return PLACEHOLDER.sub(lambda m: PLACEHOLDERS[m.group(1)].sample, text)
