"""Resolver: conditions, alternatives, placeholders, expansion, de-duplication, determinism (exact results)."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from egress.catalog import load_catalog
from egress.errors import ResolveError
from egress.profile import Profile
from egress.render import catalog_json, requirements_json
from egress.resolve import resolve

ROOT = Path(__file__).resolve().parents[1]


def profile(**values) -> Profile:
    return Profile.model_validate(values)


def keys(reqs):
    return [(r.role, r.destination, r.protocol, ",".join(map(str, r.ports))) for r in reqs]


def test_konnectivity_drops_the_tunnel_rows(catalog):
    reqs = resolve(catalog, profile(platforms=["aks"], cloud="azure-public", location="westeurope", levels=["required"]))
    assert ("nodes", "*", "udp", "1194") not in keys(reqs)
    assert [r.destination for r in reqs if r.protocol in ("tcp", "udp")] == []


def test_tunnel_alternative_uses_the_service_tag_name_map(catalog):
    reqs = resolve(catalog, profile(platforms=["aks"], cloud="azure-public", location="francecentral", konnectivity=False, levels=["required"]))
    tunnel = [r for r in reqs if r.protocol == "udp" and 1194 in (r.ports[0].start,)]
    assert [(r.destination, r.kind) for r in tunnel] == [("AzureCloud.centralfrance", "service-tag")]
    assert [a.kind for a in tunnel[0].alternatives] == ["service-tag", "any"]
    assert "not resolvable here: {api_server_ip}" in tunnel[0].chosen


def test_tunnel_alternative_prefers_the_api_server_ip_when_known(catalog):
    reqs = resolve(catalog, profile(platforms=["aks"], cloud="azure-public", location="westeurope", konnectivity=False,
                                    api_server_ip="20.1.2.3", levels=["required"]))
    assert [(r.destination, r.protocol, str(r.ports[0])) for r in reqs if r.protocol in ("tcp", "udp")] == [
        ("20.1.2.3", "tcp", "9000"), ("20.1.2.3", "udp", "1194")]


def test_private_cluster_drops_api_server_and_hcp(catalog):
    reqs = resolve(catalog, profile(platforms=["aks"], cloud="azure-public", location="westeurope", private_cluster=True,
                                    features=["pod-api-access"], levels=["required"]))
    assert not [r for r in reqs if "hcp" in r.destination or r.protocol == "tcp"]


def test_custom_dns_expands_per_server(catalog):
    reqs = resolve(catalog, profile(platforms=["aks"], cloud="azure-usgov", location="usgovtexas", custom_dns_ips=["10.0.0.4", "10.0.0.5"]))
    assert [(r.destination, r.protocol, str(r.ports[0])) for r in reqs if r.protocol == "udp" and r.ports[0].start == 53] == [
        ("10.0.0.4", "udp", "53"), ("10.0.0.5", "udp", "53")]


def test_registry_expansion_and_offline_mode(catalog):
    online = resolve(catalog, profile(platforms=["kkp"]))
    docker_hosts = sorted(r.destination for r in online if r.role == "nodes" and any("docker.io (for" in v for v in r.via))
    assert docker_hosts == ["auth.docker.io", "production.cloudflare.docker.com", "production.cloudfront.docker.com", "registry-1.docker.io"]
    offline = resolve(catalog, profile(platforms=["kkp"], offline_registry="172.20.0.2:5000"))
    # Downloads (dl.k8s.io, GitHub releases) stay; every registry and its blob hosts go.
    registries = [r for r in offline if r.images or r.via and not r.via[0].startswith(("github.com", "dl.k8s.io"))]
    assert keys(registries) == []
    mirror = [r for r in offline if r.entry_ids == ("kkp-offline-registry",)]
    assert keys(mirror) == [("nodes", "172.20.0.2", "tcp", "5000")] and mirror[0].kind == "ip"


def test_duplicates_merge_with_all_citations(catalog):
    reqs = resolve(catalog, profile(platforms=["aks"], cloud="azure-public", location="westeurope",
                                    features=["azure-monitor", "azure-policy"]))
    dc = [r for r in reqs if r.destination == "dc.services.visualstudio.com"]
    assert len(dc) == 1
    assert dc[0].entry_ids == ("aks-monitor-dc-public", "aks-policy-telemetry-public")
    mcr = [r for r in reqs if r.destination == "*.data.mcr.microsoft.com"][0]
    assert mcr.entry_ids == ("aks-public-mcr", "aks-public-mcr-data")  # stated, and implied by the mcr pull
    assert mcr.via == ("mcr.microsoft.com (for aks-public-mcr)",)


def test_url_entries_resolve_to_their_host_with_paths(catalog):
    reqs = resolve(catalog, profile(platforms=["kkp"], features=["kubeone"]))
    github = [r for r in reqs if r.destination == "github.com" and r.role == "nodes"][0]
    assert github.paths == ("/containernetworking/plugins/releases/", "/kubernetes-sigs/cri-tools/releases")
    assert github.kind == "fqdn"


def test_unresolved_placeholder_is_an_error(catalog):
    with pytest.raises(ResolveError, match=r"entry 'kkp-[a-z0-9-]+' \(kkp\).*\{aws_region\} \(set egress-matrix:awsRegion\)"):
        resolve(catalog, profile(platforms=["kkp"], features=["kkp-aws"]))


def test_levels_filter(catalog):
    base = dict(platforms=["aks"], cloud="azure-public", location="westeurope")
    required = resolve(catalog, profile(**base, levels=["required"]))
    everything = resolve(catalog, profile(**base, levels=["required", "recommended", "optional"]))
    assert {r.level for r in required} == {"required"}
    assert {r.level for r in everything} == {"required", "recommended", "optional"}


def _shuffled_copy(src: Path, dst: Path, seed: int) -> None:
    rng = random.Random(seed)
    dst.mkdir()
    files = sorted(src.glob("*.yaml"))
    rng.shuffle(files)
    for index, path in enumerate(files):  # new names change the load order too
        document = yaml.safe_load(path.read_text())
        if document.get("kind") == "platform":
            rng.shuffle(document["entries"])
            document["features"] = dict(sorted(document["features"].items(), key=lambda _: rng.random()))
            name = path.name
        else:
            name = path.name
        (dst / name).write_text(yaml.safe_dump(document, sort_keys=False))
        os.utime(dst / name, (index, index))


def test_shuffled_matrix_gives_identical_output(tmp_path, catalog):
    stack_profile = profile(platforms=["aks", "kkp", "openshift"], cloud="azure-public", location="westeurope",
                            features=["kkp-aws", "kubeone", "azure-monitor"], aws_region="eu-central-1",
                            openshift_platform="AWS", cluster_name="demo", base_domain="example.com")
    expected_catalog = catalog_json(catalog)
    expected = requirements_json("x", resolve(catalog, stack_profile))
    for seed in range(3):
        shuffled = tmp_path / f"m{seed}"
        _shuffled_copy(ROOT / "matrix", shuffled, seed)
        other = load_catalog(shuffled)
        assert catalog_json(other) == expected_catalog
        assert requirements_json("x", resolve(other, stack_profile)) == expected


def test_output_is_identical_across_hash_seeds():
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        result = subprocess.run([sys.executable, "-m", "egress.cli", "matrix", "--stack", "dev", "--format", "json"],
                                capture_output=True, text=True, cwd=ROOT, env=env)
        assert result.returncode == 0, result.stderr
        outputs.add(result.stdout)
    assert len(outputs) == 1
    assert json.loads(outputs.pop())["count"] > 50


def test_list_placeholder_mixing_names_and_addresses_keeps_each_kind(catalog):
    reqs = resolve(catalog, profile(platforms=["kkp"], features=["kkp-vsphere"], vsphere_endpoints=["vcenter.example.com", "10.0.0.5"]))
    assert [(r.destination, r.kind) for r in reqs if r.entry_ids == ("kkp-seed-vsphere",)] == [("10.0.0.5", "ip"), ("vcenter.example.com", "fqdn")]
