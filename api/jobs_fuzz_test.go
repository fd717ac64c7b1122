package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/api"
)

// FuzzTrainingJobRequest checks the promise of the job routes: an RL job the
// API accepts (200) trains. Every accepted body is prepared and trained for
// its one step by the real activities, on the built-in base model, from what
// the API stored; any failure there is a body the API should have refused.
// The seeds (f.Add and testdata/fuzz) include lax-typed values that pydantic
// coerces (a reward as a string, an integral float for an int) and values at
// the edges of the documented ranges.
func FuzzTrainingJobRequest(f *testing.F) {
	choice := func(content, token string) string {
		return `{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ` + content +
			`}, "logprobs": {"content": [{"token": "` + token + `", "logprob": -0.5, "bytes": [], "top_logprobs": []}]}}`
	}
	traj := func(reward, item string) string {
		return `{"messages_and_choices": [{"role": "user", "content": "What is 2+3?"}, ` + item + `], "reward": ` + reward + `}`
	}
	group := func(a, b string) string { return `[{"trajectories": [` + a + `, ` + b + `]}]` }
	f.Add(group(traj("1", choice(`"5"`, "token_id:53")), traj("0", choice(`"6"`, "token_id:54"))), `{"learning_rate": 1e-3}`)
	f.Add(group(traj(`"0.75"`, choice(`"5"`, "token_id:53")), traj("0", choice(`"6"`, "token_id:263"))), `null`)
	f.Add(group(traj("1e6", choice(`"5"`, "5")), traj("-1e6", choice(`""`, "token_id:0"))), `{"learning_rate": 0.1, "loss_fn": "ppo", "epsilon": 100}`)
	f.Add(group(traj("1", choice(`null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{\"a\": [1]}"}}]`, "token_id:1")),
		traj("0", `{"role": "assistant", "content": "plain"}`)), `{"scale_rewards": false, "num_trajectories_learning_rate_multiplier_power": 2, "learning_rate": 0.1}`)
	f.Add(group(traj("1", choice(`"<|im_start|>user\nhi<|im_end|>"`, "token_id:257")), traj("0.5", choice(`"x"`, "token_id:264"))), `{"importance_sampling_level": "sequence"}`)
	f.Add(group(traj("1", choice(`"`+strings.Repeat("long ", 300)+`"`, "x")), traj("0", choice(`"y"`, "y"))), `{}`)
	f.Add(`[{"trajectories": []}]`, `{"kl_penalty_coef": 0.5}`)

	e, _ := newJobsEnv(f, func(_ *api.Config, d *api.Deps) { d.Bases = builtinBases{} })
	acts, err := activities.New(activities.Deps{Jobs: e.db, Events: e.db, Models: e.db, Blobs: e.blobs, Queue: e.db,
		Bases: builtinBases{}, Logger: zap.NewNop()}, activities.Config{})
	if err != nil {
		f.Fatal(err)
	}
	models := map[string]bool{}
	f.Fuzz(func(t *testing.T, groups, experimental string) {
		e.t = t // the env's helpers report to this input's test
		// One model per input keeps every job first in line.
		name := fmt.Sprintf("fuzz-%d", len(models))
		model := e.createModel(name)
		models[name] = true
		body := fmt.Sprintf(`{"model_id": %q, "trajectory_groups": %s, "experimental_config": %s}`, model, groups, experimental)
		res := e.call("POST", "/v1/preview/training-jobs", body)
		switch {
		case res.Status == http.StatusUnprocessableEntity, res.Status == http.StatusBadRequest: // refused: invalid, or not UTF-8
			return
		case res.Status != http.StatusOK:
			t.Fatalf("status %d for %s: %s", res.Status, body, res.Body)
		}
		id := res.JSON(t)["id"].(string)
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		env.RegisterActivity(acts)
		env.SetTestTimeout(time.Minute)
		v, err := env.ExecuteActivity(acts.Prepare, activities.PrepareInput{JobID: id, Kind: trainyard.JobKindRL})
		if err != nil {
			t.Fatalf("accepted, then Prepare failed: %v\nbody: %s", err, body)
		}
		var prep activities.PrepareResult
		if err := v.Get(&prep); err != nil {
			t.Fatal(err)
		}
		env = s.NewTestActivityEnvironment()
		env.RegisterActivity(acts)
		env.SetTestTimeout(time.Minute)
		v, err = env.ExecuteActivity(acts.Train, activities.TrainInput{JobID: id, TotalSteps: prep.TotalSteps})
		if err != nil {
			t.Fatalf("accepted, then Train failed: %v\nbody: %s", err, body)
		}
		var tr activities.TrainResult
		if err := v.Get(&tr); err != nil || tr.Done != prep.TotalSteps {
			js, _ := json.Marshal(tr)
			t.Fatalf("Train = %s, %v", js, err)
		}
	})
}
