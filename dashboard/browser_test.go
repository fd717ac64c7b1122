package dashboard_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trainyard/trainyard/internal/testutil/browser"
	"github.com/trainyard/trainyard/internal/testutil/servetest"
)

// updateScreenshots regenerates the README's screenshots in docs/ (make
// screenshots); without it they go to the test's artifact directory.
var updateScreenshots = flag.Bool("screenshots", false, "write the README's screenshots to docs/")

// dash is the service, the browser and an API client of one test.
type dash struct {
	t   *testing.T
	b   *browser.Browser
	svc *servetest.Service
	api *client
}

// TestDashboardInBrowser drives the dashboard in headless Chromium against
// `trainyard serve` started as `make run` starts it: one service and one
// browser for every step, which follow each other as a visitor's would.
func TestDashboardInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds trainyard and runs the whole service and a browser")
	}
	browser.Require(t)
	svc := servetest.Start(t, servetest.Build(t))
	// make run's banner says where the dashboard is.
	if !strings.Contains(svc.Banner(), "  Dashboard    "+svc.API+"/  ") {
		t.Fatalf("the banner names no dashboard at %s/:\n%s", svc.API, svc.Banner())
	}
	api := &client{t: t, base: svc.API + "/v1", key: svc.Key}
	// The curve test's first point trains while the browser starts.
	curve := api.model("curve")
	firstRL := api.rl(curve)
	d := &dash{t: t, b: browser.New(t, 1280, 800), svc: svc, api: api}

	type step struct {
		name string
		run  func(t *testing.T)
	}
	steps := []step{
		{"a wrong key gets the API's message", d.wrongKey},
		{"sign in with the key, kept across reloads", d.signIn},
		{"a job runs to COMPLETED with its progress moving", d.watchJob},
		{"a model's curve gains a point after an RL job", func(t *testing.T) { d.curveGainsPoint(t, curve, firstRL) }},
		{"cancel a running job from its page", d.cancelJob},
		{"the Temporal UI's workflow list shows the summaries", d.temporalUI},
	}
	if *updateScreenshots {
		steps = append(steps, step{"the README's screenshots", d.readmeScreenshots})
	}
	steps = append(steps, step{"sign out forgets the key", d.signOut})
	for _, s := range steps {
		if !t.Run(s.name, s.run) {
			break // each step starts where the one before it left the visitor
		}
		if errs := d.b.PageErrors(); len(errs) > 0 {
			t.Fatalf("the pages reported errors during %q:\n  %s", s.name, strings.Join(errs, "\n  "))
		}
	}
	svc.CheckLog(t)
}

// open loads a page of the dashboard.
func (d *dash) open(t *testing.T, path string) {
	t.Helper()
	d.b.Do(t, "open "+path, chromedp.Navigate(d.svc.API+path))
}

// waitFor waits for a JavaScript condition on the page.
func (d *dash) waitFor(t *testing.T, what, expr string, timeout time.Duration, describe string) {
	t.Helper()
	d.b.WaitFor(t, what, expr, timeout, describe)
}

// readmeScreenshots are the screenshots the README shows, kept in docs/.
var readmeScreenshots = []string{"dashboard.png", "dashboard-job.png", "temporal-ui.png"}

// shot saves a screenshot of the page: a README one into docs/ with
// -screenshots, any other into the test's artifact directory (kept with
// go test -artifacts).
func (d *dash) shot(t *testing.T, name string) {
	t.Helper()
	dir := t.ArtifactDir()
	if *updateScreenshots && slices.Contains(readmeScreenshots, name) {
		dir = filepath.Join("..", "docs")
	}
	path := filepath.Join(dir, name)
	d.b.Screenshot(t, path)
	if fi, err := os.Stat(path); err != nil || fi.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v (%d bytes)", path, err, sizeOf(fi))
	}
	t.Logf("screenshot: %s", path)
}

func sizeOf(fi os.FileInfo) int64 {
	if fi == nil {
		return 0
	}
	return fi.Size()
}
