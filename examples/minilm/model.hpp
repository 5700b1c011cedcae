// all-MiniLM-L6-v2 (sentence-transformers) in kiln's graph API: a BERT encoder (word, position
// and token-type embeddings, LayerNorm; post-LN layers of self-attention and a gelu MLP), mean
// pooling over the tokens and L2 normalization. Weights come from the model directory's
// model.safetensors and config.json; a batch of token-id sequences is padded to its longest, the
// padded keys masked by each sequence's length (one attention launch). Each layer is resolved as it
// is built: the six layers have one structure, so the first plans, compiles and races its launches
// and the other five replay that plan (one graph of all six would plan and tune each layer's
// launches again).
//
//   minilm::Model model(dir, device);
//   kiln::Tensor e = model.embed({tokenizer.encode("a sentence"), tokenizer.encode("another")});
//   std::vector<float> host = e.to_host<float>();
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "kiln/tensor.hpp"

namespace minilm {

struct Config {
    int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, intermediate = 0, max_positions = 0;
    double layer_norm_eps = 0;
};

// config.json of a BERT model with gelu (erf) activations and absolute positions; anything else
// is a kiln::Error naming the field and what was expected.
Config read_config(const std::filesystem::path& config_json);

class Model {
  public:
    // Reads `dir`/config.json and `dir`/model.safetensors onto `device`.
    Model(const std::filesystem::path& dir, kiln::Device& device);

    // What the resolves of one embed did, summed over them.
    struct Report {
        int resolves = 0, launches = 0;
        bool all_hits = true;  // every resolve replayed a plan
        double plan_us = 0, total_us = 0;
    };
    // The L2-normalized embeddings [batch, hidden] of `batch` (each sequence of ids, [CLS] and
    // [SEP] included, 1 to max_positions long), resolved; `report`, when given, gets the sums.
    kiln::Tensor embed(const std::vector<std::vector<int32_t>>& batch,
                       Report* report = nullptr) const;

    const Config& config() const { return config_; }
    kiln::Device& device() const { return device_; }

  private:
    struct Linear {
        kiln::Tensor weight, bias;
        kiln::Tensor operator()(const kiln::Tensor& x) const;
    };
    struct Norm {
        kiln::Tensor weight, bias;
    };
    struct Layer {
        Linear query, key, value, attention_out;
        Norm attention_norm;
        Linear intermediate, out;
        Norm out_norm;
    };

    kiln::Tensor layer_norm(const kiln::Tensor& x, const Norm& n) const;
    kiln::Tensor attention(const kiln::Tensor& x, const Layer& l,
                           const kiln::Tensor& key_lengths) const;

    kiln::Device& device_;
    Config config_;
    kiln::Tensor word_embeddings_, position_embeddings_, token_type_embeddings_;
    Norm embedding_norm_;
    std::vector<Layer> layers_;
};

}  // namespace minilm
