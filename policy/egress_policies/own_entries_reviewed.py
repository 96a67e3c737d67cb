"""own-entries-reviewed: the stack's own entries (its entries, its registries, the catalogs it lists) that a reviewer
should look at again: those accepted as broad (``broad``), those that repeat a flow a vendor entry of the stack already
requires, and those whose approval expired or expires within ``expiryWarningDays``. Advisory: a finding asks for a
review, not a fix; a pack config can make it mandatory ({"own-entries-reviewed": "mandatory"})."""
from __future__ import annotations

import datetime
from typing import Optional

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, Severity, StackValidationPolicy

from egress.catalog.own import today
from egress.deployed import DeployedResource
from egress.targets.guard import duplicate_notices, own_entry_origin, own_ids

from .support import stack_context, stack_validator

NAME = "own-entries-reviewed"


def findings(resources: list[DeployedResource], expiry_days: int = 30, on: Optional[datetime.date] = None) -> list[tuple[str, Optional[str]]]:
    context = stack_context()
    catalog, profile = context.catalog, context.profile
    on = on or today()
    own = own_ids(catalog)
    resolved = {i for req in context.requirements for i in req.entry_ids if i in own}
    entries = sorted((e for e in catalog.entries if e.id in resolved), key=lambda e: e.id)
    out: list[str] = []
    for entry_id in sorted(catalog.expired):
        out.append(f"own entry {entry_id} ({own_entry_origin(catalog, profile, entry_id)}) has expired and is no longer allowed: renew its "
                   "approval (a new 'expires') or remove it")
    for entry in entries:
        where = f"own entry {entry.id} ({own_entry_origin(catalog, profile, entry.id)}; {entry.approval.describe() if entry.approval else 'no approval'})"
        if entry.broad:
            out.append(f"{where} is accepted as broad: '{entry.broad}': review that it still needs to be this wide")
        expires = entry.approval.expires if entry.approval else None
        if expires is not None and expires - on <= datetime.timedelta(days=expiry_days):
            out.append(f"{where} expires on {expires.isoformat()}, within {expiry_days} days (expiryWarningDays): renew the approval "
                       "(a new 'expires') or remove the entry; from that date it is no longer allowed")
    out += duplicate_notices(catalog, context.requirements)
    return [(message, None) for message in out]


POLICY = StackValidationPolicy(
    name=NAME,
    description="Own entries a reviewer should look at again: accepted as broad (broad: <reason>), repeating a flow a vendor entry of "
                "the stack already requires, or with an approval that expired or expires within expiryWarningDays.",
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.LOW,
    validate=stack_validator(findings, (), ("expiryWarningDays", 30)),
    config_schema=PolicyConfigSchema(properties={"expiryWarningDays": {
        "type": "integer", "minimum": 0, "default": 30, "description": "Report own entries whose approval expires within this many days."}}),
    remediation_steps="Narrow a broad own entry or confirm its reason; remove an own entry a vendor entry already covers (or keep it on "
                      "purpose); renew an expiring approval with a new 'expires' (and reference), or remove the entry.",
)
