package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/engine/model"
	"github.com/trainyard/trainyard/engine/safetensors"
)

// TestAdapterPEFTFormat pins the checkpoint format to what PEFT's from_pretrained and vLLM's LoRA loader
// read: adapter_config.json's keys and values, and adapter_model.safetensors's tensor names, shapes and dtype.
func TestAdapterPEFTFormat(t *testing.T) {
	b := tinyBase(t, 1)
	a, err := b.NewAdapter(DefaultLoRAConfig(), 2)
	if err != nil {
		t.Fatal(err)
	}
	cj, err := a.ConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(cj, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": 8.0, "lora_alpha": 16.0,
		"lora_dropout": 0.0, "bias": "none", "base_model_name_or_path": "test/tiny",
		"target_modules": []any{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"},
		"fan_in_fan_out": false, "inference_mode": true, "init_lora_weights": true, "use_rslora": false,
		"use_dora": false, "modules_to_save": nil}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("adapter_config.json:\n got %v\nwant %v", got, want)
	}
	var buf bytes.Buffer
	if err := a.WriteWeights(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	cfg := b.w.Cfg
	wantNames := map[string][]int{}
	for l := 0; l < cfg.Layers; l++ {
		for m, name := range model.ModuleNames {
			block := "mlp"
			if m <= model.ModO {
				block = "self_attn"
			}
			out, in := cfg.Shape(m)
			p := fmt.Sprintf("base_model.model.model.layers.%d.%s.%s.", l, block, name)
			wantNames[p+"lora_A.weight"] = []int{8, in}
			wantNames[p+"lora_B.weight"] = []int{out, 8}
		}
	}
	if len(f.Tensors) != len(wantNames) || f.Metadata["format"] != "pt" {
		t.Fatalf("%d tensors (want %d), metadata %v", len(f.Tensors), len(wantNames), f.Metadata)
	}
	for name, shape := range wantNames {
		ts, ok := f.Tensors[name]
		if !ok || !reflect.DeepEqual(ts.Shape, shape) || ts.DType != "F32" {
			t.Errorf("%s: %+v, want shape %v F32", name, ts.Shape, shape)
		}
	}
}

// TestLoadPEFTAdapter loads an adapter as PEFT tools commonly save it (bf16 tensors, "all-linear") and
// rejects PEFT options the engine would silently compute differently.
func TestLoadPEFTAdapter(t *testing.T) {
	b := tinyBase(t, 1)
	src, _ := b.NewAdapter(DefaultLoRAConfig(), 3)
	for _, ts := range src.lora.Tensors(src.cfg) {
		for i := range ts.Data {
			ts.Data[i] = float32(math.Sin(float64(i))) * 0.1
		}
	}
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, model.SafetensorsList(src.lora.Tensors(src.cfg)), map[string]string{"format": "pt"}, "BF16"); err != nil {
		t.Fatal(err)
	}
	cfg := `{"peft_type":"LORA","task_type":"CAUSAL_LM","r":8,"lora_alpha":16,"lora_dropout":0.05,"bias":"none",
		"target_modules":"all-linear","base_model_name_or_path":"test/tiny","use_rslora":false,"use_dora":false,
		"modules_to_save":null,"revision":null,"layers_to_transform":null}`
	a, err := b.LoadAdapter(bytes.NewReader(buf.Bytes()), []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	want := src.lora.Tensors(src.cfg)
	for i, ts := range a.lora.Tensors(a.cfg) {
		for j, v := range ts.Data {
			if d := math.Abs(float64(v - want[i].Data[j])); d > math.Abs(float64(want[i].Data[j]))/128 {
				t.Fatalf("%s[%d] = %v, saved %v", ts.Name, j, v, want[i].Data[j])
			}
		}
	}
	for _, bad := range []string{`"use_rslora":true`, `"use_dora":true`, `"bias":"all"`, `"target_modules":".*q_proj"`,
		`"modules_to_save":["lm_head"]`, `"peft_type":"IA3"`} {
		js := `{"r":8,"lora_alpha":16,"target_modules":["q_proj"],` + bad + `}`
		if _, err := b.LoadAdapter(bytes.NewReader(buf.Bytes()), []byte(js)); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestLoadPEFTAdapterGemma3Multimodal: PEFT's adapter for Gemma3ForConditionalGeneration names the text
// model's matrices under either nesting transformers used and may carry the vision tower's too; the text
// ones load as the causal LM's, the vision ones are left out.
func TestLoadPEFTAdapterGemma3Multimodal(t *testing.T) {
	b := tinyBase(t, 1)
	src, _ := b.NewAdapter(DefaultLoRAConfig(), 3)
	for _, ts := range src.lora.Tensors(src.cfg) {
		for i := range ts.Data {
			ts.Data[i] = float32(math.Cos(float64(i))) * 0.1
		}
	}
	cfg := `{"peft_type":"LORA","r":8,"lora_alpha":16,"target_modules":["q_proj","k_proj","v_proj","o_proj","gate_proj","up_proj","down_proj"]}`
	for _, nest := range []string{"base_model.model.model.language_model.", "base_model.model.language_model.model."} {
		ts := model.SafetensorsList(src.lora.Tensors(src.cfg))
		for i := range ts {
			ts[i].Name = nest + strings.TrimPrefix(ts[i].Name, "base_model.model.model.")
		}
		ts = append(ts, safetensors.Tensor{Name: "base_model.model.model.vision_tower.vision_model.encoder.layers.0.self_attn.q_proj.lora_A.weight",
			Shape: []int{8, 4}, Data: make([]float32, 32)})
		var buf bytes.Buffer
		if err := safetensors.Write(&buf, ts, map[string]string{"format": "pt"}, "F32"); err != nil {
			t.Fatal(err)
		}
		a, err := b.LoadAdapter(bytes.NewReader(buf.Bytes()), []byte(cfg))
		if err != nil {
			t.Fatalf("%s: %v", nest, err)
		}
		want := src.lora.Tensors(src.cfg)
		for i, got := range a.lora.Tensors(a.cfg) {
			if !reflect.DeepEqual(got.Data, want[i].Data) {
				t.Fatalf("%s: %s differs", nest, got.Name)
			}
		}
	}
}
