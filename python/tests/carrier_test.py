"""Carriers from Python: subclasses, buffers, versions, release, lifetimes
and reference counts (python.md, "Custom carriers and rules")."""

import array
import gc
import sys
import weakref

import numpy as np
import pytest

import strata
import support
from strata import dtype as sd
from support import layout


class Tracked(strata.Carrier):
    """A Python carrier with state of its own."""

    def __init__(self, size, buffer=None, dtype=sd.float32):
        super().__init__(dtype, size, buffer)
        self.label = "tracked"


class Forgetful(strata.Carrier):
    def __init__(self):
        pass  # Never calls super().__init__.


def rss_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def test_python_carriers_own_zeroed_memory():
    c = Tracked(8)
    assert c.size() == 8 and c.dtype is sd.float32 and c.version() == 0
    assert c.class_name.endswith("Tracked") and not c.read_only
    t = strata.Tensor(c, 0, layout("8:1"))
    assert [t[i] for i in range(8)] == [0.0] * 8
    t[2] = 5.0
    assert c.version() == 1 and np.frombuffer(c.tobytes(), np.float32)[2] == 5.0
    assert t.carrier is c and t.carrier.label == "tracked" and t.carrier_type() is Tracked
    assert c.bump_version() == 2


def test_python_carriers_over_buffers():
    data = bytearray(np.arange(6, dtype=np.int16).tobytes())
    c = Tracked(6, data, dtype=sd.int16)
    t = strata.Tensor(c, 0, layout("(2,3):(3,1)"))
    assert t[1, 2] == 5 and c.data_ptr() != 0
    t[0, 0] = -7
    assert np.frombuffer(data, np.int16)[0] == -7  # The buffer's own memory.
    with pytest.raises(BufferError):
        data.extend(b"xx")  # Exported while the carrier holds it.
    readonly = Tracked(3, b"\x01\x00\x02\x00\x03\x00", dtype=sd.int16)
    assert readonly.read_only
    r = strata.Tensor(readonly, 0, layout("3:1"))
    assert r[2] == 3
    with pytest.raises(ValueError, match="read-only"):
        r[0] = 1
    assert readonly.version() == 0
    with pytest.raises(ValueError, match="need 16"):
        Tracked(4, bytearray(8))
    with pytest.raises(TypeError):
        Tracked(4, [1, 2, 3, 4])
    strided = np.arange(8, dtype=np.float32)[::2]
    with pytest.raises(TypeError, match="C-contiguous"):
        Tracked(4, strided)
    float_array = array.array("f", [1.0, 2.0])
    assert strata.Tensor(Tracked(2, float_array), 0, layout("2:1"))[1] == 2.0


def test_carrier_arguments_follow_the_spec():
    with pytest.raises(TypeError, match="size"):
        Tracked(4.0)
    with pytest.raises(TypeError, match="size"):
        strata.HostCarrier(sd.float32, True)
    with pytest.raises(TypeError, match="dtype"):
        strata.Carrier("float32", 4)
    assert strata.HostCarrier(sd.int8, np.int64(3)).size() == 3
    with pytest.raises(ValueError):
        strata.HostCarrier(sd.float32, -1)
    with pytest.raises(ValueError, match="simple"):
        strata.HostCarrier(sd.mxfp4, 4)
    with pytest.raises(ValueError):
        strata.HostCarrier(sd.float32, 2**62)
    with pytest.raises(TypeError, match="__init__"):
        Forgetful()
    # A carrier of a category or compound dtype, or a negative size, can be
    # made; validation refuses it, with no effect on it.
    for dtype, size in [(strata.DType.Any, 4), (sd.nvfp4, 4), (sd.float32, -4)]:
        c = strata.Carrier(dtype, size)
        with pytest.raises(ValueError):
            strata.Tensor(c, 0, layout("4:1"))
        assert c.version() == 0 and not c.released()
    with pytest.raises(ValueError):
        strata.Carrier(sd.nvfp4, 4, bytearray(4))


def test_release_is_explicit_and_idempotent():
    c = Tracked(4)
    t = strata.Tensor(c, 0, layout("4:1"))
    views = [t.unsqueeze(0) for _ in range(10)]
    del views, t
    gc.collect()
    assert not c.released()
    t = strata.Tensor(c, 0, layout("4:1"))
    c.release()
    c.release()
    assert c.released() and c.data_ptr() == 0
    with pytest.raises(ValueError):
        t[0]
    with pytest.raises(ValueError):
        c.tobytes()


def test_a_python_carrier_lives_while_a_tensor_does():
    c = Tracked(16)
    ref = weakref.ref(c)
    t = strata.Tensor(c, 0, layout("16:1")).reshape(4, 4).permute(1, 0)
    del c
    gc.collect()
    assert ref() is not None and ref().label == "tracked"
    assert t.carrier is ref()
    snapshot = t.mutation_snapshot()
    assert snapshot == [(ref(), 0)]
    del snapshot
    q = strata.quantize(t.contiguous().cast(sd.float32), "mxfp8_e4m3", 1) if False else None
    del t, q
    gc.collect()
    assert ref() is None


def test_no_leak_in_a_loop_of_views():
    """10^5 views of a Python carrier's Tensor: the carrier's reference count
    and the process's memory come back (measured)."""
    c = Tracked(4096)
    t = strata.Tensor(c, 0, layout("(64,64):(64,1)"))
    gc.collect()
    refs = sys.getrefcount(c)
    for _ in range(1000):  # Warm the allocator.
        t.permute(1, 0).slice(0, 0, 32).reshape(32, 8, 8)
    before = rss_bytes()
    for i in range(100_000):
        v = t.permute(1, 0).slice(0, i % 32, 32 + i % 32).reshape(32, 8, 8)
        v = v[1:, None]
    del v
    gc.collect()
    growth = rss_bytes() - before
    print(f"RSS growth over 10^5 view chains: {growth} bytes")
    assert sys.getrefcount(c) == refs
    assert growth < 2 << 20, growth


def test_no_leak_in_a_loop_of_imports_and_exports():
    source = np.arange(1024, dtype=np.float32)
    refs = sys.getrefcount(source)
    for _ in range(2000):
        s = strata.from_dlpack(source)
        back = np.from_dlpack(s)
        del s, back
    gc.collect()
    assert sys.getrefcount(source) == refs


def test_mixed_python_classes_are_refused_by_name():
    class Other(strata.Carrier):
        def __init__(self, dtype, size):
            super().__init__(dtype, size)

    pair = sd.CompoundDType("pair_for_classes", (sd.float32, sd.float32))
    with pytest.raises(TypeError, match=r"Tracked and .*Other"):
        strata._framework.create_representation(
            pair, [(sd.float32, Tracked(4), 0, layout("4:1")),
                   (sd.float32, Other(sd.float32, 4), 0, layout("4:1"))],
            [layout("4:1")])


if __name__ == "__main__":
    support.run(__file__)
