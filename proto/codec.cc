#include "proto/codec.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "carrier/carrier.h"
#include "carrier/carrier_registry.h"
#include "carrier/mapped_carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "layout/layout.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace {

absl::StatusOr<const DType*> LookupDType(absl::string_view name,
                                         absl::string_view where) {
  auto dtype = DTypeRegistry::Global().Lookup(name);
  if (!dtype.ok()) return WithContext(dtype.status(), where);
  return *dtype;
}

// "a host", "an external".
absl::string_view Article(absl::string_view noun) {
  return !noun.empty() && absl::string_view("aeiou").find(noun[0]) !=
                              absl::string_view::npos
             ? "an"
             : "a";
}

bool AllocatesHostMemory(absl::string_view carrier_class) {
  return carrier_class == "host" || carrier_class == "external";
}

// The cheap checks of one carrier of the text, made for every carrier before
// any is built: its dtype, its data length, and (for classes that allocate host
// memory) whether its bytes can be allocated at all. Allocates nothing.
absl::Status CheckCarrier(const proto::CarrierProto& c) {
  const std::string where = absl::StrCat("carrier \"", c.id(), "\"");
  STRATA_ASSIGN_OR_RETURN(const DType* dtype, LookupDType(c.dtype(), where));
  if (!CarrierClassRegistry::Global().Lookup(c.carrier_class()).ok()) {
    return absl::OkStatus();  // Not a Carrier: reported by the subtensor.
  }
  const bool mapped = c.carrier_class() == "mapped";
  if (!mapped && (!c.file().empty() || c.file_offset() != 0)) {
    return ValueErrorCat(where, ": ", Article(c.carrier_class()), " ",
                         c.carrier_class(),
                         " carrier has no file; file and file_offset are for "
                         "\"mapped\" carriers");
  }
  // NOTE [ Anonymous mapped carriers ] (carrier/mapped_carrier.h): a mapped
  // carrier with no file is an anonymous mapping, and its data are its bytes.
  if (mapped && !c.file().empty() && !c.data().empty()) {
    return ValueErrorCat(where,
                         ": a mapped carrier of a file never holds data; its "
                         "values are bytes of its file");
  }
  const SimpleDType* simple = dtype->AsSimple();
  if (c.carrier_class() == "recorded" || simple == nullptr || c.size() < 0) {
    if (!c.data().empty()) {
      return ValueErrorCat(where, ": ", Article(c.carrier_class()), " ",
                           c.carrier_class(), " carrier of ", dtype->name(),
                           " and size ", c.size(), " cannot hold data");
    }
    return absl::OkStatus();
  }
  const absl::StatusOr<int64_t> bytes = StorageBytes(*simple, c.size());
  if (!c.data().empty()) {
    if (!bytes.ok()) return WithContext(bytes.status(), where);
    if (static_cast<int64_t>(c.data().size()) != *bytes) {
      return ValueErrorCat(where, ": data holds ", c.data().size(), " bytes; ",
                           c.size(), " values of ", dtype->name(), " need ",
                           *bytes);
    }
  }
  if (AllocatesHostMemory(c.carrier_class())) {
    if (!bytes.ok()) {
      return ResourceExhaustedErrorCat(where, ": ", Article(c.carrier_class()),
                                       " ", c.carrier_class(), " carrier of ",
                                       c.size(), " ", dtype->name(),
                                       " values needs more than ", INT64_MAX,
                                       " bytes; it cannot be allocated");
    }
    if (*bytes > HostCarrier::kMaxHostBytes) {
      return ResourceExhaustedErrorCat(
          where, ": ", Article(c.carrier_class()), " ", c.carrier_class(),
          " carrier of ", c.size(), " ", dtype->name(), " values needs ",
          *bytes, " bytes, above the limit HostCarrier::kMaxHostBytes = ",
          HostCarrier::kMaxHostBytes, " bytes; it cannot be allocated");
    }
  }
  return absl::OkStatus();
}

// Builds one carrier of the text that CheckCarrier accepted. A null result
// means "not a Carrier" (unknown class, or a class without a factory).
absl::StatusOr<std::shared_ptr<Carrier>> BuildCarrier(
    const proto::CarrierProto& c) {
  const std::string where = absl::StrCat("carrier \"", c.id(), "\"");
  STRATA_ASSIGN_OR_RETURN(const DType* dtype, LookupDType(c.dtype(), where));
  auto carrier_class = CarrierClassRegistry::Global().Lookup(c.carrier_class());
  if (!carrier_class.ok()) return std::shared_ptr<Carrier>();  // Not a Carrier.
  const SimpleDType* simple = dtype->AsSimple();
  if (c.carrier_class() == "recorded" || simple == nullptr || c.size() < 0) {
    return std::shared_ptr<Carrier>(
        RecordedCarrier::Create(*dtype, c.size(), c.version()));
  }
  if (c.carrier_class() == "mapped" && c.file().empty() &&
      c.file_offset() == 0) {
    const absl::StatusOr<int64_t> bytes = StorageBytes(*simple, c.size());
    if (!bytes.ok()) return WithContext(bytes.status(), where);
    if (*bytes > 0 && c.data().empty()) {
      return ValueErrorCat(
          where,
          ": a mapped carrier with no file is an anonymous mapping, "
          "and its ",
          *bytes, " bytes must be its data");
    }
    auto carrier =
        MappedCarrier::FromBytes(*simple, c.size(), c.data(), c.version());
    if (!carrier.ok()) return WithContext(carrier.status(), where);
    return std::shared_ptr<Carrier>(*std::move(carrier));
  }
  if (carrier_class->file_factory) {
    auto carrier = carrier_class->file_factory(*simple, c.size(), c.version(),
                                               c.file(), c.file_offset());
    if (!carrier.ok()) return WithContext(carrier.status(), where);
    return *std::move(carrier);
  }
  if (!carrier_class->factory) return std::shared_ptr<Carrier>();
  auto carrier =
      carrier_class->factory(*simple, c.size(), c.version(), c.data());
  if (!carrier.ok()) return WithContext(carrier.status(), where);
  return *std::move(carrier);
}

std::string SchemaText(absl::Span<const SimpleDType* const> schema) {
  std::vector<std::string> names;
  for (const SimpleDType* d : schema) names.push_back(d->name());
  return absl::StrCat("(", absl::StrJoin(names, ", "), ")");
}

// The schema-count check of Representation::Create (same message), made before
// the text's layouts are parsed or its carriers built.
absl::Status CheckSchemaCounts(const DType& logical,
                               const proto::RepresentationProto& proto) {
  STRATA_ASSIGN_OR_RETURN(auto schema, StorageSchema(logical));
  const size_t n = schema.size();
  const size_t subtensors = proto.subtensors_size();
  const size_t adjacent = proto.adjacent_layouts_size();
  if (subtensors != n) {
    return ValueErrorCat("logical dtype ", logical.name(),
                         " has the storage schema ", SchemaText(schema), " of ",
                         n, " entries; got ", subtensors, " subtensors");
  }
  if (adjacent != n - 1) {
    return ValueErrorCat("logical dtype ", logical.name(),
                         " has the storage schema ", SchemaText(schema), " of ",
                         n, " entries, which needs ", n - 1,
                         " adjacent layouts; got ", adjacent);
  }
  return absl::OkStatus();
}

}  // namespace

std::string CarrierId(int64_t index) { return absl::StrCat("c", index); }

proto::RepresentationProto ToProto(const Representation& representation,
                                   const DumpOptions& options) {
  proto::RepresentationProto out;
  out.set_logical_dtype(representation.logical_dtype().name());
  std::vector<const Carrier*> seen;
  for (const Subtensor& s : representation.subtensors()) {
    size_t id = 0;
    while (id < seen.size() && seen[id] != s.carrier.get()) ++id;
    if (id == seen.size()) {
      seen.push_back(s.carrier.get());
      proto::CarrierProto* c = out.add_carriers();
      c->set_id(CarrierId(id));
      c->set_carrier_class(std::string(s.carrier->class_name()));
      c->set_dtype(s.carrier->dtype().name());
      c->set_size(s.carrier->size());
      c->set_version(s.carrier->version());
      // NOTE [ Dumps of mapped carriers ]: without data a mapped carrier
      // names its file and offset; with data it is a host carrier holding a
      // copy of the bytes (a mapped carrier never holds data).
      if (const auto* m = dynamic_cast<const MappedCarrier*>(s.carrier.get())) {
        if (options.include_data && m->data() != nullptr) {
          c->set_carrier_class("host");
        } else if (m->anonymous()) {
          // No file to name: the bytes themselves (NOTE [ Anonymous mapped
          // carriers ]).
          const absl::StatusOr<int64_t> bytes =
              StorageBytes(*m->dtype().AsSimple(), m->size());
          if (bytes.ok() && *bytes > 0 && m->data() != nullptr) {
            c->set_data(static_cast<const char*>(m->data()), *bytes);
          }
        } else {
          c->set_file(m->file());
          c->set_file_offset(m->file_offset());
        }
      }
      const SimpleDType* simple = s.carrier->dtype().AsSimple();
      if (options.include_data && simple != nullptr &&
          s.carrier->data() != nullptr) {
        // A carrier that holds data has a valid byte count; checked anyway.
        const absl::StatusOr<int64_t> bytes =
            StorageBytes(*simple, s.carrier->size());
        if (bytes.ok()) {
          c->set_data(static_cast<const char*>(s.carrier->data()), *bytes);
        }
      }
    }
    proto::SubtensorProto* sp = out.add_subtensors();
    sp->set_storage_dtype(s.storage_dtype->name());
    sp->set_carrier(CarrierId(id));
    sp->set_offset(s.offset);
    sp->set_placement(s.placement.ToString());
  }
  for (const Layout& a : representation.adjacent_layouts()) {
    out.add_adjacent_layouts(a.ToString());
  }
  return out;
}

proto::RepresentationProto ToProto(const Tensor& tensor,
                                   const DumpOptions& options) {
  return ToProto(TensorAccess::representation(tensor), options);
}

absl::StatusOr<Replayed> ReplayWithIds(
    const proto::RepresentationProto& proto) {
  STRATA_ASSIGN_OR_RETURN(const DType* logical,
                          LookupDType(proto.logical_dtype(), "logical dtype"));
  STRATA_RETURN_IF_ERROR(CheckSchemaCounts(*logical, proto));
  // Every carrier is checked; none is built yet.
  absl::flat_hash_map<absl::string_view, int> index;
  index.reserve(proto.carriers_size());
  for (int k = 0; k < proto.carriers_size(); ++k) {
    const proto::CarrierProto& c = proto.carriers(k);
    if (!index.emplace(c.id(), k).second) {
      return ValueErrorCat("carrier id \"", c.id(), "\" appears twice");
    }
    STRATA_RETURN_IF_ERROR(CheckCarrier(c));
  }
  // The subtensors (as many as the schema has entries) build the carriers they
  // name, each once, in first-use order.
  absl::flat_hash_map<int, std::shared_ptr<Carrier>> built;
  std::vector<SubtensorCandidate> subtensors;
  std::vector<std::pair<const Carrier*, std::string>> ids;
  for (int i = 0; i < proto.subtensors_size(); ++i) {
    const proto::SubtensorProto& s = proto.subtensors(i);
    STRATA_ASSIGN_OR_RETURN(
        const DType* storage,
        LookupDType(s.storage_dtype(), absl::StrCat("subtensor ", i)));
    std::shared_ptr<Carrier> carrier;
    if (auto it = index.find(s.carrier()); it != index.end()) {
      auto b = built.find(it->second);
      if (b == built.end()) {
        STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Carrier> made,
                                BuildCarrier(proto.carriers(it->second)));
        b = built.emplace(it->second, std::move(made)).first;
        if (b->second != nullptr)
          ids.emplace_back(b->second.get(), s.carrier());
      }
      carrier = b->second;
    }
    subtensors.push_back(
        {storage, std::move(carrier), s.offset(), ParseLayout(s.placement())});
  }
  std::vector<absl::StatusOr<Layout>> adjacent;
  for (const std::string& a : proto.adjacent_layouts()) {
    adjacent.push_back(ParseLayout(a));
  }
  built.clear();  // Only the representation keeps carriers.
  STRATA_ASSIGN_OR_RETURN(auto representation,
                          Representation::Create(logical, std::move(subtensors),
                                                 std::move(adjacent)));
  return Replayed{MakeTensor(std::move(representation)), std::move(ids)};
}

absl::StatusOr<Tensor> Replay(const proto::RepresentationProto& proto) {
  STRATA_ASSIGN_OR_RETURN(Replayed replayed, ReplayWithIds(proto));
  return std::move(replayed.tensor);
}

std::string ToText(const proto::RepresentationProto& proto) {
  std::string text;
  google::protobuf::TextFormat::Printer printer;
  printer.SetUseUtf8StringEscaping(false);
  printer.PrintToString(proto, &text);
  return text;
}

namespace {

class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (error_.empty()) {
      error_ = absl::StrCat("line ", line + 1, ", column ", column + 1, ": ",
                            message);
    }
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

}  // namespace

absl::StatusOr<proto::RepresentationProto> ParseText(absl::string_view text) {
  if (static_cast<int64_t>(text.size()) > kMaxTextBytes) {
    return ResourceExhaustedErrorCat("ParseText: the text holds ", text.size(),
                                     " bytes, above the limit kMaxTextBytes = ",
                                     kMaxTextBytes, " bytes (64 MiB)");
  }
  proto::RepresentationProto proto;
  FirstErrorCollector errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  // Bound recursion so hostile text cannot exhaust the stack.
  parser.SetRecursionLimit(16);
  google::protobuf::io::ArrayInputStream input(text.data(),
                                               static_cast<int>(text.size()));
  if (!parser.Parse(&input, &proto)) {
    return TypeErrorCat("not a RepresentationProto: ", errors.error().empty()
                                                           ? "unparsable text"
                                                           : errors.error());
  }
  return proto;
}

}  // namespace strata
