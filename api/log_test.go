package api_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
)

// Trajectories as the ART client sends them: system/user messages, a Choice
// with logprobs and extra fields, tools, metadata with a null, and fields
// the document does not know (which must be kept byte for byte).
var artTrajectories = [][]string{
	{
		`{"messages_and_choices": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": [{"type": "text", "text": "2+2?"}]}, {"finish_reason": "stop", "index": 0, "message": {"role": "assistant", "content": "4", "tool_calls": null}, "logprobs": {"content": [{"token": "token_id:19", "logprob": -0.01, "bytes": [52], "top_logprobs": []}]}, "token_ids": [19]}], "tools": null, "additional_histories": [], "reward": 1.0, "initial_policy_version": null, "final_policy_version": 0, "metrics": {"correct": true, "latency": 0.5}, "auto_metrics": {}, "metadata": {"task": "add", "seed": 3, "note": null}, "logs": ["ok"], "custom_field": {"kept": [1, 2]}}`,
		`{"reward": 0, "messages_and_choices": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "5"}], "metrics": {"correct": false, "latency": 1.5}}`,
	},
	{
		`{"messages_and_choices": [{"role": "developer", "content": "Use tools."}, {"role": "user", "content": "weather?"}, {"finish_reason": "tool_calls", "index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]}, "logprobs": null}, {"role": "tool", "tool_call_id": "c1", "content": "rain"}], "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}], "additional_histories": [{"messages_and_choices": [{"role": "user", "content": "hi"}], "tools": null}], "reward": 0.5, "start_time": "2025-01-02T03:04:05Z"}`,
	},
}

func logBody(modelID, split string, groups [][]string) string {
	var gs []string
	for _, g := range groups {
		gs = append(gs, `{"trajectories": [`+strings.Join(g, ", ")+`], "exceptions": [], "metadata": {}}`)
	}
	return fmt.Sprintf(`{"model_id": %q, "split": %q, "trajectory_groups": [%s]}`, modelID, split, strings.Join(gs, ", "))
}

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestLogStoresTrajectoriesAndMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createModel("logged")
	e.addCheckpoint(id, 3, map[string]float64{"train/loss": 0.25})

	res := e.call("POST", "/v1/preview/models/"+id+"/log", logBody(id, "val", artTrajectories))
	mustStatus(t, res, http.StatusOK)
	body := res.JSON(t)
	if body["step"] != float64(3) || body["split"] != "val" || body["num_groups"] != float64(2) || body["num_trajectories"] != float64(3) {
		t.Errorf("response = %s", res.Body)
	}
	want := map[string]float64{
		"val/reward":                      0.5,
		"val/reward_std_dev":              math.Sqrt(0.5 / 3),
		"val/reward_std_dev_within_group": 0.5,
		"val/num_groups":                  2,
		"val/num_trajectories":            3,
		"val/correct":                     0.5,
		"val/latency":                     1.0,
	}
	metrics := body["metrics"].(map[string]any)
	for k, v := range want {
		if got, ok := metrics[k].(float64); !ok || !approx(got, v) {
			t.Errorf("metric %s = %v, want %v", k, metrics[k], v)
		}
	}

	ctx := context.Background()
	logs, err := e.db.ListLogs(ctx, id, trainyard.ListOptions{})
	if err != nil || len(logs.Items) != 1 {
		t.Fatalf("log records = %v, %v", logs, err)
	}
	rec := logs.Items[0]
	if rec.ID != body["id"] || rec.Step != 3 || rec.Split != "val" || rec.NumTrajectories != 3 {
		t.Errorf("stored record = %+v", rec)
	}
	rows, err := e.db.ListTrajectories(ctx, rec.ID)
	if err != nil || len(rows) != 3 {
		t.Fatalf("trajectories = %d, %v", len(rows), err)
	}
	for _, r := range rows {
		if sent := artTrajectories[r.GroupIndex][r.Index]; string(r.Body) != sent {
			t.Errorf("trajectory %d/%d stored as\n%s\nwant byte for byte\n%s", r.GroupIndex, r.Index, r.Body, sent)
		}
	}
	// The split's metrics joined the checkpoint's.
	cp := e.listCheckpoints(id, "")
	if cp.metricsOfFirst["train/loss"] != 0.25 || cp.metricsOfFirst["val/reward"] != 0.5 {
		t.Errorf("checkpoint metrics = %v", cp.metricsOfFirst)
	}
}

func TestLogBeforeAnyCheckpointIsStep0(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createModel("fresh")
	// pydantic's lax mode takes a numeric string for a number.
	res := e.call("POST", "/v1/preview/models/"+id+"/log",
		`{"split":"train","trajectory_groups":[{"trajectories":[{"messages_and_choices":[],"reward":"0.75"}]}]}`)
	mustStatus(t, res, http.StatusOK)
	body := res.JSON(t)
	if body["step"] != float64(0) || body["metrics"].(map[string]any)["train/reward"] != 0.75 {
		t.Errorf("response = %s", res.Body)
	}
	// An empty log is allowed and counted.
	res = e.call("POST", "/v1/preview/models/"+id+"/log", `{"split":"val","trajectory_groups":[]}`)
	mustStatus(t, res, http.StatusOK)
	if m := res.JSON(t)["metrics"].(map[string]any); m["val/num_trajectories"] != float64(0) {
		t.Errorf("metrics = %v", m)
	}
}

func TestLogReportsEveryError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createModel("strict")
	bad := `{"split": 5, "trajectory_groups": [
	  {"trajectories": [
	    {"messages_and_choices": [], "reward": 1},
	    {"messages_and_choices": []},
	    {"messages_and_choices": "hi", "reward": "abc"}]},
	  {"trajectories": {}},
	  7,
	  {"trajectories": [{"messages_and_choices": [
	      {"content": "x"},
	      {"role": "wizard", "content": "x"},
	      {"finish_reason": "stop", "index": "0", "message": {"role": "user"}},
	      {"role": "user", "content": 3}],
	    "reward": 0, "initial_policy_version": 1.5, "metrics": {"score": "high"},
	    "metadata": {"k": [1]}, "logs": [1]}]}]}`
	res := e.call("POST", "/v1/preview/models/"+id+"/log", bad)
	g := `["body","trajectory_groups",`
	t3 := g + `3,"trajectories",0,`
	want := []string{
		`["body","split"] string_type`,
		g + `0,"trajectories",1,"reward"] missing`,
		g + `0,"trajectories",2,"messages_and_choices"] list_type`,
		g + `0,"trajectories",2,"reward"] float_parsing`,
		g + `1,"trajectories"] list_type`,
		g + `2] model_attributes_type`,
		t3 + `"messages_and_choices",0,"role"] missing`,
		t3 + `"messages_and_choices",1,"role"] literal_error`,
		t3 + `"messages_and_choices",2,"index"] int_type`,
		t3 + `"messages_and_choices",2,"message","role"] literal_error`,
		t3 + `"messages_and_choices",3,"content","str"] string_type`,
		t3 + `"messages_and_choices",3,"content","list"] list_type`,
		t3 + `"initial_policy_version"] int_from_float`,
		t3 + `"metrics","score","float"] float_parsing`,
		t3 + `"metrics","score","int"] int_parsing`,
		t3 + `"metrics","score","bool"] bool_parsing`,
		t3 + `"metadata","k","float"] float_type`,
		t3 + `"metadata","k","int"] int_type`,
		t3 + `"metadata","k","str"] string_type`,
		t3 + `"metadata","k","bool"] bool_type`,
		t3 + `"logs",0] string_type`,
	}
	errs := res.Errors(t)
	if got := locs(t, errs); !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Spot-check pydantic's wording and the echoed inputs.
	if errs[1]["msg"] != "Field required" || !reflect.DeepEqual(errs[1]["input"], map[string]any{"messages_and_choices": []any{}}) {
		t.Errorf("missing reward = %v", errs[1])
	}
	if errs[3]["msg"] != "Input should be a valid number, unable to parse string as a number" || errs[3]["input"] != "abc" {
		t.Errorf("bad reward = %v", errs[3])
	}
	if l, _ := e.db.ListLogs(context.Background(), id, trainyard.ListOptions{}); len(l.Items) != 0 {
		t.Error("a rejected log stored records")
	}
}

func TestLogRejectsBadBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createModel("bodies")
	path := "/v1/preview/models/" + id + "/log"
	for _, c := range []struct {
		body string
		want []string
	}{
		{`{}`, []string{`["body","split"] missing`, `["body","trajectory_groups"] missing`}},
		{`"log"`, []string{`["body"] model_attributes_type`}},
		{`{"split":"val","trajectory_groups":[{"trajectories":[{"messages_and_choices":[],"reward":1}]}]`, []string{`["body",94] json_invalid`}},
		{`{"split":"a/b","trajectory_groups":[]}`, []string{`["body","split"] string_pattern_mismatch`}},
		{`{"split":"val","trajectory_groups":[{"trajectories":[{"messages_and_choices":[],"reward":1e999}]}]}`,
			[]string{`["body","trajectory_groups",0,"trajectories",0,"reward"] finite_number`}},
		{`{"split":"val","trajectory_groups":[{"trajectories":[{"messages_and_choices":[],"reward":1,"metrics":{"a\u0000b":1}}]}]}`,
			[]string{`["body","trajectory_groups",0,"trajectories",0,"metrics","a\u0000b"] value_error`}},
		// Rewards past the documented range (whose mean and spread would overflow).
		{`{"split":"val","trajectory_groups":[{"trajectories":[{"messages_and_choices":[],"reward":1e308},{"messages_and_choices":[],"reward":-1e7}]}]}`,
			[]string{`["body","trajectory_groups",0,"trajectories",0,"reward"] less_than_equal`,
				`["body","trajectory_groups",0,"trajectories",1,"reward"] greater_than_equal`}},
		// Metrics whose mean overflows.
		{`{"split":"val","trajectory_groups":[{"trajectories":[{"messages_and_choices":[],"reward":1,"metrics":{"m":1e308}},{"messages_and_choices":[],"reward":1,"metrics":{"m":1e308}}]}]}`,
			[]string{`["body","trajectory_groups"] value_error`}},
	} {
		res := e.call("POST", path, c.body)
		if got := locs(t, res.Errors(t)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%.50s: %v, want %v", c.body, got, c.want)
		}
	}
	// Path and body problems come back together, path first, as in FastAPI.
	res := e.call("POST", "/v1/preview/models/nope/log", `{}`)
	want := []string{`["path","model_id"] uuid_parsing`, `["body","split"] missing`, `["body","trajectory_groups"] missing`}
	if got := locs(t, res.Errors(t)); !reflect.DeepEqual(got, want) {
		t.Errorf("path+body: %v, want %v", got, want)
	}
	// Another account's model is not found and gets nothing.
	res = e.call("POST", path, `{"split":"val","trajectory_groups":[]}`, as(e.otherKey))
	mustStatus(t, res, http.StatusNotFound)
	if l, _ := e.db.ListLogs(context.Background(), id, trainyard.ListOptions{}); len(l.Items) != 0 {
		t.Error("rejected logs stored records")
	}
}

func TestLogHugeArrays(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createModel("huge")
	path := "/v1/preview/models/" + id + "/log"

	// 100k wrong items: the answer lists the first MaxErrors and stays small.
	items := strings.TrimSuffix(strings.Repeat("1,", 100000), ",")
	res := e.call("POST", path, `{"split":"val","trajectory_groups":[`+items+`]}`)
	errs := res.Errors(t)
	if len(errs) != validate.MaxErrors {
		t.Errorf("listed %d errors, want %d", len(errs), validate.MaxErrors)
	}
	if last := locs(t, errs[len(errs)-1:])[0]; last != fmt.Sprintf(`["body","trajectory_groups",%d] model_attributes_type`, validate.MaxErrors-1) {
		t.Errorf("last listed error = %s", last)
	}

	// 5000 valid trajectories are all stored.
	traj := `{"messages_and_choices":[{"role":"user","content":"q"}],"reward":1}`
	group := `{"trajectories":[` + strings.TrimSuffix(strings.Repeat(traj+",", 100), ",") + `]}`
	groups := strings.TrimSuffix(strings.Repeat(group+",", 50), ",")
	res = e.call("POST", path, `{"split":"train","trajectory_groups":[`+groups+`]}`)
	mustStatus(t, res, http.StatusOK)
	rows, err := e.db.ListTrajectories(context.Background(), res.JSON(t)["id"].(string))
	if err != nil || len(rows) != 5000 {
		t.Errorf("stored %d trajectories (%v), want 5000", len(rows), err)
	}
}
