"""Enforcement targets, one subpackage each, with the same pure entry points (DESIGN.md, "Targets"):

    compile(catalog, profile, requirements, source) -> plan       every decision made here (frozen)
    render(plan) -> {relative path: text}                        exactly what the engine/provider gets
    deployed(resources) -> {relative path: text}                 the same artefacts, rebuilt from deployed resources
    evaluate(artefacts, requirements, catalog) -> Verdict        judged with the target's own semantics
    enforced(catalog, profile, requirements) -> requirements     the ones the target enforces for the stack
    check_deploy(profile)                                        what deploying (not just compiling) needs

The CLI, the Pulumi program and the policy pack reach targets only through ``TARGETS``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from ..deployed import DeployedResource
from ..errors import EgressError
from ..models import Catalog, Requirement
from ..profile import Profile
from . import aws, azure, kubernetes
from .verdict import Verdict


@dataclass(frozen=True)
class Target:
    name: str
    compile: Callable[[Catalog, Profile, Iterable[Requirement], str], Any]
    render: Callable[[Any], dict[str, str]]
    evaluate: Callable[[Mapping[str, str], Iterable[Requirement], Catalog], Verdict]
    enforced: Callable[[Catalog, Profile, Iterable[Requirement]], list[Requirement]]
    check_deploy: Callable[[Profile], None]
    summary: Callable[[Any], str]
    deployed: Callable[[Iterable[DeployedResource]], dict[str, str]]


TARGETS: dict[str, Target] = {
    azure.NAME: Target(azure.NAME, azure.compile_azure, azure.render, azure.evaluate, azure.enforced, azure.check_deploy_settings, azure.summary,
                        azure.deployed_artefacts),
    aws.NAME: Target(aws.NAME, aws.compile_aws, aws.render, aws.evaluate, aws.enforced, aws.check_deploy_settings, aws.summary,
                    aws.deployed_artefacts),
    kubernetes.NAME: Target(kubernetes.NAME, kubernetes.compile_kubernetes, kubernetes.render, kubernetes.evaluate, kubernetes.enforced,
                            kubernetes.check_deploy_settings, kubernetes.summary, kubernetes.deployed_artefacts),
}


def target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise EgressError(f"unknown target '{name}'. Fix: use one of: {', '.join(TARGETS)}") from None


__all__ = ["TARGETS", "Target", "Verdict", "target"]
