"""Resolve the matrix for one stack: conditions, alternatives, placeholders, host expansion, de-duplication.

``resolve(catalog, profile)`` returns the stack's concrete requirements in a deterministic order, whatever the
order of files, entries or dict keys. Pure: no I/O, no Pulumi.
"""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Iterable, Optional

from .addresses import NARROWNESS, AddressError, classify, normalize_ports, parse_destination, parse_port, parse_url
from .aws_regions import known_regions
from .errors import ProfileError, ResolveError
from .models import LEVELS, ROLES, ApprovalRef, Catalog, Conditions, Entry, Requirement, ResolvedAlternative
from .features import with_needs
from .gcpause import paused_gc
from .runs_on import matching
from .placeholders import PLACEHOLDERS, names_in, substitute
from .profile import PROJECT, Profile
from .suggest import did_you_mean


def check_profile(catalog: Catalog, profile: Profile, file: str | Path = "stack", stack: str = "") -> None:
    """Cross-check a stack against the matrix: known platforms, features, cloud and location. Every problem is
    reported at once, with its line where the stack file gives one, and a did-you-mean for a misspelt name."""
    found: list[ProfileError] = []

    def fail(key: str, value: object, problem: str, fix: str) -> None:
        line = profile._lines.get(key.split(".")[0])
        where = ", ".join(part for part in (f"stack '{stack}'" if stack else "", f"line {line}" if line else "") if part)
        found.append(ProfileError(file, where, f"config.{PROJECT}:{key}", value, problem, fix))

    for platform in profile.platforms:
        if platform not in catalog.platforms:
            fail("platforms", platform, "unknown platform", did_you_mean(platform, catalog.platforms))
    for platform in profile.aws_platforms:  # a vendor platform of the stack, or one of its own catalogs
        if platform not in profile.platforms and platform not in catalog.own:
            fail("awsPlatforms", platform, "not one of the stack's platforms or own catalogs",
                 did_you_mean(platform, (*profile.platforms, *catalog.own), listing="use some of"))
    for feature in profile.features:
        if feature not in catalog.features:
            fail("features", feature, "unknown feature", did_you_mean(feature, catalog.features))
    variant_platforms = sorted({e.platform for e in catalog.entries if e.variant and e.platform in profile.platforms})
    if variant_platforms and profile.cloud is None:
        fail("cloud", None, f"platform {', '.join(variant_platforms)} needs the cloud variant",
             "set cloud to azure-public, azure-china or azure-usgov")
    if profile.cloud is not None:
        known = [loc.name for loc in catalog.azure_locations.get(profile.cloud, ())]
        if profile.location is None:
            fail("location", None, f"cloud {profile.cloud} needs a location", f"set location to one of: {', '.join(known)}")
        elif profile.location not in known:
            other = next((cloud for cloud, locations in sorted(catalog.azure_locations.items())
                          if profile.location in {loc.name for loc in locations}), None)
            fail("location", profile.location, f"unknown location for cloud {profile.cloud}" + (f" (it is a location of {other})" if other else ""),
                 did_you_mean(profile.location, known) + " (or add it to matrix/azure-locations.yaml with its citation)")
    _check_aws(profile, fail)
    locations = sorted({loc.name for locs in catalog.azure_locations.values() for loc in locs})
    for role, places in profile.runs_on.items():
        for place in places:
            if place.cloud == "azure" and place.region not in locations:
                fail(f"runsOn.{role}", place.region, "not an Azure location (matrix/azure-locations.yaml)",
                     did_you_mean(place.region, locations))
    registry_regions = sorted({e.when.ibm_registry_region for e in catalog.entries if e.when.ibm_registry_region})
    for region in profile.ibm_registry_regions:
        if region not in registry_regions:
            fail("ibmRegistryRegions", region, "unknown IBM Cloud Container Registry region", did_you_mean(region, registry_regions))
    if found:
        raise ProfileError.of(found)


def _check_aws(profile: Profile, fail) -> None:
    if profile.aws_region is None and profile.aws_firewall_policy_arn is None:
        return
    regions = known_regions()
    if profile.aws_region is not None and profile.aws_region not in regions:
        fail("awsRegion", profile.aws_region, "not an AWS region where Network Firewall is offered (botocore's endpoint data)",
             did_you_mean(profile.aws_region, regions))
    if profile.aws_firewall_policy_arn is not None:
        partition, region = profile.aws_firewall_policy_arn.split(":")[1], profile.aws_firewall_policy_arn.split(":")[3]
        if regions.get(region) != partition:
            fail("awsFirewallPolicyArn", profile.aws_firewall_policy_arn, f"region '{region}' is not an AWS region of partition '{partition}'",
                 "copy the policy's ARN from the Network Firewall console or 'aws network-firewall describe-firewall-policy'")
        if profile.aws_firewall_policy:
            fail("awsFirewallPolicy", True, "a policy is created and an existing one (awsFirewallPolicyArn) is named too",
                 "set one of them: awsFirewallPolicy to create a policy, or awsFirewallPolicyArn to reference the groups from yours")


def applies(entry: Entry, profile: Profile) -> bool:
    """Does ``entry`` apply to the stack (platform, level, variant, feature and every condition)?"""
    return all((
        entry.catalog is not None or entry.platform in profile.platforms,  # an own catalog applies by being listed
        entry.level in profile.levels,
        entry.variant is None or entry.variant == profile.cloud,
        entry.feature is None or entry.feature in profile.features,
        conditions_hold(entry.when, profile, entry.role),
    ))


def conditions_hold(when: Conditions, profile: Profile, role: str) -> bool:
    """Does every condition that is set hold for the stack, for a client of ``role`` (a role or a source group)?"""
    places = profile.places(role)
    selected = matching(places, when.runs_on, when.runs_on_regions)
    checks = (
        when.private_cluster is None or when.private_cluster == profile.private_cluster,
        when.konnectivity is None or when.konnectivity == profile.konnectivity,
        when.offline is None or when.offline == profile.offline,
        when.custom_dns is None or when.custom_dns == profile.custom_dns,
        when.node_os is None or bool(set(when.node_os) & set(profile.node_os)),
        all(feature in profile.features for feature in when.features),
        when.ibm_registry_region is None or when.ibm_registry_region in profile.ibm_registry_regions,
        when.openshift_platform is None or profile.openshift_platform in when.openshift_platform,
        when.aws_regions is None or profile.aws_region in when.aws_regions,
        when.not_clouds is None or profile.cloud not in when.not_clouds,
        when.pods_use_api_server_fqdn is None or when.pods_use_api_server_fqdn == profile.pods_use_api_server_fqdn,
        not any(feature in profile.features for feature in when.not_features),
        when.datadog_sites is None or profile.datadog_site in when.datadog_sites,
        # one place of the role satisfies runs_on and runs_on_regions together (nodes on AWS in eu-west-1 and on vSphere)
        (when.runs_on is None and when.runs_on_regions is None) or bool(selected),
        # some of the role's machines run elsewhere (or the stack does not say where)
        when.not_runs_on is None or not places or any(p.cloud not in when.not_runs_on for p in places),
        when.placed is None or bool(places) == when.placed,
    )
    return all(checks)


def _fill(template: str, values: dict[str, tuple[str, ...]]) -> list[str]:
    names = sorted(set(names_in(template)))
    if not names:
        return [template]
    combos = itertools.product(*(values[name] for name in names))
    return [substitute(template, dict(zip(names, combo))) for combo in combos]


def _resolve_option(destination: str, kind: str | None, protocol: str, ports: Iterable[object], note: str | None,
                    values: dict[str, tuple[str, ...]], entry: Entry) -> tuple[ResolvedAlternative | None, list[str], tuple[str, ...]]:
    """One destination option with placeholders filled; (None, missing names, ()) if the stack cannot fill it."""
    ports = list(ports)
    needed = set(names_in(destination)) | {n for p in ports if isinstance(p, str) for n in names_in(p)}
    missing = sorted(name for name in needed if not values[name])
    if missing:
        return None, missing, ()
    resolved: list[str] = []
    paths: list[str] = []
    resolved_kind = kind
    for text in _fill(destination, values):
        written = classify(text)
        effective = written if names_in(destination) and written in ("ip", "cidr", "fqdn") else (kind or written)
        try:
            parse_destination(text, effective)  # type: ignore[arg-type]
        except AddressError as exc:
            raise ResolveError(f"entry '{entry.id}': destination '{destination}' resolves to '{text}', which is invalid: "
                               f"{exc.problem}. Fix: correct the stack value that fills it") from None
        if effective == "url":
            url = parse_url(text)
            resolved.append(url.host)
            paths.append(url.path or "/")
            resolved_kind = "fqdn"
        else:
            resolved.append(text)
            resolved_kind = effective
    port_ranges = [parse_port(filled) for item in ports for filled in (_fill(item, values) if isinstance(item, str) else [item])]
    option = ResolvedAlternative(kind=resolved_kind, destinations=tuple(resolved), protocol=protocol,  # type: ignore[arg-type]
                                 ports=normalize_ports(port_ranges), note=note)
    return option, [], tuple(sorted(set(paths)))


def _options(entry: Entry, profile: Profile, values: dict[str, tuple[str, ...]]) -> tuple[list[tuple[ResolvedAlternative, tuple[str, ...]]], list[str]]:
    candidates = [(entry.destination, entry.kind, entry.protocol, entry.ports, None)]
    missing = []
    for alt in entry.alternatives:
        if not conditions_hold(alt.when, profile, entry.role):
            missing.append(f"{alt.destination} (only when {', '.join(alt.when.describe())}: set {_condition_settings(alt.when)})")
            continue
        candidates.append((alt.destination, alt.kind, alt.protocol or entry.protocol, alt.ports or entry.ports, alt.note))
    options = []
    for destination, kind, protocol, ports, note in candidates:
        option, lacking, paths = _resolve_option(destination, kind, protocol, ports, note, values, entry)
        if option is None:
            missing.extend(f"{{{name}}} (set {_setting(name, entry.role)})" for name in lacking)
        else:
            options.append((option, paths))
    # Narrowest first; among equals keep the document's order (sorted() is stable).
    options.sort(key=lambda pair: NARROWNESS[pair[0].kind])
    return options, sorted(set(missing))


def _setting(name: str, role: str) -> str:
    """What to set in the stack to fill a placeholder, for a client of ``role``."""
    placeholder = PLACEHOLDERS[name]
    return f"egress-matrix:{placeholder.stack_key}.{role}.region" if placeholder.for_role else placeholder.setting


def _condition_settings(when: Conditions) -> str:
    """The stack keys behind an alternative's conditions: a condition named like a stack setting is that setting."""
    def key(name: str) -> str:
        field = Profile.model_fields.get(name)
        return (field.alias or name) if field else name
    return ", ".join(f"{PROJECT}:{key(name)}: {str(value).lower()}"
                     for name, value in when.model_dump(exclude_none=True, exclude_defaults=True).items())


def _requirements_for(entry: Entry, profile: Profile, values: dict[str, tuple[str, ...]], citation: Optional[tuple[str, str]]) -> list[Requirement]:
    options, missing = _options(entry, profile, values)
    if not options:
        raise ResolveError(f"entry '{entry.id}' ({entry.platform}) applies to this stack but its destination cannot be resolved: "
                           f"{', '.join(missing)}. Fix: set the stack value, or disable the feature/condition that selects the entry")
    chosen, paths = options[0]
    note = None
    if len(options) > 1 or missing:
        others = [f"{', '.join(o.destinations)} ({o.kind})" for o, _ in options[1:]]
        note = f"narrowest of {len(options)} resolvable options" + (f"; also allowed: {'; '.join(others)}" if others else "")
        if missing:
            note += f"; not resolvable here: {', '.join(missing)}"
    alternatives = tuple(o for o, _ in options) if len(options) > 1 else ()
    documented = f"documented as {', '.join(d.destination for d in entry.documented_as)}: " if entry.documented_as else ""
    deviations = (f"{entry.id}: {documented}{entry.differs_because}",) if entry.differs_because else ()
    retires = entry.retires.date if entry.retires else None
    approvals = (ApprovalRef(entry_id=entry.id, owner=entry.approval.owner, reference=entry.approval.reference,
                             expires=entry.approval.expires),) if entry.approval else ()
    return [
        Requirement(
            # A list placeholder may mix host names and addresses (vsphereEndpoints): each destination keeps its own kind.
            role=entry.role, destination=destination, kind=classify(destination) if chosen.kind in ("ip", "cidr", "fqdn") else chosen.kind, protocol=chosen.protocol, ports=chosen.ports,
            level=entry.level, purposes=(entry.purpose,), entry_ids=(entry.id,), citations=(citation,) if citation else (),
            platforms=(entry.platform,), paths=paths, images=entry.images, alternatives=alternatives, chosen=note,
            sources=profile.role_sources(entry.role), deviations=deviations, retires=retires, approvals=approvals,
        )
        for destination in chosen.destinations
    ]


def _expand(requirement: Requirement, entry: Entry, catalog: Catalog, profile: Profile,
            values: dict[str, tuple[str, ...]]) -> list[Requirement]:
    """The further hosts a pull from (or download at) this requirement's host really touches."""
    if requirement.kind != "fqdn" or requirement.protocol not in ("http", "https"):
        return []
    out = []
    for expansion in catalog.expansions:
        if expansion.host != requirement.destination:
            continue
        for implied in expansion.implies:
            if not conditions_hold(implied.when, profile, requirement.role):
                continue
            implied_values = _client_values(values, profile, requirement.role, implied.when)
            missing = sorted(name for name in names_in(implied.destination) if not implied_values[name])
            if missing:
                raise ResolveError(f"host expansion '{expansion.host}' (for entry '{entry.id}') implies '{implied.destination}', which needs "
                                   f"{', '.join(f'{{{n}}} (set {_setting(n, requirement.role)})' for n in missing)}. "
                                   "Fix: set the stack value")
            source = catalog.sources[implied.citation.source]
            for destination in _fill(implied.destination, implied_values):
                out.append(Requirement(
                    role=requirement.role, destination=destination, kind=implied.kind or "fqdn",
                    protocol=implied.protocol, ports=normalize_ports(parse_port(p) for p in implied.ports),
                    level=requirement.level, purposes=(implied.purpose,), entry_ids=(entry.id,),
                    citations=((source.cited, implied.citation.section), *(() if expansion.contacted else requirement.citations)),
                    platforms=requirement.platforms,
                    images=() if expansion.contacted else requirement.images,
                    via=(f"{expansion.host} (for {entry.id})",), sources=requirement.sources, retires=requirement.retires,
                    approvals=requirement.approvals,
                ))
    return out


def _client_values(stack_values: dict[str, tuple[str, ...]], profile: Profile, role: str, when: Conditions) -> dict[str, tuple[str, ...]]:
    """The stack's placeholder values plus those filled per client: the regions of the role's places the row selects."""
    per_client = {name: p.for_role(profile, role, when) for name, p in PLACEHOLDERS.items() if p.for_role}
    return {**stack_values, **per_client} if per_client else stack_values


def _only_a_name(requirement: Requirement, catalog: Catalog) -> bool:
    """Is the requirement's host a name no client connects to (an expansion with ``contacted: false``)?"""
    return requirement.kind == "fqdn" and requirement.protocol in ("http", "https") and any(
        not expansion.contacted and expansion.host == requirement.destination for expansion in catalog.expansions)


def _merge(group: list[Requirement]) -> Requirement:
    first = group[0]
    if len(group) == 1:
        return first

    def union(attr: str) -> tuple[str, ...]:
        return tuple(sorted({item for r in group for item in getattr(r, attr)}))

    return first.model_copy(update={
        "level": min((r.level for r in group), key=LEVELS.index),
        "purposes": tuple(dict.fromkeys(p for r in sorted(group, key=lambda r: r.entry_ids) for p in r.purposes)),
        "entry_ids": union("entry_ids"), "platforms": union("platforms"), "paths": union("paths"),
        "images": union("images"), "via": union("via"), "deviations": union("deviations"),
        # A requirement retires only when every reason for it does, on the last of their dates.
        "retires": None if any(r.retires is None for r in group) else max(r.retires for r in group),
        "citations": tuple(sorted({c for r in group for c in r.citations})),
        "approvals": tuple(sorted({a for r in group for a in r.approvals}, key=lambda a: a.entry_id)),
        "chosen": next((r.chosen for r in group if r.chosen), None),
        "alternatives": next((r.alternatives for r in group if r.alternatives), ()),
    })


def resolve(catalog: Catalog, profile: Profile, file: str | Path = "stack", stack: str = "") -> tuple[Requirement, ...]:
    """The stack's concrete requirements, de-duplicated and in a fixed order."""
    with paused_gc():
        return _resolve(catalog, profile, file, stack)


def _resolve(catalog: Catalog, profile: Profile, file: str | Path, stack: str) -> tuple[Requirement, ...]:
    check_profile(catalog, profile, file, stack)
    profile = profile.model_copy(update={"features": with_needs(catalog, profile.features)})  # what they need comes along
    stack_values = {name: placeholder.values(profile, catalog) for name, placeholder in PLACEHOLDERS.items()}
    raw: list[Requirement] = []
    for entry in sorted(catalog.entries, key=lambda e: e.id):
        if not applies(entry, profile):
            continue
        values = _client_values(stack_values, profile, entry.role, entry.when)
        citation = (catalog.sources[entry.citation.source].cited, entry.citation.section) if entry.citation else None
        try:
            resolved = _requirements_for(entry, profile, values, citation)
        except ResolveError as exc:
            where = f"{file}: stack '{stack}'" if stack else str(file)
            raise ResolveError(f"{where}: {exc}") from None
        for requirement in resolved:
            implied = _expand(requirement, entry, catalog, profile, values)
            if not _only_a_name(requirement, catalog):
                raw.append(requirement)
            elif not implied:
                raise ResolveError(f"entry '{entry.id}': '{requirement.destination}' is only a name (no client connects to it) and "
                                   "implies no host for this stack. Fix: correct matrix/expansions.yaml")
            raw.extend(implied)
    groups: dict[tuple[str, str, str, str], list[Requirement]] = {}
    for requirement in raw:
        groups.setdefault(requirement.key, []).append(requirement)
    merged = [_merge(sorted(group, key=lambda r: r.entry_ids)) for group in groups.values()]
    return tuple(sorted(merged, key=lambda r: (*source_order(r.role), r.destination, r.protocol, r.ports)))


def source_order(role: str) -> tuple[int, str]:
    """Roles in their fixed order, then source groups by name."""
    return (ROLES.index(role), "") if role in ROLES else (len(ROLES), role)
