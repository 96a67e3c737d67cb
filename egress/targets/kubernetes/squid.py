"""The egress proxy's allowlist: requirements -> Squid ACLs and http_access lines (pure; reference/verification-engines.md §1).

Squid's matching, as the engine behaves (tests/test_squid_engine.py pins each point):
- ``dstdomain -n``: ``x`` is exactly x, ``.x`` is x *and* every subdomain; ``-n`` stops a CONNECT to an IP literal
  from matching by reverse DNS. ``*.x`` would be a literal name, so a matrix wildcard is written as ``.x`` only when
  its apex is required in the same ACL, and otherwise as ``dstdom_regex -n -i \\.x$`` (subdomains, never the apex).
- Two entries of one ``dstdomain`` ACL that overlap (``a.x`` and ``.x``) are FATAL: covered entries are dropped.
- HTTPS is ``CONNECT`` to the required ports only; plain HTTP is a proxied ``GET http://...`` (not CONNECT, protocol
  HTTP) to the required ports only; both only from the role's sources; ``http_access deny all`` ends the list.
- ACL names are at most 62 characters (Squid refuses longer ones) and one name is one ACL (a name defined twice with
  two types is FATAL): both are checked here, so a long catalog, feature or group name is one clear error.
One ACL per (platform, feature, role, protocol, ports), named like every target's rules (DESIGN.md, "Explainable
rules") and commented with the entry ids, so turning a feature on adds its own lines and leaves the others alone.
A source group (``sourceGroups``) is a role of its own: its ``src`` ACL (``group-<name>``) holds exactly its CIDRs, and
its entries' ACLs allow only from it; roles come first, then groups by name, so a new group only adds lines.
What a forward proxy cannot carry (other protocols, address or service-tag destinations) is listed, not dropped; a
recommended or optional name it cannot match ('*' inside a label) is left out with a note, a required one is an error.
"""
from __future__ import annotations

import re
from typing import Iterable, Literal

from ...addresses import format_ports
from ...errors import EgressError
from ...models import ROLES, Requirement, Strict
from ..naming import feature_parts, rule_stem
from ..options import LeftOut, requirement_label


class EgressProxyCompileError(EgressError):
    """The stack's requirements cannot be expressed as the egress proxy's allowlist."""


class SquidAcl(Strict):
    """One allow: a role, HTTP or HTTPS, the ports, the names."""

    name: str
    role: str
    protocol: Literal["http", "https"]
    ports: str  # "443" or "80,8080" or "30000-32767" (matrix notation)
    domains: tuple[str, ...]  # dstdomain -n: "host" or ".domain" (the apex and its subdomains are both required)
    subdomains: tuple[str, ...]  # "*.domain" wildcards whose apex is not required here: dstdom_regex, never the apex
    entry_ids: tuple[str, ...]

    @property
    def regex_name(self) -> str:
        return f"{self.name}-subdomains"


class NotProxied(Strict):
    """A requirement of a proxied role that a forward proxy does not carry, and why."""

    requirement: str
    reason: str


def port_acl_name(ports: str) -> str:
    return "ports-" + ports.replace(",", "_")


def role_acl_name(role: str) -> str:
    """The ``src`` ACL of a role (``role-nodes``) or of a source group (``group-payments``)."""
    return f"role-{role}" if role in ROLES else f"group-{role}"


def source_key(role: str) -> tuple[bool, str]:
    """Roles by name (as before groups existed, so their lines never move), then source groups by name."""
    return role not in ROLES, role


# Squid 5.7 defines an ACL of 63 characters ("too long, max 63 characters supported" above that, FATAL), but an
# http_access line finds names of up to 62 only ("ACL not found", FATAL): tests/test_kubernetes_groups.py pins both.
SQUID_ACL_NAME_MAX = 62


def subdomain_regex(wildcard: str) -> str:
    """``*.x.com`` -> ``\\.x\\.com$`` (Squid's POSIX extended regex: any name ending in '.x.com')."""
    return re.sub(r"([.\\^$|?*+()\[\]{}])", r"\\\1", wildcard[1:]) + "$"


def _inside_label(name: str) -> bool:
    """A '*' the proxy cannot match: anywhere but as the whole left-most label ('md-*.x', '*.*.x')."""
    return "*" in name and (not name.startswith("*.") or name.count("*") > 1)


def proxied_option(req: Requirement):
    """The first option a forward proxy can carry (HTTP/HTTPS to a name; one whose names it can all match before one
    with a '*' inside a label), else (None, why not)."""
    reasons, carried = [], []
    for option in req.options():
        if option.protocol not in ("http", "https"):
            reasons.append(f"{option.protocol} is not HTTP or HTTPS; a forward proxy carries only those")
        elif option.kind not in ("fqdn", "wildcard"):
            reasons.append(f"a {option.kind} destination is matched by address, not by the name a proxy request carries")
        else:
            carried.append(option)
    if carried:
        return next((o for o in carried if not any(_inside_label(d) for d in o.destinations)), carried[0]), ""
    return None, "; ".join(dict.fromkeys(reasons))


def squid_left_out(req: Requirement) -> LeftOut | None:
    """A recommended or optional requirement the proxy carries but cannot match (a '*' inside a label): left out of the
    allowlist and of ``enforced``, with why. A required one stops the stack (``_check_wildcard``)."""
    option, _ = proxied_option(req)
    if option is None or req.level == "required":
        return None
    bad = [d for d in option.destinations if _inside_label(d)]
    if not bad:
        return None
    return LeftOut(requirement=requirement_label(req), level=req.level,
                   reason=f"'{bad[0]}' has '*' inside a label; the egress proxy matches a name exactly or by its subdomains ('*.x')")


def _check_wildcard(name: str, req: Requirement) -> None:
    if _inside_label(name):
        raise EgressProxyCompileError(
            f"requirement {requirement_label(req)}: '{name}' has '*' inside a label; the egress proxy matches a name exactly or "
            "by its subdomains ('*.x'). Fix: give the matrix entry a supported alternative")


def _normalise(hosts: set[str], wildcards: set[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(dstdomain entries, subdomain wildcards) with no entry covered by another: Squid refuses overlaps in one ACL."""
    suffixes = {w[2:] for w in wildcards}
    dotted = {s for s in suffixes if s in hosts}  # apex and subdomains both required: '.x'
    regexes = suffixes - dotted

    def under(name: str, parents: set[str]) -> bool:
        """Is some proper parent domain of ``name`` in ``parents``? (a set lookup per label: linear in the names)"""
        labels = name.split(".")
        return any(".".join(labels[i:]) in parents for i in range(1, len(labels)))

    domains = {f".{s}" for s in dotted if not under(s, suffixes - {s})}
    domains |= {h for h in hosts - dotted if not under(h, suffixes)}
    regexes = {s for s in regexes if not under(s, suffixes - {s})}
    order = lambda n: (n.lstrip(".").split(".")[::-1], n)  # grouped by domain, readable in a diff
    return tuple(sorted(domains, key=order)), tuple(f"*.{s}" for s in sorted(regexes, key=order))


def compile_acls(requirements: Iterable[Requirement], roles: Iterable[str], entries: dict,
                 left_out: list[LeftOut] | None = None) -> tuple[tuple[SquidAcl, ...], tuple[NotProxied, ...]]:
    """The proxied roles' requirements as ACLs, and the ones a forward proxy does not carry; the recommended/optional ones
    it carries but cannot match are added to ``left_out``."""
    wanted = set(roles)
    groups: dict[tuple[str, str, str, str], dict] = {}
    not_proxied: list[NotProxied] = []
    for req in requirements:
        if req.role not in wanted:
            continue
        option, why = proxied_option(req)
        if option is None:
            not_proxied.append(NotProxied(requirement=requirement_label(req), reason=why))
            continue
        if (note := squid_left_out(req)) is not None:
            if left_out is not None:
                left_out.append(note)
            continue
        ports = format_ports(option.ports)
        for (platform, feature), ids in sorted(feature_parts(req, entries).items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
            stem = rule_stem(platform, feature, req.role)
            group = groups.setdefault((stem, option.protocol, ports, req.role), {"hosts": set(), "wildcards": set(), "ids": set()})
            for name in option.destinations:
                name = name.lower().rstrip(".")
                _check_wildcard(name, req)
                (group["wildcards"] if name.startswith("*.") else group["hosts"]).add(name)
            group["ids"].update(ids)
    acls = []
    names: dict[str, str] = {}
    for (stem, protocol, ports, role), group in sorted(groups.items()):
        default = {"https": "443", "http": "80"}[protocol]
        name = f"{stem}-{protocol}" if ports == default else f"{stem}-{protocol}-{ports.replace(',', '_')}"
        mine = f"{_source(role)} (entries {_ids(sorted(group['ids']))})"
        if name in names:  # a feature and a group can run together ('core-payments' for nodes, no feature for 'payments')
            raise EgressProxyCompileError(f"two ACLs of the egress proxy would be named '{name}': one for {names[name]}, one for {mine}. "
                                          "Fix: rename the feature or the source group so their names do not run together")
        names[name] = mine
        domains, subdomains = _normalise(group["hosts"], group["wildcards"])
        acls.append(SquidAcl(name=name, role=role, protocol=protocol, ports=ports, domains=domains, subdomains=subdomains,
                             entry_ids=tuple(sorted(group["ids"]))))
    not_proxied.sort(key=lambda n: n.requirement)
    _check_names(acls)
    return tuple(acls), tuple(not_proxied)


def _source(role: str) -> str:
    return f"role '{role}'" if role in ROLES else f"source group '{role}'"


def _ids(ids) -> str:
    return ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")


def _check_names(acls: list[SquidAcl]) -> None:
    """Every ACL name the allowlist defines fits Squid's limit and names one ACL only (allowlist_text's names)."""
    owners: dict[str, str] = {"CONNECT": "the CONNECT method", "http-scheme": "the HTTP scheme"}
    for acl in acls:
        what, ids = _source(acl.role), _ids(acl.entry_ids)
        names = [(role_acl_name(acl.role), f"the sources of {what}"), (port_acl_name(acl.ports), f"ports {acl.ports}"),
                 *([(acl.name, f"entries {ids}")] if acl.domains else []), *([(acl.regex_name, f"entries {ids}")] if acl.subdomains else [])]
        for name, owner in names:
            if len(name) > SQUID_ACL_NAME_MAX:
                group = f"the group's name in egress-matrix:sourceGroups ('{acl.role}')" if acl.role not in ROLES else ""
                fix = (f"shorten {group}" if name == role_acl_name(acl.role) else
                       f"shorten {group + ' or ' if group else ''}the name of the catalog or feature behind those entries")
                raise EgressProxyCompileError(f"the egress proxy's ACL '{name}' (for {owner}, {what}) is {len(name)} characters; Squid refuses "
                                              f"ACL names over {SQUID_ACL_NAME_MAX}. Fix: {fix}")
            if owners.setdefault(name, owner) != owner:
                raise EgressProxyCompileError(f"the egress proxy would define ACL '{name}' twice: for {owners[name]} and for {owner}. "
                                              "Fix: rename the catalog, feature or source group behind one of them")


def _wrap(directive: str, values: Iterable[str], width: int = 100) -> list[str]:
    """``acl NAME TYPE v1 v2 ...`` split over lines of about ``width`` (Squid accumulates repeated acl lines)."""
    lines, current = [], []
    for value in values:
        if current and len(directive) + sum(len(v) + 1 for v in current) + len(value) > width:
            lines.append(" ".join([directive, *current]))
            current = []
        current.append(value)
    if current:
        lines.append(" ".join([directive, *current]))
    return lines


def allowlist_text(acls: tuple[SquidAcl, ...], role_sources: dict[str, tuple[str, ...]]) -> str:
    """The access-control part of squid.conf: role and port ACLs, one commented ACL per allow, http_access lines."""
    lines = ["# --- egress-matrix allowlist: one ACL per platform, feature, role, protocol and ports; ids are matrix entries ---",
             "acl CONNECT method CONNECT", "acl http-scheme proto HTTP"]
    for role in sorted({a.role for a in acls}, key=source_key):
        lines += _wrap(f"acl {role_acl_name(role)} src", role_sources[role])
    for ports in sorted({a.ports for a in acls}, key=lambda p: (len(p), p)):
        lines.append(f"acl {port_acl_name(ports)} port {ports.replace(',', ' ')}")
    for acl in acls:
        lines.append("")
        lines.append(f"# {acl.name}: {acl.role} -> {acl.protocol.upper()} {acl.ports}")
        lines += _wrap("#   entries:", acl.entry_ids)
        if acl.domains:
            lines += _wrap(f"acl {acl.name} dstdomain -n", acl.domains)
        if acl.subdomains:
            lines += _wrap(f"acl {acl.regex_name} dstdom_regex -n -i", [subdomain_regex(w) for w in acl.subdomains])
        method = "CONNECT" if acl.protocol == "https" else "!CONNECT http-scheme"
        for matcher in ([acl.name] if acl.domains else []) + ([acl.regex_name] if acl.subdomains else []):
            lines.append(f"http_access allow {method} {role_acl_name(acl.role)} {port_acl_name(acl.ports)} {matcher}")
    lines += ["", "# everything else", "http_access deny all", ""]
    return "\n".join(lines)


__all__ = ["EgressProxyCompileError", "NotProxied", "SquidAcl", "allowlist_text", "compile_acls", "port_acl_name", "proxied_option", "role_acl_name", "squid_left_out",
           "source_key", "subdomain_regex"]
