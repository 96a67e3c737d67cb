"""What every policy shares: the stack's requirements resolved from the config the engine hands packs, and the
resources the engine presents, as plain ``DeployedResource`` values the targets' pure code can judge.

The engine runs a pack with the stack's config in ``PULUMI_CONFIG`` (and the stack's name in ``PULUMI_STACK``);
``pulumi.Config`` reads both there and inside ``egress preview``. The pack never trusts the program's plan: it
resolves the requirements itself from that config and the matrix (DESIGN.md, "Data flow").
"""
from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import pulumi
from pulumi_policy import ResourceValidationArgs, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from egress.catalog import load_catalog
from egress.catalog.own import stack_catalog
from collections.abc import Mapping, Sequence

from egress.deployed import UNKNOWN, DeployedResource
from egress.errors import EgressError
from egress.redact import redact as redact_text
from egress.models import Catalog, Requirement
from egress.profile import PROJECT, SECRET_KEYS, Profile, declared_settings, profile_from_pulumi_config
from egress.project import find_project
from egress.resolve import resolve
from egress.targets import TARGETS, Verdict
from egress.targets.unknowns import Unjudged, judgeable, target_types, unjudged
from egress.targets.writes import StackPlan, WriteVerdict, carries_rules, planned


# What the target evaluators read: the resources every target rebuilds its artefacts from.
JUDGED_TYPES = ("azure-native:network:FirewallPolicyRuleCollectionGroup", "azure-native:network:IpGroup",
                "aws:networkfirewall/ruleGroup:RuleGroup", "aws:networkfirewall/firewallPolicy:FirewallPolicy",
                "aws:ec2/securityGroup:SecurityGroup", "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
                "kubernetes:core/v1:ConfigMap")


@dataclass(frozen=True)
class StackContext:
    stack: str
    catalog: Catalog
    profile: Profile
    requirements: tuple[Requirement, ...]
    key: tuple = ()  # (stack, config): what it was resolved from


def _matrix_dir() -> Path:
    try:
        return find_project(Path.cwd()).matrix_dir
    except EgressError:  # the pack installed apart from the project: the matrix next to the core it was installed from
        import egress

        return Path(list(egress.__path__)[0]).resolve().parent / "matrix"  # a namespace package has no __file__


@lru_cache(maxsize=1)
def _catalog(matrix_dir: Path) -> Catalog:
    return load_catalog(matrix_dir)


@lru_cache(maxsize=8)
def _context(stack: str, config: tuple[tuple[str, Optional[str]], ...]) -> StackContext:
    values = dict(config)
    matrix_dir = _matrix_dir()
    profile = profile_from_pulumi_config(values.get, stack).with_secrets(k for k in SECRET_KEYS if values.get(k) is not None)
    # own catalogs' paths are relative to the project root: the matrix's parent
    catalog = stack_catalog(_catalog(matrix_dir), profile, matrix_dir.parent, f"Pulumi config of stack '{stack}'", stack)
    requirements = tuple(resolve(catalog, profile, f"Pulumi config of stack '{stack}'", stack))
    return StackContext(stack=stack, catalog=catalog, profile=profile, requirements=requirements, key=(stack, config))


def stack_context() -> StackContext:
    """The stack's profile and requirements (cached per stack and config). A config the program itself would refuse
    raises EgressError: the program stops before registering anything, so there is nothing for a pack to judge."""
    config = pulumi.Config(PROJECT)
    keys = sorted(set(declared_settings()) | set(SECRET_KEYS))
    return _context(pulumi.get_stack(), tuple((key, config.get(key)) for key in keys))


_VERDICTS: dict[tuple, tuple] = {}


def target_verdict(name: str, resources: list[DeployedResource]) -> tuple[dict[str, str], list[Requirement], Verdict]:
    """(artefacts rebuilt from the resources, the requirements the target enforces, its verdict) for target ``name``.
    Two stack policies judge the same artefacts in one analysis: the verdict is computed once per stack and content."""
    context = stack_context()
    spec = TARGETS[name]
    artefacts = spec.deployed(judgeable(resources))  # what a preview cannot know yet is reported by blocked(), not judged
    key = (context.key, name, tuple(sorted(artefacts.items())))
    if key not in _VERDICTS:
        if len(_VERDICTS) > 16:
            _VERDICTS.clear()
        enforced = spec.enforced(context.catalog, context.profile, context.requirements)
        _VERDICTS[key] = (enforced, spec.evaluate(artefacts, enforced, context.catalog))
    enforced, verdict = _VERDICTS[key]
    return artefacts, enforced, verdict


_PLANS: dict[tuple, StackPlan] = {}


def stack_plan() -> StackPlan:
    """The stack's own plan per enforced target, compiled from its config (never read from the program), rendered and
    judged once per stack and config: each resource policy judges one write against it (egress/targets/writes.py)."""
    context = stack_context()
    if context.key not in _PLANS:
        if len(_PLANS) > 4:
            _PLANS.clear()
        plans, files, enforced, evaluate = {}, {}, {}, {}
        for name in context.profile.targets:
            spec = TARGETS[name]
            plans[name] = spec.compile(context.catalog, context.profile, context.requirements, f"Pulumi config of stack '{context.stack}'")
            files[name] = planned(name, plans[name], spec.render)
            enforced[name] = spec.enforced(context.catalog, context.profile, context.requirements)
            evaluate[name] = spec.evaluate
        _PLANS[context.key] = StackPlan(context.catalog, context.profile, plans, files, enforced, evaluate)
    return _PLANS[context.key]


def write_validator(pick: Callable[[WriteVerdict], Iterable[str]]) -> Callable:
    """A resource policy's validate judging one rule-carrying write against the stack's plan: ``pick`` chooses which
    of the write's findings this policy reports."""
    def violations(resource: DeployedResource) -> list[str]:
        if carries_rules(resource) is None:
            return []
        verdict = stack_plan().judge_write(resource)
        return [f"{verdict.target}: {finding}" for finding in pick(verdict)] if verdict else []
    return resource_validator(violations, prefix="", parent=True)


def unjudged_of(name: str, resources: list[DeployedResource]) -> list[Unjudged]:
    """The resources of target ``name`` that cannot be judged (egress/targets/unknowns.py)."""
    wanted = target_types(name)
    return unjudged(r for r in resources if r.type in wanted)


def blocked(name: str, found: list[Unjudged]) -> list[tuple[str, Optional[str]]]:
    """(message, urn) per resource of target ``name`` that cannot be judged."""
    return [(f"{name}: {u.message()}", u.resource.urn) for u in found]


def known(value: Any, path: str = "", unknowns: Optional[list[str]] = None) -> Any:
    """The engine's proxies as plain dicts and lists (whole floats as ints), every value a preview cannot know replaced
    by UNKNOWN and its dotted path added to ``unknowns``. Reading an unknown through the proxies raises, and Pulumi then
    answers one advisory "can't run policy" for the whole policy, a mandatory one included; this reads around them so
    each check can decide what an unknown means for it (egress/targets/unknowns.py)."""
    unknowns = [] if unknowns is None else unknowns
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (str, bytes)) or not isinstance(value, (Mapping, Sequence)):
        return value
    keys = list(value) if isinstance(value, Mapping) else list(range(len(value)))
    out: Any = {} if isinstance(value, Mapping) else []
    for key in keys:
        where = (f"{path}.{key}" if path else str(key)) if isinstance(value, Mapping) else f"{path}[{key}]"
        try:
            item = known(value[key], where, unknowns)
        except UnknownValueError:
            unknowns.append(where)
            item = UNKNOWN
        if isinstance(out, dict):
            out[str(key)] = item
        else:
            out.append(item)
    return out


def _resource(type_: str, name: str, urn: str, props: Any, opts: Any, **extra: Any) -> DeployedResource:
    unknowns: list[str] = []
    plain_props = known(props, "", unknowns)
    return DeployedResource(type=type_, name=name, urn=urn, props=plain_props, unknowns=tuple(unknowns),
                            additional_secret_outputs=tuple(opts.additional_secret_outputs or ()), **extra)


def resource_of(args: ResourceValidationArgs, prefix: str = "kubernetes:", parent: bool = False) -> Optional[DeployedResource]:
    """The resource under validation (its checked inputs), or None when its type is not one the policy reads.
    ``parent``: keep its parent's URN (the engine sends a resource policy its parent, not its dependencies)."""
    if not args.resource_type.startswith(prefix):
        return None
    extra = {"parent": getattr(args.opts, "parent", None) or None} if parent else {}
    return _resource(args.resource_type, args.name, args.urn, args.props, args.opts, **extra)


def resources_of(args: StackValidationArgs, types: Iterable[str]) -> list[DeployedResource]:
    """The stack's resources of ``types`` (type tokens; a token ending in ':' is a prefix), converted with the unknowns
    marked and the engine's propertyDependencies kept; the others untouched."""
    wanted = tuple(types)
    prefixes = tuple(t for t in wanted if t.endswith(":"))
    return [_resource(r.resource_type, r.name, r.urn, r.props, r.opts, parent=r.parent.urn if r.parent else None,
                      dependencies=tuple(sorted(d.urn for d in r.dependencies)),
                      property_dependencies=tuple(sorted((k, tuple(sorted(d.urn for d in v))) for k, v in (r.property_dependencies or {}).items())))
            for r in args.resources if r.resource_type in wanted or r.resource_type.startswith(prefixes or ("\0",))]


def _failed(exc: Exception) -> str:
    """An unexpected error inside a check, as that check's own violation: an exception escaping a policy would fail the
    engine's whole run (every other policy's verdict lost), and silence would pass what was not judged."""
    return redact(f"could not judge: {type(exc).__name__}: {exc}. This is a defect of the egress-matrix pack: report it with the "
                  f"stack's `egress preview` output")


def _guarded(compute: Callable[[], list], as_finding: Callable[[str], Any] = lambda message: message) -> list:
    """What a check found, or its failure as its own violation: an EgressError (the stack's config refused: the program
    stops too, and says the same) or any other exception (see _failed), never raised into the engine's run."""
    try:
        return compute()
    except EgressError as exc:
        return [as_finding(str(exc))]
    except Exception as exc:  # noqa: BLE001 - see _failed
        return [as_finding(_failed(exc))]


def resource_validator(violations: Callable[..., list[str]], *settings: tuple[str, Any], prefix: str = "kubernetes:",
                       parent: bool = False) -> Callable:
    """A resource policy's validate: ``violations(resource, *setting values)`` for the resources it reads (types
    starting with ``prefix``; ``parent``: with their parent's URN)."""
    def validate(args: ResourceValidationArgs, report_violation: Callable) -> None:
        def compute() -> list[str]:
            resource = resource_of(args, prefix, parent)
            return [] if resource is None else violations(resource, *(config_value(args, key, default) for key, default in settings))
        for message in _guarded(compute):
            report_violation(redact(message), None)
    return validate


def stack_validator(findings: Callable[..., list[tuple[str, Optional[str]]]], types: Iterable[str], *settings: tuple[str, Any]) -> Callable:
    """A stack policy's validate: ``findings(resources of types, *setting values)`` -> (message, urn of the resource to fix)."""
    wanted = tuple(types)

    def validate(args: StackValidationArgs, report_violation: Callable) -> None:
        found = _guarded(lambda: findings(resources_of(args, wanted), *(config_value(args, key, default) for key, default in settings)),
                         lambda message: (message, None))
        for message, urn in found:
            report_violation(redact(message), urn)
    return validate


def config_value(args: Any, key: str, default: Any) -> Any:
    """A policy-config property (the engine applies schema defaults; the in-process runner may not), numbers as ints."""
    value = (args.get_config() or {}).get(key, default)
    return int(value) if isinstance(value, float) and value.is_integer() else value


def covered(needed: str, allowed: Iterable[str]) -> bool:
    """Is the CIDR or address ``needed`` inside one of ``allowed`` (same family)?"""
    try:
        net = ipaddress.ip_network(needed, strict=False)
    except ValueError:
        return needed in allowed
    for item in allowed:
        try:
            other = ipaddress.ip_network(item.strip(), strict=False)
        except ValueError:
            continue
        if other.version == net.version and net.subnet_of(other):  # type: ignore[arg-type]
            return True
    return False


def is_open(cidr: str) -> bool:
    try:
        return ipaddress.ip_network(cidr.strip(), strict=False).prefixlen == 0
    except ValueError:
        return False


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def redact(text: str) -> str:
    """Proxy credentials and private keys never reach a violation message, a log or a PR comment (egress/redact.py)."""
    return redact_text(text)
