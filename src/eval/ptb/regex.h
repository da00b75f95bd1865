// A small regular-expression engine for the PTB lexer: patterns are built in code from
// combinators, compiled to one NFA, and matched by a lazily built DFA, so that scanning costs
// one table step per UTF-16 unit once the states it meets are built.
//
//   PtbNfa nfa;
//   nfa.add(seq({lit(u"mr"), lit(u".")}));        // rule 0
//   nfa.add(plus(set(chars(u"a-z"))));         // rule 1
//   nfa.longest(u"Mr. X", 0)                    // {3, 0}: longest match, earliest rule on a tie
//
// Literals are caseless for ASCII letters and character sets are not, as in a JFlex
// specification with %caseless.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace saccade {

// A set of UTF-16 code units: listed ranges plus every unit with one of `bits` (PtbCharBit).
struct PtbCharSet {
  std::vector<std::pair<char16_t, char16_t>> ranges;
  uint8_t bits = 0;
  bool negated = false;
  bool contains(char16_t unit) const;
};
// The units of `spec`, where "a-z" is a range (a '-' first or last is itself).
PtbCharSet chars(std::u16string_view spec);
PtbCharSet with_bits(uint8_t bits);
PtbCharSet operator|(PtbCharSet a, const PtbCharSet& b);
PtbCharSet operator~(PtbCharSet set);
// Any unit.
PtbCharSet any_unit();

struct PtbRe;
using PtbReP = std::shared_ptr<const PtbRe>;
PtbReP lit(std::u16string_view text);  // caseless for ASCII letters
PtbReP set(const PtbCharSet& set);
PtbReP seq(std::vector<PtbReP> items);
PtbReP alt(std::vector<PtbReP> items);
PtbReP star(PtbReP item);
PtbReP plus(PtbReP item);
PtbReP opt(PtbReP item);
PtbReP rep(PtbReP item, int min, int max);
// Alternatives of caseless literals.
PtbReP lits(std::vector<std::u16string_view> texts);

// Several patterns ("rules") compiled together.
class PtbNfa {
 public:
  // Adds a rule and returns its index.
  int add(const PtbReP& pattern);

  struct Match {
    size_t end = 0;  // text position after the match
    int rule = -1;   // -1: no rule matches a non-empty prefix
  };
  // The longest match of any rule that starts at `begin`; on equal length, the earliest rule.
  Match longest(std::u16string_view text, size_t begin);
  // Every end position of matches of rule `rule` starting at `begin`, up to `limit`, ascending.
  std::vector<size_t> ends(std::u16string_view text, size_t begin, size_t limit, int rule);

 private:
  struct State {
    int set = -1;  // index into sets_, or -1 for an epsilon state
    int next = -1;
    int next2 = -1;
    int accept = -1;  // rule index when this state accepts
  };
  struct Fragment {
    int start;
    int out;  // the dangling end state (epsilon, next unset)
  };
  struct DfaState {
    std::vector<int> nfa_states;
    std::vector<int> rules;  // accepting rules, ascending
    int ascii[128];
    std::unordered_map<char16_t, int> other;
  };

  int new_state(int set = -1);
  Fragment compile(const PtbRe& re);
  void closure(std::vector<int>& states) const;
  int dfa_for(std::vector<int> states);
  int step(int dfa, char16_t unit);

  std::vector<State> states_;
  std::vector<PtbCharSet> sets_;
  std::vector<int> rule_starts_;
  std::vector<DfaState> dfa_;
  std::map<std::vector<int>, int> dfa_index_;
  std::vector<int> start_dfa_;  // per rule, then the union at the back; -1 until built
};

}  // namespace saccade
