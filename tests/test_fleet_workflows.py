"""Issue 22, item 2 (acceptance): adding a stack is adding its file. The workflows' per-stack jobs take their matrix from
their `stacks` job (`egress stacks`), run here as GitHub runs it, in a copy of the project with one more stack file and
the workflows untouched; stacks on one Azure Firewall Policy land in one concurrency group, one at a time."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from workflow_checks import DEPLOY_JOBS, ROOT, check_names, expand, fleet_tree, matrix_entries, parse_workflow, run_setup

HUB = "/subscriptions/11111111-1111-1111-1111-111111111111/resourceGroups/rg-hub/providers/Microsoft.Network/firewallPolicies/fwp-hub-westeurope"
NEW_SPOKE = f"""\
# A third cluster on the hub policy, in its own band.
config:
  egress-matrix:platforms: [aks]
  egress-matrix:cloud: azure-public
  egress-matrix:location: westeurope
  egress-matrix:clusterName: orders
  egress-matrix:nodeSources: [10.41.16.0/20]
  egress-matrix:targets: [azure]
  egress-matrix:azurePolicyId: {HUB.replace('rg-hub', 'RG-HUB')}
  egress-matrix:azurePriorityBase: 6000
  egress-matrix:azureResourceGroup: rg-orders-egress
  egress-matrix:azureSubscriptionId: 44444444-4444-4444-4444-444444444444
"""
WORKFLOWS = ("offline-checks.yml", "pulumi-preview.yml", "pulumi-up.yml")


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    directory = fleet_tree(tmp_path_factory.mktemp("fleet"))
    (directory / "stacks" / "Pulumi.aks-orders.yaml").write_text(NEW_SPOKE)
    return directory


def workflow(tree: Path, name: str) -> dict:
    return parse_workflow((tree / ".github" / "workflows" / name).read_text())


def test_a_new_stack_file_is_in_every_per_stack_job_with_no_workflow_edit(tree):
    for name in WORKFLOWS:  # the copy's workflows are this repository's, byte for byte
        assert (tree / ".github" / "workflows" / name).read_text() == (ROOT / ".github" / "workflows" / name).read_text()
    for name, job_ids in (("offline-checks.yml", ["preview", "diff"]), ("pulumi-preview.yml", ["preview"])):
        outputs = run_setup(tree, name)
        for job_id in job_ids:
            stacks = [entry["stack"] for entry in matrix_entries(workflow(tree, name)["jobs"][job_id], outputs)]
            assert "aks-orders" in stacks and "aks-spoke" in stacks and len(stacks) == 13, (name, job_id, stacks)
    # Branch protection's names for it (docs/CI.md lists them with <stack>).
    names = check_names({name: workflow(tree, name) for name in WORKFLOWS}, run_setup(tree, "offline-checks.yml"))
    assert {"preview (aks-orders)", "diff (aks-orders)", "pulumi preview (aks-orders)"} <= set(names)


def deploy_matrix(tree: Path, inputs: dict[str, str] | None = None) -> dict[str, list[dict]]:
    """{deploy job: its matrix entries with the concurrency group each gets} of pulumi-up.yml on a push (or a manual run)."""
    up = workflow(tree, "pulumi-up.yml")
    outputs = run_setup(tree, "pulumi-up.yml", inputs)
    return {job_id: [{**entry, "group": expand(up["jobs"][job_id]["concurrency"]["group"], entry)}
                     for entry in matrix_entries(up["jobs"][job_id], outputs)] for job_id in DEPLOY_JOBS}


def test_stacks_on_one_policy_share_one_concurrency_group_and_run_one_at_a_time(tree):
    jobs = deploy_matrix(tree)
    stacks = {entry["stack"]: (job_id, entry["group"]) for job_id, entries in jobs.items() for entry in entries}
    assert len(stacks) == 13 and sum(len(entries) for entries in jobs.values()) == 13  # every stack, each once
    assert [e["stack"] for e in jobs["non-production"]] == ["dev"]
    # The three stacks on the hub policy (one spells its resource group in capitals: Azure ids are case-insensitive).
    hub = "egress-policy-azure-11111111-1111-1111-1111-111111111111-rg-hub-fwp-hub-westeurope"
    assert [e["stack"] for e in jobs["production-shared-policy"]] == ["aks-contoso", "aks-orders", "aks-spoke"]
    assert {stacks[s] for s in ("aks-contoso", "aks-orders", "aks-spoke")} == {("production-shared-policy", hub)}
    up = workflow(tree, "pulumi-up.yml")
    assert up["jobs"]["production-shared-policy"]["strategy"]["max-parallel"] == 1
    # The others: each in its own group, in parallel.
    parallel = [e["group"] for e in jobs["production"]]
    assert len(set(parallel)) == len(parallel) == 9 and "egress-policy-stack-kkp" in parallel
    assert "max-parallel" not in up["jobs"]["production"]["strategy"]


def test_a_manual_run_updates_the_chosen_stack_only(tree):
    assert deploy_matrix(tree, {"stack": "aks-orders"}) == {
        "non-production": [], "production": [],
        "production-shared-policy": [{"stack": "aks-orders", "lock": "azure-11111111-1111-1111-1111-111111111111-rg-hub-fwp-hub-westeurope",
                                      "group": "egress-policy-azure-11111111-1111-1111-1111-111111111111-rg-hub-fwp-hub-westeurope"}]}
    assert [e["stack"] for e in deploy_matrix(tree, {"stack": "dev"})["non-production"]] == ["dev"]
    err = " ".join(run_setup(tree, "pulumi-up.yml", {"stack": "aks-order"}, fails=True).split())
    assert "stack 'aks-order' not found" in err and "Fix: use one of: aks-china, aks-contoso" in err and "aks-orders" in err


def test_overlapping_bands_fail_the_stacks_jobs(tmp_path):
    directory = fleet_tree(tmp_path)
    (directory / "stacks" / "Pulumi.aks-orders.yaml").write_text(NEW_SPOKE.replace("azurePriorityBase: 6000", "azurePriorityBase: 3100"))
    for name in ("offline-checks.yml", "pulumi-up.yml"):
        err = " ".join(run_setup(directory, name, fails=True).split())
        assert "stacks 'aks-contoso' and 'aks-orders' write rule collection groups to one Firewall Policy" in err, err
    # The PR preview's list does not judge the fleet (offline-checks' required `stacks` does): it still lists every stack.
    assert len(json.loads(run_setup(directory, "pulumi-preview.yml")["stacks"])) == 13
