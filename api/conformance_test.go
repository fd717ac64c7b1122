package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestConformance sends, for every route of the document this server
// implements, a request that succeeds and one that fails validation, and
// checks both bodies against the schema the document gives for that route
// and status. (Every other test's responses are checked the same way by
// env.call; this test makes sure each documented pair is exercised.)
func TestConformance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := loadDoc(t)
	id := e.createModel("conform")
	e.addCheckpoint(id, 1, map[string]float64{"val/reward": 1})
	gone := e.createModel("gone")
	base := "/v1/preview/models/"
	cases := []struct {
		method, path string
		body         any
		status       int
	}{
		{"GET", "/v1/health", nil, 200},
		{"GET", "/v1/system-check", nil, 200},
		{"POST", base[:len(base)-1], artCreate("c1"), 200},
		{"POST", base[:len(base)-1], `{"name":1}`, 422},
		{"GET", base + id + "/checkpoints", nil, 200},
		{"GET", base + id + "/checkpoints?limit=1&order=desc", nil, 200},
		{"GET", base + id + "/checkpoints?limit=x", nil, 422},
		{"POST", base + id + "/log", logBody(id, "val", artTrajectories), 200},
		{"POST", base + id + "/log", `{"split":"val","trajectory_groups":[{}]}`, 422},
		{"DELETE", base + id + "/checkpoints", `{"steps":[1,7]}`, 200},
		{"DELETE", base + id + "/checkpoints", `{"steps":"all"}`, 422},
		{"DELETE", base + gone, nil, 200},
		{"DELETE", base + "x", nil, 422},
	}
	for _, c := range cases {
		res := e.call(c.method, c.path, c.body)
		if res.Status != c.status {
			t.Errorf("%s %s = %d, want %d: %s", c.method, c.path, res.Status, c.status, res.Body)
			continue
		}
		path, _, _ := strings.Cut(c.path, "?")
		if _, ok := d.responseSchema(c.method, path, c.status); !ok {
			t.Errorf("%s %s -> %d is not in the document", c.method, path, c.status)
		}
	}
	// The errors the document leaves out use FastAPI's {"detail": str}.
	for _, res := range []result{
		e.call("GET", base+id+"/checkpoints", nil, as("")),
		e.call("DELETE", base+gone, nil),
		e.call("POST", base[:len(base)-1], map[string]any{"project": "proj", "name": "c1", "base_model": testBaseModels[0]}),
		e.call("PATCH", base+id+"/checkpoints", nil),
		e.call("GET", "/v1/missing", nil),
	} {
		if res.Status < 400 || res.Status == http.StatusUnprocessableEntity {
			t.Errorf("unexpected status %d: %s", res.Status, res.Body)
		}
	}
}
