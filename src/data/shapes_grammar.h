// The shapes world's caption grammar: a scene's objects into captions (not part of the public API).
//
// Each word carries the objects it refers to, and every relation stated is true of the boxes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "data/rng.h"
#include "data/shapes_scene.h"

namespace saccade {
struct ShapesCaptionTruth;
}  // namespace saccade

namespace saccade::shapes_detail {

// A caption under construction: words with the objects each refers to; "," is punctuation for
// the raw text only.
struct Phrase {
  std::vector<std::string> words;
  std::vector<std::vector<int>> objects;
  void add(const std::string& word, std::vector<int> refs = {}) {
    words.push_back(word);
    objects.push_back(std::move(refs));
  }
  void add(const Phrase& other) {
    words.insert(words.end(), other.words.begin(), other.words.end());
    objects.insert(objects.end(), other.objects.begin(), other.objects.end());
  }
};

// A caption of the complete style (ShapesWorldOptions::captions): every object in random order;
// one object: "[there is] a [single] X <region>"; two: "[there is] a X <relation> a Y"; three:
// "a X <relation> a Y and a Z <region>".
Phrase complete_caption(const std::vector<Object>& objects, int size, Rng& rng);

// One caption drawn from the varied grammar.
Phrase sample_caption(const std::vector<Object>& objects, int size, Rng& rng);

// "A red circle , a blue square and ..." -> "A red circle, a blue square and ....".
std::string raw_text(const Phrase& phrase);

// The caption's words without the punctuation, each with the objects it refers to.
ShapesCaptionTruth caption_truth(const Phrase& phrase);

}  // namespace saccade::shapes_detail
