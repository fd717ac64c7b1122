package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/api"
)

// TestChoiceTokensAndLogprobsAreChecked: a Choice's token_id: tokens must
// name an id in decimal, and its logprobs must be log probabilities (finite,
// at most 0); anything else is a 422 at the field that echoes the value sent,
// on the training-job route and the log route alike, instead of a token
// taken as text or a trajectory dropped in training.
func TestChoiceTokensAndLogprobsAreChecked(t *testing.T) {
	t.Parallel()
	e, _ := newJobsEnv(t, func(_ *api.Config, d *api.Deps) { d.Bases = builtinBases{} })
	model := e.createModel("tokens")
	traj := func(token, logprob string) string {
		return `{"messages_and_choices": [{"role": "user", "content": "2+3?"}, {"index": 0, "finish_reason": "stop",
			"message": {"role": "assistant", "content": "5"}, "logprobs": {"content": [{"token": ` + token + `, "logprob": ` + logprob +
			`, "bytes": [53], "top_logprobs": []}]}}], "reward": 1}`
	}
	job := func(token, logprob string) string {
		return fmt.Sprintf(`{"model_id": %q, "trajectory_groups": [{"trajectories": [%s, %s]}]}`,
			model, traj(token, logprob), strings.Replace(traj(`"token_id:53"`, "-0.1"), `"reward": 1`, `"reward": 0`, 1))
	}
	logged := func(token, logprob string) string {
		return fmt.Sprintf(`{"model_id": %q, "split": "train", "trajectory_groups": [{"trajectories": [%s]}]}`, model, traj(token, logprob))
	}
	mustStatus(t, e.call("POST", "/v1/preview/training-jobs", job(`"token_id:53"`, "0")), http.StatusOK)
	mustStatus(t, e.call("POST", "/v1/preview/training-jobs", job(`"5"`, "-0.5")), http.StatusOK) // a token's text

	const at = `["body","trajectory_groups",0,"trajectories",0,"messages_and_choices",1,"logprobs","content",0,`
	for _, c := range []struct {
		token, logprob string
		loc, typ       string
		input          any
	}{
		{`"token_id:-1"`, "-0.1", at + `"token"]`, "value_error", "token_id:-1"},
		{`"token_id:0x10"`, "-0.1", at + `"token"]`, "value_error", "token_id:0x10"},
		{`"token_id:12345678901234567890123"`, "-0.1", at + `"token"]`, "value_error", "token_id:12345678901234567890123"},
		{`"token_id:053"`, "-0.1", at + `"token"]`, "value_error", "token_id:053"},
		{`"token_id:"`, "-0.1", at + `"token"]`, "value_error", "token_id:"},
		{`"token_id:53"`, "1e39", at + `"logprob"]`, "less_than_equal", 1e39},
		{`"token_id:53"`, "0.5", at + `"logprob"]`, "less_than_equal", 0.5},
		{`"token_id:53"`, "-1e400", at + `"logprob"]`, "finite_number", nil},
	} {
		for _, req := range []struct{ path, body string }{
			{"/v1/preview/training-jobs", job(c.token, c.logprob)},
			{"/v1/preview/models/" + model + "/log", logged(c.token, c.logprob)},
		} {
			errs := e.call("POST", req.path, req.body).Errors(t)
			if len(errs) != 1 {
				t.Errorf("%s %s %s: errors %v, want one", req.path, c.token, c.logprob, errs)
				continue
			}
			loc, _ := json.Marshal(errs[0]["loc"])
			if string(loc) != c.loc || errs[0]["type"] != c.typ {
				t.Errorf("%s %s %s: error %v, want %s at %s", req.path, c.token, c.logprob, errs[0], c.typ, c.loc)
			}
			if c.input != nil && errs[0]["input"] != c.input {
				t.Errorf("%s %s %s: input = %#v, want %#v", req.path, c.token, c.logprob, errs[0]["input"], c.input)
			}
		}
	}

	// An unsupported option's 422 shows the value sent.
	body := fmt.Sprintf(`{"model_id": %q, "trajectory_groups": [{"trajectories": [%s]}], "experimental_config": {"adam_params": {"beta1": 0.8}}}`,
		model, traj(`"token_id:53"`, "-0.1"))
	errs := e.call("POST", "/v1/preview/training-jobs", body).Errors(t)
	if len(errs) != 1 || fmt.Sprint(errs[0]["loc"]) != "[body experimental_config adam_params]" {
		t.Fatalf("adam_params: errors %v", errs)
	}
	if in, _ := json.Marshal(errs[0]["input"]); string(in) != `{"beta1":0.8}` {
		t.Errorf("adam_params: input = %s, want the object sent", in)
	}
}

// TestRejectedInputsAreEchoed: the 422s that training's own checks raise echo what was sent at the place
// they are about: a trajectory longer than the model's context (at the trajectory, with the trajectory), and
// a line of an upload that training cannot read (at the line, with its text).
func TestRejectedInputsAreEchoed(t *testing.T) {
	t.Parallel()
	e, _ := newJobsEnv(t, func(_ *api.Config, d *api.Deps) { d.Bases = builtinBases{} })
	model := e.createModel("echo")
	traj := func(question string, reward int) string {
		return fmt.Sprintf(`{"messages_and_choices": [{"role": "user", "content": %q}, {"index": 0, "finish_reason": "stop",
			"message": {"role": "assistant", "content": "5"}, "logprobs": {"content": [{"token": "token_id:53", "logprob": -0.1,
			"bytes": [53], "top_logprobs": []}]}}], "reward": %d}`, question, reward)
	}
	body := fmt.Sprintf(`{"model_id": %q, "trajectory_groups": [{"trajectories": [%s, %s]}]}`, model, traj("2+3?", 1), traj(strings.Repeat("2+3? ", 2000), 0))
	errs := e.call("POST", "/v1/preview/training-jobs", body).Errors(t)
	if len(errs) != 1 {
		t.Fatalf("a trajectory longer than the context: errors %v, want one", errs)
	}
	input, _ := errs[0]["input"].(map[string]any)
	if loc, _ := json.Marshal(errs[0]["loc"]); string(loc) != `["body","trajectory_groups",0,"trajectories",1]` || input["reward"] != 0.0 {
		t.Errorf("a trajectory longer than the context: %v, want the second trajectory, echoed", errs[0])
	}

	bad := `{"messages": [{"role": "user", "content": "hi"}]}`
	res := e.call("POST", "/v1/preview/files?project=p&name=bad", `{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}`+"\n"+bad+"\n")
	errs = res.Errors(t)
	if len(errs) != 1 {
		t.Fatalf("an upload with a bad line: errors %v, want one", errs)
	}
	if loc, _ := json.Marshal(errs[0]["loc"]); string(loc) != `["body",2]` || errs[0]["input"] != bad {
		t.Errorf("an upload with a bad line: %v, want line 2 and its text", errs[0])
	}
}
