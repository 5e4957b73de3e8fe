"""Framework-owned construction: not public API. Strata's own packages (and
tests) build validated multi-subtensor Tensors with it; the public
constructor is strata.Tensor(carrier, offset, layout)."""

from ._strata import _framework as _impl

create_representation = _impl.create_representation
