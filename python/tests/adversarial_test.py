"""What an adversary tried against the package (a review of issue 30), kept
as regression tests: each once crashed the process, hung, grew without
bound, destroyed something or broke the contract."""

import gc
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest
import torch

import strata
import support
from strata import dtype as sd
from support import RecordingRule, layout, pair_dtype, pair_levels


def test_release_while_a_kernel_runs_is_safe():
    """Ops run without the GIL; their carriers are pinned meanwhile."""
    n = 1 << 24
    for operation in (lambda t: t.sum(), lambda t: t.fill(1.0), lambda t: t.clone(),
                      lambda t: t + 1.0):
        carrier = strata.HostCarrier(sd.float32, n)
        t = strata.Tensor(carrier, 0, strata.Layout(n, 1))
        releaser = threading.Thread(target=lambda: (time.sleep(0.002), carrier.release()))
        releaser.start()
        try:
            operation(t)
        except ValueError:
            pass  # Released before the kernel began: refused, as documented.
        releaser.join()
        assert carrier.released()


def test_deeply_nested_headers_are_refused():
    with tempfile.TemporaryDirectory() as directory:
        for header in [b"[" * 100000 + b"]" * 100000,
                       b'{"__metadata__":' + b"[" * 100000 + b"]" * 100000 + b"}"]:
            path = os.path.join(directory, "deep.safetensors")
            with open(path, "wb") as f:
                f.write(len(header).to_bytes(8, "little") + header)
            with pytest.raises(ValueError, match="not a safetensors file"):
                strata.read_safetensors(path)


@pytest.mark.parametrize("make", [
    lambda: strata.Carrier.__new__(strata.Carrier),
    lambda: strata.HostCarrier.__new__(strata.HostCarrier),
    lambda: strata.Tensor.__new__(strata.Tensor),
    lambda: strata.Layout.__new__(strata.Layout),
    lambda: sd.SimpleDType.__new__(sd.SimpleDType),
    lambda: sd.CompoundDType.__new__(sd.CompoundDType),
    lambda: strata.RepresentationValidationContext.__new__(
        strata.RepresentationValidationContext),
    lambda: sd.Rule.__new__(sd.Rule),
])
def test_objects_never_initialized_are_refused(make):
    obj = make()
    for name in dir(type(obj)):
        if name in ("__class__", "__init__", "__new__", "__init_subclass__", "__subclasshook__",
                    "__getattribute__", "__setattr__", "__delattr__", "__dir__",
                    "__reduce_ex__", "__sizeof__", "__format__", "__ne__", "__eq__",
                    "__hash__", "__doc__", "__module__", "__dict__", "__weakref__",
                    "__array_ufunc__", "__iter__", "numpy", "__lt__", "__le__", "__gt__",
                    "__ge__", "__getstate__", "__copy__", "__deepcopy__"):
            continue
        attribute = getattr(type(obj), name)
        try:
            if isinstance(attribute, property):
                attribute.fget(obj)
            elif callable(attribute):
                attribute(obj)
        except (TypeError, ValueError):
            pass
    with pytest.raises(TypeError):
        strata.Tensor(strata.Carrier.__new__(strata.Carrier), 0, strata.Layout(1, 1))
    with pytest.raises(TypeError):
        strata.Tensor(strata.HostCarrier(sd.int8, 1), 0, strata.Layout.__new__(strata.Layout))


def test_torch_writes_to_a_mapped_export_never_reach_the_file():
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "w.safetensors")
        strata.write_safetensors(path, {"w": strata.zeros((4,), sd.float32) + 1})
        before = open(path, "rb").read()
        w = strata.read_safetensors(path)["w"]
        t = torch.utils.dlpack.from_dlpack(w)
        t.fill_(7.0)  # torch has no read-only tensors.
        assert open(path, "rb").read() == before
        assert w.carrier.version() == 0
        with pytest.raises(ValueError, match="read-only"):
            w.fill(0.0)  # Strata still refuses.


def test_a_daemon_thread_in_a_kernel_at_exit():
    script = (
        "import threading, strata\n"
        "x = strata.zeros((512, 1024), strata.dtype.float32) + 1\n"
        "def spin():\n"
        "    while True:\n"
        "        strata.quantize(x, 'mxfp8_e4m3', 1); x.sum()\n"
        "threading.Thread(target=spin, daemon=True).start()\n"
        "import time; time.sleep(0.05)\n")
    for _ in range(3):
        result = subprocess.run([sys.executable, "-c", script], env=dict(os.environ),
                                capture_output=True, timeout=60)
        assert result.returncode == 0, result.stderr.decode()


def test_fifos_are_refused_not_waited_on():
    with tempfile.TemporaryDirectory() as directory:
        fifo = os.path.join(directory, "fifo")
        os.mkfifo(fifo)
        for read in (strata.read_safetensors, strata.read_gguf, strata.read_checkpoint):
            with pytest.raises(ValueError, match="regular file"):
                read(fifo)
        text = strata.dump(strata.read_safetensors(
            write_one(directory))["w"]).replace(os.path.join(directory, "one.safetensors"), fifo)
        with pytest.raises(ValueError, match="regular file"):
            strata.replay(text)


def write_one(directory):
    path = os.path.join(directory, "one.safetensors")
    strata.write_safetensors(path, {"w": strata.zeros((4,), sd.float32)})
    return path


def test_plans_of_absurdly_many_parts_are_refused():
    wide = strata.zeros((1,), sd.float32).broadcast_to(2**62)
    with pytest.raises(MemoryError, match="limit"):
        strata.plan_shards(wide, 0, 2**40)


def test_writing_never_replaces_what_is_not_a_regular_file():
    t = {"w": strata.zeros((4,), sd.float32)}
    with tempfile.TemporaryDirectory() as directory:
        target = os.path.join(directory, "target.safetensors")
        link = os.path.join(directory, "link.safetensors")
        strata.write_safetensors(target, t)
        os.symlink(target, link)
        strata.write_safetensors(link, {"w": strata.zeros((8,), sd.float32)})
        assert os.path.islink(link) and strata.read_safetensors(target)["w"].shape == (8,)
        with pytest.raises(ValueError, match="not a regular file"):
            strata.write_safetensors(directory, t)
        fifo = os.path.join(directory, "fifo")
        os.mkfifo(fifo)
        with pytest.raises(ValueError, match="not a regular file"):
            strata.write_safetensors(fifo, t)
        with pytest.raises(ValueError, match="not a regular file"):
            strata.write_safetensors("/dev/null", t)
        assert sorted(os.listdir(directory)) == ["fifo", "link.safetensors",
                                                 "target.safetensors"]


def test_numbers_with_compound_tensors_and_numpy_operands():
    q = strata.quantize(strata.zeros((2, 32), sd.float32), "nvfp4", 1)
    for operation in (lambda: q + 1, lambda: 1.5 * q, lambda: q - True):
        with pytest.raises(strata.OneSubtensorRequiredError):
            operation()
    t = strata.zeros((3,), sd.float32)
    for number in (np.float32(1), np.float16(1), np.bool_(True), np.int8(1), np.float64(1)):
        result = t + number
        assert isinstance(result, strata.Tensor) and result.shape == (3,)
    array = np.arange(3, dtype=np.float32)
    for result in (array + t, t + array, t * torch.ones(3)):
        assert isinstance(result, strata.Tensor)
    np.testing.assert_array_equal(np.from_dlpack(array + t), array)


def test_rule_answers_that_misbehave():
    class BadRepr:
        def __repr__(self):
            raise RuntimeError("no repr")

    log = []
    subtensors, adjacent = pair_levels()
    with pytest.raises(TypeError, match="returns_bad.*BadRepr.*not None"):
        strata._framework.create_representation(
            pair_dtype([RecordingRule(log, "returns_bad", result=BadRepr())]), subtensors,
            adjacent)


def test_rule_exceptions_in_shard_plans():
    class Refuses:
        def __init__(self, error):
            self.error = error
            self.raised = []

        def validate(self, context):
            if context.placement_layouts[0].size < 64 * 8:
                error = self.error()
                self.raised.append(error)
                raise error

    rule = Refuses(lambda: LookupError("refused"))
    dtype = sd.CompoundDType("sharded", (sd.float32, sd.int8), rules=(rule,))
    values = strata.HostCarrier(sd.float32, 64 * 8)
    codes = strata.HostCarrier(sd.int8, 64)
    t = strata._framework.create_representation(
        dtype, [(sd.float32, values, 0, layout("(64,8):(8,1)")),
                (sd.int8, codes, 0, layout("64:1"))], [layout("(64,8):(1,0)")])
    granule, parts, pad = strata.plan_shards(t, 0, 40)
    assert len(parts) == 40 and [p is e for p, e in zip(parts, rule.raised[-40:])] == [True] * 40
    rule.error = KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        strata.plan_shards(t, 0, 2)


def test_truth_and_widths_of_dtype_arguments():
    class Undecided:
        def __bool__(self):
            raise ZeroDivisionError("undecided")

    with pytest.raises(ZeroDivisionError):
        sd.SimpleDType("b", 8, "integer", Undecided())
    with pytest.raises(ZeroDivisionError):
        sd.block_scaled("x", sd.float8_e4m3fn, (sd.float32,), (32,), ragged=Undecided())
    with pytest.raises(ValueError):
        sd.SimpleDType("w", -(2**32) + 8, "integer")
    with pytest.raises(ValueError):
        sd.SimpleDType("w", 8, "floating", exponent_bits=2**31 + 4)
    counted = sd.DTypeCategory("counted", lambda d: 1 if d is sd.int8 else "")
    assert counted.contains(sd.int8) and not counted.contains(sd.int16)


def test_messages_keep_every_character():
    with pytest.raises(TypeError) as error:
        strata.Layout.parse("\u0664:\u0661")
    assert str(error.value)
    with pytest.raises(TypeError) as error:
        strata.Layout.parse("4:1\0x")
    assert "x" in str(error.value)
    with pytest.raises(ValueError) as error:
        strata.read_safetensors(b"/tmp/no-such-\xff")
    assert "no-such-" in str(error.value)
    with tempfile.TemporaryDirectory() as directory:
        name = os.fsdecode(os.path.join(directory, "\udcff.safetensors"))
        strata.write_safetensors(name, {"w": strata.zeros((2,), sd.int8)})
        assert strata.read_safetensors(name)["w"].shape == (2,)


def test_values_as_python_reads_them():
    one = strata.zeros((1, 1), sd.float32) + 2.5
    assert one.item() == 2.5 and float(one) == 2.5 and int(one) == 2 and bool(one)
    assert not bool(strata.zeros((), sd.bool))
    with pytest.raises(ValueError):
        bool(strata.zeros((2,), sd.float32))
    with pytest.raises(TypeError):
        iter(strata.zeros((), sd.float32))
    import copy
    import pickle
    assert copy.deepcopy(sd.float32) is sd.float32 and copy.copy(sd.nvfp4) is sd.nvfp4
    assert pickle.loads(pickle.dumps(sd.nvfp4_ts)) is sd.nvfp4_ts
    mixed = strata._framework.create_representation
    subtensors, adjacent = pair_levels(codes=strata.Carrier(sd.int8, 4))
    with pytest.raises(TypeError, match=r"strata::HostCarrier"):
        mixed(pair_dtype(), subtensors, adjacent)


if __name__ == "__main__":
    support.run(__file__)


def test_second_review_findings():
    # permute(dims=...), reshape(shape=...), broadcast_to(shape=...), fill(v=...)
    t = strata.zeros((2, 3), sd.float32)
    assert t.permute(dims=(1, 0)).shape == (3, 2)
    assert t.reshape(shape=(3, 2)).shape == (3, 2)
    assert t.unsqueeze(0).broadcast_to(shape=(4, 2, 3)).shape == (4, 2, 3)
    t.fill(v=2.0)
    assert t[1, 2] == 2.0
    with pytest.raises(TypeError):
        t.permute(1, 0, dims=(1, 0))
    # A rule that builds a compound Tensor in its validate: every rule of the
    # outer validation still gets the one outer context.
    log = []
    inner_dtype = pair_dtype([RecordingRule(log, "inner")])

    class Nested:
        def __init__(self):
            self.contexts = []

        def validate(self, context):
            self.contexts.append(context)
            subtensors, adjacent = pair_levels()
            strata._framework.create_representation(inner_dtype, subtensors, adjacent)

    first, second = Nested(), RecordingRule(log, "second")
    outer = pair_dtype([first, second])
    subtensors, adjacent = pair_levels()
    strata._framework.create_representation(outer, subtensors, adjacent)
    assert first.contexts[0] is second.contexts[0]
    assert first.contexts[0].logical_dtype is outer


def test_a_released_carrier_starts_no_new_kernel():
    n = 1 << 24
    carrier = strata.HostCarrier(sd.float32, n)
    t = strata.Tensor(carrier, 0, strata.Layout(n, 1))
    started = threading.Event()
    errors = []

    def late():
        started.wait()
        try:
            t.sum()
        except ValueError as error:
            errors.append(error)

    thread = threading.Thread(target=late)
    thread.start()
    threading.Thread(target=lambda: (started.set(), carrier.release())).start()
    t.clone() if not carrier.released() else None
    thread.join()
    assert carrier.released()
