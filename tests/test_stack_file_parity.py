"""The tools and the program agree on every stack file the Pulumi CLI accepts, judged against a model of the CLI.

The model is written from the CLI's source, independently of egress/stack_yaml.py: what yaml.v3 decodes each spelling
to (resolve.go, as a table written by hand), the type check the CLI applies to declared settings
(pkg/workspace/config.go validateStackConfigValue -> workspace.ValidateConfigValue) and the text it hands the program
(config object.MarshalString: scalars as text, booleans and numbers as JSON, objects as compact JSON).
Property: a file our reader accepts is one the CLI accepts, and the program, given the CLI's text, builds the same
Profile; a file the CLI refuses, our reader refuses too.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Optional

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from egress.errors import ProfileError
from egress.profile import PROJECT, config_keys, load_profile, profile_from_pulumi_config
from egress_preview.program import stack_config

SERVICE = "AAABAII+gDfUcpoMRLtxD5xT9Nj99gx5gycEreX7Kd0s+XQfUEk="  # a Pulumi Cloud ciphertext (pulumi/pulumi test data)


class Time(str):
    """yaml.v3 decodes an unquoted date to time.Time; Pulumi keeps time.String()."""


SECURE_OK, SECURE_PLAIN = object(), object()
# spelling -> what yaml.v3 decodes it to (resolve.go; written by hand from its rules)
V3 = {
    "true": True, "True": True, "TRUE": True, "false": False, '"true"': "true", '"True"': "True", "yes": "yes", "on": "on",
    "No": "No", '"yes"': "yes", "~": None, "": None,
    "30": 30, '"30"': "30", "010": 8, "0x1F": 31, "1_0": 10, "+5": 5, "-1": -1, "5.0": 5.0, '"5.0"': "5.0", "0": 0, "2379": 2379,
    "vsphere-de": "vsphere-de", '"vsphere-de"': "vsphere-de", "example.com": "example.com", "2024-01-31": Time("2024-01-31 00:00:00 +0000 UTC"),
    '"2024-01-31"': "2024-01-31", "1e3": 1000.0, "10:20": "10:20", "0o17": 15,
    "[10.0.0.0/8]": ["10.0.0.0/8"], '["10.0.0.0/8", 10.1.0.0/16]': ["10.0.0.0/8", "10.1.0.0/16"], "[]": [], "[yes]": ["yes"],
    "[100, 200]": [100, 200], "['100']": ["100"], "[1.5]": [1.5], "[010]": [8], "10.0.0.0/8": "10.0.0.0/8", '"[100]"': "[100]",
    "{a: 1}": {"a": 1}, "[kkp]": ["kkp"], "{secure: " + SERVICE + "}": SECURE_OK, "{secure: hunter22}": SECURE_PLAIN,
}
NAMES = ["privateCluster", "hypershift", "awsCapacityHeadroom", "ibmEtcdPort", "kkpDatacenter", "baseDomain", "podCidrs",
         "azureExistingPriorities", "proxyCredentials", "PrivateCluster"]
NAMESPACES = ["egress-matrix", "egress-matrix", "egress-matrix", "egress_matrix", "Egress-Matrix", "aws"]


def _go_json(value: Any) -> str:
    def go(v):
        if isinstance(v, float) and v.is_integer() and abs(v) < 1e21:
            return int(v)
        return [go(i) for i in v] if isinstance(v, list) else {k: go(i) for k, i in v.items()} if isinstance(v, dict) else v
    return json.dumps(go(value), separators=(",", ":"), sort_keys=True)


def _marshal(value: Any) -> tuple[str, bool]:
    """object.MarshalString: (text, object?)."""
    if isinstance(value, str):
        return str(value), False
    if isinstance(value, (bool, int, float)):
        return _go_json(value), False
    return ("null" if value is None else _go_json(value)), True


def _atoi(text: str) -> bool:
    body = text[1:] if text[:1] in "+-" else text
    return body.isdigit() and body.isascii()


def _valid(kind: str, items: Optional[str], content: Any) -> bool:
    """workspace.ValidateConfigValue (content: the Go value: text for a scalar, JSON-decoded for an object)."""
    if kind == "string":
        return isinstance(content, str)
    if kind == "integer":
        return (isinstance(content, float) and content.is_integer()) or (isinstance(content, str) and _atoi(content))
    if kind == "boolean":
        return content in ("true", "false") or isinstance(content, bool)
    return isinstance(content, list) and all(_valid(items or "string", None, item) for item in content)


def cli(lines: list[tuple[str, str]]) -> Optional[dict[str, str]]:
    """What the CLI hands the program for our keys, or None where `pulumi preview` stops first."""
    keys = [key for key, _ in lines]
    if len(set(keys)) != len(keys):
        return None  # yaml.v3: mapping key already defined
    declared, handed = config_keys(), {}
    for key, spelling in lines:
        value = V3[spelling]
        if value is SECURE_PLAIN:
            return None  # the secrets manager cannot decrypt it
        namespace, _, name = key.partition(":")
        if namespace != PROJECT or name not in declared:
            continue  # not validated, and the program never asks for it
        decl = declared[name]
        if decl.get("secret"):
            if value is not SECURE_OK:
                return None  # "must be encrypted as it's secret"
            handed[key] = "decrypted"
            continue
        if value is SECURE_OK:
            handed[key] = "decrypted"  # a secure value the program reads as plain text
            continue
        text, is_object = _marshal(value)
        # the CLI decodes object values with Go's encoding/json into `any`: every number a float64
        content = json.loads(text, parse_int=float) if is_object else text
        if not _valid(decl["type"], decl.get("items", {}).get("type"), content):
            return None  # "must be of type ..."
        handed[key] = text
    return handed


def _ours(text: str):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "Pulumi.t.yaml"
        path.write_text(text)
        try:
            return load_profile(path, "t"), stack_config(path)[0]
        except ProfileError:
            return None, None


# Per setting, the spellings near its type (half the draws), so that many files are accepted and compared.
NEAR = {"privateCluster": ["true", "True", "TRUE", "false", '"true"', '"True"', "yes", "on"], "awsCapacityHeadroom": ["30", '"30"', "010", "5.0", "0", "+5"],
        "kkpDatacenter": ["vsphere-de", '"vsphere-de"', "2024-01-31", '"2024-01-31"', "0o17", "yes"], "baseDomain": ["example.com", "1e3", "10:20", "on"],
        "podCidrs": ["[10.0.0.0/8]", '["10.0.0.0/8", 10.1.0.0/16]', "[]", "[yes]", "10.0.0.0/8", "[010]"],
        "azureExistingPriorities": ["[100, 200]", "['100']", "[010]", "[1.5]", "[]"], "proxyCredentials": ["{secure: " + SERVICE + "}", "{secure: hunter22}", "on"]}
NEAR.update(hypershift=NEAR["privateCluster"], PrivateCluster=NEAR["privateCluster"], ibmEtcdPort=NEAR["awsCapacityHeadroom"] + ["2379"])
line = st.sampled_from(NAMES).flatmap(lambda name: st.tuples(st.sampled_from(NAMESPACES), st.just(name),
                                                             st.one_of(st.sampled_from(NEAR[name]), st.sampled_from(sorted(V3)))))


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(line, min_size=1, max_size=3))
def test_tools_and_program_agree_with_the_cli(drawn):
    lines = [(f"{namespace}:{name}", spelling) for namespace, name, spelling in drawn]
    text = "config:\n  egress-matrix:platforms: [kkp]\n" + "".join(f"  {key}: {spelling}\n" for key, spelling in lines)
    handed = cli([("egress-matrix:platforms", "[kkp]"), *lines])
    ours, offline = _ours(text)
    event("the CLI refuses" if handed is None else "the tools refuse only" if ours is None else "both accept")
    if handed is None:
        assert ours is None, f"the CLI refuses this file, the tools accept it:\n{text}"
        return
    if ours is None:
        return  # refused by the tools only: a spelling two readers could read differently
    program = profile_from_pulumi_config(lambda key: handed.get(f"{PROJECT}:{key}"), "t")
    assert ours.model_dump() == program.model_dump(), text
    assert ours.has_secret("proxyCredentials") == program.has_secret("proxyCredentials")
    for key, value in handed.items():
        if value != "decrypted":
            assert offline[key] == value, (key, text)


def test_the_model_reads_like_the_cli():
    """Spot checks of the model against the CLI's documented behaviour."""
    assert cli([("egress-matrix:privateCluster", "yes")]) is None
    assert cli([("egress-matrix:privateCluster", "True")]) == {"egress-matrix:privateCluster": "true"}
    assert cli([("egress-matrix:awsCapacityHeadroom", "5.0")]) == {"egress-matrix:awsCapacityHeadroom": "5"}
    assert cli([("egress-matrix:podCidrs", "[1.5]")]) is None and cli([("egress-matrix:azureExistingPriorities", "['100']")]) is not None
    assert cli([("egress-matrix:baseDomain", "~")]) is None  # null is an object, not a string
    assert cli([("egress-matrix:baseDomain", "1e3")]) == {"egress-matrix:baseDomain": "1000"}
    assert cli([("egress-matrix:hypershift", "on"), ("egress-matrix:hypershift", "on")]) is None
