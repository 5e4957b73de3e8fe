// Carrier classes by name ("host", "external", "recorded", "mapped"), for dump
// and replay.
#ifndef STRATA_CARRIER_CARRIER_REGISTRY_H_
#define STRATA_CARRIER_CARRIER_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "carrier/carrier.h"
#include "carrier/mapped_carrier.h"
#include "dtype/dtype.h"

namespace strata {

struct CarrierClass {
  // Builds a carrier of this class holding `data` (packed little-endian bytes;
  // empty means zero-filled) at `version`. The dtype is simple and the size
  // non-negative here: replay builds anything else as a RecordedCarrier.
  using Factory = std::function<absl::StatusOr<std::shared_ptr<Carrier>>(
      const SimpleDType& dtype, int64_t size, uint64_t version,
      absl::string_view data)>;

  // Builds a carrier of this class over `size` values at byte `file_offset`
  // of the file `file` (the "mapped" class: replay maps the file again).
  using FileFactory = std::function<absl::StatusOr<std::shared_ptr<Carrier>>(
      const SimpleDType& dtype, int64_t size, uint64_t version,
      const std::string& file, int64_t file_offset)>;

  std::string name;
  std::type_index type;
  Factory factory;  // Null for classes that cannot be rebuilt with data.
  FileFactory file_factory = nullptr;  // Null for classes not over a file.
};

class CarrierClassRegistry {
 public:
  // The process-wide registry, holding host, external, recorded and mapped.
  // Thread-safe.
  static CarrierClassRegistry& Global();

  // Errors (ValueError): the name or the type is already registered.
  absl::Status Register(CarrierClass carrier_class);
  // Errors (TypeError): no carrier class of that name (what replay reports for
  // it).
  absl::StatusOr<CarrierClass> Lookup(absl::string_view name) const;
  std::vector<std::string> Names() const;

 private:
  CarrierClassRegistry();
  struct State;
  State* state_;
};

}  // namespace strata

#endif  // STRATA_CARRIER_CARRIER_REGISTRY_H_
