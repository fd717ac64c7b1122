package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
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
