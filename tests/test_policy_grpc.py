"""The policy pack run the way the engine runs it: its own process, spoken to over gRPC.

``pulumi preview --policy-pack policy`` starts ``python -u -m pulumi.policy <engine> <packdir>`` with cwd = the pack
dir and the stack's config in ``PULUMI_CONFIG`` (reference/pulumi.md section 1.1); ``policy/__main__.py`` builds the
``PolicyPack``, which serves the Analyzer on 127.0.0.1 and prints the port on stdout. The engine address is parsed and
never dialled: ``pulumi.policy`` configures ``Settings`` without an engine, so ``pulumi.log`` falls back to stderr and
no fake Engine service is needed (a dummy address is passed, as the engine's own would be).

The engine then calls GetAnalyzerInfo, Configure with every policy's level and its schema defaults (plus
--policy-pack-config on top: ``ReconcilePolicyPackConfig``), Analyze per resource with its inputs and AnalyzeStack with
every resource's outputs. Here that conversation is held with the recording of the ``dev`` stack's preview, and every
diagnostic must equal, in order, what ``egress_preview.pack.run_pack`` reports in-process for the same recording: the
offline ``egress preview`` says exactly what the engine-run pack says.
"""
from __future__ import annotations

import copy
import json
import os
import queue
import subprocess
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Optional

import pytest

grpc = pytest.importorskip("grpc")
pytest.importorskip("pulumi_policy")

from google.protobuf import empty_pb2, json_format  # noqa: E402
from pulumi.runtime import proto  # noqa: E402
from pulumi.runtime.proto import analyzer_pb2_grpc  # noqa: E402
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy  # noqa: E402
from pulumi_policy.version import VERSION as POLICY_SDK_VERSION  # noqa: E402

from egress.deployed import DeployedResource  # noqa: E402
from egress.profile import PROJECT  # noqa: E402
from egress.targets.aws.deployed import RULE_GROUP_TYPE  # noqa: E402
from egress.targets.azure.deployed import RCG_TYPE  # noqa: E402
from egress_policies import PACK_NAME, POLICIES  # noqa: E402
from egress_preview.pack import Violation, analyze_requests, analyze_stack_request, run_pack  # noqa: E402
from egress_preview.program import Recorded, run_program  # noqa: E402

pytestmark = pytest.mark.engine

ROOT = Path(__file__).resolve().parents[1]
PACK_DIR = ROOT / "policy"
POLICY_VENV = ROOT / ".tools" / "policy-venv"
STACK = "dev"
START_TIMEOUT = 120.0  # seconds for the pack process to import everything and print its port
CALL_TIMEOUT = 120.0  # seconds per RPC (an AnalyzeStack of dev takes well under one)

LEVEL = {proto.ADVISORY: "advisory", proto.MANDATORY: "mandatory", proto.REMEDIATE: "remediate", proto.DISABLED: "disabled"}
LEVEL_PROTO = {value: key for key, value in LEVEL.items()}
SEVERITY = {proto.POLICY_SEVERITY_UNSPECIFIED: "", proto.POLICY_SEVERITY_LOW: "low", proto.POLICY_SEVERITY_MEDIUM: "medium",
            proto.POLICY_SEVERITY_HIGH: "high", proto.POLICY_SEVERITY_CRITICAL: "critical"}
CLUSTER_PATCH_TYPE = "kubernetes:kubermatic.k8c.io/v1:ClusterPatch"


# --- the pack process --------------------------------------------------------------------------------------------------


@dataclass
class PackProcess:
    process: subprocess.Popen
    port: int
    stub: Any
    stderr_path: Path
    stdout_rest: list

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


def _pack_env(recorded: Recorded) -> dict[str, str]:
    """The environment the engine gives a policy pack (pulumi-language-python RunPlugin): nothing of ours leaks in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PULUMI_")}
    env.update({"PULUMI_PROJECT": PROJECT, "PULUMI_STACK": recorded.stack, "PULUMI_DRY_RUN": "true",
                "PULUMI_ORGANIZATION": "organization", "PULUMI_CONFIG": json.dumps(recorded.config)})
    return env


def _read_lines(stream, lines: "queue.Queue[Optional[bytes]]") -> None:
    for line in iter(stream.readline, b""):
        lines.put(line)
    lines.put(None)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def pack_python() -> Path:
    """The pack's own virtualenv, built from policy/requirements.txt alone as `pulumi install` builds policy/venv (.ci/run
    builds it in .tools/policy-venv): the engine never runs a pack with the program's packages, so neither does this."""
    python = POLICY_VENV / "bin" / "python"
    if not python.exists():
        message = f"{POLICY_VENV} (the pack's virtualenv from policy/requirements.txt) is not built: run .ci/run"
        if os.environ.get("EGRESS_REQUIRE_ENGINES"):
            pytest.fail(message)
        pytest.skip(message)
    return python


def test_the_pack_venv_holds_no_provider_sdk():
    """What the pack imports must come from its own lock: no provider SDK is there to lean on."""
    found = subprocess.run([str(pack_python()), "-c", "import importlib.util as u; print([m for m in ('pulumi_azure_native', 'pulumi_aws', "
                            "'pulumi_kubernetes') if u.find_spec(m)])"], capture_output=True, text=True, check=True).stdout.strip()
    assert found == "[]"


@pytest.fixture(scope="module")
def recording() -> Recorded:
    """The dev stack's preview, recorded once (the program under the SDK's mocks, ~2 s)."""
    return run_program(ROOT, STACK)


@pytest.fixture(scope="module")
def pack(recording: Recorded, tmp_path_factory, request) -> PackProcess:
    """The pack's own process. While it starts, the in-process results are computed: straight after the recording,
    before anything else can touch the runtime's config."""
    python = pack_python()
    stderr_path = tmp_path_factory.mktemp("policy-pack") / "stderr.txt"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen([str(python), "-u", "-m", "pulumi.policy", "127.0.0.1:1", str(PACK_DIR.resolve())],
                                   cwd=PACK_DIR, env=_pack_env(recording), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=stderr)
    channel, reader = None, None
    try:
        request.getfixturevalue("expected")
        lines: "queue.Queue[Optional[bytes]]" = queue.Queue()
        reader = threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True)
        reader.start()
        try:
            first = lines.get(timeout=START_TIMEOUT)
        except queue.Empty:
            pytest.fail(f"the pack printed no port within {START_TIMEOUT:.0f}s; stderr:\n{stderr_path.read_text()}")
        if first is None:
            pytest.fail(f"the pack exited ({process.wait(timeout=10)}) before printing a port; stderr:\n{stderr_path.read_text()}")
        text = first.decode().strip()
        assert text.isdigit(), f"the engine reads the port from the pack's first stdout line, got {text!r}"
        port = int(text)
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=30)
        rest: list = []

        def drain() -> None:  # keep stdout flowing (a full pipe would block the pack) and keep what it says
            while (line := lines.get()) is not None:
                rest.append(line)

        threading.Thread(target=drain, daemon=True).start()
        yield PackProcess(process, port, analyzer_pb2_grpc.AnalyzerStub(channel), stderr_path, rest)
    finally:
        if channel is not None:
            channel.close()
        _stop(process)
        if reader is not None:
            reader.join(timeout=10)  # EOF once the process is gone: close the pipe only after its reader let go
        if process.stdout and not (reader and reader.is_alive()):
            process.stdout.close()


# --- the engine's side of the conversation -----------------------------------------------------------------------------


def _info(pack: PackProcess):
    return pack.stub.GetAnalyzerInfo(empty_pb2.Empty(), timeout=CALL_TIMEOUT)


def engine_config(info, given: Optional[Mapping[str, Any]] = None) -> proto.ConfigureAnalyzerRequest:
    """What the engine sends to Configure (pkg/resource/analyzer/config.go ``ReconcilePolicyPackConfig``): every policy
    with its own level and its schema's defaults, then ``all``'s level, then the given --policy-pack-config on top."""
    given = dict(given or {})
    config: dict[str, dict[str, Any]] = {}
    for policy in info.policies:
        properties = json_format.MessageToDict(policy.configSchema.properties)
        config[policy.name] = {"level": LEVEL[policy.enforcementLevel],
                               "properties": {k: v["default"] for k, v in properties.items() if "default" in v}}
    everything = given.pop("all", None)
    if everything:
        for entry in config.values():
            entry["level"] = everything if isinstance(everything, str) else everything.get("enforcementLevel", entry["level"])
    for name, value in given.items():
        entry = config[name]
        if isinstance(value, str):
            entry["level"] = value
        else:
            entry["level"] = value.get("enforcementLevel", entry["level"])
            entry["properties"].update({k: v for k, v in value.items() if k != "enforcementLevel"})
    request = proto.ConfigureAnalyzerRequest()
    for name, entry in config.items():
        request.policyConfig[name].enforcementLevel = LEVEL_PROTO[entry["level"]]
        request.policyConfig[name].properties.update(entry["properties"])
    return request


def _configure(pack: PackProcess, recorded: Recorded, given: Optional[Mapping[str, Any]] = None) -> None:
    pack.stub.Configure(engine_config(_info(pack), given), timeout=CALL_TIMEOUT)
    stack = proto.AnalyzerStackConfigureRequest(stack=recorded.stack, project=PROJECT, organization="organization", dry_run=True)
    for key, value in recorded.config.items():
        stack.config[key] = value
    pack.stub.ConfigureStack(stack, timeout=CALL_TIMEOUT)


def _violations(response, recorded: Recorded, request_urn: str = "") -> list[Violation]:
    """The engine's diagnostics as ``egress preview`` words them, checked for what every diagnostic must carry."""
    policies = {p.name: p for p in POLICIES}
    labels = {r.urn: r.label() for r in recorded.resources}
    out = []
    for d in response.diagnostics:
        policy = policies[d.policyName]
        assert (d.policyPackName, d.description) == (PACK_NAME, policy.description)
        assert d.message.startswith(policy.description + "\n"), d.message
        urn = d.urn or request_urn
        out.append(Violation(policy=d.policyName, level=LEVEL[d.enforcementLevel], severity=SEVERITY[d.severity],
                             message=d.message[len(policy.description) + 1:], resource=labels.get(urn, "(stack)"), urn=urn))
    return out


def analyze_over_grpc(pack: PackProcess, recorded: Recorded, given: Optional[Mapping[str, Any]] = None) -> list[Violation]:
    """Configure, Analyze every resource (inputs), AnalyzeStack (outputs, parents, dependencies): run_pack's order."""
    _configure(pack, recorded, given)
    out: list[Violation] = []
    for request in analyze_requests(recorded.resources, recorded.inputs):
        out += _violations(pack.stub.Analyze(request, timeout=CALL_TIMEOUT), recorded, request.urn)
    out += _violations(pack.stub.AnalyzeStack(analyze_stack_request(recorded.resources), timeout=CALL_TIMEOUT), recorded)
    return out


# --- broken recordings -------------------------------------------------------------------------------------------------


def _both(recorded: Recorded, urn: str) -> list[dict]:
    """A resource's outputs and inputs: what AnalyzeStack and Analyze see (the broken edit goes into both)."""
    resource = next(r for r in recorded.resources if r.urn == urn)
    return [resource.props, recorded.inputs[urn]]


def without_one_fqdn(recorded: Recorded) -> tuple[Recorded, str, str]:
    """The first FQDN of an Azure application rule (one of several in its rule) that no other rule allows, removed."""
    broken = copy.deepcopy(recorded)
    groups = [r for r in broken.resources if r.type == RCG_TYPE]
    rules = [rule for g in groups for c in g.props.get("ruleCollections") or [] for rule in c.get("rules") or []]
    counts: dict[str, int] = {}
    for rule in rules:
        for fqdn in rule.get("targetFqdns") or []:
            counts[fqdn] = counts.get(fqdn, 0) + 1
    for group in groups:
        for collection in group.props.get("ruleCollections") or []:
            for rule in collection.get("rules") or []:
                fqdns = rule.get("targetFqdns") or []
                fqdn = next((f for f in fqdns if counts[f] == 1 and "*" not in f), None) if len(fqdns) > 1 else None
                if fqdn is None:
                    continue
                for props in _both(broken, group.urn):
                    for c in props["ruleCollections"]:
                        for r in c["rules"]:
                            if c["name"] == collection["name"] and r["name"] == rule["name"]:
                                r["targetFqdns"] = [f for f in r["targetFqdns"] if f != fqdn]
                return broken, fqdn, group.urn
    raise AssertionError("the dev stack has no Azure application rule with an FQDN only it allows")


def without_seed_tls_rule_group(recorded: Recorded) -> tuple[Recorded, str]:
    """The seed role's TLS (SNI) Network Firewall rule group left out of the deployment."""
    broken = copy.deepcopy(recorded)
    dropped = [r for r in broken.resources if r.type == RULE_GROUP_TYPE and "-seed-" in r.name and "tls" in r.name]
    assert len(dropped) == 1, [r.name for r in dropped]
    broken.resources = [r for r in broken.resources if r.urn != dropped[0].urn]
    del broken.inputs[dropped[0].urn]
    return broken, dropped[0].name


def with_open_api_allowlist(recorded: Recorded) -> tuple[Recorded, str]:
    """0.0.0.0/0 added to the KKP cluster's apiServerAllowedIPRanges (a resource policy's violation, not a stack one's)."""
    broken = copy.deepcopy(recorded)
    patch = next(r for r in broken.resources if r.type == CLUSTER_PATCH_TYPE)
    for props in _both(broken, patch.urn):
        props["spec"]["apiServerAllowedIPRanges"]["cidrBlocks"].append("0.0.0.0/0")
    return broken, patch.urn


def with_engine_extras(recorded: Recorded) -> Recorded:
    """What the engine presents besides the program's registrations: the root Stack (the parent of the top-level
    components) and the default providers, each Analyzed and part of AnalyzeStack."""
    extended = copy.deepcopy(recorded)
    roots = sorted({r.parent for r in recorded.resources if r.parent} - {r.urn for r in recorded.resources})
    assert len(roots) == 1 and "::pulumi:pulumi:Stack::" in roots[0], roots
    extras = [DeployedResource(type="pulumi:pulumi:Stack", name=roots[0].rsplit("::", 1)[1], urn=roots[0], props={})]
    packages = sorted({r.type.split(":", 1)[0] for r in recorded.resources} - {"egress"})
    for package in packages:
        props = {"region": recorded.config["aws:region"]} if package == "aws" else {}
        extras.append(DeployedResource(type=f"pulumi:providers:{package}", name=f"default_{package.replace('-', '_')}",
                                       urn=f"urn:pulumi:{recorded.stack}::{PROJECT}::pulumi:providers:{package}::default", props=props))
    extended.resources = extras + extended.resources
    extended.inputs.update({r.urn: r.props for r in extras})
    return extended


@pytest.fixture(scope="module")
def expected(recording: Recorded) -> dict[str, Any]:
    """Every in-process result, computed right after the recording while the runtime still holds dev's config."""
    fqdn_broken, fqdn, rcg = without_one_fqdn(recording)
    group_broken, group = without_seed_tls_rule_group(recording)
    open_broken, patch = with_open_api_allowlist(recording)
    requirements = run_program_requirements(recording)
    first = run_program(ROOT, STACK, phase="preview")
    return {
        "first-preview": (first, run_pack(first)),
        "requirements": requirements,
        "default": run_pack(recording),
        "no-extra": run_pack(recording, {"egress-least-privilege": {"reportBeyondMatrix": False}}),
        "mandatory": run_pack(recording, {"egress-least-privilege": "mandatory"}),
        "fqdn": (fqdn_broken, fqdn, rcg, run_pack(fqdn_broken)),
        "group": (group_broken, group, run_pack(group_broken)),
        "open": (open_broken, patch, run_pack(open_broken)),
    }


def run_program_requirements(recorded: Recorded) -> tuple:
    """The stack's requirements as the policies resolve them (from the config the runtime holds for ``recorded``)."""
    from egress_policies.support import stack_context

    assert stack_context().stack == recorded.stack
    return stack_context().requirements


def _diff(got: list[Violation], want: list[Violation]) -> str:
    lines = [f"over gRPC {len(got)}, in-process {len(want)}"]
    lines += ["  only over gRPC: " + v.line() for v in got if v not in want][:10]
    lines += ["  only in-process: " + v.line() for v in want if v not in got][:10]
    return "\n".join(lines)


# --- the tests ---------------------------------------------------------------------------------------------------------


def test_analyzer_info_lists_every_policy_with_level_and_schema(pack: PackProcess):
    info = _info(pack)
    assert info.name == PACK_NAME == "egress-matrix"
    assert info.supportsConfig
    assert info.version == "0.0.1"  # Python packs always say so; the CLI takes the version from PulumiPolicy.yaml
    assert "egress-matrix" in info.description
    assert [p.name for p in info.policies] == [p.name for p in POLICIES]
    for wire, policy in zip(info.policies, POLICIES):
        assert wire.description == policy.description
        level = policy.enforcement_level or EnforcementLevel.ADVISORY  # the pack's level
        assert LEVEL[wire.enforcementLevel] == level.value, policy.name
        assert SEVERITY[wire.severity] == (policy.severity.value if policy.severity else ""), policy.name
        assert wire.remediation_steps == (policy.remediation_steps or ""), policy.name
        kind = {ResourceValidationPolicy: proto.PolicyType.POLICY_TYPE_RESOURCE, StackValidationPolicy: proto.PolicyType.POLICY_TYPE_STACK}
        assert wire.policy_type == kind[type(policy)], policy.name
        schema = policy.config_schema
        assert json_format.MessageToDict(wire.configSchema.properties) == (schema.properties if schema else {}), policy.name
        assert list(wire.configSchema.required) == list(schema.required or [] if schema else []), policy.name
    schemas = {p.name: json_format.MessageToDict(p.configSchema.properties) for p in info.policies}
    assert schemas["egress-least-privilege"]["reportBeyondMatrix"]["default"] is True
    levels = {p.name: LEVEL[p.enforcementLevel] for p in info.policies}
    assert (levels["required-egress-complete"], levels["egress-least-privilege"]) == ("mandatory", "advisory")
    plugin = pack.stub.GetPluginInfo(empty_pb2.Empty(), timeout=CALL_TIMEOUT)
    assert plugin.version == POLICY_SDK_VERSION


def test_dev_preview_over_grpc_equals_in_process(pack: PackProcess, recording: Recorded, expected):
    """Engine defaults (each policy's level and schema defaults) over the wire == run_pack with no config."""
    got = analyze_over_grpc(pack, recording)
    assert got == expected["default"], _diff(got, expected["default"])
    assert not [v for v in got if v.level == "mandatory"], "the dev stack's own program output passes every mandatory policy"
    assert {v.policy for v in got} == {"egress-least-privilege"}  # the AWS domain-list broadening, advisory by design
    assert all(v.message.startswith("aws: allowed beyond the matrix: ") for v in got)


def test_first_preview_over_grpc_equals_in_process(pack: PackProcess, expected):
    """A first deployment's preview (unknown ids, ARNs and cross-resource inputs, propertyDependencies) over the wire:
    the pack process judges it as in-process, with no "can't run" and nothing mandatory."""
    first, want = expected["first-preview"]
    assert any(r.unknowns for r in first.resources)
    got = analyze_over_grpc(pack, first)
    assert got == want, _diff(got, want)
    assert not [v for v in got if v.level == "mandatory" or "during preview" in v.message]


def test_engine_extras_change_nothing(pack: PackProcess, recording: Recorded, expected):
    """The root Stack and the default providers, which ``egress preview`` does not record, judge the same."""
    extended = with_engine_extras(recording)
    assert {r.type for r in extended.resources} >= {"pulumi:pulumi:Stack", "pulumi:providers:aws", "pulumi:providers:azure-native",
                                                      "pulumi:providers:kubernetes"}
    got = analyze_over_grpc(pack, extended)
    assert got == expected["default"], _diff(got, expected["default"])


def test_configure_turns_report_beyond_matrix_off(pack: PackProcess, recording: Recorded, expected):
    got = analyze_over_grpc(pack, recording, {"egress-least-privilege": {"reportBeyondMatrix": False}})
    assert got == expected["no-extra"], _diff(got, expected["no-extra"])
    assert not any("allowed beyond the matrix" in v.message for v in got)
    assert len(got) < len(expected["default"])


def test_configure_makes_least_privilege_mandatory(pack: PackProcess, recording: Recorded, expected):
    got = analyze_over_grpc(pack, recording, {"egress-least-privilege": "mandatory"})
    assert got == expected["mandatory"], _diff(got, expected["mandatory"])
    assert got == [replace(v, level="mandatory") for v in expected["default"]]


def test_fqdn_removed_from_an_azure_rule_is_a_mandatory_miss(pack: PackProcess, expected):
    broken, fqdn, rcg, want = expected["fqdn"]
    needing = [r for r in expected["requirements"] if r.destination == fqdn]
    assert needing, fqdn
    got = analyze_over_grpc(pack, broken)
    assert got == want, _diff(got, want)
    misses = [v for v in got if v.policy == "required-egress-complete"]
    assert misses, f"removing {fqdn} from {rcg} went unnoticed over gRPC"
    assert all(v.level == "mandatory" and v.severity == "high" for v in misses)
    assert [v.urn for v in misses] == [rcg]  # pinned to the rule collection group that lost it
    message = misses[0].message
    assert message.startswith("azure: ") and f" -> {fqdn} " in message, message
    assert any(entry in message for r in needing for entry in r.entry_ids), message  # names the requirement's entry


def test_dropped_rule_group_is_a_mandatory_miss(pack: PackProcess, expected):
    broken, group, want = expected["group"]
    got = analyze_over_grpc(pack, broken)
    assert got == want, _diff(got, want)
    # The policy still references the dropped group: not the stack's any more, said so; the rest judged, the seed's misses named.
    foreign = [v for v in got if v.policy == "required-egress-complete" and "which is not in this stack" in v.message]
    assert len(foreign) == 1 and foreign[0].level == "mandatory" and group in foreign[0].message
    misses = [v for v in got if v.policy == "required-egress-complete" and v not in foreign]
    assert misses, f"dropping the rule group {group} went unnoticed over gRPC"
    assert all(v.level == "mandatory" and v.message.startswith("aws: ") for v in misses), [v.line() for v in misses]
    seed = [r for r in expected["requirements"] if r.role == "seed"]
    for v in misses:  # each names a seed requirement: its destination and one of its entries
        named = [r for r in seed if f" -> {r.destination} " in v.message]
        assert named and any(e in v.message for r in named for e in r.entry_ids), v.message
    assert all(v.urn for v in misses)  # pinned to a resource of the role


def test_open_api_allowlist_is_a_resource_violation(pack: PackProcess, expected):
    broken, patch, want = expected["open"]
    got = analyze_over_grpc(pack, broken)
    assert got == want, _diff(got, want)
    opened = [v for v in got if v.policy == "api-allowlist-not-open"]
    assert [(v.level, v.severity, v.urn) for v in opened] == [("mandatory", "critical", patch)]
    assert "0.0.0.0/0" in opened[0].message


def test_pack_process_stayed_healthy(pack: PackProcess):
    """Still serving, silent on stdout after the port, no traceback or pulumi.log line (its stderr fallback) on stderr."""
    assert pack.process.poll() is None
    assert pack.stdout_rest == []
    stderr = pack.stderr()
    assert "Traceback" not in stderr, stderr
    assert not [line for line in stderr.splitlines() if line.startswith(("error: ", "warning: ", "info: "))], stderr
