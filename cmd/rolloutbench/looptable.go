package main

import (
	"fmt"
	"io"
	"time"
)

// loopHeader describes the conditions of the loop table.
type loopHeader struct {
	threads, tokens int
	backend         string
	learningRate    float64
}

// printLoopTable prints the iterations as a markdown table: each phase's wall time, the whole, and the
// rates of sampling and training.
func printLoopTable(w io.Writer, h loopHeader, its []iteration) {
	fmt.Fprintf(w, "rolloutbench -loop: one RL iteration through the HTTP API of trainyard serve (%s kernels, GOMAXPROCS=%d); random weights, Qwen3 tokenizer\n",
		h.backend, h.threads)
	fmt.Fprintf(w, "each rollout: its own request (n=1), %d new tokens (ignore_eos), temperature 1, logprobs; all G×N sent at once; RL job with learning rate %g\n\n",
		h.tokens, h.learningRate)
	fmt.Fprintln(w, "| shape | G×N | iteration | rollouts | rollout tok/s | reward + log | RL job | train tok/s | first chat | whole iteration |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, it := range its {
		train := fmt.Sprintf("%.0f", float64(it.trainTokens)/it.train.Seconds())
		if it.engineTrainTPS > 0 {
			train += fmt.Sprintf(" (step %.0f)", it.engineTrainTPS)
		}
		fmt.Fprintf(w, "| %s | %s | %d → step %d | %s | %.0f | %s | %s | %s | %s | %s |\n", it.shape, it.spec, it.index, it.step,
			secs(it.rollouts), float64(it.completionTokens)/it.rollouts.Seconds(), secs2(it.score), secs(it.train), train,
			secs2(it.chat), secs(it.total()))
	}
	fmt.Fprint(w, "\non-policy check, each job's first gradient step (the rollouts' log-probabilities, the sampler's, against the trainer's):")
	for _, it := range its {
		fmt.Fprintf(w, " %s %d: mean importance ratio %.5f, %.2f%% clipped;", it.shape, it.index, it.ratio, 100*it.clipped)
	}
	fmt.Fprint(w, `
rollouts: the G×N requests sent at once → the last answer, on the model's newest checkpoint; rollout tok/s:
completion tokens / that time. reward + log: a deterministic reward (the share of letters in the reply) and
POST …/log of the groups. RL job: POST /v1/preview/training-jobs → its training_ended event, as the client
sees it (events polled every second, as ART does: up to a second of the figure is the poll); train tok/s:
the trajectories' prompt + completion tokens / that time (in parentheses: the job's own tokens_per_second,
its last gradient_step's). first chat: one request on wandb-artifact:///ENTITY/PROJECT/NAME:stepN, the
checkpoint the job wrote (its adapter loaded on the way). The base model was loaded by a warm-up request
before the first iteration and is not counted.
`)
}

// secs2 is a duration with two decimals, for the short phases.
func secs2(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
