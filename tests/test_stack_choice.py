"""The stack a command means (issue 22 item 4, egress/stack_choice.py): --stack, else PULUMI_STACK, else the stack
`pulumi stack select` chose for this project (read from Pulumi's workspace file), else one error listing the stacks.

The workspace file's place and shape are Pulumi's (pulumi/pulumi pkg/workspace/workspace.go settingsPath and
settings.go Settings): $PULUMI_HOME/workspaces/<project name>-<sha1 hex of the Pulumi.yaml path>-workspace.json,
JSON {"stack": NAME} (older CLIs) or {"stacks": {BACKEND URL: NAME}}. The tests spell that out themselves rather than
asking the module, so a change of the module's naming fails here.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from egress.errors import ProjectError
from egress.stack_choice import choose_stack, pulumi_home

STACKS = ["aks-public", "dev", "kkp", "kkp-aws"]


def workspace_file(home: Path, project_file: Path, name: str = "egress-matrix") -> Path:
    digest = hashlib.sha1(str(project_file).encode()).hexdigest()
    return home / "workspaces" / f"{name}-{digest}-workspace.json"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "stacks").mkdir(parents=True)
    (project / "Pulumi.yaml").write_text("name: egress-matrix\nruntime: python\nstackConfigDir: stacks\n")
    return project


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "pulumi-home"


def select(home: Path, root: Path, settings: object) -> Path:
    path = workspace_file(home, root / "Pulumi.yaml")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(settings if isinstance(settings, str) else json.dumps(settings))
    return path


def test_the_option_wins_over_the_environment_and_the_selection(root, home):
    select(home, root, {"stack": "kkp"})
    choice = choose_stack(root, STACKS, "aks-public", {"PULUMI_STACK": "dev", "PULUMI_HOME": str(home)})
    assert (choice.name, choice.explicit, choice.note()) == ("aks-public", True, "")


def test_pulumi_stack_wins_over_the_selection_and_says_so(root, home):
    select(home, root, {"stack": "kkp"})
    choice = choose_stack(root, STACKS, None, {"PULUMI_STACK": "dev", "PULUMI_HOME": str(home)})
    assert choice.name == "dev"
    assert choice.note() == "note: stack 'dev' from PULUMI_STACK; pass --stack to choose another"


def test_an_empty_pulumi_stack_names_nothing_and_hides_the_selection_as_in_pulumi(root, home):
    select(home, root, {"stack": "kkp"})
    with pytest.raises(ProjectError) as raised:
        choose_stack(root, STACKS, None, {"PULUMI_STACK": "", "PULUMI_HOME": str(home)})
    assert "no stack chosen: no --stack, PULUMI_STACK set but empty (which hides Pulumi's selection), and no stack" in str(raised.value)
    assert choose_stack(root, STACKS, None, {"PULUMI_HOME": str(home)}).name == "kkp"


def test_a_fully_qualified_name_means_its_stack_file(root, home):
    assert choose_stack(root, STACKS, None, {"PULUMI_STACK": "acme/egress-matrix/kkp-aws", "PULUMI_HOME": str(home)}).name == "kkp-aws"
    select(home, root, {"stack": "organization/egress-matrix/dev"})
    assert choose_stack(root, STACKS, None, {"PULUMI_HOME": str(home)}).name == "dev"


def test_the_selection_per_backend(root, home):
    select(home, root, {"stack": "aks-public", "stacks": {"file:///state": "organization/egress-matrix/kkp",
                                                          "https://api.pulumi.com": "acme/egress-matrix/dev"}})
    env = {"PULUMI_HOME": str(home)}
    assert choose_stack(root, STACKS, None, {**env, "PULUMI_BACKEND_URL": "https://api.pulumi.com"}).name == "dev"
    assert choose_stack(root, STACKS, None, {**env, "PULUMI_BACKEND_URL": "file:///state"}).name == "kkp"
    # a backend with no entry of its own: the older unscoped selection, as Pulumi's StackForBackend
    assert choose_stack(root, STACKS, None, {**env, "PULUMI_BACKEND_URL": "s3://bucket"}).name == "aks-public"
    (root / "Pulumi.yaml").write_text("name: egress-matrix\nruntime: python\nbackend:\n  url: file:///state\n")
    assert choose_stack(root, STACKS, None, env).name == "kkp"


def test_one_stack_on_every_backend_needs_no_backend(root, home):
    select(home, root, {"stacks": {"file:///state": "kkp", "https://api.pulumi.com": "acme/egress-matrix/kkp"}})
    assert choose_stack(root, STACKS, None, {"PULUMI_HOME": str(home)}).name == "kkp"


def test_different_stacks_per_backend_are_not_guessed_between(root, home):
    path = select(home, root, {"stacks": {"file:///state": "kkp", "https://api.pulumi.com": "acme/egress-matrix/dev"}})
    with pytest.raises(ProjectError) as raised:
        choose_stack(root, STACKS, None, {"PULUMI_HOME": str(home)})
    message = str(raised.value)
    assert f"note: {path}: a different stack is selected per backend ('kkp' on file:///state, 'acme/egress-matrix/dev' on " \
           "https://api.pulumi.com) and PULUMI_BACKEND_URL does not say which backend is current, ignored" in message
    assert "no stack chosen" in message and "aks-public, dev, kkp, kkp-aws" in message


def test_nothing_anywhere_is_one_error_listing_the_stacks(root, home):
    with pytest.raises(ProjectError) as raised:
        choose_stack(root, STACKS, None, {"PULUMI_HOME": str(home)})
    assert str(raised.value) == (
        f"{root / 'stacks'}: no stack chosen: no --stack, PULUMI_STACK unset, and no stack selected in Pulumi for this project. "
        "Fix: pass --stack NAME (stacks here: aks-public, dev, kkp, kkp-aws), or set PULUMI_STACK=NAME, or run 'pulumi stack select NAME'")


@pytest.mark.parametrize("settings, note", [
    ('{"stack": ', "is not valid JSON, ignored: Expecting value at line 1"),
    ('["dev"]', "is not a JSON object, ignored"),
    (b"\xff\xfe{}", "could not be read, ignored: UnicodeDecodeError"),
])
def test_a_broken_workspace_file_is_ignored_with_a_note(root, home, settings, note):
    path = workspace_file(home, root / "Pulumi.yaml")
    path.parent.mkdir(parents=True)
    path.write_bytes(settings if isinstance(settings, bytes) else settings.encode())
    with pytest.raises(ProjectError) as raised:
        choose_stack(root, STACKS, None, {"PULUMI_HOME": str(home)})
    assert f"(note: {path} {note})" in str(raised.value) and "stacks here: aks-public, dev, kkp, kkp-aws" in str(raised.value)
    # nothing else is asked of it when a stack is named
    assert choose_stack(root, STACKS, None, {"PULUMI_HOME": str(home), "PULUMI_STACK": "dev"}).name == "dev"


def test_an_unknown_name_gets_a_suggestion_where_one_is_close(root, home):
    with pytest.raises(ProjectError) as raised:
        choose_stack(root, STACKS, None, {"PULUMI_STACK": "dve", "PULUMI_HOME": str(home)})
    assert str(raised.value) == (f"{root / 'stacks' / 'Pulumi.dve.yaml'}: stack 'dve' not found (named by PULUMI_STACK=dve); did you mean "
                                 "'dev'? Fix: use one of: aks-public, dev, kkp, kkp-aws, or create stacks/Pulumi.dve.yaml")
    with pytest.raises(ProjectError) as raised:
        choose_stack(root, STACKS, "production-eu", {"PULUMI_HOME": str(home)})
    assert "stack 'production-eu' not found. Fix: use one of:" in str(raised.value) and "did you mean" not in str(raised.value)


def test_a_selected_stack_without_a_file_names_where_it_was_selected(root, home):
    path = select(home, root, {"stack": "organization/egress-matrix/prod"})
    with pytest.raises(ProjectError) as raised:
        choose_stack(root, STACKS, None, {"PULUMI_HOME": str(home)})
    assert f"stack 'prod' not found (named by the selection of 'pulumi stack select' in {path}). Fix: use one of:" in str(raised.value)


def test_the_path_as_the_working_directory_spells_it(root, home, tmp_path):
    """Pulumi hashes the Pulumi.yaml path its working directory gives (Go keeps $PWD's symlinks), not the real path."""
    link = tmp_path / "link"
    link.symlink_to(root)
    path = workspace_file(home, link / "Pulumi.yaml")
    path.parent.mkdir(parents=True)
    path.write_text('{"stack": "kkp"}')
    env = {"PULUMI_HOME": str(home), "PWD": str(link / "stacks")}
    assert choose_stack(root.resolve(), STACKS, None, env).name == "kkp"
    with pytest.raises(ProjectError):  # without the logical path the file is not found
        choose_stack(root.resolve(), STACKS, None, {"PULUMI_HOME": str(home)})


def test_pulumi_home_defaults_to_the_users_home_from_the_password_database(monkeypatch):
    import pwd

    assert pulumi_home({"HOME": "/elsewhere"}) == Path(pwd.getpwuid(os.getuid()).pw_dir) / ".pulumi"
    assert pulumi_home({"PULUMI_HOME": "/opt/pulumi"}) == Path("/opt/pulumi")


# -- the CLI: every command on one stack asks the same resolver --------------------------------------------------------

ONE_STACK_COMMANDS = [
    ["matrix"], ["render", "--out", "{tmp}/out"], ["preview", "--out", "{tmp}/out"], ["diff", "--base", "HEAD"],
    ["explain", "mcr.microsoft.com:443"], ["learn", "--out", "{tmp}/learn.yaml"], ["export", "--for", "proxy"],
    ["probe", "--plan-only"],
]


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for name in ("PULUMI_STACK", "PULUMI_BACKEND_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PULUMI_HOME", str(tmp_path / "pulumi-home"))


@pytest.mark.parametrize("command", ONE_STACK_COMMANDS, ids=[c[0] for c in ONE_STACK_COMMANDS])
def test_every_command_on_one_stack_resolves_it_the_same_way(command, clean_env, monkeypatch, project_copy, run_cli, tmp_path):
    args = [a.replace("{tmp}", str(tmp_path)) for a in command]
    code, out, err = run_cli(*args, "--project", str(project_copy))
    message = " ".join(err.split())
    assert code == 1 and out == "" and message.count("Error: ") == 1 and "no stack chosen" in message, message
    monkeypatch.setenv("PULUMI_STACK", "kpk")
    code, out, err = run_cli(*args, "--project", str(project_copy))
    message = " ".join(err.split())
    assert code == 1 and out == "" and "stack 'kpk' not found (named by PULUMI_STACK=kpk); did you mean 'kkp'?" in message, message
    assert not (tmp_path / "out").exists() and not (tmp_path / "learn.yaml").exists()


def test_the_selected_stack_drives_the_cli_with_a_note(clean_env, project_copy, run_cli, tmp_path):
    select(tmp_path / "pulumi-home", project_copy.resolve(), {"stacks": {"https://api.pulumi.com": "acme/egress-matrix/ibm-vpc"}})
    code, out, err = run_cli("matrix", "--format", "csv", "--project", str(project_copy))
    assert code == 0, err
    assert "dd0.icr.io" in out and "note: stack 'ibm-vpc' from the selection of 'pulumi stack select' in" in " ".join(err.split())
    code, out_explicit, err = run_cli("matrix", "--stack", "ibm-vpc", "--format", "csv", "--project", str(project_copy))
    assert code == 0 and out_explicit == out and err == ""


def test_a_malformed_workspace_file_in_the_cli_is_one_error(clean_env, project_copy, run_cli, tmp_path):
    path = select(tmp_path / "pulumi-home", project_copy.resolve(), '{"stacks": {"file://~": "dev"')
    code, out, err = run_cli("explain", "mcr.microsoft.com:443", "--project", str(project_copy))
    message = " ".join(err.split())
    assert code == 1 and out == "" and "Traceback" not in err and message.count("Error: ") == 1
    assert f"(note: {path} is not valid JSON, ignored: Expecting" in message and "aks-public, aks-spoke" in message
