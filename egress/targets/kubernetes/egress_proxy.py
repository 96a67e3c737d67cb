"""The egress proxy's plan: the allowlist (squid.py) plus how it runs in the cluster (pure).

Clients: pods reach it by its Service; nodes cannot resolve ``.svc`` names, so node-level clients (the container
runtime, OpenShift's Proxy, KKP's node settings) use a fixed ClusterIP from the stack (``egressProxyClusterIp``,
inside ``serviceCidrs``) or a NodePort. The role ``nodes`` is its pods too: a pod's connection to a ClusterIP keeps
the pod's address, so the nodes role's sources are its node CIDRs and the pod CIDRs. A source group is exactly its
CIDRs (``sourceGroups``): the addresses the proxy sees, so a group of pods is their pod addresses (a node pool's subnet
holds its pods' addresses only where the CNI gives pods addresses from it). Every source is a client of the proxy in
the NetworkPolicy.
"""
from __future__ import annotations

import hashlib
import ipaddress
from typing import Iterable, Optional

from ...models import Catalog, Requirement, Strict
from ...profile import Profile
from ..options import LeftOut
from .squid import EgressProxyCompileError, NotProxied, SquidAcl, allowlist_text, compile_acls, source_key

SQUID_CONF_PATH = "/etc/squid/squid.conf"

# How Squid runs in the pod (tests/data/squid_image.yaml): as the image's 'proxy' user on a read-only root filesystem,
# no disk cache, every writable path an emptyDir. Logs go to files on an emptyDir: a non-root process may not reopen
# the container's stdout (/dev/stdout) when the runtime's pipe belongs to root; Squid runs with -d 1, so its own
# important messages still reach the container's output.
RUNTIME = """\
# --- runtime: non-root on a read-only root filesystem; /var/run/squid, /var/spool/squid, /var/log/squid are emptyDirs ---
http_port {port}
pid_filename /var/run/squid/squid.pid
access_log stdio:/var/log/squid/access.log
cache_log /var/log/squid/cache.log
cache_store_log none
logfile_rotate 0
cache deny all
cache_mem 16 MB
coredump_dir /var/spool/squid
max_filedescriptors 1024
pinger_enable off
shutdown_lifetime 5 seconds
# never reveal clients' addresses
forwarded_for delete
via off
"""


class EgressProxyPlan(Strict):
    namespace: str
    image: str
    replicas: int
    port: int
    cluster_ip: Optional[str]
    node_port: Optional[int]
    acls: tuple[SquidAcl, ...]
    role_sources: tuple[tuple[str, tuple[str, ...]], ...]  # roles, then source groups (squid.source_key)
    client_cidrs: tuple[str, ...]  # NetworkPolicy ingress: every proxied role's and group's sources
    egress_ports: tuple[str, ...]  # NetworkPolicy egress besides DNS: the ports the ACLs allow
    not_proxied: tuple[NotProxied, ...]
    stack: str
    left_out: tuple[LeftOut, ...] = ()  # recommended/optional requirements it cannot match (render: kubernetes/left-out.txt)

    @property
    def allowlist(self) -> str:
        return allowlist_text(self.acls, dict(self.role_sources))

    @property
    def squid_conf(self) -> str:
        header = (f"# egress-matrix egress proxy of stack '{self.stack}': generated from the matrix and the stack; do not edit.\n"
                  "# Each allow names the matrix entries behind it; everything else is denied.\n")
        return header + RUNTIME.format(port=self.port) + self.allowlist

    @property
    def config_hash(self) -> str:
        """Annotated on the pod template: a changed squid.conf rolls the pods."""
        return hashlib.sha256(self.squid_conf.encode()).hexdigest()[:16]

    @property
    def url(self) -> Optional[str]:
        """What node-level clients are given: the fixed ClusterIP (no DNS needed)."""
        if not self.cluster_ip:
            return None
        host = f"[{self.cluster_ip}]" if ":" in self.cluster_ip else self.cluster_ip
        return f"http://{host}:{self.port}"


def _role_sources(profile: Profile, roles: Iterable[str]) -> dict[str, tuple[str, ...]]:
    out = {}
    for role in sorted(roles, key=source_key):
        sources = tuple(dict.fromkeys([*profile.role_sources(role), *(profile.pod_cidrs if role == "nodes" else ())]))
        if not sources:  # a group always has CIDRs (the profile checks them)
            raise EgressProxyCompileError(f"the egress proxy serves role '{role}' but it has no source CIDRs. Fix: set "
                                          f"egress-matrix:{profile.source_setting(role)} in the stack, or remove '{role}' from egress-matrix:egressProxyRoles")
        out[role] = sources
    return out


def _check_cluster_ip(profile: Profile) -> None:
    address = profile.egress_proxy_cluster_ip
    if address is None:
        return
    networks = [ipaddress.ip_network(c) for c in profile.service_cidrs]
    if not networks:
        raise EgressProxyCompileError(f"egress-matrix:egressProxyClusterIp '{address}' needs egress-matrix:serviceCidrs to check it against. "
                                      "Fix: set serviceCidrs in the stack")
    ip = ipaddress.ip_address(address)
    if not any(ip in n for n in networks):
        raise EgressProxyCompileError(f"egress-matrix:egressProxyClusterIp '{address}' is outside egress-matrix:serviceCidrs "
                                      f"({', '.join(profile.service_cidrs)}). Fix: pick a free address inside the service network")
    network = next(n for n in networks if ip in n)
    if ip in (network.network_address, network.broadcast_address) or ip == network.network_address + 1:
        raise EgressProxyCompileError(f"egress-matrix:egressProxyClusterIp '{address}' is the service network's network, broadcast or first "
                                      "address (the API server's kubernetes Service takes the first). Fix: pick another address")


def compile_egress_proxy(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement]) -> EgressProxyPlan:
    entries = {entry.id: entry for entry in catalog.entries}
    left_out: list[LeftOut] = []
    acls, not_proxied = compile_acls(requirements, profile.enforced(profile.egress_proxy_roles), entries, left_out)
    if not acls:
        raise EgressProxyCompileError(f"the egress proxy has nothing to allow: no HTTP/HTTPS requirement of the roles "
                                      f"{', '.join(profile.egress_proxy_roles)}. Fix: check egress-matrix:egressProxyRoles and platforms")
    _check_cluster_ip(profile)
    role_sources = _role_sources(profile, {a.role for a in acls})
    ports = sorted({p for a in acls for p in a.ports.split(",")}, key=lambda p: (int(p.split("-")[0]), p))
    return EgressProxyPlan(namespace=profile.egress_proxy_namespace, image=profile.egress_proxy_image, replicas=profile.egress_proxy_replicas,
                           port=profile.egress_proxy_port, cluster_ip=profile.egress_proxy_cluster_ip, node_port=profile.egress_proxy_node_port,
                           acls=acls, role_sources=tuple(role_sources.items()),
                           client_cidrs=tuple(dict.fromkeys(c for _, cidrs in role_sources.items() for c in cidrs)),
                           egress_ports=tuple(ports), not_proxied=not_proxied, stack=profile.stack, left_out=tuple(left_out))
