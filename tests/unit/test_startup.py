"""An actor's start (`asya.startup`): its secrets read into its environment, its files fetched into its
temporary folder, before the handler's class exists; failures name the variable and the secret, never
a value."""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from asya.secret_reads import SecretError
from asya.startup import READER, FileSource, encode_files, encode_secrets, fetch_file, prepare, secret
from asya.variables import ConfigError

VALUE = "v4lue-nobody-else-sees"


def forget_cached_secrets() -> None:
    """The kept secrets dropped: a new execution environment, or `SECRET_MAX_AGE` passed."""
    READER.forget()


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    forget_cached_secrets()
    with mock_aws():
        yield
    forget_cached_secrets()


def test_secrets_and_parameters_become_the_variables_named(aws: None) -> None:
    boto3.client("secretsmanager").create_secret(Name="shop/api-key", SecretString=VALUE)
    boto3.client("secretsmanager").create_secret(Name="shop/db", SecretString=json.dumps({"password": "pw-1"}))
    boto3.client("ssm").put_parameter(Name="/shop/token", Value="t-1", Type="SecureString")
    locations = {
        "API_KEY": "secretsmanager:shop/api-key",
        "DB_PASSWORD": "secretsmanager:shop/db#password",
        "TOKEN": "ssm:/shop/token",
    }
    environment = {"ASYA_SECRETS": encode_secrets(locations)}
    prepare(environment)
    assert (environment["API_KEY"], environment["DB_PASSWORD"], environment["TOKEN"]) == (VALUE, "pw-1", "t-1")


def test_a_secret_that_cannot_be_read_names_it_and_shows_no_value(aws: None) -> None:
    boto3.client("secretsmanager").create_secret(Name="shop/db", SecretString=json.dumps({"user": VALUE}))
    with pytest.raises(SecretError, match=r"^API_KEY: cannot read secretsmanager 'shop/missing': ResourceNotFound"):
        prepare({"ASYA_SECRETS": encode_secrets({"API_KEY": "secretsmanager:shop/missing"})})
    with pytest.raises(SecretError) as raised:
        prepare({"ASYA_SECRETS": encode_secrets({"DB_PASSWORD": "secretsmanager:shop/db#password"})})
    assert str(raised.value) == "DB_PASSWORD: secretsmanager 'shop/db' has no field 'password'"
    assert VALUE not in str(raised.value)


def test_a_rotated_secret_is_read_again(aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    client = boto3.client("secretsmanager")
    client.create_secret(Name="shop/api-key", SecretString="first")
    monkeypatch.setenv("ASYA_SECRETS", encode_secrets({"API_KEY": "secretsmanager:shop/api-key"}))
    assert secret("API_KEY") == "first"
    client.put_secret_value(SecretId="shop/api-key", SecretString="second")
    assert secret("API_KEY") == "first", "kept for SECRET_MAX_AGE"
    forget_cached_secrets()
    assert secret("API_KEY") == "second"
    assert os.environ["API_KEY"] == "second"
    with pytest.raises(KeyError, match="OTHER is not one of this actor's secrets"):
        secret("OTHER")


def test_files_objects_folders_and_prefixes_land_in_the_temporary_folder(aws: None, tmp_path: Path) -> None:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="models")
    s3.put_object(Bucket="models", Key="classifier/v3/model.bin", Body=b"weights")
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("vocab/words.txt", "alpha\n")
        zipped.writestr("../escape.txt", "outside")
    s3.create_bucket(Bucket="assets")
    s3.put_object(Bucket="assets", Key="0123.zip", Body=archive.getvalue())
    s3.put_object(Bucket="models", Key="shards/a.parquet", Body=b"a")
    s3.put_object(Bucket="models", Key="shards/deep/b.parquet", Body=b"b")
    files = {
        "MODEL_PATH": FileSource("s3://models/classifier/v3/model.bin", "model.bin", "file"),
        "VOCAB_DIR": FileSource("s3://assets/0123.zip", "vocab-folder", "zip"),
        "SHARDS": FileSource("s3://models/shards/", "shards", "prefix"),
    }
    environment = {"ASYA_FILES": encode_files(files)}
    prepare(environment)
    model = Path(environment["MODEL_PATH"])
    assert model.read_bytes() == b"weights"
    assert tmp_path in model.parents
    vocab = Path(environment["VOCAB_DIR"])
    assert (vocab / "vocab" / "words.txt").read_text() == "alpha\n"
    assert [escaped.parent for escaped in tmp_path.rglob("escape.txt")] == [vocab], "nothing lands outside it"
    shards = Path(environment["SHARDS"])
    fetched = sorted(p.relative_to(shards).as_posix() for p in shards.rglob("*.parquet"))
    assert fetched == ["a.parquet", "deep/b.parquet"]
    assert not list(vocab.parent.glob(".*.zip")), "the zip is removed once unpacked"


def test_a_second_start_in_the_same_environment_fetches_afresh(aws: None) -> None:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="models")
    s3.put_object(Bucket="models", Key="m.bin", Body=b"one")
    source = FileSource("s3://models/m.bin", "m.bin", "file")
    assert fetch_file("M", source).read_bytes() == b"one"
    s3.put_object(Bucket="models", Key="m.bin", Body=b"two")
    assert fetch_file("M", source).read_bytes() == b"two"


@pytest.mark.parametrize(
    ("variable", "raw", "message"),
    [
        ("ASYA_SECRETS", "[]", "ASYA_SECRETS must be a JSON object"),
        ("ASYA_SECRETS", '{"K": "vault:k"}', "ASYA_SECRETS: K must be 'secretsmanager:<name>' or 'ssm:<name>'"),
        ("ASYA_FILES", '{"M": ["http://x", "m", "file"]}', "ASYA_FILES: M must be [s3 URL, name, file|zip|prefix]"),
        ("ASYA_FILES", "{", "ASYA_FILES is not JSON"),
    ],
)
def test_a_malformed_variable_is_a_config_error_naming_it(variable: str, raw: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("|", r"\|")):
        prepare({variable: raw})


def test_a_container_actors_consumer_has_its_files_and_secrets_before_its_handler(
    aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m asya.consumer` fetches them first, as `asya.actor` does at a Lambda actor's init."""
    from asya.consumer import __main__ as consumer_main

    boto3.client("s3").create_bucket(Bucket="models")
    boto3.client("s3").put_object(Bucket="models", Key="weights.json", Body=b"{}")
    boto3.client("secretsmanager").create_secret(Name="shop/api-key", SecretString=VALUE)
    files = {"MODEL_PATH": FileSource("s3://models/weights.json", "weights.json", "file")}
    monkeypatch.setenv("ASYA_FILES", encode_files(files))
    monkeypatch.setenv("ASYA_SECRETS", encode_secrets({"API_KEY": "secretsmanager:shop/api-key"}))
    monkeypatch.setenv("ASYA_QUEUE_URL", "https://sqs.us-east-1.amazonaws.com/123456789012/asya-shop-a")
    for variable in ("MODEL_PATH", "API_KEY"):  # what the start sets: undone after the test
        monkeypatch.setenv(variable, "")
    seen: dict[str, str] = {}
    monkeypatch.setattr(consumer_main, "run_process", lambda _on_busy: seen.update(os.environ))

    assert consumer_main.main() == 0

    assert Path(seen["MODEL_PATH"]).read_bytes() == b"{}"
    assert seen["API_KEY"] == VALUE
