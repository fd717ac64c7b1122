package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
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
	cmd.Env = torchEnv(os.Environ(), threads)
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

// torchEnv is env with OMP_WAIT_POLICY=PASSIVE and OPENBLAS_NUM_THREADS=threads, unless env sets them.
// Debian's torch runs its element-wise operations on OpenMP's threads and its products on OpenBLAS's own;
// OpenMP's threads spin after each parallel region and take the cores from OpenBLAS's: on 2 cores the
// layers of a decoding step of the 135M shape at batch 4 took 120–340 ms instead of 50–60.
func torchEnv(env []string, threads int) []string {
	set := map[string]string{"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_NUM_THREADS": fmt.Sprint(threads)}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		delete(set, name)
	}
	for name, v := range set {
		env = append(env, name+"="+v)
	}
	return env
}

func torchVersion(python string) string {
	out, err := exec.Command(python, "-c", "import torch; print(torch.__version__)").Output()
	if err != nil {
		return "(torch not importable: " + err.Error() + ")"
	}
	return strings.TrimSpace(string(out))
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
