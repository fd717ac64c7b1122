package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/api"
	"github.com/trainyard/trainyard/retention"
)

// TestCheckpointPolicyRoutes: a policy given at creation is stored and
// shown; PUT replaces it and applies it at once (rows and objects of the
// checkpoints it does not keep go; the newest always stays), GET reads it,
// DELETE removes it; bad policies are 422 at their field, another
// account's model 404.
func TestCheckpointPolicyRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *api.Config, d *api.Deps) {
		d.Retention = &retention.Pruner{Models: d.Models, Blobs: d.Blobs}
	})
	res := e.call("POST", "/v1/preview/models", map[string]any{"project": "proj", "name": "kept", "base_model": testBaseModels[1],
		"checkpoint_policy": map[string]any{"keep_best_by": map[string]any{"metric": "val/reward"}}})
	mustStatus(t, res, http.StatusOK)
	if p := fmt.Sprint(res.JSON(t)["checkpoint_policy"]); p != "map[keep_best_by:map[direction:max metric:val/reward] keep_last:1]" {
		t.Fatalf("policy at creation = %s", p)
	}
	id := e.createModel("pruned")
	for step := 1; step <= 5; step++ {
		e.addCheckpoint(id, step, map[string]float64{"val/reward": []float64{0, 0.1, 0.9, 0.2, 0.3, 0.1}[step]})
	}
	path := "/v1/preview/models/" + id + "/checkpoint-policy"
	if got := e.call("GET", path, nil).JSON(t); got["checkpoint_policy"] != nil {
		t.Fatalf("a model without a policy: %v", got)
	}
	res = e.call("PUT", path, map[string]any{"keep_last": 2, "keep_best_by": map[string]any{"metric": "val/reward", "direction": "max"}})
	mustStatus(t, res, http.StatusOK)
	if got := fmt.Sprint(res.JSON(t)["deleted_steps"]); got != "[1 3]" {
		t.Fatalf("deleted %s, want [1 3] (2 is the best, 4 and 5 the last two)", got)
	}
	if got := fmt.Sprint(e.steps(id)); got != "[2 4 5]" {
		t.Fatalf("checkpoints left %s", got)
	}
	if e.hasCheckpointFiles(id, 1) || e.hasCheckpointFiles(id, 3) || !e.hasCheckpointFiles(id, 2) {
		t.Fatal("the objects of deleted checkpoints remain, or kept ones went")
	}
	if got := e.call("GET", path, nil).JSON(t); fmt.Sprint(got["checkpoint_policy"]) != "map[keep_best_by:map[direction:max metric:val/reward] keep_last:2]" {
		t.Fatalf("GET = %v", got)
	}
	res = e.call("PUT", path, map[string]any{"keep_last": 1})
	if got := fmt.Sprint(res.JSON(t)["deleted_steps"]); got != "[2 4]" {
		t.Fatalf("keep_last 1 deleted %s", got)
	}
	mustStatus(t, e.call("DELETE", path, nil), http.StatusOK)
	if got := e.call("GET", path, nil).JSON(t); got["checkpoint_policy"] != nil {
		t.Fatalf("after DELETE: %v", got)
	}

	for _, c := range []struct {
		body any
		loc  string
	}{
		{map[string]any{"keep_last": 0}, `["body","keep_last"] greater_than_equal`},
		{map[string]any{"keep_last": "2"}, `["body","keep_last"] int_type`},
		{map[string]any{"keep_best_by": map[string]any{"direction": "up"}}, `["body","keep_best_by","metric"] missing; ["body","keep_best_by","direction"] literal_error`},
		{nil, `["body"] missing`},
	} {
		if got := strings.Join(locs(t, e.call("PUT", path, c.body).Errors(t)), "; "); got != c.loc {
			t.Errorf("PUT %v: %s, want %s", c.body, got, c.loc)
		}
	}
	res = e.call("POST", "/v1/preview/models", map[string]any{"project": "proj", "name": "bad", "base_model": testBaseModels[1],
		"checkpoint_policy": map[string]any{"keep_last": -1}})
	if got := strings.Join(locs(t, res.Errors(t)), "; "); got != `["body","checkpoint_policy","keep_last"] greater_than_equal` {
		t.Errorf("bad policy at creation: %s", got)
	}
	mustStatus(t, e.call("PUT", path, map[string]any{"keep_last": 1}, as(e.otherKey)), http.StatusNotFound)
	mustStatus(t, e.call("GET", path, nil, as(e.otherKey)), http.StatusNotFound)
	mustStatus(t, e.call("GET", "/v1/preview/models/x/checkpoint-policy", nil), http.StatusUnprocessableEntity)
}

// steps lists a model's checkpoint steps through the API.
func (e *env) steps(modelID string) []int {
	e.t.Helper()
	var out []int
	for _, c := range e.call("GET", "/v1/preview/models/"+modelID+"/checkpoints?limit=100", nil).JSON(e.t)["data"].([]any) {
		out = append(out, int(c.(map[string]any)["step"].(float64)))
	}
	return out
}
