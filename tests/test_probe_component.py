"""The probe Jobs deployed by the program (probeDeploy, issue 21 item 2) under the SDK's mocks: the engine receives exactly
the objects `egress render` writes (plus the skipAwait annotation on each Job), a Job is replaced delete-first when its
spec changes, everything runs after the stack's firewall components, the proxy credentials reach the Secret only as a
secret, and nothing of the probe is registered unless probeDeploy is on."""
from __future__ import annotations

import json
import runpy

import pulumi
import pytest
from pulumi.runtime import rpc

from egress.probe.job import CREDENTIALS_SECRET, credentials_secret, probe_objects
from egress.targets.kubernetes import compile_kubernetes

from aws_stacks import stack
from pulumi_harness import RecordingMonitor, settle
from test_kubernetes_component import TYPES, Mocks, _plain
from test_program import ROOT, stack_config

CREDENTIALS = "svc-probe:Sup3r/S3cret@x"


class OptionsMonitor(RecordingMonitor):
    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if self.registrations and self.registrations[-1]["name"] == request.name:
            self.registrations[-1].update(protect=request.protect, replace_on_changes=list(request.replaceOnChanges))
        return response


def _jobs(name="proxy-only", credentials=False, **overrides):
    catalog, profile, reqs = stack(name, probe_job=True, **overrides)
    if credentials:
        profile = profile.with_secrets({"proxyCredentials"})
    return compile_kubernetes(catalog, profile, reqs).probe


def deploy(jobs, credentials=None):
    from components.kubernetes_probe import EgressProbe

    mocks = Mocks()
    monitor = OptionsMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack="proxy-only", preview=False, monitor=monitor)

    @pulumi.runtime.test
    def run():
        EgressProbe("egress-probe", jobs, credentials=pulumi.Output.secret(credentials) if credentials else None)
        return pulumi.Output.from_input(1)

    run()
    return monitor.registrations


def test_the_engine_receives_the_rendered_objects_and_jobs_are_replaced_not_awaited():
    jobs = _jobs(probe_roles=("nodes", "seed"))
    registrations = [r for r in deploy(jobs) if r["type"].startswith("kubernetes:")]
    expected = probe_objects(jobs)
    types = {**TYPES, "Job": "kubernetes:batch/v1:Job"}
    assert len(registrations) == len(expected) == 5
    by_key = {(r["inputs"]["kind"], r["inputs"]["metadata"].get("namespace"), r["inputs"]["metadata"]["name"]): r for r in registrations}
    for obj in expected:
        got = by_key[(obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])]
        assert got["type"] == types[obj["kind"]]
        inputs = dict(got["inputs"])
        metadata = inputs.pop("metadata")
        if obj["kind"] == "Job":
            assert metadata.pop("annotations") == {"pulumi.com/skipAwait": "true"}
        # A change is a new name, so a new resource created before the old one is deleted: never delete-before-replace
        # (second review, suspicion A: it raced the old Job's foreground deletion, a 409).
        assert (got["delete_before_replace"], got["replace_on_changes"]) == (False, [])
        assert metadata == obj["metadata"] and inputs == {k: v for k, v in obj.items() if k != "metadata"}
        assert got["protect"] is False  # not a firewall resource
    urns = {r["inputs"]["metadata"]["name"] + "/" + r["inputs"]["kind"]: r["urn"] for r in registrations}
    for role in ("nodes", "seed"):
        [name] = [j.name for j in jobs if j.role == role]
        job = by_key[("Job", "egress-probe", name)]
        assert {urns["egress-probe/Namespace"], urns[f"{name}/ConfigMap"]} <= set(job["dependencies"])
        assert job["urn"].endswith(f"-job-egress-probe-{name}")  # the logical name carries the hash: a change is a new resource


def test_credentials_reach_the_secret_only_as_a_secret():
    jobs = _jobs(credentials=True)
    assert all(j.credentials for j in jobs)  # proxy-only's nodes go through its egress proxy
    registrations = deploy(jobs, CREDENTIALS)
    [secret] = [r for r in registrations if r["type"] == "kubernetes:core/v1:Secret"]
    shape = credentials_secret(jobs)
    assert secret["inputs"]["metadata"] == shape["metadata"] and secret["inputs"]["type"] == "Opaque"
    data = secret["inputs"]["stringData"]
    assert isinstance(data, dict) and data.get(rpc._special_sig_key) == rpc._special_secret_sig
    assert _plain(data) == {"credentials": CREDENTIALS}
    [job] = [r for r in registrations if r["type"] == "kubernetes:batch/v1:Job"]
    env = job["inputs"]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "EGRESS_PROBE_PROXY_CREDENTIALS", "valueFrom": {"secretKeyRef": {"name": CREDENTIALS_SECRET, "key": "credentials"}}} in env
    assert secret["urn"] in job["dependencies"]
    for r in registrations:  # nothing carries them in plain form
        plain = {k: v for k, v in r["inputs"].items() if not (isinstance(v, dict) and v.get(rpc._special_sig_key) == rpc._special_secret_sig)}
        assert "Sup3r" not in repr(plain) and "Sup3r" not in json.dumps(_plain(r["inputs"].get("metadata", {})))


def test_no_secret_without_credentials():
    registrations = deploy(_jobs())
    assert not [r for r in registrations if r["type"] == "kubernetes:core/v1:Secret"]


def _program(monkeypatch, loop, config: dict) -> list[dict]:
    monkeypatch.chdir(ROOT)
    mocks = Mocks()
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack="proxy-only", preview=False, monitor=monitor)
    pulumi.runtime.set_all_config(config)
    runpy.run_path(str(ROOT / "__main__.py"))
    settle(loop)
    return monitor.registrations


@pytest.mark.parametrize("deploy_it", [False, True])
def test_the_program_deploys_the_probe_only_when_asked_and_after_the_firewall(deploy_it, loop, monkeypatch):
    config = {**stack_config("proxy-only"), "egress-matrix:probeJob": "true"}
    if deploy_it:
        config["egress-matrix:probeDeploy"] = "true"
    registrations = _program(monkeypatch, loop, config)
    probe = [r for r in registrations if r["type"] == "egress:kubernetes:EgressProbe"]
    kinds = {r["inputs"].get("kind") for r in registrations if r["type"].startswith("kubernetes:")}
    if not deploy_it:
        assert probe == [] and "Job" not in kinds and not [r for r in registrations if "egress-probe" in r["name"]]
        return
    [component] = probe
    [namespace] = [r for r in registrations if r["parent"] == component["urn"] and r["inputs"].get("kind") == "Namespace"]
    firewall = {r["urn"] for r in registrations if r["type"] in ("egress:kubernetes:EgressProxy", "egress:kubernetes:ClusterProxy")}
    assert len(firewall) == 2
    # the SDK expands a component dependency to its children: the namespace waits for every firewall object
    children = {r["urn"] for r in registrations if r["parent"] in firewall}
    assert len(children) == 7 and set(namespace["dependencies"]) == children


def test_probe_objects_are_not_firewall_resources_in_the_preview(tmp_path):
    """With probeDeploy on the dev stack, the preview (egress diff's view) still protects exactly the firewall resources:
    the probe's Namespace, ConfigMaps and Jobs are registered unprotected, and none is a kind egress diff guards."""
    from egress.project import open_project
    from egress_preview.dangers import FIREWALL_KINDS
    from egress_preview.preview import preview, snapshot
    from project_tree import copy_project

    project = copy_project(tmp_path)
    stack_file = project / "stacks" / "Pulumi.dev.yaml"
    text = stack_file.read_text()
    assert "  egress-matrix:targets:" in text
    stack_file.write_text(text.replace("  egress-matrix:targets:", "  egress-matrix:probeJob: true\n  egress-matrix:probeDeploy: true\n"
                                       "  egress-matrix:probeRoles: [nodes, seed]\n  egress-matrix:targets:", 1))
    resources = snapshot(preview(open_project(project), "dev"))["resources"]
    probe = [r for r in resources if "egress-probe" in r["name"]]
    assert sorted(r["type"] for r in probe) == ["egress:kubernetes:EgressProbe", "kubernetes:batch/v1:Job", "kubernetes:batch/v1:Job",
                                                "kubernetes:core/v1:ConfigMap", "kubernetes:core/v1:ConfigMap", "kubernetes:core/v1:Namespace"]
    assert not any(r["protect"] for r in probe) and not any(r["type"] in FIREWALL_KINDS for r in probe)
    protected = {(r["type"], r["name"]) for r in resources if r["protect"]}
    assert protected == {(r["type"], r["name"]) for r in resources if r["type"] in FIREWALL_KINDS} and len(protected) == 15
