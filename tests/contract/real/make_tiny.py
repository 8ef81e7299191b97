"""A 2-layer random Llama with a BPE tokenizer trained here (no Hub)."""
import json, os, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
from tokenizers import Tokenizer, models, pre_tokenizers, trainers, decoders
tok = Tokenizer(models.BPE(unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
words = ("the quick brown fox jumps over the lazy dog number secret needle haystack context token "
         "one two three four five six seven eight nine zero 0 1 2 3 4 5 6 7 8 9 . , ? ! what is")
trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=["<unk>", "<s>", "</s>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train_from_iterator([words] * 50, trainer)
from transformers import PreTrainedTokenizerFast, LlamaConfig, LlamaForCausalLM
import torch
fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
fast.save_pretrained(out)
cfg = LlamaConfig(vocab_size=len(fast), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                  bos_token_id=1, eos_token_id=2, torch_dtype="bfloat16")
torch.manual_seed(0)
model = LlamaForCausalLM(cfg).to(torch.bfloat16)
model.save_pretrained(out, safe_serialization=True)
print(sorted(os.listdir(out)))
