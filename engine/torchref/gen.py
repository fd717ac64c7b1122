#!/usr/bin/python3
"""Reference values for engine/model, computed with PyTorch (Debian's python3-torch 1.13, CPU).

For each architecture the engine supports, this builds a tiny model with random weights, written out in
Hugging Face's layout (config.json, model.safetensors), and a LoRA adapter on all seven projections with
non-zero B, written in PEFT's layout (adapter_config.json, adapter_model.safetensors). The forward pass is
written here in plain torch after the Hugging Face modelling code of each family (transformers is not
needed). It records, in float32:

  * the logits of every position of a few sequences of different lengths,
  * the mean next-token cross-entropy and its gradients with respect to every LoRA matrix,

once with the weights as written and once with the base model's matrices rounded to bfloat16 (the values the
engine computes with when it holds a base in bfloat16), into expected.safetensors and case.json.

Gemma 3 is written after transformers' Gemma3 modelling code: (1 + weight) RMSNorms computed in float32,
four per layer plus the q/k norms, embeddings times sqrt(hidden), a GeGLU MLP (tanh-approximated GELU),
local layers with a sliding window and their own rope base between global layers, query_pre_attn_scalar,
optional attention and final-logit soft-capping; the multimodal case (model_type gemma3) stores its text
model under model.language_model. beside a vision tensor the engine must ignore.

Run by `make torch-fixtures` (`gen.py NAME...` regenerates only those cases); engine/torchref's
TestTorchParity compares the engine with these files.
"""

import json
import math
import os
import struct
import sys

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")
MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
SEQS = [[5, 17, 3, 60, 22, 9, 41, 33, 2, 14], [7, 7, 51, 28, 19, 63], [40, 1, 12]]
RANK, ALPHA = 4, 8

GEMMA3_TEXT = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 3,
               "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16, "max_position_embeddings": 32,
               "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "rope_local_base_freq": 10.0,
               "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 12, "sliding_window": 4,
               "attn_logit_softcapping": None, "final_logit_softcapping": None, "tie_word_embeddings": True,
               "torch_dtype": "float32"}

BASE = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 32, "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "hidden_act": "silu", "torch_dtype": "float32"}

# Every family, tied and untied, with the features the engine must reproduce.
CASES = {
    # SmolLM2-style Llama: tied embeddings, grouped KV heads.
    "llama": dict(BASE, model_type="llama", architectures=["LlamaForCausalLM"], tie_word_embeddings=True),
    # Llama 3.x: llama3 rope scaling (head_dim 8: frequencies in the kept, blended and stretched bands),
    # untied head.
    "llama3": dict(BASE, model_type="llama", architectures=["LlamaForCausalLM"], tie_word_embeddings=False,
                   rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 8.0, "original_max_position_embeddings": 256}),
    # Qwen2/2.5: q, k and v biases, tied.
    "qwen2": dict(BASE, model_type="qwen2", architectures=["Qwen2ForCausalLM"], tie_word_embeddings=True,
                  use_sliding_window=False),
    # Qwen3: per-head q/k RMSNorm, head_dim 16 ≠ hidden/heads, untied.
    "qwen3": dict(BASE, model_type="qwen3", architectures=["Qwen3ForCausalLM"], tie_word_embeddings=False,
                  head_dim=16, attention_bias=False, use_sliding_window=False),
    # Gemma 3 text (270M/1B-style): one KV head, head_dim 16 ≠ hidden/heads, a window of 4 positions that
    # the 6- and 10-token sequences cross, layers 0 and 1 local and 2 global (sliding_window_pattern 3),
    # query_pre_attn_scalar ≠ head_dim.
    "gemma3": dict(GEMMA3_TEXT, model_type="gemma3_text", architectures=["Gemma3ForCausalLM"],
                   sliding_window_pattern=3),
    # Gemma3ForConditionalGeneration's text model: config nested in text_config with layer_types (global
    # layer 1 between local 0 and 2), linear rope scaling on the global layer, attention and final-logit
    # soft-capping.
    "gemma3-mm": {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
                  "torch_dtype": "float32",
                  "text_config": dict(GEMMA3_TEXT, model_type="gemma3_text", attn_logit_softcapping=2.0,
                                      final_logit_softcapping=3.0, rope_scaling={"rope_type": "linear", "factor": 2.0},
                                      layer_types=["sliding_attention", "full_attention", "sliding_attention"])},
}

# Seeds by case, fixed so that adding a case leaves the others' fixtures as they were.
SEEDS = {"llama": 1000, "llama3": 1001, "qwen2": 1002, "qwen3": 1003, "gemma3": 1004, "gemma3-mm": 1005}


def write_safetensors(path, tensors, metadata=None):
    """Writes float32 tensors in the safetensors layout (sorted names, 8-byte aligned header)."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        t = tensors[name].detach().to(torch.float32).contiguous()
        data = struct.pack("<%df" % t.numel(), *t.flatten().tolist())
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    js = json.dumps(header, separators=(",", ":")).encode()
    js += b" " * (-len(js) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)) + js + b"".join(blobs))


def inv_freq(cfg, head_dim):
    """Rotary frequencies, with Llama 3's adjustment (as _compute_llama3_parameters)."""
    base = cfg["rope_theta"]
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    rs = cfg.get("rope_scaling")
    if not rs:
        return inv
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    low_wave, high_wave = old / low, old / high
    wave = 2 * math.pi / inv
    scaled = torch.where(wave > low_wave, inv / factor, inv)
    smooth = (old / wave - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wave < high_wave) * ~(wave > low_wave)
    return torch.where(medium, smoothed, scaled)


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def gemma_norm(x, w, eps):
    """Gemma3RMSNorm: in float32, times (1 + weight)."""
    x = x.float()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + w.float())


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Model:
    def __init__(self, cfg, gen):
        self.outer = cfg
        self.gemma = cfg["model_type"] in ("gemma3", "gemma3_text")
        if cfg["model_type"] == "gemma3":
            cfg = cfg["text_config"]
        self.cfg = cfg
        d, f, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
        self.heads, self.kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.hd = cfg.get("head_dim", d // self.heads)
        qkv_bias = cfg["model_type"] == "qwen2" or cfg.get("attention_bias", False)
        self.qk_norm = cfg["model_type"] in ("qwen3", "gemma3_text")
        shapes = {"q_proj": (self.heads * self.hd, d), "k_proj": (self.kv * self.hd, d),
                  "v_proj": (self.kv * self.hd, d), "o_proj": (d, self.heads * self.hd),
                  "gate_proj": (f, d), "up_proj": (f, d), "down_proj": (d, f)}
        self.shapes = shapes

        def randn(*shape, std=0.2):
            return torch.randn(*shape, generator=gen) * std

        # Gemma's norm weights are offsets from one.
        one = 0 if self.gemma else 1
        w = {"model.embed_tokens.weight": randn(v, d, std=0.5), "model.norm.weight": one + randn(d, std=0.1)}
        if not cfg["tie_word_embeddings"]:
            w["lm_head.weight"] = randn(v, d)
        for l in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % l
            w[p + "input_layernorm.weight"] = one + randn(d, std=0.1)
            w[p + "post_attention_layernorm.weight"] = one + randn(d, std=0.1)
            if self.gemma:
                w[p + "pre_feedforward_layernorm.weight"] = one + randn(d, std=0.1)
                w[p + "post_feedforward_layernorm.weight"] = one + randn(d, std=0.1)
            for m in MODULES:
                w[p + path(m) + ".weight"] = randn(*shapes[m])
                if qkv_bias and m in ("q_proj", "k_proj", "v_proj"):
                    w[p + path(m) + ".bias"] = randn(shapes[m][0], std=0.3)
            if self.qk_norm:
                w[p + "self_attn.q_norm.weight"] = one + randn(self.hd, std=0.2)
                w[p + "self_attn.k_norm.weight"] = one + randn(self.hd, std=0.2)
        self.w = w
        self.lora = {}
        for l in range(cfg["num_hidden_layers"]):
            for m in MODULES:
                out, inp = shapes[m]
                pre = "base_model.model.model.layers.%d.%s." % (l, path(m))
                self.lora[pre + "lora_A.weight"] = randn(RANK, inp, std=0.3)
                self.lora[pre + "lora_B.weight"] = randn(out, RANK, std=0.3)

    def matrices(self):
        """Names of the tensors the engine stores as bfloat16 (the 2-D weight matrices)."""
        return [n for n, t in self.w.items() if t.dim() == 2]

    def linear(self, w, lora, l, m, x):
        p = "model.layers.%d.%s." % (l, path(m))
        y = x @ w[p + "weight"].T
        if p + "bias" in w:
            y = y + w[p + "bias"]
        pre = "base_model.model." + p
        return y + (x @ lora[pre + "lora_A.weight"].T) @ lora[pre + "lora_B.weight"].T * (ALPHA / RANK)

    def stored(self):
        """The base model's tensors under the names its checkpoint has: a multimodal Gemma 3 keeps its text
        model under model.language_model. (transformers >= 4.52) beside the vision tower."""
        if self.outer["model_type"] != "gemma3":
            return self.w
        out = {"model.language_model." + n[len("model."):]: t for n, t in self.w.items()}
        out["model.vision_tower.vision_model.embeddings.patch_embedding.weight"] = torch.ones(4, 3, 2, 2)
        return out

    def gemma_forward(self, w, lora, seq):
        """Gemma3ForCausalLM's forward (eager attention), after transformers' modeling_gemma3."""
        cfg, eps = self.cfg, self.cfg["rms_norm_eps"]
        T, d = len(seq), cfg["hidden_size"]
        x = w["model.embed_tokens.weight"][torch.tensor(seq)] * torch.tensor(d ** 0.5, dtype=torch.float32)
        pos = torch.arange(T, dtype=torch.float32)
        local = dict(cfg, rope_theta=cfg["rope_local_base_freq"], rope_scaling=None)
        tables = {}
        for kind, c in (("global", cfg), ("local", local)):
            inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, self.hd, 2, dtype=torch.int64).float() / self.hd))
            rs = c.get("rope_scaling")
            if rs:
                inv = inv / rs["factor"]  # linear scaling
            emb = torch.cat((torch.outer(pos, inv),) * 2, dim=-1)
            tables[kind] = (emb.cos(), emb.sin())
        i, j = torch.arange(T).view(-1, 1), torch.arange(T).view(1, -1)
        causal = torch.zeros(T, T).masked_fill(j > i, float("-inf"))
        # transformers masks j <= i - sliding_window in local layers: a query sees i - j < sliding_window.
        window = causal.masked_fill(i - j >= cfg["sliding_window"], float("-inf"))
        types = cfg.get("layer_types") or ["sliding_attention" if (l + 1) % cfg["sliding_window_pattern"] else
                                           "full_attention" for l in range(cfg["num_hidden_layers"])]
        scaling = cfg["query_pre_attn_scalar"] ** -0.5
        for l in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % l
            is_local = types[l] == "sliding_attention"
            cos, sin = tables["local" if is_local else "global"]
            h = gemma_norm(x, w[p + "input_layernorm.weight"], eps)
            q = self.linear(w, lora, l, "q_proj", h).view(T, self.heads, self.hd)
            k = self.linear(w, lora, l, "k_proj", h).view(T, self.kv, self.hd)
            v = self.linear(w, lora, l, "v_proj", h).view(T, self.kv, self.hd)
            q = gemma_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = gemma_norm(k, w[p + "self_attn.k_norm.weight"], eps)
            q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            group = self.heads // self.kv
            k, v = k.repeat_interleave(group, dim=0), v.repeat_interleave(group, dim=0)
            s = q @ k.transpose(1, 2) * scaling
            if cfg.get("attn_logit_softcapping") is not None:
                c = cfg["attn_logit_softcapping"]
                s = torch.tanh(s / c) * c
            s = s + (window if is_local else causal)
            att = torch.softmax(s, dim=-1, dtype=torch.float32) @ v
            att = att.transpose(0, 1).reshape(T, self.heads * self.hd)
            x = x + gemma_norm(self.linear(w, lora, l, "o_proj", att), w[p + "post_attention_layernorm.weight"], eps)
            h = gemma_norm(x, w[p + "pre_feedforward_layernorm.weight"], eps)
            a = torch.nn.functional.gelu(self.linear(w, lora, l, "gate_proj", h), approximate="tanh") * \
                self.linear(w, lora, l, "up_proj", h)
            x = x + gemma_norm(self.linear(w, lora, l, "down_proj", a), w[p + "post_feedforward_layernorm.weight"], eps)
        x = gemma_norm(x, w["model.norm.weight"], eps)
        logits = x @ w["model.embed_tokens.weight"].T
        if cfg.get("final_logit_softcapping") is not None:
            c = cfg["final_logit_softcapping"]
            logits = torch.tanh(logits / c) * c
        return logits

    def forward(self, w, lora, seq):
        if self.gemma:
            return self.gemma_forward(w, lora, seq)
        cfg, eps = self.cfg, self.cfg["rms_norm_eps"]
        T = len(seq)
        x = w["model.embed_tokens.weight"][torch.tensor(seq)]
        freqs = torch.outer(torch.arange(T, dtype=torch.float32), inv_freq(cfg, self.hd))
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        mask = torch.full((T, T), float("-inf")).triu(1)
        for l in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % l
            h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
            q = self.linear(w, lora, l, "q_proj", h).view(T, self.heads, self.hd)
            k = self.linear(w, lora, l, "k_proj", h).view(T, self.kv, self.hd)
            v = self.linear(w, lora, l, "v_proj", h).view(T, self.kv, self.hd)
            if self.qk_norm:
                q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
                k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
            q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)  # [heads, T, hd]
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            group = self.heads // self.kv
            k, v = k.repeat_interleave(group, dim=0), v.repeat_interleave(group, dim=0)
            att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(self.hd) + mask, dim=-1) @ v
            att = att.transpose(0, 1).reshape(T, self.heads * self.hd)
            x = x + self.linear(w, lora, l, "o_proj", att)
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
            a = torch.nn.functional.silu(self.linear(w, lora, l, "gate_proj", h)) * self.linear(w, lora, l, "up_proj", h)
            x = x + self.linear(w, lora, l, "down_proj", a)
        x = rms_norm(x, w["model.norm.weight"], eps)
        head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
        return x @ head.T

    def run(self, w):
        """Logits of every position and the LoRA gradients of the mean next-token cross-entropy."""
        lora = {n: t.clone().requires_grad_(True) for n, t in self.lora.items()}
        logits = [self.forward(w, lora, s) for s in SEQS]
        loss = sum(torch.nn.functional.cross_entropy(lg[:-1], torch.tensor(s[1:]), reduction="sum")
                   for lg, s in zip(logits, SEQS)) / sum(len(s) - 1 for s in SEQS)
        loss.backward()
        return torch.cat(logits).detach(), loss.item(), {n: t.grad for n, t in lora.items()}


def path(m):
    return ("self_attn." if m in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp.") + m


def main():
    torch.set_num_threads(1)
    only = sys.argv[1:]
    for name, cfg in sorted(CASES.items()):
        if only and name not in only:
            continue
        gen = torch.Generator().manual_seed(SEEDS[name])
        model = Model(cfg, gen)
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f, indent=2, sort_keys=True)
            f.write("\n")
        write_safetensors(os.path.join(d, "model.safetensors"), model.stored(), {"format": "pt"})
        with open(os.path.join(d, "adapter_config.json"), "w") as f:
            json.dump({"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": RANK, "lora_alpha": ALPHA,
                       "lora_dropout": 0.0, "target_modules": MODULES, "bias": "none",
                       "base_model_name_or_path": name}, f, indent=2, sort_keys=True)
            f.write("\n")
        write_safetensors(os.path.join(d, "adapter_model.safetensors"), model.lora, {"format": "pt"})
        logits, loss, grads = model.run(model.w)
        rounded = dict(model.w)
        for n in model.matrices():
            rounded[n] = model.w[n].to(torch.bfloat16).to(torch.float32)
        logits16, loss16, grads16 = model.run(rounded)
        expected = {"logits": logits, "bf16.logits": logits16}
        for n, g in grads.items():
            expected["grad." + n] = g
            expected["bf16.grad." + n] = grads16[n]
        write_safetensors(os.path.join(d, "expected.safetensors"), expected, {"torch": torch.__version__})
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump({"seqs": SEQS, "loss": loss, "bf16_loss": loss16, "torch": torch.__version__}, f, indent=2)
            f.write("\n")
        size = sum(os.path.getsize(os.path.join(d, x)) for x in os.listdir(d))
        print("%s: loss %.6f (bf16 weights %.6f), %d bytes" % (name, loss, loss16, size), file=sys.stderr)


if __name__ == "__main__":
    main()
