package hf

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time this process has used. The benchmarks report throughput per CPU second besides
// the usual wall-clock figure, because the build machine is shared and wall time swings with its load.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loopCPU runs f b.N times and reports MB per CPU second.
func loopCPU(b *testing.B, bytes int, f func()) {
	b.SetBytes(int64(bytes))
	b.ReportAllocs()
	start := cpuTime()
	n := 0
	for b.Loop() {
		f()
		n++
	}
	if cpu := cpuTime() - start; cpu > 0 {
		b.ReportMetric(float64(bytes)*float64(n)/1e6/cpu.Seconds(), "MB/cpu-s")
	}
}

// BenchmarkLoad measures New on the 11 MB Qwen3 tokenizer.json (decompression excluded).
func BenchmarkLoad(b *testing.B) { benchLoad(b, qwen3Dir) }

// BenchmarkLoadGemma3 measures New on Gemma 3's 33 MB tokenizer.json (262,144 tokens, 514,906 merges).
func BenchmarkLoadGemma3(b *testing.B) { benchLoad(b, gemma3Dir) }

func benchLoad(b *testing.B, dir string) {
	f := files(b, dir)
	loopCPU(b, len(f.tok), func() {
		if _, err := New(f.tok, f.cfg); err != nil {
			b.Fatal(err)
		}
	})
}

// benchCorpus is a mixed corpus: every parity fixture string once (prose, code, many scripts, emoji,
// whitespace and digit runs, special-token look-alikes), about 550 KB. Half of its bytes are in the few
// strings with words of 200 to 3,000 characters, each merged from scratch (nothing to cache), which
// dominate the time; typicalCorpus leaves those strings out.
func benchCorpus(b *testing.B) string { return corpus(0) }

func typicalCorpus(b *testing.B) string { return corpus(400) }

// corpus joins the fixture strings shorter than limit bytes (all when 0).
func corpus(limit int) string {
	f := readFixture(&testing.T{}, "qwen3")
	var sb strings.Builder
	for _, c := range f.Cases {
		if limit == 0 || len(c.Text) < limit {
			sb.WriteString(c.Text)
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

func benchEncode(b *testing.B, dir string, special bool) {
	tk := loadDir(b, dir)
	corpus := benchCorpus(b)
	loopCPU(b, len(corpus), func() {
		if special {
			tk.EncodeSpecial(corpus)
		} else {
			tk.Encode(corpus)
		}
	})
}

func BenchmarkEncodeQwen3(b *testing.B) { benchEncode(b, qwen3Dir, false) }
func BenchmarkEncodeTypicalQwen3(b *testing.B) {
	tk := loadDir(b, qwen3Dir)
	text := typicalCorpus(b)
	loopCPU(b, len(text), func() { tk.Encode(text) })
}
func BenchmarkEncodeSpecialQwen3(b *testing.B) { benchEncode(b, qwen3Dir, true) }
func BenchmarkEncodeLlama3(b *testing.B)       { benchEncode(b, llama3Dir, false) }
func BenchmarkEncodeGemma3(b *testing.B)       { benchEncode(b, gemma3Dir, false) }
func BenchmarkEncodeLlama2(b *testing.B)       { benchEncode(b, llama2Dir, false) }

// BenchmarkEncodeStringsGemma3 is BenchmarkEncodeStringsQwen3 on Gemma 3's tokenizer.
func BenchmarkEncodeStringsGemma3(b *testing.B) {
	tk := loadDir(b, gemma3Dir)
	f := readFixture(&testing.T{}, "qwen3")
	total := 0
	for _, c := range f.Cases {
		total += len(c.Text)
	}
	loopCPU(b, total, func() {
		for _, c := range f.Cases {
			tk.EncodeSpecial(c.Text)
		}
	})
}

// BenchmarkEncodeQwen3Cold is Encode with an empty word cache: every piece is merged.
func BenchmarkEncodeQwen3Cold(b *testing.B) {
	tk := loadDir(b, qwen3Dir)
	corpus := benchCorpus(b)
	loopCPU(b, len(corpus), func() {
		tk.model.cache = newWordCache()
		tk.Encode(corpus)
	})
}

func BenchmarkDecodeQwen3(b *testing.B) {
	tk := loadDir(b, qwen3Dir)
	corpus := benchCorpus(b)
	ids := tk.Encode(corpus)
	loopCPU(b, len(corpus), func() { tk.Decode(ids) })
}

// BenchmarkEncodeStringsQwen3 encodes the fixture strings one call each (2,400 calls of 30 B to 3 KB), the
// shape of real use: prompts and messages rather than one large document.
func BenchmarkEncodeStringsQwen3(b *testing.B) {
	tk := loadDir(b, qwen3Dir)
	f := readFixture(&testing.T{}, "qwen3")
	total := 0
	for _, c := range f.Cases {
		total += len(c.Text)
	}
	loopCPU(b, total, func() {
		for _, c := range f.Cases {
			tk.EncodeSpecial(c.Text)
		}
	})
}
