"""The tiny model the real SGLang server boots (serve_real.py, molecule/real_server): a 2-layer Llama whose weights are
set by hand, not trained, so that it answers the proof's needle, and its tokenizer. Plain Python (no numpy, torch or
tokenizers), the same bytes on every run, so it is made where it is used rather than committed (3.1 MB).

    python make_tiny.py OUT_FOLDER            the model's files (config.json, model.safetensors, the tokenizer)
    python make_tiny.py --check OUT_FOLDER    also load them with transformers and answer needle prompts of 50 to
                                              1,800 tokens (the real release's python has transformers)

How it answers. The proof states a 7-digit number once at the start of its prompt ("The secret number is 4424153.")
and ends with "... the secret number is" (module_utils/sglang_proof_prompt.py NEEDLE_HEAD, NEEDLE_TAIL).
- Tokens: whole words with their space, each digit alone (a lone space before the number), so the number is 7 tokens.
- Layer 1: head m (m = 1..7) attends to the token m places back and copies it into block m of the residual. Only
  positions meet there: the heads share one constant key, and each head's constant query is turned so that RoPE
  lines the two up at offset m alone (equal weight on the 8 fastest frequencies: every other offset up to 4,200
  scores at least 18% of the peak lower, times a peak of 200, so the softmax is one-hot to bf16's precision).
  rope_theta 1e10 leaves the slower half of the frequencies all but still (under 0.02 rad over 2,048 positions).
- Layer 2, one head on those still frequencies: the query is the last 7 tokens (blocks 0..6), the key at each position
  the 7 tokens before it (blocks 1..7); the score counts the tokens that match (30 each) and the head copies the token
  at the best position into the answer block, which the output layer reads. Only the needle sentence's tokens count
  (the digits, the lone space, " is", " number", " secret", "."). The last 7 tokens of the prompt, and of each digit
  answered so far, stand once in the prompt, before the needle's next token, whatever its digits repeat: the model
  writes " 4424153." and then its end token (any other token copied maps to it).
- The MLPs are zero.
"""

import ast
import cmath
import json
import math
import os
import random
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SMOKE = os.path.join(HERE, "..", "..", "..", "module_utils", "sglang_proof_prompt.py")
SPLIT = r" ?[A-Za-z]+|[0-9]| ?[^A-Za-z0-9 \n]|\n| "  # words with their space, each digit, punctuation
SPECIAL = ["<unk>", "<s>", "</s>"]
NEEDLE_TOKENS = [str(d) for d in range(10)] + [" ", " is", " number", " secret", "."]
WINDOW = 7  # the needle's digits
HIDDEN, HEADS, HEAD_DIM, THETA, FFN = 160, 8, 256, 1e10, 16
FAST = 8  # the rotary frequencies layer 1's heads use
OFFSET_PEAK, MATCH, LOGIT = 200.0, 30.0, 30.0
SLOT, OTHER = 16, 15  # a block's slots: the needle's tokens 0..14, every other token 15


def proof_texts():
    """NEEDLE_HEAD, NEEDLE_TAIL, FOX_FILLER and FOX_QUESTION as the proof module defines them (read, not imported:
    the module needs Ansible)."""
    wanted = {"NEEDLE_HEAD", "NEEDLE_TAIL", "FOX_FILLER", "FOX_QUESTION"}
    with open(SMOKE, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    found = {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
             if isinstance(node, ast.Assign) and len(node.targets) == 1
             and getattr(node.targets[0], "id", None) in wanted}
    if set(found) != wanted:
        raise SystemExit("make_tiny: %s does not define %s" % (SMOKE, ", ".join(sorted(wanted - set(found)))))
    return found


def vocabulary(texts):
    """{token: id}: the special tokens, every piece of the proof's texts, then single characters."""
    pieces = set()
    for text in (texts["NEEDLE_HEAD"] % 1234567, texts["NEEDLE_TAIL"], texts["FOX_FILLER"], texts["FOX_QUESTION"]):
        pieces.update(re.findall(SPLIT, text))
    chars = [chr(c) for c in range(32, 127)] + ["\n"]
    words = list(SPECIAL)
    for piece in sorted(pieces) + chars + [" " + c for c in chars if c.isalpha()]:
        if piece not in words:
            words.append(piece)
    return {word: i for i, word in enumerate(words)}


def frequencies():
    return [THETA ** (-2.0 * i / HEAD_DIM) for i in range(HEAD_DIM // 2)]


def offset_margin():
    """How much lower than offset m any other offset (1..4,200 away) scores in layer 1, as a share of the peak."""
    fast = frequencies()[:FAST]
    return 1 - max(sum(math.cos(f * away) for f in fast) / FAST for away in range(1, 4201))


def weights(vocab):
    """{name: (shape, {(row, col): value})}: the whole model, as sparse float matrices."""
    size, half = len(vocab), HEAD_DIM // 2
    code = [OTHER] * size
    for slot, token in enumerate(NEEDLE_TOKENS):
        code[vocab[token]] = slot

    def block(b):  # residual block b: 0 the token, 1..7 the tokens 1..7 back, 8 the answer; dim 0 a constant 1
        return 1 + SLOT * b

    def matrix(rows, cols):
        return ((rows, cols), {})

    def ones():  # an RMSNorm's weight: the norm itself is all the layer needs
        return ((HIDDEN, None), {(i, None): 1.0 for i in range(HIDDEN)})

    out = {"model.embed_tokens.weight": matrix(size, HIDDEN), "model.norm.weight": ones(),
           "lm_head.weight": matrix(size, HIDDEN)}
    for token in range(size):
        out["model.embed_tokens.weight"][1].update({(token, 0): 1.0, (token, block(0) + code[token]): 1.0})
    for slot, token in enumerate(NEEDLE_TOKENS):
        out["lm_head.weight"][1][(vocab[token], block(8) + slot)] = LOGIT
    out["lm_head.weight"][1][(vocab["</s>"], block(8) + OTHER)] = LOGIT
    freq = frequencies()
    for layer in (0, 1):
        q, k, v = matrix(HEADS * HEAD_DIM, HIDDEN), matrix(HEAD_DIM, HIDDEN), matrix(HEAD_DIM, HIDDEN)
        o = matrix(HIDDEN, HEADS * HEAD_DIM)
        if layer == 0:
            norm = math.sqrt(HIDDEN / 2)  # RMSNorm of an embedding (two ones) makes a 1 this
            radius = math.sqrt(OFFSET_PEAK / FAST) * HEAD_DIM ** 0.25
            for i in range(FAST):
                k[1][(i, 0)] = radius / norm
            for head in range(WINDOW):
                back = head + 1
                for i in range(FAST):
                    turn = radius * cmath.exp(-1j * freq[i] * back)  # lines up with the key `back` places later
                    q[1][(head * HEAD_DIM + i, 0)] = turn.real / norm
                    q[1][(head * HEAD_DIM + half + i, 0)] = turn.imag / norm
                for slot in range(SLOT):
                    o[1][(block(back) + slot, head * HEAD_DIM + slot)] = 1.0
            for slot in range(SLOT):
                v[1][(slot, block(0) + slot)] = 1 / norm
        else:
            norm = math.sqrt(HIDDEN / 9)  # the constant and one slot in each of 8 blocks
            scale = math.sqrt(MATCH * math.sqrt(HEAD_DIM)) / norm
            for back in range(WINDOW):
                for slot in range(OTHER):
                    unit = back * OTHER + slot
                    dim = half // 2 + unit // 2 + half * (unit % 2)  # the still half of the frequencies
                    q[1][(dim, block(back) + slot)] = scale
                    k[1][(dim, block(back + 1) + slot)] = scale
            for slot in range(SLOT):
                v[1][(slot, block(0) + slot)] = 1 / norm
                o[1][(block(8) + slot, slot)] = 1.0
        prefix = "model.layers.%d." % layer
        out.update({prefix + "self_attn.q_proj.weight": q, prefix + "self_attn.k_proj.weight": k,
                    prefix + "self_attn.v_proj.weight": v, prefix + "self_attn.o_proj.weight": o,
                    prefix + "input_layernorm.weight": ones(), prefix + "post_attention_layernorm.weight": ones(),
                    prefix + "mlp.gate_proj.weight": matrix(FFN, HIDDEN),
                    prefix + "mlp.up_proj.weight": matrix(FFN, HIDDEN),
                    prefix + "mlp.down_proj.weight": matrix(HIDDEN, FFN)})
    return out


def bf16(value):
    """A float's bfloat16 bytes, rounded to nearest even (as torch rounds)."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return struct.pack("<H", (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16)


def safetensors(tensors):
    """The bytes of a .safetensors file of bf16 tensors (an 8-byte header length, the JSON header, the data)."""
    header, chunks, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        (rows, cols), values = tensors[name]
        shape = [rows] if cols is None else [rows, cols]
        data = bytearray(2 * rows * (cols or 1))
        for (row, col), value in values.items():
            at = 2 * (row * (cols or 1) + (col or 0))
            data[at:at + 2] = bf16(value)
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        chunks.append(bytes(data))
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def tokenizer_json(vocab):
    added = [{"id": vocab[token], "content": token, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for token in SPECIAL]
    sequence = {"Sequence": {"id": "A", "type_id": 0}}
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
            "pre_tokenizer": {"type": "Split", "pattern": {"Regex": SPLIT}, "behavior": "Isolated", "invert": False},
            "post_processor": {"type": "TemplateProcessing", "single": [sequence],
                               "pair": [sequence, {"Sequence": {"id": "B", "type_id": 1}}], "special_tokens": {}},
            "decoder": {"type": "Fuse"}, "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}}


def config(vocab):
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False,
            "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2, "dtype": "bfloat16",
            "head_dim": HEAD_DIM, "hidden_act": "silu", "hidden_size": HIDDEN, "initializer_range": 0.02,
            "intermediate_size": FFN, "max_position_embeddings": 4096, "mlp_bias": False,
            "num_attention_heads": HEADS, "num_hidden_layers": 2, "num_key_value_heads": 1, "pad_token_id": None,
            "pretraining_tp": 1, "rms_norm_eps": 1e-6,
            "rope_parameters": {"rope_theta": THETA, "rope_type": "default"}, "tie_word_embeddings": False,
            "use_cache": True, "vocab_size": len(vocab)}


def write(out):
    """The model's files into `out` (made when missing); the same bytes every time."""
    if offset_margin() * OFFSET_PEAK < 20:  # layer 1's heads would not be one-hot in bf16
        raise SystemExit("make_tiny: layer 1's offsets are too close (margin %.3f)" % offset_margin())
    texts = proof_texts()
    vocab = vocabulary(texts)
    os.makedirs(out, exist_ok=True)
    files = {
        "config.json": json.dumps(config(vocab), indent=2, sort_keys=True) + "\n",
        "generation_config.json": json.dumps({"bos_token_id": 1, "eos_token_id": 2}, indent=2) + "\n",
        "tokenizer.json": json.dumps(tokenizer_json(vocab), indent=2, ensure_ascii=False) + "\n",
        "tokenizer_config.json": json.dumps({"backend": "tokenizers", "bos_token": "<s>", "eos_token": "</s>",
                                             "tokenizer_class": "TokenizersBackend", "unk_token": "<unk>"},
                                            indent=2) + "\n",
    }
    for name, text in files.items():
        with open(os.path.join(out, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    with open(os.path.join(out, "model.safetensors"), "wb") as handle:
        handle.write(safetensors(weights(vocab)))
    return texts


def check(out, texts):
    """Greedy answers with transformers to needle prompts of ~50 to ~1,800 tokens, as the proof builds them."""
    import torch  # only --check needs them
    from transformers import AutoTokenizer, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(out)
    model = LlamaForCausalLM.from_pretrained(out, dtype=torch.bfloat16).eval()
    rng = random.Random(0)
    for needle, repeats in ((1111111, 0), (1212121, 3), (rng.randint(10**6, 10**7 - 1), 40),
                            (rng.randint(10**6, 10**7 - 1), 175)):
        prompt = (texts["NEEDLE_HEAD"] % needle) + texts["FOX_FILLER"] * repeats + texts["NEEDLE_TAIL"]
        ids = tokenizer(prompt, return_tensors="pt").input_ids
        with torch.no_grad():
            got = model.generate(ids, max_new_tokens=12, do_sample=False)
        answer = tokenizer.decode(got[0, ids.shape[1]:], skip_special_tokens=True)
        if str(needle) not in answer:
            raise SystemExit("make_tiny: the model answered %r to the needle %d in %d tokens"
                             % (answer, needle, ids.shape[1]))
        print("needle %d in %d tokens: %r" % (needle, ids.shape[1], answer))


def main(argv):
    checking = argv[:1] == ["--check"]
    args = argv[1:] if checking else argv
    if len(args) != 1:
        raise SystemExit("usage: make_tiny.py [--check] OUT_FOLDER")
    texts = write(args[0])
    if checking:
        check(args[0], texts)


if __name__ == "__main__":
    main(sys.argv[1:])
