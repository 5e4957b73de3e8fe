#include "carrier/carrier_registry.h"

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {

struct CarrierClassRegistry::State {
  mutable std::mutex mu;
  std::vector<CarrierClass> classes;
};

namespace {

absl::Status FillFrom(Carrier& carrier, absl::string_view data) {
  if (!data.empty())
    std::memcpy(carrier.mutable_data(), data.data(), data.size());
  return absl::OkStatus();
}

}  // namespace

CarrierClassRegistry::CarrierClassRegistry() : state_(new State) {
  state_->classes.push_back(
      {"host", typeid(HostCarrier),
       [](const SimpleDType& dtype, int64_t size, uint64_t version,
          absl::string_view data) -> absl::StatusOr<std::shared_ptr<Carrier>> {
         STRATA_ASSIGN_OR_RETURN(auto carrier,
                                 HostCarrier::Create(dtype, size, version));
         STRATA_RETURN_IF_ERROR(FillFrom(*carrier, data));
         return std::shared_ptr<Carrier>(std::move(carrier));
       }});
  state_->classes.push_back(
      {"external", typeid(ExternalCarrier),
       [](const SimpleDType& dtype, int64_t size, uint64_t version,
          absl::string_view data) -> absl::StatusOr<std::shared_ptr<Carrier>> {
         // Replayed external memory is owned by a host buffer the deleter
         // frees.
         STRATA_ASSIGN_OR_RETURN(std::shared_ptr<HostCarrier> buffer,
                                 HostCarrier::Create(dtype, size));
         STRATA_RETURN_IF_ERROR(FillFrom(*buffer, data));
         void* bytes = buffer->mutable_data();
         STRATA_ASSIGN_OR_RETURN(
             auto carrier,
             ExternalCarrier::Create(
                 dtype, size, bytes, [buffer]() mutable { buffer.reset(); },
                 version));
         return std::shared_ptr<Carrier>(std::move(carrier));
       }});
  state_->classes.push_back(
      {"recorded", typeid(RecordedCarrier),
       [](const SimpleDType& dtype, int64_t size, uint64_t version,
          absl::string_view) -> absl::StatusOr<std::shared_ptr<Carrier>> {
         return std::shared_ptr<Carrier>(
             RecordedCarrier::Create(dtype, size, version));
       }});
  state_->classes.push_back(
      {"mapped", typeid(MappedCarrier), nullptr,
       [](const SimpleDType& dtype, int64_t size, uint64_t version,
          const std::string& file,
          int64_t file_offset) -> absl::StatusOr<std::shared_ptr<Carrier>> {
         STRATA_ASSIGN_OR_RETURN(
             auto carrier,
             MappedCarrier::Open(dtype, size, file, file_offset, version));
         return std::shared_ptr<Carrier>(std::move(carrier));
       }});
}

CarrierClassRegistry& CarrierClassRegistry::Global() {
  static CarrierClassRegistry* registry = new CarrierClassRegistry;
  return *registry;
}

absl::Status CarrierClassRegistry::Register(CarrierClass carrier_class) {
  std::lock_guard<std::mutex> lock(state_->mu);
  for (const CarrierClass& c : state_->classes) {
    if (c.name == carrier_class.name || c.type == carrier_class.type) {
      return ValueErrorCat("carrier class \"", carrier_class.name,
                           "\" clashes with the registered class \"", c.name,
                           "\"");
    }
  }
  state_->classes.push_back(std::move(carrier_class));
  return absl::OkStatus();
}

absl::StatusOr<CarrierClass> CarrierClassRegistry::Lookup(
    absl::string_view name) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  for (const CarrierClass& c : state_->classes) {
    if (c.name == name) return c;
  }
  return TypeErrorCat("unknown carrier class \"", name.substr(0, 80), "\"");
}

std::vector<std::string> CarrierClassRegistry::Names() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  std::vector<std::string> names;
  for (const CarrierClass& c : state_->classes) names.push_back(c.name);
  return names;
}

}  // namespace strata
