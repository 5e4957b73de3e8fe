"""strata.Layout and strata.layout: construction, notation, the algebra's
laws checked pointwise in Python on random layouts, and the errors."""

import itertools
import pickle
import random

import numpy as np
import pytest

import strata
import support
from strata import layout as algebra

L = strata.Layout.parse


def leaves(t):
    return [t] if isinstance(t, int) else [x for e in t for x in leaves(e)]


def evaluate(layout, i):
    """L(i) for a linear coordinate, from the definition (colexicographic);
    beyond size(L) the last leaf takes the quotient (composition's
    extension of A)."""
    index = 0
    pairs = list(zip(leaves(layout.shape), leaves(layout.stride)))
    for k, (extent, stride) in enumerate(pairs):
        digit = i if k == len(pairs) - 1 else i % extent
        index += digit * stride
        i //= extent
    return index


def random_layout(rng, rank=None):
    rank = rank or rng.randint(1, 3)
    shape = tuple(rng.choice([1, 2, 3, 4]) for _ in range(rank))
    stride = tuple(rng.choice([0, 1, 2, 4, 8, 12]) for _ in range(rank))
    return strata.Layout(shape, stride)


def test_construction_and_properties():
    l = strata.Layout((4, (2, 3)), (1, (4, 8)))
    assert l.shape == (4, (2, 3)) and l.stride == (1, (4, 8))
    assert l.size == 24 and l.cosize == 3 + 4 + 16 + 1 and l.rank == 2 and l.depth == 2
    assert str(l) == "(4,(2,3)):(1,(4,8))" and L(str(l)) == l
    assert l.mode(1) == strata.Layout((2, 3), (4, 8))
    assert l((1, (1, 2))) == 1 + 4 + 16 and l(5) == evaluate(l, 5)
    assert hash(l) == hash(L("(4,(2,3)):(1,(4,8))")) and l != L("4:1")
    assert pickle.loads(pickle.dumps(l)) == l
    assert strata.Layout(np.int64(4), np.int32(2)) == L("4:2")
    assert strata.Layout.row_major((2, 3)) == L("(2,3):(3,1)")
    assert strata.Layout.column_major((2, 3)) == L("(2,3):(1,2)")
    assert strata.Layout((), ()).size == 1 and str(strata.Layout((), ())) == "():()"


def test_errors():
    with pytest.raises(TypeError, match="Layout shape"):
        strata.Layout(4.0, 1)
    with pytest.raises(TypeError, match="Layout stride"):
        strata.Layout((4, 2), (1, True))
    with pytest.raises(TypeError):
        strata.Layout("4", 1)
    with pytest.raises(ValueError):
        strata.Layout((4, 2), 1)  # Not congruent.
    with pytest.raises(ValueError):
        strata.Layout(-1, 1)
    with pytest.raises(ValueError):
        strata.Layout((2**40, 2**40), (1, 2**40))  # Overflows int64.
    with pytest.raises(ValueError, match="int64"):
        strata.Layout(2**64, 1)
    with pytest.raises(TypeError):
        L("(4,8:(1,4)")
    with pytest.raises(TypeError):
        L(4)
    with pytest.raises(ValueError):
        L("4:1")(4)
    with pytest.raises(ValueError):
        L("4:1").mode(1)
    deep = 0
    for _ in range(1100):
        deep = (deep,)
    with pytest.raises(ValueError, match="nesting"):
        strata.Layout(deep, deep)
    with pytest.raises(TypeError):
        algebra.coalesce("4:1")


@pytest.mark.parametrize("seed", range(200))
def test_algebra_laws_hold_pointwise(seed):
    rng = random.Random(seed)
    a = random_layout(rng)
    # coalesce keeps the function.
    c = algebra.coalesce(a)
    assert c.size == a.size and c.depth <= 1
    assert all(evaluate(c, i) == evaluate(a, i) for i in range(a.size))
    # composition: R(i) == A(B(i)) wherever it is admissible.
    b = random_layout(rng)
    try:
        r = algebra.composition(a, b)
    except ValueError:
        pass
    else:
        assert r.size == b.size
        # Beyond size(A), A extends along the last mode of its coalesced
        # form (which equals A on A's domain, checked above).
        assert all(evaluate(r, i) == evaluate(c, evaluate(b, i)) for i in range(b.size))
    # right_inverse: L(R(i)) == i.
    r = algebra.right_inverse(a)
    assert all(evaluate(a, evaluate(r, i)) == i for i in range(r.size))
    # left_inverse: R(L(i)) == i where L is injective.
    images = [evaluate(a, i) for i in range(a.size)]
    if len(set(images)) == len(images):
        try:
            li = algebra.left_inverse(a)
        except ValueError:
            pass
        else:
            assert all(evaluate(li, images[i]) == i for i in range(a.size))
    # complement: disjoint from L's image but at 0.
    try:
        comp = algebra.complement(a, a.cosize * 2)
    except ValueError:
        pass
    else:
        image = set(images)
        assert all(evaluate(comp, j) not in image or evaluate(comp, j) == 0
                   for j in range(1, comp.size))


def test_divides_and_products():
    a = L("(8,6):(1,8)")
    d = algebra.logical_divide(a, L("4:1"))
    assert d.size == a.size
    z = algebra.zipped_divide(a, (L("2:1"), L("3:1")))
    t = algebra.tiled_divide(a, (L("2:1"), L("3:1")))
    assert z.size == t.size == 48
    p = algebra.logical_product(L("(2,2):(1,2)"), L("3:1"))
    assert p.size == 12 and p.mode(0) == L("(2,2):(1,2)")
    assert algebra.blocked_product(L("(2,2):(1,2)"), L("(2,3):(1,2)")).size == 24
    assert algebra.raked_product(L("(2,2):(1,2)"), L("(2,3):(1,2)")).size == 24
    assert algebra.make_layout(L("4:1"), L("2:4")) == L("(4,2):(1,4)")
    with pytest.raises(ValueError):
        algebra.composition(L("(4,3):(3,1)"), L("6:1"))


if __name__ == "__main__":
    support.run(__file__)
