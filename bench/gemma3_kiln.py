"""kiln's side of the Gemma 3 comparison (bench/gemma3_llama_cpp.py is llama.cpp's): the same
figures from kiln.gemma3, after one untimed generation that plans and compiles.
    PYTHONPATH=build-ci/python python bench/gemma3_kiln.py MODEL.gguf PROMPT NEW OUT.json [DEVICE]"""
import json, sys, time
import numpy as np
import kiln
from kiln import gemma3
path, prompt, n_new, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
device = sys.argv[5] if len(sys.argv) > 5 else "cpu"
m = gemma3.Gemma3(path, device=device, max_context=64)
ids = m.tokenizer.encode(prompt)
m.generate_ids(ids, 2)  # plans and compiles the prompt's length and the decode step
t0 = time.perf_counter()
logits, caches = m.prefill(ids)
last = logits.numpy()[-1]
t_prompt = time.perf_counter() - t0
new, t_gen = [], 0.0
tok = int(last.argmax())
for i in range(n_new):
    new.append(tok)
    t0 = time.perf_counter()
    logits, caches = m.decode(tok, len(ids) + i, caches)
    row = logits.numpy()[0]
    t_gen += time.perf_counter() - t0
    tok = int(row.argmax())
json.dump({"ids": ids, "new": new, "text": m.tokenizer.decode(new),
           "last_logits_top": np.argsort(-last)[:10].tolist(), "last_logits": last.tolist(),
           "prompt_s": t_prompt, "decode_s_per_token": t_gen / n_new}, open(out, "w"))
print(ids, new, repr(m.tokenizer.decode(new)), t_prompt, t_gen / n_new)
