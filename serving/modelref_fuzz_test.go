package serving

import (
	"strconv"
	"testing"
)

// FuzzParseModelRef: no name panics; a trained model's name written back in
// canonical form (with its step) parses to the same reference.
func FuzzParseModelRef(f *testing.F) {
	for _, s := range []string{"wandb-artifact:///e/p/n", "wandb-artifact:///e/p/n:step3", "e/p/n:latest", "trainyard/tiny-chat",
		"wandb-artifact:///e/p/n:step-1", "wandb-artifact:///e/p/n:step+1", "e/p", ":", "wandb-artifact:///e/p/n:v1"} {
		f.Add(s)
	}
	isBase := func(s string) bool { return s == "trainyard/tiny-chat" }
	f.Fuzz(func(t *testing.T, name string) {
		ref, err := ParseModelRef(name, isBase)
		if err != nil || ref.Base != "" {
			return
		}
		canonical := ref.String()
		if ref.Pinned {
			canonical += ":step" + strconv.Itoa(ref.Step)
		}
		if again, err := ParseModelRef(canonical, isBase); err != nil || again != ref {
			t.Fatalf("%q parsed to %+v; its canonical name %q parses to %+v (%v)", name, ref, canonical, again, err)
		}
	})
}
