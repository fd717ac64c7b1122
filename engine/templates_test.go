package engine

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/internal/testutil/hfsnapshot"
)

// templateFamily is one family of the chat-template corpus (engine/chat/hftemplate/testdata/models)
// whose architecture the engine loads, as a tiny random-weight snapshot with the family's real tokenizer.
type templateFamily struct {
	name, template string
	tok            hfsnapshot.Tokenizer
	cfg            model.Config
	// end closes an assistant turn; last is what the template writes before the content of a conversation's
	// last assistant turn (Qwen3's empty think block).
	end, last string
}

func templateFamilies() []templateFamily {
	smol := hfsnapshot.TinyLlama3
	smol.VocabSize = hfsnapshot.Qwen3Vocab
	qwen2 := hfsnapshot.TinyQwen3
	qwen2.Arch, qwen2.QKNorm = "qwen2", false
	qwen2.Bias[model.ModQ], qwen2.Bias[model.ModK], qwen2.Bias[model.ModV] = true, true, true
	gemma3 := model.Config{Arch: "gemma3_text", VocabSize: 262144, Dim: 32, Layers: 2, Heads: 4, KVHeads: 1, HeadDim: 8,
		Hidden: 64, MaxSeqLen: 4096, RopeTheta: 1000000, RopeLocalTheta: 10000, NormEps: 1e-6, TiedEmbeddings: true,
		QKNorm: true, NormPlusOne: true, SandwichNorm: true, EmbedScale: true, GeluTanh: true, QueryScalar: 8,
		SlidingPattern: 2, SlidingWindow: 16}
	const llamaEnd = "<|eot_id|>"
	return []templateFamily{
		{"llama3 original", "llama3", hfsnapshot.Llama3Tokenizer, hfsnapshot.TinyLlama3, llamaEnd, ""},
		{"llama3 guarded", "llama3-guarded", hfsnapshot.Llama3Tokenizer, hfsnapshot.TinyLlama3, llamaEnd, ""},
		{"llama3.1", "llama3.1", hfsnapshot.Llama3Tokenizer, hfsnapshot.TinyLlama3, llamaEnd, ""},
		{"llama3.2", "llama3.2", hfsnapshot.Llama3Tokenizer, hfsnapshot.TinyLlama3, llamaEnd, ""},
		// SmolLM2's template on a llama body with Qwen3's tokenizer, which has its <|im_start|> and <|im_end|>.
		{"smollm2", "smollm2", hfsnapshot.Qwen3Tokenizer, smol, "<|im_end|>", ""},
		{"qwen2.5", "qwen2.5", hfsnapshot.Qwen3Tokenizer, qwen2, "<|im_end|>", ""},
		{"qwen3", "qwen3", hfsnapshot.Qwen3Tokenizer, hfsnapshot.TinyQwen3, "<|im_end|>", "<think>\n\n</think>\n\n"},
		{"gemma3", "gemma3", hfsnapshot.Gemma3Tokenizer, gemma3, "<end_of_turn>", ""},
	}
}

func openTemplateSnapshot(t *testing.T, f templateFamily) *Base {
	t.Helper()
	dir := t.TempDir()
	hfsnapshot.WriteTemplateSnapshot(t, dir, f.cfg, 5, f.tok, f.template)
	b, err := OpenSnapshot("test/"+f.template, dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// trainedText decodes the trainable tokens of s.
func trainedText(b *Base, s Sequence) string {
	var ids []int
	for i, id := range s.Tokens {
		if s.Trainable[i] {
			ids = append(ids, id)
		}
	}
	return b.Tokenizer().Decode(ids)
}

// sampledTurn turns a completion into the assistant message an RL client sends back: its text and the
// sampled ids with their logprobs.
func sampledTurn(b *Base, c Completion) Message {
	m := Message{Role: "assistant", Content: c.Text, Trainable: true}
	for _, tk := range c.Tokens {
		m.Tokens, m.Logprobs = append(m.Tokens, tk.ID), append(m.Logprobs, tk.Logprob)
	}
	return m
}

// TestTemplateFamiliesTrain: for every family of the template corpus whose architecture the engine loads,
// an SFT step on a multi-turn conversation with a system prompt trains exactly the assistant answers and
// their end markers, and an RL step trains on rollouts sampled from the snapshot's own prompt with the
// sampled ids and logprobs verbatim.
func TestTemplateFamiliesTrain(t *testing.T) {
	for _, f := range templateFamilies() {
		t.Run(f.name, func(t *testing.T) {
			b := openTemplateSnapshot(t, f)
			ctx := context.Background()
			convo := []Message{{Role: "system", Content: "Answer in one word."}, {Role: "user", Content: "Largest planet?"},
				{Role: "assistant", Content: "Jupiter.", Trainable: true}, {Role: "user", Content: "And the smallest?"},
				{Role: "assistant", Content: "Mercury.", Trainable: true}}
			seq, err := b.RenderTraining(convo, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := trainedText(b, seq), "Jupiter."+f.end+f.last+"Mercury."+f.end; got != want {
				t.Fatalf("SFT trains %q, want %q", got, want)
			}
			a, err := b.NewAdapter(DefaultLoRAConfig(), 1)
			if err != nil {
				t.Fatal(err)
			}
			tr := NewTrainer(b, a, nil)
			st, err := tr.SFTStep(ctx, []Sequence{seq}, DefaultAdamWConfig())
			if err != nil || !(st["loss"] > 0) || math.IsInf(st["loss"], 0) {
				t.Fatalf("SFT step: %v %v", st, err)
			}

			prompt, err := b.RenderPrompt(convo[:4], nil)
			if err != nil {
				t.Fatal(err)
			}
			outs, err := b.Sample(ctx, a, prompt, SampleParams{MaxTokens: 4, N: 2, Seed: 3, Temperature: 1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var batch []RLSample
			for k, c := range outs {
				turn := sampledTurn(b, c)
				s, err := b.RenderTraining(append(slices.Clone(convo[:4]), turn), nil)
				if err != nil {
					t.Fatalf("rollout %d (%q): %v", k, c.Text, err)
				}
				n := len(prompt)
				if !slices.Equal(s.Tokens[:n], prompt) || !slices.Equal(s.Tokens[n:n+len(turn.Tokens)], turn.Tokens) ||
					s.OldLogprobs[n] != turn.Logprobs[0] || !s.Trainable[n] || s.Trainable[n-1] {
					t.Fatalf("rollout %d: the training sequence is not the prompt then the sampled ids", k)
				}
				batch = append(batch, RLSample{Sequence: s, Advantage: float32(2*k - 1)})
			}
			st, err = tr.RLStep(ctx, batch, RLConfig{LossFn: "cispo"}, DefaultAdamWConfig())
			if err != nil || math.IsNaN(st["loss"]) {
				t.Fatalf("RL step: %v %v", st, err)
			}
		})
	}
}

// TestLlama3OriginalTemplateRolloutsTrain is issue 22's user, at engine level: a snapshot with Llama 3's
// tokenizer and Meta-Llama-3-8B-Instruct's original template (it trims every message and always appends
// the assistant header). Rollouts sampled from the prompts the template renders, including a second
// sampled turn after a first, all train as RL samples with their sampled ids and logprobs, and plain
// assistant texts train by SFT with exactly their trimmed text and <|eot_id|> carrying loss.
func TestLlama3OriginalTemplateRolloutsTrain(t *testing.T) {
	f := templateFamilies()[0]
	b := openTemplateSnapshot(t, f)
	ctx := context.Background()
	a, err := b.NewAdapter(DefaultLoRAConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTrainer(b, a, nil)
	opt := DefaultAdamWConfig()
	opt.LearningRate = 1e-2

	sample := func(msgs []Message, n int, seed int64) []Completion {
		t.Helper()
		prompt, err := b.RenderPrompt(msgs, nil)
		if err != nil {
			t.Fatal(err)
		}
		outs, err := b.Sample(ctx, a, prompt, SampleParams{MaxTokens: 6, N: n, Seed: seed, Temperature: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return outs
	}
	var rewards [][]float64
	var seqs [][]Sequence
	for p, q := range []string{"List the inner planets.", "Name a gas giant."} {
		msgs := []Message{{Role: "system", Content: "You are terse."}, {Role: "user", Content: q}}
		var rs []float64
		var ss []Sequence
		for k, c := range sample(msgs, 4, int64(10+p)) {
			turns := append(slices.Clone(msgs), sampledTurn(b, c))
			if k == 0 { // a second turn sampled after the first: both are choices of one trajectory
				turns = append(turns, Message{Role: "user", Content: " Why? "})
				second := sample(turns, 1, 20)[0]
				turns = append(turns, sampledTurn(b, second))
			}
			s, err := b.RenderTraining(turns, nil)
			if err != nil {
				t.Fatalf("prompt %d rollout %d: %v", p, k, err)
			}
			var sampled []int
			for _, m := range turns {
				sampled = append(sampled, m.Tokens...)
			}
			if want := len(sampled) + len(turns)/2; s.NumTrainable() != want {
				t.Fatalf("prompt %d rollout %d: %d trainable tokens, want the %d sampled ids and an <|eot_id|> per turn", p, k, s.NumTrainable(), len(sampled))
			}
			var trained []int
			for i, id := range s.Tokens {
				if s.Trainable[i] && b.Tokenizer().Decode([]int{id}) != f.end {
					trained = append(trained, id)
				}
			}
			if !slices.Equal(trained, sampled) {
				t.Fatalf("prompt %d rollout %d: trains %v, sampled %v", p, k, trained, sampled)
			}
			rs, ss = append(rs, letterShare(c.Text)), append(ss, s)
		}
		rewards, seqs = append(rewards, rs), append(seqs, ss)
	}
	adv := Advantages(rewards, true, 0)
	var batch []RLSample
	for g := range seqs {
		for i, s := range seqs[g] {
			batch = append(batch, RLSample{Sequence: s, Advantage: float32(adv[g][i])})
		}
	}
	before := adapterBits(a)
	if st, err := tr.RLStep(ctx, batch, RLConfig{LossFn: "cispo"}, opt); err != nil || math.IsNaN(st["loss"]) {
		t.Fatalf("RL step on %d rollouts: %v %v", len(batch), st, err)
	}
	if equalBits(before, adapterBits(a)) {
		t.Fatal("the RL step left the adapter unchanged")
	}

	sft, err := b.RenderTraining([]Message{{Role: "system", Content: "You are terse."},
		{Role: "user", Content: "List the inner planets."}, {Role: "assistant", Content: " Mercury, Venus, Earth.\n", Trainable: true},
		{Role: "user", Content: "And the outer ones?"}, {Role: "assistant", Content: "Jupiter, Saturn, Uranus, Neptune.", Trainable: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := trainedText(b, sft); got != "Mercury, Venus, Earth.<|eot_id|>Jupiter, Saturn, Uranus, Neptune.<|eot_id|>" {
		t.Fatalf("SFT trains %q", got)
	}
	var losses []float64
	for range 3 {
		st, err := tr.SFTStep(ctx, []Sequence{sft}, opt)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, st["loss"])
	}
	if !(losses[2] < losses[0]) {
		t.Fatalf("SFT losses %v do not fall", losses)
	}
}

// letterShare is a toy reward for rollouts of a BPE vocabulary: the share of ASCII letters in the text.
func letterShare(text string) float64 {
	n := 0
	for _, r := range text {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			n++
		}
	}
	return float64(n) / float64(max(1, len(text)))
}
