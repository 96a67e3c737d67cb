"""Issue 22 item 6: readable, stable, collision-free file names for rendered Kubernetes objects, and the output folder
still removes (only) what an earlier run wrote under the old names."""
from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml

from egress.outdir import MANIFEST, OutDirError, write_output
from egress.targets.kubernetes import compile_kubernetes, render
from egress.targets.kubernetes.render import file_name

from aws_stacks import stack


def _obj(kind: str, name: str, namespace: str | None = None) -> dict:
    return {"kind": kind, "metadata": {"name": name, **({"namespace": namespace} if namespace else {})}}


def test_cluster_scoped_and_namespaced_objects_read_kind_namespace_name():
    assert file_name(_obj("Proxy", "cluster")) == "kubernetes/proxy-cluster.yaml"
    assert file_name(_obj("Namespace", "egress-proxy")) == "kubernetes/namespace-egress-proxy.yaml"
    assert file_name(_obj("ConfigMap", "user-ca-bundle", "openshift-config")) == "kubernetes/configmap-openshift-config.user-ca-bundle.yaml"


def test_names_that_collided_before_do_not_now():
    """kind-namespace-name with '-' everywhere gave ConfigMap 'b-c' in 'a' and 'c' in 'a-b' one file. A kind is either
    namespaced or cluster-scoped (names may hold '.' and '-', namespaces are DNS labels: '-' only)."""
    names = ["c", "b-c", "a-b-c", "a.b", "b.c", "cluster", "a-b.c"]
    namespaces = ["a", "a-b", "b", "a-b-c", "c"]
    objects = [_obj(k, n, ns) for k, n, ns in itertools.product(["ConfigMap", "Seed", "Service"], names, namespaces)]
    objects += [_obj(k, n) for k, n in itertools.product(["Namespace", "Cluster", "Proxy"], sorted({*names, *namespaces}))]
    files = [file_name(o) for o in objects]
    assert len(set(files)) == len(files)
    old = {f"{o['kind'].lower()}-{o['metadata'].get('namespace') or '_cluster'}-{o['metadata']['name']}" for o in objects}
    assert len(old) < len(objects)  # the collision this fixes


@pytest.mark.parametrize("name", ["dev", "openshift", "kkp", "proxy-only"])
def test_every_rendered_object_has_its_own_file_named_after_it(name):
    catalog, profile, reqs = stack(name, probe_job=True) if name == "kkp" else stack(name)
    files = render(compile_kubernetes(catalog, profile, reqs))
    assert files == render(compile_kubernetes(catalog, profile, reqs))  # stable
    manifests = {path: yaml.safe_load(text) for path, text in files.items() if path.endswith(".yaml")}
    assert manifests and not any("_cluster" in path for path in manifests)
    for path, obj in manifests.items():
        assert path == file_name(obj)


def test_a_duplicate_file_is_a_bug_not_a_silent_overwrite(monkeypatch):
    import importlib

    module = importlib.import_module("egress.targets.kubernetes.render")

    catalog, profile, reqs = stack("openshift")
    plan = compile_kubernetes(catalog, profile, reqs)
    twice = module.objects(plan) * 2
    monkeypatch.setattr(module, "objects", lambda plan: twice)
    from egress.errors import EgressError

    with pytest.raises(EgressError, match="kubernetes/proxy-cluster.yaml: two Kubernetes objects") as info:  # was a bare ValueError
        module.render(plan)
    assert "nothing was written" in str(info.value) and "Fix: " in str(info.value)  # the CLI prints it, exit 1, no traceback


OLD = {"kubernetes/proxy-_cluster-cluster.yaml": "old proxy\n", "kubernetes/namespace-_cluster-egress-proxy.yaml": "old namespace\n",
       "kubernetes/configmap-openshift-config-user-ca-bundle.yaml": "old bundle\n"}


def test_files_an_earlier_run_wrote_under_the_old_names_are_removed_unless_changed(tmp_path: Path):
    out = tmp_path / "out"
    write_output(out, OLD, ["kubernetes"])
    (out / "kubernetes/namespace-_cluster-egress-proxy.yaml").write_text("edited by hand\n")
    catalog, profile, reqs = stack("openshift")
    files = render(compile_kubernetes(catalog, profile, reqs))
    written = write_output(out, files, ["kubernetes"])
    assert sorted(p.name for p in written.removed) == ["configmap-openshift-config-user-ca-bundle.yaml", "proxy-_cluster-cluster.yaml"]
    assert (out / "kubernetes/namespace-_cluster-egress-proxy.yaml").read_text() == "edited by hand\n"  # the user's now
    assert [note.split(": ")[1] for note in written.kept] == ["changed since egress wrote it (no longer part of the output; delete it if not needed)"]
    assert (out / "kubernetes/proxy-cluster.yaml").exists()
    listed = yaml.safe_load((out / MANIFEST).read_text())["files"]
    assert sorted(listed) == sorted(files)  # the kept file left the manifest: a later run never deletes it


def test_an_old_output_without_a_manifest_is_refused_not_deleted(tmp_path: Path):
    out = tmp_path / "out"
    (out / "kubernetes").mkdir(parents=True)
    (out / "kubernetes/proxy-_cluster-cluster.yaml").write_text("from a version before the manifest\n")
    catalog, profile, reqs = stack("openshift")
    with pytest.raises(OutDirError, match="proxy-_cluster-cluster.yaml"):
        write_output(out, render(compile_kubernetes(catalog, profile, reqs)), ["kubernetes"])
    assert (out / "kubernetes/proxy-_cluster-cluster.yaml").read_text() == "from a version before the manifest\n"
    assert not (out / "kubernetes/proxy-cluster.yaml").exists()
