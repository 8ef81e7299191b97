"""A 2-layer random Llama (bf16, 64 wide) with a byte-level BPE tokenizer trained here, so nothing comes from a Hub:
the model serve_real.py boots the real SGLang with. Run with the real release's python (transformers, tokenizers
and torch are SGLang's own dependencies).

    python make_tiny.py OUT_FOLDER
"""

import os
import sys

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

# The proof's own words (library/sglang_smoke_test.py NEEDLE_HEAD, NEEDLE_TAIL, FOX_FILLER) become whole tokens, as
# a real tokenizer's are: the check's short prompt must fit its 64 tokens (CHECK_PROMPT_MAX)
WORDS = ("the quick brown fox jumps over the lazy dog number secret needle haystack context token "
         "one two three four five six seven eight nine zero 0 1 2 3 4 5 6 7 8 9 . , ? ! what is "
         "The secret number is . Remember it: you will be asked for it at the end.\n"
         "\nQuestion: what is the secret number stated at the very beginning of this text? "
         "Answer: the secret number is The quick brown fox jumps over the lazy dog. ")


def main(out):
    os.makedirs(out, exist_ok=True)
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=["<unk>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator([WORDS] * 50, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    fast.save_pretrained(out)
    config = LlamaConfig(vocab_size=len(fast), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                         bos_token_id=1, eos_token_id=2, torch_dtype="bfloat16")
    torch.manual_seed(0)
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(out, safe_serialization=True)


if __name__ == "__main__":
    main(sys.argv[1])
