package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"

	"github.com/trainyard/trainyard/internal/torchenv"
)

// torchResult is torch_bench.py's measurement of `--work rollouts`: G prompts prefilled once, their keys
// and values copied into G·N rows, decoded as one batch.
type torchResult struct {
	Batch          int     `json:"batch"`
	Tokens         int     `json:"tokens"`
	Seconds        float64 `json:"seconds"` // prefill to the last token
	PrefillSeconds float64 `json:"prefill_seconds"`
	DecodeSeconds  float64 `json:"decode_seconds"`
	Steps          int     `json:"steps"`
}

// runTorch runs script (engine/cmd/enginebench/torch_bench.py) under python on the same shape, batch,
// prompt length and token count as the engine's run, with threads threads.
func runTorch(python, script string, sh shape, threads int, g groupSpec, promptLen, tokens int) (torchResult, error) {
	args := []string{script, "--config", sh.config, "--work", "rollouts", "--groups", fmt.Sprint(g.groups),
		"--n", fmt.Sprint(g.n), "--prompt", fmt.Sprint(promptLen), "--decode", fmt.Sprint(tokens),
		"--threads", fmt.Sprint(threads)}
	cmd := exec.Command(python, args...)
	cmd.Env = torchenv.Env(os.Environ(), threads)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return torchResult{}, fmt.Errorf("%s %s --work rollouts: %w\n%s", python, script, err, stderr.String())
	}
	var r torchResult
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &r); err != nil {
		return r, fmt.Errorf("%s: output %q: %w", script, stdout.String(), err)
	}
	return r, nil
}

// checkTorch fails early, before the engine's runs, when the script or torch is missing.
func checkTorch(python, script string) error {
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("-torch-script: %w (run from the repository's root, or pass -no-torch)", err)
	}
	if out, err := exec.Command(python, "-c", "import torch").CombinedOutput(); err != nil {
		return fmt.Errorf("%s cannot import torch (apt-get install python3-torch, or pass -no-torch): %v\n%s", python, err, out)
	}
	return nil
}
