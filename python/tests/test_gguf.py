"""kiln.GgufFile against the gguf package (llama.cpp's own Python reader and writer): a file the
gguf writer makes, with metadata of several kinds and tensors in F32, F16, BF16 and Q8_0 blocks,
reads the same through both; a file cut short or edited is a kiln.Error."""

import numpy as np
import pytest

import kiln

gguf = pytest.importorskip("gguf")


def write_sample(path):
    rng = np.random.default_rng(7)
    w = gguf.GGUFWriter(str(path), arch="tiny")
    w.add_uint32("tiny.block_count", 6)
    w.add_float32("tiny.eps", 1e-6)
    w.add_float64("tiny.theta", 10000.5)
    w.add_bool("tiny.flag", True)
    w.add_int8("tiny.small", -7)
    w.add_uint64("tiny.big", 2**40)
    w.add_array("tiny.ints", [1, -2, 3])
    w.add_array("tiny.scales", [0.5, -1.25])
    w.add_array("tiny.words", ["<s>", "", "héllo"])
    w.add_tensor("w.f32", rng.standard_normal((3, 4)).astype(np.float32))
    w.add_tensor("w.f16", rng.standard_normal((2, 5, 32)).astype(np.float16))
    bf16 = rng.integers(0, 2**16, size=(3, 32), dtype=np.uint16)
    w.add_tensor("w.bf16", bf16.view(np.uint8).reshape(3, 64),
                 raw_dtype=gguf.GGMLQuantizationType.BF16)
    q8 = rng.integers(0, 256, size=(4, 2 * 34), dtype=np.uint8)
    w.add_tensor("w.q8", q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_a_file_the_gguf_writer_makes_reads_as_the_gguf_reader_reads_it(tmp_path, device):
    path = tmp_path / "tiny.gguf"
    write_sample(path)
    want = gguf.GGUFReader(str(path))
    got = kiln.GgufFile(path)
    assert got.version == 3
    meta = got.metadata
    for key, field in want.fields.items():
        if key.startswith("GGUF."):
            continue
        value = field.contents()
        if isinstance(value, float) or (isinstance(value, list) and value
                                        and isinstance(value[0], float)):
            np.testing.assert_array_equal(np.float64(meta[key]), np.float64(value), err_msg=key)
        else:
            assert meta[key] == value, key
    assert set(meta) == {k for k in want.fields if not k.startswith("GGUF.")}
    assert [t[0] for t in got.tensors] == [t.name for t in want.tensors]
    for (name, shape, type_name, offset, nbytes), t in zip(got.tensors, want.tensors):
        assert list(shape) == [int(d) for d in reversed(t.shape)], name
        assert type_name == t.tensor_type.name, name
        assert (offset, nbytes) == (t.data_offset, t.n_bytes), name
        stored = np.ascontiguousarray(t.data).view(np.uint8).ravel()
        np.testing.assert_array_equal(got.tensor_bytes(name), stored, err_msg=name)
    f32 = got.load("w.f32", device)
    assert f32.dtype == kiln.f32 and f32.shape == (3, 4)
    np.testing.assert_array_equal(f32.numpy(), want.tensors[0].data)
    f16 = got.load("w.f16", device)
    assert f16.dtype == kiln.f16 and f16.shape == (2, 5, 32)
    np.testing.assert_array_equal(f16.numpy(), want.tensors[1].data)
    q8 = got.load("w.q8", device)
    assert q8.dtype == kiln.u8 and q8.shape == (4, 68)
    with pytest.raises(kiln.Error, match="'w.f32' is F32; kiln loads the block formats"):
        got.load_blocks("w.f32", device)


def test_block_formats_dequantize_as_the_gguf_package_computes_them(tmp_path, device):
    """Random Q4_0, Q5_0, Q8_0, Q4_K and Q6_K blocks (finite f16 scales): kiln's values equal the
    gguf package's numpy dequantization bit for bit, on the host (dequantize) and on the device
    from the planar blocks (load_blocks, dequantize_blocks)."""
    rng = np.random.default_rng(11)
    path = tmp_path / "blocks.gguf"
    w = gguf.GGUFWriter(str(path), arch="tiny")
    # (type, bytes per block, byte offsets of the block's f16 scales)
    formats = [(gguf.GGMLQuantizationType.Q4_0, 18, [0]),
               (gguf.GGMLQuantizationType.Q5_0, 22, [0]),
               (gguf.GGMLQuantizationType.Q8_0, 34, [0]),
               (gguf.GGMLQuantizationType.Q4_K, 144, [0, 2]),
               (gguf.GGMLQuantizationType.Q6_K, 210, [208])]
    for qtype, size, scales in formats:
        blocks = rng.integers(0, 256, size=(3, 2 * size), dtype=np.uint8)
        for block in range(2):
            for at in scales:
                half = np.array([rng.uniform(-2.0, 2.0)], dtype=np.float16).view(np.uint8)
                blocks[:, block * size + at:block * size + at + 2] = half
        w.add_tensor(qtype.name.lower(), blocks, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    want = gguf.GGUFReader(str(path))
    got = kiln.GgufFile(path)
    on_device = []
    for t in want.tensors:
        expected = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        values = got.dequantize(t.name)
        assert values.shape == expected.shape, t.name
        np.testing.assert_array_equal(values.view(np.uint32), expected.view(np.uint32),
                                      err_msg=t.name)
        values, scales, mins = got.load_blocks(t.name, device)
        assert values.dtype == kiln.i8 and values.shape == expected.shape, t.name
        block = 16 if t.name == "q6_k" else 32
        assert scales.dtype == kiln.f32, t.name
        assert scales.shape == (3, expected.shape[1] // block), t.name
        assert (mins is not None) == (t.name == "q4_k"), t.name
        on_device.append(kiln.dequantize_blocks(values, scales, mins))
    kiln.resolve(*on_device)
    for t, got_values in zip(want.tensors, on_device):
        expected = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        np.testing.assert_array_equal(got_values.numpy().view(np.uint32),
                                      expected.view(np.uint32), err_msg=t.name)
    values, scales, _ = got.load_blocks("q4_k", device)
    with pytest.raises(kiln.Error, match=r"scales are f32 \[2, 16\]"):
        kiln.dequantize_blocks(values, scales[:2])
    with pytest.raises(kiln.Error, match=r"values are f32 \[3, 16\]; expected i8"):
        kiln.dequantize_blocks(scales, scales)
    with pytest.raises(kiln.Error, match=r"mins are f32 \[3, 8\]"):
        kiln.dequantize_blocks(values, scales, scales[:, :8])


def test_a_cut_or_edited_file_is_an_error(tmp_path):
    path = tmp_path / "tiny.gguf"
    write_sample(path)
    data = path.read_bytes()
    last = gguf.GGUFReader(str(path)).tensors[-1]
    end = last.data_offset + last.n_bytes  # the gguf writer may pad the file past it
    bad = tmp_path / "bad.gguf"
    for cut in (3, 20, 200, end - 1):
        bad.write_bytes(data[:cut])
        with pytest.raises(kiln.Error, match="GGUF file"):
            kiln.GgufFile(bad)
    bad.write_bytes(data[:8] + (2**62).to_bytes(8, "little") + data[16:])
    with pytest.raises(kiln.Error, match="tensors cannot fit"):
        kiln.GgufFile(bad)

