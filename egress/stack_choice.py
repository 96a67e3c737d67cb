"""Which stack a command means: ``--stack``, else ``PULUMI_STACK``, else the stack Pulumi has selected for this project
(``pulumi stack select``), else one error listing the stacks. Never a silent default.

The selected stack is read the way the Pulumi CLI keeps it (pulumi/pulumi, pkg/workspace/workspace.go and settings.go,
pkg/backend/state/stacks.go): ``$PULUMI_HOME`` (else ``<user's home>/.pulumi``) ``/workspaces/<project name>-<sha1 of the
Pulumi.yaml path>-workspace.json``, JSON with ``stacks`` (backend URL -> stack) and the older ``stack``. A workspace file
that cannot be read or parsed is ignored with a note in the error (it is only asked when nothing else names a stack):
Pulumi itself refuses to run then, so it chose nothing.
"""
from __future__ import annotations

import difflib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from .errors import ProjectError

ENV_STACK = "PULUMI_STACK"
ENV_HOME = "PULUMI_HOME"
ENV_BACKEND = "PULUMI_BACKEND_URL"


@dataclass(frozen=True)
class StackChoice:
    name: str
    source: str  # where the name came from, as a person reads it: "--stack", "PULUMI_STACK", Pulumi's workspace file
    explicit: bool  # given with --stack (no note needed)

    def note(self) -> str:
        return "" if self.explicit else f"note: stack '{self.name}' from {self.source}; pass --stack to choose another"


@dataclass(frozen=True)
class _Selected:
    name: str
    file: Path


def choose_stack(root: Path, stacks: list[str], given: str | None, environ: dict[str, str] | None = None) -> StackChoice:
    """The stack the user means in the project at ``root`` whose stack files are ``stacks``; raises ProjectError."""
    env = os.environ if environ is None else environ
    if given is not None:
        return StackChoice(_known(_short(given), "--stack", stacks, root), "--stack", True)
    if env.get(ENV_STACK):
        name = _known(_short(env[ENV_STACK]), f"{ENV_STACK}={env[ENV_STACK]}", stacks, root)
        return StackChoice(name, ENV_STACK, False)
    if ENV_STACK in env:  # set but empty: Pulumi reads no selection then either (pkg/backend/state/stacks.go), so neither do we
        selected, note = None, ""
    else:
        selected, note = _selected(root, env)
    if selected is not None:
        where = f"the selection of 'pulumi stack select' in {selected.file}"
        return StackChoice(_known(selected.name, where, stacks, root), where, False)
    listing = ", ".join(stacks) or "(none)"
    unset = f"{ENV_STACK} set but empty (which hides Pulumi's selection)" if ENV_STACK in env else f"{ENV_STACK} unset"
    raise ProjectError(f"{root / 'stacks'}: no stack chosen: no --stack, {unset}, and no stack selected in Pulumi for this "
                       f"project{note}. Fix: pass --stack NAME (stacks here: {listing}), or set {ENV_STACK}=NAME, "
                       "or run 'pulumi stack select NAME'")


def _short(name: str) -> str:
    """``org/project/dev`` and ``org/dev`` name the stack ``dev``: its file is Pulumi.dev.yaml (Pulumi's Ref().Name())."""
    return name.rsplit("/", 1)[-1]


def _known(name: str, source: str, stacks: list[str], root: Path) -> str:
    if name in stacks:
        return name
    close = difflib.get_close_matches(name, stacks, n=1, cutoff=0.6)
    origin = "" if source == "--stack" else f" (named by {source})"
    hint = f"; did you mean '{close[0]}'? " if close else ". "
    raise ProjectError(f"{root / 'stacks' / f'Pulumi.{name}.yaml'}: stack '{name}' not found{origin}{hint}"
                       f"Fix: use one of: {', '.join(stacks) or '(none)'}, or create stacks/Pulumi.{name}.yaml")


def pulumi_home(env: dict[str, str]) -> Path:
    """Pulumi's home folder: PULUMI_HOME, else the user's home (the password database, as Go's user.Current) + .pulumi."""
    if env.get(ENV_HOME):
        return Path(env[ENV_HOME])
    try:
        import pwd

        return Path(pwd.getpwuid(os.getuid()).pw_dir) / ".pulumi"
    except (ImportError, KeyError):
        return Path.home() / ".pulumi"


def workspace_files(root: Path, env: dict[str, str]) -> list[Path]:
    """Where Pulumi keeps this project's workspace settings: one name per spelling of the Pulumi.yaml path (Pulumi hashes
    the path as its working directory spells it, symlinks kept, so the logical $PWD path is tried besides the real one)."""
    name = _project_name(root)
    if not name:
        return []
    paths = [root / "Pulumi.yaml"]
    logical = _logical_project_file(root, env)
    if logical is not None and logical != paths[0]:
        paths.append(logical)
    folder = pulumi_home(env) / "workspaces"
    return [folder / f"{name}-{hashlib.sha1(str(path).encode()).hexdigest()}-workspace.json" for path in paths]


def _project_yaml(root: Path) -> dict:
    """Pulumi.yaml, read once per command (its name and backend.url are all this module needs)."""
    try:
        data = yaml.load((root / "Pulumi.yaml").read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def _project_name(root: Path) -> str:
    return str(_project_yaml(root).get("name") or "")


def _logical_project_file(root: Path, env: dict[str, str]) -> Path | None:
    pwd = env.get("PWD", "")
    if not pwd or not os.path.isabs(pwd):
        return None
    for candidate in (Path(pwd), *Path(pwd).parents):
        try:
            if candidate.resolve() == root:
                return candidate / "Pulumi.yaml"
        except OSError:
            return None
    return None


def _selected(root: Path, env: dict[str, str]) -> tuple[_Selected | None, str]:
    """The selected stack from the first workspace file there is, and a note for the error when none could be used."""
    for path in workspace_files(root, env):
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            return None, f" (note: {path} could not be read, ignored: {getattr(exc, 'strerror', None) or type(exc).__name__})"
        try:
            settings = json.loads(text)
        except json.JSONDecodeError as exc:
            return None, f" (note: {path} is not valid JSON, ignored: {exc.msg} at line {exc.lineno})"
        if not isinstance(settings, dict):
            return None, f" (note: {path} is not a JSON object, ignored)"
        name, problem = _stack_for_backend(settings, root, env)
        if name:
            return _Selected(_short(name), path), ""
        return None, f" (note: {path}: {problem}, ignored)" if problem else ""
    return None, ""


def _stack_for_backend(settings: dict, root: Path, env: dict[str, str]) -> tuple[str, str]:
    """Pulumi's Settings.StackForBackend: the entry for the current backend, else the older unscoped ``stack``."""
    legacy = settings.get("stack") if isinstance(settings.get("stack"), str) else ""
    per_backend = settings.get("stacks")
    if not isinstance(per_backend, dict) or not per_backend:
        return legacy, ""
    names = {url: name for url, name in per_backend.items() if isinstance(name, str) and name}
    backend = env.get(ENV_BACKEND) or _project_backend(root)
    if backend:
        return names.get(backend) or legacy, ""
    if len({_short(name) for name in names.values()}) == 1:  # one stack whatever the backend
        return next(iter(names.values())), ""
    # The current backend is in the credentials file, which egress does not read: do not guess between backends.
    chosen = ", ".join(f"'{name}' on {url}" for url, name in sorted(names.items()))
    return "", f"a different stack is selected per backend ({chosen}) and {ENV_BACKEND} does not say which backend is current"


def _project_backend(root: Path) -> str:
    backend = _project_yaml(root).get("backend")
    return str(backend.get("url") or "") if isinstance(backend, dict) else ""
