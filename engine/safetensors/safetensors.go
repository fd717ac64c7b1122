// Package safetensors reads and writes the safetensors format (an 8-byte little-endian header length, a JSON
// header mapping tensor names to dtype, shape and byte offsets, then the raw little-endian data). Tensors are
// handed out as float32 whatever their stored dtype (F32, F16 or BF16); writing uses F32 or BF16.
package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
)

// ErrFormat reports a malformed file.
var ErrFormat = errors.New("malformed safetensors")

// Tensor is one named tensor as float32 values in row-major order.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// File is a parsed safetensors file.
type File struct {
	Tensors  map[string]Tensor
	Metadata map[string]string
}

type headerEntry struct {
	DType   string `json:"dtype"`
	Shape   []int  `json:"shape"`
	Offsets [2]int `json:"data_offsets"`
}

// maxHeader bounds the JSON header so a corrupt length cannot allocate gigabytes.
const maxHeader = 100 << 20

// Read parses a whole safetensors stream.
func Read(r io.Reader) (*File, error) {
	var n uint64
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return nil, fmt.Errorf("%w: header length: %v", ErrFormat, err)
	}
	if n > maxHeader {
		return nil, fmt.Errorf("%w: header of %d bytes", ErrFormat, n)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, fmt.Errorf("%w: header json: %v", ErrFormat, err)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read tensor data: %w", err)
	}
	f := &File{Tensors: map[string]Tensor{}, Metadata: map[string]string{}}
	for name, js := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(js, &f.Metadata); err != nil {
				return nil, fmt.Errorf("%w: metadata: %v", ErrFormat, err)
			}
			continue
		}
		var e headerEntry
		if err := json.Unmarshal(js, &e); err != nil {
			return nil, fmt.Errorf("%w: tensor %q: %v", ErrFormat, name, err)
		}
		t, err := decode(name, e, data)
		if err != nil {
			return nil, err
		}
		f.Tensors[name] = t
	}
	return f, nil
}

func decode(name string, e headerEntry, data []byte) (Tensor, error) {
	count := 1
	for _, d := range e.Shape {
		if d < 0 || (d > 0 && count > math.MaxInt32/d) {
			return Tensor{}, fmt.Errorf("%w: tensor %q has shape %v", ErrFormat, name, e.Shape)
		}
		count *= d
	}
	size := map[string]int{"F32": 4, "F16": 2, "BF16": 2}[e.DType]
	if size == 0 {
		return Tensor{}, fmt.Errorf("%w: tensor %q has unsupported dtype %s", ErrFormat, name, e.DType)
	}
	lo, hi := e.Offsets[0], e.Offsets[1]
	if lo < 0 || hi > len(data) || hi-lo != count*size {
		return Tensor{}, fmt.Errorf("%w: tensor %q offsets %v do not match shape %v (%d data bytes)",
			ErrFormat, name, e.Offsets, e.Shape, len(data))
	}
	b := data[lo:hi]
	out := make([]float32, count)
	for i := range out {
		switch e.DType {
		case "F32":
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		case "BF16":
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		case "F16":
			out[i] = halfToFloat(binary.LittleEndian.Uint16(b[2*i:]))
		}
	}
	return Tensor{Name: name, Shape: append([]int(nil), e.Shape...), Data: out}, nil
}

// halfToFloat converts an IEEE 754 binary16 value.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := int(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		v := float32(mant) / 1024 * float32(math.Pow(2, -14))
		if sign != 0 {
			v = -v
		}
		return v
	case exp == 31:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | uint32(exp-15+127)<<23 | mant<<13)
}

// Write writes tensors in name order (so output is deterministic) as dtype "F32" or "BF16" (round to
// nearest even), with optional metadata.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string, dtype string) error {
	size := map[string]int{"F32": 4, "BF16": 2}[dtype]
	if size == 0 {
		return fmt.Errorf("safetensors: cannot write dtype %q", dtype)
	}
	sorted := append([]Tensor(nil), tensors...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	hdr := map[string]any{}
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	off := 0
	for _, t := range sorted {
		n := len(t.Data) * size
		hdr[t.Name] = headerEntry{DType: dtype, Shape: t.Shape, Offsets: [2]int{off, off + n}}
		off += n
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return fmt.Errorf("safetensors header: %w", err)
	}
	for len(js)%8 != 0 { // align the data section, as the reference writer does
		js = append(js, ' ')
	}
	buf := make([]byte, 8, 8+len(js)+off)
	binary.LittleEndian.PutUint64(buf, uint64(len(js)))
	buf = append(buf, js...)
	for _, t := range sorted {
		for _, v := range t.Data {
			if size == 4 {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			} else {
				buf = binary.LittleEndian.AppendUint16(buf, floatToBF16(v))
			}
		}
	}
	_, err = w.Write(buf)
	return err
}

func floatToBF16(v float32) uint16 {
	b := math.Float32bits(v)
	if v != v {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}
