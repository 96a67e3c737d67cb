"""The whole matrix as this stack would resolve it: every entry (and every host it implies), with what keeps it out.

``resolve`` answers "what does the stack need"; learning asks the other way round, "which row would have allowed this
flow, and what does the stack lack to get it". So every entry of the stack's catalog (vendor rows of every platform,
own catalogs, the stack's entries and registries) is resolved with the stack's own placeholder values as if it
applied, and carries its ``blockers``: the platform, feature or level the stack does not turn on, or a condition that
does not hold. An entry whose placeholders the stack cannot fill (an API-server IP it does not set), or that is for
another Azure cloud, cannot apply as the stack stands and is left out.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ResolveError
from ..features import with_needs
from ..models import Catalog, Entry, Requirement
from ..placeholders import PLACEHOLDERS
from ..profile import Profile
from ..resolve import _client_values, _expand, _requirements_for, conditions_hold  # one resolution, not a second copy

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
    if not conditions_hold(entry.when, turned_on, entry.role):
        blockers.append(("when", ", ".join(entry.when.describe())))
    return tuple(blockers)
