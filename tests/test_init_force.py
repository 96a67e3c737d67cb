"""egress init --force reads the stack file it replaces only when it is a file: a folder, a FIFO (reading one waits
forever) or a device there is refused before any question, and a file that is not UTF-8 is still replaced, its
diff shown with the undecodable bytes replaced (issue 17 review)."""

from __future__ import annotations

import os

import pytest

ARGS = ("-p", "aks", "--location", "westeurope", "--no-input", "--force")


def _init(run_cli, project, stack):
    return run_cli("init", stack, *ARGS, "--project", str(project))


@pytest.mark.parametrize("kind", ["folder", "fifo"])  # a link there (to a FIFO or anything) is refused as a link: test_init_links.py
def test_force_refuses_what_is_no_stack_file_and_writes_nothing(project_copy, run_cli, kind):
    stacks = project_copy / "stacks"
    path = stacks / "Pulumi.odd.yaml"
    if kind == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)
    before = sorted(p.name for p in stacks.iterdir())
    code, out, err = _init(run_cli, project_copy, "odd")
    message = " ".join(err.split())
    assert code == 1 and out == "" and "Traceback" not in err, err
    assert "stacks/Pulumi.odd.yaml: not a stack file (a folder, FIFO or device stands there)" in message
    assert "Fix: move it aside, or choose another stack name" in message
    assert sorted(p.name for p in stacks.iterdir()) == before  # no hidden .init- file left behind


def test_force_replaces_a_file_that_is_not_utf8(project_copy, run_cli):
    path = project_copy / "stacks" / "Pulumi.latin.yaml"
    path.write_bytes(b"config:\n  egress-matrix:clusterName: \"caf\xe9\"\n")
    code, out, err = _init(run_cli, project_copy, "latin")
    assert code == 0 and "Traceback" not in err, err
    assert "(replaced)" in err and "\ufffd" in err
    assert "westeurope" in path.read_text(encoding="utf-8")
