package main

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
)

// problem is one question and the check of a reply: the reward is 1 when
// the check passes, 0 otherwise.
type problem struct {
	Question string
	Want     string // the expected answer or property, for the logs
	check    func(reply string) bool
}

func (p problem) reward(reply string) float64 {
	if p.check(reply) {
		return 1
	}
	return 0
}

// task is a family of questions split into the facts (or topics) trained
// on and the ones held out: no held-out question is ever trained on, in
// any phrasing, so the reward measured on them is honest.
type task struct {
	Name      string
	About     string
	MaxTokens int
	// train draws a question from the training pool.
	train []func(r *rand.Rand) problem
	val   []problem
}

// drawTrain picks n training questions, without repetition while the pool
// lasts.
func (t *task) drawTrain(r *rand.Rand, n int) []problem {
	out := make([]problem, n)
	perm := r.Perm(len(t.train))
	for i := range out {
		out[i] = t.train[perm[i%len(perm)]](r)
	}
	return out
}

// newTask builds the named task with nVal held-out questions, split by seed.
func newTask(name, ops string, nVal int, seed int64) (*task, error) {
	var makers []func(form int) problem
	var t task
	switch name {
	case "arithmetic":
		var err error
		if makers, err = arithmetic(ops); err != nil {
			return nil, err
		}
		t = task{Name: name, MaxTokens: 8,
			About: fmt.Sprintf("single-digit %q arithmetic, reward 1 for the exact answer", ops)}
	case "three-words":
		makers = threeWords()
		t = task{Name: name, MaxTokens: 48,
			About: "describe a thing in exactly three words, reward 1 for a three-word reply"}
	default:
		return nil, fmt.Errorf("unknown -task %q (arithmetic or three-words)", name)
	}
	if nVal < 1 || nVal >= len(makers) {
		return nil, fmt.Errorf("-val-prompts must be between 1 and %d for %s", len(makers)-1, name)
	}
	rand.New(rand.NewSource(seed)).Shuffle(len(makers), func(i, j int) { makers[i], makers[j] = makers[j], makers[i] })
	for i, m := range makers[:nVal] {
		t.val = append(t.val, m(i)) // the phrasings take turns
	}
	for _, m := range makers[nVal:] {
		t.train = append(t.train, func(r *rand.Rand) problem { return m(r.Intn(1 << 16)) })
	}
	return &t, nil
}

// arithmetic: every fact a op b with a, b in 0..9 (a ≥ b for subtraction,
// so answers are never negative), asked in the phrasings the base model
// saw in pretraining.
func arithmetic(ops string) ([]func(form int) problem, error) {
	phrasings := map[byte][]string{
		'+': {"What is %d+%d?", "What is %d + %d?", "Compute %d+%d."},
		'-': {"What is %d-%d?", "What is %d - %d?", "Compute %d-%d."},
		'*': {"What is %d*%d?", "What is %d times %d?", "Compute %d*%d."},
	}
	var out []func(int) problem
	for i := 0; i < len(ops); i++ {
		op := ops[i]
		forms, ok := phrasings[op]
		if !ok {
			return nil, fmt.Errorf("unknown operator %q in -ops (use + - *)", op)
		}
		for a := 0; a <= 9; a++ {
			for b := 0; b <= 9; b++ {
				if op == '-' && a < b {
					continue
				}
				want := strconv.Itoa(map[byte]int{'+': a + b, '-': a - b, '*': a * b}[op])
				out = append(out, func(form int) problem {
					return problem{Question: fmt.Sprintf(forms[form%len(forms)], a, b), Want: want,
						check: func(reply string) bool { return strings.TrimSpace(reply) == want }}
				})
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-ops is empty")
	}
	return out, nil
}

// things are the topics of three-words.
var things = []string{"dog", "city", "ocean", "winter", "garden", "river", "robot", "forest", "school", "music",
	"morning", "coffee", "mountain", "library", "summer", "cat", "train", "bridge", "storm", "island", "kitchen",
	"market", "desert", "castle", "village", "airport", "bicycle", "candle", "cloud", "lake", "night", "beach",
	"bakery", "piano", "rabbit", "station", "harbor", "meadow", "tower", "festival"}

// threeWords: "Reply with exactly three words: describe a dog." The reply
// passes when it has exactly three words.
func threeWords() []func(form int) problem {
	forms := []string{"Reply with exactly three words: describe a %s.", "Describe a %s in exactly three words."}
	out := make([]func(int) problem, len(things))
	for i, thing := range things {
		out[i] = func(form int) problem {
			return problem{Question: fmt.Sprintf(forms[form%len(forms)], thing), Want: "three words",
				check: func(reply string) bool { return len(strings.Fields(reply)) == 3 }}
		}
	}
	return out
}
