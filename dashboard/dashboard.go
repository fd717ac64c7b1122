// Package dashboard is trainyard's web dashboard: an HTML document, its
// scripts and styles and the vendored chart library, embedded in the binary
// so that it works offline. In the browser it is a client of the public HTTP
// API and nothing else: the visitor's API key stays in their browser's
// localStorage and goes out only as the Authorization header of API calls.
//
// The API serves Handler at / (api.Deps.Dashboard). Scripts are plain ES
// modules, with no build step; uPlot is vendored from npm by vendor.sh.
package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// asset is one embedded file, ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// contentTypes are the types of the files the dashboard ships, fixed here
// rather than read from the host's MIME tables.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".txt":  "text/plain; charset=utf-8",
}

// contentSecurityPolicy lets the page load and connect to its own origin
// only: nothing comes from a CDN, and an injected script could neither run
// nor send the key elsewhere. (Chart styles are set through the CSSOM,
// which style-src does not restrict.)
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Handler serves the dashboard: the files under /assets/ as they are, and
// the page document for every other path (the script renders the page the
// path names). The document is revalidated by ETag on every visit; it names
// the assets under /assets/v-VERSION/, VERSION a digest of all of them, so
// a browser keeps those for good and a new build's are new URLs.
func Handler() http.Handler {
	assets, version, err := load()
	if err != nil {
		panic(err) // the embedded files are part of the build
	}
	index := assets["/index.html"]
	index.body = bytes.ReplaceAll(index.body, []byte(`="/assets/`), []byte(`="/assets/`+version+`/`))
	index.etag = etagOf(index.body)
	versioned := "/assets/" + version + "/"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := index
		cache := "no-cache"
		if p, ok := strings.CutPrefix(r.URL.Path, "/assets/"); ok {
			if rest, ok := strings.CutPrefix(r.URL.Path, versioned); ok {
				p, cache = rest, "public, max-age=31536000, immutable"
			}
			if a, ok = assets["/assets/"+strings.TrimPrefix(path.Clean("/"+p), "/")]; !ok {
				http.NotFound(w, r)
				return
			}
		}
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		h.Set("ETag", a.etag)
		h.Set("Cache-Control", cache)
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
	})
}

func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// load reads every embedded file into memory, keyed by its URL path, and
// returns the version of the whole: a digest of every path and content.
func load() (map[string]asset, string, error) {
	root, err := fs.Sub(static, "static")
	if err != nil {
		return nil, "", fmt.Errorf("dashboard: %w", err)
	}
	out := map[string]asset{}
	all := sha256.New()
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			ct = "application/octet-stream"
		}
		out["/"+p] = asset{body: body, contentType: ct, etag: etagOf(body)}
		fmt.Fprintf(all, "%s\x00%d\x00", p, len(body))
		all.Write(body)
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("dashboard: read embedded files: %w", err)
	}
	if _, ok := out["/index.html"]; !ok {
		return nil, "", fmt.Errorf("dashboard: index.html is not embedded")
	}
	return out, "v-" + hex.EncodeToString(all.Sum(nil)[:6]), nil
}
