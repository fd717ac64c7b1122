package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trainyard/trainyard/internal/testutil/browser"
)

// wrongKey signs in with a key the server does not know.
func (d *dash) wrongKey(t *testing.T) {
	d.open(t, "/")
	d.waitFor(t, "the sign-in form", `document.getElementById('api-key')`, 30*time.Second, `document.body.innerText`)
	d.b.Do(t, "type a wrong key and press Enter", chromedp.SendKeys(chromedp.ID("api-key"), "ty_not-a-key-of-this-server\r"))
	d.waitFor(t, "the error", `!document.getElementById('sign-in-error').hidden`, 10*time.Second, `document.body.innerText`)
	msg := browser.Eval[string](t, d.b, `document.getElementById('sign-in-error').textContent`)
	// The API's own words (401 {"detail": "invalid API key"}), not a
	// message of the dashboard's invention.
	if !strings.Contains(msg, "invalid API key") || !strings.Contains(msg, "401") {
		d.b.Fatalf(t, "the sign-in error says %q, want the API's 401 message", msg)
	}
	if browser.Eval[bool](t, d.b, `localStorage.getItem('trainyard.apiKey') !== null || !document.getElementById('topbar').hidden`) {
		d.b.Fatalf(t, "a refused key was kept, or the page went on as signed in")
	}
	d.drainExpected(t, "status of 401")
}

// drainExpected takes the page errors that the step caused on purpose
// (the browser logs every refused request) and fails on any other.
func (d *dash) drainExpected(t *testing.T, allowed string) {
	t.Helper()
	for _, e := range d.b.PageErrors() {
		if !strings.Contains(e, allowed) {
			d.b.Fatalf(t, "the page reported %s", e)
		}
	}
}

// signIn signs in with the service's key, by keyboard.
func (d *dash) signIn(t *testing.T) {
	d.b.Do(t, "clear the field", chromedp.Evaluate[chromedp.Void](`document.getElementById('api-key').value = ''`))
	d.b.Do(t, "type the key and press Enter", chromedp.SendKeys(chromedp.ID("api-key"), d.svc.Key+"\r"))
	modelsPage := `document.querySelector('[data-page=models]') && !document.getElementById('topbar').hidden`
	d.waitFor(t, "the models page", modelsPage, 20*time.Second, `document.body.innerText`)
	if got := browser.Eval[string](t, d.b, `localStorage.getItem('trainyard.apiKey')`); got != d.svc.Key {
		d.b.Fatalf(t, "localStorage keeps %q, want the key", got)
	}
	d.open(t, "/models")
	d.waitFor(t, "the models page after a reload, with the model", modelsPage+` && document.querySelector('#models-table tr[data-model-id]')`,
		20*time.Second, `document.body.innerText`)

	// The keyboard alone moves between pages, and the focus lands on the
	// new page's heading.
	d.b.Do(t, "focus the Jobs link", chromedp.Focus(chromedp.CSS(`a[data-nav=jobs]`)))
	d.b.Do(t, "press Enter", chromedp.KeyEvent("\r"))
	d.waitFor(t, "the jobs page, its heading focused",
		`document.querySelector('[data-page=jobs]') && document.activeElement === document.querySelector('h1')`, 20*time.Second,
		`[location.pathname, document.activeElement.outerHTML.slice(0, 200)]`)
}

// signOut signs out from the top bar.
func (d *dash) signOut(t *testing.T) {
	d.open(t, "/models")
	d.waitFor(t, "the models page", `document.querySelector('[data-page=models]')`, 20*time.Second, `document.body.innerText`)
	d.b.Do(t, "click Sign out", chromedp.Click(chromedp.ID("sign-out")))
	d.waitFor(t, "the sign-in form, the key forgotten",
		`document.getElementById('api-key') && localStorage.getItem('trainyard.apiKey') === null && document.getElementById('topbar').hidden`,
		10*time.Second, `document.body.innerText`)
}
