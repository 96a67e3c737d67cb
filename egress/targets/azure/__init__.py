"""Azure Firewall Policy: rule collection groups (and the IP Groups they use as sources).

compile.py  requirements -> AzurePlan (every decision)     render.py  AzurePlan -> REST bodies
evaluate.py REST bodies -> Verdict, with Azure's semantics   plan.py    the plan's models and Azure's limits
"""
from __future__ import annotations

from typing import Iterable, Mapping

from ...models import Catalog, Requirement
from ...profile import Profile
from ..options import left_out_lines, requirement_label
from ..verdict import Verdict
from .deployed import artefacts as deployed_artefacts
from .compile import check_deploy_settings, compile_azure, fqdn_tag_members, left_out_of_azure
from .evaluate import evaluate as evaluate_artefacts
from .plan import AzureCompileError, AzurePlan
from .render import render

NAME = "azure"


def evaluate(artefacts: Mapping[str, str], requirements: Iterable[Requirement], catalog: Catalog) -> Verdict:
    """The rendered artefacts judged against the requirements of the roles and source groups they enforce."""
    requirements = list(requirements)
    return evaluate_artefacts(artefacts, requirements, fqdn_tag_members(catalog, requirements))


def enforced(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement]) -> list[Requirement]:
    """The requirements the rule collection groups enforce: those of the roles in azureRoles and of every source group,
    but for the recommended/optional ones Azure cannot express (left out, with a note in the render)."""
    requirements = list(requirements)
    sources = set(profile.enforced(profile.azure_roles))
    leave_out = {note.requirement for note in left_out_of_azure(catalog, profile, requirements)}
    return [req for req in requirements if req.role in sources and requirement_label(req) not in leave_out]


def left_out_notes(plan: AzurePlan) -> tuple:
    return tuple(plan.left_out)


def summary(plan: AzurePlan) -> str:
    text = f"{len(plan.groups)} rule collection group(s), {sum(g.rule_count for g in plan.groups)} rules, {len(plan.ip_groups)} IP Group(s)"
    return "\n".join([text, *left_out_lines("azure", plan.left_out)])


__all__ = ["NAME", "deployed_artefacts", "AzureCompileError", "AzurePlan", "check_deploy_settings", "compile_azure", "enforced", "evaluate", "left_out_notes", "render", "summary"]
