package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/trainyard/trainyard/internal/config"
	"github.com/trainyard/trainyard/internal/testutil/hfsnapshot"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
)

// TestServeOwnModel is "bring your own model" end to end, through HTTP only: `serve` with
// TRAINYARD_MODELS_DIR holding a small random-weight snapshot with Qwen3's real tokenizer and chat
// template (and a snapshot the engine cannot load, which is skipped with one log line) lists the snapshot
// as a base model, creates a model on it, chats with tools and logprobs, logs the answers, runs an RL job
// on them and an SFT job on an upload, and chats with the new checkpoint.
func TestServeOwnModel(t *testing.T) {
	models := t.TempDir()
	hfsnapshot.WriteQwen3Snapshot(t, filepath.Join(models, "Qwen", "Qwen3-tiny"), hfsnapshot.TinyQwen3, 3)
	if err := os.MkdirAll(filepath.Join(models, "acme", "broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(models, "acme", "broken", "config.json"), []byte(`{"model_type":"mamba"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABASE_URL", pgtest.URL(t))
	t.Setenv("TRAINYARD_DATA_DIR", t.TempDir())
	t.Setenv("TRAINYARD_MODELS_DIR", models)
	t.Setenv("TRAINYARD_HTTP_ADDR", "127.0.0.1:0")
	t.Setenv("TRAINYARD_TEMPORAL_FRONTEND_ADDR", "127.0.0.1:0")
	t.Setenv("TRAINYARD_TEMPORAL_UI_ADDR", "off")
	for _, name := range []string{"TRAINYARD_DEV_API_KEY", "TRAINYARD_BASE_MODELS", "TEMPORAL_ADDRESS", "S3_ENDPOINT",
		"TRAINYARD_S3_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		t.Setenv(name, "")
	}
	s := startServe(t)
	const base = "Qwen/Qwen3-tiny"
	do := func(method, path, body string, want int) map[string]any {
		t.Helper()
		code, m := call(t, method, s.api+path, s.key, body)
		if code != want {
			t.Fatalf("%s %s = %d %v, want %d", method, path, code, m, want)
		}
		return m
	}

	var check map[string]any
	for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		var code int
		if code, check = call(t, "GET", s.api+"/v1/system-check", "", ""); code == 200 {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("system-check = %d %v", code, check)
		}
	}
	if listed := fmt.Sprint(check["base_models"]); !strings.Contains(listed, base) || strings.Contains(listed, "acme/broken") {
		t.Fatalf("system-check base_models = %s", listed)
	}
	bad := do("POST", "/v1/preview/models", `{"project":"own","name":"x","base_model":"Qwen/Nope"}`, 422)
	if js, _ := json.Marshal(bad); !strings.Contains(string(js), base) {
		t.Fatalf("the 422 for an unknown base model does not list %s: %s", base, js)
	}
	model := do("POST", "/v1/preview/models", `{"project":"own","name":"agent","base_model":"`+base+`"}`, 200)
	id := model["id"].(string)

	// Chat with tools and logprobs on the base model.
	tools := `[{"type":"function","function":{"name":"get_weather","description":"Weather of a city",
		"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
	chatBody := func(modelName string) string {
		return `{"model":"` + modelName + `","messages":[{"role":"user","content":"Weather in Paris?"}],"tools":` + tools +
			`,"max_tokens":8,"temperature":1,"seed":1,"n":2,"logprobs":true,"top_logprobs":2}`
	}
	answer := do("POST", "/v1/chat/completions", chatBody(base), 200)
	choices := answer["choices"].([]any)
	for _, c := range choices {
		lps := c.(map[string]any)["logprobs"].(map[string]any)["content"].([]any)
		if len(lps) == 0 || !strings.HasPrefix(lps[0].(map[string]any)["token"].(string), "token_id:") ||
			len(lps[0].(map[string]any)["top_logprobs"].([]any)) != 2 {
			t.Fatalf("choice without logprobs: %v", c)
		}
	}
	// Structured output on the BPE vocabulary: a JSON object, and a forced call in Qwen's <tool_call> format.
	structured := do("POST", "/v1/chat/completions", `{"model":"`+base+`","messages":[{"role":"user","content":"JSON please"}],
		"response_format":{"type":"json_object"},"max_tokens":12,"seed":2}`, 200)
	content := structured["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
	var obj map[string]any
	if err := json.Unmarshal([]byte(content), &obj); err != nil {
		t.Fatalf("json_object answer %q: %v", content, err)
	}
	forced := do("POST", "/v1/chat/completions", `{"model":"`+base+`","messages":[{"role":"user","content":"Weather in Oslo?"}],
		"tools":`+tools+`,"tool_choice":"required","max_tokens":48,"seed":3}`, 200)
	msg := forced["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if calls, _ := msg["tool_calls"].([]any); len(calls) != 1 || !strings.Contains(fmt.Sprint(calls[0]), "get_weather") {
		t.Fatalf("tool_choice required: %v", forced)
	}

	// The sampled choices are trajectories: logged, then trained on by RL.
	choiceJSON := func(i int) string {
		js, _ := json.Marshal(choices[i])
		return string(js)
	}
	group := `{"trajectories":[
		{"messages_and_choices":[{"role":"user","content":"Weather in Paris?"},` + choiceJSON(0) + `],"tools":` + tools + `,"reward":1},
		{"messages_and_choices":[{"role":"user","content":"Weather in Paris?"},` + choiceJSON(1) + `],"tools":` + tools + `,"reward":0}]}`
	logged := do("POST", "/v1/preview/models/"+id+"/log", `{"split":"val","trajectory_groups":[`+group+`]}`, 200)
	if logged["num_trajectories"] != 2.0 {
		t.Fatalf("log = %v", logged)
	}
	waitJob := func(job map[string]any) {
		t.Helper()
		jobID := job["id"].(string)
		for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
			j := do("GET", "/v1/preview/training-jobs/"+jobID, "", 200)
			switch j["status"] {
			case "COMPLETED":
				return
			case "FAILED", "CANCELLED":
				events := do("GET", "/v1/preview/training-jobs/"+jobID+"/events", "", 200)
				t.Fatalf("job %v: %v", j, events)
			}
			if time.Since(start) > time.Minute {
				t.Fatalf("job still %v after a minute", j["status"])
			}
		}
	}
	waitJob(do("POST", "/v1/preview/training-jobs", `{"model_id":"`+id+`","trajectory_groups":[`+group+`],
		"experimental_config":{"learning_rate":1e-3}}`, 200))

	// SFT on an upload: a tool call and a plain answer.
	lines := []string{
		`{"messages":[{"role":"user","content":"Weather in Oslo?"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]}],"tools":` + strings.Join(strings.Fields(tools), " ") + `}`,
		`{"messages":[{"role":"user","content":"Capital of France?"},{"role":"assistant","content":"Paris."}]}`,
	}
	up := do("POST", "/v1/preview/files?project=own&name=facts", strings.Join(lines, "\n")+"\n", 200)
	waitJob(do("POST", "/v1/preview/sft-training-jobs", `{"model_id":"`+id+`","training_data_url":"`+up["url"].(string)+`",
		"config":{"batch_size":2,"learning_rate":1e-3}}`, 200))

	cps := do("GET", "/v1/preview/models/"+id+"/checkpoints?order=desc&limit=1", "", 200)["data"].([]any)
	step := int(cps[0].(map[string]any)["step"].(float64))
	if step != 2 {
		t.Fatalf("newest checkpoint is step %d, want 2 (one RL and one SFT step)", step)
	}
	ref := fmt.Sprintf("wandb-artifact:///local/own/agent:step%d", step)
	trained := do("POST", "/v1/chat/completions", chatBody(ref), 200)
	if len(trained["choices"].([]any)) != 2 {
		t.Fatalf("chat with %s: %v", ref, trained)
	}
}

// TestOpenCatalogSkipsWithOneLine: a snapshot the engine cannot load costs one warning naming its file and
// field, and the rest of the models directory is served.
func TestOpenCatalogSkipsWithOneLine(t *testing.T) {
	models := t.TempDir()
	for _, dir := range []string{"acme/broken", "acme/fine"} {
		if err := os.MkdirAll(filepath.Join(models, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(models, "acme", "broken", "config.json"), []byte(`{"model_type":"mamba"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	c := openCatalog(config.Config{ModelsDir: models}, zap.New(core))
	if logs.Len() != 1 {
		t.Fatalf("%d log lines, want 1: %v", logs.Len(), logs.All())
	}
	e := logs.All()[0]
	reason := e.ContextMap()["reason"].(string)
	if e.ContextMap()["base_model"] != "acme/broken" || !strings.Contains(reason, filepath.Join("acme", "broken", "config.json")) ||
		!strings.Contains(reason, "model_type") {
		t.Fatalf("log line %v", e.ContextMap())
	}
	if c.Has("acme/broken") || !c.Has("trainyard/tiny-chat") {
		t.Fatalf("catalog %v", c.Names())
	}
}
