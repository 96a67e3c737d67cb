"""``explain_rule``: from a rule name as a log shows it to the matrix entries and requirements behind the rule.

Names a rule answers to: Azure, the rule, ``collection/rule`` or ``group/collection/rule`` (a collection's or group's
name gives all its rules); AWS, ``sid:<n>`` or the number, the Suricata ``msg`` or its rule name
(``kkp-core-https``), the rule group (also as its ARN or auto-named physical name) and the security group;
Kubernetes, the squid.conf ACL. Compared case-insensitively. The entries are those the rule names (description,
``metadata``, comment); the requirements are the stack's that carry one of them and whose flow the rule allows (with
the target's own matching). A rule that names no entries (a domain list's generated pass) gets them from those
requirements. An unknown name gives no match and the closest known names.
"""
from __future__ import annotations

import difflib
from typing import Callable, Iterable, Mapping, Optional

from ..models import ApprovalRef, Catalog, Entry, Requirement
from ..profile import Profile
from . import aws
from .destination import judges, origins
from .model import Approved, EntryRef, ExplainError, Listed, Need, RuleExplanation, RuleMatch

CLOSE = 5


def entry_ref(catalog: Catalog, entry_id: str, written: Optional[Callable[[str], str]] = None,
              entries: Optional[Mapping[str, Entry]] = None) -> EntryRef:
    """The entry as the catalog has it: a vendor entry with its citation, an own entry with its approval."""
    entry = (entries or {}).get(entry_id)
    if entry is None:
        try:
            entry = catalog.entry(entry_id)
        except KeyError:
            return EntryRef(entry_id, "", "", "", ("", ""), known=False)
    approval = None
    if entry.approval is not None:
        approval = Approved.of(ApprovalRef(entry_id=entry.id, owner=entry.approval.owner, reference=entry.approval.reference,
                                           expires=entry.approval.expires), written(entry.id) if written else "")
    citation = ("", "")
    if entry.citation is not None:
        source = catalog.sources.get(entry.citation.source)
        citation = (source.cited if source else entry.citation.source, entry.citation.section)
    return EntryRef(entry.id, entry.platform, entry.feature or "", entry.purpose, citation, approval=approval, role=entry.role)


def _match(catalog: Catalog, requirements: list[Requirement], listed: Listed, written: Optional[Callable[[str], str]],
           entries: Mapping[str, Entry]) -> RuleMatch:
    ids = set(listed.ref.entry_ids) if listed.ids_complete else set()
    behind = [r for r in requirements if listed.carries(r) and (not ids or ids & set(r.entry_ids))]
    entry_ids = tuple(sorted(ids)) if ids else tuple(sorted({i for r in behind for i in r.entry_ids}))
    note = listed.note if listed.ref.action == "allow" else "a rule that denies: no requirement is behind it"
    return RuleMatch(listed.ref, tuple(sorted({r.role for r in behind})), tuple(Need.of(r, "", written) for r in behind),
                     tuple(entry_ref(catalog, i, written, entries) for i in entry_ids), note)


def explain_rule(catalog: Catalog, requirements: Iterable[Requirement], artefacts_by_target: Mapping[str, Mapping[str, str]],
                 rule_name: str, profile: Optional[Profile] = None) -> RuleExplanation:
    """Every rule of the artefacts that ``rule_name`` names, with the entries and requirements behind it. With
    ``profile``, only the requirements each target enforces for the stack are considered."""
    name = (rule_name or "").strip()
    if not name:
        raise ExplainError("rule name is empty. Fix: give a rule name as a log shows it, e.g. aks-core-https, "
                           "egress-dev-aks/aks-application/aks-core-https, sid:12345 or a squid.conf ACL name")
    requirements = list(requirements)
    matches: list[RuleMatch] = []
    known: set[str] = set()
    written = origins(catalog, profile)
    entries = {e.id: e for e in catalog.entries}  # thousands of own entries: one lookup each, not a scan
    for target_name, judge, enforced in judges(catalog, profile, requirements, artefacts_by_target):
        if judge.missing:
            continue
        wanted = {n.lower() for n in (aws.lookup_names(name) if target_name == aws.NAME else (name,))}
        for listed in judge.inventory(enforced):
            names = {n.lower() for n in listed.names}
            known.update(n for n in names if not n.isdigit())
            if wanted & names:
                matches.append(_match(catalog, enforced, listed, written, entries))
    close = () if matches else tuple(difflib.get_close_matches(name.lower(), sorted(known), n=CLOSE, cutoff=0.6))
    return RuleExplanation(profile.stack if profile is not None else "", name, tuple(matches), close)
