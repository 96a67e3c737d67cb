"""``egress export --for proxy``: the list for a proxy team whose proxy the stack does not deploy (pure; issue 21).

From the paths ``proxy_path`` decides (the same function ``egress explain`` uses):

- ``traverse``: what must go through the proxy after the distribution's noProxy is applied, per destination, with the
  URL paths behind it (enforceable only where the proxy sees them: plain HTTP, or HTTPS when it inspects TLS), whether
  TLS inspection is allowed for it, the entry ids and citations; plus OpenShift's ``proxyReadinessEndpoints``, which the
  network operator fetches through the proxy whatever noProxy says (reference/openshift-proxy.md 2.2);
- ``direct``: what goes around the proxy and therefore needs a firewall rule (noProxy routes, NTP and other non-HTTP
  protocols, the roles that do not use the cluster proxy), each with why;
- ``noInspection``: the stack's hosts that must not be TLS-inspected (vendor data with citations, ``no_tls_inspection``
  on matrix entries), with the route each takes: a TLS-inspecting proxy must exempt the ones it carries, a
  TLS-inspecting firewall the ones that go direct.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from typing import Iterable
from urllib.parse import urlsplit

from .errors import EgressError
from .models import Catalog, Requirement
from .profile import Profile
from .proxy_path import DIRECT, PROXY, UNREACHABLE, Path, no_inspection_of, requirement_paths, setups

READINESS = "proxyReadinessEndpoints"


class ProxyExportError(EgressError):
    """The proxy's list cannot be written in the form asked."""


@dataclass(frozen=True)
class Row:
    """One destination of one requirement, as the proxy team or the firewall team needs it."""

    kind: str  # the cluster proxy (openshift, kkp, aks, kubeadm), '' for a role that uses none
    role: str
    destination: str
    destination_kind: str
    protocol: str
    ports: str
    route: str
    entry_ids: tuple[str, ...]
    citations: tuple[str, ...]
    proxy: str = ""
    paths: tuple[str, ...] = ()
    why: str = ""  # direct: the noProxy entry or reason; traverse: what to know (approximate, unreachable)
    tls_inspection: str = "allowed"  # or "exempt: <reason>"
    sources: tuple[str, ...] = ()
    level: str = "required"


@dataclass(frozen=True)
class ProxyExport:
    stack: str
    proxies: tuple[dict, ...]
    inspects_tls: bool
    traverse: tuple[Row, ...]
    direct: tuple[Row, ...]
    no_inspection: tuple[Row, ...]
    notes: tuple[str, ...] = field(default=())
    where: str = ""  # the stack file, for errors


def _citations(catalog: Catalog, req: Requirement) -> tuple[str, ...]:
    out = []
    for source, section in req.citations:
        cited = catalog.sources[source].cited if source in catalog.sources else source
        out.append(f"{cited} § {section}" if section else cited)
    out += [f"approved: {a.entry_id} (owner {a.owner}, reference {a.reference})" for a in req.approvals]
    return tuple(dict.fromkeys(out))


def _row(catalog: Catalog, path: Path) -> Row:
    req = path.requirement
    inspection = no_inspection_of(catalog, req)
    why = path.reason if path.route != PROXY else ""
    if path.entry:
        why = f"noProxy entry '{path.entry}': {path.reason}"
    if path.approximate:
        why = f"{why}; approximate: {path.approximate}" if why else f"approximate: {path.approximate}"
    return Row(kind=path.kind, role=path.role, destination=path.destination, destination_kind=req.kind, protocol=path.protocol,
               ports=path.ports, route=path.route, entry_ids=req.entry_ids, citations=_citations(catalog, req), proxy=path.proxy,
               paths=req.paths, why=why, tls_inspection=f"exempt: {inspection.reason}" if inspection else "allowed",
               sources=req.sources, level=req.level)


def _readiness(catalog: Catalog, profile: Profile) -> list[Row]:
    """OpenShift's readiness endpoints: the operator GETs each through the proxy (https through httpsProxy, the rest
    through httpProxy), never direct, so the proxy must allow them."""
    if "openshift" not in profile.cluster_proxy:
        return []
    setup = next(s for s in setups(catalog, profile) if s.kind == "openshift")
    source = catalog.sources.get("openshift-egress-proxy")
    cite = (f"{source.cited} § readinessEndpoints",) if source else ()
    role = "control-plane" if profile.role_sources("control-plane") else "nodes"  # the network operator runs on the control plane
    rows = []
    for url in profile.proxy_readiness_endpoints:
        parts = urlsplit(url)
        https = parts.scheme == "https"
        port = parts.port or (443 if https else 80)
        rows.append(Row(kind="openshift", role=role, destination=parts.hostname or "", destination_kind="fqdn",
                        protocol="https" if https else "http", ports=str(port), route=PROXY, entry_ids=(READINESS,), citations=cite,
                        proxy=setup.https_proxy if https else setup.http_proxy, paths=(parts.path,) if parts.path not in ("", "/") else (),
                        why="the network operator probes it through the proxy, whatever noProxy says", sources=profile.role_sources(role)))
    return rows


def proxy_export(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement], where: str = "") -> ProxyExport:
    """The three lists for the stack's corporate proxy (``ProxyPathError`` when it has none; ``where``: the stack file)."""
    found = setups(catalog, profile, where)
    rows = [_row(catalog, p) for p in requirement_paths(catalog, profile, requirements, where)]
    rows += _readiness(catalog, profile)
    order = lambda r: (r.destination.lstrip("*.").split(".")[::-1], r.destination, r.protocol, r.ports, r.role, r.kind)
    traverse = sorted((r for r in rows if r.route in (PROXY, UNREACHABLE)), key=order)
    direct = sorted((r for r in rows if r.route == DIRECT), key=order)
    inspect = sorted((r for r in rows if r.tls_inspection != "allowed"), key=order)
    proxies = tuple({"kind": s.kind, "roles": list(s.roles), "httpProxy": s.http_proxy, "httpsProxy": s.https_proxy,
                     "noProxy": list(s.no_proxy)} for s in found)
    notes = []
    if any(r.paths for r in traverse):
        notes.append("paths: a proxy sees the path of plain HTTP requests; of HTTPS only when it inspects TLS" +
                     ("" if profile.proxy_inspects_tls else " (the stack says it does not: egress-matrix:proxyInspectsTls)"))
    return ProxyExport(profile.stack, proxies, profile.proxy_inspects_tls, tuple(traverse), tuple(direct), tuple(inspect), tuple(notes), where)


def paths_enforceable(row: Row, inspects_tls: bool) -> bool:
    return bool(row.paths) and (row.protocol == "http" or inspects_tls) and not row.tls_inspection.startswith("exempt")


CSV_COLUMNS = ("list", "route", "role", "destination", "kind", "protocol", "ports", "paths", "paths_enforceable", "tls_inspection",
               "why", "proxy", "entry_ids", "citation")


def to_csv(export: ProxyExport) -> str:
    """One row per destination (and role): traverse, direct and no-inspection rows, the list named in the first column."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for name, rows in (("traverse", export.traverse), ("direct", export.direct), ("no-inspection", export.no_inspection)):
        for r in rows:
            writer.writerow([name, r.route, r.role, r.destination, r.destination_kind, r.protocol, r.ports, " ".join(r.paths),
                             "yes" if paths_enforceable(r, export.inspects_tls) else ("no" if r.paths else ""), r.tls_inspection, r.why,
                             r.proxy, " ".join(r.entry_ids), "; ".join(r.citations)])
    return out.getvalue()


def _json_row(r: Row, inspects_tls: bool) -> dict:
    record: dict = {"route": r.route, "role": r.role, "destination": r.destination, "kind": r.destination_kind, "protocol": r.protocol,
                    "ports": r.ports, "entryIds": list(r.entry_ids), "citations": list(r.citations)}
    if r.kind:
        record["clusterProxy"] = r.kind
    if r.proxy:
        record["proxy"] = r.proxy
    if r.paths:
        record["paths"] = list(r.paths)
        record["pathsEnforceable"] = paths_enforceable(r, inspects_tls)
    if r.why:
        record["why"] = r.why
    record["tlsInspection"] = r.tls_inspection
    if r.level != "required":
        record["level"] = r.level
    return record


def to_json(export: ProxyExport) -> str:
    data = {"stack": export.stack, "proxies": list(export.proxies), "proxyInspectsTls": export.inspects_tls,
            "traverse": [_json_row(r, export.inspects_tls) for r in export.traverse],
            "direct": [_json_row(r, export.inspects_tls) for r in export.direct],
            "noInspection": [_json_row(r, export.inspects_tls) for r in export.no_inspection]}
    if export.notes:
        data["notes"] = list(export.notes)
    return json.dumps(data, indent=2) + "\n"
