"""Issue 20, helper aks: a recommended or optional row a target cannot express is left out of that target with a note (a
required one still stops the stack); AKS features that need the Key Vault provider add-on bring its rows along."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from egress.errors import EgressError
from egress.project import open_project
from egress.resolve import resolve
from egress.targets import TARGETS
from egress.targets.aws.plan import AwsCompileError
from egress.targets.azure.plan import AzureCompileError
from egress.targets.kubernetes.squid import EgressProxyCompileError

ROOT = Path(__file__).resolve().parents[1]
ALL_LEVELS = ("required", "recommended", "optional")
MID_LABEL = ["md-*.blob.storage.azure.net", "umsa*.blob.core.windows.net"]  # the two optional AKS rows with '*' inside a label


def stack(name: str, **overrides):
    catalog, profile, _ = open_project(ROOT).requirements(name)
    profile = profile.model_copy(update=overrides)
    return catalog, profile, resolve(catalog, profile)


def _left_out(files: dict[str, str], path: str) -> list[str]:
    return [line.split(" -> ")[1].split(" ")[0] for line in files.get(path, "").splitlines()[1:]]


def _compiled(target: str, catalog, profile, reqs):
    spec = TARGETS[target]
    plan = spec.compile(catalog, profile, reqs, "stack")
    files = spec.render(plan)
    enforced = spec.enforced(catalog, profile, reqs)
    return plan, files, enforced, spec.evaluate(files, enforced, catalog)


# ------------------------------------------------------------------ left out with a note


def test_azure_leaves_the_optional_mid_label_wildcards_out_with_a_note():
    catalog, profile, reqs = stack("aks-public", levels=ALL_LEVELS)
    assert {r.destination for r in reqs} >= set(MID_LABEL)
    plan, files, enforced, verdict = _compiled("azure", catalog, profile, reqs)
    assert _left_out(files, "azure/left-out.txt") == MID_LABEL
    assert [(n.level, n.reason) for n in plan.left_out] == [
        ("optional", f"{d} https/443: Azure application rules take '*' only as the whole left-most label") for d in MID_LABEL]
    bodies = "".join(text for path, text in files.items() if path.endswith(".json"))
    assert "md-" not in bodies and "umsa" not in bodies and '"Storage"' not in bodies  # never widened to all of Storage
    assert not {r.destination for r in enforced} & set(MID_LABEL)
    assert verdict.missing == ()  # what is enforced is allowed: nothing asks for the left-out rows
    summary = TARGETS["azure"].summary(plan)
    assert "left out: 2 requirement(s) this target cannot express (azure/left-out.txt):" in summary


def test_without_the_optional_level_nothing_is_left_out_and_no_note_is_written():
    catalog, profile, reqs = stack("aks-public")
    plan, files, _, _ = _compiled("azure", catalog, profile, reqs)
    assert plan.left_out == () and "azure/left-out.txt" not in files
    assert "left out" not in TARGETS["azure"].summary(plan)


def test_a_required_row_azure_cannot_express_still_stops_the_stack():
    catalog, profile, reqs = stack("aks-public", levels=ALL_LEVELS)
    required = [r.model_copy(update={"level": "required"}) if r.destination == MID_LABEL[0] else r for r in reqs]
    with pytest.raises(AzureCompileError, match=r"nodes -> md-\*\.blob\.storage\.azure\.net https/443 \(entries: aks-managed-disks-blob\) "
                                                r"cannot be expressed on Azure Firewall: .*left-most label\. Fix: add a supported alternative"):
        TARGETS["azure"].compile(catalog, profile, required, "stack")


def test_with_the_fqdn_tag_the_tag_stands_for_the_core_wildcards_so_nothing_is_left_out():
    catalog, profile, reqs = stack("aks-public", levels=ALL_LEVELS, azure_fqdn_tag=True)
    plan, files, enforced, verdict = _compiled("azure", catalog, profile, reqs)
    assert plan.left_out == () and "azure/left-out.txt" not in files
    assert {r.destination for r in enforced} >= set(MID_LABEL) and verdict.missing == ()


def test_aws_leaves_them_out_of_the_rule_groups_and_security_groups():
    # AKS on AWS without the add-ons whose rows are Azure service tags (those are required: they would stop the stack)
    for form in ("suricata", "domain-list"):
        catalog, profile, reqs = stack("aks-public", levels=ALL_LEVELS, features=("pod-api-access", "csi-secret-store", "defender"),
                                       targets=("aws",), aws_network_firewall_rules=form)
        plan, files, enforced, verdict = _compiled("aws", catalog, profile, reqs)
        assert _left_out(files, "aws/left-out.txt") == MID_LABEL
        assert {n.reason for n in plan.left_out} == {f"{d} https/443: Network Firewall matches a name exactly or by its subdomains ('*.x'), "
                                                     "not '*' inside a label" for d in MID_LABEL}
        assert "md-" not in files["aws/rules.suricata"] and "umsa" not in files["aws/rules.suricata"]
        assert not {r.destination for r in enforced} & set(MID_LABEL) and verdict.missing == ()
        assert "left out: 2 requirement(s) this target cannot express (aws/left-out.txt):" in TARGETS["aws"].summary(plan)


def test_aws_still_stops_on_a_required_row_it_cannot_express():
    catalog, profile, reqs = stack("aks-public", levels=ALL_LEVELS, features=("pod-api-access",), targets=("aws",))
    required = [r.model_copy(update={"level": "required"}) if r.destination == MID_LABEL[1] else r for r in reqs]
    with pytest.raises(AwsCompileError, match=r"umsa\*\.blob\.core\.windows\.net https/443: Network Firewall matches a name exactly .* "
                                              r"Fix: add a supported alternative to the matrix entry"):
        TARGETS["aws"].compile(catalog, profile, required, "stack")


def test_the_egress_proxy_leaves_them_out_of_squid_conf_with_a_note():
    catalog, profile, reqs = stack("dev", levels=ALL_LEVELS)
    plan, files, enforced, verdict = _compiled("kubernetes", catalog, profile, reqs)
    assert _left_out(files, "kubernetes/left-out.txt") == MID_LABEL
    assert [n.reason for n in plan.egress_proxy.left_out] == [
        f"'{d}' has '*' inside a label; the egress proxy matches a name exactly or by its subdomains ('*.x')" for d in MID_LABEL]
    assert "md-" not in files["kubernetes/squid.conf"] and "umsa" not in files["kubernetes/squid.conf"]
    assert not {r.destination for r in enforced} & set(MID_LABEL) and verdict.missing == ()
    assert not any(d in files.get("kubernetes/not-proxied.txt", "") for d in MID_LABEL)  # left out, not 'not proxied'
    required = [r.model_copy(update={"level": "required"}) if r.destination == MID_LABEL[0] else r for r in reqs]
    with pytest.raises(EgressProxyCompileError, match=r"'md-\*\.blob\.storage\.azure\.net' has '\*' inside a label.*Fix: give the matrix entry"):
        TARGETS["kubernetes"].compile(catalog, profile, required, "stack")


@pytest.mark.parametrize("name", sorted(open_project(ROOT).stacks()))
def test_every_example_stack_compiles_its_targets_with_every_level(name):
    """Each stack's own targets, with levels [required, recommended, optional]: whatever is left out is not required and
    has its note; everything enforced is allowed by the render."""
    catalog, profile, reqs = stack(name, levels=ALL_LEVELS)
    for target in profile.targets:
        plan, files, enforced, verdict = _compiled(target, catalog, profile, reqs)
        left = files.get(f"{target}/left-out.txt", "").splitlines()[1:]
        assert all(line.rsplit(" [", 1)[1].startswith(("optional]", "recommended]")) for line in left)
        assert verdict.missing == (), (target, verdict.missing[:3])


def test_the_program_deploys_with_every_level_and_the_completeness_policies_demand_nothing_left_out():
    from egress_policies import POLICIES
    from egress_preview.pack import run_pack
    from egress_preview.program import run_program, stack_config

    config, secrets = stack_config(ROOT / "stacks" / "Pulumi.dev.yaml")
    config["egress-matrix:levels"] = json.dumps(list(ALL_LEVELS))
    recorded = run_program(ROOT, "dev", config=config, secret_keys=secrets)  # before: AzureCompileError on md-*
    policies = [p for p in POLICIES if p.name in ("required-egress-complete", "required-egress-complete-before-write")]
    assert len(policies) == 2
    assert run_pack(recorded, None, policies) == []
