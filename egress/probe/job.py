"""The probe as a Kubernetes Job (pure): a ConfigMap with agent.py and the role's plan.json, and a Job that runs it.

The ``nodes`` role's Job uses the host network: the firewall judges the nodes' own addresses (a pod's traffic may be
NATed to them too, but a CNI with its own egress addresses would show the pod's), and the host's DNS (``dnsPolicy:
Default``, the node's resolv.conf). Other in-cluster roles get a plain pod; ``control-plane`` is scheduled on a
control-plane node (its well-known label and taint). A host-network pod is allowed only by the ``privileged`` Pod
Security level (the baseline level forbids host namespaces: kubernetes.io/docs/concepts/security/pod-security-standards,
"Host Namespaces", read 2026-11-24), so the probe's namespace is labelled privileged when a role needs it, restricted
otherwise; the pod itself meets the restricted profile all the same (non-root, read-only root filesystem, no
capabilities, RuntimeDefault seccomp, no service-account token).

The pod prints its report as JSON (``kubectl logs job/egress-probe-nodes-<hash8>``); it exits 1 when a check fails, so
the Job fails (backoffLimit 0: a probe is not retried until it passes). With probeDeploy the program creates these
objects (components/kubernetes_probe.py) without awaiting the Job: a failing probe never fails the firewall update.

The Job and its ConfigMap are named ``egress-probe-<role>-<hash8>``: the hash covers the objects themselves (agent, plan,
image, pod spec) and a digest of everything the stack's firewall targets apply (``firewall_digest``: the rendered files
of each target in ``targets``, the kubernetes target's own without the probe). A changed firewall or plan is a new name,
so the probe runs again against what was just applied, and the program creates the new Job before it deletes the old
one (no name clash, no delete-then-create race). No ``ttlSecondsAfterFinished``: the report (the pod's log) stays until
the next change replaces the Job; a finished Job holds no resources but its pod's record.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Iterable


from ..models import Catalog, Requirement, Strict
from ..profile import Profile
from .plan import CREDENTIALS_ENV, build_plan

NAME = "egress-probe"
LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/managed-by": "egress-matrix"}
AGENT = Path(__file__).with_name("agent.py")
MOUNT = "/probe"
NOBODY = 65534  # the conventional unprivileged uid/gid ('nobody' in Debian's base-passwd, which the python images use)
CREDENTIALS_SECRET = f"{NAME}-proxy-credentials"  # created by the program from proxyCredentials; never rendered
CREDENTIALS_KEY = "credentials"


def credentials_howto(namespace: str) -> str:
    """What a kubectl user must create before the Job can start (with probeDeploy the program creates it): the pod waits
    in CreateContainerConfigError until the Secret exists. The value is user:password as typed, not percent-encoded (the
    agent sends it as an RFC 7617 Basic Proxy-Authorization; percent-encoding belongs only in a proxy URL)."""
    return (f"kubectl create secret generic {CREDENTIALS_SECRET} -n {namespace} --from-literal={CREDENTIALS_KEY}='user:password' "
            "(as typed, not percent-encoded; probeDeploy creates it from proxyCredentials)")
IN_CLUSTER_ROLES = ("nodes", "control-plane", "seed")
# kubernetes.io/docs/reference/labels-annotations-taints ("node-role.kubernetes.io/control-plane", read 2026-11-24)
CONTROL_PLANE = "node-role.kubernetes.io/control-plane"


class ProbeJobPlan(Strict):
    role: str
    namespace: str
    image: str
    host_network: bool
    plan_json: str
    agent: str
    total_timeout: float
    credentials: bool  # the plan goes through a proxy and the stack has proxyCredentials: the pod reads them from a Secret
    firewall: str = ""  # firewall_digest: what the stack's firewall targets apply

    @property
    def config_hash(self) -> str:
        """Of the Job and ConfigMap as they would be under the role's plain name, and of the firewall they probe."""
        plain = f"{NAME}-{self.role}"
        objects = json.dumps([_config_map(self, plain), _job(self, plain, "")], sort_keys=True)
        return hashlib.sha256((objects + "\n" + self.firewall).encode()).hexdigest()[:16]

    @property
    def name(self) -> str:
        return f"{NAME}-{self.role}-{self.config_hash[:8]}"


def firewall_digest(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement]) -> str:
    """sha256 of what the stack's targets apply: every file each target in ``targets`` renders (credentials are never
    rendered), the kubernetes target's without the probe Jobs themselves."""
    from ..targets import TARGETS  # the targets import this module: late

    reqs = tuple(requirements)
    digest = hashlib.sha256()
    for name in sorted(profile.targets):
        current = profile
        if name == "kubernetes":
            if not (profile.egress_proxy or profile.cluster_proxy or profile.api_server_allowlist):
                continue  # it renders the probe alone
            current = profile.model_copy(update={"probe_job": False})
        files = TARGETS[name].render(TARGETS[name].compile(catalog, current, reqs, ""))
        for path, text in sorted(files.items()):
            digest.update(f"{name}/{path}\0{len(text)}\0".encode() + text.encode())
    return digest.hexdigest()


def compile_probe_jobs(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement], source: str = "") -> tuple[ProbeJobPlan, ...]:
    reqs = list(requirements)
    agent = AGENT.read_text(encoding="utf-8")
    jobs = []
    firewall = firewall_digest(catalog, profile, reqs)
    for role in profile.probe_roles:
        plan = build_plan(catalog, profile, reqs, role, source=source or "egress-matrix:probeRoles")
        jobs.append(ProbeJobPlan(role=role, namespace=profile.probe_namespace, image=profile.probe_image, host_network=role == "nodes",
                                 plan_json=json.dumps(plan, indent=2, sort_keys=True) + "\n", agent=agent, total_timeout=plan["total_timeout"],
                                 credentials=bool(plan["proxy"]) and profile.has_secret("proxyCredentials"), firewall=firewall))
    return tuple(jobs)


def namespace(jobs: tuple[ProbeJobPlan, ...]) -> dict:
    level = "privileged" if any(j.host_network for j in jobs) else "restricted"
    labels = {**LABELS, "pod-security.kubernetes.io/enforce": level, "pod-security.kubernetes.io/warn": "restricted"}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": jobs[0].namespace, "labels": labels}}


def config_map(job: ProbeJobPlan) -> dict:
    return _config_map(job, job.name)


def job_object(job: ProbeJobPlan) -> dict:
    return _job(job, job.name, job.config_hash)


def _config_map(job: ProbeJobPlan, name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": job.namespace, "labels": dict(LABELS)},
            "data": {"agent.py": job.agent, "plan.json": job.plan_json}}


def _job(job: ProbeJobPlan, name: str, config_hash: str) -> dict:
    labels = {**LABELS, "egress-matrix/probe-role": job.role}
    env = [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}]
    annotations = {}
    if job.credentials:
        env.append({"name": CREDENTIALS_ENV, "valueFrom": {"secretKeyRef": {"name": CREDENTIALS_SECRET, "key": CREDENTIALS_KEY}}})
        annotations["egress-matrix/proxy-credentials"] = credentials_howto(job.namespace)
    container = {
        "name": "probe", "image": job.image, "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "-I", f"{MOUNT}/agent.py", f"{MOUNT}/plan.json", "--format", "json"],
        "env": env,
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "128Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
                            "runAsUser": NOBODY, "runAsGroup": NOBODY, "capabilities": {"drop": ["ALL"]},
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "volumeMounts": [{"name": "probe", "mountPath": MOUNT, "readOnly": True}],
    }
    pod: dict = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {"runAsNonRoot": True, "runAsUser": NOBODY, "runAsGroup": NOBODY, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
        "volumes": [{"name": "probe", "configMap": {"name": name}}],
    }
    if job.host_network:
        pod.update(hostNetwork=True, dnsPolicy="Default")
    if job.role == "control-plane":
        pod["nodeSelector"] = {CONTROL_PLANE: ""}
        pod["tolerations"] = [{"key": CONTROL_PLANE, "operator": "Exists", "effect": "NoSchedule"}]
    meta = {"name": name, "namespace": job.namespace, "labels": labels, **({"annotations": annotations} if annotations else {})}
    template = {"labels": labels, **({"annotations": {"egress-matrix/probe-hash": config_hash}} if config_hash else {})}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"backoffLimit": 0, "activeDeadlineSeconds": int(job.total_timeout) + 120, "template": {"metadata": template, "spec": pod}}}


def credentials_secret(jobs: tuple[ProbeJobPlan, ...]) -> dict | None:
    """The Secret a Job reads proxy credentials from (key ``credentials``), without its data: only the program creates it,
    from the secret proxyCredentials; ``egress render`` never writes it (a kubectl user creates it by hand)."""
    if not any(j.credentials for j in jobs):
        return None
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": CREDENTIALS_SECRET, "namespace": jobs[0].namespace, "labels": dict(LABELS)},
            "type": "Opaque"}


def probe_objects(jobs: tuple[ProbeJobPlan, ...]) -> list[dict]:
    if not jobs:
        return []
    return [namespace(jobs), *(obj for job in jobs for obj in (config_map(job), job_object(job)))]
