"""The fleet: every stack in stacks/, what each writes to, and which deployments must not run at the same time (pure).

``egress stacks`` prints it; the workflows build their job matrix from it, so adding a stack is adding a file. What a
stack writes comes from the same compile ``pulumi up`` runs: Azure, the Firewall Policy (the one it creates, or
``azurePolicyId``) and the priorities of its rule collection groups; AWS, the firewall policy and rule groups; Kubernetes,
the cluster. Stacks that write to one existing Azure policy share a lock (one concurrency group): two updates writing
rule collection groups to one policy at once fail on Azure's side (the component orders its own writes for that reason).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from itertools import combinations

import yaml

from .errors import EgressError
from .project import Project


class FleetError(EgressError):
    """The stacks together cannot be deployed as configured (two of them on one policy's priorities)."""


@dataclass(frozen=True)
class Write:
    target: str  # azure, aws, kubernetes
    kind: str  # firewall-policy, rule-collection-groups, rule-groups, security-groups, cluster
    id: str  # what it is called where it lives (a resource id, a name, a kubeconfig context)
    access: str  # creates (the stack owns it), writes (it writes into something others own), reads
    priorities: tuple[int, ...] = ()  # the rule collection groups' or rule groups' priorities
    names: tuple[str, ...] = ()  # the groups' names
    hub: tuple[tuple[str, int], ...] = ()  # groups the stack declares are already on an existing policy (name, priority)

    @property
    def shared_key(self) -> str | None:
        """The lock key of something other stacks may write too: an existing Azure policy (ids are case-insensitive)."""
        if self.target == "azure" and self.kind == "firewall-policy" and self.access == "writes":
            match = re.search(r"/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.Network/firewallPolicies/([^/]+)$",
                              self.id, re.I)
            parts = match.groups() if match else (self.id,)
            return "azure-" + re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")
        return None

    @property
    def band(self) -> tuple[int, int] | None:
        return (min(self.priorities), max(self.priorities)) if self.priorities else None

    def as_json(self) -> dict:
        data = {"target": self.target, "kind": self.kind, "id": self.id, "access": self.access}
        if self.priorities:
            data["priorities"] = list(self.priorities)
            data["band"] = list(self.band)  # type: ignore[arg-type]
        if self.names:
            data["names"] = list(self.names)
        return data


@dataclass(frozen=True)
class StackWrites:
    stack: str
    file: str
    writes: tuple[Write, ...]
    priority_base: int | None = None  # azurePriorityBase, where the stack writes to Azure
    lock: str = ""  # its concurrency key: shared with every stack it shares a policy with
    shares_with: tuple[str, ...] = field(default=())


def stack_writes(project: Project, stack: str) -> StackWrites:
    """What one stack's deployment writes, from its compiled plans (raises the stack's first error)."""
    from .targets import TARGETS

    catalog, profile, requirements = project.requirements(stack)
    source = f"{project.stack_file(stack)}: stack '{stack}'"
    writes: list[Write] = []
    for name in profile.targets:
        plan = TARGETS[name].compile(catalog, profile, requirements, source)
        writes += _WRITES[name](plan, profile, project, stack)
    return StackWrites(stack, str(project.stack_file(stack).relative_to(project.root)), tuple(writes),
                       profile.azure_priority_base if "azure" in profile.targets else None)


def _azure(plan, profile, project, stack) -> list[Write]:
    policy = plan.policy
    groups = sorted(plan.groups, key=lambda g: g.priority)
    priorities, names = tuple(g.priority for g in groups), tuple(g.name for g in groups)
    if policy.existing_id:
        from .hub_facts import declared_hub_facts

        stack_file = str(project.stack_file(stack).relative_to(project.root))
        hub = declared_hub_facts(profile, project.root, stack_file, names).groups or {}
        return [Write("azure", "firewall-policy", policy.existing_id, "writes", priorities, names, tuple(sorted(hub.items())))]
    where = f"/subscriptions/{profile.azure_subscription_id or '<azureSubscriptionId>'}/resourceGroups/{profile.azure_resource_group}"
    return [Write("azure", "firewall-policy", f"{where} (the policy stack {stack} creates)", "creates", priorities, names)]


def _aws(plan, profile, project, stack) -> list[Write]:
    writes = []
    if plan.policy is not None:
        if plan.policy.existing_arn:  # its owner references the groups (aws/rule-group-references.json): read, not written
            writes.append(Write("aws", "firewall-policy", plan.policy.existing_arn, "reads"))
        else:
            writes.append(Write("aws", "firewall-policy", plan.policy.name, "creates"))
    if plan.rule_groups:
        writes.append(Write("aws", "rule-groups", f"{len(plan.rule_groups)} rule groups of cluster {plan.cluster}", "creates",
                            tuple(g.priority for g in plan.rule_groups), tuple(g.name for g in plan.rule_groups)))
    if plan.security_groups:
        writes.append(Write("aws", "security-groups", f"{len(plan.security_groups)} security groups in {profile.aws_vpc_id or 'the VPC'}",
                            "creates", names=tuple(g.name for g in plan.security_groups)))
    return writes


def _kubernetes(plan, profile, project, stack) -> list[Write]:
    # The provider reads the kubeconfig of the stack's environment; a stack may name its context in its config.
    config = (yaml.safe_load(project.stack_file(stack).read_text(encoding="utf-8")) or {}).get("config") or {}
    context = config.get("kubernetes:context")
    where = f"kubeconfig context {context}" if isinstance(context, str) and context else f"the cluster of the stack's kubeconfig ({profile.cluster})"
    return [Write("kubernetes", "cluster", where, "writes")]


_WRITES = {"azure": _azure, "aws": _aws, "kubernetes": _kubernetes}


def fleet(project: Project) -> list[StackWrites]:
    """Every stack with its writes and lock: stacks linked by a shared policy (directly or through others) share one lock."""
    stacks = [stack_writes(project, name) for name in project.stacks()]
    parent = {s.stack: s.stack for s in stacks}

    def root(name: str) -> str:
        while parent[name] != name:
            name = parent[name]
        return name

    owner: dict[str, str] = {}
    keys: dict[str, set[str]] = {}
    for s in stacks:
        for key in sorted({w.shared_key for w in s.writes if w.shared_key}):
            if key in owner:
                parent[root(s.stack)] = root(owner[key])
            owner.setdefault(key, s.stack)
            keys.setdefault(s.stack, set()).add(key)
    members: dict[str, list[str]] = {}
    for s in stacks:
        members.setdefault(root(s.stack), []).append(s.stack)
    locks = {}
    for group in members.values():
        shared = sorted(k for name in group for k in keys.get(name, ()))
        for name in group:
            locks[name] = shared[0] if shared else f"stack-{name}"
    return [StackWrites(s.stack, s.file, s.writes, s.priority_base, locks[s.stack],
                        tuple(m for m in members[root(s.stack)] if m != s.stack)) for s in stacks]


def check_fleet(stacks: list[StackWrites]) -> None:
    """Two stacks on one Azure policy must keep to their own priority bands and their own group names (one error each)."""
    on_policy: dict[str, list[tuple[StackWrites, Write]]] = {}
    for s in stacks:
        for w in s.writes:
            if w.shared_key and w.band:
                on_policy.setdefault(w.shared_key, []).append((s, w))
    for entries in on_policy.values():
        _check_hub_groups(entries)
        top = max(w.band[1] for _, w in entries)  # type: ignore[index]
        for (a, wa), (b, wb) in combinations(sorted(entries, key=lambda e: (e[1].band, e[0].stack)), 2):
            (a_low, a_high), (b_low, b_high) = wa.band, wb.band  # type: ignore[misc]
            same = sorted(set(wa.names) & set(wb.names))
            if same:
                raise FleetError(f"{a.file}, {b.file}: stacks '{a.stack}' and '{b.stack}' both write the rule collection group "
                                 f"{same[0]} to Firewall Policy {wa.id}: the later update would replace the other's rules. "
                                 f"Fix: give one of them another egress-matrix:clusterName")
            if a_low <= b_high and b_low <= a_high:
                free = (top // 100 + 1) * 100
                raise FleetError(
                    f"{a.file}, {b.file}: stacks '{a.stack}' and '{b.stack}' write rule collection groups to one Firewall Policy "
                    f"{wa.id} with overlapping priority bands: '{a.stack}' uses {_band(wa)} (azurePriorityBase {a.priority_base}), "
                    f"'{b.stack}' uses {_band(wb)} (azurePriorityBase {b.priority_base}); they overlap at "
                    f"{max(a_low, b_low)}-{min(a_high, b_high)}. Fix: move egress-matrix:azurePriorityBase of '{b.stack}' to a band "
                    f"no other stack on this policy uses, e.g. {free}")


def _check_hub_groups(entries: list[tuple[StackWrites, Write]]) -> None:
    """A group one stack declares is already on the shared policy (azureHubGroups, azureExistingPriorities, an export)
    holds its priority for every stack writing there: another stack's render cannot know it unless it declares it too."""
    written = {name for _, w in entries for name in w.names}
    held: dict[int, tuple[str, StackWrites]] = {}
    for s, w in entries:
        for name, priority in w.hub:
            if name not in written:  # a stack's own group, as an export taken after its deployment lists it
                held.setdefault(priority, (name, s))
    for s, w in sorted(entries, key=lambda e: e[0].stack):
        for name, priority in zip(w.names, w.priorities):
            if priority in held and held[priority][1].stack != s.stack:
                hub_name, declarer = held[priority]
                raise FleetError(f"{s.file}, {declarer.file}: stack '{s.stack}' writes rule collection group {name} at priority {priority} "
                                 f"to Firewall Policy {w.id}, where stack '{declarer.stack}' declares the hub's group {hub_name} at "
                                 f"{priority} (azureHubGroups, azureExistingPriorities or an azureHubExports file). Fix: move "
                                 f"egress-matrix:azurePriorityBase of '{s.stack}' to a free band, and declare the hub's groups in "
                                 f"'{s.stack}' too, so its own render and preview check them")


def _band(w: Write) -> str:
    low, high = w.band  # type: ignore[misc]
    return f"{low}-{high} ({len(w.priorities)} group{'s' if len(w.priorities) != 1 else ''})"


def select(stacks: list[StackWrites], only: list[str], known: list[str]) -> list[StackWrites]:
    """The stacks named in ONLY (all when empty); a name that is no stack is an error listing the stacks."""
    for name in only:
        if name not in known:
            raise FleetError(f"stack '{name}' not found (stacks/Pulumi.{name}.yaml). Fix: use one of: {', '.join(known)}")
    return [s for s in stacks if not only or s.stack in only]


def document(stacks: list[StackWrites], selected: list[StackWrites], first: list[str]) -> dict:
    """The JSON `egress stacks` prints: every selected stack with its writes, and the deployment's three matrices:
    FIRST (updated before the others), the rest that share a lock with no other stack (in parallel), and the rest that do
    (one at a time: GitHub keeps one pending job per concurrency group and cancels an older pending one)."""
    shared = {s.stack for s in stacks if s.shares_with}
    entry = lambda s: {"stack": s.stack, "lock": s.lock}  # noqa: E731
    return {
        "stacks": [s.stack for s in selected],
        "details": [{"stack": s.stack, "file": s.file, "lock": s.lock, "sharesWith": list(s.shares_with),
                     **({"azurePriorityBase": s.priority_base} if s.priority_base is not None else {}),
                     "writes": [w.as_json() for w in s.writes]} for s in selected],
        "deploy": {
            "first": [entry(s) for s in selected if s.stack in first],
            "parallel": [entry(s) for s in selected if s.stack not in first and s.stack not in shared],
            "serial": [entry(s) for s in selected if s.stack not in first and s.stack in shared],
        },
    }


def github_output(doc: dict) -> str:
    """`name=<compact JSON>` lines for $GITHUB_OUTPUT: stacks, first, parallel, serial."""
    compact = lambda value: json.dumps(value, separators=(",", ":"))  # noqa: E731
    lines = [f"stacks={compact(doc['stacks'])}", *(f"{key}={compact(value)}" for key, value in doc["deploy"].items())]
    return "\n".join(lines) + "\n"


def table_lines(selected: list[StackWrites]) -> list[str]:
    lines = []
    for s in selected:
        lock = f"  lock {s.lock}" + (f" (with {', '.join(s.shares_with)})" if s.shares_with else "")
        lines.append(f"{s.stack}  ({s.file}){lock}")
        if not s.writes:
            lines.append("  writes nothing (no egress-matrix:targets)")
        for w in s.writes:
            band = f"  priorities {_band(w)}" if w.band else ""
            lines.append(f"  {w.target} {w.kind}: {w.access} {w.id}{band}")
    return lines
