"""Gemma 3 text generation from a GGUF file with kiln's graph API.

The weights, hyperparameters and vocabulary come from the file (kiln.GgufFile). Each
projection's weight is read transposed, [in, out], so that a token's product reads it in rows
(x @ w_t, the same fma chain over `in` for each output as linear(x, w)). A block-quantized
weight of the types in `planar_types` (by default every block format) stays quantized on the
device as its planar blocks (GgufFile.load_blocks: int8 values, a scale and, for Q4_K, a min per
block) transposed to [in, out] and [in / block, out]; the product dequantizes each value where it
reads it (value * scale - min, the arithmetic of GgufFile.dequantize), so the logits' bits are
those of the f32 weights. Other weights are dequantized on the host into f32 [in, out]. The
embedding table (the tied output projection's weight) is looked up in its planar blocks
(kiln.dequantize_blocks: the same values). The forward pass is Gemma 3's, as llama.cpp runs it
(its GGUF norm weights already hold Gemma's 1 + w):

    embeddings  token_embd[ids] * sqrt(d)
    each layer  x = rms_norm(h) (attn_norm); q, k, v = linear(x); q, k rms_norm'd per head
                (attn_q_norm, attn_k_norm); rotary positions (the halves rotated, base 10^4 on
                local layers and rope.freq_base on every sixth, global, layer); grouped-query
                attention, causal, scaled 1/sqrt(key_length); linear (attn_output), rms_norm
                (post_attention_norm); h += that
                x = rms_norm(h) (ffn_norm); linear(gelu_tanh(linear(x, gate)) * linear(x, up),
                down), rms_norm (post_ffw_norm); h += that
    logits      rms_norm(h) (output_norm) @ token_embd^T

A context holds at most `max_context` tokens (the sliding window, 512 for Gemma 3, unless asked
for more, up to the model's context length); a longer prompt or generation is a kiln.Error.
Local layers attend to the last `window` positions (their own included): their key/value cache
is a ring of min(window, max_context) slots, position p in slot p % slots; global layers keep
every position. A prompt's first `slots` tokens run in one pass (causal attention sees at most
the window there); each later token, of the prompt or generated, is one call of a compiled
program (kiln.compile) that reads and writes the fixed-size caches on the device, so every step
replays the same kernels.

Generation (tokens, generate_ids, stream, generate) picks each token by kiln.sampling's rule:
greedy by default, or a seeded draw with temperature, top-k and top-p made on the host from the
logits, so every device gives the same tokens. It stops at max_new_tokens, at the model's end
tokens (EOS, <end_of_turn>), at given stop ids, or, for text, before a given stop string.
docs/llm.md is the user's reference.

    from kiln import gemma3
    model = gemma3.Gemma3("gemma-3-270m-q4_k_m.gguf", device="cpu")
    print(model.generate("The capital of France is", max_new_tokens=8))
    for piece in model.stream("Once upon a time", 32, temperature=0.8, top_p=0.95, seed=7):
        print(piece, end="", flush=True)
"""

import codecs
import math
import numbers
import re

import numpy as np

from . import _kiln
from ._compile import compile as _compile
from ._host import tensor as _tensor
from .sampling import Sampler

_LOCAL_ROPE_BASE = 10000.0  # Gemma 3's local layers (llama.cpp's rope_freq_base_train_swa)
_GLOBAL_EVERY = 6  # every sixth layer attends globally (llama.cpp's swa pattern for gemma3)
_PLANAR_TYPES = {"Q4_0", "Q5_0", "Q8_0", "Q4_K", "Q6_K"}  # GgufFile.load_blocks's formats


def _error(message):
    return _kiln.Error(message)


class Tokenizer:
    """The GGUF's SentencePiece vocabulary (tokenizer.ggml.model "llama"): text to ids by merging
    the adjacent pair of pieces whose union is in the vocabulary with the highest score, the
    leftmost first among equals; pieces not in it as byte tokens <0xNN>. Spaces are "▁". Control
    and user-defined pieces written in the text (<start_of_turn>) are those tokens."""

    _CONTROL, _USER, _BYTE = 3, 4, 6

    def __init__(self, metadata):
        if metadata.get("tokenizer.ggml.model") != "llama":
            model = metadata.get("tokenizer.ggml.model")
            raise _error(f"gemma3: tokenizer.ggml.model is {model!r}; expected 'llama' "
                         "(SentencePiece)")
        self.pieces = list(metadata["tokenizer.ggml.tokens"])
        self.scores = list(metadata["tokenizer.ggml.scores"])
        self.types = list(metadata.get("tokenizer.ggml.token_type", [1] * len(self.pieces)))
        self.bos = int(metadata.get("tokenizer.ggml.bos_token_id", -1))
        self.eos = int(metadata.get("tokenizer.ggml.eos_token_id", -1))
        self.add_bos = bool(metadata.get("tokenizer.ggml.add_bos_token", False))
        self.space_prefix = bool(metadata.get("tokenizer.ggml.add_space_prefix", False))
        self.ids = {}
        for i, p in enumerate(self.pieces):
            self.ids.setdefault(p, i)
        specials = sorted((p for p, t in zip(self.pieces, self.types)
                           if t in (self._CONTROL, self._USER) and p), key=len, reverse=True)
        self._specials = re.compile("|".join(map(re.escape, specials))) if specials else None

    def encode(self, text):
        ids = [self.bos] if self.add_bos and self.bos >= 0 else []
        at = 0
        for match in self._specials.finditer(text) if self._specials else ():
            ids += self._encode_plain(text[at:match.start()], at == 0)
            ids.append(self.ids[match.group()])
            at = match.end()
        return ids + self._encode_plain(text[at:], at == 0)

    def _encode_plain(self, text, starts_text):
        if not text:
            return []
        text = text.replace(" ", "\u2581")
        if self.space_prefix and starts_text:
            text = "\u2581" + text
        symbols = list(text)
        while len(symbols) > 1:
            best, best_score = -1, -math.inf
            for i in range(len(symbols) - 1):
                piece = self.ids.get(symbols[i] + symbols[i + 1])
                if piece is not None and self.scores[piece] > best_score:
                    best, best_score = i, self.scores[piece]
            if best < 0:
                break
            symbols[best:best + 2] = [symbols[best] + symbols[best + 1]]
        ids = []
        for s in symbols:
            if s in self.ids:
                ids.append(self.ids[s])
                continue
            for byte in s.encode("utf-8"):
                piece = self.ids.get(f"<0x{byte:02X}>")
                if piece is None:
                    raise _error(f"gemma3: the vocabulary has neither {s!r} nor its byte "
                                 f"<0x{byte:02X}>")
                ids.append(piece)
        return ids

    def end_ids(self):
        """The ids that end a generation by default: EOS and, where the vocabulary has it, the
        chat template's <end_of_turn>."""
        ends = [self.eos] if self.eos >= 0 else []
        turn = self.ids.get("<end_of_turn>")
        return ends + ([turn] if turn is not None and turn not in ends else [])

    def piece_bytes(self, i):
        """The UTF-8 bytes token i stands for: none for a control piece, one byte for <0xNN>,
        the piece with "▁" as a space otherwise."""
        if not 0 <= i < len(self.pieces):
            raise _error(f"gemma3: token id {i} is outside the vocabulary of "
                         f"{len(self.pieces)}")
        piece, kind = self.pieces[i], self.types[i]
        if kind == self._CONTROL:
            return b""
        if kind == self._BYTE and piece.startswith("<0x") and piece.endswith(">"):
            return bytes([int(piece[3:-1], 16)])
        return piece.replace("\u2581", " ").encode("utf-8")

    def decode(self, ids):
        """The text of the ids; bytes that are no valid UTF-8 become U+FFFD."""
        out = b"".join(self.piece_bytes(i) for i in ids)
        return out.decode("utf-8", errors="replace")

    def decode_stream(self, ids):
        """decode's text in pieces as the ids come (an iterator over any iterable of ids): each
        piece the whole characters completed so far, a character split over byte tokens coming
        with its last byte; the pieces join to decode(ids)."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        for i in ids:
            piece = decoder.decode(self.piece_bytes(i))
            if piece:
                yield piece
        rest = decoder.decode(b"", final=True)
        if rest:
            yield rest


class Gemma3:
    """A Gemma 3 GGUF on one kiln device: weights uploaded once (projections [in, out], planar
    blocks for the GGUF types in planar_types, f32 otherwise), the decode step compiled once
    (kiln.compile) and replayed for every generated token."""

    def __init__(self, path, device=None, max_context=None, planar_types=_PLANAR_TYPES):
        self.device = _kiln.find_device(device) if device is not None else _kiln.cpu_device()
        self.file = _kiln.GgufFile(str(path))
        md = self.file.metadata
        arch = md.get("general.architecture")
        if arch != "gemma3":
            raise _error(f"gemma3: {path} holds a {arch!r} model; expected 'gemma3'")

        def hp(key):
            if f"gemma3.{key}" not in md:
                raise _error(f"gemma3: {path} lacks the metadata gemma3.{key}")
            return md[f"gemma3.{key}"]

        self.layers = int(hp("block_count"))
        self.width = int(hp("embedding_length"))
        self.heads = int(hp("attention.head_count"))
        self.kv_heads = int(hp("attention.head_count_kv"))
        self.head_dim = int(hp("attention.key_length"))
        self.eps = float(hp("attention.layer_norm_rms_epsilon"))
        self.rope_base = float(md.get("gemma3.rope.freq_base", 1000000.0))
        self.window = int(md.get("gemma3.attention.sliding_window", 512))
        longest = int(md.get("gemma3.context_length", self.window))
        self.max_context = int(max_context or min(self.window, longest))
        if not 1 <= self.max_context <= longest:
            raise _error(f"gemma3: max_context {self.max_context} must be 1 to the model's "
                         f"context length ({longest})")
        self.local_slots = min(self.window, self.max_context)
        if self.heads % self.kv_heads:
            raise _error(f"gemma3: {self.heads} query heads over {self.kv_heads} key heads; "
                         "expected a multiple")
        self.tokenizer = Tokenizer(md)
        self.vocab = len(self.tokenizer.pieces)
        names = {t[0] for t in self.file.tensors}
        for name in self._required():
            if name not in names:
                raise _error(f"gemma3: {path} lacks the tensor {name}")
        self.weights = {}  # name -> f32: norms as stored, projections transposed to [in, out]
        self.planar = {}  # name -> (values, scales, mins or None), each [in, out] or per block
        types = {t[0]: t[2] for t in self.file.tensors}
        unknown = set(planar_types) - _PLANAR_TYPES
        if unknown:
            raise _error(f"gemma3: planar_types {sorted(unknown)}; expected some of "
                         f"{sorted(_PLANAR_TYPES)}")
        for name in sorted(names):
            if types[name] in planar_types and self._is_projection(name):
                self.planar[name] = self._planar_in_out(name)
                continue
            values = self.file.dequantize(name)
            if values.ndim == 2:
                values = values.T
            self.weights[name] = _tensor(np.ascontiguousarray(values), device=self.device)
        embedding = "token_embd.weight"
        if types[embedding] in _PLANAR_TYPES:
            self._embedding_rows = self.file.load_blocks(embedding, self.device)
        else:
            self._embedding_rows = (_tensor(self.file.dequantize(embedding), device=self.device),)
        self._rope = {base: self._rope_tables(base)
                      for base in {_LOCAL_ROPE_BASE, self.rope_base}}
        self._step = _compile(self._decode_step)

    def _required(self):
        per_layer = ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_q_norm", "attn_k_norm",
                     "attn_output", "post_attention_norm", "ffn_norm", "ffn_gate", "ffn_up",
                     "ffn_down", "post_ffw_norm"]
        return ["token_embd.weight", "output_norm.weight"] + [
            f"blk.{layer}.{name}.weight" for layer in range(self.layers) for name in per_layer]

    def _is_projection(self, name):
        return name == "token_embd.weight" or name.rsplit(".", 2)[-2] in (
            "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")

    def _planar_in_out(self, name):
        """A block-quantized [out, in] weight's planar blocks as [in, out] values and
        [in / block, out] scales (and mins) on the device."""
        def transposed(part):
            if part is None:
                return None
            return _tensor(np.ascontiguousarray(part.numpy().T), device=self.device)

        return tuple(transposed(p) for p in self.file.load_blocks(name, _kiln.cpu_device()))

    # -- pieces of the forward ---------------------------------------------------------------

    def _w(self, name):
        """A norm's weight, or a projection's as [in, out]."""
        if name not in self.weights:
            raise _error(f"gemma3: the file lacks the tensor {name}")
        return self.weights[name]

    def _project(self, x, name):
        if name in self.planar:
            return _kiln.matmul(x, self._dequantized(*self.planar[name]))
        return _kiln.matmul(x, self._w(name))

    @staticmethod
    def _dequantized(values, scales, mins):
        """The f32 [in, out] weight of planar blocks along `in`: value * scale (- min), as a
        graph the product computes where it reads each value."""
        inputs, outputs = values.shape
        blocks = scales.shape[0]
        per_block = inputs // blocks
        w = values.to(_kiln.DType.f32).reshape(blocks, per_block, outputs) * \
            scales.reshape(blocks, 1, outputs)
        if mins is not None:
            w = w - mins.reshape(blocks, 1, outputs)
        return w.reshape(inputs, outputs)

    def _rope_tables(self, base):
        half = self.head_dim // 2
        inv = base ** (-np.arange(half, dtype=np.float64) * 2 / self.head_dim)
        angles = np.arange(self.max_context, dtype=np.float64)[:, None] * inv[None, :]
        return (_tensor(np.cos(angles).astype(np.float32), device=self.device),
                _tensor(np.sin(angles).astype(np.float32), device=self.device))

    def _is_global(self, layer):
        return (layer + 1) % _GLOBAL_EVERY == 0

    def _rotate(self, x, cos, sin):
        """Rotary positions on x [..., seq, heads, head_dim] with cos, sin [seq, head_dim/2]."""
        half = self.head_dim // 2
        seq = cos.shape[0]
        c, s = cos.reshape(seq, 1, half), sin.reshape(seq, 1, half)
        x1, x2 = x[..., :half], x[..., half:]
        return _kiln.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)

    def _norm(self, x, name):
        return _kiln.rms_norm(x, self._w(name), self.eps)

    def _attention_inputs(self, p, h, cos, sin):
        """q [1, heads, seq, hd], k and v [1, kv_heads, seq, hd] of h [seq, width]."""
        seq = h.shape[0]
        x = self._norm(h, p + "attn_norm.weight")

        def project(name, heads):
            return self._project(x, p + name).reshape(seq, heads, self.head_dim)

        q = self._norm(project("attn_q.weight", self.heads), p + "attn_q_norm.weight")
        k = self._norm(project("attn_k.weight", self.kv_heads), p + "attn_k_norm.weight")
        v = project("attn_v.weight", self.kv_heads)
        q, k = self._rotate(q, cos, sin), self._rotate(k, cos, sin)

        def heads_first(t):
            return t.permute(1, 0, 2).reshape(1, t.shape[1], seq, self.head_dim)

        return heads_first(q), heads_first(k), heads_first(v)

    def _after_attention(self, p, h, context):
        """h plus the attention's output and the MLP's, for context [1, heads, seq, hd]."""
        seq = h.shape[0]
        context = context.reshape(self.heads, seq, self.head_dim).permute(1, 0, 2)
        attended = self._project(context.reshape(seq, self.heads * self.head_dim),
                                 p + "attn_output.weight")
        h = h + self._norm(attended, p + "post_attention_norm.weight")
        x = self._norm(h, p + "ffn_norm.weight")
        inner = _kiln.gelu(self._project(x, p + "ffn_gate.weight"), "tanh") * \
            self._project(x, p + "ffn_up.weight")
        out = self._project(inner, p + "ffn_down.weight")
        return h + self._norm(out, p + "post_ffw_norm.weight")

    def _embed(self, ids):
        rows = [_kiln.embedding(part, ids) for part in self._embedding_rows if part is not None]
        table = _kiln.dequantize_blocks(*rows) if len(rows) > 1 else rows[0]
        return table * math.sqrt(self.width)

    def _logits(self, h):
        return self._project(self._norm(h, "output_norm.weight"), "token_embd.weight")

    # -- prefill and decode ------------------------------------------------------------------

    def prefill(self, ids):
        """Runs the prompt: the logits [len(ids), vocab] and the key/value caches, each
        [1, kv_heads, slots, head_dim] holding the prompt's positions (slots: max_context for
        global layers, local_slots for local ones). Tokens past local_slots run as decode steps."""
        seq = len(ids)
        if not 1 <= seq <= self.max_context:
            raise _error(f"gemma3: a prompt of {seq} tokens; expected 1 to {self.max_context} "
                         "(max_context)")
        first = min(seq, self.local_slots)
        logits, caches = self._prefill_pass(ids[:first])
        rows = [logits]
        for position in range(first, seq):
            logits, caches = self.decode(ids[position], position, caches)
            rows.append(logits)
        return (_kiln.cat(rows, 0) if len(rows) > 1 else rows[0]), caches

    def _prefill_pass(self, ids):
        """The prompt's tokens in one pass, at most local_slots of them (causal attention then
        sees no key outside any layer's window)."""
        seq = len(ids)
        h = self._embed(_tensor(np.asarray(ids, np.int32), device=self.device))
        caches = []
        for layer in range(self.layers):
            p = f"blk.{layer}."
            cos, sin = self._rope[self.rope_base if self._is_global(layer) else _LOCAL_ROPE_BASE]
            q, k, v = self._attention_inputs(p, h, cos[:seq], sin[:seq])
            context = _kiln.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                         scale=self.head_dim ** -0.5)
            h = self._after_attention(p, h, context).resolve()
            slots = self.max_context if self._is_global(layer) else self.local_slots
            pad = [(0, 0), (0, 0), (0, slots - seq), (0, 0)]
            caches += [_kiln.pad(k, pad).resolve(), _kiln.pad(v, pad).resolve()]
        return self._logits(h), caches

    def _decode_step(self, token, position, local_slot, *caches):
        """One token: token, position and local_slot (position % local_slots) i32 [1]; the
        logits [1, vocab] and the caches with this position's keys and values written. A local
        layer's ring holds min(position + 1, local_slots) positions, in any slot order (the
        attention's sum does not depend on where a key sits, only its softmax order does)."""
        h = self._embed(token)

        def slot_mask(slots, at):
            return (_kiln.arange(slots, device=self.device) == at).reshape(1, 1, slots, 1)

        everywhere = (slot_mask(self.max_context, position), position + 1)
        local = (slot_mask(self.local_slots, local_slot),
                 _kiln.minimum(position + 1, self.local_slots))
        out = []
        for layer in range(self.layers):
            p = f"blk.{layer}."
            cos, sin = self._rope[self.rope_base if self._is_global(layer) else _LOCAL_ROPE_BASE]
            cos, sin = _kiln.embedding(cos, position), _kiln.embedding(sin, position)
            q, k, v = self._attention_inputs(p, h, cos, sin)
            here, lengths = everywhere if self._is_global(layer) else local
            keys = _kiln.where(here, k, caches[2 * layer])
            values = _kiln.where(here, v, caches[2 * layer + 1])
            context = _kiln.scaled_dot_product_attention(q, keys, values, key_lengths=lengths,
                                                         scale=self.head_dim ** -0.5)
            h = self._after_attention(p, h, context)
            out += [keys, values]
        return (self._logits(h), *out)

    def decode(self, token, position, caches):
        """The logits [1, vocab] after `token` at `position` (0-based), and the updated caches."""
        if not 0 <= position < self.max_context:
            raise _error(f"gemma3: position {position} is past max_context {self.max_context}")
        def i32(value):
            return _tensor(np.asarray([value], np.int32), device=self.device)

        logits, *caches = self._step(i32(token), i32(position), i32(position % self.local_slots),
                                     *caches)
        return logits, caches

    # -- generation --------------------------------------------------------------------------
    # Each method takes the sampling settings (kiln.sampling states the rule: temperature 0, the
    # default, is greedy; otherwise top_k, top_p and seed apply) and the stops: the model's end
    # tokens (Tokenizer.end_ids) unless stop_at_end is False, and any stop_ids given.

    def tokens(self, ids, max_new_tokens, *, temperature=0.0, top_k=0, top_p=1.0, seed=0,
               stop_ids=(), stop_at_end=True):
        """An iterator over the continuation of the token ids, each new id as it is chosen: at
        most max_new_tokens of them, the last a stop id where one came. The arguments are checked
        here, before the first step runs."""
        sampler = Sampler(temperature, top_k, top_p, seed)
        stops = self._stops(stop_ids, stop_at_end)
        self._check_lengths(ids, max_new_tokens)
        return self._continue(list(ids), max_new_tokens, sampler, stops)

    def generate_ids(self, ids, max_new_tokens, **settings):
        """The continuation of the token ids as a list (tokens' ids)."""
        return list(self.tokens(ids, max_new_tokens, **settings))

    def stream(self, prompt, max_new_tokens=16, *, stop_strings=(), **settings):
        """An iterator over the prompt's continuation as text, a piece as each token is chosen.
        A piece holds whole characters only (a character split over byte tokens comes when its
        last byte does); the stop token's text is left out, and the text ends before the first
        stop string (a piece that might begin one is held back until it cannot)."""
        stop_strings = _stop_strings(stop_strings)
        stops = self._stops(settings.pop("stop_ids", ()), settings.pop("stop_at_end", True))
        tokens = self.tokens(self.tokenizer.encode(prompt), max_new_tokens,
                             stop_ids=sorted(stops), stop_at_end=False, **settings)
        return self._text_pieces(tokens, stops, stop_strings)

    def generate(self, prompt, max_new_tokens=16, **settings):
        """The prompt's continuation as text (without the prompt): stream's pieces joined."""
        return "".join(self.stream(prompt, max_new_tokens, **settings))

    def _stops(self, stop_ids, stop_at_end):
        stop_ids = [stop_ids] if _is_int(stop_ids) else list(stop_ids)
        for i in stop_ids:
            if not _is_int(i) or not 0 <= i < self.vocab:
                raise _error(f"gemma3: stop id {i!r}; expected a token id from 0 to "
                             f"{self.vocab - 1}")
        return set(stop_ids) | (set(self.tokenizer.end_ids()) if stop_at_end else set())

    def _check_lengths(self, ids, max_new_tokens):
        if not _is_int(max_new_tokens) or max_new_tokens < 0:
            raise _error(f"gemma3: max_new_tokens is {max_new_tokens!r}; expected an int >= 0")
        if len(ids) == 0:
            raise _error("gemma3: an empty prompt; expected at least one token id")
        if len(ids) + max_new_tokens > self.max_context:
            raise _error(f"gemma3: {len(ids)} prompt tokens and {max_new_tokens} new ones exceed "
                         f"max_context {self.max_context}")

    def _continue(self, ids, max_new_tokens, sampler, stops):
        """Yields each new id: the prompt in prefill, then one decode step per id chosen."""
        if max_new_tokens == 0:
            return
        logits, caches = self.prefill(ids)
        position = len(ids)
        for produced in range(1, max_new_tokens + 1):
            token = sampler.pick(logits[logits.shape[0] - 1])
            yield token
            if token in stops or produced == max_new_tokens:
                return
            logits, caches = self.decode(token, position, caches)
            position += 1

    def _text_pieces(self, tokens, stops, stop_strings):
        """The tokens' text (the stop token, always the last, left out) in pieces, ending before
        the first stop string."""
        held = ""
        for piece in self.tokenizer.decode_stream(t for t in tokens if t not in stops):
            held += piece
            end = _first_stop(held, stop_strings)
            if end is not None:
                if end:
                    yield held[:end]
                return
            ready = len(held) - _stop_prefix_length(held, stop_strings)
            if ready:
                yield held[:ready]
                held = held[ready:]
        if held:
            yield held


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _stop_strings(stop_strings):
    stop_strings = [stop_strings] if isinstance(stop_strings, str) else list(stop_strings)
    for s in stop_strings:
        if not isinstance(s, str) or not s:
            raise _error(f"gemma3: stop string {s!r}; expected a non-empty str")
    return stop_strings


def _first_stop(text, stop_strings):
    """Where the earliest stop string in text begins, or None."""
    found = [at for at in (text.find(s) for s in stop_strings) if at >= 0]
    return min(found) if found else None


def _stop_prefix_length(text, stop_strings):
    """The length of text's longest end that begins some stop string (it may yet complete it)."""
    longest = 0
    for s in stop_strings:
        for length in range(min(len(text), len(s) - 1), longest, -1):
            if s.startswith(text[len(text) - length:]):
                longest = length
                break
    return longest
