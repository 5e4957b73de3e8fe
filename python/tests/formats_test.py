"""quantize, the checkpoint readers and writer, shard planning, and dump and
replay from Python; quantize's bytes against the independent reference
(tools/peer/formats_reference.py)."""

import importlib.util
import os
import random
import tempfile

import numpy as np
import pytest

import strata
import support
from strata import dtype as sd

GGUF = "tests/golden/gguf"


def load_reference():
    spec = importlib.util.spec_from_file_location(
        "formats_reference", "tools/peer/formats_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = load_reference()

CASES = [
    ("fp8_e4m3_tensorwise", (3, 40), None, "row_major"),
    ("fp8_e4m3_rowwise", (5, 33), None, "row_major"),
    ("fp8_e4m3_block1x128", (2, 300), -1, "row_major"),
    ("fp8_e4m3_block128x128", (130, 260), None, "row_major"),
    ("nvfp4_ts", (4, 64), -1, "row_major"),
    ("nvfp4_ts", (130, 64), 1, "swizzled_128x4"),
    ("nvfp4_ts_recip", (2, 3, 32), 2, "row_major"),
    ("q8_0", (3, 64), None, "row_major"),
    ("q4_0", (2, 96), None, "row_major"),
]


@pytest.mark.parametrize("fmt,shape,blocked,scale_layout", CASES)
def test_quantize_matches_the_reference(fmt, shape, blocked, scale_layout):
    rng = np.random.default_rng(len(fmt) * 7 + shape[0])
    x = (rng.standard_normal(shape) * rng.choice([0.01, 1, 300])).astype(np.float32)
    q = strata.quantize(strata.from_dlpack(x), fmt, blocked_dim=blocked, scale_layout=scale_layout)
    assert q.dtype() is getattr(sd, fmt) and q.shape == shape
    mode = None if blocked is None else blocked % len(shape)
    values, scales, tensor_scale = reference.quantize(fmt, x, shape, mode, scale_layout)
    carriers = [s[1] for s in q.subtensors]
    assert carriers[0].tobytes() == bytes(values)
    assert carriers[1].tobytes() == bytes(scales)
    if tensor_scale is not None:
        assert carriers[2].tobytes() == bytes(tensor_scale)


def test_quantize_arguments():
    x = strata.zeros((4, 64), sd.float32)
    assert strata.quantize(x, sd.mxfp8_e4m3, 1).dtype() is sd.mxfp8_e4m3
    assert strata.quantize(x.cast(sd.bfloat16), "mxfp4", -1).dtype() is sd.mxfp4
    with pytest.raises(ValueError, match="not a block-scaled"):
        strata.quantize(x, sd.float32)
    with pytest.raises(ValueError):
        strata.quantize(x, "no_such_format", 1)
    with pytest.raises(ValueError, match="scale_layout"):
        strata.quantize(x, "mxfp8_e4m3", 1, scale_layout="tiled")
    with pytest.raises(ValueError):
        strata.quantize(x, "q8_0", 0)  # The format fixes its blocks.
    with pytest.raises(TypeError):
        strata.quantize(strata.zeros((4, 64), sd.int32), "mxfp8_e4m3", 1)
    with pytest.raises(TypeError):
        strata.quantize(x, "mxfp8_e4m3", 1.0)


def test_safetensors_round_trip_of_every_convention():
    rng = np.random.default_rng(1)
    x = strata.from_dlpack(rng.standard_normal((256, 256)).astype(np.float32))
    tensors = {
        "plain.weight": x.cast(sd.bfloat16),
        "nvfp4.weight": strata.quantize(x, "nvfp4_ts", 1),
        "fp8.weight": strata.quantize(x, "fp8_e4m3_block128x128"),
        "mx.weight": strata.quantize(x, "mxfp8_e4m3", 1),
        "rows.weight": strata.quantize(x, "fp8_e4m3_rowwise"),
    }
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.safetensors")
        strata.write_safetensors(path, tensors, {"format": "pt"})
        read = strata.read_safetensors(path)
        assert read.metadata == {"format": "pt"} and read.format == "safetensors"
        assert sorted(read) == sorted(tensors)
        for name, tensor in tensors.items():
            back = read[name]
            assert back.dtype() is tensor.dtype() and back.shape == tensor.shape, name
            assert all(isinstance(s[1], strata.MappedCarrier) for s in back.subtensors)
            for mine, theirs in zip(tensor.subtensors, back.subtensors):
                assert mine[1].tobytes() == theirs[1].tobytes(), name
        again = os.path.join(directory, "again.safetensors")
        strata.write_safetensors(again, dict(read), read.metadata)
        assert open(path, "rb").read() == open(again, "rb").read()
        assert strata.read_checkpoint(path).format == "safetensors"


def test_a_refused_tensor_is_its_exception_and_a_bad_file_raises():
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "mixed.safetensors")
        header = (b'{"ok":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                  b'"bad":{"dtype":"F99","shape":[1],"data_offsets":[8,12]}}')
        with open(path, "wb") as f:
            f.write(len(header).to_bytes(8, "little") + header + bytes(12))
        read = strata.read_safetensors(path)
        assert isinstance(read["ok"], strata.Tensor)
        assert isinstance(read["bad"], ValueError) and "F99" in str(read["bad"])
        with open(path, "wb") as f:
            f.write(b"\x05\x00\x00\x00\x00\x00\x00\x00{oops")
        with pytest.raises(ValueError, match="not a safetensors file"):
            strata.read_safetensors(path)
    with pytest.raises(ValueError):
        strata.read_safetensors("/no/such/file")
    with pytest.raises(TypeError):
        strata.read_safetensors(3)


def test_gguf_reads_over_mapped_blocks():
    path = os.path.join(GGUF, "mixed_v3.gguf")
    read = strata.read_gguf(path)
    assert read.format == "gguf"
    assert "general.alignment" in read.metadata or read.metadata
    for name in ["w_f32", "w_f16", "w_i32", "w_f64"]:
        expected = np.fromfile(os.path.join(GGUF, f"mixed_v3.gguf.{name}.f32"), np.float32)
        np.testing.assert_array_equal(np.from_dlpack(read[name]).astype(np.float32).reshape(-1),
                                      expected)
    assert read["w_q8"].dtype() is sd.q8_0 and read["w_q8"].shape == (4, 64)
    assert read["w_q4"].dtype() is sd.q4_0 and read["w_mxfp4"].dtype() is sd.mxfp4
    assert all(isinstance(s[1], strata.MappedCarrier) for s in read["w_q8"].subtensors)
    assert strata.read_checkpoint(path).format == "gguf"
    # checkpoints.md section 1: a split set, from its directory or any file.
    for where in [os.path.join(GGUF, "split"),
                  os.path.join(GGUF, "split", "model-00003-of-00003.gguf")]:
        split = strata.read_checkpoint(where)
        assert split.format == "gguf" and list(split) == ["a.f32", "b.q8_0", "c.f16"]
        assert split["b.q8_0"].dtype() is sd.q8_0
        np.testing.assert_array_equal(np.from_dlpack(split["a.f32"]).reshape(-1),
                                      np.arange(15, dtype=np.float32))
    with pytest.raises(ValueError, match="4 tensors expected but 3 found"):
        strata.read_checkpoint(os.path.join(GGUF, "split_mismatch"))
    hostile = os.path.join(GGUF, "hostile")
    for name in sorted(os.listdir(hostile)):
        try:
            read = strata.read_gguf(os.path.join(hostile, name))
        except ValueError:
            continue
        assert any(isinstance(v, ValueError) for v in read.values()), name


def test_shard_plans():
    x = strata.from_dlpack(np.ones((256, 64), np.float32))
    swizzled = strata.quantize(x, "nvfp4_ts", 1, scale_layout="swizzled_128x4")
    assert strata.shard_granule(swizzled, 0) == 128
    granule, parts, pad = strata.plan_shards(swizzled, 0, 2)
    assert granule == 128 and pad == 256
    assert [p.shape for p in parts] == [(128, 64), (128, 64)]
    granule, parts, pad = strata.plan_shards(x, -1, 3)
    assert granule == 1 and [p.shape[1] for p in parts] == [22, 21, 21]
    block = strata.quantize(strata.from_dlpack(np.ones((300, 256), np.float32)),
                            "fp8_e4m3_block128x128")
    granule, parts, pad = strata.plan_shards(block, 0, 3)
    assert granule == 128 and pad == 384
    assert all(isinstance(p, strata.Tensor) for p in parts)
    with pytest.raises(ValueError):
        strata.plan_shards(block, 0, 4)  # More parts than granules.
    with pytest.raises(ValueError):
        strata.plan_shards(block, 2, 2)


def test_dump_and_replay():
    q = strata.quantize(strata.from_dlpack(np.linspace(-2, 2, 128, dtype=np.float32)
                                           .reshape(2, 64)), "nvfp4_ts", 1)
    text = strata.dump(q, include_data=True)
    back = strata.replay(text)
    assert strata.dump(back, include_data=True) == text
    assert [s[1].tobytes() for s in back.subtensors] == [s[1].tobytes() for s in q.subtensors]
    assert "float4_e2m1fn" in strata.dump(q)
    with pytest.raises(TypeError):
        strata.replay("not a proto {")
    with pytest.raises(MemoryError):
        strata.replay('logical_dtype: "float32" carriers { id: "c0" carrier_class: "host" '
                      'dtype: "float32" size: 4611686018427387904 } subtensors { '
                      'storage_dtype: "float32" carrier: "c0" offset: 0 placement: "1:0" }')
    # A Python carrier class has no registered factory: replay names it.
    class Mine(strata.Carrier):
        def __init__(self):
            super().__init__(sd.float32, 4)

    text = strata.dump(strata.Tensor(Mine(), 0, strata.Layout(4, 1)))
    assert "Mine" in text
    with pytest.raises(TypeError):
        strata.replay(text)


if __name__ == "__main__":
    support.run(__file__)
