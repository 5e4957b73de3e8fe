"""Rank shards of a whole checkpoint on PyTorch's distributed engine
(checkpoints.md section 3).

    load_shard(path, rules, rank=None, world_size=None) -> Shard

`rules` is a list of (regex, dim) pairs (or the text of a rules file): the
first regex that matches a tensor's whole name (RE2) splits it along dim
into world_size parts; tensors no rule matches are replicated. Every tensor
is judged before a byte is read: a split that is not exact raises
ValueError naming the tensor, its granule and the padding that would make
it exact, on every rank, before any rank maps a page. The rank maps only the
pages that hold its parts; each returned Tensor is a view over them (a
block-scaled one exports level by level through `t.levels` and DLPack).
"""

from . import _strata


class Shard(dict):
    """name -> strata.Tensor: this rank's part of every tensor (the whole of
    a replicated one). `mapped_bytes`: what this rank mapped, pages included;
    `whole_bytes`: the bytes of every level of every tensor; `plan`: one dict
    per tensor (name, kind, dim, granule, pad, ranges, error)."""

    def __init__(self, tensors, mapped_bytes, whole_bytes, plan, rank, world_size):
        super().__init__(tensors)
        self.mapped_bytes = mapped_bytes
        self.whole_bytes = whole_bytes
        self.plan = plan
        self.rank = rank
        self.world_size = world_size


def _engine():
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch is a test dependency
        return None
    return dist if dist.is_available() and dist.is_initialized() else None


def plan_shards(path, rules, parts):
    """The plan alone: one dict per tensor (name, kind "split", "replicated"
    or "refused", dim, granule, pad, ranges, error: the ValueError of a
    refused one)."""
    return _strata._plan_shards(path, rules, int(parts))


def load_shard(path, rules, rank=None, world_size=None):
    """This rank's part of every tensor of the checkpoint at `path` (a
    directory, an index, a safetensors or GGUF file, a split set). rank and
    world_size default to torch.distributed's; given with an initialized
    torch.distributed, they must agree with it."""
    dist = _engine()
    if rank is None or world_size is None:
        if dist is None:
            raise ValueError(
                "load_shard: rank and world_size are needed: torch.distributed "
                "is not initialized (init_process_group) and they were not given")
        if rank is None:
            rank = dist.get_rank()
        if world_size is None:
            world_size = dist.get_world_size()
    if dist is not None and (rank != dist.get_rank() or
                             world_size != dist.get_world_size()):
        raise ValueError(
            "load_shard: rank %d of %d differs from torch.distributed's rank %d "
            "of %d" % (rank, world_size, dist.get_rank(), dist.get_world_size()))
    if not isinstance(world_size, int) or world_size < 1:
        raise ValueError("load_shard: world_size must be a positive int, not %r"
                         % (world_size,))
    if not isinstance(rank, int) or not 0 <= rank < world_size:
        raise ValueError("load_shard: rank %r is outside [0, %d)" % (rank, world_size))
    tensors, mapped, whole, plan = _strata._load_shard(path, rules, rank, world_size)
    return Shard(tensors, mapped, whole, plan, rank, world_size)


__all__ = ["Shard", "load_shard", "plan_shards"]
