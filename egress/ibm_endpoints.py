"""An IBM Cloud Kubernetes Service cluster's master, as `ibmcloud ks cluster get` prints its service endpoint URLs
("Public Service Endpoint URL: https://c3.<region>.containers.cloud.ibm.com:30426"). Pure: parsing, and the host and port
values the matrix's placeholders take (ibm-vpc-firewall, "Running `kubectl` commands from behind an allowlist").
"""
from __future__ import annotations

from typing import Iterable, Optional
from urllib.parse import urlsplit

from .addresses import AddressError, parse_fqdn
from .infra_endpoints import hosts_and_ports

SETTING = "ibmMasterEndpoints"
_EXAMPLE = "'https://c100.us-south.containers.cloud.ibm.com:31234'"


# Masters are served under <region>.containers.cloud.ibm.com on a port of the NodePort range (the page's allowlist row and
# its examples). The narrow form is offered under IBM's citation, so it must stay inside that row: any other host or port
# would be egress no one approved.
MASTER_SUFFIX = "containers.cloud.ibm.com"
MASTER_PORTS = (30000, 32767)


def master_endpoint(text: str, region: Optional[str] = None) -> tuple[str, int]:
    """(host, port) of one service endpoint URL. The port is required: IBM gives each master its own (randomly assigned
    at cluster creation), and the host serves other clusters' masters on other ports."""
    split = urlsplit(text)
    if split.scheme != "https" or not split.hostname:
        raise AddressError(f"'{text}' is not an https:// URL",
                           f"copy a Service Endpoint URL as 'ibmcloud ks cluster get --cluster <name>' prints it, e.g. {_EXAMPLE}")
    if split.username or split.password:
        raise AddressError(f"'{text}' carries credentials", "give the URL without user or password")
    if split.path not in ("", "/") or split.query or split.fragment:
        raise AddressError(f"'{text}' has a path", f"give the endpoint URL only, e.g. {_EXAMPLE}")
    try:
        port = split.port
    except ValueError:
        raise AddressError(f"'{text}' has a port that is not a number between 1 and 65535", f"copy the URL with its port, e.g. {_EXAMPLE}") from None
    if not port:
        raise AddressError(f"'{text}' has no port",
                           f"copy the URL with the port IBM assigned to the master, e.g. {_EXAMPLE} (without it the row would open port 443 of a shared host)")
    host = parse_fqdn(split.hostname)
    suffix = f".{region}.{MASTER_SUFFIX}" if region else f".{MASTER_SUFFIX}"
    if not host.endswith(suffix):
        raise AddressError(f"'{text}' is not a master endpoint of IBM Cloud Kubernetes Service" + (f" in {region}" if region else ""),
                           f"copy the URL 'ibmcloud ks cluster get' prints: a host under '*{suffix}'; allow any other host as an own stack entry")
    if not MASTER_PORTS[0] <= port <= MASTER_PORTS[1]:
        raise AddressError(f"'{text}' has port {port}, outside the masters' range {MASTER_PORTS[0]}-{MASTER_PORTS[1]}",
                           f"copy the URL with the port IBM assigned to the master, e.g. {_EXAMPLE}")
    return host, port


def master_hosts_and_ports(values: Iterable[str], region: Optional[str] = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The hosts and ports of ibmMasterEndpoints, sorted. The matrix opens every host on every port listed, so URLs whose
    product opens more than they say are refused: IBM's master hosts serve other clusters' masters on other ports (in the
    VPC page's cluster examples a cluster's public and private endpoints share one port)."""
    return hosts_and_ports((master_endpoint(value, region) for value in values), SETTING)
