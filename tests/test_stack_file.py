"""One strict reader for stack files: the tools (load_profile, the offline preview's config) and the program (the
CLI's text through profile_from_pulumi_config) read one file the same way, and refuse what either could misread."""
from __future__ import annotations

import base64
from pathlib import Path

import pytest

from egress.errors import ProfileError
from egress.profile import PROJECT, SECRET_KEYS, config_keys, load_profile, profile_from_pulumi_config
from egress.stack_rules import is_ciphertext
from egress_preview.program import SECRET_STAND_IN, stack_config

ROOT = Path(__file__).resolve().parents[1]
STACKS = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
BASE = "config:\n  egress-matrix:platforms: [kkp]\n"
# Real ciphertexts: a passphrase provider's (v1:<12-byte nonce>:<sealed>) and Pulumi Cloud's (from
# pulumi/pulumi sdk/python/lib/test/automation/data/testproj/Pulumi.int_test_983828.yaml).
V1 = "v1:" + base64.b64encode(bytes(range(12))).decode() + ":" + base64.b64encode(bytes(range(40))).decode()
SERVICE = "AAABAII+gDfUcpoMRLtxD5xT9Nj99gx5gycEreX7Kd0s+XQfUEk="


def write(tmp_path: Path, text: str, stack: str = "t") -> Path:
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(text)
    return path


def refused(tmp_path: Path, text: str) -> str:
    with pytest.raises(ProfileError) as info:
        load_profile(write(tmp_path, text), "t")
    return str(info.value)


def program(config: dict[str, str], stack: str = "t"):
    """The program's reading: the CLI's text for each key, as config.get returns it."""
    return profile_from_pulumi_config(lambda key: config.get(f"{PROJECT}:{key}"), stack)


def same(a, b) -> bool:
    return a.model_dump() == b.model_dump() and a.stack == b.stack and a.has_secret("proxyCredentials") == b.has_secret("proxyCredentials")


# -- both paths, every stack -------------------------------------------------------------------------------------
@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_gives_one_profile_both_ways(stack):
    path = ROOT / "stacks" / f"Pulumi.{stack}.yaml"
    config, secret_keys = stack_config(path)
    assert same(load_profile(path, stack), program(config, stack))
    assert all(isinstance(value, str) for value in config.values())


# -- duplicate keys ----------------------------------------------------------------------------------------------
def test_duplicate_key_is_refused_with_both_lines(tmp_path):
    message = refused(tmp_path, BASE + "  egress-matrix:clusterName: a\n  egress-matrix:clusterName: b\n")
    assert "line 4" in message and "key 'egress-matrix:clusterName' is already defined at line 3" in message
    assert "Fix: keep one of the two lines" in message


def test_duplicate_key_at_any_depth_and_at_the_top(tmp_path):
    nested = BASE + "  aws:assumeRole:\n    roleArn: a\n    roleArn: b\n"
    assert "key 'roleArn' is already defined at line 4" in refused(tmp_path, nested)
    assert "key 'config' is already defined at line 1" in refused(tmp_path, BASE + "config:\n  egress-matrix:clusterName: a\n")
    quoted = BASE + '  egress-matrix:clusterName: a\n  "egress-matrix:clusterName": b\n'
    assert "already defined at line 3" in refused(tmp_path, quoted)


def test_duplicate_key_is_refused_by_the_preview_config_too(tmp_path):
    with pytest.raises(ProfileError, match="already defined at line 3"):
        stack_config(write(tmp_path, BASE + "  aws:region: a\n  aws:region: b\n"))


# -- booleans ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spelling", ["yes", "Yes", "on", "OFF", "y", "n", "no", '"yes"', "'on'"])
def test_yaml_1_1_booleans_are_refused(tmp_path, spelling):
    message = refused(tmp_path, BASE + f"  egress-matrix:privateCluster: {spelling}\n")
    assert "field 'config.egress-matrix:privateCluster'" in message and "line 3" in message
    assert "YAML 1.2 (Pulumi) reads it as text, YAML 1.1 as a boolean" in message and "Fix: write true or false" in message


@pytest.mark.parametrize("spelling", ['"True"', "1", "0", "[true]", "~", ""])
def test_other_non_booleans_are_refused(tmp_path, spelling):
    assert "Fix: write true or false" in refused(tmp_path, BASE + f"  egress-matrix:privateCluster: {spelling}\n") or \
        "Fix: give a value or remove the line" in refused(tmp_path, BASE + f"  egress-matrix:privateCluster: {spelling}\n")


@pytest.mark.parametrize("spelling, value", [("true", True), ("True", True), ("TRUE", True), ("false", False), ('"true"', True), ("'false'", False)])
def test_booleans_the_cli_accepts(tmp_path, spelling, value):
    """yaml.v3 reads true/True/TRUE as a boolean and the CLI hands the program "true"; a quoted "true" passes the
    CLI's type check as the literal."""
    path = write(tmp_path, BASE + f"  egress-matrix:privateCluster: {spelling}\n")
    assert load_profile(path, "t").private_cluster is value
    config, _ = stack_config(path)
    assert config["egress-matrix:privateCluster"] == ("true" if value else "false")


@pytest.mark.parametrize("raw", ["yes", "True", "TRUE", "1", "on", "", "true\n"])
def test_the_program_accepts_only_true_or_false(raw):
    with pytest.raises(ProfileError) as info:
        program({"egress-matrix:platforms": '["kkp"]', "egress-matrix:privateCluster": raw})
    assert "Pulumi config of stack 't'" in str(info.value) and "Fix: write true or false" in str(info.value)


# -- numbers and text --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spelling, problem", [("010", "plain decimal: 8"), ("0x10", "plain decimal: 16"), ("1_000", "plain decimal: 1000"),
                                               ("+5", "plain decimal: 5"), ("5.0", "not a whole number"), ('"0x10"', "not a whole number")])
def test_ambiguous_integers_are_refused(tmp_path, spelling, problem):
    assert problem in refused(tmp_path, BASE + f"  egress-matrix:awsCapacityHeadroom: {spelling}\n")


def test_integers_the_cli_accepts(tmp_path):
    assert load_profile(write(tmp_path, BASE + "  egress-matrix:awsCapacityHeadroom: 30\n"), "t").aws_capacity_headroom == 30
    assert load_profile(write(tmp_path, BASE + '  egress-matrix:awsCapacityHeadroom: "30"\n'), "t").aws_capacity_headroom == 30


@pytest.mark.parametrize("raw", ["0x10", "1_000", "+5", "5.0", " 5", "010", "30\n"])
def test_the_program_reads_only_plain_decimal(raw):
    with pytest.raises(ProfileError, match="not a whole number in plain decimal"):
        program({"egress-matrix:platforms": '["kkp"]', "egress-matrix:awsCapacityHeadroom": raw})


@pytest.mark.parametrize("spelling", ["no", "on", "123", "1e3", "2024-01-31", "10:20", "true", "0o17"])
def test_text_settings_refuse_what_yaml_reads_as_something_else(tmp_path, spelling):
    message = refused(tmp_path, BASE + f"  egress-matrix:kkpSeed: {spelling}\n")
    assert "text expected" in message and f'Fix: quote it: "{spelling}"' in message


def test_quoted_text_is_text(tmp_path):
    assert load_profile(write(tmp_path, BASE + '  egress-matrix:kkpDatacenter: "2024"\n'), "t").kkp_datacenter == "2024"


@pytest.mark.parametrize("line, problem", [("  egress-matrix:location:\n", "no value"),
                                           ("  egress-matrix:podCidrs: 10.0.0.0/8\n", "text where a list belongs"),
                                           ("  egress-matrix:podCidrs: [yes]\n", "text expected"),
                                           ("  egress-matrix:azureExistingPriorities: ['100']\n", "a quoted number in a list of numbers"),
                                           ("  egress-matrix:podCidrs: [[10.0.0.0/8]]\n", "a list or mapping where one value belongs")])
def test_values_of_the_wrong_shape(tmp_path, line, problem):
    assert problem in refused(tmp_path, BASE + line)


@pytest.mark.parametrize("raw", ["10.0.0.0/8", "[10.0.0.0/8", '{"a": 1}', "[1]"])
def test_the_program_refuses_an_array_that_is_not_a_json_list_of_text(raw):
    """Was a JSONDecodeError traceback (or a list of numbers taken as CIDRs)."""
    with pytest.raises(ProfileError, match="config.egress-matrix:podCidrs"):
        program({"egress-matrix:platforms": '["kkp"]', "egress-matrix:podCidrs": raw})


# -- secure: -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("plain", ["svc-egress:s3cret", "s3cretpassword", "dXNlcjpwYXNz", "v1:abc:def", "AAABAxyz"])
def test_secure_holding_plain_text_is_refused_without_echo(tmp_path, plain):
    message = refused(tmp_path, BASE + f"  egress-matrix:proxyCredentials:\n    secure: {plain}\n")
    assert "field 'config.egress-matrix:proxyCredentials' = '(hidden)'" in message and "no Pulumi ciphertext" in message
    assert plain not in message and "rotate the value" in message


@pytest.mark.parametrize("ciphertext", [V1, SERVICE])
def test_real_ciphertexts_are_accepted(tmp_path, ciphertext):
    path = write(tmp_path, BASE + f"  egress-matrix:proxyCredentials:\n    secure: {ciphertext}\n")
    assert load_profile(path, "t").has_secret("proxyCredentials")
    config, secret_keys = stack_config(path)
    assert config["egress-matrix:proxyCredentials"] == SECRET_STAND_IN and secret_keys == ["egress-matrix:proxyCredentials"]


def test_a_passphrase_stack_takes_only_v1_ciphertexts(tmp_path):
    salted = "encryptionsalt: v1:c2FsdA==:v1:bm9uY2Vub25jZQ==:aGVsbG8=\n"
    assert "no Pulumi ciphertext" in refused(tmp_path, salted + BASE + f"  egress-matrix:proxyCredentials:\n    secure: {SERVICE}\n")
    assert load_profile(write(tmp_path, salted + BASE + f"  egress-matrix:proxyCredentials:\n    secure: {V1}\n"), "t").has_secret("proxyCredentials")


def test_secure_plain_text_is_refused_in_any_namespace(tmp_path):
    assert "no Pulumi ciphertext" in refused(tmp_path, BASE + "  aws:secretKey:\n    secure: hunter2\n")
    assert "no Pulumi ciphertext" in refused(tmp_path, BASE + "  aws:assumeRole:\n    externalId:\n      secure: hunter2\n")


def test_ciphertext_formats():
    assert is_ciphertext(V1, "v1") and is_ciphertext(V1, "any") and not is_ciphertext(V1, "service")
    assert is_ciphertext(SERVICE, "service") and not is_ciphertext(SERVICE, "v1")
    nonce11 = "v1:" + base64.b64encode(bytes(11)).decode() + ":" + base64.b64encode(bytes(16)).decode()
    assert not is_ciphertext(nonce11, "any")  # AES-GCM nonces are 12 bytes
    assert not is_ciphertext(base64.b64encode(b"\x00\x00\x01\x00" + bytes(20)).decode(), "any")  # shorter than nonce + tag


def test_secure_on_a_setting_that_is_not_secret(tmp_path):
    message = refused(tmp_path, BASE + f"  egress-matrix:clusterName:\n    secure: {SERVICE}\n")
    assert "= '(secret)'" in message and "egress settings are not secret" in message


def test_plain_text_for_a_secret_setting(tmp_path):
    message = refused(tmp_path, BASE + "  egress-matrix:proxyCredentials: svc:s3cret\n")
    assert "= '(hidden)'" in message and "must be a Pulumi secret" in message and "s3cret" not in message


# -- namespaces and keys -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("namespace", ["egress_matrix", "Egress-Matrix", "egressmatrix", "egress-matrx", "EGRESS-MATRIX", "egress-matirx"])
def test_near_miss_namespaces_are_refused(tmp_path, namespace):
    message = refused(tmp_path, BASE + f"  {namespace}:clusterName: prod\n")
    assert f"namespace '{namespace}' is not 'egress-matrix'" in message and "Fix: write 'egress-matrix:clusterName'" in message


@pytest.mark.parametrize("namespace", ["aws", "azure-native", "kubernetes", "pulumi", "azure", "gcp"])
def test_provider_namespaces_are_pulumis_business(tmp_path, namespace):
    assert load_profile(write(tmp_path, BASE + f"  {namespace}:anything: [1, {{a: b}}]\n"), "t").platforms == ("kkp",)


def test_a_misspelt_secret_key_hides_its_value(tmp_path):
    message = refused(tmp_path, BASE + "  egress_matrix:proxyCredentials: svc:s3cret\n")
    assert "(hidden)" in message and "s3cret" not in message
    message = refused(tmp_path, BASE + "  egress-matrix:ProxyCredentials: svc:s3cret\n")
    # renaming the key would keep the password in plain text: the secret's own fix (issue 17 review)
    assert "(hidden)" in message and "s3cret" not in message and \
        "Fix: remove the line and run: pulumi config set --secret egress-matrix:proxyCredentials '<value>'" in message


@pytest.mark.parametrize("key, fix", [("NodeSources", "write 'egress-matrix:nodeSources'"), ("nodesources", "write 'egress-matrix:nodeSources'"),
                                      ("nodeSource", "did you mean 'egress-matrix:nodeSources'? (or remove it)")])
def test_mis_cased_and_misspelt_keys_name_the_right_one(tmp_path, key, fix):
    message = refused(tmp_path, BASE + f"  egress-matrix:{key}: [10.0.0.0/8]\n")
    assert f"field 'config.egress-matrix:{key}'" in message and f"Fix: {fix}" in message


@pytest.mark.parametrize("key, fix", [("clusterName", "write 'egress-matrix:clusterName'"), ("egress-matrix:config:clusterName", "write 'egress-matrix:clusterName'")])
def test_other_spellings_of_our_keys(tmp_path, key, fix):
    assert f"Fix: {fix}" in refused(tmp_path, BASE + f"  {key}: prod\n")


def test_unknown_top_level_key(tmp_path):
    message = refused(tmp_path, "confg:\n  egress-matrix:platforms: [kkp]\n")
    assert "field 'confg'" in message and "Pulumi ignores it" in message and "Fix: write 'config'" in message


def test_explicit_tags_and_merge_keys_are_refused(tmp_path):
    assert "explicit YAML tag" in refused(tmp_path, BASE + "  egress-matrix:clusterName: !!str 010\n")
    assert "merge key" in refused(tmp_path, "base: &b {egress-matrix:clusterName: a}\nconfig:\n  <<: *b\n")


def test_bad_yaml_and_non_mappings(tmp_path):
    assert "not valid YAML" in refused(tmp_path, "config: [\n")
    assert "a stack file is a mapping" in refused(tmp_path, "- a\n")
    assert "must be a mapping of settings" in refused(tmp_path, "config: [a]\n")


def test_the_preview_config_is_what_the_cli_hands_the_program(tmp_path):
    path = write(tmp_path, BASE + "  egress-matrix:privateCluster: TRUE\n  egress-matrix:ibmEtcdPort: 2379\n"
                                  "  aws:region: eu-west-1\n  aws:assumeRole: {roleArn: a, sessionName: 5.0}\n"
                                  f"  aws:token:\n    secure: {SERVICE}\n")
    config, secret_keys = stack_config(path)
    assert config == {"egress-matrix:platforms": '["kkp"]', "egress-matrix:privateCluster": "true", "egress-matrix:ibmEtcdPort": "2379",
                      "aws:region": "eu-west-1", "aws:assumeRole": '{"roleArn":"a","sessionName":5}', "aws:token": SECRET_STAND_IN}
    assert secret_keys == ["aws:token"]


def test_secret_settings_are_known_to_the_reader():
    assert set(SECRET_KEYS) == {key for key, decl in config_keys().items() if decl.get("secret")}


def test_the_program_refuses_misspelt_keys_it_is_handed():
    """The program is handed every config key: one of ours misspelt would be passed to no one."""
    config = {"egress-matrix:platforms": '["kkp"]', "Egress-Matrix:proxyCredentials": "svc:s3cret", "aws:region": "eu-west-1"}
    with pytest.raises(ProfileError) as info:
        profile_from_pulumi_config(lambda key: config.get(f"{PROJECT}:{key}"), "t", keys=config)
    message = str(info.value)
    assert "namespace 'Egress-Matrix' is not 'egress-matrix'" in message and "s3cret" not in message
    assert "Fix: write 'egress-matrix:proxyCredentials'" in message
    del config["Egress-Matrix:proxyCredentials"]
    assert profile_from_pulumi_config(lambda key: config.get(f"{PROJECT}:{key}"), "t", keys=config).platforms == ("kkp",)
