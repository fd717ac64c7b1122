// Package torchenv runs the benchmarks' PyTorch side (Debian's python3-torch on OpenBLAS) under the same
// conditions in every tool: the environment its threads need and the version it reports.
package torchenv

import (
	"fmt"
	"os/exec"
	"strings"
)

// Env is env with OMP_WAIT_POLICY=PASSIVE and OPENBLAS_NUM_THREADS=threads, unless env sets them.
// Debian's torch runs its element-wise operations on OpenMP's threads and its products on OpenBLAS's own;
// OpenMP's threads spin after each parallel region and take the cores from OpenBLAS's: on 2 cores the
// layers of a decoding step of the 135M shape at batch 4 took 120–340 ms instead of 50–60.
func Env(env []string, threads int) []string {
	set := map[string]string{"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_NUM_THREADS": fmt.Sprint(threads)}
	out := append([]string(nil), env...)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		delete(set, name)
	}
	for _, name := range []string{"OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS"} {
		if v, ok := set[name]; ok {
			out = append(out, name+"="+v)
		}
	}
	return out
}

// Version is python's torch.__version__, or why it could not be read.
func Version(python string) string {
	out, err := exec.Command(python, "-c", "import torch; print(torch.__version__)").Output()
	if err != nil {
		return "(torch not importable: " + err.Error() + ")"
	}
	return strings.TrimSpace(string(out))
}
