package dashboard_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trainyard/trainyard/internal/testutil/browser"
)

// curveGainsPoint keeps a model's page open while an RL job adds a
// checkpoint, then deletes a checkpoint from the page.
func (d *dash) curveGainsPoint(t *testing.T, model, firstJob string) {
	d.api.waitJob(firstJob, 3*time.Minute, "COMPLETED")
	d.open(t, "/models/"+model)
	points := `document.querySelector('.chart[data-metric="train/loss"]')?.dataset.points`
	d.waitFor(t, "the train/loss curve with the first job's point", points+` === '1'`, 20*time.Second, points)

	second := d.api.rl(model)
	d.api.waitJob(second, 3*time.Minute, "COMPLETED")
	// The page was not reloaded: it finds the new checkpoint itself.
	d.waitFor(t, "a second point on the curves, and the step in the chat command",
		points+` === '2' && document.querySelector('.chart[data-metric="train/reward"]')?.dataset.points === '2' &&
			document.getElementById('chat-command').textContent.includes('/curve:step2')`, 20*time.Second,
		`[`+points+`, document.getElementById('chat-command')?.textContent]`)
	d.shot(t, "dashboard-model.png")
	// The chat command's body asks the new checkpoint, and the API answers it.
	chat := browser.Eval[string](t, d.b, `(async () => {
		const cmd = document.getElementById('chat-command').textContent;
		const body = cmd.slice(cmd.indexOf("-d '") + 4, cmd.lastIndexOf("'"));
		const resp = await fetch('/v1/chat/completions', {method: 'POST', body,
			headers: {Authorization: 'Bearer ' + localStorage.getItem('trainyard.apiKey'), 'Content-Type': 'application/json'}});
		const answer = await resp.json();
		return resp.status + ' ' + answer.model + ' ' + (answer.choices ? answer.choices.length : JSON.stringify(answer));
	})()`)
	if want := "200 wandb-artifact:///local/dashboard/curve:step2 1"; chat != want {
		d.b.Fatalf(t, "the chat command's request got %q, want %q", chat, want)
	}

	// Delete step 1 from the checkpoints table.
	d.b.Do(t, "select step 1", chromedp.Click(chromedp.CSS(`#checkpoints-table tr[data-step="1"] input[type=checkbox]`)))
	d.b.Do(t, "delete it", chromedp.Click(chromedp.ID("delete-checkpoints")))
	d.b.Do(t, "confirm", chromedp.Click(chromedp.CSS(`#delete-area .btn-danger`)))
	d.waitFor(t, "step 1 gone from the table and the curves",
		`!document.querySelector('#checkpoints-table tr[data-step="1"]') && `+points+` === '1'`, 20*time.Second, points)
	left := d.api.call("GET", "/preview/models/"+model+"/checkpoints", nil)["data"].([]any)
	if len(left) != 1 || left[0].(map[string]any)["step"] != float64(2) {
		d.b.Fatalf(t, "the API lists the checkpoints %v, want step 2 alone", left)
	}

	// The models list shows the step the model reached.
	d.open(t, "/models")
	step := sprintf(`document.querySelector('#models-table tr[data-model-id=%s] td[data-col=step]')?.textContent`, js(model))
	d.waitFor(t, "the model at step 2 in the list", step+` === '2'`, 20*time.Second, step)
}
