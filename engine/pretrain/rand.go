package pretrain

import "math/rand"

// newRand returns the generator's deterministic source (math/rand's algorithm is fixed by the Go 1
// compatibility promise for a given seed, which keeps the recipe reproducible across Go versions).
func newRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }
