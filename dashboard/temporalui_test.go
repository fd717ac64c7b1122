package dashboard_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// summaryColumns are the columns the test picks for the Temporal UI's
// workflow list. The list has no column for a workflow's summary (the UI
// shows it on the workflow's own page), so trainyard also puts the summary
// in the TrainyardSummary search attribute, which the list shows like any
// other; the UI keeps the chosen columns per namespace in localStorage,
// where an operator's "Configure columns" would put them.
const summaryColumns = `{"default": [{"label": "Status"}, {"label": "TrainyardSummary", "width": 560},
	{"label": "Workflow ID"}, {"label": "End"}]}`

// temporalUI opens the Temporal Web UI's workflow list, as an operator
// looking for trainyard's jobs would, and checks that the summaries of the
// jobs the earlier steps ran are in it.
func (d *dash) temporalUI(t *testing.T) {
	if d.svc.UI == "" {
		t.Fatal("the service printed no Temporal UI address")
	}
	d.b.Do(t, "open the Temporal UI", chromedp.Navigate(d.svc.UI+"/"))
	d.b.Do(t, "choose the columns", chromedp.Evaluate[chromedp.Void](
		`localStorage.setItem('namespace-workflow-table-columns', JSON.stringify(`+summaryColumns+`))`))
	d.b.Do(t, "open the workflow list", chromedp.Navigate(d.svc.UI+"/namespaces/default/workflows"))
	for _, summary := range []string{
		"SFT job of local/dashboard/watch on trainyard/tiny-chat",
		"SFT job of local/dashboard/cancel on trainyard/tiny-chat",
		"RL job of local/dashboard/curve on trainyard/tiny-chat",
	} {
		d.waitFor(t, "the summary "+summary+" in the list's TrainyardSummary column",
			sprintf(`[...document.querySelectorAll('thead th')].some((th) => th.textContent.includes('TrainyardSummary')) &&
				[...document.querySelectorAll('tbody td')].some((td) => td.textContent.trim() === %s)`, js(summary)),
			time.Minute, `[...document.querySelectorAll('thead th, tbody tr')].slice(0, 6).map((e) => e.innerText)`)
	}
	d.shot(t, "temporal-ui.png")
}
