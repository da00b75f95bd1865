// Python's decimal.Decimal, in which range() sums float steps as Hydra does (not public API).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace saccade::config_detail {

// Python's decimal.Decimal as far as Hydra's FloatRange uses it: made exactly from a double, sums
// rounded to the default context's 28 significant digits, half to even.
class PythonDecimal {
 public:
  explicit PythonDecimal(double value);

  PythonDecimal operator+(const PythonDecimal& other) const;

  // -1, 0 or 1 as this is below, equal to or above `other`.
  int compare(const PythonDecimal& other) const;

  double to_double() const;  // strtod rounds correctly, as Python's float(Decimal) does

 private:
  PythonDecimal() = default;

  static std::string add_digits(const std::string& a, const std::string& b);
  static std::string subtract_digits(const std::string& a, const std::string& b);  // a >= b

  // No leading zeros, no trailing ones (the value is unchanged); zero is no digits.
  void normalize();

  void round_to(size_t precision);

  bool negative_ = false;
  std::string digits_;    // the coefficient's decimal digits
  int64_t exponent_ = 0;  // the value is +-digits_ x 10^exponent_
};

}  // namespace saccade::config_detail
