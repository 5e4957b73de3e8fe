"""strata.dtype: the namespace, identity, categories, user simple, compound
and block-scaled dtypes, and rules written in Python or C++."""

import pytest

import strata
import support
from strata import dtype as sd
from strata._framework import create_representation
from support import RecordingRule, layout, pair_dtype, pair_levels


def test_every_registered_name_is_an_attribute():
    names = sd.names()
    for name in ["float32", "float16", "bfloat16", "int8", "uint8", "bool", "float8_e4m3fn",
                 "float8_e8m0fnu", "float4_e2m1fn", "uint4", "mxfp8_e4m3", "mxfp4", "nvfp4",
                 "nvfp4_ts", "nvfp4_ts_recip", "fp8_e4m3_tensorwise", "fp8_e4m3_rowwise",
                 "fp8_e4m3_block1x128", "fp8_e4m3_block128x128", "q8_0", "q4_0"]:
        assert name in names
        assert getattr(sd, name) is sd.by_name(name)
        assert getattr(sd, name).name == name
    assert repr(sd.float32) == "strata.dtype.float32" and str(sd.nvfp4) == "nvfp4"
    with pytest.raises(KeyError):
        sd.by_name("float31")
    with pytest.raises(TypeError):
        sd.by_name(32)


def test_kinds_and_schemas():
    assert isinstance(sd.float32, sd.SimpleDType) and isinstance(sd.float32, strata.DType)
    assert sd.float32.kind == "simple" and sd.float32.bits == 32 and sd.float32.is_floating
    assert sd.int8.is_integer and sd.int8.is_signed and not sd.uint8.is_signed
    assert sd.mxfp8_e4m3.kind == "compound"
    assert sd.mxfp8_e4m3.simple_types == (sd.float8_e4m3fn, sd.float8_e8m0fnu)
    assert sd.nvfp4_ts.storage_schema == (sd.float4_e2m1fn, sd.float8_e4m3fn, sd.float32)
    assert strata.DType.Any.kind == "category" and strata.DType.Any.storage_schema == ()
    assert strata.DType is sd.DType
    assert sd.float32 in strata.DType.Floating and sd.int8 not in strata.DType.Floating
    assert sd.int8 in strata.DType.Integer and sd.bool not in strata.DType.Integer
    assert sd.mxfp4 in strata.DType.Any
    rules = sd.mxfp8_e4m3.rules
    assert len(rules) == 1 and isinstance(rules[0], sd.Rule)


def test_identity_not_name():
    mine = sd.SimpleDType("float32", 32, exponent_bits=8, mantissa_bits=23)
    assert mine is not sd.float32 and mine.name == "float32"
    assert repr(mine) == "<strata.dtype.SimpleDType 'float32'>"
    c = strata.HostCarrier(mine, 4)
    t = strata.Tensor(c, 0, layout("4:1"))
    assert t.dtype() is mine and c.dtype is mine
    with pytest.raises(TypeError, match="built-in"):
        t + t  # Kernels handle the built-in descriptors only.
    with pytest.raises(ValueError):
        sd.SimpleDType("odd", 3)
    with pytest.raises(ValueError):
        sd.SimpleDType("n", 8, numeric_class="complex")


def test_user_categories():
    wide = sd.DTypeCategory("wide", lambda d: getattr(d, "bits", 0) >= 32)
    assert sd.float32 in wide and sd.int8 not in wide
    broken = sd.DTypeCategory("broken", lambda d: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        broken.contains(sd.float32)
    with pytest.raises(TypeError):
        sd.DTypeCategory("not callable", 3)


def test_compound_dtype_arguments():
    with pytest.raises(TypeError, match="simple_types\\[1\\]"):
        sd.CompoundDType("x", (sd.float32, sd.mxfp4))
    with pytest.raises(TypeError, match="validate"):
        sd.CompoundDType("x", (sd.float32,), rules=(object(),))
    with pytest.raises(ValueError):
        sd.CompoundDType("x", ())
    with pytest.raises(TypeError):
        sd.CompoundDType(3, (sd.float32,))
    log = []
    rule = RecordingRule(log, "r")
    d = sd.CompoundDType("pairs", [sd.float32, sd.int8], rules=[rule])
    assert d.rules == (rule,) and d.simple_types == (sd.float32, sd.int8)


def test_rules_may_be_classes_and_their_names_are_reported():
    class Refuses:
        @staticmethod
        def validate(context):
            return "no"

    subtensors, adjacent = pair_levels()
    with pytest.raises(TypeError, match="Refuses.*'no'"):
        create_representation(pair_dtype([Refuses]), subtensors, adjacent)


def test_a_builtin_rule_reused_in_a_user_dtype():
    mine = sd.CompoundDType("my_mxfp8", sd.mxfp8_e4m3.simple_types, rules=sd.mxfp8_e4m3.rules)
    values = strata.HostCarrier(sd.float8_e4m3fn, 64)
    scales = strata.HostCarrier(sd.float8_e8m0fnu, 2)
    good = create_representation(
        mine, [(sd.float8_e4m3fn, values, 0, layout("(32,2):(1,32)")),
               (sd.float8_e8m0fnu, scales, 0, layout("2:1"))],
        [layout("(32,2):(0,1)")])
    assert good.dtype() is mine
    with pytest.raises(ValueError):
        create_representation(
            mine, [(sd.float8_e4m3fn, values, 0, layout("(32,2):(1,32)")),
                   (sd.float8_e8m0fnu, scales, 0, layout("2:1"))],
            [layout("(16,4):(0,0)")])
    log = []
    rule = RecordingRule(log, "spy")
    spy = sd.CompoundDType("spy_mxfp8", sd.mxfp8_e4m3.simple_types,
                           rules=(rule,) + sd.mxfp8_e4m3.rules)
    create_representation(
        spy, [(sd.float8_e4m3fn, values, 0, layout("(32,2):(1,32)")),
              (sd.float8_e8m0fnu, scales, 0, layout("2:1"))],
        [layout("(32,2):(0,1)")])
    # The built-in rule validates the same context from Python.
    assert sd.mxfp8_e4m3.rules[0].validate(rule.contexts[0]) is None


def test_rules_run_again_on_views_with_the_views_context():
    log = []
    rule = RecordingRule(log, "r")
    subtensors, adjacent = pair_levels()
    t = create_representation(pair_dtype([rule]), subtensors, adjacent)
    view = t.slice(1, 2, 6)
    assert log == ["r", "r"]
    assert rule.contexts[1].placement_layouts[0] == view.layout
    stop = ValueError("no views")
    rule.error = stop
    with pytest.raises(ValueError) as error:
        t.permute(1, 0)
    assert error.value is stop


def test_block_scaled_user_formats():
    fmt = sd.block_scaled("e4m3_blocks_of_64", sd.float8_e4m3fn, (sd.float32,), (64,),
                          chosen_mode=True)
    assert fmt.simple_types == (sd.float8_e4m3fn, sd.float32)
    values = strata.zeros((2, 128), sd.float32)
    q = strata.quantize(values, fmt, blocked_dim=1)
    assert q.dtype() is fmt and q.subtensors[1][3].size == 4
    with pytest.raises(ValueError):
        sd.block_scaled("bad", sd.float8_e4m3fn, (sd.float32,), (-2,))


if __name__ == "__main__":
    support.run(__file__)
