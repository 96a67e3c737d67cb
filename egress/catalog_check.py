"""``egress catalog check``: the vendor matrix, and every stack with its own catalogs, validated as the program would
(loading and resolving them gives one clear error naming file, line, field, value and fix), the own entries held to
the guard rails (``targets/guard.py``), and a summary of what each stack adds: own entries per catalog, expired ones,
source groups; with warnings for own entries that repeat a vendor entry or expire soon."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .catalog.own import expiry_notices
from .project import Project
from .targets.guard import check_own_entries, check_own_entries_together, duplicate_notices, own_ids


@dataclass(frozen=True)
class StackCheck:
    stack: str
    own: dict[str, int]  # own catalog -> its entries in the stack's catalog (expired ones left out)
    resolved: int  # own entries behind the stack's requirements
    expired: int
    groups: tuple[str, ...]
    warnings: tuple[str, ...]

    def line(self) -> str:
        """'stack own: 3 own entries (payments 2, stack 1), 2 resolve, 1 expired; source groups: payments'."""
        total = sum(self.own.values())
        parts = [f"{total} own {'entry' if total == 1 else 'entries'}" + (f" ({', '.join(f'{n} {c}' for n, c in self.own.items())})" if total else ""),
                 f"{self.resolved} resolve"]
        if self.expired:
            parts.append(f"{self.expired} expired")
        groups = f"; source groups: {', '.join(self.groups)}" if self.groups else ""
        return f"stack {self.stack}: {', '.join(parts)}{groups}"


def check_stack(project: Project, stack: str) -> StackCheck:
    """Load, resolve and guard one stack (raises the first error); what it adds, and its warnings."""
    catalog, profile, requirements = project.requirements(stack)
    check_own_entries(catalog, profile, requirements, f"{project.stack_file(stack)}: stack '{stack}'")
    check_own_entries_together(catalog, profile, requirements, f"{project.stack_file(stack)}: stack '{stack}'")
    own = Counter(e.catalog for e in catalog.entries if e.catalog is not None)
    own_entries = own_ids(catalog)
    resolved = {i for req in requirements for i in req.entry_ids if i in own_entries}
    return StackCheck(stack, {name: own[name] for name in sorted(own)}, len(resolved), len(catalog.expired), tuple(sorted(profile.source_groups)),
                      tuple(expiry_notices(catalog) + duplicate_notices(catalog, requirements)))
