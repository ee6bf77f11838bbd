"""A BERT sentence-transformers model run in numpy (``embedder: "bert:FOLDER"``).

all-MiniLM-L6-v2 gives the similarities sentence-transformers documents for it; a text
embeds the same alone or in a batch of other lengths; text past the model's length is
cut; the vectors' key follows every file read; a folder that is not such a model, and a
weights file that is not safetensors, are refused by name; hybrid search finds by
meaning what lexical search misses, in an index and through ``toolgate serve`` with
clients of both protocol eras.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastmcp import Client

from _fixtures.gateway import HttpGateway, gateway_config, toolgate_argv
from test_gateway_serve import stdio_gateway
from toolgate.bert import BertModel, read_safetensors
from toolgate.catalog import Catalog, Tool
from toolgate.embedding import BertEmbedder, load_embedder
from toolgate.errors import ConfigError
from toolgate.search import SearchIndex, SearchSettings


@pytest.fixture(scope="module")
def minilm(minilm_folder: Path) -> BertEmbedder:
    return BertEmbedder(minilm_folder)


def test_all_minilm_gives_the_similarities_sentence_transformers_documents(
    minilm: BertEmbedder,
) -> None:
    # sentence-transformers' quickstart, with this model: 0.6660, 0.1046, 0.1411 (GELU's
    # tanh approximation, in place of erf, gives 0.1045 and 0.1410)
    v = minilm.embed(
        ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    )
    assert v.shape == (3, 384) and v.dtype == np.float32
    similar = v @ v.T
    rounded = [round(float(similar[i, j]), 4) for i, j in ((0, 1), (0, 2), (1, 2))]
    assert rounded == [0.6660, 0.1046, 0.1411]
    assert np.allclose(np.diag(similar), 1.0, atol=1e-5)


def test_a_text_embeds_the_same_alone_and_in_a_batch_of_other_lengths(
    minilm: BertEmbedder,
) -> None:
    texts = [
        "open a pull request",
        "",
        "x",
        " ".join(["book a hotel room near the station and mail the booking"] * 40),
        "list the issues of a repository that carry a label",
    ]
    together = minilm.embed(texts)
    alone = np.vstack([minilm.embed([t]) for t in texts])
    assert np.abs(together - alone).max() < 1e-5
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert minilm.embed([]).shape == (0, 384)


def test_a_long_text_is_not_batched_with_short_ones_it_would_pad(
    minilm_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long request and its short readings go to the encoder in one call; padding each
    reading to the request's 256 tokens made that call cost seven times its texts."""
    model = BertModel(minilm_folder)
    passes: list[tuple[int, int, int]] = []  # rows, longest, tokens
    batch = model._batch

    def spy(ids_list: list[list[int]]) -> Any:
        passes.append((len(ids_list), max(map(len, ids_list)), sum(map(len, ids_list))))
        return batch(ids_list)

    monkeypatch.setattr(model, "_batch", spy)
    request = " ".join(["book a flight to Tokyo next week and add it to my calendar"] * 30)
    readings = [f"then add trip {i} to my calendar" for i in range(8)]
    vectors = model.encode([request, *readings])
    assert sorted(rows for rows, _, _ in passes) == [1, 8]  # the readings together
    assert sum(rows * longest for rows, longest, _ in passes) <= 1.25 * sum(
        tokens for _, _, tokens in passes
    )
    alone = np.vstack([model.encode([t]) for t in [request, *readings]])
    assert np.abs(vectors - alone).max() < 1e-5


def test_text_past_the_models_length_is_cut_at_its_max_seq_length(minilm: BertEmbedder) -> None:
    phrase = "search the issues of a repository by their labels"  # 9 tokens
    mid, long = " ".join([phrase] * 16), " ".join([phrase] * 40)  # 146 and 362 tokens
    more = " and then delete every branch"
    [a, b, c, d] = minilm.embed([long, long + more, mid, mid + more])
    assert np.abs(a - b).max() < 1e-6  # past 256 tokens, nothing more is read
    assert np.abs(c - d).max() > 1e-3  # under 256 (past the tokenizer file's own 128), it is


def _linked(source: Path, into: Path, *, skip: tuple[str, ...] = ()) -> Path:
    """A model folder of links to ``source``'s files, but for ``skip``."""
    into.mkdir()
    for path in source.iterdir():
        if path.name not in skip:
            (into / path.name).symlink_to(path)
    return into


def test_a_folder_that_pools_by_cls_embeds_the_first_token_in_a_batch_or_alone(
    minilm: BertEmbedder, minilm_folder: Path, tmp_path: Path
) -> None:
    folder = _linked(minilm_folder, tmp_path / "cls", skip=("1_Pooling",))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    cls = BertEmbedder(folder)
    texts = ["open a pull request", "close the issue that reports the crash on start-up"]
    together = cls.embed(texts)
    alone = np.vstack([cls.embed([t]) for t in texts])
    assert np.abs(together - alone).max() < 1e-5
    assert np.abs(together - minilm.embed(texts)).max() > 1e-2  # not the mean of tokens
    assert cls.model_id != minilm.model_id


def test_the_vectors_key_follows_every_file_and_the_spec_names_the_folder(
    minilm: BertEmbedder, minilm_folder: Path, tmp_path: Path
) -> None:
    loaded = load_embedder(f"bert:{minilm_folder}")
    assert isinstance(loaded, BertEmbedder)
    assert loaded.model_id == minilm.model_id and loaded.model_id.startswith("bert:")
    assert loaded.scripts == frozenset({"Latin"})  # an English model
    shorter = _linked(minilm_folder, tmp_path / "shorter", skip=("sentence_bert_config.json",))
    (shorter / "sentence_bert_config.json").write_text('{"max_seq_length": 128}')
    assert BertEmbedder(shorter).model_id != minilm.model_id


def _tensor_file(path: Path, tensors: dict[str, tuple[str, list[int], bytes]]) -> Path:
    header: dict[str, Any] = {}
    offset = 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {
            "dtype": dtype,
            "shape": shape,
            "data_offsets": [offset, offset + len(data)],
        }
        offset += len(data)
    head = json.dumps(header).encode()
    path.write_bytes(
        struct.pack("<Q", len(head)) + head + b"".join(d for _, _, d in tensors.values())
    )
    return path


def test_safetensors_floats_of_every_width_and_integers_are_read(tmp_path: Path) -> None:
    values = np.array([[1.5, -2.0], [0.25, 3.0]], dtype=np.float32)
    bf16 = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    read = read_safetensors(
        _tensor_file(
            tmp_path / "t.safetensors",
            {
                "f32": ("F32", [2, 2], values.astype("<f4").tobytes()),
                "f16": ("F16", [2, 2], values.astype("<f2").tobytes()),
                "bf16": ("BF16", [2, 2], bf16),
                "ids": ("I64", [3], np.arange(3, dtype="<i8").tobytes()),
            },
        )
    )
    for name in ("f32", "f16", "bf16"):
        assert read[name].dtype == np.float32 and np.array_equal(read[name], values), name
    assert read["ids"].tolist() == [0, 1, 2]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"\x01\x02", "is not a safetensors file: 2 bytes"),
        (struct.pack("<Q", 999) + b"{}", "its header runs past the end"),
        (struct.pack("<Q", 2) + b"[]", "its header is not an object"),
        (
            struct.pack("<Q", 60)
            + b'{"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}'[:60],
            "is not a safetensors file",
        ),
    ],
)
def test_a_file_that_is_not_safetensors_is_refused_with_the_reason(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=problem):
        read_safetensors(path)


def test_a_tensor_outside_the_file_or_of_an_unread_type_is_refused(tmp_path: Path) -> None:
    short = _tensor_file(tmp_path / "a.safetensors", {"w": ("F32", [4], b"\0" * 8)})
    with pytest.raises(ConfigError, match="tensor 'w' lies outside the file"):
        read_safetensors(short)
    text = _tensor_file(tmp_path / "b.safetensors", {"w": ("U8", [2], b"ab")})
    with pytest.raises(ConfigError, match="tensor 'w' is 'U8', a type toolgate does not read"):
        read_safetensors(text)


def _broken(minilm_folder: Path, tmp: Path, change: str) -> Path:
    if change == "no folder":
        return tmp / "nowhere"
    if change == "no weights":
        return _linked(minilm_folder, tmp / "m", skip=("model.safetensors",))
    if change == "roberta":
        folder = _linked(minilm_folder, tmp / "m", skip=("config.json",))
        config = json.loads((minilm_folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, "model_type": "roberta"}))
        return folder
    if change in ("no layers", "relu"):
        folder = _linked(minilm_folder, tmp / "m", skip=("config.json",))
        config = json.loads((minilm_folder / "config.json").read_text())
        changed = {"num_hidden_layers": "six"} if change == "no layers" else {"hidden_act": "relu"}
        (folder / "config.json").write_text(json.dumps({**config, **changed}))
        return folder
    if change == "two poolings":
        folder = _linked(minilm_folder, tmp / "m", skip=("1_Pooling",))
        (folder / "1_Pooling").mkdir()
        pooling = {"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": True}
        (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
        return folder
    folder = _linked(minilm_folder, tmp / "m", skip=("model.safetensors",))
    if change == "a tensor missing":
        _tensor_file(folder / "model.safetensors", {"w": ("F32", [1], b"\0" * 4)})
        return folder
    assert change == "a tensor of the wrong shape"
    tensors = read_safetensors(minilm_folder / "model.safetensors")
    up = "encoder.layer.0.intermediate.dense.weight"
    tensors[up] = np.ascontiguousarray(tensors[up].T)  # (384, 1536) where (1536, 384) belongs
    _tensor_file(
        folder / "model.safetensors",
        {
            name: ("F32", list(t.shape), t.astype("<f4").tobytes())
            for name, t in tensors.items()
            if t.dtype == np.float32
        },
    )
    return folder


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ("no folder", "BERT model folder '.*nowhere' does not exist"),
        ("no weights", "has no model.safetensors \\(its weights\\)"),
        ("roberta", "model_type 'roberta'; toolgate runs BERT models"),
        ("no layers", "num_hidden_layers is 'six', not a positive integer"),
        (
            "two poolings",
            "pools by cls_token or by mean_tokens alone; it names \\['cls_token', 'mean_tokens'\\]",
        ),
        ("relu", "hidden_act 'relu'; toolgate runs 'gelu' only"),
        ("a tensor missing", "has no tensor 'embeddings.word_embeddings.weight'"),
        ("a tensor of the wrong shape", "model.safetensors' does not fit .*config.json'"),
    ],
)
def test_a_folder_that_is_not_a_bert_model_is_refused_by_name(
    minilm_folder: Path, tmp_path: Path, change: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem):
        load_embedder(f"bert:{_broken(minilm_folder, tmp_path, change)}")


def test_the_spec_without_a_folder_or_a_folder_not_a_path_is_refused() -> None:
    with pytest.raises(ConfigError, match="name the model folder, as 'bert:FOLDER'"):
        load_embedder("bert:")
    with pytest.raises(ConfigError, match="a BERT model folder is a path, got 3"):
        BertEmbedder(3)  # type: ignore[arg-type]


WEATHER = [
    Tool("weather.forecast", "Get the forecast for a city."),
    Tool("mail.send_email", "Send an email message to a recipient."),
    Tool("fs.read_file", "Read a file from the disk."),
    Tool("calendar.create_event", "Add an event to the calendar."),
]


def test_hybrid_search_with_the_model_finds_by_meaning_what_lexical_search_misses(
    minilm: BertEmbedder,
) -> None:
    catalog = Catalog()
    catalog.add_tools(WEATHER)
    query = "will it rain in Paris tomorrow"  # no word of the forecast tool's
    lexical = SearchIndex(catalog, settings=SearchSettings("lexical"))
    hybrid = SearchIndex(catalog, settings=SearchSettings("hybrid", embedder=minilm))
    assert [h.name for h in lexical.search(query, limit=1)] != ["weather.forecast"]
    assert [h.name for h in hybrid.search(query, limit=1)] == ["weather.forecast"]


async def test_toolgate_serve_ranks_by_the_model_for_clients_of_both_eras(
    minilm_folder: Path, tmp_path: Path
) -> None:
    search = {"mode": "hybrid", "embedder": f"bert:{minilm_folder}"}
    config = gateway_config(tmp_path, strategy="search", search=search)
    query = {"query": "the product of two numbers", "limit": 1}  # multiply says "Multiply"
    async with stdio_gateway(config) as session:  # 2025-11-25, a session
        found = await session.call_tool("search_tools", query)
        assert found.structured_content is not None
        assert [r["name"] for r in found.structured_content["results"]] == ["multiply"]
    gateway = HttpGateway([*toolgate_argv(), "serve", str(config)], tmp_path / "gateway.log")
    gateway.start()
    try:
        async with Client(gateway.url) as client:  # 2026-07-28, stateless
            result = await client.call_tool("search_tools", query)
            assert [r["name"] for r in result.structured_content["results"]] == ["multiply"]
    finally:
        gateway.stop()


async def test_toolgate_serve_names_a_model_folder_it_cannot_read(tmp_path: Path) -> None:
    config = gateway_config(
        tmp_path, strategy="search", search={"mode": "hybrid", "embedder": "bert:/nowhere"}
    )
    gateway = HttpGateway([*toolgate_argv(), "serve", str(config)], tmp_path / "gateway.log")
    proc = gateway.launch()
    assert proc.wait(timeout=60) != 0
    assert "BERT model folder '/nowhere' does not exist" in gateway.log.read_text()
