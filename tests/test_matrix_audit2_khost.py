"""Issue 20 (second audit), KKP hosts beyond images: items 2, 3, 7, 9, 10, 11, 18 and 21, each checked on the
resolved requirements of a stack. The facts and their sources are in the entries (matrix/kkp.yaml)."""
from __future__ import annotations

from pathlib import Path

import pytest

from egress.project import open_project
from egress.resolve import resolve
from egress.runs_on import Place

ROOT = Path(__file__).resolve().parents[1]
KKP_MIRRORS = {"archive.ubuntu.com", "azure.archive.ubuntu.com"}


def stack(name: str, runs_on: dict[str, Place] | None = None, **overrides):
    catalog, profile, _ = open_project(ROOT).requirements(name)
    if runs_on is not None:  # one place per role, as a stack may write it (runsOn also takes a list per role)
        overrides["runs_on"] = {role: (place,) for role, place in runs_on.items()}
    profile = profile.model_copy(update=overrides)
    return resolve(catalog, profile)


def hosts(reqs, role: str) -> set[str]:
    return {r.destination for r in reqs if r.role == role and "kkp" in r.platforms}


def mirrors(reqs, role: str) -> set[str]:
    """The Ubuntu archive mirrors a role is allowed (the security pocket aside)."""
    return {h for h in hosts(reqs, role) if h in KKP_MIRRORS or h.endswith((".ec2.archive.ubuntu.com", ".gce.archive.ubuntu.com"))}


def one(reqs, role: str, destination: str):
    found = [r for r in reqs if r.role == role and r.destination == destination]
    assert len(found) == 1, (role, destination, found)
    return found[0]


# 2 ------------------------------------------------------------------------------------------- Ubuntu mirrors per cloud
@pytest.mark.parametrize("place,mirror", [
    (Place(cloud="aws", region="eu-west-1"), "eu-west-1.ec2.archive.ubuntu.com"),
    (Place(cloud="gcp", region="europe-west3"), "europe-west3.gce.archive.ubuntu.com"),
    (Place(cloud="azure", region="westeurope"), "azure.archive.ubuntu.com"),
    (Place(cloud="vsphere"), "archive.ubuntu.com"),
    (None, "archive.ubuntu.com"),
])
def test_ubuntu_nodes_install_from_the_mirror_of_the_cloud_they_run_on(place, mirror):
    reqs = stack("kkp-aws", runs_on={"nodes": place} if place else {})
    assert mirrors(reqs, "nodes") == {mirror}
    # the security pocket stays security.ubuntu.com everywhere (every mirror config leaves its search list empty)
    assert "security.ubuntu.com" in hosts(reqs, "nodes")
    assert one(reqs, "nodes", mirror).protocol == "http"


def test_seed_and_nodes_each_follow_their_own_place():
    # the kkp stack: the seed on AWS in Frankfurt (KubeOne), the user clusters' nodes on vSphere
    reqs = stack("kkp", runs_on={"seed": Place(cloud="aws", region="eu-central-1"), "nodes": Place(cloud="vsphere")})
    assert mirrors(reqs, "seed") == {"eu-central-1.ec2.archive.ubuntu.com"}
    assert mirrors(reqs, "nodes") == {"archive.ubuntu.com"}
    assert one(reqs, "seed", "eu-central-1.ec2.archive.ubuntu.com").entry_ids == ("kkp-kubeone-ubuntu-archive-ec2",)


def test_a_kubeone_seed_nobody_places_installs_from_ubuntus_archive():
    reqs = stack("kkp-aws", runs_on={})
    assert mirrors(reqs, "seed") == {"archive.ubuntu.com"}
    assert "security.ubuntu.com" in hosts(reqs, "seed")


@pytest.mark.parametrize("features,runs_on,entry", [
    (("kubeone", "seed-on-azure"), {}, "kkp-kubeone-azure-archive"),
    (("kubeone",), {"seed": Place(cloud="azure", region="westeurope")}, "kkp-kubeone-azure-archive-runs-on"),
    (("kubeone", "seed-on-azure"), {"seed": Place(cloud="azure", region="westeurope")}, "kkp-kubeone-azure-archive"),
])
def test_seed_on_azure_keeps_working_beside_run_on(features, runs_on, entry):
    reqs = stack("kkp", features=features, runs_on=runs_on)
    assert mirrors(reqs, "seed") == {"azure.archive.ubuntu.com"}
    assert one(reqs, "seed", "azure.archive.ubuntu.com").entry_ids == (entry,)


def test_only_runs_on_brings_the_azure_seeds_own_cloud_apis():
    by_feature = hosts(stack("kkp", features=("kubeone", "seed-on-azure"), runs_on={}), "seed")
    assert not {"management.azure.com", "login.microsoftonline.com"} & by_feature
    placed = hosts(stack("kkp", features=("kubeone",), runs_on={"seed": Place(cloud="azure", region="westeurope")}), "seed")
    assert {"management.azure.com", "login.microsoftonline.com"} <= placed


# 3 ------------------------------------------------------------------------------------------- the seed's AWS APIs
def test_a_seed_managing_aws_reaches_elastic_load_balancing_and_regional_sts():
    reqs = stack("kkp-aws", runs_on={})
    seed = hosts(reqs, "seed")
    assert {"elasticloadbalancing.eu-west-1.amazonaws.com", "sts.eu-west-1.amazonaws.com"} <= seed
    assert "sts.amazonaws.com" not in seed
    assert one(reqs, "seed", "elasticloadbalancing.eu-west-1.amazonaws.com").entry_ids == ("kkp-seed-aws-elb",)


def test_a_kubeone_seed_on_aws_reaches_its_own_regions_apis():
    # seed in Frankfurt, user clusters in Ireland: the seed's own CCM in its region, the user clusters' CCM in theirs
    reqs = stack("kkp-aws", runs_on={"seed": Place(cloud="aws", region="eu-central-1")})
    assert {"ec2.eu-central-1.amazonaws.com", "elasticloadbalancing.eu-central-1.amazonaws.com",
            "ec2.eu-west-1.amazonaws.com", "elasticloadbalancing.eu-west-1.amazonaws.com"} <= hosts(reqs, "seed")
    assert one(reqs, "seed", "elasticloadbalancing.eu-central-1.amazonaws.com").entry_ids == ("kkp-kubeone-aws-elb",)


# 7 ------------------------------------------------------------------------------------------- CSI controllers on the nodes
def test_aws_nodes_reach_ec2_of_their_own_region_for_the_ebs_csi_controller():
    placed = stack("kkp-aws", runs_on={"nodes": Place(cloud="aws", region="eu-west-1")})
    assert one(placed, "nodes", "ec2.eu-west-1.amazonaws.com").entry_ids == ("kkp-nodes-aws-ebs-csi",)
    unplaced = stack("kkp-aws", runs_on={})
    assert one(unplaced, "nodes", "ec2.eu-west-1.amazonaws.com").entry_ids == ("kkp-nodes-aws-ebs-csi-unplaced",)
    elsewhere = stack("kkp-aws", runs_on={"nodes": Place(cloud="vsphere")})
    assert not [h for h in hosts(elsewhere, "nodes") if h.startswith("ec2.")]


def test_vsphere_nodes_reach_vcenter_for_the_csi_controller():
    reqs = stack("kkp", runs_on={"nodes": Place(cloud="vsphere")})
    assert one(reqs, "nodes", "vcenter.example.com").entry_ids == ("kkp-nodes-vsphere-csi",)
    assert "vcenter.example.com" not in hosts(stack("kkp", runs_on={"nodes": Place(cloud="aws", region="eu-central-1")}), "nodes")


def test_azure_nodes_reach_arm_and_entra_id_for_the_csi_controllers():
    reqs = stack("kkp", features=("kkp-azure",), runs_on={"nodes": Place(cloud="azure", region="westeurope")})
    assert {"management.azure.com", "login.microsoftonline.com"} <= hosts(reqs, "nodes")
    assert not {"management.azure.com", "login.microsoftonline.com"} & hosts(
        stack("kkp", features=("kkp-azure",), runs_on={"nodes": Place(cloud="vsphere")}), "nodes")


# 9 ------------------------------------------------------------------------------------------- telemetry
def test_telemetry_is_reported_unless_the_master_was_installed_without_it():
    reqs = stack("kkp")
    assert one(reqs, "seed", "telemetry.k8c.io").paths == ("/api/v1",)
    assert "telemetry.k8c.io" not in hosts(stack("kkp", features=("kubeone", "kkp-telemetry-disabled")), "seed")


# 10 ------------------------------------------------------------------------------------------ KubeOne on Flatcar and RHEL
def test_kubeone_on_flatcar_downloads_crictl_from_its_github_release():
    reqs = stack("kkp", node_os=("flatcar",))
    assert "/kubernetes-sigs/cri-tools/releases/download" in one(reqs, "seed", "github.com").paths


def test_kubeone_on_rhel_uses_the_rpm_repositories():
    reqs = stack("kkp", node_os=("rhel",))
    assert one(reqs, "seed", "download.docker.com").paths == ("/linux/rhel",)
    assert one(reqs, "seed", "pkgs.k8s.io").entry_ids == ("kkp-kubeone-kubernetes-packages",)
    assert not mirrors(reqs, "seed")  # no Ubuntu archive for a RHEL seed


# 18 ------------------------------------------------------------------------------------------ management.core.windows.net
def test_classic_azure_management_endpoint_is_only_optional():
    default = stack("kkp", features=("kkp-azure",))
    assert "management.core.windows.net" not in hosts(default, "seed")
    everything = stack("kkp", features=("kkp-azure",), levels=("required", "recommended", "optional"))
    assert one(everything, "seed", "management.core.windows.net").level == "optional"


# 21 ------------------------------------------------------------------------------------------ one entry per destination
def test_kubeones_kubernetes_repository_is_one_entry_keeping_both_documented_rows():
    reqs = stack("kkp")
    pkgs = one(reqs, "seed", "pkgs.k8s.io")
    assert pkgs.entry_ids == ("kkp-kubeone-kubernetes-packages",)
    (deviation,) = pkgs.deviations
    assert "documented as packages.cloud.google.com/apt, apt.kubernetes.io" in deviation


# 11 ------------------------------------------------------------------------------------------ cert-manager's self check
def test_cert_manager_checks_its_http01_challenge_at_the_kkp_domain_from_the_seed():
    reqs = stack("kkp")
    check = one(reqs, "seed", "kkp.example.com")
    assert (check.protocol, str(check.ports[0]), check.entry_ids) == ("http", "80", ("kkp-cert-manager-http01-self-check",))
    assert "kkp.example.com" not in hosts(stack("kkp", features=("kubeone",)), "seed")  # no cert-manager, no self check
