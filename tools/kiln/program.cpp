// `kiln program info FILE`: what a compiled program's file holds (its signatures, the device
// models it is planned for, its data and binaries); `kiln program prepare FILE [--device D]`:
// plans and compiles every saved signature on a device and adds that device model's plans to the
// file, so that one file ships ready for several device models (docs/programs.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli_common.hpp"
#include "kiln/program.hpp"
#include "tensor/program_file.hpp"

namespace kiln::cli {
namespace {

struct ProgramOptions {
    std::string file, device;
};

std::string describe_inputs(const program::SavedSignature& s) {
    std::vector<std::string> parts;
    for (const auto& [dtype, shape] : s.inputs)
        parts.push_back(fmt::format("{}[{}]", name(dtype), fmt::join(shape, ", ")));
    return fmt::format("({})", fmt::join(parts, ", "));
}

int program_info(const ProgramOptions& opt) {
    // Read as the writing build, so that plans of another build are shown too.
    const program::SavedProgram header = program::read_program_file(opt.file);
    const program::SavedProgram file = program::read_program_file(opt.file, header.build);
    size_t data = 0;
    for (const auto& b : file.blobs) data += b.bytes.size();
    fmt::print("{}: written by kiln {}{}\n", opt.file, file.build,
               file.build == program::kBuildId ? "" : " (another build: it will be planned again)");
    fmt::print("captured data: {} tensors, {:.1f} MB\n", file.blobs.size(), data / 1e6);
    for (const Bucket& b : file.buckets)
        fmt::print("bucket: input {} axis {} padded to one of {}\n", b.input, b.axis,
                   fmt::join(b.sizes, ", "));
    for (size_t i = 0; i < file.signatures.size(); ++i) {
        const program::SavedSignature& s = file.signatures[i];
        fmt::print("signature {}: inputs {}, {} nodes, {} outputs\n", i, describe_inputs(s),
                   s.nodes.size(), s.outputs.size());
        if (s.plans.empty()) fmt::print("  no plan (planned at its first call on any device)\n");
        for (const program::SavedPlan& p : s.plans) {
            size_t bytes = 0;
            for (const auto& u : p.units) bytes += u.binary.size();
            fmt::print("  planned for {}: {} launches, {} compile units ({:.1f} KB)\n", p.device_id,
                       p.plan.launches.size(), p.units.size(), bytes / 1e3);
        }
    }
    return 0;
}

int program_prepare(const ProgramOptions& opt) {
    Device& device = opt.device.empty() ? best_device() : find_device(opt.device);
    const program::SavedProgram file = program::read_program_file(opt.file);
    Program p = Program::load(opt.file);
    for (const program::SavedSignature& s : file.signatures) {
        std::vector<Tensor> zeros;
        for (const auto& [dtype, shape] : s.inputs)
            zeros.push_back(Tensor::zeros(shape, dtype, device));
        p(zeros);
    }
    p.save(opt.file, p.annotation());
    fmt::print("{}: {} signature{} planned for {}\n", opt.file, file.signatures.size(),
               file.signatures.size() == 1 ? "" : "s", device.info().id);
    return 0;
}

}  // namespace

Command add_program_command(CLI::App& parent) {
    auto* program = parent.add_subcommand(
        "program", "Inspect a compiled program's file, or plan it for another device model");
    program->require_subcommand(1);
    auto opt = std::make_shared<ProgramOptions>();
    auto* info = program->add_subcommand("info", "Print what a program file holds");
    auto* prepare = program->add_subcommand(
        "prepare",
        "Plan and compile every saved signature on a device (its inputs zeros) and add that "
        "device model's plans to the file");
    for (auto* sub : {info, prepare})
        sub->add_option("file", opt->file, "the program file (Program::save)")->required();
    prepare->add_option("--device", opt->device, "device id, index or backend (default: the best)");
    return {program,
            [opt, info] { return info->parsed() ? program_info(*opt) : program_prepare(*opt); }};
}

}  // namespace kiln::cli
