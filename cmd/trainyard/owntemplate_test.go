package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trainyard/trainyard/internal/testutil/hfsnapshot"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
)

// TestServeLlama3OriginalTemplate is issue 22's report through HTTP: `serve` on a random-weight snapshot
// with Llama 3's tokenizer and Meta-Llama-3-8B-Instruct's original chat template (it trims every message
// and always appends the assistant header). Rollouts sampled by the service with their logprobs train in
// an RL job, and plain assistant answers (untrimmed, over two turns) in an SFT job; both used to be
// refused with "no end-of-turn marker closes it".
func TestServeLlama3OriginalTemplate(t *testing.T) {
	models := t.TempDir()
	const base = "meta-llama/Llama-3-tiny"
	hfsnapshot.WriteTemplateSnapshot(t, filepath.Join(models, base), hfsnapshot.TinyLlama3, 3, hfsnapshot.Llama3Tokenizer, "llama3")
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
	do := func(method, path, body string, want int) map[string]any {
		t.Helper()
		code, m := call(t, method, s.api+path, s.key, body)
		if code != want {
			t.Fatalf("%s %s = %d %v, want %d", method, path, code, m, want)
		}
		return m
	}
	for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		code, check := call(t, "GET", s.api+"/v1/system-check", "", "")
		if code == 200 {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("system-check = %d %v", code, check)
		}
	}
	id := do("POST", "/v1/preview/models", `{"project":"own","name":"llama","base_model":"`+base+`"}`, 200)["id"].(string)

	prompt := `[{"role":"system","content":"You are terse."},{"role":"user","content":"List the inner planets."}]`
	answer := do("POST", "/v1/chat/completions", `{"model":"`+base+`","messages":`+prompt+
		`,"max_tokens":8,"temperature":1,"seed":1,"n":4,"logprobs":true}`, 200)
	var trajectories []string
	for i, c := range answer["choices"].([]any) {
		js, _ := json.Marshal(c)
		msgs := strings.TrimSuffix(prompt, "]") + "," + string(js) + "]"
		trajectories = append(trajectories, `{"messages_and_choices":`+msgs+`,"reward":`+[]string{"0", "1"}[i%2]+`}`)
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
				t.Fatalf("job %v: %v", j, do("GET", "/v1/preview/training-jobs/"+jobID+"/events", "", 200))
			}
			if time.Since(start) > time.Minute {
				t.Fatalf("job still %v after a minute", j["status"])
			}
		}
	}
	waitJob(do("POST", "/v1/preview/training-jobs", `{"model_id":"`+id+`","trajectory_groups":[{"trajectories":[`+
		strings.Join(trajectories, ",")+`]}],"experimental_config":{"learning_rate":1e-3}}`, 200))

	lines := []string{
		`{"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"List the inner planets."},{"role":"assistant","content":" Mercury, Venus, Earth.\n"},{"role":"user","content":"And the outer ones?"},{"role":"assistant","content":"Jupiter, Saturn, Uranus, Neptune."}]}`,
		`{"messages":[{"role":"user","content":"Capital of France?"},{"role":"assistant","content":"Paris."}]}`,
	}
	up := do("POST", "/v1/preview/files?project=own&name=planets", strings.Join(lines, "\n")+"\n", 200)
	waitJob(do("POST", "/v1/preview/sft-training-jobs", `{"model_id":"`+id+`","training_data_url":"`+up["url"].(string)+`",
		"config":{"batch_size":2,"learning_rate":1e-3}}`, 200))
	cps := do("GET", "/v1/preview/models/"+id+"/checkpoints?order=desc&limit=1", "", 200)["data"].([]any)
	if step := int(cps[0].(map[string]any)["step"].(float64)); step != 2 {
		t.Fatalf("newest checkpoint is step %d, want 2 (one RL and one SFT step)", step)
	}
}
