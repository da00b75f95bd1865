// The decoders' options: the enum names, the reader of decoder.* and the checks (see
// decoder_options.h).
#include "models/decoder_options.h"

#include <functional>
#include <stdexcept>

#include "base/enum_names.h"
#include "config/config.h"
#include "models/architecture_keys.h"

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
  options.kind = lstm.attention_kind;
  options.annotation_dim = annotation_dim;
  options.query_dim = lstm.hidden_dim;
  options.dim = lstm.attention_dim;
  options.heads = lstm.attention_heads;
  options.window = lstm.attention_window;
  options.centre = lstm.attention_centre;
  options.grid = grid;
  options.coverage = lstm.attention_coverage;
  return options;
}

namespace {

// Records `key` as one that shapes the model (in `architecture`, when given) and returns it.
using Shaping = std::function<const char*(const char*)>;

TransformerDecoderOptions transformer_options_from(const Config& config, const Shaping& shaping) {
  TransformerDecoderOptions options;
  options.layers = config.get<int64_t>(shaping("decoder.layers"));
  options.heads = config.get<int64_t>(shaping("decoder.heads"));
  options.model_dim = config.get<int64_t>(shaping("decoder.dim"));
  options.ffn_dim = config.get<int64_t>(shaping("decoder.ffn_dim"));
  options.tied_embeddings = config.get<bool>(shaping("decoder.tied_embeddings"));
  // Which layer's maps are drawn changes no caption: not an architecture key.
  options.maps_layer = config.get<int64_t>("decoder.maps_layer");
  return options;
}

AttentionLSTMOptions lstm_options_from(const Config& config, const Shaping& shaping) {
  AttentionLSTMOptions options;
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
  // The share of captions that read the expectation acts in training only: not an architecture key.
  options.hard_expectation = config.get<double>("decoder.attention.hard_expectation");
  options.gate = config.get_parsed(shaping("decoder.gate"), parse_gate);
  options.deep_output = config.get<bool>(shaping("decoder.deep_output"));
  return options;
}

}  // namespace

DecoderOptions decoder_options_from(const Config& config, ArchitectureKeys* architecture) {
  const Shaping shaping = [architecture](const char* key) {
    return ArchitectureKeys::record(architecture, key);
  };
  DecoderOptions options;
  shaping("decoder.kind");  // read by decoder_kind_from
  options.kind = decoder_kind_from(config);
  // Dropout acts in training only: not an architecture key.
  options.dropout = config.get<double>("decoder.dropout");
  if (options.kind == DecoderKind::transformer) {
    options.transformer = transformer_options_from(config, shaping);
  } else {
    options.lstm = lstm_options_from(config, shaping);
    options.attention_mode = config.get_parsed(shaping("decoder.attention.mode"), parse_attention_mode);
  }
  return options;
}

namespace {

[[noreturn]] void fail(const std::string& message) {
  throw std::invalid_argument(message);
}

void validate_transformer(const DecoderOptions& options) {
  const TransformerDecoderOptions& transformer = options.transformer;
  const auto at_least_one = [&](const char* key, int64_t value) {
    if (value < 1) fail(std::string("decoder.") + key + " must be >= 1, got " + std::to_string(value));
  };
  at_least_one("layers", transformer.layers);
  at_least_one("dim", transformer.model_dim);
  at_least_one("ffn_dim", transformer.ffn_dim);
  if (transformer.heads < 1 || transformer.model_dim % transformer.heads != 0) {
    fail(
        "decoder.heads=" + std::to_string(transformer.heads) +
        " does not divide decoder.dim=" + std::to_string(transformer.model_dim));
  }
  if (transformer.model_dim % 2 != 0) {
    fail(
        "decoder.dim must be even (the sinusoidal position encoding), got " +
        std::to_string(transformer.model_dim));
  }
  if (transformer.maps_layer >= transformer.layers || transformer.maps_layer < -transformer.layers) {
    fail(
        "decoder.maps_layer=" + std::to_string(transformer.maps_layer) + " is not a layer of the " +
        std::to_string(transformer.layers) + "-layer decoder");
  }
  if (options.attention_mode == AttentionMode::hard) fail("decoder.kind=transformer has soft attention only");
}

void validate_lstm(const DecoderOptions& options) {
  const AttentionLSTMOptions& lstm = options.lstm;
  if (lstm.embed_dim <= 0) fail("decoder.embed_dim must be > 0, got " + std::to_string(lstm.embed_dim));
  if (lstm.hidden_dim <= 0) fail("decoder.hidden_dim must be > 0, got " + std::to_string(lstm.hidden_dim));
  if (!(lstm.hard_expectation >= 0.0 && lstm.hard_expectation <= 1.0)) {
    fail(
        "decoder.attention.hard_expectation must be in [0, 1], got " + std::to_string(lstm.hard_expectation));
  }
  try {
    validate(options.attention());
  } catch (const std::invalid_argument& error) {
    fail(std::string("decoder.attention: ") + error.what());
  }
}

}  // namespace

void validate(const DecoderOptions& options) {
  if (options.vocab_size <= 0) fail("The decoder's vocab_size must be > 0 (set it from the vocabulary)");
  if (options.annotation_dim <= 0) fail("The decoder's annotation_dim must be > 0 (set it from the encoder)");
  if (!(options.dropout >= 0.0 && options.dropout < 1.0)) {
    fail("decoder.dropout must be in [0, 1), got " + std::to_string(options.dropout));
  }
  if (options.kind == DecoderKind::transformer) {
    validate_transformer(options);
  } else {
    validate_lstm(options);
  }
}

}  // namespace saccade
