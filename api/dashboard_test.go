package api_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/trainyard/trainyard/api"
)

// TestDashboardConfig: GET /v1/dashboard-config needs no key and tells the
// dashboard where the Temporal UI is and which job actions this server
// has (read from its routes).
func TestDashboardConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *api.Config, d *api.Deps) {
		c.Dashboard = api.DashboardConfig{TemporalUIURL: "http://ui.example:8233", TemporalNamespace: "ns"}
		d.Workflows = &fakeWorkflows{}
	})
	res := e.call("GET", "/v1/dashboard-config", nil, as(""))
	mustStatus(t, res, http.StatusOK)
	got := res.JSON(t)
	var actions []string
	for _, a := range got["job_actions"].([]any) {
		actions = append(actions, a.(string))
	}
	// Routes added later (pause, resume) join the list by themselves.
	if got["temporal_ui_url"] != "http://ui.example:8233" || got["temporal_namespace"] != "ns" ||
		!slices.Contains(actions, "cancel") || !slices.Contains(actions, "retry") || !slices.IsSorted(actions) {
		t.Fatalf("dashboard config = %s", res.Body)
	}

	// Without a UI or training jobs there is nothing to link or act on.
	bare := newEnv(t)
	got = bare.call("GET", "/v1/dashboard-config", nil, as("")).JSON(t)
	if got["temporal_ui_url"] != nil || len(got["job_actions"].([]any)) != 0 {
		t.Fatalf("bare dashboard config = %v", got)
	}
}
