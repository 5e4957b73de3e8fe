#!/usr/bin/python3
"""Independent pure-Python/numpy reference for whole checkpoints (issue 36).

Contract: shared/design/checkpoints.md sections 1-2, formats.md sections 2-4, values.md
section 1. Written from the formats' public definitions, NOT from Strata's C++:

  safetensors   the format's own definition (huggingface/safetensors README): u64 LE header
                length N, N bytes of UTF-8 JSON {"__metadata__": {str: str}, NAME: {"dtype",
                "shape", "data_offsets": [begin, end]}}, then the data buffer, which the
                offsets (relative to its start) index entirely, without holes or overlap.
                As the reference serializer does: "__metadata__" first, the header padded
                with spaces to a multiple of 8 bytes (data 8-aligned), tensors laid out by
                dtype size descending, then name.
  HF shards     huggingface_hub's split_state_dict_into_shards_factory (greedy, in the
                given order: a tensor larger than the limit alone in its own shard, a new
                shard when the next tensor would tip the current one over the limit),
                transformers' file names model-0000i-of-0000N.safetensors and
                model.safetensors.index.json {"metadata": {"total_size"}, "weight_map"}
                (json indent 2, sort_keys, as transformers' save_pretrained writes it).
  GGUF v3       gguf-py's GGUFWriter layout and ggml's block structs, through the sibling
                gguf_reference.py (its build_gguf / read_gguf are reused here).
  GGUF splits   llama.cpp's gguf-split (examples/gguf-split/gguf-split.cpp): files
                PREFIX-%05d-of-%05d.gguf (llama_split_path, split number counted from 1);
                the first file holds all the metadata, every file then gets, appended in
                this order, split.no (UINT16, counted from 0), split.count (UINT16) and
                split.tensors.count (INT32, the tensors of the whole set); the other files
                hold only those three keys (gguf-py's GGUFWriter split path writes the same
                names and types). Readers (llama-model-loader) check the total:
                "corrupted model: %d tensors expected but %d found".
  q8_0 / q4_0   ggml's quantize_row_q8_0_ref / quantize_row_q4_0_ref (float32 arithmetic,
                d stored as float16); dequantization through dequantize_reference.py.
  FP8 -> BF16   DeepSeek-V3 inference/fp8_cast_bf16.py + kernel.py weight_dequant:
                y = float32(fp8) * float32(scale_inv[r // 128, c // 128]) (one float32
                multiplication), stored as bfloat16 (round to nearest even); 128x128 blocks,
                the last ones ragged (576 rows = 4.5 blocks -> 5 scale rows).
                float8_e4m3fn is decoded here from its definition (bias 7, no infinities,
                S.1111.111 is NaN, exponent field 0 subnormal m * 2^-9).

Reused from the siblings (not rewritten): gguf_reference (GGUF writer/reader, metadata
value types, Arr, quantize_mxfp4, float64 dequantizers), dequantize_reference
(bfloat16_bits, dequantize_gguf_blocks, planar_to_gguf_blocks, the block128x128 peer),
formats_reference (the vectorized q8_0 quantizer).

Tensors are passed as dict name -> (dtype, shape, data), where data is bytes-like or a
zero-argument callable returning bytes-like (so a 1 GiB checkpoint never has to be held in
memory at once); dtype is a safetensors dtype string ("F32", "BF16", "F8_E4M3", ...) for
safetensors and a ggml type name ("F32", "Q8_0", "MXFP4", ...) or number for GGUF.

Run:  /usr/bin/python3 tools/peer/checkpoint_reference.py --self-check
      /usr/bin/python3 tools/peer/checkpoint_reference.py --make-deepseek DIR --bytes 1GiB
      /usr/bin/python3 tools/peer/checkpoint_reference.py --convert SRC DST [--to bfloat16]
"""
import argparse
import hashlib
import json
import mmap
import os
import re
import shutil
import struct
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dequantize_reference as dr  # noqa: E402  (siblings, found through the line above)
import formats_reference as fr  # noqa: E402
import gguf_reference as gr  # noqa: E402

F32 = np.float32

# ---------------------------------------------------------------------------------------
# Common helpers.


def _prod(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _data(d):
    """A tensor's data: bytes-like, or a zero-argument callable returning bytes-like."""
    if callable(d):
        d = d()
    if isinstance(d, np.ndarray):
        return np.ascontiguousarray(d).reshape(-1).view(np.uint8)
    return d


def _atomic_write(path, chunks):
    """Write the chunks (bytes-like) to a temporary name beside path, then rename, so a
    reader never sees a partial file (what checkpoints.md section 2 asks of Strata)."""
    tmp = "%s.tmp-%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            for c in chunks:
                f.write(c)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# ---------------------------------------------------------------------------------------
# safetensors.

# Element sizes of the safetensors dtypes (the format's Dtype enum; the sub-byte F4/F6
# types of recent versions are left out: nothing here writes them).
SAFETENSORS_DTYPE_SIZE = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4,
    "I64": 8, "U64": 8, "F64": 8,
}
# The format caps the header at 100 MB (safetensors' MAX_HEADER_SIZE).
MAX_HEADER_SIZE = 100_000_000


class SafetensorsError(Exception):
    pass


def safetensors_nbytes(dtype, shape):
    if dtype not in SAFETENSORS_DTYPE_SIZE:
        raise SafetensorsError("unknown safetensors dtype %r" % (dtype,))
    return _prod(shape) * SAFETENSORS_DTYPE_SIZE[dtype]


def _safetensors_layout(tensors, metadata):
    """-> (header bytes including the 8-byte length, [(name, begin, end)] in data order)."""
    if metadata is not None:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise SafetensorsError("__metadata__ must map strings to strings")
    # dtype size descending then name: the reference serializer's order, which keeps every
    # tensor aligned to its element size within the 8-aligned data section.
    order = sorted(tensors, key=lambda n: (-SAFETENSORS_DTYPE_SIZE[tensors[n][0]], n))
    header = {}
    if metadata is not None:
        header["__metadata__"] = dict(metadata)
    spans, at = [], 0
    for name in order:
        if name == "__metadata__":
            raise SafetensorsError("a tensor cannot be named __metadata__")
        dtype, shape, _ = tensors[name]
        nb = safetensors_nbytes(dtype, shape)
        header[name] = {"dtype": dtype, "shape": [int(d) for d in shape],
                        "data_offsets": [at, at + nb]}
        spans.append((name, at, at + nb))
        at += nb
    h = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h, spans


def write_safetensors(path, tensors, metadata=None):
    """Write one safetensors file. tensors: name -> (dtype, shape, data). Returns the
    header's tensor dict (name -> dtype/shape/data_offsets)."""
    head, spans = _safetensors_layout(tensors, metadata)

    def chunks():
        yield head
        for name, begin, end in spans:
            d = _data(tensors[name][2])
            if len(memoryview(d).cast("B")) != end - begin:
                raise SafetensorsError("%s: %d bytes, want %d (dtype %s shape %s)" % (
                    name, len(memoryview(d).cast("B")), end - begin, tensors[name][0],
                    list(tensors[name][1])))
            yield d

    _atomic_write(path, chunks())
    return {n: {"dtype": tensors[n][0], "shape": [int(d) for d in tensors[n][1]],
                "data_offsets": [b, e]} for n, b, e in spans}


def read_safetensors_header(path):
    """-> dict(tensors: name -> {dtype, shape, data_offsets} in header order, metadata:
    dict or None, data_start, file_size). Checks the format's rules: header length within
    the file (and <= 100 MB), UTF-8 JSON object, known dtypes, offsets matching dtype x
    shape, inside the data, neither overlapping nor leaving holes."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            raise SafetensorsError("%s: shorter than the 8-byte header length" % path)
        (n,) = struct.unpack("<Q", raw)
        if n > MAX_HEADER_SIZE or n > size - 8:
            raise SafetensorsError("%s: header length %d past the end of the file" % (path, n))
        text = f.read(n)
    try:
        header = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise SafetensorsError("%s: header is not UTF-8 JSON: %s" % (path, e))
    if not isinstance(header, dict):
        raise SafetensorsError("%s: header is not a JSON object" % path)
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(v, str) for v in metadata.values())):
        raise SafetensorsError("%s: __metadata__ is not a map of strings" % path)
    data_size = size - 8 - n
    spans = []
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise SafetensorsError("%s: %s: bad tensor entry" % (path, name))
        begin, end = info["data_offsets"]
        nb = safetensors_nbytes(info["dtype"], info["shape"])
        if not 0 <= begin <= end <= data_size:
            raise SafetensorsError("%s: %s: offsets outside the data" % (path, name))
        if end - begin != nb:
            raise SafetensorsError("%s: %s: %d bytes for dtype %s shape %s" % (
                path, name, end - begin, info["dtype"], info["shape"]))
        spans.append((begin, end, name))
    spans.sort()
    at = 0
    for begin, end, name in spans:
        if begin != at:
            raise SafetensorsError("%s: %s: %s at %d (expected %d)" % (
                path, name, "overlap" if begin < at else "hole", begin, at))
        at = end
    if at != data_size:
        raise SafetensorsError("%s: %d bytes after the last tensor" % (path, data_size - at))
    return {"tensors": header, "metadata": metadata, "data_start": 8 + n, "file_size": size}


def read_safetensors(path, lazy=False):
    """-> (tensors: name -> (dtype, tuple shape, data), metadata), in data order.
    lazy=True gives memoryviews over a read-only mapping of the file (nothing read until
    used); otherwise bytes."""
    h = read_safetensors_header(path)
    start = h["data_start"]
    order = sorted(h["tensors"], key=lambda n: h["tensors"][n]["data_offsets"])
    if lazy:
        with open(path, "rb") as f:
            buf = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    else:
        with open(path, "rb") as f:
            buf = f.read()
    out = {}
    for name in order:
        info = h["tensors"][name]
        b, e = info["data_offsets"]
        out[name] = (info["dtype"], tuple(info["shape"]), buf[start + b:start + e])
    return out, h["metadata"]


# ---------------------------------------------------------------------------------------
# Hugging Face sharded directories.

HF_SINGLE = "model.safetensors"
HF_INDEX = "model.safetensors.index.json"
DEFAULT_MAX_SHARD_BYTES = 5 * 10 ** 9  # checkpoints.md: default 5 GB (huggingface_hub's)


def hf_shard_name(i, n):
    """transformers: model.safetensors -> model-%05d-of-%05d.safetensors (i from 0)."""
    return "model-%05d-of-%05d.safetensors" % (i + 1, n)


def plan_hf_shards(sized, max_shard_bytes):
    """huggingface_hub's greedy split: sized = [(name, nbytes)] in order -> [[names]].

    A tensor larger than the limit goes alone into its own shard (appended at once, so
    before the shard being filled); otherwise a new shard starts when adding the tensor
    would make the current one exceed the limit (a shard may be exactly the limit)."""
    shards, cur, cur_size = [], [], 0
    for name, nb in sized:
        if nb > max_shard_bytes:
            shards.append([name])
            continue
        if cur and cur_size + nb > max_shard_bytes:
            shards.append(cur)
            cur, cur_size = [], 0
        cur.append(name)
        cur_size += nb
    if cur:
        shards.append(cur)
    return shards


def write_hf_directory(directory, tensors, max_shard_bytes=DEFAULT_MAX_SHARD_BYTES,
                       metadata=None, assign=None, index_metadata=None):
    """Write tensors (name -> (dtype, shape, data), in the order to shard them) as the
    Hugging Face layout of checkpoints.md section 2.

    metadata: the safetensors __metadata__ of every file (e.g. {"format": "pt"}).
    assign: name -> shard index (from 0) overriding the greedy plan, e.g. to put a
        DeepSeek X.weight_scale_inv in another shard than X.weight; an index past the plan
        adds shards; shards left empty are dropped (the others keep their order).
    index_metadata: extra entries of the index's "metadata" beside total_size.
    Returns dict(files=[file names], weight_map=name -> file, total_size, index=path|None).
    """
    os.makedirs(directory, exist_ok=True)
    sized = [(n, safetensors_nbytes(t[0], t[1])) for n, t in tensors.items()]
    shards = plan_hf_shards(sized, max_shard_bytes)
    if assign:
        for name, i in assign.items():
            if name not in tensors:
                raise KeyError("assign names an unknown tensor %r" % (name,))
            for s in shards:
                if name in s:
                    s.remove(name)
            while len(shards) <= i:
                shards.append([])
            shards[i].append(name)
        shards = [s for s in shards if s]
        order = {n: k for k, n in enumerate(tensors)}
        for s in shards:
            s.sort(key=order.get)
    total = sum(nb for _, nb in sized)
    if len(shards) <= 1:
        write_safetensors(os.path.join(directory, HF_SINGLE), tensors, metadata)
        return {"files": [HF_SINGLE], "weight_map": {n: HF_SINGLE for n in tensors},
                "total_size": total, "index": None}
    weight_map, files = {}, []
    for i, names in enumerate(shards):
        fname = hf_shard_name(i, len(shards))
        write_safetensors(os.path.join(directory, fname), {n: tensors[n] for n in names},
                          metadata)
        files.append(fname)
        for n in names:
            weight_map[n] = fname
    meta = dict(index_metadata or {})
    meta["total_size"] = total
    index = {"metadata": meta, "weight_map": dict(sorted(weight_map.items()))}
    path = os.path.join(directory, HF_INDEX)
    _atomic_write(path, [(json.dumps(index, indent=2, sort_keys=True) + "\n").encode()])
    return {"files": files, "weight_map": index["weight_map"], "total_size": total,
            "index": path}


def _find_index(directory):
    if os.path.exists(os.path.join(directory, HF_INDEX)):
        return os.path.join(directory, HF_INDEX)
    found = sorted(f for f in os.listdir(directory) if f.endswith(".safetensors.index.json"))
    if len(found) > 1:
        raise SafetensorsError("%s: several index files: %s" % (directory, found))
    return os.path.join(directory, found[0]) if found else None


def read_hf_directory(path, lazy=True):
    """Read a checkpoint as checkpoints.md section 1 lists: a directory with an index
    (its weight_map authoritative; tensors a file holds that it does not list ignored), a
    directory with one model.safetensors, the index file itself, or one .safetensors file.

    -> dict(tensors: name -> (dtype, shape, data), file_of: name -> file name,
            metadata: file name -> its __metadata__, index_metadata: dict or None,
            directory). Tensors are ordered by file (sorted names), then data offset."""
    if os.path.isdir(path):
        directory, index = path, _find_index(path)
        if index is None and not os.path.exists(os.path.join(path, HF_SINGLE)):
            raise SafetensorsError("%s: neither an index nor %s" % (path, HF_SINGLE))
    elif path.endswith(".index.json"):
        directory, index = os.path.dirname(path) or ".", path
    else:
        directory, index = os.path.dirname(path) or ".", None
    if index is None:
        single = path if not os.path.isdir(path) else os.path.join(path, HF_SINGLE)
        t, m = read_safetensors(single, lazy)
        f = os.path.basename(single)
        return {"tensors": t, "file_of": {n: f for n in t}, "metadata": {f: m},
                "index_metadata": None, "directory": directory}
    with open(index) as fh:
        idx = json.load(fh)
    weight_map = idx["weight_map"]
    tensors, file_of, metas = {}, {}, {}
    for fname in sorted(set(weight_map.values())):
        fpath = os.path.join(directory, fname)
        if not os.path.isfile(fpath):
            raise SafetensorsError("%s: listed in the index, missing" % fname)
        t, m = read_safetensors(fpath, lazy)
        metas[fname] = m
        for name in t:
            if weight_map.get(name) == fname:
                tensors[name] = t[name]
                file_of[name] = fname
    missing = sorted(n for n in weight_map if n not in tensors)
    if missing:
        raise SafetensorsError("tensors listed in the index, absent from their file: %s"
                               % missing)
    return {"tensors": tensors, "file_of": file_of, "metadata": metas,
            "index_metadata": idx.get("metadata"), "directory": directory}


# ---------------------------------------------------------------------------------------
# GGUF (through gguf_reference) and GGUF split sets.

VT = gr.VT
Arr = gr.Arr
GGUF_TYPES = {name: value for value, name in gr.GT_NAMES.items()}  # "Q8_0" -> 8 ...
GGUFError = gr.GGUFError
GGUF_SPLIT_NO = "split.no"                       # UINT16, from 0
GGUF_SPLIT_COUNT = "split.count"                 # UINT16
GGUF_SPLIT_TENSORS_COUNT = "split.tensors.count"  # INT32, the whole set's tensors
_SPLIT_KEYS = (GGUF_SPLIT_NO, GGUF_SPLIT_COUNT, GGUF_SPLIT_TENSORS_COUNT)
_SPLIT_RE = re.compile(r"^(?P<prefix>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")


def _vtype(v):
    if isinstance(v, str):
        return getattr(VT, v)
    return int(v)


def _gtype(t):
    return GGUF_TYPES[t] if isinstance(t, str) else int(t)


def _norm_value(vtype, value):
    """ARRAY values may be given as Arr or as (elem_type, items); elem types as names."""
    if vtype != VT.ARRAY:
        return value
    if isinstance(value, Arr):
        et, items = value.elem_type, value.items
    else:
        et, items = value
    et = _vtype(et)
    return Arr(et, [_norm_value(et, it) for it in items])


def _norm_metadata(metadata):
    """dict key -> (vtype, value), or [(key, vtype, value)] -> [(key, int vtype, value)]."""
    if metadata is None:
        return []
    items = metadata.items() if isinstance(metadata, dict) else [
        (k, (t, v)) for k, t, v in metadata]
    return [(k, _vtype(t), _norm_value(_vtype(t), v)) for k, (t, v) in items]


def write_gguf(path, tensors, metadata=None, alignment=gr.DEFAULT_ALIGNMENT):
    """GGUF v3: metadata (see _norm_metadata) then tensors (name -> (ggml type, logical
    shape outermost first, data in ggml order)) in insertion order, each at an offset that
    is a multiple of the alignment. An alignment other than 32 is written as
    general.alignment (UINT32) unless the metadata already says it."""
    w = gr.GGUFWriter(version=3)
    for k, t, v in _norm_metadata(metadata):
        w.add(k, t, v)
    if w.alignment != alignment:
        if any(k == "general.alignment" for k, _, _ in w.kvs):
            raise ValueError("general.alignment %d disagrees with alignment=%d"
                             % (w.alignment, alignment))
        w.add("general.alignment", VT.UINT32, alignment)
    for name, (gtype, shape, data) in tensors.items():
        w.add_tensor(name, _gtype(gtype), shape, bytes(_data(data)))
    _atomic_write(path, [w.tobytes()])


def read_gguf(path):
    """-> dict(version, alignment, data_start, metadata: key -> (vtype, value) in file
    order, tensors: name -> (type name, shape, bytes) in file order, offsets: name ->
    offset in the data section). A tensor with a per-tensor error has type None and its
    error as data. File-level errors raise GGUFError."""
    r = gr.read_gguf(path)
    tensors, offsets = {}, {}
    for t in r["tensors"]:
        if t["error"]:
            tensors[t["name"]] = (None, t["shape"], t["error"])
        else:
            tensors[t["name"]] = (gr.GT_NAMES[t["type"]], t["shape"], bytes(t["raw"]))
        offsets[t["name"]] = t["offset"]
    return {"version": r["version"], "alignment": r["alignment"],
            "data_start": r["data_start"], "metadata": {k: (t, v) for k, t, v in r["kv"]},
            "tensors": tensors, "offsets": offsets}


def gguf_split_path(prefix, i, n):
    """llama_split_path: PREFIX-%05d-of-%05d.gguf, i counted from 0 (written from 1)."""
    return "%s-%05d-of-%05d.gguf" % (prefix, i + 1, n)


def write_gguf_split(dir_or_prefix, tensors, metadata, n_splits, assign=None,
                     no_tensor_first_split=False, alignment=gr.DEFAULT_ALIGNMENT):
    """Write a GGUF split set as gguf-split does (keys and file names: module docstring).

    dir_or_prefix: an existing directory (files DIR/model-0000i-of-0000N.gguf) or a path
    prefix. Tensors go in order into n_splits contiguous groups as even as possible (the
    first ones one larger); assign: name -> split index overrides that. With
    no_tensor_first_split the first file holds only metadata (gguf-split's
    --no-tensor-first-split) and n_splits counts it. An alignment other than 32 (gguf-split
    always pads to 32) is written as general.alignment in every file, since only the first
    file carries the user's metadata. Returns the list of paths."""
    prefix = (os.path.join(dir_or_prefix, "model") if os.path.isdir(dir_or_prefix)
              else dir_or_prefix)
    meta = [kv for kv in _norm_metadata(metadata) if kv[0] not in _SPLIT_KEYS]
    has_alignment = any(kv[0] == "general.alignment" for kv in meta)
    names = list(tensors)
    first = 1 if no_tensor_first_split else 0
    n_data = n_splits - first
    if n_data < 1 or n_data > max(len(names), 1):
        raise ValueError("%d tensors cannot fill %d splits" % (len(names), n_splits))
    groups = [[] for _ in range(n_splits)]
    q, r = divmod(len(names), n_data)
    at = 0
    for g in range(n_data):
        k = q + (1 if g < r else 0)
        groups[first + g] = names[at:at + k]
        at += k
    for name, i in (assign or {}).items():
        for g in groups:
            if name in g:
                g.remove(name)
        groups[i].append(name)
    order = {n: k for k, n in enumerate(names)}
    for i, g in enumerate(groups):
        g.sort(key=order.get)
        if not g and not (i == 0 and no_tensor_first_split):
            raise ValueError("split %d has no tensors" % i)
    paths = []
    for i, g in enumerate(groups):
        kvs = list(meta) if i == 0 else []
        if alignment != gr.DEFAULT_ALIGNMENT and not (i == 0 and has_alignment):
            kvs.append(("general.alignment", VT.UINT32, alignment))
        kvs += [(GGUF_SPLIT_NO, VT.UINT16, i), (GGUF_SPLIT_COUNT, VT.UINT16, n_splits),
                (GGUF_SPLIT_TENSORS_COUNT, VT.INT32, len(names))]
        path = gguf_split_path(prefix, i, n_splits)
        write_gguf(path, {n: tensors[n] for n in g}, kvs, alignment)
        paths.append(path)
    return paths


def read_gguf_split(path):
    """Read a GGUF split set from any one of its files or from its directory (checkpoints.md
    section 1); a file whose name is not a split name is read as a set of one.

    Checks, as llama.cpp's loader does: every file present, split.no / split.count agree
    with the names, split.tensors.count (the first file's) equals the tensors found, no
    tensor twice. -> dict(metadata: the first file's, tensors: name -> (type, shape,
    bytes), file_of: name -> file name, files: [paths])."""
    if os.path.isdir(path):
        sets = {}
        for f in sorted(os.listdir(path)):
            m = _SPLIT_RE.match(f)
            if m:
                sets.setdefault((m["prefix"], m["count"]), []).append(f)
        if len(sets) != 1:
            raise GGUFError("%s: %d GGUF split sets" % (path, len(sets)))
        path = os.path.join(path, next(iter(sets.values()))[0])
    m = _SPLIT_RE.match(os.path.basename(path))
    if not m:
        files = [path]
    else:
        n = int(m["count"])
        prefix = os.path.join(os.path.dirname(path), m["prefix"])
        files = [gguf_split_path(prefix, i, n) for i in range(n)]
    tensors, file_of, metadata = {}, {}, None
    expected = None
    for i, f in enumerate(files):
        if not os.path.isfile(f):
            raise GGUFError("%s: missing split file" % f)
        r = read_gguf(f)
        md = r["metadata"]
        if m:
            no, count = md.get(GGUF_SPLIT_NO), md.get(GGUF_SPLIT_COUNT)
            if no is None or count is None or no[1] != i or count[1] != len(files):
                raise GGUFError("%s: split.no/split.count %r/%r disagree with the name"
                                % (f, no and no[1], count and count[1]))
        if i == 0:
            metadata = md
            if m:
                tc = md.get(GGUF_SPLIT_TENSORS_COUNT)
                expected = tc[1] if tc else None
        for name, t in r["tensors"].items():
            if name in tensors:
                raise GGUFError("tensor %s in two split files" % name)
            tensors[name] = t
            file_of[name] = os.path.basename(f)
    if expected is not None and expected != len(tensors):
        raise GGUFError("corrupted model: %d tensors expected but %d found"
                        % (expected, len(tensors)))
    return {"metadata": metadata, "tensors": tensors, "file_of": file_of, "files": files}


# ---------------------------------------------------------------------------------------
# q8_0 / q4_0 (ggml block layout: q8_0 {f16 d; i8 qs[32]}, q4_0 {f16 d; u8 qs[16]}).


def _blocks32(x):
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 0 or x.shape[-1] % 32:
        raise ValueError("the last dim must be a multiple of 32")
    if not np.isfinite(x).all():
        # ggml's scans (MAX macro, strict '<') make NaN order dependent: not a reference.
        raise ValueError("q8_0/q4_0 reference: the input must be finite")
    return x.reshape(-1, 32)


def quantize_q8_0(x):
    """ggml quantize_row_q8_0_ref: d = amax / 127, id = 1/d (0 where d is 0),
    q = roundf(x * id), d stored as float16 -> ggml blocks. The vectorized rule of
    formats_reference (its planar codes and scales) put into ggml's structs."""
    b = _blocks32(x)
    with np.errstate(all="ignore"):
        codes, scales, _ = fr._q8_0(b.reshape(-1))
    return dr.planar_to_gguf_blocks("q8_0", codes, scales, (b.shape[0], 32))


def quantize_q4_0(x):
    """ggml quantize_row_q4_0_ref, vectorized (the siblings loop per element, too slow for
    whole checkpoints): max = the value of largest |x| (the first on ties: ggml replaces
    only on a strictly greater |x|, starting from amax = max = +0.0, so an all-zero block
    keeps max = +0.0 and d = -0.0); d = max / -8, id = 1/d (0 where d is 0),
    q = MIN(15, (int8_t)(x*id + 8.5f)), every step a float32 operation; element j in the
    low nibble of qs[j], j + 16 in its high nibble."""
    b = _blocks32(x)
    nb = b.shape[0]
    a = np.abs(b)
    first = np.argmax(a, axis=1)  # the first index of the largest |x|
    rows = np.arange(nb)
    vmax = np.where(a[rows, first] > 0, b[rows, first], F32(0)).astype(np.float32)
    with np.errstate(all="ignore"):
        d = (vmax / F32(-8)).astype(np.float32)
        inv = np.where(d != 0, F32(1) / np.where(d != 0, d, F32(1)), F32(0)).astype(
            np.float32)
        u = ((b * inv[:, None]).astype(np.float32) + F32(8.5)).astype(np.float32)
    q = np.minimum(15, np.trunc(u.astype(np.float64))).astype(np.int64)  # C cast truncates
    if (q < 0).any():
        raise AssertionError("q4_0 code below 0")
    rec = np.zeros(nb, dtype=[("d", "<f2"), ("qs", "u1", (16,))])
    with np.errstate(over="ignore"):
        rec["d"] = d.astype("<f2")  # RNE, overflow to inf (GGML_FP32_TO_FP16)
    rec["qs"] = (q[:, :16] | (q[:, 16:] << 4)).astype(np.uint8)
    return rec.tobytes()


quantize_mxfp4 = gr.quantize_mxfp4  # ggml quantize_row_mxfp4_ref (gguf_reference)


def dequantize_q8_0(raw, shape, to="float32"):
    """ggml dequantize_row_q8_0: qs[j] * d in float32, then rounded to `to`."""
    return dr.dequantize_gguf_blocks("q8_0", raw, shape, to)


def dequantize_q4_0(raw, shape, to="float32"):
    """ggml dequantize_row_q4_0: ((qs & 15) - 8) * d, ((qs >> 4) - 8) * d for j + 16."""
    return dr.dequantize_gguf_blocks("q4_0", raw, shape, to)


# ---------------------------------------------------------------------------------------
# float8_e4m3fn, bfloat16, DeepSeek-V3's FP8 -> BF16.


def _e4m3fn_table():
    """All 256 float8_e4m3fn codes as float32, built from the bit fields: sign S, exponent
    E (4 bits, bias 7), mantissa M (3 bits). E > 0: (-1)^S 2^(E-7) (1 + M/8), i.e. the
    float32 with exponent field E - 7 + 127 and mantissa M << 20; E = 0: (-1)^S M 2^-9
    (subnormal, exact in float32); E = 15, M = 7 is NaN; no infinities."""
    c = np.arange(256, dtype=np.uint32)
    s, e, m = c >> 7, (c >> 3) & 15, c & 7
    normal = (s << 31) | ((e + 120) << 23) | (m << 20)
    out = normal.view(np.float32).copy()
    sub = e == 0
    out[sub] = np.where(s[sub] == 1, -1.0, 1.0) * np.ldexp(m[sub].astype(np.float32), -9)
    out[(e == 15) & (m == 7)] = np.nan
    return out.astype(np.float32)


E4M3FN_F32 = _e4m3fn_table()
bfloat16_bits = dr.bfloat16_bits  # float32 -> bf16 bits, RNE (torch's round_to_nearest_even)

_PLAIN_TO = {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}


def e4m3fn_to_float32(codes):
    return E4M3FN_F32[np.asarray(codes, dtype=np.uint8)]


def _round_to(y, to):
    if to == "bfloat16":
        return bfloat16_bits(y)
    if to == "float16":
        with np.errstate(all="ignore"):
            return y.astype("<f2")  # IEEE RNE, overflow to inf
    if to == "float32":
        return y.astype("<f4")
    raise TypeError("unsupported target dtype %r (bfloat16, float16, float32)" % (to,))


def deepseek_fp8_dequantize(weight_fp8, shape, scale, to="bfloat16", block=128,
                            rows_per_chunk=1024):
    """y[..., r, c] = round_to(float32(e4m3fn(w[..., r, c])) * scale[..., r//block, c//block])
    with the product one float32 multiplication (DeepSeek's weight_dequant, generalized to
    leading expert modes and to the three plain targets). Ragged edges: the last block of a
    mode is partial. Works through chunks of rows so a large weight never needs more than
    one float32 chunk. Returns the `to` array (bfloat16 as uint16 bits) of `shape`."""
    shape = tuple(int(d) for d in shape)
    if len(shape) < 2:
        raise ValueError("block scaling needs rank >= 2")
    lead, (n, k) = shape[:-2], shape[-2:]
    gn, gk = -(-n // block), -(-k // block)
    w = np.frombuffer(_data(weight_fp8), dtype=np.uint8) if not isinstance(
        weight_fp8, np.ndarray) else np.ascontiguousarray(weight_fp8).reshape(-1).view(np.uint8)
    if w.size != _prod(shape):
        raise ValueError("weight: %d bytes for shape %s" % (w.size, shape))
    s = (np.asarray(scale, dtype=np.float32) if isinstance(scale, np.ndarray)
         else np.frombuffer(_data(scale), dtype="<f4"))
    if s.size != _prod(lead) * gn * gk:
        raise ValueError("scale: %d values for a %s grid" % (s.size, lead + (gn, gk)))
    w = w.reshape((-1, n, k))
    s = s.astype(np.float32).reshape((-1, gn, gk))
    out_dtype = np.uint16 if to == "bfloat16" else ("<f2" if to == "float16" else "<f4")
    out = np.empty(w.shape, dtype=out_dtype)
    step = max(block, rows_per_chunk // block * block)  # whole row blocks per chunk
    for e in range(w.shape[0]):
        col_scale_idx = np.arange(k) // block
        for r0 in range(0, n, step):
            r1 = min(n, r0 + step)
            x = E4M3FN_F32[w[e, r0:r1]]
            sc = s[e][np.arange(r0, r1) // block][:, col_scale_idx]
            with np.errstate(all="ignore"):
                y = (x * sc).astype(np.float32)
            out[e, r0:r1] = _round_to(y, to)
    return out.reshape(shape)


def deepseek_fp8_to_bf16(weight_fp8_bytes, shape, scale_inv_float32):
    """DeepSeek-V3 fp8_cast_bf16.py: bf16(float32(fp8) * float32(scale_inv)), 128x128
    blocks, ragged edges. -> uint16 array (bfloat16 bits) of `shape`."""
    return deepseek_fp8_dequantize(weight_fp8_bytes, shape, scale_inv_float32, "bfloat16")


# ---------------------------------------------------------------------------------------
# The reference conversion of an FP8 directory to a plain dtype (golden for strata convert).

# Member suffixes of conventions this reference does not convert (formats.md section 3):
# meeting one raises NotImplementedError rather than writing a wrong golden.
_UNSUPPORTED_SUFFIXES = (".blocks", "_blocks", ".weight_packed", ".weight_scale_2",
                         ".weight_global_scale")


def _fp8_groups(src):
    """-> (groups: weight name -> (kind, scale name), refused: name -> reason).
    kind: 'block128x128' (P.weight F8_E4M3 + P.weight_scale_inv F32 of the 128x128 grid)
    or 'tensorwise'/'rowwise' (P.weight F8_E4M3 + P.weight_scale F32, shape ()/(1) or
    (...,1)/(...)). A group whose members disagree in dtype or shape is refused."""
    t = src["tensors"]
    groups, refused = {}, {}
    for name in t:
        if name.endswith(_UNSUPPORTED_SUFFIXES):
            raise NotImplementedError("%s: only the FP8 conventions are converted here" % name)
        for suffix in ("_scale_inv", "_scale"):
            p = name[:-len(suffix)] if name.endswith(suffix) else None
            if p is None or p not in t or not p.endswith("weight"):
                continue
            wd, ws, _ = t[p]
            sd, ss, _ = t[name]
            if wd != "F8_E4M3":
                if suffix == "_scale" and wd == "U8":
                    raise NotImplementedError("%s: NVFP4 is not converted here" % p)
                refused[p] = "%s is %s, not F8_E4M3" % (p, wd)
                continue
            if sd != "F32":
                if sd in ("U8", "F8_E8M0"):
                    raise NotImplementedError("%s: MXFP8 is not converted here" % p)
                refused[p] = "%s is %s, not F32" % (name, sd)
                continue
            ws, ss = tuple(ws), tuple(ss)
            if suffix == "_scale_inv":
                grid = ws[:-2] + (-(-ws[-2] // 128), -(-ws[-1] // 128)) if len(ws) >= 2 else None
                if grid is None or ss != grid:
                    refused[p] = "%s shape %s, expected %s" % (name, ss, grid)
                else:
                    groups[p] = ("block128x128", name)
            elif ss in ((), (1,)):
                groups[p] = ("tensorwise", name)
            elif ws and ss in (ws[:-1] + (1,), ws[:-1]):
                groups[p] = ("rowwise", name)
            else:
                refused[p] = "%s shape %s fits neither %s nor %s" % (
                    name, ss, "()/(1)", ws[:-1] + (1,))
    return groups, refused


def convert_directory_reference(src_dir, dst_dir, to="bfloat16",
                                max_shard_bytes=DEFAULT_MAX_SHARD_BYTES, overwrite=False):
    """The numpy golden of `strata convert SRC DST --to T` for T a plain dtype
    (checkpoints.md section 2, values.md section 1), for FP8 checkpoints:

    - P.weight F8_E4M3 + P.weight_scale_inv F32 (DeepSeek / Qwen3-FP8, 128x128, ragged) and
      P.weight + P.weight_scale (per tensor / per channel) become P.weight of dtype T:
      round_T(float32(e4m3fn) * scale), one float32 product, then RNE; the scale tensors
      are dropped.
    - every other tensor is copied byte for byte (a lone F8_E4M3 tensor is plain: copied);
    - a group whose members disagree is refused: neither member written, named in the
      report (strata: exit 1, the rest written);
    - the other files of SRC are copied; config.json loses its quantization_config.
    The output is written by write_hf_directory (tensor order: source file order, then data
    offset), each file's __metadata__ that of SRC's first file.
    -> dict(converted, copied, dropped, refused: name -> reason, files, total_size)."""
    if to not in _PLAIN_TO:
        raise TypeError("unsupported target dtype %r" % (to,))
    if os.path.abspath(src_dir) == os.path.abspath(dst_dir):
        raise ValueError("the destination is the source")
    if os.path.exists(dst_dir) and os.listdir(dst_dir) and not overwrite:
        raise FileExistsError("%s exists (overwrite=True to replace)" % dst_dir)
    src = read_hf_directory(src_dir, lazy=True)
    t = src["tensors"]
    groups, refused = _fp8_groups(src)
    scales = {g[1] for g in groups.values()}
    refused_members = set(refused) | {p + s for p in refused for s in ("_scale_inv", "_scale")}
    out, report = {}, {"converted": [], "copied": [], "dropped": [], "refused": refused}
    for name, (dtype, shape, data) in t.items():
        if name in groups:
            kind, sname = groups[name]
            report["converted"].append(name)
            out[name] = (_PLAIN_TO[to], shape, _lazy_dequant(t, name, kind, sname, to))
        elif name in scales:
            report["dropped"].append(name)
        elif name in refused_members:
            pass  # neither member of a refused group is written
        else:
            report["copied"].append(name)
            out[name] = (dtype, shape, data)
    first_meta = src["metadata"][sorted(src["metadata"])[0]] if src["metadata"] else None
    os.makedirs(dst_dir, exist_ok=True)
    written = write_hf_directory(dst_dir, out, max_shard_bytes, metadata=first_meta)
    for f in sorted(os.listdir(src["directory"])):
        fp = os.path.join(src["directory"], f)
        if (not os.path.isfile(fp) or f.endswith(".safetensors")
                or f.endswith(".safetensors.index.json")):
            continue
        if f == "config.json":
            with open(fp) as fh:
                cfg = json.load(fh)
            cfg.pop("quantization_config", None)
            _atomic_write(os.path.join(dst_dir, f),
                          [(json.dumps(cfg, indent=2) + "\n").encode()])
        else:
            shutil.copyfile(fp, os.path.join(dst_dir, f))
    report["files"] = written["files"]
    report["total_size"] = written["total_size"]
    return report


def _lazy_dequant(t, wname, kind, sname, to):
    def make():
        _, wshape, wdata = t[wname]
        _, sshape, sdata = t[sname]
        scale = np.frombuffer(sdata, dtype="<f4").astype(np.float32)
        if kind == "block128x128":
            y = deepseek_fp8_dequantize(wdata, wshape, scale, to)
        else:
            x = E4M3FN_F32[np.frombuffer(wdata, dtype=np.uint8)].reshape(wshape)
            if kind == "tensorwise":
                sc = scale.reshape(())
            else:
                sc = scale.reshape(tuple(wshape[:-1]) + (1,))
            with np.errstate(all="ignore"):
                y = _round_to((x * sc).astype(np.float32), to)
        return np.ascontiguousarray(y).view(np.uint8).reshape(-1)
    return make


# ---------------------------------------------------------------------------------------
# A deterministic DeepSeek-style FP8 directory.


def _fp8_codes(rng, n):
    """n random e4m3fn codes without the NaN codes 0x7F / 0xFF (a real checkpoint has none):
    0x7F -> 0x7E (448), keeping the sign."""
    c = np.frombuffer(rng.bytes(n), dtype=np.uint8).copy()
    nan = (c & 0x7F) == 0x7F
    c[nan] ^= 1
    return c


def _scale_inv(rng, grid):
    """Positive float32 block scales around DeepSeek's (amax / 448 ~ 2^-12 .. 2^-6): half of
    them with a full random mantissa, half with 5 mantissa bits, so that many products land
    on bfloat16 ties (round-to-nearest-even matters)."""
    n = _prod(grid)
    mant = rng.random(n).astype(np.float32)
    short = rng.random(n) < 0.5
    mant[short] = np.floor(mant[short] * 32) / 32
    e = rng.integers(-12, -6, size=n)
    return np.ldexp((F32(1) + mant).astype(np.float32), e).astype("<f4").reshape(grid)


def _bf16_values(rng, n, mean, std):
    return bfloat16_bits((mean + std * rng.standard_normal(n)).astype(np.float32)).astype("<u2")


def deepseek_like_plan(total_bytes):
    """Dimensions for about total_bytes: hidden H (a multiple of 128, the largest of the
    candidates for which three layers fit), intermediate I = 2H + 64 (ragged: its last
    128-block is half full), vocab V = 2H, and layers L >= 2."""
    def per_layer(h):
        i = 2 * h + 64
        return 2 * h * h + 576 * h + 3 * i * h + (3 * h + 512) * 2 + (
            5 * -(-h // 128) + 2 * -(-h // 128) ** 2 + 3 * -(-i // 128) * -(-h // 128)) * 4

    def fixed(h):
        return 2 * (2 * h) * h * 2 + h * 2
    h = 256
    for cand in (256, 512, 768, 1024, 1536, 2048, 3072, 4096, 7168):
        if fixed(cand) + 3 * per_layer(cand) <= total_bytes:
            h = cand
    layers = max(2, int(round((total_bytes - fixed(h)) / per_layer(h))))
    return {"hidden": h, "intermediate": 2 * h + 64, "vocab": 2 * h, "layers": layers}


def make_deepseek_like_directory(directory, total_bytes, seed=0, n_shards=4):
    """Write a deterministic DeepSeek-V3-style FP8 checkpoint of about total_bytes (at
    least two layers) into directory: BF16 embeddings, norms and lm_head; per layer F8_E4M3
    weights with F32 weight_scale_inv of 128x128 blocks: kv_a_proj_with_mqa (576, H) (576
    rows: 4.5 blocks), q_proj / o_proj (H, H), gate/up (I, H) and down (H, I) with I = 2H+64
    (ragged rows and columns); about n_shards shards (huggingface_hub's greedy plan), with
    layer 0's kv_a_proj_with_mqa and the last layer's down_proj scale_inv moved into
    another shard than their weight; config.json with DeepSeek's quantization_config,
    generation_config.json and tokenizer_config.json. The same (total_bytes, seed) gives
    the same bytes. Tensors are generated when written, one at a time.
    -> dict(plan, files, weight_map, total_size, cross_shard: [scale names])."""
    plan = deepseek_like_plan(total_bytes)
    h, i_, v, nl = plan["hidden"], plan["intermediate"], plan["vocab"], plan["layers"]
    specs = []  # (name, dtype, shape, maker(rng))

    def bf16(name, shape, mean, std):
        specs.append((name, "BF16", shape, lambda rng: _bf16_values(rng, _prod(shape), mean,
                                                                    std)))

    def fp8(name, shape):
        grid = (-(-shape[0] // 128), -(-shape[1] // 128))
        specs.append((name, "F8_E4M3", shape, lambda rng: _fp8_codes(rng, _prod(shape))))
        specs.append((name + "_scale_inv", "F32", grid, lambda rng: _scale_inv(rng, grid)))

    bf16("model.embed_tokens.weight", (v, h), 0.0, 0.02)
    for layer in range(nl):
        p = "model.layers.%d." % layer
        bf16(p + "input_layernorm.weight", (h,), 1.0, 0.05)
        fp8(p + "self_attn.q_proj.weight", (h, h))
        fp8(p + "self_attn.kv_a_proj_with_mqa.weight", (576, h))
        bf16(p + "self_attn.kv_a_layernorm.weight", (512,), 1.0, 0.05)
        fp8(p + "self_attn.o_proj.weight", (h, h))
        bf16(p + "post_attention_layernorm.weight", (h,), 1.0, 0.05)
        fp8(p + "mlp.gate_proj.weight", (i_, h))
        fp8(p + "mlp.up_proj.weight", (i_, h))
        fp8(p + "mlp.down_proj.weight", (h, i_))
    bf16("model.norm.weight", (h,), 1.0, 0.05)
    bf16("lm_head.weight", (v, h), 0.0, 0.02)

    tensors = {}
    for k, (name, dtype, shape, maker) in enumerate(specs):
        def lazy(maker=maker, k=k):
            return maker(np.random.default_rng([seed, k]))
        tensors[name] = (dtype, shape, lazy)
    total = sum(safetensors_nbytes(d, s) for d, s, _ in tensors.values())
    limit = -(-total // n_shards)
    shards = plan_hf_shards([(n, safetensors_nbytes(d, s)) for n, (d, s, _) in
                             tensors.items()], limit)
    shard_of = {n: k for k, s in enumerate(shards) for n in s}
    moved = ["model.layers.0.self_attn.kv_a_proj_with_mqa.weight_scale_inv",
             "model.layers.%d.mlp.down_proj.weight_scale_inv" % (nl - 1)]
    assign = {}
    if len(shards) > 1:
        for s in moved:
            w = s[:-len("_scale_inv")]
            assign[s] = (shard_of[w] + 1) % len(shards)
    os.makedirs(directory, exist_ok=True)
    written = write_hf_directory(directory, tensors, limit, metadata={"format": "pt"},
                                 assign=assign)
    config = {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "deepseek_v3",
        "hidden_size": h,
        "intermediate_size": i_,
        "kv_lora_rank": 512,
        "num_hidden_layers": nl,
        "vocab_size": v,
        "torch_dtype": "bfloat16",
        "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3",
                                "quant_method": "fp8", "weight_block_size": [128, 128]},
    }
    others = {
        "config.json": config,
        "generation_config.json": {"bos_token_id": 0, "eos_token_id": 1},
        "tokenizer_config.json": {"model_max_length": 4096, "seed": seed},
    }
    for f, obj in others.items():
        _atomic_write(os.path.join(directory, f), [(json.dumps(obj, indent=2) + "\n").encode()])
    cross = [s for s in moved if written["weight_map"].get(s) !=
             written["weight_map"].get(s[:-len("_scale_inv")])]
    return {"plan": plan, "files": written["files"], "weight_map": written["weight_map"],
            "total_size": written["total_size"], "cross_shard": cross}


# ---------------------------------------------------------------------------------------
# Self-check.


class _Checks:
    def __init__(self):
        self.n = 0

    def __call__(self, cond, what):
        if not cond:
            raise AssertionError(what)
        self.n += 1

    def raises(self, exc, fn, what, match=None):
        try:
            fn()
        except exc as e:
            self(match is None or match in str(e), "%s: message %r lacks %r" % (what, str(e),
                                                                               match))
            return
        raise AssertionError("%s: no %s" % (what, exc.__name__))


def _same_bits(a, b):
    return dr.same_bits(np.asarray(a), np.asarray(b))


def _check_safetensors(check, tmp):
    rng = np.random.default_rng(1)
    t = {
        "b.f32": ("F32", (2, 3), rng.standard_normal(6).astype("<f4").tobytes()),
        "a.bf16": ("BF16", (5,), rng.integers(0, 2 ** 16, 5, dtype=np.uint16).tobytes()),
        "empty": ("U8", (0,), b""),
        "scalar": ("I64", (), struct.pack("<q", -7)),
        "w": ("F8_E4M3", (3, 4), bytes(range(12))),
        "d": ("F64", (1,), struct.pack("<d", 0.1)),
        "lazy": ("I16", (2, 2), lambda: np.arange(4, dtype="<i2")),
    }
    path = os.path.join(tmp, "x.safetensors")
    write_safetensors(path, t, {"format": "pt"})
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    check(n % 8 == 0 and raw[8:8 + n].rstrip(b" ").endswith(b"}"),
          "header padded with spaces to 8 bytes")
    check(raw[8:8 + n].startswith(b'{"__metadata__":{"format":"pt"}'), "__metadata__ first")
    h = read_safetensors_header(path)
    check(h["metadata"] == {"format": "pt"} and h["data_start"] == 8 + n, "header fields")
    order = sorted(h["tensors"], key=lambda k: h["tensors"][k]["data_offsets"])
    want = sorted(t, key=lambda k: (-SAFETENSORS_DTYPE_SIZE[t[k][0]], k))
    check(order == want, "data order: dtype size descending, then name: %s" % order)
    at = 0
    for k in order:
        b, e = h["tensors"][k]["data_offsets"]
        check(b == at and (8 + n + b) % SAFETENSORS_DTYPE_SIZE[t[k][0]] == 0,
              "%s contiguous and aligned" % k)
        at = e
    check(8 + n + at == len(raw), "the data buffer is entirely indexed")
    for lazy in (False, True):
        back, meta = read_safetensors(path, lazy)
        check(meta == {"format": "pt"} and list(back) == order, "read order")
        for k, (dt, shape, d) in t.items():
            check(back[k][0] == dt and back[k][1] == tuple(shape)
                  and bytes(back[k][2]) == bytes(memoryview(_data(d)).cast("B")),
                  "round trip of %s (lazy=%s)" % (k, lazy))
    bad = os.path.join(tmp, "bad.safetensors")
    for what, blob in (
            ("header past the end", struct.pack("<Q", 10 ** 6) + raw[8:]),
            ("hole", raw + b"\0" * 8),
            ("short data", raw[:-1]),
            ("not JSON", struct.pack("<Q", 8) + b"{notjson"),
    ):
        open(bad, "wb").write(blob)
        check.raises(SafetensorsError, lambda: read_safetensors_header(bad), what)
    check.raises(SafetensorsError, lambda: write_safetensors(bad, {"x": ("F32", (2,), b"1")}),
                 "wrong byte count on write")


def _check_hf(check, tmp):
    sized = [("a", 40), ("b", 40), ("c", 30), ("d", 120), ("e", 50), ("f", 60)]
    check(plan_hf_shards(sized, 100) == [["a", "b"], ["d"], ["c", "e"], ["f"]],
          "huggingface_hub's greedy plan: %s" % plan_hf_shards(sized, 100))
    check(plan_hf_shards([("a", 50), ("b", 50)], 100) == [["a", "b"]], "a shard may be full")
    rng = np.random.default_rng(2)

    def u8(n):
        return rng.integers(0, 256, n, dtype=np.uint8).tobytes()
    t = {"z.weight": ("U8", (40,), u8(40)), "y.weight": ("U8", (40,), u8(40)),
         "x.weight": ("F8_E4M3", (2, 15), u8(30)), "x.weight_scale_inv": ("F32", (1, 1), u8(4)),
         "w.big": ("U8", (120,), u8(120)), "v.bias": ("BF16", (25,), u8(50))}
    total = sum(safetensors_nbytes(d, s) for d, s, _ in t.values())
    one = os.path.join(tmp, "one")
    r = write_hf_directory(one, t, total, {"format": "pt"})
    check(r["files"] == [HF_SINGLE] and sorted(os.listdir(one)) == [HF_SINGLE],
          "everything fits: model.safetensors alone, no index")
    many = os.path.join(tmp, "many")
    r = write_hf_directory(many, t, 100, {"format": "pt"})
    idx = json.load(open(os.path.join(many, HF_INDEX)))
    n = len(r["files"])
    # [z, y] (80), then x (30) tips it over: [x, x_scale, v] (84), w.big (120) alone, before
    check(n == 3 and r["files"] == [hf_shard_name(i, n) for i in range(n)]
          and r["files"][0] == "model-00001-of-00003.safetensors", "shard names %s" % r["files"])
    check(r["weight_map"]["w.big"] == hf_shard_name(1, 3) and r["weight_map"]["v.bias"]
          == hf_shard_name(2, 3), "an oversized tensor's shard comes before the open one")
    check(idx["metadata"]["total_size"] == total, "metadata.total_size is the tensor bytes")
    check(list(idx["weight_map"]) == sorted(t), "weight_map sorted by name")
    for f in r["files"]:
        h = read_safetensors_header(os.path.join(many, f))
        check(sorted(h["tensors"]) == sorted(k for k, v in idx["weight_map"].items() if v == f),
              "%s holds exactly its weight_map entries" % f)
        size = h["file_size"] - h["data_start"]
        check(size <= 100 or len(h["tensors"]) == 1, "%s within the limit" % f)
    check(idx["weight_map"]["x.weight"] == idx["weight_map"]["x.weight_scale_inv"],
          "greedy keeps x's members together here")
    back = read_hf_directory(many)
    check(sorted(back["tensors"]) == sorted(t) and all(
        bytes(back["tensors"][k][2]) == t[k][2] for k in t), "sharded round trip")
    check(read_hf_directory(os.path.join(many, HF_INDEX))["file_of"] == idx["weight_map"],
          "the index file itself reads the same")
    moved = os.path.join(tmp, "moved")
    r = write_hf_directory(moved, t, 100, assign={"x.weight_scale_inv": 0})
    wm = r["weight_map"]
    check(wm["x.weight_scale_inv"] != wm["x.weight"], "assign moves a scale to another shard")
    back = read_hf_directory(moved)
    check(back["file_of"] == wm and bytes(back["tensors"]["x.weight_scale_inv"][2])
          == t["x.weight_scale_inv"][2], "moved scale read back")
    # the index is authoritative: unlisted tensors ignored, missing ones an error
    idx = json.load(open(os.path.join(moved, HF_INDEX)))
    del idx["weight_map"]["v.bias"]
    json.dump(idx, open(os.path.join(moved, HF_INDEX), "w"))
    check("v.bias" not in read_hf_directory(moved)["tensors"], "unlisted tensor ignored")
    idx["weight_map"]["ghost"] = wm["x.weight"]
    json.dump(idx, open(os.path.join(moved, HF_INDEX), "w"))
    check.raises(SafetensorsError, lambda: read_hf_directory(moved), "listed tensor absent",
                 "ghost")
    idx["weight_map"] = {"y.weight": "model-00009-of-00009.safetensors"}
    json.dump(idx, open(os.path.join(moved, HF_INDEX), "w"))
    check.raises(SafetensorsError, lambda: read_hf_directory(moved), "listed file missing",
                 "model-00009-of-00009.safetensors")


def _gguf_metadata():
    return {
        "general.architecture": ("STRING", "llama"),
        "t.u8": ("UINT8", 255), "t.i8": ("INT8", -128), "t.u16": ("UINT16", 65535),
        "t.i16": ("INT16", -32768), "t.u32": ("UINT32", 2 ** 32 - 1),
        "t.i32": ("INT32", -2 ** 31), "t.f32": ("FLOAT32", 0.5), "t.bool": ("BOOL", True),
        "t.str": ("STRING", "caf\u00e9 \"q\"\n"), "t.u64": ("UINT64", 2 ** 64 - 1),
        "t.i64": ("INT64", -2 ** 63), "t.f64": ("FLOAT64", 0.1),
        "t.arr_str": ("ARRAY", ("STRING", ["a", "", "\u00fc"])),
        "t.arr_f32": ("ARRAY", ("FLOAT32", [1.5, -2.0])),
        "t.arr_empty": ("ARRAY", ("INT32", [])),
        "t.arr_nest": ("ARRAY", ("ARRAY", [("UINT8", [1, 2]), ("UINT8", [])])),
    }


def _gguf_tensors(rng):
    x = (rng.standard_normal((3, 64)) * 3).astype(np.float32)
    return {
        "t.f32": ("F32", (2, 3), rng.standard_normal(6).astype("<f4").tobytes()),
        "t.f16": ("F16", (5,), rng.standard_normal(5).astype("<f2").tobytes()),
        "t.bf16": ("BF16", (4, 2), bfloat16_bits(rng.standard_normal(8).astype(
            np.float32)).astype("<u2").tobytes()),
        "t.q8_0": ("Q8_0", (3, 64), quantize_q8_0(x)),
        "t.q4_0": ("Q4_0", (3, 64), quantize_q4_0(x)),
        "t.mxfp4": ("MXFP4", (3, 64), quantize_mxfp4(x)),
        "t.i32": (GGUF_TYPES["I32"], (3,), np.array([1, -2, 3], "<i4").tobytes()),
    }


def _check_gguf(check, tmp):
    rng = np.random.default_rng(3)
    meta = _gguf_metadata()
    t = _gguf_tensors(rng)
    for alignment in (32, 64):
        path = os.path.join(tmp, "a%d.gguf" % alignment)
        write_gguf(path, t, meta, alignment)
        raw = open(path, "rb").read()
        magic, version, nt, nkv = struct.unpack("<4sIQQ", raw[:24])
        extra = 1 if alignment != 32 else 0
        check((magic, version, nt, nkv) == (b"GGUF", 3, len(t), len(meta) + extra),
              "GGUF v3 header fields")
        r = read_gguf(path)
        check(r["alignment"] == alignment and r["data_start"] % alignment == 0
              and len(raw) % alignment == 0, "alignment %d" % alignment)
        want = {k: (_vtype(v[0]), _norm_value(_vtype(v[0]), v[1])) for k, v in meta.items()}
        got = {k: v for k, v in r["metadata"].items() if k != "general.alignment"}
        check(list(got) == list(want) and got == want, "metadata round trip")
        if extra:
            check(r["metadata"]["general.alignment"] == (VT.UINT32, alignment),
                  "general.alignment written as UINT32")
        check(list(r["tensors"]) == list(t), "tensor order")
        for k, (gt, shape, data) in t.items():
            name = gt if isinstance(gt, str) else gr.GT_NAMES[gt]
            check(r["tensors"][k] == (name, tuple(shape), data), "tensor %s round trip" % k)
            check(r["offsets"][k] % alignment == 0, "offset of %s aligned" % k)
        # the values through the other peer's dequantizers
        x8 = gr.dequantize(gr.GT.Q8_0, r["tensors"]["t.q8_0"][2], (3, 64))
        check(np.array_equal(x8, dequantize_q8_0(t["t.q8_0"][2], (3, 64)).astype(np.float64)),
              "q8_0 values through both dequantizers")


def _check_gguf_split(check, tmp):
    rng = np.random.default_rng(4)
    meta = _gguf_metadata()
    t = _gguf_tensors(rng)  # 7 tensors
    d = os.path.join(tmp, "split")
    os.makedirs(d)
    paths = write_gguf_split(d, t, meta, 3)
    check([os.path.basename(p) for p in paths] == ["model-%05d-of-00003.gguf" % i
                                                   for i in (1, 2, 3)], "split names")
    rs = [read_gguf(p) for p in paths]
    check([len(r["tensors"]) for r in rs] == [3, 2, 2], "contiguous, as even as possible")
    for i, r in enumerate(rs):
        keys = list(r["metadata"])
        check(keys[-3:] == list(_SPLIT_KEYS), "split keys last, in gguf-split's order")
        check(r["metadata"][GGUF_SPLIT_NO] == (VT.UINT16, i)
              and r["metadata"][GGUF_SPLIT_COUNT] == (VT.UINT16, 3)
              and r["metadata"][GGUF_SPLIT_TENSORS_COUNT] == (VT.INT32, len(t)),
              "split keys of file %d: u16 no from 0, u16 count, i32 tensors" % i)
        check(len(keys) == (len(meta) + 3 if i == 0 else 3),
              "metadata in the first file only")
    for where in (paths[1], d):
        s = read_gguf_split(where)
        check(list(s["tensors"]) == list(t) and all(s["tensors"][k][2] == t[k][2] for k in t),
              "split set round trip from %s" % os.path.basename(where))
        check(s["metadata"] == rs[0]["metadata"], "the set's metadata is the first file's")
    check(read_gguf_split(paths[0])["file_of"]["t.i32"] == "model-00003-of-00003.gguf",
          "file of each tensor")
    os.unlink(paths[1])
    check.raises(GGUFError, lambda: read_gguf_split(paths[0]), "missing split", "missing")
    # a lying split.tensors.count: ggml's message
    d2 = os.path.join(tmp, "lying")
    os.makedirs(d2)
    p2 = write_gguf_split(d2, t, meta, 2)
    r = read_gguf(p2[0])
    md = [(k, v[0], v[1]) for k, v in r["metadata"].items()]
    md = [(k, vt, 99 if k == GGUF_SPLIT_TENSORS_COUNT else v) for k, vt, v in md]
    write_gguf(p2[0], {k: (v[0], v[1], v[2]) for k, v in r["tensors"].items()}, md)
    check.raises(GGUFError, lambda: read_gguf_split(p2[1]), "count disagrees",
                 "99 tensors expected but %d found" % len(t))
    d3 = os.path.join(tmp, "nofirst")
    os.makedirs(d3)
    p3 = write_gguf_split(d3, t, meta, 3, no_tensor_first_split=True,
                          assign={"t.f32": 2}, alignment=64)
    r3 = [read_gguf(p) for p in p3]
    check(len(r3[0]["tensors"]) == 0 and "t.f32" in r3[2]["tensors"]
          and all(r["alignment"] == 64 for r in r3), "metadata-only first split, assign")
    check(sorted(read_gguf_split(d3)["tensors"]) == sorted(t), "that set reads back")


def _check_ggml_quants(check):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((40, 64)) * np.logspace(-6, 4, 40)[:, None]).astype(np.float32)
    x[0] = 0
    x[1, :32] = -0.0
    x[2, :4] = [1, -3, 3, 0.75]             # q4_0: first of the |x| ties wins
    x[3, :32] = 0
    x[3, :6] = [127, 0.5, -0.5, 2.5, -2.5, 1.49]  # q8_0: halves away from zero
    x[4, :32] = np.ldexp(rng.standard_normal(32), -120).astype(np.float32)  # d underflows f16
    x[5, :32] = 1e7                          # d overflows float16
    x[6, :32] = rng.integers(-8, 8, 32)      # exact q4_0 grid
    q8, q4 = quantize_q8_0(x), quantize_q4_0(x)
    with np.errstate(over="ignore"):
        check(q8 == gr.quantize_q8_0(x), "q8_0 bytes equal gguf_reference's loop")
        check(q4 == gr.quantize_q4_0(x), "q4_0 bytes equal gguf_reference's loop")
    v, sc, _ = fr.quantize("q4_0", x, x.shape)
    check(q4 == dr.planar_to_gguf_blocks("q4_0", v, sc, x.shape),
          "q4_0 bytes equal formats_reference's")
    for blk in (0, 2):  # row 0 is zeros, row 1 starts with a block of -0.0
        check(q4[18 * blk:18 * blk + 18] == b"\x00\x80" + b"\x88" * 16,
              "q4_0 all-zero block: d = -0.0, codes 8")
    for name, raw, gt, deq in (("q8_0", q8, gr.GT.Q8_0, dequantize_q8_0),
                               ("q4_0", q4, gr.GT.Q4_0, dequantize_q4_0)):
        with np.errstate(all="ignore"):
            a = deq(raw, x.shape)
            b = gr.dequantize(gt, raw, x.shape).astype(np.float32)
        check(_same_bits(a, b), "%s dequantize agrees with gguf_reference" % name)
        check(_same_bits(deq(raw, x.shape, "bfloat16"), bfloat16_bits(a)),
              "%s to bfloat16 is the float32 rounded" % name)
    check.raises(ValueError, lambda: quantize_q8_0(np.full(32, np.nan, np.float32)),
                 "non-finite input refused")


def _check_fp8_bf16(check):
    check(_same_bits(E4M3FN_F32, dr.E4M3_F32), "e4m3fn table equals formats_reference's")
    for code, want in ((0x7E, 448.0), (0x01, 2.0 ** -9), (0x08, 2.0 ** -6), (0x38, 1.0),
                       (0xB8, -1.0), (0x07, 7 * 2.0 ** -9), (0xFE, -448.0)):
        check(float(E4M3FN_F32[code]) == want, "e4m3fn %#04x = %r" % (code, want))
    check(np.signbit(E4M3FN_F32[0x80]) and E4M3FN_F32[0x80] == 0, "0x80 is -0.0")
    check(int(np.isnan(E4M3FN_F32).sum()) == 2 and np.isnan(E4M3FN_F32[[0x7F, 0xFF]]).all(),
          "only 0x7F/0xFF are NaN")
    # bfloat16 ties by hand: 1 + 2^-8 -> 1.0 (even), 1 + 3*2^-8 -> 1 + 2^-6 (even)
    check(list(bfloat16_bits(np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8], np.float32)))
          == [0x3F80, 0x3F82], "bf16 ties to even")
    rng = np.random.default_rng(6)
    bits = rng.integers(0, 2 ** 32, 200000, dtype=np.uint64).astype(np.uint32)
    special = np.array([0, 0x80000000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0x7F7F7FFF,
                        0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0x00008000,
                        0x00018000, 0x3F808000, 0x3F818000, 0x00000001, 0x807FFFFF],
                       dtype=np.uint32)
    ties = (rng.integers(0, 2 ** 16, 4096, dtype=np.uint64).astype(np.uint32) << 16) | 0x8000
    x = np.concatenate([bits, special, ties]).view(np.float32)
    mine = bfloat16_bits(x)
    try:
        import torch
    except ImportError:
        print("torch not importable: the torch cross-checks are skipped")
        return
    theirs = torch.from_numpy(x.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(
        np.uint16)
    check(_same_bits(mine, theirs), "bfloat16 rounding equals torch's on %d values" % x.size)
    # DeepSeek weight_dequant on ragged shapes, against torch and the two numpy peers
    for shape in ((576, 300), (2, 200, 130), (128, 128), (1, 1)):
        n, k = shape[-2:]
        lead = shape[:-2]
        grid = lead + (-(-n // 128), -(-k // 128))
        codes = rng.integers(0, 256, _prod(shape), dtype=np.uint8)
        scale = _scale_inv(rng, grid)
        mine = deepseek_fp8_to_bf16(codes.tobytes(), shape, scale)
        chunked = deepseek_fp8_dequantize(codes, shape, scale.tobytes(), rows_per_chunk=128)
        check(np.array_equal(mine, chunked), "%s: chunking changes nothing" % (shape,))
        xs = torch.from_numpy(E4M3FN_F32[codes].reshape(shape))
        ss = torch.from_numpy(scale.copy()).repeat_interleave(128, -2).repeat_interleave(
            128, -1)[..., :n, :k]
        ref = (xs * ss).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
        check(_same_bits(mine, ref), "%s: DeepSeek FP8->BF16 equals torch's" % (shape,))
        if not lead:
            check(_same_bits(mine, dr.peer_deepseek_weight_dequant(codes, scale, n, k)),
                  "%s: equals dequantize_reference's weight_dequant peer" % (shape,))
        with np.errstate(all="ignore"):
            other = dr.dequantize("fp8_e4m3_block128x128", codes, scale.tobytes(), shape,
                                  to="bfloat16")
        check(_same_bits(mine, other), "%s: equals dequantize_reference.dequantize" % (shape,))


def _tree_digest(d):
    h = hashlib.sha256()
    for f in sorted(os.listdir(d)):
        h.update(f.encode() + b"\0" + open(os.path.join(d, f), "rb").read())
    return h.hexdigest()


def _check_generator_and_convert(check, tmp):
    a, b, c = (os.path.join(tmp, n) for n in ("ds_a", "ds_b", "ds_c"))
    r = make_deepseek_like_directory(a, 3 << 20, seed=1)
    make_deepseek_like_directory(b, 3 << 20, seed=1)
    make_deepseek_like_directory(c, 3 << 20, seed=2)
    check(_tree_digest(a) == _tree_digest(b), "the generator is deterministic")
    check(_tree_digest(a) != _tree_digest(c), "the seed matters")
    check(len(r["files"]) >= 3 and os.path.exists(os.path.join(a, HF_INDEX)),
          "several shards and an index: %s" % r["files"])
    check(abs(r["total_size"] - (3 << 20)) < (3 << 20) // 2, "about the asked size")
    wm = json.load(open(os.path.join(a, HF_INDEX)))["weight_map"]
    check(len(r["cross_shard"]) == 2 and all(
        wm[s] != wm[s[:-len("_scale_inv")]] for s in r["cross_shard"]),
        "scale_inv in another shard than its weight")
    src = read_hf_directory(a)
    ts = src["tensors"]
    h = r["plan"]["hidden"]
    kv = ts["model.layers.0.self_attn.kv_a_proj_with_mqa.weight"]
    check(kv[0] == "F8_E4M3" and kv[1] == (576, h) and
          ts["model.layers.0.self_attn.kv_a_proj_with_mqa.weight_scale_inv"][1]
          == (5, -(-h // 128)), "576-row ragged weight with 5 scale rows")
    check(ts["model.layers.0.mlp.down_proj.weight"][1][1] % 128 == 64, "ragged columns too")
    codes = np.concatenate([np.frombuffer(v[2], np.uint8) for v in ts.values()
                            if v[0] == "F8_E4M3"])
    check(not ((codes & 0x7F) == 0x7F).any(), "no NaN codes")
    cfg = json.load(open(os.path.join(a, "config.json")))
    check(cfg["quantization_config"]["weight_block_size"] == [128, 128], "quantization_config")

    out = os.path.join(tmp, "ds_bf16")
    rep = convert_directory_reference(a, out, "bfloat16", max_shard_bytes=1 << 20)
    dst = read_hf_directory(out)
    td = dst["tensors"]
    n_fp8 = sum(1 for v in ts.values() if v[0] == "F8_E4M3")
    check(len(rep["converted"]) == n_fp8 and len(rep["dropped"]) == n_fp8
          and not rep["refused"], "every FP8 weight converted, every scale dropped")
    check(not any(k.endswith("_scale_inv") for k in td) and
          sorted(td) == sorted(k for k in ts if not k.endswith("_scale_inv")),
          "the converted directory's names")
    for k, (dt, shape, data) in ts.items():
        if k.endswith("_scale_inv"):
            continue
        if dt == "F8_E4M3":
            want = deepseek_fp8_to_bf16(data, shape, np.frombuffer(ts[k + "_scale_inv"][2],
                                                                   "<f4"))
            check(td[k][0] == "BF16" and td[k][1] == shape and
                  np.array_equal(np.frombuffer(td[k][2], "<u2").reshape(shape), want),
                  "%s dequantized" % k)
        else:
            check(td[k] == (dt, shape, data) or (td[k][:2] == (dt, shape) and
                                                 bytes(td[k][2]) == bytes(data)),
                  "%s copied" % k)
    idx = json.load(open(os.path.join(out, HF_INDEX)))
    check(idx["metadata"]["total_size"] == sum(len(v[2]) for v in td.values()),
          "converted total_size")
    cfg2 = json.load(open(os.path.join(out, "config.json")))
    cfg.pop("quantization_config")
    check(cfg2 == cfg, "config.json without quantization_config")
    for f in ("generation_config.json", "tokenizer_config.json"):
        check(open(os.path.join(a, f), "rb").read() == open(os.path.join(out, f), "rb").read(),
              "%s copied" % f)
    check.raises(FileExistsError, lambda: convert_directory_reference(a, out), "dst exists")
    # float32 target, per-tensor and per-channel scales, and a refused group
    rng = np.random.default_rng(8)
    w = _fp8_codes(rng, 6 * 40)
    t = {"t.weight": ("F8_E4M3", (6, 40), w.tobytes()),
         "t.weight_scale": ("F32", (), np.array(0.375, "<f4").tobytes()),
         "r.weight": ("F8_E4M3", (6, 40), w.tobytes()),
         "r.weight_scale": ("F32", (6, 1), _scale_inv(rng, (6, 1)).tobytes()),
         "bad.weight": ("F8_E4M3", (6, 40), w.tobytes()),
         "bad.weight_scale_inv": ("F32", (2, 1), np.ones(2, "<f4").tobytes()),
         "lone.weight": ("F8_E4M3", (6, 40), w.tobytes()),
         "norm.weight": ("BF16", (3,), b"\x80\x3f" * 3)}
    s2, o2 = os.path.join(tmp, "fp8misc"), os.path.join(tmp, "fp8misc_f32")
    write_hf_directory(s2, t)
    rep = convert_directory_reference(s2, o2, "float32")
    got = read_hf_directory(o2)["tensors"]
    x = E4M3FN_F32[w].reshape(6, 40)
    check(sorted(got) == ["lone.weight", "norm.weight", "r.weight", "t.weight"]
          and list(rep["refused"]) == ["bad.weight"], "refused group not written, rest written")
    check(np.frombuffer(got["t.weight"][2], "<f4").tobytes() == (x * F32(0.375)).astype(
        "<f4").tobytes(), "per-tensor scale")
    rs = np.frombuffer(t["r.weight_scale"][2], "<f4").reshape(6, 1)
    check(bytes(got["r.weight"][2]) == (x * rs).astype("<f4").tobytes(), "per-channel scale")
    check(got["lone.weight"][0] == "F8_E4M3" and bytes(got["lone.weight"][2]) == w.tobytes(),
          "a lone F8_E4M3 tensor is plain: copied")


def _self_check():
    t0 = time.time()
    check = _Checks()
    with tempfile.TemporaryDirectory(prefix="checkpoint_reference.") as tmp:
        for part in (_check_safetensors, _check_hf, _check_gguf, _check_gguf_split):
            sub = os.path.join(tmp, part.__name__)
            os.makedirs(sub)
            part(check, sub)
        _check_ggml_quants(check)
        _check_fp8_bf16(check)
        sub = os.path.join(tmp, "convert")
        os.makedirs(sub)
        _check_generator_and_convert(check, sub)
    print("checkpoint_reference self-check: %d checks passed in %.1fs" % (check.n,
                                                                          time.time() - t0))
    return 0


def _parse_size(s):
    """Bytes, or KB MB GB (powers of 1000) / KiB MiB GiB (powers of 1024)."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]i?B)?\s*", s)
    if not m:
        raise argparse.ArgumentTypeError("bad size %r" % s)
    unit = {None: 1, "KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9,
            "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30}[m.group(2)]
    return int(m.group(1)) * unit


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--self-check", action="store_true")
    ap.add_argument("--make-deepseek", metavar="DIR")
    ap.add_argument("--bytes", type=_parse_size, default=_parse_size("64MiB"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--convert", nargs=2, metavar=("SRC", "DST"))
    ap.add_argument("--to", default="bfloat16")
    ap.add_argument("--max-shard-size", type=_parse_size, default=DEFAULT_MAX_SHARD_BYTES)
    args = ap.parse_args(argv)
    if args.self_check:
        return _self_check()
    if args.make_deepseek:
        t0 = time.time()
        r = make_deepseek_like_directory(args.make_deepseek, args.bytes, args.seed)
        print("%s: %d files, %d bytes of tensors, plan %s, %.1fs" % (
            args.make_deepseek, len(r["files"]), r["total_size"], r["plan"],
            time.time() - t0))
        return 0
    if args.convert:
        t0 = time.time()
        r = convert_directory_reference(args.convert[0], args.convert[1], args.to,
                                        args.max_shard_size)
        print("%d converted, %d copied, %d dropped, %d refused, %d files, %.1fs" % (
            len(r["converted"]), len(r["copied"]), len(r["dropped"]), len(r["refused"]),
            len(r["files"]), time.time() - t0))
        for name, why in sorted(r["refused"].items()):
            print("refused %s: %s" % (name, why), file=sys.stderr)
        return 1 if r["refused"] else 0
    ap.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
