package pretrain

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"

	"github.com/trainyard/trainyard/engine/chat"
	"github.com/trainyard/trainyard/engine/tokenizer"
)

// fortuneFiles are the collections of Debian's "fortunes" and "fortunes-min" packages used as readable
// English (chosen to avoid the offensive and the code-heavy ones).
var fortuneFiles = []string{"fortunes", "wisdom", "literature", "science", "education", "food", "humorists",
	"work", "platitudes", "people"}

// loadFortunes reads short single-paragraph ASCII fortunes from dir, in file order; missing files are
// skipped, so the recipe still runs (with less English) when the packages are not installed.
func loadFortunes(dir string, maxLen int) []string {
	var out []string
	for _, f := range fortuneFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			continue
		}
		for _, entry := range strings.Split(string(b), "\n%\n") {
			s := strings.Join(strings.Fields(entry), " ")
			if len(s) < 20 || len(s) > maxLen || !isPrintableASCII(s) {
				continue
			}
			out = append(out, s)
		}
	}
	return out
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 32 || s[i] > 126 {
			return false
		}
	}
	return true
}

// fallbackFortunes stand in when no fortune files are installed.
var fallbackFortunes = []string{"A journey of a thousand miles begins with a single step.",
	"Fortune favors the bold.", "Patience is a virtue.", "Every cloud has a silver lining.",
	"The early bird catches the worm.", "Actions speak louder than words."}

// example is one training sequence with a loss weight per token (weight[i] applies to predicting token i).
type example struct {
	tokens  []int
	weights []float32
}

// generator draws the pretraining mixture deterministically from its seed.
type generator struct {
	r        *rand.Rand
	tok      *tokenizer.Tokenizer
	tmpl     *chat.Template
	fortunes []string
	maxLen   int
	mix      Mix
}

// promptWeight is the loss weight of non-assistant tokens: low, so capacity goes to answering, but not
// zero, so the model also learns the template and some English from the prompts.
const promptWeight = 0.2

// Mix gives the relative frequency of each kind of example, in the order arithmetic (operands up to
// 50), instruction, tool use, small talk, three-turn chat, fortune on request, raw fortune text,
// single-digit arithmetic.
type Mix [8]int

// DefaultMix is the first stage's mixture.
var DefaultMix = Mix{22, 18, 22, 12, 6, 10, 10, 0}

func (g *generator) next() example {
	r := g.r
	mix := g.mix
	if mix == (Mix{}) {
		mix = DefaultMix
	}
	total := 0
	for _, m := range mix {
		total += m
	}
	k, kind := r.Intn(total), 0
	for k >= mix[kind] {
		k -= mix[kind]
		kind++
	}
	var msgs []chat.Message
	var tools []chat.Tool
	switch kind {
	case 0:
		msgs = conversation(r, arithmetic(r))
	case 1:
		msgs = conversation(r, instruction(r))
	case 2:
		msgs, tools = toolUse(r)
	case 3:
		msgs = conversation(r, smallTalk(r))
	case 4:
		msgs = conversation(r, pickExchange(r), pickExchange(r), pickExchange(r))
	case 5:
		q := pick(r, []string{"Tell me a fortune.", "Say something wise.", "Give me a quote.", "Tell me something interesting.", "Tell me a joke."})
		msgs = conversation(r, exchange{q, pick(r, g.fortunes)})
	case 6:
		return g.raw()
	default:
		msgs = conversation(r, digitArithmetic(r))
	}
	seq, err := g.tmpl.RenderTraining(msgs, tools)
	if err != nil {
		panic("pretrain: generated conversation does not render: " + err.Error())
	}
	ex := example{tokens: seq.Tokens, weights: make([]float32, len(seq.Tokens))}
	for i, t := range seq.Trainable {
		ex.weights[i] = promptWeight
		if t {
			ex.weights[i] = 1
		}
	}
	return g.clip(ex)
}

func pickExchange(r *rand.Rand) exchange {
	switch r.Intn(3) {
	case 0:
		return arithmetic(r)
	case 1:
		return instruction(r)
	}
	return smallTalk(r)
}

// raw is plain text: fortunes separated by blank lines, ended by <|endoftext|>.
func (g *generator) raw() example {
	var b strings.Builder
	for b.Len() < 300 {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(pick(g.r, g.fortunes))
	}
	toks := append(g.tok.Encode(b.String()), g.tok.Special(tokenizer.EndOfText))
	ex := example{tokens: toks, weights: make([]float32, len(toks))}
	for i := range ex.weights {
		ex.weights[i] = 1
	}
	return g.clip(ex)
}

func (g *generator) clip(ex example) example {
	if len(ex.tokens) > g.maxLen {
		ex.tokens, ex.weights = ex.tokens[:g.maxLen], ex.weights[:g.maxLen]
	}
	return ex
}

// batch draws examples until they hold at least tokens tokens.
func (g *generator) batch(tokens int) []example {
	var out []example
	n := 0
	for n < tokens {
		ex := g.next()
		out = append(out, ex)
		n += len(ex.tokens)
	}
	return out
}
