// Thompson NFA construction and a lazily built DFA (see ptb/regex.h).
#include "eval/ptb/regex.h"

#include <algorithm>

#include "eval/ptb/unicode.h"

namespace saccade {

struct PtbRe {
  enum class Kind { kSet, kSeq, kAlt, kStar, kEmpty } kind;
  PtbCharSet set;
  std::vector<PtbReP> items;
};

namespace {

PtbReP make(PtbRe::Kind kind, std::vector<PtbReP> items = {}) {
  auto re = std::make_shared<PtbRe>();
  re->kind = kind;
  re->items = std::move(items);
  return re;
}

bool is_ascii_letter(char16_t unit) {
  return (unit | 0x20) >= u'a' && (unit | 0x20) <= u'z';
}

}  // namespace

bool PtbCharSet::contains(char16_t unit) const {
  bool in = bits != 0 && (ptb_char_bits(unit) & bits) != 0;
  for (const auto& [low, high] : ranges) in = in || (unit >= low && unit <= high);
  return in != negated;
}

PtbCharSet chars(std::u16string_view spec) {
  PtbCharSet set;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (i + 2 < spec.size() && spec[i + 1] == u'-') {
      set.ranges.emplace_back(spec[i], spec[i + 2]);
      i += 2;
    } else {
      set.ranges.emplace_back(spec[i], spec[i]);
    }
  }
  return set;
}

PtbCharSet with_bits(uint8_t bits) {
  PtbCharSet set;
  set.bits = bits;
  return set;
}

PtbCharSet operator|(PtbCharSet a, const PtbCharSet& b) {
  a.ranges.insert(a.ranges.end(), b.ranges.begin(), b.ranges.end());
  a.bits |= b.bits;
  return a;
}

PtbCharSet operator~(PtbCharSet set) {
  set.negated = !set.negated;
  return set;
}

PtbCharSet any_unit() {
  return ~PtbCharSet{};
}

PtbReP set(const PtbCharSet& chars_in) {
  auto re = std::make_shared<PtbRe>();
  re->kind = PtbRe::Kind::kSet;
  re->set = chars_in;
  return re;
}

PtbReP lit(std::u16string_view text) {
  std::vector<PtbReP> items;
  for (const char16_t unit : text) {
    PtbCharSet one;
    one.ranges.emplace_back(unit, unit);
    if (is_ascii_letter(unit)) one.ranges.emplace_back(unit ^ 0x20, unit ^ 0x20);
    items.push_back(set(one));
  }
  return seq(std::move(items));
}

PtbReP lits(std::vector<std::u16string_view> texts) {
  std::vector<PtbReP> items;
  for (const auto text : texts) items.push_back(lit(text));
  return alt(std::move(items));
}

PtbReP seq(std::vector<PtbReP> items) {
  return make(PtbRe::Kind::kSeq, std::move(items));
}
PtbReP alt(std::vector<PtbReP> items) {
  return make(PtbRe::Kind::kAlt, std::move(items));
}
PtbReP star(PtbReP item) {
  return make(PtbRe::Kind::kStar, {std::move(item)});
}
PtbReP plus(PtbReP item) {
  return seq({item, star(item)});
}
PtbReP opt(PtbReP item) {
  return alt({std::move(item), make(PtbRe::Kind::kEmpty)});
}

PtbReP rep(PtbReP item, int min, int max) {
  std::vector<PtbReP> items(min, item);
  for (int k = min; k < max; ++k) items.push_back(opt(item));
  return seq(std::move(items));
}

int PtbNfa::new_state(int set_index) {
  states_.push_back(State{set_index, -1, -1, -1});
  return static_cast<int>(states_.size()) - 1;
}

PtbNfa::Fragment PtbNfa::compile(const PtbRe& re) {
  switch (re.kind) {
    case PtbRe::Kind::kSet: {
      sets_.push_back(re.set);
      const int start = new_state(static_cast<int>(sets_.size()) - 1);
      const int out = new_state();
      states_[start].next = out;
      return {start, out};
    }
    case PtbRe::Kind::kSeq: {
      Fragment whole{new_state(), -1};
      whole.out = whole.start;
      for (const auto& item : re.items) {
        const Fragment part = compile(*item);
        states_[whole.out].next = part.start;
        whole.out = part.out;
      }
      return whole;
    }
    case PtbRe::Kind::kAlt: {
      // A chain of binary splits, one per alternative, all joining at `out`.
      const int out = new_state();
      const int start = new_state();
      int split = start;
      for (size_t k = 0; k < re.items.size(); ++k) {
        const Fragment part = compile(*re.items[k]);
        states_[part.out].next = out;
        states_[split].next = part.start;
        if (k + 1 < re.items.size()) {
          const int following = new_state();
          states_[split].next2 = following;
          split = following;
        }
      }
      return {start, out};
    }
    case PtbRe::Kind::kStar: {
      const int loop = new_state();
      const int out = new_state();
      const Fragment body = compile(*re.items[0]);
      states_[loop].next = body.start;
      states_[loop].next2 = out;
      states_[body.out].next = loop;
      return {loop, out};
    }
    case PtbRe::Kind::kEmpty:
    default: {
      const int only = new_state();
      return {only, only};
    }
  }
}

int PtbNfa::add(const PtbReP& pattern) {
  const Fragment body = compile(*pattern);
  states_[body.out].accept = static_cast<int>(rule_starts_.size());
  rule_starts_.push_back(body.start);
  return static_cast<int>(rule_starts_.size()) - 1;
}

// Extends `states` with every state reachable by epsilon moves; sorted, without duplicates.
void PtbNfa::closure(std::vector<int>& states) const {
  std::vector<char> seen(states_.size(), 0);
  std::vector<int> stack = states;
  states.clear();
  while (!stack.empty()) {
    const int s = stack.back();
    stack.pop_back();
    if (s < 0 || seen[s]) continue;
    seen[s] = 1;
    states.push_back(s);
    if (states_[s].set < 0) {
      stack.push_back(states_[s].next);
      stack.push_back(states_[s].next2);
    }
  }
  std::sort(states.begin(), states.end());
}

int PtbNfa::dfa_for(std::vector<int> states) {
  closure(states);
  const auto found = dfa_index_.find(states);
  if (found != dfa_index_.end()) return found->second;
  DfaState dfa;
  for (const int s : states) {
    if (states_[s].accept >= 0) dfa.rules.push_back(states_[s].accept);
  }
  std::sort(dfa.rules.begin(), dfa.rules.end());
  std::fill(std::begin(dfa.ascii), std::end(dfa.ascii), -2);
  dfa.nfa_states = states;
  dfa_.push_back(std::move(dfa));
  const int index = static_cast<int>(dfa_.size()) - 1;
  dfa_index_.emplace(std::move(states), index);
  return index;
}

// The DFA state after `unit`, or -1 when no NFA state survives.
int PtbNfa::step(int dfa, char16_t unit) {
  if (unit < 128 && dfa_[dfa].ascii[unit] != -2) return dfa_[dfa].ascii[unit];
  if (unit >= 128) {
    const auto found = dfa_[dfa].other.find(unit);
    if (found != dfa_[dfa].other.end()) return found->second;
  }
  std::vector<int> next;
  for (const int s : dfa_[dfa].nfa_states) {
    if (states_[s].set >= 0 && sets_[states_[s].set].contains(unit)) next.push_back(states_[s].next);
  }
  const int target = next.empty() ? -1 : dfa_for(std::move(next));
  if (unit < 128) {
    dfa_[dfa].ascii[unit] = target;
  } else {
    dfa_[dfa].other.emplace(unit, target);
  }
  return target;
}

PtbNfa::Match PtbNfa::longest(std::u16string_view text, size_t begin) {
  if (start_dfa_.empty()) start_dfa_.assign(rule_starts_.size() + 1, -1);
  int& start = start_dfa_.back();
  if (start < 0) start = dfa_for(rule_starts_);
  Match best;
  int dfa = start;
  for (size_t i = begin; i < text.size() && dfa >= 0;) {
    dfa = step(dfa, text[i++]);
    if (dfa >= 0 && !dfa_[dfa].rules.empty()) best = {i, dfa_[dfa].rules.front()};
  }
  return best;
}

std::vector<size_t> PtbNfa::ends(std::u16string_view text, size_t begin, size_t limit, int rule) {
  if (start_dfa_.empty()) start_dfa_.assign(rule_starts_.size() + 1, -1);
  int& start = start_dfa_[rule];
  if (start < 0) start = dfa_for({rule_starts_[rule]});
  std::vector<size_t> found;
  int dfa = start;
  if (!dfa_[dfa].rules.empty()) found.push_back(begin);
  for (size_t i = begin; i < limit && dfa >= 0;) {
    dfa = step(dfa, text[i++]);
    if (dfa >= 0 && !dfa_[dfa].rules.empty()) found.push_back(i);
  }
  return found;
}

}  // namespace saccade
