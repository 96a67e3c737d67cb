"""egress diff --base REF (issue 17, item 9): the ref never reaches git as an option, it is resolved to a commit before
``git archive`` sees it, and the base's code (which is executed) runs with a scrubbed environment."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from egress_preview.diff import DiffError, base_snapshot

# A base commit whose "preview" reports what the child process sees: its environment and that its own code ran.
_FAKE_TREE = {
    "egress/__init__.py": "",
    "egress/project.py": "def open_project(path):\n    return path\n",
    "egress_preview/__init__.py": "",
    "egress_preview/preview.py": (
        "import os, sys\n"
        "def preview(project, stack):\n"
        "    return {'stack': stack, 'env': sorted(os.environ), 'pythonpath': os.environ.get('PYTHONPATH', ''), 'argv0': sys.argv[0],\n"
        "            'own_code': open(__file__, 'rb').read().decode('latin-1'), 'environ': dict(os.environ), 'found': found()}\n"
        "def found():\n"
        "    # what SDKs find with no variable set: botocore's default chain, and the files other tools open under HOME\n"
        "    import botocore.session\n"
        "    credentials = botocore.session.get_session().get_credentials()\n"
        "    home = os.path.expanduser('~')\n"
        "    files = [os.path.join(d, f) for d, _, fs in os.walk(home) for f in fs]\n"
        "    pulumi = os.path.join(os.environ.get('PULUMI_HOME') or os.path.join(home, '.pulumi'), 'credentials.json')\n"
        "    kube = os.environ.get('KUBECONFIG') or os.path.join(home, '.kube', 'config')\n"
        "    azure = os.environ.get('AZURE_CONFIG_DIR') or os.path.join(home, '.azure')\n"
        "    read = lambda p: open(p).read() if os.path.isfile(p) else ''\n"
        "    return {'aws': credentials.access_key if credentials else None, 'home': home, 'files': files, 'pulumi': read(pulumi),\n"
        "            'kube': read(kube), 'azure': sorted(os.listdir(azure)) if os.path.isdir(azure) else []}\n"
        "def snapshot(result):\n"
        "    return result\n"),
    "stacks/Pulumi.dev.yaml": "config: {}\n",
}
# The base's own empty home, and where each SDK's credential store is pointed (into it, or at the null device).
_HOME_ENV = {"USERPROFILE", "PULUMI_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "AZURE_CONFIG_DIR", "DOCKER_CONFIG",
             "CLOUDSDK_CONFIG", "KUBECONFIG", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_EC2_METADATA_DISABLED", "EGRESS_NO_CACHE"}
SECRETS = {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "s3cr3t", "AWS_SESSION_TOKEN": "tok", "AZURE_CLIENT_SECRET": "az",
           "ARM_CLIENT_SECRET": "arm", "ARM_USE_OIDC": "true", "PULUMI_ACCESS_TOKEN": "pul-123", "PULUMI_CONFIG_PASSPHRASE": "pass",
           "GITHUB_TOKEN": "ghp_x", "KUBECONFIG": "/home/ci/.kube/config", "GOOGLE_APPLICATION_CREDENTIALS": "/k.json",
           "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc"}


@pytest.fixture
def fake_repo(tmp_path) -> Path:
    repo = tmp_path / "repo"
    for relative, text in _FAKE_TREE.items():
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "base"], check=True)
    subprocess.run([*git, "tag", "v1"], check=True)
    return repo


@pytest.mark.parametrize("ref", ["--output={victim}", "--remote={victim}", "-o{victim}", "--exec=touch {victim}.ran", ""])
def test_an_option_like_ref_is_refused_and_touches_nothing(fake_repo, tmp_path, ref):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    with pytest.raises(DiffError) as caught:
        base_snapshot(fake_repo, ref.format(victim=victim), "dev")
    assert "is not a git ref (it starts with '-' or is empty); git would read it as an option" in str(caught.value)
    assert "Fix: pass a commit, branch or tag, e.g. --base origin/main" in str(caught.value)
    assert victim.read_text() == "precious" and not (tmp_path / "victim.ran").exists()


@pytest.mark.parametrize("ref", ["no-such-branch", "HEAD:egress", "HEAD~5"])
def test_a_ref_that_is_not_a_commit_is_one_clear_error(fake_repo, ref):
    with pytest.raises(DiffError, match=f"git ref '{ref}': no such commit. Fix: pass a commit, branch or tag that exists"):
        base_snapshot(fake_repo, ref, "dev")


def test_branches_tags_and_shas_resolve(fake_repo):
    sha = subprocess.run(["git", "-C", str(fake_repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    for ref in ("HEAD", "v1", sha, sha[:10]):
        assert base_snapshot(fake_repo, ref, "dev")["stack"] == "dev"


def test_the_bases_code_runs_with_no_credentials_in_its_environment(fake_repo, monkeypatch):
    """The base is code from a branch and it is executed: it must not see cloud, Pulumi, GitHub or Kubernetes
    credentials, only what Python needs."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    seen = base_snapshot(fake_repo, "HEAD", "dev")
    assert seen["argv0"] == "-c"  # the base's own preview.py answered, so its code ran
    assert not {name: value for name, value in seen["environ"].items() if SECRETS.get(name) == value}, seen["environ"]
    assert not (set(SECRETS) - {"KUBECONFIG"}) & set(seen["env"]), seen["env"]
    assert seen["environ"]["KUBECONFIG"] == os.devnull
    assert set(seen["env"]) <= {"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "SYSTEMROOT", "PYTHONPATH", "PYTHONNOUSERSITE",
                                "PYTHONDONTWRITEBYTECODE", *_HOME_ENV}
    assert "PATH" in seen["env"] and Path(seen["pythonpath"].split(os.pathsep)[0]).name.startswith("egress-diff-")  # the base's tree first
    assert "s3cr3t" not in json.dumps(seen)


def test_the_help_says_the_base_is_executed(run_cli):
    code, out, _ = run_cli("diff", "--help")
    text = " ".join(out.split()).replace("│", "").replace("  ", " ")
    assert code == 0 and "EXECUTED" in text and "scrubbed environment" in " ".join(text.split())
    assert "executed" in (base_snapshot.__doc__ or "").lower()



@pytest.mark.parametrize("core", ["\tautocrlf = true\n", "\teol = crlf\n", "\tattributesFile = {attributes}\n"],
                         ids=["autocrlf", "eol", "attributesFile"])
def test_a_users_git_config_does_not_change_the_base(core, fake_repo, tmp_path, monkeypatch):
    """The base's code is the committed bytes, whatever the user's git config says about line endings or export: with
    core.autocrlf=true ``git archive`` wrote CRLF, and a global attributes file with export-ignore left files out."""
    attributes = tmp_path / "attributes"
    attributes.write_text("*.py export-ignore\n* text eol=crlf\n" if "attributes" in core else "* text=auto\n")
    config = tmp_path / "gitconfig"
    config.write_text("[core]\n" + core.format(attributes=attributes))
    if "attributes" not in core:  # core.eol acts on files the repository marks as text
        (fake_repo / ".gitattributes").write_text("* text=auto\n")
        subprocess.run(["git", "-C", str(fake_repo), "add", ".gitattributes"], check=True)
        subprocess.run(["git", "-C", str(fake_repo), "commit", "-q", "-m", "attributes"], check=True)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    seen = base_snapshot(fake_repo, "HEAD", "dev")
    assert seen["own_code"] == _FAKE_TREE["egress_preview/preview.py"]


def test_the_base_finds_no_credentials_in_the_users_home(fake_repo, tmp_path, monkeypatch):
    """Scrubbing variables is not enough: SDKs open ~/.aws/credentials, ~/.pulumi/credentials.json, ~/.kube/config and
    ~/.azure/ by themselves. The base runs with an empty home of its own, and botocore's default chain finds nothing."""
    home = tmp_path / "home"
    for relative, text in {".aws/credentials": "[default]\naws_access_key_id = AKIAHOMEEXAMPLE\naws_secret_access_key = homesecret\n",
                           ".aws/config": "[default]\nregion = eu-west-1\n",
                           ".pulumi/credentials.json": '{"accessTokens": {"https://api.pulumi.com": "pul-home"}}',
                           ".kube/config": "users: [{name: admin, user: {token: kube-home}}]\n",
                           ".azure/msal_token_cache.json": "azure-home", ".docker/config.json": '{"auths": {"x": {"auth": "docker-home"}}}',
                           ".config/gcloud/application_default_credentials.json": "gcloud-home"}.items():
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).write_text(text)
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "KUBECONFIG", "PULUMI_HOME", "AZURE_CONFIG_DIR",
                 "AWS_ACCESS_KEY_ID", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # before the fix too: the test never waits on an instance-metadata call
    seen = base_snapshot(fake_repo, "HEAD", "dev")
    found = seen["found"]
    assert found["aws"] is None and found["home"] != str(home) and Path(found["home"]).name.startswith("egress-diff-home-")
    assert found["files"] == [] and found["pulumi"] == "" and found["kube"] == "" and found["azure"] == []
    for secret in ("AKIAHOMEEXAMPLE", "homesecret", "pul-home", "kube-home", "azure-home", "docker-home", "gcloud-home", str(home)):
        assert secret not in json.dumps(seen)
    assert not Path(found["home"]).exists()  # the child's home goes with the run


def test_a_failed_base_shows_its_last_lines_redacted(fake_repo):
    """The base's stderr is someone's branch output: credentials it prints are masked, control characters escaped."""
    (fake_repo / "egress_preview" / "preview.py").write_text(
        "import sys\ndef preview(project, stack):\n    raise SystemExit('proxy http://alice:hunter2@proxy.example.com:3128 \\x1b]0;pwned\\x07 down')\n"
        "def snapshot(result):\n    return result\n")
    subprocess.run(["git", "-C", str(fake_repo), "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qam", "fails"], check=True)
    with pytest.raises(DiffError) as caught:
        base_snapshot(fake_repo, "HEAD", "dev")
    message = str(caught.value)
    assert "previewing stack 'dev' at 'HEAD' failed:" in message and "proxy.example.com:3128" in message
    assert "hunter2" not in message and "\x1b" not in message and "\\x1b]0;pwned" in message


def _commit_link(repo: Path, name: str, target: str) -> None:
    (repo / name).symlink_to(target)
    subprocess.run(["git", "-C", str(repo), "add", name], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "link"], check=True)


@pytest.mark.parametrize("target", ["/etc/passwd", "../../outside", "stacks/../../escape"], ids=["absolute", "outside", "dotdot"])
def test_a_link_pointing_outside_the_base_is_left_out_and_named(fake_repo, target):
    """tarfile's data filter refuses such links with AbsoluteLinkError / LinkOutsideDestinationError (a traceback): the
    preview reads none of them, so they are left out and the note names them."""
    _commit_link(fake_repo, "docs-link", target)
    notes: list[str] = []
    seen = base_snapshot(fake_repo, "HEAD", "dev", say=notes.append)
    assert seen["stack"] == "dev" and seen["argv0"] == "-c"
    assert notes == ["note: git ref 'HEAD': left out 1 link(s) pointing outside the tree, which the preview does not read: docs-link"]


def test_a_link_inside_the_base_is_kept(fake_repo):
    _commit_link(fake_repo, "stacks/alias.yaml", "Pulumi.dev.yaml")
    notes: list[str] = []
    assert base_snapshot(fake_repo, "HEAD", "dev", say=notes.append)["stack"] == "dev" and notes == []
