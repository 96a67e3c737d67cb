"""The matrix as a real cluster needs it (issue 6): each correction, checked on the resolved output of a stack.

Every test names the finding it pins. The facts and their sources are in the entries' citations and in
docs/MATRIX.md, "Where this matrix differs from the vendor documents".
"""
from __future__ import annotations

from pathlib import Path

import pytest

from egress.docs import matrix_markdown
from egress.errors import ResolveError
from egress.noproxy import openshift_no_proxy
from egress.project import open_project
from egress.resolve import resolve
from egress.runs_on import Place

ROOT = Path(__file__).resolve().parents[1]


def stack(name: str, **overrides):
    catalog, profile, _ = open_project(ROOT).requirements(name)
    profile = profile.model_copy(update=overrides)
    return catalog, profile, resolve(catalog, profile)


def hosts(reqs, role: str = "nodes") -> set[str]:
    return {r.destination for r in reqs if r.role == role}


def by_destination(reqs, destination: str):
    found = [r for r in reqs if r.destination == destination]
    assert len(found) == 1, (destination, found)
    return found[0]


# 1 ------------------------------------------------------------------------------------------------ Key Vault
def test_key_vault_names_open_only_those_vaults():
    _, _, reqs = stack("aks-public")
    vault = by_destination(reqs, "kv-egress-demo.vault.azure.net")
    assert vault.entry_ids == ("aks-csi-secret-store-vault-public",)
    assert not {"vault.azure.net", "*.vault.azure.net"} & hosts(reqs)
    assert vault.deviations and "documented as vault.azure.net" in vault.deviations[0]


@pytest.mark.parametrize("name,suffix", [("aks-public", "vault.azure.net"), ("aks-usgov", "vault.usgovcloudapi.net"),
                                         ("aks-china", "vault.azure.cn")])
def test_without_names_every_cloud_falls_back_to_its_vault_wildcard(name, suffix):
    _, _, reqs = stack(name, features=("csi-secret-store",), azure_key_vault_names=())
    vault = by_destination(reqs, f"*.{suffix}")
    assert "not resolvable here: {key_vault_name} (set egress-matrix:azureKeyVaultNames)" in vault.chosen


# 2 ------------------------------------------------------------------------------------------------ Azure Monitor
def test_monitor_ingestion_goes_to_the_stacks_data_collection_endpoint():
    _, _, reqs = stack("aks-public")
    got = hosts(reqs)
    assert {"msprom-francecentral-demo-a1b2.francecentral-1.ingest.monitor.azure.com",
            "msprom-francecentral-demo-a1b2.francecentral-1.metrics.ingest.monitor.azure.com",
            "global.handler.control.monitor.azure.com", "francecentral.handler.control.monitor.azure.com",
            "*.in.applicationinsights.azure.com", "AzureMonitor"} <= got
    assert "francecentral.ingest.monitor.azure.com" not in got  # not a real ingestion host
    tag = by_destination(reqs, "AzureMonitor")
    assert (tag.kind, tag.protocol, str(tag.ports[0]), tag.alternatives) == ("service-tag", "tcp", "443", ())


@pytest.mark.parametrize("name,suffix", [("aks-china", "cn"), ("aks-usgov", "us")])
def test_monitor_in_sovereign_clouds(name, suffix):
    _, _, reqs = stack(name, features=("azure-monitor",))
    got = hosts(reqs)
    assert {f"*.ingest.monitor.azure.{suffix}", f"*.metrics.ingest.monitor.azure.{suffix}", "dc.services.visualstudio.com",
            "AzureMonitor"} <= got
    assert f"dc.services.visualstudio.{suffix}" not in got
    # The FQDN rules are no longer replaceable by the tag: no requirement offers AzureMonitor as an alternative.
    assert not [r for r in reqs if any("AzureMonitor" in a.destinations for a in r.alternatives)]


# 3 + 15 ------------------------------------------------------------------------------------------ Defender
def test_defender_sensor_endpoint_and_21vianet_retirement(monkeypatch):
    _, _, public = stack("aks-public")
    assert "*.cloud.defender.microsoft.com" in hosts(public)
    monkeypatch.setenv("EGRESS_TODAY", "2026-08-17")  # the day before the rows retire (after it they do not resolve: issue 20)
    _, _, china = stack("aks-china", features=("defender",))
    assert "*.cloud.defender.microsoft.com" not in hosts(china)
    retiring = {r.destination: r.retires.isoformat() for r in china if r.retires}
    assert retiring == {"*.ods.opinsights.azure.cn": "2026-08-18", "*.oms.opinsights.azure.cn": "2026-08-18",
                        "login.microsoftonline.cn": "2026-08-18"}
    # With Azure Monitor and cost analysis too (the aks-china stack), the same hosts serve add-ons that do not retire,
    # so the merged requirements do not retire either.
    _, _, full = stack("aks-china")
    assert [r.destination for r in full if r.retires] == []


# 4 ------------------------------------------------------------------------------------------------ registry.k8s.io
def test_registry_k8s_io_brings_its_real_backends_not_all_of_pkg_dev():
    _, _, reqs = stack("kkp")
    got = hosts(reqs)
    assert "*.pkg.dev" not in got
    pkg_dev = sorted(h for h in got if h.endswith("-docker.pkg.dev"))
    assert len(pkg_dev) == 22 and "us-central1-docker.pkg.dev" in pkg_dev and "europe-west3-docker.pkg.dev" in pkg_dev
    assert "cdn.registry.k8s.io" in got  # production's one AWS base URL; its CloudFront hosts are gone (issue 20)
    assert not {"d1be1w964nk82h.cloudfront.net", "d39mqg4b1dx9z1.cloudfront.net"} & got


@pytest.mark.parametrize("region,bucket_host", [
    ("eu-west-2", "767373bbdcb8270361b96548387bf2a9ad0d48758c35-eu-west-2.s3.dualstack.eu-west-2.amazonaws.com"),
    ("me-south-1", "prod-registry-k8s-io-me-central-1.s3.dualstack.me-central-1.amazonaws.com"),
    ("ap-east-2", "prod-registry-k8s-io-ap-east-1.s3.dualstack.ap-east-1.amazonaws.com"),
    ("us-west-2", "prod-registry-k8s-io-us-west-2.s3.dualstack.us-west-2.amazonaws.com"),
])
def test_registry_k8s_io_s3_copy_follows_archeios_region_map(region, bucket_host):
    _, _, reqs = stack("kkp", runs_on={"nodes": (Place(cloud="aws", region=region),)})  # where the nodes run (issue 20)
    s3 = sorted(h for h in hosts(reqs) if "registry-k8s-io" in h or h.endswith("-eu-west-2.s3.dualstack.eu-west-2.amazonaws.com"))
    assert s3 == [bucket_host]


def test_no_s3_copy_without_aws_nodes():
    _, _, reqs = stack("kkp", features=("kubeone",))
    assert not [h for h in hosts(reqs) if ".s3.dualstack." in h]


# 5 + 6 -------------------------------------------------------------------------------------------- dl.k8s.io, KubeOne
def test_dl_k8s_io_needs_no_cdn_host():
    _, _, reqs = stack("kkp")
    assert "dl.k8s.io" in hosts(reqs)
    assert "cdn.dl.k8s.io" not in hosts(reqs)  # retired in 2026-02, no longer resolves (issue 20)


def test_kubeone_uses_the_community_repositories_not_the_removed_google_ones():
    _, _, reqs = stack("kkp", node_os=("ubuntu", "flatcar"))
    seed = hosts(reqs, "seed")
    assert {"pkgs.k8s.io", "prod-cdn.packages.k8s.io", "dl.k8s.io"} <= seed
    assert not {"apt.kubernetes.io", "packages.cloud.google.com", "storage.googleapis.com"} & seed
    pkgs = by_destination([r for r in reqs if r.role == "seed"], "pkgs.k8s.io")
    assert pkgs.entry_ids == ("kkp-kubeone-kubernetes-packages",)  # the page's two apt rows are one destination (issue 20)
    assert len(pkgs.deviations) == 1
    dl = by_destination([r for r in reqs if r.role == "seed"], "dl.k8s.io")
    assert dl.paths == ("/release", "/release/stable.txt")


# 7 8 9 13 ---------------------------------------------------------------------------------------- registry delivery hosts
def test_ibm_registry_delivery_hosts():
    _, _, reqs = stack("ibm-vpc", ibm_registry_regions=("global", "eu-de"))
    assert {"dd0.icr.io", "dd2.icr.io", "dd0.de.icr.io"} <= hosts(reqs, "workstation")
    assert "dd2.de.icr.io" not in hosts(reqs, "workstation")  # IBM names dd2 only for the global registry


def test_quay_docker_and_ecr_public_pulls_touch_their_cdns():
    _, _, reqs = stack("kkp")
    got = hosts(reqs)
    assert {f"cdn0{i}.quay.io" for i in range(1, 7)} | {"cdn.quay.io", "quayio-production-s3.s3.amazonaws.com"} <= got
    assert {"registry-1.docker.io", "auth.docker.io", "production.cloudfront.docker.com"} <= got
    assert "production.cloudflare.docker.com" in got  # off Docker's list since 2026-06, still observed (issue 20)
    assert "d2glxqk2uabbnd.cloudfront.net" in got


# 10 ----------------------------------------------------------------------------------------------- service tags
@pytest.mark.parametrize("location,tag", [("chilecentral", "AzureCloud.chilec"), ("denmarkeast", "AzureCloud.denmarkeast"),
                                          ("brazilsoutheast", "AzureCloud.brazilse")])
def test_tunnel_rule_uses_the_tag_azure_publishes(location, tag):
    _, _, reqs = stack("aks-public", location=location, konnectivity=False, api_server_ip=None, pods_use_api_server_fqdn=True)
    tunnel = [r for r in reqs if r.protocol == "udp" and r.ports[0].start == 1194]
    assert [r.destination for r in tunnel] == [tag]


# 11 + 12 ------------------------------------------------------------------------------------------- OpenShift
def test_openshift_routes_signature_store_and_registry_access_are_core():
    _, _, reqs = stack("openshift")
    got = hosts(reqs)
    assert {"oauth-openshift.apps.ocp.example.com", "console-openshift-console.apps.ocp.example.com",
            "canary-openshift-ingress-canary.apps.ocp.example.com", "access.redhat.com", "registry.access.redhat.com"} <= got
    assert "*.apps.ocp.example.com" not in got  # the narrower routes are chosen; the guide's wildcard stays an alternative
    _, _, custom = stack("openshift", apps_domain="apps.example.net")
    assert "oauth-openshift.apps.example.net" in hosts(custom)


def test_openshift_apps_domain_needs_a_value():
    catalog, profile, _ = stack("openshift")
    with pytest.raises(ResolveError, match=r"\{apps_domain\} \(set egress-matrix:appsDomain \(or egress-matrix:clusterName and "
                                           r"egress-matrix:baseDomain\)\)"):
        resolve(catalog, profile.model_copy(update={"cluster_name": None}))


def test_openshift_ntp_pool_only_where_rhcos_does_not_use_the_platform_clock():
    _, _, vsphere = stack("openshift")
    ntp = [r for r in vsphere if r.protocol == "udp"]
    assert [(r.destination, str(r.ports[0])) for r in ntp] == [
        ("1.rhel.pool.ntp.org", "123"), ("2.rhel.pool.ntp.org", "123"), ("3.rhel.pool.ntp.org", "123")]
    _, _, aws = stack("openshift", openshift_platform="AWS", aws_region="eu-west-1")
    assert not [r for r in aws if r.protocol == "udp"]


@pytest.mark.parametrize("platform,expected,absent", [
    ("AWS", {"ec2.eu-west-1.amazonaws.com", "elasticloadbalancing.eu-west-1.amazonaws.com", "tagging.us-east-1.amazonaws.com",
             "route53.amazonaws.com", "*.s3.dualstack.eu-west-1.amazonaws.com"}, {"*.amazonaws.com", "*.cloudfront.net"}),
    ("Azure", {"management.azure.com", "*.blob.core.windows.net", "login.microsoftonline.com"}, {"*.googleapis.com"}),
    ("GCP", {"*.googleapis.com", "accounts.google.com"}, {"management.azure.com"}),
])
def test_openshift_cloud_api_endpoints_per_platform(platform, expected, absent):
    _, _, reqs = stack("openshift", openshift_platform=platform, aws_region="eu-west-1")
    got = hosts(reqs)
    assert expected <= got and not absent & got


def test_openshift_on_vsphere_gets_no_cloud_api_endpoints():
    _, _, reqs = stack("openshift")
    cloud_apis = [h for h in hosts(reqs) if "amazonaws" in h or "googleapis" in h or h == "management.azure.com"]
    assert cloud_apis == ["quayio-production-s3.s3.amazonaws.com"]  # Quay's blob bucket, not a cloud API


def test_azure_stack_hub_arm_endpoint_in_no_proxy():
    catalog, profile, _ = stack("openshift", openshift_platform="Azure", azure_cloud_name="AzureStackCloud",
                                azure_arm_endpoint="https://management.local.azurestack.external")
    assert "https://management.local.azurestack.external" in openshift_no_proxy(catalog, profile).split(",")


# 14 16 17 18 20 ----------------------------------------------------------------------------------- stale and over-broad rows
def test_managed_disks_row_has_no_storage_tag_fallback():
    _, _, reqs = stack("aks-public", levels=("required", "recommended", "optional"))
    md = by_destination(reqs, "md-*.blob.storage.azure.net")
    assert md.alternatives == () and md.level == "optional"
    assert "Storage" not in hosts(reqs)


def test_gcr_kube_rbac_proxy_is_not_opened_by_default():
    _, _, default = stack("kkp")
    assert "gcr.io" not in hosts(default)
    _, _, everything = stack("kkp", levels=("required", "recommended", "optional"))
    assert by_destination(everything, "gcr.io").level == "optional"


def test_ubuntu_update_hosts_are_for_ubuntu_nodes_only():
    _, _, azurelinux = stack("aks-public", node_os=("azurelinux",))
    assert not [h for h in hosts(azurelinux) if h.endswith("ubuntu.com") and h != "ntp.ubuntu.com"]
    assert "packages.microsoft.com" in hosts(azurelinux)
    _, _, ubuntu = stack("aks-public", node_os=("ubuntu",))
    assert {"security.ubuntu.com", "azure.archive.ubuntu.com", "changelogs.ubuntu.com", "snapshot.ubuntu.com"} <= hosts(ubuntu)


@pytest.mark.parametrize("name,expected", [("aks-public", True), ("aks-china", False), ("aks-usgov", False), ("kkp", True)])
def test_mcr_edge_host_only_where_the_article_lists_it(name, expected):
    # KKP pulls from MCR only for Azure user clusters (issue 20, kseed): the kkp case turns kkp-azure on
    _, _, reqs = stack(name, **({"features": ("kkp-azure",)} if name == "kkp" else {}))
    assert ("mcr-0001.mcr-msedge.net" in hosts(reqs)) is expected


def test_differences_are_listed_in_one_generated_section(catalog):
    doc = matrix_markdown(catalog)
    section = doc.split("## Where this matrix differs from the vendor documents", 1)[1].split("\n## ", 1)[0]
    differing = [e.id for e in catalog.entries if e.differs_because]
    assert f"{len(differing)} entries." in section
    for entry_id in differing:
        assert f"| {entry_id} |" in section
    for said in ("`vault.azure.net`", "`apt.kubernetes.io`", "`storage.googleapis.com/kubernetes-release/release`",
                 "`{location}.ingest.monitor.azure.com`", "`Storage` tcp/443", "`.data.mcr.microsoft.com`"):
        assert said in section
    assert "| aks-defender-ods-china | `*.ods.opinsights.azure.cn` | 2026-08-18 |" in section
