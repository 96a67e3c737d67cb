"""Source groups on AWS (issue 19): a group's own entries allowed for exactly the group's sources.

The stack (kkp-aws: nodes 10.60.0.0/16, seed, bastion) gets two groups, ``payments`` inside the nodes' CIDR (a node
pool's subnet) and ``batch`` outside every role, with stack entries and a team catalog naming them. Judged by the real
Suricata 7 (AWS Network Firewall's engine, replayed with AWS's default drop), by the AWS evaluator, and under the Pulumi
mocks: one Suricata rule group for every group in its fixed slot before the domain lists, a variable per group, security
groups of their own; adding a group changes no role's resource.
"""
from __future__ import annotations

import importlib
import json
import shutil
import subprocess
from pathlib import Path

import botocore.session
import botocore.validate
import pytest

from egress.addresses import PortRange
from egress.errors import ProfileError
from egress.models import Requirement
from egress.project import open_project
from egress.targets.aws.compile import compile_aws, enforced
from egress.targets.aws.evaluate import RULES_FILE, SECURITY_GROUPS_FILE, evaluate
from egress.targets.aws.groups import variable
from egress.targets.aws.plan import AwsCompileError
from egress.targets.aws.priorities import GROUPS_OFFSET, offset_of_name
from egress.targets.aws.render import render, rule_group_body
from egress.targets.naming import rule_stem

from aws_stacks import FORMS
from suricata_engine import CONFIG, SURICATA, check_rules, needs_suricata, own_files
from suricata_replay import Probe, replay

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = "kkp-eu-west-1"
GROUPS_RULES = f"egress-{CLUSTER}-groups-rules"
PAYMENTS, BATCH, NODE, SEED = "10.60.17.5", "192.168.50.5", "10.60.1.5", "10.61.0.5"  # NODE: a node outside the payments pool
GROUPS = """  egress-matrix:sourceGroups:
    payments: [10.60.17.0/24]
    batch: [192.168.50.0/24]
"""
ENTRIES = """  egress-matrix:catalogs: [teams/payments.yaml]
  egress-matrix:entries:
    - {id: stripe, destination: api.stripe.com, role: payments, purpose: Payments API, owner: team-payments, reference: PAY-123}
    - {id: payments-db, destination: 203.0.113.40/32, protocol: tcp, ports: [5432], role: payments, purpose: Ledger, owner: team-payments, reference: PAY-124}
    - {id: batch-objects, destination: "*.objects.example.net", role: batch, purpose: Objects, owner: team-batch, reference: BAT-1}
    - {id: batch-mirror, destination: mirror.example.org, protocol: http, role: batch, purpose: Mirror, owner: team-batch, reference: BAT-2}
"""
TEAM_CATALOG = """schema: 1
kind: platform
platform: payments
entries:
  - {id: adyen, role: payments, level: required, destination: checkout-test.adyen.com, protocol: https, purpose: Adyen checkout,
     approval: {owner: team-payments, reference: PAY-200}}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("groups")
    shutil.copy(ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    shutil.copytree(ROOT / "matrix", root / "matrix")
    shutil.copytree(ROOT / "stacks", root / "stacks")
    (root / "teams").mkdir()
    (root / "teams" / "payments.yaml").write_text(TEAM_CATALOG)
    return root


def stack_with(project: Path, name: str, config: str):
    """(catalog, profile, requirements) of kkp-aws with ``config`` lines added, as stack ``name``."""
    base = (project / "stacks" / "Pulumi.kkp-aws.yaml").read_text()
    (project / "stacks" / f"Pulumi.{name}.yaml").write_text(base + config)
    return open_project(project).requirements(name)


def plan_of(project: Path, form: str, config: str = GROUPS + ENTRIES, name: str = "groups"):
    catalog, profile, reqs = stack_with(project, name, config)
    profile = profile.model_copy(update={"aws_network_firewall_rules": form})
    return catalog, profile, reqs, compile_aws(catalog, profile, reqs)


def _texts(group) -> set[str]:
    return {rule.text.split(" sid:")[0] for rule in group.rules}


@pytest.mark.parametrize("form", FORMS)
def test_the_groups_share_one_exact_rule_group_in_its_slot_before_every_domain_list(project, form):
    _, _, _, plan = plan_of(project, form)
    by_name = {g.name: g for g in plan.rule_groups}
    group = by_name[GROUPS_RULES]
    assert (group.form, group.role, group.priority) == ("suricata", "", 100 + GROUPS_OFFSET)
    assert group.ip_sets == {"G_BATCH": ("192.168.50.0/24",), "G_PAYMENTS": ("10.60.17.0/24",)}
    assert group.home_net == ("10.60.17.0/24", "192.168.50.0/24")
    assert all(g.priority > group.priority for g in plan.rule_groups if g.form == "domain-list")
    assert offset_of_name(GROUPS_RULES) == GROUPS_OFFSET
    payments, batch = rule_stem("stack", None, "payments"), rule_stem("stack", None, "batch")
    adyen = rule_stem("payments", None, "payments")
    assert _texts(group) == {
        f'pass tls $G_PAYMENTS any -> any 443 (tls.sni; content:"api.stripe.com"; startswith; nocase; endswith; '
        f'msg:"{payments}-https api.stripe.com"; flow:to_server; metadata:egress_entry stack/stripe;',
        f'pass tls $G_PAYMENTS any -> any 443 (tls.sni; content:"checkout-test.adyen.com"; startswith; nocase; endswith; '
        f'msg:"{adyen}-https checkout-test.adyen.com"; flow:to_server; metadata:egress_entry payments/adyen;',
        f'pass tcp $G_PAYMENTS any -> 203.0.113.40/32 5432 (msg:"{payments}-tcp-5432"; flow:to_server; metadata:egress_entry stack/payments-db;',
        f'pass tls $G_BATCH any -> any 443 (tls.sni; content:".objects.example.net"; nocase; endswith; '
        f'msg:"{batch}-https *.objects.example.net"; flow:to_server; metadata:egress_entry stack/batch-objects;',
        f'pass http $G_BATCH any -> any 80 (http.host; content:"mirror.example.org"; startswith; endswith; '
        f'msg:"{batch}-http mirror.example.org"; flow:to_server; metadata:egress_entry stack/batch-mirror;',
    }
    # No role's group carries a group's destination, and no domain list broadens one.
    others = " ".join(g.rules_string + " ".join(g.targets) for g in plan.rule_groups if g.name != GROUPS_RULES)
    assert not any(host in others for host in ("stripe", "adyen", "objects.example.net", "mirror.example.org", "203.0.113.40"))
    assert not [b for b in plan.broadening if b.role in ("payments", "batch")]
    security_groups = {g.name: [(r.protocol, r.from_port, r.cidr, r.description) for r in g.rules] for g in plan.security_groups
                       if g.role in ("payments", "batch")}
    assert security_groups == {
        f"egress-{CLUSTER}-batch-0": [("tcp", 443, "0.0.0.0/0", "egress-matrix stack/batch-objects"),
                                      ("tcp", 80, "0.0.0.0/0", "egress-matrix stack/batch-mirror")],
        f"egress-{CLUSTER}-payments-0": [("tcp", 443, "0.0.0.0/0", "egress-matrix payments/adyen, stack/stripe"),
                                         ("tcp", 5432, "203.0.113.40/32", "egress-matrix stack/payments-db")]}
    # The policy's HOME_NET holds the groups' sources too (its EXTERNAL_NET is everything else).
    assert {"10.60.17.0/24", "192.168.50.0/24"} <= set(plan.policy.home_net)


def test_the_request_bodies_are_what_aws_accepts(project):
    _, _, _, plan = plan_of(project, "suricata")
    model = botocore.session.get_session().get_service_model("network-firewall")
    group = next(g for g in plan.rule_groups if g.name == GROUPS_RULES)
    body = rule_group_body(group)
    report = botocore.validate.ParamValidator().validate(body, model.operation_model("CreateRuleGroup").input_shape)
    assert not report.has_errors(), report.generate_report()
    assert body["RuleGroup"]["RuleVariables"]["IPSets"] == {"G_BATCH": {"Definition": ["192.168.50.0/24"]},
                                                            "G_PAYMENTS": {"Definition": ["10.60.17.0/24"]},
                                                            "HOME_NET": {"Definition": ["10.60.17.0/24", "192.168.50.0/24"]}}
    # The engine's file: each group's variable expanded to its sources, the group's rules in their place.
    rules = render(plan)[RULES_FILE]
    assert f"# {GROUPS_RULES} (priority 1000, suricata, capacity 10)" in rules
    assert "pass tls 10.60.17.0/24 any -> any 443 (tls.sni; content:\"api.stripe.com\";" in rules and "$G_" not in rules


@pytest.mark.engine
@needs_suricata
@pytest.mark.parametrize("form", FORMS)
def test_suricata_loads_the_rules_with_own_ids_in_msg_and_metadata(project, form, tmp_path):
    _, _, _, plan = plan_of(project, form)
    rules = render(plan)[RULES_FILE]
    assert "metadata:egress_entry payments/adyen;" in rules and "metadata:egress_entry stack/stripe;" in rules
    result = check_rules(rules, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    # The rules string as AWS stores it (variables unexpanded) loads too, with the rule group's variables defined.
    group = next(g for g in plan.rule_groups if g.name == GROUPS_RULES)
    result = _load_with_variables(group.rules_string, group.variables, tmp_path / "variables")
    assert result.returncode == 0, result.stdout + result.stderr


def _load_with_variables(rules: str, variables: dict, workdir: Path) -> subprocess.CompletedProcess:
    """``suricata -T`` with the rule group's IP set variables as address groups (what Network Firewall defines)."""
    workdir.mkdir(parents=True)
    groups = {**{name: f"[{','.join(cidrs)}]" for name, cidrs in variables.items()}, "EXTERNAL_NET": "!$HOME_NET"}
    config = CONFIG.replace("  address-groups: {HOME_NET: \"[10.0.0.0/8]\", EXTERNAL_NET: \"!$HOME_NET\"}\n",
                            f"  address-groups: {json.dumps(groups)}\n")
    assert config != CONFIG
    (workdir / "suricata.yaml").write_text(config.replace("LOGS", str(workdir)) + own_files(workdir))
    (workdir / "test.rules").write_text(rules)
    return subprocess.run([SURICATA or "suricata", "-T", "-c", str(workdir / "suricata.yaml"), "-S", str(workdir / "test.rules"),
                           "-l", str(workdir)], capture_output=True, text=True, timeout=120)


def _probes() -> dict[Probe, str]:
    node_hosts = ["cdn.quay.io", "registry.k8s.io"]  # two names the nodes need over TLS (kkp)
    out = {
        Probe("tls", "api.stripe.com", 443, PAYMENTS): "pass",  # the group's own entry
        Probe("tls", "API.Stripe.COM", 443, PAYMENTS): "pass",  # SNI compared without case
        Probe("tls", "checkout-test.adyen.com", 443, PAYMENTS): "pass",  # from the team catalog
        Probe("tls", "api.stripe.com", 443, NODE): "drop",  # a node outside the group: the nodes' CIDR holds the group's
        Probe("tls", "api.stripe.com", 443, SEED): "drop",
        Probe("tls", "api.stripe.com", 443, BATCH): "drop",  # another group
        Probe("tls", "api.stripe.com", 8443, PAYMENTS): "drop",  # a port the entry does not give
        Probe("http", "api.stripe.com", 80, PAYMENTS): "drop",  # plain HTTP was not asked for
        Probe("tls", "xapi.stripe.com", 443, PAYMENTS): "drop",
        Probe("tls", "api.stripe.com.evil.test", 443, PAYMENTS): "drop",
        Probe("tls", "a.api.stripe.com", 443, PAYMENTS): "drop",
        Probe("tls", "x", 5432, PAYMENTS, "203.0.113.40"): "pass",  # the group's address entry
        Probe("tls", "x", 5432, NODE, "203.0.113.40"): "drop",
        Probe("tls", "x", 5432, PAYMENTS, "203.0.113.41"): "drop",
        Probe("tls", "a.objects.example.net", 443, BATCH): "pass",  # subdomains of the wildcard, at any depth
        Probe("tls", "a.b.objects.example.net", 443, BATCH): "pass",
        Probe("tls", "objects.example.net", 443, BATCH): "drop",  # never the apex, in either form
        Probe("tls", "a.objects.example.net", 443, PAYMENTS): "drop",
        Probe("http", "mirror.example.org", 80, BATCH): "pass",
        Probe("http", "mirror.example.org", 80, NODE): "drop",
        Probe("tls", "mirror.example.org", 443, BATCH): "drop",
    }
    for host in node_hosts:
        out[Probe("tls", host, 443, NODE)] = "pass"  # the nodes keep what they need
        out[Probe("tls", host, 443, PAYMENTS)] = "pass"  # the payments pool's nodes are nodes
        out[Probe("tls", host, 443, BATCH)] = "drop"  # a group outside every role gets nothing else
    return out


@pytest.mark.engine
@needs_suricata
@pytest.mark.parametrize("form", FORMS)
def test_the_real_engine_passes_a_groups_entries_for_exactly_its_sources(project, form, tmp_path):
    catalog, profile, reqs, plan = plan_of(project, form)
    assert {"cdn.quay.io", "registry.k8s.io"} <= {r.destination for r in reqs if r.role == "nodes"}
    want = _probes()
    got = replay(render(plan)[RULES_FILE], list(want), tmp_path)  # refuses a drop ordered before a pass it meets
    wrong = [f"{p.protocol} {p.host}:{p.port} from {p.source} to {p.destination}: expected {want[p]}, got {got[p]}" for p in want if got[p] != want[p]]
    assert not wrong, "\n".join(wrong)


@pytest.mark.engine
@needs_suricata
@pytest.mark.parametrize("form", FORMS)
def test_every_requirement_and_its_near_misses_replay_as_promised_with_groups(project, form, tmp_path):
    """The issue-8 replay (tests/test_aws_replay.py) over the stack with groups: its probes come from every role's and
    group's sources; a group's names are exact in either form, so only a role's domain list may pass more."""
    from test_aws_replay import expected, needs, probes, required

    catalog, profile, reqs, plan = plan_of(project, form)
    all_needs = needs(catalog, profile, reqs)
    generated = probes(all_needs)
    assert {n.role for n in all_needs} >= {"payments", "batch"} and "another role's source" in generated.values()
    got = replay(render(plan)[RULES_FILE], list(generated), tmp_path)
    role_needs = [n for n in all_needs if n.role not in profile.source_groups]
    want = {p: "pass" if required(all_needs, p) else expected(form, role_needs, p) for p in generated}
    wrong = [f"{why}: {p.protocol} {p.host}:{p.port} from {p.source}: expected {want[p]}, got {got[p]}" for p, why in generated.items()
             if got[p] != want[p]]
    assert not wrong, "\n".join(wrong)


def test_the_evaluator_finds_every_group_entry_allowed_and_nothing_extra(project):
    for form in FORMS:
        catalog, profile, reqs, plan = plan_of(project, form)
        judged = enforced(catalog, profile, reqs)
        assert {r.role for r in judged} >= {"payments", "batch"}
        verdict = evaluate(render(plan), judged)
        assert verdict.missing == () and verdict.assumed == ()
        # The groups add nothing extra: the same verdict's extra as the stack without them.
        _, bare_profile, bare_reqs, bare = plan_of(project, form, config="", name="bare")
        assert verdict.extra == evaluate(render(bare), enforced(catalog, bare_profile, bare_reqs)).extra


def _nodes_need(reqs, destination: str, port: int = 443, protocol: str = "https") -> Requirement:
    nodes = next(r for r in reqs if r.role == "nodes")
    return Requirement(role="nodes", destination=destination, kind="fqdn", protocol=protocol, ports=(PortRange(port, port),), level="required",
                       purposes=("x",), entry_ids=("stack/stripe",), citations=(), platforms=("stack",), sources=nodes.sources)


@pytest.mark.parametrize("form", FORMS)
def test_the_nodes_do_not_get_a_groups_destination_from_its_rule(project, form):
    catalog, profile, reqs, plan = plan_of(project, form)
    verdict = evaluate(render(plan), [_nodes_need(reqs, "api.stripe.com")])
    (missing,) = verdict.missing
    assert "tls/443 to api.stripe.com" in missing
    assert ("denied by egress-kkp-eu-west-1-nodes-tls-sni" if form == "domain-list" else "no rule passes it") in missing
    # Nor a group outside every role a name only the nodes need: its security group lets TLS out, the firewall drops it.
    batch = next(r for r in reqs if r.role == "batch")
    (missing,) = evaluate(render(plan), [_nodes_need(reqs, "cdn.quay.io").model_copy(update={"role": "batch", "sources": batch.sources})]).missing
    assert "tls/443 to cdn.quay.io" in missing and "no rule passes it" in missing


def test_adding_a_group_changes_no_roles_resource_and_keeps_every_sid(project):
    from test_aws_component import deploy

    one = GROUPS.replace("    batch: [192.168.50.0/24]\n", "") + "\n".join(line for line in ENTRIES.splitlines() if "role: batch" not in line) + "\n"
    *_, before = plan_of(project, "suricata", config=one, name="one-group")
    *_, after = plan_of(project, "suricata", name="two-groups")
    old = {(r["type"], r["name"]): r["inputs"] for r in deploy(before)[0]}
    new = {(r["type"], r["name"]): r["inputs"] for r in deploy(after)[0]}
    assert not set(old) - set(new)
    added = sorted(name for kind, name in set(new) - set(old))
    assert added == [f"egress-{CLUSTER}-batch-0", f"egress-{CLUSTER}-batch-0-tcp-443-0.0.0.0_0", f"egress-{CLUSTER}-batch-0-tcp-80-0.0.0.0_0"]
    changed = sorted(key[1] for key in old if old[key] != new[key])
    # The one rule group all groups share, and the created policy's HOME_NET (batch's sources are new to it).
    assert changed == [f"egress-{CLUSTER}", GROUPS_RULES]
    sids = {rule.key: rule.sid for g in before.rule_groups for rule in g.rules}
    assert all(sids.get(rule.key, rule.sid) == rule.sid for g in after.rule_groups for rule in g.rules)


def test_a_group_name_too_long_for_a_variable_is_one_clear_error(project):
    long = "payments-eu-west-1a-settlement-x"  # 32 characters: G_ + 32 is over AWS's 32
    assert len(variable("a" * 30)) == 32
    entries = "\n".join(line for line in ENTRIES.splitlines() if "catalogs" not in line) + "\n"  # the team catalog names 'payments'
    config = GROUPS.replace("payments:", f"{long}:") + entries.replace("role: payments", f"role: {long}")
    with pytest.raises(AwsCompileError) as error:
        plan_of(project, "suricata", config=config, name="long-group")
    assert str(error.value) == (
        f"egress-matrix:sourceGroups: group '{long}' (32 characters) would be the Network Firewall IP set variable "
        f"G_PAYMENTS_EU_WEST_1A_SETTLEMENT_X, 34 characters, over the 32 AWS allows. Fix: name the group with at most 30 characters "
        "in egress-matrix:sourceGroups and in the entries that name it")


def test_security_group_counts_take_a_group_and_refuse_a_name_that_is_neither(project):
    _, _, _, plan = plan_of(project, "suricata", config=GROUPS + ENTRIES + "  egress-matrix:awsSecurityGroupCounts: [payments=2]\n", name="counts")
    assert [(g.name, g.attached, len(g.rules)) for g in plan.security_groups if g.role == "payments"] == [
        (f"egress-{CLUSTER}-payments-0", True, 2), (f"egress-{CLUSTER}-payments-1", False, 0)]
    with pytest.raises(ProfileError) as error:
        stack_with(project, "counts-typo", GROUPS + "  egress-matrix:awsSecurityGroupsAttached: [nodes=1, payment=2]\n")
    message = str(error.value)
    assert "config.egress-matrix:awsSecurityGroupsAttached" in message and "'payment=2'" in message
    assert "item 1: 'payment' is neither a role nor a source group of the stack" in message and "(the stack's: batch, payments)" in message


def test_aws_platforms_filters_vendor_platforms_and_keeps_own_catalogs_unless_it_names_some(project):
    catalog, profile, reqs = stack_with(project, "platforms", GROUPS + ENTRIES)

    def ids(**settings) -> set[str]:
        return {i for r in enforced(catalog, profile.model_copy(update=settings), reqs) for i in r.entry_ids if "/" in i}

    everything = {"stack/stripe", "stack/payments-db", "stack/batch-objects", "stack/batch-mirror", "payments/adyen"}
    assert ids() == everything
    assert ids(aws_platforms=("kkp",)) == everything  # a vendor filter leaves the own catalogs enforced
    assert ids(aws_platforms=("kkp", "payments")) == {"payments/adyen"}  # naming an own catalog keeps only the named ones
    vendor = {i for r in enforced(catalog, profile.model_copy(update={"aws_platforms": ("stack",)}), reqs) for i in r.entry_ids if "/" not in i}
    assert vendor and vendor == {i for r in enforced(catalog, profile, reqs) for i in r.entry_ids if "/" not in i}


def test_the_artefacts_read_back_from_the_resources_are_the_rendered_ones(project):
    from egress.deployed import DeployedResource
    from components.engine_values import engine_numbers
    from egress.targets.aws.deployed import RULE_GROUP_TYPE, SECURITY_GROUP_TYPE, artefacts
    from test_aws_component import ACCOUNT, deploy

    _, _, _, plan = plan_of(project, "domain-list")
    registrations, _ = deploy(plan)

    def outputs(r: dict) -> dict:  # what the mocks give back: a rule group's ARN, a security group's id
        if r["type"] == RULE_GROUP_TYPE:
            return {"arn": f"arn:aws:network-firewall:eu-central-1:{ACCOUNT}:stateful-rulegroup/{r['name']}-abc1234"}
        return {"id": f"{r['name']}-id"} if r["type"] == SECURITY_GROUP_TYPE else {}

    resources = [DeployedResource(type=r["type"], name=r["name"], urn=r["urn"], props={**engine_numbers(r["inputs"]), **outputs(r)},
                                  parent=r["parent"]) for r in registrations]
    read = artefacts(resources)
    rendered = render(plan)
    # Without a policy the groups run in their fixed slots; the group's variables are defined in its own rule group.
    without_policy = artefacts([r for r in resources if not r.type.endswith("FirewallPolicy")])
    for files in (read, without_policy):
        assert files[RULES_FILE] == rendered[RULES_FILE]
    def groups(text: str) -> dict:  # permissions as a set per group (the read-back lists them by resource name)
        return {g["GroupName"]: (g["Role"], sorted(json.dumps(p, sort_keys=True) for p in g["IpPermissionsEgress"]))
                for g in json.loads(text)["SecurityGroups"]}

    assert groups(read[SECURITY_GROUPS_FILE]) == groups(rendered[SECURITY_GROUPS_FILE])
    assert groups(read[SECURITY_GROUPS_FILE])[f"egress-{CLUSTER}-payments-0"][0] == "payments"
    assert read[f"aws/rule-groups/{GROUPS_RULES}.json"] == rendered[f"aws/rule-groups/{GROUPS_RULES}.json"]


def _stopping(violations) -> list[tuple[str, str, str]]:
    return [(v.policy, v.resource, v.message) for v in violations if v.level == "mandatory" or "during preview:" in v.message]


@pytest.fixture
def program(project, monkeypatch) -> Path:
    """The project with the program, run where it is (the pack finds the stack's own catalogs from there)."""
    shutil.copy(ROOT / "__main__.py", project / "__main__.py")
    monkeypatch.syspath_prepend(str(ROOT))  # components/, as the program's folder would give them
    monkeypatch.chdir(project)
    stack_with(project, "groups-pack", GROUPS + ENTRIES)
    return project


def test_the_pack_judges_a_groups_resources_at_a_first_preview_and_after_up(program):
    from egress_preview.pack import run_pack
    from egress_preview.program import run_program

    for phase in ("preview", "up"):
        recorded = run_program(program, "groups-pack", phase=phase)
        assert {GROUPS_RULES, f"egress-{CLUSTER}-payments-0", f"egress-{CLUSTER}-batch-0"} <= {r.name for r in recorded.resources}
        assert _stopping(run_pack(recorded)) == []


def test_the_pack_reports_a_group_entry_its_rule_group_no_longer_allows(program, monkeypatch):
    import components.aws_network_firewall
    from egress_preview.pack import run_pack
    from egress_preview.program import run_program

    original = components.aws_network_firewall.rule_group_body

    def without_stripe(group):
        body = original(group)
        source = body["RuleGroup"]["RulesSource"]
        if "RulesString" in source:
            source["RulesString"] = "".join(line + "\n" for line in source["RulesString"].splitlines() if "api.stripe.com" not in line)
        return body

    monkeypatch.setattr(components.aws_network_firewall, "rule_group_body", without_stripe)
    stopping = _stopping(run_pack(run_program(program, "groups-pack")))
    assert stopping and all("payments -> api.stripe.com https/443 (entries: stack/stripe" in message for _, _, message in stopping)
    assert {policy for policy, _, _ in stopping} == {"required-egress-complete", "required-egress-complete-before-write"}
    assert ("required-egress-complete-before-write", f"aws:networkfirewall/ruleGroup:RuleGroup '{GROUPS_RULES}'") in {s[:2] for s in stopping}


@pytest.mark.parametrize("form", FORMS)
def test_the_evaluator_reads_the_groups_rules_as_the_per_source_oracle_does(project, form):
    """The evaluator meets only the rules a flow can match (RuleIndex) and finds the requirements a rule serves by name
    (extra.Needed); the oracle walks every rule for every source and every requirement for every rule."""
    import per_source_oracle as oracle

    catalog, profile, reqs, plan = plan_of(project, form)
    files = render(plan)
    judged = enforced(catalog, profile, reqs)
    nodes = next(r for r in reqs if r.role == "nodes")
    outside = [_nodes_need(reqs, "api.stripe.com"), _nodes_need(reqs, "a.objects.example.net"), _nodes_need(reqs, "objects.example.net", 80, "http"),
               nodes.model_copy(update={"role": "payments", "sources": ("10.60.17.0/24", "10.60.18.0/24")})]
    for requirements in (judged, [*judged, *outside]):
        assert evaluate(files, requirements) == oracle.aws_evaluate(files, requirements)


def _many_entries(count: int) -> str:
    lines = ["  egress-matrix:sourceGroups:"] + [f"    team-{g}: [10.{100 + g}.0.0/24]" for g in range(10)] + ["  egress-matrix:entries:"]
    lines += [f"    - {{id: e-{i}, destination: svc-{i}.team-{i % 10}.example.com, role: team-{i % 10}, purpose: p, owner: o, reference: R-{i}}}"
              for i in range(count)]
    return "\n".join(lines) + "\n"


def test_judging_thousands_of_group_entries_walks_only_the_rules_each_flow_can_meet(project, monkeypatch):
    """Work grows with the entries, not with entries x rules (a source group's entries are exact rules, thousands of them)."""
    evaluate_module = importlib.import_module("egress.targets.aws.evaluate")  # the package's 'evaluate' is a function
    work = []
    for count in (200, 800):
        catalog, profile, reqs, plan = plan_of(project, "suricata", config=_many_entries(count), name=f"many-{count}")
        files, judged = render(plan), enforced(catalog, profile, reqs)
        calls = [0]
        original = evaluate_module._covers_destination

        def counted(rule, flow):
            calls[0] += 1
            return original(rule, flow)

        monkeypatch.setattr(evaluate_module, "_covers_destination", counted)
        verdict = evaluate(files, judged)
        monkeypatch.undo()
        assert verdict.missing == () and len(judged) > count
        work.append(calls[0])
    assert work[1] < 5 * work[0], work  # 4x the entries: about 4x the work (quadratic would be 16x)


def test_the_groups_spread_over_more_rule_groups_only_when_one_cannot_hold_them(project, monkeypatch):
    """A rule group holds 2,000,000 bytes of rules (~7,500 rules): past that the groups spread over the fewest rule groups
    that hold them, each group whole in one, by linear hashing of its name, each in its own slot before the domain lists."""
    groups_module = importlib.import_module("egress.targets.aws.groups")
    catalog, profile, reqs, one = plan_of(project, "domain-list", config=_many_entries(40), name="spread")
    (single,) = [g for g in one.rule_groups if g.role == ""]
    assert single.name == GROUPS_RULES and len(single.ip_sets) == 10
    limit = len(single.rules_string.encode()) * 2 // 3
    monkeypatch.setattr(groups_module, "MAX_RULES_STRING_BYTES", limit)
    plan = compile_aws(catalog, profile, reqs)
    shards = [g for g in plan.rule_groups if g.role == ""]
    assert len(shards) >= 2 and shards[0].name == GROUPS_RULES
    assert [g.priority for g in shards] == [100 + offset_of_name(g.name) for g in shards]
    assert all(f"egress-{CLUSTER}-groups-{k}-rules" == g.name for g in shards[1:] for k in [int(g.name.split("-")[-2])])
    assert max(g.priority for g in shards) < min(g.priority for g in plan.rule_groups if g.form == "domain-list")
    placed = [variable for g in shards for variable in g.ip_sets]
    assert sorted(placed) == sorted(single.ip_sets)  # every group in exactly one
    for group in shards:
        assert len(group.rules_string.encode()) <= limit
        assert {rule.text.split(" ")[2][1:] for rule in group.rules} == set(group.ip_sets)  # its rules use its own variables
    assert sorted((r.key, r.sid) for g in shards for r in g.rules) == sorted((r.key, r.sid) for r in single.rules)  # SIDs stay put
    assert evaluate(render(plan), enforced(catalog, profile, reqs)).missing == ()
    assert [w for w in plan.warnings if "source groups' rules are spread over" in w]  # a full rule group says so ahead
    # One more rule group takes groups only from the others into itself.
    sizes = {group: tuple(rule for g in shards for rule in g.rules if rule.text.split(" ")[2] == f"${variable(group)}")
             for group in profile.source_groups}
    before, _ = groups_module.place(CLUSTER, sizes, 20)
    monkeypatch.setattr(groups_module, "MAX_RULES_STRING_BYTES", max(len(g.rules_string.encode()) for g in shards) - 1)
    after, _ = groups_module.place(CLUSTER, sizes, 20)
    assert len(after) > len(before)
    where = {g: shard for shard, members in before.items() for g in members}
    assert all(shard >= len(before) for shard, members in after.items() for g in members if where[g] != shard)


def test_a_group_too_big_for_any_rule_group_is_one_clear_error(project, monkeypatch):
    monkeypatch.setattr(importlib.import_module("egress.targets.aws.groups"), "MAX_RULES_STRING_BYTES", 500)
    with pytest.raises(AwsCompileError, match=r"the source groups' rules do not fit in 10 rule groups of 500 bytes and 30,000 rules \(the "
                                              r"largest, group 'team-\d', has 4 rules, \d+ bytes\). Fix: split the groups' entries across stacks"):
        plan_of(project, "suricata", config=_many_entries(40), name="too-big")


def test_capacities_past_what_a_policy_holds_by_default_get_a_warning(project, monkeypatch):
    catalog, profile, reqs, plan = plan_of(project, "suricata")
    total = sum(g.capacity for g in plan.rule_groups)
    assert not [w for w in plan.warnings if "add up to" in w]
    monkeypatch.setattr(importlib.import_module("egress.targets.aws.compile"), "POLICY_CAPACITY_DEFAULT", total - 1)
    assert f"the rule groups' capacities add up to {total:,}, over the {total - 1:,} a firewall policy holds by default (Network Firewall " \
           "quota 'stateful rules per policy', adjustable up to 50,000): have it raised before deploying" in compile_aws(catalog, profile, reqs).warnings
