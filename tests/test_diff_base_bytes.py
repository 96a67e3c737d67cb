"""egress diff --base: the base is exactly the committed bytes (issue 17 review). ``git archive`` honoured the base's
.gitattributes: a ``filter=`` driver the user's git config defines (git-lfs, or any command) ran with the user's
credentials, export-ignore left files out and export-subst rewrote them. And a base that exits 0 without the
preview's JSON as its last line is one DiffError naming the ref (was IndexError / JSONDecodeError)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from egress_preview.diff import DiffError, base_snapshot
from test_diff_base import _FAKE_TREE, fake_repo  # noqa: F401 - the fixture

GIT = ["-c", "user.name=t", "-c", "user.email=t@example.com"]


def _commit(repo: Path, files: dict[str, str], message: str = "change") -> None:
    for relative, text in files.items():
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(text)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), *GIT, "commit", "-qm", message], check=True)


def test_a_filter_driver_the_base_names_never_runs(fake_repo, tmp_path, monkeypatch):
    _commit(fake_repo, {".gitattributes": "* filter=marker\n"})
    marker = tmp_path / "marker"
    config = tmp_path / "gitconfig"  # set after the commit: the driver is the user's, named by the base's attributes
    config.write_text(f'[filter "marker"]\n\tsmudge = "touch {marker}; sed s/preview/SMUDGED/"\n\trequired = true\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    seen = base_snapshot(fake_repo, "HEAD", "dev")
    assert not marker.exists()
    assert seen["own_code"] == _FAKE_TREE["egress_preview/preview.py"]


def test_export_attributes_change_nothing(fake_repo):
    """export-ignore left the stacks out (the base then had no stack: every resource 'added'), export-subst rewrote
    $Format:...$ in the code that runs."""
    code = _FAKE_TREE["egress_preview/preview.py"] + "# $Format:%H$\n"
    _commit(fake_repo, {".gitattributes": "stacks/** export-ignore\negress_preview/preview.py export-subst\n",
                        "egress_preview/preview.py": code})
    seen = base_snapshot(fake_repo, "HEAD", "dev")
    assert "missing" not in seen and seen["own_code"] == code


def test_executable_bits_links_and_submodules_come_as_committed(fake_repo):
    tool = fake_repo / "tools" / "run.sh"
    _commit(fake_repo, {"tools/run.sh": "#!/bin/sh\necho hi\n"})
    tool.chmod(0o755)
    (fake_repo / "stacks" / "alias.yaml").symlink_to("Pulumi.dev.yaml")
    sha = subprocess.run(["git", "-C", str(fake_repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["git", "-C", str(fake_repo), "update-index", "--add", "--cacheinfo", f"160000,{sha},vendor/sub"], check=True)
    _commit(fake_repo, {"egress_preview/preview.py": _FAKE_TREE["egress_preview/preview.py"] + (
        "import os as _os\n_seen = preview\n"
        "def preview(project, stack):\n"
        "    out = _seen(project, stack)\n"
        "    out['tree'] = {'exec': _os.access('tools/run.sh', _os.X_OK), 'link': _os.readlink('stacks/alias.yaml'),\n"
        "                   'sub': _os.path.exists('vendor/sub')}\n"
        "    return out\n")})
    seen = base_snapshot(fake_repo, "HEAD", "dev")
    assert seen["tree"] == {"exec": True, "link": "Pulumi.dev.yaml", "sub": False}


@pytest.mark.parametrize("ending, shown", [
    ("import os\nos._exit(0)\n", "it wrote nothing"),
    ("import atexit\natexit.register(print, 'done \\x1b[31m')\n", "its last line is 'done \\x1b[31m'"),
    ("import atexit\natexit.register(print, '[1, 2]')\n", "its last line is '[1, 2]'"),
], ids=["nothing", "not-json", "not-an-object"])
def test_a_base_that_exits_0_without_its_result_is_one_error(fake_repo, ending, shown):
    preview = _FAKE_TREE["egress_preview/preview.py"].replace("def snapshot(result):\n", "def snapshot(result):\n" + "".join(
        f"    {line}\n" for line in ending.splitlines()))
    _commit(fake_repo, {"egress_preview/preview.py": preview})
    sha = subprocess.run(["git", "-C", str(fake_repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    with pytest.raises(DiffError) as caught:
        base_snapshot(fake_repo, "HEAD", "dev")
    assert str(caught.value) == (
        f"previewing stack 'dev' at 'HEAD' ({sha}) gave no result: the base's code exited 0 without the preview's JSON as its last "
        f"line of output ({shown}). Fix: compare against a ref whose egress preview --stack dev runs to the end")
