"""Run ``__main__.py`` for one stack under the Pulumi SDK's mock runtime and record what the engine would receive.

Every registration is kept: type, logical name, URN, parent, dependencies, inputs (engine names, secrets marked)
and the state the mocks answer with (inputs plus the ids, ARNs and names a provider would compute). Stack outputs
are resolved at the end. Config comes from ``stacks/Pulumi.<stack>.yaml`` the way the CLI hands it to a program:
every value a string, structured values as JSON; ``secure:`` values cannot be decrypted offline and are replaced by
a stand-in that stays a secret.
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.output import Unknown
from pulumi.runtime import rpc, settings

from egress.deployed import UNKNOWN, DeployedResource
from egress.errors import EgressError
from egress.gcpause import paused_gc
from egress.profile import PROJECT, declared_settings
from egress.stack_file import read_stack_file

from .provider_shapes import preview_state
from egress_preview.runloop import close_loop

SECRET_STAND_IN = "offline-preview:secret-not-decrypted"
PHASES = ("up", "preview")
OFFLINE_ID = "00000000-0000-0000-0000-000000000000"
_SECRET = {rpc._special_sig_key: rpc._special_secret_sig}


class ProgramError(EgressError):
    """The program stopped (a bad stack, a refused setting): nothing was registered after the error."""


@dataclass
class Recorded:
    """What one run of the program registered, in registration order."""

    stack: str
    resources: list[DeployedResource] = field(default_factory=list)
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)  # urn -> inputs as registered (secrets unwrapped)
    outputs: dict[str, Any] = field(default_factory=dict)  # stack outputs
    secret_outputs: tuple[str, ...] = ()
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # pulumi.log.info: e.g. each fact of a hub policy and where it came from
    config: dict[str, str] = field(default_factory=dict)
    secret_keys: tuple[str, ...] = ()
    phase: str = "up"  # up | preview (run_program)


def _unwrap(value: Any, path: str, secrets: list[str], unknowns: Optional[list[str]] = None) -> Any:
    """Secret markers out, the dotted paths where they were kept; values a preview cannot know as the engine's unknown
    sentinel, their paths in ``unknowns``."""
    if isinstance(value, Unknown) or (isinstance(value, str) and value in (rpc.UNKNOWN, UNKNOWN)):
        if unknowns is not None:
            unknowns.append(path)
        return UNKNOWN  # the core's stand-in (egress/deployed.py); pack.py puts the engine's sentinel back on the wire
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            secrets.append(path)
            return _unwrap(value.get("value"), path, [], unknowns)
        return {k: _unwrap(v, f"{path}.{k}" if path else k, secrets, unknowns) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap(v, f"{path}[{i}]", secrets, unknowns) for i, v in enumerate(value)]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _short_hash(text: str, length: int = 8) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


class PreviewMocks(pulumi.runtime.Mocks):
    """Answers as providers would: an id, and the outputs the program or the pack reads (ARNs, Azure ids, names).
    ``phase`` "up": as after a create. "preview": as a provider's preview answers the engine (provider_shapes.py):
    what it computes is unknown on a create, and on an update what it does not keep from ``prior`` (the deployed state:
    an earlier up-phase run's resources); a resource whose state would equal its deployed state is a "same" step.
    No invoke can reach a cloud offline: reads of existing policies find nothing (the program then judges the facts the
    stack declares, egress/hub_facts.py); the azure-native provider's client
    config answers with the stack's azureSubscriptionId (the subscription check then holds, as with right credentials)."""

    def __init__(self, config: dict[str, str], phase: str = "up", prior: Iterable[DeployedResource] = ()):
        self.config = config
        self.phase = phase
        self.prior = {(r.type, r.name): r.props for r in prior}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        resource_id, state = self._after_create(args)
        if self.phase != "preview":
            return resource_id, state
        before = self.prior.get((args.typ, args.name))
        # Same inputs give the same state here (ids and ARNs derive from names), so the deployed state tells a same step.
        if before is not None and before == _unwrap(dict(state), "", []):
            return resource_id, dict(before)  # a same step: the old outputs
        return (resource_id if before is not None else ""), preview_state(args.typ, state, before)

    def _after_create(self, args: pulumi.runtime.MockResourceArgs):
        state = dict(args.inputs)
        typ, name = args.typ, args.name
        suffix = _short_hash(f"{typ}|{name}", 7)
        if typ.startswith("aws:"):
            region = self.config.get("aws:region", "eu-central-1")
            if typ == "aws:networkfirewall/ruleGroup:RuleGroup":
                state.setdefault("name", f"{name}-{suffix}")
                state["arn"] = f"arn:aws:network-firewall:{region}:123456789012:stateful-rulegroup/{state['name']}"
            elif typ == "aws:networkfirewall/firewallPolicy:FirewallPolicy":
                state.setdefault("name", f"{name}-{suffix}")
                state["arn"] = f"arn:aws:network-firewall:{region}:123456789012:firewall-policy/{state['name']}"
            elif typ == "aws:ec2/securityGroup:SecurityGroup":
                state.setdefault("name", f"{name}-{suffix}")
                return f"sg-0{_short_hash(name, 16)}", {**state, "id": f"sg-0{_short_hash(name, 16)}"}
            elif typ == "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule":
                return f"sgr-0{_short_hash(name, 16)}", {**state, "id": f"sgr-0{_short_hash(name, 16)}"}
            return f"{name}-{suffix}", state
        if typ.startswith("azure-native:"):
            subscription = self.config.get(f"{PROJECT}:azureSubscriptionId", "00000000-0000-0000-0000-000000000000")
            group = state.get("resourceGroupName", "rg")
            kind = typ.rsplit(":", 1)[1]
            own = {"FirewallPolicy": ("firewallPolicyName", "firewallPolicies"), "IpGroup": ("ipGroupsName", "ipGroups")}
            if kind in own:
                key, segment = own[kind]
                physical = state.get(key) or f"{name}{suffix}"
                state["name"] = physical
                state["id"] = f"/subscriptions/{subscription}/resourceGroups/{group}/providers/Microsoft.Network/{segment}/{physical}"
            elif kind == "FirewallPolicyRuleCollectionGroup":
                state["name"] = state.get("ruleCollectionGroupName")
                state["id"] = (f"/subscriptions/{subscription}/resourceGroups/{group}/providers/Microsoft.Network/firewallPolicies/"
                               f"{state.get('firewallPolicyName')}/ruleCollectionGroups/{state['name']}")
            else:
                state["id"] = f"/subscriptions/{subscription}/resourceGroups/{group}/{name}"
            return state["id"], state
        return f"{name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs):
        if args.token == "azure-native:authorization:getClientConfig":  # the provider's credentials: the stack's own subscription
            subscription = self.config.get(f"{PROJECT}:azureSubscriptionId")
            return {"subscriptionId": subscription, "tenantId": OFFLINE_ID, "clientId": OFFLINE_ID, "objectId": OFFLINE_ID} if subscription else {}
        return {}


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """The mock monitor, keeping every registration as the engine would receive it."""

    def __init__(self, mocks: PreviewMocks, recorded: Recorded):
        super().__init__(mocks)
        self.recorded = recorded

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type == "pulumi:pulumi:Stack":
            return response
        secret_paths: list[str] = []
        inputs = _unwrap(rpc.deserialize_properties(request.object), "", secret_paths)
        unknowns: list[str] = []
        state = _unwrap(self.resources[response.urn].state, "", [], unknowns)
        self.recorded.inputs[response.urn] = inputs
        # The SDK collects dependencies in a set: their order changes from run to run, resources.json must not.
        self.recorded.resources.append(DeployedResource(
            type=request.type, name=request.name, urn=response.urn, props=state, parent=request.parent or None,
            dependencies=tuple(sorted(request.dependencies)), secret_paths=tuple(secret_paths),
            additional_secret_outputs=tuple(request.additionalSecretOutputs), protect=bool(request.protect),
            replace_on_changes=tuple(request.replaceOnChanges), aliases=tuple(sorted(_alias(a, request) for a in request.aliases)),
            deleted_with=request.deletedWith or None, unknowns=tuple(unknowns),
            property_dependencies=tuple(sorted((key, tuple(sorted(deps.urns))) for key, deps in request.propertyDependencies.items()))))
        return response


def _alias(alias: Any, request: Any) -> str:
    """An earlier identity the engine adopts: ``name``, or ``type::name`` where the type changed too (a URN as given)."""
    if alias.urn:
        return alias.urn
    name = alias.spec.name or request.name
    return f"{alias.spec.type}::{name}" if alias.spec.type else name


def stack_config(stack_file: Path) -> tuple[dict[str, str], list[str]]:
    """The stack file as the CLI hands it to a program (values as text) and the keys that are secrets, read by the one
    strict reader (egress/stack_file.py): a file the tools refuse never reaches the program."""
    stack = stack_file.name[len("Pulumi."):-len(".yaml")]
    return read_stack_file(stack_file, stack, project=PROJECT, declared=declared_settings()).cli_config(SECRET_STAND_IN)


@contextlib.contextmanager
def _fresh_runtime(directory: Path):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    settings.ROOT.set(None)  # a root stack left by an earlier run belongs to a closed loop
    previous = Path.cwd()
    os.chdir(directory)
    sys.path.insert(0, str(directory))  # as the language host runs a program: its folder first on the path (components/)
    try:
        yield loop
    finally:
        sys.path.remove(str(directory))
        os.chdir(previous)
        close_loop(loop)
        asyncio.set_event_loop(None)


def run_program(project_dir: Path, stack: str, config: Optional[dict[str, str]] = None, secret_keys: Optional[list[str]] = None,
                register: Optional[Callable[[], None]] = None, phase: str = "up", prior: Iterable[DeployedResource] = ()) -> Recorded:
    """Run the program of ``project_dir`` for ``stack`` (config from its stack file unless given) and return what it
    registered. ``register`` replaces the program (the bench's SDK floor). ``phase``: "up" (what the engine holds after
    an update) or "preview" (a ``pulumi preview``: a first deployment, or an update of the deployed ``prior``: the
resources of an earlier up-phase run, or of its resources.json)."""
    if phase not in PHASES:
        raise ValueError(f"phase {phase!r}: one of {', '.join(PHASES)}")
    if register is None and not (project_dir / "__main__.py").is_file():
        raise ProgramError(f"{project_dir / '__main__.py'}: no Pulumi program in the project, so there is nothing to preview (egress render "
                           "needs none). Fix: run egress preview in an egress-matrix checkout, whose __main__.py and components/ are the "
                           "program, or copy both into the project")
    if config is None:
        config, secret_keys = stack_config(project_dir / "stacks" / f"Pulumi.{stack}.yaml")
    recorded = Recorded(stack=stack, config=dict(config), secret_keys=tuple(secret_keys or ()), phase=phase)
    warnings = recorded.warnings
    with _fresh_runtime(project_dir):
        mocks = PreviewMocks(config, phase, prior)
        monitor = RecordingMonitor(mocks, recorded)
        pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=phase == "preview", monitor=monitor)
        pulumi.runtime.set_all_config(dict(config), list(secret_keys or []))
        original_warn, original_info = pulumi.log.warn, pulumi.log.info
        pulumi.log.warn = lambda message, *args, **kwargs: warnings.append(str(message))  # type: ignore[assignment]
        pulumi.log.info = lambda message, *args, **kwargs: recorded.notes.append(str(message))  # type: ignore[assignment]
        def program() -> None:  # returns nothing: the SDK would otherwise wrap and await the program's globals
            runpy.run_path(str(project_dir / "__main__.py"), run_name="__main__")

        try:
            # The SDK's outputs are thousands of short-lived objects; a collection walking the provider SDKs' hundreds of
            # thousands of long-lived ones on each of them would cost more than the program (bench/RESULTS.md).
            with paused_gc():
                pulumi.runtime.test(register or program)()
        except pulumi.RunError as exc:
            raise ProgramError(f"stack '{stack}': {exc}") from None
        finally:
            pulumi.log.warn, pulumi.log.info = original_warn, original_info  # type: ignore[assignment]
        root = settings.get_root_resource()
        outputs = dict(getattr(root, "outputs", {}) or {})
        # Serialised once, as the engine would receive them (secrets marked), rather than lifting every leaf into an Output.
        wire = rpc.deserialize_properties(pulumi_mocks._sync_await(rpc.serialize_properties(outputs, {})))
        resolved, secret = {}, []
        for key, value in wire.items():
            paths: list[str] = []
            resolved[key] = _unwrap(value, key, paths)
            if paths:
                secret.append(key)
        recorded.outputs, recorded.secret_outputs = resolved, tuple(secret)
    return recorded
