package dashboard_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/dashboard"
)

func get(t *testing.T, h http.Handler, path string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

var mainScript = regexp.MustCompile(`<script type="module" src="(/assets/v-[0-9a-f]{12}/)js/main.js">`)

// TestHandler: every page path serves the document, assets have their
// types, unknown assets are 404s, answers carry a policy that allows this
// origin only, and a known ETag gets 304. The document names the assets
// under a versioned prefix, which browsers may keep for good.
func TestHandler(t *testing.T) {
	t.Parallel()
	h := dashboard.Handler()
	var prefix string
	for _, p := range []string{"/", "/models", "/models/0190abcd-0000-7000-8000-000000000000", "/jobs/x"} {
		resp := get(t, h, p)
		body, _ := io.ReadAll(resp.Body)
		m := mainScript.FindStringSubmatch(string(body))
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || m == nil ||
			strings.Contains(string(body), `="/assets/js/`) || resp.Header.Get("Cache-Control") != "no-cache" {
			t.Fatalf("GET %s = %d %v\n%.600s", p, resp.StatusCode, resp.Header, body)
		}
		prefix = m[1]
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self'") ||
			resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("GET %s headers: %v", p, resp.Header)
		}
	}
	for path, ct := range map[string]string{
		"/assets/js/main.js":                     "text/javascript; charset=utf-8",
		"/assets/js/pages/../pages/job.js":       "text/javascript; charset=utf-8",
		"/assets/app.css":                        "text/css; charset=utf-8",
		"/assets/favicon.svg":                    "image/svg+xml",
		"/assets/vendor/uplot/uPlot.iife.min.js": "text/javascript; charset=utf-8",
		"/assets/vendor/uplot/uPlot.min.css":     "text/css; charset=utf-8",
		"/assets/vendor/uplot/LICENSE.txt":       "text/plain; charset=utf-8",
	} {
		resp := get(t, h, path)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ct {
			t.Errorf("GET %s = %d %s, want 200 %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), ct)
		}
	}
	if resp := get(t, h, prefix+"vendor/uplot/uPlot.iife.min.js"); resp.StatusCode != 200 ||
		resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
		t.Fatalf("GET %s: %d %v", prefix+"vendor/uplot/uPlot.iife.min.js", resp.StatusCode, resp.Header)
	}
	for _, p := range []string{"/assets/nope.js", "/assets/../dashboard.go", "/assets/js/", "/assets/v-000000000000/js/main.js",
		prefix + "../../dashboard.go"} {
		if resp := get(t, h, p); resp.StatusCode != 404 {
			t.Errorf("GET %s = %d, want 404", p, resp.StatusCode)
		}
	}
	first := get(t, h, "/assets/js/main.js")
	etag := first.Header.Get("ETag")
	if etag == "" || first.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("caching headers: %v", first.Header)
	}
	if again := get(t, h, "/assets/js/main.js", "If-None-Match", etag); again.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidation = %d, want 304", again.StatusCode)
	}
}

// TestNothingFromElsewhere: the dashboard's files name no other origin to
// load from (the vendored library's banner comment aside), so it works
// offline and its policy holds; the vendored library keeps its licence.
func TestNothingFromElsewhere(t *testing.T) {
	t.Parallel()
	url := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|@import|url\(\s*["']?(https?:)?//|https?://`)
	root := filepath.Join("static")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "LICENSE.txt") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		// An XML namespace names, it loads nothing.
		text := strings.ReplaceAll(string(b), `xmlns="http://www.w3.org/2000/svg"`, "")
		if strings.HasSuffix(p, "uPlot.iife.min.js") {
			// Its first line is the project's banner, /*! https://github.com/leeoniya/uPlot (v…) */.
			_, text, _ = strings.Cut(text, "*/")
		}
		if m := url.FindString(text); m != "" {
			t.Errorf("%s refers to another origin: %q", p, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	lic, err := os.ReadFile(filepath.Join(root, "assets", "vendor", "uplot", "LICENSE.txt"))
	if err != nil || !strings.Contains(string(lic), "MIT License") {
		t.Fatalf("uPlot's licence: %v", err)
	}
}
