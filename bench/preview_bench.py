"""Benchmark: ``egress preview`` of the largest stack against the Pulumi SDK floor; prints Markdown tables.

    .venv/bin/python bench/preview_bench.py [--stack dev] [--repeat 5]

1. Every stack's program runs once under the mocks; the largest (most registered resources) is benched unless
   ``--stack`` names one. Its requirement count is the program's ``requirementCount`` output.
2. Warm, in one process (one full run first, so imports are not timed), alternating ``--repeat`` times:
   the program (``run_program``: config -> core -> components) and the SDK floor, i.e. ``run_program`` with
   ``register=`` a function registering the same number of resources with the same type tokens, names and parents
   (``pulumi.CustomResource(type, name, {})``; ``pulumi.ComponentResource`` for ``egress:`` types) under the same
   mocks and recording monitor. Also: the floor with the program's own inputs (``recorded.inputs``), the same with
   the program's stack outputs exported too, and the program through the same ``register=`` hook returning None.
   The floors' URNs are checked to equal the program's. Then the program and the empty floor with the cyclic garbage
   collector paused during the run. ``gc.collect()`` before every run; medians; ratio = program / empty floor.
3. Where the program's time goes: the same runs with timers around ``stack_config``, ``pulumi.runtime.test``, the
   program body, the core calls it makes (``load_catalog``, ``profile_from_pulumi_config``, ``resolve``, each target's
   ``check_deploy`` and ``compile``, the exports), each component's constructor, the recording monitor
   (``RegisterResource``, thread CPU time: the SDK calls the monitor from executor threads) and what ``run_program``
   does after ``test()`` returns (resolving the stack outputs). Medians over ``--repeat`` runs.
4. Policy evaluation: ``run_pack(recorded)`` (12 policies, resource + stack), with the pack's per-stack cache warm
   and cleared (the latter is what one ``egress preview`` pays), and each policy alone, sorted by cost.
5. The warm in-process ``preview()`` + ``write()`` (what the CLI does after imports), with call counts of the core.
6. Cold: ``egress preview --stack S`` in a fresh process (wall, peak RSS from ``/usr/bin/time -v``), the program
   alone in a fresh process (also with the cyclic GC paused), and the empty floor in a fresh process (it imports pulumi and egress_preview.program for
   the same mocks), median of 3 each; and the program's cold imports per package (``python -X importtime``).
"""
from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
COLD_RUNS = 3


# ---------------------------------------------------------------------------------------------------------------------
# The floor: the program's resources, empty (or with the program's inputs), registered under the same mocks.

def floor_spec(recorded) -> list[dict[str, Any]]:
    """The recorded resources, parents before children: type, name, parent (index in this list), component?, inputs."""
    by_urn = {r.urn: r for r in recorded.resources}

    def depth(r) -> int:
        d = 0
        while r.parent in by_urn:
            r, d = by_urn[r.parent], d + 1
        return d

    ordered = sorted(recorded.resources, key=depth)  # stable: registration order within a depth
    index = {r.urn: i for i, r in enumerate(ordered)}
    return [{"type": r.type, "name": r.name, "parent": index.get(r.parent), "component": r.type.startswith("egress:"),
             "inputs": recorded.inputs.get(r.urn, {})} for r in ordered]


def floor_register(spec: list[dict[str, Any]], with_inputs: bool = False, outputs: Optional[dict[str, Any]] = None) -> Callable[[], None]:
    import pulumi

    def register() -> None:
        made: list = []
        for item in spec:
            opts = pulumi.ResourceOptions(parent=made[item["parent"]]) if item["parent"] is not None else None
            if item["component"]:
                made.append(pulumi.ComponentResource(item["type"], item["name"], None, opts))
            else:
                made.append(pulumi.CustomResource(item["type"], item["name"], dict(item["inputs"]) if with_inputs else {}, opts))
        for key, value in (outputs or {}).items():
            pulumi.export(key, value)

    return register


def program_register(stack_dir: Path, keep_globals: bool = True) -> Callable[[], Any]:
    """The program through the ``register=`` hook: as ``run_program`` runs it (returning the module's globals, which
    ``pulumi.runtime.test`` then turns into an Output) or returning None."""
    import runpy

    main = str(stack_dir / "__main__.py")

    def register():
        scope = runpy.run_path(main, run_name="__main__")
        return scope if keep_globals else None

    return register


# ---------------------------------------------------------------------------------------------------------------------
# Timers around the program's calls.

class Timers:
    def __init__(self) -> None:
        self.acc: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.marks: dict[str, float] = {}
        self._undo: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, attr: str, label: str, clock: Callable[[], float] = time.perf_counter) -> None:
        original = getattr(owner, attr)

        def timed(*args, **kwargs):
            started = clock()
            try:
                return original(*args, **kwargs)
            finally:
                self.acc[label] += clock() - started
                self.calls[label] += 1

        self._undo.append((owner, attr, original))
        setattr(owner, attr, timed)

    def timed_fn(self, fn: Callable, label: str) -> Callable:
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.acc[label] += time.perf_counter() - started
                self.calls[label] += 1
        return timed

    def reset(self) -> None:
        self.acc.clear()
        self.calls.clear()
        self.marks.clear()

    def undo(self) -> None:
        for owner, attr, original in reversed(self._undo):
            setattr(owner, attr, original)
        self._undo.clear()


def component_classes() -> list[type]:
    import pulumi

    out = []
    for name, module in sorted(sys.modules.items()):
        if name.startswith("components.") and module is not None:
            for value in vars(module).values():
                if isinstance(value, type) and issubclass(value, pulumi.ComponentResource) and value.__module__ == name:
                    out.append(value)
    return out


def install_program_timers(timers: Timers) -> None:
    import egress.catalog
    import egress.exports
    import egress.profile
    import egress.render
    import egress.resolve
    import egress.targets
    import egress_preview.program as program

    timers.wrap(program, "stack_config", "stack file read (stack_config)")
    timers.wrap(egress.catalog, "load_catalog", "load_catalog")
    timers.wrap(egress.profile, "profile_from_pulumi_config", "profile_from_pulumi_config")
    timers.wrap(egress.resolve, "resolve", "resolve")
    timers.wrap(egress.render, "requirement_json", "exports: requirement_json")
    timers.wrap(egress.exports, "allowlist_exports", "exports: allowlist_exports")
    original_target = egress.targets.target

    def target(name: str):
        spec = original_target(name)
        return dataclasses.replace(spec, compile=timers.timed_fn(spec.compile, f"compile {name}"),
                                   check_deploy=timers.timed_fn(spec.check_deploy, f"check_deploy {name}"))

    timers._undo.append((egress.targets, "target", original_target))
    egress.targets.target = target
    for cls in component_classes():
        timers.wrap(cls, "__init__", f"component {cls.__name__}")
    timers.wrap(program.RecordingMonitor, "RegisterResource", "recorder: RegisterResource (thread CPU)", time.thread_time)
    test_wrapper(timers)


def test_wrapper(timers: Timers) -> None:
    """``pulumi.runtime.test(fn)`` returns a wrapper; time the wrapper's run (not its creation)."""
    import pulumi.runtime

    original = pulumi.runtime.test

    def test(fn):
        wrapped = original(fn)

        def run(*args, **kwargs):
            started = time.perf_counter()
            try:
                return wrapped(*args, **kwargs)
            finally:
                timers.marks["test ended"] = time.perf_counter()
                timers.acc["pulumi.runtime.test"] += timers.marks["test ended"] - started
        return run

    timers._undo.append((pulumi.runtime, "test", original))
    pulumi.runtime.test = test


def timed_register(timers: Timers, register: Callable[[], Any], label: str) -> Callable[[], Any]:
    def run():
        started = time.perf_counter()
        try:
            return register()
        finally:
            timers.acc[label] += time.perf_counter() - started
    return run


# ---------------------------------------------------------------------------------------------------------------------
# Children (cold runs): imports included.

def child(mode: str, stack: str, spec_file: Optional[str]) -> None:
    from egress_preview.program import run_program

    if mode == "program-gc-paused":
        gc.disable()
        recorded = run_program(ROOT, stack)
    elif mode == "program":
        recorded = run_program(ROOT, stack)
    else:
        spec = json.loads(Path(spec_file).read_text())
        recorded = run_program(ROOT, stack, register=floor_register(spec))
    print(json.dumps({"resources": len(recorded.resources)}))


def run_cold(command: list[str]) -> tuple[float, float, str]:
    """(wall s, peak RSS MiB, stdout) of one fresh process."""
    env = {**os.environ, "CI": "1", "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", "")}
    timer = Path("/usr/bin/time").exists()
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "time.txt"
        full = ["/usr/bin/time", "-v", "-o", str(report), *command] if timer else command
        started = time.perf_counter()
        result = subprocess.run(full, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
        wall = time.perf_counter() - started
        if result.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr[-3000:]}")
        if timer:
            line = next(l for l in report.read_text().splitlines() if "Maximum resident set size" in l)
            rss_kib = float(line.rsplit(":", 1)[1])
        else:  # the children's maximum so far: each command runs in a fresh wrapper so the figure is its own
            probe = subprocess.run([sys.executable, "-c", "import resource, subprocess, sys; subprocess.run(sys.argv[1:], capture_output=True); "
                                    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)", *command],
                                   capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
            rss_kib = float(probe.stdout.strip().splitlines()[-1])
    return wall, rss_kib / 1024, result.stdout


def importtime_by_package(command: list[str]) -> dict[str, float]:
    """``python -X importtime``'s self times (s) summed per top-level package."""
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "CI": "1"}, timeout=300)
    out: dict[str, float] = defaultdict(float)
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            self_us, _, name = line.split(":", 1)[1].split("|")
            out[name.strip().split(".")[0]] += int(self_us) / 1e6
    return dict(out)


def cold_median(command: list[str]) -> tuple[float, float]:
    runs = [run_cold(command) for _ in range(COLD_RUNS)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


# ---------------------------------------------------------------------------------------------------------------------

def median_s(action: Callable[[], Any], runs: int) -> tuple[float, float, Any]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - started)
    return statistics.median(times), min(times), result


def gc_paused(action: Callable[[], Any]) -> Callable[[], Any]:
    """``action`` with the cyclic collector paused, as the core's load and resolve already run (issue 2)."""
    def run():
        gc.disable()
        try:
            return action()
        finally:
            gc.enable()
    return run


def peak_mib(action: Callable[[], Any]) -> float:
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def clear_pack_cache() -> None:
    from egress_policies import support

    support._catalog.cache_clear()
    support._context.cache_clear()
    support._VERDICTS.clear()


def clear_verdicts() -> None:
    from egress_policies import support

    support._VERDICTS.clear()


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", help="stack to bench (default: the one registering the most resources)")
    parser.add_argument("--repeat", type=int, default=5, help="alternations of program and floors (default 5)")
    parser.add_argument("--child", choices=("program", "program-gc-paused", "floor"), help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.stack, args.spec)
        return
    bench_started = time.perf_counter()

    from egress_policies import POLICIES
    from pulumi_policy import StackValidationPolicy

    from egress.project import open_project
    from egress_preview.pack import analyze_requests, analyze_stack_request, run_pack
    from egress_preview.preview import preview, write
    from egress_preview.program import ProgramError, run_program

    project = open_project(ROOT)
    repeat = max(1, args.repeat)
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()

    # 1. The stacks (the first run also imports the provider SDKs: its time is not compared).
    print("| stack | resources | requirements | program s (one run) |")
    print("|---|---:|---:|---:|")
    sizes = {}
    for name in project.stacks():
        started = time.perf_counter()
        try:
            recorded = run_program(ROOT, name)
        except ProgramError as exc:
            print(f"| {name} | error: {exc} | | |")
            continue
        seconds = time.perf_counter() - started
        sizes[name] = (len(recorded.resources), recorded.outputs.get("requirementCount", 0))
        print(f"| {name} | {sizes[name][0]} | {sizes[name][1]} | {seconds:.2f} |")
    stack = args.stack or max(sizes, key=lambda s: (sizes[s][0], sizes[s][1]))
    print()
    print(f"benched stack: {stack} ({sizes[stack][0]} resources, {sizes[stack][1]} requirements)")
    print()

    # 2. Warm: program and floors, alternating.
    recorded = run_program(ROOT, stack)
    run_pack(recorded)
    spec = floor_spec(recorded)
    outputs = dict(recorded.outputs)
    variants: dict[str, Callable[[], Any]] = {
        "program (run_program)": lambda: run_program(ROOT, stack),
        "program via register=, returning None": lambda: run_program(ROOT, stack, register=program_register(ROOT, keep_globals=False)),
        "SDK floor: empty resources": lambda: run_program(ROOT, stack, register=floor_register(spec)),
        "SDK floor: the program's inputs": lambda: run_program(ROOT, stack, register=floor_register(spec, with_inputs=True)),
        "SDK floor: the program's inputs + stack outputs": lambda: run_program(ROOT, stack, register=floor_register(spec, True, outputs)),
        "program, cyclic GC paused during the run": gc_paused(lambda: run_program(ROOT, stack)),
        "SDK floor: empty resources, cyclic GC paused": gc_paused(lambda: run_program(ROOT, stack, register=floor_register(spec))),
    }
    want_urns = sorted(r.urn for r in recorded.resources)
    for label, action in variants.items():  # one untimed run each, and the same resources registered
        got = sorted(r.urn for r in action().resources)
        if got != want_urns:
            raise SystemExit(f"{label}: registered {len(got)} resources, not the program's {len(want_urns)} URNs")
    times: dict[str, list[float]] = defaultdict(list)
    cpu: dict[str, list[float]] = defaultdict(list)
    for _ in range(repeat):
        for label, action in variants.items():
            gc.collect()  # every run starts from the same heap (and a paused run's cycles are not left to the next)
            started, started_cpu = time.perf_counter(), time.process_time()
            action()
            times[label].append(time.perf_counter() - started)
            cpu[label].append(time.process_time() - started_cpu)
    floor = statistics.median(times["SDK floor: empty resources"])
    peaks = {"program (run_program)": peak_mib(variants["program (run_program)"]),
             "SDK floor: empty resources": peak_mib(variants["SDK floor: empty resources"])}
    print(f"Warm, in one process, median of {repeat} (alternating, gc.collect() before each run); ratio = median / the empty "
          "floor's median; tracemalloc peak of one run")
    print()
    floor_cpu = statistics.median(cpu["SDK floor: empty resources"])
    print("| run | resources | median ms | min ms | ratio to floor | CPU ms (process, median) | CPU ratio | Python heap peak MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, values in times.items():
        peak = f"{peaks[label]:.1f}" if label in peaks else "-"
        print(f"| {label} | {len(recorded.resources)} | {ms(statistics.median(values))} | {ms(min(values))} | "
              f"{statistics.median(values) / floor:.2f} | {ms(statistics.median(cpu[label]))} | "
              f"{statistics.median(cpu[label]) / floor_cpu:.2f} | {peak} |")
    print()

    # 3. Where the time goes.
    timers = Timers()
    install_program_timers(timers)
    breakdown: dict[str, dict[str, list[float]]] = {}
    runs = {"program": lambda: run_program(ROOT, stack, register=timed_register(timers, program_register(ROOT), "body")),
            "floor (empty)": lambda: run_program(ROOT, stack, register=timed_register(timers, floor_register(spec), "body")),
            "floor (inputs)": lambda: run_program(ROOT, stack, register=timed_register(timers, floor_register(spec, True), "body")),
            "floor (inputs + outputs)": lambda: run_program(ROOT, stack, register=timed_register(timers, floor_register(spec, True, outputs), "body"))}
    try:
        for label, action in runs.items():
            action()  # untimed
            rows: dict[str, list[float]] = defaultdict(list)
            for _ in range(repeat):
                timers.reset()
                started = time.perf_counter()
                action()
                ended = time.perf_counter()
                total = ended - started
                acc = dict(timers.acc)
                body = acc.pop("body", 0.0)
                test = acc.pop("pulumi.runtime.test", 0.0)
                recorder = acc.pop("recorder: RegisterResource (thread CPU)", 0.0)
                stack_read = acc.pop("stack file read (stack_config)", 0.0)
                after_test = ended - timers.marks["test ended"]
                rows["run_program total"].append(total)
                rows["  stack file read (stack_config)"].append(stack_read)
                rows["  pulumi.runtime.test: body, registrations, returned value awaited"].append(test)
                rows["    body (the program, or the floor's register function; synchronous)"].append(body)
                for key, value in acc.items():
                    rows[f"      {key}"].append(value)
                rows["      rest of the body (cached imports, Config, pulumi.export, ...)"].append(body - sum(acc.values()))
                rows["    SDK after the body: registrations drained, returned value awaited"].append(test - body)
                rows["      of which the recorder: RegisterResource, mocks incl. (thread CPU)"].append(recorder)
                rows["  after test(): run_program serialises the stack outputs once, closes the loop"].append(after_test)
                rows["  rest of run_program (event loop, set_mocks, config)"].append(total - stack_read - test - after_test)
            breakdown[label] = rows
    finally:
        timers.undo()
    labels = list(dict.fromkeys(k for rows in breakdown.values() for k in rows))
    program_total = statistics.median(breakdown["program"]["run_program total"])
    print(f"Where the time goes (timers around the calls, median of {repeat}; ms)")
    print()
    print("| part | " + " | ".join(breakdown) + " | share of program |")
    print("|---|" + "---:|" * (len(breakdown) + 1))
    for key in labels:
        cells = [ms(statistics.median(rows[key])) if key in rows else "-" for rows in breakdown.values()]
        share = statistics.median(breakdown["program"][key]) / program_total if key in breakdown["program"] else 0
        print(f"| {key.replace('  ', '&nbsp;&nbsp;')} | " + " | ".join(cells) + f" | {share:.0%} |")
    print()

    # 4. Policy evaluation.
    # "warm": the stack's requirements resolved already; every target judged afresh (a verdict is cached per analysis only)
    pack_warm, pack_warm_min, violations = median_s(lambda: (clear_verdicts(), run_pack(recorded))[1], repeat)

    def uncached():
        clear_pack_cache()
        return run_pack(recorded)

    pack_cold, pack_cold_min, _ = median_s(uncached, repeat)
    requests_s, _, _ = median_s(lambda: (analyze_requests(recorded.resources, recorded.inputs), analyze_stack_request(recorded.resources)), repeat)
    print(f"Policy evaluation: run_pack over {len(recorded.resources)} resources, {len(POLICIES)} policies, {len(violations)} violations "
          f"(median of {repeat}; target < 500 ms)")
    print()
    print("| run | median ms | min ms |")
    print("|---|---:|---:|")
    print(f"| run_pack, the pack's stack cache warm | {ms(pack_warm)} | {ms(pack_warm_min)} |")
    print(f"| run_pack, cache cleared (catalog + resolve again, as one egress preview) | {ms(pack_cold)} | {ms(pack_cold_min)} |")
    print(f"| of which building the requests (protobuf Structs) | {ms(requests_s)} | - |")
    print()
    per_policy = []
    for policy in POLICIES:
        median, _, found = median_s(lambda: (clear_verdicts(), run_pack(recorded, policies=[policy]))[1], repeat)
        kind = "stack" if isinstance(policy, StackValidationPolicy) else "resource"
        per_policy.append((median, policy.name, kind, len(found)))
    print("| policy (alone, cache warm; requests built each time) | kind | median ms | violations |")
    print("|---|---|---:|---:|")
    for median, name, kind, found in sorted(per_policy, reverse=True):
        print(f"| {name} | {kind} | {ms(median)} | {found} |")
    print()

    # 5. The whole preview in-process (warm imports), with the core's call counts.
    timers = Timers()
    import egress.catalog
    import egress.resolve
    import egress.targets
    import egress.project
    import egress_preview.preview as preview_module

    timers.wrap(egress.catalog, "load_catalog", "load_catalog")
    timers.wrap(egress.project, "load_catalog", "load_catalog")  # Project.catalog's own reference
    timers.wrap(egress.resolve, "resolve", "resolve")
    timers.wrap(egress.project, "resolve", "resolve")
    import egress_policies.support as support
    timers.wrap(support, "load_catalog", "load_catalog")
    timers.wrap(support, "resolve", "resolve")
    for name, spec_ in list(egress.targets.TARGETS.items()):
        timers._undo.append((egress.targets.TARGETS, name, spec_))
    for attr, label in (("run_program", "run_program"), ("run_pack", "run_pack"), ("_coverage", "coverage"), ("_renders", "renders")):
        timers.wrap(preview_module, attr, label)
    try:
        for name, spec_ in list(egress.targets.TARGETS.items()):
            egress.targets.TARGETS[name] = dataclasses.replace(spec_, compile=timers.timed_fn(spec_.compile, "compile (all targets)"))
        with tempfile.TemporaryDirectory() as scratch:
            def whole():
                clear_pack_cache()
                result = preview(project, stack)
                write(result, Path(scratch))
                return result

            whole()
            parts: dict[str, list[float]] = defaultdict(list)
            counts: dict[str, int] = {}
            totals = []
            for _ in range(repeat):
                timers.reset()
                started = time.perf_counter()
                whole()
                totals.append(time.perf_counter() - started)
                for key, value in timers.acc.items():
                    parts[key].append(value)
                counts = dict(timers.calls)
    finally:
        for owner, attr, original in reversed(timers._undo):
            if isinstance(owner, dict):
                owner[attr] = original
            else:
                setattr(owner, attr, original)
    print(f"Whole preview in-process (preview() + write(), warm imports, pack cache cleared; median of {repeat})")
    print()
    print("| part | calls | median ms |")
    print("|---|---:|---:|")
    print(f"| preview() + write() | 1 | {ms(statistics.median(totals))} |")
    for key in ("run_program", "run_pack", "coverage", "renders", "load_catalog", "resolve", "compile (all targets)"):
        if key in parts:
            print(f"| {key} | {counts.get(key, 0)} | {ms(statistics.median(parts[key]))} |")
    print()

    # 6. Cold.
    with tempfile.TemporaryDirectory() as scratch:
        spec_file = Path(scratch) / "spec.json"
        spec_file.write_text(json.dumps([{**item, "inputs": {}} for item in spec]))
        me = [sys.executable, str(Path(__file__).resolve())]
        egress_cli = str(Path(sys.executable).parent / "egress")
        cli = cold_median([egress_cli, "preview", "--stack", stack, "--out", str(Path(scratch) / "out")])
        program_cold = cold_median([*me, "--child", "program", "--stack", stack])
        program_gc_cold = cold_median([*me, "--child", "program-gc-paused", "--stack", stack])
        floor_cold = cold_median([*me, "--child", "floor", "--stack", stack, "--spec", str(spec_file)])
        bare = cold_median([sys.executable, "-c", "pass"])
        imports = [importtime_by_package([sys.executable, "-X", "importtime", *me[1:], "--child", "program", "--stack", stack])
                   for _ in range(COLD_RUNS)]
    print(f"Cold: fresh processes, imports included (median of {COLD_RUNS}; wall from spawn to exit, peak RSS from /usr/bin/time -v)")
    print()
    print("| process | wall s | peak RSS MiB | ratio to floor |")
    print("|---|---:|---:|---:|")
    for label, (wall, rss) in ((f"egress preview --stack {stack}", cli), (f"program alone (run_program, {stack})", program_cold),
                               ("program alone, cyclic GC paused (gc.disable() first)", program_gc_cold),
                               ("SDK floor: empty resources (imports pulumi + egress_preview.program)", floor_cold),
                               ("python -c pass", bare)):
        print(f"| {label} | {wall:.2f} | {rss:.0f} | {wall / floor_cold[0]:.2f} |")
    print()
    medians = {k: statistics.median(run.get(k, 0.0) for run in imports) for k in set().union(*imports)}
    packages = sorted(medians, key=lambda k: -medians[k])
    shown = [k for k in packages if medians[k] >= 0.01]
    print(f"Cold imports of the program alone (python -X importtime, self time summed per top-level package, median of {COLD_RUNS}; "
          "importtime's own overhead inflates them)")
    print()
    print("| package | s |")
    print("|---|---:|")
    for key in shown:
        print(f"| {key} | {medians[key]:.2f} |")
    print(f"| other ({len(packages) - len(shown)} packages) | "
          f"{statistics.median(sum(v for k, v in run.items() if k not in shown) for run in imports):.2f} |")
    print(f"| all imports | {statistics.median(sum(run.values()) for run in imports):.2f} |")
    print()
    print(f"bench wall time {time.perf_counter() - bench_started:.0f} s; load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
