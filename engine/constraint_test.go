package engine

import (
	"context"
	"testing"
)

func constraintPrompt(t *testing.T, b *Base) []int {
	t.Helper()
	p, err := b.RenderPrompt([]Message{{Role: "user", Content: "Answer in JSON."}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// scriptConstraint allows exactly the tokens of script, then only stop (the end-of-turn token).
type scriptConstraint struct {
	script []int
	stop   int
	pos    int
}

func (c *scriptConstraint) Allow(mask []bool) {
	for i := range mask {
		mask[i] = false
	}
	if c.pos < len(c.script) {
		mask[c.script[c.pos]] = true
	} else {
		mask[c.stop] = true
	}
}

func (c *scriptConstraint) Advance(int) { c.pos++ }

// TestSampleConstraintForcesTokens: a constraint decides the output, greedy or sampled, while the reported
// logprobs stay those of the unconstrained model.
func TestSampleConstraintForcesTokens(t *testing.T) {
	b := tinyBase(t, 3)
	prompt := constraintPrompt(t, b)
	want := b.Tokenizer().Encode(`{"ok":true}`)
	stop := b.StopTokens()[0]
	for _, temp := range []float32{0, 1} {
		p := SampleParams{Temperature: temp, TopP: 0.9, TopK: 5, Seed: 7, N: 3, MaxTokens: 40,
			Constraint: func(int) Constraint { return &scriptConstraint{script: want, stop: stop} }}
		out, err := b.Sample(context.Background(), nil, prompt, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range out {
			if c.Text != `{"ok":true}` || c.FinishReason != "stop" {
				t.Fatalf("temperature %g: completion %q (%s), want the script then stop", temp, c.Text, c.FinishReason)
			}
		}
		// The first token's logprob is the model's, not the constrained distribution's (which would be 0).
		free, err := b.Sample(context.Background(), nil, prompt, SampleParams{MaxTokens: 1, TopLogprobs: 20}, nil)
		if err != nil {
			t.Fatal(err)
		}
		lp := out[0].Tokens[0].Logprob
		if lp >= 0 {
			t.Fatalf("forced token logprob %g, want the unconstrained model's (< 0)", lp)
		}
		for _, alt := range free[0].Tokens[0].Top {
			if alt.ID == want[0] && alt.Logprob != lp {
				t.Fatalf("forced token logprob %g, unconstrained %g", lp, alt.Logprob)
			}
		}
	}
}

// allowNothing never allows a token: the sampler must ignore it rather than stall.
type allowNothing struct{}

func (allowNothing) Allow(mask []bool) {
	for i := range mask {
		mask[i] = false
	}
}
func (allowNothing) Advance(int) {}

func TestSampleConstraintAllowingNothingIsIgnored(t *testing.T) {
	b := tinyBase(t, 3)
	prompt := constraintPrompt(t, b)
	p := SampleParams{Temperature: 1, Seed: 9, MaxTokens: 8}
	ref, err := b.Sample(context.Background(), nil, prompt, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Constraint = func(int) Constraint { return allowNothing{} }
	got, err := b.Sample(context.Background(), nil, prompt, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Text != ref[0].Text {
		t.Fatalf("with an empty constraint %q, without %q", got[0].Text, ref[0].Text)
	}
}
