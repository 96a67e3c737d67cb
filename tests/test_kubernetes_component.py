"""The Kubernetes components under the SDK's mocks: the engine receives exactly the rendered objects (the ones the
schema tests validate), and proxy credentials stay secret in every recorded input and export."""
from __future__ import annotations

import pulumi
import pytest
from pulumi.runtime import rpc

from egress.targets.kubernetes import compile_kubernetes
from egress.targets.kubernetes.cluster_proxy import with_credentials
from egress.targets.kubernetes.render import objects

from aws_stacks import stack
from pulumi_harness import RecordingMonitor
from test_kubernetes_target import ca_pem

CREDENTIALS = "svc-egress:p@ss/w0rd"
TYPES = {"Namespace": "kubernetes:core/v1:Namespace", "ConfigMap": "kubernetes:core/v1:ConfigMap", "Secret": "kubernetes:core/v1:Secret",
         "Service": "kubernetes:core/v1:Service", "Deployment": "kubernetes:apps/v1:Deployment",
         "PodDisruptionBudget": "kubernetes:policy/v1:PodDisruptionBudget", "NetworkPolicy": "kubernetes:networking.k8s.io/v1:NetworkPolicy"}
PATCH_TYPES = {"ConfigMap": "kubernetes:core/v1:ConfigMapPatch"}


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args):
        return {}


def deploy(plan, credentials=None):
    from components.kubernetes_egress import ApiServerAllowlist, ClusterProxy, EgressProxy

    mocks = Mocks()
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack="dev", preview=False, monitor=monitor)

    @pulumi.runtime.test
    def run():
        if plan.egress_proxy:
            EgressProxy("egress-proxy", plan.egress_proxy)
        if plan.cluster_proxy:
            ClusterProxy("cluster-proxy", plan.cluster_proxy, credentials=pulumi.Output.secret(credentials) if credentials else None)
        if plan.api_allowlist:
            ApiServerAllowlist("api-server-allowlist", plan.api_allowlist)
        return pulumi.Output.from_input(1)

    run()
    return monitor.registrations


def _plan(name, **overrides):
    catalog, profile, reqs = stack(name, **overrides)
    if overrides.pop("_credentials", False):
        profile = profile.with_secrets({"proxyCredentials"})
    return compile_kubernetes(catalog, profile, reqs)


def _plain(value):
    """Recorded inputs with secrets unwrapped (a secret shows as {SPECIAL_SIG_KEY: SECRET_SIG, 'value': ...})."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return _plain(value["value"])
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@pytest.mark.parametrize("name, overrides", [("dev", {}), ("proxy-only", {}), ("kkp", {}), ("openshift", {}),
                                             ("openshift", {"proxy_trusted_ca": ca_pem()})])
def test_the_engine_receives_exactly_the_rendered_objects(name, overrides):
    plan = _plan(name, **overrides)
    registrations = [r for r in deploy(plan) if r["type"].startswith("kubernetes:")]
    expected = objects(plan)
    assert len(registrations) == len(expected)
    recorded = {(r["inputs"]["kind"], r["inputs"]["metadata"].get("namespace"), r["inputs"]["metadata"]["name"]): r for r in registrations}
    for obj, patch in expected:
        got = recorded[(obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])]
        assert got["type"] == ((PATCH_TYPES.get(obj["kind"]) or f"kubernetes:{obj['apiVersion']}:{obj['kind']}Patch") if patch else TYPES[obj["kind"]])
        inputs = dict(got["inputs"])
        metadata = inputs.pop("metadata")
        if patch:
            manager = {"pulumi.com/patchFieldManager": "egress-matrix"} if obj["kind"] == "ConfigMap" else {}
            assert metadata.pop("annotations") == {"pulumi.com/patchForce": "true", **manager}
            assert (inputs.pop("apiVersion"), inputs.pop("kind")) == (obj["apiVersion"], obj["kind"])
        else:
            assert (inputs.pop("apiVersion"), inputs.pop("kind")) == (obj["apiVersion"], obj["kind"])
        assert metadata == obj["metadata"]
        assert inputs == {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}, obj["kind"]
    names = [r["name"] for r in registrations]
    assert len(set(names)) == len(names)


def test_components_are_parents_with_stable_names():
    registrations = deploy(_plan("dev"))
    components = [r for r in registrations if r["type"].startswith("egress:kubernetes:")]
    assert sorted(c["type"] for c in components) == ["egress:kubernetes:ApiServerAllowlist", "egress:kubernetes:ClusterProxy", "egress:kubernetes:EgressProxy"]
    parents = {c["urn"] for c in components}
    assert all(r["parent"] in parents for r in registrations if r["type"].startswith("kubernetes:"))
    names = {r["name"] for r in registrations}
    assert {"egress-proxy-deployment-egress-proxy-egress-proxy", "cluster-proxy-proxy-cluster", "cluster-proxy-seed-kubermatic-europe",
            "api-server-allowlist-cluster-s8kkvfxhrn"} <= names


@pytest.mark.parametrize("name", ["openshift", "proxy-only", "dev"])
def test_proxy_credentials_stay_secret(name):
    catalog, profile, reqs = stack(name)
    plan = compile_kubernetes(catalog, profile.with_secrets({"proxyCredentials"}), reqs)
    registrations = deploy(plan, CREDENTIALS)
    url = with_credentials(plan.cluster_proxy.http_proxy, CREDENTIALS)
    assert "%40" in url and "%2F" in url  # percent-encoded: '@' and '/' cannot end the userinfo early
    carrying = []
    for r in registrations:
        for key, value in r["inputs"].items():
            plain = repr(_plain(value))
            if "p%40ss" in plain or CREDENTIALS in plain:
                assert isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig, (r["name"], key)
                carrying.append(r["name"])
    assert carrying, "the credentials reached no resource"
    for r in registrations:  # nothing else carries them in plain form
        plain_parts = {k: v for k, v in r["inputs"].items() if not (isinstance(v, dict) and v.get(rpc._special_sig_key) == rpc._special_secret_sig)}
        assert "p%40ss" not in repr(plain_parts) and CREDENTIALS not in repr(plain_parts)


class OptionsMonitor(RecordingMonitor):
    """Also keeps the options the engine acts on: retainOnDelete, protect, aliases."""

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if self.registrations and self.registrations[-1]["name"] == request.name:
            self.registrations[-1].update(retain_on_delete=request.retainOnDelete, protect=request.protect,
                                          aliases=[(a.spec.type, a.spec.name) for a in request.aliases])
        return response


def test_user_ca_bundle_is_a_patch_kept_on_delete_that_adopts_the_configmap_of_earlier_versions():
    """The installer creates openshift-config/user-ca-bundle when installed with additionalTrustBundle: a create fails there.
    A server-side-apply patch takes over ca-bundle.crt (or creates the ConfigMap); removing it leaves the bundle in place."""
    from components.kubernetes_egress import ClusterProxy

    plan = _plan("openshift", proxy_trusted_ca=ca_pem())
    mocks = Mocks()
    monitor = OptionsMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack="openshift", preview=False, monitor=monitor)

    @pulumi.runtime.test
    def run():
        ClusterProxy("cluster-proxy", plan.cluster_proxy)
        return pulumi.Output.from_input(1)

    run()
    by = {r["name"]: r for r in monitor.registrations}
    bundle = by["cluster-proxy-configmap-openshift-config-user-ca-bundle"]
    assert bundle["type"] == "kubernetes:core/v1:ConfigMapPatch"
    assert bundle["inputs"] == {"apiVersion": "v1", "kind": "ConfigMap", "data": {"ca-bundle.crt": ca_pem()}, "metadata": {
        "name": "user-ca-bundle", "namespace": "openshift-config",
        "annotations": {"pulumi.com/patchForce": "true", "pulumi.com/patchFieldManager": "egress-matrix"}}}
    assert (bundle["retain_on_delete"], bundle["protect"]) == (True, False)
    assert bundle["aliases"] == [("kubernetes:core/v1:ConfigMap", "")]  # the same logical name, the type earlier versions created
    proxy = by["cluster-proxy-proxy-cluster"]
    assert proxy["dependencies"] == [bundle["urn"]]  # the bundle is in place before the Proxy names it
    assert proxy["inputs"]["spec"]["trustedCA"] == {"name": "user-ca-bundle"}
