"""The Kubernetes target (egress/targets/kubernetes), offline and exact.

1. Every object rendered for every stack that lists the target (and a few variants) passes the API's schemas
   (core kinds strict, CRDs strict, the platform-owned objects as server-side-apply patches), plus what the schemas
   miss: names, CIDRs, the egress proxy's pod security, pinning, availability, probes and its config hash.
2. KKP parity (tests/data/kkp_allowlist_parity.yaml): the front-loadbalancer's ranges and annotations; the Cluster's
   expose-strategy rule; the Seed's IPv4-only sourceRanges.
3. OpenShift parity (tests/data/openshift_noproxy_parity.yaml): the network operator's Proxy validation messages and
   its trustedCA bundle checks, on a real certificate.
4. openshift-install's rule against a proxy IP inside the cluster or service networks.
5. The evaluator reads squid.conf back: the rendered file has nothing missing or extra; removing one allow loses
   exactly what only that allow carried; a wildcard widened to its apex shows up as extra.
6. Proxy credentials never rendered, percent-encoded when added, refused inside a URL.
"""
from __future__ import annotations

import datetime
import functools
import hashlib
import ipaddress
import re

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from pydantic import ValidationError

from egress.addresses import AddressError, parse_cidr
from egress.gonet import parse_request_uri
from egress.profile import Profile
from egress.project import open_project
from egress.targets.kubernetes import compile_kubernetes, enforced, evaluate, render
from egress.targets.kubernetes.api_allowlist import (AWS_FRONT_LB_ANNOTATIONS, KKP_FORBIDDEN, SOURCE_RANGES_ANNOTATION, ApiAllowlistCompileError,
                                                     compile_api_allowlist, kkp_front_loadbalancer)
from egress.targets.kubernetes.cluster_proxy import (USER_CA_BUNDLE, ClusterProxyCompileError, kkp_seed_patch, kubeadm_proxy_env, openshift_proxy,
                                                     with_credentials)
from egress.targets.kubernetes.egress_proxy import EgressProxyCompileError
from egress.targets.kubernetes.openshift_checks import (ProxyValidationError, installer_proxy_ip_errors, validate_proxy_spec,
                                                        validate_trust_bundle)
from egress.targets.kubernetes.render import CREDENTIALS_NOTE, PATCH_NOTE, file_name, objects
from egress.targets.kubernetes.squid import proxied_option

from aws_stacks import ROOT, req, stack
from k8s_schemas import validate

KKP = yaml.safe_load((ROOT / "tests" / "data" / "kkp_allowlist_parity.yaml").read_text(encoding="utf-8"))
OPENSHIFT = yaml.safe_load((ROOT / "tests" / "data" / "openshift_noproxy_parity.yaml").read_text(encoding="utf-8"))
KKP_NODE_PROXY = yaml.safe_load((ROOT / "tests" / "data" / "kkp_node_proxy.yaml").read_text(encoding="utf-8"))
PROJECT = open_project(ROOT)
KUBERNETES_STACKS = sorted(name for name in PROJECT.stacks() if "kubernetes" in PROJECT.profile(name).targets)
PATCHED_KINDS = {"Proxy", "Seed", "Cluster"}
PATCHED_OBJECTS = {("ConfigMap", "openshift-config", "user-ca-bundle")}  # the installer may have created it (additionalTrustBundle)
CREDENTIALS = "proxyCredentials"


@functools.cache
def _stack(name: str, **overrides):
    return stack(name, **overrides)


def compiled(name: str, secrets=(), **overrides):
    """(catalog, profile, requirements, plan) of a stack, with profile overrides and the secret keys it sets."""
    catalog, profile, reqs = _stack(name, **overrides)
    if secrets:
        profile = profile.with_secrets(secrets)
    return catalog, profile, reqs, compile_kubernetes(catalog, profile, reqs)


@functools.cache
def ca_pem(common_name: str = "Corp Proxy CA") -> str:
    """A real self-signed CA certificate (P-256, fixed validity), PEM."""
    key = ec.derive_private_key(0x5EED + len(common_name), ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key()).serial_number(1)
            .not_valid_before(start).not_valid_after(start + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def private_key_pem() -> str:
    key = ec.derive_private_key(0xC0FFEE, ec.SECP256R1())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()


def failure(fn, *args, **kwargs) -> Exception:
    """The exception ``fn`` raises (the test fails if it returns)."""
    try:
        result = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the caller checks the type
        return exc
    pytest.fail(f"{getattr(fn, '__name__', fn)} returned {result!r}; an error was expected")


# -- 1. rendered objects ---------------------------------------------------------------------------------------------------

EGRESS_PROXY_KINDS = ["Namespace", "ConfigMap", "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy"]
# id -> (stack, secret keys, profile overrides, the kinds rendered, in order)
VARIANTS = {
    "dev": ("dev", (), {}, [*EGRESS_PROXY_KINDS, "Proxy", "Seed", "Cluster"]),
    "openshift": ("openshift", (), {}, ["Proxy"]),
    "kkp": ("kkp", (), {}, ["Seed", "Cluster"]),
    "proxy-only": ("proxy-only", (), {}, [*EGRESS_PROXY_KINDS, "ConfigMap"]),
    "openshift+trusted-ca+credentials": ("openshift", (CREDENTIALS,), {"proxy_trusted_ca": ca_pem()}, ["Proxy", "ConfigMap"]),
    "proxy-only+credentials": ("proxy-only", (CREDENTIALS,), {}, [*EGRESS_PROXY_KINDS, "Secret"]),
    "dev+node-port": ("dev", (), {"egress_proxy_node_port": 30128}, [*EGRESS_PROXY_KINDS, "Proxy", "Seed", "Cluster"]),
    "kkp+generic-allowlist": ("kkp", (), {"api_server_allowlist": "generic"}, ["Seed", "Service"]),
}


for _name in KUBERNETES_STACKS:  # a stack added later is validated too (its kinds unchecked until it gets a row above)
    VARIANTS.setdefault(_name, (_name, (), {}, None))


def test_every_stack_with_the_kubernetes_target_is_rendered():
    assert {"dev", "openshift", "kkp", "proxy-only"} <= set(KUBERNETES_STACKS)
    assert set(KUBERNETES_STACKS) <= set(VARIANTS)


def _variant(variant_id):
    name, secrets, overrides, kinds = VARIANTS[variant_id]
    return (*compiled(name, secrets, **overrides), kinds)


@pytest.mark.parametrize("variant_id", VARIANTS)
def test_every_object_passes_the_api_schemas(variant_id):
    _, _, _, plan, kinds = _variant(variant_id)
    rendered = objects(plan)
    if kinds is not None:
        assert [obj["kind"] for obj, _ in rendered] == kinds
    for obj, patch in rendered:
        assert patch == (obj["kind"] in PATCHED_KINDS or (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]) in PATCHED_OBJECTS), obj["kind"]
        if obj["kind"] == "Seed":
            validate(obj, patch=True, owned=(f"spec.datacenters.{plan.cluster_proxy.kkp.datacenter}.node",))
        elif obj["kind"] == "Cluster":
            validate(obj, patch=True, owned=("spec.apiServerAllowedIPRanges",))
        elif obj["kind"] == "Proxy":
            validate(obj, patch=True, owned=("spec",))  # the whole spec is ours: its required fields apply
        else:
            validate(obj)


@pytest.mark.parametrize("variant_id", VARIANTS)
def test_rendered_files_are_the_objects(variant_id):
    _, _, _, plan, _ = _variant(variant_id)
    files = render(plan)
    for obj, patch in objects(plan):
        text = files[file_name(obj)]
        assert text.startswith(PATCH_NOTE) == patch
        assert yaml.safe_load(text) == obj
    if plan.egress_proxy:
        assert files["kubernetes/squid.conf"] == plan.egress_proxy.squid_conf


DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
IANA_SVC_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def dns1123_label(value: str) -> bool:
    return len(value) <= 63 and bool(DNS1123_LABEL.match(value))


def dns1123_subdomain(value: str) -> bool:
    return len(value) <= 253 and all(dns1123_label(part) for part in value.split("."))


def qualified_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    return (not prefix or dns1123_subdomain(prefix)) and len(name) <= 63 and bool(QUALIFIED_NAME.match(name))


def strict_cidr(value: str) -> None:
    ipaddress.ip_network(value, strict=True)  # ValueError on anything but a network address with its prefix


@pytest.mark.parametrize("variant_id", VARIANTS)
def test_what_the_schemas_do_not_check(variant_id):
    """Names (DNS-1123 / DNS-1035 / IANA service names), label and annotation keys, ConfigMap keys, CIDRs and the ClusterIP."""
    _, profile, _, plan, _ = _variant(variant_id)
    for obj, _ in objects(plan):
        meta, kind = obj["metadata"], obj["kind"]
        where = f"{kind}/{meta['name']}"
        if kind in ("Namespace",):
            assert dns1123_label(meta["name"]), where
        elif kind == "Service":
            assert len(meta["name"]) <= 63 and DNS1035_LABEL.match(meta["name"]), where
        else:
            assert dns1123_subdomain(meta["name"]), where
        if "namespace" in meta:
            assert dns1123_label(meta["namespace"]), where
        for key, value in meta.get("labels", {}).items():
            assert qualified_key(key) and len(value) <= 63 and LABEL_VALUE.match(value), (where, key, value)
        for key in meta.get("annotations", {}):
            assert qualified_key(key), (where, key)
        for key in {**obj.get("data", {}), **obj.get("stringData", {})}:
            assert CONFIG_KEY.match(key), (where, key)
        if kind == "Deployment":
            pod = obj["spec"]["template"]["spec"]
            for container in pod["containers"]:
                assert dns1123_label(container["name"]), where
                for port in container.get("ports", []):
                    name = port["name"]
                    assert len(name) <= 15 and IANA_SVC_NAME.match(name) and "--" not in name and re.search("[a-z]", name), name
            assert all(dns1123_label(v["name"]) for v in pod["volumes"]), where
        if kind == "Service":
            spec = obj["spec"]
            for cidr in spec.get("loadBalancerSourceRanges", []):
                strict_cidr(cidr)
            if "clusterIP" in spec:
                address = ipaddress.ip_address(spec["clusterIP"])
                network = next(n for n in map(ipaddress.ip_network, profile.service_cidrs) if address in n)
                assert address not in (network.network_address, network.network_address + 1, network.broadcast_address)
            for port in spec["ports"]:
                assert len(port["name"]) <= 15 and IANA_SVC_NAME.match(port["name"]), where
                if "nodePort" in port:
                    assert 30000 <= port["nodePort"] <= 32767 and spec["type"] == "NodePort"
        if kind == "NetworkPolicy":
            blocks = [peer["ipBlock"]["cidr"] for rule in obj["spec"]["ingress"] for peer in rule["from"]]
            blocks += [peer["ipBlock"]["cidr"] for rule in obj["spec"]["egress"] for peer in rule.get("to", [])]
            for cidr in blocks:
                strict_cidr(cidr)
        if kind == "Cluster":
            for cidr in obj["spec"]["apiServerAllowedIPRanges"]["cidrBlocks"]:
                strict_cidr(cidr)


EGRESS_PROXY_STACKS = [v for v in VARIANTS if (VARIANTS[v][3] or [])[:len(EGRESS_PROXY_KINDS)] == EGRESS_PROXY_KINDS]


def _proxy_objects(plan) -> dict[str, dict]:
    return {obj["kind"]: obj for obj, _ in objects(plan)[:len(EGRESS_PROXY_KINDS)]}


@pytest.mark.parametrize("variant_id", EGRESS_PROXY_STACKS)
def test_egress_proxy_runs_restricted_pinned_and_available(variant_id):
    _, profile, _, plan, _ = _variant(variant_id)
    objs = _proxy_objects(plan)
    deployment, pdb, service, policy = objs["Deployment"], objs["PodDisruptionBudget"], objs["Service"], objs["NetworkPolicy"]
    assert objs["Namespace"]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    security = container["securityContext"]
    assert security["runAsNonRoot"] is True and security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert "privileged" not in security and "hostNetwork" not in pod
    # pinned by digest, the stack's image
    assert re.fullmatch(r"[^\s@]+@sha256:[0-9a-f]{64}", container["image"]) and container["image"] == profile.egress_proxy_image
    # two replicas, one always kept up, a rolling update that never drops below the replicas
    assert deployment["spec"]["replicas"] == 2
    assert pdb["spec"]["minAvailable"] == 1
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert pdb["spec"]["selector"]["matchLabels"] == service["spec"]["selector"] == policy["spec"]["podSelector"]["matchLabels"] == selector
    # probes on the named proxy port, which the Service targets
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"proxy": plan.egress_proxy.port}
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["tcpSocket"] == {"port": "proxy"}, probe
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["proxy"]
    # every path Squid writes is on an emptyDir: the root filesystem is read-only
    empty_dirs = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
    writable = [m["mountPath"] for m in container["volumeMounts"] if m["name"] in empty_dirs]
    conf = plan.egress_proxy.squid_conf
    written = [re.search(rf"^{directive} (?:stdio:)?(\S+)$", conf, re.M).group(1)
               for directive in ("pid_filename", "access_log", "cache_log", "coredump_dir")]
    for path in written:
        assert any(path == w or path.startswith(w + "/") for w in writable), path
    # clients: the proxied roles' sources (and the pods for nodes), on the proxy port only
    (ingress,) = policy["spec"]["ingress"]
    want = list(dict.fromkeys(c for role in sorted({a.role for a in plan.egress_proxy.acls})
                              for c in (*profile.role_sources(role), *(profile.pod_cidrs if role == "nodes" else ()))))
    assert [peer["ipBlock"]["cidr"] for peer in ingress["from"]] == want
    assert ingress["ports"] == [{"protocol": "TCP", "port": plan.egress_proxy.port}]


@pytest.mark.parametrize("variant_id", EGRESS_PROXY_STACKS)
def test_config_hash_is_the_squid_conf_hash(variant_id):
    _, _, _, plan, _ = _variant(variant_id)
    deployment = _proxy_objects(plan)["Deployment"]
    annotation = deployment["spec"]["template"]["metadata"]["annotations"]["egress-matrix/config-hash"]
    assert annotation == plan.egress_proxy.config_hash == hashlib.sha256(plan.egress_proxy.squid_conf.encode()).hexdigest()[:16]
    assert _proxy_objects(plan)["ConfigMap"]["data"] == {"squid.conf": plan.egress_proxy.squid_conf}


@pytest.mark.parametrize("name", ["dev", "proxy-only"])
def test_one_more_requirement_changes_only_the_config_hash(name):
    catalog, profile, reqs, before = compiled(name)
    added = req("mirror.new-vendor.example", "fqdn", "https", role="nodes", entry="kkp-crictl", sources=profile.node_sources)
    after = compile_kubernetes(catalog, profile, [*reqs, added])
    old, new = _proxy_objects(before), _proxy_objects(after)
    key = "egress-matrix/config-hash"
    old_hash = old["Deployment"]["spec"]["template"]["metadata"]["annotations"].pop(key)
    new_hash = new["Deployment"]["spec"]["template"]["metadata"]["annotations"].pop(key)
    assert old_hash == before.egress_proxy.config_hash and new_hash == after.egress_proxy.config_hash and old_hash != new_hash
    assert old["Deployment"] == new["Deployment"]  # nothing else in the Deployment moved
    assert {k for k in old if old[k] != new[k]} == {"ConfigMap"}  # the squid.conf it mounts
    assert "mirror.new-vendor.example" in new["ConfigMap"]["data"]["squid.conf"]
    assert "mirror.new-vendor.example" not in old["ConfigMap"]["data"]["squid.conf"]
    assert compile_kubernetes(catalog, profile, reqs).egress_proxy.config_hash == old_hash  # deterministic


def test_kkp_node_proxy_follows_the_kkp_docs():
    """The kkp stack has KKP's default pod and service CIDRs and the docs' domain: its Seed noProxy is the docs' example
    (separators normalised) plus the node subnet the docs' prerequisites ask for."""
    _, profile, _, plan = compiled("kkp")
    seed = next(obj for obj, _ in objects(plan) if obj["kind"] == "Seed")
    node = seed["spec"]["datacenters"]["vsphere-de"]["node"]
    assert seed["metadata"] == {"name": "kubermatic", "namespace": "kubermatic"}
    assert node["httpProxy"] == "http://proxy.corp.example.com:3128"
    docs = [part.strip() for part in KKP_NODE_PROXY["docs_no_proxy_example"].split(",")]
    ours = node["noProxy"].split(",")
    assert [part for part in ours if part not in profile.node_sources] == docs
    assert set(ours) - set(docs) == set(profile.node_sources) == {"10.40.0.0/16"}
    assert " " not in node["noProxy"]


# -- 2. KKP parity -----------------------------------------------------------------------------------------------------------

def test_kkp_constants_match_the_parity_data():
    assert SOURCE_RANGES_ANNOTATION == KKP["annotation_key"]
    assert AWS_FRONT_LB_ANNOTATIONS == KKP["aws_extra_annotations"]
    assert KKP_FORBIDDEN.endswith(KKP["validation_cases"]["cluster_error_detail"])


@pytest.mark.parametrize("case", KKP["reconcile_cases"], ids=[c["name"] for c in KKP["reconcile_cases"]])
def test_kkp_front_loadbalancer(case):
    given, want = case["inputs"], case["want"]
    seed_annotations = given.get("seed_lb_annotations", KKP["seed_default_lb_annotations"])
    existing = given.get("existing_annotations", {})
    ranges, annotations = kkp_front_loadbalancer(given["cluster_ranges"], given["seed_default_ranges"], given["seed_source_ranges"],
                                                 given["user_cluster_cloud"], {**existing, **seed_annotations})
    assert ranges == want["loadBalancerSourceRanges"]
    assert annotations.get(KKP["annotation_key"]) == want["annotation"]
    expected = {**existing, **seed_annotations, **want["extra_annotations"]}
    expected.pop(KKP["annotation_key"], None)
    if want["annotation"] is not None:
        expected[KKP["annotation_key"]] = want["annotation"]
    assert annotations == expected
    if "annotations" in want:
        assert annotations == want["annotations"]


ALLOW_ALL_REFUSED = ("egress-matrix:apiServerAllowlist is set but egress-matrix:apiServerAllowedCidrs is empty, which every cloud treats as "
                     "allow-all. Fix: list the client CIDRs (IPv4 or IPv6)")


@pytest.mark.parametrize("case", KKP["validation_cases"]["cluster"],
                         ids=[f"{c['expose_strategy']}-{c['cluster_ranges']}" for c in KKP["validation_cases"]["cluster"]])
def test_kkp_cluster_validation(case):
    _, kkp, _ = _stack("kkp")
    strategy, ranges = case["expose_strategy"], case["cluster_ranges"]
    if ranges is None:  # the field absent: the stack sets no allowlist, nothing to refuse
        assert compile_api_allowlist(kkp.model_copy(update={"kkp_expose_strategy": strategy, "api_server_allowlist": None})) is None
        assert case["valid"]
        return
    if any("/" not in r for r in ranges):  # not a CIDR: refused when the stack is read, before KKP would see it
        with pytest.raises(ValidationError, match=r"is not a CIDR block|has no prefix length"):
            Profile.model_validate({"platforms": ["kkp"], "apiServerAllowlist": "kkp", "kkpExposeStrategy": strategy, "apiServerAllowedCidrs": ranges})
        return
    profile = kkp.model_copy(update={"kkp_expose_strategy": strategy, "api_server_allowed_cidrs": tuple(ranges)})
    if not ranges:  # KKP accepts an empty list; this tool refuses it on every strategy (empty = allow-all)
        assert case["valid"]
        assert str(failure(compile_api_allowlist, profile)) == ALLOW_ALL_REFUSED
    elif case["valid"]:
        assert compile_api_allowlist(profile).cidrs == tuple(ranges)
    else:
        exc = failure(compile_api_allowlist, profile)
        assert isinstance(exc, ApiAllowlistCompileError)
        assert KKP_FORBIDDEN == case["error_on_create"]
        assert str(exc).startswith(f"egress-matrix:kkpExposeStrategy = '{strategy}': KKP refuses the allowlist ({case['error_on_create']}). ")
        assert "Fix: use the LoadBalancer expose strategy" in str(exc)


def test_empty_allowlist_is_refused_on_every_strategy():
    _, kkp, _ = _stack("kkp")
    for strategy in ("LoadBalancer", "NodePort", "Tunneling"):
        profile = kkp.model_copy(update={"kkp_expose_strategy": strategy, "api_server_allowed_cidrs": ()})
        assert str(failure(compile_api_allowlist, profile)) == ALLOW_ALL_REFUSED
    generic = kkp.model_copy(update={"api_server_allowlist": "generic", "api_server_allowed_cidrs": ()})
    assert str(failure(compile_api_allowlist, generic)) == ALLOW_ALL_REFUSED


@pytest.mark.parametrize("case", KKP["validation_cases"]["seed_source_ranges"], ids=[c["value"] for c in KKP["validation_cases"]["seed_source_ranges"]])
def test_kkp_seed_source_ranges(case):
    value = case["value"]
    assert bool(re.fullmatch(KKP["validation_cases"]["seed_source_ranges_pattern"], value)) == case["valid"]
    _, kkp, _ = _stack("kkp")
    try:
        network = parse_cidr(value)
    except AddressError:  # not a network (999.0.0.0/8 passes KKP's pattern nonetheless): refused when the stack is read
        with pytest.raises(ValidationError):
            Profile.model_validate({"platforms": ["kkp"], "kkpSeedNodeportProxySourceRanges": [value]})
        return
    profile = kkp.model_copy(update={"kkp_seed_nodeport_proxy_source_ranges": (value,)})
    if network.version == 6:
        assert not case["valid"]
        assert str(failure(compile_api_allowlist, profile)) == (
            f"egress-matrix:kkpSeedNodeportProxySourceRanges = '{value}': the Seed's sourceRanges take IPv4 CIDRs only (their CRD pattern). "
            "Fix: list IPv4 CIDRs there")
    elif network.prefixlen == 0:  # valid for KKP, but it opens the API server: refused unless the stack says so
        assert case["valid"]
        assert "the API server is open to the internet" in str(failure(compile_api_allowlist, profile))
        assert value in compile_api_allowlist(profile.model_copy(update={"api_server_allow_all": True})).effective
    else:
        assert case["valid"]
        assert value in compile_api_allowlist(profile).effective


@pytest.mark.parametrize("name, cidrs, effective", [
    ("dev", ["203.0.113.0/24", "198.51.100.7/32", "10.1.0.0/16", "172.25.0.0/16"],
     ("10.1.0.0/16", "172.25.0.0/16", "192.0.2.0/24", "198.51.100.7/32", "203.0.113.0/24")),  # + the seed's default 192.0.2.0/24
    ("kkp", ["203.0.113.0/24", "198.51.100.7/32", "10.41.0.0/16", "172.26.0.0/16"],
     ("10.41.0.0/16", "172.26.0.0/16", "198.51.100.7/32", "203.0.113.0/24")),
])
def test_stack_allowlists(name, cidrs, effective):
    _, _, _, plan = compiled(name)
    cluster = next(obj for obj, _ in objects(plan) if obj["kind"] == "Cluster")
    assert cluster == {"apiVersion": "kubermatic.k8c.io/v1", "kind": "Cluster", "metadata": {"name": "s8kkvfxhrn"},
                       "spec": {"apiServerAllowedIPRanges": {"cidrBlocks": cidrs}}}
    assert plan.api_allowlist.effective == effective
    assert render(plan)["kubernetes/api-server-allowlist.txt"].splitlines()[:2] == ["mode: kkp", f"effective loadBalancerSourceRanges: {','.join(effective)}"]


@pytest.mark.parametrize("cidrs, allow_all, refused", [
    (("0.0.0.0/0",), False, "100% of public IPv4"),
    (("203.0.113.0/24", "::/0"), False, "100% of public IPv4 (some as NAT64 addresses in 64:ff9b::/96) and 100% of public IPv6"),
    (("0.0.0.0/1", "128.0.0.0/1"), False, "100% of public IPv4"),  # judged by coverage, not by spelling (issue 17)
    (("2000::/4", "3000::/4"), False, "100% of public IPv6"),
    (("0.0.0.0/2", "64.0.0.0/2"), False, "57% of public IPv4"),  # 2^31 less 0/8, 10/8, 100.64/10, 127/8, of 3,702,258,432
    (("0.0.0.0/0",), True, None),
    (("0.0.0.0/1", "128.0.0.0/1"), True, None),
    (("11.0.0.0/8", "203.0.113.0/24"), False, None),  # 0.45% of public IPv4: within the default maxPublicShare (1%)
])
def test_open_ranges_need_allow_all(cidrs, allow_all, refused):
    _, kkp, _ = _stack("kkp")
    profile = kkp.model_copy(update={"api_server_allowed_cidrs": cidrs, "api_server_allow_all": allow_all})
    if refused is None:
        assert compile_api_allowlist(profile).cidrs == cidrs
        return
    assert str(failure(compile_api_allowlist, profile)) == (
        f"egress-matrix:apiServerAllowedCidrs = {list(cidrs)} covers {refused} (more than maxPublicShare 1%): the API server is open to "
        "the internet. Fix: list the client CIDRs, or set egress-matrix:apiServerAllowAll: true if that is intended")


# -- 3. OpenShift parity -----------------------------------------------------------------------------------------------------

SPEC_CASES = [c for c in OPENSHIFT["validation_cases"] if "spec" in c]


def _verdict(**spec) -> str | None:
    try:
        validate_proxy_spec(**spec)
    except ProxyValidationError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("case", SPEC_CASES, ids=[str(c["spec"]) for c in SPEC_CASES])
def test_openshift_proxy_spec_validation(case):
    spec = case["spec"]
    got = _verdict(http_proxy=spec.get("httpProxy", ""), https_proxy=spec.get("httpsProxy", ""), no_proxy=spec.get("noProxy", ""),
                   readiness_endpoints=spec.get("readinessEndpoints", ()))
    assert got == (None if case["valid"] else case["error"])


URI_CASES = [c for c in OPENSHIFT["validation_cases"] if c.get("function") == "validation.URI"]
IPCIDR_CASES = [c for c in OPENSHIFT["validation_cases"] if c.get("function") == "validation.IPAddressOrCIDR"]


@pytest.mark.parametrize("case", URI_CASES, ids=[c["value"] for c in URI_CASES])
def test_openshift_uri_in_each_field(case):
    value = case["value"]
    as_given = {"as_httpProxy": dict(http_proxy=value), "as_httpsProxy": dict(https_proxy=value),
                "as_readinessEndpoint": dict(http_proxy="http://p:3128", readiness_endpoints=[value])}
    for key, spec in as_given.items():
        if key in case:
            assert _verdict(**spec) == (None if case[key] == "valid" else case[key]), key
    if "as_readinessEndpoint_uri_check" in case:
        assert _verdict(http_proxy="http://p:3128", readiness_endpoints=[value]) is None


@pytest.mark.parametrize("case", IPCIDR_CASES, ids=[c["value"] for c in IPCIDR_CASES])
def test_openshift_no_proxy_element(case):
    got = _verdict(http_proxy="http://p:3128", no_proxy=case["value"])
    assert got == (None if case["as_noProxy_spec"] == "valid" else case["as_noProxy_spec"])


TRUST_FORMATS = {c["case"]: c["error_format"].replace("<name>", USER_CA_BUNDLE)
                 for c in OPENSHIFT["validation_cases"] if c.get("field") == "trustedCA" and "error_format" in c}
NO_CERTIFICATES = TRUST_FORMATS["no CERTIFICATE PEM block without headers"]


def _trust(data):
    try:
        return validate_trust_bundle(USER_CA_BUNDLE, data)
    except ProxyValidationError as exc:
        return str(exc)


def test_trust_bundle_with_a_real_certificate_passes():
    (cert,) = _trust({"ca-bundle.crt": ca_pem()})
    assert cert.subject.rfc4514_string() == "CN=Corp Proxy CA"
    # text around blocks and other block types are skipped, every certificate counts (library-go CertsFromPEM)
    bundle = "# corporate CAs\n" + private_key_pem() + ca_pem() + "\n" + ca_pem("Corp Root CA")
    assert [c.subject.rfc4514_string() for c in _trust({"ca-bundle.crt": bundle})] == ["CN=Corp Proxy CA", "CN=Corp Root CA"]
    assert len(_trust({"ca-bundle.crt": ca_pem().replace("\n", "\r\n")})) == 1


def _with_headers(pem: str) -> str:
    begin, rest = pem.split("\n", 1)
    return f"{begin}\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00112233445566778899AABBCCDDEEFF\n\n{rest}"


@pytest.mark.parametrize("label, data, message", [
    ("configmap absent", None, TRUST_FORMATS["ConfigMap <name> absent from openshift-config (or openshift-config-managed when name is trusted-ca-bundle)"]),
    ("missing key", {"other.crt": "x"}, TRUST_FORMATS["ConfigMap has no key ca-bundle.crt"]),
    ("empty", {"ca-bundle.crt": ""}, TRUST_FORMATS["key ca-bundle.crt is empty"]),
    ("only a private key", {"ca-bundle.crt": private_key_pem()}, NO_CERTIFICATES),
    ("certificate block with headers", {"ca-bundle.crt": _with_headers(ca_pem())}, NO_CERTIFICATES),
    ("junk base64", {"ca-bundle.crt": "-----BEGIN CERTIFICATE-----\nnot*base64!\n-----END CERTIFICATE-----\n"}, NO_CERTIFICATES),
    ("not PEM at all", {"ca-bundle.crt": "not a cert"}, NO_CERTIFICATES),
])
def test_trust_bundle_errors_are_the_operators(label, data, message):
    assert _trust(data) == message


def test_trust_bundle_formats_are_filled_in():
    assert TRUST_FORMATS["key ca-bundle.crt is empty"] == (
        "failed to validate trust bundle for proxy trustedCA 'user-ca-bundle': data key \"ca-bundle.crt\" is empty from ConfigMap \"user-ca-bundle\"")


def test_trust_bundle_non_der_certificate_is_go_malformed():
    junk = "-----BEGIN CERTIFICATE-----\n" + "anVuaw==" + "\n-----END CERTIFICATE-----\n"  # base64 of b"junk": no ASN.1 SEQUENCE
    assert _trust({"ca-bundle.crt": junk}) == (
        "failed to validate trust bundle for proxy trustedCA 'user-ca-bundle': failed parsing certificate data from ConfigMap "
        "\"user-ca-bundle\": x509: malformed certificate")


def test_trust_bundle_begin_line_must_start_a_line():
    assert _trust({"ca-bundle.crt": "  " + ca_pem()}) == NO_CERTIFICATES


def test_trust_bundle_through_the_stack():
    exc = failure(compiled, "openshift", proxy_trusted_ca="not a cert")
    assert isinstance(exc, ClusterProxyCompileError)
    assert str(exc) == f"egress-matrix:proxyTrustedCa = '(PEM)': {NO_CERTIFICATES}. Fix: give the CA bundle as PEM 'CERTIFICATE' blocks (public certificates only)"
    _, _, _, plan = compiled("openshift", proxy_trusted_ca=ca_pem())
    (proxy, _), (bundle, _) = objects(plan)
    assert proxy["spec"]["trustedCA"] == {"name": USER_CA_BUNDLE}
    assert bundle == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": USER_CA_BUNDLE, "namespace": "openshift-config"},
                      "data": {"ca-bundle.crt": ca_pem()}}


# -- 4. openshift-install's proxy IP rule ------------------------------------------------------------------------------------

@pytest.mark.parametrize("setting, url, kind", [
    ("httpProxy", "http://10.128.0.5:3128", "cluster"),
    ("httpProxy", "http://172.30.0.5:3128", "service"),
    ("httpsProxy", "http://10.131.255.254:3128", "cluster"),
    ("httpsProxy", "https://172.30.255.1:3129", "service"),
])
def test_proxy_ip_inside_cluster_networks_is_refused(setting, url, kind):
    exc = failure(compiled, "openshift", **{"http_proxy" if setting == "httpProxy" else "https_proxy": url})
    assert isinstance(exc, ClusterProxyCompileError)
    assert str(exc) == (f"egress-matrix:{setting} = '{url}': proxy.{setting}: Invalid value: \"{url}\": proxy value is part of the {kind} "
                        "networks. Fix: use an address outside the pod and service networks, or a host name")


@pytest.mark.parametrize("url", ["http://proxy.example.com:3128", "http://10.132.0.5:3128", "http://192.168.7.1:8080"])
def test_proxy_outside_cluster_networks_passes(url):
    _, _, _, plan = compiled("openshift", http_proxy=url)
    (proxy, _), = objects(plan)
    assert proxy["spec"]["httpProxy"] == proxy["spec"]["httpsProxy"] == url


def test_installer_rule_reports_both_networks():
    url = "http://10.0.0.5:3128"
    assert installer_proxy_ip_errors("httpProxy", url, ["10.0.0.0/8"], ["10.0.0.0/16"]) == [
        f"proxy.httpProxy: Invalid value: \"{url}\": proxy value is part of the cluster networks",
        f"proxy.httpProxy: Invalid value: \"{url}\": proxy value is part of the service networks"]
    assert installer_proxy_ip_errors("httpProxy", "http://proxy.example.com:3128", ["10.0.0.0/8"], ["10.0.0.0/16"]) == []


def test_the_egress_proxys_own_cluster_ip_is_allowed():
    """dev points OpenShift's Proxy at the egress proxy's fixed ClusterIP (inside serviceCidrs); any other service IP is refused."""
    _, _, _, plan = compiled("dev")
    proxy = next(obj for obj, _ in objects(plan) if obj["kind"] == "Proxy")
    assert proxy["spec"]["httpProxy"] == proxy["spec"]["httpsProxy"] == "http://172.30.0.10:3128"
    exc = failure(compiled, "dev", http_proxy="http://172.30.0.11:3128")
    assert "proxy.httpProxy: Invalid value: \"http://172.30.0.11:3128\": proxy value is part of the service networks" in str(exc)


@pytest.mark.parametrize("address, problem", [
    ("10.5.0.1", "is outside egress-matrix:serviceCidrs (172.30.0.0/16). Fix: pick a free address inside the service network"),
    ("172.30.0.1", "is the service network's network, broadcast or first address"),
    ("172.30.255.255", "is the service network's network, broadcast or first address"),
])
def test_egress_proxy_cluster_ip_must_be_usable(address, problem):
    exc = failure(compiled, "dev", egress_proxy_cluster_ip=address)
    assert isinstance(exc, EgressProxyCompileError)
    assert str(exc).startswith(f"egress-matrix:egressProxyClusterIp '{address}' {problem}")


# -- 5. the evaluator's round trip ---------------------------------------------------------------------------------------------

def _round_trip(name):
    catalog, profile, reqs, plan = compiled(name)
    return catalog, enforced(catalog, profile, reqs), plan, render(plan)


@pytest.mark.parametrize("name", [
    "proxy-only",
    "dev",
])
def test_rendered_squid_conf_has_nothing_missing_or_extra(name):
    catalog, reqs, plan, files = _round_trip(name)
    verdict = evaluate(files, reqs, catalog)
    assert verdict.missing == () and verdict.assumed == ()
    assert verdict.rules_checked == plan.egress_proxy.squid_conf.count("\nhttp_access ")
    assert verdict.extra == ()


def test_dev_round_trip_misses_nothing():
    catalog, reqs, plan, files = _round_trip("dev")
    verdict = evaluate(files, reqs, catalog)
    assert verdict.missing == () and verdict.assumed == ()
    assert len(reqs) > 100


def _ports(spec: str) -> list[tuple[int, int]]:
    return [(int(p.split("-")[0]), int(p.split("-")[-1])) for p in spec.split(",")]


def _allows(acl, matcher: str, role: str, protocol: str, port: int, host: str) -> bool:
    """Squid's verdict for one allow line of the plan (the ACL's domains, or its subdomain regexes), on the plan's model."""
    if acl.role != role or acl.protocol != protocol or not any(a <= port <= b for a, b in _ports(acl.ports)):
        return False
    if matcher == "domains":
        return any(host == d[1:] or host.endswith(d) if d.startswith(".") else host == d for d in acl.domains)
    return any(host.endswith("." + w[2:]) for w in acl.subdomains)


@pytest.mark.parametrize("name", ["dev", "proxy-only"])
def test_removing_one_allow_loses_exactly_what_it_alone_allowed(name):
    catalog, reqs, plan, files = _round_trip(name)
    conf = files["kubernetes/squid.conf"]
    lines = [(acl, matcher) for acl in plan.egress_proxy.acls for matcher in ("domains", "subdomains") if getattr(acl, matcher)]
    probes = []
    for r in reqs:
        option, _ = proxied_option(r)
        for destination in option.destinations:
            host = f"probe.{destination[2:]}" if destination.startswith("*.") else destination
            probes += [(f"{r.role} -> {destination} {option.protocol}/{pr}", r.role, option.protocol, pr.start, host.lower()) for pr in option.ports]
    assert len(lines) == conf.count("\nhttp_access allow ")
    baseline = set(evaluate(files, reqs, catalog).extra)
    lost_total = 0
    for index, (acl, matcher) in enumerate(lines):
        name_ = acl.name if matcher == "domains" else acl.regex_name
        method = "CONNECT" if acl.protocol == "https" else "!CONNECT http-scheme"
        line = f"http_access allow {method} role-{acl.role} ports-{acl.ports.replace(',', '_')} {name_}\n"
        assert conf.count(line) == 1, line
        others = lines[:index] + lines[index + 1:]
        want = {label for label, role, protocol, port, host in probes
                if _allows(acl, matcher, role, protocol, port, host) and not any(_allows(a, m, role, protocol, port, host) for a, m in others)}
        verdict = evaluate({**files, "kubernetes/squid.conf": conf.replace(line, "")}, reqs, catalog)
        assert {m.split(": denied")[0] for m in verdict.missing} == want, line
        assert len(verdict.missing) == len(want), line
        assert set(verdict.extra) <= baseline
        lost_total += len(want)
    assert lost_total > 0
    if name == "proxy-only":
        assert len(lines) == 3  # kkp-aws-https, kkp-core-http, kkp-core-https: each carries something alone (no wildcard since
        # KKP's nodes pull from MCR only for Azure clusters, issue 20)


def test_a_wildcard_widened_to_its_apex_is_extra():
    catalog, reqs, plan, files = _round_trip("dev")
    conf = files["kubernetes/squid.conf"]
    regex_line = "acl aks-core-https-subdomains dstdom_regex -n -i \\.data\\.mcr\\.microsoft\\.com$\n"
    assert conf.count(regex_line) == 1
    widened = conf.replace(regex_line, "acl aks-core-https-subdomains dstdomain -n .data.mcr.microsoft.com\n")
    verdict = evaluate({**files, "kubernetes/squid.conf": widened}, reqs, catalog)
    assert verdict.missing == ()
    assert verdict.extra == ("nodes -> data.mcr.microsoft.com https/443: the apex of *.data.mcr.microsoft.com "
                             "(http_access allow CONNECT role-nodes ports-443 aks-core-https-subdomains)",)


# -- 6. secrets -------------------------------------------------------------------------------------------------------------

def _urls(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _urls(v)
    elif isinstance(value, list):
        for v in value:
            yield from _urls(v)
    elif isinstance(value, str) and "://" in value:
        yield value


@pytest.mark.parametrize("name, noted", [("dev", {"Proxy", "Seed"}), ("openshift", {"Proxy"}), ("kkp", {"Seed"}), ("proxy-only", {"Secret"})])
def test_credentials_are_never_rendered(name, noted):
    _, _, _, plain = compiled(name)
    _, _, _, plan = compiled(name, (CREDENTIALS,))
    assert plan.cluster_proxy.credentials is True
    files = render(plan)
    carrying = set()
    for obj, _ in objects(plan):
        text = files[file_name(obj)]
        if CREDENTIALS_NOTE in text:
            carrying.add(obj["kind"])
        for url in _urls(obj):
            assert parse_request_uri(url).user is None, url
    assert carrying == noted
    assert not any(CREDENTIALS_NOTE in text for text in render(plain).values())
    # the same objects as without the secret, but for the kubeadm environment, which becomes a Secret
    for (with_secret, _), (without, _) in zip(objects(plan), objects(plain)):
        if with_secret["kind"] == "Secret":
            assert without["kind"] == "ConfigMap" and with_secret["stringData"] == without["data"] and with_secret["type"] == "Opaque"
        else:
            assert with_secret == without


@pytest.mark.parametrize("credentials, url", [
    ("user:p@ss:w/rd", "http://user:p%40ss%3Aw%2Frd@proxy.example.com:3128"),
    ("dom\\svc egress:pä%s#?&=", "http://dom%5Csvc%20egress:p%C3%A4%25s%23%3F%26%3D@proxy.example.com:3128"),
    ("user:", "http://user:@proxy.example.com:3128"),
    (None, "http://proxy.example.com:3128"),
    ("", "http://proxy.example.com:3128"),
])
def test_with_credentials_percent_encodes(credentials, url):
    assert with_credentials("http://proxy.example.com:3128", credentials) == url
    parsed = parse_request_uri(url)
    assert parsed.hostname() == "proxy.example.com" and parsed.port() == "3128"
    if credentials:
        user, _, password = credentials.partition(":")
        assert (parsed.user.username, parsed.user.password) == (user, password)
    assert with_credentials("http://[fd00::10]:3128", "a:b") == "http://a:b@[fd00::10]:3128"


def test_objects_with_credentials_still_pass_the_operator():
    _, _, _, plan = compiled("dev", (CREDENTIALS,))
    secret = "svc-egress:p@ss/w0rd"
    proxy = openshift_proxy(plan.cluster_proxy, secret)
    assert proxy["spec"]["httpProxy"] == proxy["spec"]["httpsProxy"] == "http://svc-egress:p%40ss%2Fw0rd@172.30.0.10:3128"
    assert _verdict(http_proxy=proxy["spec"]["httpProxy"], https_proxy=proxy["spec"]["httpsProxy"]) is None
    seed = kkp_seed_patch(plan.cluster_proxy, secret)
    assert seed["spec"]["datacenters"]["aws-eu-central-1"]["node"]["httpProxy"] == "http://svc-egress:p%40ss%2Fw0rd@172.30.0.10:3128"
    _, _, _, kubeadm = compiled("proxy-only", (CREDENTIALS,))
    env = kubeadm_proxy_env(kubeadm.cluster_proxy, secret)
    assert env["kind"] == "Secret" and env["stringData"]["HTTPS_PROXY"] == env["stringData"]["https_proxy"] == "http://svc-egress:p%40ss%2Fw0rd@10.96.0.53:3128"
    validate(env)


@pytest.mark.parametrize("setting, url", [("httpProxy", "http://user:secret@proxy.corp.example.com:3128"),
                                          ("httpsProxy", "http://user@proxy.corp.example.com:3128")])
def test_credentials_in_a_proxy_url_are_refused(setting, url):
    exc = failure(compiled, "openshift", **{"http_proxy" if setting == "httpProxy" else "https_proxy": url})
    assert isinstance(exc, ClusterProxyCompileError)
    shown = "http://(credentials hidden)@proxy.corp.example.com:3128"  # the password never reaches a terminal or CI log
    assert "secret" not in str(exc).replace("--secret", "")
    assert str(exc) == (f"egress-matrix:{setting} = '{shown}': the URL carries credentials, which would be stored in plain text. Fix: remove "
                        "them from the URL and run: pulumi config set --secret egress-matrix:proxyCredentials 'user:password'")


def test_aks_refuses_proxy_credentials():
    exc = failure(compiled, "openshift", (CREDENTIALS,), cluster_proxy=("aks",))
    assert str(exc) == ("egress-matrix:proxyCredentials = '(secret)': AKS's HTTP proxy does not support user/password authentication. "
                        "Fix: use a proxy that authenticates AKS's nodes another way, or leave aks out of clusterProxy")


def test_an_acl_of_every_source_is_read_as_squid_reads_it():
    """'acl x src all' matches every client, as Squid reads it (the evaluator raised before: 'all' is not an address)."""
    catalog, reqs, plan, files = _round_trip("proxy-only")
    conf = files["kubernetes/squid.conf"]
    line = next(l for l in conf.splitlines() if l.startswith("acl role-nodes src "))
    verdict = evaluate({**files, "kubernetes/squid.conf": conf.replace(line, "acl role-nodes src all")}, reqs, catalog)
    assert verdict.missing == ()
