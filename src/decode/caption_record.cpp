#include "decode/caption_record.h"

#include <string>
#include <utility>
#include <vector>

namespace saccade {

Json tensor_json(const torch::Tensor& tensor) {
  Json::Array items;
  if (tensor.dim() == 1) {
    const auto values = tensor.to(torch::kDouble).contiguous();
    const auto access = values.accessor<double, 1>();
    for (int64_t i = 0; i < values.size(0); ++i) items.emplace_back(access[i]);
  } else {
    for (int64_t i = 0; i < tensor.size(0); ++i) items.push_back(tensor_json(tensor[i]));
  }
  return Json(std::move(items));
}

namespace {

// The members one caption has, the chosen one's or an alternative's.
Json::Object caption_members(const DecodedCaption& caption, const Vocabulary& vocabulary) {
  const std::vector<std::string> words = vocabulary.decode(caption.tokens);
  Json::Array word_items(words.begin(), words.end());
  return {
      {"caption", join_words(words)},
      {"words", Json(std::move(word_items))},
      {"log_prob", caption.log_prob},
      {"finished", caption.finished},
      {"attention", tensor_json(caption.alphas)}};
}

}  // namespace

Json caption_record(
    const DecodedCaption& caption, const Vocabulary& vocabulary, const std::array<int64_t, 2>& grid) {
  Json record = Json::object(caption_members(caption, vocabulary));
  record.set("grid", Json::array({Json(grid[0]), Json(grid[1])}));
  if (!caption.n_best.empty()) {
    Json alternatives = Json::array();
    for (const DecodedCaption& alternative : caption.n_best)
      alternatives.push_back(Json::object(caption_members(alternative, vocabulary)));
    record.set("n_best", std::move(alternatives));
  }
  return record;
}

}  // namespace saccade
