"""egress explain --deployed FILE (issue 17, item 10): a file that is JSON but not a preview's resources.json (not an
object, the wrong shape, properties a target cannot read) is one clear error naming the file, the place and the field,
never a traceback."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RCG = "azure-native:network:FirewallPolicyRuleCollectionGroup"


@pytest.fixture(scope="module")
def preview_json() -> dict:
    """What egress preview writes to resources.json for the dev stack."""
    from egress.project import open_project
    from egress_preview.preview import preview, snapshot

    return json.loads(json.dumps(snapshot(preview(open_project(ROOT), "dev"))))


def _explain(run_cli, tmp_path: Path, document, *args: str) -> tuple[int, str, str]:
    path = tmp_path / "resources.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    code, out, err = run_cli("explain", *(args or ("mcr.microsoft.com:443",)), "--stack", "dev", "--deployed", str(path), "--project", str(ROOT))
    return code, out, " ".join(err.split())


@pytest.mark.parametrize("document, message", [
    ([], "field '(document)' = []: the resources.json of an egress preview is an object, not an array"),
    (3, "field '(document)' = 3: the resources.json of an egress preview is an object, not a number"),
    ("null", "field '(document)' = None: the resources.json of an egress preview is an object, not null"),
    ({"resources": []}, "field 'stack' = None: required field is missing"),
    ({"stack": ["dev"], "resources": []}, "field 'stack' = ['dev']: not a string (an array)"),
    ({"stack": "dev"}, "field 'resources' = None: required field is missing"),
    ({"stack": "dev", "resources": 3}, "field 'resources' = 3: not an array (a number)"),
    ({"stack": "dev", "resources": ["x"]}, "resources[0]: field '(resource)' = 'x': a resource is an object, not a string"),
    ({"stack": "dev", "resources": [{"type": 1, "name": "n", "urn": "u"}]}, "resources[0]: field 'type' = 1: not a string (a number)"),
    ({"stack": "dev", "resources": [{"type": "t", "name": "n"}]}, "resources[0]: field 'urn' = None: required field is missing"),
    ({"stack": "dev", "resources": [{"type": "t", "name": "n", "urn": "u", "props": [1]}]},
     "resources[0] (t 'n'): field 'props' = [1]: not an object (an array)"),
    ({"stack": "dev", "resources": [{"type": "t", "name": "n", "urn": "u", "parent": 5}]}, "field 'parent' = 5: not a URN or null (a number)"),
    ({"stack": "dev", "resources": [{"type": "t", "name": "n", "urn": "u", "dependencies": "urn"}]},
     "field 'dependencies' = 'urn': not a list of strings"),
    ({"stack": "dev", "resources": [{"type": "t", "name": "n", "urn": "u", "aliases": 1.5}]}, "field 'aliases' = 1.5: not a list of strings"),
    ({"stack": "dev", "resources": [{"type": "t", "name": "n", "urn": "u", "protect": "yes"}]}, "field 'protect' = 'yes': not true or false"),
])
def test_a_file_of_the_wrong_shape_is_one_clear_error(run_cli, tmp_path, document, message):
    code, out, err = _explain(run_cli, tmp_path, document)
    assert code == 1 and out == "" and "Traceback" not in err and err.count("Error: ") == 1
    assert f"{tmp_path / 'resources.json'}: " in err and message in err, err
    assert "Fix: pass the resources.json that egress preview --out DIR wrote for this stack" in err


def test_properties_a_target_cannot_read_name_the_resource(run_cli, tmp_path, preview_json):
    document = json.loads(json.dumps(preview_json))
    group = next(r for r in document["resources"] if r["type"] == RCG)
    group["props"]["ruleCollections"] = 5
    for args in (("mcr.microsoft.com:443",), ("--rule", "aks-core-https")):
        code, out, err = _explain(run_cli, tmp_path, document, *args)
        assert code == 1 and out == "" and "Traceback" not in err, err
        assert f"resource {RCG} '{group['name']}': field 'props': the azure target cannot read it" in err
        assert "Fix: pass the resources.json that egress preview --out DIR wrote for this stack, unedited" in err


def test_a_bad_destination_is_still_the_users_error_not_the_files(run_cli, tmp_path, preview_json):
    code, _, err = _explain(run_cli, tmp_path, preview_json, "mcr.microsoft.com:0")
    assert code == 1 and "destination 'mcr.microsoft.com:0': port 0 is outside 1-65535" in err and "resources.json" not in err


def test_the_preview_itself_still_explains(run_cli, tmp_path, preview_json):
    code, out, err = _explain(run_cli, tmp_path, preview_json)
    assert code == 0, err
    assert "azure nodes -> mcr.microsoft.com https/443: allowed by rule collection group egress-dev-aks" in " ".join(out.split())
