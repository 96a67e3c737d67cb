"""The egress probe in the cluster (``egress:kubernetes:EgressProbe``, probeDeploy): mapping-only, the objects ``egress
render`` writes for probeJob (egress/probe/job.py: Namespace, per role a ConfigMap and a Job), plus the Secret the Jobs
read proxy credentials from, built from the secret proxyCredentials Output (never rendered, never plain).

Why these options (an on-call engineer's view of the next ``pulumi up``):

- Not awaited (``pulumi.com/skipAwait: "true"`` on the Job). The provider otherwise waits for the Job's Complete condition,
  fails the update at once when the Job fails, and times out after 10 minutes (Pulumi Registry, kubernetes.batch/v1.Job,
  provider v4.24.1, read 2026-11-24); and "if a resource failed to become ready in a previous update, Pulumi will continue
  to wait for readiness on the next update" (same page), so a probe that finds one blocked CDN would fail every later
  firewall update too. The annotation makes the provider skip its await logic for the resource (pulumi-kubernetes PR #417,
  "Allow awaiters to be skipped by setting an annotation"). The report is the Job's log: ``kubectl logs
  job/egress-probe-<role>-<hash8> -n <probeNamespace>`` (the program exports the commands as ``probeJobs``); the Job's own
  status says Complete or Failed.
- A new Job for every change, never one updated in place or replaced under the same name: the Job and its ConfigMap are
  named ``egress-probe-<role>-<hash8>`` (egress/probe/job.py: the hash covers the objects and what the stack's firewall
  targets apply), and the logical name follows the object's name. A changed firewall or plan is a new resource, which
  Pulumi creates in this update, and the old one a resource no longer declared, which it deletes after the creations:
  create-new-then-delete-old, no name clash, and no ``delete_before_replace`` racing a foreground deletion of the old Job
  (a 409 while its pods are still being removed). The new Job runs the probe against what was just applied; without a
  change the Job stays, with its log (no ttlSecondsAfterFinished, so Pulumi's state never names a Job the cluster
  deleted).
- After the firewall: the Namespace, and so everything here, depends on the firewall components the program created
  (``depends_on``): the probe checks what was just applied.
- Not protected: these are not firewall resources (egress_preview/dangers.py FIREWALL_KINDS); deleting or replacing them
  changes no one's egress.
"""
from __future__ import annotations

from typing import Optional, Sequence

import pulumi

from egress.probe.job import ProbeJobPlan, credentials_secret, probe_objects

from .kubernetes_egress import logical_name
from .kubernetes_objects import object_resource

SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}


class EgressProbe(pulumi.ComponentResource):
    def __init__(self, name: str, jobs: tuple[ProbeJobPlan, ...], credentials: Optional[pulumi.Output] = None,
                 after: Sequence[pulumi.Resource] = (), opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("egress:kubernetes:EgressProbe", name, None, opts)
        namespace, *rest = probe_objects(jobs)
        ns = object_resource(logical_name(name, namespace), namespace, pulumi.ResourceOptions(parent=self, depends_on=list(after)))
        before: list[pulumi.Resource] = [ns]
        secret = credentials_secret(jobs)
        if secret is not None:
            if credentials is None:  # compile_probe_jobs sets a Job's credentials only when the stack has proxyCredentials
                raise ValueError("the probe Jobs read proxy credentials, but no proxyCredentials Output was given")
            value = pulumi.Output.secret(credentials).apply(lambda c: {"credentials": c})
            before.append(object_resource(logical_name(name, secret), secret, pulumi.ResourceOptions(parent=self, depends_on=[ns]),
                                          secret_fields={"stringData": value}))
        config_maps: dict[str, pulumi.Resource] = {}
        for obj in rest:
            meta = obj["metadata"]
            if obj["kind"] == "ConfigMap":
                config_maps[meta["name"]] = object_resource(logical_name(name, obj), obj, pulumi.ResourceOptions(parent=self, depends_on=before))
                continue
            job = {**obj, "metadata": {**meta, "annotations": {**meta.get("annotations", {}), **SKIP_AWAIT}}}
            object_resource(logical_name(name, obj), job, pulumi.ResourceOptions(parent=self, depends_on=[*before, config_maps[meta["name"]]]))
        self.jobs = [j.name for j in jobs]
        self.register_outputs({"jobs": self.jobs})
