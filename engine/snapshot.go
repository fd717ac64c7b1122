package engine

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/trainyard/trainyard/engine/chat/hftemplate"
	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/safetensors"
	"github.com/trainyard/trainyard/engine/tokenizer/hf"
)

// Files of a Hugging Face model snapshot, as huggingface-cli download lays them out.
const (
	configFile           = "config.json"
	weightsFile          = "model.safetensors"
	weightsIndexFile     = "model.safetensors.index.json"
	tokenizerFile        = "tokenizer.json"
	tokenizerConfigFile  = "tokenizer_config.json"
	generationConfigFile = "generation_config.json"
)

// SnapshotError says which file of a snapshot, and which field of it when known, keeps the engine from
// loading it. It matches ErrInvalidInput.
type SnapshotError struct {
	File  string // path of the file
	Field string // JSON field, or ""
	Err   error
}

func (e *SnapshotError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %v", e.File, e.Field, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *SnapshotError) Unwrap() []error { return []error{ErrInvalidInput, e.Err} }

// SnapshotInfo describes a model directory from its small files and the safetensors headers, without
// reading the weights.
type SnapshotInfo struct {
	Dir string
	// Architecture is config.json's model_type (llama, qwen2, qwen3, gemma3_text, gemma3).
	Architecture string
	// Params is the number of base-model parameters the config implies.
	Params int
	// DType is the weights' dtype on disk (BF16, F16, F32).
	DType string
	// ContextLength is max_position_embeddings.
	ContextLength int
	// VocabSize is the embedding's row count.
	VocabSize int
	// WeightBytes is what the weights take on disk.
	WeightBytes int64
	// Memory is the estimated peak of engine.ReferenceStep (an RL step of 32 × 128 tokens, LoRA rank 8 on
	// all seven projections) with the base held in bfloat16; Memory.Weights is the loaded base alone.
	Memory MemoryEstimate
	// HFTokenizer is false for a directory without tokenizer.json, which uses the engine's byte-level
	// tokenizer and built-in template (trainyard's own exported checkpoints).
	HFTokenizer bool
}

// InspectSnapshot reads what a listing needs of the snapshot in dir and checks what can be checked
// cheaply: the config (through the same parser loading uses), a chat template and tokenizer.json when
// the snapshot has a tokenizer, and that the weight files exist with readable headers. An error is a
// *SnapshotError naming the file and field.
func InspectSnapshot(dir string) (SnapshotInfo, error) {
	info := SnapshotInfo{Dir: dir}
	cfgPath := filepath.Join(dir, configFile)
	cfgJSON, err := os.ReadFile(cfgPath)
	if err != nil {
		return info, &SnapshotError{File: cfgPath, Err: err}
	}
	cfg, err := model.ParseHFConfig(cfgJSON)
	if err != nil {
		return info, &SnapshotError{File: cfgPath, Field: configField(err), Err: err}
	}
	var head struct {
		ModelType string `json:"model_type"`
	}
	_ = json.Unmarshal(cfgJSON, &head) // ParseHFConfig has read it
	info.Architecture, info.Params = head.ModelType, cfg.NumParams()
	info.ContextLength, info.VocabSize = cfg.MaxSeqLen, cfg.VocabSize
	if est, err := EstimateStepMemory(cfgJSON, ReferenceStep()); err == nil {
		info.Memory = est // a context shorter than the reference step's 128 tokens has no estimate
	}
	if info.Architecture == "" {
		info.Architecture = "llama"
	}
	files, err := weightFiles(dir)
	if err != nil {
		return info, err
	}
	for _, f := range files {
		dtype, size, err := safetensorsHeader(f)
		if err != nil {
			return info, err
		}
		info.WeightBytes += size
		if info.DType == "" {
			info.DType = dtype
		}
	}
	tokPath := filepath.Join(dir, tokenizerFile)
	if _, err := os.Stat(tokPath); errors.Is(err, os.ErrNotExist) {
		return info, nil
	} else if err != nil {
		return info, &SnapshotError{File: tokPath, Err: err}
	}
	info.HFTokenizer = true
	tcPath := filepath.Join(dir, tokenizerConfigFile)
	tc, err := os.ReadFile(tcPath)
	if err != nil {
		return info, &SnapshotError{File: tcPath, Err: err}
	}
	if _, err := hftemplate.ParseConfig(tc); err != nil {
		return info, &SnapshotError{File: tcPath, Field: "chat_template", Err: err}
	}
	return info, nil
}

// configField picks the config.json field an error of model.ParseHFConfig is about, for the one log
// line of a skipped snapshot; "" when the message names none.
func configField(err error) string {
	msg := err.Error()
	for _, f := range []string{"model_type", "rope_scaling", "hidden_act", "attention_bias", "vocab_size",
		"hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size",
		"num_hidden_layers", "max_position_embeddings"} {
		if strings.Contains(msg, f) {
			return f
		}
	}
	return ""
}

// weightFiles lists the safetensors files of dir: the shards its index names, else model.safetensors.
func weightFiles(dir string) ([]string, error) {
	idxPath := filepath.Join(dir, weightsIndexFile)
	idx, err := os.ReadFile(idxPath)
	if errors.Is(err, os.ErrNotExist) {
		p := filepath.Join(dir, weightsFile)
		if _, err := os.Stat(p); err != nil {
			return nil, &SnapshotError{File: p, Err: err}
		}
		return []string{p}, nil
	}
	if err != nil {
		return nil, &SnapshotError{File: idxPath, Err: err}
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(idx, &index); err != nil {
		return nil, &SnapshotError{File: idxPath, Err: err}
	}
	if len(index.WeightMap) == 0 {
		return nil, &SnapshotError{File: idxPath, Field: "weight_map", Err: errors.New("is empty")}
	}
	seen := map[string]bool{}
	var files []string
	for _, f := range index.WeightMap {
		// Clean against a root so a shard name cannot leave the snapshot.
		p := filepath.Join(dir, filepath.Clean("/" + f)[1:])
		if !seen[p] {
			seen[p] = true
			files = append(files, p)
		}
	}
	sort.Strings(files)
	return files, nil
}

// maxHeader bounds a safetensors header read for a listing (the format allows 100 MB; real ones are
// kilobytes to a few megabytes).
const maxHeader = 100 << 20

// safetensorsHeader reads the dtype of the first tensor in path's header (they share one in the snapshots
// this engine loads) and the file's size.
func safetensorsHeader(path string) (dtype string, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, &SnapshotError{File: path, Err: err}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", 0, &SnapshotError{File: path, Err: err}
	}
	var n uint64
	if err := binary.Read(f, binary.LittleEndian, &n); err != nil || n > maxHeader || int64(n)+8 > st.Size() {
		return "", 0, &SnapshotError{File: path, Err: errors.New("not a safetensors file (bad header length)")}
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return "", 0, &SnapshotError{File: path, Err: err}
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &entries); err != nil {
		return "", 0, &SnapshotError{File: path, Err: fmt.Errorf("header: %w", err)}
	}
	names := make([]string, 0, len(entries))
	for k := range entries {
		if k != "__metadata__" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		var e struct {
			DType string `json:"dtype"`
		}
		if json.Unmarshal(entries[k], &e) == nil && e.DType != "" {
			return e.DType, st.Size(), nil
		}
	}
	return "", st.Size(), nil
}

// OpenSnapshot loads the Hugging Face model directory dir as the base model name: config.json, the
// weights (model.safetensors, or the shards of model.safetensors.index.json), tokenizer.json with
// tokenizer_config.json (its chat_template, bos/eos tokens and added tokens) and, when present,
// generation_config.json (its eos_token_id, one id or a list, adds stop tokens). A directory without
// tokenizer.json is a trainyard checkpoint on the engine's byte-level tokenizer and built-in template.
func OpenSnapshot(name, dir string) (*Base, error) {
	cfgPath := filepath.Join(dir, configFile)
	cfgJSON, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, &SnapshotError{File: cfgPath, Err: err}
	}
	cfg, err := model.ParseHFConfig(cfgJSON)
	if err != nil {
		return nil, &SnapshotError{File: cfgPath, Field: configField(err), Err: err}
	}
	files, err := weightFiles(dir)
	if err != nil {
		return nil, err
	}
	// The files are read a tensor at a time, in bounded chunks, straight into the weights: loading holds
	// the model once, not the files' contents as well.
	var opened []*safetensors.File
	defer func() {
		for _, f := range opened {
			f.Close()
		}
	}()
	for _, f := range files {
		st, err := safetensors.Open(f)
		if err != nil {
			return nil, &SnapshotError{File: f, Err: err}
		}
		opened = append(opened, st)
	}
	// The frozen base is held in bfloat16 (fp32 accumulation), half the memory of float32, and laid out once
	// for the batched products of training and chat.
	w, err := loadWeights(cfg, opened, model.BF16)
	if err != nil {
		return nil, err
	}
	w.Pack()
	if _, err := os.Stat(filepath.Join(dir, tokenizerFile)); errors.Is(err, os.ErrNotExist) {
		return byteLevelBase(name, w)
	}
	return hfBase(name, dir, w, cfgJSON)
}

// hfBase pairs weights with the snapshot's own tokenizer and chat template.
func hfBase(name, dir string, w *model.Weights, cfgJSON []byte) (*Base, error) {
	tok, err := hf.Load(dir)
	if err != nil {
		var le *hf.LoadError
		if errors.As(err, &le) {
			return nil, &SnapshotError{File: le.File, Field: le.Field, Err: le.Err}
		}
		return nil, &SnapshotError{File: filepath.Join(dir, tokenizerFile), Err: err}
	}
	// The tokenizer may hold more ids than the embedding has rows when the extra ones are added tokens the
	// text model never sees: Gemma 3's tokenizer.json ends with <image_soft_token> (262,144), a placeholder
	// of the vision tower, and its text models (270M, 1B) embed 262,144 tokens. Plain text never encodes to
	// such a token, and a prompt that spells one out is refused by the model's id check, not run.
	for id := w.Cfg.VocabSize; id < tok.VocabSize(); id++ {
		if tok.TokenBytes(id) != nil && !tok.IsAdded(id) {
			return nil, &SnapshotError{File: filepath.Join(dir, configFile), Field: "vocab_size",
				Err: fmt.Errorf("%d is smaller than the tokenizer's %d ids", w.Cfg.VocabSize, tok.VocabSize())}
		}
	}
	tcPath := filepath.Join(dir, tokenizerConfigFile)
	tc, err := hftemplate.LoadConfig(tcPath)
	if err != nil {
		return nil, &SnapshotError{File: tcPath, Field: "chat_template", Err: err}
	}
	tplName, err := tc.Name(false)
	if err != nil {
		return nil, &SnapshotError{File: tcPath, Field: "chat_template", Err: err}
	}
	tpl, err := tc.Template(tplName, hftemplate.Options{})
	if err != nil {
		return nil, &SnapshotError{File: tcPath, Field: "chat_template", Err: err}
	}
	stops, err := stopTokens(dir, tok, cfgJSON)
	if err != nil {
		return nil, err
	}
	b := &Base{name: name, w: w, tok: tok, stops: stops, tmpl: hftemplate.NewEncoder(tpl, tok), callStart: -1, callEnd: -1, shared: &baseShared{},
		thinkStart: -1, thinkEnd: -1}
	b.callStart, b.callEnd = addedPair(tok, "<tool_call>", "</tool_call>")
	b.thinkStart, b.thinkEnd = addedPair(tok, "<think>", "</think>")
	return b, nil
}

// addedPair returns the ids of two added tokens (a block's opening and closing markers), or -1, -1 when
// the tokenizer lacks either as an added token (then the text only spells them in pieces).
func addedPair(tok *hf.Tokenizer, open, closing string) (int, int) {
	start, okS := tok.TokenID(open)
	end, okE := tok.TokenID(closing)
	if okS && okE && tok.IsAdded(start) && tok.IsAdded(end) {
		return start, end
	}
	return -1, -1
}

// stopTokens are the ids that end a turn: generation_config.json's eos_token_id (one id or a list),
// config.json's, and the tokenizer's eos_token. Llama 3.x lists <|eot_id|> and <|eom_id|> only in
// generation_config.json, so reading it is what stops those models at the end of their turn.
func stopTokens(dir string, tok *hf.Tokenizer, cfgJSON []byte) ([]int, error) {
	var stops []int
	addIDs := func(path string, raw json.RawMessage) error {
		if len(raw) == 0 || string(raw) == "null" {
			return nil
		}
		var one int
		var many []int
		switch {
		case json.Unmarshal(raw, &one) == nil:
			many = []int{one}
		case json.Unmarshal(raw, &many) == nil:
		default:
			return &SnapshotError{File: path, Field: "eos_token_id", Err: errors.New("neither an id nor a list of ids")}
		}
		for _, id := range many {
			if id < 0 || id >= tok.VocabSize() {
				return &SnapshotError{File: path, Field: "eos_token_id", Err: fmt.Errorf("%d is not a token id", id)}
			}
			stops = append(stops, id)
		}
		return nil
	}
	var cfg struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	_ = json.Unmarshal(cfgJSON, &cfg) // ParseHFConfig has read it
	if err := addIDs(filepath.Join(dir, configFile), cfg.EOS); err != nil {
		return nil, err
	}
	genPath := filepath.Join(dir, generationConfigFile)
	if gen, err := os.ReadFile(genPath); err == nil {
		var g struct {
			EOS json.RawMessage `json:"eos_token_id"`
		}
		if err := json.Unmarshal(gen, &g); err != nil {
			return nil, &SnapshotError{File: genPath, Err: err}
		}
		if err := addIDs(genPath, g.EOS); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, &SnapshotError{File: genPath, Err: err}
	}
	if id, ok := tok.EOS(); ok {
		stops = append(stops, id)
	}
	if len(stops) == 0 {
		return nil, &SnapshotError{File: filepath.Join(dir, tokenizerConfigFile), Field: "eos_token",
			Err: errors.New("no end-of-turn token is named here, in config.json or in generation_config.json")}
	}
	sort.Ints(stops)
	return compactInts(stops), nil
}

func compactInts(s []int) []int {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
