"""llama.cpp's side of the Gemma 3 comparison (notes/gemma3-2026-12-05.md), through
llama-cpp-python (a peer, never a dependency: pip install llama-cpp-python in a venv of its own):
the prompt's tokens, greedy tokens, the prompt's last logits, seconds for the prompt and per
generated token, as JSON.
    python bench/gemma3_llama_cpp.py MODEL.gguf PROMPT NEW_TOKENS OUT.json"""
import json, sys, time
import numpy as np
from llama_cpp import Llama
path, prompt, n_new, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
llm = Llama(model_path=path, n_ctx=512, n_threads=2, logits_all=True, verbose=False)
ids = llm.tokenize(prompt.encode(), add_bos=True, special=True)
t0 = time.perf_counter(); llm.eval(ids); t_prompt = time.perf_counter() - t0
last = np.array(llm.scores[len(ids) - 1], dtype=np.float32)
new, t_gen = [], 0.0
tok = int(last.argmax())
for i in range(n_new):
    new.append(tok)
    t0 = time.perf_counter(); llm.eval([tok]); t_gen += time.perf_counter() - t0
    tok = int(np.array(llm.scores[len(ids) + i], dtype=np.float32).argmax())
json.dump({"ids": ids, "new": new, "text": llm.detokenize(new).decode(errors="replace"),
           "last_logits_top": np.argsort(-last)[:10].tolist(), "last_logits": last.tolist(),
           "prompt_s": t_prompt, "decode_s_per_token": t_gen / n_new}, open(out, "w"))
print(ids, new, repr(llm.detokenize(new).decode(errors="replace")), t_prompt, t_gen / n_new)
