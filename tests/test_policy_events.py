"""egress policy-events: the policy gate of a real `pulumi preview`, read from its --event-log (issue 18).

The engine reports a policy that met an unknown value as ONE advisory "can't run policy ... during preview", even a
mandatory one, and passes the preview; the gate fails it. The fixture tests/data/event_logs/preview-update-cant-run.jsonl
is an update preview's event log in the CLI's form (one apitype.EngineEvent per line, Go's field names and order,
pulumi/pulumi sdk/go/common/apitype/events.go; colour directives as the engine writes them without --color never):
a pull request removes mcr.microsoft.com from a deployed rule collection group, the stack policies meet the unknown
etag, and required-egress-complete and azure-rcg-limits (mandatory) answer "can't run".
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pulumi.runtime import proto
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

from egress.errors import EgressError, InputError
from egress_preview.pack import _struct, servicer
from egress_preview.policy_events import (PACK_LEVEL, check_event_log, effective_levels, judge, read_event_log, report_lines,
                                          resource_label)
from egress_policies import POLICIES

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "event_logs" / "preview-update-cant-run.jsonl"
CONFIG = ROOT / "policy" / "config" / "default.json"
PACK = ROOT / "policy"
STACK = "urn:pulumi:dev::egress-matrix::pulumi:pulumi:Stack::egress-matrix-dev"
RCG = ("urn:pulumi:dev::egress-matrix::pulumi:pulumi:Stack$egress-matrix:azure:Firewall$"
       "azure-native:network:FirewallPolicyRuleCollectionGroup::aks-core")
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # pulumi_policy's unknown string sentinel
CANT_RUN = "can't run policy '{}' from policy pack 'egress-matrix@v0.0.1' during preview: string value at .etag can't be known during preview"
REASON = "string value at .etag can't be known during preview"  # what the gate lists after "[<level>, can't run]"
LEAST_PRIVILEGE = "rule 'aks-core-https' allows '*.data.mcr.microsoft.com', which no requirement of stack 'dev' needs"


def events() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines()]


def write(tmp_path: Path, lines: list[dict], name: str = "events.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in lines))  # as Go's json.Encoder writes
    return path


def policy_event(policy: str, message: str, level: str, urn: str = STACK, pack: str = "egress-matrix", version: str = "0.1.0") -> dict:
    """A policyEvent line as the engine writes it (pkg/engine/events.go policyViolationEvent: reset, message, reset, newline)."""
    return {"sequence": 100, "timestamp": 1767225700, "policyEvent": {
        "resourceUrn": urn, "message": "<{%reset%}>" + message + "<{%reset%}>\n", "color": "raw", "policyName": policy,
        "policyPackName": pack, "policyPackVersion": version, "policyPackVersionTag": version, "enforcementLevel": level}}


def with_events(*extra: dict) -> list[dict]:
    """The fixture with EXTRA instead of its policy events (before the stack summary, as the engine orders them)."""
    base = [e for e in events() if "policyEvent" not in e]
    at = next(i for i, e in enumerate(base) if "policyAnalyzeStackSummaryEvent" in e)
    return [*base[:at], *extra, *base[at:]]


def description(name: str) -> str:
    return next(p.description for p in POLICIES if p.name == name)


# --- the gate on the real-shaped log --------------------------------------------------------------------------


def test_a_mandatory_policy_that_cannot_run_fails_the_gate_with_the_shipped_config():
    gate = check_event_log(FIXTURE, CONFIG, PACK)
    assert not gate.ok and gate.problems == ()
    assert [r.line() for r in gate.blocking] == [
        f"[mandatory, can't run] azure-rcg-limits: (stack): {REASON}",
        f"[mandatory, can't run] required-egress-complete: (stack): {REASON}",
    ]
    # The advisory violation is listed, not fatal, without the description pulumi_policy puts before every message.
    (advisory,) = [r for r in gate.results if not r.blocking]
    assert advisory.line() == f"[advisory] egress-least-privilege: azure-native:network:FirewallPolicyRuleCollectionGroup 'aks-core': {LEAST_PRIVILEGE}"
    assert gate.passed == ("aws-network-firewall-capacity", "aws-security-group-quotas", "azure-rcg-writes-chained", "egress-not-open")


def test_the_same_log_passes_when_those_policies_are_advisory(tmp_path):
    config = tmp_path / "advisory.json"
    config.write_text(json.dumps({"required-egress-complete": "advisory", "azure-rcg-limits": {"enforcementLevel": "advisory"}}))
    gate = check_event_log(FIXTURE, config, PACK)
    assert gate.ok and gate.blocking == ()
    assert [(r.policy, r.level, r.cant_run) for r in gate.results] == [
        ("azure-rcg-limits", "advisory", True), ("egress-least-privilege", "advisory", False), ("required-egress-complete", "advisory", True)]
    assert report_lines(gate)[0] == "policy gate: passed: 0 blocking, 3 advisory, 0 problem(s) with the log"


def test_without_a_config_each_policy_keeps_its_own_level():
    # azure-rcg-limits and required-egress-complete are mandatory in their own modules: the default config only repeats it.
    assert [r.policy for r in check_event_log(FIXTURE, None, PACK).blocking] == ["azure-rcg-limits", "required-egress-complete"]


def test_a_mandatory_violation_blocks_and_an_advisory_one_does_not(tmp_path):
    missing = "requirement aks-core-mcr (mcr.microsoft.com:443/https from nodes) is not allowed by any rule"
    log = write(tmp_path, with_events(
        policy_event("required-egress-complete", description("required-egress-complete") + "\n" + missing, "mandatory"),
        policy_event("egress-least-privilege", description("egress-least-privilege") + "\n" + LEAST_PRIVILEGE, "advisory", RCG)))
    gate = check_event_log(log, CONFIG, PACK)
    assert [r.line() for r in gate.blocking] == [f"[mandatory] required-egress-complete: (stack): {missing}"]
    assert [r.line() for r in gate.results if not r.blocking] == [
        f"[advisory] egress-least-privilege: azure-native:network:FirewallPolicyRuleCollectionGroup 'aks-core': {LEAST_PRIVILEGE}"]

    advisory_only = write(tmp_path, with_events(policy_event("egress-least-privilege", LEAST_PRIVILEGE, "advisory", RCG)), "advisory.jsonl")
    assert check_event_log(advisory_only, CONFIG, PACK).ok


def test_a_resource_policy_that_cannot_run_blocks_per_resource(tmp_path):
    # Analyze (resource policies) at preview: the diagnostic carries the resource's URN; each resource is its own line.
    other = RCG.replace("::aks-core", "::aks-monitor")
    cant = CANT_RUN.format("firewall-resources-protected").replace(".etag", ".ruleCollections")
    log = write(tmp_path, with_events(*[policy_event("firewall-resources-protected", cant, "advisory", urn) for urn in (RCG, other, RCG)]))
    gate = check_event_log(log, CONFIG, PACK)
    assert [r.resource for r in gate.blocking] == [  # the repeated event is listed once
        "azure-native:network:FirewallPolicyRuleCollectionGroup 'aks-core'", "azure-native:network:FirewallPolicyRuleCollectionGroup 'aks-monitor'"]


def test_remediate_counts_as_mandatory_and_all_sets_every_level(tmp_path):
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"all": "advisory", "required-egress-complete": "remediate"}))
    gate = check_event_log(FIXTURE, config, PACK)
    assert [(r.policy, r.level) for r in gate.blocking] == [("required-egress-complete", "remediate")]
    levels = effective_levels({"all": {"enforcementLevel": "disabled"}, "trusted-ca-valid": {"expiryWarningDays": 7}})
    assert set(levels.values()) == {"disabled"}  # a policy's settings without a level keep the level "all" gave it
    assert effective_levels({"trusted-ca-valid": {"expiryWarningDays": 7}})["trusted-ca-valid"] == "mandatory"


def test_another_packs_results_are_judged_by_their_own_level(tmp_path):
    log = write(tmp_path, with_events(
        policy_event("s3-no-public-read", CANT_RUN.format("s3-no-public-read"), "advisory", pack="org-baseline", version="3"),
        policy_event("storage-no-public-blob", "public blob access", "mandatory", pack="org-baseline", version="3")))
    gate = check_event_log(log, CONFIG, PACK)
    assert [r.line() for r in gate.results] == [
        "[mandatory] org-baseline/storage-no-public-blob: (stack): public blob access",
        f"[unknown, can't run] org-baseline/s3-no-public-read: (stack): {REASON}",
    ]
    assert [r.policy for r in gate.blocking] == ["storage-no-public-blob"] and gate.problems == ()


# --- fail closed --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("change, problem", [
    (lambda: [e for e in events() if "summaryEvent" not in e and "cancelEvent" not in e],
     "the log ends before the engine's summaryEvent: the run did not finish, or this is not its log"),
    (lambda: [e for e in events() if "policyAnalyzeStackSummaryEvent" not in e and "policyEvent" not in e],
     "pack 'egress-matrix' never judged the stack (no policyAnalyzeStackSummaryEvent of it): the preview ran without --policy-pack "
     "policy, or failed before its stack policies ran"),
    (lambda: with_events(policy_event("egress-least-privilege", LEAST_PRIVILEGE, "advisory", version="0.2.0")),
     "the log's pack 'egress-matrix' is version 0.2.0, this checkout's policy/PulumiPolicy.yaml says 0.1.0: the preview ran another pack"),
    (lambda: with_events(policy_event("egress-leastprivilege", LEAST_PRIVILEGE, "advisory")),
     "line 10: policy 'egress-leastprivilege' of pack 'egress-matrix' is not in this checkout's pack: the preview ran another version of it"),
    (lambda: with_events(policy_event("required-egress-complete", "missing", "advisory")),
     "line 10: policy 'required-egress-complete' reported at advisory, but its effective level here is mandatory: the preview ran with "
     "another --policy-pack-config than this check"),
])
def test_a_log_that_is_not_this_packs_judgement_of_a_finished_run_fails(tmp_path, change, problem):
    lines = change()
    for number, event in enumerate(lines):
        event["sequence"] = number
    gate = check_event_log(write(tmp_path, lines), CONFIG, PACK)
    assert gate.problems == (problem,) and not gate.ok


def test_the_fixture_lines_are_numbered_as_the_problems_say():
    # with_events puts one event where the first policy event was: line 10 (the problems above name it).
    assert [i for i, e in enumerate(events(), 1) if "policyEvent" in e] == [10, 11, 12]
    assert [i for i, e in enumerate(with_events({"policyEvent": {}}), 1) if "policyEvent" in e] == [10]


@pytest.mark.parametrize("text, message", [
    ("", "holds no engine event"),
    ('{"sequence":0,"timestamp":1,"preludeEvent":{"config":{}}}\n{"sequence":1,"timestamp":1,"policyEv', "line 2: field '(event)'"),
    ("[1, 2]\n", "an engine event is a JSON object"),
    ('{"policyEvent": {"message": "m", "policyPackName": "egress-matrix", "enforcementLevel": "mandatory"}}\n',
     "line 1: policyEvent: field 'policyName' = None: missing or not a string"),
    ('{"policyEvent": {"message": "m", "policyName": "x", "policyPackName": "egress-matrix", "enforcementLevel": "warning"}}\n',
     "field 'enforcementLevel' = 'warning': not a level the engine reports"),
])
def test_a_broken_log_is_one_clear_error(tmp_path, text, message):
    path = tmp_path / "events.jsonl"
    path.write_text(text)
    with pytest.raises(EgressError) as error:
        check_event_log(path, CONFIG, PACK)
    assert message in str(error.value) and str(path) in str(error.value) and "Fix:" in str(error.value)


def test_a_missing_log_is_one_clear_error(tmp_path):
    with pytest.raises(EgressError, match=r"events.jsonl: not a readable event log \(No such file or directory\).*Fix: pass the file given to pulumi preview --event-log"):
        read_event_log(tmp_path / "events.jsonl")


def test_a_pack_without_a_version_is_an_input_error(tmp_path):
    (tmp_path / "PulumiPolicy.yaml").write_text("runtime: python\n")
    with pytest.raises(InputError, match="field 'version' = None"):
        check_event_log(FIXTURE, CONFIG, tmp_path)


# --- the facts this rests on -------------------------------------------------------------------------------------


def test_the_real_sdk_answers_cant_run_as_the_gate_reads_it(tmp_path):
    """pulumi_policy's own servicer: a mandatory stack policy and a mandatory resource policy that read an unknown value
    each answer one ADVISORY "can't run" (so the engine passes the preview); the gate reads both as blocking."""
    def stack_check(args, report):
        for resource in args.resources:
            resource.props.get("etag")

    def resource_check(args, report):
        args.props.get("ruleCollections")

    policies = [StackValidationPolicy(name="required-egress-complete", description="d", validate=stack_check,
                                      enforcement_level=EnforcementLevel.MANDATORY),
                ResourceValidationPolicy(name="firewall-resources-protected", description="d", validate=resource_check,
                                         enforcement_level=EnforcementLevel.MANDATORY)]
    analyzer = servicer(policies, {})
    stack = proto.AnalyzeStackRequest()
    entry = stack.resources.add(type="azure-native:network:FirewallPolicyRuleCollectionGroup", urn=RCG, name="aks-core")
    _struct(entry.properties, {"etag": UNKNOWN})
    resource = proto.AnalyzeRequest(type="azure-native:network:FirewallPolicyRuleCollectionGroup", urn=RCG, name="aks-core")
    _struct(resource.properties, {"ruleCollections": UNKNOWN})
    diagnostics = [(d, STACK) for d in analyzer.AnalyzeStack(stack, None).diagnostics]
    diagnostics += [(d, RCG) for d in analyzer.Analyze(resource, None).diagnostics]
    assert [(d.policyName, d.enforcementLevel) for d, _ in diagnostics] == [
        ("required-egress-complete", proto.ADVISORY), ("firewall-resources-protected", proto.ADVISORY)]
    # What the engine writes for them: the stack's URN for a stack policy's empty one, the level as the pack gave it.
    log = write(tmp_path, with_events(*[policy_event(d.policyName, d.message, "advisory", urn) for d, urn in diagnostics]))
    gate = check_event_log(log, CONFIG, PACK)
    assert [(r.policy, r.resource, r.cant_run) for r in gate.blocking] == [
        ("firewall-resources-protected", "azure-native:network:FirewallPolicyRuleCollectionGroup 'aks-core'", True),
        ("required-egress-complete", "(stack)", True)]


def test_the_pack_level_is_the_one_policy_main_gives():
    text = (ROOT / "policy" / "__main__.py").read_text()
    assert re.search(r"enforcement_level=EnforcementLevel\.(\w+)", text)[1].lower() == PACK_LEVEL


def test_resource_labels():
    assert resource_label(STACK) == "(stack)"
    assert resource_label(RCG) == "azure-native:network:FirewallPolicyRuleCollectionGroup 'aks-core'"
    assert resource_label("urn:pulumi:dev::egress-matrix::kubernetes:core/v1:ConfigMap::egress-proxy::squid") == \
        "kubernetes:core/v1:ConfigMap 'egress-proxy::squid'"
    assert resource_label("") == "(stack)"


def test_judge_needs_the_stack_summary_of_this_pack_only():
    lines = [{"line": 1, "policyAnalyzeStackSummaryEvent": {"policyPackName": "org-baseline", "policyPackVersion": "3"}},
             {"line": 2, "summaryEvent": {"isPreview": True}}]
    gate = judge(lines, effective_levels(), "0.1.0")
    assert gate.problems == ("pack 'egress-matrix' never judged the stack (no policyAnalyzeStackSummaryEvent of it): the preview "
                             "ran without --policy-pack policy, or failed before its stack policies ran",)


# --- the command ---------------------------------------------------------------------------------------------------


def test_the_command_lists_the_results_and_exits_1(run_cli):
    code, out, err = run_cli("policy-events", str(FIXTURE), "--policy-pack-config", str(CONFIG), "--project", str(ROOT))
    assert code == 1
    assert out.splitlines() == [
        "policy gate: FAILED: 2 blocking, 1 advisory, 0 problem(s) with the log",
        "blocking (a mandatory violation, or a mandatory policy that could not run):",
        f"  [mandatory, can't run] azure-rcg-limits: (stack): {REASON}",
        f"  [mandatory, can't run] required-egress-complete: (stack): {REASON}",
        "advisory (listed, not fatal):",
        f"  [advisory] egress-least-privilege: azure-native:network:FirewallPolicyRuleCollectionGroup 'aks-core': {LEAST_PRIVILEGE}",
        "stack policies passed: aws-network-firewall-capacity, aws-security-group-quotas, azure-rcg-writes-chained, egress-not-open",
    ]
    message = " ".join(err.split())
    assert message.count("Error: ") == 1 and "Traceback" not in err
    assert f"{FIXTURE}: the policy gate failed (2 blocking result(s), 0 problem(s) with the log); the first: [mandatory, can't run] " \
           "azure-rcg-limits" in message
    assert "Fix: fix what a violation names" in message


def test_the_command_passes_an_advisory_log(run_cli, tmp_path):
    log = write(tmp_path, with_events(policy_event("egress-least-privilege", LEAST_PRIVILEGE, "advisory", RCG)))
    code, out, err = run_cli("policy-events", str(log), "--policy-pack-config", str(CONFIG), "--project", str(ROOT))
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "policy gate: passed: 0 blocking, 1 advisory, 0 problem(s) with the log"


def test_the_command_never_prints_credentials(run_cli, tmp_path):
    leaked = "proxy http://user:hunter2@proxy.corp.example.com:3128 is not in noProxy"
    log = write(tmp_path, with_events(policy_event("proxy-url-valid", leaked, "mandatory", RCG)))
    code, out, err = run_cli("policy-events", str(log), "--policy-pack-config", str(CONFIG), "--project", str(ROOT))
    assert code == 1 and "hunter2" not in out + err and "(credentials hidden)@proxy.corp.example.com" in out
