"""The local workers' folders are compiled once for this interpreter, whatever PYTHONDONTWRITEBYTECODE
says, and not again at the next start."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from asya_local.bytecode import MARK, compiled


def _package(root: Path) -> Path:
    folder = root / "library"
    (folder / "inner").mkdir(parents=True)
    (folder / "top.py").write_text("VALUE = 1\n")
    (folder / "inner" / "deep.py").write_text("VALUE = 2\n")
    (folder / "broken.py").write_text("def (:\n")  # a module that never compiles does not stop the rest
    return folder


def test_each_module_is_compiled_and_the_folder_marked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    folder = _package(tmp_path)
    compiled([folder, folder])
    for module in ("top.py", "inner/deep.py"):
        assert Path(importlib.util.cache_from_source(str(folder / module))).is_file(), module
    assert (folder / MARK).is_file()


def test_a_marked_folder_is_not_compiled_again(tmp_path: Path) -> None:
    folder = _package(tmp_path)
    compiled([folder])
    cached = Path(importlib.util.cache_from_source(str(folder / "top.py")))
    cached.unlink()
    compiled([folder])
    assert not cached.exists(), "the mark says the folder was compiled: nothing is redone"
