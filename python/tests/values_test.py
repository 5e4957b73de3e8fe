"""Values out from Python (values.md sections 1-2): t.dequantize, strata.dequantize
(with out= a Tensor or any DLPack array), t.levels exported to numpy and torch, and the
refusal of t.numpy() on a block-scaled Tensor; values against the independent reference
(tools/peer/dequantize_reference.py) and against torch."""

import importlib.util
import os
import sys

import numpy as np
import pytest

import strata
import support  # noqa: F401

sys.path.insert(0, "tools/peer")


def load(name):
    spec = importlib.util.spec_from_file_location(name, "tools/peer/%s.py" % name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


load("formats_reference")
reference = load("dequantize_reference")

CASES = [
    ("mxfp8_e4m3", (4, 64), 1, "row_major"),
    ("mxfp8_e4m3", (130, 64), 1, "swizzled_128x4"),
    ("mxfp4", (4, 96), 1, "row_major"),
    ("nvfp4", (128, 32), 1, "swizzled_128x4"),
    ("nvfp4_ts", (130, 64), 1, "swizzled_128x4"),
    ("nvfp4_ts_recip", (2, 3, 32), 2, "row_major"),
    ("fp8_e4m3_tensorwise", (3, 40), None, "row_major"),
    ("fp8_e4m3_rowwise", (5, 33), None, "row_major"),
    ("fp8_e4m3_block1x128", (2, 300), 1, "row_major"),
    ("fp8_e4m3_block128x128", (130, 260), None, "row_major"),
    ("q8_0", (3, 64), None, "row_major"),
    ("q4_0", (2, 96), None, "row_major"),
]


def quantized(fmt, shape, mode, layout, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 3
    return strata.quantize(strata.from_dlpack(x), fmt, blocked_dim=mode,
                           scale_layout=layout)


def level_bytes(level):
    # The whole carrier: the quantizer's levels start at 0 and cover it
    # (padding of the 128x4 tiles included). float8/float4 have no DLPack
    # 0.6 type code: level.bytes() is the same memory as uint8.
    raw = level.carrier.tobytes()
    if level.is_contiguous() and level.offset == 0:
        exported = np.from_dlpack(level.bytes()).tobytes()
        assert raw.startswith(exported)
    return raw


@pytest.mark.parametrize("fmt,shape,mode,layout", CASES)
@pytest.mark.parametrize("to", ["float32", "bfloat16", "float16"])
def test_dequantize_equals_the_reference(fmt, shape, mode, layout, to):
    t = quantized(fmt, shape, mode, layout)
    levels = t.levels
    assert len(levels) == len(t.subtensors)
    kwargs = {}
    if len(levels) == 3:
        kwargs["tensor_scale_bytes"] = level_bytes(levels[2])
    want = reference.dequantize(fmt, level_bytes(levels[0]), level_bytes(levels[1]),
                                shape, blocked_mode=mode, scale_layout=layout, to=to,
                                **kwargs)
    got = t.dequantize(to)
    assert got.shape == shape and got.dtype().name == to
    if to == "bfloat16":
        got_np = np.from_dlpack(got.cast(strata.dtype.float32)).view(np.uint32) >> 16
        assert np.array_equal(got_np.astype(np.uint16), want)
    else:
        assert np.array_equal(np.from_dlpack(got), want, equal_nan=True)


def test_levels_are_views_of_the_same_carriers():
    t = quantized("mxfp8_e4m3", (4, 64), 1, "row_major")
    codes, scales = t.levels
    assert codes.carrier is t.carrier
    assert codes.shape == (4, 64) and codes.dtype().name == "float8_e4m3fn"
    assert scales.dtype().name == "float8_e8m0fnu"
    # The scales export to numpy (uint8 memory of e8m0: numpy reads the bytes).
    plain = strata.from_dlpack(np.arange(6, dtype=np.float32))
    assert plain.levels[0].shape == (6,)


def test_level_bytes_is_the_same_memory_as_uint8():
    import torch

    t = quantized("nvfp4", (128, 32), 1, "row_major")
    codes, scales = t.levels
    b = codes.bytes()
    assert b.shape == (128, 16) and b.dtype().name == "uint8"
    assert np.from_dlpack(b).tobytes() == codes.carrier.tobytes()
    # torch receives it, and a slice of whole bytes of a row too.
    assert torch.from_dlpack(scales.bytes()).shape == (128, 2)
    assert codes[:, 2:6].bytes().shape == (128, 2)
    with pytest.raises(ValueError):
        codes[:, 1:4].bytes()  # Starts mid-byte.
    with pytest.raises(ValueError):
        codes.permute((1, 0)).bytes()  # The last mode is not unit stride.
    with pytest.raises(ValueError):
        t.bytes()


@pytest.mark.parametrize("fmt,shape,mode,layout", CASES)
def test_requantize_is_quantize_of_the_values(fmt, shape, mode, layout):
    t = quantized(fmt, shape, mode, layout, seed=1)
    values = t.dequantize()
    for target, dim, target_layout in (("mxfp8_e4m3", len(shape) - 1, "row_major"),
                                       ("fp8_e4m3_block128x128_ue8m0", None, "row_major"),
                                       ("q8_0", None, "row_major")):
        try:
            want = strata.quantize(values, target, blocked_dim=dim,
                                   scale_layout=target_layout)
        except ValueError:
            with pytest.raises(ValueError):
                strata.requantize(t, target, blocked_dim=dim,
                                  scale_layout=target_layout)
            continue
        got = strata.requantize(t, target, blocked_dim=dim, scale_layout=target_layout)
        if target == fmt:
            assert np.array_equal(np.from_dlpack(got.dequantize()),
                                  np.from_dlpack(values), equal_nan=True)
            continue
        for g, w in zip(got.levels, want.levels):
            assert g.carrier.tobytes() == w.carrier.tobytes()


def test_relayout_shares_the_codes():
    t = quantized("mxfp8_e4m3", (256, 64), 1, "row_major")
    tiles = strata.requantize(t, "mxfp8_e4m3", scale_layout="swizzled_128x4")
    assert tiles.levels[0].carrier is t.levels[0].carrier
    want = quantized("mxfp8_e4m3", (256, 64), 1, "swizzled_128x4")
    assert tiles.levels[1].carrier.tobytes() == want.levels[1].carrier.tobytes()
    with pytest.raises(ValueError):
        strata.requantize(t, "float32")  # As quantize: not a block-scaled dtype.
    with pytest.raises(ValueError):
        strata.requantize(t, "fp8_e4m3_block128x128", scale_layout="swizzled_128x4")


def test_numpy_of_a_block_scaled_tensor_names_dequantize_and_levels():
    t = quantized("mxfp8_e4m3", (4, 64), 1, "row_major")
    with pytest.raises(strata.OneSubtensorRequiredError) as e:
        t.numpy()
    assert "dequantize" in str(e.value) and "levels" in str(e.value)
    with pytest.raises(strata.OneSubtensorRequiredError):
        np.asarray(t)


def test_dequantize_into_numpy_torch_and_strided_outs():
    import torch

    t = quantized("fp8_e4m3_block128x128", (130, 260), None, "row_major")
    want = np.from_dlpack(t.dequantize())
    out = torch.zeros((260, 130), dtype=torch.float32).t()  # Transposed strides.
    assert strata.dequantize(t, out=out) is out
    assert np.array_equal(out.numpy(), want)
    bf = torch.zeros((130, 260), dtype=torch.bfloat16)
    strata.dequantize(t, "bfloat16", out=bf)
    assert torch.equal(bf, torch.from_numpy(want).to(torch.bfloat16))
    with pytest.raises(TypeError):
        strata.dequantize(t, "float16", out=bf)
    with pytest.raises(ValueError):
        strata.dequantize(t, out=torch.zeros((2, 2)))
    with pytest.raises(TypeError):
        t.dequantize("int8")


def test_dequantize_matches_torch_for_fp8_rowwise():
    import torch

    t = quantized("fp8_e4m3_rowwise", (5, 33), None, "row_major")
    codes, scales = t.levels
    # torch 1.13 has no float8: the codes widen exactly to float32 by cast.
    values = np.from_dlpack(t.dequantize())
    manual = (torch.from_numpy(np.from_dlpack(codes.cast(strata.dtype.float32)))
              * torch.from_numpy(np.from_dlpack(scales)).reshape(5, 1)).numpy()
    assert np.array_equal(values, manual)


def test_the_readme_example_runs():
    import torch

    with open("README.md") as f:
        text = f.read()
    section = text[text.index("\n## Values out"):]
    start = section.index("```python\n") + len("```python\n")
    block = section[start:section.index("```", start)]
    namespace = {"np": np, "torch": torch, "strata": strata}
    exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["bf16"].shape == (576, 512)
    assert namespace["ue8m0"].dtype().name == "fp8_e4m3_block128x128_ue8m0"
    assert tuple(namespace["raw"].shape) == (576, 512)


if __name__ == "__main__":
    support.run(__file__)
