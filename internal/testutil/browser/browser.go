// Package browser drives Debian's chromium, headless, for tests of what a
// person sees: one browser with one tab per test, the page's script errors
// collected, and a screenshot saved (its path in the failure message)
// whenever a step fails.
package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Path is where Debian's chromium package installs the browser.
const Path = "/usr/bin/chromium"

// EnvScreenshotDir names the directory for screenshots of failed steps
// (default: trainyard-screenshots in the temporary directory).
const EnvScreenshotDir = "TRAINYARD_SCREENSHOT_DIR"

// Require returns the browser's path. Without one it fails the test with
// what to do, in CI (CI=true) and for root, who can install it with
// scripts/ensure-chromium.sh (make test runs it); only a developer without
// root is skipped, with the reason.
func Require(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(Path); err == nil {
		return Path
	}
	msg := Path + " is missing: scripts/ensure-chromium.sh installs Debian's chromium (make test and .ci/run run it)"
	if os.Getenv("CI") == "" && os.Geteuid() != 0 {
		t.Skip(msg + "; it needs root, so this browser test is skipped here")
	}
	t.Fatal(msg)
	return ""
}

// Browser is one headless chromium with a fresh profile and one tab.
type Browser struct {
	ctx     context.Context
	mu      sync.Mutex
	errs    []string
	shotDir string
}

// New starts the browser with a viewport of width×height; it is closed
// when the test ends. The flags keep it off the network: a closed network
// refuses the connections chromium opens by itself in the background.
func New(t testing.TB, width, height int) *Browser {
	t.Helper()
	exe := Require(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &Browser{ctx: ctx, shotDir: os.Getenv(EnvScreenshotDir)}
	if b.shotDir == "" {
		b.shotDir = filepath.Join(os.TempDir(), "trainyard-screenshots")
	}
	if err := chromedp.Do(ctx); err != nil { // starts the browser and opens the tab
		t.Fatalf("browser: start %s: %v (%s)", exe, err, version(exe))
	}
	if err := chromedp.Listen(ctx, b.collect); err != nil {
		t.Fatalf("browser: listen: %v", err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, struct{}{}); err != nil {
		t.Fatalf("browser: enable the log: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatalf("browser: viewport: %v", err)
	}
	return b
}

func version(exe string) string {
	out, err := exec.Command(exe, "--version").Output()
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(out))
}

// collect keeps the page's uncaught exceptions and error messages (content
// security policy violations among them). It runs on chromedp's event loop,
// so it only appends.
func (b *Browser) collect(ev any) {
	var msg string
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "exception: " + e.ExceptionDetails.Text
		if ex := e.ExceptionDetails.Exception; ex != nil && ex.Description != "" {
			msg += " " + ex.Description
		}
	case *cdplog.EventEntryAdded:
		if e.Entry.Level != cdplog.EntryLevelError {
			return
		}
		msg = fmt.Sprintf("%s error: %s (%s)", e.Entry.Source, e.Entry.Text, e.Entry.URL)
	default:
		return
	}
	b.mu.Lock()
	b.errs = append(b.errs, msg)
	b.mu.Unlock()
}

// PageErrors returns the errors the pages reported since the last call.
func (b *Browser) PageErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	errs := b.errs
	b.errs = nil
	return errs
}

// Context is the tab's chromedp context, for actions this package lacks.
func (b *Browser) Context() context.Context { return b.ctx }

// Do runs actions in the tab within a minute; when one fails, the test
// fails with a screenshot.
func (b *Browser) Do(t testing.TB, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.Fatalf(t, "%s: %v", what, err)
	}
}

// Eval evaluates a JavaScript expression (promises are awaited) and
// decodes its JSON value into a T.
func Eval[T any](t testing.TB, b *Browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	var v T
	if err == nil {
		err = json.Unmarshal(raw, &v)
	}
	if err != nil {
		b.Fatalf(t, "evaluate %s: %v", expr, err)
	}
	return v
}

// WaitFor evaluates expr every 50 ms until it is true, failing the test
// (with a screenshot and the page's last value of describe, a JavaScript
// expression, when given) after timeout.
func (b *Browser) WaitFor(t testing.TB, what, expr string, timeout time.Duration, describe string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if Eval[bool](t, b, "Boolean("+expr+")") {
			return
		}
		if time.Now().After(deadline) {
			state := ""
			if describe != "" {
				state = "; the page shows " + string(Eval[json.RawMessage](t, b, describe))
			}
			b.Fatalf(t, "%s: not after %v%s", what, timeout, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Screenshot saves the viewport as a PNG file at path.
func (b *Browser) Screenshot(t testing.TB, path string) {
	t.Helper()
	if err := b.save(path); err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
}

func (b *Browser) save(path string) error {
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Fatalf fails the test with the message and the path of a screenshot of
// the page as it was.
func (b *Browser) Fatalf(t testing.TB, format string, args ...any) {
	t.Helper()
	name := fmt.Sprintf("%s-%s.png", unsafeName.ReplaceAllString(t.Name(), "_"), time.Now().Format("150405.000"))
	path := filepath.Join(b.shotDir, name)
	shot := "screenshot: " + path
	if err := b.save(path); err != nil {
		shot = "no screenshot: " + err.Error()
	}
	if errs := b.PageErrors(); len(errs) > 0 {
		shot += "\npage errors:\n  " + strings.Join(errs, "\n  ")
	}
	t.Fatalf(format+"\n"+shot, args...)
}
