"""Strata: one logical Tensor over typed, carrier-backed storage.

A thin layer over Strata's C++ library (contract: shared/design/python.md).
The spec's Python words are literal here: TypeError and ValueError are
Python's exceptions, carriers and rules may be Python classes, and the
validation protocol is importable from this package and from strata.dtype.
"""

from . import _strata
from . import dtype
from . import layout
from . import _framework
from . import distributed
from ._strata import (
    Carrier,
    ExternalCarrier,
    HostCarrier,
    Layout,
    MappedCarrier,
    OneSubtensorRequiredError,
    RecordedCarrier,
    RepresentationValidationContext,
    Tensor,
    dump,
    from_dlpack,
    plan_shards,
    dequantize,
    quantize,
    requantize,
    replay,
    shard_granule,
    write_safetensors,
    zeros,
)

DType = dtype.DType


class Checkpoint(dict):
    """The tensors of a checkpoint file, name -> Tensor (or the exception
    that refused it), in file order; `metadata` holds the file's metadata."""

    def __init__(self, tensors, metadata, format):
        super().__init__(tensors)
        self.metadata = metadata
        self.format = format


def read_safetensors(path):
    """The tensors of a safetensors file over read-only mapped carriers (no
    copy), each block-scaled convention as one Tensor. A refused tensor maps
    to its exception; an error of the file itself raises."""
    tensors, metadata = _strata._read_safetensors(path)
    return Checkpoint(tensors, metadata, "safetensors")


def read_gguf(path):
    """The tensors of a GGUF file over read-only mapped carriers (no copy);
    Q8_0, Q4_0 and MXFP4 blocks as block-scaled Tensors. A refused tensor
    maps to its exception; an error of the file itself raises."""
    tensors, metadata = _strata._read_gguf(path)
    return Checkpoint(tensors, metadata, "gguf")


def read_checkpoint(path):
    """read_gguf or read_safetensors, chosen by the file's first bytes; or a
    whole checkpoint as published (checkpoints.md section 1): a sharded
    directory or its *.safetensors.index.json (metadata: the index's), a
    directory holding model.safetensors, a GGUF split set or its directory."""
    format, tensors, metadata = _strata._read_checkpoint(path)
    return Checkpoint(tensors, metadata, format)


def convert(src, dst, to, *, scale_layout=None, only=None,
            skip="embed|norm|lm_head", max_shard_size="5GB", overwrite=False):
    """Converts a whole checkpoint, as `strata convert` (checkpoints.md
    section 2): every block-scaled tensor dequantized when `to` is bfloat16,
    float16 or float32; every float tensor of rank >= 2 named "*.weight"
    that `only` finds and `skip` does not (RE2 searches) quantized when `to`
    is a block-scaled format; the rest copied. `dst` ending in ".gguf" is
    written as GGUF, else as a Hugging Face directory (shards of at most
    `max_shard_size`: bytes, or "5GB", "500MiB"). Nothing under dst is
    incomplete, whatever happens (Ctrl-C included). Returns a dict:
    converted, copied (lists of names), refused (name -> the exception),
    files (written), other_files (copied beside them), input_bytes,
    output_bytes. Raises ValueError for bad arguments, a src that is not a
    checkpoint, a dst that exists (without overwrite=True) or cannot be
    written."""
    to = to.name if hasattr(to, "name") else to
    return _strata._convert(src, dst, str(to), scale_layout, only or "",
                            skip or "", max_shard_size, bool(overwrite))


def write_checkpoint(dir, tensors, *, max_shard_size="5GB", overwrite=False):
    """Writes Tensors (a dict name -> Tensor, in its order) as a Hugging Face
    directory (checkpoints.md section 2): model.safetensors, or shards of at
    most max_shard_size plus model.safetensors.index.json; block-scaled
    Tensors in their format's naming convention. Returns the file names."""
    return _strata._write_checkpoint(dir, tensors, max_shard_size,
                                     bool(overwrite))


def _numpy(self):
    """The values as a numpy array over the same memory (numpy.from_dlpack:
    read-only). A block-scaled Tensor is refused, as its DLPack export is:
    OneSubtensorRequiredError naming dequantize and levels."""
    import numpy

    return numpy.from_dlpack(self)


def _dequantize(self, dtype=None):
    """The values (values.md section 1) as a new float32 (default), bfloat16
    or float16 Tensor: strata.dequantize(self, dtype)."""
    return dequantize(self, dtype)


def _levels(self):
    """The levels as one-level Tensors (codes, then scales), each a view of
    the same carrier, offset and placement: exportable by DLPack."""
    return _strata._levels(self)


def _bytes(self):
    """The same memory as a one-level uint8 Tensor (the last extent times the
    value's bytes, halved for 4-bit values), for frameworks without this
    dtype (torch 1.13 has no float8/float4): a view, nothing copied.
    ValueError where the last mode is not unit stride or a 4-bit row starts
    or ends mid-byte."""
    return _strata._level_bytes(self)


Tensor.dequantize = _dequantize
Tensor.levels = property(_levels)
Tensor.bytes = _bytes


Tensor.numpy = _numpy


def _iter(self):
    """The sub-Tensors (or values) along dim 0, as numpy iterates."""
    if self.ndim == 0:
        raise TypeError("iteration over a rank-0 Tensor")
    return (self[i] for i in range(len(self)))


Tensor.__iter__ = _iter

# The classes print as what users import.
for _cls in (Carrier, ExternalCarrier, HostCarrier, Layout, MappedCarrier,
             RecordedCarrier, Tensor):
    _cls.__module__ = "strata"
for _cls in (dtype.DType, dtype.SimpleDType, dtype.CompoundDType,
             dtype.DTypeCategory, dtype.Rule,
             dtype.RepresentationValidationContext):
    _cls.__module__ = "strata.dtype"
del _cls

__all__ = [
    "Carrier",
    "Checkpoint",
    "DType",
    "ExternalCarrier",
    "HostCarrier",
    "Layout",
    "MappedCarrier",
    "OneSubtensorRequiredError",
    "RecordedCarrier",
    "RepresentationValidationContext",
    "Tensor",
    "dtype",
    "dump",
    "from_dlpack",
    "layout",
    "plan_shards",
    "dequantize",
    "quantize",
    "requantize",
    "read_checkpoint",
    "convert",
    "write_checkpoint",
    "read_gguf",
    "read_safetensors",
    "replay",
    "shard_granule",
    "write_safetensors",
    "zeros",
]
