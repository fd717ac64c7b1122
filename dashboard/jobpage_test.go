package dashboard_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trainyard/trainyard/internal/testutil/browser"
)

// watchJob follows an SFT job of 100 steps on its page, sampling the
// progress bar as a person would see it. (The stream delivers the steps in
// batches, 5 a second; 100 steps of the built-in model take 2-4 s, enough
// batches to see the bar move on a fast machine too.)
func (d *dash) watchJob(t *testing.T) {
	model := d.api.model("watch")
	const epochs = 25 // 100 gradient steps of one example each
	id := d.api.sft(model, "watch", epochs)
	d.open(t, "/jobs/"+id)
	d.waitFor(t, "the job page", `document.querySelector('#job-progress [role=progressbar]')`, 20*time.Second, `document.body.innerText`)

	// Watch the progress bar as a person would, until the job ends.
	type state struct {
		Now, Max int
		Status   string
	}
	read := `(() => { const bar = document.querySelector('#job-progress [role=progressbar]');
		return {Now: Number(bar.getAttribute('aria-valuenow') || 0), Max: Number(bar.getAttribute('aria-valuemax') || 0),
			Status: document.querySelector('#job-summary').dataset.status}; })()`
	var seen []int
	var last state
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(40 * time.Millisecond) {
		last = browser.Eval[state](t, d.b, read)
		if n := len(seen); n > 0 && last.Now < seen[n-1] {
			d.b.Fatalf(t, "the progress went back from %d to %d", seen[n-1], last.Now)
		}
		if len(seen) == 0 || seen[len(seen)-1] != last.Now {
			seen = append(seen, last.Now)
		}
		if last.Status == "COMPLETED" || last.Status == "FAILED" || last.Status == "CANCELLED" {
			break
		}
		if time.Now().After(deadline) {
			d.b.Fatalf(t, "the job page shows %+v after 3 minutes", last)
		}
	}
	total := 4 * epochs
	between := 0
	for _, v := range seen {
		if v > 0 && v < total {
			between++
		}
	}
	if last.Status != "COMPLETED" || last.Now != total || last.Max != total || between < 3 {
		d.b.Fatalf(t, "the page ended at %+v having shown the steps %v; want COMPLETED at %d/%d, with at least 3 steps on the way",
			last, seen, total, total)
	}
	t.Logf("the progress bar showed %d distinct steps of %d on the way", between, total)
	d.waitFor(t, "the events, the last one training_ended, and a loss point per step",
		sprintf(`document.querySelector('#events-table tbody tr')?.dataset.type === 'training_ended' &&
			document.querySelector('.chart[data-metric="loss"]')?.dataset.points === '%d'`, total),
		10*time.Second, `[document.querySelector('#events-table tbody tr')?.dataset.type, document.querySelector('.chart[data-metric="loss"]')?.dataset.points]`)
	if job := d.api.call("GET", "/preview/training-jobs/"+id, nil); job["status"] != "COMPLETED" {
		d.b.Fatalf(t, "the API says the job is %v", job["status"])
	}
	d.shot(t, "dashboard-job.png")

	// The jobs list, reached by the top bar, shows it finished.
	d.b.Do(t, "click Jobs", chromedp.Click(chromedp.CSS(`a[data-nav=jobs]`)))
	row := sprintf(`document.querySelector('#jobs-table tr[data-job-id=%s]')`, js(id))
	d.waitFor(t, sprintf("the job in the list, COMPLETED at %d of %d", total, total),
		row+`?.dataset.status === 'COMPLETED' && `+row+sprintf(`.querySelector('.progress-label').textContent === '%d / %d'`, total, total),
		15*time.Second, row+`?.innerText`)
}

// cancelJob cancels a long job from its page, then retries it from there.
func (d *dash) cancelJob(t *testing.T) {
	model := d.api.model("cancel")
	id := d.api.sft(model, "cancel", 1000) // 4,000 steps: it runs until cancelled
	d.open(t, "/jobs/"+id)
	status := `document.querySelector('#job-summary')?.dataset.status`
	d.waitFor(t, "the job running, with steps done",
		status+` === 'RUNNING' && Number(document.querySelector('#job-progress [role=progressbar]').getAttribute('aria-valuenow')) > 0`,
		2*time.Minute, status)
	cfg := d.api.call("GET", "/dashboard-config", nil)
	actions := cfg["job_actions"].([]any)
	// Pause is offered exactly when the server has the route.
	hasPause := browser.Eval[bool](t, d.b, `Boolean(document.getElementById('action-pause'))`)
	if hasPause != slices.Contains(actions, any("pause")) {
		d.b.Fatalf(t, "a pause button: %v; the server's job actions: %v", hasPause, actions)
	}
	d.b.Do(t, "click Cancel", chromedp.Click(chromedp.ID("action-cancel")))
	d.waitFor(t, "the confirmation, focused", `document.activeElement?.id === 'action-confirm-cancel'`, 10*time.Second,
		`document.getElementById('job-actions').innerText`)
	d.b.Do(t, "confirm with the keyboard", chromedp.KeyEvent("\r"))
	d.waitFor(t, "the job CANCELLED, a training_failed event, and retry offered instead of cancel",
		status+` === 'CANCELLED' && document.querySelector('#events-table tbody tr')?.dataset.type === 'training_failed' &&
			!document.getElementById('action-cancel') && Boolean(document.getElementById('action-retry')) === `+
			sprintf("%v", slices.Contains(actions, any("retry"))), time.Minute,
		`[`+status+`, document.getElementById('job-actions').innerText]`)
	if job := d.api.call("GET", "/preview/training-jobs/"+id, nil); job["status"] != "CANCELLED" {
		d.b.Fatalf(t, "the API says the job is %v", job["status"])
	}
	link := browser.Eval[string](t, d.b, `document.getElementById('temporal-workflow')?.href || ''`)
	if !strings.HasPrefix(link, d.svc.UI+"/namespaces/default/workflows/training-job-"+id+"/") {
		d.b.Fatalf(t, "the Temporal UI link is %q, want the job's workflow in %s", link, d.svc.UI)
	}
	if !slices.Contains(actions, any("retry")) {
		return
	}
	// Retry opens the new job, which names the one it retries.
	d.b.Do(t, "click Retry", chromedp.Click(chromedp.ID("action-retry")))
	d.waitFor(t, "the new job's page, linked to the cancelled one",
		sprintf(`location.pathname !== '/jobs/%s' && document.querySelector('[data-page=job] a[href="/jobs/%s"]')`, id, id),
		30*time.Second, `[location.pathname, document.getElementById('job-summary')?.innerText]`)
	retry := strings.TrimPrefix(browser.Eval[string](t, d.b, `location.pathname`), "/jobs/")
	if job := d.api.call("GET", "/preview/training-jobs/"+retry, nil); job["retry_of"] != id {
		d.b.Fatalf(t, "the page opened job %s, whose retry_of is %v, want %s", retry, job["retry_of"], id)
	}
	d.api.call("POST", "/preview/training-jobs/"+retry+"/cancel", nil) // 4,000 steps again: not for this test
	d.waitFor(t, "the retry cancelled too", status+` === 'CANCELLED'`, time.Minute, status)
}
