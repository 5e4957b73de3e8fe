// GGUF checkpoints (llama.cpp, ollama) in: ../shared/design/formats.md
// section 4. Tensors over read-only mapped carriers of the file (no copy);
// quantized blocks, which GGUF stores as arrays of structs with the scale
// inline, as strided placements over carriers of one region.
//
// A GGUF file (v2, v3; little-endian) is
//   "GGUF", u32 version, u64 tensor count, u64 metadata count,
//   metadata: (string key, u32 value type, value) ...,
//   tensor infos: (string name, u32 n_dims, u64 dims[n_dims] innermost
//     first, u32 ggml type, u64 offset from the data section) ...,
//   padding to general.alignment (default 32), the data section.
// A string is a u64 length and its bytes; an array a u32 element type, a
// u64 count and its elements (arrays of strings and of arrays allowed).
//
// NOTE [ GGUF blocks as strided placements ]
// A Tensor's logical shape is its dims reversed (outermost first, as numpy
// and gguf-py show it), so the innermost dim ne0 is the last mode. Plain
// types are compact row-major Tensors. A quantized row of ne0 values is
// ne0/32 blocks, one after another; each block type is one Tensor of a
// block-scaled dtype whose two levels are carriers over the SAME bytes:
// clang-format off
//   type   block (bytes)                    dtype   level 0 (carrier, L_0 last mode)      level 1 (carrier, L_1 last mode)
//   Q8_0   {f16 d; i8 qs[32]}        (34)   q8_0    int8 per byte,   (32,nb):(1,34)  +2   float16 per 2 bytes, nb:17
//   Q4_0   {f16 d; u8 qs[16]}        (18)   q4_0    uint4 per nibble, ((16,2),nb):((2,1),36) +4  float16, nb:9
//   MXFP4  {u8 e; u8 qs[16]}         (17)   mxfp4   fp4 per nibble,   ((16,2),nb):((2,1),34) +2  e8m0 per byte, nb:17
// clang-format on
// (element j of a block in the low nibble of qs[j], element j+16 in its high
// nibble; Strata's nibble index 2*byte + (high) reaches exactly those). The
// leading modes stride by whole rows. S_0 gives each block its scale:
// (32,nb):(0,w), or ((16,2),nb):((0,0),w). MXFP4's nibbles are ggml's doubled
// e2m1 table under a halved scale, which is the same value as the OCP code
// under the scale.
#ifndef STRATA_CHECKPOINT_GGUF_H_
#define STRATA_CHECKPOINT_GGUF_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "checkpoint/tensor_to_write.h"
#include "core/tensor.h"

namespace strata {

// GGUF metadata value types (gguf-py's GGUFValueType).
enum class GgufType : uint32_t {
  kUInt8 = 0,
  kInt8 = 1,
  kUInt16 = 2,
  kInt16 = 3,
  kUInt32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUInt64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// Bytes of one scalar of a metadata type; 0 for strings, arrays and values
// outside the enumeration.
int GgufScalarBytes(GgufType type);

// "UINT8", ..., "FLOAT64"; "?" for a value outside the enumeration.
const char* GgufTypeName(GgufType type);

// One metadata value, as read. Scalars keep their little-endian bits; an
// array of scalars keeps its elements' bytes (so that a large array costs
// its size in the file, not an object per element); an array of strings or
// of arrays keeps its items.
struct GgufValue {
  GgufType type = GgufType::kUInt8;
  uint64_t bits = 0;                         // Scalars.
  std::string text;                          // kString.
  GgufType element_type = GgufType::kUInt8;  // kArray.
  uint64_t count = 0;                        // kArray: elements.
  std::string raw;                           // kArray of scalars: bytes.
  std::vector<GgufValue> items;              // kArray of strings / arrays.

  bool is_scalar() const {
    return type != GgufType::kString && type != GgufType::kArray;
  }
  // A scalar as an integer or a float (integers exactly; bool 0 or 1).
  int64_t AsInt64() const;
  uint64_t AsUInt64() const;
  double AsDouble() const;
  // Element i of an array of scalars, as a scalar value.
  GgufValue Element(uint64_t i) const;
  // Text: integers and bools as numbers/true/false, floats as the shortest
  // text that reads back, strings quoted with \" and \\ escaped, arrays as
  // [a,b,...] (nested for arrays of arrays).
  std::string ToString() const;
};

// One tensor of a GGUF file: its ggml type name ("Q8_0", or "type 99"), its
// logical shape (dims reversed), and the Tensor or why it was refused.
struct GgufTensor {
  std::string name;
  std::string ggml_type;
  absl::StatusOr<Tensor> tensor;
};

struct Gguf {
  uint32_t version = 0;
  int64_t alignment = 32;
  int64_t data_offset = 0;  // Byte of the file where the data section begins.
  std::vector<std::pair<std::string, GgufValue>> metadata;  // File order.
  std::vector<GgufTensor> tensors;                          // File order.
};

// The largest metadata nesting (arrays of arrays) ReadGguf follows.
inline constexpr int kMaxGgufDepth = 64;
// The most strings and arrays that metadata arrays may hold in one file, all
// arrays together (a tokenizer's vocabulary and merges are ~10^5 to 10^6).
inline constexpr int64_t kMaxGgufMetadataItems = int64_t{1} << 22;

// Reads the GGUF file at `path` (mapped once, read-only; reading the header
// touches no page of the data section). Every count and length is checked
// against the bytes that remain before anything is allocated for it.
//
// Errors of the file itself (the returned status, a ValueError whose message
// begins "ReadGguf: not a GGUF file: " and names the byte offset, unless the
// file cannot be read at all): bad magic; a version other than 2 or 3; a
// tensor or metadata count, a string or array length that the remaining
// bytes cannot hold; an unknown metadata value type; a metadata key
// that appears twice; arrays nested deeper than kMaxGgufDepth; metadata
// arrays holding more than kMaxGgufMetadataItems strings and arrays in all;
// general.alignment that is not a UINT32 power of two; a duplicate tensor name;
// n_dims whose dims the file cannot hold; a data section past the end of the
// file; a tensor offset that is not a multiple of the alignment, or whose bytes
// lie outside the data section (a truncated last block included); two tensors
// whose bytes overlap (a file whose tensors hold no byte still needs its data
// section to begin within it). ResourceExhaustedError when the kernel refuses
// the mapping.
//
// Errors of one tensor (its entry's status, a ValueError naming it; the
// others import): n_dims above 4; a ggml type other than F32, F16, Q4_0,
// Q8_0, I8, I16, I32, I64, F64, BF16, MXFP4 (named, with its number); dims
// whose product or byte count (or a block type's row strides, an empty
// Tensor's included) overflows int64; a block type whose innermost dim is
// not a multiple of 32, or that has no dim.
absl::StatusOr<Gguf> ReadGguf(const std::string& path);
// The same for an open file descriptor (neither closed nor kept open);
// `path` is the name the carriers report.
absl::StatusOr<Gguf> ReadGgufFd(int fd, const std::string& path);

// NOTE [ GGUF out ]
// WriteGguf writes GGUF v3 as gguf-py's GGUFWriter lays it out: the header,
// `metadata` in order, the tensor infos in order, the data section at the
// alignment (general.alignment where `metadata` sets it, else 32), each
// tensor's data at a multiple of it, zero padding between. Plain Tensors
// (float32, float16, bfloat16, float64, int8..int64) are written row-major;
// q8_0, q4_0 and mxfp4 Tensors blocked by 32 along their last dim as ggml's
// block structs (NOTE [ GGUF blocks as strided placements ]: the scale, then
// 16 or 32 bytes of codes, element j and j + 16 of a 4-bit block sharing
// byte j), whatever their layouts; the dims are the shape reversed, at most
// 4. ReadGguf and ggml's readers read it back; its bytes do not depend on
// the Tensors' layouts. The file is written to a temporary name beside `path`
// and renamed over it when complete (NOTE [ Files complete or absent ] in
// checkpoint/internal/atomic_files.h).
//
// Errors (ValueError naming the tensor or key, before the file is created):
// a dtype with no GGUF type; a rank above 4; a block type whose last dim is
// not a multiple of 32 or that has no dim; a tensor name or metadata key
// given twice; general.alignment that is not a UINT32 power of two; an
// array value whose count disagrees with its items. While writing: what a
// Tensor's `make` returns; a block Tensor whose 32 consecutive values of the
// last dim do not share one scale; the file's write errors (naming it and
// the OS error); CancelledError when control.cancel is set.
// Whether WriteGguf can write a Tensor of `dtype` and `shape` named `name`:
// OK, or the ValueError it would refuse it with.
absl::Status CheckGgufForm(const std::string& name, const DType& dtype,
                           const std::vector<int64_t>& shape);

absl::Status WriteGguf(
    const std::string& path, std::vector<TensorToWrite> tensors,
    absl::Span<const std::pair<std::string, GgufValue>> metadata,
    const WriteControl& control = {});

// Whether `prefix` (the first bytes of a file) begins with the GGUF magic.
bool IsGgufMagic(absl::string_view prefix);

}  // namespace strata

#endif  // STRATA_CHECKPOINT_GGUF_H_
