package console

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPages checks every page path gets the app's index.html with a
// strict content security policy, so deep links and reloads work.
func TestPages(t *testing.T) {
	t.Parallel()
	h := Handler()
	for _, path := range []string{"/ui/", "/ui/index.html", "/ui/sources/shop.orders", "/ui/quarantine/2958456120490043cfb82302504e0414", "/ui/alerts?subject=x", "/ui/../../go.mod"} {
		r := get(t, h, http.MethodGet, path, nil)
		b := body(t, r)
		if r.StatusCode != http.StatusOK || !strings.Contains(b, `<div id="app">`) {
			t.Errorf("GET %s = %d %.60q, want index.html", path, r.StatusCode, b)
		}
		if got := r.Header.Get("Content-Type"); !strings.HasPrefix(got, "text/html") {
			t.Errorf("GET %s: content type %q, want text/html", path, got)
		}
		csp := r.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") || strings.Contains(csp, "http") {
			t.Errorf("GET %s: CSP %q, want only this origin", path, csp)
		}
		if r.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q, want no-cache so a new build is picked up", path, r.Header.Get("Cache-Control"))
		}
	}
}

var assetRef = regexp.MustCompile(`(?:src|href)="(/ui/assets/[^"]+)"`)

// TestAssetsOfTheBuild checks the committed build is whole: every script
// and style index.html names is embedded, typed, cached for good and
// served compressed to a browser that asks.
func TestAssetsOfTheBuild(t *testing.T) {
	t.Parallel()
	h := Handler()
	index := body(t, get(t, h, http.MethodGet, "/ui/", nil))
	refs := assetRef.FindAllStringSubmatch(index, -1)
	if len(refs) < 2 {
		t.Fatalf("index.html names %d assets, want a script and a style: %s", len(refs), index)
	}
	for _, ref := range refs {
		path := ref[1]
		r := get(t, h, http.MethodGet, path, nil)
		plain := body(t, r)
		if r.StatusCode != http.StatusOK || plain == "" {
			t.Fatalf("GET %s = %d, want the embedded file", path, r.StatusCode)
		}
		ctype := r.Header.Get("Content-Type")
		switch {
		case strings.HasSuffix(path, ".js") && !strings.Contains(ctype, "javascript"):
			t.Errorf("%s: content type %q, want JavaScript", path, ctype)
		case strings.HasSuffix(path, ".css") && !strings.HasPrefix(ctype, "text/css"):
			t.Errorf("%s: content type %q, want text/css", path, ctype)
		}
		if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
			t.Errorf("%s: Cache-Control %q, want immutable (the name carries a hash)", path, cc)
		}
		for _, host := range []string{"googleapis.com", "gstatic.com", "jsdelivr", "unpkg.com", "cdnjs", "@import url("} {
			if strings.Contains(plain, host) {
				t.Errorf("%s names %s: the console must load nothing from another origin", path, host)
			}
		}

		gz := get(t, h, http.MethodGet, path, map[string]string{"Accept-Encoding": "br, gzip"})
		if gz.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s: Content-Encoding %q with gzip accepted, want gzip", path, gz.Header.Get("Content-Encoding"))
			continue
		}
		zr, err := gzip.NewReader(gz.Body)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		unzipped, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !bytes.Equal(unzipped, []byte(plain)) {
			t.Errorf("%s: gzip body differs from the plain one", path)
		}

		etag := r.Header.Get("ETag")
		if nm := get(t, h, http.MethodGet, path, map[string]string{"If-None-Match": etag}); etag == "" || nm.StatusCode != http.StatusNotModified {
			t.Errorf("%s: If-None-Match %q = %d, want 304", path, etag, nm.StatusCode)
		}
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	h := Handler()
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/ui/assets/missing-0000.js", http.StatusNotFound},
		{http.MethodPost, "/ui/", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/ui/assets/x.js", http.StatusMethodNotAllowed},
	} {
		r := get(t, h, tc.method, tc.path, nil)
		b := body(t, r)
		if r.StatusCode != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, r.StatusCode, tc.want)
		}
		if strings.Contains(b, `<div id="app">`) {
			t.Errorf("%s %s answered with the page; a missing asset must not look like one", tc.method, tc.path)
		}
	}
	if r := get(t, h, http.MethodHead, "/ui/", nil); r.StatusCode != http.StatusOK || body(t, r) != "" {
		t.Errorf("HEAD /ui/ = %d with a body, want 200 and none", r.StatusCode)
	}
}
