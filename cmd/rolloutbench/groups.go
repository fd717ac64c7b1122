package main

import (
	"fmt"
	"strconv"
	"strings"
)

// groupSpec is one run's shape of work: groups distinct prompts, each sampled n times.
type groupSpec struct{ groups, n int }

func (g groupSpec) String() string { return fmt.Sprintf("%d×%d", g.groups, g.n) }

// rollouts is the number of requests of the run.
func (g groupSpec) rollouts() int { return g.groups * g.n }

// parseGroups reads a list such as "4x8,8x16" (G×N also accepted).
func parseGroups(s string) ([]groupSpec, error) {
	var out []groupSpec
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		gs, ns, ok := strings.Cut(strings.ReplaceAll(strings.ToLower(item), "×", "x"), "x")
		g, err1 := strconv.Atoi(gs)
		n, err2 := strconv.Atoi(ns)
		if !ok || err1 != nil || err2 != nil || g < 1 || n < 1 {
			return nil, fmt.Errorf("%q is not GROUPSxN (e.g. 4x8)", item)
		}
		out = append(out, groupSpec{g, n})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no groups in %q", s)
	}
	return out, nil
}

// systemPrompt is every rollout's system prompt, as an RL task gives every episode the same one.
const systemPrompt = "You are a careful tutor who solves short word problems. Think through each problem " +
	"step by step, keep the reasoning brief, check the arithmetic once, and end with a line of the form " +
	"'Answer: <number>'."

// groupPrompts are the run's G distinct prompts: the system prompt and a different word problem each
// (about 80 tokens once rendered by Qwen3's template). run keeps the questions of different runs apart,
// so no run finds another's prompts already computed.
func groupPrompts(run, groups int) []prompt {
	out := make([]prompt, groups)
	for g := range out {
		k := run*100 + g
		out[g] = prompt{system: systemPrompt, user: fmt.Sprintf(
			"Problem %d: a farmer packs %d crates of %d apples each. She sells %d apples on Monday and twice "+
				"as many on Tuesday. How many apples does she have left?", k+1, 3+k%17, 5+k*7%23, 2+k*3%11)}
	}
	return out
}
