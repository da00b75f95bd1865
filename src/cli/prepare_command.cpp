// `saccade prepare`: materializes the configured dataset (the shapes world's files, the image
// caches of every split) and prints what is there. Idempotent: a second run only checks.
#include <iostream>

#include "cli/command.h"
#include "data/prepare.h"
#include "data/vocabulary.h"

namespace saccade::cli {

int run_prepare(const Job& job) {
  const DatasetOptions options = dataset_options_from(job.composition.config);
  validate(options);
  const PreparedDataset data = ensure_prepared(options);
  std::cout << "dataset " << options.name << " (" << options.kind << ") at " << options.root.string() << "\n";
  for (const Split split : {Split::train, Split::val, Split::test}) {
    const PreparedSplit& part = data.split(split);
    int64_t captions = 0;
    for (const auto& image : part.images) captions += static_cast<int64_t>(image.captions.size());
    std::cout << "  " << to_string(split) << ": " << part.images.size() << " images, " << captions
              << " captions, "
              << (options.cache ? "cache " + cache_file(options, split).string() : std::string("no cache"))
              << "\n";
  }
  const Vocabulary vocabulary = build_vocabulary(data.train.images, options.vocabulary.min_word_count);
  std::cout << "  vocabulary: " << vocabulary.size() << " tokens (min_word_count "
            << options.vocabulary.min_word_count << ", special tokens included)\n";
  const auto skipped = data.skipped();
  if (!skipped.empty()) {
    std::cout << "  skipped " << skipped.size() << " unusable images (data.on_bad_image: skip):\n";
    for (const auto& image : skipped)
      std::cout << "    " << image.path.string() << ": " << image.reason << "\n";
  }
  return 0;
}

}  // namespace saccade::cli
