// Package safetensors reads and writes the safetensors format (an 8-byte little-endian header length, a JSON
// header mapping tensor names to dtype, shape and byte offsets, then the raw little-endian data). Stored dtypes
// F32, F16 and BF16 are read; Read hands tensors out as float32, Parse keeps them as views of the file's bytes
// to be converted once, to float32 or bfloat16, by their user. Writing uses F32 or BF16.
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

// Tensor is one named tensor in row-major order: float32 values in Data, or (from Parse) the stored bytes
// of DType, which Float32 and BFloat16 convert.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
	DType string // stored dtype ("F32", "F16", "BF16"); "" for a tensor built in memory
	raw   []byte
}

// Len is the number of values.
func (t Tensor) Len() int {
	if t.raw == nil {
		return len(t.Data)
	}
	return len(t.raw) / dtypeSize[t.DType]
}

// Float32 returns the values as float32 (Data itself when set, otherwise a new slice).
func (t Tensor) Float32() []float32 {
	if t.raw == nil {
		return t.Data
	}
	b := t.raw
	out := make([]float32, t.Len())
	for i := range out {
		switch t.DType {
		case "F32":
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		case "BF16":
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		case "F16":
			out[i] = halfToFloat(binary.LittleEndian.Uint16(b[2*i:]))
		}
	}
	return out
}

// BFloat16 writes the values into dst (len(dst) == Len()) as bfloat16: stored BF16 values are copied as
// they are, others rounded to nearest even, so no float32 copy of a large tensor is made.
func (t Tensor) BFloat16(dst []uint16) {
	dst = dst[:t.Len()]
	if t.raw == nil {
		for i, v := range t.Data {
			dst[i] = floatToBF16(v)
		}
		return
	}
	b := t.raw
	for i := range dst {
		switch t.DType {
		case "BF16":
			dst[i] = binary.LittleEndian.Uint16(b[2*i:])
		case "F32":
			dst[i] = floatToBF16(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		case "F16":
			dst[i] = floatToBF16(halfToFloat(binary.LittleEndian.Uint16(b[2*i:])))
		}
	}
}

var dtypeSize = map[string]int{"F32": 4, "F16": 2, "BF16": 2}

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

// Read parses a whole safetensors stream, with every tensor converted to float32 in Data.
func Read(r io.Reader) (*File, error) {
	buf, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read safetensors: %w", err)
	}
	f, err := Parse(buf)
	if err != nil {
		return nil, err
	}
	for name, t := range f.Tensors {
		t.Data, t.raw = t.Float32(), nil
		f.Tensors[name] = t
	}
	return f, nil
}

// Parse parses a safetensors file held in buf. Its tensors are views of buf (DType and the stored bytes,
// Data nil): convert them with Float32 or BFloat16, and keep buf unchanged while they are in use.
func Parse(buf []byte) (*File, error) {
	if len(buf) < 8 {
		return nil, fmt.Errorf("%w: %d bytes, no header length", ErrFormat, len(buf))
	}
	n := binary.LittleEndian.Uint64(buf)
	if n > maxHeader || n > uint64(len(buf)-8) {
		return nil, fmt.Errorf("%w: header of %d bytes in a file of %d", ErrFormat, n, len(buf))
	}
	hdr, data := buf[8:8+n], buf[8+n:]
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, fmt.Errorf("%w: header json: %v", ErrFormat, err)
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
		t, err := view(name, e, data)
		if err != nil {
			return nil, err
		}
		f.Tensors[name] = t
	}
	return f, nil
}

func view(name string, e headerEntry, data []byte) (Tensor, error) {
	count := 1
	for _, d := range e.Shape {
		if d < 0 || (d > 0 && count > math.MaxInt32/d) {
			return Tensor{}, fmt.Errorf("%w: tensor %q has shape %v", ErrFormat, name, e.Shape)
		}
		count *= d
	}
	size := dtypeSize[e.DType]
	if size == 0 {
		return Tensor{}, fmt.Errorf("%w: tensor %q has unsupported dtype %s", ErrFormat, name, e.DType)
	}
	lo, hi := e.Offsets[0], e.Offsets[1]
	if lo < 0 || hi > len(data) || hi-lo != count*size {
		return Tensor{}, fmt.Errorf("%w: tensor %q offsets %v do not match shape %v (%d data bytes)",
			ErrFormat, name, e.Offsets, e.Shape, len(data))
	}
	return Tensor{Name: name, Shape: append([]int(nil), e.Shape...), DType: e.DType, raw: data[lo:hi:hi]}, nil
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
