// Writes the safetensors files the CLI tests and the fuzzer's seeds use into
// DIR: well-formed checkpoints (an MXFP4 pair in both spellings) and hostile
// ones, each named for what it holds.   Usage: make_safetensors DIR
#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>

#include "checkpoint/safetensors.h"

namespace {

std::string Bytes(const std::string& header, const std::string& data) {
  return strata::SafetensorsLengthPrefix(header.size()) + header + data;
}

// Deterministic filler: byte i is (i * 37 + seed) mod 256.
std::string Filler(int64_t n, int seed) {
  std::string out(n, '\0');
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<char>(i * 37 + seed);
  return out;
}

bool Write(const std::string& dir, const std::string& name,
           const std::string& bytes) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out << bytes;
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_safetensors DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = true;
  // A gpt-oss-like checkpoint: 4 experts of 2 rows of 2 blocks (64 values).
  const std::string moe =
      R"({"__metadata__":{"format":"pt"},)"
      R"("embed":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("experts.down.blocks":{"dtype":"U8","shape":[4,2,2,16],"data_offsets":[24,280]},)"
      R"("experts.down.scales":{"dtype":"U8","shape":[4,2,2],"data_offsets":[280,296]},)"
      R"("norm":{"dtype":"BF16","shape":[8],"data_offsets":[296,312]}})";
  ok &= Write(dir, "moe.safetensors", Bytes(moe, Filler(312, 1)));
  // The HF spelling, scales first in the header; a lone half; an F4 tensor.
  const std::string hf =
      R"({"gate_up_proj_scales":{"dtype":"U8","shape":[2,1],"data_offsets":[32,34]},)"
      R"("gate_up_proj_blocks":{"dtype":"U8","shape":[2,1,16],"data_offsets":[0,32]},)"
      R"("router.blocks":{"dtype":"U8","shape":[1,16],"data_offsets":[34,50]},)"
      R"("codes":{"dtype":"F4","shape":[5],"data_offsets":[50,53]},)"
      R"("scalar":{"dtype":"I64","shape":[],"data_offsets":[53,61]},)"
      R"("empty":{"dtype":"F16","shape":[0,7],"data_offsets":[61,61]}})";
  ok &= Write(dir, "hf_pair.safetensors", Bytes(hf, Filler(61, 2)));
  // Tensor errors beside a good tensor.
  const std::string bad =
      R"({"good":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
      R"("u16":{"dtype":"U16","shape":[1],"data_offsets":[2,4]},)"
      R"("short":{"dtype":"F32","shape":[2],"data_offsets":[4,8]},)"
      R"("negative":{"dtype":"U8","shape":[-1],"data_offsets":[8,9]},)"
      R"("overflow":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[9,10]},)"
      R"("pair.blocks":{"dtype":"U8","shape":[2,15],"data_offsets":[10,40]},)"
      R"("pair.scales":{"dtype":"U8","shape":[2],"data_offsets":[40,42]}})";
  ok &= Write(dir, "bad_tensors.safetensors", Bytes(bad, Filler(42, 3)));
  const std::string one =
      R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})";
  ok &= Write(dir, "truncated.safetensors", Bytes(one, "abcd").substr(0, 5));
  std::string lying = Bytes(one, "abcd");
  lying[1] = 1;  // Header length + 256.
  ok &= Write(dir, "lying_length.safetensors", lying);
  ok &= Write(dir, "cut_data.safetensors", Bytes(one, "ab"));
  ok &= Write(dir, "overlap.safetensors",
              Bytes(R"({"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},)"
                    R"("b":{"dtype":"U8","shape":[3],"data_offsets":[2,5]}})",
                    "abcde"));
  ok &= Write(dir, "out_of_range.safetensors",
              Bytes(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}})",
                    "abcd"));
  ok &= Write(dir, "hole.safetensors",
              Bytes(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                    R"("b":{"dtype":"U8","shape":[1],"data_offsets":[3,4]}})",
                    "abcd"));
  ok &= Write(dir, "not_json.safetensors", Bytes(R"({"a":{"dtype":)", ""));
  ok &= Write(dir, "not_object.safetensors", Bytes(R"({"a":[1,2]})", ""));
  ok &= Write(dir, "duplicate_key.safetensors",
              Bytes(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                    R"("a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
                    "a"));
  if (!ok) {
    std::cerr << "make_safetensors: cannot write into " << dir << "\n";
    return 1;
  }
  return 0;
}
