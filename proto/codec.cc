#include "proto/codec.h"

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "carrier/carrier_registry.h"
#include "core/errors.h"
#include "core/representation.h"
#include "core/status_macros.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "layout/layout.h"

namespace strata {
namespace {

absl::StatusOr<const DType*> LookupDType(absl::string_view name,
                                         absl::string_view where) {
  auto dtype = DTypeRegistry::Global().Lookup(name);
  if (!dtype.ok()) return WithContext(dtype.status(), where);
  return *dtype;
}

// Builds one carrier of the text. A null result means "not a Carrier" (unknown
// class).
absl::StatusOr<std::shared_ptr<Carrier>> BuildCarrier(
    const proto::CarrierProto& c) {
  const std::string where = absl::StrCat("carrier \"", c.id(), "\"");
  STRATA_ASSIGN_OR_RETURN(const DType* dtype, LookupDType(c.dtype(), where));
  auto carrier_class = CarrierClassRegistry::Global().Lookup(c.carrier_class());
  if (!carrier_class.ok()) return std::shared_ptr<Carrier>();  // Not a Carrier.
  const SimpleDType* simple = dtype->AsSimple();
  if (c.carrier_class() == "recorded" || simple == nullptr || c.size() < 0) {
    if (!c.data().empty()) {
      return ValueErrorCat(where, ": a ", c.carrier_class(), " carrier of ",
                           dtype->name(), " and size ", c.size(),
                           " cannot hold data");
    }
    return std::shared_ptr<Carrier>(
        RecordedCarrier::Create(*dtype, c.size(), c.version()));
  }
  if (!c.data().empty()) {
    STRATA_ASSIGN_OR_RETURN(const int64_t bytes,
                            StorageBytes(*simple, c.size()));
    if (static_cast<int64_t>(c.data().size()) != bytes) {
      return ValueErrorCat(where, ": data holds ", c.data().size(), " bytes; ",
                           c.size(), " values of ", dtype->name(), " need ",
                           bytes);
    }
  }
  if (!carrier_class->factory) return std::shared_ptr<Carrier>();
  auto carrier =
      carrier_class->factory(*simple, c.size(), c.version(), c.data());
  if (!carrier.ok()) return WithContext(carrier.status(), where);
  return *std::move(carrier);
}

}  // namespace

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
      c->set_id(absl::StrCat("c", id));
      c->set_carrier_class(std::string(s.carrier->class_name()));
      c->set_dtype(s.carrier->dtype().name());
      c->set_size(s.carrier->size());
      c->set_version(s.carrier->version());
      const SimpleDType* simple = s.carrier->dtype().AsSimple();
      if (options.include_data && simple != nullptr &&
          s.carrier->data() != nullptr) {
        const int64_t bytes = *StorageBytes(*simple, s.carrier->size());
        c->set_data(static_cast<const char*>(s.carrier->data()), bytes);
      }
    }
    proto::SubtensorProto* sp = out.add_subtensors();
    sp->set_storage_dtype(s.storage_dtype->name());
    sp->set_carrier(absl::StrCat("c", id));
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
  return ToProto(tensor.representation(), options);
}

absl::StatusOr<Replayed> ReplayWithIds(
    const proto::RepresentationProto& proto) {
  STRATA_ASSIGN_OR_RETURN(const DType* logical,
                          LookupDType(proto.logical_dtype(), "logical dtype"));
  absl::flat_hash_map<std::string, std::shared_ptr<Carrier>> carriers;
  for (const proto::CarrierProto& c : proto.carriers()) {
    if (carriers.contains(c.id())) {
      return ValueErrorCat("carrier id \"", c.id(), "\" appears twice");
    }
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Carrier> carrier, BuildCarrier(c));
    carriers.emplace(c.id(), std::move(carrier));
  }
  std::vector<SubtensorCandidate> subtensors;
  std::vector<std::pair<const Carrier*, std::string>> ids;
  for (int i = 0; i < proto.subtensors_size(); ++i) {
    const proto::SubtensorProto& s = proto.subtensors(i);
    STRATA_ASSIGN_OR_RETURN(
        const DType* storage,
        LookupDType(s.storage_dtype(), absl::StrCat("subtensor ", i)));
    auto it = carriers.find(s.carrier());
    std::shared_ptr<Carrier> carrier =
        it == carriers.end() ? nullptr : it->second;
    if (carrier != nullptr) {
      bool seen = false;
      for (const auto& entry : ids) seen |= entry.first == carrier.get();
      if (!seen) ids.emplace_back(carrier.get(), s.carrier());
    }
    subtensors.push_back(
        {storage, std::move(carrier), s.offset(), ParseLayout(s.placement())});
  }
  std::vector<absl::StatusOr<Layout>> adjacent;
  for (const std::string& a : proto.adjacent_layouts()) {
    adjacent.push_back(ParseLayout(a));
  }
  carriers.clear();  // Only the representation keeps carriers.
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
  proto::RepresentationProto proto;
  FirstErrorCollector errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  // Bound recursion so hostile text cannot exhaust the stack.
  parser.SetRecursionLimit(16);
  if (!parser.ParseFromString(std::string(text), &proto)) {
    return TypeErrorCat("not a RepresentationProto: ", errors.error().empty()
                                                           ? "unparsable text"
                                                           : errors.error());
  }
  return proto;
}

}  // namespace strata
