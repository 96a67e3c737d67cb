"""The egress proxy's Kubernetes objects, from its plan (pure dicts: exactly what the API server receives)."""
from __future__ import annotations

from .egress_proxy import SQUID_CONF_PATH, EgressProxyPlan

NAME = "egress-proxy"
LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/managed-by": "egress-matrix"}
SQUID_UID = 13  # the image's 'proxy' user (tests/data/squid_image.yaml)
WRITABLE = {"run": "/var/run/squid", "spool": "/var/spool/squid", "logs": "/var/log/squid"}


def _meta(plan: EgressProxyPlan, name: str = NAME) -> dict:
    return {"name": name, "namespace": plan.namespace, "labels": dict(LABELS)}


def namespace(plan: EgressProxyPlan) -> dict:
    labels = {**LABELS, "pod-security.kubernetes.io/enforce": "restricted"}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": plan.namespace, "labels": labels}}


def config_map(plan: EgressProxyPlan) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(plan, f"{NAME}-config"), "data": {"squid.conf": plan.squid_conf}}


def deployment(plan: EgressProxyPlan) -> dict:
    container = {
        "name": "squid", "image": plan.image, "imagePullPolicy": "IfNotPresent",
        # The image's entrypoint writes under /etc/ssl; Squid itself needs none of it. -d 1: important messages on stderr.
        "command": ["/usr/sbin/squid", "-N", "-d", "1", "-f", SQUID_CONF_PATH],
        "ports": [{"name": "proxy", "containerPort": plan.port, "protocol": "TCP"}],
        "readinessProbe": {"tcpSocket": {"port": "proxy"}, "periodSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {"tcpSocket": {"port": "proxy"}, "initialDelaySeconds": 10, "periodSeconds": 10, "failureThreshold": 6},
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
                            "runAsUser": SQUID_UID, "runAsGroup": SQUID_UID, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "config", "mountPath": SQUID_CONF_PATH, "subPath": "squid.conf", "readOnly": True},
                         *({"name": name, "mountPath": path} for name, path in WRITABLE.items())],
    }
    pod = {
        "securityContext": {"runAsNonRoot": True, "runAsUser": SQUID_UID, "runAsGroup": SQUID_UID, "fsGroup": SQUID_UID,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "automountServiceAccountToken": False,
        "terminationGracePeriodSeconds": 30,
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": dict(LABELS)}}}]}},
        "containers": [container],
        "volumes": [{"name": "config", "configMap": {"name": f"{NAME}-config"}},
                    *({"name": name, "emptyDir": {"sizeLimit": "512Mi" if name == "logs" else "64Mi"}} for name in WRITABLE)],
    }
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(plan),
            "spec": {"replicas": plan.replicas, "selector": {"matchLabels": dict(LABELS)},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
                     "template": {"metadata": {"labels": dict(LABELS), "annotations": {"egress-matrix/config-hash": plan.config_hash}}, "spec": pod}}}


def service(plan: EgressProxyPlan) -> dict:
    port = {"name": "proxy", "port": plan.port, "targetPort": "proxy", "protocol": "TCP"}
    spec: dict = {"type": "NodePort" if plan.node_port else "ClusterIP", "selector": dict(LABELS), "ports": [port]}
    if plan.node_port:
        port["nodePort"] = plan.node_port
    if plan.cluster_ip:
        spec["clusterIP"] = plan.cluster_ip
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(plan), "spec": spec}


def pod_disruption_budget(plan: EgressProxyPlan) -> dict:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": _meta(plan),
            "spec": {"minAvailable": 1, "selector": {"matchLabels": dict(LABELS)}}}


def network_policy(plan: EgressProxyPlan) -> dict:
    """Ingress from the clients' CIDRs to the proxy port only; egress to DNS and the ports the allowlist uses."""
    def port(p: str, protocol: str = "TCP") -> dict:
        start, _, end = p.partition("-")
        return {"protocol": protocol, "port": int(start), **({"endPort": int(end)} if end else {})}

    anywhere = [{"ipBlock": {"cidr": "0.0.0.0/0"}}, {"ipBlock": {"cidr": "::/0"}}]
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": _meta(plan),
            "spec": {"podSelector": {"matchLabels": dict(LABELS)}, "policyTypes": ["Ingress", "Egress"],
                     "ingress": [{"from": [{"ipBlock": {"cidr": c}} for c in plan.client_cidrs], "ports": [{"protocol": "TCP", "port": plan.port}]}],
                     "egress": [{"ports": [port("53", "UDP"), port("53", "TCP")]},
                                {"to": anywhere, "ports": [port(p) for p in plan.egress_ports]}]}}


def egress_proxy_objects(plan: EgressProxyPlan) -> list[dict]:
    return [namespace(plan), config_map(plan), deployment(plan), service(plan), pod_disruption_budget(plan), network_policy(plan)]
