// probe: what llama.cpp's memory module allocates for one GGUF at one set of context parameters.
//
// Our measuring code, built against a libllama built at the commit being measured (see
// conformance/llamacpp/README.md). It loads the model, creates a context from
// llama_context_default_params() with the settings given, and prints one JSON object: every K, V,
// R and S tensor of the memory (name, ggml type, shape, ggml_nbytes), the memory's class, the
// context's n_ctx / n_ctx_seq, the memory buffers' bytes (llama_get_memory_breakdown) and
// llama.cpp's own log lines about the caches (the cross-check). A model or context llama.cpp
// refuses is printed as {"refused": "<its last error line>"}.
//
// usage: probe MODEL.gguf n_ctx=N n_seq=N type_k=f16 type_v=f16 fa=auto|on|off kv_unified=0|1
//        swa_full=0|1

#include "llama.h"
#include "llama-ext.h"
#include "llama-kv-cache-iswa.h"
#include "llama-kv-cache.h"
#include "llama-memory-hybrid-iswa.h"
#include "llama-memory-hybrid.h"
#include "llama-memory-recurrent.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

// llama_kv_cache keeps its per-layer tensors in a private member; an explicit instantiation may
// name it (access is not checked there), which hands us a pointer to that member.
auto kv_layers_member();
template <auto Member> struct expose_member {
    friend auto kv_layers_member() { return Member; }
};
template struct expose_member<&llama_kv_cache::layers>;

static std::vector<std::string> g_log;

static void on_log(ggml_log_level level, const char * text, void *) {
    (void) level;
    g_log.emplace_back(text);
}

static std::string json_string(const std::string & text) {
    std::string out = "\"";
    for (char c : text) {
        switch (c) {
            case '"':  out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            default:
                if ((unsigned char) c < 0x20) {
                    char buf[8];
                    snprintf(buf, sizeof(buf), "\\u%04x", c);
                    out += buf;
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

static std::string last_error() {
    // llama_model_load logs "error loading model: <why>"; a context, "failed to ..." lines
    for (auto it = g_log.rbegin(); it != g_log.rend(); ++it) {
        if (it->find("error loading model") != std::string::npos) {
            std::string line = *it;
            while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) {
                line.pop_back();
            }
            return line;
        }
    }
    for (auto it = g_log.rbegin(); it != g_log.rend(); ++it) {
        if (it->find("error") != std::string::npos || it->find("failed") != std::string::npos) {
            std::string line = *it;
            while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) {
                line.pop_back();
            }
            return line;
        }
    }
    return "refused without an error line";
}

static ggml_type type_named(const std::string & name) {
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const char * n = ggml_type_name((ggml_type) t);
        if (n && name == n) {
            return (ggml_type) t;
        }
    }
    fprintf(stderr, "unknown ggml type %s\n", name.c_str());
    exit(2);
}

struct tensor_row {
    std::string cache;  // "kv", "kv_swa", "rs"
    ggml_tensor * t;
};

static void add_kv(std::vector<tensor_row> & rows, std::string cache, const llama_kv_cache * kv,
                   std::map<std::string, unsigned> & cells, std::map<std::string, unsigned> & streams) {
    cells[cache] = kv->get_size();
    streams[cache] = kv->get_n_stream();
    for (const auto & layer : kv->*kv_layers_member()) {
        if (layer.k) {
            rows.push_back({cache, layer.k});
        }
        if (layer.v) {
            rows.push_back({cache, layer.v});
        }
    }
}

static void add_rs(std::vector<tensor_row> & rows, const llama_memory_recurrent * rs,
                   std::map<std::string, unsigned> & cells) {
    cells["rs"] = rs->size;
    for (auto * t : rs->r_l) {
        if (t) {
            rows.push_back({"rs", t});
        }
    }
    for (auto * t : rs->s_l) {
        if (t) {
            rows.push_back({"rs", t});
        }
    }
}

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: probe MODEL.gguf key=value...\n");
        return 2;
    }
    std::map<std::string, std::string> opt = {
        {"n_ctx", "0"}, {"n_seq", "1"}, {"type_k", "f16"}, {"type_v", "f16"},
        {"fa", "auto"}, {"kv_unified", "0"}, {"swa_full", "0"},
    };
    for (int i = 2; i < argc; ++i) {
        std::string arg = argv[i];
        auto eq = arg.find('=');
        if (eq == std::string::npos || !opt.count(arg.substr(0, eq))) {
            fprintf(stderr, "bad setting %s\n", argv[i]);
            return 2;
        }
        opt[arg.substr(0, eq)] = arg.substr(eq + 1);
    }

    llama_log_set(on_log, nullptr);
    llama_backend_init();

    llama_model_params mparams = llama_model_default_params();
    mparams.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(argv[1], mparams);
    if (!model) {
        printf("{\"refused\": %s, \"stage\": \"model\"}\n", json_string(last_error()).c_str());
        return 0;
    }

    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = (uint32_t) atol(opt["n_ctx"].c_str());
    cparams.n_seq_max = (uint32_t) atol(opt["n_seq"].c_str());
    cparams.type_k = type_named(opt["type_k"]);
    cparams.type_v = type_named(opt["type_v"]);
    cparams.flash_attn_type = opt["fa"] == "on"    ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                              : opt["fa"] == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                                   : LLAMA_FLASH_ATTN_TYPE_AUTO;
    cparams.kv_unified = opt["kv_unified"] == "1";
    cparams.swa_full = opt["swa_full"] == "1";
    cparams.n_threads = 1;
    cparams.n_threads_batch = 1;

    size_t log_mark = g_log.size();
    llama_context * ctx = llama_init_from_model(model, cparams);
    if (!ctx) {
        printf("{\"refused\": %s, \"stage\": \"context\"}\n", json_string(last_error()).c_str());
        llama_model_free(model);
        return 0;
    }

    std::string memory_class = "none";
    std::vector<tensor_row> rows;
    std::map<std::string, unsigned> cells, streams;
    llama_memory_i * mem = llama_get_memory(ctx);
    if (auto * kv = dynamic_cast<llama_kv_cache *>(mem)) {
        memory_class = "llama_kv_cache";
        add_kv(rows, "kv", kv, cells, streams);
    } else if (auto * iswa = dynamic_cast<llama_kv_cache_iswa *>(mem)) {
        memory_class = "llama_kv_cache_iswa";
        add_kv(rows, "kv", iswa->get_base(), cells, streams);
        add_kv(rows, "kv_swa", iswa->get_swa(), cells, streams);
    } else if (auto * hyb = dynamic_cast<llama_memory_hybrid *>(mem)) {
        memory_class = "llama_memory_hybrid";
        add_kv(rows, "kv", hyb->get_mem_attn(), cells, streams);
        add_rs(rows, hyb->get_mem_recr(), cells);
    } else if (auto * hyb_iswa = dynamic_cast<llama_memory_hybrid_iswa *>(mem)) {
        memory_class = "llama_memory_hybrid_iswa";
        add_kv(rows, "kv", hyb_iswa->get_mem_attn()->get_base(), cells, streams);
        add_kv(rows, "kv_swa", hyb_iswa->get_mem_attn()->get_swa(), cells, streams);
        add_rs(rows, hyb_iswa->get_mem_recr(), cells);
    } else if (auto * rs = dynamic_cast<llama_memory_recurrent *>(mem)) {
        memory_class = "llama_memory_recurrent";
        add_rs(rows, rs, cells);
    } else if (mem) {
        memory_class = "other";
    }

    size_t context_buffers = 0;
    for (const auto & [buft, data] : llama_get_memory_breakdown(ctx)) {
        (void) buft;
        context_buffers += data.context;
    }

    char arch[128] = "";
    llama_model_meta_val_str(model, "general.architecture", arch, sizeof(arch));
    printf("{\"architecture\": %s, \"is_recurrent\": %s, \"is_hybrid\": %s, \"is_diffusion\": %s, ",
           json_string(arch).c_str(), llama_model_is_recurrent(model) ? "true" : "false",
           llama_model_is_hybrid(model) ? "true" : "false",
           llama_model_is_diffusion(model) ? "true" : "false");
    printf("\"memory_class\": %s, \"n_ctx\": %u, \"n_ctx_seq\": %u, \"n_seq_max\": %u, "
           "\"context_buffer_bytes\": %zu, \"cells\": {",
           json_string(memory_class).c_str(), llama_n_ctx(ctx), llama_n_ctx_seq(ctx),
           llama_n_seq_max(ctx), context_buffers);
    bool first = true;
    for (const auto & [cache, n] : cells) {
        printf("%s%s: %u", first ? "" : ", ", json_string(cache).c_str(), n);
        first = false;
    }
    printf("}, \"streams\": {");
    first = true;
    for (const auto & [cache, n] : streams) {
        printf("%s%s: %u", first ? "" : ", ", json_string(cache).c_str(), n);
        first = false;
    }
    printf("}, \"tensors\": [");
    first = true;
    for (const auto & row : rows) {
        printf("%s{\"cache\": %s, \"name\": %s, \"type\": %s, \"ne\": [%lld, %lld, %lld, %lld], "
               "\"nbytes\": %zu}",
               first ? "" : ", ", json_string(row.cache).c_str(),
               json_string(ggml_get_name(row.t)).c_str(), json_string(ggml_type_name(row.t->type)).c_str(),
               (long long) row.t->ne[0], (long long) row.t->ne[1], (long long) row.t->ne[2],
               (long long) row.t->ne[3], ggml_nbytes(row.t));
        first = false;
    }
    printf("], \"log\": [");
    first = true;
    for (size_t i = log_mark; i < g_log.size(); ++i) {
        const std::string & line = g_log[i];
        if (line.find(": layer ") != std::string::npos) {
            continue;  // one line per layer: the size lines below sum them
        }
        if (line.find("llama_kv_cache") == std::string::npos &&
            line.find("llama_memory_recurrent") == std::string::npos &&
            line.find("llama_context: n_ctx") == std::string::npos &&
            line.find("flash_attn") == std::string::npos &&
            line.find("swa") == std::string::npos) {
            continue;
        }
        std::string trimmed = line;
        while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' ')) {
            trimmed.pop_back();
        }
        printf("%s%s", first ? "" : ", ", json_string(trimmed).c_str());
        first = false;
    }
    printf("]}\n");

    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
