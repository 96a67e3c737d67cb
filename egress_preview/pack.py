"""Run the policy pack over what the program registered, the way the engine presents it to a pack.

The pack's own analyzer (pulumi_policy's servicer, the object ``PolicyPack`` serves over gRPC) is driven in-process
with the engine's requests: ``Configure`` with the policy config, ``Analyze`` per resource with its inputs,
``AnalyzeStack`` with every resource's outputs, parent, dependencies and propertyDependencies. Inputs are shaped as
the provider's Check leaves them and outputs as the provider returns them (provider_shapes.py); at a preview phase
the unknowns are the engine's sentinels. Values go through protobuf Structs as on the wire (numbers become floats,
containers the SDK's proxies), so the policies meet what they meet under ``pulumi preview|up --policy-pack policy``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

import pulumi
from google.protobuf import json_format
from pulumi.runtime import settings
from pulumi.runtime import proto, rpc
from pulumi_policy import EnforcementLevel
from pulumi_policy.policy import _PolicyAnalyzerServicer

from egress.deployed import UNKNOWN, DeployedResource

from .program import Recorded
from .provider_shapes import checked, provider_outputs

LEVELS = {proto.ADVISORY: "advisory", proto.MANDATORY: "mandatory", proto.DISABLED: "disabled"}
_LEVEL_PROTO = {"advisory": proto.ADVISORY, "mandatory": proto.MANDATORY, "disabled": proto.DISABLED, "remediate": proto.REMEDIATE}


@dataclass(frozen=True)
class Violation:
    policy: str
    level: str  # mandatory | advisory
    severity: str
    message: str  # the policy's own message (without the description the engine prefixes)
    resource: str  # "<type> '<name>'", or "(stack)"
    urn: str = ""

    def line(self) -> str:
        return f"[{self.level}] {self.policy}: {self.resource}: {self.message}"


def servicer(policies: Optional[list] = None, config: Optional[Mapping[str, Any]] = None) -> _PolicyAnalyzerServicer:
    """The pack's analyzer, configured as the engine would (``config``: the JSON of --policy-pack-config)."""
    from egress_policies import PACK_NAME, POLICIES

    # 0.0.1: what a Python PolicyPack always reports (the engine shows PulumiPolicy.yaml's version).
    analyzer = _PolicyAnalyzerServicer(name=PACK_NAME, version="0.0.1", policies=policies or POLICIES,
                                       enforcement_level=EnforcementLevel.ADVISORY)
    request = proto.ConfigureAnalyzerRequest()
    defaults = {p.name: (p.enforcement_level.value if p.enforcement_level else "advisory") for p in (policies or POLICIES)}
    for name, value in (config or {}).items():
        for policy in (list(defaults) if name == "all" else [name]):
            entry = request.policyConfig[policy]
            level = value if isinstance(value, str) else value.get("enforcementLevel")
            # Properties without a level keep the policy's own level (the proto's zero value would mean advisory).
            entry.enforcementLevel = _LEVEL_PROTO[level or defaults.get(policy, "advisory")]
            if isinstance(value, dict):
                entry.properties.update({k: v for k, v in value.items() if k != "enforcementLevel"})
    analyzer.Configure(request, None)
    return analyzer


def _wire(value: Any) -> Any:
    """The core's UNKNOWN as the engine's sentinel (what pulumi_policy's proxies raise on)."""
    if value == UNKNOWN:
        return rpc.UNKNOWN
    if isinstance(value, dict):
        return {k: _wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return value


def _struct(target, value: Mapping[str, Any]) -> None:
    json_format.ParseDict(json.loads(json.dumps(_wire(value))), target)


def _options(target, resource: DeployedResource) -> None:
    target.additionalSecretOutputs.extend(resource.additional_secret_outputs)
    target.protect = resource.protect
    target.parent = resource.parent or ""  # the engine sends a resource policy its parent (not its dependencies)


def analyze_requests(resources: Iterable[DeployedResource], inputs: Mapping[str, Mapping[str, Any]]) -> list:
    requests = []
    for resource in resources:
        request = proto.AnalyzeRequest(type=resource.type, urn=resource.urn, name=resource.name)
        _struct(request.properties, checked(resource.type, inputs.get(resource.urn, resource.props)))
        _options(request.options, resource)
        requests.append(request)
    return requests


def analyze_stack_request(resources: Iterable[DeployedResource]) -> Any:
    request = proto.AnalyzeStackRequest()
    for resource in resources:
        entry = request.resources.add(type=resource.type, urn=resource.urn, name=resource.name, parent=resource.parent or "")
        entry.dependencies.extend(resource.dependencies)
        for key, urns in resource.property_dependencies:
            entry.propertyDependencies[key].urns.extend(urns)
        _struct(entry.properties, provider_outputs(resource.type, resource.props))
        _options(entry.options, resource)
    return request


def _violations(response, labels: Mapping[str, str], descriptions: Mapping[str, str], severities: Mapping[str, str], urn: str = "") -> list[Violation]:
    out = []
    for d in response.diagnostics:
        message = d.message
        prefix = descriptions.get(d.policyName, "") + "\n"
        if message.startswith(prefix):
            message = message[len(prefix):]
        where = d.urn or urn
        out.append(Violation(policy=d.policyName, level=LEVELS.get(d.enforcementLevel, "advisory"), severity=severities.get(d.policyName, ""),
                             message=message, resource=labels.get(where, "(stack)"), urn=where))
    return out


def run_pack(recorded: Recorded, config: Optional[Mapping[str, Any]] = None, policies: Optional[list] = None) -> list[Violation]:
    """Every violation the pack reports for the recorded resources: resource policies first (registration order), then
    stack policies. Needs the program's config in the Pulumi runtime (``run_program`` leaves it set)."""
    from egress_policies import POLICIES

    policies = policies or POLICIES
    # What the engine puts in the pack's environment: the stack's name and config (PULUMI_STACK, PULUMI_CONFIG).
    settings._set_stack(recorded.stack)
    pulumi.runtime.set_all_config(dict(recorded.config), list(recorded.secret_keys))
    analyzer = servicer(policies, config)
    labels = {r.urn: r.label() for r in recorded.resources}
    descriptions = {p.name: p.description for p in policies}
    severities = {p.name: (p.severity.value if p.severity else "") for p in policies}
    out: list[Violation] = []
    for request in analyze_requests(recorded.resources, recorded.inputs):
        out += _violations(analyzer.Analyze(request, None), labels, descriptions, severities, request.urn)
    out += _violations(analyzer.AnalyzeStack(analyze_stack_request(recorded.resources), None), labels, descriptions, severities)
    return out
