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

Run by `make torch-fixtures`; engine/torchref's TestTorchParity compares the engine with these files.
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
}


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


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Model:
    def __init__(self, cfg, gen):
        self.cfg = cfg
        d, f, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
        self.heads, self.kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.hd = cfg.get("head_dim", d // self.heads)
        qkv_bias = cfg["model_type"] == "qwen2" or cfg.get("attention_bias", False)
        self.qk_norm = cfg["model_type"] == "qwen3"
        shapes = {"q_proj": (self.heads * self.hd, d), "k_proj": (self.kv * self.hd, d),
                  "v_proj": (self.kv * self.hd, d), "o_proj": (d, self.heads * self.hd),
                  "gate_proj": (f, d), "up_proj": (f, d), "down_proj": (d, f)}
        self.shapes = shapes

        def randn(*shape, std=0.2):
            return torch.randn(*shape, generator=gen) * std

        w = {"model.embed_tokens.weight": randn(v, d, std=0.5), "model.norm.weight": 1 + randn(d, std=0.1)}
        if not cfg["tie_word_embeddings"]:
            w["lm_head.weight"] = randn(v, d)
        for l in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % l
            w[p + "input_layernorm.weight"] = 1 + randn(d, std=0.1)
            w[p + "post_attention_layernorm.weight"] = 1 + randn(d, std=0.1)
            for m in MODULES:
                w[p + path(m) + ".weight"] = randn(*shapes[m])
                if qkv_bias and m in ("q_proj", "k_proj", "v_proj"):
                    w[p + path(m) + ".bias"] = randn(shapes[m][0], std=0.3)
            if self.qk_norm:
                w[p + "self_attn.q_norm.weight"] = 1 + randn(self.hd, std=0.2)
                w[p + "self_attn.k_norm.weight"] = 1 + randn(self.hd, std=0.2)
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

    def forward(self, w, lora, seq):
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
    for seed, (name, cfg) in enumerate(sorted(CASES.items())):
        gen = torch.Generator().manual_seed(1000 + seed)
        model = Model(cfg, gen)
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f, indent=2, sort_keys=True)
            f.write("\n")
        write_safetensors(os.path.join(d, "model.safetensors"), model.w, {"format": "pt"})
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
