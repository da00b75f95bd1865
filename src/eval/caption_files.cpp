// Readers for reference and result caption files (see caption_files.h). Every shape error names
// the file and the JSON path of the entry, so a user can find it.
#include "eval/caption_files.h"

#include <set>
#include <stdexcept>

#include "io/json.h"

namespace saccade {
namespace {

const Json& member(const Json& object, const char* key, const std::string& where) {
  const Json* value = object.find(key);
  if (value == nullptr) {
    throw std::invalid_argument(
        where + ": expected an object with key '" + key + "', got " + describe(object.type()));
  }
  return *value;
}

const Json::Array& array_member(const Json& object, const char* key, const std::string& where) {
  const Json& value = member(object, key, where);
  if (!value.is_array()) {
    throw std::invalid_argument(where + "." + key + ": expected an array, got " + describe(value.type()));
  }
  return value.as_array();
}

const std::string& string_member(const Json& object, const char* key, const std::string& where) {
  const Json& value = member(object, key, where);
  if (!value.is_string()) {
    throw std::invalid_argument(where + "." + key + ": expected a string, got " + describe(value.type()));
  }
  return value.as_string();
}

// An image id as text: an integer (COCO) or a string.
std::string id_member(const Json& object, const char* key, const std::string& where) {
  const Json& value = member(object, key, where);
  if (value.is_string()) return value.as_string();
  if (value.is_integer()) return std::to_string(value.as_int64());
  throw std::invalid_argument(
      where + "." + key + ": expected an integer or string image id, got " + describe(value.type()));
}

std::string at_index(const std::string& where, size_t index) {
  return where + "[" + std::to_string(index) + "]";
}

}  // namespace

ReferenceCaptions read_reference_captions(const std::filesystem::path& path) {
  const Json document = read_json_file(path);
  const std::string name = path.string();
  ReferenceCaptions references;
  auto& captions = references.captions;
  const auto add = [&](const std::string& id, const std::string& caption) {
    auto [entry, added] = captions.try_emplace(id);
    if (added) references.image_order.push_back(id);
    entry->second.push_back(caption);
  };
  if (document.find("annotations") != nullptr) {
    const Json::Array& annotations = array_member(document, "annotations", name);
    for (size_t i = 0; i < annotations.size(); ++i) {
      const std::string where = at_index(name + ": annotations", i);
      add(id_member(annotations[i], "image_id", where), string_member(annotations[i], "caption", where));
    }
    // coco-caption goes through the images as the file lists them.
    if (document.find("images") != nullptr) {
      const Json::Array& images = array_member(document, "images", name);
      std::vector<std::string> listed;
      for (size_t i = 0; i < images.size(); ++i) {
        const std::string id = id_member(images[i], "id", at_index(name + ": images", i));
        if (captions.count(id) > 0) listed.push_back(id);
      }
      listed.insert(listed.end(), references.image_order.begin(), references.image_order.end());
      references.image_order.clear();
      std::set<std::string> placed;
      for (const std::string& id : listed) {
        if (placed.insert(id).second) references.image_order.push_back(id);
      }
    }
  } else if (document.find("images") != nullptr) {
    const Json::Array& images = array_member(document, "images", name);
    for (size_t i = 0; i < images.size(); ++i) {
      const std::string where = at_index(name + ": images", i);
      const Json& image = images[i];
      const std::string id = id_member(image, image.find("cocoid") != nullptr ? "cocoid" : "imgid", where);
      const Json::Array& sentences = array_member(image, "sentences", where);
      for (size_t k = 0; k < sentences.size(); ++k) {
        add(id, string_member(sentences[k], "raw", at_index(where + ".sentences", k)));
      }
    }
  } else {
    throw std::invalid_argument(
        name +
        ": expected COCO captions ({\"annotations\": [...]}) or a Karpathy split ({\"images\": [...]})");
  }
  if (captions.empty()) throw std::invalid_argument(name + ": holds no reference caption");
  return references;
}

std::map<std::string, std::string> read_result_captions(const std::filesystem::path& path) {
  const Json document = read_json_file(path);
  const std::string name = path.string();
  if (!document.is_array()) {
    throw std::invalid_argument(
        name + ": expected COCO results ([{\"image_id\": ..., \"caption\": ...}]), got " +
        describe(document.type()));
  }
  std::map<std::string, std::string> results;
  const Json::Array& entries = document.as_array();
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string where = at_index(name + ": ", i);
    const std::string id = id_member(entries[i], "image_id", where);
    if (!results.emplace(id, string_member(entries[i], "caption", where)).second) {
      throw std::invalid_argument(
          where + ".image_id: image " + id + " already has a caption; give one per image");
    }
  }
  return results;
}

}  // namespace saccade
