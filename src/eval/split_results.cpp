// write_split_results: the COCO results file and the scores file of one split.
#include "eval/split_results.h"

#include "io/json.h"

namespace saccade {
namespace {

// COCO results use numeric image ids; ids that are not plain integers stay strings.
Json image_id_json(const std::string& id) {
  if (!id.empty() && id.size() < 19 && id.find_first_not_of("0123456789") == std::string::npos) {
    return Json(static_cast<int64_t>(std::stoll(id)));
  }
  return Json(id);
}

// The shapes world's scores, each with its count (pointing_color_accuracy, pointing_color_words ...).
Json shapes_scores_json(const ShapesScores& shapes) {
  Json shapes_json = Json::object(
      {{"pointing_accuracy", Json::number_or_null(shapes.pointing_accuracy)},
       {"pointing_baseline", Json::number_or_null(shapes.pointing_baseline)},
       {"pointing_words", shapes.pointing_words},
       {"content_accuracy", Json::number_or_null(shapes.content_accuracy)},
       {"object_mentions", shapes.object_mentions},
       {"object_recall", Json::number_or_null(shapes.object_recall)},
       {"objects", shapes.objects},
       {"relation_accuracy", Json::number_or_null(shapes.relation_accuracy)},
       {"relations", shapes.relations},
       {"pair_relation_accuracy", Json::number_or_null(shapes.pair_relation_accuracy)},
       {"pair_relation_room_baseline", Json::number_or_null(shapes.pair_relation_room_baseline)},
       {"pair_relations", shapes.pair_relations},
       {"relation_choice_accuracy", Json::number_or_null(shapes.relation_choice_accuracy)},
       {"relation_choices", shapes.relation_choices},
       {"relation_choice_chance", kRelationChoiceChance}});
  for (size_t kind = 0; kind < kPointingWordKinds; ++kind) {
    const std::string prefix = std::string("pointing_") + to_string(static_cast<PointingWordKind>(kind));
    shapes_json.set(prefix + "_accuracy", Json::number_or_null(shapes.pointing_accuracy_by_kind[kind]));
    shapes_json.set(prefix + "_words", shapes.pointing_words_by_kind[kind]);
  }
  return shapes_json;
}

}  // namespace

void write_split_results(const std::filesystem::path& results_dir, const SplitResults& results) {
  const CaptionScores& scores = results.scores;
  Json captions = Json::array();
  for (const auto& id : results.image_order) {
    Json entry = Json::object({{"image_id", image_id_json(id)}, {"caption", results.candidates.at(id)}});
    if (const auto found = results.n_best.find(id); found != results.n_best.end()) {
      Json alternatives = Json::array();
      for (const ScoredCaption& alternative : found->second)
        alternatives.push_back(
            Json::object({{"caption", alternative.caption}, {"log_prob", alternative.log_prob}}));
      entry.set("n_best", std::move(alternatives));
    }
    captions.push_back(std::move(entry));
  }
  Json per_image = Json::array();
  for (const ImageScores& image : scores.images) {
    per_image.push_back(Json::object(
        {{"image_id", image_id_json(image.image_id)},
         {"caption", results.candidates.at(image.image_id)},
         {"bleu1", image.bleu[0]},
         {"bleu2", image.bleu[1]},
         {"bleu3", image.bleu[2]},
         {"bleu4", image.bleu[3]},
         {"meteor", Json::number_or_null(image.meteor)},
         {"rouge_l", image.rouge_l},
         {"cider_d", image.cider_d}}));
  }
  Json report = Json::object(
      {{"split", results.split},
       {"search", results.search},
       {"checkpoint_epoch", results.checkpoint_epoch},
       {"images", static_cast<int64_t>(results.image_order.size())},
       {"corpus", Json::object(
                      {{"bleu1", scores.bleu[0]},
                       {"bleu2", scores.bleu[1]},
                       {"bleu3", scores.bleu[2]},
                       {"bleu4", scores.bleu[3]},
                       {"meteor", Json::number_or_null(scores.meteor)},
                       {"rouge_l", scores.rouge_l},
                       {"cider_d", scores.cider_d}})}});
  if (results.parameters) report.set("parameters", *results.parameters);
  if (results.diversity) {
    const DiversityScores& diversity = *results.diversity;
    report.set(
        "diversity", Json::object(
                         {{"vocabulary", diversity.vocabulary},
                          {"novel", Json::number_or_null(diversity.novel)},
                          {"distinct_1", diversity.distinct_1},
                          {"distinct_2", diversity.distinct_2},
                          {"mbleu4", Json::number_or_null(diversity.mbleu4)},
                          {"n_best_images", diversity.n_best_images}}));
  }
  if (results.shapes) report.set("shapes", shapes_scores_json(*results.shapes));
  report.set("per_image", per_image);
  std::filesystem::create_directories(results_dir);
  write_json_file(results_dir / (results.split + ".json"), captions, 2);
  write_json_file(results_dir / (results.split + "_scores.json"), report, 2);
}

}  // namespace saccade
