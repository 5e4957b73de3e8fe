"""One test per Scenario of core-tensor-representation.md, in Python's terms
(the C++ Scenario tests stay in tests/). Each test is named after its
Scenario."""

import gc
import weakref

import numpy as np
import pytest

import strata
import support
from strata import dtype as sd
from strata._framework import create_representation
from support import RecordingRule, layout, pair_dtype, pair_levels, state


class CategoryCarrier(strata.Carrier):
    """A custom carrier that reports a category as its storage dtype."""

    def __init__(self, category):
        super().__init__(category, 16)


class SubCarrier(strata.Carrier):
    """A subclass of the base carrier class (a different exact class)."""

    def __init__(self, dtype, size):
        super().__init__(dtype, size)


class SizedCarrier(strata.Carrier):
    """Reports any size, a negative one included (then it holds no data)."""

    def __init__(self, dtype, size):
        super().__init__(dtype, size)


# Requirement: Conventional Tensor construction creates one subtensor


def test_construct_a_conventional_tensor():
    carrier = strata.HostCarrier(sd.float32, 40)
    placement = layout("(4,8):(8,1)")
    t = strata.Tensor(carrier, 8, placement)
    assert t.num_subtensors == 1
    assert t.subtensors == ((sd.float32, carrier, 8, placement),)
    assert t.carrier is carrier and t.offset == 8 and t.layout == placement
    assert t.dtype() is sd.float32 and t.subtensors[0][0] is sd.float32
    assert t.adjacent_layouts == ()


def test_reject_a_negative_offset():
    carrier = strata.HostCarrier(sd.float32, 8)
    before = state(carrier)
    with pytest.raises(ValueError, match="offsets must be non-negative"):
        strata.Tensor(carrier, -1, layout("4:1"))
    assert state(carrier) == before


def test_reject_insufficient_carrier_storage():
    carrier = strata.HostCarrier(sd.float32, 8)
    before = state(carrier)
    with pytest.raises(ValueError, match="carrier has 8.*exceeds the carrier size"):
        strata.Tensor(carrier, 5, layout("4:1"))
    assert state(carrier) == before


@pytest.mark.parametrize("category", [strata.DType.Any, strata.DType.Floating,
                                      strata.DType.Integer])
def test_reject_a_category_backed_conventional_tensor(category):
    carrier = CategoryCarrier(category)
    before = state(carrier)
    with pytest.raises(ValueError, match="category"):
        strata.Tensor(carrier, 0, layout("4:1"))
    assert state(carrier) == before
    assert carrier.dtype is category


# Requirement: Tensor state is projected from one authoritative representation


def test_read_conventional_tensor_properties():
    carrier = SubCarrier(sd.int16, 24)
    placement = layout("(2,(3,2)):(12,(1,3))")
    t = strata.Tensor(carrier, 4, placement)
    version = carrier.version()
    assert t.carrier is carrier
    assert t.offset == 4 and isinstance(t.offset, int)
    assert t.layout == placement
    assert t.dtype() is sd.int16
    assert t.size() == 12 and isinstance(t.size(), int)
    assert t.carrier_type() is SubCarrier
    assert t.shape == (2, 6)
    # Queries change nothing.
    assert carrier.version() == version and t.layout == placement


def test_observe_a_framework_produced_tensor():
    carrier = strata.HostCarrier(sd.float32, 32)
    t = strata.Tensor(carrier, 0, layout("(4,8):(8,1)"))
    view = t.slice(1, 2, 6).permute(1, 0)
    assert view.offset == 2 and view.layout == layout("(4,4):(1,8)")
    assert view.size() == 16 and view.shape == (4, 4)
    assert view.carrier is carrier and view.carrier_type() is strata.HostCarrier
    result = t.cast(sd.float16)
    assert result.dtype() is sd.float16 and result.carrier is not carrier
    assert result.carrier.dtype is sd.float16 and result.offset == 0
    assert result.layout == layout("(4,8):(8,1)")


# Requirement: Tensor validates a dtype-provided ordered storage schema


def test_validate_a_simple_storage_schema():
    carrier = strata.HostCarrier(sd.float32, 8)
    t = create_representation(sd.float32, [(sd.float32, carrier, 0, layout("8:1"))], [])
    assert t.dtype() is sd.float32 and t.num_subtensors == 1
    with pytest.raises(ValueError, match="of 1 entries; got 2 subtensors"):
        create_representation(sd.float32, [(sd.float32, carrier, 0, layout("8:1"))] * 2,
                              [layout("8:1")])
    with pytest.raises(ValueError, match="adjacent"):
        create_representation(sd.float32, [(sd.float32, carrier, 0, layout("8:1"))],
                              [layout("8:1")])


def test_validate_an_ordered_storage_schema():
    log = []
    rule = RecordingRule(log, "r")
    triple = sd.CompoundDType("triple", (sd.float32, sd.int8, sd.float16), rules=(rule,))
    subtensors = [(sd.float32, strata.HostCarrier(sd.float32, 32), 0, layout("(4,8):(8,1)")),
                  (sd.int8, strata.HostCarrier(sd.int8, 8), 0, layout("(4,2):(2,1)")),
                  (sd.float16, strata.HostCarrier(sd.float16, 2), 0, layout("2:1"))]
    adjacent = [layout("(4,8):(1,0)"), layout("(4,2):(0,1)")]
    t = create_representation(triple, subtensors, adjacent)
    assert t.num_subtensors == 3 and t.adjacent_layouts == tuple(adjacent)
    assert [s[0] for s in t.subtensors] == [sd.float32, sd.int8, sd.float16]
    assert log == ["r"]
    # Not n subtensors, or not n - 1 adjacent layouts.
    with pytest.raises(ValueError, match="of 3 entries; got 2 subtensors"):
        create_representation(triple, subtensors[:2], adjacent[:1])
    with pytest.raises(ValueError, match="2 adjacent"):
        create_representation(triple, subtensors, adjacent[:1])
    assert log == ["r"]


def test_reject_a_storage_schema_count_or_order_mismatch():
    log = []
    dtype = pair_dtype([RecordingRule(log, "r")])
    subtensors, adjacent = pair_levels()
    with pytest.raises(ValueError, match="of 2 entries; got 1 subtensors"):
        create_representation(dtype, subtensors[:1], [])
    swapped = [subtensors[1], subtensors[0]]
    with pytest.raises(ValueError, match="subtensor 0") as error:
        create_representation(dtype, swapped, adjacent)
    assert "float32" in str(error.value) and "int8" in str(error.value)
    assert log == []


@pytest.mark.parametrize("logical", [
    strata.DType.Any, strata.DType.Floating, strata.DType.Integer,
    sd.DTypeCategory("even_width", lambda d: getattr(d, "bits", 1) % 2 == 0)])
def test_reject_a_dtype_without_a_storage_schema(logical):
    carrier = strata.HostCarrier(sd.float32, 8)
    before = state(carrier)
    with pytest.raises(ValueError, match="storage schema"):
        create_representation(logical, [(sd.float32, carrier, 0, layout("8:1"))], [])
    assert state(carrier) == before


# Requirement: Universal validation protects every subtensor


def test_accept_a_universally_valid_representation():
    log = []
    rule = RecordingRule(log, "r")
    subtensors, adjacent = pair_levels()
    t = create_representation(pair_dtype([rule]), subtensors, adjacent)
    assert log == ["r"] and t.num_subtensors == 2
    context = rule.contexts[0]
    assert context.placement_layouts == (layout("(4,8):(8,1)"), layout("4:1"))


def test_reject_a_carrier_dtype_mismatch():
    log = []
    other_float32 = sd.SimpleDType("float32", 32, exponent_bits=8, mantissa_bits=23)
    assert other_float32 is not sd.float32 and other_float32.name == "float32"
    subtensors, adjacent = pair_levels(values=strata.HostCarrier(other_float32, 32))
    with pytest.raises(ValueError, match="subtensor 0: carrier dtype float32 is not "
                       "the identical storage dtype float32"):
        create_representation(pair_dtype([RecordingRule(log, "r")]), subtensors, adjacent)
    assert log == []


def test_reject_mixed_carrier_classes():
    log = []
    dtype = pair_dtype([RecordingRule(log, "r")])
    for values, codes in [(strata.Carrier(sd.float32, 32), SubCarrier(sd.int8, 4)),
                          (SubCarrier(sd.float32, 32), strata.Carrier(sd.int8, 4)),
                          (strata.HostCarrier(sd.float32, 32), SubCarrier(sd.int8, 4))]:
        subtensors, adjacent = pair_levels(values=values, codes=codes)
        with pytest.raises(TypeError) as error:
            create_representation(dtype, subtensors, adjacent)
        text = str(error.value)
        assert "subtensors 0 and 1" in text
        assert ("SubCarrier" in text) and ("Carrier" in text.replace("SubCarrier", ""))
    assert log == []


def test_reject_an_invalid_subtensor_field():
    log = []
    dtype = pair_dtype([RecordingRule(log, "r")])
    subtensors, adjacent = pair_levels()
    values = subtensors[0]
    bad = {
        "carrier": (values[0], np.zeros(32, np.float32), 0, values[3]),
        "offset": (values[0], values[1], 0.0, values[3]),
        "bool offset": (values[0], values[1], False, values[3]),
        "placement": (values[0], values[1], 0, "(4,8):(8,1)"),
    }
    for field, subtensor in bad.items():
        with pytest.raises(TypeError, match="subtensor 0") as error:
            create_representation(dtype, [subtensor, subtensors[1]], adjacent)
        assert field.split()[-1] in str(error.value), field
    values = SizedCarrier(sd.float32, 32)
    negative = SizedCarrier(sd.int8, -4)
    with pytest.raises(ValueError, match="subtensor 1.*-4"):
        create_representation(dtype, [(sd.float32, values, 0, layout("(4,8):(8,1)")),
                                      (sd.int8, negative, 0, layout("4:1"))], adjacent)
    assert log == []


def test_reject_an_out_of_bounds_placement():
    log = []
    dtype = pair_dtype([RecordingRule(log, "r")])
    subtensors, adjacent = pair_levels()
    codes = subtensors[1][1]
    before = state(codes)
    with pytest.raises(ValueError, match="subtensor 1.*non-negative"):
        create_representation(dtype, [subtensors[0], (sd.int8, codes, -1, layout("4:1"))],
                              adjacent)
    with pytest.raises(ValueError, match="subtensor 1.*carrier has 4.*exceeds the carrier size"):
        create_representation(dtype, [subtensors[0], (sd.int8, codes, 1, layout("4:1"))],
                              adjacent)
    assert log == [] and state(codes) == before


# Requirement: Adjacent layouts map between representation levels


def test_accept_an_adjacent_level_map():
    subtensors, adjacent = pair_levels()
    t = create_representation(pair_dtype(), subtensors, adjacent)
    assert t.adjacent_layouts == (layout("(4,8):(1,0)"),)
    # The maps are kept as given.
    assert adjacent[0] == layout("(4,8):(1,0)")


def test_reject_the_wrong_adjacent_domain():
    log = []
    subtensors, _ = pair_levels()
    codes = subtensors[1][1]
    before = state(codes)
    with pytest.raises(ValueError, match=r"adjacent level 0.*\(4,8\)"):
        create_representation(pair_dtype([RecordingRule(log, "r")]), subtensors,
                              [layout("(8,4):(0,1)")])
    assert log == [] and state(codes) == before


def test_reject_an_adjacent_result_outside_the_target_shape():
    log = []
    subtensors, _ = pair_levels()
    with pytest.raises(ValueError, match=r"adjacent level 0.*\b4\b.*size 4|adjacent level 0.*4"):
        create_representation(pair_dtype([RecordingRule(log, "r")]), subtensors,
                              [layout("(4,8):(2,0)")])
    assert log == []


# Requirement: Dtype-provided rules receive only validated context


def test_invoke_ordered_rules_with_validated_state():
    log = []
    rules = [RecordingRule(log, name) for name in ("first", "second", "third")]
    subtensors, adjacent = pair_levels()
    create_representation(pair_dtype(rules), subtensors, adjacent)
    assert log == ["first", "second", "third"]
    context = rules[0].contexts[0]
    assert all(r.contexts[0] is context for r in rules)
    # A rule that raises stops construction with that same exception object.
    error = LookupError("the second rule refuses")
    log.clear()
    rules = [RecordingRule(log, "first"), RecordingRule(log, "second", error=error),
             RecordingRule(log, "third")]
    codes = subtensors[1][1]
    before = state(codes)
    with pytest.raises(LookupError) as raised:
        create_representation(pair_dtype(rules), subtensors, adjacent)
    assert raised.value is error
    assert log == ["first", "second"] and state(codes) == before
    # A rule that returns something other than None is a TypeError naming it.
    log.clear()
    rules = [RecordingRule(log, "returns_true", result=True), RecordingRule(log, "after")]
    with pytest.raises(TypeError, match="returns_true.*True.*not None"):
        create_representation(pair_dtype(rules), subtensors, adjacent)
    assert log == ["returns_true"]


def test_stop_before_rules_on_universal_failure():
    log = []
    dtype = pair_dtype([RecordingRule(log, "r")])
    subtensors, adjacent = pair_levels()
    values, codes = subtensors
    failures = [
        ([values], []),                                                  # schema count
        ([codes, values], adjacent),                                     # schema order
        ([(values[0], "not a carrier", 0, values[3]), codes], adjacent),  # carrier
        ([values, (sd.int8, codes[1], 0, None)], adjacent),               # placement
        ([values, (sd.int8, SubCarrier(sd.int8, 4), 0, codes[3])], adjacent),  # class
        ([values, (sd.int8, strata.HostCarrier(sd.uint8, 4), 0, codes[3])], adjacent),
        ([values, (sd.int8, codes[1], 3, codes[3])], adjacent),           # bounds
        ([values, codes], [layout("(4,8):(0,1)")]),                      # adjacent reach
        ([values, codes], ["(4,8):(1,0)"]),                              # not a Layout
    ]
    for levels, maps in failures:
        with pytest.raises((TypeError, ValueError)):
            create_representation(dtype, levels, maps)
    assert log == []


def test_observe_the_public_validation_protocol():
    assert strata.RepresentationValidationContext is sd.RepresentationValidationContext
    log = []
    rule = RecordingRule(log, "r")
    subtensors, adjacent = pair_levels()
    dtype = pair_dtype([rule])
    create_representation(dtype, subtensors, adjacent)
    context = rule.contexts[0]
    assert isinstance(context, strata.RepresentationValidationContext)
    assert context.logical_dtype is dtype
    assert context.storage_dtypes == (sd.float32, sd.int8)
    assert context.placement_layouts == (layout("(4,8):(8,1)"), layout("4:1"))
    assert context.adjacent_layouts == (layout("(4,8):(1,0)"),)
    assert context.level_shapes == ((4, 8), 4)
    for field in ("logical_dtype", "storage_dtypes", "placement_layouts",
                  "adjacent_layouts", "level_shapes", "something_new"):
        with pytest.raises(AttributeError):
            setattr(context, field, None)
    with pytest.raises(AttributeError):
        del context.logical_dtype
    assert context.storage_dtypes == (sd.float32, sd.int8)
    with pytest.raises(TypeError):
        strata.RepresentationValidationContext()


# Requirement: Tensor representations own carriers and track all versions


def test_keep_carrier_storage_alive():
    carrier = SubCarrier(sd.float32, 16)
    carrier_ref = weakref.ref(carrier)
    t = strata.Tensor(carrier, 0, layout("16:1"))
    t[3] = 7.0
    view = t.slice(0, 2, 6)
    del carrier
    gc.collect()
    assert carrier_ref() is not None and not t.carrier.released()
    assert view[1] == 7.0
    # Several Tensors and views share the carrier; none owns it exclusively.
    other = strata.Tensor(t.carrier, 4, layout("4:1"))
    del t
    gc.collect()
    assert view[1] == 7.0 and other[0] == 0.0 and not other.carrier.released()
    assert view.carrier is other.carrier
    del view, other
    gc.collect()
    assert carrier_ref() is None  # The last Tensor held the last reference.
    host = strata.HostCarrier(sd.int8, 4)
    views = [strata.Tensor(host, 0, layout("4:1")).unsqueeze(0) for _ in range(3)]
    del views
    assert not host.released()


def test_snapshot_unique_carrier_versions_in_level_order():
    a = strata.HostCarrier(sd.float32, 32)
    b = strata.HostCarrier(sd.int8, 8)
    repeat = sd.CompoundDType("a_b_a", (sd.float32, sd.int8, sd.float32))
    t = create_representation(
        repeat,
        [(sd.float32, a, 0, layout("(4,8):(8,1)")), (sd.int8, b, 0, layout("(4,2):(2,1)")),
         (sd.float32, a, 30, layout("2:1"))],
        [layout("(4,8):(1,0)"), layout("(4,2):(0,1)")])
    strata.Tensor(a, 0, layout("32:1")).fill(1.0)
    strata.Tensor(a, 0, layout("32:1")).fill(2.0)
    strata.Tensor(b, 0, layout("8:1")).fill(1)
    snapshot = t.mutation_snapshot()
    assert [(c, v) for c, v in snapshot] == [(a, 2), (b, 1)]
    assert snapshot[0][0] is a and snapshot[1][0] is b
    assert a.version() == 2  # Taking it changed nothing.


# Requirement: Public multi-subtensor behavior remains narrowly bounded


def test_public_construction_remains_conventional():
    carrier = strata.HostCarrier(sd.float32, 8)
    t = strata.Tensor(carrier=carrier, offset=0, layout=layout("8:1"))
    assert t.num_subtensors == 1 and t.adjacent_layouts == ()
    with pytest.raises(TypeError):
        strata.Tensor(carrier, 0, layout("8:1"), layout("8:1"))
    with pytest.raises(TypeError):
        strata.Tensor(pair_dtype(), [], [])
    # The compound dtypes cannot be given through the public constructor.
    with pytest.raises(ValueError, match="compound"):
        strata.Tensor(strata.Carrier(sd.mxfp8_e4m3, 32), 0, layout("32:1"))


def mxfp8_tensor():
    values = np.linspace(-4, 4, 4 * 64, dtype=np.float32).reshape(4, 64)
    return strata.quantize(strata.from_dlpack(values), sd.mxfp8_e4m3, blocked_dim=1)


def test_permit_a_supported_pure_layout_view():
    t = mxfp8_tensor()
    views = [
        t.permute(1, 0),
        t.slice(1, 32, 64),
        t.reshape(2, 2, 64),
        t.as_strided(layout("(2,64):(64,1)"), 128),
        t.unsqueeze(0).broadcast_to(3, 4, 64),
        t.broadcast_in_dim((2, 4, 64), (1, 2)),
        t.unsqueeze(1).squeeze(1),
        t.unsqueeze(2),
    ]
    for view in views:
        assert view.num_subtensors == 2 and view.dtype() is sd.mxfp8_e4m3
        assert [s[1] for s in view.subtensors] == [s[1] for s in t.subtensors]
    # Outside the view's domain: a slice that cuts a block.
    with pytest.raises(ValueError):
        t.slice(1, 16, 48)


def test_reject_an_unsupported_multi_subtensor_operation_before_effects():
    t = mxfp8_tensor()
    carriers = [s[1] for s in t.subtensors]
    before = [state(c) for c in carriers]
    created = strata._strata._host_carriers_created()
    plain = strata.zeros((4, 64), sd.float32)
    operations = {
        "GetItem": lambda: t[0, 0],
        "SetItem": lambda: t.__setitem__((0, 0), 1.0),
        "Fill": lambda: t.fill(0.0),
        "CopyFrom": lambda: t.copy_from(plain),
        "CopyFrom source": lambda: plain.copy_from(t),
        "Add": lambda: t + plain,
        "Neg": lambda: -t,
        "Sum": lambda: t.sum(),
        "Contiguous": lambda: t.contiguous(),
        "Clone": lambda: t.clone(),
        "Cast": lambda: t.cast(sd.float32),
        "ToDLPack": lambda: t.__dlpack__(),
        "numpy": lambda: np.from_dlpack(t),
        "Quantize": lambda: strata.quantize(t, "mxfp8_e4m3", 1),
    }
    created = strata._strata._host_carriers_created()
    for name, operation in operations.items():
        with pytest.raises(strata.OneSubtensorRequiredError, match="one-subtensor") as error:
            operation()
        assert isinstance(error.value, ValueError), name
    assert strata._strata._host_carriers_created() == created
    assert [state(c) for c in carriers] == before


if __name__ == "__main__":
    support.run(__file__)
