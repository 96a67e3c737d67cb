"""The policy gate of a real ``pulumi preview``: its policy results, read from the ``--event-log`` file, judged by level.

Why this exists: under ``pulumi preview --policy-pack policy`` a policy that meets a value unknown until creation answers
ONE *advisory* diagnostic "can't run policy '<name>' from policy pack '<pack>@v<version>' during preview: ... can't be
known during preview", whatever its own level (pulumi_policy 1.21.0 ``policy.py``, ``_PolicyAnalyzerServicer.Analyze``
and ``AnalyzeStack``, the ``UnknownValueError`` branch). The engine fails a preview only on a *mandatory* diagnostic,
so a mandatory policy that judged nothing lets the preview pass. pulumi/actions cannot hand the events out (its preview
runs the Automation API, which writes the event log to a temporary file and deletes it), so the workflows run
``pulumi preview --event-log FILE`` themselves and this module reads FILE.

The event log is JSON lines, one ``apitype.EngineEvent`` each (pulumi/pulumi ``pkg/backend/display/display.go``
``startEventLogger`` -> ``ConvertEngineEvent``; types in ``sdk/go/common/apitype/events.go``). What is read here:

- ``policyEvent``: ``resourceUrn`` (the stack's URN for a stack policy), ``message`` (the policy's own message,
  with ``<{%...%}>`` colour directives unless the CLI ran with ``--color never``), ``policyName``, ``policyPackName``,
  ``policyPackVersion``, ``enforcementLevel`` ("advisory" or "mandatory": the engine turns "remediate" into
  "mandatory" before it emits one), ``severity``;
- ``policyAnalyzeStackSummaryEvent`` (``policyPackName``, ``passed``, ``failed``): the pack judged the whole stack;
- ``summaryEvent``: the engine's last word on the run (emitted on success and failure alike).

Blocking: a violation the engine reported as mandatory, or a "can't run" from a policy whose effective level is
mandatory (or remediate). The effective level is the engine's (``pkg/resource/analyzer/config.go``
``ReconcilePolicyPackConfig``): the policy's own level, else the pack's (advisory, ``policy/__main__.py``); then the
config's ``all``; then the config's entry for the policy. Advisory results are listed, not fatal.

Fail closed: a log that is not JSON lines, that ends before the ``summaryEvent`` (the run did not finish, or the
file was not the run's), in which the pack never judged the stack, that names a policy this pack does not have, or
whose levels disagree with the config given here (the preview ran with another config) is a problem too.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from egress.errors import EgressError, InputError
from egress.json_file import NotJSON, parse_json

PACK_LEVEL = "advisory"  # PolicyPack(enforcement_level=...) in policy/__main__.py: the level of a policy without its own
BLOCKING_LEVELS = ("mandatory", "remediate")  # remediate: a violation that remains is reported as mandatory
EVENT_LEVELS = ("advisory", "mandatory", "remediate")
_COLOUR = re.compile(r"<\{%[^%]*%\}>")  # pulumi's colour directives (sdk/go/common/diag/colors: "<{%" cmd "%}>")
_CANT_RUN = re.compile(r"can't run policy '(?P<policy>[^']*)' from policy pack '[^']*' during preview: ")


@dataclass(frozen=True)
class PolicyResult:
    """One policy diagnostic of the run, as the gate judges it."""

    policy: str
    pack: str
    level: str  # the effective level this gate judged by (mandatory, remediate, advisory, disabled), or "unknown"
    cant_run: bool  # "can't run policy ... during preview": the policy met an unknown value and judged nothing
    resource: str  # "<type> '<name>'", or "(stack)"
    message: str
    blocking: bool

    def line(self) -> str:
        kind = f"{self.level}, can't run" if self.cant_run else self.level
        pack = "" if self.pack == _pack_name() else f"{self.pack}/"
        return f"[{kind}] {pack}{self.policy}: {self.resource}: {self.message}"


@dataclass(frozen=True)
class PolicyGate:
    results: tuple[PolicyResult, ...]  # blocking first, then by policy, resource, message; duplicates removed
    problems: tuple[str, ...]  # the log itself cannot be trusted as this pack's judgement of a finished run
    passed: tuple[str, ...]  # stack policies the engine reported as passed

    @property
    def blocking(self) -> tuple[PolicyResult, ...]:
        return tuple(r for r in self.results if r.blocking)

    @property
    def ok(self) -> bool:
        return not self.blocking and not self.problems


def _pack_name() -> str:
    from egress_policies import PACK_NAME

    return PACK_NAME


def effective_levels(config: Optional[Mapping[str, Any]] = None, policies: Optional[Sequence[Any]] = None) -> dict[str, str]:
    """{policy: level} as the engine reconciles them: own level (else the pack's), then ``all``, then the policy's entry."""
    if policies is None:
        from egress_policies import POLICIES

        policies = POLICIES
    levels = {p.name: (p.enforcement_level.value if p.enforcement_level else PACK_LEVEL) for p in policies}

    def level_of(value: Any) -> Optional[str]:
        return value if isinstance(value, str) else (value or {}).get("enforcementLevel")

    config = config or {}
    if level_of(config.get("all")):
        levels = dict.fromkeys(levels, level_of(config["all"]))
    for name, value in config.items():
        if name != "all" and name in levels and level_of(value):
            levels[name] = level_of(value)
    return levels


def _reason(exc: Exception) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).split("\n")[0]


def read_event_log(path: Path) -> list[dict[str, Any]]:
    """The engine events in ``path``, one JSON object per line (blank lines skipped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EgressError(f"{path}: not a readable event log ({_reason(exc)}). Fix: pass the file given to pulumi preview "
                          "--event-log") from None
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = parse_json(line)
        except NotJSON as exc:
            shown = line if len(line) <= 200 else line[:200] + "..."  # a 400,000-character line is not an error message
            raise InputError(path, f"line {number}", "(event)", shown, exc.reason.replace("valid JSON", "JSON"),
                             "pass the file pulumi wrote with --event-log, complete (a run that was killed may "
                             "leave its last line cut)") from None
        if not isinstance(event, dict):
            raise InputError(path, f"line {number}", "(event)", event, "an engine event is a JSON object",
                             "pass the file pulumi wrote with --event-log")
        if isinstance(event.get("policyEvent"), dict):
            _check_policy_event(path, number, event["policyEvent"])
        events.append({"line": number, **event})
    if not events:
        raise EgressError(f"{path}: holds no engine event. Fix: run pulumi preview with --event-log {path} before this "
                          "check (pulumi leaves the file empty when it stops before the engine starts)")
    return events


def _check_policy_event(path: Path, number: int, event: Mapping[str, Any]) -> None:
    for field in ("policyName", "policyPackName", "enforcementLevel", "message"):
        if not isinstance(event.get(field), str):
            raise InputError(path, f"line {number}: policyEvent", field, event.get(field), "missing or not a string",
                             "pass the file pulumi wrote with --event-log (each policyEvent names its policyName, "
                             "policyPackName, enforcementLevel and message)")
    if event["enforcementLevel"] not in EVENT_LEVELS:
        raise InputError(path, f"line {number}: policyEvent", "enforcementLevel", event["enforcementLevel"], "not a level the engine "
                         "reports", f"pass the file pulumi wrote with --event-log (levels: {', '.join(EVENT_LEVELS)})")


def resource_label(urn: str) -> str:
    """``urn:pulumi:<stack>::<project>::<parent$type>::<name>`` -> "<type> '<name>'"; the stack -> "(stack)"."""
    parts = urn.split("::", 3)
    if len(parts) != 4:
        return "(stack)" if not urn else urn
    kind, name = parts[2].rsplit("$", 1)[-1], parts[3]
    return "(stack)" if kind == "pulumi:pulumi:Stack" else f"{kind} '{name}'"


def pack_version(pack_dir: Path) -> str:
    """The version in the pack's PulumiPolicy.yaml: the engine reports it as every event's policyPackVersion."""
    import yaml

    from egress.errors import ProjectError

    project_file = pack_dir / "PulumiPolicy.yaml"
    try:
        version = (yaml.safe_load(project_file.read_text(encoding="utf-8")) or {}).get("version")
    except (OSError, yaml.YAMLError) as exc:
        raise ProjectError(f"{project_file}: not a readable policy pack project ({_reason(exc)}). Fix: run this in the "
                           "project whose policy/ pack the preview ran (--project)") from None
    if not isinstance(version, str) or not version:
        raise InputError(project_file, "", "version", version, "the pack's version is missing or not a string",
                         "give it a version such as '0.1.0' (Python packs take their version only from this file)")
    return version


def judge(events: Iterable[Mapping[str, Any]], levels: Mapping[str, str], version: str,
          descriptions: Optional[Mapping[str, str]] = None, pack: Optional[str] = None) -> PolicyGate:
    """The gate's verdict on the events of one run: ``levels`` are this pack's effective levels, ``version`` its version,
    ``descriptions`` its policies' descriptions (pulumi_policy puts "<description>\n" before each violation's message)."""
    pack = pack or _pack_name()
    descriptions = descriptions or {}
    versions: set[str] = set()
    results: dict[tuple, PolicyResult] = {}
    problems: list[str] = []
    stack_judged, finished, passed = False, False, ()
    for event in events:
        if isinstance(event.get("summaryEvent"), dict):
            finished = True
        summary = event.get("policyAnalyzeStackSummaryEvent")
        if isinstance(summary, dict) and summary.get("policyPackName") == pack:
            stack_judged, passed = True, tuple(sorted(summary.get("passed") or ()))
            versions.add(str(summary.get("policyPackVersion")))
        if not isinstance(event.get("policyEvent"), dict):
            continue
        found = event["policyEvent"]  # its fields were checked by read_event_log
        policy, event_pack, reported = found["policyName"], found["policyPackName"], found["enforcementLevel"]
        message = _COLOUR.sub("", found["message"]).strip()
        cant_run = bool((m := _CANT_RUN.match(message)) and m["policy"] == policy)
        if cant_run:
            message = message[m.end():]  # the reason; the line's "[<level>, can't run] <policy>" says the rest
        if event_pack != pack:
            level = "unknown" if cant_run else reported  # another pack's levels are not ours to know
        else:
            versions.add(str(found.get("policyPackVersion")))
            prefix = descriptions.get(policy, "") + "\n"
            if message.startswith(prefix):
                message = message[len(prefix):].strip()
            level = levels.get(policy, "unknown" if cant_run else reported)
            if policy not in levels:
                problems.append(f"line {event['line']}: policy '{policy}' of pack '{pack}' is not in this checkout's pack: the "
                                "preview ran another version of it")
            elif not cant_run and reported != ("mandatory" if level == "remediate" else level):
                problems.append(f"line {event['line']}: policy '{policy}' reported at {reported}, but its effective level here is "
                                f"{level}: the preview ran with another --policy-pack-config than this check")
        blocking = reported in BLOCKING_LEVELS or (cant_run and level in BLOCKING_LEVELS)
        result = PolicyResult(policy=policy, pack=event_pack, level=level, cant_run=cant_run,
                              resource=resource_label(str(found.get("resourceUrn") or "")), message=message, blocking=blocking)
        results.setdefault((not blocking, event_pack != pack, event_pack, policy, result.resource, message), result)
    if versions - {version}:
        problems.append(f"the log's pack '{pack}' is version {', '.join(sorted(versions - {version}))}, this checkout's "
                        f"policy/PulumiPolicy.yaml says {version}: the preview ran another pack")
    if not finished:
        problems.append("the log ends before the engine's summaryEvent: the run did not finish, or this is not its log")
    if not stack_judged:
        problems.append(f"pack '{pack}' never judged the stack (no policyAnalyzeStackSummaryEvent of it): the preview ran "
                        "without --policy-pack policy, or failed before its stack policies ran")
    return PolicyGate(results=tuple(results[k] for k in sorted(results)), problems=tuple(problems), passed=passed)


def report_lines(gate: PolicyGate) -> list[str]:
    """What a person reads in the job log or the PR comment: blocking results, then problems, then advisory ones."""
    blocking, advisory = gate.blocking, [r for r in gate.results if not r.blocking]
    lines = [f"policy gate: {'passed' if gate.ok else 'FAILED'}: {len(blocking)} blocking, {len(advisory)} advisory, "
             f"{len(gate.problems)} problem(s) with the log"]
    for title, items in (("blocking (a mandatory violation, or a mandatory policy that could not run):", [r.line() for r in blocking]),
                         ("problems with the log:", list(gate.problems)),
                         ("advisory (listed, not fatal):", [r.line() for r in advisory])):
        if items:
            lines += [title, *(f"  {item}".replace("\n", "\n    ") for item in items)]
    if gate.passed:
        lines.append(f"stack policies passed: {', '.join(gate.passed)}")
    return lines


def check_event_log(path: Path, config_path: Optional[Path], pack_dir: Path) -> PolicyGate:
    """Read and judge the event log at ``path``, with the levels of the pack config at ``config_path`` (as given to pulumi)
    and the version of the pack in ``pack_dir``."""
    from egress_policies import POLICIES

    from .pack_config import load_pack_config

    events = read_event_log(path)
    config = load_pack_config(config_path) if config_path is not None else None
    return judge(events, effective_levels(config, POLICIES), pack_version(pack_dir), {p.name: p.description for p in POLICIES})
