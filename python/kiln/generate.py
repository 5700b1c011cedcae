"""The command line for text generation with a Gemma 3 GGUF file on kiln (docs/llm.md):

    python -m kiln.generate --model FILE --prompt TEXT [--max-tokens N] [--device D]
        [--temperature T] [--top-k K] [--top-p P] [--seed S] [--stop TEXT]... [--max-context N]

The continuation streams to stdout as it is generated (the prompt is not repeated), then a
newline. Exit 0; 2 for bad usage (argparse's message); 1 for a kiln.Error (a bad file, device or
setting), its message on stderr.
"""

import argparse
import sys

from . import _kiln
from .gemma3 import Gemma3
from .sampling import check_settings


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m kiln.generate",
        description="Continue a prompt with a Gemma 3 GGUF model on a kiln device, streaming the "
                    "text to stdout.")
    parser.add_argument("--model", required=True, metavar="FILE", help="the model's .gguf file")
    parser.add_argument("--prompt", required=True, metavar="TEXT", help="the text to continue")
    parser.add_argument("--max-tokens", type=int, default=64, metavar="N",
                        help="at most this many new tokens (default 64)")
    parser.add_argument("--device", default=None, metavar="D",
                        help="a device id, index or backend name (default: the CPU)")
    parser.add_argument("--temperature", type=float, default=0.0, metavar="T",
                        help="0 (the default) is greedy; above 0 samples")
    parser.add_argument("--top-k", type=int, default=0, metavar="K",
                        help="sample among the K likeliest tokens (default 0: all)")
    parser.add_argument("--top-p", type=float, default=1.0, metavar="P",
                        help="sample within the likeliest tokens whose probability reaches P "
                             "(default 1: all)")
    parser.add_argument("--seed", type=int, default=0, metavar="S",
                        help="the sampling stream's seed (default 0)")
    parser.add_argument("--stop", action="append", default=[], metavar="TEXT",
                        help="end the text before this string (may be repeated)")
    parser.add_argument("--max-context", type=int, default=None, metavar="N",
                        help="positions the model holds (default: its sliding window)")
    return parser.parse_args(argv)


def run(args, out):
    """Loads the model and writes the continuation to out, a piece as each token is chosen."""
    check_settings(args.temperature, args.top_k, args.top_p, args.seed)  # before the slow load
    model = Gemma3(args.model, device=args.device, max_context=args.max_context)
    for piece in model.stream(args.prompt, args.max_tokens, temperature=args.temperature,
                              top_k=args.top_k, top_p=args.top_p, seed=args.seed,
                              stop_strings=args.stop):
        out.write(piece)
        out.flush()
    out.write("\n")


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        run(args, sys.stdout)
    except _kiln.Error as e:
        print(f"kiln.generate: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
