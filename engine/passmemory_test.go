package engine

import (
	"context"
	"testing"
)

// TestClosedTrainerMemoryIsReused: a closed trainer's working memory goes to the next trainer of its
// base, still holding another batch's activations, and the next trainer's step is bit for bit that of a
// trainer on fresh memory, without growing it; a budget smaller than the memory held drops it.
func TestClosedTrainerMemoryIsReused(t *testing.T) {
	ctx := context.Background()
	b := tinyBase(t, 11)
	batch := randomRLBatch(4, b.VocabSize(), 5)
	other := randomRLBatch(7, b.VocabSize(), 6) // more and longer sequences: a larger arena
	for name, step := range stepKinds(ctx, batch) {
		t.Run(name, func(t *testing.T) {
			ref := liveTrainer(t, b) // the base holds no spare memory: this one is fresh
			want, err := step(ref)
			if err != nil {
				t.Fatal(err)
			}
			x := liveTrainer(t, b)
			if _, err := stepKinds(ctx, other)[name](x); err != nil {
				t.Fatal(err)
			}
			mem, held := x.mem, x.mem.bytes()
			if held == 0 {
				t.Fatal("the step left no memory")
			}
			x.Close()
			y := liveTrainer(t, b)
			if y.mem != mem {
				t.Fatal("the next trainer did not take the closed trainer's memory")
			}
			got, err := step(y)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range want {
				if k != "tokens_per_second" && k != "matmul_gflops" && got[k] != v {
					t.Errorf("%s: %v on reused memory, %v on fresh", k, got[k], v)
				}
			}
			if !equalBits(adapterBits(ref.adapter), adapterBits(y.adapter)) {
				t.Error("the adapter trained on reused memory differs from the one trained on fresh memory")
			}
			if y.mem.bytes() != held {
				t.Errorf("the reused memory grew from %d to %d bytes for a smaller batch", held, y.mem.bytes())
			}
			y.SetActivationBudget(1)
			if y.mem.bytes() != 0 {
				t.Errorf("a 1-byte budget kept %d bytes of earlier memory", y.mem.bytes())
			}
			y.Close()
			ref.Close()
		})
	}
}
