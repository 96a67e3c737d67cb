"""egress init never writes through a symbolic link (issue 17 review): its temporary file is a new file with an
unguessable name (mkstemp, O_EXCL), so a link planted at the name it used to use ('.Pulumi.<stack>.yaml.init-<pid>')
is never followed; a link where the stack file goes is refused, with or without --force, dangling or not."""
from __future__ import annotations

import os
import stat

import pytest

ARGS = ("-p", "aks", "--location", "westeurope", "--no-input")


def _init(run_cli, project, stack, *more):
    return run_cli("init", stack, *ARGS, *more, "--project", str(project))


def test_a_link_planted_at_the_old_temporary_name_is_not_written_through(project_copy, run_cli, tmp_path_factory):
    victim = tmp_path_factory.mktemp("victim") / "precious"
    victim.write_text("keep me\n")
    stacks = project_copy / "stacks"
    planted = stacks / f".Pulumi.fresh.yaml.init-{os.getpid()}"  # the process is this one: run_cli runs egress in-process
    planted.symlink_to(victim)
    code, out, err = _init(run_cli, project_copy, "fresh")
    assert code == 0, err
    assert victim.read_text() == "keep me\n" and planted.is_symlink()
    written = stacks / "Pulumi.fresh.yaml"
    assert not written.is_symlink() and "westeurope" in written.read_text()
    assert sorted(p.name for p in stacks.iterdir() if ".init" in p.name) == [planted.name]  # no temporary left behind


def test_the_stack_file_has_the_mode_a_plain_write_gives(project_copy, run_cli):
    old = os.umask(0o022)
    try:
        code, _, err = _init(run_cli, project_copy, "moded")
    finally:
        os.umask(old)
    assert code == 0, err
    assert stat.S_IMODE((project_copy / "stacks" / "Pulumi.moded.yaml").stat().st_mode) == 0o644  # not mkstemp's 0600


@pytest.mark.parametrize("force", [(), ("--force",)], ids=["plain", "force"])
@pytest.mark.parametrize("points_to", ["nowhere", "a-file", "a-fifo"])
def test_a_link_where_the_stack_file_goes_is_refused(project_copy, run_cli, tmp_path_factory, force, points_to):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    target = elsewhere / "target"
    if points_to == "a-file":
        target.write_text("config: {}\n")
    elif points_to == "a-fifo":
        os.mkfifo(target)
    stacks = project_copy / "stacks"
    link = stacks / "Pulumi.dl.yaml"
    link.symlink_to(target)
    before = sorted(p.name for p in stacks.iterdir())
    code, out, err = _init(run_cli, project_copy, "dl", *force)
    message = " ".join(err.split())
    assert code == 1 and out == "" and "Traceback" not in err, err
    assert (f"stacks/Pulumi.dl.yaml: a symbolic link (to {target}); egress init never writes through a link, nor replaces one. "
            "Fix: remove the link (what it points to stays as it is) and run egress init again, or choose another stack name") in message
    assert "written by someone else meanwhile" not in message
    assert link.is_symlink() and os.readlink(link) == str(target) and sorted(p.name for p in stacks.iterdir()) == before
    if points_to == "a-file":
        assert target.read_text() == "config: {}\n"
