"""Issue 22, item 5: messages like a good compiler's. All of a stack file's problems at once (numbered, in line order),
did-you-mean for names, no library wording (every constrained Profile field audited), the platforms' own spellings
accepted and normalised alike on the tools' and the program's path, a YAML '*' explained, a pasted private key refused
with the version-control warning."""
from __future__ import annotations

import runpy
from pathlib import Path

import pulumi
import pytest

from egress.catalog import load_catalog
from egress.errors import ProfileError
from egress.profile import PROJECT, Profile, declared_settings, load_profile, profile_from_config, profile_from_pulumi_config
from egress.profile_messages import TEMPLATES
from egress.resolve import check_profile
from egress.stack_file import read_stack_file
from egress.suggest import closest, did_you_mean
from pulumi_harness import settle
from test_program import RecordingMocks, stack_config

ROOT = Path(__file__).resolve().parent.parent
LIBRARY_WORDS = ("Input should", "set a value of type", "pattern", "^", "$", "[a-z", "\\d", "Value error", "valid tuple")


def refused(tmp_path: Path, text: str, stack: str = "t") -> ProfileError:
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError) as info:
        load_profile(path, stack)
    return info.value


# -- all errors at once ------------------------------------------------------------------------------------------------
MANY = """config:
  egress-matrix:platforms: [aks]
  egress-matrix:nodeSource: [10.0.0.0/16]
  egress-matrix:konnectivity: yes
  egress-matrix:azurePriorityBase: 70000
  egress-matrix:sourceGroups: {payments: 10.50.32.0/24}
  egress-matrix:awsNetworkFirewallRules: suricta
  egress-matrix:azurePolicyId: /subscriptions/x/rg
"""


def test_every_problem_of_a_file_is_reported_at_once_in_line_order(tmp_path):
    error = refused(tmp_path, MANY)
    assert [p.field for p in error.problems] == [f"config.{PROJECT}:{key}" for key in (
        "nodeSource", "konnectivity", "azurePriorityBase", "sourceGroups.payments", "awsNetworkFirewallRules", "azurePolicyId")]
    text = str(error)
    assert text.startswith(f"{tmp_path / 'Pulumi.t.yaml'}: 6 problems:\n  1. stack 't', line 3: field 'config.egress-matrix:nodeSource'")
    assert [line.split(".", 1)[0].strip() for line in text.splitlines()[1:]] == ["1", "2", "3", "4", "5", "6"]
    assert all(f"line {n}" in problem.where for n, problem in zip(range(3, 9), error.problems))
    assert error.field == error.problems[0].field  # a caller reading one problem gets the first


def test_a_misspelt_key_does_not_also_report_the_key_as_missing(tmp_path):
    error = refused(tmp_path, "config:\n  egress-matrix:platfroms: [aks]\n")
    assert not error.problems and "did you mean 'egress-matrix:platforms'?" in error.fix


def test_a_setting_refused_by_the_reader_has_no_follow_on_errors(tmp_path):
    # clusterName unreadable (a number where text belongs): targets must not also say "azure needs clusterName"
    error = refused(tmp_path, "config:\n  egress-matrix:platforms: [aks]\n  egress-matrix:clusterName: 2024-01-01\n"
                              "  egress-matrix:targets: [azure]\n  egress-matrix:azurePriorityBase: 1\n")
    assert [p.field.rsplit(":", 1)[1] for p in error.problems] == ["clusterName", "azurePriorityBase"]


def test_the_matrix_checks_report_every_unknown_name_with_its_line(tmp_path):
    path = tmp_path / "Pulumi.t.yaml"
    path.write_text("config:\n  egress-matrix:platforms: [aks, kpp]\n  egress-matrix:cloud: azure-public\n"
                    "  egress-matrix:location: West Eurpoe\n  egress-matrix:features: [azure-monitr]\n")
    profile = load_profile(path, "t")
    with pytest.raises(ProfileError) as info:
        check_profile(load_catalog(ROOT / "matrix"), profile, path, "t")
    fixes = [(p.where, p.fix.split("?")[0]) for p in info.value.problems]
    assert fixes == [("stack 't', line 2", "did you mean 'kkp'"), ("stack 't', line 4", "did you mean 'westeurope'"),
                     ("stack 't', line 5", "did you mean 'azure-monitor'")]


# -- did you mean ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, choices, meant", [
    ("nodeSource", list(declared_settings()), "nodeSources"), ("azure-monitr", ["azure-monitor", "azure-policy"], "azure-monitor"),
    ("kpp", ["aks", "kkp", "openshift"], "kkp"), ("West Europe", ["westeurope", "northeurope"], "westeurope"),
    ("node", ["nodes", "control-plane", "seed"], "nodes"), ("suricta", ["domain-list", "suricata"], "suricata"),
])
def test_close_names_are_suggested(name, choices, meant):
    assert closest(name, choices) == meant
    assert did_you_mean(name, choices).startswith(f"did you mean '{meant}'?")


@pytest.mark.parametrize("name, choices", [("gke", ["aks", "kkp", "openshift"]), ("x", ["nodes", "seed"])])
def test_far_names_are_not_guessed(name, choices):
    assert closest(name, choices) is None and did_you_mean(name, choices).startswith("use one of: ")


def test_a_role_and_an_enum_value_get_a_suggestion(tmp_path):
    error = refused(tmp_path, "config:\n  egress-matrix:platforms: [aks]\n  egress-matrix:awsRoles: [node]\n")
    assert error.problem == "item 0: 'node' is not one of the allowed values" and error.fix.startswith("did you mean 'nodes'?")


# -- no library wording: every constraint of the Profile --------------------------------------------------------------------
def _bad_values() -> dict[str, object]:
    """A value breaking each constrained field's constraint (pattern, bounds, min_length, Literal)."""
    bad: dict[str, object] = {}
    for name, field in Profile.model_fields.items():
        key = field.alias or name
        annotation = str(field.annotation)
        for item in field.metadata:
            if getattr(item, "pattern", None):
                bad[key] = "Not Valid!"
            elif getattr(item, "ge", None) is not None:
                bad[key] = item.ge - 1
            elif getattr(item, "le", None) is not None:
                bad[key] = item.le + 1
            elif getattr(item, "min_length", None):
                bad[key] = () if "tuple" in annotation else "short"
        if "Literal" in annotation and key not in bad and not (field.json_schema_extra or {}).get("structured"):
            bad[key] = ["nonsense"] if "tuple" in annotation else "nonsense"
    return bad


@pytest.mark.parametrize("key, value", sorted(_bad_values().items()))
def test_every_constraint_is_worded_for_people(key, value):
    with pytest.raises(ProfileError) as info:
        profile_from_config({"platforms": ["aks"], key: value}, "f.yaml", "s")
    problems = info.value.problems or (info.value,)
    own = [p for p in problems if p.field == f"config.{PROJECT}:{key}"]
    assert own, str(info.value)
    for problem in own:
        said = f"{problem.problem}. Fix: {problem.fix}"
        assert not any(word in said for word in LIBRARY_WORDS), said


def test_every_pattern_field_has_a_template_and_no_fix_shows_a_regex():
    patterned = {field.alias for field in Profile.model_fields.values() if any(getattr(m, "pattern", None) for m in field.metadata)}
    assert patterned <= set(TEMPLATES), sorted(patterned - set(TEMPLATES))
    assert not any(c in form for _, form in TEMPLATES.values() for c in ("^", "$", "\\", "[a-z"))


def test_a_number_out_of_range_gets_the_range_not_its_type():
    with pytest.raises(ProfileError) as info:
        profile_from_config({"platforms": ["aks"], "azurePriorityBase": 70000}, "f.yaml", "s")
    assert (info.value.problem, info.value.fix) == ("outside the allowed range 400-64000", "write a whole number from 400 to 64000")


def test_a_resource_id_gets_a_template():
    with pytest.raises(ProfileError) as info:
        profile_from_config({"platforms": ["aks"], "azurePolicyId": "/subscriptions/x/rg"}, "f.yaml", "s")
    assert info.value.fix == ("write it as /subscriptions/<subscription-id>/resourceGroups/<group>/providers/Microsoft.Network/"
                              "firewallPolicies/<policy>")


def test_one_value_where_a_list_belongs_inside_an_object_setting():
    with pytest.raises(ProfileError) as info:
        profile_from_config({"platforms": ["aks"], "sourceGroups": {"payments": "10.50.32.0/24"}}, "f.yaml", "s")
    assert (info.value.field, info.value.problem, info.value.fix) == (
        "config.egress-matrix:sourceGroups.payments", "one value where a list belongs", "write a YAML list, e.g. [10.50.32.0/24]")


def test_text_where_a_list_belongs_gets_the_list_written_out(tmp_path):
    error = refused(tmp_path, "config:\n  egress-matrix:platforms: [openshift]\n  egress-matrix:noProxy: .corp.example.com,10.0.0.0/8\n")
    assert error.fix == "write it as a YAML list: [.corp.example.com, 10.0.0.0/8]"


# -- the platforms' own spellings ------------------------------------------------------------------------------------------
SPELLINGS = """config:
  egress-matrix:platforms: [aks, openshift]
  egress-matrix:cloud: azure-public
  egress-matrix:location: West Europe
  egress-matrix:openshiftPlatform: vsphere
  egress-matrix:noProxy: [".corp.example.com, 192.168.0.0/16", vcenter.example.com]
"""


def test_the_platforms_spellings_are_normalised_alike_for_the_tools_and_the_program(tmp_path):
    path = tmp_path / "Pulumi.t.yaml"
    path.write_text(SPELLINGS)
    tools = load_profile(path, "t")
    parsed = read_stack_file(path, "t", project=PROJECT, declared=declared_settings())
    config, _ = parsed.cli_config("[secret]")
    program = profile_from_pulumi_config(lambda key: config.get(f"{PROJECT}:{key}"), "t", keys=config)
    for profile in (tools, program):
        assert (profile.location, profile.openshift_platform) == ("westeurope", "VSphere")
        assert profile.no_proxy == (".corp.example.com", "192.168.0.0/16", "vcenter.example.com")
    check_profile(load_catalog(ROOT / "matrix"), tools, path, "t")  # westeurope is a known location


@pytest.mark.parametrize("written, ours", [("baremetal", "BareMetal"), ("ovirt", "oVirt"), ("none", "None"), ("AWS", "AWS"),
                                           ("powervs", "PowerVS"), ("ibmcloud", "IBMCloud"), ("nutanix", "Nutanix")])
def test_install_config_platform_names_are_read_as_the_infrastructure_type(written, ours):
    assert profile_from_config({"platforms": ["openshift"], "openshiftPlatform": written}, "f", "s").openshift_platform == ours


def test_an_item_without_a_comma_keeps_its_own_white_space_refused():
    with pytest.raises(ProfileError) as info:
        profile_from_config({"platforms": ["openshift"], "noProxy": [".corp.example.com\n"]}, "f", "s")
    assert "white space" in info.value.problem


# -- YAML '*' and pasted keys ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line", ["  egress-matrix:noProxy: [*.example.com]\n", "  egress-matrix:noProxy:\n    - *.example.com\n"])
def test_a_value_starting_with_a_star_is_explained(tmp_path, line):
    error = refused(tmp_path, "config:\n  egress-matrix:platforms: [openshift]\n" + line)
    assert error.field == "config.egress-matrix:noProxy" and error.value == "*.example.com"
    assert "line 3" in error.where or "line 4" in error.where
    assert "YAML reads as an alias" in error.problem and error.fix == "quote it: '*.example.com'"


def test_a_syntax_error_is_said_without_the_parser_s_report(tmp_path):
    error = refused(tmp_path, "config:\n  egress-matrix:platforms: [aks\n")
    assert error.problem.startswith("not valid YAML: ") and "<unicode string>" not in str(error) and "line" in error.where


def test_a_private_key_in_a_setting_that_holds_no_pem_is_refused_with_the_history_warning():
    key = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBb0dy\n-----END EC PRIVATE KEY-----\n"
    with pytest.raises(ProfileError) as info:
        profile_from_config({"platforms": ["openshift"], "proxyReadinessEndpoints": [key]}, "f", "s")
    assert "PEM 'EC PRIVATE KEY' block" in info.value.problem and "MHcCAQEEIBb0dy" not in str(info.value)
    assert "may already be in version control" in info.value.fix and "remove it from the history" in info.value.fix


# -- the program: the same list, nothing registered -----------------------------------------------------------------------
def test_the_program_reports_every_problem_and_registers_nothing(loop, monkeypatch):  # noqa: F811 - the fixture
    monkeypatch.chdir(ROOT)
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack="kkp-aws", preview=False)
    config = stack_config("kkp-aws")
    config["egress-matrix:azurePriorityBase"] = "70000"
    config["egress-matrix:awsNetworkFirewallRules"] = "suricta"
    pulumi.runtime.set_all_config(config)
    with pytest.raises(pulumi.RunError) as info:
        runpy.run_path(str(ROOT / "__main__.py"))
    settle(loop)
    text = str(info.value)
    assert text.startswith("ProfileError: Pulumi config of stack 'kkp-aws': 2 problems:\n  1. ")
    assert "outside the allowed range 400-64000" in text and "did you mean 'suricata'?" in text
    assert mocks.registered == []



# -- what an error about an unknown or foreign setting may quote (review of issue 22) -----------------------------------
@pytest.mark.parametrize("value", ["alice:hunter2", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "http://alice:hunter2@proxy:3128",
                                   "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"])
def test_an_unknown_setting_that_looks_secret_is_not_echoed(tmp_path, value):
    error = refused(tmp_path, f"config:\n  egress-matrix:platforms: [aks]\n  egress-matrix:proxyCreds: \"{value}\"\n")
    assert error.field == "config.egress-matrix:proxyCreds" and error.value == "(hidden)" and "unknown setting" in error.problem
    secret = value.rpartition("@")[0].rpartition(":")[2] if "@" in value else value.partition(":")[2] or value
    assert secret not in str(error)
    with pytest.raises(ProfileError) as info:  # the same through the program's reader
        profile_from_config({"platforms": ["aks"], "proxyCreds": value}, "f", "s")
    assert info.value.value == "(hidden)" and secret not in str(info.value)


@pytest.mark.parametrize("key, value", [("colour", "red"), ("regionX", "proxy.example.com:3128"), ("nodeSource", "10.0.0.0/16")])
def test_an_unknown_setting_is_never_shown(tmp_path, key, value):
    # issue 17 review: 'proxyPasword: Winter2024!' looked like no secret; the value does not help fix an unknown key
    error = refused(tmp_path, f"config:\n  egress-matrix:platforms: [aks]\n  egress-matrix:{key}: {value}\n")
    assert error.value == "(hidden)" and f"'{value}'" not in str(error)


KEY_TEXT = "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAA\\n-----END OPENSSH PRIVATE KEY-----\\n"


@pytest.mark.parametrize("line", [f'  other:sshKey: "{KEY_TEXT}"', f'  aws:notes: ["x", "{KEY_TEXT}"]',
                                  f'  other:deploy: {{key: "{KEY_TEXT}"}}', f'  egress-matrx:proxyKey: "{KEY_TEXT}"',
                                  f'  egress-matrix:entries: [{{id: a, destination: a.example.com, purpose: "{KEY_TEXT}"}}]'])
def test_a_private_key_is_refused_in_any_namespace(tmp_path, line):
    error = refused(tmp_path, f"config:\n  egress-matrix:platforms: [aks]\n{line}\n")
    assert "holds a PEM 'OPENSSH PRIVATE KEY' block (private key material)" in str(error) and "rotate that key" in error.fix
    assert error.value == "(PEM text, not shown)" and "b3BlbnNzaC1rZXktdjEAAAAA" not in str(error)


def test_a_private_key_in_a_yaml_comment_is_not_data(tmp_path):
    # A comment is no value: Pulumi never reads it, so nothing egress writes, shows or deploys can carry it (secret
    # scanning of committed text is a pre-commit scanner's job; see the report of the review of issue 22).
    path = tmp_path / "Pulumi.t.yaml"
    path.write_text("config:\n  # -----BEGIN RSA PRIVATE KEY-----\n  egress-matrix:platforms: [aks]\n  egress-matrix:location: westeurope\n")
    assert load_profile(path, "t").platforms == ("aks",)


def test_a_runs_on_azure_region_takes_the_display_name_too():
    """runsOn's Azure region is normalised like the stack's location: 'West Europe' is westeurope (a wrong one still fails)."""
    from egress.runs_on import Place

    assert Place(cloud="azure", region="West Europe").region == "westeurope"
    assert Place(cloud="aws", region="eu-west-1").region == "eu-west-1"
    with pytest.raises(ValueError, match="is not a region of azure"):
        Place(cloud="azure", region="West-Europe!")
