package main

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
)

// problem is a single-digit arithmetic question: tiny-chat answers these
// right only part of the time, so a reward that checks the answer has room
// to rise.
type problem struct {
	A, B int
	Op   byte // '+', '-' or '*'
	Form int  // which phrasing
}

// phrasings per operator, as the base model saw them in pretraining.
var phrasings = map[byte][]string{
	'+': {"What is %d+%d?", "What is %d + %d?", "Compute %d+%d."},
	'-': {"What is %d-%d?", "What is %d - %d?", "Compute %d-%d."},
	'*': {"What is %d*%d?", "What is %d times %d?", "Compute %d*%d."},
}

func (p problem) question() string {
	forms := phrasings[p.Op]
	return fmt.Sprintf(forms[p.Form%len(forms)], p.A, p.B)
}

func (p problem) answer() int {
	switch p.Op {
	case '+':
		return p.A + p.B
	case '-':
		return p.A - p.B
	}
	return p.A * p.B
}

// reward is 1 for the exact answer (surrounding spaces allowed), 0 for
// anything else.
func (p problem) reward(reply string) float64 {
	if strings.TrimSpace(reply) == strconv.Itoa(p.answer()) {
		return 1
	}
	return 0
}

// problems lists every fact of the given operators: a, b in 0..9 (a ≥ b
// for subtraction, so answers are never negative), in the first phrasing.
func problems(ops string) ([]problem, error) {
	var out []problem
	for i := 0; i < len(ops); i++ {
		op := ops[i]
		if _, ok := phrasings[op]; !ok {
			return nil, fmt.Errorf("unknown operator %q in -ops (use + - *)", op)
		}
		for a := 0; a <= 9; a++ {
			for b := 0; b <= 9; b++ {
				if op == '-' && a < b {
					continue
				}
				out = append(out, problem{A: a, B: b, Op: op})
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-ops is empty")
	}
	return out, nil
}

// splitProblems shuffles the facts with seed and holds out the first nVal
// as the validation set, each in one of the phrasings. No validation fact
// is ever trained on, in any phrasing, so the reward measured on it is
// honest: it rises only if the model gets better at arithmetic it was not
// rewarded for.
func splitProblems(all []problem, nVal int, seed int64) (train, val []problem, err error) {
	if nVal < 1 || nVal >= len(all) {
		return nil, nil, fmt.Errorf("-val-prompts must be between 1 and %d", len(all)-1)
	}
	shuffled := append([]problem(nil), all...)
	rand.New(rand.NewSource(seed)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	val = shuffled[:nVal]
	for i := range val {
		val[i].Form = i
	}
	return shuffled[nVal:], val, nil
}

// drawTrain picks n training questions (facts without repetition while
// there are enough, each in a random phrasing).
func drawTrain(r *rand.Rand, pool []problem, n int) []problem {
	out := make([]problem, n)
	perm := r.Perm(len(pool))
	for i := range out {
		out[i] = pool[perm[i%len(perm)]]
		out[i].Form = r.Intn(len(phrasings[out[i].Op]))
	}
	return out
}
