"""Find the project (like ``pulumi``: walk up to ``Pulumi.yaml``) and its stacks."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ProjectError

if TYPE_CHECKING:
    from .models import Catalog, Requirement
    from .profile import Profile

# The catalog, the stack profile (pydantic models) and resolve are imported by the methods that use them: finding the
# project and listing its stacks must stay cheap (egress --help, a cached egress matrix: tests/test_cli_startup.py).


@dataclass(frozen=True)
class Project:
    root: Path

    @property
    def matrix_dir(self) -> Path:
        return self.root / "matrix"

    @property
    def stacks_dir(self) -> Path:
        return self.root / "stacks"

    def stack_file(self, stack: str) -> Path:
        return self.stacks_dir / f"Pulumi.{stack}.yaml"

    def stacks(self) -> list[str]:
        return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in self.stacks_dir.glob("Pulumi.*.yaml"))

    def catalog(self) -> Catalog:
        from .catalog import load_catalog

        return load_catalog(self.matrix_dir)

    def profile(self, stack: str) -> Profile:
        path = self.stack_file(stack)
        if not path.is_file():
            known = ", ".join(self.stacks()) or "(none)"
            raise ProjectError(f"{path}: stack '{stack}' not found. Fix: use one of: {known}, or create {path.name} in {self.stacks_dir}")
        from .profile import load_profile

        return load_profile(path, stack)

    def stack_catalog(self, stack: str, profile: Profile) -> Catalog:
        """The vendor matrix plus the stack's own catalogs (egress/catalog/own.py)."""
        from .catalog.own import stack_catalog

        return stack_catalog(self.catalog(), profile, self.root, self.stack_file(stack), stack)

    def requirements(self, stack: str) -> tuple[Catalog, Profile, tuple[Requirement, ...]]:
        """The stack's requirements, judged by the breadth check (egress/guard.py). The one choke point: every command that
        hands on what a stack allows (render, export, matrix, probe, learn, init) builds it here, so none can skip the
        check; all requirements are judged, since not every output is a target's."""
        from .guard import check_breadth

        catalog, profile, requirements = self.unchecked_requirements(stack)
        check_breadth(catalog, profile, requirements, f"{self.stack_file(stack)}: stack '{stack}'")
        return catalog, profile, requirements

    def unchecked_requirements(self, stack: str) -> tuple[Catalog, Profile, tuple[Requirement, ...]]:
        """Resolved, not judged: for the breadth check itself and its tests, never for output."""
        from .resolve import resolve

        profile = self.profile(stack)
        catalog = self.stack_catalog(stack, profile)
        return catalog, profile, resolve(catalog, profile, self.stack_file(stack), stack)


def find_project(start: Path | None = None) -> Project:
    """The nearest directory at or above ``start`` holding ``Pulumi.yaml``."""
    here = (start or Path.cwd()).resolve()
    if here.is_file():
        here = here.parent
    for candidate in (here, *here.parents):
        if (candidate / "Pulumi.yaml").is_file():
            return Project(candidate)
    raise ProjectError(f"{here}: no Pulumi.yaml here or in any parent directory. Fix: run inside an egress-matrix project or pass --project DIR")


def open_project(directory: Path) -> Project:
    root = directory.resolve()
    if not (root / "Pulumi.yaml").is_file():
        raise ProjectError(f"{root}: no Pulumi.yaml in this directory. Fix: pass the project's root directory to --project")
    return Project(root)
