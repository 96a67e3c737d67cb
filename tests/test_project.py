"""Project contracts: pure core, Pulumi.yaml in step with the profile, generated docs current, README commands."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import yaml

from egress.docs import judged_on, matrix_markdown
from egress.profile import config_keys, declared_settings, structured_keys

ROOT = Path(__file__).resolve().parents[1]


def test_core_never_imports_pulumi():
    offenders = []
    for path in sorted((ROOT / "egress").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0].startswith("pulumi")]
    assert offenders == []


def test_core_imports_with_pulumi_blocked():
    code = ("import sys; sys.modules['pulumi'] = None\n"
            "import egress.cli, egress.resolve, egress.catalog, egress.render, egress.docs\n"
            "print('ok')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.stdout.strip() == "ok", result.stderr


def test_pulumi_yaml_declares_exactly_the_profile_settings():
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert project["name"] == "egress-matrix"
    assert project["stackConfigDir"] == "stacks"
    assert project["runtime"]["name"] == "python"
    assert project["config"] == config_keys(), "run 'egress docs config'"
    # settings that hold objects are not declared: Pulumi's project config types are string, integer, boolean and arrays
    assert set(structured_keys()) == {"sourceGroups", "entries", "containerRegistries", "runsOn"}
    assert not set(structured_keys()) & set(project["config"])


def test_docs_config_rewrites_only_the_config_section(run_cli, project_copy):
    target = project_copy / "Pulumi.yaml"
    original = target.read_text()
    target.write_text(original.replace("Cluster name:", "Stale text:"))
    code, _, err = run_cli("docs", "config", "--check", "--project", str(project_copy))
    assert code == 1 and "out of date" in err and "egress docs config" in err
    assert run_cli("docs", "config", "--project", str(project_copy))[0] == 0
    assert target.read_text() == original


def test_every_stack_uses_only_declared_keys():
    declared = set(declared_settings())  # Pulumi.yaml's declarations and the structured settings it cannot declare
    for stack_file in sorted((ROOT / "stacks").glob("Pulumi.*.yaml")):
        config = yaml.safe_load(stack_file.read_text())["config"]
        keys = {k.split(":", 1)[1] for k in config if k.startswith("egress-matrix:")}
        assert keys <= declared, (stack_file.name, keys - declared)


def test_stacks_named_by_the_issue_exist():
    names = {p.name for p in (ROOT / "stacks").glob("Pulumi.*.yaml")}
    for stack in ("dev", "aks-public", "aks-usgov", "aks-china", "kkp", "ibm-vpc", "openshift"):
        assert f"Pulumi.{stack}.yaml" in names


def test_matrix_doc_is_current(catalog):
    committed = (ROOT / "docs" / "MATRIX.md").read_text()
    assert committed == matrix_markdown(catalog, judged_on(committed)), "run: egress docs matrix"


def test_readme_first_screen_commands_and_ci():
    readme = (ROOT / "README.md").read_text()
    first_screen = "\n".join(readme.splitlines()[:40])
    assert "python3 dev.py egress matrix --stack dev" in first_screen
    assert "python3 dev.py test" in first_screen
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^python3 dev.py test$", ci, re.M)
