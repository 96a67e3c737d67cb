"""egress render / egress preview --out DIR (issue 17, item 8): only what an earlier run wrote is replaced or removed
(DIR/.egress-manifest.json with hashes), links are never followed, and a folder that is not output is refused before
anything changes."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from egress.outdir import MANIFEST, OutDirError, check_out_dir, write_output

ROOT = Path(__file__).resolve().parents[1]


def _render(run_cli, out: Path, *args: str) -> tuple[int, str]:
    code, stdout, err = run_cli("render", *args, "--out", str(out), "--project", str(ROOT))
    assert stdout == ""
    return code, " ".join(err.split())


def _tree(directory: Path) -> dict[str, str]:
    """Every entry below ``directory`` (links shown as links, not followed)."""
    out = {}
    for path in sorted(directory.rglob("*")):
        relative = str(path.relative_to(directory))
        out[relative] = f"-> {os.readlink(path)}" if path.is_symlink() else ("/" if path.is_dir() else path.read_text())
    return out


def test_a_rendered_folder_keeps_a_foreign_file_and_links(run_cli, tmp_path):
    """The issue's acceptance check: stale files of the earlier run go; the user's file and symbolic links stay, and
    nothing behind a link is touched."""
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.txt").write_text("mine")
    assert _render(run_cli, out, "--stack", "aks-public", "--target", "azure")[0] == 0
    (out / "azure" / "notes.txt").write_text("foreign")
    (out / "azure" / "file-link").symlink_to(elsewhere / "precious.txt")
    (out / "azure" / "dir-link").symlink_to(elsewhere, target_is_directory=True)
    code, err = _render(run_cli, out, "--stack", "dev", "--target", "azure")
    assert code == 0, err
    tree = _tree(out)
    assert tree["azure/notes.txt"] == "foreign"
    assert tree["azure/file-link"] == f"-> {elsewhere / 'precious.txt'}" and tree["azure/dir-link"] == f"-> {elsewhere}"
    assert (elsewhere / "precious.txt").read_text() == "mine" and sorted(p.name for p in elsewhere.iterdir()) == ["precious.txt"]
    assert not [name for name in tree if "aks-public" in name]  # the earlier run's files are gone
    manifest = json.loads((out / MANIFEST).read_text())["files"]
    assert sorted(manifest) == ["azure/egress-dev-aks.json", "azure/egress-dev-kkp.json", "azure/egress-dev-openshift.json",
                                "azure/ip-groups/egress-dev-nodes.json"]


def test_a_symlinked_target_folder_is_never_written_through(run_cli, tmp_path):
    """out/azure pointing at a source folder (how --out egress/targets wiped 27 files): refused, nothing deleted there."""
    out, sources = tmp_path / "out", tmp_path / "sources"
    sources.mkdir()
    (sources / "egress-dev-aks.json").write_text("a source file that happens to share a name")
    (sources / "compile.py").write_text("print('source')\n")
    out.mkdir()
    (out / "azure").symlink_to(sources, target_is_directory=True)
    code, err = _render(run_cli, out, "--stack", "dev", "--target", "azure")  # no manifest: a link is never ours
    assert code == 1 and "Traceback" not in err and f"--out '{out}' is not empty and egress did not write it" in err
    assert _render(run_cli, out / "aws-only", "--stack", "dev", "--target", "aws")[0] == 0
    os.replace(out / "azure", out / "aws-only" / "azure")  # now in a folder egress wrote
    manifest = (out / "aws-only" / MANIFEST).read_text()
    code, err = _render(run_cli, out / "aws-only", "--stack", "dev", "--target", "azure")
    assert code == 1 and "Traceback" not in err
    assert f"cannot write azure/egress-dev-aks.json: {out / 'aws-only' / 'azure'} is a symbolic link; egress never writes through links" in err
    assert _tree(sources) == {"compile.py": "print('source')\n", "egress-dev-aks.json": "a source file that happens to share a name"}
    assert (out / "aws-only" / MANIFEST).read_text() == manifest  # nothing was written


def test_a_source_folder_is_refused_whole(run_cli, tmp_path):
    """A package laid out like the targets (azure/, aws/, kubernetes/ with sources): refused, every file intact."""
    package = tmp_path / "targets"
    for relative in ("__init__.py", "azure/__init__.py", "azure/compile.py", "aws/compile.py", "kubernetes/render.py"):
        (package / relative).parent.mkdir(parents=True, exist_ok=True)
        (package / relative).write_text(f"# {relative}\n")
    before = _tree(package)
    code, err = _render(run_cli, package, "--stack", "dev")
    assert code == 1
    assert f"--out '{package}' is not empty and egress did not write it (no .egress-manifest.json): it holds __init__.py, " \
           "aws/compile.py, azure/__init__.py and 2 more" in err and "nothing was written or deleted" in err
    assert _tree(package) == before


def test_the_project_and_git_are_refused(run_cli, tmp_path):
    code, err = _render(run_cli, ROOT, "--stack", "dev")
    assert code == 1 and "is the project or holds it" in err
    code, err = _render(run_cli, ROOT.parent, "--stack", "dev")
    assert code == 1 and "is the project or holds it" in err
    with pytest.raises(OutDirError, match="inside a git directory"):
        check_out_dir(tmp_path / "repo" / ".git" / "out")


@pytest.mark.parametrize("kind", ["file", "device", "below-a-file", "link"])
def test_an_out_that_is_not_a_folder_is_one_clear_error(run_cli, tmp_path, kind):
    target = {"file": tmp_path / "a-file", "device": Path("/dev/null"), "below-a-file": tmp_path / "a-file" / "out",
              "link": tmp_path / "link"}[kind]
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "folder").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "folder", target_is_directory=True)
    code, err = _render(run_cli, target, "--stack", "dev", "--target", "azure")
    assert code == 1 and "Traceback" not in err and err.count("Error: ") == 1
    assert {"file": "is a file, not a folder", "device": "is a character device, not a folder",
            "below-a-file": "cannot create the folder (Not a directory)", "link": "is a symbolic link"}[kind] in err
    assert (tmp_path / "a-file").read_text() == "x" and list((tmp_path / "folder").iterdir()) == []


def test_a_file_changed_by_the_user_is_kept_and_named(run_cli, tmp_path):
    out = tmp_path / "out"
    assert _render(run_cli, out, "--stack", "dev", "--target", "azure")[0] == 0
    edited = out / "azure" / "egress-dev-kkp.json"
    edited.write_text("{}\n")
    manifest = (out / MANIFEST).read_text()
    code, err = _render(run_cli, out, "--stack", "dev", "--target", "azure")  # would overwrite it: refused, nothing changes
    assert code == 1 and f"{edited} was changed since egress wrote it, and this run would overwrite it" in err
    assert edited.read_text() == "{}\n" and (out / MANIFEST).read_text() == manifest
    code, err = _render(run_cli, out, "--stack", "aks-public", "--target", "azure")  # no longer output: kept, named
    assert code == 0 and f"kept {edited}: changed since egress wrote it" in err
    assert edited.read_text() == "{}\n" and not (out / "azure" / "egress-dev-aks.json").exists()
    assert "azure/egress-dev-kkp.json" not in json.loads((out / MANIFEST).read_text())["files"]  # the user's now


def test_other_targets_files_stay_and_stay_listed(tmp_path):
    first = write_output(tmp_path, {"azure/a.json": "a", "aws/b.json": "b"}, ["azure", "aws"])
    assert [p.name for p in first.written] == ["b.json", "a.json"]
    second = write_output(tmp_path, {"azure/c.json": "c"}, ["azure"])
    assert [p.name for p in second.removed] == ["a.json"] and (tmp_path / "aws" / "b.json").read_text() == "b"
    assert sorted(json.loads((tmp_path / MANIFEST).read_text())["files"]) == ["aws/b.json", "azure/c.json"]
    third = write_output(tmp_path, {"azure/c.json": "c"}, ["azure", "aws"])
    assert [p.name for p in third.removed] == ["b.json"] and not (tmp_path / "aws").exists()  # emptied folders go too


def test_removal_never_follows_a_link(tmp_path):
    """A folder an earlier run wrote was replaced by a link: the file behind it has the recorded hash, but is kept."""
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    write_output(out, {"azure/groups/g.json": "g", "azure/x.json": "x"}, ["azure"])
    (out / "azure" / "groups" / "g.json").unlink()
    (out / "azure" / "groups").rmdir()
    elsewhere.mkdir()
    (elsewhere / "g.json").write_text("g")
    (out / "azure" / "groups").symlink_to(elsewhere, target_is_directory=True)
    result = write_output(out, {"azure/x.json": "x"}, ["azure"])
    assert result.removed == [] and (elsewhere / "g.json").read_text() == "g"
    assert result.kept == [f"kept {out / 'azure' / 'groups' / 'g.json'}: not followed ({out / 'azure' / 'groups'} is a symbolic link; "
                           "egress never writes through links)"]


def test_a_folder_from_before_the_manifest_is_adopted_only_when_it_holds_just_this_runs_files(tmp_path):
    files = {"azure/a.json": "new a", "resources.json": "{}"}
    (tmp_path / "azure").mkdir()
    (tmp_path / "azure" / "a.json").write_text("old a")
    write_output(tmp_path, files, ["azure", "resources.json"])
    assert (tmp_path / "azure" / "a.json").read_text() == "new a" and (tmp_path / MANIFEST).exists()
    other = tmp_path / "other"
    (other / "azure").mkdir(parents=True)
    (other / "azure" / "a.json").write_text("old a")
    (other / "azure" / "old.json").write_text("an earlier render's, or the user's: unknown without a manifest")
    with pytest.raises(OutDirError, match=r"is not empty and egress did not write it .*: it holds azure/old.json\."):
        write_output(other, files, ["azure", "resources.json"])
    assert (other / "azure" / "a.json").read_text() == "old a"


@pytest.mark.parametrize("manifest, problem", [
    ("not json", "not readable JSON"),
    ('{"files": {}}', "not a manifest egress wrote"),
    ('{"format": "egress-matrix output manifest", "files": {"../../etc/passwd": "' + "0" * 64 + '"}}', "is not a plain relative path"),
    ('{"format": "egress-matrix output manifest", "files": {"/etc/passwd": "' + "0" * 64 + '"}}', "is not a plain relative path"),
])
def test_a_manifest_egress_did_not_write_is_refused(tmp_path, manifest, problem):
    (tmp_path / MANIFEST).write_text(manifest)
    with pytest.raises(OutDirError, match=problem):
        write_output(tmp_path, {"azure/a.json": "a"}, ["azure"])
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST]


def test_writes_are_deterministic_and_a_rerun_changes_nothing(tmp_path):
    files = {"azure/b.json": "b", "azure/a.json": "a", "resources.json": "{}"}
    write_output(tmp_path, files, ["azure", "resources.json"])
    manifest = (tmp_path / MANIFEST).read_text()
    result = write_output(tmp_path, dict(reversed(list(files.items()))), ["resources.json", "azure"])
    assert result.removed == [] and result.kept == [] and (tmp_path / MANIFEST).read_text() == manifest
    assert list(json.loads(manifest)["files"]) == ["azure/a.json", "azure/b.json", "resources.json"]


def test_preview_and_render_share_one_folder(run_cli, tmp_path):
    """preview writes resources.json and the renders; a render of one target afterwards replaces only that target's
    files, and the preview's resources.json stays listed (a later preview may replace it)."""
    code, _, err = run_cli("preview", "--stack", "proxy-only", "--out", str(tmp_path), "--project", str(ROOT))
    assert code == 0, err
    listed = json.loads((tmp_path / MANIFEST).read_text())["files"]
    assert "resources.json" in listed and any(name.startswith("kubernetes/") for name in listed)
    (tmp_path / "kubernetes" / "my-notes.md").write_text("mine")
    code, err = _render(run_cli, tmp_path, "--stack", "proxy-only", "--target", "kubernetes")
    assert code == 0, err
    assert json.loads((tmp_path / MANIFEST).read_text())["files"] == listed
    assert (tmp_path / "kubernetes" / "my-notes.md").read_text() == "mine"


def test_a_manifest_that_cannot_be_written_is_an_error_not_a_silent_success(tmp_path, monkeypatch):
    # Without the manifest the next run could not tell these files from the user's (it would refuse the folder).
    def refuse(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("egress.outdir._write_manifest", refuse)
    with pytest.raises(OutDirError, match=r"cannot record what was written \(No space left on device\)"):
        write_output(tmp_path / "out", {"azure/a.json": "a"}, ["azure"])
