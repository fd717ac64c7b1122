package linalg

import (
	"fmt"
	"testing"
)

// BenchmarkDecodeBody is a decoding step's products with a frozen base at SmolLM2-135M's body (30 layers of q,
// k, v, o, gate, up and down: 210 matrices, 212 MB of bfloat16 that every step streams from memory) over a
// batch of 8, 32 or 64 rows, on the base as the service holds it: in the pair layout where the CPU has the
// pair products ("pairs"; "fused": each layer's q, k and v one matrix, and gate and up, as FusePairs lays
// them out for decoding), packed for the float32 tiles otherwise ("packed"; AVX2's under
// GODEBUG=cpu.avx512f=off). It reports the weights' bytes per second against the machine's bandwidth.
//
//	go test -run '^$' -bench DecodeBody -count 6 ./engine/linalg/
func BenchmarkDecodeBody(b *testing.B) {
	shapes := [][2]int{{576, 576}, {192, 576}, {192, 576}, {576, 576}, {1536, 576}, {1536, 576}, {576, 1536}}
	type matrix struct {
		n, k  int
		pairs *PackedPairs
		bf16  *PackedBF16
	}
	var ms []matrix
	for range 30 {
		for _, s := range shapes {
			w := make([]uint16, s[0]*s[1])
			for i := range w {
				w[i] = ToBF16(float32(i%5) - 2)
			}
			ms = append(ms, matrix{n: s[0], k: s[1], pairs: PackPairs(s[0], s[1], w, s[1]), bf16: PackBF16(s[0], s[1], w, s[1])})
		}
	}
	var bytes int64
	for _, x := range ms {
		bytes += int64(2 * x.n * x.k)
	}
	// The same matrices fused, layer by layer (of copies: FusePairs moves its parts).
	var fused []matrix
	if ms[0].pairs != nil {
		for l := 0; l < len(ms); l += len(shapes) {
			copies := make([]*PackedPairs, len(shapes))
			for i, x := range ms[l : l+len(shapes)] {
				copies[i] = &PackedPairs{n: x.n, k: x.k, steps: x.pairs.steps, data: append([]uint16(nil), x.pairs.data...)}
			}
			for _, f := range []*PackedPairs{FusePairs(copies[:3]...), copies[3], FusePairs(copies[4:6]...), copies[6]} {
				fused = append(fused, matrix{n: f.Rows(), k: f.k, pairs: f})
			}
		}
	}
	for _, layout := range []string{"pairs", "fused", "packed"} {
		if layout != "packed" && ms[0].pairs == nil {
			continue
		}
		for _, m := range []int{8, 32, 64} {
			b.Run(fmt.Sprintf("%s/%d", layout, m), func(b *testing.B) {
				a := make([]float32, m*1536)
				for i := range a {
					a[i] = float32(i%7) - 3
				}
				c := make([]float32, m*3072)
				b.SetBytes(bytes)
				for b.Loop() {
					switch layout {
					case "pairs":
						for _, x := range ms {
							SgemmPackedPairs(m, 1, a, x.k, x.pairs, 0, c, x.n)
						}
					case "fused":
						for _, x := range fused {
							SgemmPackedPairs(m, 1, a, x.k, x.pairs, 0, c, x.n)
						}
					default:
						for _, x := range ms {
							SgemmPackedBF16(m, 1, a, x.k, x.bf16, 0, c, x.n)
						}
					}
				}
			})
		}
	}
}
