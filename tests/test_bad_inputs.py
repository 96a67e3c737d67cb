"""Every bad input gets exit 1 and one message naming file, field and value, and shows none of the secrets listed
under its `absent` (corpus: bad_inputs/cases.yaml)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

CASES = yaml.safe_load((Path(__file__).parent / "bad_inputs" / "cases.yaml").read_text())


def test_corpus_is_large_enough():
    assert len(CASES) >= 20
    assert len({case["name"] for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_bad_input(case, project_copy, run_cli, monkeypatch):
    for name, value in case.get("env", {}).items():  # the environment the case runs in (null: unset)
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value.replace("{project}", str(project_copy)))
    for relative, content in case.get("files", {}).items():  # extra input files, e.g. a JSON file an option names
        (project_copy / relative).parent.mkdir(parents=True, exist_ok=True)  # e.g. an own catalog's folder
        (project_copy / relative).write_text(content)
    if "replace" in case:
        target = project_copy / case["file"]
        text = target.read_text()
        old, new = case["replace"]
        assert old in text, f"case {case['name']} no longer applies: {old!r} not in {case['file']}"
        target.write_text(text.replace(old, new, 1))
    command = [arg.replace("{project}", str(project_copy)) for arg in case["command"]]  # {project}: the copy's root
    code, out, err = run_cli(*command, "--project", str(project_copy))
    message = " ".join(err.split())
    assert code == 1, (code, out, err)
    assert "Traceback" not in err and out == ""
    assert message.count("Error: ") == 1, message
    for fragment in case["expect"]:
        assert fragment in message, f"{fragment!r} missing from: {message}"
    for secret in case.get("absent", []):  # a secret the input holds: named by the message, never shown
        assert secret not in out and secret not in err, f"{secret!r} shown in: {message}"
