// all-MiniLM-L6-v2 (sentence-transformers) in kiln's graph API: a BERT encoder (word, position
// and token-type embeddings, LayerNorm; post-LN layers of self-attention and a gelu MLP), mean
// pooling over the tokens and L2 normalization. Weights come from the model directory's
// model.safetensors and config.json; a batch of token-id sequences is padded to its longest, the
// padded keys masked by each sequence's length (one attention launch). The encoder runs as a
// compiled program (docs/programs.md): its first call with a batch's shape traces the whole
// forward and plans it as one graph, later calls of that shape replay it; the sequence axis is
// padded to the next power of two (masked), so lengths share a few traces. The resolve form
// (Form::resolves) resolves each layer as it is built instead: the six layers have one structure,
// so the first plans, compiles and races its launches and the other five replay that plan.
//
//   minilm::Model model(dir, device);
//   kiln::Tensor e = model.embed({tokenizer.encode("a sentence"), tokenizer.encode("another")});
//   std::vector<float> host = e.to_host<float>();
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

#include "kiln/program.hpp"
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

    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;

    enum class Form { compiled, resolves };
    // What one embed did: in the resolve form, the resolves' figures summed; compiled, the
    // program's call (resolves 0, plan_us 0, all_hits when it replayed).
    struct Report {
        int resolves = 0, launches = 0;
        bool all_hits = true;  // every resolve replayed a plan, or the program replayed
        double plan_us = 0, total_us = 0;
    };
    // The L2-normalized embeddings [batch, hidden] of `batch` (each sequence of ids, [CLS] and
    // [SEP] included, 1 to max_positions long), resolved; `report`, when given, gets the sums.
    kiln::Tensor embed(const std::vector<std::vector<int32_t>>& batch, Report* report = nullptr,
                       Form form = Form::compiled) const;

    // The compiled form's program to a file (its signatures traced so far), or from one: later
    // compiled embeds run the loaded program (docs/programs.md, Ahead of time).
    void save_program(const std::string& path) const { program_.save(path); }
    void load_program(const std::string& path) const { program_ = kiln::Program::load(path); }
    kiln::Program::Stats program_stats() const { return program_.stats(); }

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

    // The encoder from the padded batch: ids [B, S] i32, token mask [B, S, 1] f32 and key lengths
    // [B] i32 to the embeddings; `settle` is applied to the hidden state after the embeddings and
    // after each layer (a resolve in the resolve form, nothing when compiled).
    kiln::Tensor encode(const kiln::Tensor& ids, const kiln::Tensor& token_mask,
                        const kiln::Tensor& key_lengths,
                        const std::function<kiln::Tensor(kiln::Tensor)>& settle) const;
    kiln::Tensor layer_norm(const kiln::Tensor& x, const Norm& n) const;
    kiln::Tensor attention(const kiln::Tensor& x, const Layer& l,
                           const kiln::Tensor& key_lengths) const;

    kiln::Device& device_;
    Config config_;
    kiln::Tensor word_embeddings_, position_embeddings_, token_type_embeddings_;
    Norm embedding_norm_;
    std::vector<Layer> layers_;
    mutable kiln::Program program_;  // encode() compiled
};

}  // namespace minilm
