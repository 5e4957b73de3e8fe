// Checkpoints as they are published (../shared/design/checkpoints.md section
// 1): a Hugging Face sharded directory (its *.safetensors.index.json, whose
// weight_map is authoritative), a directory holding one model.safetensors,
// and a GGUF split set (NAME-0000i-of-0000N.gguf), read through
// ReadCheckpoint (checkpoint/checkpoint.h), which dispatches here for a
// directory, an index file or a split file's name.
//
// NOTE [ Sharded directories ]
// Opening reads headers only: each shard is read by ReadSafetensors (its
// header parsed and checked, its data buffer mapped, no page touched), and
// the index by the same checked JSON parse as a header (nesting within 128
// levels, no key twice, at most kMaxIndexBytes). A tensor's levels stay
// mapped from their own files. The index's weight_map (tensor name -> file
// name in the directory) is authoritative: a tensor of a shard that it does
// not list is ignored, as Hugging Face does. Convention groups (formats.md
// section 3) are formed here, over the members the index lists wherever they
// are (DeepSeek's `weight_scale_inv` may sit in another shard than its
// `weight`), each read alone by its shard; a group is reported at its first
// listed member, under the file of its weight. MXFP4 pairs are formed within
// a shard by its reader, and across shards here (P.blocks in one, P.scales
// in another, each level mapped from its own file), reported under the file
// of P.blocks. Symbolic links are followed, out of the directory too (the
// Hugging Face cache links each snapshot's files to its blobs/); what a name
// reaches must be a regular safetensors file, as the reader checks.
//
// Errors of the directory (the returned status, a ValueError naming the file
// and the reason; `strata import` exits 2): no index, model.safetensors or
// split set in a directory, or several indexes none of which is
// model.safetensors.index.json; an index that is not a regular file, is over
// kMaxIndexBytes, is not JSON, nests deeper than 128 levels, repeats a key,
// is not an object, has no weight_map object, maps a name to anything but a
// string, names a file that is not a plain name in the directory (a path, "."
// or ".."), or names a file that is missing or is not a safetensors file (the
// reader's message); a split
// set with a file missing, a file whose split.no / split.count do not match
// its name, or whose split.tensors.count differs from the tensors found in
// the set ("N tensors expected but M found", as ggml says).
// Errors of one tensor (its entry's status): a name the index lists in a
// file that does not hold it (ValueError naming both); the file reader's.
#ifndef STRATA_CHECKPOINT_DIRECTORY_H_
#define STRATA_CHECKPOINT_DIRECTORY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "checkpoint/checkpoint.h"

namespace strata {

// The largest index ReadCheckpoint reads: 100 MB, as a safetensors header.
inline constexpr int64_t kMaxIndexBytes = 100'000'000;

// `path` a directory, a *.safetensors.index.json file, or one file of a GGUF
// split set; every tensor's `file` is its name within the directory (of the
// file holding level 0). Errors: as NOTE [ Sharded directories ] says.
absl::StatusOr<Checkpoint> ReadCheckpointDirectory(const std::string& path);

// Whether ReadCheckpoint reads `path` as a directory, an index or a split
// set (rather than as one file).
bool IsCheckpointCollection(const std::string& path);

}  // namespace strata

#endif  // STRATA_CHECKPOINT_DIRECTORY_H_
