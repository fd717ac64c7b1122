package api_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/trainyard/trainyard/api"
)

// page is a decoded list of checkpoints.
type page struct {
	steps           []int
	ids             []string
	firstID, lastID string
	hasMore         bool
	metricsOfFirst  map[string]any
}

func (e *env) listCheckpoints(modelID, query string) page {
	e.t.Helper()
	res := e.call("GET", "/v1/preview/models/"+modelID+"/checkpoints"+query, nil)
	mustStatus(e.t, res, http.StatusOK)
	body := res.JSON(e.t)
	if body["object"] != "list" {
		e.t.Errorf("object = %v", body["object"])
	}
	p := page{firstID: body["first_id"].(string), lastID: body["last_id"].(string), hasMore: body["has_more"].(bool)}
	for i, it := range body["data"].([]any) {
		m := it.(map[string]any)
		p.steps = append(p.steps, int(m["step"].(float64)))
		p.ids = append(p.ids, m["id"].(string))
		if i == 0 {
			p.metricsOfFirst = m["metrics"].(map[string]any)
		}
	}
	return p
}

func TestListCheckpointsPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createModel("paged")
	empty := e.listCheckpoints(id, "")
	if empty.steps != nil || empty.firstID != "" || empty.lastID != "" || empty.hasMore {
		t.Errorf("empty list = %+v", empty)
	}
	for step := 1; step <= 5; step++ {
		e.addCheckpoint(id, step, map[string]float64{"val/reward": float64(step) / 10})
	}

	all := e.listCheckpoints(id, "")
	if !reflect.DeepEqual(all.steps, []int{1, 2, 3, 4, 5}) || all.hasMore {
		t.Fatalf("default page = %+v", all)
	}
	if all.firstID != all.ids[0] || all.lastID != all.ids[4] {
		t.Errorf("first/last ids = %s/%s, want %s/%s", all.firstID, all.lastID, all.ids[0], all.ids[4])
	}
	if all.metricsOfFirst["val/reward"] != 0.1 {
		t.Errorf("metrics = %v", all.metricsOfFirst)
	}

	// Walk forward and backward two at a time, as the client does.
	for _, c := range []struct {
		order string
		pages [][]int
	}{
		{"asc", [][]int{{1, 2}, {3, 4}, {5}}},
		{"desc", [][]int{{5, 4}, {3, 2}, {1}}},
	} {
		after := ""
		for i, want := range c.pages {
			q := "?limit=2&order=" + c.order
			if after != "" {
				q += "&after=" + after
			}
			p := e.listCheckpoints(id, q)
			if !reflect.DeepEqual(p.steps, want) || p.hasMore != (i < len(c.pages)-1) {
				t.Errorf("%s page %d = %v more=%v, want %v", c.order, i, p.steps, p.hasMore, want)
			}
			after = p.lastID
		}
	}
	// The client's "latest step" probe.
	if latest := e.listCheckpoints(id, "?limit=1&order=desc"); !reflect.DeepEqual(latest.steps, []int{5}) || !latest.hasMore {
		t.Errorf("latest = %+v", latest)
	}
	if p := e.listCheckpoints(id, "?after=&limit=2"); !reflect.DeepEqual(p.steps, []int{1, 2}) {
		t.Errorf("an empty cursor gave %v, want the first page", p.steps)
	}
	if p := e.listCheckpoints(id, "?limit=100"); len(p.steps) != 5 {
		t.Errorf("limit=100 gave %v", p.steps)
	}
}

func TestListCheckpointsQueryValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createModel("q")
	base := "/v1/preview/models/" + id + "/checkpoints"
	cases := []struct {
		query string
		want  []string
	}{
		{"?limit=0", []string{`["query","limit"] greater_than_equal`}},
		{"?limit=101", []string{`["query","limit"] less_than_equal`}},
		{"?limit=ten", []string{`["query","limit"] int_parsing`}},
		{"?order=newest", []string{`["query","order"] literal_error`}},
		{"?after=12", []string{`["query","after"] uuid_parsing`}},
		// Everything wrong at once is reported at once.
		{"?after=x&limit=-1&order=up", []string{`["query","after"] uuid_parsing`, `["query","limit"] greater_than_equal`, `["query","order"] literal_error`}},
		// A cursor that is not a checkpoint of this model.
		{"?after=" + uuid.NewString(), []string{`["query","after"] value_error`}},
	}
	for _, c := range cases {
		res := e.call("GET", base+c.query, nil)
		if got := locs(t, res.Errors(t)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.query, got, c.want)
		}
	}
	// FastAPI echoes the query string value and the bound.
	errs := e.call("GET", base+"?limit=0", nil).Errors(t)
	if errs[0]["input"] != "0" || !reflect.DeepEqual(errs[0]["ctx"], map[string]any{"ge": float64(1)}) ||
		errs[0]["msg"] != "Input should be greater than or equal to 1" {
		t.Errorf("limit error = %v", errs[0])
	}
}

func TestCheckpointsOfOtherAccountsAreNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createModel("mine")
	e.addCheckpoint(id, 1, nil)
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/preview/models/" + id + "/checkpoints", ""},
		{"DELETE", "/v1/preview/models/" + id + "/checkpoints", `{"steps":[1]}`},
		{"GET", "/v1/preview/models/" + uuid.NewString() + "/checkpoints", ""},
	} {
		var body any
		if r.body != "" {
			body = r.body
		}
		res := e.call(r.method, r.path, body, as(e.otherKey))
		mustStatus(t, res, http.StatusNotFound)
		if d := res.JSON(t)["detail"].(string); !strings.HasPrefix(d, "Model '") {
			t.Errorf("detail = %q", d)
		}
	}
	if !e.hasCheckpointFiles(id, 1) || len(e.listCheckpoints(id, "").steps) != 1 {
		t.Error("another account's request changed the checkpoints")
	}
}

func TestDeleteCheckpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createModel("prune")
	for step := 1; step <= 5; step++ {
		e.addCheckpoint(id, step, nil)
	}
	res := e.call("DELETE", "/v1/preview/models/"+id+"/checkpoints", `{"steps":[2,4,99,4,99]}`)
	mustStatus(t, res, http.StatusOK)
	want := map[string]any{"deleted_count": float64(2), "not_found_steps": []any{float64(99)}}
	if got := res.JSON(t); !reflect.DeepEqual(got, want) {
		t.Errorf("response = %v, want %v", got, want)
	}
	if got := e.listCheckpoints(id, "").steps; !reflect.DeepEqual(got, []int{1, 3, 5}) {
		t.Errorf("remaining = %v", got)
	}
	if e.hasCheckpointFiles(id, 2) || e.hasCheckpointFiles(id, 4) || !e.hasCheckpointFiles(id, 3) {
		t.Error("objects do not follow the rows")
	}
	res = e.call("DELETE", "/v1/preview/models/"+id+"/checkpoints", `{"steps":[]}`)
	mustStatus(t, res, http.StatusOK)
	if got := res.JSON(t); !reflect.DeepEqual(got, map[string]any{"deleted_count": float64(0), "not_found_steps": []any{}}) {
		t.Errorf("empty delete = %v", got)
	}
}

func TestDeleteCheckpointsValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(cfg *api.Config, _ *api.Deps) { cfg.MaxCheckpointSteps = 50 })
	id := e.createModel("safe")
	for step := 1; step <= 3; step++ {
		e.addCheckpoint(id, step, nil)
	}
	path := "/v1/preview/models/" + id + "/checkpoints"
	huge := "[" + strings.TrimSuffix(strings.Repeat("1,", 51), ",") + "]"
	cases := []struct {
		body string
		want []string
	}{
		{``, []string{`["body"] missing`}},
		{`{}`, []string{`["body","steps"] missing`}},
		{`{"steps":"1,2"}`, []string{`["body","steps"] list_type`}},
		{`{"steps":[1,"two",2.5,null,{}]}`, []string{`["body","steps",1] int_parsing`, `["body","steps",2] int_from_float`,
			`["body","steps",3] int_type`, `["body","steps",4] int_type`}},
		{`{"steps":` + huge + `}`, []string{`["body","steps"] too_long`}},
		{`{"steps":[1,2]`, []string{`["body",14] json_invalid`}},
	}
	for _, c := range cases {
		var body any
		if c.body != "" {
			body = c.body
		}
		res := e.call("DELETE", path, body)
		if got := locs(t, res.Errors(t)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%.40s: %v, want %v", c.body, got, c.want)
		}
	}
	// Lax integers, as pydantic takes them: "1" and 3.0.
	res := e.call("DELETE", path, `{"steps":["1", 3.0]}`)
	mustStatus(t, res, http.StatusOK)
	if res.JSON(t)["deleted_count"] != float64(2) {
		t.Errorf("lax steps: %s", res.Body)
	}
	if got := e.listCheckpoints(id, "").steps; !reflect.DeepEqual(got, []int{2}) {
		t.Errorf("after bad requests and one good one, steps = %v, want [2]", got)
	}
}
