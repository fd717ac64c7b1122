package torchenv

import (
	"slices"
	"testing"
)

func TestEnvAddsOnlyWhatIsUnset(t *testing.T) {
	t.Parallel()
	got := Env([]string{"PATH=/bin", "OMP_WAIT_POLICY=ACTIVE"}, 2)
	want := []string{"PATH=/bin", "OMP_WAIT_POLICY=ACTIVE", "OPENBLAS_NUM_THREADS=2"}
	if !slices.Equal(got, want) {
		t.Errorf("Env = %q, want %q (the caller's OMP_WAIT_POLICY kept)", got, want)
	}
	got = Env(nil, 4)
	want = []string{"OMP_WAIT_POLICY=PASSIVE", "OPENBLAS_NUM_THREADS=4"}
	if !slices.Equal(got, want) {
		t.Errorf("Env(nil) = %q, want %q", got, want)
	}
}
