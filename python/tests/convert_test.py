"""strata.convert and strata.write_checkpoint against the independent
references (tools/peer/checkpoint_reference.py, formats_reference.py,
dequantize_reference.py, gguf_reference.py), which are written from the
formats' definitions: DeepSeek's FP8 -> BF16 rule, OCP MXFP4 (gpt-oss),
ggml's q8_0, formats.md's fp8 128x128 quantization, Hugging Face's shards."""

import importlib.util
import json
import os
import sys
import tempfile

import numpy as np
import pytest

import strata
import support

PEER = "tools/peer"
GGUF = "tests/golden/gguf"


def load(name):
    sys.path.insert(0, PEER)  # The references import their siblings.
    spec = importlib.util.spec_from_file_location(name, f"{PEER}/{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cr = load("checkpoint_reference")
dr = load("dequantize_reference")
fr = load("formats_reference")
gr = load("gguf_reference")


@pytest.fixture(scope="module")
def deepseek():
    """A DeepSeek-V3-style FP8 directory (4 shards, two scale_inv tensors in
    another shard than their weight, ragged 576-row blocks)."""
    root = tempfile.mkdtemp()
    src = os.path.join(root, "src")
    made = cr.make_deepseek_like_directory(src, 3 << 20, seed=3, n_shards=4)
    assert made["cross_shard"], "the reference put no scale in another shard"
    return root, src


def tensors(path):
    return cr.read_hf_directory(path, lazy=False)["tensors"]


def same_checkpoints(a, b):
    ta, tb = tensors(a), tensors(b)
    assert list(sorted(ta)) == list(sorted(tb))
    for name in ta:
        da, sa, xa = ta[name]
        db, sb, xb = tb[name]
        assert (da, tuple(sa)) == (db, tuple(sb)), name
        assert bytes(xa) == bytes(xb), name


@pytest.mark.parametrize("to", ["bfloat16", "float16", "float32"])
def test_deepseek_directory_converts_bit_identically_to_deepseeks_rule(
        deepseek, to):
    root, src = deepseek
    dst, ref = os.path.join(root, "out_" + to), os.path.join(root, "ref_" + to)
    limit = 2_000_000
    report = strata.convert(src, dst, to, max_shard_size=limit)
    expected = cr.convert_directory_reference(src, ref, to, max_shard_bytes=limit)
    assert sorted(report["converted"]) == sorted(expected["converted"])
    assert sorted(report["copied"]) == sorted(expected["copied"])
    assert report["refused"] == {}
    same_checkpoints(dst, ref)
    # The same shards, the same index, the same other files.
    assert sorted(os.listdir(dst)) == sorted(os.listdir(ref))
    index = "model.safetensors.index.json"
    with open(os.path.join(dst, index)) as a, open(os.path.join(ref, index)) as b:
        assert json.load(a) == json.load(b)
    for f in ("config.json", "generation_config.json", "tokenizer_config.json"):
        with open(os.path.join(dst, f)) as a, open(os.path.join(ref, f)) as b:
            assert json.load(a) == json.load(b)
    with open(os.path.join(dst, "config.json")) as a:
        assert "quantization_config" not in json.load(a)
    # The result loads in Strata too.
    checkpoint = strata.read_checkpoint(dst)
    assert len(checkpoint) == len(expected["converted"]) + len(
        expected["copied"])


def gpt_oss_like(directory, rng):
    """A gpt-oss-style checkpoint: MXFP4 experts as _blocks/_scales pairs
    (U8), a bf16 router, config.json with quantization_config mxfp4."""
    os.makedirs(directory)
    e, n, g = 2, 6, 3
    blocks = rng.integers(0, 256, size=(e, n, g, 16), dtype=np.uint8)
    scales = rng.integers(118, 132, size=(e, n, g), dtype=np.uint8)
    router = dr.bfloat16_bits(rng.standard_normal((4, 96)).astype(np.float32))
    cr.write_safetensors(
        os.path.join(directory, "model.safetensors"),
        {"model.layers.0.mlp.experts.gate_up_proj_blocks":
             ("U8", (e, n, g, 16), blocks.tobytes()),
         "model.layers.0.mlp.experts.gate_up_proj_scales":
             ("U8", (e, n, g), scales.tobytes()),
         "model.layers.0.mlp.router.weight": ("BF16", (4, 96), router.tobytes())},
        {"format": "pt"})
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump({"model_type": "gpt_oss",
                   "quantization_config": {"quant_method": "mxfp4"}}, f)
    return blocks, scales, router, (e, n, g * 32)


def test_gpt_oss_mxfp4_converts_to_ocp_mx_values():
    root = tempfile.mkdtemp()
    src, dst = os.path.join(root, "src"), os.path.join(root, "bf16")
    blocks, scales, router, shape = gpt_oss_like(src, np.random.default_rng(5))
    report = strata.convert(src, dst, "bfloat16")
    assert report["converted"] == ["model.layers.0.mlp.experts.gate_up_proj"]
    out = tensors(dst)
    dtype, got_shape, data = out["model.layers.0.mlp.experts.gate_up_proj"]
    assert (dtype, tuple(got_shape)) == ("BF16", shape)
    expected = dr.dequantize("mxfp4", blocks.tobytes(), scales.tobytes(), shape,
                             blocked_mode=-1, to="bfloat16")
    assert np.frombuffer(bytes(data), np.uint16).tobytes() == np.ascontiguousarray(
        expected).astype(np.uint16).tobytes()
    assert bytes(out["model.layers.0.mlp.router.weight"][2]) == router.tobytes()
    with open(os.path.join(dst, "config.json")) as f:
        assert json.load(f) == {"model_type": "gpt_oss"}


def bf16_directory(deepseek):
    root, src = deepseek
    dst = os.path.join(root, "bf16_for_quantize")
    if not os.path.exists(dst):
        strata.convert(src, dst, "bfloat16")
    return dst


def float32_of(dtype, data, shape):
    if dtype == "BF16":
        bits = np.frombuffer(bytes(data), np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    return np.frombuffer(bytes(data), np.float32).reshape(shape)


def test_bf16_directory_to_fp8_128x128_is_the_formats_quantization(deepseek):
    root, _ = deepseek
    src = bf16_directory(deepseek)
    dst = os.path.join(root, "fp8")
    report = strata.convert(src, dst, "fp8_e4m3_block128x128")
    source, out = tensors(src), tensors(dst)
    assert report["converted"], "nothing was quantized"
    for name in report["converted"]:
        assert name.endswith(".weight") and not any(
            s in name for s in ("embed", "norm", "lm_head"))
        dtype, shape, data = source[name]
        values, scales, _ = fr.quantize("fp8_e4m3_block128x128",
                                        float32_of(dtype, data, shape), shape)
        assert out[name][0] == "F8_E4M3"
        assert bytes(out[name][2]) == bytes(values), name
        scale = out[name + "_scale_inv"]
        grid = tuple(shape[:-2]) + tuple(-(-n // 128) for n in shape[-2:])
        assert (scale[0], tuple(scale[1])) == ("F32", grid)
        assert bytes(scale[2]) == bytes(scales), name
    for name in report["copied"]:
        assert bytes(out[name][2]) == bytes(source[name][2])
    with open(os.path.join(dst, "config.json")) as f:
        assert json.load(f)["quantization_config"] == {
            "quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
            "weight_block_size": [128, 128]}
    # And back: the FP8 result converts to bf16 by DeepSeek's rule.
    back, ref = os.path.join(root, "fp8_back"), os.path.join(root, "fp8_ref")
    strata.convert(dst, back, "bfloat16")
    cr.convert_directory_reference(dst, ref, "bfloat16")
    same_checkpoints(back, ref)


def test_bf16_directory_to_q8_0_gguf_is_ggmls_quantization(deepseek):
    root, _ = deepseek
    src = bf16_directory(deepseek)
    dst = os.path.join(root, "q8_0.gguf")
    report = strata.convert(src, dst, "q8_0", skip="")
    source = tensors(src)
    g = cr.read_gguf(dst)
    assert g["version"] == 3
    assert list(g["tensors"]) == list(strata.read_gguf(dst))
    quantized = 0
    for name, (gtype, shape, raw) in g["tensors"].items():
        dtype, sshape, data = source[name]
        assert tuple(shape) == tuple(sshape), name
        if name in report["converted"]:
            assert gtype == "Q8_0"
            expected = cr.quantize_q8_0(float32_of(dtype, data, sshape))
            assert raw == bytes(expected), name
            quantized += 1
        else:
            assert raw == bytes(data), name
    assert quantized == len(report["converted"]) > 0
    # Refused: nothing here (every weight's last dim is a multiple of 32).
    assert report["refused"] == {}


def test_gguf_split_set_to_one_gguf_keeps_its_metadata():
    root = tempfile.mkdtemp()
    dst = os.path.join(root, "whole.gguf")
    src = os.path.join(GGUF, "split")
    report = strata.convert(src, dst, "float32")
    out = cr.read_gguf(dst)
    first = cr.read_gguf(os.path.join(src, "model-00001-of-00003.gguf"))
    expected = {k: v for k, v in first["metadata"].items()
                if not k.startswith("split.")}
    assert out["metadata"] == expected
    whole = cr.read_gguf_split(src)
    assert sorted(out["tensors"]) == sorted(whole["tensors"])
    for name, (gtype, shape, raw) in whole["tensors"].items():
        got_type, got_shape, got = out["tensors"][name]
        assert tuple(got_shape) == tuple(shape)
        if name in report["converted"]:
            assert got_type == "F32"
            values = gr.dequantize(cr.GGUF_TYPES[gtype], raw, tuple(shape))
            assert got == np.asarray(values, np.float32).tobytes(), name
        else:
            assert (got_type, got) == (gtype, raw)


def test_refusals_errors_and_overwrite():
    root = tempfile.mkdtemp()
    src = os.path.join(root, "src")
    blocks, scales, router, shape = gpt_oss_like(src, np.random.default_rng(1))
    dst = os.path.join(root, "out")
    # A tensor the destination cannot hold is refused, the rest written.
    report = strata.convert(src, dst, "nvfp4_ts", only="router", skip="")
    assert list(report["refused"]) == []  # (4, 96): blocks of 16 divide 96.
    report = strata.convert(src, os.path.join(root, "q.gguf"), "q4_0")
    assert report["refused"] == {}
    with pytest.raises(ValueError, match="exists"):
        strata.convert(src, dst, "bfloat16")
    report = strata.convert(src, dst, "bfloat16", overwrite=True)
    assert "model.safetensors" in os.listdir(dst)
    with pytest.raises(ValueError, match="never written"):
        strata.convert(src, os.path.join(src, "inside"), "bfloat16")
    with pytest.raises(ValueError, match="neither bfloat16"):
        strata.convert(src, os.path.join(root, "x"), "int8")
    with pytest.raises(ValueError, match="regular expression"):
        strata.convert(src, os.path.join(root, "x"), "mxfp8_e4m3", only="(")
    with pytest.raises(ValueError, match="not a size"):
        strata.convert(src, os.path.join(root, "x"), "bfloat16",
                       max_shard_size="5 parsecs")
    assert not os.path.exists(os.path.join(root, "x"))
    assert not [f for f in os.listdir(root) if "strata-tmp" in f]


def test_write_checkpoint_shards_and_reads_back():
    root = tempfile.mkdtemp()
    dst = os.path.join(root, "written")
    ts = {f"w{i}": strata.from_dlpack(np.full((10, 25), i, np.float32))
          for i in range(4)}
    files = strata.write_checkpoint(dst, ts, max_shard_size=2000)
    assert files == [f"model-0000{i}-of-00002.safetensors" for i in (1, 2)
                     ] + ["model.safetensors.index.json"]
    back = strata.read_checkpoint(dst)
    for name, t in back.items():
        assert np.array_equal(t.numpy(), ts[name].numpy())


if __name__ == "__main__":
    support.run(__file__)
