package pretrain

import (
	"os"
	"testing"

	"github.com/trainyard/trainyard/engine/chat"
	"github.com/trainyard/trainyard/engine/tokenizer"
)

func testGenerator(seed int64) *generator {
	tok := tokenizer.New()
	return &generator{r: newRand(seed), tok: tok, tmpl: chat.NewTemplate(tok),
		fortunes: loadFortunes(DefaultOptions().FortuneDir, 200), maxLen: 384}
}

// TestGeneratorDeterministic checks that the data stream is a pure function of the seed and that every
// example has loss weight on some tokens.
func TestGeneratorDeterministic(t *testing.T) {
	a, b := testGenerator(7), testGenerator(7)
	if len(a.fortunes) == 0 {
		a.fortunes, b.fortunes = fallbackFortunes, fallbackFortunes
	}
	for i := 0; i < 300; i++ {
		x, y := a.next(), b.next()
		if len(x.tokens) != len(y.tokens) || len(x.tokens) == 0 {
			t.Fatalf("example %d differs in length: %d vs %d", i, len(x.tokens), len(y.tokens))
		}
		for j := range x.tokens {
			if x.tokens[j] != y.tokens[j] || x.weights[j] != y.weights[j] {
				t.Fatalf("example %d differs at token %d", i, j)
			}
		}
		if os.Getenv("PRETRAIN_DUMP") != "" && i < 40 {
			t.Logf("%q", a.tok.Decode(x.tokens))
		}
	}
}
