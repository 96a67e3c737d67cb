"""What the egress learn tests share: run the command on fixture logs in a project copy, and prove nothing else changed."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import yaml

DATA = Path(__file__).parent / "data" / "learn"
EXPECTED = DATA / "expected"


def tree_digest(root: Path) -> dict[str, str]:
    """Every file of the project copy (but the logs and the proposals) with its digest: learning must change none."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.relative_to(root).parts[0] in ("logs", "out")}


def run_learn(run_cli, project: Path, stack: str, *logs: str, fmt: str | None = None) -> tuple[int, str, str, str]:
    """Copy the fixture ``logs`` to PROJECT/logs/, run ``egress learn`` from PROJECT; (code, stdout, stderr, proposals)."""
    (project / "logs").mkdir(exist_ok=True)
    for name in logs:
        shutil.copyfile(DATA / name, project / "logs" / name)
    before = tree_digest(project)
    args = ["learn", "--stack", stack, *(f"logs/{name}" for name in logs), "--out", "out/proposals.yaml", "--project", str(project)]
    (project / "out").mkdir(exist_ok=True)
    code, out, err = run_cli(*args, *(["--format", fmt] if fmt else []), cwd=project)
    assert tree_digest(project) == before, "egress learn changed a file of the project"
    written = project / "out" / "proposals.yaml"
    return code, out, err, written.read_text() if written.exists() else ""


def expected(name: str) -> str:
    return (EXPECTED / name).read_text()


def proposals(text: str) -> dict:
    return yaml.safe_load(text)
