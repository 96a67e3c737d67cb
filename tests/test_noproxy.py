"""OpenShift status.noProxy: the cluster-network-operator's own unit-test expectations, reproduced exactly.

Cases from openshift/cluster-network-operator pkg/util/proxyconfig/no_proxy_test.go (TestMergeUserSystemNoProxy):
install-config machineCIDR 10.0.0.0/16, clusterNetwork 10.128.0.0/14, serviceNetwork 172.30.0.0/16, domain
test.cluster.com (cluster 'test', base domain 'cluster.com').
"""
from __future__ import annotations

import pytest

from egress.errors import ResolveError
from egress.noproxy import openshift_no_proxy
from egress.profile import Profile

UPSTREAM = [
    ("AWS", "us-west-2", "",
     ".cluster.local,.svc,.us-west-2.compute.internal,10.0.0.0/16,10.128.0.0/14,127.0.0.1,169.254.169.254,172.30.0.0/16,api-int.test.cluster.com,localhost"),
    ("GCP", "us-west2", "",
     ".cluster.local,.svc,10.0.0.0/16,10.128.0.0/14,127.0.0.1,169.254.169.254,172.30.0.0/16,api-int.test.cluster.com,localhost,metadata,metadata.google.internal,metadata.google.internal."),
    ("AWS", "us-east-1", "",
     ".cluster.local,.ec2.internal,.svc,10.0.0.0/16,10.128.0.0/14,127.0.0.1,169.254.169.254,172.30.0.0/16,api-int.test.cluster.com,localhost"),
    ("AWS", "us-west-2", "172.30.0.1",
     ".cluster.local,.svc,.us-west-2.compute.internal,10.0.0.0/16,10.128.0.0/14,127.0.0.1,169.254.169.254,172.30.0.0/16,172.30.0.1,api-int.test.cluster.com,localhost"),
    ("AWS", "us-west-2", "172.30.0.1,.foo.test.com,199.161.0.0/16",
     ".cluster.local,.foo.test.com,.svc,.us-west-2.compute.internal,10.0.0.0/16,10.128.0.0/14,127.0.0.1,169.254.169.254,172.30.0.0/16,172.30.0.1,199.161.0.0/16,api-int.test.cluster.com,localhost"),
]


def cluster(**extra) -> Profile:
    values = {"platforms": ["openshift"], "clusterName": "test", "baseDomain": "cluster.com", "machineCidrs": ["10.0.0.0/16"],
              "podCidrs": ["10.128.0.0/14"], "serviceCidrs": ["172.30.0.0/16"]}
    values.update(extra)
    return Profile.model_validate(values)


@pytest.mark.parametrize("platform,region,user,expected", UPSTREAM)
def test_matches_the_operator(catalog, platform, region, user, expected):
    profile = cluster(openshiftPlatform=platform, awsRegion=region if platform == "AWS" else None)
    assert openshift_no_proxy(catalog, profile, user) == expected


def test_user_list_from_the_stack_and_star(catalog):
    profile = cluster(openshiftPlatform="BareMetal", noProxy=["internal.example.com"])
    assert openshift_no_proxy(catalog, profile) == (
        ".cluster.local,.svc,10.0.0.0/16,10.128.0.0/14,127.0.0.1,172.30.0.0/16,api-int.test.cluster.com,internal.example.com,localhost")
    assert openshift_no_proxy(catalog, profile, "*") == "*"


def test_azure_wire_server_only_outside_the_public_cloud(catalog):
    public = openshift_no_proxy(catalog, cluster(openshiftPlatform="Azure", cloud="azure-public", location="westeurope"))
    gov = openshift_no_proxy(catalog, cluster(openshiftPlatform="Azure", cloud="azure-usgov", location="usgovvirginia"))
    assert "169.254.169.254" in public.split(",") and "168.63.129.16" not in public.split(",")
    assert "168.63.129.16" in gov.split(",")


def test_azure_stack_hub_adds_the_arm_endpoint_url_as_is(catalog):
    profile = cluster(openshiftPlatform="Azure", azureCloudName="AzureStackCloud",
                      azureArmEndpoint="https://management.local.azurestack.external")
    assert openshift_no_proxy(catalog, profile) == (
        ".cluster.local,.svc,10.0.0.0/16,10.128.0.0/14,127.0.0.1,168.63.129.16,169.254.169.254,172.30.0.0/16,"
        "api-int.test.cluster.com,https://management.local.azurestack.external,localhost")
    other = openshift_no_proxy(catalog, cluster(openshiftPlatform="Azure", azureCloudName="AzureGermanCloud"))
    assert "168.63.129.16" in other.split(",") and "https" not in other
    with pytest.raises(ResolveError, match="azureArmEndpoint"):
        openshift_no_proxy(catalog, cluster(openshiftPlatform="Azure", azureCloudName="AzureStackCloud"))


def test_whitespace_and_empty_pieces_behave_like_the_operator(catalog):
    out = openshift_no_proxy(catalog, cluster(openshiftPlatform="None"), " a.example.com,,b.example.com")
    assert " a.example.com" in out.split(",") and "" not in out.split(",")


def test_machine_network_all_zero_is_skipped(catalog):
    out = openshift_no_proxy(catalog, cluster(openshiftPlatform="None", machineCidrs=["0.0.0.0/0", "10.0.0.0/16"]))
    assert "0.0.0.0/0" not in out.split(",")


@pytest.mark.parametrize("missing,key", [("serviceCidrs", "serviceCidrs"), ("podCidrs", "podCidrs"), ("clusterName", "clusterName")])
def test_missing_cluster_facts_are_errors(catalog, missing, key):
    values = {"openshiftPlatform": "AWS", "awsRegion": "us-west-2"}
    profile = cluster(**values).model_copy(update={{"serviceCidrs": "service_cidrs", "podCidrs": "pod_cidrs", "clusterName": "cluster_name"}[missing]: () if missing != "clusterName" else None})
    with pytest.raises(ResolveError, match=key):
        openshift_no_proxy(catalog, profile)


def test_removed_entries_are_not_emitted(catalog):
    assert [r.id for r in catalog.noproxy_removed] == ["etcd-members"]
    out = openshift_no_proxy(catalog, cluster(openshiftPlatform="AWS", awsRegion="us-west-2"))
    assert "etcd" not in out and "api.test.cluster.com" not in out.split(",")
