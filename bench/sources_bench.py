"""Benchmark: the policy pack and ``egress preview`` of a stack whose nodes have many ``/32`` sources; prints Markdown.

    .venv/bin/python bench/sources_bench.py [--sources 250 1000 10000] [--repeat 3] [--base REF] [--timeout 600]

The dev stack (every target) with ``nodeSources`` replaced by N ``/32``s (``10.200.0.7/32``, ``10.200.1.7/32``, ...,
outside every other role's sources), in a temporary project: its stack file, the checkout's ``Pulumi.yaml`` and
``__main__.py``, and links to the code and matrix measured. Every figure comes from a fresh process (run with that code
first on ``PYTHONPATH``), as each engine run starts the pack anew:
- pack: the program runs once under the mocks per phase (``run_program``, "up" and a first "preview"), then ``run_pack``
  with every cache of the pack and the core cleared (what the pack process pays after its imports), median of
  ``--repeat``; then, after up, each target's ``evaluate`` and ``target_allows`` (the breadth policy's flows) on the
  artefacts rebuilt from the resources, caches cleared, one run each;
- ``egress preview``: the whole command (imports, program, pack, coverage, renders, files), wall time, median of
  ``--repeat`` (one run at 10,000 sources).
``--base REF``: the same with the code of commit REF (``git archive``), in columns before the checkout's, once per
figure (``--base-repeat``). A process that runs past ``--timeout`` seconds is stopped and shown as "> T"; once a
code's pack or preview is stopped, larger source counts are not run for it (the time only grows with the sources).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
LINKED = ("matrix", "egress", "egress_preview", "components", "policy")
COPIED = ("Pulumi.yaml", "__main__.py")
STACK = "dev"


def node_sources(count: int) -> list[str]:
    return [f"10.{200 + i // 256}.{i % 256}.7/32" for i in range(count)]


def make_project(code: Path, directory: Path, count: int) -> Path:
    directory.mkdir(parents=True)
    for name in COPIED:
        shutil.copy(code / name, directory / name)
    for name in LINKED:
        (directory / name).symlink_to(code / name)
    (directory / "stacks").mkdir()
    text = (code / "stacks" / f"Pulumi.{STACK}.yaml").read_text()
    text, replaced = re.subn(r"(egress-matrix:nodeSources:) \[.*\]", lambda m: f"{m.group(1)} [{', '.join(node_sources(count))}]", text)
    if replaced != 1:
        raise SystemExit(f"stacks/Pulumi.{STACK}.yaml: no single 'egress-matrix:nodeSources: [...]' line to replace")
    (directory / "stacks" / f"Pulumi.{STACK}.yaml").write_text(text)
    return directory


# ---------------------------------------------------------------------------------------------------------------------
# In the child: the code measured is first on sys.path.

def clear_caches() -> None:
    """Every memo of the pack and the core: a new engine run starts a new pack process."""
    from egress_policies import support

    for name, module in list(sys.modules.items()):
        if module is not None and name.split(".")[0] in ("egress", "egress_policies"):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()
    for cache in ("_VERDICTS", "_PLANS"):
        getattr(support, cache, {}).clear()


def child_pack(project: Path, repeat: int) -> None:
    import gc

    from egress_preview.pack import run_pack
    from egress_preview.program import run_program

    out: dict = {}
    for phase in ("up", "preview"):
        started = time.perf_counter()
        recorded = run_program(project, STACK, phase=phase)
        out[f"program {phase}"] = time.perf_counter() - started
        print(json.dumps({f"program {phase}": out[f"program {phase}"]}), flush=True)
        times = []
        for _ in range(repeat):
            clear_caches()
            gc.collect()
            started = time.perf_counter()
            violations = run_pack(recorded)
            times.append(time.perf_counter() - started)
            print(json.dumps({f"pack {phase} run": times[-1]}), flush=True)  # what a stopped run still shows
        out[f"pack {phase}"] = statistics.median(times)
        out[f"mandatory {phase}"] = sum(1 for v in violations if v.level == "mandatory")
        if phase == "up":
            out.update(per_target(recorded))
    print(json.dumps(out), flush=True)


def per_target(recorded) -> dict:
    from egress.project import open_project
    from egress.targets import TARGETS
    from egress.targets.allows import target_allows

    catalog, profile, requirements = open_project(Path.cwd()).requirements(STACK)
    out = {"requirements": len(requirements)}
    for name in profile.targets:
        spec = TARGETS[name]
        enforced = spec.enforced(catalog, profile, requirements)
        clear_caches()
        started = time.perf_counter()
        verdict = spec.evaluate(spec.deployed(recorded.resources), enforced, catalog)
        out[f"evaluate {name}"] = time.perf_counter() - started
        out[f"missing {name}"] = len(verdict.missing)
        clear_caches()
        started = time.perf_counter()
        target_allows(name, spec.deployed(recorded.resources), profile)
        out[f"allows {name}"] = time.perf_counter() - started
    return out


# ---------------------------------------------------------------------------------------------------------------------
# In the parent.

def run(command: list[str], code: Path, cwd: Path, timeout: float) -> tuple[Optional[float], str]:
    """(wall seconds or None when stopped, stdout)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), str(code / "policy")]), "CI": "1"}
    started = time.perf_counter()
    try:
        result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as stopped:
        return None, (stopped.stdout or b"").decode() if isinstance(stopped.stdout, bytes) else (stopped.stdout or "")
    wall = time.perf_counter() - started
    if result.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return wall, result.stdout


def measure(code: Path, project: Path, count: int, repeat: int, timeout: float, scratch: Path) -> dict:
    me = [sys.executable, str(Path(__file__).resolve())]
    wall, stdout = run([*me, "--child", str(project), "--repeat", str(repeat)], code, project, timeout)
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    if wall is not None and lines:
        figures = lines[-1]
    else:  # stopped: the runs that finished, each shown alone
        figures = {"stopped": True, **{k.removesuffix(" run"): v for line in lines for k, v in line.items()}}
    previews = []
    for number in range(repeat if count < 10_000 else 1):
        out = scratch / f"out-{count}-{number}"
        seconds, _ = run([sys.executable, "-c", "import sys; from egress.cli import main; sys.argv[0] = 'egress'; main()", "preview", "--stack",
                          STACK, "--project", str(project), "--out", str(out)], code, project, timeout)
        previews.append(seconds)
        if seconds is None:
            break
    figures["egress preview"] = None if None in previews else statistics.median(previews)
    return figures


def seconds(value: Optional[float], timeout: float) -> str:
    return f"> {timeout:.0f}" if value is None else f"{value:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=int, nargs="+", default=[250, 1000, 10_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--base", help="also measure the code of this commit (before)")
    parser.add_argument("--base-repeat", type=int, default=1, help="runs per figure for --base (default 1)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per process (default 600)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_pack(Path(args.child), args.repeat)
        return
    bench_started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        trees = {"checkout": ROOT}
        if args.base:
            base = scratch / "base"
            base.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.base], capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
            trees = {f"before ({args.base})": base, "after (checkout)": ROOT}
        results: dict[tuple[str, int], dict] = {}
        stopped: set[str] = set()
        for count in args.sources:
            for label, code in trees.items():
                if label in stopped:
                    results[label, count] = {"stopped": True, "egress preview": None}
                    continue
                project = make_project(code, scratch / f"project-{len(results)}", count)
                repeat = args.base_repeat if code != ROOT else args.repeat
                results[label, count] = measure(code, project, count, repeat, args.timeout, scratch)
                if results[label, count].get("stopped") or results[label, count]["egress preview"] is None:
                    stopped.add(label)
                print(f"<!-- {label}, {count} sources: {json.dumps(results[label, count])} -->", file=sys.stderr, flush=True)
    rows = [("egress preview --stack dev (fresh process, wall s)", "egress preview"),
            ("pack after up: run_pack, caches cleared (s)", "pack up"), ("pack at a first preview (s)", "pack preview"),
            ("program under the mocks, up (s)", "program up"),
            ("AWS evaluate (s)", "evaluate aws"), ("Azure evaluate (s)", "evaluate azure"), ("Kubernetes evaluate (s)", "evaluate kubernetes"),
            ("AWS target_allows (s)", "allows aws"), ("Azure target_allows (s)", "allows azure"), ("Kubernetes target_allows (s)", "allows kubernetes"),
            ("mandatory violations (up / preview)", "mandatory")]
    columns = [(label, count) for count in args.sources for label in trees]
    print(f"Stack dev with N /32 node sources; fresh processes; medians of {args.repeat} (one egress preview at 10,000"
          f"{f'; before: {args.base_repeat} run' if args.base else ''}); '> {args.timeout:.0f}': stopped at the timeout, or not run after a "
          "smaller count was")
    print()
    print("| figure | " + " | ".join(f"{count:,} sources{', ' + label if len(trees) > 1 else ''}" for label, count in columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for title, key in rows:
        cells = []
        for column in columns:
            figures = results[column]
            if key == "mandatory":
                cells.append(f"{figures.get('mandatory up', '-')} / {figures.get('mandatory preview', '-')}")
            elif key == "egress preview":
                cells.append(seconds(figures.get(key), args.timeout))
            elif key in figures:
                cells.append(f"{figures[key]:.2f}")
            else:
                cells.append(f"> {args.timeout:.0f}" if figures.get("stopped") else "-")
        print(f"| {title} | " + " | ".join(cells) + " |")
    print()
    print(f"bench wall time {time.perf_counter() - bench_started:.0f} s; load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
