// bazel run --config=opt //checkpoint:checkpoint_benchmark
// Importing a checkpoint of 1,000 tensors touches no tensor data: reading
// the header and building every Tensor is O(tensors). Reported per file:
// the time of one import (the counter us_per_tensor divides it by the
// tensors) and the minor page faults one import takes (minflt: the header's
// pages and the allocations; a read of the 64 MiB data section would take
// 16,384 more).
//
// Also Dequantize of GGUF's blocks as imported (q8_0, q4_0, mxfp4: the codes
// in ggml's blocks, NOTE [ GGUF blocks as strided placements ] in gguf.cc),
// 64 MiB of bfloat16 out of a mapped file, beside memcpy of the same 64 MiB
// (values.md section 4's bound, for the layout a GGUF file gives).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "carrier/carrier.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/gguf.h"
#include "checkpoint/tensor_to_write.h"
#include "core/tensor.h"
#include "dtype/registry.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "ops/dequantize.h"
#include "ops/quantize.h"
#include "util/memcpy_benchmark.h"

namespace strata {
namespace {

constexpr int kTensors = 1000;
constexpr int64_t kValues = 16384;  // float32: 64 KiB per tensor.

std::string Path(const char* name) {
  return absl::StrCat("/tmp/strata_checkpoint_benchmark_", getpid(), "_", name);
}

// 1,000 float32 (128,128) tensors, or fp8 weights with DeepSeek block scales.
std::string SafetensorsFile() {
  const std::string path = Path("a.safetensors");
  std::string header = "{";
  int64_t at = 0;
  for (int i = 0; i < kTensors; ++i) {
    absl::StrAppend(&header, i ? "," : "", "\"layers.", i,
                    ".weight\":{\"dtype\":\"F32\",\"shape\":[128,128],"
                    "\"data_offsets\":[",
                    at, ",", at + 4 * kValues, "]}");
    at += 4 * kValues;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header;
  const std::string data(at, '\x01');
  out << data;
  return path;
}

void PutU32(std::string* s, uint32_t v) {
  s->append(reinterpret_cast<char*>(&v), 4);
}
void PutU64(std::string* s, uint64_t v) {
  s->append(reinterpret_cast<char*>(&v), 8);
}
void PutString(std::string* s, const std::string& v) {
  PutU64(s, v.size());
  *s += v;
}

// 1,000 q8_0 (128,128) tensors in a GGUF v3 file (alignment 32).
std::string GgufFile() {
  const std::string path = Path("a.gguf");
  std::string h = "GGUF";
  PutU32(&h, 3);
  PutU64(&h, kTensors);
  PutU64(&h, 1);
  PutString(&h, "general.architecture");
  PutU32(&h, 8);
  PutString(&h, "llama");
  const int64_t bytes = 128 * 4 * 34;  // 128 rows of 4 blocks.
  for (int i = 0; i < kTensors; ++i) {
    PutString(&h, absl::StrCat("blk.", i, ".ffn_down.weight"));
    PutU32(&h, 2);
    PutU64(&h, 128);
    PutU64(&h, 128);
    PutU32(&h, 8);  // Q8_0.
    PutU64(&h, static_cast<uint64_t>(i) * ((bytes + 31) / 32 * 32));
  }
  h.append((32 - h.size() % 32) % 32, '\0');
  std::ofstream out(path, std::ios::binary);
  out << h;
  const std::string data(kTensors * ((bytes + 31) / 32 * 32), '\x01');
  out << data;
  return path;
}

int64_t MinorFaults() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

void Import(benchmark::State& state, std::string (*make)()) {
  const std::string path = make();
  int64_t faults = 0, imports = 0;
  double seconds = 0;
  for (auto _ : state) {
    const int64_t before = MinorFaults();
    const auto start = std::chrono::steady_clock::now();
    auto read = ReadCheckpoint(path);
    seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    faults += MinorFaults() - before;
    ++imports;
    if (!read.ok() || read->tensors.size() != kTensors) {
      state.SkipWithError("import failed");
      break;
    }
    for (const CheckpointTensor& t : read->tensors) {
      if (!t.tensor.ok()) state.SkipWithError("a tensor was refused");
    }
    benchmark::DoNotOptimize(read);
  }
  const double n = static_cast<double>(std::max<int64_t>(imports, 1));
  state.counters["us_per_tensor"] = 1e6 * seconds / n / kTensors;
  state.counters["minflt"] = static_cast<double>(faults) / n;
  unlink(path.c_str());
}
BENCHMARK_CAPTURE(Import, safetensors_1000, SafetensorsFile)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Import, gguf_1000, GgufFile)->Unit(benchmark::kMillisecond);

// Issue 39: the time per tensor of a header of N empty tensors (the
// reproduction's file) must stay flat from 10^3 to 2 x 10^5 tensors; it grew
// as N (31 s at 2 x 10^5) while the parser found each key by a linear scan.
void BM_ReadSafetensorsHeader(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::string header = "{";
  for (int64_t i = 0; i < n; ++i) {
    absl::StrAppend(&header, i ? "," : "", "\"t", i,
                    "\":{\"dtype\":\"F32\",\"shape\":[0],"
                    "\"data_offsets\":[0,0]}");
  }
  header += "}";
  const std::string path = Path("header.safetensors");
  {
    std::ofstream out(path, std::ios::binary);
    const uint64_t length = header.size();
    out.write(reinterpret_cast<const char*>(&length), 8);
    out << header;
  }
  for (auto _ : state) {
    auto read = ReadCheckpoint(path);
    if (!read.ok() || static_cast<int64_t>(read->tensors.size()) != n) {
      state.SkipWithError("import failed");
      break;
    }
    benchmark::DoNotOptimize(read);
  }
  state.counters["s_per_tensor"] = benchmark::Counter(
      static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate |
                                  benchmark::Counter::kInvert);
  unlink(path.c_str());
}
BENCHMARK(BM_ReadSafetensorsHeader)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Arg(200000)
    ->Unit(benchmark::kMillisecond);

// Issue 36: opening a sharded directory of S shards x 1,000 tensors of 4 KiB
// (the data sparse: a header and ftruncate) reads headers only: time per
// tensor flat in S, and minor faults per import far below the data's pages
// (minflt counts every page the import touched; data_pages what reading the
// data would have cost).
void BM_ReadCheckpointDirectory(benchmark::State& state) {
  const int64_t shards = state.range(0);
  constexpr int64_t kPerShard = 1000, kValues = 1024;
  const std::string dir = Path("directory_bench");
  std::system(
      absl::StrCat("rm -rf '", dir, "' && mkdir -p '", dir, "'").c_str());
  std::string index = "{\"metadata\":{},\"weight_map\":{";
  for (int64_t f = 0; f < shards; ++f) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors",
                  static_cast<int>(f + 1), static_cast<int>(shards));
    std::string header = "{";
    for (int64_t i = 0; i < kPerShard; ++i) {
      const std::string tensor = absl::StrCat("s", f, ".t", i);
      const int64_t begin = i * kValues * 4;
      absl::StrAppend(&header, i ? "," : "", "\"", tensor,
                      "\":{\"dtype\":\"F32\",\"shape\":[", kValues,
                      "],\"data_offsets\":[", begin, ",", begin + kValues * 4,
                      "]}");
      absl::StrAppend(&index, f + i ? "," : "", "\"", tensor, "\":\"", name,
                      "\"");
    }
    header += "}";
    header.append((8 - header.size() % 8) % 8, ' ');
    const std::string path = absl::StrCat(dir, "/", name);
    {
      std::ofstream out(path, std::ios::binary);
      const uint64_t length = header.size();
      out.write(reinterpret_cast<const char*>(&length), 8);
      out << header;
    }
    if (truncate(path.c_str(), 8 + header.size() + kPerShard * kValues * 4) !=
        0) {
      state.SkipWithError("truncate failed");
      return;
    }
  }
  index += "}}";
  std::ofstream(absl::StrCat(dir, "/model.safetensors.index.json")) << index;
  int64_t faults = 0, imports = 0;
  for (auto _ : state) {
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    auto read = ReadCheckpoint(dir);
    getrusage(RUSAGE_SELF, &after);
    if (!read.ok() ||
        static_cast<int64_t>(read->tensors.size()) != shards * kPerShard) {
      state.SkipWithError("import failed");
      break;
    }
    faults += after.ru_minflt - before.ru_minflt;
    ++imports;
    benchmark::DoNotOptimize(read);
  }
  state.counters["s_per_tensor"] =
      benchmark::Counter(static_cast<double>(shards * kPerShard),
                         benchmark::Counter::kIsIterationInvariantRate |
                             benchmark::Counter::kInvert);
  state.counters["minflt"] =
      static_cast<double>(faults) / std::max<int64_t>(imports, 1);
  state.counters["data_pages"] =
      static_cast<double>(shards * kPerShard * kValues * 4 / 4096);
  std::system(absl::StrCat("rm -rf '", dir, "'").c_str());
}
BENCHMARK(BM_ReadCheckpointDirectory)
    ->Arg(10)
    ->Arg(100)
    ->Unit(benchmark::kMillisecond);

constexpr int64_t kOutBytes = int64_t{64} << 20;

void BM_Memcpy64MiB(benchmark::State& state) {
  MemcpyBenchmark(state, kOutBytes);
}
BENCHMARK(BM_Memcpy64MiB)->Unit(benchmark::kMillisecond);

// A (8192, 4096) Tensor quantized to `format`, written as GGUF and read back:
// its blocks mapped from the file as ggml lays them out.
absl::StatusOr<Tensor> FromGguf(const CompoundDType* format) {
  constexpr int64_t kRows = 8192, kCols = 4096;
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), kRows * kCols);
  auto* f = static_cast<float*>(carrier->mutable_data());
  for (int64_t i = 0; i < kRows * kCols; ++i) {
    f[i] = static_cast<float>((i * 7919) % 2003 - 1001) * (1 + i % 97) / 97.0f;
  }
  const Tensor source = *Tensor::Create(
      carrier, 0, *Layout::RowMajor(IntTuple::Flat({kRows, kCols})));
  absl::StatusOr<Tensor> quantized = QuantizeBlockScaled(
      source, *format, format == dtypes::MXFP4() ? 1 : kBlocksOfTheFormat,
      ScaleLayout::kRowMajor);
  if (!quantized.ok()) return quantized.status();
  const std::string path = Path("dequantize.gguf");
  std::vector<TensorToWrite> tensors;
  tensors.push_back(ToWrite("w", *std::move(quantized)));
  if (absl::Status s = WriteGguf(path, std::move(tensors), {}); !s.ok()) {
    return s;
  }
  absl::StatusOr<Gguf> read = ReadGguf(path);
  std::remove(path.c_str());  // The mapping keeps the bytes.
  if (!read.ok()) return read.status();
  return read->tensors[0].tensor;
}

void BM_DequantizeGguf(benchmark::State& state, const CompoundDType* format) {
  const absl::StatusOr<Tensor> t = FromGguf(format);
  if (!t.ok()) {
    state.SkipWithError(std::string(t.status().message()).c_str());
    return;
  }
  auto out_carrier = *HostCarrier::Create(*dtypes::BFloat16(), t->size());
  const Tensor out = *Tensor::Create(
      out_carrier, 0, *Layout::RowMajor(IntTuple::Flat(t->shape())));
  for (auto _ : state) {
    const absl::Status s = DequantizeInto(out, *t);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * t->size() * 2);
}
BENCHMARK_CAPTURE(BM_DequantizeGguf, q8_0 / bfloat16, dtypes::Q8_0())
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DequantizeGguf, q4_0 / bfloat16, dtypes::Q4_0())
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DequantizeGguf, mxfp4 / bfloat16, dtypes::MXFP4())
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace strata
