"""Issue 20, items 5, 6, 16, 19 and 26: registry.k8s.io, dl.k8s.io and Docker Hub as a pull really touches them.

Each test resolves a stack and names the finding it pins; the facts and their sources are in matrix/expansions.yaml
(the notes of the docker.io, registry.k8s.io and dl.k8s.io expansions) and in matrix/sources.yaml.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from egress.project import open_project
from egress.resolve import resolve
from egress.runs_on import Place

ROOT = Path(__file__).resolve().parents[1]
PROJECT = open_project(ROOT)

S3_COPY = re.compile(r"^(prod-registry-k8s-io-[a-z0-9-]+|767373bbdcb8270361b96548387bf2a9ad0d48758c35-eu-west-2)\.s3\.dualstack\.")
DOCKER_S3 = "docker-images-prod.s3.dualstack.us-east-1.amazonaws.com"


def stack(name: str, **overrides):
    catalog, profile, _ = PROJECT.requirements(name)
    profile = profile.model_copy(update=overrides)
    return catalog, resolve(catalog, profile)


def hosts(reqs, role: str = "nodes") -> set[str]:
    return {r.destination for r in reqs if r.role == role}


def one(reqs, destination: str, role: str = "nodes"):
    found = [r for r in reqs if r.destination == destination and r.role == role]
    assert len(found) == 1, (destination, found)
    return found[0]


def places(**roles: Place) -> dict[str, tuple[Place, ...]]:
    return {role: (place,) for role, place in roles.items()}


# 5 + 26 ------------------------------------------------------------------------------------------ registry.k8s.io
def test_registry_k8s_io_production_sends_every_non_aws_blob_to_one_cdn():
    """Production sets the AWS base URL of all 22 Cloud Run regions to cdn.registry.k8s.io: the module's CloudFront
    defaults and archeio's built-in default are never served, nor the module's per-region default buckets."""
    _, reqs = stack("kkp", runs_on=places(nodes=Place(cloud="vsphere")))
    got = hosts(reqs)
    assert "cdn.registry.k8s.io" in got
    assert not {"d1be1w964nk82h.cloudfront.net", "d39mqg4b1dx9z1.cloudfront.net"} & got
    assert not [h for h in got if S3_COPY.match(h)]
    pkg_dev = sorted(h for h in got if h.endswith("-docker.pkg.dev"))
    assert len(pkg_dev) == 22 and "us-central1-docker.pkg.dev" in pkg_dev  # manifests; us-central1 also signatures
    cdn = one(reqs, "cdn.registry.k8s.io")
    assert cdn.entry_ids == one(reqs, "registry.k8s.io").entry_ids  # every node pull from registry.k8s.io
    assert [section for _, section in cdn.citations if "global_aws_base_url" in section]


def test_registry_k8s_io_sources_each_cite_one_commit():
    catalog = PROJECT.catalog()
    config, archeio = catalog.sources["registry-k8s-io-prod-config"], catalog.sources["registry-k8s-io-archeio"]
    assert re.search(r"/blob/fd832e30c8cc3aec8b7ef61f8fb35ac7ed6f9dc8/infra/gcp/terraform/modules/oci-proxy/main\.tf$", config.url)
    assert re.search(r"/tree/093d55a66dedb860360b79b865388f0223663749/cmd/archeio$", archeio.url)
    assert "3ca41f50" not in config.doc  # the module generation production overrides is no longer cited


# 16 ----------------------------------------------------------------------------------------------- where the client runs
def test_vsphere_nodes_of_a_seed_that_manages_aws_get_no_aws_bucket():
    """The kkp stack manages AWS (feature kkp-aws, awsRegion eu-central-1); its nodes on vSphere pull from the CDN."""
    _, reqs = stack("kkp", runs_on=places(nodes=Place(cloud="vsphere"), seed=Place(cloud="aws", region="eu-central-1")))
    assert not [h for h in hosts(reqs) if S3_COPY.match(h) or h == DOCKER_S3]


@pytest.mark.parametrize("region,bucket_host", [
    ("eu-central-1", "prod-registry-k8s-io-eu-central-1.s3.dualstack.eu-central-1.amazonaws.com"),
    ("eu-west-2", "767373bbdcb8270361b96548387bf2a9ad0d48758c35-eu-west-2.s3.dualstack.eu-west-2.amazonaws.com"),
    ("me-south-1", "prod-registry-k8s-io-me-central-1.s3.dualstack.me-central-1.amazonaws.com"),
    ("ap-east-2", "prod-registry-k8s-io-ap-east-1.s3.dualstack.ap-east-1.amazonaws.com"),
    ("cn-north-1", "prod-registry-k8s-io-ap-east-1.s3.dualstack.ap-east-1.amazonaws.com"),
    ("us-west-2", "prod-registry-k8s-io-us-west-2.s3.dualstack.us-west-2.amazonaws.com"),
])
def test_registry_k8s_io_s3_copy_follows_the_region_the_nodes_run_in(region, bucket_host):
    """Keyed on the role's runsOn region, not on the stack's awsRegion (eu-central-1 in the kkp stack)."""
    _, reqs = stack("kkp", runs_on=places(nodes=Place(cloud="aws", region=region)))
    assert sorted(h for h in hosts(reqs) if S3_COPY.match(h)) == [bucket_host]
    bucket = one(reqs, bucket_host)
    assert bucket.entry_ids == one(reqs, "registry.k8s.io").entry_ids
    assert {via.split(" (for ")[0] for via in bucket.via} == {"registry.k8s.io"}


def test_aws_region_without_an_s3_copy_falls_back_to_the_cdn():
    """us-gov-west-1 is an AWS region archeio maps to no bucket: its clients get the default base URL."""
    _, reqs = stack("kkp", runs_on=places(nodes=Place(cloud="aws", region="us-gov-west-1")))
    got = hosts(reqs)
    assert "cdn.registry.k8s.io" in got and not [h for h in got if S3_COPY.match(h)]


# 6 ------------------------------------------------------------------------------------------------ Docker Hub blobs
def test_docker_hub_blob_hosts_as_observed():
    _, reqs = stack("kkp", runs_on=places(nodes=Place(cloud="vsphere")))
    got = hosts(reqs)
    assert {"registry-1.docker.io", "auth.docker.io", "production.cloudfront.docker.com",
            "production.cloudflare.docker.com"} <= got
    assert DOCKER_S3 not in got  # only clients on AWS are sent to Hub's S3 bucket
    cloudflare = one(reqs, "production.cloudflare.docker.com")
    assert {via.split(" (for ")[0] for via in cloudflare.via} == {"docker.io"}
    assert any("docker network rule" in section for _, section in cloudflare.citations)


@pytest.mark.parametrize("region", ["eu-west-1", "ap-southeast-2"])
def test_docker_hub_s3_bucket_for_clients_on_aws_is_one_host_whatever_their_region(region):
    """The bucket docker-images-prod lives in us-east-1; a bucket name is global, so the host does not follow the region."""
    _, reqs = stack("kkp", runs_on=places(nodes=Place(cloud="aws", region=region)))
    assert DOCKER_S3 in hosts(reqs)
    assert not [h for h in hosts(reqs) if h.startswith("docker-images-prod.") and h != DOCKER_S3]


# 19 ----------------------------------------------------------------------------------------------- docker.io is a name
@pytest.mark.parametrize("name", PROJECT.stacks())
def test_no_stack_opens_docker_io_itself_or_the_retired_cdn_dl_k8s_io(name):
    _, _, reqs = PROJECT.requirements(name)  # one resolution per stack for both (each stack resolves the whole matrix)
    destinations = {r.destination for r in reqs}
    assert "docker.io" not in destinations
    assert "cdn.dl.k8s.io" not in destinations  # dl.k8s.io's former redirect target no longer resolves


def test_docker_io_requirements_become_their_pull_hosts_with_entry_images_and_citation():
    catalog, reqs = stack("kkp")
    registry = one(reqs, "registry-1.docker.io")
    docker_entries = sorted(e.id for e in catalog.entries if e.destination == "docker.io" and e.role == "nodes"
                            and e.level in ("required", "recommended") and e.id in registry.entry_ids)
    assert docker_entries and registry.entry_ids == tuple(docker_entries)
    for entry in (e for e in catalog.entries if e.id in registry.entry_ids):
        assert set(entry.images) <= set(registry.images)
        cited = (catalog.sources[entry.citation.source].cited, entry.citation.section)
        assert cited in registry.citations  # the entry's own citation travels with the hosts that replace docker.io
    assert registry.images  # the docker.io images are named where the pull really goes


def test_only_docker_io_is_a_name_no_client_contacts():
    """Every other expansion key is a host the client connects to (quay.io, gcr.io, icr.io ... answer the registry API)."""
    assert [e.host for e in PROJECT.catalog().expansions if not e.contacted] == ["docker.io"]


# dl.k8s.io (stale: its former redirect target no longer resolves) -------------------------------------------------
def test_dl_k8s_io_is_served_without_a_redirect_host():
    _, reqs = stack("kkp")
    assert one(reqs, "dl.k8s.io").entry_ids == ("kkp-kubelet-binaries",)
    expansion = next(e for e in PROJECT.catalog().expansions if e.host == "dl.k8s.io")
    assert expansion.implies == ()
