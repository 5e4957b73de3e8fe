// Test doubles for the spec tests: a carrier class that records releases and
// reports any dtype and size, a subclass of it, and a rule that records its
// calls.
#ifndef STRATA_TESTS_SPEC_TEST_CARRIERS_H_
#define STRATA_TESTS_SPEC_TEST_CARRIERS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "carrier/carrier.h"
#include "dtype/dtype.h"
#include "dtype/representation_rule.h"

namespace strata {
namespace testing {

class RecordingCarrier : public Carrier {
 public:
  static std::shared_ptr<RecordingCarrier> Make(const DType& dtype,
                                                int64_t size) {
    return std::shared_ptr<RecordingCarrier>(new RecordingCarrier(dtype, size));
  }
  absl::string_view class_name() const override { return "recording"; }
  int releases() const { return releases_; }

 protected:
  RecordingCarrier(const DType& dtype, int64_t size)
      : Carrier(&dtype, size, 0) {}
  void ReleaseStorage() override { ++releases_; }

 private:
  int releases_ = 0;
};

class RecordingCarrierSubclass final : public RecordingCarrier {
 public:
  static std::shared_ptr<RecordingCarrierSubclass> Make(const DType& dtype,
                                                        int64_t size) {
    return std::shared_ptr<RecordingCarrierSubclass>(
        new RecordingCarrierSubclass(dtype, size));
  }

 private:
  using RecordingCarrier::RecordingCarrier;
};

// A carrier whose class is defined outside C++ (as a Python subclass of
// strata.Carrier is): one C++ type for every foreign class, told apart by
// foreign_class().
class ForeignClassCarrier final : public Carrier {
 public:
  static std::shared_ptr<ForeignClassCarrier> Make(const DType& dtype,
                                                   int64_t size,
                                                   const char* foreign_name) {
    return std::shared_ptr<ForeignClassCarrier>(
        new ForeignClassCarrier(dtype, size, foreign_name));
  }
  absl::string_view class_name() const override { return foreign_name_; }
  const void* foreign_class() const override { return foreign_name_; }

 private:
  ForeignClassCarrier(const DType& dtype, int64_t size,
                      const char* foreign_name)
      : Carrier(&dtype, size, 0), foreign_name_(foreign_name) {}
  const char* foreign_name_;
};

// Appends its name to a shared log each time it runs; fails when told to.
class LoggingRule final : public RepresentationRule {
 public:
  LoggingRule(std::string name, std::shared_ptr<std::vector<std::string>> log,
              absl::Status result = absl::OkStatus())
      : name_(std::move(name)),
        log_(std::move(log)),
        result_(std::move(result)) {}
  absl::string_view name() const override { return name_; }
  absl::Status Validate(
      const RepresentationValidationContext& context) const override {
    log_->push_back(name_);
    contexts_.push_back(&context);
    return result_;
  }
  mutable std::vector<const RepresentationValidationContext*> contexts_;

 private:
  std::string name_;
  std::shared_ptr<std::vector<std::string>> log_;
  absl::Status result_;
};

}  // namespace testing
}  // namespace strata

#endif  // STRATA_TESTS_SPEC_TEST_CARRIERS_H_
