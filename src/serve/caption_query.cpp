#include "serve/caption_query.h"

#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "base/text.h"
#include "serve/request_error.h"

namespace saccade {
namespace {

RequestError bad_parameter(const std::string& name, const std::string& value, const std::string& why) {
  return RequestError(400, "parameter " + name + "=" + value + ": " + why);
}

int64_t parse_integer(const std::string& name, const std::string& value) {
  size_t used = 0;
  try {
    const long long number = std::stoll(value, &used);
    if (used == value.size()) return number;
  } catch (const std::exception&) {
  }
  throw bad_parameter(name, value, "expected an integer");
}

double parse_number(const std::string& name, const std::string& value) {
  size_t used = 0;
  try {
    const double number = std::stod(value, &used);
    if (used == value.size()) return number;
  } catch (const std::exception&) {
  }
  throw bad_parameter(name, value, "expected a number");
}

bool parse_boolean(const std::string& name, const std::string& value) {
  if (value == "true") return true;
  if (value == "false") return false;
  throw bad_parameter(name, value, "expected true or false");
}

using Setter = std::function<void(CaptionQuery&, const std::string& name, const std::string& value)>;

// A setter of one SearchOptions field read by `parse(name, value)`.
template <typename Field, typename Parse>
Setter search_field(Field SearchOptions::*field, Parse parse) {
  return [field, parse](CaptionQuery& query, const std::string& name, const std::string& value) {
    query.search.*field = parse(name, value);
  };
}

// A setter of one enum field read by `parse(value)`, whose invalid_argument names the choices.
template <typename Field, typename Parse>
Setter choice_field(Field SearchOptions::*field, Parse parse, const std::string& choices) {
  return [field, parse, choices](CaptionQuery& query, const std::string& name, const std::string& value) {
    try {
      query.search.*field = parse(value);
    } catch (const std::invalid_argument&) {
      throw bad_parameter(name, value, "expected " + choices);
    }
  };
}

// How each search parameter changes the query, by name.
const std::map<std::string, Setter>& search_setters() {
  static const std::map<std::string, Setter> setters = {
      {"method", choice_field(&SearchOptions::method, parse_search_method, "greedy, beam or sample")},
      {"beam_size", search_field(&SearchOptions::beam_size, parse_integer)},
      {"n_best", search_field(&SearchOptions::n_best, parse_integer)},
      {"max_length", search_field(&SearchOptions::max_length, parse_integer)},
      {"min_length", search_field(&SearchOptions::min_length, parse_integer)},
      {"top_k", search_field(&SearchOptions::top_k, parse_integer)},
      {"beam_groups", search_field(&SearchOptions::beam_groups, parse_integer)},
      {"temperature", search_field(&SearchOptions::temperature, parse_number)},
      {"top_p", search_field(&SearchOptions::top_p, parse_number)},
      {"length_penalty", search_field(&SearchOptions::length_penalty, parse_number)},
      {"diversity_penalty", search_field(&SearchOptions::diversity_penalty, parse_number)},
      {"block_unk", search_field(&SearchOptions::block_unk, parse_boolean)},
      {"block_trigrams", search_field(&SearchOptions::block_trigrams, parse_boolean)},
      {"hard_read", choice_field(&SearchOptions::hard_read, parse_hard_read, "argmax or expectation")},
      {"layer",
       [](CaptionQuery& q, const std::string& n, const std::string& v) { q.layer = parse_integer(n, v); }},
      {"seed",
       [](CaptionQuery& q, const std::string& n, const std::string& v) {
         const int64_t seed = parse_integer(n, v);
         if (seed < 0) throw bad_parameter(n, v, "expected an integer >= 0");
         q.seed = static_cast<uint64_t>(seed);
       }},
      {"image",
       [](CaptionQuery& q, const std::string& n, const std::string& v) {
         if (v.empty()) throw bad_parameter(n, v, "expected an image id of the run's test split");
         q.image_id = v;
       }},
  };
  return setters;
}

// The names a request may use, for the error about one it may not.
std::string known_parameters() {
  std::vector<std::string> names = {"run"};
  for (const auto& [name, setter] : search_setters()) names.push_back(name);
  return join(names, ", ");
}

size_t parse_run(const std::vector<std::pair<std::string, std::string>>& parameters, size_t runs) {
  for (const auto& [name, value] : parameters) {
    if (name != "run") continue;
    const int64_t run = parse_integer(name, value);
    if (run < 0 || static_cast<size_t>(run) >= runs) {
      throw bad_parameter(
          name, value,
          "no such run; " + std::to_string(runs) + " loaded (0 to " + std::to_string(runs - 1) + ")");
    }
    return static_cast<size_t>(run);
  }
  return 0;
}

void check_search(const SearchOptions& search) {
  if (search.beam_size > kMaxServedBeam)
    throw bad_parameter(
        "beam_size", std::to_string(search.beam_size), "at most " + std::to_string(kMaxServedBeam));
  if (search.max_length > kMaxServedLength)
    throw bad_parameter(
        "max_length", std::to_string(search.max_length), "at most " + std::to_string(kMaxServedLength));
  try {
    validate(search);
  } catch (const std::invalid_argument& error) {
    std::string message = error.what();
    // The parameters are the keys without their group.
    for (size_t at = message.find("decode."); at != std::string::npos; at = message.find("decode.", at))
      message.erase(at, 7);
    throw RequestError(400, message);
  }
}

}  // namespace

CaptionQuery parse_caption_query(
    const std::vector<std::pair<std::string, std::string>>& parameters,
    const std::vector<SearchOptions>& run_searches) {
  std::set<std::string> seen;
  for (const auto& [name, value] : parameters) {
    if (name != "run" && search_setters().count(name) == 0) {
      throw RequestError(400, "unknown parameter '" + name + "'; known: " + known_parameters());
    }
    if (!seen.insert(name).second) throw RequestError(400, "parameter " + name + " is given more than once");
  }
  CaptionQuery query;
  query.run = parse_run(parameters, run_searches.size());
  query.search = run_searches[query.run];
  query.search.beam_size = 1;  // as `saccade caption` without --beam
  query.search.n_best = 1;
  for (const auto& [name, value] : parameters) {
    if (name != "run") search_setters().at(name)(query, name, value);
  }
  if (seen.count("beam_size") > 0 && seen.count("method") == 0 && query.search.method == SearchMethod::greedy)
    query.search.method = SearchMethod::beam;
  check_search(query.search);
  return query;
}

}  // namespace saccade
