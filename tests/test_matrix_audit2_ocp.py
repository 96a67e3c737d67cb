"""Issue 20, OpenShift (items 4, 13, 17, 23 and the R2 decision): each fix checked on a resolved stack.

Sources are in the entries' citations (matrix/openshift.yaml) and matrix/sources.yaml.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from egress.addresses import AddressError
from egress.errors import ResolveError
from egress.infra_endpoints import bmc_endpoint, hosts_and_ports, openstack_endpoint
from egress.profile import Profile
from egress.project import open_project
from egress.resolve import resolve

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def catalog():
    return open_project(ROOT).requirements("openshift")[0]


def profile(platform: str, **values) -> Profile:
    return Profile.model_validate({"platforms": ["openshift"], "openshift_platform": platform, "cluster_name": "ocp",
                                   "base_domain": "example.com", **values})


def rows(reqs, *entry_prefixes: str) -> set[tuple]:
    """(role, destination, protocol, ports) of the entries' own requirements (not the hosts they imply) whose ids start with a prefix."""
    return {(r.role, r.destination, r.protocol, ",".join(map(str, r.ports))) for r in reqs
            if not r.via and any(e.startswith(entry_prefixes) for e in r.entry_ids)}


# 4 ------------------------------------------------------------------------------------- infrastructure APIs
def test_the_openshift_stack_names_its_vcenter_for_the_control_plane():
    catalog, stack_profile, _ = open_project(ROOT).requirements("openshift")
    reqs = resolve(catalog, stack_profile)
    assert rows(reqs, "openshift-vsphere") == {("control-plane", "vcenter.example.com", "https", "443")}
    vcenter = next(r for r in reqs if r.destination == "vcenter.example.com")
    assert vcenter.entry_ids == ("openshift-vsphere-vcenter",) and vcenter.sources == ("10.0.0.0/24",)


def test_vsphere_without_a_vcenter_is_an_error_naming_the_setting(catalog):
    with pytest.raises(ResolveError, match=r"openshift-vsphere-vcenter.*\{vsphere_endpoint\} \(set egress-matrix:vsphereEndpoints\)"):
        resolve(catalog, profile("VSphere"))


def test_vcenter_may_be_an_address(catalog):
    reqs = resolve(catalog, profile("VSphere", vsphere_endpoints=["192.0.2.20"]))
    assert [(r.destination, r.kind) for r in reqs if "openshift-vsphere-vcenter" in r.entry_ids] == [("192.0.2.20", "ip")]


def test_nutanix_prism_central_on_its_port(catalog):
    reqs = resolve(catalog, profile("Nutanix", nutanix_prism_central="prism-central.example.com:9440"))
    assert rows(reqs, "openshift-nutanix") == {("control-plane", "prism-central.example.com", "https", "9440")}
    assert not rows(reqs, "openshift-vsphere", "openshift-openstack", "openshift-bmc")
    with pytest.raises(ResolveError, match=r"\{nutanix_prism_central_host\} \(set egress-matrix:nutanixPrismCentral\)"):
        resolve(catalog, profile("Nutanix"))


def test_openstack_auth_url_and_catalog_endpoints(catalog):
    reqs = resolve(catalog, profile("OpenStack", openstack_auth_url="https://keystone.example.com:5000/v3",
                                    openstack_endpoints=["https://overcloud.example.com:13774", "https://overcloud.example.com:13696/",
                                                         "https://overcloud.example.com:13808/v1/AUTH_x"]))
    assert rows(reqs, "openshift-openstack") == {
        ("nodes", "keystone.example.com", "https", "5000"),
        ("nodes", "overcloud.example.com", "https", "13696,13774,13808"),
    }


def test_openstack_needs_both_settings(catalog):
    with pytest.raises(ResolveError, match=r"openshift-openstack-auth.*\(set egress-matrix:openstackAuthUrl\)"):
        resolve(catalog, profile("OpenStack", openstack_endpoints=["https://nova.example.com"]))
    with pytest.raises(ResolveError, match=r"openshift-openstack-endpoints.*\(set egress-matrix:openstackEndpoints\)"):
        resolve(catalog, profile("OpenStack", openstack_auth_url="https://keystone.example.com"))


def test_bmcs_from_the_control_plane_and_the_provisioner(catalog):
    addresses = ["redfish-virtualmedia://192.0.2.10/redfish/v1/Systems/1", "idrac-virtualmedia+https://192.0.2.12/redfish/v1/Systems/System.Embedded.1",
                 "ipmi://192.0.2.11", "192.0.2.13"]
    reqs = resolve(catalog, profile("BareMetal", bmc_addresses=addresses, features=["openshift-bmc-redfish", "openshift-bmc-ipmi"]))
    assert rows(reqs, "openshift-bmc") == {
        (role, host, protocol, port)
        for role in ("control-plane", "bastion")
        for host, protocol, port in (("192.0.2.10", "https", "443"), ("192.0.2.12", "https", "443"),
                                     ("192.0.2.11", "udp", "623"), ("192.0.2.13", "udp", "623"))
    }
    only_redfish = resolve(catalog, profile("BareMetal", bmc_addresses=addresses[:2], features=["openshift-bmc-redfish"]))
    assert {r[2] for r in rows(only_redfish, "openshift-bmc")} == {"https"}
    assert not rows(resolve(catalog, profile("BareMetal", bmc_addresses=addresses)), "openshift-bmc")  # the features opt in
    with pytest.raises(ResolveError, match=r"openshift-bmc-ipmi.*\{bmc_ipmi_host\} \(set egress-matrix:bmcAddresses\)"):
        resolve(catalog, profile("BareMetal", bmc_addresses=addresses[:2], features=["openshift-bmc-ipmi"]))


def test_infrastructure_rows_stay_off_other_platforms(catalog):
    reqs = resolve(catalog, profile("AWS", aws_region="eu-west-1", vsphere_endpoints=["vcenter.example.com"],
                                    bmc_addresses=["ipmi://192.0.2.11"], features=["openshift-bmc-ipmi"]))
    assert not rows(reqs, "openshift-vsphere", "openshift-nutanix", "openshift-openstack", "openshift-bmc")


@pytest.mark.parametrize("text,expected", [
    ("ipmi://192.0.2.11", ("ipmi", "192.0.2.11", 623)),
    ("192.0.2.11:6230", ("ipmi", "192.0.2.11", 6230)),
    ("libvirt://192.0.2.11", ("ipmi", "192.0.2.11", 623)),
    ("redfish://bmc.example.com", ("redfish", "bmc.example.com", 443)),
    ("redfish+https://bmc.example.com:8443/redfish/v1/Systems/1", ("redfish", "bmc.example.com", 8443)),
    ("ilo5-virtualmedia://[2001:db8::5]/redfish/v1/Systems/1", ("redfish", "2001:db8::5", 443)),
])
def test_bmc_addresses_parse_as_metal3_reads_them(text, expected):
    assert bmc_endpoint(text) == expected


@pytest.mark.parametrize("text,problem", [
    ("redfish+http://192.0.2.10", "plain http"),
    ("idrac://192.0.2.10", "BMC scheme metal3 does not know"),
    ("redfish://", "names no host"),
    ("redfish://bmc_1.example.com", "not a DNS label"),
    ("ipmi://192.0.2.11:99999", "not a number between 1 and 65535"),
])
def test_bad_bmc_addresses(text, problem):
    with pytest.raises(AddressError, match=problem):
        bmc_endpoint(text)


def test_openstack_urls_are_https():
    assert openstack_endpoint("https://keystone.example.com/v3") == ("keystone.example.com", 443)
    with pytest.raises(AddressError, match="not an https:// URL"):
        openstack_endpoint("http://keystone.example.com:5000/v3")


def test_host_port_lists_that_would_open_more_are_refused():
    assert hosts_and_ports([("a.example.com", 443), ("b.example.com", 443)], "x") == (("a.example.com", "b.example.com"), ("443",))
    with pytest.raises(AddressError, match=r"would also open a.example.com:8774"):
        hosts_and_ports([("a.example.com", 5000), ("b.example.com", 8774)], "openstackEndpoints")


def test_the_profile_validates_the_settings():
    with pytest.raises(ValidationError, match="would also open"):
        profile("OpenStack", openstack_endpoints=["https://keystone.example.com:5000", "https://nova.example.com:8774"])
    with pytest.raises(ValidationError, match="not host:port"):
        profile("Nutanix", nutanix_prism_central="prism-central.example.com")
    # IPMI and Redfish are paired separately: one host on 623/udp and another on 443/https open nothing extra.
    profile("BareMetal", bmc_addresses=["ipmi://192.0.2.11", "redfish://192.0.2.10"])


# 23 ------------------------------------------------------------------------------------- 4.22 host forms
def test_console_redhat_com_without_paths_and_no_cloud_redhat_com(catalog):
    reqs = resolve(catalog, profile("VSphere", vsphere_endpoints=["vcenter.example.com"], features=["openshift-telemetry"],
                                    levels=["required", "recommended", "optional"]))
    console = [r for r in reqs if r.destination == "console.redhat.com"]
    assert len(console) == 1 and console[0].paths == ()
    assert set(console[0].entry_ids) == {"openshift-console-token", "openshift-telemetry-ingress"}
    assert not [r for r in reqs if "cloud.redhat.com" in r.destination]
    web = [r for r in reqs if r.protocol in ("http", "https")]
    assert web and all(",".join(map(str, r.ports)) == "443" for r in web)  # the 4.22 guide lists 443 only


def test_sections_are_the_4_22_guides(catalog):
    entries = {e.id: e for e in catalog.entries if e.platform == "openshift"}
    assert entries["openshift-sso"].citation.section == "Allowlist the following URLs to enable cluster access, authentication, and updates"
    assert entries["openshift-api"].citation.section == entries["openshift-sso"].citation.section
    assert entries["openshift-mirror"].citation.section.startswith("Allowlist the following registry URLs that host related artifacts")
    assert entries["openshift-registry-redhat"].citation.section == "Allowlist the following container registry URLs for cluster installation and upgrades"


# 13 ------------------------------------------------------------------------------------- optional 4.22 rows
def test_ibm_cloud_paks_registries_only_with_the_feature(catalog):
    base = dict(vsphere_endpoints=["vcenter.example.com"])
    assert not {"icr.io", "cp.icr.io"} & {r.destination for r in resolve(catalog, profile("VSphere", **base))}
    reqs = resolve(catalog, profile("VSphere", features=["openshift-ibm-cloud-paks"], **base))
    assert rows(reqs, "openshift-ibm-cloud-paks") == {("nodes", "icr.io", "https", "443"), ("nodes", "cp.icr.io", "https", "443")}


def test_oracle_agent_based_block(catalog):
    reqs = resolve(catalog, profile("External", features=["openshift-oci"]))
    assert rows(reqs, "openshift-oci") == {("nodes", host, "https", "443")
                                           for host in ("k8s.gcr.io", "ghcr.io", "storage.googleapis.com", "registry.k8s.io")}
    other = resolve(catalog, profile("VSphere", vsphere_endpoints=["vcenter.example.com"], features=["openshift-oci"]))
    assert not rows(other, "openshift-oci")


# 17 ------------------------------------------------------------------------------------- legacy RHCOS redirector
def test_rhcos_redirector_is_optional(catalog):
    host = "rhcos-redirector.apps.art.xq1c.p1.openshiftapps.com"
    base = dict(vsphere_endpoints=["vcenter.example.com"])
    assert host not in {r.destination for r in resolve(catalog, profile("VSphere", **base))}
    reqs = resolve(catalog, profile("VSphere", levels=["required", "optional"], **base))
    assert [r.level for r in reqs if r.destination == host] == ["optional"]


# r2 ------------------------------------------------------------------------------------- CI's R2 wildcard
def test_r2_is_recorded_not_allowed(catalog):
    reqs = resolve(catalog, profile("VSphere", vsphere_endpoints=["vcenter.example.com"], levels=["required", "recommended", "optional"],
                                    features=["openshift-telemetry", "openshift-third-party", "openshift-ibm-cloud-paks"]))
    assert not [r for r in reqs if "cloudflarestorage" in r.destination]
    mirror = next(e for e in catalog.entries if e.id == "openshift-mirror")
    assert "#83321" in mirror.note and "#83690" in mirror.note and "r2.cloudflarestorage.com" in mirror.note
