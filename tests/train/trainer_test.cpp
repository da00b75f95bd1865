// The Trainer in-process on the smoke experiment (with coverage, so its gates go through the
// checkpoint too): what it reports of its last validation is what its checkpoints/last scores
// when loaded afresh and evaluated the way `saccade eval` loads and evaluates a run.
#include "train/trainer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "config/config.h"
#include "evaluate/split_evaluation.h"
#include "test_util.h"

namespace saccade {
namespace {

using testing::TempDir;

TEST(Trainer, ReportsTheValidationItsCheckpointGives) {
  TempDir dir;
  const Composition composition = compose(ComposeRequest{
      testing::source_dir() / "configs",
      "config",
      {"experiment=smoke", "train.epochs=2", "train.lr=0.02", "decoder.attention.coverage=true",
       "dataset.root=" + (dir / "shapes").string()}});
  const TrainerSetup setup = trainer_setup_from(composition.config, dir / "run");
  Trainer trainer(setup);
  const TrainResult result = trainer.run();
  EXPECT_EQ(result.epochs_completed, 2);
  // At this rate two epochs already write captions that score: the comparison below is not 0 = 0.
  EXPECT_GT(result.last_validation.cider_d, 0.1);
  ASSERT_TRUE(result.last_validation_shapes.has_value());

  const auto checkpoint = dir / "run" / "checkpoints" / "last";
  const Vocabulary vocabulary = load_checkpoint_vocabulary(checkpoint);
  Captioner model = build_captioner(setup.encoder, setup.decoder, vocabulary.size());
  ASSERT_TRUE(model->decoder->named_parameters().contains("attention.coverage_gates.weight"));
  EXPECT_EQ(load_checkpoint(checkpoint, *model, nullptr).epoch, 2);
  const auto images = make_caption_dataset(trainer.data().val, vocabulary, setup.dataset.vocabulary);
  Loader loader(images, setup.eval_loader, setup.dataset.image);
  const MeasuredSplit measured =
      measure_split(*model, loader, *make_caption_search(setup.validation), vocabulary, {}, &setup.dataset);
  const CaptionScores scores = score_captions(
      measured.decoded.references, measured.decoded.candidates, setup.scores, measured.decoded.image_order);
  EXPECT_EQ(scores.bleu, result.last_validation.bleu);
  EXPECT_EQ(scores.cider_d, result.last_validation.cider_d);
  ASSERT_TRUE(measured.shapes.has_value());
  const ShapesScores& expected = *result.last_validation_shapes;
  EXPECT_EQ(measured.shapes->content_accuracy, expected.content_accuracy);
  EXPECT_EQ(measured.shapes->object_mentions, expected.object_mentions);
  EXPECT_EQ(measured.shapes->pointing_words, expected.pointing_words);
  EXPECT_EQ(measured.shapes->relation_choices, expected.relation_choices);
  EXPECT_EQ(measured.shapes->relation_choice_accuracy, expected.relation_choice_accuracy);
}

}  // namespace
}  // namespace saccade
