"""The schema harness itself: it must pass good manifests and fail bad ones."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest

from k8s_schemas import (
    KUBERNETES_VERSION,
    _crd_schemas,
    validate,
    validate_core,
    validate_custom,
    validate_yaml_file,
)

PROXY = {
    "apiVersion": "config.openshift.io/v1",
    "kind": "Proxy",
    "metadata": {"name": "cluster"},
    "spec": {
        "httpProxy": "http://proxy.example.com:3128",
        "httpsProxy": "http://proxy.example.com:3128",
        "noProxy": ".cluster.local,10.0.0.0/8",
        "trustedCA": {"name": "user-ca-bundle"},
    },
}

CLUSTER_PATCH = {
    "apiVersion": "kubermatic.k8c.io/v1",
    "kind": "Cluster",
    "metadata": {"name": "abc123xyz"},
    "spec": {"apiServerAllowedIPRanges": {"cidrBlocks": ["203.0.113.0/24"]}},
}
ALLOWED_IPS = ("spec.apiServerAllowedIPRanges",)

SEED_PATCH = {
    "apiVersion": "kubermatic.k8c.io/v1",
    "kind": "Seed",
    "metadata": {"name": "europe-west", "namespace": "kubermatic"},
    "spec": {
        "datacenters": {
            "dc1": {"node": {"httpProxy": "http://proxy.example.com:3128", "noProxy": "10.0.0.0/8"}}
        }
    },
}
DC1_NODE = ("spec.datacenters.dc1.node",)


def changed(doc: dict, path: str, value=None, *, delete: bool = False) -> dict:
    """Deep copy of `doc` with the dotted `path` set to `value` (or deleted)."""
    doc = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node = doc
    for part in parents:
        node = node.setdefault(part, {})
    if delete:
        del node[last]
    else:
        node[last] = value
    return doc


def fails(match: str):
    return pytest.raises(AssertionError, match=match)


# ---------------------------------------------------------------- harness setup


def test_kubernetes_version_is_the_newest_bundled():
    assert KUBERNETES_VERSION == kubernetes_validate.latest_version()


def test_crds_are_loaded_from_test_data():
    assert set(_crd_schemas()) == {
        ("config.openshift.io", "v1", "Proxy"),
        ("kubermatic.k8c.io", "v1", "Cluster"),
        ("kubermatic.k8c.io", "v1", "Seed"),
    }


def test_kkp_cidr_blocks_is_required_in_the_crd():
    spec = _crd_schemas()[("kubermatic.k8c.io", "v1", "Cluster")]["properties"]["spec"]
    assert spec["properties"]["apiServerAllowedIPRanges"]["required"] == ["cidrBlocks"]


# ------------------------------------------------------------- OpenShift Proxy


def test_good_proxy_passes():
    validate(PROXY)
    validate_custom(PROXY)


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        (changed(PROXY, "spec.trustedCA", "user-ca-bundle"), r"spec\.trustedCA: 'user-ca-bundle' is not of type 'object'"),
        (changed(PROXY, "spec.trustedCA", {}), r"spec\.trustedCA: 'name' is a required property"),
        (changed(PROXY, "spec.noproxy", "x"), r"spec: Additional properties .*'noproxy' was unexpected"),
        (changed(PROXY, "spec", delete=True), r"<root>: 'spec' is a required property"),
        (changed(PROXY, "spec.readinessEndpoints", "http://x"), r"spec\.readinessEndpoints: .* not of type 'array'"),
        (changed(PROXY, "metadata.namepsace", "x"), r"metadata: .*'namepsace' was unexpected"),
        (changed(PROXY, "metadata.labels", {"a": 1}), r"metadata\.labels\.a: 1 is not of type"),
        (changed(PROXY, "metadata.name", delete=True), r"metadata\.name: must be a non-empty string"),
        (changed(PROXY, "apiVersion", "config.openshift.io/v2"), r"no CRD for config\.openshift\.io/v2 Proxy"),
        (changed(PROXY, "kind", "Network"), r"no CRD for config\.openshift\.io/v1 Network"),
    ],
)
def test_bad_proxy_fails(doc, match):
    with fails(match):
        validate(doc)


# ------------------------------------------------------------ Kubermatic (KKP)


def test_cluster_allowed_ip_patch_passes_in_patch_mode():
    validate(CLUSTER_PATCH, patch=True, owned=ALLOWED_IPS)


def test_cluster_patch_is_not_a_full_object():
    # The same document as a full object misses the CRD's required spec fields.
    with fails(r"spec: 'cloud' is a required property"):
        validate(CLUSTER_PATCH)


def test_cluster_patch_with_empty_allowed_ips_fails_when_owned():
    doc = changed(CLUSTER_PATCH, "spec.apiServerAllowedIPRanges", {})
    with fails(r"spec\.apiServerAllowedIPRanges: 'cidrBlocks' is a required property"):
        validate(doc, patch=True, owned=ALLOWED_IPS)
    validate(doc, patch=True)  # not owned: `required` is relaxed there too


@pytest.mark.parametrize(
    ("path", "value", "match"),
    [
        ("spec.apiServerAllowedIPRanges.cidrBlocks", "203.0.113.0/24", r"cidrBlocks: .* not of type 'array'"),
        ("spec.apiServerAllowedIPRanges.cidrBlock", ["203.0.113.0/24"], r"'cidrBlock' was unexpected"),
        ("spec.apiServerAllowedIPRange", {"cidrBlocks": []}, r"'apiServerAllowedIPRange' was unexpected"),
    ],
)
def test_cluster_patch_stays_strict(path, value, match):
    with fails(match):
        validate(changed(CLUSTER_PATCH, path, value), patch=True, owned=ALLOWED_IPS)


def test_owned_path_must_be_in_the_patch():
    doc = changed(CLUSTER_PATCH, "spec.apiServerAllowedIPRanges", delete=True)
    with fails(r"owned path spec\.apiServerAllowedIPRanges is not in the patch"):
        validate(doc, patch=True, owned=ALLOWED_IPS)


def test_seed_node_proxy_patch_passes():
    validate(SEED_PATCH, patch=True, owned=DC1_NODE)


def test_seed_node_proxy_patch_typo_fails():
    doc = changed(SEED_PATCH, "spec.datacenters.dc1.node.httpproxy", "http://p:3128")
    with fails(r"spec\.datacenters\.dc1\.node: .*'httpproxy' was unexpected"):
        validate(doc, patch=True, owned=DC1_NODE)


def test_seed_patch_is_not_a_full_object():
    with fails(r"'kubeconfig' is a required property"):
        validate(SEED_PATCH)


@pytest.mark.parametrize("size", ["5Gi", 5])
def test_int_or_string_accepts_both(size):
    doc = changed(CLUSTER_PATCH, "spec.componentsOverride.etcd.diskSize", size)
    validate(doc, patch=True, owned=ALLOWED_IPS)


@pytest.mark.parametrize("size", ["5 GB", 5.5])
def test_int_or_string_rejects_others(size):
    doc = changed(CLUSTER_PATCH, "spec.componentsOverride.etcd.diskSize", size)
    with fails(r"spec\.componentsOverride\.etcd\.diskSize"):
        validate(doc, patch=True, owned=ALLOWED_IPS)


def test_list_map_keys_are_needed_even_in_a_patch():
    doc = changed(CLUSTER_PATCH, "spec.mla.loggingResources.claims", [{"request": "gpu"}])
    with fails(r"claims\.0: list-map key 'name' missing"):
        validate(doc, patch=True, owned=ALLOWED_IPS)


def test_cel_rules_fail_loudly():
    usage = {"accelerators": [{"provider": "kubevirt", "resources": {"gpu": 1}}]}
    doc = changed(CLUSTER_PATCH, "status.resourceUsage", usage)
    with fails(r"CEL\) not checked offline: self\.resources\.size\(\) > 0"):
        validate(doc, patch=True, owned=ALLOWED_IPS)


def test_owned_needs_patch_mode():
    with pytest.raises(ValueError):
        validate_custom(CLUSTER_PATCH, owned=ALLOWED_IPS)


# ----------------------------------------------------------------- core kinds

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "squid", "namespace": "egress"},
    "spec": {
        "selector": {"matchLabels": {"app": "squid"}},
        "template": {
            "metadata": {"labels": {"app": "squid"}},
            "spec": {"containers": [{"name": "squid", "image": "ubuntu/squid:6.6-24.04_beta"}]},
        },
    },
}
SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "squid", "namespace": "egress"},
    "spec": {
        "type": "LoadBalancer",
        "selector": {"app": "squid"},
        "ports": [{"name": "proxy", "port": 3128, "targetPort": 3128, "protocol": "TCP"}],
        "loadBalancerSourceRanges": ["10.0.0.0/8"],
    },
}
CONFIGMAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "user-ca-bundle", "namespace": "openshift-config"},
    "data": {"ca-bundle.crt": "-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n"},
}
NETWORK_POLICY = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "NetworkPolicy",
    "metadata": {"name": "egress-via-proxy", "namespace": "apps"},
    "spec": {
        "podSelector": {},
        "policyTypes": ["Egress"],
        "egress": [
            {
                "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "egress"}}}],
                "ports": [{"protocol": "TCP", "port": 3128}],
            }
        ],
    },
}
PDB = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "squid", "namespace": "egress"},
    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "squid"}}},
}


@pytest.mark.parametrize("doc", [DEPLOYMENT, SERVICE, CONFIGMAP, NETWORK_POLICY, PDB], ids=lambda d: d["kind"])
def test_good_core_kinds_pass(doc):
    validate(doc)
    validate_core(doc)


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        (changed(DEPLOYMENT, "spec.selector", delete=True), r"Deployment/squid: spec: 'selector' is a required property"),
        (
            changed(SERVICE, "spec.loadBalancerSourceRange", ["10.0.0.0/8"]),
            r"Service/squid: spec: Additional properties .*loadBalancerSourceRange",
        ),
        (changed(SERVICE, "spec.ports", [{"port": "3128"}]), r"spec\.ports\.0\.port: '3128' is not of type"),
        (changed(CONFIGMAP, "data.key", 12345), r"12345 is not of type"),
        (changed(PDB, "spec.minAvailable", 1.5), r"spec\.minAvailable"),
        (changed(CONFIGMAP, "metadata", delete=True), r"ConfigMap/\?: metadata: must be a mapping"),
        (changed(CONFIGMAP, "apiVersion", "v2"), r"no usable schema"),
    ],
)
def test_bad_core_kinds_fail(doc, match):
    with fails(match):
        validate(doc)


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [("v1", "Frobnicator"), ("route.openshift.io/v1", "Route"), ("example.com/v1", "Thing")],
)
def test_unknown_kind_fails_loudly(api_version, kind):
    doc = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}
    with fails(r"no usable schema: Couldn't find schema for kind " + kind):
        validate(doc)


def test_foreign_group_cannot_borrow_a_core_schema():
    # kubernetes-validate keys schema files on the group's first label only
    # (networking.example.com -> networking-v1); the apiVersion enum saves us.
    doc = changed(NETWORK_POLICY, "apiVersion", "networking.example.com/v1")
    with fails(r"apiVersion: 'networking\.example\.com/v1' is not one of"):
        validate(doc)


def test_patch_mode_is_refused_for_core_kinds():
    with pytest.raises(ValueError, match="only supported for CRD-backed kinds"):
        validate(CONFIGMAP, patch=True)


# ------------------------------------------------------------------ YAML files


def test_validate_yaml_file_multi_doc(tmp_path):
    import yaml

    path = tmp_path / "out.yaml"
    path.write_text(yaml.safe_dump_all([PROXY, CONFIGMAP, NETWORK_POLICY]) + "---\n")
    assert validate_yaml_file(path) == 3

    path.write_text(yaml.safe_dump_all([CONFIGMAP, changed(PROXY, "spec.noproxy", "x")]))
    with fails(r"out\.yaml document 1: Proxy/cluster is invalid"):
        validate_yaml_file(path)


def test_validate_yaml_file_empty_fails(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("---\n# nothing\n")
    with fails("no YAML documents"):
        validate_yaml_file(path)
