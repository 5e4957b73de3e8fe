"""The CuTe layout algebra over strata.Layout, always admissibility-checked
(the errors of layout/algebra.h)."""

from ._strata import Layout
from ._strata import layout as _impl

coalesce = _impl.coalesce
composition = _impl.composition
complement = _impl.complement
right_inverse = _impl.right_inverse
left_inverse = _impl.left_inverse
logical_divide = _impl.logical_divide
zipped_divide = _impl.zipped_divide
tiled_divide = _impl.tiled_divide
logical_product = _impl.logical_product
blocked_product = _impl.blocked_product
raked_product = _impl.raked_product
make_layout = _impl.make_layout
