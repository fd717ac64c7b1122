package pretrain

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"unicode"

	"github.com/trainyard/trainyard/engine/chat"
	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/sample"
	"github.com/trainyard/trainyard/engine/tokenizer"
)

// EvalTask is a held-out probe of one skill with a programmatic check (the same kind of reward an RL demo
// uses). Prompts come from the same generators as the training data, with a separate seed.
type EvalTask struct {
	Name string
	// Draw returns the conversation, the tools on offer and the check of a reply.
	Draw func(r *rand.Rand) ([]chat.Message, []chat.Tool, func(reply string) bool)
}

// EvalTasks are the probes reported for the built-in model.
var EvalTasks = []EvalTask{
	{"arithmetic", func(r *rand.Rand) ([]chat.Message, []chat.Tool, func(string) bool) {
		q, ans := ArithmeticQuestion(r)
		return user(q), nil, func(s string) bool { return strings.TrimSpace(s) == fmt.Sprint(ans) }
	}},
	{"arithmetic_1digit", func(r *rand.Rand) ([]chat.Message, []chat.Tool, func(string) bool) {
		q, ans := DigitQuestion(r)
		return user(q), nil, func(s string) bool { return strings.TrimSpace(s) == fmt.Sprint(ans) }
	}},
	{"starts_with", func(r *rand.Rand) ([]chat.Message, []chat.Tool, func(string) bool) {
		c := pick(r, commonWords)[0]
		return user(fmt.Sprintf("Say a word that starts with %c.", c)), nil, func(s string) bool {
			s = strings.TrimSpace(s)
			return len(s) > 0 && unicode.ToLower(rune(s[0])) == rune(c)
		}
	}},
	{"uppercase", func(r *rand.Rand) ([]chat.Message, []chat.Tool, func(string) bool) {
		q, _ := fact(r)
		return user("Answer in uppercase: " + q), nil, func(s string) bool {
			return strings.TrimSpace(s) != "" && s == strings.ToUpper(s) && strings.IndexFunc(s, unicode.IsLetter) >= 0
		}
	}},
	{"three_words", func(r *rand.Rand) ([]chat.Message, []chat.Tool, func(string) bool) {
		return user(fmt.Sprintf("Reply with exactly three words: describe a %s.", pick(r, nouns))), nil,
			func(s string) bool { return len(strings.Fields(s)) == 3 }
	}},
	{"tool_call", func(r *rand.Rand) ([]chat.Message, []chat.Tool, func(string) bool) {
		perm := r.Perm(len(toolCatalog))[:1+r.Intn(3)]
		var tools []chat.Tool
		for _, i := range perm {
			tools = append(tools, toolCatalog[i].def)
		}
		spec := toolCatalog[perm[r.Intn(len(perm))]]
		q, args := spec.request(r)
		want, _ := json.Marshal(args)
		return user(q), tools, func(s string) bool {
			_, calls := chat.ParseToolCalls(s)
			if len(calls) != 1 || calls[0].Name != spec.def.Name {
				return false
			}
			var got map[string]any
			if json.Unmarshal([]byte(calls[0].Arguments), &got) != nil {
				return false
			}
			g, _ := json.Marshal(got)
			return string(g) == string(want)
		}
	}},
	{"facts", func(r *rand.Rand) ([]chat.Message, []chat.Tool, func(string) bool) {
		q, a := fact(r)
		return user(q), nil, func(s string) bool { return strings.TrimSpace(s) == a }
	}},
}

func user(q string) []chat.Message { return []chat.Message{{Role: "user", Content: q}} }

// ArithmeticQuestion draws an arithmetic question like the training data's and its correct answer.
func ArithmeticQuestion(r *rand.Rand) (string, int) {
	var a, b, ans int
	var op string
	switch r.Intn(3) {
	case 0:
		a, b, op = r.Intn(51), r.Intn(51), "+"
		ans = a + b
	case 1:
		a = r.Intn(51)
		b = r.Intn(a + 1)
		op, ans = "-", a-b
	default:
		a, b, op = r.Intn(13), r.Intn(13), "*"
		ans = a * b
	}
	return fmt.Sprintf("What is %d%s%d?", a, op, b), ans
}

// Evaluate samples n prompts per task (one completion each, at the given temperature; seeds fixed) and
// returns the fraction that pass each task's check.
func Evaluate(ctx context.Context, w *model.Weights, lora *model.LoRA, n int, temperature float32, seed int64) (map[string]float64, error) {
	tok := tokenizer.New()
	tmpl := chat.NewTemplate(tok)
	out := map[string]float64{}
	for ti, task := range EvalTasks {
		r := rand.New(rand.NewSource(seed + int64(ti)))
		ok := 0
		for i := 0; i < n; i++ {
			msgs, tools, check := task.Draw(r)
			prompt, err := tmpl.RenderPrompt(msgs, tools)
			if err != nil {
				return nil, err
			}
			cs, err := sample.Run(ctx, w, lora, tok, prompt, sample.Params{Temperature: temperature, MaxTokens: 96,
				Seed: seed*7919 + int64(i)}, nil)
			if err != nil {
				return nil, err
			}
			if check(cs[0].Text) {
				ok++
			}
		}
		out[task.Name] = float64(ok) / float64(n)
	}
	return out, nil
}
