"""Issue 21: the destinations a vendor document says the cluster must reach directly (the entry's ``direct``) are in the
noProxy the distribution really applies, judged with Go's NO_PROXY matching; otherwise the stack is refused before
anything is compiled or registered (render, preview and the program alike)."""
from __future__ import annotations

import runpy

import pulumi
import pytest

from aws_stacks import ROOT, req, stack
from egress.addresses import PortRange
from egress.targets import TARGETS
from egress.targets.kubernetes.cluster_proxy import compile_cluster_proxy
from egress.targets.kubernetes.proxy_bypass import DirectPathError, applied_no_proxy, check_direct_paths, proxied_port
from pulumi_harness import settle
from test_program import RecordingMocks, stack_config

CITED = ("https://docs.redhat.com/en/documentation/openshift_container_platform/4.22/html-single/installing_on_vmware_vsphere/index"
         "#installation-configure-proxy_installing-vsphere-installer-provisioned-customizations § Configuring the cluster-wide proxy during "
         "installation (proxy.noProxy: You must include vCenter's IP address and the IP range that you use for its machines)")
BECAUSE = ("OpenShift's vSphere install docs require vCenter in the cluster Proxy's noProxy (they say its IP address; Go clients match "
           "the host they connect to, so list the vsphereEndpoints value as written)")


def compile_openshift(**overrides):
    catalog, profile, requirements = stack("openshift", **overrides)
    return TARGETS["kubernetes"].compile(catalog, profile, requirements, "the stack")


def refusal(**overrides) -> str:
    with pytest.raises(DirectPathError) as info:
        compile_openshift(**overrides)
    return str(info.value)


def test_vcenter_through_the_corporate_proxy_is_refused_naming_setting_destination_entry_citation_and_fix():
    assert refusal(no_proxy=(".corp.example.com", "192.168.0.0/16")) == (
        "the stack: egress-matrix:noProxy = ['.corp.example.com', '192.168.0.0/16']: with clusterProxy openshift, vcenter.example.com:443 "
        "(entry openshift-vsphere-vcenter, role control-plane) goes through the proxy http://proxy.corp.example.com:3128: no entry of "
        f"the OpenShift Proxy's status.noProxy covers it, but it must be reached directly: {BECAUSE} ({CITED}). "
        "Fix: add vcenter.example.com to egress-matrix:noProxy (a CIDR entry never covers a host name: the clients match the name they connect to)")


@pytest.mark.parametrize("no_proxy", [
    (".corp.example.com", "192.168.0.0/16", "vcenter.example.com"),  # the example stack: by name
    (".example.com",),  # a '.domain' entry covers its subdomains
    ("example.com",),  # a bare domain covers itself and its subdomains (Go)
])
def test_a_noproxy_that_covers_vcenter_by_name_compiles(no_proxy):
    plan = compile_openshift(no_proxy=no_proxy)
    assert plan.cluster_proxy is not None


@pytest.mark.parametrize("no_proxy, hint", [
    ((".corp.example.com",), ""),
    (("10.20.0.0/16", "192.168.0.0/16"), " (a CIDR entry never covers a host name: the clients match the name they connect to)"),
    ((".vcenter.example.com",), ""),  # a '.domain' entry is for subdomains only
    (("center.example.com",), ""),  # a suffix that is not a whole label
])
def test_a_noproxy_that_misses_vcenter_the_way_go_matches_is_refused(no_proxy, hint):
    message = refusal(no_proxy=no_proxy)
    assert "vcenter.example.com:443 (entry openshift-vsphere-vcenter, role control-plane) goes through the proxy" in message
    assert message.endswith(f"Fix: add vcenter.example.com to egress-matrix:noProxy{hint}")


@pytest.mark.parametrize("no_proxy, proxied", [
    ("vcenter.example.com:443", False),  # name:port covers that port (KKP's and kubeadm's NO_PROXY take it; OpenShift refuses ports)
    ("vcenter.example.com:8443", True),  # ... and only that port
    ("*.example.com", False),  # '*.' is read as '.'
    (" VCenter.Example.com ", False),  # entries are trimmed and lower-cased
    ("*", False),
    ("10.0.0.0/8", True),  # a CIDR never covers a name, whatever it resolves to
])
def test_go_matching_subtleties_decide_for_the_noproxy_a_kind_applies(no_proxy, proxied):
    catalog, profile, requirements = stack("openshift")
    plan = compile_cluster_proxy(catalog, profile, None, False).model_copy(update={"kinds": ("kubeadm",), "kubeadm_no_proxy": no_proxy})
    vcenter = [r.model_copy(update={"role": "nodes"}) for r in requirements if "openshift-vsphere-vcenter" in r.entry_ids]
    assert len(vcenter) == 1
    if proxied:
        with pytest.raises(DirectPathError, match=r"with clusterProxy kubeadm, vcenter\.example\.com:443 .* no entry of the nodes' NO_PROXY"):
            check_direct_paths(catalog, plan, vcenter, profile)
    else:
        check_direct_paths(catalog, plan, vcenter, profile)


def test_a_vcenter_by_ip_is_covered_by_an_ip_or_a_cidr_and_by_the_machine_network_the_operator_adds():
    assert compile_openshift(vsphere_endpoints=("172.16.5.10",), no_proxy=("172.16.5.10",)).cluster_proxy
    assert compile_openshift(vsphere_endpoints=("172.16.5.10",), no_proxy=("172.16.0.0/24", "172.16.5.0/24")).cluster_proxy
    # machineCidrs 10.0.0.0/16 is in status.noProxy whatever spec.noProxy says: the operator's own entries count
    assert compile_openshift(vsphere_endpoints=("10.0.3.4",), no_proxy=(".corp.example.com",)).cluster_proxy


def test_a_vcenter_by_ip_outside_every_entry_is_refused_with_an_ip_fix():
    message = refusal(vsphere_endpoints=("172.16.5.10",), no_proxy=("172.16.6.0/24", "vcenter.example.com"))
    assert "with clusterProxy openshift, 172.16.5.10:443 (entry openshift-vsphere-vcenter, role control-plane)" in message
    assert message.endswith("Fix: add 172.16.5.10 (or a CIDR holding it) to egress-matrix:noProxy")


def test_every_vcenter_is_checked_and_the_first_missing_one_named():
    message = refusal(vsphere_endpoints=("vcenter.example.com", "vc2.example.net"), no_proxy=("vcenter.example.com",))
    assert "vc2.example.net:443" in message and "Fix: add vc2.example.net to egress-matrix:noProxy" in message


def test_the_proxy_named_is_the_one_https_goes_through():
    message = refusal(no_proxy=(".corp.example.com",), https_proxy="http://secure-proxy.corp.example.com:3129")
    assert "goes through the proxy http://secure-proxy.corp.example.com:3129:" in message


def test_kubeadm_nodes_no_proxy_is_checked_for_the_nodes_it_governs():
    catalog, profile, requirements = stack("openshift", no_proxy=(".corp.example.com",), cluster_proxy=("kubeadm",))
    assert TARGETS["kubernetes"].compile(catalog, profile, requirements, "").cluster_proxy  # vCenter is the control plane's
    nodes = [r.model_copy(update={"role": "nodes"}) if "openshift-vsphere-vcenter" in r.entry_ids else r for r in requirements]
    with pytest.raises(DirectPathError) as info:
        TARGETS["kubernetes"].compile(catalog, profile, nodes, "")
    assert "with clusterProxy kubeadm, vcenter.example.com:443 (entry openshift-vsphere-vcenter, role nodes)" in str(info.value)
    assert "no entry of the nodes' NO_PROXY (containerd, kubelet) covers it" in str(info.value)


def test_without_a_cluster_proxy_or_a_direct_entry_nothing_is_checked():
    catalog, profile, requirements = stack("openshift", no_proxy=(), cluster_proxy=(), egress_proxy=True, egress_proxy_roles=("nodes",))
    assert TARGETS["kubernetes"].compile(catalog, profile, requirements, "").cluster_proxy is None
    catalog, profile, requirements = stack("openshift", no_proxy=(".corp.example.com",))
    plan = compile_cluster_proxy(catalog, profile, None, False, [r for r in requirements if "openshift-vsphere-vcenter" not in r.entry_ids])
    assert plan is not None


def test_only_the_roles_a_kind_of_proxy_governs_are_checked():
    catalog, profile, _ = stack("openshift", no_proxy=(".corp.example.com",))
    plan = compile_cluster_proxy(catalog, profile, None, False)
    vcenter = req("vcenter.example.com", "fqdn", "https", entry="openshift-vsphere-vcenter", role="bastion")
    check_direct_paths(catalog, plan, [vcenter], profile)  # the installer's host does not read the cluster Proxy
    with pytest.raises(DirectPathError):
        check_direct_paths(catalog, plan, [vcenter.model_copy(update={"role": "nodes"})], profile)
    kkp = plan.model_copy(update={"kinds": ("kkp",), "kkp": None})
    assert applied_no_proxy(kkp, profile) == {"kkp": ""}


def test_a_port_range_is_judged_port_by_port_where_entries_name_ports():
    rng = req("vcenter.example.com", "fqdn", "https").model_copy(update={"ports": (PortRange(443, 444),)})
    assert proxied_port("vcenter.example.com:443", rng) == 444
    assert proxied_port("vcenter.example.com:443,vcenter.example.com:444", rng) is None
    assert proxied_port("vcenter.example.com", rng) is None
    assert proxied_port(".corp.example.com", rng) == 443


def test_the_program_registers_nothing_when_vcenter_would_go_through_the_proxy(loop, monkeypatch):  # noqa: F811 - the fixture
    monkeypatch.chdir(ROOT)
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack="openshift", preview=False)
    config = stack_config("openshift")
    config["egress-matrix:noProxy"] = '[".corp.example.com", "192.168.0.0/16"]'
    pulumi.runtime.set_all_config(config)
    with pytest.raises(pulumi.RunError) as info:
        runpy.run_path(str(ROOT / "__main__.py"))
    settle(loop)
    assert str(info.value).startswith("DirectPathError: Pulumi config of stack 'openshift': egress-matrix:noProxy = ['.corp.example.com', '192.168.0.0/16']: "
                                      "with clusterProxy openshift, vcenter.example.com:443")
    assert mocks.registered == []


def test_preview_refuses_the_stack_and_registers_nothing(project_copy, run_cli, tmp_path):
    import shutil

    shutil.copy(ROOT / "__main__.py", project_copy / "__main__.py")
    for folder in ("components", "policy"):
        shutil.copytree(ROOT / folder, project_copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    stack_file = project_copy / "stacks" / "Pulumi.openshift.yaml"
    text = stack_file.read_text()
    assert "noProxy: [.corp.example.com, 192.168.0.0/16, vcenter.example.com]" in text
    stack_file.write_text(text.replace("noProxy: [.corp.example.com, 192.168.0.0/16, vcenter.example.com]", "noProxy: [.corp.example.com]"))
    out = tmp_path / "preview"
    code, stdout, err = run_cli("preview", "--stack", "openshift", "--out", str(out), "--project", str(project_copy))
    assert code == 1, stdout + err
    assert "egress-matrix:noProxy = ['.corp.example.com']: with clusterProxy openshift, vcenter.example.com:443 (entry openshift-vsphere-vcenter" in err
    assert "Traceback" not in err + stdout
    assert err.startswith("ProgramError: stack 'openshift': DirectPathError: Pulumi config of stack 'openshift': egress-matrix:noProxy")
    assert not out.exists()  # nothing previewed, nothing written


BMC = ("redfish-virtualmedia://192.0.2.10/redfish/v1/Systems/1", "idrac-virtualmedia://bmc-2.mgmt.example.org/redfish/v1/Systems/System.Embedded.1")


def test_bare_metal_redfish_bmcs_must_bypass_the_cluster_proxy():
    overrides = dict(openshift_platform="BareMetal", bmc_addresses=BMC, features=("openshift-telemetry", "openshift-bmc-redfish"))
    message = refusal(**overrides)
    assert "with clusterProxy openshift, 192.0.2.10:443 (entry openshift-bmc-redfish, role control-plane) goes through the proxy" in message
    assert "openshift-docs/blob/a762eec4b8927adca18fce8df594acf7044a0b09/modules/ipi-install-setting-proxy-settings-within-install-config.adoc" in message
    assert message.endswith("Fix: add 192.0.2.10 (or a CIDR holding it) to egress-matrix:noProxy")
    message = refusal(**overrides, no_proxy=(".corp.example.com", "192.0.2.0/24"))
    assert "bmc-2.mgmt.example.org:443 (entry openshift-bmc-redfish" in message
    assert message.endswith("Fix: add bmc-2.mgmt.example.org to egress-matrix:noProxy (a CIDR entry never covers a host name: the clients match "
                            "the name they connect to)")
    assert compile_openshift(**overrides, no_proxy=("192.0.2.0/24", ".mgmt.example.org")).cluster_proxy


@pytest.mark.parametrize("protocol, checked", [("udp", False), ("tcp", False), ("http", True), ("https", True)])
def test_only_http_and_https_use_the_proxy_so_only_they_are_checked(protocol, checked):
    catalog, profile, _ = stack("openshift", no_proxy=(".corp.example.com",))
    plan = compile_cluster_proxy(catalog, profile, None, False)
    vcenter = req("vcenter.example.com", "fqdn", protocol, entry="openshift-vsphere-vcenter", role="control-plane")
    if checked:
        with pytest.raises(DirectPathError):
            check_direct_paths(catalog, plan, [vcenter], profile)
    else:
        check_direct_paths(catalog, plan, [vcenter], profile)  # UDP, and TCP that is not HTTP, connect directly


@pytest.mark.parametrize("no_proxy", [(".corp.example.com",), ("vcenter.example.com",), (".example.com",), ("10.0.0.0/8",), (".vcenter.example.com",)])
def test_the_check_agrees_with_the_paths_explain_and_export_show(no_proxy):
    from egress.proxy_path import DIRECT, requirement_paths

    catalog, profile, requirements = stack("openshift", no_proxy=no_proxy)
    vcenter = [r for r in requirements if "openshift-vsphere-vcenter" in r.entry_ids]
    (path,) = requirement_paths(catalog, profile, vcenter)
    try:
        compile_openshift(no_proxy=no_proxy)
        refused = False
    except DirectPathError:
        refused = True
    assert refused == (path.route != DIRECT)


# -- review of issue 21, item 13: the check, explain and export judge with one noProxy and one set of users ----------------

def test_a_source_group_uses_the_cluster_proxy_so_its_direct_destinations_are_checked():
    catalog, profile, _ = stack("openshift", no_proxy=(".corp.example.com",), source_groups={"payments": ("10.0.5.0/24",)})
    plan = compile_cluster_proxy(catalog, profile, None, False)
    vcenter = req("vcenter.example.com", "fqdn", "https", entry="openshift-vsphere-vcenter", role="payments")
    from egress.proxy_path import PROXY, requirement_paths

    assert [p.route for p in requirement_paths(catalog, profile, [vcenter])] == [PROXY]  # explain and export: through the proxy
    with pytest.raises(DirectPathError, match=r"vcenter\.example\.com:443 \(entry openshift-vsphere-vcenter, role payments\) goes through the proxy"):
        check_direct_paths(catalog, plan, [vcenter], profile)


@pytest.mark.parametrize("destination, kind", [
    ("10.244.1.5", "ip"),  # the pod network AKS adds to effectiveNoProxy
    ("168.63.129.16", "ip"),  # Azure's wire server, added by AKS
    ("konnectivity", "fqdn"),
    ("abc-123.hcp.westeurope.azmk8s.io", "fqdn"),  # the cluster's API server host, added by AKS
    ("10.50.3.4", "ip"),  # the stack's own noProxy
    ("vcenter.other.example", "fqdn"),  # nothing covers it
])
def test_the_aks_check_judges_with_the_entries_aks_adds_as_explain_and_export_do(destination, kind):
    from egress.proxy_path import DIRECT, requirement_paths

    catalog, profile, _ = stack("aks-proxy")
    plan = compile_cluster_proxy(catalog, profile, None, False)
    direct = req(destination, kind, "https", entry="openshift-vsphere-vcenter", role="nodes")  # an entry whose 'direct' is set
    (path,) = requirement_paths(catalog, profile, [direct])
    try:
        check_direct_paths(catalog, plan, [direct], profile)
        refused = False
    except DirectPathError:
        refused = True
    assert refused == (path.route != DIRECT)
    assert refused == (destination == "vcenter.other.example")
