// The options that build a decoder (models/decoder.h): what both decoders read, each decoder's own
// options, the enums they name, and their reader from the config's decoder.* keys.
//
//   DecoderOptions options = decoder_options_from(config);   // decoder.* keys
//   options.vocab_size = vocabulary.size();                  // V, from the data
//   options.annotation_dim = 2048;                           // D, from the encoder
//   options.lstm.hidden_dim;                                 // decoder.kind=lstm's own
//   options.transformer.layers;                              // decoder.kind=transformer's own
//
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "models/attention.h"

namespace saccade {

class ArchitectureKeys;
class Config;

// How much of the context passes into the LSTM (paper Sec. 4.2.1, "beta").
enum class Gate {
  none,    // beta = 1
  scalar,  // one sigmoid unit per step (the paper and the authors' code)
  vector,  // D sigmoid units, one per context channel (sgrvinod's tutorial)
};
std::string to_string(Gate gate);
// "none" | "scalar" | "vector"; throws std::invalid_argument naming the value otherwise.
Gate parse_gate(const std::string& name);

// How alpha becomes a context (the ContextReader): soft = expectation (Sec. 4.2); hard = a sampled
// location trained with REINFORCE (Sec. 4.1; decoding reads alpha's most likely location).
enum class AttentionMode { soft, hard };
std::string to_string(AttentionMode mode);
// "soft" | "hard"; throws std::invalid_argument naming the value otherwise.
AttentionMode parse_attention_mode(const std::string& name);

// How a hard-attention decoder reads the context when decoding (soft decoders ignore it).
enum class HardRead {
  argmax,       // the annotation at alpha's most likely location: the cell the model chose
  expectation,  // sum_i alpha_i a_i, as the expectation captions of training read it
};
std::string to_string(HardRead read);
// "argmax" | "expectation"; throws std::invalid_argument naming the value otherwise.
HardRead parse_hard_read(const std::string& name);

// What the LSTM's attention query f_att(a_i, .) reads at step t (Sec. 3.1.2, eq. 4).
enum class AttentionQuery {
  hidden,           // h_{t-1}: the paper
  hidden_and_word,  // h_{t-1} and E y_{t-1}, the word just written: W_h h_{t-1} + W_y E y_{t-1}
};
std::string to_string(AttentionQuery query);
// "hidden" | "hidden_and_word"; throws std::invalid_argument naming the value otherwise.
AttentionQuery parse_attention_query(const std::string& name);

// Where the LSTM's h_0 and c_0 come from (Sec. 3.1.2).
enum class InitialState {
  mean_annotation,  // tanh(f_init(mean_i a_i)): the paper; the state starts knowing the whole image
  learned,          // tanh of a learned vector, the same for every image: what the words say of the
                    // image comes through the attention
};
std::string to_string(InitialState initial);
// "mean_annotation" | "learned"; throws std::invalid_argument naming the value otherwise.
InitialState parse_initial_state(const std::string& name);

// Which decoder reads the grid.
enum class DecoderKind {
  lstm,         // the Show-Attend-Tell attention LSTM
  transformer,  // masked self-attention over the words, cross-attention to the grid
};
std::string to_string(DecoderKind kind);
// "lstm" | "transformer"; throws std::invalid_argument naming the value otherwise.
DecoderKind parse_decoder_kind(const std::string& name);
// config's decoder.kind; lstm when absent (a run saved before it existed). Throws ConfigError for
// another value.
DecoderKind decoder_kind_from(const Config& config);

// The attention LSTM's own options (decoder.kind=lstm; models/attention_lstm_decoder.h).
struct AttentionLSTMOptions {
  // E: word embedding size (the paper's m).
  int64_t embed_dim = 512;
  // H: LSTM hidden and cell size (the paper's n).
  int64_t hidden_dim = 512;
  // Attention kind, see attention.h: additive (the paper's) | dot | scaled_dot | general | multihead | local.
  std::string attention_kind = "additive";
  // A: the attention's own dimension (additive: MLP width; dot kinds: projected key size).
  int64_t attention_dim = 512;
  // N: heads, multihead only (must divide attention_dim).
  int64_t attention_heads = 1;
  // local only: cells on each side of the window's centre cell, and how the centre is chosen.
  int64_t attention_window = 2;
  LocalCentre attention_centre = LocalCentre::predicted;
  // Where h_0 and c_0 come from.
  InitialState initial_state = InitialState::mean_annotation;
  // What the attention's query reads.
  AttentionQuery attention_query = AttentionQuery::hidden;
  // Whether the attention's scores read where it has looked (AttentionOptions::coverage).
  bool attention_coverage = false;
  // Hard mode, training: the probability that a caption reads the expected context instead of
  // sampled locations (the paper's 0.5, Sec. 4.1).
  double hard_expectation = 0.5;
  // The context gate beta.
  Gate gate = Gate::scalar;
  // true: the paper's deep output layer (eq. 7); false: one linear layer on h_t.
  bool deep_output = true;
};

// The Transformer decoder's own options (decoder.kind=transformer; models/transformer_decoder.h).
struct TransformerDecoderOptions {
  int64_t layers = 2;
  int64_t heads = 4;  // N, dividing model_dim
  int64_t model_dim = 256;
  int64_t ffn_dim = 1024;        // the feed-forward's hidden width
  bool tied_embeddings = false;  // the output weights are the word embeddings
  // The layer whose cross-attention maps (every head) are the step's alpha (0-based; negative
  // counts from the last).
  int64_t maps_layer = -1;
};

// What builds a decoder: what both kinds read, and each kind's own options (the other kind's stay
// at their defaults and are never read).
struct DecoderOptions {
  DecoderKind kind = DecoderKind::lstm;
  // V: vocabulary size, including the special tokens. Comes from the data at run time, never from
  // the config; 0 = not set yet (validate rejects it).
  int64_t vocab_size = 0;
  // D: size of one annotation vector. Comes from the encoder at run time; 0 = not set yet.
  int64_t annotation_dim = 0;
  // [Hg, Wg] of the annotation grid. Comes from the encoder (encoder.grid) at run time; {0, 0} =
  // unknown, which only the LSTM's local attention refuses.
  std::array<int64_t, 2> grid{0, 0};
  // soft | hard (the Transformer has soft only).
  AttentionMode attention_mode = AttentionMode::soft;
  // Dropout probability. LSTM: on the output path (h_t, and the deep output's tanh layer), never
  // in the recurrence; 0 = none. Transformer: on the embeddings, the attention weights, every
  // sublayer's output and the feed-forward's hidden layer.
  double dropout = 0.5;

  AttentionLSTMOptions lstm;
  TransformerDecoderOptions transformer;

  // The options of the attention LSTM's attention module (D, H and the grid filled in).
  AttentionOptions attention() const;
};

// Reads decoder.kind (lstm when absent: a run saved before it existed) and decoder.dropout, then
// for the LSTM (into lstm, and attention_mode) decoder.{embed_dim, hidden_dim, initial_state,
// attention.{kind, dim, heads, window, centre, query, coverage, mode, hard_expectation}, gate,
// deep_output} (initial_state, attention.query and attention.coverage as the paper's when absent: a
// run saved before them), for the Transformer (into transformer) decoder.{layers, heads, dim,
// ffn_dim, tied_embeddings, maps_layer}. vocab_size, annotation_dim and grid stay unset: the caller
// sets them from the vocabulary and the encoder. Throws ConfigError for a missing key or a bad
// value. Records the keys that shape the model in `architecture`, when given
// (models/architecture_keys.h).
DecoderOptions decoder_options_from(const Config& config, ArchitectureKeys* architecture = nullptr);

// Throws std::invalid_argument, one sentence per broken rule.
void validate(const DecoderOptions& options);

}  // namespace saccade
