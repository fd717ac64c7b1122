package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

func TestRoundTripAndDtypes(t *testing.T) {
	ts := []Tensor{{Name: "b", Shape: []int{2}, Data: []float32{1.5, -2}}, {Name: "a", Shape: []int{1, 3}, Data: []float32{0.1, 3e-5, -7}}}
	for _, dtype := range []string{"F32", "BF16"} {
		var buf bytes.Buffer
		if err := Write(&buf, ts, map[string]string{"k": "v"}, dtype); err != nil {
			t.Fatal(err)
		}
		f, err := Read(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if f.Metadata["k"] != "v" || len(f.Tensors) != 2 {
			t.Fatalf("%s: %+v", dtype, f)
		}
		for _, want := range ts {
			got := f.Tensors[want.Name]
			for i, v := range want.Data {
				tol := 0.0
				if dtype == "BF16" {
					tol = math.Abs(float64(v)) / 128
				}
				if math.Abs(float64(got.Data[i]-v)) > tol {
					t.Fatalf("%s %s[%d] = %v, want %v", dtype, want.Name, i, got.Data[i], v)
				}
			}
		}
	}
}

func TestHalfFloat(t *testing.T) {
	for bits, want := range map[uint16]float32{0x3c00: 1, 0xc000: -2, 0x3555: 0.333251953125, 0x0001: 5.9604645e-08, 0x7bff: 65504} {
		if got := halfToFloat(bits); got != want {
			t.Errorf("half %#x = %v, want %v", bits, got, want)
		}
	}
	if !math.IsInf(float64(halfToFloat(0x7c00)), 1) {
		t.Error("half +inf")
	}
}

func TestMalformed(t *testing.T) {
	bad := func(hdr string, data int) []byte {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
		return append(append(b, hdr...), make([]byte, data)...)
	}
	for name, in := range map[string][]byte{
		"short":    {1, 2},
		"json":     bad("{", 0),
		"offsets":  bad(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 8),
		"dtype":    bad(`{"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`, 8),
		"overflow": bad(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 4),
	} {
		if _, err := Read(bytes.NewReader(in)); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestParseViews checks that Parse keeps tensors as views converted on demand: BF16 values copied as they
// are, F32 values rounded to bfloat16 to nearest even, F16 widened exactly.
func TestParseViews(t *testing.T) {
	ts := []Tensor{{Name: "w", Shape: []int{2, 2}, Data: []float32{1, -2.5, 1.00390625, 3e-3}}}
	for _, dtype := range []string{"F32", "BF16"} {
		var buf bytes.Buffer
		if err := Write(&buf, ts, nil, dtype); err != nil {
			t.Fatal(err)
		}
		f, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		w := f.Tensors["w"]
		if w.Data != nil || w.DType != dtype || w.Len() != 4 {
			t.Fatalf("%s: %+v", dtype, w)
		}
		bf := make([]uint16, 4)
		if err := w.ReadBFloat16(bf); err != nil {
			t.Fatal(err)
		}
		want := []uint16{0x3f80, 0xc020, 0x3f80, 0x3b45}
		for i := range want {
			if bf[i] != want[i] {
				t.Errorf("%s: bf16[%d] = %#x, want %#x", dtype, i, bf[i], want[i])
			}
		}
		if dtype == "F32" && w.Float32()[2] != 1.00390625 {
			t.Errorf("F32 value changed: %v", w.Float32())
		}
	}
	hdr := `{"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	b = append(append(b, hdr...), 0x00, 0x3c, 0x00, 0xc0) // 1, -2
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if v := f.Tensors["h"].Float32(); v[0] != 1 || v[1] != -2 {
		t.Errorf("F16: %v", v)
	}
}

// FuzzParse: any input parses or fails with ErrFormat, and parsed tensors convert without panicking.
func FuzzParse(f *testing.F) {
	var buf bytes.Buffer
	_ = Write(&buf, []Tensor{{Name: "a", Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, 6}}}, map[string]string{"k": "v"}, "BF16")
	f.Add(buf.Bytes())
	hdr := `{"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`
	f.Add(append(append(binary.LittleEndian.AppendUint64(nil, uint64(len(hdr))), hdr...), 0, 0x3c, 0, 0xc0))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error not ErrFormat: %v", err)
			}
			return
		}
		for _, ts := range file.Tensors {
			if len(ts.Float32()) != ts.Len() {
				t.Fatalf("%s: %d values, Len %d", ts.Name, len(ts.Float32()), ts.Len())
			}
			if err := ts.ReadBFloat16(make([]uint16, ts.Len())); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestOpen: a file read through Open, a chunk at a time, converts to the same values as the same bytes
// parsed in memory, for tensors larger than a chunk and at odd offsets; a file cut short is ErrFormat.
func TestOpen(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	big := make([]float32, readChunk/2+3) // more than a chunk of F32 bytes, not a whole number of chunks
	for i := range big {
		big[i] = rng.Float32()*2 - 1
	}
	ts := []Tensor{{Name: "a", Shape: []int{3}, Data: []float32{1, -2, 3.5}}, {Name: "big", Shape: []int{len(big)}, Data: big}}
	for _, dtype := range []string{"F32", "BF16"} {
		var buf bytes.Buffer
		if err := Write(&buf, ts, map[string]string{"k": "v"}, dtype); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "m.safetensors")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		mem, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if f.Metadata["k"] != "v" || len(f.Tensors) != 2 {
			t.Fatalf("%s: %+v", dtype, f)
		}
		for name, want := range mem.Tensors {
			got := f.Tensors[name]
			if got.Len() != want.Len() || got.DType != dtype {
				t.Fatalf("%s %s: len %d dtype %s, want %d", dtype, name, got.Len(), got.DType, want.Len())
			}
			g32, w32 := make([]float32, got.Len()), want.Float32()
			g16, w16 := make([]uint16, got.Len()), make([]uint16, got.Len())
			if err := got.ReadFloat32(g32); err != nil {
				t.Fatal(err)
			}
			if err := got.ReadBFloat16(g16); err != nil {
				t.Fatal(err)
			}
			if err := want.ReadBFloat16(w16); err != nil {
				t.Fatal(err)
			}
			for i := range g32 {
				if g32[i] != w32[i] || g16[i] != w16[i] {
					t.Fatalf("%s %s[%d] = %v/%#x, want %v/%#x", dtype, name, i, g32[i], g16[i], w32[i], w16[i])
				}
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes()[:buf.Len()-2], 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path); !errors.Is(err, ErrFormat) {
			t.Fatalf("%s: a truncated file opened with %v", dtype, err)
		}
	}
}
