"""`asya secrets set`: a secret's local value goes into the mesh's secrets file, readable by its owner
only, and only for a secret some actor reads; `asya up` refuses to start while one has no value."""

from __future__ import annotations

import io
import stat
from pathlib import Path

import pytest
import yaml

from asya_cdk.loading import load_mesh
from asya_local import cli
from asya_local.fixtures import LocalSecretError, local_secret_values

MESH = """\
namespace: sec
actors:
  a:
    handler: mod.fn
    secrets: {API_KEY: shop/api-key, DB: {parameter: /shop/db}}
"""


@pytest.fixture
def mesh(tmp_path: Path) -> Path:
    (tmp_path / "mod.py").write_text("def fn(p):\n    return p\n")
    path = tmp_path / "mesh.yaml"
    path.write_text(MESH)
    return path


def test_a_value_is_kept_for_its_owner_only(mesh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli.main(["secrets", "set", "shop/api-key", "k-1", "--config", str(mesh)]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("p-1\n"))  # the value from standard input, not the command line
    assert cli.main(["secrets", "set", "/shop/db", "--config", str(mesh)]) == 0
    file = mesh.parent / ".asya" / "secrets.yaml"
    assert yaml.safe_load(file.read_text()) == {"shop/api-key": "k-1", "/shop/db": "p-1"}
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert (file.parent / ".gitignore").read_text().splitlines()[-1] == "*", "git never sees the values"
    assert local_secret_values(load_mesh(mesh)) == {"shop/api-key": "k-1", "/shop/db": "p-1"}


def test_only_a_secret_an_actor_reads_can_be_set(mesh: Path) -> None:
    assert cli.main(["secrets", "set", "shop/other", "x", "--config", str(mesh)]) == 2
    assert not (mesh.parent / ".asya" / "secrets.yaml").exists()


def test_a_secret_without_a_local_value_stops_the_start_naming_it(mesh: Path) -> None:
    with pytest.raises(LocalSecretError) as raised:
        local_secret_values(load_mesh(mesh))
    assert str(raised.value).startswith("actors.a.secrets.API_KEY: no local value for secret 'shop/api-key'; set one")
    assert "asya secrets set shop/api-key" in str(raised.value)


def test_a_yaml_mistake_in_the_secrets_file_names_the_file(mesh: Path) -> None:
    file = mesh.parent / ".asya" / "secrets.yaml"
    file.parent.mkdir()
    file.write_text("shop/api-key: k-1\n /shop/db: p-1\n")
    with pytest.raises(LocalSecretError) as raised:
        local_secret_values(load_mesh(mesh))
    assert f'in "{file}", line 2' in str(raised.value)
