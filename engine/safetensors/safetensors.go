// Package safetensors reads and writes the safetensors format (an 8-byte little-endian header length, a JSON
// header mapping tensor names to dtype, shape and byte offsets, then the raw little-endian data). Stored dtypes
// F32, F16 and BF16 are read; Read hands tensors out as float32, Parse keeps them as views of the file's bytes
// and Open as ranges of the file, to be converted once, to float32 or bfloat16, by their user. Writing uses
// F32 or BF16.
package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"sync"
)

// ErrFormat reports a malformed file.
var ErrFormat = errors.New("malformed safetensors")

// Tensor is one named tensor in row-major order: float32 values in Data, or the stored values of DType —
// bytes held in memory (Parse) or a range of a file (Open) — which ReadFloat32 and ReadBFloat16 convert.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
	DType string // stored dtype ("F32", "F16", "BF16"); "" for a tensor built in memory
	raw   []byte
	src   io.ReaderAt // with off and size: the stored bytes in a file, read a chunk at a time
	off   int64
	size  int
}

// Len is the number of values.
func (t Tensor) Len() int {
	switch {
	case t.src != nil:
		return t.size / dtypeSize[t.DType]
	case t.raw != nil:
		return len(t.raw) / dtypeSize[t.DType]
	}
	return len(t.Data)
}

// Float32 returns the values as float32 (Data itself when set, otherwise a new slice). It panics for a
// tensor of a file from Open, whose reads can fail: use ReadFloat32.
func (t Tensor) Float32() []float32 {
	if t.raw == nil && t.src == nil {
		return t.Data
	}
	if t.src != nil {
		panic("safetensors: Float32 of a tensor in a file; use ReadFloat32")
	}
	out := make([]float32, t.Len())
	_ = t.ReadFloat32(out) // a tensor in memory cannot fail to read
	return out
}

// readChunk bounds the bytes of a file-backed tensor read at once: converting a 270 MB embedding matrix
// needs 1 MiB of buffer beside its destination, not a copy of the file.
const readChunk = 1 << 20

var chunkPool = sync.Pool{New: func() any { b := make([]byte, readChunk); return &b }}

// each calls fn with consecutive runs of the stored bytes and the index of the first value in each.
func (t Tensor) each(fn func(b []byte, i0 int)) error {
	if t.src == nil {
		fn(t.raw, 0)
		return nil
	}
	size := dtypeSize[t.DType]
	pb := chunkPool.Get().(*[]byte)
	defer chunkPool.Put(pb)
	buf := (*pb)[:min(t.size, readChunk)]
	for done := 0; done < t.size; {
		n := min(len(buf), t.size-done)
		if _, err := t.src.ReadAt(buf[:n], t.off+int64(done)); err != nil {
			return fmt.Errorf("safetensors: read tensor %s: %w", t.Name, err)
		}
		fn(buf[:n], done/size)
		done += n
	}
	return nil
}

// ReadFloat32 sets dst (len(dst) == Len()) to the values as float32.
func (t Tensor) ReadFloat32(dst []float32) error {
	dst = dst[:t.Len()]
	if t.raw == nil && t.src == nil {
		copy(dst, t.Data)
		return nil
	}
	return t.each(func(b []byte, i0 int) {
		out := dst[i0:]
		switch t.DType {
		case "F32":
			for i := range len(b) / 4 {
				out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
		case "BF16":
			for i := range len(b) / 2 {
				out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
			}
		case "F16":
			for i := range len(b) / 2 {
				out[i] = halfToFloat(binary.LittleEndian.Uint16(b[2*i:]))
			}
		}
	})
}

// ReadBFloat16 sets dst (len(dst) == Len()) to the values as bfloat16: stored BF16 values are copied as
// they are, others rounded to nearest even, so no float32 copy of a large tensor is made.
func (t Tensor) ReadBFloat16(dst []uint16) error {
	dst = dst[:t.Len()]
	if t.raw == nil && t.src == nil {
		for i, v := range t.Data {
			dst[i] = floatToBF16(v)
		}
		return nil
	}
	return t.each(func(b []byte, i0 int) {
		out := dst[i0:]
		switch t.DType {
		case "BF16":
			for i := range len(b) / 2 {
				out[i] = binary.LittleEndian.Uint16(b[2*i:])
			}
		case "F32":
			for i := range len(b) / 4 {
				out[i] = floatToBF16(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
			}
		case "F16":
			for i := range len(b) / 2 {
				out[i] = floatToBF16(halfToFloat(binary.LittleEndian.Uint16(b[2*i:])))
			}
		}
	})
}

var dtypeSize = map[string]int{"F32": 4, "F16": 2, "BF16": 2}

// File is a parsed safetensors file.
type File struct {
	Tensors  map[string]Tensor
	Metadata map[string]string
	file     *os.File // set by Open
}

// Close closes the file a File from Open reads its tensors from (a no-op for the others).
func (f *File) Close() error {
	if f.file == nil {
		return nil
	}
	return f.file.Close()
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
// Data nil): convert them with ReadFloat32 or ReadBFloat16, and keep buf unchanged while they are in use.
func Parse(buf []byte) (*File, error) {
	if len(buf) < 8 {
		return nil, fmt.Errorf("%w: %d bytes, no header length", ErrFormat, len(buf))
	}
	n := binary.LittleEndian.Uint64(buf)
	if n > maxHeader || n > uint64(len(buf)-8) {
		return nil, fmt.Errorf("%w: header of %d bytes in a file of %d", ErrFormat, n, len(buf))
	}
	data := buf[8+n:]
	return parseHeader(buf[8:8+n], len(data), func(t Tensor, lo, hi int) Tensor {
		t.raw = data[lo:hi:hi]
		return t
	})
}

// Open parses the header of the safetensors file at path. Its tensors stay in the file until converted
// (ReadFloat32, ReadBFloat16), which reads them a bounded chunk at a time: loading a model this way holds
// its converted weights, not the file's contents as well. Close the File when its tensors are read.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	f, err := openFile(fh)
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

func openFile(fh *os.File) (*File, error) {
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	var lenBuf [8]byte
	if _, err := fh.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("%w: %d bytes, no header length", ErrFormat, st.Size())
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > maxHeader || int64(n) > st.Size()-8 {
		return nil, fmt.Errorf("%w: header of %d bytes in a file of %d", ErrFormat, n, st.Size())
	}
	hdr := make([]byte, n)
	if _, err := fh.ReadAt(hdr, 8); err != nil {
		return nil, fmt.Errorf("read safetensors header: %w", err)
	}
	dataOff := 8 + int64(n)
	dataLen := st.Size() - dataOff
	if dataLen > math.MaxInt {
		return nil, fmt.Errorf("%w: %d bytes of data", ErrFormat, dataLen)
	}
	f, err := parseHeader(hdr, int(dataLen), func(t Tensor, lo, hi int) Tensor {
		t.src, t.off, t.size = fh, dataOff+int64(lo), hi-lo
		return t
	})
	if err != nil {
		return nil, err
	}
	f.file = fh
	return f, nil
}

// parseHeader parses the JSON header of a file with dataLen bytes of tensor data; place attaches the
// stored bytes [lo, hi) of the data section to each validated tensor.
func parseHeader(hdr []byte, dataLen int, place func(t Tensor, lo, hi int) Tensor) (*File, error) {
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
		t, err := view(name, e, dataLen)
		if err != nil {
			return nil, err
		}
		f.Tensors[name] = place(t, e.Offsets[0], e.Offsets[1])
	}
	return f, nil
}

// view validates a header entry against the data section's length and returns its tensor, without data.
func view(name string, e headerEntry, dataLen int) (Tensor, error) {
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
	if lo < 0 || hi > dataLen || hi-lo != count*size {
		return Tensor{}, fmt.Errorf("%w: tensor %q offsets %v do not match shape %v (%d data bytes)",
			ErrFormat, name, e.Offsets, e.Shape, dataLen)
	}
	return Tensor{Name: name, Shape: append([]int(nil), e.Shape...), DType: e.DType}, nil
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
