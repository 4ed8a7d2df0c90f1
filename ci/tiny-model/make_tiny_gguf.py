#!/usr/bin/env python3
"""Writes assets/tiny-llama.gguf: a tiny llama-architecture model with random
weights, for llmgw's compute check (run a few tokens on each GPU with -ngl 99).

The same bytes on every run: the weights come from a fixed seed, metadata and
tensors are written in a fixed order, and nothing depends on time or host.

    python3 -m venv .venv && .venv/bin/pip install gguf==0.19.0 numpy==2.4.6
    .venv/bin/python ci/tiny-model/make_tiny_gguf.py [OUTPUT]   # default assets/tiny-llama.gguf

Shape (see README.md beside this file for why):
  * vocabulary: 302 tokens, SentencePiece-style (`tokenizer.ggml.model` =
    "llama"): <unk> <s> </s>, the 256 byte tokens <0x00>..<0xFF> (byte
    fallback: any prompt tokenizes), then 43 word pieces ("▁", a-z,
    16 whole words);
  * n_embd 64, 2 layers, 2 query heads sharing 1 KV head (GQA), head size 64
    (a size every flash-attention kernel has), n_ff 128, context 128;
  * 2-D weights f16, norm weights f32 (llama.cpp keeps 1-D tensors f32).

The output head's rows for the control and byte tokens are zero, so greedy
decoding (--temp 0) picks word pieces: the text printed is readable and never
ends early on </s>. Its other rows are large (std 1) so that the best logit
stands well clear of the next one and a GPU's rounding does not change the
greedy choice, though a check should test that tokens were generated, not
which ones.
"""

import sys
from pathlib import Path

import numpy as np
import gguf

SEED = 20260101
N_EMBD = 64
N_LAYER = 2
N_HEAD = 2
N_HEAD_KV = 1
HEAD_DIM = 64
N_FF = 128
N_CTX = 128
RMS_EPS = 1e-5

WORDS = [
    "the", "a", "quick", "brown", "fox", "jumps", "over", "lazy", "dog",
    "hello", "world", "gpu", "check", "ok", "tiny", "model",
]
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]


def vocab():
    tokens, scores, types = [], [], []

    def add(text, score, kind):
        tokens.append(text)
        scores.append(score)
        types.append(kind)

    add("<unk>", 0.0, gguf.TokenType.UNKNOWN)  # 0
    add("<s>", 0.0, gguf.TokenType.CONTROL)  # 1: bos
    add("</s>", 0.0, gguf.TokenType.CONTROL)  # 2: eos
    for b in range(256):  # 3..258: byte fallback, as llama.cpp's SPM looks them up
        add(f"<0x{b:02X}>", 0.0, gguf.TokenType.BYTE)
    # Word pieces: "▁" marks a word start (SentencePiece's U+2581). A longer
    # piece scores higher, so the tokenizer merges into it.
    add("\u2581", -10.0, gguf.TokenType.NORMAL)
    for c in LETTERS:
        add(c, -5.0, gguf.TokenType.NORMAL)
    for i, w in enumerate(WORDS):
        add("\u2581" + w, -1.0 - i / 100.0, gguf.TokenType.NORMAL)
    return tokens, scores, types


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "assets/tiny-llama.gguf")
    out.parent.mkdir(parents=True, exist_ok=True)
    # RandomState: numpy's legacy generator, whose stream NEP 19 freezes for
    # good (default_rng's methods may change between numpy versions).
    rng = np.random.RandomState(SEED)
    tokens, scores, types = vocab()
    n_vocab = len(tokens)
    first_word = 3 + 256

    def f16(*shape, scale=None):
        # numpy shape (rows, cols) is ggml's {cols, rows}: (n_out, n_in).
        fan_in = shape[-1]
        s = scale if scale is not None else 1.0 / np.sqrt(fan_in)
        return (rng.standard_normal(shape) * s).astype(np.float32).astype(np.float16)

    w = gguf.GGUFWriter(str(out), "llama")
    w.add_name("llmgw tiny llama (random weights)")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_vocab_size(n_vocab)
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(RMS_EPS)

    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(True)

    w.add_tensor("token_embd.weight", f16(n_vocab, N_EMBD, scale=1.0))
    for i in range(N_LAYER):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(p + "attn_q.weight", f16(N_HEAD * HEAD_DIM, N_EMBD))
        w.add_tensor(p + "attn_k.weight", f16(N_HEAD_KV * HEAD_DIM, N_EMBD))
        w.add_tensor(p + "attn_v.weight", f16(N_HEAD_KV * HEAD_DIM, N_EMBD))
        w.add_tensor(p + "attn_output.weight", f16(N_EMBD, N_HEAD * HEAD_DIM))
        w.add_tensor(p + "ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", f16(N_FF, N_EMBD))
        w.add_tensor(p + "ffn_up.weight", f16(N_FF, N_EMBD))
        w.add_tensor(p + "ffn_down.weight", f16(N_EMBD, N_FF))
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    head = f16(n_vocab, N_EMBD, scale=1.0)
    head[:first_word] = 0  # control and byte tokens: logit 0, below the best word piece
    w.add_tensor("output.weight", head)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {out}: {out.stat().st_size} bytes, vocab {n_vocab}, n_embd {N_EMBD}, "
          f"{N_LAYER} layers, ctx {N_CTX}, f16")


if __name__ == "__main__":
    main()
