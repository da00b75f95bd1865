// What both decoders share: the enum names, the options and their checks, DecoderState's row
// selection, and build_decoder (see decoder.h).
#include "models/decoder.h"

#include <torch/torch.h>

#include <stdexcept>
#include <vector>

#include "base/enum_names.h"
#include "config/config.h"
#include "kernels/attention_kernels.h"
#include "models/architecture_keys.h"
#include "models/attention_lstm_decoder.h"
#include "models/tensor_rows.h"
#include "models/transformer_decoder.h"

namespace saccade {

const EnumNames<DecoderKind> kDecoderKindNames(
    "decoder kind", {{DecoderKind::lstm, "lstm"}, {DecoderKind::transformer, "transformer"}});
const EnumNames<Gate> kGateNames(
    "gate", {{Gate::none, "none"}, {Gate::scalar, "scalar"}, {Gate::vector, "vector"}});
const EnumNames<AttentionMode> kAttentionModeNames(
    "attention mode", {{AttentionMode::soft, "soft"}, {AttentionMode::hard, "hard"}});
const EnumNames<AttentionQuery> kAttentionQueryNames(
    "attention query",
    {{AttentionQuery::hidden, "hidden"}, {AttentionQuery::hidden_and_word, "hidden_and_word"}});
const EnumNames<InitialState> kInitialStateNames(
    "initial state",
    {{InitialState::mean_annotation, "mean_annotation"}, {InitialState::learned, "learned"}});
const EnumNames<HardRead> kHardReadNames(
    "hard-attention read", {{HardRead::argmax, "argmax"}, {HardRead::expectation, "expectation"}});

std::string to_string(DecoderKind kind) {
  return kDecoderKindNames.name(kind);
}
DecoderKind parse_decoder_kind(const std::string& name) {
  return kDecoderKindNames.parse(name);
}
DecoderKind decoder_kind_from(const Config& config) {
  return config.has("decoder.kind") ? config.get_parsed("decoder.kind", parse_decoder_kind)
                                    : DecoderKind::lstm;
}
std::string to_string(Gate gate) {
  return kGateNames.name(gate);
}
Gate parse_gate(const std::string& name) {
  return kGateNames.parse(name);
}
std::string to_string(AttentionMode mode) {
  return kAttentionModeNames.name(mode);
}
AttentionMode parse_attention_mode(const std::string& name) {
  return kAttentionModeNames.parse(name);
}
std::string to_string(AttentionQuery query) {
  return kAttentionQueryNames.name(query);
}
AttentionQuery parse_attention_query(const std::string& name) {
  return kAttentionQueryNames.parse(name);
}
std::string to_string(InitialState initial) {
  return kInitialStateNames.name(initial);
}
InitialState parse_initial_state(const std::string& name) {
  return kInitialStateNames.parse(name);
}
std::string to_string(HardRead read) {
  return kHardReadNames.name(read);
}
HardRead parse_hard_read(const std::string& name) {
  return kHardReadNames.parse(name);
}

AttentionOptions DecoderOptions::attention() const {
  AttentionOptions options;
  options.kind = attention_kind;
  options.annotation_dim = annotation_dim;
  options.query_dim = hidden_dim;
  options.dim = attention_dim;
  options.heads = attention_heads;
  options.window = attention_window;
  options.centre = attention_centre;
  options.grid = grid;
  options.coverage = attention_coverage;
  return options;
}

DecoderOptions decoder_options_from(const Config& config, ArchitectureKeys* architecture) {
  const auto shaping = [architecture](const char* key) {
    return ArchitectureKeys::record(architecture, key);
  };
  DecoderOptions options;
  shaping("decoder.kind");  // read by decoder_kind_from
  options.kind = decoder_kind_from(config);
  // Dropout, the hard-attention expectation share and the maps layer act in training or in what
  // is drawn, never on the captions of a trained model: not architecture keys.
  options.dropout = config.get<double>("decoder.dropout");
  if (options.kind == DecoderKind::transformer) {
    options.layers = config.get<int64_t>(shaping("decoder.layers"));
    options.heads = config.get<int64_t>(shaping("decoder.heads"));
    options.model_dim = config.get<int64_t>(shaping("decoder.dim"));
    options.ffn_dim = config.get<int64_t>(shaping("decoder.ffn_dim"));
    options.tied_embeddings = config.get<bool>(shaping("decoder.tied_embeddings"));
    options.maps_layer = config.get<int64_t>("decoder.maps_layer");
    return options;
  }
  options.embed_dim = config.get<int64_t>(shaping("decoder.embed_dim"));
  options.hidden_dim = config.get<int64_t>(shaping("decoder.hidden_dim"));
  options.attention_kind = config.get<std::string>(shaping("decoder.attention.kind"));
  // Another attention kind's options shape nothing.
  const auto shaping_for = [&](const char* kind, const char* key) {
    return options.attention_kind == kind ? shaping(key) : key;
  };
  options.attention_dim = config.get<int64_t>(shaping("decoder.attention.dim"));
  options.attention_heads = config.get<int64_t>(shaping_for("multihead", "decoder.attention.heads"));
  options.attention_window = config.get<int64_t>(shaping_for("local", "decoder.attention.window"));
  options.attention_centre =
      config.get_parsed(shaping_for("local", "decoder.attention.centre"), parse_local_centre);
  // A run saved before these keys existed had the paper's initial state and query.
  options.initial_state = config.has("decoder.initial_state")
                              ? config.get_parsed(shaping("decoder.initial_state"), parse_initial_state)
                              : InitialState::mean_annotation;
  options.attention_query = config.has("decoder.attention.query")
                                ? config.get_parsed(shaping("decoder.attention.query"), parse_attention_query)
                                : AttentionQuery::hidden;
  // A run saved before coverage existed had none.
  options.attention_coverage =
      config.has("decoder.attention.coverage") && config.get<bool>(shaping("decoder.attention.coverage"));
  options.attention_mode = config.get_parsed(shaping("decoder.attention.mode"), parse_attention_mode);
  options.hard_expectation = config.get<double>("decoder.attention.hard_expectation");
  options.gate = config.get_parsed(shaping("decoder.gate"), parse_gate);
  options.deep_output = config.get<bool>(shaping("decoder.deep_output"));
  return options;
}

void validate(const DecoderOptions& options) {
  const auto fail = [](const std::string& message) { throw std::invalid_argument(message); };
  if (options.vocab_size <= 0) fail("The decoder's vocab_size must be > 0 (set it from the vocabulary)");
  if (options.annotation_dim <= 0) fail("The decoder's annotation_dim must be > 0 (set it from the encoder)");
  if (!(options.dropout >= 0.0 && options.dropout < 1.0)) {
    fail("decoder.dropout must be in [0, 1), got " + std::to_string(options.dropout));
  }
  if (options.kind == DecoderKind::transformer) {
    const auto at_least_one = [&](const char* key, int64_t value) {
      if (value < 1) fail(std::string("decoder.") + key + " must be >= 1, got " + std::to_string(value));
    };
    at_least_one("layers", options.layers);
    at_least_one("dim", options.model_dim);
    at_least_one("ffn_dim", options.ffn_dim);
    if (options.heads < 1 || options.model_dim % options.heads != 0) {
      fail(
          "decoder.heads=" + std::to_string(options.heads) +
          " does not divide decoder.dim=" + std::to_string(options.model_dim));
    }
    if (options.model_dim % 2 != 0) {
      fail(
          "decoder.dim must be even (the sinusoidal position encoding), got " +
          std::to_string(options.model_dim));
    }
    if (options.maps_layer >= options.layers || options.maps_layer < -options.layers) {
      fail(
          "decoder.maps_layer=" + std::to_string(options.maps_layer) + " is not a layer of the " +
          std::to_string(options.layers) + "-layer decoder");
    }
    if (options.attention_mode == AttentionMode::hard)
      fail("decoder.kind=transformer has soft attention only");
    return;
  }
  if (options.embed_dim <= 0) fail("decoder.embed_dim must be > 0, got " + std::to_string(options.embed_dim));
  if (options.hidden_dim <= 0)
    fail("decoder.hidden_dim must be > 0, got " + std::to_string(options.hidden_dim));
  if (!(options.hard_expectation >= 0.0 && options.hard_expectation <= 1.0)) {
    fail(
        "decoder.attention.hard_expectation must be in [0, 1], got " +
        std::to_string(options.hard_expectation));
  }
  try {
    validate(options.attention());
  } catch (const std::invalid_argument& error) {
    fail(std::string("decoder.attention: ") + error.what());
  }
}

std::vector<int64_t> parameter_versions(const torch::nn::Module& module) {
  std::vector<int64_t> versions;
  for (const auto& parameter : module.parameters()) {
    versions.push_back(reinterpret_cast<intptr_t>(parameter.data_ptr()));
    versions.push_back(static_cast<int64_t>(parameter._version()));
  }
  return versions;
}

DecoderState DecoderState::index_select(const torch::Tensor& index) const {
  if (grid_beams != 1)
    throw std::logic_error(
        "DecoderState::index_select: the rows share their image's grid; reorder_beams moves them");
  return select_images(index, 1);
}

DecoderState DecoderState::select_images(const torch::Tensor& images, int64_t beams) const {
  if (grid_beams != 1 && grid_beams != beams)
    throw std::logic_error(
        "DecoderState::select_images: " + std::to_string(beams) +
        " rows per image, but the grid is kept per " + std::to_string(grid_beams) + " rows");
  const auto rows =
      beams == 1 ? images : (images.unsqueeze(1) * beams + torch::arange(beams, images.options())).view(-1);
  DecoderState selected = reorder_beams(rows);
  if (memory.keys.defined())
    selected.memory = memory.beams == beams ? memory.select_images(images, rows) : memory.index_select(rows);
  if (grid_keys.empty()) return selected;
  const auto& chosen = grid_beams > 1 ? images : rows;
  const auto read = rows_read(grid_images, chosen);
  if (kernels_read_in_place(grid_keys.front()) && kernels_read_in_place(grid_values.front())) {
    selected.grid_images = read;
  } else {
    selected.grid_keys = rows_of(grid_keys, read);
    selected.grid_values = rows_of(grid_values, read);
    selected.grid_images = torch::Tensor();
  }
  return selected;
}

DecoderState DecoderState::reorder_beams(const torch::Tensor& index) const {
  DecoderState reordered = *this;
  reordered.h = rows_of(h, index);
  reordered.c = rows_of(c, index);
  reordered.memory.history = memory.history.rows(index);
  reordered.word_keys = rows_of(word_keys, index);
  reordered.word_values = rows_of(word_values, index);
  return reordered;
}

std::vector<int64_t> checked_lengths(
    const torch::Tensor& annotations, const torch::Tensor& tokens, const torch::Tensor& lengths) {
  if (tokens.dim() != 2 || tokens.size(1) < 1 || annotations.dim() != 3 ||
      tokens.size(0) != annotations.size(0)) {
    throw std::invalid_argument(
        "The decoder expects tokens [B, T] with T >= 1 for annotations [B, L, D], got tokens " +
        c10::str(tokens.sizes()) + " and annotations " + c10::str(annotations.sizes()));
  }
  const int64_t B = tokens.size(0), T = tokens.size(1);
  if (lengths.dim() != 1 || lengths.size(0) != B) {
    throw std::invalid_argument(
        "The decoder expects lengths [" + std::to_string(B) + "], got " + c10::str(lengths.sizes()));
  }
  const auto values = lengths.to(torch::kCPU, torch::kLong).contiguous();
  std::vector<int64_t> length(values.data_ptr<int64_t>(), values.data_ptr<int64_t>() + B);
  for (int64_t b = 0; b < B; ++b) {
    if (length[b] < 0 || length[b] > T) {
      throw std::invalid_argument(
          "lengths[" + std::to_string(b) + "] = " + std::to_string(length[b]) + " is outside [0, " +
          std::to_string(T) + "]");
    }
  }
  return length;
}

CaptionDecoder build_decoder(const DecoderOptions& options) {
  validate(options);
  std::shared_ptr<CaptionDecoderImpl> decoder;
  if (options.kind == DecoderKind::transformer) {
    decoder = std::make_shared<TransformerDecoderImpl>(options);
  } else {
    decoder = std::make_shared<AttentionLSTMDecoderImpl>(options);
  }
  return CaptionDecoder(std::move(decoder));
}

}  // namespace saccade
