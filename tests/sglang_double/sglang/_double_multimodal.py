"""0.5.23's multimodal reserve for the TEST DOUBLE, as configs/model_config.py decides is_multimodal and
mem_cache/kv_cache_configurator.py mm_runtime_reservation_gb reserves for it (read from the 0.5.23 wheel; 0.5.9
reserves nothing: its embedding cache is allocated later, out of the headroom).

is_multimodal = enable_multimodal and not language_model_only and (the architecture is in multimodal_model_archs
or the checkpoint nests its language model, hf_config is not hf_text_config). enable_multimodal defaults to
False for Gemma3, Llama4, Step3VL and Inkling (mm_disabled_models), True otherwise. The reserve is
SGLANG_VLM_CACHE_SIZE_MB (100), plus SGLANG_MM_FEATURE_CACHE_MB (1024) with --mm-feature-transport cuda_ipc or
cuda_vmm.
"""

import os
import re

# configs/model_config.py multimodal_model_archs (0.5.23)
MULTIMODAL_ARCHS = (
    "BailingMM2NativeForConditionalGeneration", "BailingMMNativeForConditionalGeneration",
    "BailingMoeV3VLForConditionalGeneration", "CLIPModel", "Cohere2VisionForConditionalGeneration",
    "Cosmos3EdgeForConditionalGeneration", "DeepseekOCRForCausalLM", "DeepseekVL2ForCausalLM",
    "DiffusionGemmaForBlockDiffusion", "Dots3NoteForCausalLM", "DotsOCRForCausalLM", "DotsVLMForCausalLM",
    "EmbeddingGemma2Model", "Ernie4_5_VLMoeForConditionalGeneration", "Gemma3ForConditionalGeneration",
    "Gemma3nForConditionalGeneration", "Gemma4ForConditionalGeneration",
    "Gemma4UnifiedForConditionalGeneration", "Glm4vForConditionalGeneration",
    "Glm4vMoeForConditionalGeneration", "Glm5NextForConditionalGeneration", "GlmAsrForConditionalGeneration",
    "GlmImageForConditionalGeneration", "GlmOcrForConditionalGeneration", "Grok1AForCausalLM",
    "Grok1VForCausalLM", "InternS1ForConditionalGeneration", "InternS1ProForConditionalGeneration",
    "InternS2MobiusForConditionalGeneration", "InternS2PreviewForConditionalGeneration", "InternVLChatModel",
    "JetVLMForConditionalGeneration", "KimiK25ForConditionalGeneration", "KimiVLForConditionalGeneration",
    "Lfm2VlForConditionalGeneration", "LightOnOCRForConditionalGeneration", "Llama4ForConditionalGeneration",
    "LlavaForConditionalGeneration", "LlavaLlamaForCausalLM", "LlavaMistralForCausalLM", "LlavaQwenForCausalLM",
    "LlavaVidForCausalLM", "LocateAnythingForConditionalGeneration", "MiDashengLMModel", "MiMoV2ASRForCausalLM",
    "MiMoV2ForCausalLM", "MiniCPMO", "MiniCPMV", "MiniMaxM3SparseForConditionalGeneration",
    "Mistral3ForConditionalGeneration", "MllamaForConditionalGeneration", "MossVLForConditionalGeneration",
    "MultiModalityCausalLM", "MuseGlimmerForConditionalGeneration", "MuseSparkForConditionalGeneration",
    "NVILAForConditionalGeneration", "NVILALiteForConditionalGeneration", "NemotronH_Nano_Omni_Reasoning_V3",
    "NemotronH_Nano_VL_V2", "NemotronH_Omni_Reasoning_V3", "POINTSV15ChatModel",
    "PaddleOCRVLForConditionalGeneration", "Phi4MMForCausalLM", "PixtralForConditionalGeneration",
    "Qwen2AudioForConditionalGeneration", "Qwen2VLForConditionalGeneration",
    "Qwen2_5_VLForConditionalGeneration", "Qwen3ASRForConditionalGeneration",
    "Qwen3OmniMoeForConditionalGeneration", "Qwen3VLForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration", "Qwen4ExpForConditionalGeneration", "Sarashina2VisionForCausalLM",
    "Step3VLForConditionalGeneration", "Step3p7ForConditionalGeneration", "StepVLForConditionalGeneration",
    "UnlimitedOCRForCausalLM", "VoxtralForConditionalGeneration", "WhisperForConditionalGeneration"
)
# configs/model_config.py mm_disabled_models (0.5.23): multimodal only with --enable-multimodal
MM_DISABLED_ARCHS = ("Gemma3ForConditionalGeneration", "Llama4ForConditionalGeneration",
                     "Step3VLForConditionalGeneration", "InklingForConditionalGeneration")


def is_multimodal(config, args):
    archs = config.get("architectures") or []
    if not archs or config.get("language_model_only") or getattr(args, "language_model_only", False):
        return False
    # --enable-multimodal is a store_true whose default is None (auto): the command line can only turn it on.
    enabled = True if getattr(args, "enable_multimodal", None) else archs[0] not in MM_DISABLED_ARCHS
    nested = isinstance(config.get("text_config"), dict) and "num_hidden_layers" in config["text_config"]
    return bool(enabled) and (bool(set(archs) & set(MULTIMODAL_ARCHS)) or nested)


def mm_reservation_gib(config, args, release_name, version=None):
    """GiB the release keeps out of the KV budget: from 0.5.18 (mm_runtime_reservation_gb, 0.5.23
    mem_cache/kv_cache_configurator.py:202-219, subtracted at :3034-3038), none before (0.5.9 to 0.5.17 allocate
    the embedding cache later, out of the headroom). --mm-feature-transport exists from 0.5.16 (cpu, cuda_ipc;
    cuda_vmm from 0.5.18) but reserves nothing before 0.5.18."""
    if release_name == "0.5.9" or not is_multimodal(config, args):
        return 0.0
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", str(version or ""))
    if found and tuple(int(part) for part in found.groups()) < (0, 5, 18):
        return 0.0
    reserved = int(os.environ.get("SGLANG_VLM_CACHE_SIZE_MB", "100"))
    if getattr(args, "mm_feature_transport", None) in ("cuda_ipc", "cuda_vmm"):
        reserved += int(os.environ.get("SGLANG_MM_FEATURE_CACHE_MB", "1024"))
    return reserved / 1024
