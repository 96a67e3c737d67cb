"""The whole matrix as this stack would resolve it: every entry (and every host it implies), with what keeps it out.

``resolve`` answers "what does the stack need"; learning asks the other way round, "which row would have allowed this
flow, and what does the stack lack to get it". So every entry of the stack's catalog (vendor rows of every platform,
own catalogs, the stack's entries and registries) is resolved with the stack's own placeholder values as if it
applied, and carries its ``blockers``: the platform, feature or level the stack does not turn on, or a condition that
does not hold. An entry whose placeholders the stack cannot fill (an API-server IP it does not set), or that is for
another Azure cloud, cannot apply as the stack stands and is left out.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ResolveError
from ..features import with_needs
from ..models import DEFAULT_PORTS, Catalog, Conditions, Entry, Requirement
from ..placeholders import PLACEHOLDER, PLACEHOLDERS, names_in
from ..profile import Profile
from ..resolve import _client_values, _expand, _requirements_for, _setting, conditions_hold  # one resolution, not a second copy

ENABLING = ("platform", "feature", "level")  # what a stack turns on by listing it


@dataclass(frozen=True)
class Candidate:
    entry: Entry
    req: Requirement  # the entry's row (or a host it implies) resolved for the stack
    blockers: tuple[tuple[str, str], ...]  # (platform|feature|level|when, value): () when the stack resolves it today

    @property
    def in_stack(self) -> bool:
        """Is the entry's platform one of the stack's (or the entry an own one)? Other platforms' rows are only cited."""
        return ("platform", self.entry.platform) not in self.blockers

    @property
    def enabling(self) -> bool:
        """Would turning on features or levels (no new platform, no other condition) make the stack resolve it?"""
        return bool(self.blockers) and self.in_stack and all(kind in ENABLING for kind, _ in self.blockers)


@dataclass(frozen=True)
class Pattern:
    """A host row the stack cannot resolve (a placeholder it does not fill): its destination as a pattern, each
    placeholder standing for one or more DNS labels, so a denied host it would name is still a near miss."""

    entry: Entry
    regex: re.Pattern[str]
    missing: tuple[str, ...]  # the stack settings that fill its placeholders
    blockers: tuple[tuple[str, str], ...]

    @property
    def in_stack(self) -> bool:
        return ("platform", self.entry.platform) not in self.blockers

    def carries(self, protocols: tuple[str, ...], port: int) -> bool:
        """Does the row's protocol carry the flow, on one of its ports (ports it names through a placeholder: any)?"""
        ports = self.entry.ports or ((DEFAULT_PORTS[self.entry.protocol],) if self.entry.protocol in DEFAULT_PORTS else ())
        return self.entry.protocol in protocols and (not ports or any(isinstance(p, str) or p == port for p in ports))


def patterns(catalog: Catalog, profile: Profile) -> tuple[Pattern, ...]:
    stack = profile.model_copy(update={"features": with_needs(catalog, profile.features)})
    values = {name: placeholder.values(stack, catalog) for name, placeholder in PLACEHOLDERS.items()}
    out = []
    for entry in sorted(catalog.entries, key=lambda e: e.id):
        names = names_in(entry.destination)
        client = _client_values(values, stack, entry.role, entry.when)
        if entry.variant not in (None, stack.cloud) or entry.kind not in (None, "fqdn", "wildcard", "url") or all(client[n] for n in names):
            continue
        host = entry.destination.split("://", 1)[-1].split("/", 1)[0]
        parts = PLACEHOLDER.split(host)  # text, name, text, name, ...: the names stand for labels
        if "".join(parts[::2]).count(".") < 2:  # '{offline_registry_host}', 'api.{datadog_site}': no domain of its own
            continue
        regex = "".join(re.escape(part) if i % 2 == 0 else r"[a-z0-9-]+(?:\.[a-z0-9-]+)*" for i, part in enumerate(parts))
        missing = tuple(sorted({_setting(n, entry.role) for n in names if not client[n]}))
        out.append(Pattern(entry, re.compile(regex.replace(r"\*", r"[a-z0-9-]+(?:\.[a-z0-9-]+)*")), missing, _blockers(entry, stack, catalog)))
    return tuple(out)


def candidates(catalog: Catalog, profile: Profile) -> tuple[Candidate, ...]:
    stack = profile.model_copy(update={"features": with_needs(catalog, profile.features)})
    values = {name: placeholder.values(stack, catalog) for name, placeholder in PLACEHOLDERS.items()}
    out: list[Candidate] = []
    for entry in sorted(catalog.entries, key=lambda e: e.id):
        if entry.variant is not None and entry.variant != stack.cloud:
            continue
        blockers = _blockers(entry, stack, catalog)
        client = _client_values(values, stack, entry.role, entry.when)
        citation = (catalog.sources[entry.citation.source].cited, entry.citation.section) if entry.citation else None
        try:
            for req in _requirements_for(entry, stack, client, citation):
                out.append(Candidate(entry, req, blockers))
                out.extend(Candidate(entry, implied, blockers) for implied in _expand(req, entry, catalog, stack, client))
        except ResolveError:  # a placeholder this stack does not fill: the row cannot apply as the stack stands
            continue
    return tuple(out)


def _blockers(entry: Entry, stack: Profile, catalog: Catalog) -> tuple[tuple[str, str], ...]:
    blockers: list[tuple[str, str]] = []
    if entry.catalog is None and entry.platform not in stack.platforms:
        blockers.append(("platform", entry.platform))
    for feature in (entry.feature, *entry.when.features):
        if feature and feature not in stack.features and ("feature", feature) not in blockers:
            blockers.append(("feature", feature))
    if entry.level not in stack.levels:
        blockers.append(("level", entry.level))
    turned_on = stack.model_copy(update={
        "platforms": (*stack.platforms, *(value for kind, value in blockers if kind == "platform")),
        "features": with_needs(catalog, (*stack.features, *(value for kind, value in blockers if kind == "feature"))),
        "levels": (*stack.levels, *(value for kind, value in blockers if kind == "level")),
    })
    if not conditions_hold(entry.when, turned_on, entry.role):  # name only the conditions that fail, one by one
        unmet = [part for name, value in entry.when.model_dump(exclude_defaults=True).items()
                 if not conditions_hold(Conditions(**{name: value}), turned_on, entry.role)
                 for part in Conditions(**{name: value}).describe()]
        blockers.append(("when", ", ".join(unmet or entry.when.describe())))
    return tuple(blockers)
