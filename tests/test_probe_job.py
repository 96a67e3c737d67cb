"""The probe's Kubernetes Job (issue 21 item 2): rendered by `egress render` into the kubernetes target's output, valid under
kubernetes-validate strict, non-root on a read-only root filesystem, and its ConfigMap's agent really runs that way."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

from egress.probe.job import AGENT, NOBODY
from egress.probe.plan import build_plan
from egress.profile import DEFAULT_PROBE_IMAGE
from egress.targets.kubernetes import compile_kubernetes, render

from aws_stacks import stack
from k8s_schemas import validate
from probe_servers import DEAD, serving


HASHED = re.compile(r"-[0-9a-f]{8}(?=\.yaml$)")


def _files(name: str, **overrides) -> dict[str, dict]:
    """The probe's files, the Jobs' and ConfigMaps' <hash8> suffix taken off their paths (each must have one)."""
    catalog, profile, reqs = stack(name, probe_job=True, **overrides)
    out = {}
    for path, text in render(compile_kubernetes(catalog, profile, reqs)).items():
        if "egress-probe" in path:
            plain = HASHED.sub("", path)
            assert (plain != path) == ("namespace-" not in path), path
            out[plain] = yaml.safe_load(text)
    return out


def test_rendered_objects_pass_strict_validation_and_are_locked_down():
    files = _files("openshift", probe_roles=("nodes", "control-plane"))
    assert sorted(files) == ["kubernetes/configmap-egress-probe.egress-probe-control-plane.yaml", "kubernetes/configmap-egress-probe.egress-probe-nodes.yaml",
                             "kubernetes/job-egress-probe.egress-probe-control-plane.yaml", "kubernetes/job-egress-probe.egress-probe-nodes.yaml",
                             "kubernetes/namespace-egress-probe.yaml"]
    for obj in files.values():
        validate(obj)
    namespace = files["kubernetes/namespace-egress-probe.yaml"]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"  # host network for nodes
    for role in ("nodes", "control-plane"):
        job = files[f"kubernetes/job-egress-probe.egress-probe-{role}.yaml"]
        spec = job["spec"]
        assert (spec["backoffLimit"], spec["activeDeadlineSeconds"]) == (0, 420)
        assert "ttlSecondsAfterFinished" not in spec  # the report (the pod's log) stays until a change replaces the Job
        pod = spec["template"]["spec"]
        [container] = pod["containers"]
        assert container["image"] == DEFAULT_PROBE_IMAGE and "@sha256:" in container["image"]
        assert container["command"] == ["python3", "-I", "/probe/agent.py", "/probe/plan.json", "--format", "json"]
        assert container["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
                                                "runAsUser": 65534, "runAsGroup": 65534, "capabilities": {"drop": ["ALL"]},
                                                "seccompProfile": {"type": "RuntimeDefault"}}
        assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert pod["automountServiceAccountToken"] is False and pod["restartPolicy"] == "Never"
        assert container["resources"]["limits"] == {"cpu": "500m", "memory": "128Mi"}
        assert container["volumeMounts"] == [{"name": "probe", "mountPath": "/probe", "readOnly": True}]
        assert pod["volumes"] == [{"name": "probe", "configMap": {"name": job["metadata"]["name"]}}]
        assert re.fullmatch(f"egress-probe-{role}-[0-9a-f]{{8}}", job["metadata"]["name"])
        assert pod.get("hostNetwork", False) is (role == "nodes")
        assert pod.get("dnsPolicy") == ("Default" if role == "nodes" else None)
    assert files["kubernetes/job-egress-probe.egress-probe-control-plane.yaml"]["spec"]["template"]["spec"]["nodeSelector"] == {
        "node-role.kubernetes.io/control-plane": ""}


def test_config_map_holds_the_agent_and_the_role_plan():
    catalog, profile, reqs = stack("openshift")
    cm = _files("openshift")["kubernetes/configmap-egress-probe.egress-probe-nodes.yaml"]
    assert cm["data"]["agent.py"] == AGENT.read_text()
    assert json.loads(cm["data"]["plan.json"]) == build_plan(catalog, profile, reqs, "nodes", source="x")
    restricted = _files("kkp", probe_roles=("seed",))
    assert restricted["kubernetes/namespace-egress-probe.yaml"]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert "hostNetwork" not in restricted["kubernetes/job-egress-probe.egress-probe-seed.yaml"]["spec"]["template"]["spec"]


def test_a_changed_plan_changes_the_pod_template():
    """The Job's template is immutable: a new plan must give a new template (the program replaces the Job, which runs again)."""
    one = _files("kkp")["kubernetes/job-egress-probe.egress-probe-nodes.yaml"]
    two = _files("kkp", probe_image="python@sha256:" + "0" * 64)["kubernetes/job-egress-probe.egress-probe-nodes.yaml"]
    assert one == _files("kkp")["kubernetes/job-egress-probe.egress-probe-nodes.yaml"]  # deterministic
    key = lambda job: job["spec"]["template"]["metadata"]["annotations"]["egress-matrix/probe-hash"]  # noqa: E731
    assert key(one) != key(two)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to drop to uid 65534")
def test_the_config_map_agent_runs_as_nobody_from_read_only_files():
    """As the pod runs it: uid/gid 65534, the ConfigMap's two files read-only, python3 -I (no site-packages, no writes). The test
    CA stands in for the system CAs (SSL_CERT_FILE). Under /tmp: uid 65534 cannot enter pytest's 0700 directories."""
    with tempfile.TemporaryDirectory(prefix="egress-probe-job-") as tmp:
        _run_as_nobody(Path(tmp))


def _run_as_nobody(tmp_path: Path) -> None:
    cm = _files("kkp", cluster_proxy=())["kubernetes/configmap-egress-probe.egress-probe-nodes.yaml"]  # direct (no corporate proxy here)
    mount = tmp_path / "probe"
    mount.mkdir()
    for name, text in cm["data"].items():
        (mount / name).write_text(text)
        (mount / name).chmod(0o444)
    mount.chmod(0o555)
    tmp_path.chmod(0o755)
    plan = json.loads(cm["data"]["plan.json"])
    names = {c["host"] for c in plan["checks"]}
    with serving(names - {"quay.io"}) as servers:
        allowed = {c["host"] for c in plan["checks"] if c["expect"] == "allow"}
        resolve = [f"--resolve={h}={servers.address if h in allowed and h != 'quay.io' else DEAD}" for h in sorted(names)]
        ca = tmp_path / "ca.pem"
        ca.write_text(servers.ca_pem)
        ca.chmod(0o444)
        done = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "/usr/bin/python3", "-I",
                               str(mount / "agent.py"), str(mount / "plan.json"), "--format", "json", "--timeout", "3", *resolve],
                              capture_output=True, text=True, timeout=120, cwd=mount, env={"SSL_CERT_FILE": str(ca), "PATH": "/usr/bin"})
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert [r["host"] for r in report["results"] if r["status"] == "failed"] == ["quay.io"]
    assert sorted(p.name for p in mount.iterdir()) == ["agent.py", "plan.json"]  # nothing written next to them


def test_render_summary_names_the_probe_jobs():
    from egress.targets.kubernetes import summary

    catalog, profile, reqs = stack("openshift", probe_job=True, probe_roles=("nodes", "control-plane"))
    assert re.search("probe Job\\(s\\) in namespace egress-probe: egress-probe-nodes-[0-9a-f]{8}, egress-probe-control-plane-[0-9a-f]{8}$",
                     summary(compile_kubernetes(catalog, profile, reqs)))
    catalog, profile, reqs = stack("openshift")
    assert "probe" not in summary(compile_kubernetes(catalog, profile, reqs))


def test_a_job_reading_proxy_credentials_says_how_to_create_its_secret():
    """Review finding 8: without probeDeploy nothing creates the Secret and the pod waits in CreateContainerConfigError;
    the rendered Job says which Secret, which key and what value (user:password as typed, not percent-encoded)."""
    catalog, profile, reqs = stack("openshift", probe_job=True)
    profile = profile.with_secrets({"proxyCredentials"})
    files = {HASHED.sub("", p): yaml.safe_load(t) for p, t in render(compile_kubernetes(catalog, profile, reqs)).items() if "job-egress-probe" in p}
    job = files["kubernetes/job-egress-probe.egress-probe-nodes.yaml"]
    validate(job)
    assert job["metadata"]["annotations"] == {"egress-matrix/proxy-credentials": (
        "kubectl create secret generic egress-probe-proxy-credentials -n egress-probe --from-literal=credentials='user:password' "
        "(as typed, not percent-encoded; probeDeploy creates it from proxyCredentials)")}
    [env] = [e for e in job["spec"]["template"]["spec"]["containers"][0]["env"] if e["name"] == "EGRESS_PROBE_PROXY_CREDENTIALS"]
    assert env["valueFrom"] == {"secretKeyRef": {"name": "egress-probe-proxy-credentials", "key": "credentials"}}
    assert "annotations" not in _files("kkp", cluster_proxy=())["kubernetes/job-egress-probe.egress-probe-nodes.yaml"]["metadata"]
    from egress.targets.kubernetes import summary

    assert re.sub(r"-[0-9a-f]{8} read", " read", summary(compile_kubernetes(catalog, profile, reqs)).splitlines()[-1]) == (
        "  note: egress-probe-nodes read the proxy credentials from a Secret; applying the render yourself, create it first: "
        "kubectl create secret generic egress-probe-proxy-credentials -n egress-probe --from-literal=credentials='user:password' "
        "(as typed, not percent-encoded; probeDeploy creates it from proxyCredentials)")


def _names(name: str, **overrides) -> list[str]:
    catalog, profile, reqs = stack(name, probe_job=True, **overrides)
    return [job.name for job in compile_kubernetes(catalog, profile, reqs).probe]


def test_a_changed_firewall_is_a_new_job():
    """Second review, item 3: the probe did not run again when the firewall changed (the hash covered agent, plan and
    image only, /tmp/r21b rA vs rB: the egress proxy's replicas and image changed, the Job did not). Now the Job's name
    carries a hash of the objects and of what every firewall target of the stack renders: another AWS rule order or
    another egress proxy gives another Job (created before the old one is deleted)."""
    base = _names("dev")
    assert base == _names("dev") and re.fullmatch(r"egress-probe-nodes-[0-9a-f]{8}", base[0])
    assert _names("dev", egress_proxy_replicas=3) != base  # the kubernetes target's own firewall
    assert _names("dev", aws_priority_base=200) != base  # another target's
    assert _names("dev", probe_image="python@sha256:" + "0" * 64) != base  # the Job itself
