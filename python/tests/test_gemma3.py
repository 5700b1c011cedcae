"""kiln.gemma3 on a tiny Gemma 3 written with the gguf package: the tokenizer's merges by score,
byte fallback and special pieces; the prompt's logits and every decode step's against a numpy
forward written from the model's definition; greedy generation; sampling against a re-written
numpy form of kiln.sampling's rule (the same tokens for a seed on every device); the model's end
tokens, stop ids and stop strings; streamed text; `python -m kiln.generate`; bad files, lengths
and settings as kiln.Errors. The real model is test_gemma3_model_full.py's."""

import subprocess
import sys

import numpy as np
import pytest

import kiln
import kiln.sampling
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
    pieces += WORDS + ["<end_of_turn>"]
    types += [1] * len(WORDS) + [3]
    scores = [0.0] * (len(pieces) - len(WORDS) - 1) + SCORES + [0.0]
    return pieces, scores, types


END_OF_TURN = len(vocabulary()[0]) - 1


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


def write_model(path, arch="gemma3", drop=None, window=32, edit=None, quantized=None):
    """The tiny model's file; `quantized` maps tensor names to the GGUF block type they are
    written in (the others f32)."""
    w = weights(np.random.default_rng(5))
    if edit:
        edit(w)
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
        if name == drop:
            continue
        kind = (quantized or {}).get(name)
        if kind is None:
            writer.add_tensor(name, value)
        else:
            kind = gguf.GGMLQuantizationType[kind]
            writer.add_tensor(name, gguf.quants.quantize(value, kind), raw_dtype=kind)
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


def test_planar_weights_give_the_logits_of_their_f32_dequantization(tmp_path):
    """Projections kept as planar blocks on the device (Q8_0, Q5_0, Q4_0 along `in`) give the
    prompt's and each decode step's logits bit for bit as the same file's weights dequantized on
    the host to f32."""
    kinds = {"token_embd.weight": "Q8_0"}
    for layer in range(LAYERS):
        p = f"blk.{layer}."
        kinds.update({p + "attn_q.weight": "Q5_0", p + "attn_k.weight": "Q8_0",
                      p + "attn_v.weight": "Q4_0", p + "attn_output.weight": "Q8_0",
                      p + "ffn_gate.weight": "Q5_0", p + "ffn_up.weight": "Q8_0"})
    path = tmp_path / "quantized.gguf"
    write_model(path, quantized=kinds)
    planar = gemma3.Gemma3(path, max_context=16)
    dense = gemma3.Gemma3(path, max_context=16, planar_types=())
    assert set(planar.planar) == set(kinds) and not dense.planar
    ids = planar.tokenizer.encode("hello world")
    runs = []
    for m in (planar, dense):
        logits, caches = m.prefill(ids)
        out = [logits.numpy()]
        for step, token in enumerate([12, 16, 11]):
            logits, caches = m.decode(token, len(ids) + step, caches)
            out.append(logits.numpy())
        runs.append(out)
    for got, want in zip(*runs):
        assert got.tobytes() == want.tobytes()
    with pytest.raises(kiln.Error, match="planar_types"):
        gemma3.Gemma3(path, max_context=16, planar_types=("Q2_K",))


# -- generation: sampling, stops, streaming, the command line ---------------------------------

def splitmix64(seed):
    """The splitmix64 stream's uniforms, written apart from kiln.sampling's (numpy's wrapping
    uint64 arithmetic)."""
    state = np.uint64(seed)
    with np.errstate(over="ignore"):
        while True:
            state = state + np.uint64(0x9E3779B97F4A7C15)
            z = state
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
            yield int(z >> np.uint64(11)) / 2.0 ** 53


def rule_pick(logits, temperature, top_k, top_p, u):
    """docs/llm.md's sampling rule for one step, with the uniform u; also how many it kept."""
    logits = np.asarray(logits, np.float64)
    order = sorted(range(len(logits)), key=lambda i: (-logits[i], i))
    if top_k:
        order = order[:top_k]
    weights = [np.exp((logits[i] - logits[order[0]]) / temperature) for i in order]
    sums, total = [], 0.0
    for w in weights:
        total += w
        sums.append(total)
    kept = next(n + 1 for n, c in enumerate(sums) if c >= top_p * sums[-1])
    target = u * sums[kept - 1]
    chosen = next((n for n in range(kept) if sums[n] > target), kept - 1)
    return order[chosen], kept


def sample_by_the_rule(model, ids, steps, temperature, top_k, top_p, seed):
    """The rule's picks step by step on the model's own logits; the fewest candidates kept."""
    uniforms = splitmix64(seed)
    logits, caches = model.prefill(ids)
    row, new, fewest = logits.numpy()[-1], [], model.vocab
    for position in range(len(ids), len(ids) + steps):
        token, kept = rule_pick(row, temperature, top_k, top_p, next(uniforms))
        new.append(token)
        fewest = min(fewest, kept)
        logits, caches = model.decode(token, position, caches)
        row = logits.numpy()[0]
    return new, fewest


def test_splitmix64_is_the_published_stream():
    # Vigna's splitmix64.c from state 0: 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, ...
    stream = kiln.sampling.SplitMix64(0)
    assert [stream.next_u64() for _ in range(3)] == [
        0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
    ours, theirs = kiln.sampling.SplitMix64(1234567), splitmix64(1234567)
    assert [ours.uniform() for _ in range(5)] == [next(theirs) for _ in range(5)]


def test_the_sampler_follows_the_rule_on_ties_and_cuts():
    """Logits with ties, -inf and a long tail: every setting's picks over 200 draws are the
    rule's, ties go to the lower id, and top_k / top_p leave out what they should."""
    logits = np.array([1.0, 3.0, 3.0, -np.inf, 0.5, 2.0, 3.0, -1.0] * 4, np.float32)
    for temperature, top_k, top_p in [(1.0, 0, 1.0), (0.5, 3, 1.0), (2.0, 0, 0.6),
                                      (0.8, 5, 0.9), (3.0, 1, 1.0)]:
        sampler = kiln.sampling.Sampler(temperature, top_k, top_p, seed=99)
        uniforms = splitmix64(99)
        picks = [sampler.pick_from(logits) for _ in range(200)]
        assert picks == [rule_pick(logits, temperature, top_k, top_p, next(uniforms))[0]
                         for _ in range(200)]
        if top_k == 1:
            assert set(picks) == {1}  # the lowest id of the three equal largest
        if top_k == 3:
            assert set(picks) == {1, 2, 6}
    # top_p 0.6 at temperature 2: the twelve 3.0s weigh 1 each of about 17.6 in all, so the cut
    # at 10.55 keeps the first 11 of them by id (30 is left out), and nothing else.
    picks = {kiln.sampling.Sampler(2.0, 0, 0.6, seed=s).pick_from(logits) for s in range(300)}
    assert picks == {1, 2, 6, 9, 10, 14, 17, 18, 22, 25, 26}


def test_the_order_by_logit_breaks_ties_by_the_lower_id():
    rng = np.random.default_rng(3)
    logits = np.round(rng.standard_normal(3000) * 4, 1).astype(np.float32)  # many ties
    logits[[5, 17, 40]] = [-0.0, 0.0, -0.0]
    logits[[7, 8, 99]] = [-np.inf, 3e38, -3e38]
    want = sorted(range(len(logits)), key=lambda i: (-float(logits[i]), i))
    assert kiln.sampling.order_by_logit(logits).tolist() == want


class FixedUniform:
    def __init__(self, u):
        self.u = u

    def uniform(self):
        return self.u


@pytest.mark.parametrize("top_p, u, chosen", [(0.5, 0.5, 1), (0.5, 0.75, 1), (1.0, 0.25, 1),
                                              (1.0, 0.2, 0), (0.25, 0.99, 0)])
def test_the_rules_boundaries_on_exact_sums(top_p, u, chosen):
    """Four equal logits: running sums 1, 2, 3, 4. top_p keeps n where c_(n-1) >= top_p * 4
    (0.5: two, not three), and the pick is the first c_i > u * c_(n-1) (u * 2 = 1.0: id 1)."""
    sampler = kiln.sampling.Sampler(1.0, 0, top_p, seed=0)
    sampler.stream = FixedUniform(u)
    assert sampler.pick_from(np.zeros(4, np.float32)) == chosen


def test_sampled_tokens_follow_the_rule_on_the_models_logits(tiny):
    _, _, model = tiny
    ids = model.tokenizer.encode("hello world")
    for temperature, top_k, top_p, seed in [(0.9, 0, 1.0, 3), (1.3, 20, 1.0, 4),
                                             (0.7, 0, 0.8, 5), (2.0, 50, 0.5, 6)]:
        want, fewest = sample_by_the_rule(model, ids, 6, temperature, top_k, top_p, seed)
        got = model.generate_ids(ids, 6, temperature=temperature, top_k=top_k, top_p=top_p,
                                 seed=seed, stop_at_end=False)
        assert got == want
        if top_p < 1:
            assert fewest < (top_k or model.vocab)  # the cut left some out


def test_temperature_zero_and_top_k_one_are_greedy(tiny):
    _, _, model = tiny
    ids = model.tokenizer.encode("hello")
    greedy = model.generate_ids(ids, 6, stop_at_end=False)
    assert model.generate_ids(ids, 6, temperature=0.0, seed=12, top_k=7, top_p=0.3,
                              stop_at_end=False) == greedy
    assert model.generate_ids(ids, 6, temperature=1.7, top_k=1, seed=12,
                              stop_at_end=False) == greedy
    assert model.generate_ids(ids, 6, temperature=1.7, seed=12, stop_at_end=False) != greedy


def test_a_seed_repeats_its_tokens_and_other_seeds_differ(tiny):
    _, _, model = tiny
    ids = model.tokenizer.encode("hello")
    runs = {seed: model.generate_ids(ids, 8, temperature=1.5, seed=seed, stop_at_end=False)
            for seed in (1, 2)}
    assert model.generate_ids(ids, 8, temperature=1.5, seed=1, stop_at_end=False) == runs[1]
    assert runs[1] != runs[2]


def test_a_seed_gives_the_same_tokens_on_every_device(tiny, device):
    path, _, cpu = tiny
    model = cpu if device.id == cpu.device.id else gemma3.Gemma3(path, device, max_context=16)
    settings = dict(temperature=1.2, top_k=40, top_p=0.9, seed=2026, stop_at_end=False)
    ids = cpu.tokenizer.encode("hello world")
    assert model.generate_ids(ids, 6, **settings) == cpu.generate_ids(ids, 6, **settings)


def test_the_models_end_tokens_stop_generation(tmp_path, tiny):
    """A model whose <end_of_turn> row is the greedy first token's, scaled up, picks it first:
    by default that ends the generation (its text is none); stop_at_end=False goes on."""
    _, _, model = tiny
    ids = model.tokenizer.encode("hello")
    first = model.generate_ids(ids, 1, stop_at_end=False)[0]

    def end_like_first(w):
        w["token_embd.weight"][END_OF_TURN] = 1.5 * w["token_embd.weight"][first]

    path = tmp_path / "ends.gguf"
    write_model(path, edit=end_like_first)
    ending = gemma3.Gemma3(path, max_context=16)
    assert ending.tokenizer.end_ids() == [1, END_OF_TURN]
    assert ending.generate_ids(ids, 5) == [END_OF_TURN]
    assert ending.generate("hello", 5) == ""
    went_on = ending.generate_ids(ids, 5, stop_at_end=False)
    assert went_on[0] == END_OF_TURN and len(went_on) == 5


def test_stop_ids_and_stop_strings_end_generation(tiny):
    _, _, model = tiny
    settings = dict(temperature=1.5, seed=8, stop_at_end=False)
    ids = model.tokenizer.encode("hello")
    free = model.generate_ids(ids, 10, **settings)
    at = next(n for n in range(2, 10) if free[n] not in free[:n])
    assert model.generate_ids(ids, 10, stop_ids=free[at], **settings) == free[:at + 1]
    assert model.generate("hello", 10, stop_ids=iter([free[at]]), **settings) == \
        model.tokenizer.decode(free[:at])
    # A stop string across tokens' texts: the text ends before its first occurrence, and no
    # piece streamed before the stop held any of it.
    text = model.tokenizer.decode(free)
    start = len(model.tokenizer.decode(free[:3]))
    stop = text[start - 1:start + 2]
    want = text[:text.find(stop)]
    pieces = list(model.stream("hello", 10, stop_strings=[stop, "never there"], **settings))
    assert "".join(pieces) == want
    assert model.generate("hello", 10, stop_strings=stop, **settings) == want


def test_streamed_pieces_join_to_the_generated_text(tiny):
    _, _, model = tiny
    settings = dict(temperature=1.5, seed=8, stop_at_end=False)
    pieces = list(model.stream("hello", 10, **settings))
    assert len(pieces) > 1 and all(pieces)
    assert "".join(pieces) == model.generate("hello", 10, **settings) == \
        model.tokenizer.decode(model.generate_ids(model.tokenizer.encode("hello"), 10,
                                                  **settings))


def test_a_character_split_over_byte_tokens_streams_whole(tiny):
    _, _, model = tiny
    tok = model.tokenizer
    ids = tok.encode("hé€ world")  # é and € are byte tokens: 2 and 3 of them
    assert list(tok.decode_stream(ids)) == ["h", "é", "€", "\u2581world".replace("\u2581", " ")]
    # A cut-off character ends as U+FFFD, as decode gives it.
    assert list(tok.decode_stream(ids[:3])) == ["h", "\ufffd"]


BAD_SETTINGS = [
    (dict(temperature=-0.5), r"temperature is -0.5; expected a finite number >= 0"),
    (dict(temperature=float("nan")), r"temperature is nan; expected a finite number >= 0"),
    (dict(temperature="1"), r"temperature is '1'; expected"),
    (dict(top_k=-1), r"top_k is -1; expected an int >= 0"),
    (dict(top_k=2.0), r"top_k is 2.0; expected an int >= 0"),
    (dict(top_p=0.0), r"top_p is 0.0; expected a number in \(0, 1\]"),
    (dict(top_p=1.5), r"top_p is 1.5; expected a number in \(0, 1\]"),
    (dict(seed=1.5), r"seed is 1.5; expected an int from 0 to 2\^64 - 1"),
    (dict(seed=-1), r"seed is -1; expected an int"),
    (dict(seed=2 ** 64), r"seed is 18446744073709551616; expected an int"),
    (dict(max_new_tokens=-1), r"max_new_tokens is -1; expected an int >= 0"),
    (dict(max_new_tokens=2.0), r"max_new_tokens is 2.0; expected an int >= 0"),
    (dict(max_new_tokens=15), r"2 prompt tokens and 15 new ones exceed max_context 16"),
    (dict(stop_ids=[5, 10 ** 6]), r"stop id 1000000; expected a token id from 0 to 279"),
    (dict(stop_strings=["ok", ""]), r"stop string ''; expected a non-empty str"),
]


@pytest.mark.parametrize("settings, message", BAD_SETTINGS, ids=[
    ",".join(f"{k}={v!r}" for k, v in settings.items()) for settings, _ in BAD_SETTINGS])
def test_bad_generation_arguments_are_errors(tiny, settings, message):
    _, _, model = tiny
    settings = dict(max_new_tokens=4) | settings
    with pytest.raises(kiln.Error, match=message):
        model.generate("hello", **settings)
    if "stop_strings" not in settings:
        with pytest.raises(kiln.Error, match=message):
            model.generate_ids([2, 5], **settings)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "kiln.generate", *args], capture_output=True,
                          text=True, timeout=300)


def test_the_command_line_streams_the_generated_text(tiny):
    path, _, model = tiny
    done = run_cli("--model", str(path), "--prompt", "hello", "--max-tokens", "6",
                   "--max-context", "16", "--temperature", "1.5", "--top-k", "30",
                   "--top-p", "0.95", "--seed", "4")
    assert done.returncode == 0, done.stderr
    want = model.generate("hello", 6, temperature=1.5, top_k=30, top_p=0.95, seed=4)
    assert want and done.stdout == want + "\n"


def test_the_command_line_refuses_bad_usage(tiny):
    path, _, _ = tiny
    missing = run_cli("--model", str(path))
    assert missing.returncode == 2 and "required: --prompt" in missing.stderr
    bad = run_cli("--model", str(path), "--prompt", "hello", "--top-p", "2")
    assert bad.returncode == 1 and "top_p is 2.0; expected a number in (0, 1]" in bad.stderr
    absent = run_cli("--model", str(path) + ".absent", "--prompt", "hello")
    assert absent.returncode == 1 and "cannot open it" in absent.stderr
