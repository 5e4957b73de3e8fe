"""The dtype namespace: the descriptor classes, every registered dtype by its
name (strata.dtype.float32, strata.dtype.nvfp4_ts, ...), by_name, user
compound dtypes with Python rules, and the validation protocol."""

from ._strata import dtype as _impl

DType = _impl.DType
SimpleDType = _impl.SimpleDType
CompoundDType = _impl.CompoundDType
DTypeCategory = _impl.DTypeCategory
RepresentationValidationContext = _impl.RepresentationValidationContext
Rule = _impl.Rule


def by_name(name):
    """The registered dtype of that name (KeyError if none); dtypes pickle
    through it."""
    return _impl.by_name(name)

names = _impl.names
block_scaled = _impl.block_scaled

# The built-ins by their registered names.
for _name in _impl.names():
    globals()[_name] = _impl.by_name(_name)
del _name
