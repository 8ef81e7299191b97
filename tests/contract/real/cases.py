"""The case matrix for the real-resolver contract, planned by the project's own planner and rendered by the role's
real templates (run by the project's .venv python; no number here is a result: each comes from the planner).

Each case is a host's knobs (what group_vars would say) on one GPU kind. For each release the planner plans it the
way the check phase does (lib/sglang_checks/planhost.plan_host: knobs -> spec -> plan, the loader's flags added),
the role's unit and --config file are rendered with those values (tests/unit/hostile_render.py, the real
templates), and the ExecStart arguments after the launcher become the argv the real SGLang is given (the model and
--config paths pointed at local folders). A case the planner refuses is planned once more with the check that
refused it switched off (the launch refusals, the native-window check), so that SGLang is asked the same question.
"""

import copy
import importlib
import json
import os
import re
import shlex
import sys
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path[:0] = [os.path.join(REPO, "lib"), os.path.join(REPO, "tests", "unit")]

import hostile_render  # noqa: E402
import sglang_kvplan  # noqa: E402
from sglang_checks import planhost, planspec  # noqa: E402
from sglang_kvplan import architectures, memory, pages  # noqa: E402
from sglang_kvplan.normalize import normalize_spec  # noqa: E402

# The package's `plan` name is the function; the modules are reached by their full names.
plan_module = importlib.import_module("sglang_kvplan.plan")
model_module = importlib.import_module("sglang_kvplan.model")

# (compute capability, MiB) as nvidia-smi reports them; the driver fakes the same GPUs (driver.GPUS).
GPU_KNOBS = {"sm120": ("12.0", 97887), "h100": ("9.0", 81559), "h200": ("9.0", 143771), "b200": ("10.0", 183359)}

# Local folders stand for the checkpoints: only config.json (what argument resolution reads).
MODEL_ROOT = "@MODELS@"
API_KEY = "sk-contract-test-key"


def _fixture(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as handle:
        return json.load(handle)


def _preset(name, **extra):
    """A preset's config.json fields (model_presets.yml, copied from the public checkpoints) plus what
    transformers needs to build the config class (model_type; the rest are the class defaults)."""
    return dict(sglang_kvplan.load_presets()[name]["config"], **extra)


# name -> config.json. The Kimi ones are the molecule fixtures; the others the presets (+ model_type).
MODELS = {
    "kimi-k2.6": _fixture("molecule/fixtures/kimi-k2.6/config.json"),
    "kimi-k2.6-dflash": _fixture("molecule/fixtures/kimi-k2.6-dflash/config.json"),
    "deepseek-v3": _preset("deepseek-v3", model_type="deepseek_v3"),
    "qwen3-32b": _preset("qwen3-32b", model_type="qwen3", vocab_size=151936),
    # deepseek-ai/DeepSeek-V3.2's config.json: DeepSeek-V3's MLA and its sparse-attention indexer (index_*)
    "deepseek-v3.2": dict(_preset("deepseek-v3", model_type="deepseek_v32", vocab_size=129280),
                          architectures=["DeepseekV32ForCausalLM"], index_head_dim=128, index_n_heads=64,
                          index_topk=2048, q_lora_rank=1536, n_routed_experts=256, num_experts_per_tok=8,
                          n_shared_experts=1, moe_intermediate_size=2048, first_k_dense_replace=3,
                          quantization_config={"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                               "weight_block_size": [128, 128]}),
    "llama-3.1-8b": _preset("llama-3.1-8b", model_type="llama", vocab_size=128256),
    # An EAGLE3 head for Llama-3.1-8B (one decoder layer of the target's geometry, as the published heads).
    "llama-3.1-8b-eagle3": dict(_preset("llama-3.1-8b", model_type="llama", vocab_size=128256),
                                architectures=["LlamaForCausalLMEagle3"], num_hidden_layers=1,
                                draft_vocab_size=32000),
    # gpt-oss-120b: hybrid sliding-window (lib/sglang_kvplan/sliding.py); the driver also sizes its two pools with
    # the release's own configurator (driver.py real_pools)
    "gpt-oss-120b": _preset("gpt-oss-120b", model_type="gpt_oss", vocab_size=201088, num_local_experts=128,
                            num_experts_per_tok=4, intermediate_size=2880),
    # Qwen3-Next-80B-A3B: hybrid linear attention (lib/sglang_kvplan/linear.py); the driver sizes its state and KV
    # pools and the running requests with the release's own code (pools_real.py)
    "qwen3-next-80b-a3b": _preset("qwen3-next-80b-a3b", model_type="qwen3_next", vocab_size=151936, num_experts=512,
                                  num_experts_per_tok=10, moe_intermediate_size=512,
                                  shared_expert_intermediate_size=512, intermediate_size=5120,
                                  partial_rotary_factor=0.25, rope_theta=10000000),
    # A Qwen3.5 MoE checkpoint (a vision encoder and Qwen3-Next's hybrid text model under text_config; the 40-layer,
    # 256-expert geometry published configs give), planned by linear.py as Qwen3-Next is
    "qwen3.5-moe": {"architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
                    "torch_dtype": "bfloat16", "tie_word_embeddings": False,
                    "text_config": {"model_type": "qwen3_5_moe_text", "hidden_size": 2048, "num_hidden_layers": 40,
                                    "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
                                    "full_attention_interval": 4, "linear_num_key_heads": 16,
                                    "linear_num_value_heads": 32, "linear_key_head_dim": 128,
                                    "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
                                    "max_position_embeddings": 262144, "vocab_size": 248320, "num_experts": 256,
                                    "num_experts_per_tok": 8, "moe_intermediate_size": 512,
                                    "shared_expert_intermediate_size": 512, "partial_rotary_factor": 0.25,
                                    "rope_theta": 10000000, "torch_dtype": "bfloat16",
                                    "layer_types": ["linear_attention"] * 3 + ["full_attention"]
                                    + ["linear_attention"] * 3 + ["full_attention"]
                                    + (["linear_attention"] * 3 + ["full_attention"]) * 8},
                    "vision_config": {"model_type": "qwen3_5_moe", "depth": 27, "hidden_size": 1152,
                                      "out_hidden_size": 2048}},
    # nvidia/Nemotron-H-8B-Base-8K's config.json (the fields SGLang's NemotronHConfig reads): 24 Mamba2 layers and
    # 4 GQA attention layers by hybrid_override_pattern (linear.py)
    "nemotron-h-8b": {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h",
                      "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
                      "hidden_size": 4096, "num_hidden_layers": 52, "num_attention_heads": 32,
                      "num_key_value_heads": 8, "head_dim": 128, "ssm_state_size": 128, "mamba_num_heads": 128,
                      "mamba_head_dim": 64, "n_groups": 8, "conv_kernel": 4, "expand": 2, "intermediate_size": 21504,
                      "vocab_size": 131072, "max_position_embeddings": 8192, "torch_dtype": "bfloat16",
                      "mlp_hidden_act": "relu2"},
    # moonshotai/Kimi-Linear-48B-A3B-Instruct's config.json (SGLang's own KimiLinearConfig reads it; auto_map left
    # out): 20 KDA layers and 7 MLA layers by linear_attn_config (linear.py)
    "kimi-linear-48b": {"architectures": ["KimiLinearForCausalLM"], "model_type": "kimi_linear",
                        "torch_dtype": "bfloat16", "vocab_size": 163840, "hidden_size": 2304,
                        "intermediate_size": 9216, "num_hidden_layers": 27, "num_attention_heads": 32,
                        "num_key_value_heads": 32, "head_dim": 72, "hidden_act": "silu", "rms_norm_eps": 1e-05,
                        "rope_theta": 10000.0, "tie_word_embeddings": False, "model_max_length": 1048576,
                        "first_k_dense_replace": 1, "moe_intermediate_size": 1024, "moe_layer_freq": 1,
                        "moe_renormalize": True, "moe_router_activation_func": "sigmoid", "num_experts": 256,
                        "num_experts_per_token": 8, "num_shared_experts": 1, "routed_scaling_factor": 2.446,
                        "use_grouped_topk": True, "num_expert_group": 1, "topk_group": 1, "q_lora_rank": None,
                        "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
                        "mla_use_nope": True, "num_nextn_predict_layers": 0,
                        "bos_token_id": 163584, "eos_token_id": 163586, "pad_token_id": 163839,
                        "linear_attn_config": {"full_attn_layers": [4, 8, 12, 16, 20, 24, 27], "head_dim": 128,
                                               "kda_layers": [1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19,
                                                              21, 22, 23, 25, 26],
                                               "num_heads": 32, "short_conv_kernel_size": 4}},
    # google/gemma-3-27b-it's config.json (the fields the pool reads; text geometry under text_config, 5 of 6 layers
    # sliding-window): every release turns the split off for it (architectures.py GEMMA3_PLAIN_POOL)
    "gemma-3-27b": {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
                    "torch_dtype": "bfloat16", "boi_token_index": 255999, "eoi_token_index": 256000,
                    "image_token_index": 262144, "mm_tokens_per_image": 256,
                    "text_config": {"model_type": "gemma3_text", "head_dim": 128, "hidden_size": 5376,
                                    "intermediate_size": 21504, "num_attention_heads": 32, "num_hidden_layers": 62,
                                    "num_key_value_heads": 16, "query_pre_attn_scalar": 168, "sliding_window": 1024,
                                    "max_position_embeddings": 131072, "vocab_size": 262208,
                                    "rope_scaling": {"factor": 8.0, "rope_type": "linear"}},
                    "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "image_size": 896,
                                      "intermediate_size": 4304, "num_attention_heads": 16, "num_hidden_layers": 27,
                                      "patch_size": 14, "vision_use_head": False}},
    # A small Llama as a STANDALONE draft (Llama-3.2-1B's geometry).
    "llama-3.2-1b": dict(_preset("llama-3.1-8b", model_type="llama", vocab_size=128256), num_hidden_layers=16,
                         hidden_size=2048, num_attention_heads=32, head_dim=64),
}


def _vision(model_type, **more):
    return dict({"model_type": model_type}, **more)


# Architectures planned by their release's class (releases/architectures.json, issue 46): the fields of each
# published config.json that the pool and the config class read (model_type as transformers knows it).
CLASS_MODELS = {
    # google/gemma-2-27b: windows on every other layer, one pool (the release's override)
    "gemma-2-27b": {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "torch_dtype": "bfloat16",
                    "hidden_size": 4608, "intermediate_size": 36864, "num_hidden_layers": 46,
                    "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128,
                    "query_pre_attn_scalar": 144, "sliding_window": 4096, "max_position_embeddings": 8192,
                    "vocab_size": 256000},
    # microsoft/phi-4 (Phi3ForCausalLM): 10 KV heads
    "phi-4": {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "torch_dtype": "bfloat16",
              "hidden_size": 5120, "intermediate_size": 17920, "num_hidden_layers": 40, "num_attention_heads": 40,
              "num_key_value_heads": 10, "max_position_embeddings": 16384, "vocab_size": 100352,
              "rope_theta": 250000},
    # Skywork/Skywork-Reward-Llama-3.1-8B-v0.2: a decoder reward model, the generator's pool
    "llama-3.1-8b-rm": {"architectures": ["LlamaForSequenceClassification"], "model_type": "llama",
                        "torch_dtype": "bfloat16", "hidden_size": 4096, "intermediate_size": 14336,
                        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                        "max_position_embeddings": 131072, "vocab_size": 128256, "num_labels": 1,
                        "rope_theta": 500000.0,
                        "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                         "original_max_position_embeddings": 8192, "rope_type": "llama3"}},
    # xai-org/grok-2 (Grok1ForCausalLM; its config.json names model_type "git")
    "grok-2": {"architectures": ["Grok1ForCausalLM"], "model_type": "git", "torch_dtype": "bfloat16",
               "hidden_size": 8192, "intermediate_size": 32768, "moe_intermediate_size": 16384,
               "num_hidden_layers": 64, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128,
               "num_local_experts": 8, "num_experts_per_tok": 2, "residual_moe": True,
               "max_position_embeddings": 131072, "vocab_size": 131072, "rope_theta": 208533496},
    # MiniMaxAI/MiniMax-M2 (MiniMaxM2ForCausalLM)
    "minimax-m2": {"architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2", "torch_dtype": "bfloat16",
                   "hidden_size": 3072, "intermediate_size": 1536, "num_hidden_layers": 62,
                   "num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128, "rotary_dim": 64,
                   "num_local_experts": 256, "num_experts_per_tok": 8, "use_qk_norm": True,
                   "qk_norm_type": "per_layer", "max_position_embeddings": 196608, "vocab_size": 200064,
                   "rope_theta": 5000000},
    # zai-org/GLM-4.6 (Glm4MoeForCausalLM)
    "glm-4.6": {"architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "torch_dtype": "bfloat16",
                "hidden_size": 5120, "intermediate_size": 12288, "moe_intermediate_size": 1536,
                "num_hidden_layers": 92, "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128,
                "n_routed_experts": 160, "n_shared_experts": 1, "num_experts_per_tok": 8,
                "first_k_dense_replace": 3, "partial_rotary_factor": 0.5, "max_position_embeddings": 202752,
                "vocab_size": 151552, "num_nextn_predict_layers": 1, "use_qk_norm": True},
    # zai-org/GLM-4.5V (Glm4vMoeForConditionalGeneration): GLM-4.5-Air's text model under text_config
    "glm-4.5v": {"architectures": ["Glm4vMoeForConditionalGeneration"], "model_type": "glm4v_moe",
                 "torch_dtype": "bfloat16",
                 "text_config": {"model_type": "glm4v_moe_text", "hidden_size": 4096, "intermediate_size": 10944,
                                 "moe_intermediate_size": 1408, "num_hidden_layers": 46, "num_attention_heads": 96,
                                 "num_key_value_heads": 8, "head_dim": 128, "n_routed_experts": 128,
                                 "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 1,
                                 "partial_rotary_factor": 0.5, "max_position_embeddings": 65536,
                                 "vocab_size": 151552, "torch_dtype": "bfloat16",
                                 "rope_scaling": {"rope_type": "default", "mrope_section": [8, 12, 12]}},
                 "vision_config": _vision("glm4v_moe", depth=24, hidden_size=1536, out_hidden_size=4096)},
    # mistralai/Mistral-Small-3.2-24B-Instruct-2506 (Mistral3ForConditionalGeneration)
    "mistral-small-3.2": {"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
                          "torch_dtype": "bfloat16",
                          "text_config": {"model_type": "mistral", "hidden_size": 5120, "intermediate_size": 32768,
                                          "num_hidden_layers": 40, "num_attention_heads": 32,
                                          "num_key_value_heads": 8, "head_dim": 128,
                                          "max_position_embeddings": 131072, "vocab_size": 131072,
                                          "rope_theta": 1000000000.0, "torch_dtype": "bfloat16"},
                          "vision_config": _vision("pixtral", hidden_size=1024, num_hidden_layers=24,
                                                   num_attention_heads=16, image_size=1540, patch_size=14)},
    # Qwen/Qwen3-VL-235B-A22B-Instruct (Qwen3VLMoeForConditionalGeneration)
    "qwen3-vl-235b": {"architectures": ["Qwen3VLMoeForConditionalGeneration"], "model_type": "qwen3_vl_moe",
                      "torch_dtype": "bfloat16",
                      "text_config": {"model_type": "qwen3_vl_moe_text", "hidden_size": 4096,
                                      "intermediate_size": 12288, "moe_intermediate_size": 1536,
                                      "num_hidden_layers": 94, "num_attention_heads": 64, "num_key_value_heads": 4,
                                      "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8,
                                      "max_position_embeddings": 262144, "vocab_size": 151936,
                                      "rope_theta": 5000000, "torch_dtype": "bfloat16",
                                      "rope_scaling": {"rope_type": "default", "mrope_section": [24, 20, 20],
                                                       "mrope_interleaved": True}},
                      "vision_config": _vision("qwen3_vl_moe", depth=27, hidden_size=1152, out_hidden_size=4096,
                                               deepstack_visual_indexes=[8, 16, 24])},
    # baidu/ERNIE-4.5-300B-A47B-PT (Ernie4_5_MoeForCausalLM)
    "ernie-4.5-300b": {"architectures": ["Ernie4_5_MoeForCausalLM"], "model_type": "ernie4_5_moe",
                       "torch_dtype": "bfloat16", "hidden_size": 8192, "intermediate_size": 28672,
                       "moe_intermediate_size": 3584, "num_hidden_layers": 54, "num_attention_heads": 64,
                       "num_key_value_heads": 8, "head_dim": 128, "moe_num_experts": 64, "moe_k": 8,
                       "moe_layer_start_index": 3, "max_position_embeddings": 131072, "vocab_size": 103424,
                       "rope_theta": 500000},
    # ByteDance-Seed/Seed-OSS-36B-Instruct: not registered by 0.5.23 (its Transformers fallback)
    "seed-oss-36b": {"architectures": ["SeedOssForCausalLM"], "model_type": "seed_oss", "torch_dtype": "bfloat16",
                     "hidden_size": 5120, "intermediate_size": 27648, "num_hidden_layers": 64,
                     "num_attention_heads": 80, "num_key_value_heads": 8, "head_dim": 128,
                     "max_position_embeddings": 524288, "vocab_size": 155136, "rope_theta": 10000000.0},
    # THUDM/GLM-4-32B-0414 (Glm4ForCausalLM): 2 KV heads
    "glm-4-32b": {"architectures": ["Glm4ForCausalLM"], "model_type": "glm4", "torch_dtype": "bfloat16",
                  "hidden_size": 6144, "intermediate_size": 23040, "num_hidden_layers": 61,
                  "num_attention_heads": 48, "num_key_value_heads": 2, "head_dim": 128,
                  "partial_rotary_factor": 0.5, "max_position_embeddings": 32768, "vocab_size": 151552},
    # allenai/OLMo-2-1124-13B (Olmo2ForCausalLM): MHA
    "olmo-2-13b": {"architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "torch_dtype": "bfloat16",
                   "hidden_size": 5120, "intermediate_size": 13824, "num_hidden_layers": 40,
                   "num_attention_heads": 40, "num_key_value_heads": 40, "max_position_embeddings": 4096,
                   "vocab_size": 100352},
    # allenai/OLMoE-1B-7B-0924 (OlmoeForCausalLM)
    "olmoe-1b-7b": {"architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "torch_dtype": "bfloat16",
                    "hidden_size": 2048, "intermediate_size": 1024, "num_hidden_layers": 16,
                    "num_attention_heads": 16, "num_key_value_heads": 16, "num_experts": 64,
                    "num_experts_per_tok": 8, "max_position_embeddings": 4096, "vocab_size": 50304},
    # ibm-granite/granite-3.3-8b-instruct (GraniteForCausalLM)
    "granite-3.3-8b": {"architectures": ["GraniteForCausalLM"], "model_type": "granite", "torch_dtype": "bfloat16",
                       "hidden_size": 4096, "intermediate_size": 12800, "num_hidden_layers": 40,
                       "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 131072,
                       "vocab_size": 49159, "rope_theta": 10000000.0, "attention_multiplier": 0.0078125,
                       "embedding_multiplier": 12.0, "logits_scaling": 16.0, "residual_multiplier": 0.22},
    # google/gemma-7b (GemmaForCausalLM): head_dim 256
    "gemma-7b": {"architectures": ["GemmaForCausalLM"], "model_type": "gemma", "torch_dtype": "bfloat16",
                 "hidden_size": 3072, "intermediate_size": 24576, "num_hidden_layers": 28,
                 "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 256,
                 "max_position_embeddings": 8192, "vocab_size": 256000},
    # stabilityai/stablelm-2-12b (StableLmForCausalLM)
    "stablelm-2-12b": {"architectures": ["StableLmForCausalLM"], "model_type": "stablelm", "torch_dtype": "bfloat16",
                       "hidden_size": 5120, "intermediate_size": 13824, "num_hidden_layers": 40,
                       "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 4096,
                       "vocab_size": 100352, "partial_rotary_factor": 0.25},
    # Qwen/Qwen3-Reranker-8B style sequence classification on Qwen3-8B (Qwen3ForSequenceClassification)
    "qwen3-8b-seqcls": {"architectures": ["Qwen3ForSequenceClassification"], "model_type": "qwen3",
                        "torch_dtype": "bfloat16", "hidden_size": 4096, "intermediate_size": 12288,
                        "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
                        "head_dim": 128, "max_position_embeddings": 40960, "vocab_size": 151669, "num_labels": 1},
    # baidu/ERNIE-4.5-0.3B-PT (Ernie4_5_ForCausalLM)
    "ernie-4.5-0.3b": {"architectures": ["Ernie4_5_ForCausalLM"], "model_type": "ernie4_5", "torch_dtype": "bfloat16",
                       "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 18,
                       "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 128,
                       "max_position_embeddings": 131072, "vocab_size": 103424, "rope_theta": 500000},
    # CohereLabs/c4ai-command-r-v01 (CohereForCausalLM): MHA, one pool
    "command-r": {"architectures": ["CohereForCausalLM"], "model_type": "cohere", "torch_dtype": "float16",
                  "hidden_size": 8192, "intermediate_size": 22528, "num_hidden_layers": 40,
                  "num_attention_heads": 64, "num_key_value_heads": 64, "max_position_embeddings": 131072,
                  "vocab_size": 256000, "logit_scale": 0.0625, "use_qk_norm": False},
    # bigcode/starcoder2-15b (Starcoder2ForCausalLM): 4 KV heads, a 4,096 window the release keeps in one pool
    "starcoder2-15b": {"architectures": ["Starcoder2ForCausalLM"], "model_type": "starcoder2",
                       "torch_dtype": "bfloat16", "hidden_size": 6144, "intermediate_size": 24576,
                       "num_hidden_layers": 40, "num_attention_heads": 48, "num_key_value_heads": 4,
                       "max_position_embeddings": 16384, "vocab_size": 49152, "sliding_window": 4096},
}
MODELS.update(CLASS_MODELS)


YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}


def _case(cid, gpu, model, draft=None, only=None, **knobs):
    """A case of the matrix; `only`: the releases it is put to (all of RELEASES when None)."""
    case = {"id": cid, "gpu": gpu, "model": model, "draft": draft, "knobs": knobs}
    return dict(case, only=list(only)) if only else case


def _dflash(**more):
    return dict({"algorithm": "DFLASH", "draft_model": "kimi-k2.6-dflash",
                 "draft_model_path": MODEL_ROOT + "/kimi-k2.6-dflash"}, **more)


def _eagle3(**more):
    return dict({"algorithm": "EAGLE3", "draft_model_path": MODEL_ROOT + "/llama-3.1-8b-eagle3"}, **more)


DP_LM_HEAD = ["--enable-dp-lm-head"]

MATRIX = [
    # Kimi K2.6 + DFLASH (the demo's ct200) on 8 GPUs, and its variations
    _case("ct200-dflash-tp8-sm120", "sm120", "kimi-k2.6", "kimi-k2.6-dflash", tp_size=8, speculative=_dflash()),
    _case("ct200-fp8", "sm120", "kimi-k2.6", "kimi-k2.6-dflash", tp_size=8, speculative=_dflash(),
          kv_cache_dtype="fp8_e4m3"),
    _case("ct200-page64", "sm120", "kimi-k2.6", "kimi-k2.6-dflash", tp_size=8, speculative=_dflash(), page_size=64),
    _case("ct200-mrr64", "sm120", "kimi-k2.6", "kimi-k2.6-dflash", tp_size=8, speculative=_dflash(),
          max_running_requests=64),
    _case("ct200-b200", "b200", "kimi-k2.6", "kimi-k2.6-dflash", tp_size=8, speculative=_dflash()),
    _case("ct200-h200", "h200", "kimi-k2.6", "kimi-k2.6-dflash", tp_size=8, speculative=_dflash()),
    # the pool pinned to the target (sglang_pool_policy target, for GPUs shared with other work): --max-total-tokens
    _case("ct200-dflash-pinned-sm120", "sm120", "kimi-k2.6", "kimi-k2.6-dflash", tp_size=8, speculative=_dflash(),
          pool_policy="target"),
    _case("dflash-pp2-refused", "sm120", "kimi-k2.6", "kimi-k2.6-dflash", tp_size=4, pp_size=2,
          speculative=_dflash()),
    _case("dflash-dpattn8-refused", "sm120", "kimi-k2.6", "kimi-k2.6-dflash", tp_size=8, dp_size=8,
          enable_dp_attention=True, kv_cache_dtype="fp8_e4m3", speculative=_dflash()),
    _case("dflash-dpattn8-dp-lm-head", "sm120", "kimi-k2.6", "kimi-k2.6-dflash", tp_size=8, dp_size=8,
          enable_dp_attention=True, kv_cache_dtype="fp8_e4m3", speculative=_dflash(), extra_args=DP_LM_HEAD),
    _case("kimi-dpattn8-nospec", "sm120", "kimi-k2.6", tp_size=8, dp_size=8, enable_dp_attention=True),
    # DeepSeek-V3 (MLA, NEXTN from its own MTP layer)
    _case("dsv3-nextn-h200", "h200", "deepseek-v3", tp_size=8, context_target=131072,
          speculative={"algorithm": "NEXTN"}),
    _case("dsv3-nextn-314-h200", "h200", "deepseek-v3", tp_size=8, context_target=131072,
          speculative={"algorithm": "NEXTN", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}),
    _case("dsv3-nextn-b200", "b200", "deepseek-v3", tp_size=8, context_target=131072,
          speculative={"algorithm": "NEXTN"}),
    _case("dsv3-nextn-dpattn8-h200", "h200", "deepseek-v3", tp_size=8, dp_size=8, enable_dp_attention=True,
          context_target=131072, speculative={"algorithm": "NEXTN"}),
    _case("dsv3-fp8-dpattn8-b200", "b200", "deepseek-v3", tp_size=8, dp_size=8, enable_dp_attention=True,
          context_target=131072, kv_cache_dtype="fp8_e4m3"),
    _case("dsv3-pp2-tp8-h200", "h200", "deepseek-v3", tp_size=8, pp_size=2, context_target=131072),
    # Qwen3-32B (GQA)
    _case("qwen3-tp4-fp8-b200", "b200", "qwen3-32b", tp_size=4, context_target=40000, kv_cache_dtype="fp8_e4m3"),
    _case("qwen3-tp4-page128-b200", "b200", "qwen3-32b", tp_size=4, context_target=40000, page_size=128),
    _case("qwen3-tp4-pinned-b200", "b200", "qwen3-32b", tp_size=4, context_target=40000, pool_policy="target"),
    _case("qwen3-tp4-fill-h100", "h100", "qwen3-32b", tp_size=4, context_target=40960),
    _case("qwen3-tp2-pp2-h100", "h100", "qwen3-32b", tp_size=2, pp_size=2, context_target=40000),
    _case("qwen3-tp4-replicas2-h100", "h100", "qwen3-32b", tp_size=4, dp_size=2, context_target=40000),
    _case("qwen3-tp2-mrr16-sm120", "sm120", "qwen3-32b", tp_size=2, context_target=32768, max_running_requests=16),
    _case("qwen3-beyond-native-refused", "h100", "qwen3-32b", tp_size=4, context_target=131072),
    # past the window by the YaRN scaling Qwen3's model card documents: the plan's override (sglang_rope_scaling)
    # is accepted at 131,072; the card's override alone leaves the window at 40,960 and is refused
    _case("qwen3-yarn-131072-h100", "h100", "qwen3-32b", tp_size=4, context_target=131072, rope_scaling=YARN),
    _case("qwen3-yarn-card-override-refused", "h100", "qwen3-32b", tp_size=4, context_target=131072,
          extra_args=["--json-model-override-args", json.dumps({"rope_scaling": YARN})]),
    # Llama-3.1-8B: EAGLE3, STANDALONE, NGRAM, none
    _case("llama-eagle3-h100", "h100", "llama-3.1-8b", "llama-3.1-8b-eagle3", context_target=65536,
          speculative=_eagle3()),
    _case("llama-eagle3-b200", "b200", "llama-3.1-8b", "llama-3.1-8b-eagle3", context_target=65536,
          speculative=_eagle3()),
    _case("llama-eagle3-548-dpattn2-h100", "h100", "llama-3.1-8b", "llama-3.1-8b-eagle3", tp_size=2, dp_size=2,
          enable_dp_attention=True, context_target=65536,
          speculative=_eagle3(num_steps=5, eagle_topk=4, num_draft_tokens=8)),
    _case("llama-eagle3-311-sm120", "sm120", "llama-3.1-8b", "llama-3.1-8b-eagle3", context_target=100000,
          speculative=_eagle3(num_steps=3, eagle_topk=1, num_draft_tokens=4), max_running_requests=32),
    _case("llama-standalone-dpattn2-refused", "h100", "llama-3.1-8b", "llama-3.2-1b", tp_size=2, dp_size=2,
          enable_dp_attention=True, context_target=65536,
          speculative={"algorithm": "STANDALONE", "draft_model_path": MODEL_ROOT + "/llama-3.2-1b"}),
    _case("llama-ngram-dpattn2-refused", "h100", "llama-3.1-8b", tp_size=2, dp_size=2, enable_dp_attention=True,
          context_target=65536, speculative={"algorithm": "NGRAM"}),
    _case("llama-ngram-h100", "h100", "llama-3.1-8b", context_target=65536, speculative={"algorithm": "NGRAM"}),
    _case("llama-ngram-b200", "b200", "llama-3.1-8b", context_target=65536, speculative={"algorithm": "NGRAM"}),
    _case("llama-nospec-mrr32-h200", "h200", "llama-3.1-8b", context_target=131072, max_running_requests=32),
    _case("llama-fp8e5m2-sm120", "sm120", "llama-3.1-8b", context_target=131072, kv_cache_dtype="fp8_e5m2"),
    # gpt-oss-120b (sliding-window): the pool filled (H200: fa3, page 1; B200: trtllm_mha, page 64; RTX PRO 6000:
    # triton), pinned, another split by --swa-full-tokens-ratio, and fp8 KV
    _case("gpt-oss-fill-h200", "h200", "gpt-oss-120b", tp_size=1, context_target=131072),
    _case("gpt-oss-tp2-fill-b200", "b200", "gpt-oss-120b", tp_size=2, context_target=131072),
    _case("gpt-oss-pinned-h200", "h200", "gpt-oss-120b", tp_size=1, context_target=131072, pool_policy="target"),
    _case("gpt-oss-ratio05-b200", "b200", "gpt-oss-120b", tp_size=1, context_target=131072,
          extra_args=["--swa-full-tokens-ratio", "0.5"]),
    _case("gpt-oss-tp2-fp8-sm120", "sm120", "gpt-oss-120b", tp_size=2, context_target=131072,
          kv_cache_dtype="fp8_e4m3"),
    # Qwen3-Next-80B-A3B (a state pool beside the KV pool): filled on H200 and B200, planned by fraction, and with
    # another --mamba-full-memory-ratio
    _case("qwen3-next-tp2-fill-h200", "h200", "qwen3-next-80b-a3b", tp_size=2, context_target=262144),
    _case("qwen3-next-tp4-fill-b200", "b200", "qwen3-next-80b-a3b", tp_size=4, context_target=262144),
    _case("qwen3-next-tp4-fraction-h100", "h100", "qwen3-next-80b-a3b", tp_size=4, context_target=131072,
          pool_policy="fraction"),
    _case("qwen3-next-ratio05-h200", "h200", "qwen3-next-80b-a3b", tp_size=2, context_target=262144,
          extra_args=["--mamba-full-memory-ratio", "0.5"]),
    _case("qwen3.5-moe-tp2-fill-h200", "h200", "qwen3.5-moe", tp_size=2, context_target=262144,
          checkpoint_gib=67.0),
    _case("nemotron-h-fill-h200", "h200", "nemotron-h-8b", tp_size=1, context_target=8192, checkpoint_gib=15.2),
    _case("nemotron-h-tp2-fill-b200", "b200", "nemotron-h-8b", tp_size=2, context_target=8192, checkpoint_gib=15.2),
    _case("dsv32-fill-h200", "h200", "deepseek-v3.2", tp_size=8, context_target=131072, checkpoint_gib=641.3),
    # DeepSeek-V3.2 (sparse attention): bf16 row on the H200 and fp8 raw on the B200 as 'auto' resolves, and fp8 on
    # the H200 (flashmla_kv's scaled row; 0.5.23 only: 0.5.15 counts that pool by the raw row, which the planner
    # refuses, sparse.py 'v32_raw_sized', and its real configurator then counts 1,339,456 tokens, not 1,203,456)
    _case("dsv32-fill-b200", "b200", "deepseek-v3.2", tp_size=8, context_target=131072, checkpoint_gib=641.3),
    _case("dsv32-fp8-h200", "h200", "deepseek-v3.2", only=("0.5.23",), tp_size=8, context_target=131072,
          checkpoint_gib=641.3, kv_cache_dtype="fp8_e4m3"),
    # DeepSeek-V3.2 with its NEXTN draft (the model card's recipe): the MTP layer's MLA row and indexer row by the
    # release's per-layer scaling of the cell (0.5.17+; the planner refuses it on 0.5.15)
    _case("dsv32-nextn-h200", "h200", "deepseek-v3.2", only=("0.5.23",), tp_size=8, context_target=131072,
          checkpoint_gib=641.3, speculative={"algorithm": "NEXTN"}),
    _case("dsv32-nextn-b200", "b200", "deepseek-v3.2", only=("0.5.23",), tp_size=8, context_target=131072,
          checkpoint_gib=641.3, speculative={"algorithm": "NEXTN"}),
    # Gemma 3 27B: one plain pool over every layer (the release turns its sliding-window split off)
    _case("gemma3-tp2-fill-h200", "h200", "gemma-3-27b", tp_size=2, context_target=131072, checkpoint_gib=51.4),
    _case("gemma3-tp2-fill-b200", "b200", "gemma-3-27b", tp_size=2, context_target=131072, checkpoint_gib=51.4),
    _case("kimi-linear-fill-h200", "h200", "kimi-linear-48b", tp_size=1, context_target=262144, checkpoint_gib=91.6),
    _case("kimi-linear-tp2-fill-b200", "b200", "kimi-linear-48b", tp_size=2, context_target=262144,
          checkpoint_gib=91.6),
    # Every architecture planned by its release's class on an H200 at TP 8 (issue 46), 0.5.23 and 0.5.15: the pool
    # sized by the release's own configurator from the plan's memory (_pools: the classes beyond the first hand list)
    _case("gemma2-27b-tp8-h200", "h200", "gemma-2-27b", tp_size=8, context_target=8192,
          checkpoint_gib=50.8),
    _case("phi4-tp2-h200", "h200", "phi-4", tp_size=2, context_target=16384, checkpoint_gib=27.3),
    _case("llama-rm-h200", "h200", "llama-3.1-8b-rm", tp_size=1, context_target=131072,
          checkpoint_gib=15.0),
    _case("grok2-tp8-h200", "h200", "grok-2", tp_size=8, context_target=131072,
          checkpoint_gib=500.0),
    _case("minimax-m2-tp8-h200", "h200", "minimax-m2", tp_size=8, context_target=196608,
          checkpoint_gib=214.0),
    _case("glm46-tp8-h200", "h200", "glm-4.6", tp_size=8, context_target=131072,
          checkpoint_gib=665.0),
    _case("glm45v-tp8-h200", "h200", "glm-4.5v", tp_size=8, context_target=65536,
          checkpoint_gib=201.0),
    _case("mistral-small-tp8-h200", "h200", "mistral-small-3.2", tp_size=8,
          context_target=131072, checkpoint_gib=44.7),
    _case("qwen3-vl-235b-tp8-h200", "h200", "qwen3-vl-235b", tp_size=8, context_target=262144,
          checkpoint_gib=438.0),
    _case("ernie45-tp8-h200", "h200", "ernie-4.5-300b", tp_size=8, context_target=131072,
          checkpoint_gib=560.0),
    _case("seed-oss-tp8-h200", "h200", "seed-oss-36b", tp_size=8, context_target=131072,
          checkpoint_gib=67.4),
    _case("glm4-32b-tp8-h200", "h200", "glm-4-32b", tp_size=8, context_target=32768,
          checkpoint_gib=61.0),
    _case("olmo2-13b-tp8-h200", "h200", "olmo-2-13b", tp_size=8, context_target=4096,
          checkpoint_gib=27.0),
    _case("olmoe-tp8-h200", "h200", "olmoe-1b-7b", tp_size=8, context_target=4096,
          checkpoint_gib=12.9),
    _case("granite33-tp8-h200", "h200", "granite-3.3-8b", tp_size=8, context_target=131072,
          checkpoint_gib=15.2),
    _case("gemma-7b-tp8-h200", "h200", "gemma-7b", tp_size=8, context_target=8192,
          checkpoint_gib=15.9),
    _case("stablelm2-12b-tp8-h200", "h200", "stablelm-2-12b", tp_size=8, context_target=4096,
          checkpoint_gib=22.9),
    _case("qwen3-seqcls-tp8-h200", "h200", "qwen3-8b-seqcls", tp_size=8, context_target=40960,
          checkpoint_gib=15.3),
    _case("ernie45-03b-tp8-h200", "h200", "ernie-4.5-0.3b", tp_size=8, context_target=131072,
          checkpoint_gib=0.7),
    _case("command-r-tp8-h200", "h200", "command-r", tp_size=8, context_target=131072,
          checkpoint_gib=65.0),
    _case("starcoder2-15b-tp8-h200", "h200", "starcoder2-15b", tp_size=8, context_target=16384,
          checkpoint_gib=30.0),
]

RELEASES = ("0.5.23", "0.5.15")


def knobs_for(case, version):
    """The host's sglang_* knobs: the role's defaults, the case's values, its GPUs' facts, the release."""
    knobs = {k: hostile_render.DEFAULTS.get(k) for k in planspec.KNOBS}
    capability, mib = GPU_KNOBS[case["gpu"]]
    knobs.update(sglang_version=version, sglang_gpu_compute_capability=capability, sglang_gpu_memory_mib=mib,
                 sglang_model=case["model"], sglang_model_config=copy.deepcopy(MODELS[case["model"]]),
                 sglang_checkpoint_gib=sglang_kvplan.load_presets()[case["model"].replace("-dflash", "")
                                                                  ].get("checkpoint_gib")
                 if case["model"] in sglang_kvplan.load_presets() else None)
    for key, value in case["knobs"].items():
        knobs["sglang_" + key] = copy.deepcopy(value)
    return knobs


def measured_for(case):
    """What model.yml would read on the host: the draft's config.json."""
    return {"draft_model_config": copy.deepcopy(MODELS[case["draft"]])} if case["draft"] else {}


def plan_case(case, version):
    """planhost.plan_host as the check phase calls it: {spec, plan, ...} or {error}."""
    knobs = knobs_for(case, version)
    return planhost.plan_host("ct-contract", {}, knobs, measured_for(case)), knobs


def _unchecked_plan(case, version):
    """The plan with the planner's launch refusals and native-window check switched off: the argv SGLang is asked."""
    with mock.patch.object(model_module, "check_launch", lambda spec: None), \
            mock.patch.object(plan_module, "_beyond_native_window", lambda spec, window: ""):
        return plan_case(case, version)


def execstart_argv(unit_text):
    """The ExecStart arguments after the program, as systemd splits them (the role quotes every one in double
    quotes, escaping \\ and \" and doubling $ and %)."""
    match = re.search(r"^ExecStart=(.*?)(?<!\\)\n(?! )", unit_text, re.S | re.M)
    line = match.group(1).replace("\\\n", " ")
    words = shlex.split(line)
    return [w.replace("$$", "$").replace("%%", "%") for w in words[1:]]


def render_argv(knobs, plan, model):
    """The role's unit and --config file for these knobs and plan: (argv, config text)."""
    overrides = {k: v for k, v in knobs.items() if k in hostile_render.DEFAULTS}
    overrides.update(sglang_model_path=MODEL_ROOT + "/" + model, sglang_api_key=API_KEY,
                     sglang_kv_plan_result=plan)
    files = hostile_render.render_all(**overrides)
    argv = execstart_argv(files["unit"])
    config_at = hostile_render.host_vars(**overrides)["_sglang_config_path"]
    argv = [MODEL_ROOT + "/@CONFIG@" if a == config_at else a for a in argv]
    return argv, files["config"]


def expected(spec, result):
    """What the planner says SGLang will run with (compared with the real resolution)."""
    plan = result
    return {"context_length": plan["context_length"], "max_total_tokens": plan["max_total_tokens"],
            "mem_fraction_static": plan["mem_fraction_static"],
            "max_running_requests": plan["max_running_requests"],
            # DeepSeek-V3.2's plan names the dtype 'auto' resolves to on the GPU (sparse.py)
            "kv_cache_dtype": plan.get("sparse_kv_cache_dtype") or spec["kv_cache_dtype"],
            "page_size": pages.pool_page(normalize_spec(spec)),
            "draft_tokens": plan_module._draft_extra_tokens(normalize_spec(spec)),
            # what the headroom's prefill activations are sized for (memory.py chunked_prefill_tokens)
            "chunked_prefill_size": memory.chunked_prefill_tokens(normalize_spec(spec)),
            # a sliding-window model's two pools, or a linear-attention model's KV pool and state slots, for the
            # memory the plan was made from (pools_real.py)
            "pools": _pools(plan, spec)}


def _pools(plan, spec=None):
    config = spec and (spec.get("model_config") or sglang_kvplan.load_presets()[spec["model"]]["config"])
    if config and architectures.architecture(config) in architectures.GEMMA3:
        return {"full": plan["predicted_pool_tokens"]}  # one plain pool: the split turned off
    if config and _by_class(config) and plan["pool_policy"] == "fill":
        return {"full": plan["predicted_pool_tokens"]}  # one plain pool, sized by the release's configurator
    if "sliding_window_pool_tokens" in plan:
        return {"full": plan["predicted_pool_tokens"], "sliding": plan["sliding_window_pool_tokens"]}
    if "sparse_kv_cache_dtype" in plan:
        return {"full": plan["predicted_pool_tokens"]}
    if "state_slots" in plan:
        return {"full": plan["predicted_pool_tokens"], "state_slots": plan["state_slots"],
                "running": plan["max_running_requests"]}
    return None


def _by_class(config):
    """An architecture planned by its release's class beyond the first hand list (architectures.KNOWN): its pool
    is compared with the release's own configurator's."""
    arch = architectures.architecture(config)
    return arch is not None and arch not in architectures.KNOWN and arch not in architectures.GEMMA3 and (
        arch not in architectures.SLIDING and arch not in architectures.LINEAR and arch not in architectures.SPARSE)


def probe(spec, plan):
    """The memory a sliding-window, hybrid or sparse-attention plan was made from (P and the A the profile starts
    from, GiB, unrounded), which the driver gives the release's own pool configurator; None for other models."""
    if _pools(plan, spec) is None:
        return None
    normalized = normalize_spec(spec)
    pre, post, _, _ = memory.memory(normalized)
    return {"pre_load_avail_gib": pre, "profile_avail_gib": memory.profile_post(normalized, post)}


def planned(version, matrix=None):
    """[case + {version, planner: {accepted, refusal, expected}, argv, config}] for one release."""
    out = []
    for case in matrix or MATRIX:
        if version not in case.get("only", [version]):
            continue
        result, knobs = plan_case(case, version)
        entry = dict(copy.deepcopy(case), version=version)
        if "error" in result:
            entry["planner"] = {"accepted": False, "refusal": result["error"]}
            result, knobs = _unchecked_plan(case, version)
            if "error" in result:
                raise SystemExit("%s: refused even unchecked: %s" % (case["id"], result["error"]))
        else:
            entry["planner"] = {"accepted": True, "refusal": None,
                                "expected": expected(result["spec"], result["plan"])}
        entry["probe"] = probe(result["spec"], result["plan"])
        entry["argv"], entry["config"] = render_argv(knobs, result["plan"], case["model"])
        out.append(entry)
    return out


def main():
    version, out_file = sys.argv[1:3]
    with open(out_file, "w", encoding="utf-8") as handle:
        json.dump(planned(version), handle, indent=1)


if __name__ == "__main__":
    main()
