"""The Kubernetes target's components: mapping-only adapters from the compiled KubernetesPlan (egress/targets/kubernetes).

- EgressProxy (``egress:kubernetes:EgressProxy``): Namespace, ConfigMap (squid.conf), Deployment, Service, PDB, NetworkPolicy.
- ClusterProxy (``egress:kubernetes:ClusterProxy``): OpenShift Proxy patch + user-ca-bundle patch, KKP Seed patch, kubeadm
  env; proxy URLs carry the credentials only inside secret Outputs.
- ApiServerAllowlist (``egress:kubernetes:ApiServerAllowlist``): the KKP Cluster patch, or a LoadBalancer Service.
Logical names are the objects' kind/namespace/name: stable keys, never positions.
"""
from __future__ import annotations

from typing import Optional

import pulumi

from egress.targets.kubernetes.api_allowlist import ApiAllowlistPlan, generic_service, kkp_cluster_patch
from egress.targets.kubernetes.cluster_proxy import (ClusterProxyPlan, aks_http_proxy_config, kkp_seed_patch, kubeadm_proxy_env, openshift_proxy,
                                                     openshift_trusted_ca)
from egress.targets.kubernetes.egress_proxy import EgressProxyPlan
from egress.targets.kubernetes.manifests import egress_proxy_objects

from .kubernetes_objects import object_resource

# Who owns user-ca-bundle's ca-bundle.crt in its managedFields (a stable name, not a random one per patch resource).
TRUSTED_CA_FIELD_MANAGER = "egress-matrix"


def logical_name(prefix: str, obj: dict) -> str:
    meta = obj["metadata"]
    return "-".join(p for p in (prefix, obj["kind"].lower(), meta.get("namespace"), meta["name"]) if p)


def service_options(obj: dict, protect: bool) -> dict:
    """A Service the cluster's clients address (the egress proxy's fixed ClusterIP, the API server's load balancer) is
    protected: replacing it moves the address node-level proxy settings and clients point at. ``spec.clusterIP`` is
    immutable, so a change is a replacement (the provider would show an in-place update the API server then refuses)."""
    if obj["kind"] != "Service":
        return {}
    return {"protect": protect, "replace_on_changes": ["spec.clusterIP"] if "clusterIP" in obj.get("spec", {}) else None}


class EgressProxy(pulumi.ComponentResource):
    def __init__(self, name: str, plan: EgressProxyPlan, protect: bool = True, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("egress:kubernetes:EgressProxy", name, None, opts)
        namespace, *rest = egress_proxy_objects(plan)
        ns = object_resource(logical_name(name, namespace), namespace, pulumi.ResourceOptions(parent=self))
        for obj in rest:
            object_resource(logical_name(name, obj), obj, pulumi.ResourceOptions(parent=self, depends_on=[ns], **service_options(obj, protect)))
        self.url = plan.url
        self.register_outputs({"url": plan.url})


def trusted_ca_patch(name: str, obj: dict, parent: pulumi.Resource) -> pulumi.Resource:
    """``openshift-config/user-ca-bundle`` as a server-side-apply patch of its ``ca-bundle.crt`` key: the installer creates
    that ConfigMap on every cluster installed with additionalTrustBundle (a plain create fails there with "already
    exists"); a patch takes the key over there and creates the ConfigMap where it is missing. Other keys, labels and
    annotations stay whoever's they are. The key's value is the stack's whole bundle (README: import the installer's
    certificates into proxyTrustedCa first).

    ``retain_on_delete``: removing the patch (pulumi destroy, proxyTrustedCa unset) leaves the ConfigMap and its bundle
    as they are; the cluster's nodes and operators trust it, a mirror registry's CA may be in it, and it may predate the
    stack. Not protected for that reason: deleting this resource changes nothing in the cluster. The alias adopts the
    ConfigMap earlier versions created, as an update (without it the upgrade would delete that ConfigMap)."""
    return object_resource(name, obj, pulumi.ResourceOptions(parent=parent, retain_on_delete=True,
                                                             aliases=[pulumi.Alias(type_="kubernetes:core/v1:ConfigMap")]),
                           patch=True, field_manager=TRUSTED_CA_FIELD_MANAGER)


class ClusterProxy(pulumi.ComponentResource):
    def __init__(self, name: str, plan: ClusterProxyPlan, credentials: Optional[pulumi.Output] = None, protect: bool = True,
                 opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("egress:kubernetes:ClusterProxy", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        def secret_body(build, field: str, obj: dict) -> dict:
            """The body field holding URLs, rebuilt with the credentials inside a secret Output."""
            if credentials is None:
                return {}
            return {field: pulumi.Output.secret(credentials).apply(lambda c: build(plan, c)[field])}

        def secret_outputs(fields: list[str]) -> Optional[list[str]]:
            return fields if credentials is not None else None

        if "openshift" in plan.kinds:
            ca = openshift_trusted_ca(plan)
            depends = [trusted_ca_patch(logical_name(name, ca), ca, self)] if ca else []
            proxy = openshift_proxy(plan)
            # The operator copies the URLs (credentials included) into status: a read-back output must stay secret too.
            # Protected: deleting the patch gives up the Proxy's fields, and the operator rolls every node without them.
            object_resource(logical_name(name, proxy), proxy, pulumi.ResourceOptions(parent=self, depends_on=depends, protect=protect,
                                                                                     additional_secret_outputs=secret_outputs(["spec", "status"])),
                            patch=True, secret_fields=secret_body(openshift_proxy, "spec", proxy))
        if (seed := kkp_seed_patch(plan)) is not None:
            object_resource(logical_name(name, seed), seed, pulumi.ResourceOptions(parent=self, protect=protect,
                                                                                   additional_secret_outputs=secret_outputs(["spec"])),
                            patch=True, secret_fields=secret_body(kkp_seed_patch, "spec", seed))
        if (env := kubeadm_proxy_env(plan)) is not None:
            field = "stringData" if env["kind"] == "Secret" else "data"
            object_resource(logical_name(name, env), env, child, secret_fields=secret_body(kubeadm_proxy_env, field, env))
        self.openshift_status_no_proxy = plan.openshift_status_no_proxy
        self.aks_http_proxy_config = aks_http_proxy_config(plan)
        self.register_outputs({})


class ApiServerAllowlist(pulumi.ComponentResource):
    def __init__(self, name: str, plan: ApiAllowlistPlan, protect: bool = True, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("egress:kubernetes:ApiServerAllowlist", name, None, opts)
        obj = kkp_cluster_patch(plan) if plan.mode == "kkp" else generic_service(plan)
        # Protected either way: deleting the KKP patch gives up apiServerAllowedIPRanges (the API server opens); replacing the
        # Service moves the load balancer's address.
        options = {"protect": protect} if plan.mode == "kkp" else service_options(obj, protect)
        object_resource(logical_name(name, obj), obj, pulumi.ResourceOptions(parent=self, **options), patch=plan.mode == "kkp")
        self.effective_source_ranges = list(plan.effective)
        self.register_outputs({"effectiveSourceRanges": list(plan.effective)})
