"""Hand-written miniatures in the shape of llama.cpp's files (same paths, same syntax patterns).

Two eras: `tree_v1()` has the single `convert_hf_to_gguf.py` script and the one big
`switch (arch)` in `llama_model::load_hparams`; `tree_v2()` has the `conversion/` package and
per-model `load_arch_hparams` methods in src/models/, plus a newer predicate."""

ARCH_CPP = "src/llama-arch.cpp"
ARCH_H = "src/llama-arch.h"
MODEL_CPP = "src/llama-model.cpp"
MODELS_H = "src/models/models.h"
CONSTANTS = "gguf-py/gguf/constants.py"
SCRIPT = "convert_hf_to_gguf.py"

ARCH_H_V1 = """\
#pragma once

#include <string>

// miniature of the architecture enum
enum llm_arch {
    LLM_ARCH_CLIP,
    LLM_ARCH_LLAMA,
    LLM_ARCH_GEMMA2,
    LLM_ARCH_MAMBA,
    LLM_ARCH_JAMBA,
    LLM_ARCH_QWEN3NEXT,
    LLM_ARCH_DEEPSEEK2,
    LLM_ARCH_DREAM,
    LLM_ARCH_BERT,
#ifdef LLAMA_EXPERIMENTAL
    LLM_ARCH_TOYMODEL,
#endif
    LLM_ARCH_ORPHAN, // no name on purpose
    LLM_ARCH_UNKNOWN,
};

const char * llm_arch_name(llm_arch arch);

bool llm_arch_is_recurrent     (const llm_arch & arch);
bool llm_arch_is_hybrid        (const llm_arch & arch);
bool llm_arch_is_diffusion     (const llm_arch & arch);
bool llm_arch_supports_sm_tensor(const llm_arch & arch);
"""

ARCH_H_V2 = ARCH_H_V1.replace(
    "bool llm_arch_supports_sm_tensor(const llm_arch & arch);\n",
    "bool llm_arch_supports_sm_tensor(const llm_arch & arch);\n"
    "bool llm_arch_supports_rs_rollback(const llm_arch & arch);\n",
)

ARCH_CPP_V1 = """\
#include "llama-arch.h"

#include <map>

static const std::map<llm_arch, const char *> LLM_ARCH_NAMES = {
    { LLM_ARCH_CLIP,             "clip"             }, // dummy, for the projector
    { LLM_ARCH_LLAMA,            "llama"            },
    { LLM_ARCH_GEMMA2,           "gemma2"           }, // sliding window
    { LLM_ARCH_MAMBA,            "mamba"            },
    { LLM_ARCH_JAMBA,            "jamba"            },
    { LLM_ARCH_QWEN3NEXT,        "qwen3next"        },
    { LLM_ARCH_DEEPSEEK2,        "deepseek2"        },
    { LLM_ARCH_DREAM,            "dream"            },
    { LLM_ARCH_BERT,             "bert"             },
#ifdef LLAMA_EXPERIMENTAL
    { LLM_ARCH_TOYMODEL,         "toymodel"         },
#endif
    { LLM_ARCH_GHOST,            "ghost"            },
    { LLM_ARCH_UNKNOWN,          "(unknown)"        },
};

const char * llm_arch_name(llm_arch arch) {
    auto it = LLM_ARCH_NAMES.find(arch);
    if (it == LLM_ARCH_NAMES.end()) {
        return "unknown";
    }
    return it->second;
}

bool llm_arch_is_recurrent(const llm_arch & arch) {
    switch (arch) {
        case LLM_ARCH_MAMBA:
            return true;
        default:
            return false;
    }
}

bool llm_arch_is_hybrid(const llm_arch & arch) {
    // keep the list sorted; do not add case LLM_ARCH_LLAMA: here
    switch (arch) {
        case LLM_ARCH_JAMBA: case LLM_ARCH_QWEN3NEXT:
            // case LLM_ARCH_BERT:
            /* case LLM_ARCH_GEMMA2: */
            return true;
        default:
            return false;
    }
}

bool llm_arch_is_diffusion(const llm_arch & arch) {
    GGML_UNUSED(arch);
    return false;
}

bool llm_arch_supports_sm_tensor(const llm_arch & arch) {
    switch (arch) {
        case LLM_ARCH_MAMBA:
        case LLM_ARCH_JAMBA:
        case LLM_ARCH_DEEPSEEK2:
            return false;
        default:
            return true;
    }
}
"""

ARCH_CPP_V2 = ARCH_CPP_V1.replace(
    """bool llm_arch_is_diffusion(const llm_arch & arch) {
    GGML_UNUSED(arch);
    return false;
}
""",
    """bool llm_arch_is_diffusion(const llm_arch & arch) {
    switch (arch) {
        case LLM_ARCH_DREAM:
            return true;
        default:
            return false;
    }
}

bool llm_arch_supports_rs_rollback(const llm_arch & arch) {
    switch (arch) {
        case LLM_ARCH_QWEN3NEXT:
#ifdef LLAMA_EXPERIMENTAL
        case LLM_ARCH_TOYMODEL:
#endif
            return true;
        default:
            break;
    }
    return false;
}
""",
)

# ---------------------------------------------------------------- hparams loaders

MODEL_CPP_V1 = """\
#include "llama-model.h"

void llama_model::load_hparams(llama_model_loader & ml) {
    const auto & kv = ml.kv();
    ml.get_key(LLM_KV_BLOCK_COUNT, hparams.n_layer);

    switch (arch) {
        case LLM_ARCH_LLAMA:
            {
                ml.get_key(LLM_KV_ATTENTION_LAYERNORM_RMS_EPS, hparams.f_norm_rms_eps);
            } break;
        case LLM_ARCH_GEMMA2:
            {
                hparams.swa_type = LLAMA_SWA_TYPE_STANDARD;
                hparams.n_swa = 4096; // a default
                uint32_t swa_period = 2;
                ml.get_key_or_arr(LLM_KV_ATTENTION_SLIDING_WINDOW_PATTERN, swa_period, false);
                hparams.set_swa_pattern(swa_period);
                ml.get_key(LLM_KV_ATTENTION_SLIDING_WINDOW, hparams.n_swa, false);
            } break;
        case LLM_ARCH_BERT:
        case LLM_ARCH_DEEPSEEK2:
            {
                const bool found_swa = ml.get_key(LLM_KV_ATTENTION_SLIDING_WINDOW, hparams.n_swa, false);
                if (found_swa && hparams.n_swa > 0) {
                    hparams.swa_type = LLAMA_SWA_TYPE_SYMMETRIC;
                    uint32_t swa_period = 3;
                    ml.get_key_or_arr(LLM_KV_ATTENTION_SLIDING_WINDOW_PATTERN, swa_period, false);
                    hparams.set_swa_pattern(swa_period, true);
                } else {
                    hparams.swa_type = LLAMA_SWA_TYPE_NONE;
                }
            } break;
        case LLM_ARCH_JAMBA:
            {
                hparams.swa_type = LLAMA_SWA_TYPE_CHUNKED;
                ml.get_key_or_arr(LLM_KV_ATTENTION_SLIDING_WINDOW_PATTERN, hparams.swa_layers, hparams.n_layer);
                ml.get_key(LLM_KV_ATTENTION_SLIDING_WINDOW, hparams.n_swa);
            } break;
        default: throw std::runtime_error("unsupported model architecture");
    }
}
"""

MODEL_CPP_V2 = """\
#include "llama-model.h"
#include "models/models.h"

void llama_model_base::load_hparams(llama_model_loader & ml) {
    ml.get_key(LLM_KV_CONTEXT_LENGTH, hparams.n_ctx_train);
    ml.get_key(LLM_KV_BLOCK_COUNT, hparams.n_layer);
    std::fill(hparams.swa_layers.begin(), hparams.swa_layers.end(), 0);
    GGML_ASSERT(hparams.n_layer <= LLAMA_MAX_LAYERS);

    // per-arch hparams
    load_arch_hparams(ml);
}

static llama_model * llama_model_mapping(llm_arch arch, const llama_model_params & params) {
    switch (arch) {
        case LLM_ARCH_LLAMA:
            return new llama_model_llama(params);
        case LLM_ARCH_GEMMA2:
            return new llama_model_gemma2(params);
        case LLM_ARCH_BERT:
            return new llama_model_bert(params);
        case LLM_ARCH_DEEPSEEK2:
            return new llama_model_deepseek2(params); // reuses bert's loader (miniature)
        case LLM_ARCH_JAMBA:
            return new llama_model_jamba(params);
        default:
            throw std::runtime_error("unsupported model architecture");
    }
}
"""

MODELS_H_TEXT = """\
#pragma once

#include "llama-model.h"

struct llama_model_llama : public llama_model_base {
    llama_model_llama(const struct llama_model_params & params) : llama_model_base(params) {}
    void load_arch_hparams(llama_model_loader & ml) override;
};

struct llama_model_gemma2 : public llama_model_base {
    llama_model_gemma2(const struct llama_model_params & params) : llama_model_base(params) {}
    void load_arch_hparams(llama_model_loader & ml) override;
};

struct llama_model_bert : public llama_model_base {
    llama_model_bert(const struct llama_model_params & params) : llama_model_base(params) {}
    void load_arch_hparams(llama_model_loader & ml) override;
};

struct llama_model_deepseek2 : public llama_model_bert {
    llama_model_deepseek2(const struct llama_model_params & params) : llama_model_bert(params) {}
    // reuses load_arch_hparams from llama_model_bert
};

struct llama_model_jamba : public llama_model_base {
    llama_model_jamba(const struct llama_model_params & params) : llama_model_base(params) {}
    void load_arch_hparams(llama_model_loader & ml) override;
};
"""

MODEL_FILES_V2 = {
    "src/models/llama.cpp": """\
#include "models.h"

void llama_model_llama::load_arch_hparams(llama_model_loader & ml) {
    ml.get_key(LLM_KV_ATTENTION_LAYERNORM_RMS_EPS, hparams.f_norm_rms_eps);
}

void llama_model_llama::load_arch_tensors(llama_model_loader &) {
    LLAMA_LOAD_LOCALS;

    tok_embd = create_tensor(tn(LLM_TENSOR_TOKEN_EMBD, "weight"), {n_embd, n_vocab}, 0);
    for (int i = 0; i < n_layer; ++i) {
        auto & layer = layers[i];
        if (hparams.n_head_kv(i) > 0) {
            layer.wk = create_tensor(tn(LLM_TENSOR_ATTN_K, "weight", i), {n_embd, n_embd_k_gqa}, 0);
        }
    }
}

template struct llama_model_llama::graph<false>;
""",
    "src/llama-model.h": """\
#pragma once

#define LLAMA_LOAD_LOCALS \\
    const int     n_layer        = hparams.n_layer;          GGML_UNUSED(n_layer); \\
    const int64_t n_embd         = hparams.n_embd;           GGML_UNUSED(n_embd); \\
    const int64_t n_embd_k_gqa   = hparams.n_embd_k_gqa();   GGML_UNUSED(n_embd_k_gqa); \\
    const int64_t n_vocab        = vocab.n_tokens();         GGML_UNUSED(n_vocab);

struct llama_model_base {
    void load_hparams(llama_model_loader & ml);
};
""",
    "src/models/gemma2.cpp": """\
#include "models.h"

void llama_model_gemma2::load_arch_hparams(llama_model_loader & ml) {
    hparams.swa_type = LLAMA_SWA_TYPE_STANDARD;
    hparams.n_swa = 4096; // a default
    uint32_t swa_period = 2;
    ml.get_key_or_arr(LLM_KV_ATTENTION_SLIDING_WINDOW_PATTERN, swa_period, false);
    hparams.set_swa_pattern(swa_period);
    ml.get_key(LLM_KV_ATTENTION_SLIDING_WINDOW, hparams.n_swa, false);
}
""",
    "src/models/bert.cpp": """\
#include "models.h"

void llama_model_bert::load_arch_hparams(llama_model_loader & ml) {
    const bool found_swa = ml.get_key(LLM_KV_ATTENTION_SLIDING_WINDOW, hparams.n_swa, false);
    if (found_swa && hparams.n_swa > 0) {
        hparams.swa_type = LLAMA_SWA_TYPE_SYMMETRIC;
        uint32_t swa_period = 3;
        ml.get_key_or_arr(LLM_KV_ATTENTION_SLIDING_WINDOW_PATTERN, swa_period, false);
        hparams.set_swa_pattern(swa_period, true);
    } else {
        hparams.swa_type = LLAMA_SWA_TYPE_NONE;
    }
}
""",
    "src/models/jamba.cpp": """\
#include "models.h"

void llama_model_jamba::load_arch_hparams(llama_model_loader & ml) {
    hparams.swa_type = LLAMA_SWA_TYPE_CHUNKED;
    ml.get_key_or_arr(LLM_KV_ATTENTION_SLIDING_WINDOW_PATTERN, hparams.swa_layers, hparams.n_layer);
    ml.get_key(LLM_KV_ATTENTION_SLIDING_WINDOW, hparams.n_swa);
}
""",
}

# ---------------------------------------------------------------- gguf-py

CONSTANTS_TEXT = """\
from enum import IntEnum, auto


class MODEL_ARCH(IntEnum):
    MMPROJ    = auto()  # dummy arch for clip.cpp
    LLAMA     = auto()
    GEMMA2    = auto()
    MAMBA     = auto()
    JAMBA     = auto()
    QWEN3NEXT = auto()
    DEEPSEEK2 = auto()
    BERT      = auto()
    DREAM     = auto()
    NOVEL     = auto()


MODEL_ARCH_NAMES: dict[MODEL_ARCH, str] = {
    MODEL_ARCH.MMPROJ:    "clip",
    MODEL_ARCH.LLAMA:     "llama",
    MODEL_ARCH.GEMMA2:    "gemma2",
    MODEL_ARCH.MAMBA:     "mamba",
    MODEL_ARCH.JAMBA:     "jamba",
    MODEL_ARCH.QWEN3NEXT: "qwen3next",
    MODEL_ARCH.DEEPSEEK2: "deepseek2",
    MODEL_ARCH.BERT:      "bert",
    MODEL_ARCH.DREAM:     "dream",
    MODEL_ARCH.NOVEL:     "novel",  # the converter writes it, llama.cpp cannot load it
}
"""

# ---------------------------------------------------------------- converter, script layout

SCRIPT_TEXT = '''\
#!/usr/bin/env python3
from __future__ import annotations

import gguf
import torch


class ModelBase:
    _model_classes: dict = {}
    model_arch: gguf.MODEL_ARCH

    @classmethod
    def register(cls, *names: str):
        def func(modelcls):
            for name in names:
                cls._model_classes[name] = modelcls
            return modelcls
        return func


class TextModel(ModelBase):
    def __init__(self):
        self.block_count = self.find_hparam(["num_hidden_layers", "n_layer"])

    def set_gguf_parameters(self):
        self.gguf_writer.add_block_count(self.block_count)
        if (n_head := self.find_hparam(["num_attention_heads", "n_head"], optional=True)) is not None:
            self.gguf_writer.add_head_count(n_head)
        self.gguf_writer.add_embedding_length(self.hparams["hidden_size"])
        if (head_dim := self.hparams.get("head_dim")) is not None:
            self.gguf_writer.add_key_length(head_dim)
        self.gguf_writer.add_head_count_kv(2 * self.hparams["n_groups"])


class MmprojModel(ModelBase):
    model_arch = gguf.MODEL_ARCH.MMPROJ


@ModelBase.register("LlamaForCausalLM", "MistralForCausalLM")
class LlamaModel(TextModel):
    model_arch = gguf.MODEL_ARCH.LLAMA


@ModelBase.register("MyLlamaVariantForCausalLM")
class LlamaVariantModel(LlamaModel):
    """inherits model_arch from LlamaModel"""
    undo_permute = False


@ModelBase.register("Gemma2ForCausalLM")
class Gemma2Model(TextModel):
    model_arch = gguf.MODEL_ARCH.GEMMA2


@ModelBase.register("JambaForCausalLM")
class JambaModel(TextModel):
    model_arch = gguf.MODEL_ARCH.JAMBA


@ModelBase.register("Qwen3NextForCausalLM")
class Qwen3NextModel(TextModel):
    model_arch = gguf.MODEL_ARCH.QWEN3NEXT


@ModelBase.register("DeepseekV3ForCausalLM")
class DeepseekV2Model(TextModel):
    model_arch = gguf.MODEL_ARCH.DEEPSEEK2


@ModelBase.register("BertModel", "BertForMaskedLM")
class BertModel(TextModel):
    model_arch = gguf.MODEL_ARCH.BERT

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.hparams.get("moe"):
            self.model_arch = gguf.MODEL_ARCH.DREAM


@ModelBase.register("NovelForCausalLM")
class NovelModel(TextModel):
    model_arch = gguf.MODEL_ARCH.NOVEL


@ModelBase.register("AudioOnlyModel")
class AudioOnlyModel(TextModel):
    model_arch = gguf.MODEL_ARCH.LLAMA  # dummy

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        raise NotImplementedError("no text decoder")


@ModelBase.register("Gemma2ForCausalLM", "LlavaForConditionalGeneration")
class VisionModel(MmprojModel):
    """inherits MMPROJ, so it is registered as a projector"""
    has_vision_encoder = True
'''

# ---------------------------------------------------------------- converter, package layout

PACKAGE_INIT = """\
from __future__ import annotations

from .base import ModelBase, TextModel, MmprojModel


TEXT_MODEL_MAP: dict[str, str] = {
    "AudioOnlyModel": "audio",
    "BertForMaskedLM": "bert",
    "BertModel": "bert",
    "DeepseekV3ForCausalLM": "deepseek",
    "Gemma2ForCausalLM": "gemma",
    "JambaForCausalLM": "jamba",
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "llama",
    "MyLlamaVariantForCausalLM": "llama",
    "NovelForCausalLM": "novel",
    "Qwen3NextForCausalLM": "qwen",
}


MMPROJ_MODEL_MAP: dict[str, str] = {
    "Gemma2ForCausalLM": "gemma",
    "LlavaForConditionalGeneration": "gemma",
}
"""

PACKAGE_FILES = {
    "conversion/__init__.py": PACKAGE_INIT,
    "conversion/base.py": """\
from __future__ import annotations

import gguf


class ModelBase:
    _model_classes: dict = {}
    model_arch: gguf.MODEL_ARCH

    @classmethod
    def register(cls, *names: str):
        def func(modelcls):
            for name in names:
                cls._model_classes[name] = modelcls
            return modelcls
        return func


class TextModel(ModelBase):
    def __init__(self):
        self.block_count = self.find_hparam(["num_hidden_layers", "n_layer"])

    def set_gguf_parameters(self):
        self.gguf_writer.add_block_count(self.block_count)
        if (n_head := self.find_hparam(["num_attention_heads", "n_head"], optional=True)) is not None:
            self.gguf_writer.add_head_count(n_head)
        self.gguf_writer.add_embedding_length(self.hparams["hidden_size"])
        if (head_dim := self.hparams.get("head_dim")) is not None:
            self.gguf_writer.add_key_length(head_dim)
        self.gguf_writer.add_head_count_kv(2 * self.hparams["n_groups"])


class MmprojModel(ModelBase):
    model_arch = gguf.MODEL_ARCH.MMPROJ
""",
    "conversion/llama.py": '''\
from __future__ import annotations

from .base import ModelBase, TextModel, gguf


@ModelBase.register(
    "LlamaForCausalLM",
    "MistralForCausalLM",
)
class LlamaModel(TextModel):
    model_arch = gguf.MODEL_ARCH.LLAMA


@ModelBase.register("MyLlamaVariantForCausalLM")
class LlamaVariantModel(LlamaModel):
    """inherits model_arch from LlamaModel"""
    undo_permute = False
''',
    "conversion/gemma.py": '''\
from __future__ import annotations

from .base import MmprojModel, ModelBase, TextModel, gguf
from .llama import LlamaModel as _Llama


@ModelBase.register("Gemma2ForCausalLM")
class Gemma2Model(TextModel):
    model_arch = gguf.MODEL_ARCH.GEMMA2


@ModelBase.register("Gemma2ForCausalLM", "LlavaForConditionalGeneration")
class VisionModel(MmprojModel):
    """inherits MMPROJ from conversion/base.py"""
    has_vision_encoder = True


class _UnregisteredHelper(_Llama):
    pass
''',
    "conversion/jamba.py": """\
from __future__ import annotations

from .base import ModelBase, TextModel, gguf


@ModelBase.register("JambaForCausalLM")
class JambaModel(TextModel):
    model_arch = gguf.MODEL_ARCH.JAMBA
""",
    "conversion/qwen.py": """\
from __future__ import annotations

from .base import ModelBase, TextModel, gguf


@ModelBase.register("Qwen3NextForCausalLM")
class Qwen3NextModel(TextModel):
    model_arch = gguf.MODEL_ARCH.QWEN3NEXT
""",
    "conversion/deepseek.py": """\
from __future__ import annotations

from .base import ModelBase, TextModel, gguf


@ModelBase.register("DeepseekV3ForCausalLM")
class DeepseekV2Model(TextModel):
    model_arch = gguf.MODEL_ARCH.DEEPSEEK2
""",
    "conversion/bert.py": """\
from __future__ import annotations

from .base import ModelBase, TextModel, gguf


@ModelBase.register("BertModel", "BertForMaskedLM")
class BertModel(TextModel):
    model_arch = gguf.MODEL_ARCH.BERT

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.hparams.get("moe"):
            self.model_arch = gguf.MODEL_ARCH.DREAM
""",
    "conversion/novel.py": """\
from __future__ import annotations

from .base import ModelBase, TextModel, gguf


@ModelBase.register("NovelForCausalLM")
class NovelModel(TextModel):
    model_arch = gguf.MODEL_ARCH.NOVEL
""",
    "conversion/audio.py": """\
from __future__ import annotations

from .base import ModelBase, TextModel, gguf


@ModelBase.register("AudioOnlyModel")
class AudioOnlyModel(TextModel):
    model_arch = gguf.MODEL_ARCH.LLAMA  # dummy

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        raise NotImplementedError("no text decoder")
""",
}

# after the split the script only imports the package
SCRIPT_AFTER_SPLIT = """\
#!/usr/bin/env python3
from __future__ import annotations

from conversion import ModelBase, get_model_class


def main() -> None:
    model_class = get_model_class("LlamaForCausalLM")
    print(model_class)
"""


# ---------------------------------------------------------------- sizing rules (hand-written)

KV_NAMES_TEXT = """
static const std::map<llm_kv, const char *> LLM_KV_NAMES = {
    { LLM_KV_CONTEXT_LENGTH,                   "%s.context_length" },
    { LLM_KV_BLOCK_COUNT,                      "%s.block_count" },
    { LLM_KV_FULL_ATTENTION_INTERVAL,          "%s.full_attention_interval" },
    { LLM_KV_ATTENTION_LAYERNORM_RMS_EPS,      "%s.attention.layer_norm_rms_epsilon" },
    { LLM_KV_ATTENTION_SLIDING_WINDOW,         "%s.attention.sliding_window" },
    { LLM_KV_ATTENTION_SLIDING_WINDOW_PATTERN, "%s.attention.sliding_window_pattern" },
};

static const std::map<llm_tensor, const char *> LLM_TENSOR_NAMES = {
    { LLM_TENSOR_TOKEN_EMBD, "token_embd" },
    { LLM_TENSOR_ATTN_K,     "blk.%d.attn_k" },
};
"""

CREATE_MEMORY_TEXT = """
llama_memory_i * llama_model::create_memory(const llama_memory_params & params, const llama_cparams & cparams) const {
    llama_memory_i * res;
    switch (arch) {
        case LLM_ARCH_BERT:
            { res = nullptr; } break;
        default:
            {
                if (llm_arch_is_recurrent(arch)) {
                    res = new llama_memory_recurrent(*this, GGML_TYPE_F32, GGML_TYPE_F32, std::max((uint32_t) 1, cparams.n_seq_max));
                } else if (llm_arch_is_hybrid(arch)) {
                    llama_memory_hybrid::layer_filter_cb filter_attn = nullptr;
                    if (arch == LLM_ARCH_JAMBA) {
                        filter_attn = [&](int32_t il) { return !hparams.is_recurrent(il); };
                    }
                    res = new llama_memory_hybrid(*this, params.type_k, GGML_TYPE_F32, std::move(filter_attn));
                } else if (hparams.swa_type != LLAMA_SWA_TYPE_NONE) {
                    res = new llama_kv_cache_iswa(*this, params.type_k, params.type_v, cparams.n_ctx_seq);
                } else {
                    res = new llama_kv_cache(*this, params.type_k, params.type_v, cparams.n_ctx_seq);
                }
            }
    }
    return res;
}
"""

KEYS_TEXT = """

class Keys:
    class LLM:
        BLOCK_COUNT = "{arch}.block_count"
        EMBEDDING_LENGTH = "{arch}.embedding_length"

    class Attention:
        HEAD_COUNT = "{arch}.attention.head_count"
        HEAD_COUNT_KV = "{arch}.attention.head_count_kv"
        KEY_LENGTH = "{arch}.attention.key_length"
"""

SIZING_FILES = {
    "gguf-py/gguf/gguf_writer.py": """\
class GGUFWriter:
    def add_block_count(self, length: int) -> None:
        self.add_uint32(Keys.LLM.BLOCK_COUNT.format(arch=self.arch), length)

    def add_embedding_length(self, length: int) -> None:
        self.add_uint32(Keys.LLM.EMBEDDING_LENGTH.format(arch=self.arch), length)

    def add_head_count(self, count) -> None:
        self.add_uint32(Keys.Attention.HEAD_COUNT.format(arch=self.arch), count)

    def add_head_count_kv(self, count) -> None:
        if isinstance(count, int):
            self.add_uint32(Keys.Attention.HEAD_COUNT_KV.format(arch=self.arch), count)
        else:
            self.add_array(Keys.Attention.HEAD_COUNT_KV.format(arch=self.arch), count)

    def add_key_length(self, length: int) -> None:
        self.add_uint32(Keys.Attention.KEY_LENGTH.format(arch=self.arch), length)

    def add_uint32(self, key: str, val: int) -> None:
        self.add_key_value(key, val)
""",
    "src/llama-hparams.h": """\
#pragma once

#define LLAMA_MAX_LAYERS  512
#define LLAMA_MAX_EXPERTS 512 // a comment after the value

struct llama_hparams {
    uint32_t n_ctx_train;
    uint32_t n_layer;
    int32_t n_layer_kv_from_start = -1;
    uint32_t n_swa = 0;
    llama_swa_type swa_type = LLAMA_SWA_TYPE_NONE;
    std::array<uint32_t, LLAMA_MAX_LAYERS> swa_layers;
    float f_norm_rms_eps;

    void set_swa_pattern(uint32_t n_pattern, bool dense_first = false);
};
""",
    "src/llama-hparams.cpp": """\
void llama_hparams::set_swa_pattern(uint32_t n_pattern, bool dense_first) {
    for (uint32_t il = 0; il < n_layer; ++il) {
        swa_layers[il] = n_pattern == 0 || (dense_first ? il % n_pattern != 0 : il % n_pattern < (n_pattern - 1));
    }
}

uint32_t llama_hparams::n_embd_k_gqa(uint32_t il) const {
    return n_embd_head_k(il) * n_head_kv(il);
}

uint32_t llama_hparams::n_embd_r() const {
    if (wkv_head_size != 0) {
        return token_shift_count * n_embd;
    }
    return (ssm_d_conv > 0 ? ssm_d_conv - 1 : 0) * ssm_d_inner;
}

uint32_t llama_hparams::n_layer_kv() const {
    uint32_t res = 0;
    for (uint32_t il = 0; il < n_layer; ++il) { res++; }
    return res;
}
""",
    "src/llama-kv-cache.h": """\
class llama_kv_cache {
public:
    llama_kv_cache(const llama_model & model, ggml_type type_k, ggml_type type_v, uint32_t kv_size);
};
""",
    "src/llama-kv-cache-iswa.h": """\
class llama_kv_cache_iswa {
public:
    llama_kv_cache_iswa(const llama_model & model, ggml_type type_k, ggml_type type_v, uint32_t kv_size);
};
""",
    "src/llama-memory-recurrent.h": """\
class llama_memory_recurrent {
public:
    llama_memory_recurrent(const llama_model & model, ggml_type type_r, ggml_type type_s, uint32_t mem_size);
};
""",
    "src/llama-kv-cache-iswa.cpp": """\
llama_kv_cache_iswa::llama_kv_cache_iswa(const llama_model & model, uint32_t kv_size, bool swa_full) {
    const uint32_t size_base = kv_size;
    uint32_t size_swa = GGML_PAD(std::min(size_base, hparams.n_swa + n_ubatch), 256);
    if (swa_full) {
        size_swa = size_base;
    }
}
""",
    "src/llama-context.cpp": """\
llama_context::llama_context(const llama_model & model, llama_context_params params) {
    cparams.n_ctx = params.n_ctx == 0 ? hparams.n_ctx_train : params.n_ctx;
    cparams.n_batch = std::min(cparams.n_ctx, params.n_batch);
    cparams.n_ubatch = std::min(cparams.n_batch, params.n_ubatch);
    cparams.n_ctx = GGML_PAD(cparams.n_ctx, 256);
    cparams.n_ctx_seq = cparams.n_ctx;
}
""",
    "common/common.h": """\
struct common_params {
    int32_t n_ctx = 0;
    int32_t n_batch = 2048;
    int32_t n_ubatch = 512;
    int32_t n_parallel = 1;
    int32_t n_sequences = 1;
    ggml_type cache_type_k = GGML_TYPE_F16;
    ggml_type cache_type_v = GGML_TYPE_F16;
    enum llama_flash_attn_type flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
    bool kv_unified = false;
    bool swa_full = false;
};
""",
    "ggml/include/ggml.h": """\
#define GGML_MAX_DIMS           4
#ifndef GGML_MAX_NAME
#   define GGML_MAX_NAME        64
#endif
typedef uint16_t ggml_fp16_t;
typedef struct { uint16_t bits; } ggml_bf16_t;
""",
    "ggml/include/gguf.h": """\
#define GGUF_MAGIC   "GGUF"
#define GGUF_VERSION 3
#define GGUF_DEFAULT_ALIGNMENT 32
""",
    "ggml/src/gguf.cpp": """\
#define GGUF_MAX_STRING_LENGTH  (1024*1024*1024)
#define GGUF_MAX_ARRAY_ELEMENTS (1024*1024*1024)

struct gguf_reader {
    bool read(std::string & dst) const;
};
""",
    "src/llama-cparams.h": """\
#pragma once

#define LLAMA_MAX_SEQ 256

struct llama_cparams {
    uint32_t n_ctx;           // context size used during inference
    uint32_t n_seq_max;
};
""",
    "include/llama.h": """\
    struct llama_context_params {
        uint32_t n_ctx;             // text context, 0 = from model
        uint32_t n_batch;
        uint32_t n_seq_max;         // max number of sequences
    };
""",
    "ggml/src/ggml-common.h": """\
typedef uint16_t ggml_half;
#define QK8_0 32
typedef struct {
    ggml_half d;
    int8_t qs[QK8_0];
} block_q8_0;
static_assert(sizeof(block_q8_0) == sizeof(ggml_half) + QK8_0, "q8_0 block");
""",
    "ggml/src/ggml.c": """\
static const struct ggml_type_traits type_traits[GGML_TYPE_COUNT] = {
    [GGML_TYPE_F32] = { .type_name = "f32", .blck_size = 1, .type_size = sizeof(float), },
    [GGML_TYPE_F16] = { .type_name = "f16", .blck_size = 1, .type_size = sizeof(ggml_fp16_t), },
    [GGML_TYPE_BF16] = { .type_name = "bf16", .blck_size = 1, .type_size = sizeof(ggml_bf16_t), },
    [GGML_TYPE_Q8_0] = { .type_name = "q8_0", .blck_size = QK8_0, .type_size = sizeof(block_q8_0), },
};
""",
}


def tree_v1() -> dict[str, str | None]:
    """Before the refactors: one converter script, one hparams switch; no rs_rollback."""
    return {
        ARCH_H: ARCH_H_V1,
        ARCH_CPP: ARCH_CPP_V1 + KV_NAMES_TEXT,
        MODEL_CPP: MODEL_CPP_V1 + CREATE_MEMORY_TEXT,
        **SIZING_FILES,
        CONSTANTS: CONSTANTS_TEXT + KEYS_TEXT,
        SCRIPT: SCRIPT_TEXT,
    }


def tree_v2() -> dict[str, str | None]:
    """After: the conversion/ package, per-model loaders, a new predicate."""
    return {
        ARCH_H: ARCH_H_V2,
        ARCH_CPP: ARCH_CPP_V2 + KV_NAMES_TEXT,
        MODEL_CPP: MODEL_CPP_V2 + CREATE_MEMORY_TEXT,
        **SIZING_FILES,
        MODELS_H: MODELS_H_TEXT,
        CONSTANTS: CONSTANTS_TEXT + KEYS_TEXT,
        SCRIPT: SCRIPT_AFTER_SPLIT,
        **MODEL_FILES_V2,
        **PACKAGE_FILES,
    }
