"""DLPack both ways with numpy and torch: the same memory, read-only where
the carrier is, producers kept alive, multi-subtensor Tensors refused."""

import gc
import os
import tempfile
import weakref

import numpy as np
import pytest
import torch

import strata
import support
from strata import dtype as sd
from support import layout


def test_numpy_round_trip_shares_memory():
    a = np.arange(24, dtype=np.float64).reshape(4, 6)[:, 1::2]
    s = strata.from_dlpack(a)
    assert s.shape == (4, 3) and s.dtype() is sd.float64
    assert s.data_ptr() == a.ctypes.data
    assert s.layout == strata.Layout((4, 3), (6, 2))
    back = np.from_dlpack(s)
    assert back.ctypes.data == a.ctypes.data and back.strides == a.strides
    np.testing.assert_array_equal(back, a)
    s[0, 0] = -1.0
    assert a[0, 0] == -1.0
    assert s.__dlpack_device__() == (1, 0)


def test_torch_round_trip_shares_memory():
    for dtype, sdtype in [(torch.float32, sd.float32), (torch.bfloat16, sd.bfloat16),
                          (torch.int64, sd.int64), (torch.float16, sd.float16),
                          (torch.uint8, sd.uint8)]:
        t = torch.arange(12).to(dtype).reshape(3, 4).t()
        s = strata.from_dlpack(t)
        assert s.dtype() is sdtype and s.data_ptr() == t.data_ptr()
        assert s.shape == (4, 3) and s.layout.stride == (1, 4)
        back = torch.utils.dlpack.from_dlpack(s)
        assert back.data_ptr() == t.data_ptr() and back.stride() == t.stride()
        assert torch.equal(back, t)
        back[0, 0] = 7
        assert t[0, 0] == 7
    # A strata Tensor made by Strata, exported to torch and back.
    z = strata.zeros((2, 3), sd.int32) + 5
    t = torch.utils.dlpack.from_dlpack(z)
    assert t.data_ptr() == z.data_ptr() and int(t.sum()) == 30
    assert strata.from_dlpack(t).data_ptr() == z.data_ptr()


def test_producers_live_while_the_tensor_does():
    a = np.arange(8, dtype=np.int32)
    ref = weakref.ref(a)
    s = strata.from_dlpack(a)
    del a
    gc.collect()
    assert ref() is not None and s[7] == 7
    del s
    gc.collect()
    assert ref() is None
    t = torch.arange(8)
    s = strata.from_dlpack(t)
    del t
    gc.collect()
    assert s[5] == 5


def test_exports_keep_the_carrier_alive():
    s = strata.zeros((4,), sd.float32) + 2
    n = np.from_dlpack(s)
    carrier = s.carrier
    del s
    gc.collect()
    assert n.sum() == 8
    carrier.release()  # Pinned by the export: the memory stays until it goes.
    assert carrier.released() and n.sum() == 8
    del n


def test_capsules():
    s = strata.zeros((3,), sd.float32)
    capsule = s.__dlpack__()
    t = strata.from_dlpack(capsule)
    assert t.data_ptr() == s.data_ptr()
    with pytest.raises(ValueError, match="unconsumed"):
        strata.from_dlpack(capsule)  # Each export is imported once.
    unused = s.__dlpack__(stream=None, max_version=(1, 0))
    del unused  # Its destructor runs the export's deleter.
    with pytest.raises(ValueError, match="stream"):
        s.__dlpack__(stream=1)
    with pytest.raises(TypeError):
        strata.from_dlpack([1, 2, 3])


def test_read_only_carriers_export_read_only():
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "w.safetensors")
        strata.write_safetensors(path, {"w": strata.zeros((2, 2), sd.float32) + 1})
        w = strata.read_safetensors(path)["w"]
        assert w.carrier.read_only and isinstance(w.carrier, strata.MappedCarrier)
        n = np.from_dlpack(w)
        assert not n.flags.writeable and n.sum() == 4
        with pytest.raises(ValueError):
            n[0, 0] = 2
        again = strata.from_dlpack(w)
        assert again.carrier.read_only  # Strata's own export keeps the flag.
        with pytest.raises(ValueError, match="read-only"):
            again.fill(0)
        # numpy refuses to export its read-only arrays at all.
        frozen = np.zeros(3)
        frozen.flags.writeable = False
        with pytest.raises(BufferError):
            strata.from_dlpack(frozen)
        del n, w, again


def test_what_dlpack_cannot_hold_is_refused():
    q = strata.quantize(strata.zeros((2, 32), sd.float32), "mxfp8_e4m3", 1)
    with pytest.raises(strata.OneSubtensorRequiredError):
        q.__dlpack__()
    with pytest.raises(strata.OneSubtensorRequiredError):
        torch.utils.dlpack.from_dlpack(q)
    codes = q.subtensors[0]
    with pytest.raises(ValueError, match="float8"):
        strata.Tensor(codes[1], 0, layout("64:1")).__dlpack__()
    hierarchical = strata.zeros((4, 6), sd.float32).permute(1, 0).reshape(2, 12)
    with pytest.raises(ValueError):
        np.from_dlpack(hierarchical)
    np.testing.assert_array_equal(np.from_dlpack(hierarchical.contiguous()), np.zeros((2, 12)))


if __name__ == "__main__":
    support.run(__file__)
