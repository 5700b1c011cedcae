"""kiln.gemma3 on a tiny Gemma 3 written with the gguf package: the tokenizer's merges by score,
byte fallback and special pieces; the prompt's logits and every decode step's against a numpy
forward written from the model's definition; greedy generation; bad files and lengths as
kiln.Errors. The real model is test_gemma3_model_full.py's."""

import numpy as np
import pytest

import kiln
from kiln import gemma3

gguf = pytest.importorskip("gguf")

LAYERS, WIDTH, HEADS, KV_HEADS, HEAD_DIM, FFN = 6, 32, 4, 2, 16, 48
WORDS = ["\u2581", "h", "e", "l", "o", "w", "r", "d", "he", "ll", "hell", "hello", "\u2581hello",
         "\u2581w", "or", "\u2581wor", "\u2581world", "ld"]
SCORES = [-1.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -1.5, -1.4, -1.2, -1.0, -0.5, -1.1,
          -1.3, -0.9, -0.4, -3.0]


def vocabulary():
    pieces = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>"]
    types = [3, 3, 3, 2, 3]
    pieces += [f"<0x{b:02X}>" for b in range(256)]
    types += [6] * 256
    pieces += WORDS
    types += [1] * len(WORDS)
    scores = [0.0] * (len(pieces) - len(WORDS)) + SCORES
    return pieces, scores, types


def weights(rng):
    def normal(*shape, scale=0.3):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    vocab = len(vocabulary()[0])
    w = {"token_embd.weight": normal(vocab, WIDTH), "output_norm.weight": 1 + normal(WIDTH)}
    for layer in range(LAYERS):
        p = f"blk.{layer}."
        w[p + "attn_norm.weight"] = 1 + normal(WIDTH)
        w[p + "attn_q.weight"] = normal(HEADS * HEAD_DIM, WIDTH)
        w[p + "attn_k.weight"] = normal(KV_HEADS * HEAD_DIM, WIDTH)
        w[p + "attn_v.weight"] = normal(KV_HEADS * HEAD_DIM, WIDTH)
        w[p + "attn_q_norm.weight"] = 1 + normal(HEAD_DIM)
        w[p + "attn_k_norm.weight"] = 1 + normal(HEAD_DIM)
        w[p + "attn_output.weight"] = normal(WIDTH, HEADS * HEAD_DIM)
        w[p + "post_attention_norm.weight"] = 1 + normal(WIDTH)
        w[p + "ffn_norm.weight"] = 1 + normal(WIDTH)
        w[p + "ffn_gate.weight"] = normal(FFN, WIDTH)
        w[p + "ffn_up.weight"] = normal(FFN, WIDTH)
        w[p + "ffn_down.weight"] = normal(WIDTH, FFN)
        w[p + "post_ffw_norm.weight"] = 1 + normal(WIDTH)
    return w


def write_model(path, arch="gemma3", drop=None, window=32):
    w = weights(np.random.default_rng(5))
    writer = gguf.GGUFWriter(str(path), arch=arch)
    writer.add_block_count(LAYERS)
    writer.add_context_length(128)
    writer.add_embedding_length(WIDTH)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_key_length(HEAD_DIM)
    writer.add_value_length(HEAD_DIM)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_freq_base(1e6)
    writer.add_sliding_window(window)
    pieces, scores, types = vocabulary()
    writer.add_tokenizer_model("llama")
    writer.add_token_list(pieces)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(2)
    writer.add_eos_token_id(1)
    writer.add_add_bos_token(True)
    writer.add_add_space_prefix(False)
    for name, value in w.items():
        if name != drop:
            writer.add_tensor(name, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return w


# -- the model's definition in numpy, one position at a time ----------------------------------

def rms_norm(x, w, eps=1e-6):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rotate(x, position, base):  # x [heads, head_dim]: the halves rotated
    half = HEAD_DIM // 2
    angle = position * base ** (-np.arange(half) * 2.0 / HEAD_DIM)
    c, s = np.cos(angle), np.sin(angle)
    return np.concatenate([x[:, :half] * c - x[:, half:] * s, x[:, half:] * c + x[:, :half] * s], 1)


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def reference_logits(w, ids, window=None):
    """Each position's logits [len(ids), vocab] in float64; local layers (all but every sixth)
    attend to the last `window` positions where given."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    h = w["token_embd.weight"][ids] * np.sqrt(WIDTH)
    keys = [[] for _ in range(LAYERS)]
    values = [[] for _ in range(LAYERS)]
    out = []
    for t in range(len(ids)):
        x_t = h[t]
        for layer in range(LAYERS):
            p = f"blk.{layer}."
            base = 1e6 if (layer + 1) % 6 == 0 else 1e4
            x = rms_norm(x_t, w[p + "attn_norm.weight"])
            q = rms_norm((w[p + "attn_q.weight"] @ x).reshape(HEADS, HEAD_DIM),
                         w[p + "attn_q_norm.weight"])
            k = rms_norm((w[p + "attn_k.weight"] @ x).reshape(KV_HEADS, HEAD_DIM),
                         w[p + "attn_k_norm.weight"])
            v = (w[p + "attn_v.weight"] @ x).reshape(KV_HEADS, HEAD_DIM)
            keys[layer].append(rotate(k, t, base))
            values[layer].append(v)
            q = rotate(q, t, base)
            context = np.zeros((HEADS, HEAD_DIM))
            seen = len(keys[layer])
            if window is not None and (layer + 1) % 6 != 0:
                seen = min(seen, window)
            for head in range(HEADS):
                kv = head // (HEADS // KV_HEADS)
                K = np.stack([k_[kv] for k_ in keys[layer][-seen:]])
                V = np.stack([v_[kv] for v_ in values[layer][-seen:]])
                s = K @ q[head] / np.sqrt(HEAD_DIM)
                a = np.exp(s - s.max())
                context[head] = (a / a.sum()) @ V
            attended = w[p + "attn_output.weight"] @ context.reshape(-1)
            x_t = x_t + rms_norm(attended, w[p + "post_attention_norm.weight"])
            x = rms_norm(x_t, w[p + "ffn_norm.weight"])
            inner = gelu_tanh(w[p + "ffn_gate.weight"] @ x) * (w[p + "ffn_up.weight"] @ x)
            x_t = x_t + rms_norm(w[p + "ffn_down.weight"] @ inner, w[p + "post_ffw_norm.weight"])
        out.append(w["token_embd.weight"] @ rms_norm(x_t, w["output_norm.weight"]))
    return np.array(out)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("gemma3") / "tiny.gguf"
    w = write_model(path)
    return path, w, gemma3.Gemma3(path, max_context=16)


def test_the_tokenizer_merges_by_score_and_falls_back_to_bytes(tiny):
    _, _, model = tiny
    tok = model.tokenizer
    ids = tok.encode("hello world")
    pieces = [tok.pieces[i] for i in ids]
    assert pieces == ["<bos>", "hello", "\u2581world"]
    assert tok.decode(ids) == "hello world"
    # "é" is no piece: its two UTF-8 bytes; <start_of_turn> in the text is that token.
    ids = tok.encode("<start_of_turn>hé")
    assert [tok.pieces[i] for i in ids] == ["<bos>", "<start_of_turn>", "h", "<0xC3>", "<0xA9>"]
    assert tok.decode(ids) == "hé"
    with pytest.raises(kiln.Error, match="outside the vocabulary"):
        tok.decode([10**6])


def test_prompt_and_decode_logits_follow_the_definition(tiny):
    _, w, model = tiny
    ids = model.tokenizer.encode("hello world hello")
    want = reference_logits(w, ids + [11, 12, 13])
    logits, caches = model.prefill(ids)
    got = logits.numpy()
    np.testing.assert_allclose(got, want[:len(ids)], rtol=2e-4, atol=2e-4)
    # Three decode steps through the cache: each position's logits as the prompt's would be.
    for step, token in enumerate([11, 12, 13]):
        logits, caches = model.decode(token, len(ids) + step, caches)
        np.testing.assert_allclose(logits.numpy()[0], want[len(ids) + step], rtol=2e-4, atol=2e-4)


def test_local_layers_attend_to_the_sliding_window_only(tmp_path):
    """A window of 4 and a context of 11: the prompt's tokens past the window run as decode
    steps, and the local layers' rings wrap; every position's logits follow the definition with
    the window (and differ from attending to every key)."""
    path = tmp_path / "window.gguf"
    w = write_model(path, window=4)
    model = gemma3.Gemma3(path, max_context=11)
    assert model.local_slots == 4
    ids = model.tokenizer.encode("hello world hello")[:3] + [11, 12, 13]
    steps = [16, 12, 11, 13, 12]
    want = reference_logits(w, ids + steps, window=4)
    logits, caches = model.prefill(ids)
    assert [c.shape[2] for c in caches[:2]] == [4, 4]
    assert [c.shape[2] for c in caches[10:12]] == [11, 11]  # layer 5 is global
    np.testing.assert_allclose(logits.numpy(), want[:len(ids)], rtol=2e-4, atol=2e-4)
    for step, token in enumerate(steps):
        logits, caches = model.decode(token, len(ids) + step, caches)
        np.testing.assert_allclose(logits.numpy()[0], want[len(ids) + step], rtol=2e-4, atol=2e-4)
    unwindowed = reference_logits(w, ids + steps)
    assert np.abs(unwindowed[-1] - want[-1]).max() > 1e-2


def test_greedy_generation_takes_the_largest_logit_each_step(tiny):
    _, w, model = tiny
    ids = model.tokenizer.encode("hello")
    new = model.generate_ids(ids, 4, stop_at_end=False)
    assert len(new) == 4
    for i in range(4):
        assert new[i] == int(np.argmax(reference_logits(w, ids + new[:i])[-1]))


def test_bad_models_and_lengths_are_errors(tiny, tmp_path):
    path, _, model = tiny
    with pytest.raises(kiln.Error, match="expected 1 to 16"):
        model.prefill(list(range(17)))
    with pytest.raises(kiln.Error, match="exceed max_context 16"):
        model.generate_ids([2, 5], 15)
    with pytest.raises(kiln.Error, match=r"model's context length \(128\)"):
        gemma3.Gemma3(path, max_context=129)
    other = tmp_path / "llama.gguf"
    write_model(other, arch="llama")
    with pytest.raises(kiln.Error, match="'llama' model; expected 'gemma3'"):
        gemma3.Gemma3(other)
    missing = tmp_path / "missing.gguf"
    write_model(missing, drop="blk.3.ffn_up.weight")
    with pytest.raises(kiln.Error, match="lacks the tensor blk.3.ffn_up.weight"):
        gemma3.Gemma3(missing, max_context=8)


def test_every_device_gives_the_cpus_bits(tiny, device):
    path, _, cpu = tiny
    ids = cpu.tokenizer.encode("hello world")
    model = cpu if device.id == cpu.device.id else gemma3.Gemma3(path, device, max_context=16)
    runs = []
    for m in (cpu, model):
        logits, caches = m.prefill(ids)
        out = [logits.numpy()]
        for step, token in enumerate([12, 16]):
            logits, caches = m.decode(token, len(ids) + step, caches)
            out.append(logits.numpy())
        runs.append(out)
    for want, got in zip(*runs):
        assert want.tobytes() == got.tobytes()
