"""What an explanation holds: the requirements behind a destination or a rule, and what each target's rules decide.

Plain frozen dataclasses in a fixed field order, so ``format_text`` and ``to_json`` are deterministic.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..addresses import PortRange, format_ports
from ..errors import EgressError
from ..models import ROLES, ApprovalRef, Requirement

ALLOWED, DENIED, NOT_ENFORCED = "allowed", "denied", "not-enforced"


class ExplainError(EgressError):
    """A DESTINATION[:PORT], port or role that ``egress explain`` cannot take."""


@dataclass(frozen=True)
class Approved:
    """An own entry behind a requirement (it cites an approval, not a vendor document): its catalog, who approved it,
    the decision's reference, the expiry, and where it is written (``written``: the stack key or the listed catalog)."""

    entry_id: str
    catalog: str  # 'stack' (the stack's entries), 'registries' (its container registries), or a listed catalog's name
    owner: str
    reference: str
    expires: str = ""  # YYYY-MM-DD, or '' when it does not expire
    written: str = ""

    @classmethod
    def of(cls, approval: ApprovalRef, written: str = "") -> Approved:
        return cls(approval.entry_id, approval.entry_id.split("/", 1)[0], approval.owner, approval.reference,
                   approval.expires.isoformat() if approval.expires else "", written)

    def describe(self) -> str:
        expires = f", expires {self.expires}" if self.expires else ", no expiry"
        where = f"; written in {self.written}" if self.written else ""
        return f"{self.entry_id}: owner {self.owner}, reference {self.reference}{expires} (catalog {self.catalog}{where})"


def approvals_of(req: Requirement, written: Optional[Callable[[str], str]] = None) -> tuple[Approved, ...]:
    """The own entries' approvals behind ``req``; ``written(entry id)`` says where each is written, when known."""
    return tuple(Approved.of(a, written(a.entry_id) if written else "") for a in req.approvals)


@dataclass(frozen=True)
class Need:
    """A requirement as an explanation shows it, and how it relates to what was asked (``match``). For own entries,
    their approvals; for a source group (a role beyond the five), ``group`` is its name and ``sources`` its CIDRs."""

    role: str
    destination: str
    protocol: str
    ports: str
    level: str
    entry_ids: tuple[str, ...]
    purposes: tuple[str, ...]
    citations: tuple[tuple[str, str], ...]  # (public address of the document, section)
    via: tuple[str, ...] = ()
    match: str = ""  # 'exact', 'under *.x', 'inside 10.0.0.0/16', 'same destination, another port', 'shares the domain x', ...
    approvals: tuple[Approved, ...] = ()
    group: str = ""  # the source group the flow is for ('' for a role)
    sources: tuple[str, ...] = ()  # the group's source CIDRs

    @classmethod
    def of(cls, req: Requirement, match: str = "", written: Optional[Callable[[str], str]] = None) -> Need:
        group = req.role if req.role not in ROLES else ""
        return cls(req.role, req.destination, req.protocol, format_ports(req.ports), req.level, req.entry_ids, req.purposes,
                   req.citations, req.via, match, approvals_of(req, written), group, req.sources if group else ())

    @property
    def flow(self) -> str:
        return f"{self.role} -> {self.destination} {self.protocol}/{self.ports}"


@dataclass(frozen=True)
class RuleRef:
    """One emitted rule, named the way the target (and its logs) name it."""

    target: str
    kind: str  # 'application rule' | 'network rule' | 'suricata rule' | 'security group rule' | 'squid acl'
    name: str  # what a log line shows: the Azure rule name, 'sid:<n>', the squid ACL, the security group
    where: tuple[tuple[str, str], ...]  # e.g. (('rule collection group', 'egress-dev-aks'), ('collection', ...), ('rule', ...))
    action: str  # 'allow' | 'deny'
    entry_ids: tuple[str, ...] = ()  # the matrix entries the rule's description / metadata / comment names
    text: str = ""  # the rule as the engine reads it, when it is one line (Suricata rule, http_access line)

    def describe(self) -> str:
        return ", ".join(f'{field} "{value}"' if field == "msg" else f"{field} {value}" for field, value in self.where)


@dataclass(frozen=True)
class Probe:
    """One flow asked of a target: from a role's sources, to a destination, over a protocol and port range."""

    role: str
    sources: tuple[str, ...]
    kind: str  # the destination's kind (addresses.classify)
    destination: str
    protocol: str
    ports: PortRange


@dataclass(frozen=True)
class Listed:
    """A rule as ``explain --rule`` finds it: the names it answers to, and which requirements' flows it carries."""

    ref: RuleRef
    names: tuple[str, ...]
    carries: Callable[[Requirement], bool]
    note: str = ""
    ids_complete: bool = True  # False: the rule's entry ids are cut short (a security group's 255 characters)


@dataclass(frozen=True)
class Outcome:
    """What a target's artefacts do with a probe from one source: the deciding rule(s), or why nothing decided.
    ``carried`` False: the target does not see such a flow at all (a forward proxy and a UDP flow)."""

    allowed: bool
    rules: tuple[RuleRef, ...] = ()  # AWS: the firewall rule and the security-group rule
    reason: str = ""  # a denial without a rule (a default deny), or why the target cannot judge it
    notes: tuple[str, ...] = ()
    carried: bool = True


@dataclass(frozen=True)
class Decision:
    """What one target does with one flow: ``allowed``, ``denied`` or ``not-enforced`` (the target does not carry it)."""

    target: str
    role: str
    destination: str  # what was probed: the destination asked about, or the alternative the target uses
    protocol: str
    ports: str
    outcome: str
    required: bool  # a requirement asks for this flow
    rules: tuple[RuleRef, ...] = ()
    reason: str = ""
    notes: tuple[str, ...] = ()
    # The target enforces this flow for the stack: its role and, when a requirement asks for the flow, that requirement.
    # A DENIED decision of a target that does not (verdict.counts) is shown, never counted in the exit status.
    enforced: bool = True


@dataclass(frozen=True)
class Explanation:
    """``egress explain DESTINATION[:PORT]``: the requirements behind it (or the nearest ones) and each target's rule."""

    stack: str
    destination: str
    kind: str
    port: Optional[int]
    role: Optional[str]
    requirements: tuple[Need, ...]
    nearest: tuple[Need, ...]
    decisions: tuple[Decision, ...]
    notes: tuple[str, ...] = ()

    @property
    def required(self) -> bool:
        return bool(self.requirements)


@dataclass(frozen=True)
class EntryRef:
    """A matrix entry a rule names, as the catalog has it (``known`` False: the id is not in this matrix)."""

    id: str
    platform: str
    feature: str
    purpose: str
    citation: tuple[str, str]  # (public address, section); ('', '') for an own entry: it cites its approval
    known: bool = True
    approval: Optional[Approved] = None  # an own entry's
    role: str = ""  # the role or source group it is for


@dataclass(frozen=True)
class RuleMatch:
    """One emitted rule a name matched, and the stack's requirements behind it."""

    rule: RuleRef
    roles: tuple[str, ...]
    requirements: tuple[Need, ...]
    entries: tuple[EntryRef, ...]
    note: str = ""


@dataclass(frozen=True)
class RuleExplanation:
    """``egress explain --rule NAME``: every rule the name matches, or the close names when it matches none."""

    stack: str
    query: str
    matches: tuple[RuleMatch, ...]
    close: tuple[str, ...] = ()

    @property
    def found(self) -> bool:
        return bool(self.matches)
