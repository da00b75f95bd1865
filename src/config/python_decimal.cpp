// Python's decimal.Decimal for Hydra's FloatRange: exact construction, 28-digit sums, comparison.
#include "config/python_decimal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace saccade::config_detail {

PythonDecimal::PythonDecimal(double value) : negative_(std::signbit(value)) {
  // glibc prints a double's exact decimal expansion; 767 significant digits hold any double.
  char text[900];
  std::snprintf(text, sizeof(text), "%.800e", std::fabs(value));
  const std::string printed = text;
  const size_t e = printed.find('e');
  digits_ = printed.substr(0, 1) + printed.substr(2, e - 2);
  exponent_ = std::stoll(printed.substr(e + 1)) - 800;
  normalize();
}

PythonDecimal PythonDecimal::operator+(const PythonDecimal& other) const {
  // Both coefficients over the smaller exponent, then their signed sum, exactly.
  const int64_t exponent = std::min(exponent_, other.exponent_);
  std::string a = digits_ + std::string(static_cast<size_t>(exponent_ - exponent), '0');
  std::string b = other.digits_ + std::string(static_cast<size_t>(other.exponent_ - exponent), '0');
  const size_t width = std::max(a.size(), b.size()) + 1;
  a.insert(0, width - a.size(), '0');
  b.insert(0, width - b.size(), '0');
  PythonDecimal sum;
  sum.exponent_ = exponent;
  if (negative_ == other.negative_) {
    sum.negative_ = negative_;
    sum.digits_ = add_digits(a, b);
  } else if (a >= b) {  // equal widths: text order is numeric order
    sum.negative_ = negative_;
    sum.digits_ = subtract_digits(a, b);
  } else {
    sum.negative_ = other.negative_;
    sum.digits_ = subtract_digits(b, a);
  }
  sum.normalize();
  sum.round_to(28);
  return sum;
}

int PythonDecimal::compare(const PythonDecimal& other) const {
  PythonDecimal negated = other;
  negated.negative_ = !other.negative_;
  const PythonDecimal difference = *this + negated;  // rounding keeps a difference's sign
  return difference.digits_.empty() ? 0 : difference.negative_ ? -1 : 1;
}

double PythonDecimal::to_double() const {
  if (digits_.empty()) return negative_ ? -0.0 : 0.0;
  return std::strtod(((negative_ ? "-" : "") + digits_ + "e" + std::to_string(exponent_)).c_str(), nullptr);
}

std::string PythonDecimal::add_digits(const std::string& a, const std::string& b) {
  std::string out(a.size(), '0');
  int carry = 0;
  for (size_t i = a.size(); i-- > 0;) {
    const int sum = (a[i] - '0') + (b[i] - '0') + carry;
    out[i] = static_cast<char>('0' + sum % 10);
    carry = sum / 10;
  }
  return out;
}

std::string PythonDecimal::subtract_digits(const std::string& a, const std::string& b) {
  std::string out(a.size(), '0');
  int borrow = 0;
  for (size_t i = a.size(); i-- > 0;) {
    int difference = (a[i] - '0') - (b[i] - '0') - borrow;
    borrow = difference < 0;
    out[i] = static_cast<char>('0' + difference + 10 * borrow);
  }
  return out;
}

void PythonDecimal::normalize() {
  const size_t first = digits_.find_first_not_of('0');
  if (first == std::string::npos) {
    digits_.clear();
    exponent_ = 0;
    return;
  }
  digits_.erase(0, first);
  const size_t last = digits_.find_last_not_of('0');
  exponent_ += static_cast<int64_t>(digits_.size() - 1 - last);
  digits_.erase(last + 1);
}

void PythonDecimal::round_to(size_t precision) {
  if (digits_.size() <= precision) return;
  const char dropped = digits_[precision];
  const bool rest = digits_.find_first_not_of('0', precision + 1) != std::string::npos;
  exponent_ += static_cast<int64_t>(digits_.size() - precision);
  digits_.erase(precision);
  const bool odd = (digits_.back() - '0') % 2 == 1;
  if (dropped > '5' || (dropped == '5' && (rest || odd))) {
    size_t i = digits_.size();
    while (i > 0 && digits_[i - 1] == '9') digits_[--i] = '0';
    if (i == 0) {
      digits_.insert(0, "1");
    } else {
      ++digits_[i - 1];
    }
  }
  normalize();  // a carry into a new digit leaves only zeros after it
}

}  // namespace saccade::config_detail
