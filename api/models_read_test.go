package api_test

import (
	"net/http"
	"testing"
)

// TestListAndGetModels: GET /v1/preview/models pages through the account's
// models, newest first, each with its newest checkpoint's step and metrics;
// GET /v1/preview/models/{id} reads one. Another account's model is a 404,
// and bad paging parameters are 422s at their loc.
func TestListAndGetModels(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first, second, third := e.createModel("m1"), e.createModel("m2"), e.createModel("m3")
	e.addCheckpoint(first, 1, map[string]float64{"train/loss": 2})
	e.addCheckpoint(first, 2, map[string]float64{"train/loss": 1.5, "val/reward": 0.25})
	theirs := e.call("POST", "/v1/preview/models", artCreate("theirs"), as(e.otherKey)).JSON(t)["id"].(string)

	res := e.call("GET", "/v1/preview/models", nil)
	mustStatus(t, res, http.StatusOK)
	page := res.JSON(t)
	data := page["data"].([]any)
	if len(data) != 3 || page["object"] != "list" || page["has_more"] != false || page["first_id"] != third || page["last_id"] != first {
		t.Fatalf("list = %s", res.Body)
	}
	newest := data[0].(map[string]any)
	if newest["id"] != third || newest["latest_checkpoint"] != nil || newest["entity"] != "team-a" || newest["created_at"] == nil {
		t.Fatalf("newest model = %v", newest)
	}
	cp := data[2].(map[string]any)["latest_checkpoint"].(map[string]any)
	metrics := cp["metrics"].(map[string]any)
	if cp["step"] != float64(2) || metrics["train/loss"] != 1.5 || metrics["val/reward"] != 0.25 || cp["id"] == nil || cp["created_at"] == nil {
		t.Fatalf("the trained model's newest checkpoint = %v", cp)
	}

	// Pages, in both orders.
	res = e.call("GET", "/v1/preview/models?limit=2&order=asc", nil)
	mustStatus(t, res, http.StatusOK)
	page = res.JSON(t)
	if page["first_id"] != first || page["last_id"] != second || page["has_more"] != true {
		t.Fatalf("first asc page = %s", res.Body)
	}
	res = e.call("GET", "/v1/preview/models?limit=2&order=asc&after="+second, nil)
	mustStatus(t, res, http.StatusOK)
	if page = res.JSON(t); page["first_id"] != third || page["has_more"] != false {
		t.Fatalf("second asc page = %s", res.Body)
	}

	res = e.call("GET", "/v1/preview/models/"+first, nil)
	mustStatus(t, res, http.StatusOK)
	one := res.JSON(t)
	if one["name"] != "m1" || one["base_model"] != testBaseModels[1] || one["latest_checkpoint"].(map[string]any)["step"] != float64(2) {
		t.Fatalf("GET model = %s", res.Body)
	}

	// Another account's model is not found, whichever way it is asked for.
	res = e.call("GET", "/v1/preview/models/"+theirs, nil)
	mustStatus(t, res, http.StatusNotFound)
	if d := res.JSON(t)["detail"]; d != "Model '"+theirs+"' not found." {
		t.Errorf("404 detail = %v", d)
	}
	res = e.call("GET", "/v1/preview/models", nil, as(e.otherKey))
	if data := res.JSON(t)["data"].([]any); len(data) != 1 || data[0].(map[string]any)["id"] != theirs {
		t.Fatalf("team-b lists %s", res.Body)
	}

	for _, tc := range []struct{ path, loc string }{
		{"/v1/preview/models?limit=0", `["query","limit"] greater_than_equal`},
		{"/v1/preview/models?limit=101", `["query","limit"] less_than_equal`},
		{"/v1/preview/models?order=newest", `["query","order"] literal_error`},
		{"/v1/preview/models?after=nope", `["query","after"] uuid_parsing`},
		{"/v1/preview/models/nope", `["path","model_id"] uuid_parsing`},
	} {
		if got := locs(t, e.call("GET", tc.path, nil).Errors(t)); len(got) != 1 || got[0] != tc.loc {
			t.Errorf("GET %s: errors %v, want %s", tc.path, got, tc.loc)
		}
	}
	mustStatus(t, e.call("GET", "/v1/preview/models", nil, as("")), http.StatusUnauthorized)
	mustStatus(t, e.call("GET", "/v1/preview/models/"+first, nil, as("ty_wrong")), http.StatusUnauthorized)
}
