"""kiln's side of the Gemma 3 comparison (bench/gemma3_llama_cpp.py is llama.cpp's): the same
figures from kiln.gemma3, after one untimed generation that plans and compiles. The prompt's last
logits and each decode step's go to OUT.npy (one row each) for bitwise comparisons between
builds; `dense` dequantizes every weight to f32 on the host (Gemma3's planar_types=()).
    PYTHONPATH=build-ci/python python bench/gemma3_kiln.py MODEL.gguf PROMPT NEW OUT.json [DEVICE]
        [dense]"""
import json, sys, time
import numpy as np
import kiln
from kiln import gemma3
path, prompt, n_new, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
device = sys.argv[5] if len(sys.argv) > 5 else "cpu"
dense = {"planar_types": ()} if sys.argv[6:] == ["dense"] else {}
m = gemma3.Gemma3(path, device=device, max_context=64, **dense)
ids = m.tokenizer.encode(prompt)
m.generate_ids(ids, 2)  # plans and compiles the prompt's length and the decode step
t0 = time.perf_counter()
logits, caches = m.prefill(ids)
last = logits.numpy()[-1]
t_prompt = time.perf_counter() - t0
new, t_gen, rows = [], 0.0, [last]
tok = int(last.argmax())
for i in range(n_new):
    new.append(tok)
    t0 = time.perf_counter()
    logits, caches = m.decode(tok, len(ids) + i, caches)
    row = logits.numpy()[0]
    t_gen += time.perf_counter() - t0
    rows.append(row)
    tok = int(row.argmax())
json.dump({"ids": ids, "new": new, "text": m.tokenizer.decode(new),
           "last_logits_top": np.argsort(-last)[:10].tolist(), "last_logits": last.tolist(),
           "prompt_s": t_prompt, "decode_s_per_token": t_gen / n_new}, open(out, "w"))
np.save(out.rsplit(".", 1)[0] + ".npy", np.stack(rows))
print(ids, new, repr(m.tokenizer.decode(new)), t_prompt, t_gen / n_new)
