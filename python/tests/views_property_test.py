"""Views from Python against PyTorch's, over the same memory: random chains
of the eight views on random strided Tensors, each result compared with
torch's (shape and the elements reached; the base holds distinct values, so
equal values are the same elements)."""

import random

import numpy as np
import pytest
import torch

import strata
import support

CASES = 400


def values_of(view):
    """The elements a view reaches, row-major, through a compact copy."""
    return np.from_dlpack(view.contiguous()).reshape(-1)


def hierarchical(s):
    shape = s.layout.shape
    return not isinstance(shape, int) and any(not isinstance(m, int) for m in shape)


def random_view_step(rng, s, t):
    """One random view applied to both; returns the pair, or None where the
    view is refused (then torch must refuse it too, where it has the view)."""
    rank = t.dim()
    kind = rng.choice(["permute", "slice", "reshape", "unsqueeze", "squeeze",
                       "broadcast", "as_strided", "index"])
    if kind == "permute" and rank > 0:
        perm = list(range(rank))
        rng.shuffle(perm)
        perm = [p - rank if rng.random() < 0.3 else p for p in perm]
        return s.permute(perm), t.permute(perm)
    if kind == "slice" and rank > 0:
        dim = rng.randrange(rank)
        n = t.shape[dim]
        start = rng.randint(0, n)
        stop = rng.randint(start, n)
        step = rng.randint(1, 3)
        try:
            view = s.slice(dim, start, stop, step)
        except ValueError:
            # A hierarchical dim (a reshape that merged modes whose strides
            # do not chain) holds no layout for some slices; torch's reshape
            # copied there.
            assert not isinstance(s.layout.shape, int) and \
                not isinstance(s.layout.shape[dim], int)
            return None
        return view, t[(slice(None),) * dim + (slice(start, stop, step),)]
    if kind == "reshape":
        size = t.numel()
        shape = []
        rest = size
        while rest > 1 and len(shape) < 3:
            divisors = [d for d in range(1, rest + 1) if rest % d == 0]
            d = rng.choice(divisors)
            shape.append(d)
            rest //= d
        shape.append(rest)
        rng.shuffle(shape)
        try:
            view = s.reshape(shape)
        except ValueError:
            # Strata admits every reshape some layout expresses: a superset
            # of torch's view().
            with pytest.raises(RuntimeError):
                t.view(shape)
            return None
        return view, t.reshape(shape)
    if kind == "unsqueeze":
        dim = rng.randint(-rank - 1, rank)
        return s.unsqueeze(dim), t.unsqueeze(dim)
    if kind == "squeeze":
        ones = [d for d in range(rank) if t.shape[d] == 1]
        if ones and rng.random() < 0.7:
            d = rng.choice(ones)
            return s.squeeze(d), t.squeeze(d)
        return s.squeeze(), t.squeeze()
    if kind == "broadcast" and rank < 4:
        shape = [n if n != 1 or rng.random() < 0.5 else rng.randint(1, 3) for n in t.shape]
        shape = [rng.randint(1, 3)] * rng.randint(0, 1) + shape
        return s.broadcast_to(shape), t.expand(shape)
    if kind == "as_strided":
        # Within the base's storage: any placement that fits.
        base_size = s.carrier.size()
        rank2 = rng.randint(1, 3)
        shape = [rng.randint(1, 4) for _ in range(rank2)]
        stride = [rng.randint(0, 5) for _ in range(rank2)]
        reach = sum((n - 1) * d for n, d in zip(shape, stride))
        if reach >= base_size:
            return None
        offset = rng.randint(0, base_size - 1 - reach)
        layout = strata.Layout(tuple(shape), tuple(stride))
        return (s.as_strided(layout, offset),
                torch.as_strided(t, shape, stride, offset))
    if kind == "index" and rank > 0:
        key = []
        for n in t.shape:
            r = rng.random()
            if r < 0.3:
                key.append(rng.randrange(-n, n) if n > 0 else slice(None))
            elif r < 0.8:
                a, b = sorted(rng.randint(-n - 1, n + 1) for _ in range(2))
                key.append(slice(a, b, rng.randint(1, 3)))
            else:
                key.append(slice(None))
        if rng.random() < 0.3 or all(isinstance(k, int) for k in key):
            key.insert(rng.randint(0, len(key)), None)
        key = tuple(key)
        try:
            view = s[key]
        except ValueError:
            assert hierarchical(s)  # Only a hierarchical dim refuses a slice.
            return None
        return view, t[key]
    return None


@pytest.mark.parametrize("seed", range(CASES))
def test_random_view_chains_match_torch(seed):
    rng = random.Random(seed)
    rank = rng.randint(0, 4)
    shape = [rng.randint(1, 5) for _ in range(rank)]
    size = int(np.prod(shape)) if shape else 1
    base = torch.arange(size + 7, dtype=torch.float32)
    t = torch.as_strided(base, shape, torch.empty(shape).stride(), 3) if rank else base[3]
    s = strata.from_dlpack(base).as_strided(
        strata.Layout(tuple(shape), tuple(torch.empty(shape).stride()))
        if rank else strata.Layout((), ()), 3)
    assert s.carrier.data_ptr() == base.data_ptr()
    for _ in range(rng.randint(1, 5)):
        step = random_view_step(rng, s, t)
        if step is None:
            continue
        s, t = step
        assert s.shape == tuple(t.shape)
        np.testing.assert_array_equal(values_of(s), t.reshape(-1).numpy())
        assert s.carrier.data_ptr() == base.data_ptr()  # Still a view.


def test_view_errors_are_value_errors():
    s = strata.zeros((2, 3), strata.dtype.float32)
    for bad in [lambda: s.permute(0, 0), lambda: s.slice(2, 0, 1),
                lambda: s.slice(0, 1, 0), lambda: s.slice(0, 0, 1, 0),
                lambda: s.reshape(7), lambda: s.squeeze(0), lambda: s.unsqueeze(4),
                lambda: s.broadcast_to(3, 3), lambda: s.broadcast_in_dim((2, 3), (1, 0))]:
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(IndexError):
        s[2, 0]
    with pytest.raises(ValueError, match="positive step"):
        s[::-1]
    with pytest.raises(TypeError):
        s[0.5]
    with pytest.raises(TypeError):
        s.slice(0, 0.0, 1)


def test_reshape_infers_one_extent():
    s = strata.zeros((4, 6), strata.dtype.int32)
    assert s.reshape(-1).shape == (24,)
    assert s.reshape(2, -1, 3).shape == (2, 4, 3)
    with pytest.raises(ValueError):
        s.reshape(-1, -1)


if __name__ == "__main__":
    support.run(__file__)
