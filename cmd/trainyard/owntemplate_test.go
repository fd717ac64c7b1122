package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trainyard/trainyard/engine/tokenizer/hf"
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
	serveAndTrain(t, models, base, "llama")
}

// serveAndTrain is issue 22's check through HTTP for the snapshot base in the models directory models:
// `serve` lists it as a base model (also in the 422 for an unknown one), a model named name is created on
// it, 4 rollouts sampled with logprobs for a prompt with a system message are logged and train in an RL
// job (on exactly their sampled ids and end markers, at an importance ratio of 1), plain assistant answers
// (one untrimmed, over two turns) train in an SFT job (on the trimmed answers and end markers), and the
// checkpoints of both steps answer a chat. It returns the rollouts' chat completion response.
func serveAndTrain(t *testing.T, models, base, name string) map[string]any {
	t.Helper()
	t.Setenv("DATABASE_URL", pgtest.URL(t))
	t.Setenv("TRAINYARD_DATA_DIR", t.TempDir())
	t.Setenv("TRAINYARD_MODELS_DIR", models)
	t.Setenv("TRAINYARD_HTTP_ADDR", "127.0.0.1:0")
	t.Setenv("TRAINYARD_TEMPORAL_FRONTEND_ADDR", "127.0.0.1:0")
	t.Setenv("TRAINYARD_TEMPORAL_UI_ADDR", "off")
	for _, v := range []string{"TRAINYARD_DEV_API_KEY", "TRAINYARD_BASE_MODELS", "TEMPORAL_ADDRESS", "S3_ENDPOINT",
		"TRAINYARD_S3_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		t.Setenv(v, "")
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
	if listed := fmt.Sprint(check["base_models"]); !strings.Contains(listed, base) {
		t.Fatalf("system-check base_models = %s, without %s", listed, base)
	}
	bad := do("POST", "/v1/preview/models", `{"project":"own","name":"x","base_model":"acme/nope"}`, 422)
	if js, _ := json.Marshal(bad); !strings.Contains(string(js), base) {
		t.Fatalf("the 422 for an unknown base model does not list %s: %s", base, js)
	}
	id := do("POST", "/v1/preview/models", `{"project":"own","name":"`+name+`","base_model":"`+base+`"}`, 200)["id"].(string)

	prompt := `[{"role":"system","content":"You are terse."},{"role":"user","content":"List the inner planets."}]`
	answer := do("POST", "/v1/chat/completions", `{"model":"`+base+`","messages":`+prompt+
		`,"max_tokens":8,"temperature":1,"seed":1,"n":4,"logprobs":true}`, 200)
	choices := answer["choices"].([]any)
	if len(choices) != 4 {
		t.Fatalf("%d choices, want 4: %v", len(choices), answer)
	}
	var trajectories []string
	sampled := 0
	for i, c := range choices {
		lps, _ := c.(map[string]any)["logprobs"].(map[string]any)["content"].([]any)
		// Random weights over the whole vocabulary do not sample a stop token in 8 tokens (seeded): each
		// turn is 8 sampled ids, and the template closes it with its end-of-turn marker.
		if len(lps) != 8 || !strings.HasPrefix(lps[0].(map[string]any)["token"].(string), "token_id:") ||
			c.(map[string]any)["finish_reason"] != "length" {
			t.Fatalf("choice %d is not 8 sampled tokens with token-id logprobs: %v", i, c)
		}
		sampled += len(lps)
		js, _ := json.Marshal(c)
		msgs := strings.TrimSuffix(prompt, "]") + "," + string(js) + "]"
		trajectories = append(trajectories, `{"messages_and_choices":`+msgs+`,"reward":`+[]string{"0", "1"}[i%2]+`}`)
	}
	groups := `[{"trajectories":[` + strings.Join(trajectories, ",") + `]}]`
	if logged := do("POST", "/v1/preview/models/"+id+"/log", `{"split":"train","trajectory_groups":`+groups+`}`, 200); logged["num_trajectories"] != 4.0 {
		t.Fatalf("log = %v", logged)
	}
	// trainJob waits for a job of one step to complete and returns its gradient_step metrics.
	trainJob := func(job map[string]any) map[string]any {
		t.Helper()
		jobID := job["id"].(string)
		for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
			j := do("GET", "/v1/preview/training-jobs/"+jobID, "", 200)
			switch j["status"] {
			case "COMPLETED":
				events := do("GET", "/v1/preview/training-jobs/"+jobID+"/events", "", 200)
				for _, e := range events["data"].([]any) {
					if e := e.(map[string]any); e["type"] == "gradient_step" {
						return e["data"].(map[string]any)
					}
				}
				t.Fatalf("job %s completed without a gradient step: %v", jobID, events)
			case "FAILED", "CANCELLED":
				t.Fatalf("job %v: %v", j, do("GET", "/v1/preview/training-jobs/"+jobID+"/events", "", 200))
			}
			if time.Since(start) > time.Minute {
				t.Fatalf("job still %v after a minute", j["status"])
			}
		}
	}
	rl := trainJob(do("POST", "/v1/preview/training-jobs", `{"model_id":"`+id+`","trajectory_groups":`+groups+`,
		"experimental_config":{"learning_rate":1e-3}}`, 200))
	// The RL step trains on the sampled ids verbatim plus each turn's end marker, and recomputes their
	// logprobs as the sampler reported them (a first step from the base: an importance ratio of 1).
	if rl["num_trainable_tokens"] != float64(sampled+len(choices)) || math.Abs(rl["mean_importance_ratio"].(float64)-1) > 1e-3 {
		t.Fatalf("RL step %v, want %d trainable tokens (%d sampled, %d end markers) and an importance ratio of 1",
			rl, sampled+len(choices), sampled, len(choices))
	}

	answers := []string{" Mercury, Venus, Earth.\n", "Jupiter, Saturn, Uranus, Neptune.", "Paris."}
	lines := []string{
		`{"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"List the inner planets."},{"role":"assistant","content":` + strconv.Quote(answers[0]) + `},{"role":"user","content":"And the outer ones?"},{"role":"assistant","content":"` + answers[1] + `"}]}`,
		`{"messages":[{"role":"user","content":"Capital of France?"},{"role":"assistant","content":"` + answers[2] + `"}]}`,
	}
	up := do("POST", "/v1/preview/files?project=own&name=planets", strings.Join(lines, "\n")+"\n", 200)
	sft := trainJob(do("POST", "/v1/preview/sft-training-jobs", `{"model_id":"`+id+`","training_data_url":"`+up["url"].(string)+`",
		"config":{"batch_size":2,"learning_rate":1e-3}}`, 200))
	// The SFT step trains on each answer as the template writes it (both families' templates trim) and
	// its end marker.
	tok, err := hf.Load(filepath.Join(models, base))
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, a := range answers {
		want += len(tok.Encode(strings.TrimSpace(a))) + 1
	}
	if sft["num_trainable_tokens"] != float64(want) {
		t.Fatalf("SFT step %v, want %d trainable tokens (the trimmed answers and 3 end markers)", sft, want)
	}

	steps := checkpointStepsOf(t, s.api, s.key, id)
	slices.Sort(steps)
	if !slices.Equal(steps, []int{1, 2}) {
		t.Fatalf("checkpoint steps %v, want [1 2] (one RL and one SFT step)", steps)
	}
	for _, step := range steps {
		ref := fmt.Sprintf("wandb-artifact:///local/own/%s:step%d", name, step)
		chat := do("POST", "/v1/chat/completions", `{"model":"`+ref+`","messages":`+prompt+`,"max_tokens":4,"seed":2}`, 200)
		if c := chat["choices"].([]any); len(c) != 1 || chat["usage"].(map[string]any)["completion_tokens"].(float64) < 1 {
			t.Fatalf("chat with %s: %v", ref, chat)
		}
	}
	return answer
}
