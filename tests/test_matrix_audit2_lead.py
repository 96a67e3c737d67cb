"""Issue 20, the semantics behind the audit's data fixes: where a role's machines run (runsOn), expansion keys no
client contacts (docker.io), and rows that stop resolving on their retirement date."""
from __future__ import annotations

from pathlib import Path

import pytest

from egress.catalog.own import expiry_notices
from egress.errors import ResolveError
from egress.project import Project

ROOT = Path(__file__).resolve().parents[1]

PLACES = """schema: 1
kind: platform
platform: places
title: Rows that depend on where the client runs
defaults: {role: nodes, level: required, protocol: http}
entries:
  - {id: ec2-mirror, destination: "{runs_on_region}.ec2.archive.ubuntu.com", when: {runs_on: [aws]}, purpose: Ubuntu on EC2,
     approval: {owner: t, reference: T-1}}
  - {id: gce-mirror, destination: "{runs_on_region}.clouds.archive.ubuntu.com", when: {runs_on: [gcp]}, purpose: Ubuntu on GCE,
     approval: {owner: t, reference: T-1}}
  - {id: default-mirror, destination: archive.ubuntu.com, when: {not_runs_on: [aws, gcp, azure]}, purpose: Ubuntu elsewhere,
     approval: {owner: t, reference: T-1}}
  - {id: seed-only-in-frankfurt, role: seed, destination: frankfurt.example.com, when: {runs_on_regions: [eu-central-1]},
     purpose: A row for one region, approval: {owner: t, reference: T-1}}
"""


def _project(root: Path, runs_on: str, monkeypatch) -> Project:
    (root / "own-places").mkdir(exist_ok=True)
    (root / "own-places" / "places.yaml").write_text(PLACES)
    (root / "stacks" / "Pulumi.places.yaml").write_text(
        "config:\n  egress-matrix:platforms: [kkp]\n  egress-matrix:catalogs: [own-places]\n"
        "  egress-matrix:nodeSources: [10.0.0.0/16]\n  egress-matrix:seedSources: [10.1.0.0/16]\n" + runs_on)
    monkeypatch.chdir(root)
    return Project(root)


def _hosts(project: Project, role: str) -> set[str]:
    _, _, reqs = project.requirements("places")
    return {r.destination for r in reqs if r.role == role and "places" in r.platforms}


def test_rows_follow_where_each_role_runs(project_copy, monkeypatch):
    project = _project(project_copy, "  egress-matrix:runsOn:\n    seed: {cloud: aws, region: eu-central-1}\n"
                                      "    nodes: {cloud: gcp, region: europe-west3}\n", monkeypatch)
    assert _hosts(project, "nodes") == {"europe-west3.clouds.archive.ubuntu.com"}
    # the seed has no rows of the platform except its own; the nodes' rows are judged for the nodes only
    assert _hosts(project, "seed") == {"frankfurt.example.com"}


def test_a_role_whose_place_is_not_said_gets_the_default_rows_only(project_copy, monkeypatch):
    project = _project(project_copy, "", monkeypatch)
    assert _hosts(project, "nodes") == {"archive.ubuntu.com"}
    assert _hosts(project, "seed") == set()


def test_a_region_row_needs_the_region(project_copy, monkeypatch):
    # a cloud without regions (a datacenter) may leave it out; a row using {runs_on_region} then names the setting
    project = _project(project_copy, "  egress-matrix:runsOn:\n    nodes: {cloud: aws, region: eu-west-1}\n    seed: {cloud: vsphere}\n",
                       monkeypatch)
    places = project_copy / "own-places" / "places.yaml"
    places.write_text(places.read_text() + "  - {id: seed-dc, role: seed, destination: \"{runs_on_region}.dc.example.com\", purpose: Per-DC mirror,\n"
                                            "     approval: {owner: t, reference: T-1}}\n")
    with pytest.raises(ResolveError, match=r"\{runs_on_region\} \(set egress-matrix:runsOn\.seed\.region\)"):
        project.requirements("places")


def _china_with_defender(project_copy: Path, monkeypatch, today: str):
    """The aks-china stack with Defender on again (its 21Vianet rows retire on 2026-08-18), judged on ``today``."""
    monkeypatch.setenv("EGRESS_TODAY", today)
    monkeypatch.chdir(project_copy)
    stack = project_copy / "stacks" / "Pulumi.aks-china.yaml"
    stack.write_text(stack.read_text().replace("[pod-api-access, azure-monitor, azure-policy, cost-analysis]",
                                               "[pod-api-access, azure-monitor, azure-policy, cost-analysis, defender]"))
    return Project(project_copy).requirements("aks-china")


@pytest.mark.parametrize("today,resolves", [("2026-08-17", True), ("2026-08-18", False), ("2026-11-24", False)])
def test_rows_stop_resolving_on_their_retirement_date(project_copy, monkeypatch, today, resolves):
    catalog, _, reqs = _china_with_defender(project_copy, monkeypatch, today)
    ids = {i for r in reqs for i in r.entry_ids}
    assert ("aks-defender-ods-china" in ids) is resolves
    assert ({"aks-defender-login-china", "aks-defender-oms-china"} <= ids) is resolves
    # login.microsoftonline.cn stays for cost analysis, which does not retire
    assert "login.microsoftonline.cn" in {r.destination for r in reqs}
    notices = expiry_notices(catalog)
    named = any("feature defender" in n and "remove it from egress-matrix:features" in n for n in notices)
    assert named is not resolves
    assert set(catalog.retired) == (set() if resolves else {"aks-defender-login-china", "aks-defender-ods-china", "aks-defender-oms-china"})


def test_the_example_china_stack_no_longer_turns_on_the_retired_feature():
    catalog, _, _ = Project(ROOT).requirements("aks-china")
    assert catalog.retired_features == ()


def _kkp(project_copy: Path, monkeypatch, runs_on: str):
    stack = project_copy / "stacks" / "Pulumi.kkp.yaml"
    text = stack.read_text()
    start = text.index("  egress-matrix:runsOn:")
    end = text.find("\n  egress-matrix:", start + 1)
    end = len(text.rstrip("\n")) if end < 0 else end
    stack.write_text(text[:start] + runs_on.rstrip("\n") + text[end:] + "\n")
    monkeypatch.chdir(project_copy)
    _, _, reqs = Project(project_copy).requirements("kkp")
    return {r.destination for r in reqs if r.role == "nodes"}


def test_a_role_may_run_in_several_places_each_gets_its_rows(project_copy, monkeypatch):
    # a KKP seed manages user clusters on AWS and on vSphere: the nodes run in both (review of issue 20, finding 2)
    nodes = _kkp(project_copy, monkeypatch, "  egress-matrix:runsOn:\n    seed: {cloud: aws, region: eu-central-1}\n"
                                            "    nodes: [{cloud: aws, region: eu-west-1}, {cloud: vsphere}]\n")
    assert {"eu-west-1.ec2.archive.ubuntu.com", "archive.ubuntu.com", "ec2.eu-west-1.amazonaws.com", "vcenter.example.com",
            "prod-registry-k8s-io-eu-west-1.s3.dualstack.eu-west-1.amazonaws.com"} <= nodes


def test_a_row_for_one_cloud_takes_only_that_clouds_regions(project_copy, monkeypatch):
    nodes = _kkp(project_copy, monkeypatch, "  egress-matrix:runsOn:\n    seed: {cloud: aws, region: eu-central-1}\n"
                                            "    nodes: [{cloud: aws, region: eu-west-1}, {cloud: gcp, region: europe-west1}]\n")
    assert {"eu-west-1.ec2.archive.ubuntu.com", "europe-west1.gce.archive.ubuntu.com"} <= nodes
    assert not {"europe-west1.ec2.archive.ubuntu.com", "eu-west-1.gce.archive.ubuntu.com", "archive.ubuntu.com"} & nodes


def test_a_stack_that_does_not_place_its_nodes_keeps_the_s3_copy_of_the_region_it_manages(project_copy, monkeypatch):
    # before runsOn the copy followed awsRegion with kkp-aws: a stack that has not said where its nodes run must not
    # lose it on upgrade (archeio redirects AWS clients there and does not fall back)
    nodes = _kkp(project_copy, monkeypatch, "  egress-matrix:runsOn:\n    seed: {cloud: aws, region: eu-central-1}\n")
    assert "prod-registry-k8s-io-eu-central-1.s3.dualstack.eu-central-1.amazonaws.com" in nodes
    placed = _kkp(project_copy, monkeypatch, "  egress-matrix:runsOn:\n    seed: {cloud: aws, region: eu-central-1}\n    nodes: {cloud: vsphere}\n")
    assert not {h for h in placed if h.startswith("prod-registry-k8s-io-")}


@pytest.mark.parametrize("today,said", [("2026-07-01", None), ("2026-08-01", "retires on 2026-08-18 (17 days)"),
                                         ("2026-11-24", "retired on 2026-08-18 and is no longer allowed")])
def test_a_stack_is_warned_of_its_rows_that_retire_soon_or_retired(project_copy, monkeypatch, today, said):
    catalog, _, _ = _china_with_defender(project_copy, monkeypatch, today)
    notices = [n for n in expiry_notices(catalog) if n.startswith("vendor row aks-defender-ods-china")]
    if said is None:
        assert notices == []
    else:
        assert len(notices) == 1 and notices[0].startswith(f"vendor row aks-defender-ods-china {said}")
    # a stack that does not use the rows hears nothing of them
    assert not [n for n in expiry_notices(Project(project_copy).requirements("aks-public")[0]) if "aks-defender-ods-china" in n]


def test_explain_says_docker_io_is_only_a_name_and_where_pulls_go(run_cli):
    code, out, _ = run_cli("explain", "docker.io:443", "--stack", "proxy-only")
    assert code == 3  # nothing requires docker.io itself and the proxy, enforcing the nodes' role, denies it (egress/explain/verdict.py)
    assert "Note: docker.io is only a name: no client connects to it" in out
    assert "registry-1.docker.io" in out.split("Note: docker.io is only a name")[1]
