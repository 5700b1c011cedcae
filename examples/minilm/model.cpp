// all-MiniLM-L6-v2's forward pass in kiln's graph API (model.hpp).
#include "model.hpp"

#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "kiln/error.hpp"
#include "kiln/safetensors.hpp"
#include "plan/profile.hpp"

namespace minilm {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

namespace {

int64_t positive_field(const nlohmann::json& j, const char* field, const std::string& path) {
    if (!j.contains(field) || !j.at(field).is_number_integer() || j.at(field).get<int64_t>() < 1)
        kiln::fail("minilm: {}: '{}' missing or not a positive integer", path, field);
    return j.at(field).get<int64_t>();
}

void expect_string(const nlohmann::json& j, const char* field, const char* want,
                   const std::string& path) {
    const std::string got =
        j.contains(field) && j.at(field).is_string() ? j.at(field).get<std::string>() : "(none)";
    if (got != want)
        kiln::fail("minilm: {}: {} is '{}'; expected '{}' (a BERT model as all-MiniLM-L6-v2)", path,
                   field, got, want);
}

}  // namespace

Config read_config(const std::filesystem::path& config_json) {
    const std::string path = config_json.string();
    std::ifstream in(config_json);
    if (!in) kiln::fail("minilm: cannot read {}", path);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        kiln::fail("minilm: {} is not valid JSON: {}", path, e.what());
    }
    expect_string(j, "model_type", "bert", path);
    expect_string(j, "hidden_act", "gelu", path);
    expect_string(j, "position_embedding_type", "absolute", path);
    Config c;
    c.vocab = positive_field(j, "vocab_size", path);
    c.hidden = positive_field(j, "hidden_size", path);
    c.layers = positive_field(j, "num_hidden_layers", path);
    c.heads = positive_field(j, "num_attention_heads", path);
    c.intermediate = positive_field(j, "intermediate_size", path);
    c.max_positions = positive_field(j, "max_position_embeddings", path);
    if (c.hidden % c.heads != 0)
        kiln::fail("minilm: {}: hidden_size {} is not a multiple of num_attention_heads {}", path,
                   c.hidden, c.heads);
    if (!j.contains("layer_norm_eps") || !j.at("layer_norm_eps").is_number())
        kiln::fail("minilm: {}: 'layer_norm_eps' missing or not a number", path);
    c.layer_norm_eps = j.at("layer_norm_eps").get<double>();
    return c;
}

namespace {

// The padded lengths a batch's ids and token mask take in the compiled form: powers of two from
// 8, then the model's longest. Padding is masked (the token mask, each sequence's key length), so
// a batch's embeddings are those of its own length, and lengths share a few traces.
std::vector<int64_t> sequence_buckets(int64_t max_positions) {
    std::vector<int64_t> sizes;
    for (int64_t n = 8; n < max_positions; n *= 2) sizes.push_back(n);
    sizes.push_back(max_positions);
    return sizes;
}

}  // namespace

Model::Model(const std::filesystem::path& dir, kiln::Device& device)
    : device_(device),
      config_(read_config(dir / "config.json")),
      program_(kiln::compile(
          [this](const std::vector<Tensor>& in) {
              return std::vector<Tensor>{encode(in[0], in[1], in[2], nullptr)};
          },
          {.buckets = {{0, 1, sequence_buckets(config_.max_positions)},
                       {1, 1, sequence_buckets(config_.max_positions)}}})) {
    const kiln::SafetensorsFile file(dir / "model.safetensors");
    // A weight of the expected shape, f32, on the device.
    auto weight = [&](const std::string& name, const Shape& shape) {
        const kiln::SafetensorsEntry& e = file.entry(name);
        if (e.shape != shape || e.dtype != DType::f32)
            kiln::fail("minilm: {}: tensor '{}' is {} {}; expected F32 [{}]", file.path().string(),
                       name, e.dtype_name, fmt::join(e.shape, ", "), fmt::join(shape, ", "));
        return file.load(name, device);
    };
    const int64_t h = config_.hidden;
    auto linear = [&](const std::string& prefix, int64_t out, int64_t in) {
        return Linear{weight(prefix + ".weight", {out, in}), weight(prefix + ".bias", {out})};
    };
    auto norm = [&](const std::string& prefix) {
        return Norm{weight(prefix + ".weight", {h}), weight(prefix + ".bias", {h})};
    };
    word_embeddings_ = weight("embeddings.word_embeddings.weight", {config_.vocab, h});
    position_embeddings_ =
        weight("embeddings.position_embeddings.weight", {config_.max_positions, h});
    token_type_embeddings_ =
        weight("embeddings.token_type_embeddings.weight",
               {file.entry("embeddings.token_type_embeddings.weight").shape.at(0), h});
    embedding_norm_ = norm("embeddings.LayerNorm");
    for (int64_t i = 0; i < config_.layers; ++i) {
        const std::string p = fmt::format("encoder.layer.{}.", i);
        layers_.push_back(Layer{
            .query = linear(p + "attention.self.query", h, h),
            .key = linear(p + "attention.self.key", h, h),
            .value = linear(p + "attention.self.value", h, h),
            .attention_out = linear(p + "attention.output.dense", h, h),
            .attention_norm = norm(p + "attention.output.LayerNorm"),
            .intermediate = linear(p + "intermediate.dense", config_.intermediate, h),
            .out = linear(p + "output.dense", h, config_.intermediate),
            .out_norm = norm(p + "output.LayerNorm"),
        });
    }
}

Tensor Model::Linear::operator()(const Tensor& x) const {
    return kiln::linear(x, weight, &bias);
}

Tensor Model::layer_norm(const Tensor& x, const Norm& n) const {
    return kiln::layer_norm(x, 1, &n.weight, &n.bias, config_.layer_norm_eps);
}

// Multi-head self-attention: [B, S, hidden] to [B, S, hidden]; batch i's rows see only its first
// key_lengths[i] keys (the rest is padding).
Tensor Model::attention(const Tensor& x, const Layer& l, const Tensor& key_lengths) const {
    const int64_t b = x.size(0), s = x.size(1), heads = config_.heads;
    const int64_t d = config_.hidden / heads;
    auto split_heads = [&](const Tensor& t) {  // [B, S, H*D] -> [B, H, S, D]
        return t.reshape({b, s, heads, d}).permute({0, 2, 1, 3});
    };
    const Tensor q = split_heads(l.query(x)), k = split_heads(l.key(x)),
                 v = split_heads(l.value(x));
    const Tensor context = kiln::scaled_dot_product_attention(q, k, v, false, {}, &key_lengths);
    return context.permute({0, 2, 1, 3}).reshape({b, s, config_.hidden});
}

Tensor Model::encode(const Tensor& ids, const Tensor& token_mask, const Tensor& key_lengths,
                     const std::function<Tensor(Tensor)>& settle) const {
    const auto settled = [&](Tensor t) { return settle ? settle(std::move(t)) : t; };
    // Embeddings: word + token type 0, + position; LayerNorm.
    const Tensor positions = Tensor::arange(ids.size(1), DType::i32, device_);
    Tensor x = kiln::embedding(word_embeddings_, ids) + token_type_embeddings_.slice(0, 0, 1) +
               kiln::embedding(position_embeddings_, positions);
    x = settled(layer_norm(x, embedding_norm_));
    for (const Layer& l : layers_) {
        x = layer_norm(l.attention_out(attention(x, l, key_lengths)) + x, l.attention_norm);
        x = settled(layer_norm(l.out(kiln::gelu(l.intermediate(x))) + x, l.out_norm));
    }

    // Mean over the tokens (padding excluded), then L2 normalization.
    const Tensor count =
        kiln::maximum(kiln::sum(token_mask, {1}), Tensor::full({}, 1e-9, DType::f32, device_));
    const Tensor mean = kiln::sum(x * token_mask, {1}) / count;
    const Tensor norm = kiln::maximum(kiln::sqrt(kiln::sum(mean * mean, {1}, true)),
                                      Tensor::full({}, 1e-12, DType::f32, device_));
    return mean / norm;
}

Tensor Model::embed(const std::vector<std::vector<int32_t>>& batch, Report* report,
                    Form form) const {
    if (batch.empty()) kiln::fail("minilm: embed of an empty batch; expected a sequence or more");
    size_t longest = 0;
    for (const auto& ids : batch) longest = std::max(longest, ids.size());
    for (size_t i = 0; i < batch.size(); ++i) {
        if (batch[i].empty() || batch[i].size() > static_cast<size_t>(config_.max_positions))
            kiln::fail("minilm: sequence {} has {} ids; expected 1 to {}", i, batch[i].size(),
                       config_.max_positions);
        for (int32_t id : batch[i])
            if (id < 0 || id >= config_.vocab)
                kiln::fail("minilm: sequence {} holds id {}; expected 0 to {}", i, id,
                           config_.vocab - 1);
    }
    const int64_t b = static_cast<int64_t>(batch.size()), s = static_cast<int64_t>(longest);
    // Padded ids (0, [PAD]), the token mask, and each sequence's length (its keys).
    std::vector<int32_t> ids(static_cast<size_t>(b * s), 0), lengths;
    std::vector<float> tokens(ids.size(), 0.0f);
    for (size_t i = 0; i < batch.size(); ++i) {
        lengths.push_back(static_cast<int32_t>(batch[i].size()));
        for (size_t j = 0; j < longest; ++j) {
            const bool real = j < batch[i].size();
            ids[i * longest + j] = real ? batch[i][j] : 0;
            tokens[i * longest + j] = real ? 1.0f : 0.0f;
        }
    }
    const Tensor id_tensor = Tensor::from_host(ids, {b, s}, device_);
    const Tensor token_mask = Tensor::from_host(tokens, {b, s, 1}, device_);
    const Tensor key_lengths = Tensor::from_host(lengths, {b}, device_);

    if (form == Form::compiled) {
        const auto t0 = std::chrono::steady_clock::now();
        const uint64_t traces = program_.stats().traces;
        Tensor e = program_({id_tensor, token_mask, key_lengths})[0];
        if (report) {
            report->launches += static_cast<int>(program_.stats().launches);
            report->all_hits = report->all_hits && program_.stats().traces == traces;
            report->total_us +=
                std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                    .count();
        }
        return e;
    }
    const auto settle = [report](Tensor t) {
        t.resolve();
        if (report) {
            const kiln::plan::ResolveReport& r = kiln::plan::last_report();
            ++report->resolves;
            report->launches += r.launches;
            report->all_hits = report->all_hits && r.hit;
            report->plan_us += r.plan_us;
            report->total_us += r.total_us;
        }
        return t;
    };
    return settle(encode(id_tensor, token_mask, key_lengths, settle));
}

}  // namespace minilm
