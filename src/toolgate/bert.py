"""A BERT sentence encoder in numpy: a sentence-transformers model folder to vectors.

Reads the folder the Hugging Face hub holds for a BERT-family sentence-transformers
model (``config.json``, ``tokenizer.json``, ``model.safetensors``, and
``1_Pooling/config.json`` and ``sentence_bert_config.json`` when present), and runs its
forward pass in float32 numpy: no torch. ``toolgate.embedding.BertEmbedder`` is the
``Embedder`` around it (``embedder: "bert:FOLDER"``).

Imports numpy and, when a model loads, ``tokenizers`` (the ``bert`` extra); nothing of
toolgate but its errors.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from toolgate.errors import ConfigError

# A batch holds at most this many tokens, and its attention scores at most this many
# floats (batch x heads x length x length): memory stays bounded whatever the texts.
_BATCH_TOKENS = 4096
_BATCH_SCORES = 1 << 23
# Every text of a batch is padded to its longest, and padding costs what text costs. A
# text joins a batch while the batch's padding stays within this share of its tokens,
# or the whole batch is this small (where a pass's fixed cost outweighs its padding).
_BATCH_PADDING = 0.25
_BATCH_SMALL = 128

_DTYPES: dict[str, np.dtype[Any]] = {
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "F64": np.dtype("<f8"),
}
# integer tensors are read as they are (a BERT file keeps its position_ids)
_INTEGERS: dict[str, np.dtype[Any]] = {"I64": np.dtype("<i8"), "I32": np.dtype("<i4")}


def read_safetensors(path: Path) -> dict[str, Any]:
    """The tensors of a ``.safetensors`` file: floats as float32 arrays, integers as they are.

    The format is an 8-byte little-endian header length, a JSON header naming each
    tensor's dtype, shape and byte range, then the bytes. F32, F16, F64, BF16, I64 and
    I32 are read; a file that does not follow the format is refused with the reason.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"Cannot read the model weights {str(path)!r}: {exc}") from exc
    if len(data) < 8:
        raise ConfigError(f"{str(path)!r} is not a safetensors file: {len(data)} bytes")
    size = int.from_bytes(data[:8], "little")
    if size > len(data) - 8:
        raise ConfigError(f"{str(path)!r} is not a safetensors file: its header runs past the end")
    try:
        header = json.loads(data[8 : 8 + size])
    except ValueError as exc:
        raise ConfigError(f"{str(path)!r} is not a safetensors file: {exc}") from exc
    if not isinstance(header, dict):
        raise ConfigError(f"{str(path)!r} is not a safetensors file: its header is not an object")
    body = memoryview(data)[8 + size :]
    tensors: dict[str, Any] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            kind, shape = entry["dtype"], [int(d) for d in entry["shape"]]
            start, end = (int(o) for o in entry["data_offsets"])
        except (TypeError, KeyError, ValueError) as exc:
            raise ConfigError(f"{str(path)!r}: tensor {name!r} has a malformed entry") from exc
        count = math.prod(shape)
        known = _DTYPES.get(kind) or _INTEGERS.get(kind)
        width = 2 if kind == "BF16" else (known.itemsize if known else 0)
        if not width:
            raise ConfigError(
                f"{str(path)!r}: tensor {name!r} is {kind!r}, a type toolgate does not read"
            )
        if not 0 <= start <= end <= len(body) or end - start != count * width:
            raise ConfigError(f"{str(path)!r}: tensor {name!r} lies outside the file")
        raw = body[start:end]
        if kind == "BF16":  # the top half of a float32
            flat = np.frombuffer(raw, "<u2").astype(np.uint32) << 16
            array = flat.view(np.float32)
        elif kind in _INTEGERS:
            array = np.frombuffer(raw, _INTEGERS[kind]).copy()
        elif kind == "F32":  # a read-only view of the file's bytes: the weights held once
            array = np.frombuffer(raw, _DTYPES[kind])
        else:
            array = np.frombuffer(raw, _DTYPES[kind]).astype(np.float32)
        tensors[name] = array.reshape(shape)
    return tensors


def _gelu(x: Any) -> Any:
    """GELU, ``x * Phi(x)``, with erf by Abramowitz and Stegun 7.1.26 (absolute error under
    1.5e-7), in float32 and in place of ``x`` (a layer's fresh activations): a batch's
    largest arrays are these, so no more than two temporaries of their size are made."""
    a = np.abs(x)
    a *= np.float32(1 / math.sqrt(2))
    t = a * np.float32(0.3275911)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(c)
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a  # 1 - erf(|x| / sqrt 2)
    poly *= np.float32(-0.5)
    poly += np.float32(1.0)  # Phi(|x|)
    # Phi(x) = Phi(|x|) where x >= 0, 1 - Phi(|x|) where not
    np.subtract(np.float32(1.0), poly, out=poly, where=x < 0)
    x *= poly
    return x


def _json(path: Path, default: dict[str, Any] | None = None) -> dict[str, Any]:
    if not path.exists() and default is not None:
        return default
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"Cannot read {str(path)!r}: {exc}") from exc
    if not isinstance(value, dict):
        raise ConfigError(f"{str(path)!r} holds {type(value).__name__}, not an object")
    return value


class _Layer:
    """One encoder layer's weights, laid out for ``x @ W`` (query, key, value fused)."""

    def __init__(self, w: dict[str, Any], p: str) -> None:
        def dense(name: str) -> Any:
            return np.ascontiguousarray(w[f"{p}.{name}.weight"].T)

        att = f"{p}.attention"
        self.qkv = np.concatenate(
            [dense(f"attention.self.{part}") for part in ("query", "key", "value")], axis=1
        )
        self.qkv_bias = np.concatenate(
            [w[f"{att}.self.{part}.bias"] for part in ("query", "key", "value")]
        )
        self.out, self.out_bias = dense("attention.output.dense"), w[f"{att}.output.dense.bias"]
        self.ln1 = (w[f"{att}.output.LayerNorm.weight"], w[f"{att}.output.LayerNorm.bias"])
        self.up, self.up_bias = dense("intermediate.dense"), w[f"{p}.intermediate.dense.bias"]
        self.down, self.down_bias = dense("output.dense"), w[f"{p}.output.dense.bias"]
        self.ln2 = (w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"])


class BertModel:
    """A sentence-transformers BERT model folder, run in numpy.

    ``encode`` tokenizes (truncating to the model's ``max_seq_length``), runs the
    encoder over batches of texts of like length, pools the last layer as the folder's
    pooling config says (the mean of its tokens by default, or its ``[CLS]`` token where
    it says so) and returns unit-length float32 rows. ``digest`` fingerprints every file read, so a
    changed model never reuses vectors cached for the old one.
    """

    def __init__(self, folder: str | Path) -> None:
        if not isinstance(folder, str | Path):
            raise ConfigError(f"a BERT model folder is a path, got {folder!r}")
        root = Path(folder).expanduser()
        if not root.is_dir():
            raise ConfigError(f"BERT model folder {str(root)!r} does not exist")
        files = {
            "config": root / "config.json",
            "tokenizer": root / "tokenizer.json",
            "weights": root / "model.safetensors",
        }
        for label, path in files.items():
            if not path.is_file():
                raise ConfigError(
                    f"BERT model folder {str(root)!r} has no {path.name} (its {label}); "
                    "expected a sentence-transformers folder as the Hugging Face hub holds it"
                )
        config = _json(files["config"])
        if config.get("model_type") != "bert":
            raise ConfigError(
                f"{str(files['config'])!r}: model_type {config.get('model_type')!r}; "
                "toolgate runs BERT models ('bert') only"
            )
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise ConfigError(
                f"{str(files['config'])!r}: position_embedding_type "
                f"{config['position_embedding_type']!r}; toolgate runs 'absolute' only"
            )
        if config.get("hidden_act", "gelu") != "gelu":
            raise ConfigError(
                f"{str(files['config'])!r}: hidden_act {config['hidden_act']!r}; "
                "toolgate runs 'gelu' only"
            )
        numbers: dict[str, int] = {}
        for key in ("num_hidden_layers", "num_attention_heads", "hidden_size"):
            value = config.get(key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(
                    f"{str(files['config'])!r}: {key} is {value!r}, not a positive integer"
                )
            numbers[key] = value
        self.layers_n = numbers["num_hidden_layers"]
        self.heads = numbers["num_attention_heads"]
        self.dim = numbers["hidden_size"]
        try:
            self._eps = np.float32(config.get("layer_norm_eps", 1e-12))
            positions = int(config.get("max_position_embeddings", 512))
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"{str(files['config'])!r}: layer_norm_eps or max_position_embeddings "
                "is not a number"
            ) from exc
        if self.dim % self.heads:
            raise ConfigError(
                f"{str(files['config'])!r}: {self.dim} is not split by {self.heads} heads"
            )

        pooling = _json(root / "1_Pooling" / "config.json", {"pooling_mode_mean_tokens": True})
        modes = [
            m
            for m in ("cls_token", "max_tokens", "mean_tokens", "mean_sqrt_len_tokens")
            if pooling.get(f"pooling_mode_{m}")
        ]
        if modes not in (["cls_token"], ["mean_tokens"]):
            raise ConfigError(
                f"{str(root / '1_Pooling' / 'config.json')!r}: toolgate pools by cls_token "
                f"or by mean_tokens alone; it names {modes or 'none'}"
            )
        self.pooling = modes[0]
        sbert = _json(root / "sentence_bert_config.json", {})
        try:
            self.max_length = min(int(sbert.get("max_seq_length", positions)), positions)
            if self.max_length < 2:  # [CLS] and [SEP] at least
                raise ValueError(self.max_length)
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"{str(root / 'sentence_bert_config.json')!r}: max_seq_length is not a "
                "number of at least 2"
            ) from exc

        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigError(
                "The BERT embedder needs the 'bert' extra: pip install 'toolgate[bert]'"
            ) from exc
        try:
            self._tokenizer: Any = Tokenizer.from_file(str(files["tokenizer"]))
        except Exception as exc:  # the library raises its own exception type
            raise ConfigError(
                f"Cannot read the tokenizer {str(files['tokenizer'])!r}: {exc}"
            ) from exc
        self._tokenizer.enable_truncation(self.max_length)
        self._tokenizer.no_padding()  # the hub's files often pad to a fixed length

        w = {
            name.removeprefix("bert.").removeprefix("0.auto_model."): array
            for name, array in read_safetensors(files["weights"]).items()
        }
        try:
            self._word = w["embeddings.word_embeddings.weight"]
            self._position = w["embeddings.position_embeddings.weight"]
            self._type0 = w["embeddings.token_type_embeddings.weight"][0]
            self._ln0 = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
            self._layers = [_Layer(w, f"encoder.layer.{i}") for i in range(self.layers_n)]
        except KeyError as exc:
            raise ConfigError(f"{str(files['weights'])!r} has no tensor {exc.args[0]!r}") from exc
        if self._word.shape[1] != self.dim or self._position.shape[0] < self.max_length:
            raise ConfigError(f"{str(files['weights'])!r} does not fit {str(files['config'])!r}")
        try:  # a tensor of the wrong shape shows on the first text, so here, not in a search
            self.encode(["a"])
        except ValueError as exc:
            raise ConfigError(
                f"{str(files['weights'])!r} does not fit {str(files['config'])!r}: {exc}"
            ) from exc

        digest = hashlib.sha256()
        for path in (
            *files.values(),
            root / "1_Pooling" / "config.json",
            root / "sentence_bert_config.json",
        ):
            if path.is_file():
                with path.open("rb") as handle:
                    digest.update(hashlib.file_digest(handle, "sha256").digest())
        self.digest = digest.hexdigest()

    def encode(self, texts: Sequence[str]) -> Any:
        """Unit-length float32 vectors of ``texts``, one row each, in order."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encoded = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
        start = 0
        while start < len(order):
            # the longest text of a batch is its last (sorted): grow while it fits and
            # pads little (a request beside its short readings would pad each of them)
            end, tokens = start + 1, len(encoded[order[start]].ids)
            while end < len(order):
                n = len(encoded[order[end]].ids)
                rows, tokens = end + 1 - start, tokens + n
                if rows * n > _BATCH_TOKENS or rows * self.heads * n * n > _BATCH_SCORES:
                    break
                if rows * n > max(tokens * (1 + _BATCH_PADDING), _BATCH_SMALL):
                    break
                end += 1
            chosen = order[start:end]
            out[chosen] = self._batch([encoded[i].ids for i in chosen])
            start = end
        return out

    def _norm(self, x: Any, weights: tuple[Any, Any]) -> Any:
        mu = x.mean(-1, keepdims=True)
        centred = x - mu
        var = (centred * centred).mean(-1, keepdims=True)
        return centred / np.sqrt(var + self._eps) * weights[0] + weights[1]

    def _batch(self, ids_list: list[list[int]]) -> Any:
        b, n = len(ids_list), max(len(ids) for ids in ids_list)
        ids = np.zeros((b, n), dtype=np.int64)
        mask = np.zeros((b, n), dtype=np.float32)
        for row, seq in enumerate(ids_list):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        h, d = self.heads, self.dim // self.heads
        x = self._norm(self._word[ids] + self._position[:n] + self._type0, self._ln0).reshape(
            b * n, self.dim
        )
        bias = ((mask - 1.0) * np.float32(1e9))[:, None, None, :]  # padding gets no attention
        scale = np.float32(1 / math.sqrt(d))
        for layer in self._layers:
            qkv = (x @ layer.qkv + layer.qkv_bias).reshape(b, n, 3, h, d).transpose(2, 0, 3, 1, 4)
            scores = (qkv[0] * scale) @ qkv[1].transpose(0, 1, 3, 2) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ qkv[2]).transpose(0, 2, 1, 3).reshape(b * n, self.dim)
            x = self._norm(x + ctx @ layer.out + layer.out_bias, layer.ln1)
            up = _gelu(x @ layer.up + layer.up_bias)
            x = self._norm(x + up @ layer.down + layer.down_bias, layer.ln2)
        tokens = x.reshape(b, n, self.dim)
        if self.pooling == "cls_token":
            pooled = tokens[:, 0]
        else:
            pooled = (tokens * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, np.float32(1e-12))


__all__ = ["BertModel", "read_safetensors"]
