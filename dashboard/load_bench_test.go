package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/browser"
	"github.com/trainyard/trainyard/internal/testutil/servetest"
	"github.com/trainyard/trainyard/storage/postgres"
)

// Account size of BenchmarkPageLoad.
const (
	benchModels      = 100
	benchCheckpoints = 10 // per model
	benchJobs        = 1000
)

// BenchmarkPageLoad measures how long the Models page and the Jobs page
// take to show their data in headless Chromium, from the start of the
// navigation (performance.now() when the table is complete: all 100 models,
// the first 50 of 1,000 jobs), against `trainyard serve` with an account of
// 100 models (10 checkpoints each) and 1,000 finished jobs, seeded through
// the stores. Each iteration loads both pages afresh; the first loads
// (assets not cached yet) are reported apart too.
//
//	make bench BENCH=PageLoad PKG=./dashboard/
func BenchmarkPageLoad(b *testing.B) {
	if testing.Short() {
		b.Skip("runs the whole service and a browser")
	}
	browser.Require(b)
	svc := servetest.Start(b, servetest.Build(b))
	seed(b, svc)
	br := browser.New(b, 1280, 800)
	br.Do(b, "open the dashboard", chromedp.Navigate(svc.API+"/"))
	br.Do(b, "sign in", chromedp.Evaluate[chromedp.Void](`localStorage.setItem('trainyard.apiKey', `+js(svc.Key)+`)`))

	// load navigates to path (a full page load: the two pages alternate)
	// and returns the page's clock when done, in ms since the navigation
	// began.
	load := func(path, done string) float64 {
		br.Do(b, "open "+path, chromedp.Navigate(svc.API+path))
		ctx, cancel := context.WithTimeout(br.Context(), time.Minute)
		defer cancel()
		poll := chromedp.Poll[float64](done+` && performance.now()`, chromedp.WithPollingMutation())
		ms, err := chromedp.Run(ctx, poll)
		if err != nil && strings.Contains(err.Error(), "Cannot find context") {
			// The poll raced the new page's script context; the clock
			// still counts from the navigation.
			ms, err = chromedp.Run(ctx, poll)
		}
		if err != nil {
			br.Fatalf(b, "%s: %v", path, err)
		}
		return ms
	}
	// apiTimes are the API calls of the page so far, with their start and
	// end in ms since the navigation began.
	const apiTimes = `JSON.stringify(performance.getEntriesByType('resource').filter((e) => e.name.includes('/v1/'))
		.map((e) => [e.name.replace(location.origin, ''), Math.round(e.startTime), Math.round(e.responseEnd)]))`
	var models, jobs, first []float64
	var modelsAPI, jobsAPI string
	for b.Loop() {
		models = append(models, load("/models", fmt.Sprintf(`document.querySelectorAll('#models-table tbody tr').length === %d`, benchModels)))
		modelsAPI = browser.Eval[string](b, br, apiTimes)
		jobs = append(jobs, load("/jobs", `document.querySelectorAll('#jobs-table tbody tr').length === 50`))
		jobsAPI = browser.Eval[string](b, br, apiTimes)
		if first == nil {
			first = []float64{models[0], jobs[0]}
		}
	}
	// The first loads fetch the assets; later ones find them in the
	// browser's cache, as a returning visitor does.
	b.ReportMetric(mean(models), "models-ms/op")
	b.ReportMetric(mean(jobs), "jobs-ms/op")
	b.ReportMetric(first[0], "models-first-ms")
	b.ReportMetric(first[1], "jobs-first-ms")
	b.Logf("the last loads' API calls [path, start ms, end ms]: models %s; jobs %s", modelsAPI, jobsAPI)
}

func mean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// seed fills the service's default account with models, checkpoints with
// metrics like an RL job's, and finished jobs.
func seed(b *testing.B, svc *servetest.Service) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, svc.DatabaseURL)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	acct, err := db.Authenticate(ctx, svc.Key)
	if err != nil {
		b.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"experimental_config": map[string]any{"learning_rate": 1e-3}})
	var models []*trainyard.Model
	for i := range benchModels {
		m := &trainyard.Model{AccountID: acct.ID, Entity: acct.Entity, Project: "bench", Name: fmt.Sprintf("agent-%03d", i),
			BaseModel: "trainyard/tiny-chat"}
		if err := db.CreateModel(ctx, m); err != nil {
			b.Fatal(err)
		}
		models = append(models, m)
		for step := 1; step <= benchCheckpoints; step++ {
			metrics := map[string]float64{}
			for _, k := range []string{"loss", "reward", "reward_std_dev", "policy_loss", "entropy", "grad_norm", "learning_rate",
				"num_trajectories", "num_groups", "num_tokens", "tokens_per_second", "kl_div"} {
				metrics["train/"+k] = float64(step) / float64(benchCheckpoints)
			}
			metrics["val/reward"] = 0.3 + 0.05*float64(step)
			if err := db.CreateCheckpoint(ctx, &trainyard.Checkpoint{ModelID: m.ID, Step: step, Metrics: metrics}); err != nil {
				b.Fatal(err)
			}
		}
	}
	start := time.Now().Add(-time.Hour)
	for i := range benchJobs {
		m := models[i%len(models)]
		status := trainyard.JobCompleted
		if i%17 == 0 {
			status = trainyard.JobFailed
		}
		began, ended := start.Add(time.Duration(i)*time.Second), start.Add(time.Duration(i)*time.Second+3*time.Second)
		_, _, err := db.CreateJob(ctx, &trainyard.Job{AccountID: acct.ID, ModelID: m.ID, Kind: trainyard.JobKindRL, Status: status,
			Config: cfg, CurrentStep: 1, TotalSteps: 1, LatestMetrics: map[string]float64{"loss": 0.1, "reward": 0.5},
			StartedAt: &began, FinishedAt: &ended})
		if err != nil {
			b.Fatal(err)
		}
	}
}
