"""The probe plan of one role (pure): what egress/probe/agent.py checks from where the role runs.

Per resolved requirement (its entry ids carried): a concrete host or address on its first port, by protocol: https
(TCP, TLS with the host as SNI, and HTTP GET when the requirement names a path), http (GET), tcp (connect), NTP for
UDP port 123. A wildcard is probed only on a sample host the user gives (a wildcard names no host); a CIDR, a service
tag or "any" names no host at all, and UDP other than NTP has no generic client: those are listed as not probed, with
the reason. Then the near misses that must be denied, only those the
agent can judge (``_near_misses`` says which and why): a host known to answer that no entry allows
(example.com, HTTPS on 443 and HTTP on 80) always; through a proxy also a sibling of an exact host and an allowed host
on a port the role does not have. None of them is allowed by a name rule of the role (else it is left out); an address
range or service tag that might hold example.com is said in its ``why``.

Through the proxy or direct: egress/proxy_path.py's route for each requirement (the cluster proxy the role uses, after
the noProxy the distribution really applies); a check through the proxy names its proxy URL (never credentials: the
agent reads them from the environment variable the plan's ``proxy.credentials_env`` names). A route proxy_path calls
unreachable (a TLS-inspecting proxy on a host that must not be inspected) is probed through the proxy all the same: the
probe shows what really happens. The stack's own egress proxy counts as the cluster proxy where the cluster proxy
settings point at it (no httpProxy: its ClusterIP and port, with the same noProxy), and for a role it serves that no
cluster proxy setting covers (egressProxyRoles: its HTTP and HTTPS, no noProxy). Anything else is probed direct.
"""
from __future__ import annotations

import ipaddress
from typing import Iterable, Mapping, Optional

from ..errors import EgressError
from ..models import ROLES, Catalog, Requirement
from ..profile import Profile
from ..proxy_path import DIRECT, ProxyPathError, Setup, judge, no_inspection_of, setups
from .agent import PLAN_VERSION, PlanError, check_plan

# RFC 2606 §3 reserves example.com for documentation; IANA serves it over HTTPS and HTTP, so it is a host known to answer
# on 443 and 80: a firewall that lets it through is seen answering, and one that drops or resets it can be told from a
# host that does not listen (the agent's control: a requirement that got through on the same port). Near-miss labels are
# ours: no vendor names them.
UNLISTED_HOST = "example.com"
UNLISTED_PORTS = (("https", 443), ("http", 80))
SIBLING_LABEL = "egress-probe-near-miss"
OTHER_PORTS = (8443, 9443, 10443)
CREDENTIALS_ENV = "EGRESS_PROBE_PROXY_CREDENTIALS"
DEFAULT_TIMEOUT = 5.0
DEFAULT_TOTAL_TIMEOUT = 300.0
NTP_PORT = 123
EVERYWHERE = ("0.0.0.0/0", "::/0")


class ProbePlanError(EgressError):
    """The probe cannot be planned as asked (unknown role, nothing to probe, a bad option)."""


def _names(req: Requirement, host: str, port: int) -> bool:
    """Does the role's requirement allow ``host:port`` over TCP by name (or everywhere)?"""
    if req.protocol == "udp" or not any(r.contains(port) for r in req.ports):
        return False
    if req.kind == "any" or (req.kind == "cidr" and req.destination in EVERYWHERE):
        return True
    name = req.destination.lower()
    if req.kind == "wildcard":
        return host.endswith(name[1:])
    return req.kind == "fqdn" and host == name


def _may_hold(reqs: list[Requirement], port: int) -> list[Requirement]:
    """The role's address ranges and service tags on ``port``: they might hold any host's addresses (unknowable offline)."""
    return [r for r in reqs if r.kind in ("cidr", "service-tag") and r.protocol != "udp" and r.destination not in EVERYWHERE
            and any(p.contains(port) for p in r.ports)]


def _near_misses(reqs: list[Requirement], proxied) -> list[dict]:
    """Near misses that can be judged. ``proxied(host, port)``: the proxy URL the role's clients use for it, or None.

    A host known to answer (example.com on 443 and 80) always, unless a name rule of the role allows it: direct, a
    refusal is judged against a requirement that got through on the same port. Through a proxy also a sibling of an exact
    host (it never resolves publicly, so only the proxy's own refusal can judge it) and an allowed host on another port
    (nothing may listen there): direct, neither could ever be told from a host that does not answer, so they are left out.
    """
    exact = sorted({r.destination.lower() for r in reqs if r.kind == "fqdn" and r.protocol == "https"})
    named = lambda host, port: any(_names(r, host, port) for r in reqs)  # noqa: E731
    out = []
    sibling = next((h for h in exact if h.count(".") >= 2 and not named(f"{SIBLING_LABEL}.{h.split('.', 1)[1]}", 443)), None)
    if sibling and proxied(f"{SIBLING_LABEL}.{sibling.split('.', 1)[1]}", 443):
        out.append({"host": f"{SIBLING_LABEL}.{sibling.split('.', 1)[1]}", "port": 443, "protocol": "https", "miss": "sibling",
                    "why": f"a sibling of the exact host {sibling}: a name rule must not allow its parent domain"})
    for host in exact:
        port = next((p for p in OTHER_PORTS if not named(host, p)), None)
        if port is not None and proxied(host, port):
            out.append({"host": host, "port": port, "protocol": "https", "miss": "other-port",
                        "why": f"the allowed host {host} on port {port}, which the role does not have (alone it proves nothing: a "
                               "generic rule refusing CONNECT to ports other than 443 denies it whatever the allowlist)"})
            break
    for protocol, port in UNLISTED_PORTS:
        if named(UNLISTED_HOST, port):
            continue
        why = "a host no entry allows"
        ranges = _may_hold(reqs, port)
        if ranges and not proxied(UNLISTED_HOST, port, protocol):
            r = ranges[0]
            why += (f"; the role's {r.kind} {r.destination} on port {port} might hold its addresses (unknowable offline): if it gets "
                    "through, check that first")
        out.append({"host": UNLISTED_HOST, "port": port, "protocol": protocol, "miss": "unlisted", "why": why})
    return out


def _sample(samples: Mapping[str, str], wildcard: str) -> Optional[str]:
    host = samples.get(wildcard.lower())
    if host is None:
        return None
    if not host.endswith(wildcard[1:].lower()) or host == wildcard[2:].lower():
        raise ProbePlanError(f"--sample {wildcard}={host}: the sample is not a name under {wildcard}. Fix: give a host such as "
                             f"name{wildcard[1:]}")
    return host


def _not_probed(req: Requirement, reason: str) -> dict:
    return {"check": f"{req.protocol} {req.destination}:{','.join(str(p) for p in req.ports)}", "destination": req.destination,
            "protocol": req.protocol, "port": req.ports[0].start, "entries": list(req.entry_ids), "reason": reason}


def _checks(req: Requirement, samples: Mapping[str, str]) -> tuple[Optional[dict], Optional[dict]]:
    """(check, not-probed note) of one requirement."""
    port = req.ports[0].start
    if req.kind in ("cidr", "service-tag", "any"):
        return None, _not_probed(req, f"a {req.kind} destination names no host to connect to")
    host = req.destination.lower()
    if req.kind == "wildcard":
        host = _sample(samples, req.destination)
        if host is None:
            return None, _not_probed(req, f"a wildcard names no host; give one with --sample '{req.destination}=<host>'")
    if req.protocol == "udp":
        if port != NTP_PORT:
            return None, _not_probed(req, "UDP other than NTP (port 123) has no generic client to probe it with")
        protocol = "ntp"
    else:
        protocol = req.protocol
    check = {"host": host, "port": port, "protocol": protocol, "via": "direct", "expect": "allow", "entries": list(req.entry_ids)}
    if protocol in ("http", "https") and req.paths:
        check["path"] = req.paths[0]
    if len(req.ports) > 1 or req.ports[0].start != req.ports[0].end:
        check["why"] = f"the first of ports {','.join(str(p) for p in req.ports)}"
    return check, None


def egress_proxy_url(profile: Profile) -> Optional[str]:
    """The stack's own egress proxy as node-level clients reach it: its fixed ClusterIP (EgressProxyPlan.url), or None."""
    address = profile.egress_proxy_cluster_ip
    if not profile.egress_proxy or not address:
        return None
    return f"http://{f'[{address}]' if ':' in address else address}:{profile.egress_proxy_port}"


def _setups(catalog: Catalog, profile: Profile) -> tuple:
    """The cluster proxies the role's clients are given. Without httpProxy/httpsProxy the cluster proxy settings point at
    the stack's own egress proxy (compile_cluster_proxy: ``httpProxy or`` the egress proxy's URL), with the same noProxy:
    proxy_path judges that setup as it would a corporate proxy at that URL."""
    own = egress_proxy_url(profile)
    if own and profile.cluster_proxy and not (profile.http_proxy or profile.https_proxy):
        profile = profile.model_copy(update={"http_proxy": own})
    try:
        return setups(catalog, profile)
    except ProxyPathError:
        return ()


def _routes(catalog: Catalog, profile: Profile, mine: list[Requirement], role: str):
    """(requirement id -> (proxy URL or "", why), the setup the role uses or None)."""
    found = [s for s in _setups(catalog, profile) if role in s.roles or role in profile.source_groups]
    own = egress_proxy_url(profile)
    if not found and own and role in profile.enforced(profile.egress_proxy_roles):
        # A role the egress proxy serves that no cluster proxy setting covers (the seed, a source group without
        # clusterProxy): its HTTP and HTTPS clients are pointed at the proxy by hand (egressProxyUrl); nothing applies a
        # noProxy to them, and a protocol a forward proxy cannot carry goes direct (proxy_path.judge).
        found = [Setup("kubeadm", (role,), own, own, (), {}, False)]
    if not found:
        return {}, None
    setup = found[0]
    routes = {}
    for req in mine:  # as proxy_path.requirement_paths judges each requirement for this setup
        route, url, _, reason, _ = judge(setup, req.destination, req.kind, req.protocol, req.ports[0].start if req.ports else 443,
                                         no_inspection_of(catalog, req))
        routes[id(req)] = ("", "") if route == DIRECT else (url, reason)
    return routes, setup


def internal_ranges(profile: Profile) -> list[str]:
    """The cluster's own address ranges (machine, pod and service CIDRs, the noProxy entries that are addresses or
    ranges): a requirement that got through to one of them need not have crossed the firewall, so the agent never takes
    it as the control that a refusal on its port is the firewall's."""
    out = set()
    for value in (*profile.machine_cidrs, *profile.pod_cidrs, *profile.service_cidrs, *profile.no_proxy):
        try:
            out.add(str(ipaddress.ip_network(value.strip().strip("[]"), strict=False)))
        except ValueError:
            continue  # a name or a domain suffix in noProxy: no address range
    return sorted(out, key=lambda n: (ipaddress.ip_network(n).version, ipaddress.ip_network(n)))


def check_role(profile: Profile, role: str, reqs: Iterable[Requirement], source: str) -> list[Requirement]:
    known = [*ROLES, *sorted(profile.source_groups)]
    if role not in known:
        raise ProbePlanError(f"{source}: --role '{role}' is not a role or source group of the stack. Fix: use one of {', '.join(known)}")
    mine = [r for r in reqs if r.role == role]
    if not mine:
        having = sorted({r.role for r in reqs})
        raise ProbePlanError(f"{source}: role '{role}' has no requirements in this stack, so there is nothing to probe. Fix: probe "
                             f"one of {', '.join(having) or '(none)'}, or check egress-matrix:platforms and features")
    return mine


def build_plan(catalog: Catalog, profile: Profile, reqs: Iterable[Requirement], role: str, *, hosts: Optional[Mapping[str, str]] = None,
               samples: Optional[Mapping[str, str]] = None, timeout: float = DEFAULT_TIMEOUT, total_timeout: float = DEFAULT_TOTAL_TIMEOUT,
               source: str = "") -> dict:
    """The plan (a JSON-able dict, ``egress probe --plan-only`` prints it) of ``role``'s requirements."""
    source = source or f"stack '{profile.stack}'"
    mine = check_role(profile, role, reqs, source)
    samples = {k.lower(): v.lower().rstrip(".") for k, v in (samples or {}).items()}
    routes, setup = _routes(catalog, profile, mine, role)
    checks, skipped, seen = [], [], set()
    for req in mine:
        check, note = _checks(req, samples)
        if note is not None:
            skipped.append(note)
            continue
        proxy, why = routes.get(id(req), ("", ""))
        if proxy and check["protocol"] in ("http", "https"):
            check.update(via="proxy", proxy=proxy)
            if why:
                check["why"] = why
        key = (check["protocol"], check["host"], check["port"], check.get("path"))
        if key in seen:  # the same flow for two requirements: once, with both entries
            same = next(c for c in checks if (c["protocol"], c["host"], c["port"], c.get("path")) == key)
            same["entries"] = sorted({*same["entries"], *check["entries"]})
            continue
        seen.add(key)
        checks.append(check)
    def proxied(host: str, port: int, protocol: str = "https") -> Optional[str]:
        if setup is None:
            return None
        route, url, *_ = judge(setup, host, "fqdn", protocol, port)
        return None if route == DIRECT else url

    for miss in _near_misses(mine, proxied):
        check = {"host": miss["host"], "port": miss["port"], "protocol": miss["protocol"], "via": "direct", "expect": "deny", "entries": [],
                 "miss": miss["miss"], "why": miss["why"]}
        url = proxied(miss["host"], miss["port"], miss["protocol"])
        if url:
            check.update(via="proxy", proxy=url)
        checks.append(check)
    proxied = any(c["via"] == "proxy" for c in checks)
    proxy = {"credentials_env": CREDENTIALS_ENV if profile.has_secret("proxyCredentials") else None,
             "inspects_tls": profile.proxy_inspects_tls} if proxied else None
    plan = {"version": PLAN_VERSION, "stack": profile.stack, "role": role, "timeout": timeout, "total_timeout": total_timeout,
            "hosts": dict(sorted((hosts or {}).items())), "internal": internal_ranges(profile), "proxy": proxy, "ca_bundle": profile.proxy_trusted_ca,
            "checks": checks, "not_probed": skipped}
    try:
        return check_plan(plan, source)
    except PlanError as exc:  # a bug here, not the user's: say so plainly
        raise ProbePlanError(f"the probe plan is inconsistent: {exc}") from None


def parse_samples(values: Optional[Iterable[str]]) -> dict[str, str]:
    """``*.domain=host`` items -> {wildcard: host}; each host is checked against its wildcard when the plan is built."""
    out = {}
    for value in values or ():
        wildcard, sep, host = value.partition("=")
        wildcard, host = wildcard.strip().lower(), host.strip().lower().rstrip(".")
        if not sep or not wildcard.startswith("*.") or not host or "*" in host or "/" in host:
            raise ProbePlanError(f"--sample '{value}': not '*.domain=host'. Fix: write e.g. --sample '*.blob.core.windows.net=myaccount.blob.core.windows.net'")
        out[wildcard] = host
    return out
