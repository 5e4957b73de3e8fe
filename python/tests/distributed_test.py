"""strata.distributed.load_shard on PyTorch's own distributed engine
(checkpoints.md section 3): N = 2 and 4 worker processes on tcp://127.0.0.1
with gloo, each bounded in time, load their shard of a checkpoint directory
holding plain, FP8 128x128 (ragged), NVFP4 and expert tensors; each checks
what it mapped, and all_gathers its parts as uint8; rank 0 checks that every
rank's parts are the whole's, byte for byte. N = 3 gets the refusal with its
padding before any rank maps a page."""

import datetime
import os
import socket
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import strata
import support

RULES = [
    (r".*experts\..*", 0),                  # expert parallel: the experts
    (r".*(q_proj|kv_proj|up_proj)\.weight", 0),  # column parallel
    (r".*(o_proj|down_proj)\.weight", 1),   # row parallel
]
TIMEOUT_S = 120


def bf16(rng, shape):
    x = strata.from_dlpack(rng.standard_normal(shape).astype(np.float32))
    return strata.dequantize(x, "bfloat16")


def make_checkpoint(directory, with_two_granules=False):
    rng = np.random.default_rng(11)
    f32 = lambda shape: strata.from_dlpack(  # noqa: E731
        rng.standard_normal(shape).astype(np.float32))
    tensors = {
        "model.embed.weight": bf16(rng, (512, 256)),
        "model.norm.weight": bf16(rng, (1024,)),
        # FP8 128x128, 576 rows: 4.5 blocks (ragged).
        "layers.0.kv_proj.weight": strata.quantize(f32((576, 1024)),
                                                   "fp8_e4m3_block128x128"),
        "layers.0.q_proj.weight": strata.quantize(f32((1024, 1024)),
                                                  "fp8_e4m3_block128x128"),
        "layers.0.o_proj.weight": bf16(rng, (1024, 1024)),
        # ModelOpt NVFP4 (codes, e4m3 scales per 16, a float32 tensor scale).
        "layers.0.up_proj.weight": strata.quantize(f32((1024, 2048)),
                                                   "nvfp4_ts", -1),
        "layers.0.down_proj.weight": bf16(rng, (512, 1024)),
        # Experts: a leading dim of 8.
        "layers.0.experts.w1": bf16(rng, (8, 256, 512)),
    }
    if with_two_granules:
        tensors["layers.1.q_proj.weight"] = strata.quantize(
            f32((256, 256)), "fp8_e4m3_block128x128")
    strata.write_checkpoint(directory, tensors, max_shard_size="3MB")
    return directory


def stored_bytes(directory):
    """name -> (bytes of its members, number of members), from the shards'
    headers: a tensor T's members are T and T + _scale, _scale_inv,
    _scale_2 (formats.md section 3)."""
    import json
    import struct
    entries = {}
    for f in os.listdir(directory):
        if not f.endswith(".safetensors"):
            continue
        with open(os.path.join(directory, f), "rb") as fh:
            n = struct.unpack("<Q", fh.read(8))[0]
            header = json.loads(fh.read(n))
        for name, info in header.items():
            if name != "__metadata__":
                begin, end = info["data_offsets"]
                entries[name] = end - begin
    out = {}
    for name, nbytes in entries.items():
        for suffix in ("_scale_inv", "_scale_2", "_scale"):
            if name.endswith(suffix) and name[: -len(suffix)] in entries:
                name = name[: -len(suffix)]
                break
        total, count = out.get(name, (0, 0))
        out[name] = (total + nbytes, count + 1)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def file_rss(directory):
    """Rss (bytes) of this process's mappings of files under `directory`."""
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            fields = line.split()
            if not fields:
                continue
            if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:
                inside = len(fields) >= 6 and fields[5].startswith(directory)
            elif fields[0] == "Rss:" and inside:
                total += int(fields[1]) * 1024
    return total


def level_bytes(t):
    """The uint8 views of a Tensor's levels (codes, then scales; a ragged
    128x128 scale grid's distinct bytes)."""
    levels = t.levels if len(t.levels) > 1 else (t,)
    return [level.bytes() for level in levels]


def as_numpy(t):
    return np.from_dlpack(t).reshape(-1).view(np.uint8)


def as_torch(t):
    import torch
    return torch.from_dlpack(t).reshape(-1).view(torch.uint8)


def worker(path, rank, world_size, port):
    """One rank: load its shard, check what it mapped, all_gather its parts."""
    import torch
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
        world_size=world_size, timeout=datetime.timedelta(seconds=TIMEOUT_S))
    try:
        shard = strata.distributed.load_shard(path, RULES)
    except ValueError as e:
        # Every rank refuses, before mapping a page.
        assert file_rss(path) == 0, "a refused plan mapped pages"
        print("REFUSED", e, flush=True)
        dist.destroy_process_group()
        return
    assert shard.rank == rank and shard.world_size == world_size
    page = os.sysconf("SC_PAGE_SIZE")
    # What it mapped: 1/N of each dim-0 (or expert) split tensor plus a page
    # at each edge of each member; all of an inner-dim split or a replicated
    # tensor (its rows reach from the first page to the last).
    stored = stored_bytes(path)
    whole = strata.read_checkpoint(path)
    bound = 0
    for p in shard.plan:
        nbytes, members = stored[p["name"]]
        if p["kind"] == "split" and p["dim"] == 0:
            # This rank's share: its rows of the extent (576 rows of 128-row
            # granules split 384 + 192).
            begin, end = p["ranges"][rank]
            extent = whole[p["name"]].shape[0]
            bound += nbytes * (end - begin) / extent + 2 * page * members
        else:
            bound += nbytes + 2 * page * members
    assert shard.mapped_bytes <= bound, (shard.mapped_bytes, bound)
    # Touch every part (DLPack to torch), then measure what is resident.
    parts = {name: [as_torch(b) for b in level_bytes(t)]
             for name, t in shard.items()}
    touched = sum(int(x.sum()) for xs in parts.values() for x in xs)
    rss = file_rss(path)
    assert rss <= shard.mapped_bytes, (rss, shard.mapped_bytes)
    # all_gather every level of every part (uint8: gloo has no bfloat16 in
    # torch 1.13), padded to the longest rank's.
    ok = True
    for p in shard.plan:
        for k, mine in enumerate(parts[p["name"]]):
            n = torch.tensor([mine.numel()])
            sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(world_size)]
            dist.all_gather(sizes, n)
            longest = int(max(s.item() for s in sizes))
            padded = torch.zeros(longest, dtype=torch.uint8)
            padded[: mine.numel()] = mine
            gathered = [torch.zeros(longest, dtype=torch.uint8)
                        for _ in range(world_size)]
            dist.all_gather(gathered, padded)
            if rank != 0:
                continue
            for r in range(world_size):
                if p["kind"] == "split":
                    begin, end = p["ranges"][r]
                    expected = whole[p["name"]].slice(p["dim"], begin, end, 1)
                else:
                    expected = whole[p["name"]]
                want = as_numpy(level_bytes(expected)[k])
                got = gathered[r][: int(sizes[r].item())].numpy()
                if want.tobytes() != got.tobytes():
                    ok = False
                    print("DIFF", p["name"], "level", k, "rank", r, flush=True)
    dist.barrier()
    dist.destroy_process_group()
    assert ok
    print("RANK", rank, "OK mapped", shard.mapped_bytes, "of",
          shard.whole_bytes, "rss", rss, "touched", touched > 0, flush=True)


def launch(path, world_size):
    """world_size worker processes, each killed past TIMEOUT_S."""
    port = free_port()
    procs = []
    for rank in range(world_size):
        procs.append(subprocess.Popen(
            [sys.executable, __file__, "--worker", path, str(rank),
             str(world_size), str(port)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise AssertionError("a worker ran past %d s" % TIMEOUT_S)
        outputs.append((p.returncode, out))
    return outputs


@pytest.fixture(scope="module")
def checkpoint():
    return make_checkpoint(os.path.join(tempfile.mkdtemp(), "ckpt"))


@pytest.mark.parametrize("world_size", [2, 4])
def test_every_rank_maps_only_its_part_and_the_parts_make_the_whole(
        checkpoint, world_size):
    outputs = launch(checkpoint, world_size)
    for code, out in outputs:
        assert code == 0, out
        assert "OK mapped" in out, out


def test_three_ranks_get_the_refusal_with_its_padding_before_any_page():
    path = make_checkpoint(os.path.join(tempfile.mkdtemp(), "ckpt3"),
                           with_two_granules=True)
    plan = strata.distributed.plan_shards(path, RULES, 3)
    refused = [p for p in plan if p["kind"] == "refused"]
    assert [p["name"] for p in refused] == ["layers.1.q_proj.weight"]
    assert refused[0]["pad"] == 384 and refused[0]["granule"] == 128
    assert "pad=384" in str(refused[0]["error"])
    for code, out in launch(path, 3):
        assert code == 0, out
        assert "REFUSED" in out and "layers.1.q_proj.weight" in out, out


def test_bad_arguments():
    path = make_checkpoint(os.path.join(tempfile.mkdtemp(), "ckpt_args"))
    with pytest.raises(ValueError, match="not initialized"):
        strata.distributed.load_shard(path, RULES)
    with pytest.raises(ValueError, match="outside"):
        strata.distributed.load_shard(path, RULES, rank=2, world_size=2)
    with pytest.raises(ValueError, match="line 1"):
        strata.distributed.load_shard(path, "no_dim_here\n", rank=0,
                                      world_size=2)
    with pytest.raises(ValueError, match="RE2"):
        strata.distributed.load_shard(path, "(unclosed 0\n", rank=0,
                                      world_size=2)
    with pytest.raises(TypeError):
        strata.distributed.load_shard(path, [("x", "0")], rank=0, world_size=2)
    # A dim out of range refuses that tensor.
    plan = strata.distributed.plan_shards(path, [(r"model\.norm\.weight", 3)], 2)
    norm = [p for p in plan if p["name"] == "model.norm.weight"][0]
    assert norm["kind"] == "refused" and "out of range" in str(norm["error"])
    # One rank alone, without torch.distributed: the whole split in two.
    shard = strata.distributed.load_shard(path, RULES, rank=1, world_size=2)
    assert shard["layers.0.experts.w1"].shape == (4, 256, 512)
    assert shard["layers.0.o_proj.weight"].shape == (1024, 512)


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    else:
        support.run(__file__)
