"""md.save and the file system: any legal file name saves (temp names are bounded in bytes),
stray files in the folder never break a save, and a re-save keeps the file's permission bits.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import multidev as md
from multidev import checkpoint

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX file names and modes")


def _name_max(folder: Path) -> int:
    return os.pathconf(folder, "PC_NAME_MAX")


NAMES = {"240 bytes CJK": "模" * 80, "255 bytes CJK": "模" * 85, "254 bytes latin": "é" * 127,
         "255 bytes ASCII": "a" * 255, "252 bytes emoji": "🙂" * 63}  # fmt: skip


@pytest.mark.parametrize("name", NAMES.values(), ids=NAMES.keys())
def test_legal_long_names_save(tmp_path, name):
    size = len(os.fsencode(name))
    if size > _name_max(tmp_path):
        pytest.skip(f"this file system takes names up to {_name_max(tmp_path)} bytes")
    x = md.arange(5)
    md.save({"x": x}, tmp_path / name)
    md.save({"x": x + 1}, tmp_path / name)
    assert md.load(tmp_path / name)["x"].tolist() == [1, 2, 3, 4, 5]
    assert [p.name for p in tmp_path.iterdir()] == [name]


def _stray(folder: Path, base: str, pid: str) -> Path:
    name = f"{checkpoint._temp_prefix(base)}{checkpoint._host_tag()}.{pid}.0123abcd.multidev-tmp"
    path = folder / name
    path.write_bytes(b"stray")
    return path


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.parametrize("base", ["f", "模" * 80], ids=["short", "240 bytes"])
def test_stray_temp_like_files_never_break_a_save(tmp_path, base):
    strays = [
        _stray(tmp_path, base, "9" * 25),
        _stray(tmp_path, base, "²"),
        _stray(tmp_path, base, "٣"),
        _stray(tmp_path, base, "1" + "０"),
        _stray(tmp_path, base, str(2**31)),
        _stray(tmp_path, base, "0"),
        _stray(tmp_path, base, "-1"),
        _stray(tmp_path, base, ""),
    ]
    stale = _stray(tmp_path, base, str(_dead_pid()))
    md.save(md.ones(2), tmp_path / base)
    assert md.load(tmp_path / base).tolist() == [1.0, 1.0]
    assert all(p.exists() for p in strays), "files that are not our temp files are left alone"
    assert not stale.exists(), "a temp file of a dead process on this host is swept"


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o444, 0o755], ids=oct)
def test_resave_keeps_the_permission_bits(tmp_path, mode):
    path = tmp_path / "f"
    md.save(md.ones(2), path)
    os.chmod(path, mode)
    md.save(md.zeros(2), path)
    assert stat.S_IMODE(os.stat(path).st_mode) == mode
    assert md.load(path).tolist() == [0.0, 0.0]


def test_new_file_follows_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        md.save(md.ones(2), tmp_path / "f")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "f").st_mode) == 0o640


def test_interrupt_just_after_the_temp_file_is_created_removes_it(tmp_path, monkeypatch):
    """A KeyboardInterrupt can land between the open that creates the temp file and the next
    statement (the window test_checkpoint_kill's SIGINT trials hit once in a while): the save
    must still remove its temp file and keep the previous checkpoint."""
    path = tmp_path / "model.ckpt"
    md.save({"x": md.arange(3)}, path)
    real_open = os.open

    def open_then_interrupt(file, flags, *args, **kwargs):
        fd = real_open(file, flags, *args, **kwargs)
        if os.fspath(file).endswith(".multidev-tmp"):
            os.close(fd)
            raise KeyboardInterrupt
        return fd

    monkeypatch.setattr(os, "open", open_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        md.save({"x": md.arange(3) + 1}, path)
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["model.ckpt"]
    assert md.load(path)["x"].tolist() == [0, 1, 2]
