// The loader: epoch plans, collation, and the worker threads that assemble batches ahead.
#include "data/loader.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>

#include "io/log.h"

namespace saccade {

LoaderOptions loader_options_from(const Config& config, Split split, int64_t batch_size) {
  LoaderOptions options;
  options.batch_size = batch_size;
  options.workers = config.get<int>("data.workers");
  options.prefetch = config.get<int>("data.prefetch");
  options.shuffle = split == Split::train && config.get<bool>("data.shuffle");
  options.bucketing = split == Split::train && config.get<bool>("data.bucketing");
  options.bucket_pool = config.get<int>("data.bucket_pool");
  options.group_by_image = split == Split::train && config.get<bool>("data.group_by_image");
  options.seed = static_cast<uint64_t>(config.get<int64_t>("seed"));
  options.on_bad_image = config.get_parsed("data.on_bad_image", parse_bad_image_policy);
  return options;
}

void validate(const LoaderOptions& options) {
  if (options.shards < 1 || options.shard < 0 || options.shard >= options.shards) {
    throw std::invalid_argument(
        "A loader shard must be in [0, shards), got " + std::to_string(options.shard) + " of " +
        std::to_string(options.shards));
  }
  if (options.batch_size < 1) {
    throw std::invalid_argument("The batch size must be >= 1, got " + std::to_string(options.batch_size));
  }
  if (options.workers < 0) {
    throw std::invalid_argument(
        "data.workers must be >= 0 (0 = load in the training thread), got " +
        std::to_string(options.workers));
  }
  if (options.prefetch < 1) {
    throw std::invalid_argument("data.prefetch must be >= 1 batch, got " + std::to_string(options.prefetch));
  }
  if (options.bucket_pool < 1) {
    throw std::invalid_argument(
        "data.bucket_pool must be >= 1 batch, got " + std::to_string(options.bucket_pool));
  }
  if (options.bucketing && options.group_by_image) {
    throw std::invalid_argument(
        "data.bucketing and data.group_by_image cannot both be true: bucketing sorts captions by length "
        "and would split every image's captions apart");
  }
}

Batch collate(std::vector<Sample> samples, const ImageOptions& image, bool share_images) {
  TORCH_CHECK(!samples.empty(), "collate needs at least one sample");
  const int64_t count = static_cast<int64_t>(samples.size());
  const int64_t height = samples.front().image.size(0);
  const int64_t width = samples.front().image.size(1);
  int64_t steps = 0;
  for (const auto& sample : samples)
    steps = std::max<int64_t>(steps, static_cast<int64_t>(sample.tokens.size()));

  Batch batch;
  torch::Tensor pixels = torch::empty({count, height, width, 3}, torch::kUInt8);  // [B, H, W, 3], U rows used
  batch.tokens = torch::zeros({count, steps}, torch::kLong);                      // [B, T]
  batch.lengths = torch::empty({count}, torch::kLong);                            // [B]
  batch.image_rows = torch::empty({count}, torch::kLong);                         // [B]
  auto tokens = batch.tokens.accessor<int64_t, 2>();
  auto lengths = batch.lengths.accessor<int64_t, 1>();
  auto image_rows = batch.image_rows.accessor<int64_t, 1>();
  const size_t image_bytes = static_cast<size_t>(height * width * 3);
  uint8_t* const rows = pixels.data_ptr<uint8_t>();
  std::vector<std::string> row_image_ids;  // the image id of each row filled so far
  // With share_images, the row already holding this image: the same id and, as a caption blocked
  // from flipping keeps the unflipped image, equal pixels.
  auto shared_row = [&](const std::string& image_id, const uint8_t* image_pixels) -> std::optional<int64_t> {
    for (size_t row = 0; share_images && row < row_image_ids.size(); ++row) {
      if (row_image_ids[row] == image_id &&
          std::memcmp(rows + row * image_bytes, image_pixels, image_bytes) == 0)
        return static_cast<int64_t>(row);
    }
    return std::nullopt;
  };
  for (int64_t b = 0; b < count; ++b) {
    Sample& sample = samples[static_cast<size_t>(b)];
    TORCH_CHECK(
        sample.image.size(0) == height && sample.image.size(1) == width,
        "collate: images of one batch must share a size");
    const auto image_pixels = sample.image.contiguous();
    std::optional<int64_t> row = shared_row(sample.image_id, image_pixels.data_ptr<uint8_t>());
    if (!row) {
      row = static_cast<int64_t>(row_image_ids.size());
      std::memcpy(rows + *row * image_bytes, image_pixels.data_ptr<uint8_t>(), image_bytes);
      row_image_ids.push_back(sample.image_id);
    }
    image_rows[b] = *row;
    for (size_t t = 0; t < sample.tokens.size(); ++t) tokens[b][static_cast<int64_t>(t)] = sample.tokens[t];
    lengths[b] = static_cast<int64_t>(sample.tokens.size());
    batch.image_ids.push_back(std::move(sample.image_id));
    batch.references.push_back(std::move(sample.references));
    batch.scored_references.push_back(std::move(sample.scored_references));
    batch.indices.push_back(sample.index);
  }
  batch.images = normalize_images(
      pixels.narrow(0, 0, static_cast<int64_t>(row_image_ids.size())), image);  // [U, 3, H, W]
  return batch;
}

std::vector<std::vector<int64_t>> plan_batches(
    const Dataset& dataset, const LoaderOptions& options, int64_t epoch) {
  const int64_t size = dataset.size();
  std::vector<int64_t> order(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) order[static_cast<size_t>(i)] = i;
  Rng rng(mix_seed({options.seed, static_cast<uint64_t>(epoch)}));
  auto shuffle = [&rng](auto& items) {
    for (int64_t i = static_cast<int64_t>(items.size()) - 1; i > 0; --i) {
      std::swap(items[static_cast<size_t>(i)], items[static_cast<size_t>(rng.uniform_int(0, i))]);
    }
  };
  if (options.group_by_image) {
    std::vector<std::vector<int64_t>> images;  // each image's samples, images in order of first sample
    std::map<int64_t, size_t> position;
    for (const int64_t index : order) {
      const auto [found, added] = position.emplace(dataset.image_of(index), images.size());
      if (added) images.emplace_back();
      images[found->second].push_back(index);
    }
    if (options.shuffle) shuffle(images);
    order.clear();
    for (const auto& samples : images) order.insert(order.end(), samples.begin(), samples.end());
  } else if (options.shuffle) {
    shuffle(order);
  }
  if (options.bucketing) {
    const int64_t pool = options.bucket_pool * options.batch_size;
    for (int64_t start = 0; start < size; start += pool) {
      const auto first = order.begin() + start;
      const auto last = order.begin() + std::min(size, start + pool);
      std::stable_sort(
          first, last, [&](int64_t a, int64_t b) { return dataset.length(a) < dataset.length(b); });
    }
  }
  std::vector<std::vector<int64_t>> batches;
  for (int64_t start = 0; start < size; start += options.batch_size) {
    const int64_t end = std::min(size, start + options.batch_size);
    if (options.drop_last && end - start < options.batch_size) break;
    batches.emplace_back(order.begin() + start, order.begin() + end);
  }
  if (options.bucketing && options.shuffle) shuffle(batches);
  if (options.shards == 1) return batches;
  std::vector<std::vector<int64_t>> parts;
  for (const auto& batch : batches) {
    const int64_t n = static_cast<int64_t>(batch.size()), shards = options.shards;
    if (n < shards) continue;
    parts.emplace_back(
        batch.begin() + options.shard * n / shards, batch.begin() + (options.shard + 1) * n / shards);
  }
  return parts;
}

Loader::Loader(
    std::shared_ptr<const Dataset> dataset,
    const LoaderOptions& options,
    const ImageOptions& image,
    SampleTransform transform)
    : dataset_(std::move(dataset)), options_(options), image_(image), transform_(std::move(transform)) {
  validate(options_);
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { work(); });
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void Loader::start_epoch(int64_t epoch) {
  auto plan = plan_batches(*dataset_, options_, epoch);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++generation_;
    epoch_ = epoch;
    plan_ = std::move(plan);
    next_claim_ = 0;
    next_deliver_ = 0;
    ready_.clear();
    started_ = true;
  }
  changed_.notify_all();
}

int64_t Loader::batches_per_epoch() const {
  const int64_t size = dataset_->size(), full = size / options_.batch_size, rest = size % options_.batch_size;
  // A short last batch is kept unless drop_last, or shards would leave one of its parts empty.
  return full + (rest > 0 && !options_.drop_last && rest >= options_.shards ? 1 : 0);
}

std::vector<SkippedImage> Loader::skipped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return skipped_;
}

std::optional<Batch> Loader::assemble(int64_t epoch, const std::vector<int64_t>& indices) {
  std::vector<Sample> samples;
  samples.reserve(indices.size());
  for (const int64_t index : indices) {
    Sample sample;
    try {
      sample = dataset_->get(index);
    } catch (const BadImageError& error) {
      if (options_.on_bad_image == BadImagePolicy::fail) throw;
      std::lock_guard<std::mutex> lock(mutex_);
      const bool known = std::any_of(
          skipped_.begin(), skipped_.end(), [&](const SkippedImage& s) { return s.path == error.path(); });
      if (!known) {
        skipped_.push_back({error.path(), error.reason()});
        log::warn() << "Skipping image " << error.path().string() << ": " << error.reason();
      }
      continue;
    }
    if (transform_) {
      // Grouped by image, an image's captions draw alike, so they can share its encoding.
      const int64_t draw = options_.group_by_image ? dataset_->image_of(index) : index;
      Rng rng(mix_seed({options_.seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(draw)}));
      transform_(sample, rng);
    }
    samples.push_back(std::move(sample));
  }
  if (samples.empty()) return std::nullopt;
  return collate(std::move(samples), image_, options_.group_by_image);
}

void Loader::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [this] {
      return stopping_ || (started_ && next_claim_ < static_cast<int64_t>(plan_.size()) &&
                           next_claim_ < next_deliver_ + options_.prefetch);
    });
    if (stopping_) return;
    const int64_t number = next_claim_++;
    const uint64_t generation = generation_;
    const int64_t epoch = epoch_;
    const std::vector<int64_t> indices = plan_[static_cast<size_t>(number)];
    lock.unlock();
    Slot slot;
    try {
      slot.batch = assemble(epoch, indices);
    } catch (...) {
      slot.error = std::current_exception();
    }
    lock.lock();
    if (generation == generation_) {
      ready_[number] = std::move(slot);
      changed_.notify_all();
    }
  }
}

std::optional<Batch> Loader::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!started_) {
    lock.unlock();
    start_epoch(0);
    lock.lock();
  }
  while (next_deliver_ < static_cast<int64_t>(plan_.size())) {
    const int64_t number = next_deliver_;
    Slot slot;
    if (workers_.empty()) {
      ++next_deliver_;
      const int64_t epoch = epoch_;
      const std::vector<int64_t> indices = plan_[static_cast<size_t>(number)];
      lock.unlock();
      slot.batch = assemble(epoch, indices);
      lock.lock();
    } else {
      changed_.wait(lock, [&] { return ready_.count(number) > 0; });
      slot = std::move(ready_[number]);
      ready_.erase(number);
      ++next_deliver_;
      changed_.notify_all();  // a prefetch place opened
    }
    if (slot.error) std::rethrow_exception(slot.error);
    if (slot.batch) return std::move(slot.batch);
  }
  return std::nullopt;
}

}  // namespace saccade
