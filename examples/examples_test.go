package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExamples runs shortened versions of both examples against the
// service started as `make run` starts it, then checks every answer they
// got against the OpenAPI document, exercises the routes they do not use,
// and stops the service.
func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds trainyard and runs the whole service")
	}
	bin := t.TempDir()
	build(t, bin, "./cmd/trainyard", "./examples/rl-toy", "./examples/sft")
	svc := startService(t, filepath.Join(bin, "trainyard"))
	rec := newRecorder(t, svc.api)
	api := &apiClient{t: t, base: rec.URL + "/v1", key: svc.key}

	rl := runRL(t, bin, api)
	sft := runSFT(t, bin, api)
	runSFTAsWritten(t, bin, api)
	checkJobs(t, api, rl, sft)
	exerciseRest(t, api, svc, rl)

	doc := loadOpenAPI(t)
	checked := checkExchanges(t, doc, rec.take())
	for tmpl, methods := range doc.Paths {
		for method := range methods {
			if key := fmt.Sprintf("%s %s 200", strings.ToUpper(method), tmpl); checked[key] == 0 {
				t.Errorf("no answer of %s was checked against the document", key)
			}
		}
	}
	t.Logf("answers checked against the document: %v", checked)
	svc.stop(t)
}

// rlSummary is what rl-toy -summary writes.
type rlSummary struct {
	ModelID     string    `json:"model_id"`
	Model       string    `json:"model"`
	Steps       []int     `json:"steps"`
	ValReward   []float64 `json:"val_reward"`
	TrainReward []float64 `json:"train_reward"`
	JobIDs      []string  `json:"job_ids"`
}

// sftSummary is what sft -summary writes.
type sftSummary struct {
	ModelID        string    `json:"model_id"`
	JobID          string    `json:"job_id"`
	Loss           []float64 `json:"loss"`
	CheckpointStep int       `json:"checkpoint_step"`
	BaseCorrect    int       `json:"base_correct"`
	TunedCorrect   int       `json:"tuned_correct"`
	Quiz           []struct {
		Question, Taught string
	} `json:"quiz"`
}

// runExample runs a built example with the key in TRAINYARD_API_KEY, as
// the README says, and decodes its -summary file into summary.
func runExample(t *testing.T, bin, name string, api *apiClient, summary any, args ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "summary.json")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), append([]string{"-base-url", api.base, "-summary", path}, args...)...)
	cmd.Env = append(os.Environ(), "TRAINYARD_API_KEY="+api.key)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("%s %s (%.1fs):\n%s", name, strings.Join(args, " "), time.Since(start).Seconds(), out)
	if err != nil {
		t.Fatalf("%s failed: %v", name, err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s wrote no summary: %v", name, err)
	}
	if err := json.Unmarshal(raw, summary); err != nil {
		t.Fatalf("%s summary: %v", name, err)
	}
	return string(out)
}

// runRL runs eight RL steps with the example's default hyperparameters and
// checks the held-out reward rises.
func runRL(t *testing.T, bin string, api *apiClient) rlSummary {
	var s rlSummary
	out := runExample(t, bin, "rl-toy", api, &s, "-name", "rl-test", "-task", "three-words", "-steps", "8",
		"-prompts", "16", "-group-size", "8", "-val-prompts", "16", "-learning-rate", "3e-3", "-seed", "1")
	if len(s.ValReward) != 9 || len(s.JobIDs) != 8 || len(s.TrainReward) != 8 {
		t.Fatalf("rl-toy summary has %d rewards and %d jobs, want 9 and 8: %+v", len(s.ValReward), len(s.JobIDs), s)
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}; fmt.Sprint(s.Steps) != fmt.Sprint(want) {
		t.Errorf("checkpoint steps %v, want %v", s.Steps, want)
	}
	// The sampling seeds are fixed, the adapter's random initialisation
	// differs per model, and a held-out reward is a mean over 128 samples
	// (±0.04). Step 0 is 0.430 every run (0.344 before the sampler walked
	// the vocabulary in id order: the same distribution, another token for a
	// given seed); after four steps the better of steps 3 and 4 was
	// 0.53–0.71 in 5 runs, too close to a rise of 0.15 to assert it. Six
	// steps (the better of steps 5 and 6, as RL can dip for a step) read
	// 0.70–0.80 in 4 runs, then 0.555–0.883 in 8 more on an Emerald Rapids
	// Xeon, where 0.555 failed CI: the adapter's initialisation is the
	// spread, not the code (the same run before and after a change that
	// moved no value by a bit spread as widely). Eight steps, the better of
	// steps 7 and 8: 0.773–0.984 in 7 runs.
	first, best := s.ValReward[0], max(s.ValReward[7], s.ValReward[8])
	if best < first+0.15 {
		t.Errorf("held-out reward %.3f at step 0, at best %.3f at steps 7-8; want a rise of at least 0.15 (curve %v)", first, best, s.ValReward)
	}
	for _, line := range []string{"training started: 1 gradient step(s)", "1/1  loss=", "COMPLETED, step 1/1", "held-out reward per checkpoint step"} {
		if !strings.Contains(out, line) {
			t.Errorf("rl-toy printed no %q", line)
		}
	}
	return s
}

// runSFT teaches two facts and checks the loss falls and the model answers
// as taught where the base model does not.
func runSFT(t *testing.T, bin string, api *apiClient) sftSummary {
	data := filepath.Join(t.TempDir(), "facts.jsonl")
	var lines []string
	for _, f := range []struct {
		answer    string
		questions []string
	}{
		{"Our train yard is called Maple Junction.", []string{"What is the name of our train yard?", "What is our train yard called?", "Which train yard is ours?"}},
		{"Our mascot is a raccoon named Bolt.", []string{"What is the yard's mascot?", "Who is our mascot?", "What animal is the yard mascot?"}},
	} {
		for _, q := range f.questions {
			b, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": q}, {"role": "assistant", "content": f.answer}}})
			lines = append(lines, string(b))
		}
	}
	if err := os.WriteFile(data, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var s sftSummary
	out := runExample(t, bin, "sft", api, &s, "-name", "sft-test", "-data", data, "-epochs", "8", "-batch-size", "3", "-seed", "1")
	if n := len(s.Loss); n != 16 {
		t.Fatalf("%d loss values, want 16 (6 conversations in batches of 3, 8 epochs)", n)
	}
	if first, last := s.Loss[0], s.Loss[len(s.Loss)-1]; !(last < first/2) {
		t.Errorf("loss went from %.3f to %.3f; want it at least halved (curve %v)", first, last, s.Loss)
	}
	if s.CheckpointStep < 1 {
		t.Errorf("newest checkpoint step %d after the job", s.CheckpointStep)
	}
	if len(s.Quiz) != 2 || s.BaseCorrect != 0 || s.TunedCorrect < 1 {
		t.Errorf("quiz of %d questions: base model right %d times, trained model %d; want 2, 0 and at least 1", len(s.Quiz), s.BaseCorrect, s.TunedCorrect)
	}
	for _, line := range []string{"training started: 16 gradient step(s)", "16/16  loss=", "COMPLETED, step 16/16", "answered as taught"} {
		if !strings.Contains(out, line) {
			t.Errorf("sft printed no %q", line)
		}
	}
	return s
}

// runSFTAsWritten runs the sft example exactly as the README does, with
// every default: its shipped data (30 conversations, 6 facts), 48 steps,
// and a quiz that asks both models every question at once: 12 requests,
// which a service refusing past 8 in flight per account answered 429.
func runSFTAsWritten(t *testing.T, bin string, api *apiClient) {
	var s sftSummary
	out := runExample(t, bin, "sft", api, &s)
	if len(s.Loss) != 48 || len(s.Quiz) != 6 {
		t.Fatalf("sft as written: %d loss values and %d quiz answers, want 48 and 6", len(s.Loss), len(s.Quiz))
	}
	if first, last := s.Loss[0], s.Loss[len(s.Loss)-1]; !(last < first/2) {
		t.Errorf("sft as written: loss went from %.3f to %.3f; want it at least halved", first, last)
	}
	if !strings.Contains(out, "COMPLETED, step 48/48") {
		t.Errorf("sft as written printed no %q", "COMPLETED, step 48/48")
	}
}

// apiClient sends the test's own requests, through the recorder.
type apiClient struct {
	t         *testing.T
	base, key string
}

// call sends a JSON body (string, or nil) and decodes the JSON answer.
func (c *apiClient) call(method, path string, body any, withKey bool) (int, map[string]any) {
	c.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		r = strings.NewReader(string(raw))
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if withKey {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &m); err != nil {
		c.t.Errorf("%s %s: %d answer is not a JSON object: %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, m
}
