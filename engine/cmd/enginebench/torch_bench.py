"""The PyTorch side of `enginebench -compare`: the same work as the engine's side, in PyTorch (Debian's
python3-torch 1.13, CPU). A Llama decoder written out here (no transformers package; with model_type
gemma3_text, Gemma 3's: (1 + w) q/k norms and norms after each sublayer, embeddings times sqrt(hidden), a
GeGLU MLP, query_pre_attn_scalar, sliding-window local layers with their own rope base), random weights, LoRA
on the seven projections, the same losses and the same optimizer; one JSON line per measurement on stdout.
`--work rollouts` is the PyTorch side of `rolloutbench` (`make bench-rollouts`): G prompts sampled N times
each, decoded together as one batch.

Written to be a fair baseline rather than a strawman: the output head runs only on the rows that are
trained (as the engine does), decoding writes into a preallocated KV cache (no torch.cat per token), grouped
KV heads are attended without copying them, and training uses gradient accumulation over micro-batches
(--micro sequences each) as one would to fit memory.
"""

import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F


def rms_norm(x, g, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g


class LoRALinear(torch.nn.Module):
    """y = x·Wᵀ + (α/r)·(x·Aᵀ)·Bᵀ with W frozen; A Kaiming-uniform, B zero (PEFT's initialisation)."""

    def __init__(self, out_f, in_f, rank, alpha, bias=False):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(out_f, in_f) * 0.02, requires_grad=False)
        self.bias = torch.nn.Parameter(torch.zeros(out_f), requires_grad=False) if bias else None
        self.rank = rank
        if rank:
            bound = 1 / math.sqrt(in_f)
            self.a = torch.nn.Parameter(torch.empty(rank, in_f).uniform_(-bound, bound))
            self.b = torch.nn.Parameter(torch.zeros(out_f, rank))
            self.scale = alpha / rank

    def forward(self, x):
        y = F.linear(x, self.weight, self.bias)
        if self.rank:
            y = y + F.linear(F.linear(x, self.a), self.b) * self.scale
        return y


def rope_tables(theta, hd, n):
    half = hd // 2
    inv = theta ** (-torch.arange(half, dtype=torch.float64) * 2 / hd)
    ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cat([ang.cos(), ang.cos()], -1).float(), torch.cat([ang.sin(), ang.sin()], -1).float()


class Llama(torch.nn.Module):
    def __init__(self, c, rank, alpha):
        super().__init__()
        self.c = c
        d, hd = c["hidden_size"], c["head_dim"]
        self.gemma = c.get("model_type") == "gemma3_text"
        self.embed = torch.nn.Parameter(torch.randn(c["vocab_size"], d) * 0.02, requires_grad=False)
        self.layers = torch.nn.ModuleList()
        for _ in range(c["num_hidden_layers"]):
            ly = torch.nn.Module()
            ly.attn_norm = torch.nn.Parameter(torch.ones(d), requires_grad=False)
            ly.mlp_norm = torch.nn.Parameter(torch.ones(d), requires_grad=False)
            qd, kd = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
            qkv_bias = c.get("model_type") == "qwen2"  # Qwen2's q/k/v projections add a bias
            ly.q = LoRALinear(qd, d, rank, alpha, qkv_bias)
            ly.k = LoRALinear(kd, d, rank, alpha, qkv_bias)
            ly.v = LoRALinear(kd, d, rank, alpha, qkv_bias)
            ly.o = LoRALinear(d, qd, rank, alpha)
            ly.gate = LoRALinear(c["intermediate_size"], d, rank, alpha)
            ly.up = LoRALinear(c["intermediate_size"], d, rank, alpha)
            ly.down = LoRALinear(d, c["intermediate_size"], rank, alpha)
            if self.gemma:  # Gemma3RMSNorm's gains are 1 + w: ones here, the same work
                ly.q_norm = torch.nn.Parameter(torch.ones(hd), requires_grad=False)
                ly.k_norm = torch.nn.Parameter(torch.ones(hd), requires_grad=False)
                ly.post_attn_norm = torch.nn.Parameter(torch.ones(d), requires_grad=False)
                ly.post_mlp_norm = torch.nn.Parameter(torch.ones(d), requires_grad=False)
            self.layers.append(ly)
        self.norm = torch.nn.Parameter(torch.ones(d), requires_grad=False)
        cos, sin = rope_tables(c["rope_theta"], hd, c["max_position_embeddings"])
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        if self.gemma:
            cos, sin = rope_tables(c["rope_local_base_freq"], hd, c["max_position_embeddings"])
            self.register_buffer("cos_local", cos, persistent=False)
            self.register_buffer("sin_local", sin, persistent=False)

    def local(self, li):
        """Gemma 3: every sliding_window_pattern-th layer is global, the others local."""
        return self.gemma and (li + 1) % self.c["sliding_window_pattern"] != 0

    def rope(self, x, pos, local=False):  # x [B, heads, T, hd]; rotate-half layout as Hugging Face's Llama
        cos, sin = (self.cos_local, self.sin_local) if local else (self.cos, self.sin)
        cos, sin = cos[pos], sin[pos]
        h = x.shape[-1] // 2
        rot = torch.cat([-x[..., h:], x[..., :h]], -1)
        return x * cos + rot * sin

    def hidden(self, ids, cache=None, start=0):
        """Final hidden states of ids [B, T]; with cache (per layer [K, V] of [B, kvh, max, hd]) the new keys
        and values are written at start.. and attention covers the cache up to start+T."""
        c = self.c
        B, T = ids.shape
        H, KV, hd, eps = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], c["rms_norm_eps"]
        g = H // KV
        pos = torch.arange(start, start + T)
        x = self.embed[ids]
        mask = None
        if T > 1:
            mask = torch.full((T, start + T), float("-inf")).triu(start + 1)
        scale = 1 / math.sqrt(hd)
        if self.gemma:
            x = x * torch.tensor(c["hidden_size"] ** 0.5)
            scale = c["query_pre_attn_scalar"] ** -0.5
            # Local layers see the last sliding_window positions (i - j < window), when a pass reaches past it.
            i, j = pos[:, None], torch.arange(start + T)[None, :]
            far = (i - j) >= c["sliding_window"]
            local_mask = None
            if far.any():
                local_mask = torch.zeros(T, start + T).masked_fill(far | (j > i), float("-inf"))
        for li, ly in enumerate(self.layers):
            lm = mask
            if self.local(li) and local_mask is not None:
                lm = local_mask
            h = rms_norm(x, ly.attn_norm, eps)
            q, k = ly.q(h).view(B, T, H, hd), ly.k(h).view(B, T, KV, hd)
            if self.gemma:
                q, k = rms_norm(q, ly.q_norm, eps), rms_norm(k, ly.k_norm, eps)
            q = self.rope(q.transpose(1, 2), pos, self.local(li))
            k = self.rope(k.transpose(1, 2), pos, self.local(li))
            v = ly.v(h).view(B, T, KV, hd).transpose(1, 2)
            if cache is not None:
                cache[li][0][:, :, start:start + T] = k
                cache[li][1][:, :, start:start + T] = v
                k, v = cache[li][0][:, :, :start + T], cache[li][1][:, :, :start + T]
            # Grouped heads: view q as [B, KV, g·T, hd] so each KV head serves its g query heads, no copies.
            qg = q.reshape(B, KV, g * T, hd)
            s = torch.matmul(qg, k.transpose(-1, -2)) * scale
            if lm is not None:
                s = s.view(B, KV, g, T, -1) + lm
                s = s.view(B, KV, g * T, -1)
            a = torch.matmul(torch.softmax(s, -1), v).view(B, H, T, hd)
            o = ly.o(a.transpose(1, 2).reshape(B, T, H * hd))
            if self.gemma:
                x = x + rms_norm(o, ly.post_attn_norm, eps)
                h = rms_norm(x, ly.mlp_norm, eps)
                x = x + rms_norm(ly.down(F.gelu(ly.gate(h), approximate="tanh") * ly.up(h)), ly.post_mlp_norm, eps)
                continue
            x = x + o
            h = rms_norm(x, ly.mlp_norm, eps)
            x = x + ly.down(F.silu(ly.gate(h)) * ly.up(h))
        return rms_norm(x, self.norm, eps)

    def logits(self, h):
        return F.linear(h, self.embed)


def batch(n, T, V, gen):
    return torch.randint(0, V, (n, T), generator=gen)


def train_step(m, opt, ids, trainable, work, adv, micro):
    """One optimizer step over ids [n, T] whose last `trainable` tokens get loss, in micro-batches."""
    n, T = ids.shape
    N = n * trainable
    opt.zero_grad(set_to_none=True)
    for lo in range(0, n, micro):
        x = ids[lo:lo + micro]
        h = m.hidden(x)[:, T - trainable - 1:T - 1]  # rows predicting the trainable tokens
        logp = torch.log_softmax(m.logits(h).float(), -1)
        lp = logp.gather(-1, x[:, T - trainable:, None]).squeeze(-1)
        if work == "sft":
            loss = -lp.sum() / N
        else:  # CISPO, token level: −sg(clip(ρ, 1−ε, 1+ε_h))·A·logp with ε = 1, ε_h = 4
            old = torch.full_like(lp, -math.log(m.c["vocab_size"]))
            ratio = torch.exp(lp.detach() - old).clamp(0, 5)
            loss = -(ratio * adv[lo:lo + micro, None] * lp).sum() / N
        loss.backward()
    torch.nn.utils.clip_grad_norm_([p for p in m.parameters() if p.requires_grad], 1.0)
    opt.step()


def rollouts(m, a, gen, out):
    """G prompts of --prompt random tokens, each sampled N times (temperature 1, with the sampled tokens'
    logprobs) for --decode tokens: the G prompts are prefilled together once and their keys and values
    copied into the N rows of their group, as a server sharing a group's prompt would; then the G·N rows
    decode as one batch in a preallocated KV cache. Timed from the prefill to the last token."""
    c = m.c
    KV, hd, V = c["num_key_value_heads"], c["head_dim"], c["vocab_size"]
    G, N, P, S = a.groups, a.n, a.prompt, a.decode
    B = G * N

    def new_cache(b, n):
        return [[torch.empty(b, KV, n, hd), torch.empty(b, KV, n, hd)] for _ in m.layers]

    def sample(logits):
        logp = torch.log_softmax(logits.float(), -1)
        nxt = torch.multinomial(logp.exp(), 1, generator=gen)
        return nxt, logp.gather(-1, nxt)

    with torch.no_grad():
        warm = new_cache(B, 9)  # warm-up: a short prefill and one step at the full batch
        sample(m.logits(m.hidden(batch(B, 8, V, gen), warm)[:, -1]))
        m.logits(m.hidden(batch(B, 1, V, gen), warm, 8)[:, -1])
        prompts = batch(G, P, V, gen)
        t0 = time.perf_counter()
        pre = new_cache(G, P)
        logits = m.logits(m.hidden(prompts, pre)[:, -1]).repeat_interleave(N, 0)
        cache = new_cache(B, P + S)
        for layer, src in zip(cache, pre):
            for kv, p in zip(layer, src):
                kv[:, :, :P] = p.repeat_interleave(N, 0)
        nxt, _ = sample(logits)
        t1 = time.perf_counter()
        for s in range(S - 1):
            nxt, _ = sample(m.logits(m.hidden(nxt, cache, P + s)[:, -1]))
        t2 = time.perf_counter()
    out(work="rollouts", batch=B, tokens=B * S, seconds=t2 - t0, prefill_seconds=t1 - t0, steps=S - 1,
        decode_seconds=t2 - t1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True, help="config.json of the shape (JSON text)")
    ap.add_argument("--work", choices=["rl", "sft", "infer", "rollouts"], required=True)
    ap.add_argument("--seqs", type=int, default=32)
    ap.add_argument("--len", type=int, default=128)
    ap.add_argument("--trainable", type=int, default=96)
    ap.add_argument("--micro", type=int, default=8)
    ap.add_argument("--steps", type=int, default=3, help="rl, sft: measured steps, each on new sequences (the median is reported)")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--decode", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--groups", type=int, default=4, help="rollouts: distinct prompts")
    ap.add_argument("--n", type=int, default=8, help="rollouts: samples of each prompt")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    c = json.loads(a.config)
    c.setdefault("head_dim", c["hidden_size"] // c["num_attention_heads"])
    gen = torch.Generator().manual_seed(2)
    V = c["vocab_size"]

    def out(**kw):
        print(json.dumps(dict(system="pytorch", **kw)), flush=True)

    if a.work in ("rl", "sft"):
        m = Llama(c, 8, 16)
        opt = torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=1e-4, weight_decay=0)
        adv = torch.randn(a.seqs, generator=gen)
        # warm-up: a step of as many other sequences, as the engine's (enginebench's trainWork)
        train_step(m, opt, batch(a.seqs, a.len, V, gen), a.trainable, a.work, adv, a.micro)
        times = []
        for _ in range(max(1, a.steps)):
            ids = batch(a.seqs, a.len, V, gen)
            t = time.perf_counter()
            train_step(m, opt, ids, a.trainable, a.work, adv, a.micro)
            times.append(time.perf_counter() - t)
        out(work=a.work, tokens=a.seqs * a.len, seconds=statistics.median(times), step_seconds=times, seqs=a.seqs)
        return
    m = Llama(c, 0, 0)
    if a.work == "rollouts":
        rollouts(m, a, gen, out)
        return
    KV, hd = c["num_key_value_heads"], c["head_dim"]
    with torch.no_grad():
        def new_cache(b, n):
            return [[torch.empty(b, KV, n, hd), torch.empty(b, KV, n, hd)] for _ in m.layers]

        prompt = batch(1, a.prompt, V, gen)
        m.logits(m.hidden(prompt[:, :8], new_cache(1, 8))[:, -1])  # warm-up
        cache = new_cache(1, a.prompt + a.decode)
        t = time.perf_counter()
        logits = m.logits(m.hidden(prompt, cache)[:, -1])  # prefill: the last position's logits only
        el = time.perf_counter() - t
        out(work="prefill", batch=1, tokens=a.prompt, seconds=el)
        for b in (1, 8):
            one = new_cache(1, a.prompt)
            logits = m.logits(m.hidden(prompt, one)[:, -1])
            cache = new_cache(b, a.prompt + a.decode)
            for layer, src in zip(cache, one):  # the prompt's keys/values into every row of the batch
                for kv, pre in zip(layer, src):
                    kv[:, :, :a.prompt] = pre
            nxt = logits.argmax(-1).expand(b)[:, None].contiguous()
            t = time.perf_counter()
            for s in range(a.decode):
                logits = m.logits(m.hidden(nxt, cache, a.prompt + s)[:, -1])
                nxt = logits.argmax(-1)[:, None]
            el = time.perf_counter() - t
            out(work="decode", batch=b, tokens=b * a.decode, seconds=el)


if __name__ == "__main__":
    main()
