package examples_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// checkJobs reads back the examples' jobs: GET shows the final status and
// step/total, and the events carry the progress and metrics to plot.
func checkJobs(t *testing.T, api *apiClient, rl rlSummary, sft sftSummary) {
	for _, id := range rl.JobIDs {
		code, job := api.call("GET", "/preview/training-jobs/"+id, nil, true)
		if code != 200 || job["status"] != "COMPLETED" || job["type"] != "rl" || job["current_step"] != 1.0 || job["total_steps"] != 1.0 {
			t.Errorf("RL job %s = %d %v; want COMPLETED rl at step 1/1", id, code, job)
		}
		events := allEvents(t, api, id, 2)
		checkEvents(t, id, events, 1, "loss", "reward", "reward_std_dev", "num_trainable_tokens")
	}
	n := float64(len(sft.Loss))
	code, job := api.call("GET", "/preview/training-jobs/"+sft.JobID, nil, true)
	if code != 200 || job["status"] != "COMPLETED" || job["type"] != "sft" || job["current_step"] != n || job["total_steps"] != n {
		t.Errorf("SFT job = %d %v; want COMPLETED sft at step %v/%v", code, job, n, n)
	}
	events := allEvents(t, api, sft.JobID, 5)
	checkEvents(t, sft.JobID, events, len(sft.Loss), "loss", "num_trainable_tokens", "learning_rate")
	for i, ev := range events[1 : 1+len(sft.Loss)] {
		if ev["data"].(map[string]any)["loss"] != sft.Loss[i] {
			t.Errorf("gradient_step %d has loss %v, the example printed %v", i+1, ev["data"], sft.Loss[i])
		}
	}

	code, list := api.call("GET", "/preview/training-jobs?model_id="+rl.ModelID, nil, true)
	if data, _ := list["data"].([]any); code != 200 || len(data) != len(rl.JobIDs) {
		t.Errorf("job list of the RL model = %d %v; want its %d jobs", code, list, len(rl.JobIDs))
	}
}

// allEvents pages through a job's events, limit at a time, with the after
// cursor.
func allEvents(t *testing.T, api *apiClient, jobID string, limit int) []map[string]any {
	t.Helper()
	var out []map[string]any
	after := ""
	for page := 0; page < 100; page++ {
		q := url.Values{"limit": {fmt.Sprint(limit)}}
		if after != "" {
			q.Set("after", after)
		}
		code, body := api.call("GET", "/preview/training-jobs/"+jobID+"/events?"+q.Encode(), nil, true)
		data, _ := body["data"].([]any)
		if code != 200 || len(data) > limit {
			t.Fatalf("events of %s = %d %v", jobID, code, body)
		}
		for _, d := range data {
			out = append(out, d.(map[string]any))
		}
		if body["has_more"] != true {
			return out
		}
		after = body["last_id"].(string)
	}
	t.Fatalf("events of %s never end", jobID)
	return nil
}

// checkEvents checks a finished job's events: training_started (sized in
// gradient steps), the steps with numeric metrics, exactly one terminal
// event, last.
func checkEvents(t *testing.T, jobID string, events []map[string]any, steps int, metrics ...string) {
	t.Helper()
	if len(events) != steps+2 {
		t.Fatalf("job %s has %d events, want %d: %v", jobID, len(events), steps+2, events)
	}
	if start := events[0]; start["type"] != "training_started" || start["data"].(map[string]any)["num_sequences"] != float64(steps) {
		t.Errorf("job %s starts with %v; want training_started with num_sequences %d", jobID, start, steps)
	}
	for _, ev := range events[1 : steps+1] {
		data, _ := ev["data"].(map[string]any)
		if ev["type"] != "gradient_step" {
			t.Errorf("job %s: %v where a gradient_step was expected", jobID, ev)
		}
		for k, v := range data {
			if _, ok := v.(float64); !ok {
				t.Errorf("job %s: gradient_step metric %s = %v is not a number", jobID, k, v)
			}
		}
		for _, m := range metrics {
			if _, ok := data[m]; !ok {
				t.Errorf("job %s: gradient_step without %s: %v", jobID, m, data)
			}
		}
	}
	if end := events[len(events)-1]; end["type"] != "training_ended" {
		t.Errorf("job %s ends with %v; want training_ended", jobID, end)
	}
}

// exerciseRest calls what the examples did not: probes, listing pages,
// the trailing-slash chat route, logging, deletes, and typical errors.
func exerciseRest(t *testing.T, api *apiClient, svc *service, rl rlSummary) {
	if code, _ := api.call("GET", "/health", nil, false); code != 200 {
		t.Errorf("health = %d", code)
	}
	if code, body := api.call("GET", "/system-check", nil, false); code != 200 || body["api"] != true {
		t.Errorf("system-check = %d %v", code, body)
	}
	resp, err := http.Get(svc.ui + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("Temporal UI at %s: %v %v", svc.ui, resp, err)
	} else {
		resp.Body.Close()
	}

	create := map[string]any{"entity": nil, "project": "examples", "name": "rl-test", "base_model": "trainyard/tiny-chat", "return_existing": true}
	if code, m := api.call("POST", "/preview/models", create, true); code != 200 || m["id"] != rl.ModelID {
		t.Errorf("registering rl-test again = %d %v; want the same model %s", code, m, rl.ModelID)
	}
	create["return_existing"] = false
	if code, m := api.call("POST", "/preview/models", create, true); code != 409 {
		t.Errorf("registering rl-test without return_existing = %d %v; want 409", code, m)
	}

	ckpts := "/preview/models/" + rl.ModelID + "/checkpoints"
	code, page := api.call("GET", ckpts+"?order=asc&limit=4", nil, true)
	first, _ := page["data"].([]any)
	if code != 200 || len(first) != 4 || page["has_more"] != true {
		t.Fatalf("first page of checkpoints = %d %v", code, page)
	}
	code, page = api.call("GET", ckpts+"?order=asc&limit=4&after="+page["last_id"].(string), nil, true)
	rest, _ := page["data"].([]any)
	if code != 200 || page["has_more"] != false {
		t.Errorf("second page of checkpoints = %d %v; want the last one", code, page)
	}
	all := append(first, rest...)
	for i, c := range all {
		c := c.(map[string]any)
		metrics, _ := c["metrics"].(map[string]any)
		if c["step"] != float64(i+1) || metrics["val/reward"] == nil {
			t.Errorf("checkpoint %d = %v; want step %d with the val/reward rl-toy logged", i, c, i+1)
		}
	}
	if len(all) != 8 {
		t.Errorf("%d checkpoints over two pages, want 8", len(all))
	}

	chat := map[string]any{"model": rl.Model + ":step4", "messages": []any{map[string]any{"role": "user", "content": "What is 4+3?"}},
		"n": 2, "temperature": 1, "max_tokens": 4, "seed": 1}
	code, comp := api.call("POST", "/chat/completions/", chat, true)
	choices, _ := comp["choices"].([]any)
	if code != 200 || len(choices) != 2 {
		t.Fatalf("chat completion = %d %v", code, comp)
	}
	lp, _ := choices[0].(map[string]any)["logprobs"].(map[string]any)
	content, _ := lp["content"].([]any)
	if len(content) == 0 || !strings.HasPrefix(content[0].(map[string]any)["token"].(string), "token_id:") {
		t.Errorf("choice logprobs %v; want token_id:<id> tokens", lp)
	}
	choice := choices[0]
	groups := []any{map[string]any{"trajectories": []any{
		map[string]any{"messages_and_choices": []any{chat["messages"].([]any)[0], choice}, "reward": 1},
		map[string]any{"messages_and_choices": []any{chat["messages"].([]any)[0], choices[1]}, "reward": 0},
	}}}
	code, logged := api.call("POST", "/preview/models/"+rl.ModelID+"/log", map[string]any{"split": "test", "trajectory_groups": groups}, true)
	if metrics, _ := logged["metrics"].(map[string]any); code != 200 || metrics["test/reward"] != 0.5 {
		t.Errorf("log = %d %v; want test/reward 0.5", code, logged)
	}

	code, bad := api.call("POST", "/preview/training-jobs", map[string]any{"model_id": rl.ModelID, "trajectory_groups": []any{}}, true)
	if code != 422 || !strings.Contains(fmt.Sprint(bad["detail"]), "trajectory_groups") {
		t.Errorf("a job without groups = %d %v; want 422 at body.trajectory_groups", code, bad)
	}
	if code, body := api.call("GET", "/preview/training-jobs/00000000-0000-7000-8000-000000000000", nil, true); code != 404 {
		t.Errorf("an unknown job = %d %v; want 404", code, body)
	}
	if code, body := api.call("GET", ckpts, nil, false); code != 401 {
		t.Errorf("checkpoints without a key = %d %v; want 401", code, body)
	}

	code, del := api.call("DELETE", ckpts, map[string]any{"steps": []int{1, 99}}, true)
	if code != 200 || del["deleted_count"] != 1.0 || fmt.Sprint(del["not_found_steps"]) != "[99]" {
		t.Errorf("delete checkpoints 1 and 99 = %d %v", code, del)
	}
	code, gone := api.call("DELETE", "/preview/models/"+rl.ModelID, nil, true)
	if code != 200 || gone["deleted_checkpoints"] != 7.0 {
		t.Errorf("delete the RL model = %d %v; want its 7 remaining checkpoints deleted", code, gone)
	}
}
