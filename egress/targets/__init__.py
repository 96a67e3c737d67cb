"""Enforcement targets, one subpackage each, with the same pure entry points (DESIGN.md, "Targets"):

    compile(catalog, profile, requirements, source) -> plan       every decision made here (frozen)
    render(plan) -> {relative path: text}                        exactly what the engine/provider gets
    deployed(resources) -> {relative path: text}                 the same artefacts, rebuilt from deployed resources
    evaluate(artefacts, requirements, catalog) -> Verdict        judged with the target's own semantics
    enforced(catalog, profile, requirements) -> requirements     the ones the target enforces for the stack
    check_deploy(profile)                                        what deploying (not just compiling) needs

The CLI, the Pulumi program and the policy pack reach targets only through ``TARGETS``. Every ``compile`` there runs
the breadth check first (``guard.check_breadth`` on the requirements the target enforces), whoever calls it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from ..deployed import DeployedResource
from ..errors import EgressError
from ..models import Catalog, Requirement
from ..profile import Profile
from . import aws, azure, kubernetes
from .guard import check_breadth
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
    left_out: Callable[[Any], tuple[Any, ...]]  # the plan's recommended/optional requirements it cannot express (options.LeftOut)


def _guarded(compile_target: Callable[..., Any], enforced: Callable[..., list[Requirement]]) -> Callable[..., Any]:
    """``compile_target`` behind the breadth check: one place, so no caller can compile around it."""
    def compile(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement], source: str = "") -> Any:
        requirements = tuple(requirements)
        check_breadth(catalog, profile, enforced(catalog, profile, requirements), source)
        return compile_target(catalog, profile, requirements, source)
    return compile


TARGETS: dict[str, Target] = {
    azure.NAME: Target(azure.NAME, _guarded(azure.compile_azure, azure.enforced), azure.render, azure.evaluate, azure.enforced, azure.check_deploy_settings, azure.summary,
                        azure.deployed_artefacts, azure.left_out_notes),
    aws.NAME: Target(aws.NAME, _guarded(aws.compile_aws, aws.enforced), aws.render, aws.evaluate, aws.enforced, aws.check_deploy_settings, aws.summary,
                    aws.deployed_artefacts, aws.left_out_notes),
    kubernetes.NAME: Target(kubernetes.NAME, _guarded(kubernetes.compile_kubernetes, kubernetes.enforced), kubernetes.render, kubernetes.evaluate, kubernetes.enforced,
                            kubernetes.check_deploy_settings, kubernetes.summary, kubernetes.deployed_artefacts,
                            kubernetes.left_out_notes),
}


def target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise EgressError(f"unknown target '{name}'. Fix: use one of: {', '.join(TARGETS)}") from None


__all__ = ["TARGETS", "Target", "Verdict", "target"]
