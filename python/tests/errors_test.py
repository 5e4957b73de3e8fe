"""python.md's "Errors": the C++ kinds as Python's exceptions with the C++
message, argument conversion as the spec reads Python's values, and ops from
several threads at once (the GIL released only around kernels)."""

import threading

import numpy as np
import pytest

import strata
import support
from strata import dtype as sd
from support import layout


def test_kinds_map_to_python_exceptions():
    assert issubclass(strata.OneSubtensorRequiredError, ValueError)
    t = strata.zeros((2, 3), sd.float32)
    with pytest.raises(ValueError) as error:
        t.permute(0, 0)
    assert type(error.value) is ValueError and str(error.value).startswith("Permute: ")
    with pytest.raises(TypeError) as error:
        t.cast(sd.float8_e4m3fn) + t
    assert type(error.value) is TypeError and str(error.value).startswith("Add: ")
    q = strata.quantize(strata.zeros((2, 32), sd.float32), "mxfp4", 1)
    with pytest.raises(strata.OneSubtensorRequiredError, match="^Sum requires"):
        q.sum()
    with pytest.raises(MemoryError, match="bytes"):
        strata.replay('logical_dtype: "int8" carriers { id: "c0" carrier_class: "host" '
                      'dtype: "int8" size: 9223372036854775807 } subtensors { '
                      'storage_dtype: "int8" carrier: "c0" placement: "1:0" }')


@pytest.mark.parametrize("offset", [0.0, 1.5, "0", None, True, False, [0], np.float32(0)])
def test_an_offset_that_is_not_an_integer_is_a_type_error(offset):
    carrier = strata.HostCarrier(sd.float32, 8)
    with pytest.raises(TypeError, match="offset"):
        strata.Tensor(carrier, offset, layout("4:1"))
    assert carrier.version() == 0 and not carrier.released()


@pytest.mark.parametrize("offset", [np.int8(2), np.int64(2), np.uint16(2), 2])
def test_numpy_integers_are_integers(offset):
    t = strata.Tensor(strata.HostCarrier(sd.float32, 8), offset, layout("4:1"))
    assert t.offset == 2 and type(t.offset) is int


def test_other_argument_errors():
    carrier = strata.HostCarrier(sd.float32, 8)
    with pytest.raises(ValueError, match="non-negative"):
        strata.Tensor(carrier, np.int64(-3), layout("4:1"))
    with pytest.raises(ValueError, match="int64"):
        strata.Tensor(carrier, 2**64, layout("4:1"))
    with pytest.raises(TypeError, match="carrier"):
        strata.Tensor(np.zeros(8, np.float32), 0, layout("4:1"))
    with pytest.raises(TypeError, match="carrier"):
        strata.Tensor(None, 0, layout("4:1"))
    with pytest.raises(TypeError, match="layout"):
        strata.Tensor(carrier, 0, "4:1")
    with pytest.raises(TypeError, match="layout"):
        strata.Tensor(carrier, 0, (4, 1))
    t = strata.Tensor(carrier, 0, layout("(2,4):(4,1)"))
    with pytest.raises(TypeError, match="dims"):
        t.permute(0, 1.0)
    with pytest.raises(TypeError, match="dim"):
        t.squeeze(True)
    with pytest.raises(TypeError, match="shape"):
        t.reshape("8")
    with pytest.raises(TypeError):
        t.as_strided("8:1", 0)
    with pytest.raises(TypeError, match="value"):
        t.fill("1")
    assert carrier.version() == 0


def test_ops_from_several_threads():
    base = strata.from_dlpack(np.arange(64 * 64, dtype=np.float32).reshape(64, 64))
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(200):
                a = int(rng.integers(0, 32))
                view = base.slice(0, a, a + 32).permute(1, 0)
                total = (view.contiguous() * 2).sum()
                expected = 2 * np.arange(64 * 64, dtype=np.float64).reshape(64, 64)[a:a + 32].sum()
                assert np.from_dlpack(total).item() == expected
        except BaseException as error:  # Reported below, in the main thread.
            errors.append(error)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_the_readme_example_runs():
    namespace = {}
    exec(compile(support.readme_python_block(), "README.md", "exec"), namespace)
    assert namespace["granule"] == 128 and namespace["pad"] == 384
    assert [p.shape for p in namespace["parts"]] == [(128, 512), (128, 512), (44, 512)]


if __name__ == "__main__":
    support.run(__file__)
