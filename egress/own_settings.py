"""The stack's own egress, as settings: source groups, one-off entries, and the catalogs it adds to the vendor matrix.

These settings hold objects (a group's CIDRs, an entry's fields), which a Pulumi project cannot declare (its config
types are string, integer, boolean and arrays of them), so they are left out of ``Pulumi.yaml``'s declarations: the
Pulumi CLI passes an undeclared key on unchecked, as JSON text, and this module checks it instead, with the same error
quality as every other setting (file, line, field, value, fix).
"""
from __future__ import annotations

import datetime
import re
from typing import Literal, Optional

from pydantic import Field, field_validator

from .addresses import AddressError, parse_cidr
from .models import LINE, ROLES, SLUG, Alternative, Conditions, Level, PortItem, Protocol, Strict
from .reasons import Reason

GROUP_NAME = r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$"  # like clusterName: it ends up in resource names (IP Group, security group)


def check_groups(groups: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """A source group is a name (not a role's) and at least one CIDR."""
    for name, cidrs in groups.items():
        if name in ROLES:
            raise AddressError(f"'{name}' is a role, not a group name", f"name the group after what runs there (e.g. '{name}-payments'), "
                                                                          f"or set the role's own sources ({name} has a *Sources setting)")
        if not re.fullmatch(GROUP_NAME, name):
            raise AddressError(f"'{name}' is not a group name", "use 1-40 lower-case letters, digits and inner '-' (it names an IP Group "
                                                                   "and a security group)")
        if not cidrs:
            raise AddressError(f"group '{name}' has no CIDRs", f"list its source CIDRs, e.g. {name}: [10.50.32.0/24]")
        for cidr in cidrs:
            parse_cidr(cidr)
    return groups


class StackEntry(Strict):
    """A one-off own entry written in the stack file: the vendor schema's fields, with an approval for a citation."""

    id: str = Field(pattern=SLUG)
    destination: str = Field(min_length=1)
    protocol: Protocol = "https"
    ports: tuple[PortItem, ...] = ()
    role: str = Field("nodes", pattern=SLUG)  # a role or a source group
    level: Level = "required"
    purpose: str = Field(min_length=1)
    owner: str = Field(min_length=1, pattern=LINE)
    reference: str = Field(min_length=1, pattern=LINE)
    expires: Optional[datetime.date] = None
    feature: Optional[str] = Field(default=None, pattern=SLUG)
    when: Conditions = Conditions()
    alternatives: tuple[Alternative, ...] = ()
    broad: Optional[Reason] = None  # why an entry wider than the guard rails is accepted
    note: Optional[str] = None

    @field_validator("expires", mode="before")
    @classmethod
    def _iso_date(cls, value: object) -> object:
        return parse_expiry(value, "")


def parse_expiry(value: object, label: str) -> object:
    """An expiry as JSON (what Pulumi hands the program) holds it: ISO text, YYYY-MM-DD exactly (a date passes)."""
    if value is None or (isinstance(value, datetime.date) and not isinstance(value, datetime.datetime)):
        return value
    if isinstance(value, str) and re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        try:
            return datetime.date.fromisoformat(value)
        except ValueError:  # the right shape but no such day (2027-02-30): the same error as any other non-date
            pass
    raise AddressError(f"{label}'{value}' is not a date", "write the date as YYYY-MM-DD, e.g. 2027-03-31")


class CatalogRef(Strict):
    """One entry of egress-matrix:catalogs: a file or folder of the project, or a package's entry point."""

    kind: Literal["path", "package"]
    value: str


def parse_catalog_ref(text: str) -> CatalogRef:
    if text.startswith("package:"):
        name = text[len("package:"):]
        if not name:
            raise AddressError(f"'{text}' names no package catalog", "write package:<entry point name> (group egress_matrix.catalogs)")
        return CatalogRef(kind="package", value=name)
    if not text or text.startswith("/") or "\\" in text or any(part == ".." for part in text.split("/")):
        raise AddressError(f"'{text}' is not a path inside the project",
                           "write a path relative to the project's root (the folder of Pulumi.yaml), e.g. org/egress or teams/payments.yaml")
    return CatalogRef(kind="path", value=text.rstrip("/"))
