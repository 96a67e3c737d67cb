"""egress init: a commented stack file per platform/cloud, read back as every command reads it, never over a stack file
without --force, on a shared policy in a band of its own. Always in a copy of the project (never the repo's stacks/)."""
from __future__ import annotations

import io
import json
import re
import sys

import pytest
import yaml

from egress.project import Project

POLICY = "/subscriptions/11111111-1111-1111-1111-111111111111/resourceGroups/rg-hub/providers/Microsoft.Network/firewallPolicies/fwp-hub-westeurope"

# Every platform/cloud combination init offers questions for, with the answers a user would pass.
COMBINATIONS = {
    "aks-public-azure": ["-p", "aks", "--location", "westeurope", "--target", "azure", "--node-sources", "10.40.16.0/20", "--resource-group", "rg-a", "--subscription-id", "00000000-0000-0000-0000-000000000000",
                         "--feature", "azure-monitor"],
    "aks-china": ["-p", "aks", "--cloud", "AzureChinaCloud", "--location", "China East 2"],
    "aks-usgov-azure": ["-p", "aks", "--cloud", "azure-usgov", "--location", "usgovvirginia", "--target", "azure", "--node-sources", "10.20.16.0/20",
                        "--resource-group", "rg-gov", "--subscription-id", "00000000-0000-0000-0000-000000000000"],
    "aks-proxy": ["-p", "aks", "--location", "westeurope", "--target", "kubernetes", "--http-proxy", "http://proxy.corp.example.com:8080",
                  "--set", "podCidrs=[10.244.0.0/16]", "--set", "serviceCidrs=[10.0.0.0/16]", "--node-sources", "10.50.0.0/22"],
    "aks-datadog-flux": ["-p", "aks,datadog", "-p", "flux", "--location", "westeurope", "--set", "datadogSite=datadoghq.eu"],
    "aks-argocd": ["-p", "aks", "-p", "argocd", "--location", "northeurope"],
    "ocp-vsphere": ["-p", "openshift", "--openshift-platform", "vsphere", "--base-domain", "example.com", "--set", "vsphereEndpoints=[vcenter.example.com]",
                    "--target", "kubernetes", "--http-proxy", "http://proxy.corp.example.com:3128", "--set", "serviceCidrs=[172.30.0.0/16]",
                    "--set", "podCidrs=[10.128.0.0/14]"],
    "ocp-aws": ["-p", "openshift", "--openshift-platform", "AWS", "--base-domain", "example.com", "--region", "eu-west-1", "--target", "aws",
                "--node-sources", "10.0.0.0/16"],
    "ocp-baremetal": ["-p", "openshift", "--openshift-platform", "baremetal", "--base-domain", "example.com"],
    "ocp-none": ["-p", "openshift", "--openshift-platform", "none", "--base-domain", "example.com"],
    "ocp-nutanix": ["-p", "openshift", "--openshift-platform", "nutanix", "--base-domain", "example.com", "--set", "nutanixPrismCentral=prism.example.com:9440"],
    "kkp-aws": ["-p", "kkp", "--feature", "kkp-aws", "--feature", "kubeone", "--region", "eu-west-1", "--target", "aws", "--node-sources", "10.60.0.0/16"],
    "kkp-proxy": ["-p", "kkp", "--target", "kubernetes", "--http-proxy", "http://proxy.corp.example.com:3128", "--set", "kkpSeed=kubermatic",
                  "--set", "kkpDatacenter=vsphere-de"],
    "ibm-vpc": ["-p", "ibm-vpc", "--region", "us-south"],
}


def _init(run_cli, project, *args):
    return run_cli("init", *args, "--no-input", "--project", str(project))


@pytest.mark.parametrize("name", sorted(COMBINATIONS))
def test_every_combination_writes_a_stack_every_command_reads(name, project_copy, run_cli):
    combination, name = name, f"new-{name}"  # not a stack of the repo
    before = sorted(p.name for p in (project_copy / "stacks").iterdir())
    code, out, err = _init(run_cli, project_copy, name, *COMBINATIONS[combination])
    assert code == 0, err
    path = project_copy / "stacks" / f"Pulumi.{name}.yaml"
    assert f"wrote stacks/Pulumi.{name}.yaml" in out and f"egress preview --stack {name}" in out and f"pulumi stack init {name}" in out
    after_next = out.split("next:\n", 1)[1].splitlines()
    assert len({line.index("  # ") for line in after_next}) == 1, after_next  # the next commands' comments line up
    assert sorted(p.name for p in (project_copy / "stacks").iterdir()) == sorted([*before, path.name])  # no temporary left behind
    text = path.read_text()
    lines = text.splitlines()
    assert lines[0].startswith(f"# Stack '{name}': ")
    settings = [i for i, line in enumerate(lines) if re.match(r"  (egress-matrix|aws):\w+: ", line)]
    assert settings and all(lines[i - 1].startswith("  # ") for i in settings)  # every setting under its comment
    _catalog, profile, requirements = Project(project_copy).requirements(name)
    assert requirements and profile.stack == name
    if profile.targets:
        code, _out, err = run_cli("render", "--stack", name, "--out", str(project_copy / "out"), "--project", str(project_copy))
        assert code == 0, err
    code, _out, err = run_cli("stacks", "check", "--project", str(project_copy))
    assert code == 0, err


def test_features_are_listed_commented_and_the_chosen_ones_on(project_copy, run_cli):
    code, _out, err = _init(run_cli, project_copy, "aks-x", *COMBINATIONS["aks-public-azure"])
    assert code == 0, err
    text = (project_copy / "stacks" / "Pulumi.aks-x.yaml").read_text()
    assert "  #   defender (aks): Microsoft Defender for Containers" in text
    assert "  egress-matrix:features: [azure-monitor]" in text
    assert "  # egress-matrix:azureFirewallId: <resource id of the Azure Firewall>" in text  # a placeholder left to fill
    assert "egress-matrix:location: westeurope" in text
    config = yaml.safe_load(text)["config"]
    assert "egress-matrix:azureFirewallId" not in config and config["egress-matrix:clusterName"] == "aks-x"


def test_the_same_answers_give_the_same_bytes(project_copy, run_cli, tmp_path_factory):
    other = tmp_path_factory.mktemp("again")
    import shutil

    for name in ("Pulumi.yaml", "matrix", "stacks", "teams"):
        (shutil.copytree if (project_copy / name).is_dir() else shutil.copy)(project_copy / name, other / name)
    for root in (project_copy, other):
        assert _init(run_cli, root, "same", *COMBINATIONS["ocp-vsphere"])[0] == 0
    assert (project_copy / "stacks/Pulumi.same.yaml").read_bytes() == (other / "stacks/Pulumi.same.yaml").read_bytes()


def test_an_existing_stack_file_is_never_overwritten(project_copy, run_cli):
    path = project_copy / "stacks" / "Pulumi.aks-spoke.yaml"
    before = path.read_bytes()
    code, out, err = _init(run_cli, project_copy, "aks-spoke", "-p", "aks", "--location", "westeurope")
    message = " ".join(err.split())
    assert code == 1 and out == "" and path.read_bytes() == before
    assert ("stacks/Pulumi.aks-spoke.yaml: stack 'aks-spoke' already exists; egress init never overwrites a stack file. Fix: choose another "
            "stack name, or pass --force to replace it") in message


def test_force_replaces_and_shows_what_it_replaced(project_copy, run_cli):
    path = project_copy / "stacks" / "Pulumi.aks-spoke.yaml"
    code, out, err = _init(run_cli, project_copy, "aks-spoke", "-p", "aks", "--location", "northeurope", "--force")
    assert code == 0, err
    assert "-  egress-matrix:location: westeurope" in err and "+  egress-matrix:location: northeurope" in err
    assert "northeurope" in path.read_text()


def test_a_refused_draft_leaves_nothing(project_copy, run_cli):
    # OpenShift on AWS needs awsRegion (a row of its own); without a terminal that is one error naming --region
    code, out, err = _init(run_cli, project_copy, "ocp-x", "-p", "openshift", "--openshift-platform", "AWS", "--base-domain", "example.com")
    assert code == 1 and "Fix: pass --region" in " ".join(err.split())
    assert not list((project_copy / "stacks").glob("*ocp-x*"))


def test_a_row_found_only_by_resolving_is_named_with_its_option(project_copy, run_cli):
    # kkp-aws rows need awsRegion: no template says so, resolving the draft does
    code, out, err = _init(run_cli, project_copy, "kkp-x", "-p", "kkp", "--feature", "kkp-aws")
    message = " ".join(err.split())
    assert code == 1 and "egress-matrix:awsRegion" in message and "Fix: pass --region (egress init wrote nothing)" in message
    assert not (project_copy / "stacks" / "Pulumi.kkp-x.yaml").exists()


def test_a_stack_on_a_shared_policy_gets_a_free_band(project_copy, run_cli):
    code, _out, err = _init(run_cli, project_copy, "aks-orders", "-p", "aks", "--location", "westeurope", "--target", "azure", "--node-sources",
                            "10.41.16.0/20", "--resource-group", "rg-orders", "--subscription-id", "22222222-2222-2222-2222-222222222222", "--azure-policy-id", POLICY)
    assert code == 0, err
    text = (project_copy / "stacks" / "Pulumi.aks-orders.yaml").read_text().replace("\n  # ", " ")  # comments unwrapped
    assert "egress-matrix:azurePriorityBase: 5300" in text and "the first band above 5200" in text
    code, out, err = run_cli("stacks", "check", "--project", str(project_copy))
    assert code == 0, err
    code, out, err = run_cli("stacks", "--format", "json", "--project", str(project_copy))
    doc = json.loads(out)
    serial = {entry["stack"] for entry in doc["deploy"]["serial"]}
    assert {"aks-orders", "aks-spoke", "aks-contoso"} <= serial


def test_a_band_given_that_overlaps_is_refused(project_copy, run_cli):
    code, _out, err = _init(run_cli, project_copy, "aks-orders", "-p", "aks", "--location", "westeurope", "--target", "azure", "--node-sources",
                            "10.41.16.0/20", "--resource-group", "rg-orders", "--subscription-id", "22222222-2222-2222-2222-222222222222", "--azure-policy-id", POLICY, "--priority-base", "2000")
    message = " ".join(err.split())
    assert code == 1 and "overlapping priority bands" in message and "(egress init wrote nothing)" in message
    assert "Fix: leave out --priority-base (init then takes the first free band) or give one above every other stack's, e.g. 5300" in message
    assert not (project_copy / "stacks" / "Pulumi.aks-orders.yaml").exists()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_questions_in_a_terminal_fill_what_is_missing(project_copy, run_cli, monkeypatch):
    # stack name, platforms, cloud (Enter: the default), location
    monkeypatch.setattr(sys, "stdin", _Terminal("aks-asked\naks\n\nWest Europe\n"))
    code, out, err = run_cli("init", "--project", str(project_copy))
    assert code == 0, err
    config = yaml.safe_load((project_copy / "stacks" / "Pulumi.aks-asked.yaml").read_text())["config"]
    assert config["egress-matrix:cloud"] == "azure-public" and config["egress-matrix:location"] == "westeurope"


def test_no_input_asks_nothing_even_in_a_terminal(project_copy, run_cli, monkeypatch):
    monkeypatch.setattr(sys, "stdin", _Terminal("westeurope\n"))
    code, out, err = run_cli("init", "aks-y", "-p", "aks", "--no-input", "--project", str(project_copy))
    message = " ".join(err.split())
    assert code == 1 and "egress-matrix:location not answered" in message and "Fix: pass --location" in message


def _corpus_cases_with_absent():
    from pathlib import Path

    cases = yaml.safe_load((Path(__file__).parent / "bad_inputs" / "cases.yaml").read_text())
    return [case for case in cases if case["name"].startswith("init-") and case.get("absent")]


@pytest.mark.parametrize("case", _corpus_cases_with_absent(), ids=lambda case: case["name"])
def test_a_secret_given_to_init_never_reaches_the_output(case, project_copy, run_cli):
    code, out, err = run_cli(*case["command"], "--project", str(project_copy))
    assert code == 1
    for fragment in case["absent"]:
        assert fragment not in out + err
    assert not (project_copy / "stacks" / "Pulumi.new-x.yaml").exists()


def test_the_corpus_has_init_cases_with_absent():
    assert len(_corpus_cases_with_absent()) == 2


# -- a project without stacks/ (review of issue 22, item 7) ------------------------------------------------------------
def _without_stacks(project):
    import shutil

    shutil.rmtree(project / "stacks")
    return project


def test_init_creates_stacks_in_a_new_project(project_copy, run_cli):
    project = _without_stacks(project_copy)
    code, out, err = _init(run_cli, project, "t1", *COMBINATIONS["aks-public-azure"])
    assert code == 0, err  # was a FileNotFoundError traceback
    assert (project / "stacks").is_dir() and not (project / "stacks").is_symlink()
    assert sorted(p.name for p in (project / "stacks").iterdir()) == ["Pulumi.t1.yaml"]


@pytest.mark.parametrize("kind", ["dangling link", "file"])
def test_init_refuses_a_stacks_that_is_no_folder(project_copy, run_cli, tmp_path_factory, kind):
    project = _without_stacks(project_copy)
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "stacks"
    if kind == "file":
        (project / "stacks").write_text("not a folder\n")
    else:
        (project / "stacks").symlink_to(elsewhere)
    code, out, err = _init(run_cli, project, "t1", "-p", "aks", "--location", "westeurope")
    message = " ".join(err.split())
    assert code == 1 and out == "" and "Traceback" not in err
    expected = "stacks/: a symbolic link to" if kind != "file" else "stacks/: not a folder (a file)"
    assert expected in message and "Fix: move it aside" in message, message
    assert not elsewhere.exists()  # no folder created through the link
    assert (project / "stacks").is_symlink() == (kind != "file")


def test_init_writes_through_a_link_to_a_folder(project_copy, run_cli, tmp_path_factory):
    project = _without_stacks(project_copy)
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (project / "stacks").symlink_to(elsewhere)  # the project's stacks/ as every command reads it
    code, out, err = _init(run_cli, project, "t1", "-p", "aks", "--location", "westeurope")
    assert code == 0, err
    assert (elsewhere / "Pulumi.t1.yaml").is_file()


# -- one suggestion rule (egress/suggest.py) and one spelling rule (egress/spellings.py) --------------------------------
def test_set_a_misspelt_secret_is_the_secret(project_copy, run_cli):
    code, out, err = _init(run_cli, project_copy, "new-x", "-p", "aks", "--location", "westeurope", "--set", "proxy_credentials=alice:hunter2")
    message = " ".join(err.split())
    assert code == 1 and "proxyCredentials is a secret and never sits in a stack file" in message, message
    assert "proxyReadinessEndpoints" not in message and "hunter2" not in out + err


def test_init_suggests_as_every_message_does():
    from egress import init
    from egress.suggest import did_you_mean

    assert "get_close_matches" not in open(init.__file__).read()  # no copy of its own
    assert init._did_you_mean("AZURE", init.TARGET_NAMES) == did_you_mean("AZURE", init.TARGET_NAMES, limit=12)
    assert init._openshift_platform("vsphere", "w") == "VSphere" and init._openshift_platform("BAREMETAL", "w") == "BareMetal"


def test_preview_in_a_project_without_the_program_is_one_clear_error(project_copy, run_cli):
    """A project holding only data (Pulumi.yaml, matrix/, stacks/): render works, preview has no program to run."""
    code, out, err = _init(run_cli, project_copy, "new-bare", *COMBINATIONS[sorted(COMBINATIONS)[0]])
    assert code == 0, err
    code, out, err = run_cli("preview", "--stack", "new-bare", "--out", str(project_copy / "out"), "--project", str(project_copy))
    assert code == 1 and out == ""
    assert "__main__.py: no Pulumi program in the project" in err and "Fix: run egress preview in an egress-matrix checkout" in err
    assert "Traceback" not in err
