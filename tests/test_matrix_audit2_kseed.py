"""Issue 20 (items 1, 8, 14, 25): which KKP images the seed pulls and which the user cluster's nodes pull, provider
registries only for their provider, KKP EE Kyverno's registry, and the ghcr.io images the page omits. Each test resolves
a shipped stack and names the destinations that now appear or disappear for a role."""
from __future__ import annotations

from pathlib import Path

import pytest

from egress.project import open_project
from egress.resolve import resolve
from egress.runs_on import Place

ROOT = Path(__file__).resolve().parents[1]


def stack(name: str, **overrides):
    catalog, profile, _ = open_project(ROOT).requirements(name)
    profile = profile.model_copy(update=overrides)
    return catalog, resolve(catalog, profile)


def hosts(reqs, role: str) -> set[str]:
    return {r.destination for r in reqs if r.role == role and "kkp" in r.platforms}


def requirement(reqs, role: str, destination: str):
    found = [r for r in reqs if r.role == role and r.destination == destination and "kkp" in r.platforms]
    assert len(found) == 1, (role, destination, found)
    return found[0]


# 1 ------------------------------------------------------------------------------------------------ the seed pulls
def test_the_seed_pulls_the_control_plane_operator_and_chart_images():
    _, reqs = stack("kkp")
    seed = hosts(reqs, "seed")
    assert {"registry.k8s.io", "quay.io", "registry-1.docker.io", "ghcr.io"} <= seed
    k8s = requirement(reqs, "seed", "registry.k8s.io")
    assert {"kkp-seed-images-registry-k8s-io-core", "kkp-seed-images-registry-k8s-io-ingress", "kkp-seed-images-aws-ccm",
            "kkp-kubeone-images-registry-k8s-io"} <= set(k8s.entry_ids)
    assert {"registry.k8s.io/kube-apiserver", "registry.k8s.io/etcd", "registry.k8s.io/kube-controller-manager",
            "registry.k8s.io/kube-scheduler", "registry.k8s.io/kas-network-proxy/proxy-server"} <= set(k8s.images)
    quay = requirement(reqs, "seed", "quay.io")
    assert {"quay.io/kubermatic/kubermatic-ee", "quay.io/kubermatic/machine-controller", "quay.io/kubermatic/operating-system-manager",
            "quay.io/kubermatic/nodeport-proxy", "quay.io/jetstack/cert-manager-controller"} <= set(quay.images)
    assert requirement(reqs, "seed", "ghcr.io").entry_ids == ("kkp-seed-images-ghcr-io-dex", "kkp-seed-images-ghcr-io-monitoring")
    docker = requirement(reqs, "seed", "registry-1.docker.io")
    assert {"docker.io/envoyproxy/envoy", "docker.io/envoyproxy/gateway", "docker.io/fluent/fluent-bit"} <= set(docker.images)


def test_the_user_cluster_pulls_only_what_runs_in_it():
    _, reqs = stack("kkp")
    k8s = requirement(reqs, "nodes", "registry.k8s.io")
    assert {"registry.k8s.io/kube-proxy", "registry.k8s.io/coredns/coredns", "registry.k8s.io/kas-network-proxy/proxy-agent"} <= set(k8s.images)
    assert not {"registry.k8s.io/kube-apiserver", "registry.k8s.io/etcd", "registry.k8s.io/provider-aws/cloud-controller-manager",
                "registry.k8s.io/ingress-nginx/controller"} & set(k8s.images)
    quay = requirement(reqs, "nodes", "quay.io")
    assert "quay.io/kubermatic/user-ssh-keys-agent" in quay.images
    assert not {"quay.io/kubermatic/kubermatic-ee", "quay.io/jetstack/cert-manager-controller", "quay.io/minio/minio"} & set(quay.images)
    # Dex runs on the master, not in the user cluster: Ubuntu nodes without add-ons need no ghcr.io
    assert "ghcr.io" not in hosts(reqs, "nodes")


def test_offline_mode_sends_the_seed_to_the_mirror_too():
    _, reqs = stack("kkp", offline_registry="registry.internal.example.com:5000")
    seed = [r for r in reqs if r.role == "seed" and r.destination == "registry.internal.example.com"]
    assert [(r.entry_ids, r.protocol, str(r.ports[0])) for r in seed] == [(("kkp-seed-offline-registry",), "tcp", "5000")]
    assert not {"registry.k8s.io", "quay.io", "registry-1.docker.io", "ghcr.io", "public.ecr.aws"} & hosts(reqs, "seed")


# 14 ----------------------------------------------------------------------------------------------- provider registries
def test_provider_registries_only_with_their_provider():
    _, reqs = stack("kkp")  # a seed managing AWS and vSphere clusters
    for role in ("nodes", "seed"):
        assert not {"mcr.microsoft.com", "projects.registry.vmware.com", "anx-cr.io", "reg.kyverno.io"} & hosts(reqs, role), role
    assert requirement(reqs, "nodes", "public.ecr.aws").entry_ids == ("kkp-images-public-ecr-aws-csi",)
    _, vcd = stack("kkp", features=("kkp-vcd",))
    assert {r.entry_ids for r in vcd if r.destination == "projects.registry.vmware.com"} == {
        ("kkp-images-vmware-vcd-csi",), ("kkp-seed-images-vcd-csi",)}
    assert "public.ecr.aws" not in hosts(vcd, "nodes")


def test_azure_images_split_between_the_seed_ccm_and_the_nodes():
    _, reqs = stack("kkp", features=("kkp-azure",))
    assert requirement(reqs, "seed", "mcr.microsoft.com").entry_ids == ("kkp-seed-images-azure-ccm",)
    nodes = requirement(reqs, "nodes", "mcr.microsoft.com")
    assert nodes.entry_ids == ("kkp-images-azure-node",)
    assert "mcr.microsoft.com/oss/v2/kubernetes/azure-cloud-node-manager" in nodes.images


@pytest.mark.parametrize("feature,role,image", [
    ("kkp-openstack", "seed", "registry.k8s.io/provider-os/openstack-cloud-controller-manager"),
    ("kkp-openstack", "nodes", "registry.k8s.io/provider-os/cinder-csi-plugin"),
    ("kkp-gcp", "seed", "registry.k8s.io/cloud-provider-gcp/cloud-controller-manager"),
    ("kkp-digitalocean", "seed", "docker.io/digitalocean/digitalocean-cloud-controller-manager"),
    ("kkp-kubevirt", "seed", "quay.io/kubevirt/virt-launcher"),
])
def test_provider_images_follow_their_feature(feature, role, image):
    def images(reqs):
        return {i for r in reqs if r.role == role for i in r.images}
    _, without = stack("kkp")
    _, with_it = stack("kkp", features=("kkp-aws", "kkp-vsphere", feature))
    assert image not in images(without) and image in images(with_it)


def test_example_stacks_keep_what_their_user_clusters_need():
    for name in ("kkp", "kkp-aws"):
        _, reqs = stack(name)
        assert {"registry.k8s.io", "quay.io", "registry-1.docker.io", "public.ecr.aws"} <= hosts(reqs, "nodes"), name


# KubeOne's images follow where the seed runs ---------------------------------------------------------------------------
def test_kubeone_seed_images_follow_the_seeds_cloud():
    _, on_aws = stack("kkp", runs_on={"seed": (Place(cloud="aws", region="eu-central-1"),)})
    assert requirement(on_aws, "seed", "public.ecr.aws").entry_ids == ("kkp-kubeone-images-aws",)
    _, on_azure = stack("kkp", runs_on={"seed": (Place(cloud="azure", region="westeurope"),)})
    assert "public.ecr.aws" not in hosts(on_azure, "seed")
    assert requirement(on_azure, "seed", "mcr.microsoft.com").entry_ids == ("kkp-kubeone-images-azure",)
    _, nowhere = stack("kkp", runs_on={})
    assert not {"public.ecr.aws", "mcr.microsoft.com"} & hosts(nowhere, "seed")


# 8 ------------------------------------------------------------------------------------------------ KKP EE Kyverno
def test_kyverno_pulls_from_its_registry_and_ghcr():
    _, reqs = stack("kkp", features=("kkp-aws", "kkp-kyverno"))
    assert requirement(reqs, "seed", "reg.kyverno.io").entry_ids == ("kkp-kyverno-registry",)
    assert "kkp-kyverno-ghcr" in requirement(reqs, "seed", "ghcr.io").entry_ids
    assert "reg.kyverno.io" not in hosts(reqs, "nodes")


# 25 ----------------------------------------------------------------------------------------------- ghcr.io images the page omits
def test_ghcr_images_main_deploys_are_listed_with_the_file_that_deploys_them(catalog):
    cited = {image: (entry.role, entry.citation.source, entry.citation.section)
             for entry in catalog.entries if entry.platform == "kkp" for image in entry.images if image.startswith("ghcr.io/")}
    assert cited["ghcr.io/k8snetworkplumbingwg/multus-cni"] == ("nodes", "kkp-addons", "addons/multus/daemonset.yaml")
    assert cited["ghcr.io/flatcar/flatcar-linux-update-operator"][:2] == ("nodes", "kkp-user-cluster")
    assert "update_operator.go" in cited["ghcr.io/flatcar/flatcar-linux-update-operator"][2]
    for image, file in (("ghcr.io/jimmidyson/configmap-reload", "charts/monitoring/prometheus/values.yaml"),
                        ("ghcr.io/prymitive/karma", "charts/monitoring/karma/values.yaml")):
        assert cited[image][:2] == ("seed", "kkp-installer-charts") and file in cited[image][2], image


def test_flatcar_nodes_pull_the_update_operator_and_multus_is_optional():
    _, ubuntu = stack("kkp", levels=("required", "recommended", "optional"))
    assert requirement(ubuntu, "nodes", "ghcr.io").entry_ids == ("kkp-images-ghcr-io-multus",)
    _, flatcar = stack("kkp", node_os=("flatcar",))
    assert requirement(flatcar, "nodes", "ghcr.io").entry_ids == ("kkp-images-ghcr-io-flatcar",)
