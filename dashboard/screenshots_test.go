package dashboard_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/trainyard/trainyard/internal/testutil/servetest"
)

// readmeScreenshots (make screenshots) trains a model worth looking at with
// the rl-toy example, as the README's quickstart does, and photographs its
// page and the models list for the README. `make test` leaves it out.
func (d *dash) readmeScreenshots(t *testing.T) {
	bin := servetest.BuildPackage(t, "./examples/rl-toy")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-base-url", d.api.base, "-project", "demo", "-name", "agent-001", "-steps", "8")
	cmd.Env = append(os.Environ(), "TRAINYARD_API_KEY="+d.api.key)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rl-toy: %v\n%s", err, out)
	}
	model := d.api.call("POST", "/preview/models", map[string]any{
		"project": "demo", "name": "agent-001", "base_model": "trainyard/tiny-chat", "return_existing": true})["id"].(string)
	d.open(t, "/models/"+model)
	d.waitFor(t, "the curves of 8 steps", `document.querySelector('.chart[data-metric="val/reward"]')?.dataset.points === '8'`,
		30*time.Second, `document.body.innerText`)
	d.shot(t, "dashboard.png")
	d.open(t, "/models")
	d.waitFor(t, "the models", `document.querySelectorAll('#models-table tbody tr').length >= 4`, 30*time.Second, `document.body.innerText`)
	d.shot(t, "dashboard-models.png")
}
