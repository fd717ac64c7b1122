//go:build !openblas

package linalg

import "testing"

// TestBackend checks that the default build names the best kernel this CPU runs.
func TestBackend(t *testing.T) {
	want := "generic"
	if ks := simdKernels(); len(ks) > 0 {
		want = ks[0].name
	}
	if got := Backend(); got != want {
		t.Fatalf("Backend() = %q, want %q", got, want)
	}
}
