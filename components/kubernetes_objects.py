"""One Kubernetes object (a dict from the plan's render) as its typed pulumi-kubernetes resource; a patch of an object
the platform owns as a server-side-apply ``*Patch`` (only the fields given are owned, ``patchForce`` takes them over; a
patch of an object that does not exist yet creates it).

The objects' keys are the API's own camelCase names, passed as plain dicts: the SDK translates snake_case keys of typed
``*Args`` only, so the engine receives exactly these bodies (the component tests pin it).
"""
from __future__ import annotations

from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

TYPED = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "Secret"): k8s.core.v1.Secret,
    ("v1", "Service"): k8s.core.v1.Service,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("batch/v1", "Job"): k8s.batch.v1.Job,
    ("policy/v1", "PodDisruptionBudget"): k8s.policy.v1.PodDisruptionBudget,
    ("networking.k8s.io/v1", "NetworkPolicy"): k8s.networking.v1.NetworkPolicy,
}
# Patches of built-in kinds have their own types (kubernetes:core/v1:ConfigMapPatch); other kinds are custom resources.
TYPED_PATCH = {
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMapPatch,
}
BODY_FIELDS = {"data": "data", "stringData": "string_data", "spec": "spec", "type": "type"}


def object_resource(name: str, obj: dict, opts: pulumi.ResourceOptions, *, patch: bool = False, secret_fields: Optional[dict[str, Any]] = None,
                    field_manager: Optional[str] = None) -> pulumi.Resource:
    """``secret_fields``: top-level body fields to replace with (secret) Outputs, e.g. a spec carrying credentials.
    ``field_manager``: a patch's server-side-apply field manager (default: a random name per patch resource)."""
    body = {key: value for key, value in obj.items() if key not in ("apiVersion", "kind", "metadata")}
    body.update(secret_fields or {})
    metadata = dict(obj["metadata"])
    if patch:
        annotations = {"pulumi.com/patchForce": "true", **({"pulumi.com/patchFieldManager": field_manager} if field_manager else {})}
        metadata["annotations"] = {**metadata.get("annotations", {}), **annotations}
        typed_patch = TYPED_PATCH.get((obj["apiVersion"], obj["kind"]))
        if typed_patch is not None:
            return typed_patch(name, metadata=metadata, opts=opts, **{BODY_FIELDS[key]: value for key, value in body.items()})
        return k8s.apiextensions.CustomResourcePatch(name, api_version=obj["apiVersion"], kind=obj["kind"], metadata=metadata,
                                                     opts=opts, **body)
    resource = TYPED.get((obj["apiVersion"], obj["kind"]))
    if resource is None:
        return k8s.apiextensions.CustomResource(name, api_version=obj["apiVersion"], kind=obj["kind"], metadata=metadata, opts=opts, **body)
    return resource(name, metadata=metadata, opts=opts, **{BODY_FIELDS[key]: value for key, value in body.items()})
