#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "carrier/carrier.h"
#include "carrier/mapped_carrier.h"
#include "checkpoint/internal/checked_json.h"
#include "checkpoint/internal/conventions.h"
#include "checkpoint/internal/json_text.h"
#include "checkpoint/internal/names.h"
#include "checkpoint/safetensors.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "nlohmann/json.hpp"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace {

using checkpoint_internal::FromSafetensorsName;
using checkpoint_internal::JsonChecker;
using checkpoint_internal::JsonText;
using checkpoint_internal::kMetadataKey;
using checkpoint_internal::Quoted;
using checkpoint_internal::ShapeText;
using checkpoint_internal::ToSafetensorsName;

// NOTE [ The safetensors header parser ]
// The header is parsed by nlohmann/json (Debian's nlohmann-json3-dev), not by
// protobuf's JSON parser into google.protobuf.Struct, because a Struct stores
// every number as a double, so an offset above 2^53 would silently round.
// nlohmann parses integers into int64/uint64 exactly (a number that fits
// neither, or has a fraction or exponent, is a float here and refused). It is
// used without exceptions, in two passes:
//   1. a SAX pass (HeaderChecker) reports the first syntax error with its
//      byte, every repeated key, and any value nested deeper than
//      kMaxJsonDepth (128, serde_json's limit, which the safetensors library
//      parses with): nothing after it recurses, so no header can exhaust the
//      stack (issue 39: 10^5 levels under "dtype" overflowed it). It also
//      records the order of the root's keys and of "__metadata__"'s, which
//      is the order this reader returns;
//   2. the DOM parse (allow_exceptions = false) into nlohmann::json, whose
//      objects are std::maps: O(log n) an insertion. nlohmann's ordered_json
//      keeps the order itself but finds each key by a linear scan, so a header
//      of n tensors cost O(n^2) (31 s for 2 x 10^5 empty tensors).
// Every value is type-checked before it is read (get_ptr, never get<> or
// at()). nlohmann's lexer takes a NUL byte for the end of its input, so a
// header holding one is refused before parsing: JSON text holds none, and
// the safetensors format pads a header with spaces only.
using Json = nlohmann::json;

constexpr char kNotSafetensors[] = "ReadSafetensors: not a safetensors file: ";

// One tensor entry of the header.
struct Entry {
  std::string name;
  const Json* info = nullptr;
  int64_t begin = 0, end = 0;  // data_offsets, validated.
};

// A tensor entry checked on its own: dtype, shape, byte length.
struct Checked {
  const SimpleDType* dtype = nullptr;
  std::vector<int64_t> shape;
  int64_t count = 0;  // Values.
};

absl::Status EntryError(const Entry& e, absl::string_view message) {
  return ValueErrorCat("ReadSafetensors: tensor ", Quoted(e.name), ": ",
                       message);
}

absl::StatusOr<Checked> CheckEntry(const Entry& e) {
  Checked out;
  const Json& info = *e.info;
  auto dtype = info.find("dtype");
  if (dtype == info.end()) return EntryError(e, "no \"dtype\"");
  const std::string* dtype_name = dtype->get_ptr<const std::string*>();
  if (dtype_name == nullptr) {
    return EntryError(
        e, absl::StrCat("\"dtype\" is not a string: ", JsonText(*dtype)));
  }
  out.dtype = FromSafetensorsName(*dtype_name);
  if (out.dtype == nullptr) {
    return EntryError(
        e, absl::StrCat("unknown dtype ", Quoted(*dtype_name),
                        " (known: BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, "
                        "F64, F8_E4M3, F8_E5M2, F8_E8M0, F4)"));
  }
  auto shape = info.find("shape");
  if (shape == info.end()) return EntryError(e, "no \"shape\"");
  if (!shape->is_array()) {
    return EntryError(
        e, absl::StrCat("\"shape\" is not an array: ", JsonText(*shape)));
  }
  for (size_t k = 0; k < shape->size(); ++k) {
    const Json& x = (*shape)[k];
    if (const auto* u = x.get_ptr<const Json::number_unsigned_t*>()) {
      if (*u > static_cast<uint64_t>(INT64_MAX)) {
        return EntryError(e, absl::StrCat("extent ", k, " of \"shape\", ", *u,
                                          ", overflows int64"));
      }
      out.shape.push_back(static_cast<int64_t>(*u));
    } else if (const auto* i = x.get_ptr<const Json::number_integer_t*>()) {
      if (*i < 0) {
        return EntryError(e, absl::StrCat("extent ", k, " of \"shape\" is ", *i,
                                          ", negative"));
      }
      out.shape.push_back(*i);
    } else if (const auto* f = x.get_ptr<const Json::number_float_t*>()) {
      // An integer literal beyond 64 bits parses as a float.
      return EntryError(
          e, absl::StrCat(
                 "extent ", k, " of \"shape\", ", JsonText(x),
                 *f < 0 ? ", is negative" : "",
                 *f >= 9.2e18 ? ", overflows int64" : ", is not an integer"));
    } else {
      return EntryError(
          e, absl::StrCat("extent ", k,
                          " of \"shape\" is not an integer: ", JsonText(x)));
    }
  }
  out.count = 1;
  for (int64_t x : out.shape) {
    if (!CheckedMul(out.count, x, &out.count)) {
      return EntryError(e, absl::StrCat("shape ", ShapeText(out.shape),
                                        " has more values than int64 holds"));
    }
  }
  // The row-major strides must fit too (a zero extent makes the count 0).
  absl::StatusOr<Layout> layout = Layout::RowMajor(IntTuple::Flat(out.shape));
  if (!layout.ok()) {
    return EntryError(
        e, absl::StrCat("shape ", ShapeText(out.shape),
                        " overflows int64: ", layout.status().message()));
  }
  const absl::StatusOr<int64_t> bytes = StorageBytes(*out.dtype, out.count);
  if (!bytes.ok()) {
    return EntryError(
        e, absl::StrCat("shape ", ShapeText(out.shape), " of ", *dtype_name,
                        " needs more bytes than int64 holds"));
  }
  if (*bytes != e.end - e.begin) {
    return EntryError(
        e, absl::StrCat("shape ", ShapeText(out.shape), " of ", *dtype_name,
                        " needs ", *bytes, " bytes; data_offsets [", e.begin,
                        ", ", e.end, "] hold ", e.end - e.begin));
  }
  return out;
}

// data_offsets of an entry: [BEGIN, END] of integers, 0 <= BEGIN <= END <=
// buffer. A file-level error otherwise.
absl::Status ReadOffsets(Entry& e, int64_t buffer) {
  const Json& info = *e.info;
  auto offsets = info.find("data_offsets");
  if (offsets == info.end()) {
    return ValueErrorCat(kNotSafetensors, "tensor ", Quoted(e.name),
                         " has no \"data_offsets\"");
  }
  const Json::number_unsigned_t* b = nullptr;
  const Json::number_unsigned_t* end = nullptr;
  if (offsets->is_array() && offsets->size() == 2) {
    b = (*offsets)[0].get_ptr<const Json::number_unsigned_t*>();
    end = (*offsets)[1].get_ptr<const Json::number_unsigned_t*>();
  }
  if (b == nullptr || end == nullptr || *b > *end) {
    return ValueErrorCat(kNotSafetensors, "tensor ", Quoted(e.name),
                         ": data_offsets ", JsonText(*offsets),
                         " is not [BEGIN, END] of integers 0 <= BEGIN <= END");
  }
  if (*end > static_cast<uint64_t>(buffer)) {
    return ValueErrorCat(kNotSafetensors, "tensor ", Quoted(e.name),
                         ": data_offsets [", *b, ", ", *end,
                         "] lie outside the data buffer of ", buffer, " bytes");
  }
  e.begin = static_cast<int64_t>(*b);
  e.end = static_cast<int64_t>(*end);
  return absl::OkStatus();
}

// The buffer is covered exactly: sorted by offsets, each tensor begins where
// the previous one ended (the safetensors library's rule).
absl::Status CheckCoverage(const std::vector<Entry>& entries, int64_t buffer) {
  std::vector<const Entry*> sorted;
  for (const Entry& e : entries) sorted.push_back(&e);
  std::stable_sort(
      sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
      });
  int64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry* e : sorted) {
    if (e->begin < covered) {
      return ValueErrorCat(kNotSafetensors, "tensors ", Quoted(previous->name),
                           " [", previous->begin, ", ", previous->end, "] and ",
                           Quoted(e->name), " [", e->begin, ", ", e->end,
                           "] overlap");
    }
    if (e->begin > covered) {
      return ValueErrorCat(kNotSafetensors, "bytes [", covered, ", ", e->begin,
                           ") of the data buffer belong to no tensor (a hole "
                           "before ",
                           Quoted(e->name), ")");
    }
    covered = e->end;
    previous = e;
  }
  if (covered != buffer) {
    return ValueErrorCat(kNotSafetensors, "bytes [", covered, ", ", buffer,
                         ") of the data buffer belong to no tensor (a hole at "
                         "the end)");
  }
  return absl::OkStatus();
}

// What an entry name says of MXFP4 pairing.
struct PairName {
  std::string prefix;  // P; empty when the name is not a half.
  char separator = 0;  // '.' or '_'.
  bool blocks = false;
};

PairName ParsePairName(absl::string_view name) {
  PairName out;
  for (const char separator : {'.', '_'}) {
    for (const bool blocks : {true, false}) {
      const std::string suffix =
          absl::StrCat(std::string(1, separator), blocks ? "blocks" : "scales");
      if (name.size() > suffix.size() &&
          name.substr(name.size() - suffix.size()) == suffix) {
        out.prefix = std::string(name.substr(0, name.size() - suffix.size()));
        out.separator = separator;
        out.blocks = blocks;
        return out;
      }
    }
  }
  return out;
}

// One Tensor of the result, planned before the file is mapped.
struct Planned {
  std::string name;
  int first = -1, second = -1;  // Entry indices (second: a pair's other half).
  absl::Status status;
  Checked plain;
  // A pair: the blocks and scales entries and the prefix dims and G.
  int blocks = -1, scales = -1;
  std::vector<int64_t> prefix;
  int64_t groups = 0;
  // A convention group (NOTE [ Checkpoint conventions ]).
  bool group = false;
  checkpoint_internal::GroupPlan group_plan;
};

absl::Status PairError(const std::string& name, const Entry& blocks,
                       const Entry& scales, absl::string_view message) {
  return ValueErrorCat("ReadSafetensors: MXFP4 pair ", Quoted(name), " (",
                       Quoted(blocks.name), ", ", Quoted(scales.name),
                       "): ", message);
}

// The pair rule of NOTE [ MXFP4 pairs ].
absl::Status CheckPair(Planned& p, const std::vector<Entry>& entries) {
  const Entry& b = entries[p.blocks];
  const Entry& s = entries[p.scales];
  absl::StatusOr<Checked> cb = CheckEntry(b);
  if (!cb.ok()) return PairError(p.name, b, s, cb.status().message());
  absl::StatusOr<Checked> cs = CheckEntry(s);
  if (!cs.ok()) return PairError(p.name, b, s, cs.status().message());
  if (cb->dtype != dtypes::UInt8() || cs->dtype != dtypes::UInt8()) {
    return PairError(p.name, b, s,
                     absl::StrCat("the blocks and scales must be U8; got ",
                                  ToSafetensorsName(*cb->dtype), " and ",
                                  ToSafetensorsName(*cs->dtype)));
  }
  const std::vector<int64_t>& bs = cb->shape;
  const std::vector<int64_t>& ss = cs->shape;
  const bool shaped = bs.size() >= 2 && bs.back() == 16 &&
                      ss.size() + 1 == bs.size() &&
                      std::equal(ss.begin(), ss.end(), bs.begin());
  if (!shaped) {
    return PairError(
        p.name, b, s,
        absl::StrCat("blocks of shape (..., G, 16) need scales of shape "
                     "(..., G); got blocks ",
                     ShapeText(bs), " and scales ", ShapeText(ss)));
  }
  p.prefix.assign(ss.begin(), ss.end() - 1);
  p.groups = ss.back();
  int64_t n, values;
  if (!CheckedMul(p.groups, 32, &n) || !CheckedMul(cb->count, 2, &values)) {
    return PairError(
        p.name, b, s,
        absl::StrCat("G = ", p.groups, " groups of 32 values overflow int64"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> BuildPlain(
    const Planned& p, const Entry& e,
    const std::shared_ptr<const MappedRegion>& region) {
  STRATA_ASSIGN_OR_RETURN(
      std::shared_ptr<MappedCarrier> carrier,
      MappedCarrier::Create(*p.plain.dtype, p.plain.count, region, e.begin));
  STRATA_ASSIGN_OR_RETURN(Layout layout,
                          Layout::RowMajor(IntTuple::Flat(p.plain.shape)));
  return Tensor::Create(std::move(carrier), 0, std::move(layout));
}

absl::StatusOr<Tensor> BuildPair(
    const Planned& p, const std::vector<Entry>& entries,
    const std::shared_ptr<const MappedRegion>& region) {
  // Checked by CheckPair: both U8, shapes (..., G, 16) and (..., G).
  const auto member = [&](const Entry& e) {
    checkpoint_internal::Member m;
    m.name = e.name;
    m.dtype = dtypes::UInt8();
    m.shape = CheckEntry(e)->shape;
    m.begin = e.begin;
    return m;
  };
  return checkpoint_internal::BuildPair(p.name, member(entries[p.blocks]),
                                        member(entries[p.scales]), region);
}

// pread of exactly `n` bytes at `offset`.
bool ReadAt(int fd, char* out, int64_t n, int64_t offset) {
  while (n > 0) {
    const ssize_t got = pread(fd, out, n, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    n -= got;
    offset += got;
  }
  return true;
}

}  // namespace

absl::StatusOr<Safetensors> ReadSafetensors(const std::string& path) {
  return ReadSafetensors(path, SafetensorsReadOptions{});
}

absl::StatusOr<Safetensors> ReadSafetensors(
    const std::string& path, const SafetensorsReadOptions& options) {
  return checkpoint_internal::WithOpenFile(
      "ReadSafetensors", path,
      [&](int fd) { return ReadSafetensorsFd(fd, path, options); });
}

absl::StatusOr<Safetensors> ReadSafetensorsFd(int fd, const std::string& path) {
  return ReadSafetensorsFd(fd, path, SafetensorsReadOptions{});
}

absl::StatusOr<Safetensors> ReadSafetensorsFd(
    int fd, const std::string& path, const SafetensorsReadOptions& options) {
  STRATA_ASSIGN_OR_RETURN(
      const int64_t file_size,
      checkpoint_internal::RegularFileSize(fd, "ReadSafetensors", path));
  if (file_size < 8) {
    return ValueErrorCat(kNotSafetensors, "the file holds ", file_size,
                         " bytes, fewer than the 8 of the header length");
  }
  unsigned char length_bytes[8];
  if (!ReadAt(fd, reinterpret_cast<char*>(length_bytes), 8, 0)) {
    return ValueErrorCat("ReadSafetensors: cannot read ", Quoted(path), ": ",
                         std::strerror(errno));
  }
  uint64_t header_length = 0;
  for (int k = 7; k >= 0; --k)
    header_length = header_length << 8 | length_bytes[k];
  if (header_length > static_cast<uint64_t>(file_size - 8)) {
    return ValueErrorCat(kNotSafetensors, "the header length ", header_length,
                         " exceeds the ", file_size - 8,
                         " bytes after the 8-byte length");
  }
  if (header_length > static_cast<uint64_t>(kMaxSafetensorsHeaderBytes)) {
    return ValueErrorCat(kNotSafetensors, "the header length ", header_length,
                         " exceeds the limit of ", kMaxSafetensorsHeaderBytes,
                         " bytes");
  }
  std::string header(header_length, '\0');
  if (!ReadAt(fd, header.data(), header_length, 8)) {
    return ValueErrorCat("ReadSafetensors: cannot read ", Quoted(path), ": ",
                         std::strerror(errno));
  }
  const int64_t data_start = 8 + static_cast<int64_t>(header_length);
  const int64_t buffer = file_size - data_start;

  // Parse (NOTE [ The safetensors header parser ]).
  if (const size_t nul = header.find('\0'); nul != std::string::npos) {
    return ValueErrorCat(kNotSafetensors, "byte ", nul,
                         " of the header is NUL (0x00); JSON text holds none, "
                         "and a header is padded with spaces (0x20) only");
  }
  JsonChecker checker("the header", kMetadataKey);
  Json root;
  if (!checker.Parse(header, &root)) {
    return ValueErrorCat(kNotSafetensors, checker.error());
  }
  if (!root.is_object()) {
    return ValueErrorCat(kNotSafetensors,
                         "the header is not a JSON object: ", JsonText(root));
  }
  // JSON allows any whitespace after the object; the format pads with spaces.
  const size_t last = header.find_last_not_of(' ');
  if (last != std::string::npos && header[last] != '}') {
    return ValueErrorCat(
        kNotSafetensors, "byte ", last, " of the header, 0x",
        absl::Hex(static_cast<unsigned char>(header[last]), absl::kZeroPad2),
        ", follows its JSON object; a header is padded with spaces (0x20) "
        "only");
  }
  header.clear();
  header.shrink_to_fit();
  Safetensors result;
  std::vector<Entry> entries;
  for (const std::string& key : checker.root_keys()) {
    const Json& value = *root.find(key);
    if (!value.is_object()) {
      return ValueErrorCat(kNotSafetensors, "the value of ", Quoted(key),
                           " is not an object: ", JsonText(value));
    }
    if (key == kMetadataKey) {
      for (std::string& m : checker.ordered_keys()) {
        const Json& item = *value.find(m);
        const std::string* text = item.get_ptr<const std::string*>();
        if (text == nullptr) {
          return ValueErrorCat(kNotSafetensors, "__metadata__ ", Quoted(m),
                               " is not a string: ", JsonText(item));
        }
        result.metadata.emplace_back(std::move(m), *text);
      }
      continue;
    }
    Entry e;
    e.name = key;
    e.info = &value;
    STRATA_RETURN_IF_ERROR(ReadOffsets(e, buffer));
    entries.push_back(std::move(e));
  }
  STRATA_RETURN_IF_ERROR(CheckCoverage(entries, buffer));

  // Pairs (NOTE [ MXFP4 pairs ]): (P, separator) -> the entries of its halves.
  struct Halves {
    int blocks = -1, scales = -1;
  };
  absl::flat_hash_map<std::pair<std::string, char>, Halves> halves;
  std::vector<PairName> pair_names;
  for (size_t k = 0; k < entries.size(); ++k) {
    pair_names.push_back(ParsePairName(entries[k].name));
    const PairName& pn = pair_names.back();
    if (pn.prefix.empty()) continue;
    Halves& h = halves[{pn.prefix, pn.separator}];
    (pn.blocks ? h.blocks : h.scales) = static_cast<int>(k);
  }
  // Convention groups (NOTE [ Checkpoint conventions ]): name -> the entry
  // of each role; a group claims its members.
  using checkpoint_internal::kNumRoles;
  struct GroupEntries {
    std::array<int, kNumRoles> entry;
    int first = -1;
  };
  absl::flat_hash_map<std::string, GroupEntries> groups;
  std::vector<std::string> group_of(entries.size());
  for (size_t k = 0; k < entries.size(); ++k) {
    const auto parsed = checkpoint_internal::ParseMemberName(entries[k].name);
    if (!parsed) continue;
    auto [it, inserted] = groups.try_emplace(parsed->first);
    if (inserted) it->second.entry.fill(-1);
    it->second.entry[static_cast<int>(parsed->second)] = static_cast<int>(k);
    if (it->second.first < 0) it->second.first = static_cast<int>(k);
  }
  // Members checked on their own, kept while the plans point at them.
  std::vector<std::unique_ptr<checkpoint_internal::Member>> members;
  const checkpoint_internal::Member named;  // Presence alone, for FormsGroup.
  for (auto& [name, g] : groups) {
    checkpoint_internal::Members present{};
    for (int r = 0; r < kNumRoles; ++r) {
      if (g.entry[r] >= 0) present[r] = &named;
    }
    if (!options.convention_groups ||
        !checkpoint_internal::FormsGroup(present)) {
      g.first = -1;  // Its entries are plain.
      continue;
    }
    for (int r = 0; r < kNumRoles; ++r) {
      if (g.entry[r] >= 0) group_of[g.entry[r]] = name;
    }
  }
  std::vector<Planned> planned;
  for (size_t k = 0; k < entries.size(); ++k) {
    if (!group_of[k].empty()) {
      const GroupEntries& g = groups[group_of[k]];
      if (static_cast<int>(k) != g.first) continue;
      Planned p;
      p.name = group_of[k];
      p.group = true;
      checkpoint_internal::Members present{};
      for (int r = 0; r < kNumRoles && p.status.ok(); ++r) {
        if (g.entry[r] < 0) continue;
        const Entry& e = entries[g.entry[r]];
        absl::StatusOr<Checked> checked = CheckEntry(e);
        if (!checked.ok()) {
          p.status = ValueErrorCat("ReadSafetensors: group ", Quoted(p.name),
                                   ": ", checked.status().message());
          break;
        }
        members.push_back(std::make_unique<checkpoint_internal::Member>(
            checkpoint_internal::Member{e.name, checked->dtype,
                                        std::move(checked->shape),
                                        checked->count, e.begin}));
        present[r] = members.back().get();
      }
      if (p.status.ok()) {
        absl::StatusOr<checkpoint_internal::GroupPlan> plan =
            checkpoint_internal::PlanGroup(p.name, present);
        if (plan.ok()) {
          p.group_plan = *std::move(plan);
        } else {
          p.status = plan.status();
        }
      }
      planned.push_back(std::move(p));
      continue;
    }
    const PairName& pn = pair_names[k];
    if (!pn.prefix.empty()) {
      const Halves& h = halves[{pn.prefix, pn.separator}];
      if (h.blocks >= 0 && h.scales >= 0) {
        if (static_cast<int>(k) != std::min(h.blocks, h.scales)) continue;
        Planned p;
        p.name = pn.prefix;
        p.blocks = h.blocks;
        p.scales = h.scales;
        p.status = CheckPair(p, entries);
        planned.push_back(std::move(p));
        continue;
      }
    }
    Planned p;
    p.name = entries[k].name;
    p.first = static_cast<int>(k);
    absl::StatusOr<Checked> checked = CheckEntry(entries[k]);
    if (checked.ok()) {
      p.plain = *std::move(checked);
    } else {
      p.status = checked.status();
    }
    planned.push_back(std::move(p));
  }
  // A pair's name must name nothing else.
  absl::flat_hash_map<std::string, int> uses;
  for (const Planned& p : planned) ++uses[p.name];
  for (Planned& p : planned) {
    if (p.blocks >= 0 && uses[p.name] > 1 && p.status.ok()) {
      p.status = PairError(
          p.name, entries[p.blocks], entries[p.scales],
          absl::StrCat("the file holds another entry named ", Quoted(p.name)));
    }
    if (p.group && uses[p.name] > 1 && p.status.ok()) {
      p.status = ValueErrorCat("ReadSafetensors: group ", Quoted(p.name),
                               ": the file holds another entry named ",
                               Quoted(p.name));
    }
  }

  // Everything is validated: map the data buffer once.
  bool any = false;
  for (const Planned& p : planned) any |= p.status.ok();
  std::shared_ptr<const MappedRegion> region;
  if (any) {
    STRATA_ASSIGN_OR_RETURN(region,
                            MappedRegion::MapFd(fd, path, data_start, buffer));
  }
  for (Planned& p : planned) {
    result.tensors.push_back(
        {p.name, !p.status.ok() ? absl::StatusOr<Tensor>(p.status)
                 : p.group
                     ? checkpoint_internal::BuildGroup(p.group_plan, region)
                 : p.blocks >= 0 ? BuildPair(p, entries, region)
                                 : BuildPlain(p, entries[p.first], region)});
  }
  return result;
}

}  // namespace strata
